//! The steady-state chart: a figure per round, the judged window shaded, and on it each
//! figure's average, band and least-squares line.

use super::axes::{axes, range, AxisKind, Scale};
use super::{colour, esc, frame, legend, margins};
use std::fmt::Write;

/// One figure of a steady-state chart: its value in every round and, when a window was
/// judged on it, the window's average, band and least-squares line.
pub struct RoundsFigure {
    pub name: String,
    /// (round, value) for every round that has one.
    pub points: Vec<(f64, f64)>,
    /// The window's average, its band (average x (1 ± band)) and line (value at the window's
    /// first round, slope per round).
    pub window: Option<RoundsWindow>,
    pub colour: usize,
    /// Drawn wide and translucent, under the others (the application's figure, as the
    /// timelines draw it), so an equal figure on top of it stays visible.
    pub wide: bool,
}

pub struct RoundsWindow {
    pub first: f64,
    pub last: f64,
    pub average: f64,
    pub band: f64,
    pub intercept: f64,
    pub slope: f64,
}

/// The steady-state chart, as PTS's report pages draw it: each round's figures, the judged
/// window shaded, and on it each figure's average (dashed), its ± band and its least-squares
/// line (solid).
pub fn rounds_chart(
    id: &str,
    title: &str,
    y_label: &str,
    y_fmt: fn(f64) -> String,
    figures: &[RoundsFigure],
    width: f64,
) -> String {
    let height = 300.0;
    let names: Vec<(String, &str, bool, bool)> = figures
        .iter()
        .map(|f| (f.name.clone(), colour(f.colour), false, f.wide))
        .collect();
    let (ml, mr, mt, mb) = margins(width);
    let (leg, leg_h) = legend(&names, ml, height + 4.0, width - ml - mr);
    let rounds = figures
        .iter()
        .flat_map(|f| f.points.iter().map(|p| p.0))
        .fold(1.0f64, f64::max);
    // From 0, so that the ticks fall on whole rounds.
    let xs = Scale {
        lo: 0.0,
        hi: rounds + 1.0,
        kind: AxisKind::Linear,
        p0: ml,
        p1: width - mr,
    };
    let (_, y_hi) = range(
        figures.iter().flat_map(|f| {
            f.points.iter().map(|p| p.1).chain(
                f.window.iter().map(|w| w.average * (1.0 + w.band)).chain(
                    f.window
                        .iter()
                        .map(|w| w.intercept.max(w.intercept + w.slope * (w.last - w.first))),
                ),
            )
        }),
        AxisKind::Linear,
    );
    let ys = Scale {
        lo: 0.0,
        hi: y_hi,
        kind: AxisKind::Linear,
        p0: height - mb,
        p1: mt,
    };
    let round_fmt: fn(f64) -> String = |x| {
        if x.fract() == 0.0 && x >= 1.0 {
            format!("{x:.0}")
        } else {
            String::new()
        }
    };
    let mut body = String::new();
    // The window, shaded under everything else.
    if let Some(w) = figures.iter().find_map(|f| f.window.as_ref()) {
        let (x0, x1) = (xs.map(w.first - 0.5), xs.map(w.last + 0.5));
        let _ = write!(
            body,
            "<rect x=\"{x0:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"#eaeef2\"><title>measurement window: rounds {}-{}</title></rect>",
            ys.p1,
            x1 - x0,
            ys.p0 - ys.p1,
            w.first,
            w.last
        );
    }
    body.push_str(&axes(&xs, &ys, round_fmt, y_fmt, "round", y_label));
    for f in figures {
        let col = colour(f.colour);
        if let Some(w) = &f.window {
            let (x0, x1) = (xs.map(w.first - 0.5), xs.map(w.last + 0.5));
            let (b_hi, b_lo) = (
                ys.map((w.average * (1.0 + w.band)).min(ys.hi)),
                ys.map((w.average * (1.0 - w.band)).max(0.0)),
            );
            let avg = ys.map(w.average);
            let (l0, l1) = (
                ys.map(w.intercept.clamp(0.0, ys.hi)),
                ys.map((w.intercept + w.slope * (w.last - w.first)).clamp(0.0, ys.hi)),
            );
            let _ = write!(
                body,
                "<rect x=\"{x0:.1}\" y=\"{b_hi:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{col}\" fill-opacity=\"0.12\"><title>{}: average ± {:.0}%: {} to {}</title></rect>\
                 <line x1=\"{x0:.1}\" y1=\"{avg:.1}\" x2=\"{x1:.1}\" y2=\"{avg:.1}\" stroke=\"{col}\" stroke-width=\"1.4\" stroke-dasharray=\"6 4\"><title>{}: window average {}</title></line>\
                 <line x1=\"{:.1}\" y1=\"{l0:.1}\" x2=\"{:.1}\" y2=\"{l1:.1}\" stroke=\"{col}\" stroke-width=\"1.4\"><title>{}: least-squares line, {} per round</title></line>",
                x1 - x0,
                (b_lo - b_hi).max(0.0),
                esc(&f.name),
                100.0 * w.band,
                esc(&y_fmt(w.average * (1.0 - w.band))),
                esc(&y_fmt(w.average * (1.0 + w.band))),
                esc(&f.name),
                esc(&y_fmt(w.average)),
                xs.map(w.first),
                xs.map(w.last),
                esc(&f.name),
                esc(&y_fmt(w.slope))
            );
        }
        let pts: Vec<(f64, f64)> = f
            .points
            .iter()
            .filter(|p| p.1.is_finite())
            .map(|p| (xs.map(p.0), ys.map(p.1.max(0.0))))
            .collect();
        if pts.is_empty() {
            continue;
        }
        let d: Vec<String> = pts.iter().map(|(x, y)| format!("{x:.1},{y:.1}")).collect();
        let (stroke, r) = if f.wide {
            ("stroke-width=\"5\" stroke-opacity=\"0.45\"", 5.5)
        } else {
            ("stroke-width=\"2.2\"", 3.5)
        };
        let _ = write!(
            body,
            "<polyline points=\"{}\" fill=\"none\" stroke=\"{col}\" {stroke}><title>{}</title></polyline>",
            d.join(" "),
            esc(&f.name)
        );
        for ((x, y), p) in pts.iter().zip(&f.points) {
            let _ = write!(
                body,
                "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"{r}\" fill=\"{col}\"{}><title>{}\nround {:.0}: {}</title></circle>",
                if f.wide { " fill-opacity=\"0.45\"" } else { "" },
                esc(&f.name),
                p.0,
                esc(&y_fmt(p.1))
            );
        }
    }
    body.push_str(&leg);
    frame(id, title, width, height + leg_h, &body)
}
