//! The summary table per target with verdict badges and explanations, and for `candor audit`
//! what the audited program claimed against what the witness observed.

use super::page::{badge, fig, mbps};
use crate::svg::{self, esc, IntervalRow};
use crate::units;
use crate::view;
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

pub(super) fn summary(doc: &RunDoc, b: &mut String) {
    if doc.results.is_empty() {
        if doc.audit.is_none() {
            b.push_str("<h2 id=\"summary\">Summary</h2><p>No results were recorded.</p>");
        }
        return;
    }
    b.push_str("<h2 id=\"summary\">Summary</h2>");
    let mut next = 1;
    for (gi, g) in view::groups(doc).into_iter().enumerate() {
        let _ = write!(
            b,
            "<h3 id=\"target-{gi}\">Target <code>{}</code>",
            esc(&g.path)
        );
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
            "<div class=\"wide\">"
        });
        b.push_str("<table class=\"res\"><tr><th class=\"l\">test</th><th>file</th><th>record</th><th>threads</th><th>QD</th>");
        if io {
            b.push_str("<th class=\"l\">engine</th>");
        }
        let _ = write!(
            b,
            "<th>{rate} (95% CI)</th><th>IOPS</th><th>p50 µs</th><th>p99 µs</th><th>device {rate}</th>",
            rate = crate::units::rate_label()
        );
        if any_eff {
            b.push_str("<th>efficiency</th>");
        }
        b.push_str("<th class=\"l\">verdict</th><th class=\"l\">what the kernel saw</th><th>note</th></tr>");
        for (r, n) in g.results.iter().zip(refs) {
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
                view::device_cell(r),
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
pub(super) fn audit(doc: &RunDoc, b: &mut String) {
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
