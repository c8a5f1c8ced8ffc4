//! Scaling over threads and queue depth (throughput with its confidence interval, latency
//! percentiles), and each MPI rank's throughput per test.

use super::page::{fig, lat_us, mbps, plain};
use super::Section;
use super::MAX_TIMELINES;
use crate::svg::{self, esc, AxisKind, IntervalRow, LineChart, Series};
use crate::table;
use crate::units;
use crate::view::{self, Axis};
use candor_model::{RunDoc, TestResult};
use std::fmt::Write;

/// A chart of a grid of small charts is this wide and this high.
const SMALL_W: f64 = 270.0;
const SMALL_H: f64 = 190.0;

/// A grid's charts share one y scale unless their highest figures are further apart than this
/// factor (a cached point beside device-bound ones would flatten them): then each has its own.
const SHARED_SCALE_SPREAD: f64 = 10.0;

/// The x values of a sweep (the axis, at least 1).
fn xs(s: &view::Series) -> Vec<f64> {
    s.points
        .iter()
        .map(|r| s.axis.value(r).max(1) as f64)
        .collect()
}

/// Throughput with its 95% CI, and perfect scaling from the first point, drawn up to 1.6x the
/// highest measured figure (ending where it crosses that line), so the figures keep the chart's
/// height.
fn throughput_series(s: &view::Series) -> Vec<Series> {
    let xs = xs(s);
    let tp = Series {
        name: "throughput (mean, 95% CI)".into(),
        points: xs
            .iter()
            .zip(&s.points)
            .map(|(x, r)| (*x, r.throughput.mean / crate::units::scale()))
            .collect(),
        err: s
            .points
            .iter()
            .map(|r| {
                let (lo, hi) = units::shown_interval(&r.throughput);
                (lo / crate::units::scale(), hi / crate::units::scale())
            })
            .collect(),
        err_ranges: s
            .points
            .iter()
            .map(|r| units::interval_needs(&r.throughput).is_some())
            .collect(),
        ..Default::default()
    };
    let first = s.points[0].throughput.mean / crate::units::scale();
    let ymax = tp.points.iter().map(|p| p.1).fold(0.0, f64::max) * 1.6;
    let mut clipped: Vec<(f64, f64)> = Vec::new();
    for x in &xs {
        let y = first * x / xs[0];
        if y <= ymax {
            clipped.push((*x, y));
        } else {
            if first > 0.0 {
                clipped.push((xs[0] * ymax / first, ymax));
            }
            break;
        }
    }
    let linear = Series {
        name: "linear scaling".into(),
        points: clipped,
        dashed: true,
        colour: Some(7),
        ..Default::default()
    };
    vec![tp, linear]
}

/// Latency p50, p99 and p99.9 over the axis, in µs.
fn latency_series(s: &view::Series) -> Vec<Series> {
    let xs = xs(s);
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
    vec![
        lat("p50", |r| r.latency_ns.p50, 0),
        lat("p99", |r| r.latency_ns.p99, 1),
        lat("p99.9", |r| r.latency_ns.p999, 3),
    ]
}

fn chart(id: String, title: String, s: &view::Series, lat: bool, w: f64, h: f64) -> LineChart {
    let name = s.axis.name();
    LineChart {
        id,
        title,
        x_label: name.into(),
        y_label: if lat {
            "latency per operation, µs".into()
        } else {
            format!("throughput, {}", crate::units::rate_label())
        },
        x_kind: AxisKind::Log2,
        y_kind: if lat {
            AxisKind::Log10
        } else {
            AxisKind::Linear
        },
        x_fmt: plain,
        y_fmt: if lat { lat_us } else { mbps },
        series: if lat {
            latency_series(s)
        } else {
            throughput_series(s)
        },
        width: w,
        height: h,
        markers: true,
    }
}

/// Where a sweep stops scaling, in a few words for a small chart's caption.
fn scaling_words(s: &view::Series) -> String {
    let values: Vec<f64> = s.points.iter().map(|r| r.throughput.mean).collect();
    let at = |i: usize| s.axis.point(s.axis.value(s.points[i]).max(1));
    let gain = |i: usize| units::ratio(values[i] / values[0]);
    match view::scaling_stop(&values) {
        None => format!(
            "still scaling at {} ({})",
            at(values.len() - 1),
            gain(values.len() - 1)
        ),
        Some(0) => format!("does not scale ({} at {})", gain(1), at(1)),
        Some(i) => format!("scales to {} ({})", at(i), gain(i)),
    }
}

/// Sweeps that differ only in file and record size: one test (engine, flags, the other axis)
/// on one target, along one axis.
fn sweep_groups(doc: &RunDoc) -> Vec<(String, String, Vec<view::Series<'_>>)> {
    let groups = view::groups(doc);
    let several = groups.len() > 1;
    let mut out: Vec<(String, String, Vec<view::Series>)> = Vec::new();
    for g in groups {
        for axis in [Axis::Threads, Axis::Depth] {
            for s in view::series(&g.results, axis) {
                let r = s.points[0];
                let mut name = r.test.clone();
                if !r.engine.is_empty() {
                    name.push_str(&format!(", {}", r.engine));
                }
                match axis {
                    Axis::Threads if r.iodepth > 1 => name.push_str(&format!(", QD {}", r.iodepth)),
                    Axis::Depth if r.threads > 1 => {
                        name.push_str(&format!(", {} threads", r.threads))
                    }
                    _ => {}
                }
                if r.direct {
                    name.push_str(", O_DIRECT");
                }
                if r.osync {
                    name.push_str(", O_SYNC");
                }
                name.push_str(&format!(" over {}", axis.name()));
                if several {
                    name.push_str(&format!(" on {}", g.path));
                }
                match out.iter_mut().find(|(n, _, _)| *n == name) {
                    Some((_, _, v)) => v.push(s),
                    None => out.push((name, g.path.clone(), vec![s])),
                }
            }
        }
    }
    out
}

pub(super) fn scaling(doc: &RunDoc, b: &mut Section) {
    let groups = sweep_groups(doc);
    if groups.is_empty() {
        return;
    }
    b.open("scaling", "Scaling over threads and queue depth");
    b.push_str("\
        <p class=\"sub\">One group per test. A test swept at several file and record sizes gets a grid of small charts, \
        one per size point, on one scale: solid, throughput with error bars of its 95% confidence interval; dashed, \
        perfect scaling from the first point. Hover over a point for its figures.</p>");
    let mut next = 0;
    for (gi, (name, target, sweeps)) in groups.iter().enumerate() {
        let mut body = String::new();
        if sweeps.len() == 1 {
            let s = &sweeps[0];
            let c1 = svg::line_chart(&chart(
                format!("scale-tp-{next}"),
                format!("{}: throughput over {}", s.title, s.axis.name()),
                s,
                false,
                620.0,
                320.0,
            ));
            let c2 = svg::line_chart(&chart(
                format!("scale-lat-{next}"),
                format!("{}: latency over {}", s.title, s.axis.name()),
                s,
                true,
                620.0,
                320.0,
            ));
            next += 1;
            let _ = write!(
                body,
                "<p>{} <small class=\"mono\">{}</small></p><div class=\"charts\">{}{}</div>",
                esc(&view::scaling_sentence(s)),
                esc(target),
                fig(c1, "Error bars: 95% confidence interval over the repetitions (the slowest and fastest repetition where that interval would be wider than the mean). Dashed: perfect scaling from the first point."),
                fig(c2, "Latency of one operation (one record) at the 50th, 99th and 99.9th percentile; log scale.")
            );
        } else {
            // One y scale for the grid, unless the charts' highest figures are too far apart.
            let tops: Vec<f64> = sweeps
                .iter()
                .map(|s| {
                    throughput_series(s)[0]
                        .points
                        .iter()
                        .zip(&s.points)
                        .map(|(p, r)| {
                            p.1.max(units::shown_interval(&r.throughput).1 / crate::units::scale())
                        })
                        .fold(0.0, f64::max)
                })
                .collect();
            let (lo, hi) = (
                tops.iter().cloned().fold(f64::INFINITY, f64::min),
                tops.iter().cloned().fold(0.0, f64::max),
            );
            let shared = lo > 0.0 && hi / lo <= SHARED_SCALE_SPREAD;
            let tp_range = shared.then(|| svg::axis_range(tops.iter().cloned(), AxisKind::Linear));
            let lat_all: Vec<f64> = sweeps
                .iter()
                .flat_map(latency_series)
                .flat_map(|s| s.points.into_iter().map(|p| p.1))
                .collect();
            let lat_range = svg::axis_range(lat_all.into_iter(), AxisKind::Log10);
            let axis = sweeps[0].axis.name();
            let _ = write!(
                body,
                "<p class=\"sub\">Throughput over {axis}, {}, {}. Each chart is one file size / record size.</p><div class=\"multi\">",
                units::rate_label(),
                if shared {
                    "every chart on the same scale"
                } else {
                    "each chart on its own scale (their highest figures are more than 10 times apart)"
                }
            );
            let mut lat = String::new();
            let mut tables = String::new();
            for s in sweeps {
                let r = s.points[0];
                let point = crate::view::sizes(r.file_size, r.record_size);
                let c = svg::line_chart_in(
                    &chart(
                        format!("scale-tp-{next}"),
                        format!("{point} {}", crate::units::rate_label()),
                        s,
                        false,
                        SMALL_W,
                        SMALL_H,
                    ),
                    tp_range,
                );
                let _ = write!(
                    body,
                    "<figure title=\"{}\">{c}<figcaption>{}</figcaption></figure>",
                    esc(&view::scaling_sentence(s)),
                    esc(&scaling_words(s))
                );
                let c = svg::line_chart_in(
                    &chart(
                        format!("scale-lat-{next}"),
                        format!("{point} latency, µs"),
                        s,
                        true,
                        SMALL_W,
                        SMALL_H,
                    ),
                    Some(lat_range),
                );
                let _ = write!(lat, "<figure>{c}</figure>");
                let _ = write!(
                    tables,
                    "<p>{}</p><pre class=\"mono\">{}</pre>",
                    esc(&view::scaling_sentence(s)),
                    esc(&table::scaling_grid(s).to_text())
                );
                next += 1;
            }
            body.push_str("</div>");
            let key = |c: usize, n: &str| {
                format!(
                    "<span style=\"color:{}\">&#9644; {n}</span>",
                    svg::colour(c)
                )
            };
            let _ = write!(
                body,
                "<details><summary>Latency over {axis}, one chart per size point ({}, {}, {}; µs, log scale, one scale)</summary>\
                 <div class=\"multi\">{lat}</div></details>\
                 <details><summary>Tables and where each sweep stops scaling</summary>{tables}</details>",
                key(0, "p50"),
                key(1, "p99"),
                key(3, "p99.9"),
            );
        }
        if sweeps.len() == 1 {
            let _ = write!(
                body,
                "<details><summary>Table</summary><pre class=\"mono\">{}</pre></details>",
                esc(&table::scaling_grid(&sweeps[0]).to_text())
            );
        }
        b.group(
            &format!("g-scaling-{gi}"),
            name,
            &if sweeps.len() == 1 {
                String::new()
            } else {
                format!(
                    " <small class=\"sub\">({} size points)</small>",
                    sweeps.len()
                )
            },
            &body,
            true,
        );
    }
}

/// MPI runs: each rank's throughput per test, with the spread and the ranks that lagged.
pub(super) fn ranks(doc: &RunDoc, b: &mut Section) {
    let with: Vec<(&TestResult, Vec<view::RankRate>)> = doc
        .results
        .iter()
        .filter_map(|r| view::rank_rates(r).map(|v| (r, v)))
        .filter(|(_, v)| v.len() >= 2)
        .collect();
    if with.is_empty() {
        return;
    }
    b.open("ranks", "Ranks");
    b.push_str("<p class=\"sub\">Each MPI rank's own throughput (its bytes over its own time), \
        mean and 95% CI over the repetitions. The headline figure is the aggregate: all ranks' bytes over the span from the \
        earliest start to the latest end.</p><div class=\"charts\">");
    for (i, (r, ranks)) in with.iter().enumerate().take(MAX_TIMELINES) {
        let lagging: Vec<u64> = r
            .ranks
            .as_ref()
            .map(|s| s.lagging_ranks.iter().map(|&x| u64::from(x)).collect())
            .unwrap_or_default();
        let rows: Vec<IntervalRow> = ranks
            .iter()
            .map(|k| IntervalRow {
                label: if k.node.is_empty() {
                    format!("rank {}", k.rank)
                } else {
                    format!("rank {} ({})", k.rank, k.node)
                },
                mean: k.mean / crate::units::scale(),
                lo: k.ci95[0] / crate::units::scale(),
                hi: k.ci95[1] / crate::units::scale(),
                samples: k
                    .samples
                    .iter()
                    .map(|x| x / crate::units::scale())
                    .collect(),
                flagged: lagging.contains(&k.rank),
                colour: None,
                range: false,
            })
            .collect();
        let c = svg::interval_chart(
            &format!("ranks-{i}"),
            &format!("{}: per rank", view::label(r)),
            &format!("throughput of the rank, {}", crate::units::rate_label()),
            &rows,
            mbps,
            620.0,
        );
        let caption = view::rank_spread(r).unwrap_or_default();
        b.push_str(&fig(
            c,
            &format!(
                "Aggregate {}. {caption} Orange-red: lagging ranks.",
                units::rate_text(r.throughput.mean)
            ),
        ));
    }
    b.push_str("</div>");
}
