//! The axes every chart stands on: how an axis maps values (linear, powers of two, powers
//! of ten), its range and its ticks, bounded and finite whatever the figures, and the markup
//! of a chart's axes, grid and tick labels.

use super::esc;
use std::fmt::Write;

/// How an axis maps values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AxisKind {
    Linear,
    /// Ticks at powers of two (sizes, thread counts).
    Log2,
    /// Ticks at powers of ten (latency).
    Log10,
}

/// An axis placed on the page: the values `lo..hi` drawn from position `p0` to `p1`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Scale {
    pub lo: f64,
    pub hi: f64,
    pub kind: AxisKind,
    pub p0: f64,
    pub p1: f64,
}

impl Scale {
    fn t(&self, v: f64) -> f64 {
        match self.kind {
            AxisKind::Linear => v,
            AxisKind::Log2 => v.max(f64::MIN_POSITIVE).log2(),
            AxisKind::Log10 => v.max(f64::MIN_POSITIVE).log10(),
        }
    }

    pub fn map(&self, v: f64) -> f64 {
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

    pub fn ticks(&self) -> Vec<f64> {
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
pub(super) fn nice_max(max: f64) -> f64 {
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

/// Draws axes, grid and tick labels; returns the markup.
pub(super) fn axes(
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

pub(super) fn range(vals: impl Iterator<Item = f64>, kind: AxisKind) -> (f64, f64) {
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
}
