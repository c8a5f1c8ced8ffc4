//! The interval chart: one horizontal bar a row (the mean), its 95% interval (or slowest and
//! fastest repetition) as whiskers, and every repetition as a dot.

use super::axes::{nice_max, AxisKind, Scale};
use super::{colour, esc, frame, MR};
use std::fmt::Write;

/// One row of an interval chart.
pub struct IntervalRow {
    pub label: String,
    pub mean: f64,
    pub lo: f64,
    pub hi: f64,
    pub samples: Vec<f64>,
    pub flagged: bool,
    /// Palette index of the bar; None = blue, or vermillion when flagged.
    pub colour: Option<usize>,
    /// `lo` and `hi` are the slowest and fastest repetition, shown instead of a 95%
    /// interval wider than the mean (`units::shown_interval`).
    pub range: bool,
}

/// The most repetitions an interval chart draws as dots in one row.
pub const MAX_DOTS: usize = 200;

/// Horizontal bars (mean) with 95% interval whiskers and the individual repetitions as dots.
pub fn interval_chart(
    id: &str,
    title: &str,
    x_label: &str,
    rows: &[IntervalRow],
    fmt: fn(f64) -> String,
    w: f64,
) -> String {
    let label_chars = rows
        .iter()
        .map(|r| r.label.chars().count())
        .max()
        .unwrap_or(10);
    let left = (label_chars as f64 * 6.4 + 16.0).clamp(80.0, 260.0);
    let rh = 22.0;
    let top = 34.0;
    let h = top + rh * rows.len() as f64 + 48.0;
    let max = rows
        .iter()
        .flat_map(|r| r.samples.iter().cloned().chain([r.hi, r.mean]))
        .fold(0.0, f64::max);
    let xs = Scale {
        lo: 0.0,
        hi: nice_max(max),
        kind: AxisKind::Linear,
        p0: left,
        p1: w - MR,
    };
    let bottom = top + rh * rows.len() as f64;
    let mut b = String::new();
    for t in xs.ticks() {
        let x = xs.map(t);
        let _ = write!(
            b,
            "<line x1=\"{x:.1}\" y1=\"{top:.1}\" x2=\"{x:.1}\" y2=\"{bottom:.1}\" class=\"grid\"/>\
             <text x=\"{x:.1}\" y=\"{:.1}\" class=\"tk\" text-anchor=\"middle\">{}</text>",
            bottom + 16.0,
            esc(&fmt(t))
        );
    }
    for (i, r) in rows.iter().enumerate() {
        let y = top + rh * i as f64;
        let col = match r.colour {
            Some(c) => colour(c),
            None if r.flagged => colour(3),
            None => colour(0),
        };
        let _ = write!(
            b,
            "<text x=\"{:.1}\" y=\"{:.1}\" class=\"tk\" text-anchor=\"end\">{}</text>\
             <rect x=\"{left:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{col}\" opacity=\"0.35\"><title>{}: {} ({} {} to {})</title></rect>",
            left - 8.0,
            y + rh / 2.0 + 4.0,
            esc(&r.label),
            y + 4.0,
            (xs.map(r.mean) - left).max(0.0),
            rh - 8.0,
            esc(&r.label),
            esc(&fmt(r.mean)),
            if r.range {
                "slowest and fastest repetition"
            } else {
                "95% CI"
            },
            esc(&fmt(r.lo)),
            esc(&fmt(r.hi))
        );
        // An interval reaching below zero (two noisy repetitions) stops at the axis.
        let (x0, x1, ym) = (xs.map(r.lo.max(0.0)), xs.map(r.hi), y + rh / 2.0);
        let _ = write!(
            b,
            "<path d=\"M{x0:.1},{ym:.1}H{x1:.1}M{x0:.1},{:.1}v8M{x1:.1},{:.1}v8M{:.1},{:.1}v{:.1}\" stroke=\"{col}\" stroke-width=\"1.6\" fill=\"none\"/>",
            ym - 4.0,
            ym - 4.0,
            xs.map(r.mean),
            y + 3.0,
            rh - 6.0
        );
        // One dot per repetition, at most MAX_DOTS of them spread over the row.
        let every = r.samples.len().div_ceil(MAX_DOTS).max(1);
        for (k, s) in r.samples.iter().enumerate().step_by(every) {
            let _ = write!(
                b,
                "<circle cx=\"{:.1}\" cy=\"{ym:.1}\" r=\"2.6\" fill=\"#000\" opacity=\"0.7\"><title>{}: repetition {}: {}</title></circle>",
                xs.map(*s),
                esc(&r.label),
                k + 1,
                esc(&fmt(*s))
            );
        }
    }
    let _ = write!(
        b,
        "<line x1=\"{left:.1}\" y1=\"{bottom:.1}\" x2=\"{:.1}\" y2=\"{bottom:.1}\" class=\"axis\"/>\
         <text x=\"{:.1}\" y=\"{:.1}\" class=\"al\" text-anchor=\"middle\">{}</text>",
        w - MR,
        (left + w) / 2.0,
        bottom + 36.0,
        esc(x_label)
    );
    frame(id, title, w, h, &b)
}
