//! `--format table`: the terminal table a person reads at a glance. Per target (with its
//! filesystem, mount options and device): one row per result with throughput and its 95%
//! interval, IOPS, latency, what the device moved and the witness's verdict; numbered notes
//! under the table for every flag; then scaling over threads and queue depth, MPI ranks and the
//! run's warnings. Nothing is hidden: a flagged figure is printed and marked.

use crate::compare;
use crate::grid::{Align, Grid};
use crate::units;
use crate::view::{self, Axis, Note};
use candor_model::{RunDoc, TestResult};

pub fn render(doc: &RunDoc) -> String {
    let mut out = String::new();
    for l in header_lines(doc) {
        out.push_str(&l);
        out.push('\n');
    }
    out.push_str(&crate::audit::text(doc, false));
    let mut next_note = 1;
    for g in view::groups(doc) {
        out.push('\n');
        out.push_str(&format!("Target {}", g.path));
        if let Some(t) = g.info {
            out.push_str(&format!(": {}", view::target_line(t)));
        }
        out.push('\n');
        if g.results.is_empty() {
            if doc.audit.is_none() {
                out.push_str("  no results\n");
            }
            continue;
        }
        let (grid, notes) = results_grid(&g.results, next_note);
        next_note += notes.len();
        out.push_str(&grid.to_text());
        if let Some(s) = range_sentence(&g.results) {
            out.push_str(&format!("  {s}\n"));
        }
        for n in &notes {
            out.push_str(&note_line(n));
        }
        out.push_str(&crate::steady::text(&g.results));
        out.push_str(&scaling_text(&g.results));
    }
    out.push_str(&targets_compared(doc, false));
    let warnings = view::warnings(doc);
    if !warnings.is_empty() {
        out.push_str("\nWarnings:\n");
        for w in &warnings {
            out.push_str(&format!("  - {w}\n"));
        }
    }
    out
}

/// With several targets: the same tests side by side (ratio to the first target, significance)
/// and the per-device, per-filesystem table; empty for one target.
pub fn targets_compared(doc: &RunDoc, markdown: bool) -> String {
    // The document itself, not a copy, and its results copied only when there are sides to
    // compare: a large result is not held twice.
    if view::groups(doc)
        .iter()
        .filter(|g| !g.results.is_empty())
        .count()
        < 2
    {
        return String::new();
    }
    let sides = compare::sides(&[(String::from("this run"), doc)]);
    if sides.len() < 2 {
        return String::new();
    }
    let c = compare::compare(sides);
    if markdown {
        let text = compare::render(&c, compare::CompareFormat::Markdown);
        let body = text
            .replacen("# candor compare\n\n", "", 1)
            .replace("## ", "### ");
        format!("\n## Targets compared\n\n{body}")
    } else {
        let text = compare::render(&c, compare::CompareFormat::Table);
        format!("\nTargets compared\n\n{text}")
    }
}

/// "[3] read 64m/1m: 94% of these reads ..."
pub fn note_line(n: &Note) -> String {
    format!("  [{}] {}: {}\n", n.number, n.about, n.text)
}

/// The lines above every text report: what ran where, when, and how complete it is.
pub fn header_lines(doc: &RunDoc) -> Vec<String> {
    let mut l = Vec::new();
    let h = &doc.host;
    let mut host = format!("candor {}", doc.candor_version);
    if !h.hostname.is_empty() {
        host.push_str(&format!(" on {}", h.hostname));
    }
    let mut machine = Vec::new();
    if !h.cpu_model.is_empty() {
        machine.push(format!("{} ({})", h.cpu_model, cores(h.cores, h.threads)));
    }
    if h.ram_bytes > 0 {
        machine.push(format!("{} RAM", units::size_long(h.ram_bytes)));
    }
    if !h.kernel.is_empty() {
        machine.push(format!("Linux {}", h.kernel));
    }
    if !machine.is_empty() {
        host.push_str(&format!(": {}", machine.join(", ")));
    }
    l.push(host);
    if !doc.command_line.is_empty() {
        l.push(format!("Command: {}", doc.command_line.join(" ")));
    }
    let mut when = format!("Started {}", doc.started_at);
    if let Some(f) = &doc.finished_at {
        when.push_str(&format!(", finished {f}"));
    }
    l.push(when);
    if !doc.complete {
        l.push(format!(
            "INCOMPLETE: {}; the results below are those measured before it stopped.",
            doc.stop_reason
                .clone()
                .unwrap_or_else(|| "the run did not finish".into())
        ));
    }
    if let Some(m) = &doc.mpi {
        let per: Vec<String> = m.ranks_per_node.iter().map(|n| n.to_string()).collect();
        let merged = m.library.starts_with(candor_model::MERGE_LIBRARY);
        l.push(format!(
            "{}: {} on {} ({} per node), {}{}{}",
            if merged {
                "Merged (candor merge)"
            } else {
                "MPI"
            },
            plural(m.ranks, "rank"),
            plural(m.nodes, "node"),
            if per.is_empty() {
                "?".into()
            } else {
                per.join("/")
            },
            if m.shared_file {
                "one shared file"
            } else {
                "one file per rank"
            },
            if m.reorder {
                ", reads shifted by one node"
            } else {
                ""
            },
            if merged {
                format!(
                    "; each rank is one run, {}",
                    m.library
                        .split_once(", ")
                        .map(|(_, clock)| clock)
                        .unwrap_or("")
                )
            } else {
                String::new()
            }
        ));
    }
    l
}

/// "1 node", "4 ranks".
pub fn plural(n: u32, word: &str) -> String {
    format!("{n} {word}{}", if n == 1 { "" } else { "s" })
}

/// "1 core, 2 threads".
pub fn cores(cores: u32, threads: u32) -> String {
    format!("{}, {}", plural(cores, "core"), plural(threads, "thread"))
}

/// The results table and its notes (numbered from `first_note`).
pub fn results_grid(results: &[&TestResult], first_note: usize) -> (Grid, Vec<Note>) {
    let any_flushless = results.iter().any(|r| flushless(r).is_some());
    let any_eff = results.iter().any(|r| r.efficiency.is_some());
    let any_steady = results.iter().any(|r| r.steady_state.is_some());
    let io = view::show_io(results);
    let rate = units::rate_label();
    let (ci, flush, dev) = (
        format!("{rate} (95% CI)"),
        format!("no-flush {rate}"),
        format!("dev {rate}"),
    );
    let mut cols: Vec<(&str, Align)> = vec![
        ("test", Align::Left),
        ("file", Align::Right),
        ("rec", Align::Right),
        ("thr", Align::Right),
        ("QD", Align::Right),
    ];
    if io {
        cols.push(("engine", Align::Left));
    }
    cols.push((&ci, Align::Right));
    if any_flushless {
        cols.push((&flush, Align::Right));
    }
    cols.extend(OPERATION_COLUMNS);
    cols.push((&dev, Align::Right));
    if any_eff {
        cols.push(("eff", Align::Right));
    }
    if any_steady {
        cols.push(("steady", Align::Left));
    }
    cols.extend([("verdict", Align::Left), ("note", Align::Left)]);
    let mut g = Grid::new(&cols);
    let (notes, refs) = view::number_notes(results, first_note);
    for (r, note) in results.iter().zip(refs) {
        let mut row = vec![
            r.test.clone(),
            view::size_cell(r.file_size),
            view::size_cell(r.record_size),
            r.threads.max(1).to_string(),
            r.iodepth.max(1).to_string(),
        ];
        if io {
            row.push(view::io_cell(r));
        }
        if view::failed(r) {
            // A failed test has no figures; its row stays so the failure is seen.
            row.push("failed".into());
            row.resize(cols.len() - 2, "-".into());
            row.push("-".into());
            row.push(note);
            g.push(row);
            continue;
        }
        row.push(view::throughput_cell(r));
        if any_flushless {
            row.push(flushless(r).map(units::mb_s).unwrap_or_default());
        }
        row.extend(operation_cells(r));
        row.push(view::device_cell(r));
        if any_eff {
            row.push(efficiency_cell(r));
        }
        if any_steady {
            row.push(crate::steady::cell(r));
        }
        row.push(view::verdict_cell(r));
        row.push(note);
        g.push(row);
    }
    (g, notes)
}

/// The columns after a result's throughput in the results and scaling tables: its IOPS and
/// its median and 99th-percentile latency per operation.
const OPERATION_COLUMNS: [(&str, Align); 3] = [
    ("IOPS", Align::Right),
    ("p50 µs", Align::Right),
    ("p99 µs", Align::Right),
];

/// A result's cells under `OPERATION_COLUMNS`.
fn operation_cells(r: &TestResult) -> [String; 3] {
    [
        units::count(r.iops.mean),
        units::us(r.latency_ns.p50 as f64),
        units::us(r.latency_ns.p99 as f64),
    ]
}

/// A result's share of its device's ceiling ("eff"), empty when it has none.
pub fn efficiency_cell(r: &TestResult) -> String {
    r.efficiency
        .as_ref()
        .map(|e| units::pct(e.share))
        .unwrap_or_default()
}

/// What a min-max in the results grid is, when one is shown (`units::range_sentence`).
pub fn range_sentence(results: &[&TestResult]) -> Option<String> {
    units::range_sentence(
        results
            .iter()
            .filter(|r| !view::failed(r) && view::throughput_cell(r) != "-")
            .map(|r| &r.throughput),
    )
}

/// The throughput without the flush, when it was measured and differs from the headline.
pub fn flushless(r: &TestResult) -> Option<f64> {
    let s = r.throughput_without_flush.as_ref()?;
    (r.fsync_in_timing && s.mean > 0.0).then_some(s.mean)
}

/// Scaling tables over threads and queue depth, each followed by where it stops scaling.
pub fn scaling_text(results: &[&TestResult]) -> String {
    let mut out = String::new();
    for axis in [Axis::Threads, Axis::Depth] {
        for s in view::series(results, axis) {
            out.push_str(&format!("\nScaling over {}: {}\n", axis.name(), s.title));
            out.push_str(&scaling_grid(&s).to_text());
            out.push_str(&format!("  {}\n", view::scaling_sentence(&s)));
        }
    }
    out
}

/// One row per point of a sweep: throughput, IOPS, p50/p99, speed-up over the first point, the
/// share of linear scaling it reached and, when the results carry one, the share of the
/// device's ceiling (on the ceiling's basis: throughput or IOPS).
pub fn scaling_grid(s: &view::Series) -> Grid {
    let any_eff = s.points.iter().any(|r| r.efficiency.is_some());
    let mut cols = vec![
        (s.axis.name(), Align::Right),
        (units::rate_label(), Align::Right),
    ];
    cols.extend(OPERATION_COLUMNS);
    cols.extend([("speed-up", Align::Right), ("of linear", Align::Right)]);
    if any_eff {
        cols.push(("eff", Align::Right));
    }
    let mut g = Grid::new(&cols);
    let first = s.points[0];
    for r in &s.points {
        let speedup = if first.throughput.mean > 0.0 {
            r.throughput.mean / first.throughput.mean
        } else {
            f64::NAN
        };
        let x = s.axis.value(r).max(1) as f64 / s.axis.value(first).max(1) as f64;
        let mut row = vec![s.axis.value(r).to_string(), units::mb_s(r.throughput.mean)];
        row.extend(operation_cells(r));
        row.extend([units::ratio(speedup), units::pct(speedup / x)]);
        if any_eff {
            row.push(efficiency_cell(r));
        }
        g.push(row);
    }
    g
}
