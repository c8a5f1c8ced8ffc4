//! The summary table per target with verdict badges and explanations, and for `candor audit`
//! what the audited program claimed against what the witness observed.

use super::page::{badge, fig, mbps};
use super::Section;
use crate::svg::{self, esc, IntervalRow};
use crate::view::{self, Note};
use crate::{table, units};
use candor_model::{RunDoc, TestResult};
use std::fmt::Write;

/// The id of a result's row in the summary table ("r7": the result's place in the document),
/// which the verdicts link to.
pub(super) fn row_id(doc: &RunDoc, r: &TestResult) -> String {
    let i = doc
        .results
        .iter()
        .position(|x| std::ptr::eq(x, r))
        .unwrap_or(usize::MAX);
    format!("r{i}")
}

/// A target with more results than this gets its summary grouped by test: per test a map of
/// its throughput over file size and record size, and its notes once; its rows are folded.
pub(super) const LARGE: usize = 40;

/// The id of a test's group of a target's large summary.
pub(super) fn test_group_id(target: usize, test: usize) -> String {
    format!("sum-{target}-{test}")
}

/// A target's results by test, in the order the tests first appear.
pub(super) fn by_test<'a>(results: &[&'a TestResult]) -> Vec<(String, Vec<&'a TestResult>)> {
    let mut out: Vec<(String, Vec<&TestResult>)> = Vec::new();
    for r in results {
        match out.iter_mut().find(|(t, _)| *t == r.test) {
            Some((_, rs)) => rs.push(r),
            None => out.push((r.test.clone(), vec![r])),
        }
    }
    out
}

pub(super) fn summary(doc: &RunDoc, b: &mut Section) {
    if doc.results.is_empty() {
        if doc.audit.is_none() {
            b.open("summary", "Summary");
            b.push_str("<p>No results were recorded.</p>");
        }
        return;
    }
    b.open("summary", "Summary");
    let mut next = 1;
    for (gi, g) in view::groups(doc).into_iter().enumerate() {
        let extra = g
            .info
            .map(|t| format!(" — {}", esc(&view::target_line(t))))
            .unwrap_or_default();
        b.subheading(
            &format!("target-{gi}"),
            &format!("Target {}", g.path),
            &extra,
        );
        if g.results.is_empty() {
            continue;
        }
        if g.results.len() > LARGE {
            large(doc, gi, &g.results, &mut next, b);
            continue;
        }
        let (notes, refs) = view::number_notes(&g.results, next);
        next += notes.len();
        b.push_str("<div class=\"wide\">");
        b.push_str(&rows(doc, &g.results, &refs, true));
        b.push_str("</div>");
        notes_list(&notes, &[], b);
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

/// The notes, each once: numbered, with the results it belongs to when it stands for
/// several (`merged[i]`: the labels of the results note i was merged from).
fn notes_list(notes: &[Note], merged: &[Vec<String>], b: &mut Section) {
    if notes.is_empty() {
        return;
    }
    b.push_str("<ol class=\"notes\">");
    for (i, n) in notes.iter().enumerate() {
        let _ = write!(
            b,
            "<li id=\"note-{0}\" value=\"{0}\" class=\"k-{1:?}\"><b>{2}</b>",
            n.number,
            n.kind,
            esc(&n.about)
        );
        match merged.get(i).filter(|l| l.len() > 1) {
            Some(labels) => {
                let _ = write!(
                    b,
                    " ({}{}): {} <span class=\"sub\">(the figures of {}; each row's own are on its verdict)</span></li>",
                    esc(&labels.iter().take(MERGED_NAMED).cloned().collect::<Vec<_>>().join(", ")),
                    if labels.len() > MERGED_NAMED {
                        format!(" and {} more", labels.len() - MERGED_NAMED)
                    } else {
                        String::new()
                    },
                    esc(&n.text),
                    esc(&labels[0])
                );
            }
            None => {
                let _ = write!(b, ": {}</li>", esc(&n.text));
            }
        }
    }
    b.push_str("</ol>");
}

/// A merged note names at most this many of its results.
const MERGED_NAMED: usize = 6;

/// A note's words without its figures: notes alike in this are one note in a large summary.
fn shape(n: &Note) -> (view::NoteKind, String) {
    let mut out = String::new();
    let mut in_figure = false;
    for c in n.text.chars() {
        if c.is_ascii_digit() || (in_figure && (c == '.' || c == ',')) {
            if !in_figure {
                out.push('#');
            }
            in_figure = true;
        } else {
            in_figure = false;
            out.push(c);
        }
    }
    (n.kind, out)
}

/// Notes alike (same kind, same words apart from their figures) merged into one, numbered
/// from `first`; the results' note references renumbered to match. Returns the notes, the
/// labels each stands for, and the new references.
fn merge_notes(
    notes: Vec<Note>,
    refs: Vec<String>,
    first: usize,
) -> (Vec<Note>, Vec<Vec<String>>, Vec<String>) {
    let mut out: Vec<Note> = Vec::new();
    let mut labels: Vec<Vec<String>> = Vec::new();
    let mut shapes: Vec<(view::NoteKind, String)> = Vec::new();
    let mut renumber = std::collections::HashMap::new();
    for mut n in notes {
        let sh = shape(&n);
        match shapes.iter().position(|s| *s == sh) {
            Some(i) => {
                renumber.insert(n.number, out[i].number);
                labels[i].push(n.about.clone());
            }
            None => {
                let number = first + out.len();
                renumber.insert(n.number, number);
                labels.push(vec![n.about.clone()]);
                shapes.push(sh);
                n.number = number;
                out.push(n);
            }
        }
    }
    for (n, l) in out.iter_mut().zip(&labels) {
        if l.len() > 1 {
            n.about = format!("{} results", l.len());
        }
    }
    let refs = refs
        .into_iter()
        .map(|r| {
            let mut nums: Vec<usize> = Vec::new();
            for x in r.split(',').filter_map(|x| x.parse::<usize>().ok()) {
                let y = renumber.get(&x).copied().unwrap_or(x);
                if !nums.contains(&y) {
                    nums.push(y);
                }
            }
            nums.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect();
    (out, labels, refs)
}

/// A large target: a map per test (file size x record size, one per thread count, depth and
/// engine), which notes its rows carry, the notes once, and every row folded.
fn large(doc: &RunDoc, gi: usize, results: &[&TestResult], next: &mut usize, b: &mut Section) {
    let (notes, refs) = view::number_notes(results, *next);
    let (notes, merged, refs) = merge_notes(notes, refs, *next);
    *next += notes.len();
    let tests = by_test(results);
    let _ = write!(
        b,
        "<p class=\"sub\">{} results of {} tests, one group per test: the mean throughput in {} over file size \
         (rows) and record size (columns), darker is faster on one scale for the target; an outlined cell is a \
         result whose verdict contradicts what its test meant to measure. Hover over a cell for its figures and \
         verdict. The notes follow the groups, each once; every row is in the table folded below them.</p>",
        results.len(),
        tests.len(),
        units::rate_label()
    );
    let rates: Vec<f64> = results
        .iter()
        .filter(|r| !view::failed(r) && r.throughput.mean > 0.0)
        .map(|r| r.throughput.mean)
        .collect();
    let lo = rates.iter().cloned().fold(f64::INFINITY, f64::min);
    let hi = rates.iter().cloned().fold(0.0, f64::max);
    let shade = |v: f64| {
        if hi <= lo || !lo.is_finite() {
            0.5
        } else if lo > 0.0 && hi / lo > 30.0 {
            (v / lo).ln() / (hi / lo).ln()
        } else {
            (v - lo) / (hi - lo)
        }
    };
    // Each result's note numbers, found by its address (a scan per cell would make the
    // page quadratic in the results).
    let note_at: std::collections::HashMap<*const TestResult, &str> = results
        .iter()
        .zip(refs.iter())
        .map(|(r, n)| (*r as *const TestResult, n.as_str()))
        .collect();
    let note_of = |r: &TestResult| -> &str {
        note_at
            .get(&(r as *const TestResult))
            .copied()
            .unwrap_or("")
    };
    b.push_str("<div class=\"cards\">");
    for (ti, (test, rs)) in tests.iter().enumerate() {
        let mut body = String::new();
        // One map per thread count, depth and engine.
        let mut keys: Vec<(u32, u32, String)> = Vec::new();
        for r in rs {
            let k = (r.threads.max(1), r.iodepth.max(1), view::io_cell(r));
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
        for k in &keys {
            let cell_rs: Vec<&TestResult> = rs
                .iter()
                .copied()
                .filter(|r| (r.threads.max(1), r.iodepth.max(1), view::io_cell(r)) == *k)
                .collect();
            let mut files: Vec<u64> = cell_rs.iter().map(|r| r.file_size).collect();
            files.sort_unstable();
            files.dedup();
            let mut recs: Vec<u64> = cell_rs.iter().map(|r| r.record_size).collect();
            recs.sort_unstable();
            recs.dedup();
            if keys.len() > 1 {
                let _ = write!(
                    body,
                    "<p class=\"sub\">{} thread{}, QD {}, {}</p>",
                    k.0,
                    if k.0 == 1 { "" } else { "s" },
                    k.1,
                    esc(&k.2)
                );
            }
            if files.len() * recs.len() > super::surfaces::MAX_CELLS {
                let _ = write!(
                    body,
                    "<p>{} file sizes by {} record sizes: too many cells to draw as a map (at \
                     most {}); the rows below have every figure.</p>",
                    files.len(),
                    recs.len(),
                    super::surfaces::MAX_CELLS
                );
                continue;
            }
            let at: std::collections::HashMap<(u64, u64), &TestResult> = cell_rs
                .iter()
                .rev()
                .map(|r| ((r.file_size, r.record_size), *r))
                .collect();
            body.push_str("<table class=\"heat\"><tr><th>file \\ record</th>");
            for rec in &recs {
                let _ = write!(body, "<th>{}</th>", view::size_cell(*rec));
            }
            body.push_str("</tr>");
            for f in &files {
                let _ = write!(body, "<tr><th>{}</th>", view::size_cell(*f));
                for rec in &recs {
                    let Some(r) = at.get(&(*f, *rec)).copied() else {
                        body.push_str("<td class=\"none\"></td>");
                        continue;
                    };
                    let notes = note_of(r);
                    let tip = format!(
                        "{}: {} {}, {}{}",
                        view::label(r),
                        view::throughput_cell(r),
                        units::rate_label(),
                        view::verdict_cell(r),
                        if notes.is_empty() {
                            String::new()
                        } else {
                            format!(", note {notes}")
                        }
                    );
                    if view::failed(r) {
                        let _ = write!(
                            body,
                            "<td class=\"failed\" title=\"{}\"><a href=\"#{}\">failed</a></td>",
                            esc(&tip),
                            row_id(doc, r)
                        );
                        continue;
                    }
                    let (fill, dark) = svg::heat(shade(r.throughput.mean));
                    let bad = r.witness.as_ref().is_some_and(|w| w.contradicts_intent);
                    let class = match (dark, bad) {
                        (true, true) => " class=\"inv bad\"",
                        (true, false) => " class=\"inv\"",
                        (false, true) => " class=\"bad\"",
                        (false, false) => "",
                    };
                    let _ = write!(
                        body,
                        "<td{class} style=\"background:{fill}\" title=\"{}\"><a href=\"#{}\">{}</a></td>",
                        esc(&tip),
                        row_id(doc, r),
                        units::mb_s(r.throughput.mean)
                    );
                }
                body.push_str("</tr>");
            }
            body.push_str("</table>");
        }
        let mut carried: Vec<usize> = Vec::new();
        for r in rs {
            for x in note_of(r)
                .split(',')
                .filter_map(|x| x.parse::<usize>().ok())
            {
                if !carried.contains(&x) {
                    carried.push(x);
                }
            }
        }
        carried.sort_unstable();
        if !carried.is_empty() {
            let _ = write!(
                body,
                "<p class=\"sub\">Notes: {}</p>",
                carried
                    .iter()
                    .map(|n| format!("<a href=\"#note-{n}\">{n}</a>"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        let mut counts: Vec<(&str, &str, usize)> = Vec::new();
        for r in rs {
            let (name, class) = super::verdicts::kind(r);
            match counts.iter_mut().find(|(n, _, _)| *n == name) {
                Some(c) => c.2 += 1,
                None => counts.push((name, class, 1)),
            }
        }
        let mut extra = format!(
            " <small class=\"sub\">({} result{})</small>",
            rs.len(),
            if rs.len() == 1 { "" } else { "s" }
        );
        for (name, class, n) in counts {
            let _ = write!(extra, " <span class=\"badge b-{class}\">{name} {n}</span>");
        }
        b.group(&test_group_id(gi, ti), test, &extra, &body, true);
    }
    b.push_str("</div>");
    notes_list(&notes, &merged, b);
    let _ = write!(
        b,
        "<details class=\"rows\"><summary>Every row ({} results)</summary><div class=\"wide\">{}</div></details>",
        results.len(),
        rows(doc, results, &refs, false)
    );
}

/// The results table: one row per result with its figures, verdict and note numbers, and
/// (`explain`) what the kernel saw when that is not already one of its notes.
fn rows(doc: &RunDoc, results: &[&TestResult], refs: &[String], explain: bool) -> String {
    let mut b = String::new();
    let any_eff = results.iter().any(|r| r.efficiency.is_some());
    let any_flushless = results.iter().any(|r| table::flushless(r).is_some());
    let io = view::show_io(results);
    // A contradicted result's explanation is its note; the column holds the others'.
    let expl_of = |r: &TestResult| -> String {
        match &r.witness {
            Some(w) if explain && !w.contradicts_intent => w.explanation.clone(),
            _ => String::new(),
        }
    };
    let any_expl = results.iter().any(|r| !expl_of(r).is_empty());
    b.push_str("<table class=\"res\"><tr><th class=\"l\">test</th><th>file</th><th>record</th><th>threads</th><th>QD</th>");
    if io {
        b.push_str("<th class=\"l\">engine</th>");
    }
    let _ = write!(b, "<th>{} (95% CI)</th>", units::rate_label());
    if any_flushless {
        let _ = write!(b, "<th>no-flush {}</th>", units::rate_label());
    }
    let _ = write!(
        b,
        "<th>IOPS</th><th>p50 µs</th><th>p99 µs</th><th>device {}</th>",
        units::rate_label()
    );
    if any_eff {
        b.push_str("<th>efficiency</th>");
    }
    b.push_str("<th class=\"l\">verdict</th>");
    if any_expl {
        b.push_str("<th class=\"l\">what the kernel saw</th>");
    }
    b.push_str("<th>note</th></tr>");
    for (r, n) in results.iter().zip(refs) {
        let flag = r.witness.as_ref().is_some_and(|w| w.contradicts_intent) || view::failed(r);
        let _ = write!(
            b,
            "<tr id=\"{}\"{}><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>",
            row_id(doc, r),
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
            "<td>{}</td>",
            if view::failed(r) {
                "failed".to_string()
            } else {
                esc(&view::throughput_cell(r))
            }
        );
        if any_flushless {
            let _ = write!(
                b,
                "<td>{}</td>",
                table::flushless(r).map(units::mb_s).unwrap_or_default()
            );
        }
        let _ = write!(
            b,
            "<td>{}</td><td>{}</td><td>{}</td><td>{}</td>",
            if view::failed(r) {
                "-".into()
            } else {
                units::count(r.iops.mean)
            },
            units::us(r.latency_ns.p50 as f64),
            units::us(r.latency_ns.p99 as f64),
            view::device_cell(r),
        );
        if any_eff {
            let _ = write!(b, "<td>{}</td>", table::efficiency_cell(r));
        }
        let _ = write!(b, "<td class=\"l\">{}</td>", badge(r));
        if any_expl {
            let _ = write!(b, "<td class=\"expl\">{}</td>", esc(&expl_of(r)));
        }
        let _ = write!(b, "<td>{}</td></tr>", esc(n));
    }
    b.push_str("</table>");
    b
}

/// `candor audit`: what the audited program claimed against what the witness observed.
pub(super) fn audit(doc: &RunDoc, b: &mut Section) {
    let Some(claims) = crate::audit::claims(doc) else {
        return;
    };
    b.open("audit", "Claimed vs observed");
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
            mean: v / crate::units::scale(),
            lo: v / crate::units::scale(),
            hi: v / crate::units::scale(),
            samples: Vec::new(),
            flagged: false,
            colour: Some(colour),
            range: false,
        };
        rows.push(point(format!("{label}: claimed"), c.claimed_bps, 1));
        if let Some(o) = c.observed_wall_bps {
            rows.push(point(format!("{label}: observed"), o, 0));
        }
    }
    let chart = svg::interval_chart(
        "audit-0",
        "Claimed and observed throughput",
        crate::units::rate_label(),
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
