//! Scaling over threads and queue depth (throughput with its confidence interval, latency
//! percentiles), and each MPI rank's throughput per test.

use super::page::{fig, lat_us, mbps, plain};
use super::MAX_TIMELINES;
use crate::svg::{self, esc, AxisKind, IntervalRow, LineChart, Series};
use crate::table;
use crate::units;
use crate::view::{self, Axis};
use candor_model::{RunDoc, TestResult};
use std::fmt::Write;

pub(super) fn scaling(doc: &RunDoc, b: &mut String) {
    let mut all = Vec::new();
    for g in view::groups(doc) {
        for axis in [Axis::Threads, Axis::Depth] {
            for s in view::series(&g.results, axis) {
                all.push((g.path.clone(), s));
            }
        }
    }
    if all.is_empty() {
        return;
    }
    b.push_str("<h2 id=\"scaling\">Scaling over threads and queue depth</h2>");
    for (i, (target, s)) in all.iter().enumerate() {
        let xs: Vec<f64> = s
            .points
            .iter()
            .map(|r| s.axis.value(r).max(1) as f64)
            .collect();
        let tp = Series {
            name: "throughput (mean, 95% CI)".into(),
            points: xs
                .iter()
                .zip(&s.points)
                .map(|(x, r)| (*x, r.throughput.mean / 1e6))
                .collect(),
            err: s
                .points
                .iter()
                .map(|r| (r.throughput.ci95[0] / 1e6, r.throughput.ci95[1] / 1e6))
                .collect(),
            ..Default::default()
        };
        let first = s.points[0].throughput.mean / 1e6;
        let linear = Series {
            name: "linear scaling".into(),
            points: xs.iter().map(|x| (*x, first * x / xs[0])).collect(),
            dashed: true,
            colour: Some(7),
            ..Default::default()
        };
        // Perfect scaling soon leaves the measured figures far below; it is drawn up to 1.6x
        // the highest of them (ending where it crosses that line), so the figures keep the
        // chart's height.
        let ymax = tp.points.iter().map(|p| p.1).fold(0.0, f64::max) * 1.6;
        let mut clipped: Vec<(f64, f64)> = Vec::new();
        for p in &linear.points {
            if p.1 <= ymax {
                clipped.push(*p);
            } else {
                if first > 0.0 {
                    clipped.push((xs[0] * ymax / first, ymax));
                }
                break;
            }
        }
        let linear = Series {
            points: clipped,
            ..linear
        };
        let name = s.axis.name();
        let c1 = svg::line_chart(&LineChart {
            id: format!("scale-tp-{i}"),
            title: format!("{}: throughput over {}", s.title, name),
            x_label: name.into(),
            y_label: "throughput, MB/s".into(),
            x_kind: AxisKind::Log2,
            y_kind: AxisKind::Linear,
            x_fmt: plain,
            y_fmt: mbps,
            series: vec![tp, linear],
            width: 620.0,
            height: 320.0,
            markers: true,
        });
        let lat = |name: &str, f: fn(&TestResult) -> u64, c: usize| Series {
            name: name.into(),
            points: xs
                .iter()
                .zip(&s.points)
                .map(|(x, r)| (*x, f(r) as f64 / 1e3))
                .collect(),
            colour: Some(c),
            ..Default::default()
        };
        let c2 = svg::line_chart(&LineChart {
            id: format!("scale-lat-{i}"),
            title: format!("{}: latency over {}", s.title, name),
            x_label: name.into(),
            y_label: "latency per operation, µs".into(),
            x_kind: AxisKind::Log2,
            y_kind: AxisKind::Log10,
            x_fmt: plain,
            y_fmt: lat_us,
            series: vec![
                lat("p50", |r| r.latency_ns.p50, 0),
                lat("p99", |r| r.latency_ns.p99, 1),
                lat("p99.9", |r| r.latency_ns.p999, 3),
            ],
            width: 620.0,
            height: 320.0,
            markers: true,
        });
        let _ = write!(
            b,
            "<h3>{} <small class=\"mono\">{}</small></h3><p>{}</p><div class=\"charts\">{}{}</div>",
            esc(&s.title),
            esc(target),
            esc(&view::scaling_sentence(s)),
            fig(c1, "Error bars: 95% confidence interval over the repetitions. Dashed: perfect scaling from the first point."),
            fig(c2, "Latency of one operation (one record) at the 50th, 99th and 99.9th percentile; log scale.")
        );
        let mut t = String::new();
        t.push_str(&table::scaling_grid(s).to_text());
        let _ = write!(
            b,
            "<details><summary>Table</summary><pre class=\"mono\">{}</pre></details>",
            esc(&t)
        );
    }
}

/// MPI runs: each rank's throughput per test, with the spread and the ranks that lagged.
pub(super) fn ranks(doc: &RunDoc, b: &mut String) {
    let with: Vec<(&TestResult, Vec<view::RankRate>)> = doc
        .results
        .iter()
        .filter_map(|r| view::rank_rates(r).map(|v| (r, v)))
        .filter(|(_, v)| v.len() >= 2)
        .collect();
    if with.is_empty() {
        return;
    }
    b.push_str("<h2 id=\"ranks\">Ranks</h2><p class=\"sub\">Each MPI rank's own throughput (its bytes over its own time), \
        mean and 95% CI over the repetitions. The headline figure is the aggregate: all ranks' bytes over the span from the \
        earliest start to the latest end.</p><div class=\"charts\">");
    for (i, (r, ranks)) in with.iter().enumerate().take(MAX_TIMELINES) {
        let lagging: Vec<u64> = r
            .ranks
            .as_ref()
            .and_then(|v| v.get("lagging_ranks"))
            .and_then(|l| l.as_array())
            .map(|a| a.iter().filter_map(|x| x.as_u64()).collect())
            .unwrap_or_default();
        let rows: Vec<IntervalRow> = ranks
            .iter()
            .map(|k| IntervalRow {
                label: if k.node.is_empty() {
                    format!("rank {}", k.rank)
                } else {
                    format!("rank {} ({})", k.rank, k.node)
                },
                mean: k.mean / 1e6,
                lo: k.ci95[0] / 1e6,
                hi: k.ci95[1] / 1e6,
                samples: k.samples.iter().map(|x| x / 1e6).collect(),
                flagged: lagging.contains(&k.rank),
                colour: None,
            })
            .collect();
        let c = svg::interval_chart(
            &format!("ranks-{i}"),
            &format!("{}: per rank", view::label(r)),
            "throughput of the rank, MB/s",
            &rows,
            mbps,
            620.0,
        );
        let caption = view::rank_spread(r).unwrap_or_default();
        b.push_str(&fig(
            c,
            &format!(
                "Aggregate {} MB/s. {caption} Orange-red: lagging ranks.",
                units::mb_s(r.throughput.mean)
            ),
        ));
    }
    b.push_str("</div>");
}
