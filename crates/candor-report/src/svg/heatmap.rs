//! The heatmap: rows x columns of figures, each cell shaded on a sequential colour scale and
//! labelled with its figure.

use super::{esc, frame};
use std::fmt::Write;

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heat_runs_light_to_dark() {
        assert_eq!(heat(0.0), ("#fde725".to_string(), false));
        assert_eq!(heat(1.0), ("#440154".to_string(), true));
    }
}
