//! Hand-written SVG charts (no scripts, no fonts fetched): line charts with optional error bars,
//! a heatmap and a horizontal interval chart. Every chart has a title, axes with ticks and units,
//! and a legend when it has several series; colours come from the Okabe-Ito palette, which
//! colour-blind readers tell apart. Every drawn value carries its figures in an SVG `<title>`, which
//! a browser shows on hover. The charts are inline in HTML, so they name no namespace (an HTML
//! parser puts `<svg>` in SVG's own). Pure functions from numbers to markup.

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

/// How an axis maps values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AxisKind {
    Linear,
    /// Ticks at powers of two (sizes, thread counts).
    Log2,
    /// Ticks at powers of ten (latency).
    Log10,
}

#[derive(Clone, Copy, Debug)]
struct Scale {
    lo: f64,
    hi: f64,
    kind: AxisKind,
    p0: f64,
    p1: f64,
}

impl Scale {
    fn t(&self, v: f64) -> f64 {
        match self.kind {
            AxisKind::Linear => v,
            AxisKind::Log2 => v.max(f64::MIN_POSITIVE).log2(),
            AxisKind::Log10 => v.max(f64::MIN_POSITIVE).log10(),
        }
    }

    fn map(&self, v: f64) -> f64 {
        // Halves, so that the span of the widest finite range does not overflow.
        let (lo, hi) = drawable(self.lo, self.hi, self.kind);
        let (a, b) = (self.t(lo) / 2.0, self.t(hi) / 2.0);
        let mid = (self.p0 + self.p1) / 2.0;
        if !(b - a).is_finite() || (b - a).abs() < 1e-300 {
            return mid;
        }
        let at = self.p0 + (self.t(v) / 2.0 - a) / (b - a) * (self.p1 - self.p0);
        if at.is_finite() {
            at
        } else {
            mid
        }
    }

    fn ticks(&self) -> Vec<f64> {
        match self.kind {
            AxisKind::Linear => linear_ticks(self.lo, self.hi, 5),
            AxisKind::Log2 | AxisKind::Log10 => log_ticks(self.lo, self.hi, self.kind),
        }
    }
}

/// An axis never gets more ticks than this, whatever its range.
pub const MAX_TICKS: usize = 12;

/// The range an axis is drawn over: finite, `lo <= hi`, and above zero on a log axis,
/// whatever the values (NaN, infinities, reversed ends) it was computed from.
pub fn drawable(lo: f64, hi: f64, kind: AxisKind) -> (f64, f64) {
    let clean = |x: f64, nan: f64| {
        if x.is_nan() {
            nan
        } else {
            x.clamp(f64::MIN, f64::MAX)
        }
    };
    let (mut lo, mut hi) = (clean(lo, 0.0), clean(hi, 1.0));
    if kind != AxisKind::Linear {
        lo = lo.max(f64::MIN_POSITIVE);
        hi = hi.max(f64::MIN_POSITIVE);
    }
    if hi < lo {
        std::mem::swap(&mut lo, &mut hi);
    }
    (lo, hi)
}

/// Ticks at whole powers of the axis's base within [lo, hi], at most `MAX_TICKS` of them
/// (every other power, or every fourth, when the range is wide).
fn log_ticks(lo: f64, hi: f64, kind: AxisKind) -> Vec<f64> {
    let (lo, hi) = drawable(lo, hi, kind);
    let (base, t): (f64, fn(f64) -> f64) = if kind == AxisKind::Log2 {
        (2.0, f64::log2)
    } else {
        (10.0, f64::log10)
    };
    // Exponents of finite positive numbers lie within these, so the loop is short.
    let a = t(lo).floor().clamp(-1100.0, 1100.0) as i32;
    let b = t(hi).ceil().clamp(-1100.0, 1100.0) as i32;
    let mut v: Vec<f64> = (a..=b)
        .map(|e| base.powi(e))
        .filter(|x| x.is_finite() && *x >= lo * 0.999 && *x <= hi * 1.001)
        .collect();
    // Too many labels to read: keep every other (or every fourth) one.
    while v.len() > 9 {
        v = v.into_iter().step_by(2).collect();
    }
    if v.is_empty() {
        v.push(lo);
    }
    v
}

/// 1-2-5 ticks covering [lo, hi]: at most `MAX_TICKS`, all finite and within the range
/// (one tick, `lo`, for an empty or unusable range).
pub fn linear_ticks(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    let (lo, hi) = drawable(lo, hi, AxisKind::Linear);
    if hi <= lo {
        return vec![lo];
    }
    let n = n.clamp(1, MAX_TICKS - 1) as f64;
    // hi / n - lo / n: no overflow even from f64::MIN to f64::MAX.
    let raw = hi / n - lo / n;
    let mag = 10f64.powf(raw.log10().floor());
    if !(mag.is_finite() && mag > 0.0) {
        return vec![lo];
    }
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let first = (lo / step).ceil() * step;
    let mut v: Vec<f64> = Vec::new();
    for k in 0..MAX_TICKS {
        let x = first + k as f64 * step;
        if !x.is_finite() || x > hi + step * 1e-9 {
            break;
        }
        // Rounding near zero gives zero; rounding at the ends stays within them.
        let x = if x.abs() < step * 1e-9 && lo <= 0.0 && hi >= 0.0 {
            0.0
        } else {
            x.clamp(lo, hi)
        };
        // A step below the numbers' resolution gives the same tick again: once is enough.
        if v.last() != Some(&x) {
            v.push(x);
        }
    }
    if v.is_empty() {
        v.push(lo);
    }
    v
}

/// The top of a linear axis: the first tick at or above the largest value.
fn nice_max(max: f64) -> f64 {
    if max.is_nan() || max <= 0.0 {
        return 1.0;
    }
    let max = max.min(f64::MAX);
    let t = linear_ticks(0.0, max, 5);
    let step = if t.len() > 1 { t[1] - t[0] } else { max };
    let top = (max / step).ceil() * step;
    if top.is_finite() && top >= max {
        top
    } else {
        max
    }
}

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

/// At most this many points of a series get a hover target, spread over the series: every
/// marked point up to `MAX_HOVER`, and `MAX_HOVER_LINE` of a curve drawn without markers (a
/// latency curve of 41 points gets one every half decade, a timeline one every few samples),
/// so the figures stay at hand without the page growing by a target per pixel.
const MAX_HOVER: usize = 120;
const MAX_HOVER_LINE: usize = 10;

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

/// Draws axes, grid and tick labels; returns the markup.
fn axes(
    xs: &Scale,
    ys: &Scale,
    x_fmt: fn(f64) -> String,
    y_fmt: fn(f64) -> String,
    xl: &str,
    yl: &str,
) -> String {
    let mut s = String::new();
    let (top, bottom) = (ys.p1, ys.p0);
    let (left, right) = (xs.p0, xs.p1);
    for t in ys.ticks() {
        let y = ys.map(t);
        let _ = write!(
            s,
            "<line x1=\"{left:.1}\" y1=\"{y:.1}\" x2=\"{right:.1}\" y2=\"{y:.1}\" class=\"grid\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" class=\"tk\" text-anchor=\"end\">{}</text>",
            left - 6.0,
            y + 4.0,
            esc(&y_fmt(t))
        );
    }
    for t in xs.ticks() {
        let x = xs.map(t);
        let _ = write!(
            s,
            "<line x1=\"{x:.1}\" y1=\"{bottom:.1}\" x2=\"{x:.1}\" y2=\"{:.1}\" class=\"axis\"/>\
             <text x=\"{x:.1}\" y=\"{:.1}\" class=\"tk\" text-anchor=\"middle\">{}</text>",
            bottom + 5.0,
            bottom + 18.0,
            esc(&x_fmt(t))
        );
    }
    let _ = write!(
        s,
        "<line x1=\"{left:.1}\" y1=\"{bottom:.1}\" x2=\"{right:.1}\" y2=\"{bottom:.1}\" class=\"axis\"/>\
         <line x1=\"{left:.1}\" y1=\"{top:.1}\" x2=\"{left:.1}\" y2=\"{bottom:.1}\" class=\"axis\"/>"
    );
    if !xl.is_empty() || !yl.is_empty() {
        let _ = write!(
            s,
            "<text x=\"{:.1}\" y=\"{:.1}\" class=\"al\" text-anchor=\"middle\">{}</text>\
             <text transform=\"translate(16 {:.1}) rotate(-90)\" class=\"al\" text-anchor=\"middle\">{}</text>",
            (left + right) / 2.0,
            bottom + 36.0,
            esc(xl),
            (top + bottom) / 2.0,
            esc(yl)
        );
    }
    s
}

/// The range an axis of this kind gives these values: from zero to a round top on a linear
/// axis, whole powers on a log one.
pub fn axis_range(vals: impl Iterator<Item = f64>, kind: AxisKind) -> (f64, f64) {
    range(vals, kind)
}

fn range(vals: impl Iterator<Item = f64>, kind: AxisKind) -> (f64, f64) {
    let v: Vec<f64> = vals
        .filter(|x| x.is_finite() && (kind == AxisKind::Linear || *x > 0.0))
        .collect();
    let lo = v.iter().cloned().fold(f64::INFINITY, f64::min);
    let hi = v.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    match kind {
        AxisKind::Linear => (0.0f64.min(lo), nice_max(hi)),
        AxisKind::Log2 => {
            let (a, b) = (lo.log2().floor(), hi.log2().ceil());
            (2f64.powf(a), 2f64.powf(b.max(a + 1.0)))
        }
        AxisKind::Log10 => {
            let (a, b) = (lo.log10().floor(), hi.log10().ceil());
            (10f64.powf(a), 10f64.powf(b.max(a + 1.0)))
        }
    }
}

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

/// Sequential colour scale (viridis stops): light for low, dark for high, readable in grey.
pub fn heat(t: f64) -> (String, bool) {
    const STOPS: [(f64, f64, f64); 5] = [
        (253.0, 231.0, 37.0),
        (94.0, 201.0, 98.0),
        (33.0, 145.0, 140.0),
        (59.0, 82.0, 139.0),
        (68.0, 1.0, 84.0),
    ];
    let t = t.clamp(0.0, 1.0) * 4.0;
    let i = (t.floor() as usize).min(3);
    let f = t - i as f64;
    let (a, b) = (STOPS[i], STOPS[i + 1]);
    let mix = |x: f64, y: f64| (x + (y - x) * f).round() as u8;
    (
        format!(
            "#{:02x}{:02x}{:02x}",
            mix(a.0, b.0),
            mix(a.1, b.1),
            mix(a.2, b.2)
        ),
        t > 2.0,
    )
}

/// A heatmap: rows x columns of optional values, each cell labelled with its value.
#[allow(clippy::too_many_arguments)]
pub fn heatmap(
    id: &str,
    title: &str,
    row_label: &str,
    col_label: &str,
    rows: &[String],
    cols: &[String],
    values: &[Vec<Option<f64>>],
    fmt: fn(f64) -> String,
    unit: &str,
) -> String {
    let cw = (540.0 / cols.len().max(1) as f64).clamp(40.0, 96.0);
    let ch = 26.0;
    let left = 64.0;
    let top = 40.0;
    let w = left + cw * cols.len() as f64 + 20.0;
    let h = top + ch * rows.len() as f64 + 66.0;
    let all: Vec<f64> = values.iter().flatten().flatten().cloned().collect();
    let lo = all.iter().cloned().fold(f64::INFINITY, f64::min);
    let hi = all.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    // Figures over more than a decade and a half (cached and device-bound cells in one map,
    // or one outlier) would leave every other cell the same colour on a linear scale: the
    // colour follows the logarithm then (each cell still carries its figure).
    let log = lo > 0.0 && hi / lo > 30.0;
    let shade = |v: f64| {
        if hi <= lo || !hi.is_finite() {
            0.5
        } else if log {
            (v / lo).ln() / (hi / lo).ln()
        } else {
            (v - lo) / (hi - lo)
        }
    };
    let mut b = String::new();
    for (i, r) in rows.iter().enumerate() {
        let y = top + ch * i as f64;
        let _ = write!(
            b,
            "<text x=\"{:.1}\" y=\"{:.1}\" class=\"tk\" text-anchor=\"end\">{}</text>",
            left - 6.0,
            y + ch / 2.0 + 4.0,
            esc(r)
        );
        for (j, _) in cols.iter().enumerate() {
            let x = left + cw * j as f64;
            match values.get(i).and_then(|v| v.get(j)).copied().flatten() {
                Some(v) => {
                    let (fill, dark) = heat(shade(v));
                    let _ = write!(
                        b,
                        "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{fill}\"><title>{} {}</title></rect>\
                         <text x=\"{:.1}\" y=\"{:.1}\" class=\"cell{}\" text-anchor=\"middle\">{}</text>",
                        cw - 1.0,
                        ch - 1.0,
                        esc(&fmt(v)),
                        esc(unit),
                        x + cw / 2.0,
                        y + ch / 2.0 + 4.0,
                        if dark { " inv" } else { "" },
                        esc(&fmt(v))
                    );
                }
                None => {
                    let _ = write!(
                        b,
                        "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{:.1}\" class=\"empty\"/>",
                        cw - 1.0,
                        ch - 1.0
                    );
                }
            }
        }
    }
    let by = top + ch * rows.len() as f64;
    for (j, c) in cols.iter().enumerate() {
        let _ = write!(
            b,
            "<text x=\"{:.1}\" y=\"{:.1}\" class=\"tk\" text-anchor=\"middle\">{}</text>",
            left + cw * j as f64 + cw / 2.0,
            by + 16.0,
            esc(c)
        );
    }
    let _ = write!(
        b,
        "<text x=\"{:.1}\" y=\"{:.1}\" class=\"al\" text-anchor=\"middle\">{}</text>\
         <text transform=\"translate(16 {:.1}) rotate(-90)\" class=\"al\" text-anchor=\"middle\">{}</text>",
        left + cw * cols.len() as f64 / 2.0,
        by + 34.0,
        esc(col_label),
        top + ch * rows.len() as f64 / 2.0,
        esc(row_label)
    );
    // Colour key.
    let kx = left;
    let ky = by + 46.0;
    for k in 0..20 {
        let (fill, _) = heat(k as f64 / 19.0);
        let _ = write!(
            b,
            "<rect x=\"{:.1}\" y=\"{ky:.1}\" width=\"8\" height=\"10\" fill=\"{fill}\"/>",
            kx + 8.0 * k as f64
        );
    }
    if lo.is_finite() {
        let _ = write!(
            b,
            "<text x=\"{:.1}\" y=\"{:.1}\" class=\"lg\">{} to {} {}{}</text>",
            kx + 168.0,
            ky + 9.0,
            esc(&fmt(lo)),
            esc(&fmt(hi)),
            esc(unit),
            if log { " (log scale)" } else { "" }
        );
    }
    frame(id, title, w.max(420.0), h, &b)
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes_with_a_huge_or_unusable_end_have_few_finite_ticks() {
        // A log axis reaching 1e308 rounded its top up to infinity and walked every exponent
        // to i32::MAX (gigabytes of ticks); the linear ticks stepped from infinite ends.
        for kind in [AxisKind::Log2, AxisKind::Log10, AxisKind::Linear] {
            for (lo, hi) in [
                (1.0, 1e308),
                (1.0, f64::INFINITY),
                (f64::NAN, f64::NAN),
                (-f64::MAX, f64::MAX),
                (5e-324, 1e-320),
                (3.0, 3.0),
                (10.0, 1.0),
            ] {
                let s = Scale {
                    lo,
                    hi,
                    kind,
                    p0: 0.0,
                    p1: 100.0,
                };
                let t = s.ticks();
                assert!(
                    !t.is_empty() && t.len() <= MAX_TICKS,
                    "{kind:?} {lo}..{hi}: {t:?}"
                );
                for x in t {
                    assert!(x.is_finite(), "{kind:?} {lo}..{hi}");
                    assert!(s.map(x).is_finite() && (0.0..=100.0).contains(&s.map(x)));
                }
            }
        }
    }

    #[test]
    fn linear_ticks_are_round() {
        assert_eq!(
            linear_ticks(0.0, 100.0, 5),
            vec![0.0, 20.0, 40.0, 60.0, 80.0, 100.0]
        );
        assert_eq!(
            linear_ticks(0.0, 1.0, 5),
            vec![0.0, 0.2, 0.4, 0.6000000000000001, 0.8, 1.0]
        );
    }

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

    #[test]
    fn heat_runs_light_to_dark() {
        assert_eq!(heat(0.0), ("#fde725".to_string(), false));
        assert_eq!(heat(1.0), ("#440154".to_string(), true));
    }
}
