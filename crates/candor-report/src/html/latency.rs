//! Latency distributions: a histogram and a percentile curve for up to a few results of each
//! set.

use super::page::{fig, lat_us, named_sets, nines, short_title, tick};
use super::Section;
use super::MAX_CURVES;
use crate::svg::{self, AxisKind, LineChart, Series};
use crate::units;
use crate::view::{self, Axis};
use candor_model::{RunDoc, TestResult};
use candor_stats::Histogram;

/// Up to `MAX_CURVES` results of a set to draw together: all when few, else evenly picked
/// across sizes, threads and depths.
pub(super) fn pick_curves<'a>(rs: &[&'a TestResult]) -> Vec<&'a TestResult> {
    let mut with: Vec<&TestResult> = rs
        .iter()
        .copied()
        .filter(|r| !r.latency_histogram.buckets.is_empty())
        .collect();
    with.sort_by_key(|r| (r.file_size, r.record_size, r.threads, r.iodepth));
    if with.len() <= MAX_CURVES {
        return with;
    }
    let step = (with.len() - 1) as f64 / (MAX_CURVES - 1) as f64;
    let mut picked: Vec<&TestResult> = (0..MAX_CURVES)
        .map(|i| with[((i as f64 * step).round() as usize).min(with.len() - 1)])
        .collect();
    picked.dedup_by(|a, b| std::ptr::eq(*a, *b));
    picked
}

/// A curve's name: what varies among the curves drawn together.
pub(super) fn curve_name(r: &TestResult, rs: &[&TestResult]) -> String {
    let varies = |f: fn(&TestResult) -> u64| rs.iter().any(|o| f(o) != f(r));
    let mut parts = Vec::new();
    if varies(|o| o.file_size) || varies(|o| o.record_size) {
        parts.push(format!(
            "{} / {}",
            units::size(r.file_size),
            units::size(r.record_size)
        ));
    }
    if varies(|o| o.threads as u64) {
        parts.push(Axis::Threads.point(r.threads.max(1)));
    }
    if varies(|o| o.iodepth as u64) {
        parts.push(Axis::Depth.point(r.iodepth.max(1)));
    }
    if parts.is_empty() {
        view::label(r)
    } else {
        parts.join(", ")
    }
}

/// Results grouped for latency charts: by test, engine, O_DIRECT and target, across sizes,
/// threads and depths.
pub(super) fn latency_sets(doc: &RunDoc) -> Vec<(String, Vec<&TestResult>)> {
    named_sets(
        doc,
        |r| !r.latency_histogram.buckets.is_empty(),
        |_| String::new(),
    )
}

pub(super) fn latency(doc: &RunDoc, b: &mut Section) {
    let sets = latency_sets(doc);
    if sets.is_empty() {
        return;
    }
    b.open("latency", "Latency distributions");
    b.push_str("\
        <p class=\"sub\">Time of each operation (one record) as candor timed it. Left: how the operations spread over latency. \
        Right: the latency below which a given share of them finished (the tail to the right).</p>");
    for (i, (name, rs)) in sets.iter().enumerate() {
        let picked = pick_curves(rs);
        let mut hist = Vec::new();
        let mut pct = Vec::new();
        for (j, r) in picked.iter().enumerate() {
            let label = curve_name(r, &picked);
            // Regroup the fine buckets into 10 per decade so the curve reads smoothly.
            let total: u64 = r.latency_histogram.buckets.iter().map(|b| b[1]).sum();
            let mut bins: Vec<(i64, u64)> = Vec::new();
            for [lo, n] in &r.latency_histogram.buckets {
                let k = ((*lo).max(1) as f64).log10().mul_add(10.0, 0.0).floor() as i64;
                match bins.iter_mut().find(|(kk, _)| *kk == k) {
                    Some((_, c)) => *c += n,
                    None => bins.push((k, *n)),
                }
            }
            bins.sort();
            // Empty bins between and around the used ones are zero, so each curve starts and
            // ends on the axis.
            if let (Some(&(lo, _)), Some(&(hi, _))) = (bins.first(), bins.last()) {
                bins = (lo - 1..=hi + 1)
                    .map(|k| (k, bins.iter().find(|(kk, _)| *kk == k).map_or(0, |b| b.1)))
                    .collect();
            }
            let pts: Vec<(f64, f64)> = bins
                .iter()
                .map(|(k, n)| {
                    let mid_ns = 10f64.powf((*k as f64 + 0.5) / 10.0);
                    (mid_ns / 1e3, 100.0 * *n as f64 / total.max(1) as f64)
                })
                .collect();
            hist.push(Series {
                name: label.clone(),
                points: pts,
                colour: Some(j),
                ..Default::default()
            });
            let h = Histogram::from_dump(&r.latency_histogram);
            let mut p = Vec::new();
            let mut v = 0.0;
            while v <= 4.0 + 1e-9 {
                let q = 1.0 - 10f64.powf(-v);
                p.push((v, h.quantile(q) as f64 / 1e3));
                v += 0.1;
            }
            pct.push(Series {
                name: label,
                points: p,
                colour: Some(j),
                ..Default::default()
            });
        }
        let c1 = svg::line_chart(&LineChart {
            id: format!("lat-hist-{i}"),
            title: format!("{}: latency histogram", short_title(name)),
            x_label: "latency per operation, µs (log)".into(),
            y_label: "share of operations, %".into(),
            x_kind: AxisKind::Log10,
            y_kind: AxisKind::Linear,
            x_fmt: lat_us,
            y_fmt: tick,
            series: hist,
            width: 620.0,
            height: 320.0,
            markers: false,
        });
        let c2 = svg::line_chart(&LineChart {
            id: format!("lat-pct-{i}"),
            title: format!("{}: latency percentiles", short_title(name)),
            x_label: "percentile".into(),
            y_label: "latency, µs (log)".into(),
            x_kind: AxisKind::Linear,
            y_kind: AxisKind::Log10,
            x_fmt: nines,
            y_fmt: lat_us,
            series: pct,
            width: 620.0,
            height: 320.0,
            markers: false,
        });
        let more = if rs.len() > picked.len() {
            format!(" Showing {} of {} results, evenly picked; the summary has every result's percentiles.", picked.len(), rs.len())
        } else {
            String::new()
        };
        let body = format!(
            "<div class=\"charts\">{}{}</div>",
            fig(c1, &format!("Bins of a tenth of a decade.{more}")),
            fig(
                c2,
                "Read across: at 99% on the x axis, the y value is the p99 latency."
            )
        );
        b.group(&format!("g-lat-{i}"), name, "", &body, true);
    }
}
