//! The self-contained HTML report: one file, inline CSS and hand-drawn SVG, nothing fetched, no
//! scripts. Sections: header (host, command line, version, dates), summary table per target
//! with verdict badges and explanations, throughput over file size x record size (heatmap and one
//! line per file size), scaling over threads and queue depth (throughput with CI, latency),
//! latency distributions (histogram and percentile curve), witness timelines (application vs
//! device throughput, dirty memory) and repetitions (mean with 95% CI and every run).
//! `compare_page` renders `candor compare` the same way.

use crate::compare::Comparison;
use crate::svg::{self, esc, AxisKind, IntervalRow, LineChart, Series};
use crate::table;
use crate::units;
use crate::view::{self, Axis};
use candor_model::{RunDoc, TestResult};
use candor_stats::Histogram;
use std::fmt::Write;

/// At most this many curves share one latency chart, and this many timelines are drawn.
const MAX_CURVES: usize = 6;
const MAX_TIMELINES: usize = 12;

const CSS: &str = r#"
:root{--fg:#1b1f24;--muted:#57606a;--line:#d0d7de;--bg:#fff;--soft:#f6f8fa}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:var(--fg);background:var(--bg);margin:0;padding:24px 32px;max-width:1440px}
h1{font-size:24px;margin:0 0 4px}h2{font-size:19px;margin:32px 0 8px;padding-bottom:4px;border-bottom:1px solid var(--line)}
h3{font-size:15px;margin:20px 0 6px}
.sub{color:var(--muted);margin:0 0 12px}
code,.mono{font-family:ui-monospace,"DejaVu Sans Mono",Menlo,monospace;font-size:12.5px}
.cmd{background:var(--soft);border:1px solid var(--line);border-radius:6px;padding:8px 10px;overflow-x:auto;white-space:pre-wrap;word-break:break-all}
dl.host{display:grid;grid-template-columns:max-content 1fr;gap:2px 16px;margin:8px 0}
dl.host dt{color:var(--muted)}dl.host dd{margin:0}
table.res{border-collapse:collapse;margin:8px 0;font-size:13px}
table.res th,table.res td{padding:4px 8px;border-bottom:1px solid var(--line);text-align:right;vertical-align:top}
table.res th{background:var(--soft);font-weight:600;white-space:nowrap}
.scroll{max-height:760px;overflow:auto;border:1px solid var(--line);border-radius:6px}
.scroll table.res{margin:0}.scroll table.res tr:first-child th{position:sticky;top:0;z-index:1}
table.res td.l,table.res th.l{text-align:left}table.res td.nw{white-space:nowrap}
table.res tr.flag td{background:#fff4e5}
table.res td.expl{color:var(--muted);min-width:300px;max-width:460px;text-align:left;font-size:12px}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-size:12px;font-weight:600;color:#fff;white-space:nowrap}
.b-device{background:#0072B2}.b-cache{background:#E69F00;color:#1b1f24}.b-mixed{background:#56B4E9;color:#1b1f24}
.b-memory{background:#CC79A7}.b-unverified,.b-none{background:#8c959f}.b-failed{background:#D55E00}
.badge.bad{outline:2px solid #D55E00;outline-offset:1px}
.notes{margin:6px 0 0;padding-left:22px}.notes li{margin:2px 0}
.k-Contradiction,.k-Failed{color:#a33f00}.k-Disturbed,.k-Noisy{color:#7a5a00}
.warn{background:#fff8c5;border:1px solid #d4a72c;border-radius:6px;padding:8px 12px;margin:8px 0}
.charts{display:flex;flex-wrap:wrap;gap:18px;align-items:flex-start}
figure{margin:0;background:#fff;border:1px solid var(--line);border-radius:8px;padding:6px}
figcaption{color:var(--muted);font-size:12px;max-width:640px;padding:2px 6px 4px}
svg.chart text{font-family:system-ui,"DejaVu Sans",sans-serif}
svg .ttl{font-size:14px;font-weight:600;fill:#1b1f24}
svg .tk{font-size:11px;fill:#57606a}svg .al{font-size:12px;fill:#1b1f24}svg .lg{font-size:12px;fill:#1b1f24}
svg .grid{stroke:#eaeef2;stroke-width:1}svg .axis{stroke:#8c959f;stroke-width:1}
svg .cell{font-size:11px;fill:#1b1f24}svg .cell.inv{fill:#fff}svg .empty{fill:#f6f8fa}
.sig-yes{font-weight:600}.sig-no{color:var(--muted)}
footer{margin-top:40px;color:var(--muted);font-size:12px}
"#;

fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{}</title><style>{CSS}</style></head><body>\n{body}\n</body></html>\n",
        esc(title)
    )
}

fn fig(svg: String, caption: &str) -> String {
    format!(
        "<figure>{svg}<figcaption>{}</figcaption></figure>",
        esc(caption)
    )
}

fn mbps(x: f64) -> String {
    tick(x)
}

/// A tick label without trailing zeros: 0, 0.5, 10, 250.
fn tick(x: f64) -> String {
    let a = x.abs();
    let s = if a > 0.0 && a < 1.0 {
        // Enough decimals for two significant digits.
        let d = (-a.log10()).ceil() as usize + 1;
        format!("{x:.d$}")
    } else {
        units::decimals(x)
    };
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

fn lat_us(x: f64) -> String {
    if x >= 1e6 {
        format!("{}M", tick(x / 1e6))
    } else if x >= 1000.0 {
        format!("{}k", tick(x / 1000.0))
    } else {
        tick(x)
    }
}

fn size_kib(x: f64) -> String {
    units::size((x * 1024.0).round() as u64)
}

fn plain(x: f64) -> String {
    format!("{}", x.round() as u64)
}

fn secs(x: f64) -> String {
    tick(x)
}

/// `1 - 10^-v` as a percentile label: 0 -> 0%, 1 -> 90%, 2 -> 99%, 3 -> 99.9%.
fn nines(v: f64) -> String {
    let p = 100.0 * (1.0 - 10f64.powf(-v));
    let s = format!("{p:.2}");
    format!("{}%", s.trim_end_matches('0').trim_end_matches('.'))
}

/// Renders a run.
pub fn render(doc: &RunDoc) -> String {
    let mut b = String::new();
    header(doc, &mut b);
    audit(doc, &mut b);
    summary(doc, &mut b);
    targets_compared(doc, &mut b);
    surfaces(doc, &mut b);
    scaling(doc, &mut b);
    ranks(doc, &mut b);
    latency(doc, &mut b);
    timelines(doc, &mut b);
    repetitions(doc, &mut b);
    let _ = write!(
        b,
        "<footer>Rendered by candor {} from the saved result. Throughput in MB/s (10<sup>6</sup> bytes/s); \
         sizes in binary units; latency per operation in µs; intervals are 95% confidence intervals of the mean.</footer>",
        esc(env!("CARGO_PKG_VERSION"))
    );
    let title = match doc.host.hostname.as_str() {
        "" => "candor report".to_string(),
        h => format!("candor report: {h}"),
    };
    page(&title, &b)
}

fn header(doc: &RunDoc, b: &mut String) {
    let h = &doc.host;
    let _ = write!(
        b,
        "<h1>candor report{}</h1><p class=\"sub\">candor {} · started {}{}</p>",
        if h.hostname.is_empty() {
            String::new()
        } else {
            format!(" — {}", esc(&h.hostname))
        },
        esc(&doc.candor_version),
        esc(&doc.started_at),
        doc.finished_at
            .as_ref()
            .map(|f| format!(" · finished {}", esc(f)))
            .unwrap_or_default()
    );
    if !doc.complete {
        let _ = write!(
            b,
            "<div class=\"warn\"><b>Incomplete run:</b> {}. The results below are those measured before it stopped.</div>",
            esc(doc.stop_reason.as_deref().unwrap_or("the run did not finish"))
        );
    }
    b.push_str("<dl class=\"host\">");
    let mut row = |k: &str, v: String| {
        if !v.trim().is_empty() {
            let _ = write!(b, "<dt>{}</dt><dd>{}</dd>", esc(k), esc(&v));
        }
    };
    row(
        "CPU",
        if h.cpu_model.is_empty() {
            String::new()
        } else {
            format!("{} ({})", h.cpu_model, table::cores(h.cores, h.threads))
        },
    );
    row(
        "Caches",
        h.caches
            .iter()
            .map(|c| format!("L{} {} {}", c.level, c.kind, units::size_long(c.size_bytes)))
            .collect::<Vec<_>>()
            .join(", "),
    );
    row(
        "Memory",
        if h.ram_bytes > 0 {
            units::size_long(h.ram_bytes)
        } else {
            String::new()
        },
    );
    row("OS", h.os.clone());
    row("Kernel", h.kernel.clone());
    for t in &doc.targets {
        row("Target", format!("{}: {}", t.path, view::target_line(t)));
    }
    if let Some(m) = &doc.mpi {
        row(
            "MPI",
            format!(
                "{} on {} ({}), {}",
                table::plural(m.ranks, "rank"),
                table::plural(m.nodes, "node"),
                m.node_names.join(", "),
                if m.shared_file {
                    "one shared file"
                } else {
                    "one file per rank"
                }
            ),
        );
    }
    b.push_str("</dl>");
    if !doc.command_line.is_empty() {
        let _ = write!(
            b,
            "<div class=\"cmd mono\">{}</div>",
            esc(&doc.command_line.join(" "))
        );
    }
}

fn badge(r: &TestResult) -> String {
    if view::failed(r) {
        return "<span class=\"badge b-failed\">failed</span>".into();
    }
    match &r.witness {
        None => "<span class=\"badge b-none\">no witness</span>".into(),
        Some(w) => {
            let class = w.verdict.as_str();
            format!(
                "<span class=\"badge b-{class}{}\" title=\"{}\">{}</span>",
                if w.contradicts_intent { " bad" } else { "" },
                esc(&w.explanation),
                esc(&view::verdict_cell(r))
            )
        }
    }
}

fn summary(doc: &RunDoc, b: &mut String) {
    if doc.results.is_empty() {
        if doc.audit.is_none() {
            b.push_str("<h2 id=\"summary\">Summary</h2><p>No results were recorded.</p>");
        }
        return;
    }
    b.push_str("<h2 id=\"summary\">Summary</h2>");
    let mut next = 1;
    for g in view::groups(doc) {
        let _ = write!(b, "<h3>Target <code>{}</code>", esc(&g.path));
        if let Some(t) = g.info {
            let _ = write!(b, " — {}", esc(&view::target_line(t)));
        }
        b.push_str("</h3>");
        if g.results.is_empty() {
            continue;
        }
        let (notes, refs) = view::number_notes(&g.results, next);
        next += notes.len();
        let any_eff = g.results.iter().any(|r| r.efficiency.is_some());
        let io = view::show_io(&g.results);
        b.push_str(if g.results.len() > 30 {
            "<div class=\"scroll\">"
        } else {
            "<div>"
        });
        b.push_str("<table class=\"res\"><tr><th class=\"l\">test</th><th>file</th><th>record</th><th>threads</th><th>QD</th>");
        if io {
            b.push_str("<th class=\"l\">engine</th>");
        }
        b.push_str(
            "<th>MB/s (95% CI)</th><th>IOPS</th><th>p50 µs</th><th>p99 µs</th><th>device MB/s</th>",
        );
        if any_eff {
            b.push_str("<th>efficiency</th>");
        }
        b.push_str("<th class=\"l\">verdict</th><th class=\"l\">what the kernel saw</th><th>note</th></tr>");
        for (r, n) in g.results.iter().zip(refs) {
            let flag = r.witness.as_ref().is_some_and(|w| w.contradicts_intent) || view::failed(r);
            let _ = write!(
                b,
                "<tr{}><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>",
                if flag { " class=\"flag\"" } else { "" },
                esc(&r.test),
                view::size_cell(r.file_size),
                view::size_cell(r.record_size),
                r.threads.max(1),
                r.iodepth.max(1),
            );
            if io {
                let _ = write!(b, "<td class=\"l nw\">{}</td>", esc(&view::io_cell(r)));
            }
            let _ = write!(
                b,
                "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>",
                if view::failed(r) {
                    "failed".to_string()
                } else {
                    esc(&view::throughput_cell(r))
                },
                if view::failed(r) {
                    "-".into()
                } else {
                    units::count(r.iops.mean)
                },
                units::us(r.latency_ns.p50 as f64),
                units::us(r.latency_ns.p99 as f64),
                view::device_bps(r).map(units::mb_s).unwrap_or("-".into()),
            );
            if any_eff {
                let _ = write!(
                    b,
                    "<td>{}</td>",
                    r.efficiency
                        .as_ref()
                        .map(|e| units::pct(e.share))
                        .unwrap_or_default()
                );
            }
            let expl = r
                .witness
                .as_ref()
                .map(|w| w.explanation.clone())
                .unwrap_or_default();
            let _ = write!(
                b,
                "<td class=\"l\">{}</td><td class=\"expl\">{}</td><td>{}</td></tr>",
                badge(r),
                esc(&expl),
                esc(&n)
            );
        }
        b.push_str("</table></div>");
        if !notes.is_empty() {
            b.push_str("<ol class=\"notes\">");
            for n in &notes {
                let _ = write!(
                    b,
                    "<li value=\"{}\" class=\"k-{:?}\"><b>{}</b>: {}</li>",
                    n.number,
                    n.kind,
                    esc(&n.about),
                    esc(&n.text)
                );
            }
            b.push_str("</ol>");
        }
    }
    let warnings = view::warnings(doc);
    if !warnings.is_empty() {
        b.push_str("<div class=\"warn\"><b>Warnings</b><ul>");
        for w in &warnings {
            let _ = write!(b, "<li>{}</li>", esc(w));
        }
        b.push_str("</ul></div>");
    }
}

/// `candor audit`: what the audited program claimed against what the witness observed.
fn audit(doc: &RunDoc, b: &mut String) {
    let Some(claims) = crate::audit::claims(doc) else {
        return;
    };
    b.push_str("<h2 id=\"audit\">Claimed vs observed</h2>");
    if let Some(l) = crate::audit::command_line(doc) {
        let _ = write!(b, "<p class=\"mono\">{}</p>", esc(&l));
    }
    if claims.is_empty() {
        b.push_str("<p>No figure of the audited program was recognised.</p>");
        return;
    }
    let (g, notes) = crate::audit::grid(&claims);
    b.push_str(&g.to_html());
    if !notes.is_empty() {
        b.push_str("<ol class=\"notes\">");
        for n in &notes {
            let _ = write!(b, "<li>{}</li>", esc(n));
        }
        b.push_str("</ol>");
    }
    let mut rows = Vec::new();
    for c in &claims {
        let label = format!("{} {}", c.program, c.test);
        let point = |label: String, v: f64, colour: usize| IntervalRow {
            label,
            mean: v / 1e6,
            lo: v / 1e6,
            hi: v / 1e6,
            samples: Vec::new(),
            flagged: false,
            colour: Some(colour),
        };
        rows.push(point(format!("{label}: claimed"), c.claimed_bps, 1));
        if let Some(o) = c.observed_wall_bps {
            rows.push(point(format!("{label}: observed"), o, 0));
        }
    }
    let chart = svg::interval_chart(
        "audit-0",
        "Claimed and observed throughput",
        "MB/s",
        &rows,
        mbps,
        760.0,
    );
    let _ = write!(
        b,
        "<div class=\"charts\">{}</div>",
        fig(chart, "Orange: what the program printed; blue: its bytes over the time from open to close, as the kernel saw them.")
    );
}

/// Several targets in one run: the same tests side by side, as `candor compare` shows them.
fn targets_compared(doc: &RunDoc, b: &mut String) {
    let sides = crate::compare::sides(&[(String::from("this run"), doc.clone())]);
    if sides.len() < 2 {
        return;
    }
    let c = crate::compare::compare(sides);
    b.push_str("<h2 id=\"targets\">Targets compared</h2><p class=\"sub\">The same tests on each target. Ratios are to target A; \
        significance by Welch's t-test on the repetitions (p &lt; 0.05), or non-overlapping 95% intervals.</p>");
    compare_body(&c, "h3", b);
}

/// Results of one kind (same target, test, threads, depth, engine, flags) that vary in sizes.
fn size_sets(doc: &RunDoc) -> Vec<(String, Vec<&TestResult>)> {
    let mut sets: Vec<(String, Vec<&TestResult>)> = Vec::new();
    let several = view::groups(doc).len() > 1;
    for r in doc.results.iter().filter(|r| !view::failed(r)) {
        let mut name = r.test.clone();
        if r.threads > 1 {
            name.push_str(&format!(", {} threads", r.threads));
        }
        if r.iodepth > 1 {
            name.push_str(&format!(", QD {}", r.iodepth));
        }
        if !r.engine.is_empty() {
            name.push_str(&format!(", {}", r.engine));
        }
        if r.direct {
            name.push_str(", O_DIRECT");
        }
        if several {
            name.push_str(&format!(" on {}", r.target));
        }
        match sets.iter_mut().find(|(n, _)| *n == name) {
            Some((_, v)) => v.push(r),
            None => sets.push((name, vec![r])),
        }
    }
    sets
}

/// A set's name for a chart title: without the target's path (the heading above the charts
/// carries it), so the title fits.
fn short_title(name: &str) -> &str {
    name.split(" on ").next().unwrap_or(name)
}

fn surfaces(doc: &RunDoc, b: &mut String) {
    let sets: Vec<_> = size_sets(doc)
        .into_iter()
        .filter(|(_, v)| {
            let mut k: Vec<(u64, u64)> = v.iter().map(|r| (r.file_size, r.record_size)).collect();
            k.sort();
            k.dedup();
            k.len() >= 2
        })
        .collect();
    if sets.is_empty() {
        return;
    }
    b.push_str("<h2 id=\"sizes\">Throughput over file size and record size</h2>\
        <p class=\"sub\">iozone's surface, flattened: each cell is the mean throughput of one file size and record size; \
        the lines show the same figures with one line per file size.</p>");
    for (i, (name, rs)) in sets.iter().enumerate() {
        let mut files: Vec<u64> = rs.iter().map(|r| r.file_size).collect();
        files.sort();
        files.dedup();
        let mut recs: Vec<u64> = rs.iter().map(|r| r.record_size).collect();
        recs.sort();
        recs.dedup();
        let get = |f: u64, rec: u64| {
            rs.iter()
                .find(|r| r.file_size == f && r.record_size == rec)
                .map(|r| r.throughput.mean / 1e6)
        };
        let values: Vec<Vec<Option<f64>>> = files
            .iter()
            .map(|f| recs.iter().map(|rec| get(*f, *rec)).collect())
            .collect();
        let heat = svg::heatmap(
            &format!("heat-{i}"),
            &format!("{}: MB/s", short_title(name)),
            "file size",
            "record size",
            &files.iter().map(|f| units::size(*f)).collect::<Vec<_>>(),
            &recs.iter().map(|r| units::size(*r)).collect::<Vec<_>>(),
            &values,
            mbps,
            "MB/s",
        );
        // Lines for at most six file sizes, spread from the smallest to the largest: more
        // would be a tangle (the heatmap beside it has them all).
        let shown: Vec<u64> = if files.len() <= MAX_CURVES {
            files.clone()
        } else {
            let step = (files.len() - 1) as f64 / (MAX_CURVES - 1) as f64;
            let mut v: Vec<u64> = (0..MAX_CURVES)
                .map(|k| files[((k as f64 * step).round() as usize).min(files.len() - 1)])
                .collect();
            v.dedup();
            v
        };
        let lines_caption = if shown.len() < files.len() {
            format!(
                "One line per file size ({} of {}, spread from the smallest to the largest; the heatmap has them all).",
                shown.len(),
                files.len()
            )
        } else {
            "One line per file size.".to_string()
        };
        // One record size: a line over record size would be a column of dots, so the line
        // runs over file size instead.
        let over_files = recs.len() == 1;
        let series: Vec<Series> = if over_files {
            vec![Series {
                name: format!("record {}", units::size(recs[0])),
                points: files
                    .iter()
                    .filter_map(|f| get(*f, recs[0]).map(|v| (*f as f64 / 1024.0, v)))
                    .collect(),
                ..Default::default()
            }]
        } else {
            shown
                .iter()
                .map(|f| Series {
                    name: format!("file {}", units::size(*f)),
                    points: recs
                        .iter()
                        .filter_map(|rec| get(*f, *rec).map(|v| (*rec as f64 / 1024.0, v)))
                        .collect(),
                    ..Default::default()
                })
                .collect()
        };
        let (by, lines_caption) = if over_files {
            (
                "file size",
                "One record size ran: the line follows the file size.".to_string(),
            )
        } else {
            ("record size", lines_caption)
        };
        let lines = svg::line_chart(&LineChart {
            id: format!("size-{i}"),
            title: format!("{}: MB/s by {by}", short_title(name)),
            x_label: by.into(),
            y_label: "throughput, MB/s".into(),
            x_kind: AxisKind::Log2,
            y_kind: AxisKind::Linear,
            x_fmt: size_kib,
            y_fmt: mbps,
            series,
            width: 620.0,
            height: 320.0,
            markers: true,
        });
        let _ = write!(
            b,
            "<h3>{}</h3><div class=\"charts\">{}{}</div>",
            esc(name),
            fig(heat, "Darker is faster. Blank cells did not run (record larger than the file, or not asked for)."),
            fig(lines, &lines_caption)
        );
    }
}

fn scaling(doc: &RunDoc, b: &mut String) {
    let mut all = Vec::new();
    for g in view::groups(doc) {
        for axis in [Axis::Threads, Axis::Depth] {
            for s in view::series(&g.results, axis) {
                all.push((g.path.clone(), s));
            }
        }
    }
    if all.is_empty() {
        return;
    }
    b.push_str("<h2 id=\"scaling\">Scaling over threads and queue depth</h2>");
    for (i, (target, s)) in all.iter().enumerate() {
        let xs: Vec<f64> = s
            .points
            .iter()
            .map(|r| s.axis.value(r).max(1) as f64)
            .collect();
        let tp = Series {
            name: "throughput (mean, 95% CI)".into(),
            points: xs
                .iter()
                .zip(&s.points)
                .map(|(x, r)| (*x, r.throughput.mean / 1e6))
                .collect(),
            err: s
                .points
                .iter()
                .map(|r| (r.throughput.ci95[0] / 1e6, r.throughput.ci95[1] / 1e6))
                .collect(),
            ..Default::default()
        };
        let first = s.points[0].throughput.mean / 1e6;
        let linear = Series {
            name: "linear scaling".into(),
            points: xs.iter().map(|x| (*x, first * x / xs[0])).collect(),
            dashed: true,
            colour: Some(7),
            ..Default::default()
        };
        // Perfect scaling soon leaves the measured figures far below; it is drawn up to 1.6x
        // the highest of them (ending where it crosses that line), so the figures keep the
        // chart's height.
        let ymax = tp.points.iter().map(|p| p.1).fold(0.0, f64::max) * 1.6;
        let mut clipped: Vec<(f64, f64)> = Vec::new();
        for p in &linear.points {
            if p.1 <= ymax {
                clipped.push(*p);
            } else {
                if first > 0.0 {
                    clipped.push((xs[0] * ymax / first, ymax));
                }
                break;
            }
        }
        let linear = Series {
            points: clipped,
            ..linear
        };
        let name = s.axis.name();
        let c1 = svg::line_chart(&LineChart {
            id: format!("scale-tp-{i}"),
            title: format!("{}: throughput over {}", s.title, name),
            x_label: name.into(),
            y_label: "throughput, MB/s".into(),
            x_kind: AxisKind::Log2,
            y_kind: AxisKind::Linear,
            x_fmt: plain,
            y_fmt: mbps,
            series: vec![tp, linear],
            width: 620.0,
            height: 320.0,
            markers: true,
        });
        let lat = |name: &str, f: fn(&TestResult) -> u64, c: usize| Series {
            name: name.into(),
            points: xs
                .iter()
                .zip(&s.points)
                .map(|(x, r)| (*x, f(r) as f64 / 1e3))
                .collect(),
            colour: Some(c),
            ..Default::default()
        };
        let c2 = svg::line_chart(&LineChart {
            id: format!("scale-lat-{i}"),
            title: format!("{}: latency over {}", s.title, name),
            x_label: name.into(),
            y_label: "latency per operation, µs".into(),
            x_kind: AxisKind::Log2,
            y_kind: AxisKind::Log10,
            x_fmt: plain,
            y_fmt: lat_us,
            series: vec![
                lat("p50", |r| r.latency_ns.p50, 0),
                lat("p99", |r| r.latency_ns.p99, 1),
                lat("p99.9", |r| r.latency_ns.p999, 3),
            ],
            width: 620.0,
            height: 320.0,
            markers: true,
        });
        let _ = write!(
            b,
            "<h3>{} <small class=\"mono\">{}</small></h3><p>{}</p><div class=\"charts\">{}{}</div>",
            esc(&s.title),
            esc(target),
            esc(&view::scaling_sentence(s)),
            fig(c1, "Error bars: 95% confidence interval over the repetitions. Dashed: perfect scaling from the first point."),
            fig(c2, "Latency of one operation (one record) at the 50th, 99th and 99.9th percentile; log scale.")
        );
        let mut t = String::new();
        t.push_str(&table::scaling_grid(s).to_text());
        let _ = write!(
            b,
            "<details><summary>Table</summary><pre class=\"mono\">{}</pre></details>",
            esc(&t)
        );
    }
}

/// MPI runs: each rank's throughput per test, with the spread and the ranks that lagged.
fn ranks(doc: &RunDoc, b: &mut String) {
    let with: Vec<(&TestResult, Vec<view::RankRate>)> = doc
        .results
        .iter()
        .filter_map(|r| view::rank_rates(r).map(|v| (r, v)))
        .filter(|(_, v)| v.len() >= 2)
        .collect();
    if with.is_empty() {
        return;
    }
    b.push_str("<h2 id=\"ranks\">Ranks</h2><p class=\"sub\">Each MPI rank's own throughput (its bytes over its own time), \
        mean and 95% CI over the repetitions. The headline figure is the aggregate: all ranks' bytes over the span from the \
        earliest start to the latest end.</p><div class=\"charts\">");
    for (i, (r, ranks)) in with.iter().enumerate().take(MAX_TIMELINES) {
        let lagging: Vec<u64> = r
            .ranks
            .as_ref()
            .and_then(|v| v.get("lagging_ranks"))
            .and_then(|l| l.as_array())
            .map(|a| a.iter().filter_map(|x| x.as_u64()).collect())
            .unwrap_or_default();
        let rows: Vec<IntervalRow> = ranks
            .iter()
            .map(|k| IntervalRow {
                label: if k.node.is_empty() {
                    format!("rank {}", k.rank)
                } else {
                    format!("rank {} ({})", k.rank, k.node)
                },
                mean: k.mean / 1e6,
                lo: k.ci95[0] / 1e6,
                hi: k.ci95[1] / 1e6,
                samples: k.samples.iter().map(|x| x / 1e6).collect(),
                flagged: lagging.contains(&k.rank),
                colour: None,
            })
            .collect();
        let c = svg::interval_chart(
            &format!("ranks-{i}"),
            &format!("{}: per rank", view::label(r)),
            "throughput of the rank, MB/s",
            &rows,
            mbps,
            620.0,
        );
        let caption = view::rank_spread(r).unwrap_or_default();
        b.push_str(&fig(
            c,
            &format!(
                "Aggregate {} MB/s. {caption} Orange-red: lagging ranks.",
                units::mb_s(r.throughput.mean)
            ),
        ));
    }
    b.push_str("</div>");
}

/// Up to `MAX_CURVES` results of a set to draw together: all when few, else evenly picked
/// across sizes, threads and depths.
fn pick_curves<'a>(rs: &[&'a TestResult]) -> Vec<&'a TestResult> {
    let mut with: Vec<&TestResult> = rs
        .iter()
        .copied()
        .filter(|r| !r.latency_histogram.buckets.is_empty())
        .collect();
    with.sort_by_key(|r| (r.file_size, r.record_size, r.threads, r.iodepth));
    if with.len() <= MAX_CURVES {
        return with;
    }
    let step = (with.len() - 1) as f64 / (MAX_CURVES - 1) as f64;
    let mut picked: Vec<&TestResult> = (0..MAX_CURVES)
        .map(|i| with[((i as f64 * step).round() as usize).min(with.len() - 1)])
        .collect();
    picked.dedup_by(|a, b| std::ptr::eq(*a, *b));
    picked
}

/// A curve's name: what varies among the curves drawn together.
fn curve_name(r: &TestResult, rs: &[&TestResult]) -> String {
    let varies = |f: fn(&TestResult) -> u64| rs.iter().any(|o| f(o) != f(r));
    let mut parts = Vec::new();
    if varies(|o| o.file_size) || varies(|o| o.record_size) {
        parts.push(format!(
            "{} / {}",
            units::size(r.file_size),
            units::size(r.record_size)
        ));
    }
    if varies(|o| o.threads as u64) {
        parts.push(Axis::Threads.point(r.threads.max(1)));
    }
    if varies(|o| o.iodepth as u64) {
        parts.push(Axis::Depth.point(r.iodepth.max(1)));
    }
    if parts.is_empty() {
        view::label(r)
    } else {
        parts.join(", ")
    }
}

/// Results grouped for latency charts: by test, engine, O_DIRECT and target, across sizes,
/// threads and depths.
fn latency_sets(doc: &RunDoc) -> Vec<(String, Vec<&TestResult>)> {
    let several = view::groups(doc).len() > 1;
    let mut sets: Vec<(String, Vec<&TestResult>)> = Vec::new();
    for r in doc
        .results
        .iter()
        .filter(|r| !view::failed(r) && !r.latency_histogram.buckets.is_empty())
    {
        let mut name = r.test.clone();
        if !r.engine.is_empty() {
            name.push_str(&format!(", {}", r.engine));
        }
        if r.direct {
            name.push_str(", O_DIRECT");
        }
        if several {
            name.push_str(&format!(" on {}", r.target));
        }
        match sets.iter_mut().find(|(n, _)| *n == name) {
            Some((_, v)) => v.push(r),
            None => sets.push((name, vec![r])),
        }
    }
    sets
}

fn latency(doc: &RunDoc, b: &mut String) {
    let sets = latency_sets(doc);
    if sets.is_empty() {
        return;
    }
    b.push_str("<h2 id=\"latency\">Latency distributions</h2>\
        <p class=\"sub\">Time of each operation (one record) as candor timed it. Left: how the operations spread over latency. \
        Right: the latency below which a given share of them finished (the tail to the right).</p>");
    for (i, (name, rs)) in sets.iter().enumerate() {
        let picked = pick_curves(rs);
        let mut hist = Vec::new();
        let mut pct = Vec::new();
        for (j, r) in picked.iter().enumerate() {
            let label = curve_name(r, &picked);
            // Regroup the fine buckets into 10 per decade so the curve reads smoothly.
            let total: u64 = r.latency_histogram.buckets.iter().map(|b| b[1]).sum();
            let mut bins: Vec<(i64, u64)> = Vec::new();
            for [lo, n] in &r.latency_histogram.buckets {
                let k = ((*lo).max(1) as f64).log10().mul_add(10.0, 0.0).floor() as i64;
                match bins.iter_mut().find(|(kk, _)| *kk == k) {
                    Some((_, c)) => *c += n,
                    None => bins.push((k, *n)),
                }
            }
            bins.sort();
            // Empty bins between and around the used ones are zero, so each curve starts and
            // ends on the axis.
            if let (Some(&(lo, _)), Some(&(hi, _))) = (bins.first(), bins.last()) {
                bins = (lo - 1..=hi + 1)
                    .map(|k| (k, bins.iter().find(|(kk, _)| *kk == k).map_or(0, |b| b.1)))
                    .collect();
            }
            let pts: Vec<(f64, f64)> = bins
                .iter()
                .map(|(k, n)| {
                    let mid_ns = 10f64.powf((*k as f64 + 0.5) / 10.0);
                    (mid_ns / 1e3, 100.0 * *n as f64 / total.max(1) as f64)
                })
                .collect();
            hist.push(Series {
                name: label.clone(),
                points: pts,
                colour: Some(j),
                ..Default::default()
            });
            let h = Histogram::from_dump(&r.latency_histogram);
            let mut p = Vec::new();
            let mut v = 0.0;
            while v <= 4.0 + 1e-9 {
                let q = 1.0 - 10f64.powf(-v);
                p.push((v, h.quantile(q) as f64 / 1e3));
                v += 0.1;
            }
            pct.push(Series {
                name: label,
                points: p,
                colour: Some(j),
                ..Default::default()
            });
        }
        let c1 = svg::line_chart(&LineChart {
            id: format!("lat-hist-{i}"),
            title: format!("{}: latency histogram", short_title(name)),
            x_label: "latency per operation, µs (log)".into(),
            y_label: "share of operations, %".into(),
            x_kind: AxisKind::Log10,
            y_kind: AxisKind::Linear,
            x_fmt: lat_us,
            y_fmt: tick,
            series: hist,
            width: 620.0,
            height: 320.0,
            markers: false,
        });
        let c2 = svg::line_chart(&LineChart {
            id: format!("lat-pct-{i}"),
            title: format!("{}: latency percentiles", short_title(name)),
            x_label: "percentile".into(),
            y_label: "latency, µs (log)".into(),
            x_kind: AxisKind::Linear,
            y_kind: AxisKind::Log10,
            x_fmt: nines,
            y_fmt: lat_us,
            series: pct,
            width: 620.0,
            height: 320.0,
            markers: false,
        });
        let more = if rs.len() > picked.len() {
            format!(" Showing {} of {} results, evenly picked; the summary has every result's percentiles.", picked.len(), rs.len())
        } else {
            String::new()
        };
        let _ = write!(
            b,
            "<h3>{}</h3><div class=\"charts\">{}{}</div>",
            esc(name),
            fig(c1, &format!("Bins of a tenth of a decade.{more}")),
            fig(
                c2,
                "Read across: at 99% on the x axis, the y value is the p99 latency."
            )
        );
    }
}

/// A timeline this long shows a course over time; shorter ones are drawn after the others.
const MIN_COURSE: usize = 5;

/// A rate of the timeline as steps: each sample is the rate over the interval since the one
/// before it (the first since the test began), so it is drawn flat over that interval rather
/// than as a slope between sampling instants.
fn steps(
    tl: &[candor_model::TimelinePoint],
    f: impl Fn(&candor_model::TimelinePoint) -> f64,
) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(tl.len() * 2);
    let mut start = 0.0f64;
    for p in tl {
        let v = f(p);
        out.push((start.min(p.t), v));
        out.push((p.t, v));
        start = p.t;
    }
    out
}

fn timelines(doc: &RunDoc, b: &mut String) {
    let mut with: Vec<&TestResult> = doc
        .results
        .iter()
        .filter(|r| r.witness.as_ref().is_some_and(|w| w.timeline.len() >= 2))
        .collect();
    if with.is_empty() {
        return;
    }
    // Contradicted verdicts first (they are the ones a reader needs to see), then timelines
    // long enough to show a course over time, disturbed ones first; a test over in one or two
    // samples comes last.
    with.sort_by_key(|r| {
        let w = r.witness.as_ref();
        (
            !w.is_some_and(|w| w.contradicts_intent),
            w.map_or(0, |w| w.timeline.len()) < MIN_COURSE,
            !w.is_some_and(|w| w.disturbed),
        )
    });
    let total = with.len();
    with.truncate(MAX_TIMELINES);
    b.push_str("<h2 id=\"timeline\">What the kernel saw over time</h2>\
        <p class=\"sub\">Sampled by the witness during each test: what candor's process moved (application) against what reached \
        the block device, and dirty page-cache memory waiting to be written back. A gap between the lines is the page cache at work.</p>");
    for (i, r) in with.iter().enumerate() {
        let Some(w) = &r.witness else { continue };
        let tl = &w.timeline;
        let mut series = Vec::new();
        let mut add =
            |name: &str, f: fn(&candor_model::TimelinePoint) -> f64, c: usize, wide: bool| {
                if tl.iter().any(|p| f(p) > 0.0) {
                    series.push(Series {
                        name: name.into(),
                        points: steps(tl, |p| f(p) / 1e6),
                        colour: Some(c),
                        wide,
                        ..Default::default()
                    });
                }
            };
        // Application lines wide and pale underneath, device lines thin on top: where they
        // coincide, both stay visible.
        add("application write", |p| p.app_write_bps, 1, true);
        add("application read", |p| p.app_read_bps, 2, true);
        add("device write", |p| p.device_write_bps, 0, false);
        add("device read", |p| p.device_read_bps, 3, false);
        // I/O that does not pass through read(2)/write(2) (io_uring, mmap) is not counted in
        // /proc/self/io, so the timeline has no application rate: the mean rate of the
        // repetition the timeline belongs to (the last one) stands in, dashed and named so.
        let sampled_app = tl
            .iter()
            .any(|p| p.app_read_bps > 0.0 || p.app_write_bps > 0.0);
        let mut caption =
            "Wide pale lines: what candor asked for; thin lines: what the device did. \
                           Each step is the rate over one sampling interval."
                .to_string();
        let last_rep = r
            .reps
            .last()
            .filter(|p| p.seconds > 0.0 && p.bytes > 0)
            .map(|p| p.bytes as f64 / p.seconds);
        let (app_mean, over) = match last_rep {
            Some(x) => (x, "the last repetition (this timeline's)"),
            None => (r.throughput.mean, "the test"),
        };
        if !sampled_app && app_mean > 0.0 && (w.app.read_bytes > 0 || w.app.write_bytes > 0) {
            let end = tl.last().map_or(0.0, |p| p.t);
            series.insert(
                0,
                Series {
                    name: format!("application, mean over {over}"),
                    points: vec![(0.0, app_mean / 1e6), (end, app_mean / 1e6)],
                    dashed: true,
                    colour: Some(if w.app.write_bytes > 0 { 1 } else { 2 }),
                    ..Default::default()
                },
            );
            caption = format!(
                "The application's own rate was not sampled: {} I/O does not pass through \
                 read(2)/write(2), which /proc/self/io counts. Dashed: its mean over {over}; thin \
                 lines: what the device did, each step the rate over one sampling interval.",
                if r.engine.is_empty() {
                    "this engine's"
                } else {
                    r.engine.as_str()
                }
            );
        }
        let c1 = svg::line_chart(&LineChart {
            id: format!("tl-io-{i}"),
            title: format!("{}: application vs device", view::label(r)),
            x_label: "time since the test started, s".into(),
            y_label: "MB/s".into(),
            x_kind: AxisKind::Linear,
            y_kind: AxisKind::Linear,
            x_fmt: secs,
            y_fmt: mbps,
            series,
            width: 620.0,
            height: 300.0,
            markers: false,
        });
        let c2 = svg::line_chart(&LineChart {
            id: format!("tl-dirty-{i}"),
            title: format!("{}: dirty memory", view::label(r)),
            x_label: "time since the test started, s".into(),
            y_label: "dirty, MiB".into(),
            x_kind: AxisKind::Linear,
            y_kind: AxisKind::Linear,
            x_fmt: secs,
            y_fmt: mbps,
            series: vec![Series {
                name: "dirty".into(),
                points: tl
                    .iter()
                    .map(|p| (p.t, p.dirty_bytes as f64 / (1u64 << 20) as f64))
                    .collect(),
                colour: Some(4),
                ..Default::default()
            }],
            width: 620.0,
            height: 300.0,
            markers: false,
        });
        let _ = write!(
            b,
            "<h3>{} {}</h3><p>{}</p><div class=\"charts\">{}{}</div>",
            esc(&view::label(r)),
            badge(r),
            esc(&w.explanation),
            fig(c1, &caption),
            fig(
                c2,
                "Dirty: written by applications, not yet on the device (/proc/meminfo Dirty)."
            )
        );
    }
    if total > with.len() {
        let _ = write!(
            b,
            "<p class=\"sub\">{} more timelines are in the JSON result.</p>",
            total - with.len()
        );
    }
}

fn repetitions(doc: &RunDoc, b: &mut String) {
    let groups = view::groups(doc);
    let several = groups.len() > 1;
    let mut any = false;
    for (gi, g) in groups.iter().enumerate() {
        // One chart per test, each with its own scale: a cached reread at 5 GB/s would flatten
        // a random write at 30 MB/s beside it.
        let mut tests: Vec<&str> = Vec::new();
        for r in &g.results {
            if !tests.contains(&r.test.as_str()) {
                tests.push(&r.test);
            }
        }
        let mut charts = String::new();
        for (ti, test) in tests.iter().enumerate() {
            let rows: Vec<IntervalRow> = g
                .results
                .iter()
                .filter(|r| r.test == *test && r.throughput.n >= 2 && !view::failed(r))
                .map(|r| IntervalRow {
                    label: view::label(r),
                    mean: r.throughput.mean / 1e6,
                    lo: r.throughput.ci95[0] / 1e6,
                    hi: r.throughput.ci95[1] / 1e6,
                    samples: r.throughput.samples.iter().map(|s| s / 1e6).collect(),
                    flagged: r.throughput.cv > view::NOISY_CV
                        || r.witness.as_ref().is_some_and(|w| w.contradicts_intent),
                    colour: None,
                })
                .collect();
            for (ci, chunk) in rows.chunks(30).enumerate() {
                let title = if several {
                    format!("{test} on {}", g.path)
                } else {
                    test.to_string()
                };
                let c = svg::interval_chart(
                    &format!("reps-{gi}-{ti}-{ci}"),
                    &format!("{title}: mean and 95% CI"),
                    "throughput, MB/s",
                    chunk,
                    mbps,
                    620.0,
                );
                charts.push_str(&fig(
                    c,
                    "Each dot is one repetition (in the JSON: throughput.samples).",
                ));
            }
        }
        if charts.is_empty() {
            continue;
        }
        if !any {
            b.push_str("<h2 id=\"reps\">Repetitions</h2><p class=\"sub\">Bar: mean throughput; whiskers: 95% confidence interval of the mean; \
                dots: each repetition. Orange-red bars are flagged (noisy, or not measuring what the test meant).</p>");
            any = true;
        }
        let _ = write!(b, "<div class=\"charts\">{charts}</div>");
    }
}

/// The HTML page of `candor compare`: sides, the side-by-side table with ratios and
/// significance, a chart of every matched test per side with its 95% CI, what could not be
/// compared, and the per-device, per-filesystem table.
pub fn compare_page(c: &Comparison) -> String {
    let mut b = String::from("<h1>candor compare</h1><p class=\"sub\">The same tests side by side. Ratios are to side A; \
        significance by Welch's t-test on the repetitions (p &lt; 0.05), or non-overlapping 95% intervals.</p>");
    compare_body(c, "h2", &mut b);
    page("candor compare", &b)
}

/// The body of a comparison, with headings of the given level ("h2", "h3").
fn compare_body(c: &Comparison, h: &str, b: &mut String) {
    let _ = write!(b, "<{h}>Sides</{h}><dl class=\"host\">");
    for s in &c.sides {
        let line = crate::compare::side_line(s);
        let _ = write!(
            b,
            "<dt>{}</dt><dd>{}</dd>",
            esc(&s.letter),
            esc(line.get(3..).unwrap_or(&line))
        );
    }
    let _ = write!(
        b,
        "</dl><{h}>Side by side</{h}><table class=\"res\"><tr><th class=\"l\">test</th>"
    );
    for (i, s) in c.sides.iter().enumerate() {
        let _ = write!(b, "<th>{} MB/s</th>", esc(&s.letter));
        if i > 0 {
            let _ = write!(
                b,
                "<th>{}/A</th><th class=\"l\">significant</th>",
                esc(&s.letter)
            );
        }
    }
    b.push_str("</tr>");
    for row in &c.rows {
        let _ = write!(b, "<tr><td class=\"l mono\">{}</td>", esc(&row.key.label()));
        for (i, cell) in row.cells.iter().enumerate() {
            match cell {
                Some(cell) => {
                    let r = &cell.result;
                    let wa = crate::compare::amplification_cell(r);
                    let _ = write!(
                        b,
                        "<td>{}{} {}</td>",
                        esc(&units::mb_s_ci(
                            r.throughput.mean,
                            r.throughput.ci95,
                            r.throughput.n
                        )),
                        if wa.is_empty() {
                            String::new()
                        } else {
                            format!(" <small title=\"write amplification: device bytes written per byte written\">WA {wa}</small>")
                        },
                        if r.witness.is_some() {
                            badge(r)
                        } else {
                            String::new()
                        }
                    );
                    if i > 0 {
                        let sig = &cell.significance;
                        let _ = write!(
                            b,
                            "<td>{}</td><td class=\"l {}\">{}</td>",
                            cell.ratio.map(units::ratio).unwrap_or("-".into()),
                            if sig.is_significant() {
                                "sig-yes"
                            } else {
                                "sig-no"
                            },
                            esc(&sig.cell())
                        );
                    }
                }
                None => {
                    b.push_str("<td>-</td>");
                    if i > 0 {
                        b.push_str("<td></td><td></td>");
                    }
                }
            }
        }
        b.push_str("</tr>");
    }
    b.push_str("</table>");
    if !c.rows.is_empty() {
        let mut rows = Vec::new();
        for row in &c.rows {
            for (si, (cell, s)) in row.cells.iter().zip(&c.sides).enumerate() {
                if let Some(cell) = cell {
                    let t = &cell.result.throughput;
                    rows.push(IntervalRow {
                        label: format!(
                            "{} · {}{}",
                            s.letter,
                            row.key.label(),
                            if cell.significance.is_significant() {
                                " *"
                            } else {
                                ""
                            }
                        ),
                        mean: t.mean / 1e6,
                        lo: if t.n >= 2 {
                            t.ci95[0] / 1e6
                        } else {
                            t.mean / 1e6
                        },
                        hi: if t.n >= 2 {
                            t.ci95[1] / 1e6
                        } else {
                            t.mean / 1e6
                        },
                        samples: t.samples.iter().map(|x| x / 1e6).collect(),
                        flagged: false,
                        colour: Some(si),
                    });
                }
            }
        }
        for (i, chunk) in rows.chunks(40).enumerate() {
            let ch = svg::interval_chart(
                &format!("cmp-{i}"),
                "Throughput per side, mean and 95% CI",
                "throughput, MB/s",
                chunk,
                mbps,
                900.0,
            );
            let _ = write!(
                b,
                "<div class=\"charts\">{}</div>",
                fig(ch, "One colour per side; * marks a difference from side A that is statistically significant.")
            );
        }
    }
    if !c.unmatched.is_empty() {
        let _ = write!(b, "<{h}>Not compared</{h}><ul>");
        for u in &c.unmatched {
            let _ = write!(b, "<li>{}.</li>", esc(&u.sentence()));
        }
        b.push_str("</ul>");
    }
    let _ = write!(
        b,
        "<{h}>Per device and filesystem</{h}><p class=\"sub\">{}</p>",
        esc(crate::study::LEGEND)
    );
    let devices = crate::compare::study_devices(c);
    if !devices.is_empty() {
        b.push_str("<dl class=\"host\">");
        for (n, what) in &devices {
            let _ = write!(
                b,
                "<dt class=\"mono\">{}</dt><dd>{}</dd>",
                esc(n),
                esc(what)
            );
        }
        b.push_str("</dl>");
    }
    b.push_str(&crate::compare::study_grid(c, true).to_html());
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

    #[test]
    fn timeline_rates_are_flat_over_their_interval() {
        let tl: Vec<TimelinePoint> = [(0.1, 5.0), (0.2, 7.0)]
            .iter()
            .map(|(t, r)| TimelinePoint {
                t: *t,
                device_write_bps: *r,
                ..Default::default()
            })
            .collect();
        assert_eq!(
            steps(&tl, |p| p.device_write_bps),
            vec![(0.0, 5.0), (0.1, 5.0), (0.1, 7.0), (0.2, 7.0)]
        );
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
