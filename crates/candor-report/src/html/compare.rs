//! Side by side: several targets of one run, and the page of `candor compare` (sides, ratios
//! and significance, a chart per matched test, what could not be compared).

use super::page::{badge, fig, mbps, page};
use crate::compare::Comparison;
use crate::svg::{self, esc, IntervalRow};
use crate::units;
use candor_model::RunDoc;
use std::fmt::Write;

/// Several targets in one run: the same tests side by side, as `candor compare` shows them.
pub(super) fn targets_compared(doc: &RunDoc, s: &mut super::Section) {
    // The document itself, and its results copied only when there are sides to compare: a
    // large result is not held twice.
    if crate::view::groups(doc)
        .iter()
        .filter(|g| !g.results.is_empty())
        .count()
        < 2
    {
        return;
    }
    let sides = crate::compare::sides(&[(String::from("this run"), doc)]);
    if sides.len() < 2 {
        return;
    }
    let c = crate::compare::compare(sides);
    s.open("targets", "Targets compared");
    let mut b = String::new();
    b.push_str("<p class=\"sub\">The same tests on each target. Ratios are to target A; \
        significance by Welch's t-test on the repetitions (p &lt; 0.05), or non-overlapping 95% intervals.</p>");
    compare_body(&c, "h3", &mut b);
    s.push_str(&b);
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
pub(super) fn compare_body(c: &Comparison, h: &str, b: &mut String) {
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
        let _ = write!(
            b,
            "<th>{} {}</th>",
            esc(&s.letter),
            crate::units::rate_label()
        );
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
                        esc(&units::mb_s_ci(&r.throughput)),
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
    if let Some(s) = crate::compare::range_sentence(c) {
        let _ = write!(b, "<p class=\"sub\">{}</p>", esc(&s));
    }
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
                        mean: t.mean / crate::units::scale(),
                        lo: units::shown_interval(t).0 / crate::units::scale(),
                        hi: units::shown_interval(t).1 / crate::units::scale(),
                        range: units::interval_needs(t).is_some(),
                        samples: t
                            .samples
                            .iter()
                            .map(|x| x / crate::units::scale())
                            .collect(),
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
                &format!("throughput, {}", crate::units::rate_label()),
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
        esc(&crate::study::legend())
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
