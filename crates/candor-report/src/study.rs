//! The per-device, per-filesystem table of a study: for each device, filesystem and file size,
//! one row per operation with its throughput (MiB/s), the mean time of one repetition, the
//! standard deviation of that time and the total time of all repetitions. It is what people
//! comparing filesystems on several disks tabulate by hand; `candor compare` and multi-target
//! runs print it.

use crate::grid::{Align, Grid};
use crate::units;
use candor_model::{TargetInfo, TestResult};

/// Results of one filesystem on one device.
pub struct StudySide<'a> {
    /// What the device is called in the table ("vda: QEMU HARDDISK, SSD").
    pub device: String,
    /// "ext4" or the side's name when the filesystem is unknown.
    pub filesystem: String,
    pub results: Vec<&'a TestResult>,
}

/// Device and filesystem labels of a target.
pub fn labels(t: Option<&TargetInfo>, fallback: &str) -> (String, String) {
    let fs = t
        .map(|t| t.fs_type.clone())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| fallback.to_string());
    let dev = match t.and_then(|t| t.device.as_ref()) {
        Some(d) => {
            // A loop, dm or md device is grouped under the disk(s) beneath it, so filesystems
            // made side by side on one disk appear under that disk.
            let beneath: Vec<&str> = d
                .counted
                .iter()
                .filter(|c| **c != d.name)
                .map(|c| c.as_str())
                .collect();
            let name = if beneath.is_empty() {
                d.name.clone()
            } else {
                beneath.join("+")
            };
            let kind = if d.rotational { "HDD" } else { "SSD" };
            if d.model.is_empty() {
                format!("{name} ({kind})")
            } else {
                format!("{name} ({}, {kind})", d.model)
            }
        }
        None => "no block device".to_string(),
    };
    (dev, fs)
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
    let bytes = r.file_size as f64 * r.threads.max(1) as f64;
    r.throughput
        .samples
        .iter()
        .filter(|s| **s > 0.0)
        .map(|s| bytes / s)
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

/// The study table as text (or Markdown): one header row per device / filesystem / file size
/// block, then its operations.
pub fn grid(sides: &[StudySide]) -> Grid {
    let mut g = Grid::new(&[
        ("operation", Align::Left),
        ("MiB/s", Align::Right),
        ("mean time s", Align::Right),
        ("std dev s", Align::Right),
        ("total s", Align::Right),
        ("reps", Align::Right),
    ]);
    let mut devices: Vec<&str> = Vec::new();
    for s in sides {
        if !devices.contains(&s.device.as_str()) {
            devices.push(&s.device);
        }
    }
    for dev in devices {
        g.push(vec![format!("{dev}")]);
        for s in sides.iter().filter(|s| s.device == dev) {
            let mut sizes: Vec<u64> = s.results.iter().map(|r| r.file_size).collect();
            sizes.sort();
            sizes.dedup();
            for size in sizes {
                g.push(vec![format!(
                    "  {} {}",
                    s.filesystem,
                    units::size_long(size)
                )]);
                let mut rs: Vec<&&TestResult> =
                    s.results.iter().filter(|r| r.file_size == size).collect();
                rs.sort_by_key(|r| (rank(&r.test), r.record_size, r.threads, r.iodepth));
                for r in rs {
                    let secs = rep_seconds(r);
                    let (m, sd) = mean_sd(&secs);
                    let mut op = format!("    {}", operation(&r.test));
                    if rs_has_variants(&s.results, r) {
                        op.push_str(&format!(" {}", units::size(r.record_size)));
                        if r.threads > 1 {
                            op.push_str(&format!(" x{}", r.threads));
                        }
                        if r.iodepth > 1 {
                            op.push_str(&format!(" qd{}", r.iodepth));
                        }
                    }
                    g.push(vec![
                        op,
                        format!("{:.2}", r.throughput.mean / (1u64 << 20) as f64),
                        format!("{m:.4}"),
                        format!("{sd:.4}"),
                        format!("{:.4}", secs.iter().sum::<f64>()),
                        secs.len().to_string(),
                    ]);
                }
            }
        }
    }
    g
}

/// True when the same test at the same file size ran with other records, threads or depths,
/// so the operation name needs them to be told apart.
fn rs_has_variants(results: &[&TestResult], r: &TestResult) -> bool {
    results
        .iter()
        .filter(|o| o.test == r.test && o.file_size == r.file_size)
        .count()
        > 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repetition_time_comes_from_samples_when_reps_are_missing() {
        let mut r = TestResult {
            file_size: 100 << 20,
            threads: 1,
            ..Default::default()
        };
        r.throughput.samples = vec![100.0 * (1 << 20) as f64, 50.0 * (1 << 20) as f64];
        assert_eq!(rep_seconds(&r), vec![1.0, 2.0]);
    }
}
