//! Turns a snapshot delta into the result model's witness figures
//! (`candor_model::Witness::{syscalls, block, cache_misses, foreign_device_bytes}`).
//! Pure: the caller chooses the devices (the disk under the target).

use crate::snapshot::{Direction, Owner, Snapshot};
use crate::DevId;
use candor_model::{BlockStat, SyscallStat, Witness};
use std::collections::BTreeMap;

/// Per syscall name, the calls the tracked set made (names with no call are left out).
pub fn syscall_stats(d: &Snapshot) -> BTreeMap<String, SyscallStat> {
    d.syscalls
        .iter()
        .filter(|(_, s)| s.count > 0)
        .map(|(name, s)| {
            (
                name.clone(),
                SyscallStat {
                    count: s.count,
                    bytes: s.bytes,
                    time_ns: s.time_ns,
                    latency: s.latency.to_dump(),
                },
            )
        })
        .collect()
}

/// Per direction ("read", "write"), the block requests that completed on `devices` (all
/// when empty) for the tracked set, writeback done for it included.
pub fn block_stats(d: &Snapshot, devices: &[DevId]) -> BTreeMap<String, BlockStat> {
    let mut out = BTreeMap::new();
    for dir in [Direction::Read, Direction::Write] {
        let c = d.block_sum(devices, dir, Owner::is_own);
        if c.completions == 0 {
            continue;
        }
        let us = |q: f64| {
            c.latency
                .quantile(q)
                .map(|ns| ns as f64 / 1000.0)
                .unwrap_or(0.0)
        };
        out.insert(
            dir.as_str().to_string(),
            BlockStat {
                completions: c.completions,
                bytes: c.bytes,
                size_histogram: c.sizes.to_dump(),
                latency: c.latency.to_dump(),
                p50_us: us(0.5),
                p99_us: us(0.99),
            },
        );
    }
    out
}

/// Fills the eBPF figures of a witness from the delta over one test. Sets `source` to
/// "bpf"; verdict and explanation stay the witness's to decide. Details that have no
/// field of their own go into `extra` under `bpf_*` keys.
pub fn fill_witness(d: &Snapshot, devices: &[DevId], w: &mut Witness) {
    w.source = "bpf".to_string();
    w.syscalls = Some(syscall_stats(d));
    w.block = Some(block_stats(d, devices));
    w.cache_misses = Some(d.cache_misses);
    w.foreign_device_bytes = d.foreign_bytes(devices);
    let wb = d.block_sum(devices, Direction::Write, |o| o == Owner::Writeback);
    w.extra
        .insert("bpf_writeback_bytes".into(), serde_json::json!(wb.bytes));
    w.extra.insert(
        "bpf_kernel_thread_bytes".into(),
        serde_json::json!(d.kernel_bytes(devices)),
    );
    let job = d.job_bytes(devices);
    if job > 0 {
        w.extra
            .insert("bpf_job_bytes".into(), serde_json::json!(job));
    }
    let mut own = d.block_sum(devices, Direction::Read, Owner::is_own);
    own.add(&d.block_sum(devices, Direction::Write, Owner::is_own));
    if own.issues > 0 {
        w.extra.insert(
            "bpf_avg_queue_depth".into(),
            serde_json::json!(own.depth_sum as f64 / own.issues as f64),
        );
    }
    if own.queued > 0 {
        w.extra.insert(
            "bpf_avg_queue_us".into(),
            serde_json::json!(own.queue_ns as f64 / own.queued as f64 / 1000.0),
        );
    }
    if let Some(pf) = d.syscalls.get("page_fault") {
        w.extra
            .insert("bpf_page_faults".into(), serde_json::json!(pf.count));
    }
    if !d.lseek_offsets.is_empty() {
        w.extra.insert(
            "bpf_lseek_offsets".into(),
            serde_json::json!(d.lseek_offsets.to_dump().buckets),
        );
    }
    if d.completions_recovered > 0 {
        w.extra.insert(
            "bpf_completions_recovered".into(),
            serde_json::json!(d.completions_recovered),
        );
    }
    let diag = d.diagnostics;
    if diag != Default::default() {
        w.extra
            .insert("bpf_dropped".into(), serde_json::json!(diag));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::tests::raw_example;

    #[test]
    fn witness_gets_exact_figures() {
        let a = Snapshot::decode(&raw_example(0, 0, 0));
        let b = Snapshot::decode(&raw_example(4096, 16 << 20, 3 << 20));
        let d = b.delta(&a);
        let mut w = Witness::default();
        fill_witness(&d, &[], &mut w);
        assert_eq!(w.source, "bpf");
        let sys = w
            .syscalls
            .as_ref()
            .map(|s| s["write"].clone())
            .unwrap_or_default();
        assert_eq!(sys.count, 4096);
        assert_eq!(sys.bytes, 16 << 20);
        assert!(!w.syscalls.as_ref().is_some_and(|s| s.contains_key("read")));
        let blk = w
            .block
            .as_ref()
            .map(|b| b["write"].clone())
            .unwrap_or_default();
        assert_eq!(blk.bytes, 16 << 20);
        assert_eq!(blk.completions, 16);
        assert!((blk.p50_us - 500.0).abs() / 500.0 < 0.25, "{}", blk.p50_us);
        assert_eq!(w.foreign_device_bytes, 3 << 20);
        assert_eq!(w.extra["bpf_writeback_bytes"], serde_json::json!(16 << 20));
        assert_eq!(w.cache_misses, Some(0));
    }
}
