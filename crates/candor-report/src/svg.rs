//! Hand-written SVG charts (no scripts, no fonts fetched): line charts with optional error bars,
//! a heatmap and a horizontal interval chart. Every chart has a title, axes with ticks and units,
//! and a legend when it has several series; colours come from the Okabe-Ito palette, which
//! colour-blind readers tell apart. Every drawn value carries its figures in an SVG `<title>`, which
//! a browser shows on hover. The charts are inline in HTML, so they name no namespace (an HTML
//! parser puts `<svg>` in SVG's own). Pure functions from numbers to markup.
//!
//! This module holds what every chart shares (palette, escaping, margins, the titled frame,
//! the legend); `axes` maps values to positions and draws axes and ticks; each kind of chart
//! is a module of its own: `line`, `heatmap`, `interval`, `rounds` (steady state).

mod axes;
mod heatmap;
mod interval;
mod line;
mod rounds;

pub use axes::{axis_range, drawable, linear_ticks, AxisKind, MAX_TICKS};
pub use heatmap::{heat, heatmap};
pub use interval::{interval_chart, IntervalRow, MAX_DOTS};
pub use line::{line_chart, line_chart_in, LineChart, Series};
pub use rounds::{rounds_chart, RoundsFigure, RoundsWindow};

use std::fmt::Write;

/// Okabe-Ito, without its yellow (too pale on white) and with black last.
pub const PALETTE: &[&str] = &[
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000", "#999999",
];

pub fn colour(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

/// Escapes text for SVG and HTML.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

// The furniture every chart shares: margins, the titled frame, the legend.

const ML: f64 = 72.0;
const MR: f64 = 30.0;
const MT: f64 = 34.0;
const MB: f64 = 48.0;

/// A line chart narrower than this is one of a grid of small charts: narrow margins, no axis
/// labels (the grid's heading names the axes), a smaller title.
pub const SMALL: f64 = 400.0;

/// The margins (left, right, top, bottom) of a chart of this width.
fn margins(width: f64) -> (f64, f64, f64, f64) {
    if width < SMALL {
        (44.0, 12.0, 28.0, 26.0)
    } else {
        (ML, MR, MT, MB)
    }
}

/// The legend under a chart, one entry per series (none for a single series), wrapped to
/// `width`; returns the markup and the height it takes.
fn legend(series: &[(String, &str, bool, bool)], x0: f64, y0: f64, width: f64) -> (String, f64) {
    if series.len() < 2 {
        return (String::new(), 0.0);
    }
    let mut s = String::new();
    let (mut x, mut y) = (x0, y0);
    for (name, col, dashed, wide) in series {
        let w = 34.0 + name.chars().count() as f64 * 6.6;
        if x + w > x0 + width && x > x0 {
            x = x0;
            y += 18.0;
        }
        let dash = if *dashed {
            " stroke-dasharray=\"5 3\""
        } else {
            ""
        };
        let stroke = if *wide {
            "stroke-width=\"5\" stroke-opacity=\"0.45\""
        } else {
            "stroke-width=\"2.5\""
        };
        let _ = write!(
            s,
            "<line x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"{col}\" {stroke}{dash}/>\
             <text x=\"{:.1}\" y=\"{:.1}\" class=\"lg\">{}</text>",
            x,
            y - 4.0,
            x + 22.0,
            y - 4.0,
            x + 27.0,
            y,
            esc(name)
        );
        x += w;
    }
    (s, y - y0 + 22.0)
}

/// The `<svg>` element of a chart: its id, its title (drawn and as its accessible name) and
/// its body.
fn frame(id: &str, title: &str, w: f64, h: f64, body: &str) -> String {
    let (ml, class, y) = if w < SMALL {
        (margins(w).0, "ttl s", 16)
    } else {
        (ML, "ttl", 20)
    };
    format!(
        "<svg id=\"{}\" class=\"chart\" viewBox=\"0 0 {w:.0} {h:.0}\" width=\"{w:.0}\" height=\"{h:.0}\" role=\"img\" aria-label=\"{}\">\
         <text x=\"{ml:.0}\" y=\"{y}\" class=\"{class}\">{}</text>{body}</svg>",
        esc(id),
        esc(title),
        esc(title)
    )
}
