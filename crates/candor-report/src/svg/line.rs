//! The line chart: series of points over two axes, with error bars, markers and a hover
//! target on the measured points.

use super::axes::{axes, drawable, range, AxisKind, Scale};
use super::{colour, esc, frame, legend, margins, SMALL};
use std::fmt::Write;

/// One line of a chart.
#[derive(Clone, Debug, Default)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    /// Per point (low, high) of an error bar; empty for none.
    pub err: Vec<(f64, f64)>,
    /// Per point: its error bar is the slowest and fastest repetition, not a 95% interval
    /// (`units::shown_interval`); empty for none.
    pub err_ranges: Vec<bool>,
    pub dashed: bool,
    /// Palette index; None = the series' position.
    pub colour: Option<usize>,
    /// Drawn wide and translucent, under the others, so a line on top of it stays visible.
    pub wide: bool,
}

/// A line chart.
pub struct LineChart {
    pub id: String,
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub x_kind: AxisKind,
    pub y_kind: AxisKind,
    pub x_fmt: fn(f64) -> String,
    pub y_fmt: fn(f64) -> String,
    pub series: Vec<Series>,
    pub width: f64,
    pub height: f64,
    /// Draw markers at each point (sparse data) or not (time series).
    pub markers: bool,
}

/// At most this many points of a series get a hover target, spread over the series: every
/// marked point up to `MAX_HOVER`, and `MAX_HOVER_LINE` of a curve drawn without markers (a
/// latency curve of 41 points gets one every half decade, a timeline one every few samples),
/// so the figures stay at hand without the page growing by a target per pixel.
const MAX_HOVER: usize = 120;
const MAX_HOVER_LINE: usize = 10;

pub fn line_chart(c: &LineChart) -> String {
    line_chart_in(c, None)
}

/// What hovering over a point shows: the series, then each axis with its figure.
fn hover_text(c: &LineChart, s: &Series, j: usize, p: (f64, f64)) -> String {
    let mut t = String::new();
    if !s.name.is_empty() {
        t.push_str(&s.name);
        t.push('\n');
    }
    let _ = write!(
        t,
        "{}: {}\n{}: {}",
        c.x_label,
        (c.x_fmt)(p.0),
        c.y_label,
        (c.y_fmt)(p.1)
    );
    if let Some((lo, hi)) = s.err.get(j).filter(|(lo, hi)| hi > lo) {
        let what = if s.err_ranges.get(j) == Some(&true) {
            "slowest and fastest repetition"
        } else {
            "95% CI"
        };
        let _ = write!(t, " ({what} {} to {})", (c.y_fmt)(*lo), (c.y_fmt)(*hi));
    }
    t
}

/// A line chart whose y axis spans `y` when given (a grid of small charts on one scale), else
/// the series' own range.
pub fn line_chart_in(c: &LineChart, y: Option<(f64, f64)>) -> String {
    let names: Vec<(String, &str, bool, bool)> = c
        .series
        .iter()
        .enumerate()
        .map(|(i, s)| {
            (
                s.name.clone(),
                colour(s.colour.unwrap_or(i)),
                s.dashed,
                s.wide,
            )
        })
        .collect();
    let small = c.width < SMALL;
    let (ml, mr, mt, mb) = margins(c.width);
    let plot_w = c.width - ml - mr;
    let (leg, leg_h) = if small {
        (String::new(), 0.0)
    } else {
        legend(&names, ml, c.height + 4.0, plot_w)
    };
    let total_h = c.height + leg_h;
    let (x_lo, x_hi) = range(
        c.series.iter().flat_map(|s| s.points.iter().map(|p| p.0)),
        c.x_kind,
    );
    let (x_lo, x_hi) = if c.x_kind == AxisKind::Linear {
        let xs: Vec<f64> = c
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.0))
            .collect();
        let lo = xs.iter().cloned().fold(f64::INFINITY, f64::min);
        let hi = xs.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        if lo.is_finite() && hi > lo {
            (lo.min(0.0), hi)
        } else {
            (x_lo, x_hi)
        }
    } else if c.markers {
        // Sparse points on a log axis: a margin on both sides, so the first and last markers
        // and their error bars stand clear of the axes.
        let base: f64 = if c.x_kind == AxisKind::Log2 {
            2.0
        } else {
            10.0
        };
        let (a, b) = (x_lo.log(base), x_hi.log(base));
        let pad = 0.05 * (b - a);
        (base.powf(a - pad), base.powf(b + pad))
    } else {
        (x_lo, x_hi)
    };
    let (y_lo, y_hi) = y.unwrap_or_else(|| {
        range(
            c.series.iter().flat_map(|s| {
                s.points
                    .iter()
                    .map(|p| p.1)
                    .chain(s.err.iter().flat_map(|e| [e.0.max(0.0), e.1]))
            }),
            c.y_kind,
        )
    });
    let xs = Scale {
        lo: x_lo,
        hi: x_hi,
        kind: c.x_kind,
        p0: ml,
        p1: c.width - mr,
    };
    let ys = Scale {
        lo: y_lo,
        hi: y_hi,
        kind: c.y_kind,
        p0: c.height - mb,
        p1: mt,
    };
    let (xl, yl) = if small {
        ("", "")
    } else {
        (c.x_label.as_str(), c.y_label.as_str())
    };
    let mut body = axes(&xs, &ys, c.x_fmt, c.y_fmt, xl, yl);
    let mut hover = String::new();
    for (i, s) in c.series.iter().enumerate() {
        let col = colour(s.colour.unwrap_or(i));
        let pts: Vec<(f64, f64)> = s
            .points
            .iter()
            .filter(|p| {
                p.0.is_finite()
                    && p.1.is_finite()
                    && (c.x_kind == AxisKind::Linear || p.0 > 0.0)
                    && (c.y_kind == AxisKind::Linear || p.1 > 0.0)
            })
            .map(|p| (xs.map(p.0), ys.map(p.1)))
            .collect();
        if pts.is_empty() {
            continue;
        }
        let d: Vec<String> = pts.iter().map(|(x, y)| format!("{x:.1},{y:.1}")).collect();
        let dash = if s.dashed {
            " stroke-dasharray=\"6 4\""
        } else {
            ""
        };
        let stroke = if s.wide {
            "stroke-width=\"5\" stroke-opacity=\"0.45\""
        } else {
            "stroke-width=\"2.2\""
        };
        let _ = write!(
            body,
            "<polyline points=\"{}\" fill=\"none\" stroke=\"{col}\" {stroke}{dash}><title>{}</title></polyline>",
            d.join(" "),
            esc(&s.name)
        );
        for (j, p) in s.points.iter().enumerate() {
            if let Some((lo, hi)) = s.err.get(j) {
                if *hi > *lo && (c.y_kind == AxisKind::Linear || *lo > 0.0) {
                    let x = xs.map(p.0);
                    let (y0, y1) = (ys.map(lo.max(ys.lo)), ys.map(hi.min(ys.hi)));
                    let _ = write!(
                        body,
                        "<path d=\"M{x:.1},{y0:.1}V{y1:.1}M{:.1},{y0:.1}h8M{:.1},{y1:.1}h8\" stroke=\"{col}\" stroke-width=\"1.4\" fill=\"none\"/>",
                        x - 4.0,
                        x - 4.0
                    );
                }
            }
        }
        // A dashed line is a reference (perfect scaling), not measured points: no markers.
        if c.markers && !s.dashed {
            for (x, y) in &pts {
                let _ = write!(
                    body,
                    "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"3.2\" fill=\"{col}\"/>"
                );
            }
        }
        // Hover targets over the measured points (a reference line has none), drawn last so
        // no line covers them; a long series gets one every few points.
        if !s.dashed {
            let shown: Vec<usize> = (0..s.points.len())
                .filter(|j| {
                    let p = s.points[*j];
                    p.0.is_finite()
                        && p.1.is_finite()
                        && (c.x_kind == AxisKind::Linear || p.0 > 0.0)
                        && (c.y_kind == AxisKind::Linear || p.1 > 0.0)
                })
                .collect();
            let cap = if c.markers { MAX_HOVER } else { MAX_HOVER_LINE };
            let step = shown.len().div_ceil(cap).max(1);
            for j in shown.into_iter().step_by(step) {
                let p = s.points[j];
                let _ = write!(
                    hover,
                    "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"{}\" class=\"hv\"><title>{}</title></circle>",
                    xs.map(p.0),
                    ys.map({
                        let (lo, hi) = drawable(ys.lo, ys.hi, ys.kind);
                        p.1.clamp(lo, hi)
                    }),
                    if small { 5 } else { 6 },
                    esc(&hover_text(c, s, j, p))
                );
            }
        }
    }
    body.push_str(&hover);
    body.push_str(&leg);
    frame(&c.id, &c.title, c.width, total_h, &body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_chart_has_axes_series_and_legend() {
        let c = LineChart {
            id: "t".into(),
            title: "Throughput <by> size".into(),
            x_label: "record size".into(),
            y_label: "MB/s".into(),
            x_kind: AxisKind::Log2,
            y_kind: AxisKind::Linear,
            x_fmt: |x| format!("{x}"),
            y_fmt: |y| format!("{y}"),
            series: vec![
                Series {
                    name: "a".into(),
                    points: vec![(4.0, 10.0), (8.0, 20.0)],
                    ..Default::default()
                },
                Series {
                    name: "b".into(),
                    points: vec![(4.0, 5.0), (16.0, 7.0)],
                    ..Default::default()
                },
            ],
            width: 600.0,
            height: 300.0,
            markers: true,
        };
        let s = line_chart(&c);
        assert!(s.starts_with("<svg id=\"t\""));
        assert_eq!(s.matches("<polyline").count(), 2);
        assert!(s.contains("Throughput &lt;by&gt; size"));
        assert!(s.contains(">MB/s</text>"));
        assert!(s.contains("class=\"lg\">b</text>"));
    }
}
