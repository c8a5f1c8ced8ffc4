//! Throughput over file size x record size: a heatmap and one line per file size, for each set
//! of results that varies in sizes.

use super::page::{fig, mbps, named_sets, short_title, size_kib};
use super::Section;
use super::MAX_CURVES;
use crate::svg::{self, esc, AxisKind, LineChart, Series};
use crate::units;
use crate::view::Axis;
use candor_model::{RunDoc, TestResult};

/// The point of a sweep along threads and depth: "1 thread", "2 threads, QD 4".
fn load(r: &TestResult) -> String {
    let mut d = Axis::Threads.point(r.threads.max(1));
    if r.iodepth > 1 {
        d.push_str(&format!(", {}", Axis::Depth.point(r.iodepth)));
    }
    d
}

/// Results under a name ("write, psync"; "2 threads").
type Named<'a> = (String, Vec<&'a TestResult>);

/// Per test (and engine, O_DIRECT, target), its results at each thread count and depth that
/// vary in sizes (two size points or more), in the order they came.
pub(super) fn size_sets(doc: &RunDoc) -> Vec<(String, Vec<Named<'_>>)> {
    named_sets(doc, |_| true, |_| String::new())
        .into_iter()
        .filter_map(|(name, rs)| {
            let mut by: Vec<Named> = Vec::new();
            for r in rs {
                let k = load(r);
                match by.iter_mut().find(|(n, _)| *n == k) {
                    Some((_, v)) => v.push(r),
                    None => by.push((k, vec![r])),
                }
            }
            by.retain(|(_, v)| {
                let mut k: Vec<(u64, u64)> =
                    v.iter().map(|r| (r.file_size, r.record_size)).collect();
                k.sort();
                k.dedup();
                k.len() >= 2
            });
            (!by.is_empty()).then_some((name, by))
        })
        .collect()
}

/// A file size x record size map has at most this many cells (iozone -a's has 182): a
/// result with thousands of sizes of each is not drawn as a map of millions.
pub(super) const MAX_CELLS: usize = 4096;

pub(super) fn surfaces(doc: &RunDoc, b: &mut Section) {
    let families = size_sets(doc);
    if families.is_empty() {
        return;
    }
    b.open("sizes", "Throughput over file size and record size");
    b.push_str("\
        <p class=\"sub\">iozone's surface, flattened: each cell is the mean throughput of one file size and record size; \
        the lines show the same figures with one line per file size. One group per test, with a map and a chart per \
        thread count and queue depth it ran at.</p>");
    let mut i = 0;
    for (fi, (family, sets)) in families.iter().enumerate() {
        let several = sets.len() > 1;
        let (mut heats, mut lines) = (String::new(), String::new());
        for (load, rs) in sets {
            let name = if several || load != "1 thread" {
                format!("{}, {load}", short_title(family))
            } else {
                short_title(family).to_string()
            };
            let mut files: Vec<u64> = rs.iter().map(|r| r.file_size).collect();
            files.sort();
            files.dedup();
            let mut recs: Vec<u64> = rs.iter().map(|r| r.record_size).collect();
            recs.sort();
            recs.dedup();
            // The first result at each (file size, record size), found in one pass.
            let mut at: std::collections::HashMap<(u64, u64), f64> = Default::default();
            for r in rs.iter().rev() {
                at.insert(
                    (r.file_size, r.record_size),
                    r.throughput.mean / crate::units::scale(),
                );
            }
            let get = |f: u64, rec: u64| at.get(&(f, rec)).copied();
            let heat = if files.len() * recs.len() <= MAX_CELLS {
                let values: Vec<Vec<Option<f64>>> = files
                    .iter()
                    .map(|f| recs.iter().map(|rec| get(*f, *rec)).collect())
                    .collect();
                svg::heatmap(
                    &format!("heat-{i}"),
                    &format!("{name}: {}", crate::units::rate_label()),
                    "file size",
                    "record size",
                    &files.iter().map(|f| units::size(*f)).collect::<Vec<_>>(),
                    &recs.iter().map(|r| units::size(*r)).collect::<Vec<_>>(),
                    &values,
                    mbps,
                    crate::units::rate_label(),
                )
            } else {
                format!(
                    "<p>{}: {} file sizes by {} record sizes: too many cells to draw as a map \
                     (at most {MAX_CELLS}); the tables have every figure.</p>",
                    esc(&name),
                    files.len(),
                    recs.len()
                )
            };
            // Lines for at most six file sizes, spread from the smallest to the largest: more
            // would be a tangle (the heatmap beside it has them all).
            let shown: Vec<u64> = if files.len() <= MAX_CURVES {
                files.clone()
            } else {
                let step = (files.len() - 1) as f64 / (MAX_CURVES - 1) as f64;
                let mut v: Vec<u64> = (0..MAX_CURVES)
                    .map(|k| files[((k as f64 * step).round() as usize).min(files.len() - 1)])
                    .collect();
                v.dedup();
                v
            };
            let lines_caption = if shown.len() < files.len() {
                format!(
                "One line per file size ({} of {}, spread from the smallest to the largest; the heatmap has them all).",
                shown.len(),
                files.len()
            )
            } else {
                "One line per file size.".to_string()
            };
            // One record size: a line over record size would be a column of dots, so the line
            // runs over file size instead.
            let over_files = recs.len() == 1;
            let series: Vec<Series> = if over_files {
                vec![Series {
                    name: format!("record {}", units::size(recs[0])),
                    points: files
                        .iter()
                        .filter_map(|f| get(*f, recs[0]).map(|v| (*f as f64 / 1024.0, v)))
                        .collect(),
                    ..Default::default()
                }]
            } else {
                shown
                    .iter()
                    .map(|f| Series {
                        name: format!("file {}", units::size(*f)),
                        points: recs
                            .iter()
                            .filter_map(|rec| get(*f, *rec).map(|v| (*rec as f64 / 1024.0, v)))
                            .collect(),
                        ..Default::default()
                    })
                    .collect()
            };
            let (by, lines_caption) = if over_files {
                (
                    "file size",
                    "One record size ran: the line follows the file size.".to_string(),
                )
            } else {
                ("record size", lines_caption)
            };
            let lines_chart = svg::line_chart(&LineChart {
                id: format!("size-{i}"),
                title: format!("{name}: {} by {by}", crate::units::rate_label()),
                x_label: by.into(),
                y_label: format!("throughput, {}", crate::units::rate_label()),
                x_kind: AxisKind::Log2,
                y_kind: AxisKind::Linear,
                x_fmt: size_kib,
                y_fmt: mbps,
                series,
                width: if several { 480.0 } else { 620.0 },
                height: if several { 280.0 } else { 320.0 },
                markers: true,
            });
            heats.push_str(&fig(
            heat,
            "Darker is faster. Blank cells did not run (record larger than the file, or not asked for).",
        ));
            lines.push_str(&fig(lines_chart, &lines_caption));
            i += 1;
        }
        // One map and chart: side by side; several: the maps in a row, the charts below.
        let body = if several {
            format!("<div class=\"charts\">{heats}</div><div class=\"charts\" style=\"margin-top:12px\">{lines}</div>")
        } else {
            format!("<div class=\"charts\">{heats}{lines}</div>")
        };
        b.group(&format!("g-sizes-{fi}"), family, "", &body, true);
    }
}
