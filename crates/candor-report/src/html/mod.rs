//! The self-contained HTML report: one file, inline CSS and hand-drawn SVG, nothing fetched (a
//! content security policy forbids it), no scripts. A contents list beside the sections links to
//! each section and to each group within it; every section folds (`<details>`), and so does
//! each group of charts. Sections: the verdicts at a glance (first), the summary table per
//! target with verdict badges and explanations, the host and command, throughput over file size
//! x record size (heatmaps and lines, one group per test), scaling over threads and queue depth
//! (one grid of small charts per test, one chart per size point), latency distributions
//! (histogram and percentile curve), witness timelines (application vs device throughput, dirty
//! memory), steady-state rounds (window, average, band and slope line) and repetitions (mean
//! with 95% CI and every run). Every point, cell and bar shows
//! its figures on hover (an SVG `<title>`). `compare_page` renders `candor compare` the same way.
//!
//! One file per section; `SECTIONS` puts them in order. A section writes nothing, or opens
//! itself with its heading (`Section::open`) and writes its body, its groups through
//! `Section::group` and `Section::subheading`; `render` folds the body under the heading and
//! builds the contents from the headings the sections gave (title, id, level), not from the
//! markup.

mod compare;
mod latency;
mod page;
mod repetitions;
mod scaling;
mod steady;
mod summary;
mod surfaces;
mod timelines;
mod verdicts;

pub use compare::compare_page;

use crate::svg::esc;
use candor_model::RunDoc;
use page::{host, page, title};
use std::fmt::Write;

/// At most this many curves share one chart, and this many timelines are drawn.
const MAX_CURVES: usize = 6;
const MAX_TIMELINES: usize = 12;

/// The sections, in the order the page shows them.
const SECTIONS: &[fn(&RunDoc, &mut Section)] = &[
    verdicts::verdicts,
    summary::audit,
    summary::summary,
    host,
    compare::targets_compared,
    surfaces::surfaces,
    scaling::scaling,
    scaling::ranks,
    latency::latency,
    timelines::timelines,
    steady::steady,
    repetitions::repetitions,
];

/// The contents list names at most this many groups of one section.
const MAX_TOC_GROUPS: usize = 16;

/// A heading of the page: its level (2 for a section, 3 for a group within it), its id and
/// its text (escaped, without markup), as the contents list shows it.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Heading {
    pub level: u8,
    pub id: String,
    pub text: String,
}

/// What a section wrote: its heading, the headings of its groups, and its body (the markup
/// under its heading). `render` folds the body under the heading and builds the contents
/// from the headings, never from the markup.
#[derive(Default)]
pub(super) struct Section {
    pub heading: Option<Heading>,
    pub groups: Vec<Heading>,
    body: String,
}

impl Section {
    /// Opens the section under its `<h2>` heading (`title` is plain text).
    pub fn open(&mut self, id: &str, title: &str) {
        self.heading = Some(Heading {
            level: 2,
            id: id.to_string(),
            text: esc(title),
        });
    }

    pub fn push_str(&mut self, s: &str) {
        self.body.push_str(s);
    }

    /// A heading within the section, listed in the contents: `title` is plain text, `extra`
    /// markup shown after it on the page only (a badge, a count).
    pub fn subheading(&mut self, id: &str, title: &str, extra: &str) {
        let _ = write!(
            self.body,
            "<h3 id=\"{}\">{}{extra}</h3>",
            esc(id),
            esc(title)
        );
        self.listed(id, title);
    }

    /// Keeps a group's `<h3>` heading for the contents.
    fn listed(&mut self, id: &str, title: &str) {
        self.groups.push(Heading {
            level: 3,
            id: id.to_string(),
            text: esc(title),
        });
    }

    /// A fold within the section under its listed `<h3>` heading (`title` plain text, `extra`
    /// markup after it), open or folded.
    pub fn group(&mut self, id: &str, title: &str, extra: &str, body: &str, open: bool) {
        let _ = write!(
            self.body,
            "<details class=\"grp\"{}><summary><h3 id=\"{}\">{}{extra}</h3></summary>{body}</details>",
            if open { " open" } else { "" },
            esc(id),
            esc(title)
        );
        self.listed(id, title);
    }

    /// The section as one piece of markup: its heading, unfolded, then its body.
    #[cfg(test)]
    pub fn to_html(&self) -> String {
        match &self.heading {
            Some(h) => format!("<h2 id=\"{}\">{}</h2>{}", esc(&h.id), h.text, self.body),
            None => self.body.clone(),
        }
    }
}

impl Write for Section {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.body.push_str(s);
        Ok(())
    }
}

/// Renders a run.
pub fn render(doc: &RunDoc) -> String {
    let mut sections = Vec::new();
    let mut loose = String::new();
    for section in SECTIONS {
        let mut s = Section::default();
        section(doc, &mut s);
        if s.heading.is_none() {
            // A section without its heading is shown as it is, unlisted.
            loose.push_str(&s.body);
        } else {
            sections.push(s);
        }
    }
    let mut b = String::new();
    title(doc, &mut b);
    b.push_str(
        "<div class=\"layout\"><nav class=\"toc\" aria-label=\"Contents\"><b>Contents</b><ol>",
    );
    for sec in &sections {
        let Some(h) = &sec.heading else { continue };
        let _ = write!(b, "<li><a href=\"#{}\">{}</a>", esc(&h.id), h.text);
        if sec.groups.len() > 1 {
            b.push_str("<ol>");
            for g in sec.groups.iter().take(MAX_TOC_GROUPS) {
                let _ = write!(b, "<li><a href=\"#{}\">{}</a></li>", esc(&g.id), g.text);
            }
            if sec.groups.len() > MAX_TOC_GROUPS {
                let _ = write!(
                    b,
                    "<li>{} more in the section</li>",
                    sec.groups.len() - MAX_TOC_GROUPS
                );
            }
            b.push_str("</ol>");
        }
        b.push_str("</li>");
    }
    b.push_str("</ol></nav><main>");
    for sec in &sections {
        let Some(h) = &sec.heading else { continue };
        let _ = write!(
            b,
            "<details class=\"sec\" open><summary><h2 id=\"{}\">{}</h2></summary>{}</details>",
            esc(&h.id),
            h.text,
            sec.body
        );
    }
    b.push_str(&loose);
    let _ = write!(
        b,
        "<footer>Rendered by candor {} from the saved result. Throughput in {}; \
         sizes in binary units; latency per operation in µs; intervals are 95% confidence intervals of the mean. \
         Hover over a point, cell or bar for its figures; click a heading to fold its section.</footer></main></div>",
        esc(env!("CARGO_PKG_VERSION")),
        crate::units::rate_units()
            .meaning()
            .replace("^6", "<sup>6</sup>")
            .replace("^20", "<sup>20</sup>")
    );
    let title = match doc.host.hostname.as_str() {
        "" => "candor report".to_string(),
        h => format!("candor report: {h}"),
    };
    page(&title, &b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use candor_model::{HistogramDump, TestResult, TimelinePoint, Witness};

    fn doc() -> RunDoc {
        let mut d = RunDoc::new(
            "run",
            vec!["candor".into(), "run".into()],
            "2026-01-01T00:00:00Z".into(),
        );
        for (i, (file, rec)) in [
            (1u64 << 20, 4096u64),
            (1 << 20, 65536),
            (4 << 20, 4096),
            (4 << 20, 65536),
        ]
        .iter()
        .enumerate()
        {
            let mut h = candor_stats::Histogram::new();
            (1..500u64).for_each(|v| h.record(v * 100));
            d.results.push(TestResult {
                target: "/t".into(),
                test: "write".into(),
                file_size: *file,
                record_size: *rec,
                threads: 1,
                iodepth: 1,
                status: candor_model::Status::Ok,
                throughput: candor_stats::summarize(&[1e8 + i as f64, 1.1e8, 0.9e8]),
                latency_histogram: h.dump(),
                witness: Some(Witness {
                    verdict: candor_model::Verdict::Device,
                    timeline: (0..5)
                        .map(|k| TimelinePoint {
                            t: k as f64 * 0.1,
                            app_write_bps: 1e8,
                            device_write_bps: 5e7,
                            dirty_bytes: k * 1000,
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                }),
                ..Default::default()
            });
        }
        d
    }

    #[test]
    fn a_run_gets_every_section_with_unique_chart_ids_and_no_bad_numbers() {
        let html = render(&doc());
        for id in ["summary", "sizes", "latency", "timeline", "reps"] {
            assert!(html.contains(&format!("<h2 id=\"{id}\"")), "section {id}");
        }
        let ids: Vec<&str> = html
            .match_indices("<svg id=\"")
            .map(|(i, _)| {
                let rest = &html[i + 9..];
                &rest[..rest.find('"').unwrap_or(0)]
            })
            .collect();
        let mut unique = ids.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(ids.len(), unique.len(), "chart ids are unique: {ids:?}");
        assert!(ids.len() >= 7, "{ids:?}");
        assert!(
            !html.contains("NaN") && !html.contains("inf\""),
            "no NaN or infinity in the markup"
        );
        assert!(!html.contains("<script"));
    }

    /// A two-point thread sweep of two tests over two file sizes and three record sizes.
    fn sweep() -> RunDoc {
        let mut d = RunDoc::new(
            "run",
            vec!["candor".into(), "run".into()],
            "2026-01-01T00:00:00Z".into(),
        );
        for test in ["write", "read"] {
            for file in [1u64 << 20, 4 << 20] {
                for rec in [4096u64, 65536, 1 << 20] {
                    for threads in [1u32, 2] {
                        let mut h = candor_stats::Histogram::new();
                        (1..200u64).for_each(|v| h.record(v * 1000 * threads as u64));
                        let x = (file / rec) as f64 * threads as f64;
                        d.results.push(TestResult {
                            target: "/t".into(),
                            test: test.into(),
                            engine: "psync".into(),
                            file_size: file,
                            record_size: rec,
                            threads,
                            iodepth: 1,
                            status: candor_model::Status::Ok,
                            throughput: candor_stats::summarize(&[1e8 + x, 1.1e8 + x, 0.9e8 + x]),
                            latency_histogram: h.dump(),
                            witness: Some(Witness {
                                verdict: candor_model::Verdict::Device,
                                contradicts_intent: test == "read" && rec == 4096,
                                explanation: "what the kernel saw".into(),
                                ..Default::default()
                            }),
                            ..Default::default()
                        });
                    }
                }
            }
        }
        d
    }

    /// The `id="..."` values of `<h2>`/`<h3>` headings and the `href`s of the contents list.
    fn attr_values<'a>(html: &'a str, prefix: &str) -> Vec<&'a str> {
        html.match_indices(prefix)
            .map(|(i, _)| {
                let rest = &html[i + prefix.len()..];
                &rest[..rest.find('"').unwrap_or(0)]
            })
            .collect()
    }

    /// A section's markup, from its heading to the next section's.
    fn section<'a>(html: &'a str, id: &str) -> &'a str {
        let s = &html[html.find(&format!("<h2 id=\"{id}\"")).expect(id)..];
        &s[..s[1..].find("<h2 id=").map_or(s.len(), |e| e + 1)]
    }

    #[test]
    fn the_contents_link_every_section_and_group_and_every_section_folds() {
        for d in [doc(), sweep()] {
            let html = render(&d);
            let nav_end = html.find("</nav>").expect("a contents list");
            let nav = &html[html.find("<nav class=\"toc\"").expect("contents")..nav_end];
            let links = attr_values(nav, "href=\"#");
            let sections = attr_values(&html, "<h2 id=\"");
            assert!(sections.len() >= 5, "{sections:?}");
            for id in &sections {
                assert!(links.contains(id), "the contents link section {id}");
            }
            assert_eq!(
                html.matches("<details class=\"sec\" open><summary><h2 id=")
                    .count(),
                sections.len(),
                "every section folds under its heading"
            );
            let ids: Vec<&str> = attr_values(&html, " id=\"");
            for l in &links {
                assert!(ids.contains(l), "link #{l} leads somewhere");
            }
            // The verdicts come first, then the summary, before any chart.
            let at = |s: &str| html.find(s).unwrap_or(usize::MAX);
            assert!(at("<h2 id=\"verdicts\"") < at("<h2 id=\"summary\""));
            assert!(at("<h2 id=\"summary\"") < at("<svg"));
            assert!(at("<nav") < at("<h2 id=\"verdicts\""));
        }
    }

    #[test]
    fn the_verdicts_count_each_kind_and_link_each_contradiction_to_its_row() {
        let d = sweep();
        let html = render(&d);
        let v = section(&html, "verdicts");
        assert!(v.contains(">device 24</span>"), "{v}");
        // The contradicted reads at 4 KiB records: 2 file sizes x 2 thread counts, each linked.
        let links = attr_values(v, "href=\"#");
        assert_eq!(links.len(), 4, "{links:?}");
        for l in links {
            assert!(
                html.contains(&format!("<tr id=\"{l}\" class=\"flag\">")),
                "{l}"
            );
        }
        let mut quiet = doc();
        quiet.results.truncate(1);
        assert!(render(&quiet).contains("Every result measured what its test meant"));
    }

    #[test]
    fn a_thread_sweep_over_sizes_is_one_grid_of_small_charts_per_test() {
        let html = render(&sweep());
        let s = section(&html, "scaling");
        // Two tests: two groups, not one per test and size point (twelve).
        assert_eq!(attr_values(s, "<h3 id=\"").len(), 2, "{s}");
        assert_eq!(
            s.matches("<div class=\"multi\">").count(),
            4,
            "a throughput and a latency grid per test"
        );
        assert_eq!(
            attr_values(s, "<svg id=\"scale-tp-").len(),
            12,
            "one chart per size point"
        );
        assert_eq!(attr_values(s, "<svg id=\"scale-lat-").len(), 12);
        assert!(s.contains("every chart on the same scale"));
        // Small charts: the width of a grid cell.
        assert!(s.contains("width=\"270\" height=\"190\""));
        // The heatmaps of one test at 1 and 2 threads are one group too.
        let sizes = section(&html, "sizes");
        assert_eq!(attr_values(sizes, "<h3 id=\"").len(), 2);
        assert_eq!(attr_values(sizes, "<svg id=\"heat-").len(), 4);
    }

    #[test]
    fn timelines_are_a_grid_per_test_and_a_contradicted_one_is_drawn_full_size() {
        let mut d = doc();
        let html = render(&d);
        let s = section(&html, "timeline");
        assert_eq!(
            attr_values(s, "<h3 id=\"").len(),
            1,
            "one group for the four writes"
        );
        assert!(s.contains("write <small class=\"sub\">(4 results)</small>"));
        assert_eq!(s.matches("<svg id=\"tl-io-").count(), 4);
        assert_eq!(
            s.matches("width=\"300\" height=\"200\"").count(),
            8,
            "small charts"
        );
        // The legend names what is drawn: application and device writes, no reads.
        assert!(s.contains("application write") && !s.contains("application read"));
        if let Some(w) = d.results[2].witness.as_mut() {
            w.contradicts_intent = true;
            w.explanation = "the cache answered".into();
        }
        let html = render(&d);
        let s = section(&html, "timeline");
        assert_eq!(attr_values(s, "<h3 id=\"").len(), 2);
        let first = &s[s.find("<h3 id=").unwrap()..];
        assert!(
            first.starts_with("<h3 id=\"g-tl-0\">write 4m/4k"),
            "{}",
            &first[..80]
        );
        assert!(first.contains("<p>the cache answered</p>"));
        assert_eq!(s.matches("width=\"620\" height=").count(), 2, "full size");
        assert!(s.contains("(3 results)"));
    }

    #[test]
    fn every_point_and_cell_shows_its_figures_on_hover() {
        let html = render(&sweep());
        // A marked point: the series, the axis and the figure with its interval.
        let hv = section(&html, "scaling")
            .split("class=\"hv\"><title>")
            .nth(1)
            .expect("hover targets");
        let t = &hv[..hv.find("</title>").unwrap()];
        assert!(
            t.starts_with("throughput (mean, 95% CI)\nthreads: 1\nthroughput, MB/s: "),
            "{t}"
        );
        assert!(t.contains("(95% CI "), "{t}");
        // Heatmap cells and repetitions carry theirs.
        assert!(html.contains(" MB/s</title></rect>"));
        assert!(html.contains(": repetition 3: "));
        // The reference line of perfect scaling has no hover target: every target is a measured point.
        let targets = html.matches("class=\"hv\"").count();
        assert!(targets > 24 * 2, "{targets}");
    }

    /// A large sweep: three tests over six file sizes and five record sizes (90 results), the
    /// random reads' verdicts contradicted with explanations alike apart from their figures.
    fn large() -> RunDoc {
        let mut d = RunDoc::new(
            "run",
            vec!["candor".into(), "run".into()],
            "2026-01-01T00:00:00Z".into(),
        );
        for test in ["write", "read", "randread"] {
            for f in 0..6u64 {
                for k in 0..5u64 {
                    let (file, rec) = ((64u64 << 10) << (2 * f), 4096u64 << k);
                    let bad = test == "randread";
                    d.results.push(TestResult {
                        target: "/t".into(),
                        test: test.into(),
                        engine: "psync".into(),
                        file_size: file,
                        record_size: rec,
                        threads: 1,
                        iodepth: 1,
                        fsync_in_timing: test == "write",
                        throughput_without_flush: (test == "write")
                            .then(|| candor_stats::summarize(&[3e8])),
                        status: candor_model::Status::Ok,
                        throughput: candor_stats::summarize(&[1e8 * (1 + f + k) as f64]),
                        witness: Some(Witness {
                            verdict: if bad {
                                candor_model::Verdict::Mixed
                            } else {
                                candor_model::Verdict::Device
                            },
                            contradicts_intent: bad,
                            explanation: if bad {
                                format!("only {}% of the {} reads waited for the device: the others found their data in memory.", 10 + f, 16 << k)
                            } else {
                                format!("{}% of the bytes reached the device.", 90 + k)
                            },
                            ..Default::default()
                        }),
                        ..Default::default()
                    });
                }
            }
        }
        d
    }

    /// The markup without its tooltips (`title="..."`): what the page prints.
    fn printed(markup: &str) -> String {
        let mut out = String::new();
        let mut rest = markup;
        while let Some(i) = rest.find(" title=\"") {
            out.push_str(&rest[..i]);
            let after = &rest[i + 8..];
            rest = &after[after.find('"').map_or(after.len(), |e| e + 1)..];
        }
        out.push_str(rest);
        out
    }

    #[test]
    fn a_large_result_is_one_map_per_test_with_each_note_once_and_its_rows_folded() {
        let d = large();
        let html = render(&d);
        let s = section(&html, "summary");
        let p = printed(s);
        // One group per test, each with its map of file size x record size.
        assert_eq!(
            attr_values(s, "<h3 id=\"sum-0-").len(),
            3,
            "one group per test"
        );
        assert_eq!(s.matches("<table class=\"heat\">").count(), 3);
        // A map has a row per file size and a column per record size: 6 x 5 cells.
        let first = &s[s.find("<table class=\"heat\">").unwrap()..];
        let first = &first[..first.find("</table>").unwrap()];
        assert_eq!(first.matches("<tr>").count(), 7, "{first}");
        assert_eq!(first.matches("<td").count(), 30);
        // The randreads' 30 explanations, alike apart from their figures, are one note, printed
        // once on the whole page beside the verdicts' tooltips, and no scroll box.
        assert_eq!(
            p.matches("found their data in memory.").count(),
            1,
            "each note once"
        );
        assert!(s.contains("<b>30 results</b> (randread 64k/4k, "), "{s}");
        assert!(!html.contains("class=\"scroll\""));
        assert!(!s.contains("what the kernel saw</th>"));
        // Every row is still there, folded, with the note's number.
        let rows = &s[s.find("<details class=\"rows\">").expect("rows folded")..];
        assert_eq!(rows.matches("<tr id=\"r").count(), 90);
        assert_eq!(rows.matches("class=\"flag\"").count(), 30);
        // The verdicts name the tests that need a look, linked to their groups, not 30 paragraphs.
        let v = section(&html, "verdicts");
        assert!(
            v.contains("<a href=\"#sum-0-2\">randread</a> 30 of 30"),
            "{v}"
        );
        assert!(!printed(v).contains("found their data in memory"));
        // The contents list the tests' groups from the headings the summary gave.
        let nav = &html[html.find("<nav").unwrap()..html.find("</nav>").unwrap()];
        for (i, t) in ["write", "read", "randread"].iter().enumerate() {
            assert!(
                nav.contains(&format!("<a href=\"#sum-0-{i}\">{t}</a>")),
                "{nav}"
            );
        }
    }

    #[test]
    fn the_small_summary_has_the_no_flush_column_and_each_explanation_once() {
        let mut d = large();
        d.results
            .retain(|r| r.file_size == 64 << 10 && r.record_size <= 8192);
        assert_eq!(d.results.len(), 6);
        let html = render(&d);
        let s = section(&html, "summary");
        let p = printed(s);
        assert!(s.contains("<th>no-flush MB/s</th>"), "{s}");
        assert!(
            s.contains("<td>300</td>"),
            "the writes' figure without the flush"
        );
        // A contradicted row's explanation is its note, not also a cell of its row.
        assert_eq!(
            p.matches("only 10% of the 16 reads waited for the device")
                .count(),
            1
        );
        assert!(s.contains("<td class=\"expl\">90% of the bytes reached the device.</td>"));
    }

    #[test]
    fn the_contents_are_built_from_the_headings_the_sections_give() {
        let mut s = Section::default();
        s.open("x", "A <title>");
        s.push_str("<h3 id=\"not-a-group\">written in the body</h3>");
        s.subheading("g1", "first", " <small>1</small>");
        s.group("g2", "second", "", "<p>body</p>", false);
        assert_eq!(
            s.heading,
            Some(Heading {
                level: 2,
                id: "x".into(),
                text: "A &lt;title&gt;".into()
            })
        );
        let ids: Vec<(&str, &str, u8)> = s
            .groups
            .iter()
            .map(|h| (h.id.as_str(), h.text.as_str(), h.level))
            .collect();
        assert_eq!(ids, [("g1", "first", 3), ("g2", "second", 3)]);
        assert!(s.to_html().contains(
            "<details class=\"grp\"><summary><h3 id=\"g2\">second</h3></summary><p>body</p></details>"
        ));
    }

    #[test]
    fn the_page_fetches_nothing() {
        for d in [doc(), sweep(), RunDoc::default()] {
            let html = render(&d);
            assert!(html.contains("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"));
            for bad in [
                "http://", "https://", "//", "url(", "@import", "<link", "<img", "<script",
                "<iframe", "src=",
            ] {
                let n = html.matches(bad).count();
                // "//" only as the policy allows none: no protocol-relative address anywhere.
                assert_eq!(n, 0, "{bad} in the page");
            }
            for href in attr_values(&html, "href=\"") {
                assert!(href.starts_with('#'), "a link within the page: {href}");
            }
        }
    }

    #[test]
    fn an_empty_or_odd_result_still_renders() {
        let mut d = RunDoc::default();
        assert!(render(&d).contains("No results were recorded."));
        d.results.push(TestResult {
            test: "read".into(),
            status: candor_model::Status::Failed,
            error: Some("boom".into()),
            latency_histogram: HistogramDump::default(),
            ..Default::default()
        });
        let html = render(&d);
        assert!(html.contains("boom") && html.contains("b-failed"));
        assert!(!html.contains("NaN"));
    }
}
