//! The per-device, per-filesystem table of a study: for each device, filesystem and file size,
//! one row per operation with its throughput (in the rate unit of every table), the time per
//! unit of bytes at that throughput and its standard deviation over the repetitions, the mean
//! time of one repetition, the total
//! time of all repetitions, the write amplification and the witness's verdict. It is what
//! people comparing filesystems on several disks tabulate by hand; `candor compare` and
//! multi-target runs print it. Devices are named once, in a list above the table.

use crate::grid::{Align, Grid};
use crate::units;
use crate::view;
use candor_model::{BlockDevice, TargetInfo, TestResult};

/// What the table's columns mean, printed above it.
pub fn legend() -> String {
    let u = units::rate_units();
    format!(
        "ms/{unit}: the time one {unit} takes at the {rate} beside it (1000 / {rate}); \
    std dev: the standard deviation of each repetition's own ms/{unit}; s per rep: mean time \
    of one repetition; write amp: bytes the device wrote per byte written.",
        unit = u.unit(),
        rate = u.label()
    )
}

/// Results of one filesystem on one device.
pub struct StudySide<'a> {
    /// The block device under the filesystem; None for tmpfs, FUSE, network filesystems.
    pub device: Option<&'a BlockDevice>,
    /// "ext4" or the side's name when the filesystem is unknown.
    pub filesystem: String,
    pub results: Vec<&'a TestResult>,
}

/// The filesystem's label of a target: its type, or `fallback` when unknown.
pub fn filesystem(t: Option<&TargetInfo>, fallback: &str) -> String {
    t.map(|t| t.fs_type.clone())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| fallback.to_string())
}

/// The device's cell: "vda", "loop0 on vda", "dm-0 on sda+sdb", "no block device".
pub fn device_cell(d: Option<&BlockDevice>) -> String {
    match d {
        None => "no block device".to_string(),
        Some(d) => {
            let disk = view::underlying_disk(d);
            if disk == d.name {
                d.name.clone()
            } else {
                format!("{} on {disk}", d.name)
            }
        }
    }
}

/// The devices of a study, each named once: a disk with its model and kind, a loop device
/// with its backing file, a dm or md device with what it is made of; disks before what sits
/// on them, in the order of the table.
pub fn device_lines(sides: &[StudySide]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut add = |name: String, what: String| {
        if !out.iter().any(|(n, _)| *n == name) {
            out.push((name, what));
        }
    };
    let size = |d: &BlockDevice| {
        if d.size_bytes > 0 {
            format!(", {}", units::size_long(d.size_bytes))
        } else {
            String::new()
        }
    };
    for s in ordered(sides) {
        let Some(d) = s.device else { continue };
        match view::loop_backing(d) {
            Some(b) => {
                if let Some((disk, model)) = &b.disk {
                    let kind = if d.rotational { "rotational" } else { "SSD" };
                    add(
                        disk.clone(),
                        if model.is_empty() {
                            kind.to_string()
                        } else {
                            format!("{model}, {kind}")
                        },
                    );
                }
                let mut what = "loop device".to_string();
                if !b.file.is_empty() {
                    what.push_str(&format!(" backed by {}", b.file));
                }
                what.push_str(&size(d));
                if b.disk.is_none() {
                    what.push_str(" (the disk beneath it was not found)");
                }
                add(d.name.clone(), what);
            }
            None => add(
                d.name.clone(),
                format!("{}{}", view::device_description(d), size(d)),
            ),
        }
    }
    out
}

/// The sides in table order: grouped by the disk beneath them (first seen first), then as
/// given.
fn ordered<'s, 'a>(sides: &'s [StudySide<'a>]) -> Vec<&'s StudySide<'a>> {
    let disk = |s: &StudySide| s.device.map(view::underlying_disk).unwrap_or_default();
    let mut disks: Vec<String> = Vec::new();
    for s in sides {
        if !disks.contains(&disk(s)) {
            disks.push(disk(s));
        }
    }
    let mut v: Vec<&StudySide> = sides.iter().collect();
    v.sort_by_key(|s| disks.iter().position(|d| *d == disk(s)));
    v
}

/// The operation's name in a study: "Read Sequential", "Write Random", or the test's name.
pub fn operation(test: &str) -> String {
    match test {
        "read" => "Read Sequential".into(),
        "randread" => "Read Random".into(),
        "write" => "Write Sequential".into(),
        "randwrite" => "Write Random".into(),
        other => other.to_string(),
    }
}

/// Seconds of each repetition: as measured, or the bytes over each throughput sample when the
/// repetitions were not kept.
pub fn rep_seconds(r: &TestResult) -> Vec<f64> {
    if !r.reps.is_empty() {
        return r.reps.iter().map(|p| p.seconds).collect();
    }
    let bytes = test_bytes(r) as f64;
    r.throughput
        .samples
        .iter()
        .filter(|s| **s > 0.0)
        .map(|s| bytes / s)
        .collect()
}

/// The bytes one repetition of the test moves: its file size times its threads.
fn test_bytes(r: &TestResult) -> u64 {
    r.file_size * r.threads.max(1) as u64
}

/// Milliseconds per `unit` bytes of each repetition: its time over the units it moved (its
/// own byte count when recorded, else the test's).
pub fn rep_ms_per(r: &TestResult, unit: f64) -> Vec<f64> {
    let per = |secs: f64, bytes: u64| (bytes > 0).then(|| secs * 1e3 / (bytes as f64 / unit));
    if !r.reps.is_empty() {
        return r
            .reps
            .iter()
            .filter_map(|p| per(p.seconds, if p.bytes > 0 { p.bytes } else { test_bytes(r) }))
            .collect();
    }
    rep_seconds(r)
        .into_iter()
        .filter_map(|s| per(s, test_bytes(r)))
        .collect()
}

fn mean_sd(xs: &[f64]) -> (f64, f64) {
    let s = candor_stats::summarize(xs);
    (s.mean, s.stddev)
}

/// Operation order within a block: reads before writes, sequential before random, as tabulated
/// by hand; other tests after, in their order.
fn rank(test: &str) -> usize {
    ["read", "randread", "write", "randwrite"]
        .iter()
        .position(|t| *t == test)
        .unwrap_or(4)
}

/// "2.95x" for a write with a measured amplification, "" otherwise.
fn amplification(r: &TestResult) -> String {
    r.witness
        .as_ref()
        .and_then(|w| w.write_amplification)
        .map(units::ratio)
        .unwrap_or_default()
}

/// The study table: explicit device, filesystem and file-size columns, one row per operation.
/// With `blank_repeats`, a device, filesystem or size equal to the row above is left blank so
/// the blocks stand out (text and HTML); without it every row is complete (Markdown, where
/// rows are read and copied on their own).
pub fn grid(sides: &[StudySide], blank_repeats: bool) -> Grid {
    let u = units::rate_units();
    let per_unit = format!("ms/{}", u.unit());
    let mut g = Grid::new(&[
        ("device", Align::Left),
        ("filesystem", Align::Left),
        ("file", Align::Right),
        ("operation", Align::Left),
        (u.label(), Align::Right),
        (&per_unit, Align::Right),
        ("std dev", Align::Right),
        ("s per rep", Align::Right),
        ("total s", Align::Right),
        ("reps", Align::Right),
        ("write amp", Align::Right),
        ("verdict", Align::Left),
    ]);
    let mut last: [String; 3] = Default::default();
    for s in ordered(sides) {
        let device = device_cell(s.device);
        // By file size, and how many results each test has at each size, in one pass.
        let mut by_size: std::collections::BTreeMap<u64, Vec<&&TestResult>> = Default::default();
        let mut variants: std::collections::BTreeMap<(&str, u64), usize> = Default::default();
        for r in &s.results {
            by_size.entry(r.file_size).or_default().push(r);
            *variants.entry((r.test.as_str(), r.file_size)).or_default() += 1;
        }
        for (size, mut rs) in by_size {
            rs.sort_by_key(|r| (rank(&r.test), r.record_size, r.threads, r.iodepth));
            for r in rs {
                let secs = rep_seconds(r);
                let (m, _) = mean_sd(&secs);
                // The time per unit at the mean rate shown beside it, not the mean of each
                // repetition's time (which is not its reciprocal when repetitions differ).
                let shown = units::rate(r.throughput.mean).parse::<f64>().unwrap_or(0.0);
                let per = if shown > 0.0 { 1e3 / shown } else { f64::NAN };
                let (_, per_sd) = mean_sd(&rep_ms_per(r, u.scale()));
                let mut op = operation(&r.test);
                // The same test at the same file size ran with other records, threads or
                // depths: the operation's name tells them apart.
                if variants
                    .get(&(r.test.as_str(), r.file_size))
                    .copied()
                    .unwrap_or(0)
                    > 1
                {
                    op.push_str(&format!(" {}", units::size(r.record_size)));
                    op.push_str(&view::counts(r.threads, r.iodepth));
                }
                let key = [device.clone(), s.filesystem.clone(), units::size_long(size)];
                let mut lead = key.clone();
                if blank_repeats {
                    // A cell is blanked only when everything to its left is blank too.
                    for i in 0..3 {
                        if key[..=i] == last[..=i] {
                            lead[i] = String::new();
                        }
                    }
                }
                last = key;
                let n = secs.len();
                let [d, f, z] = lead;
                g.push(vec![
                    d,
                    f,
                    z,
                    op,
                    units::rate(r.throughput.mean),
                    if per.is_finite() {
                        format!("{per:.3}")
                    } else {
                        "-".into()
                    },
                    if n >= 2 {
                        format!("{per_sd:.3}")
                    } else {
                        "-".into()
                    },
                    format!("{m:.4}"),
                    format!("{:.4}", secs.iter().sum::<f64>()),
                    n.to_string(),
                    amplification(r),
                    view::verdict_cell(r),
                ]);
            }
        }
    }
    g
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: f64 = (1u64 << 20) as f64;

    #[test]
    fn repetition_time_comes_from_samples_when_reps_are_missing() {
        let mut r = TestResult {
            file_size: 100 << 20,
            threads: 1,
            ..Default::default()
        };
        r.throughput.samples = vec![100.0 * (1 << 20) as f64, 50.0 * (1 << 20) as f64];
        assert_eq!(rep_seconds(&r), vec![1.0, 2.0]);
        assert_eq!(rep_ms_per(&r, MIB), vec![10.0, 20.0]);
    }

    #[test]
    fn time_per_mib_counts_every_thread_bytes() {
        let r = TestResult {
            file_size: 50 << 20,
            threads: 2,
            reps: vec![
                candor_model::Repetition {
                    bytes: 100 << 20,
                    seconds: 0.5,
                    ..Default::default()
                },
                candor_model::Repetition {
                    bytes: 0,
                    seconds: 1.0,
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        assert_eq!(rep_ms_per(&r, MIB), vec![5.0, 10.0]);
    }
}
