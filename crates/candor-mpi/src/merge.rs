//! One test's results from every rank, merged into one result as IOR counts them: the
//! aggregate bandwidth of a repetition is all ranks' bytes over the span from the earliest
//! start to the latest end (on rank 0's clock). Latency histograms merge by summing bucket
//! counts, which makes the merged percentiles exactly those of one histogram of every rank's
//! samples; means and variances combine exactly (Chan et al.). What each rank did is kept
//! beside the merged figures (`TestResult::ranks`), with the spread between ranks.

use crate::clock::to_rank0;
use candor_model::{Cpu, HistogramDump, Latency, Repetition, TestResult};
use candor_model::{DiskDelta, Facts, Intent, RequestStat, Witness};
pub use candor_model::{Moments, NodeFigures, NodeTraffic, RankFigures, Spread};
use candor_stats::{summarize, Welford};
use candor_witness::combine;
use std::collections::BTreeMap;

/// A rank lags when its throughput is below this share of the median rank's.
pub const LAG_SHARE: f64 = 0.9;

/// One rank's result of one test, with what is needed to put its times on rank 0's clock.
#[derive(Clone, Debug)]
pub struct RankPart {
    pub rank: u32,
    /// Index into the node names.
    pub node: u32,
    /// The rank's runner clock at the start of its run (`Repetition::started_s` counts from it).
    pub t0_ns: u64,
    /// The rank's clock minus rank 0's.
    pub offset_ns: i64,
    pub result: TestResult,
}

/// The split of a node's combined witness; None when it kept no facts.
pub fn node_traffic(w: &Witness) -> Option<NodeTraffic> {
    let f = w.extra.facts.as_ref()?;
    if !matches!(f.placement, candor_model::Placement::Device { .. }) {
        return None;
    }
    let a = candor_witness::rules::attribute(f);
    Some(NodeTraffic {
        own_read_bytes: a.own_read,
        own_write_bytes: a.own_write_total,
        foreign_bytes: a.foreign_read + a.foreign_write,
        disturbed: w.disturbed,
        exact: a.exact,
    })
}

fn rate(bytes: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        bytes as f64 / secs
    } else {
        0.0
    }
}

/// Width of the histogram bucket whose lower bound is `lo` (candor-stats' log-linear layout:
/// exact below 128, then 64 buckets per power of two).
fn bucket_width(lo: u64) -> u64 {
    if lo < 128 {
        1
    } else {
        1u64 << (63 - lo.leading_zeros() - 6)
    }
}

/// Merges latency figures and histograms of several ranks. Bucket counts add, so the
/// merged percentiles are those of one histogram holding every rank's samples: the bucket
/// midpoint, clamped to the true minimum and maximum (which each rank kept exactly).
pub fn merge_latency(parts: &[(&Latency, &HistogramDump)]) -> (Latency, HistogramDump) {
    let mut buckets: BTreeMap<u64, u64> = BTreeMap::new();
    let mut relative_error = 0.0f64;
    let mut sum = 0.0f64;
    let mut min = u64::MAX;
    let mut max = 0u64;
    // Ranks that timed a sample of their operations keep the merged figure a sample.
    let sampled_every = parts.iter().filter_map(|(l, _)| l.sampled_every).max();
    for (lat, dump) in parts {
        for &[lo, n] in &dump.buckets {
            *buckets.entry(lo).or_default() += n;
        }
        relative_error = relative_error.max(dump.relative_error);
        if lat.count > 0 {
            sum += lat.mean * lat.count as f64;
            min = min.min(lat.min);
            max = max.max(lat.max);
        }
    }
    let total: u64 = buckets.values().sum();
    let quantile = |q: f64| -> u64 {
        if total == 0 {
            return 0;
        }
        let want = ((q * total as f64).ceil() as u64).max(1);
        let mut seen = 0u64;
        for (&lo, &n) in &buckets {
            seen += n;
            if seen >= want {
                return (lo + bucket_width(lo) / 2).clamp(min.min(max), max);
            }
        }
        max
    };
    let lat = Latency {
        min: if total == 0 { 0 } else { min },
        mean: if total == 0 { 0.0 } else { sum / total as f64 },
        p50: quantile(0.50),
        p90: quantile(0.90),
        p99: quantile(0.99),
        p999: quantile(0.999),
        max,
        count: total,
        sampled_every,
    };
    let dump = HistogramDump {
        relative_error,
        buckets: buckets.into_iter().map(|(lo, n)| [lo, n]).collect(),
    };
    (lat, dump)
}

/// Combines witnesses of ranks that ran at the same time (`(node, witness)` in rank
/// order). The witness's own `combine` sums repetitions that ran one after another; ranks
/// run side by side, so: the application bytes of every rank add up; the time is the
/// longest rank's (not the sum), with a headline of all ranks' bytes over it; and what a
/// rank sees of its whole node is counted once per node, because every rank on a node sees
/// it (its neighbours' I/O would otherwise be counted several times and taken for another
/// process's): the device and system counters, the other processes' counters, and with
/// eBPF the kernel threads' requests (journal: their bytes and their count, so the
/// operations are reconciled with every request once) and the foreign ones. Of the node's ranks,
/// the one whose window saw the most (each field's largest delta) is taken: the windows all
/// open before the common release, and the one that closed last covers every rank's I/O on
/// that node. What each rank saw of the job's other ranks (`job_io`, `exact.job_bytes`) is
/// their own traffic, which the merge counts as theirs: it is dropped.
pub fn combine_parallel(ws: Vec<(u32, Witness)>) -> Option<Witness> {
    let facts: Vec<Option<Facts>> = ws.iter().map(|(_, w)| w.extra.facts.clone()).collect();
    let mut node_device: BTreeMap<u32, NodeWide> = BTreeMap::new();
    let (mut app_bytes, mut timed, mut window, mut total) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
    // The ranks flush side by side too: the longest flush, like the longest timing.
    let mut flush = 0.0f64;
    // Threads side by side add up (the CPU-bound rule divides every rank's CPU by them).
    let mut threads = 0u32;
    for ((node, _), f) in ws.iter().zip(&facts) {
        let Some(f) = f else { continue };
        threads += f.threads.max(1);
        app_bytes += f.headline_bps * f.timed_seconds;
        timed = timed.max(f.timed_seconds);
        flush = flush.max(f.flush_seconds);
        window = window.max(f.window_seconds);
        total = total.max(f.total_seconds);
        node_device.entry(*node).or_default().widen(f);
    }
    let mut seen: Vec<u32> = Vec::new();
    let mut out = Vec::with_capacity(ws.len());
    for (k, ((node, mut w), f)) in ws.into_iter().zip(facts).enumerate() {
        let first_on_node = !seen.contains(&node);
        if first_on_node {
            seen.push(node);
        }
        if let Some(mut f) = f {
            if k == 0 {
                f.timed_seconds = timed;
                f.window_seconds = window;
                f.total_seconds = total;
                f.headline_bps = if timed > 0.0 { app_bytes / timed } else { 0.0 };
                f.threads = threads;
                f.flush_seconds = flush;
            } else {
                f.timed_seconds = 0.0;
                f.flush_seconds = 0.0;
                f.headline_bps = 0.0;
                f.window_seconds = 0.0;
                f.total_seconds = 0.0;
            }
            let wide = node_device.get(&node).cloned().unwrap_or_default();
            wide.apply(&mut f, first_on_node);
            if !first_on_node {
                // The disk under a loop device's file, like the device, once per node.
                if let Some(l) = f.loop_device.as_mut() {
                    l.backing_window = l.backing_window.map(|_| DiskDelta::default());
                }
                w.vmstat.clear();
                w.io_pressure_us = w.io_pressure_us.map(|_| [0, 0]);
            }
            w.extra.facts = Some(f);
        }
        out.push(w);
    }
    combine(out)
}

/// What every rank on a node sees of the whole node, widest over the node's ranks.
#[derive(Clone, Debug, Default)]
struct NodeWide {
    device_window: DiskDelta,
    device_total: DiskDelta,
    others_io: Option<[u64; 2]>,
    /// eBPF: kernel threads' bytes ([read window, read total, write window, write total])
    /// and foreign bytes.
    kernel: [u64; 4],
    foreign: u64,
    /// eBPF: the kernel threads' requests of the timed region ([read, write]), those of the
    /// rank that counted the most.
    kernel_requests: [RequestStat; 2],
}

/// `a - b` for a request count of which `b` is a part (bucket by bucket for the latency).
fn without(a: &RequestStat, b: &RequestStat) -> RequestStat {
    let mut less: BTreeMap<u64, u64> = b.latency.buckets.iter().map(|x| (x[0], x[1])).collect();
    let buckets = a
        .latency
        .buckets
        .iter()
        .filter_map(|x| {
            let n = x[1].saturating_sub(less.remove(&x[0]).unwrap_or(0));
            (n > 0).then_some([x[0], n])
        })
        .collect();
    RequestStat {
        count: a.count.saturating_sub(b.count),
        bytes: a.bytes.saturating_sub(b.bytes),
        latency: HistogramDump {
            relative_error: a.latency.relative_error,
            buckets,
        },
    }
}

impl NodeWide {
    fn widen(&mut self, f: &Facts) {
        self.device_window = self.device_window.widest(&f.device_window);
        self.device_total = self.device_total.widest(&f.device_total);
        if let Some(o) = f.others_io {
            let w = self.others_io.get_or_insert([0, 0]);
            w[0] = w[0].max(o[0]);
            w[1] = w[1].max(o[1]);
        }
        if let Some(e) = f.exact {
            let k = [
                e.kernel_read_window,
                e.kernel_read_total,
                e.kernel_write_window,
                e.kernel_write_total,
            ];
            for (a, b) in self.kernel.iter_mut().zip(k) {
                *a = (*a).max(b);
            }
            self.foreign = self.foreign.max(e.foreign_bytes);
        }
        if let Some(r) = &f.requests {
            for (wide, k) in self
                .kernel_requests
                .iter_mut()
                .zip([&r.kernel_read, &r.kernel_write])
            {
                if k.count > wide.count {
                    *wide = k.clone();
                }
            }
        }
    }

    /// Puts the node's figures on its first rank and none on the others; every rank keeps
    /// its own bytes, and nothing of the job's other ranks.
    fn apply(&self, f: &mut Facts, first_on_node: bool) {
        let (dw, dt) = if first_on_node {
            (self.device_window, self.device_total)
        } else {
            Default::default()
        };
        f.device_window = dw;
        f.device_total = dt;
        // Other processes' counters: unknown on one rank leaves the node's unknown.
        if let Some(o) = f.others_io.as_mut() {
            *o = match (first_on_node, self.others_io) {
                (true, Some(w)) => w,
                _ => [0, 0],
            };
        }
        f.job_io = f.job_io.map(|_| [0, 0]);
        if let Some(e) = f.exact.as_mut() {
            let k = if first_on_node { self.kernel } else { [0; 4] };
            e.own_read_window = e.own_read_window.saturating_sub(e.kernel_read_window) + k[0];
            e.own_read_total = e.own_read_total.saturating_sub(e.kernel_read_total) + k[1];
            e.own_write_window = e.own_write_window.saturating_sub(e.kernel_write_window) + k[2];
            e.own_write_total = e.own_write_total.saturating_sub(e.kernel_write_total) + k[3];
            [
                e.kernel_read_window,
                e.kernel_read_total,
                e.kernel_write_window,
                e.kernel_write_total,
            ] = k;
            e.foreign_bytes = if first_on_node { self.foreign } else { 0 };
            e.job_bytes = 0;
        }
        // The requests: every rank's own, and the kernel threads' of the node on its first
        // rank only (each rank counted them all).
        if let Some(r) = f.requests.as_mut() {
            let [kr, kw] = if first_on_node {
                self.kernel_requests.clone()
            } else {
                Default::default()
            };
            r.read = without(&r.read, &r.kernel_read);
            r.read.add(&kr);
            r.write = without(&r.write, &r.kernel_write);
            r.write.add(&kw);
            r.kernel_read = kr;
            r.kernel_write = kw;
        }
    }
}

/// Welford state of a set of samples.
fn welford(samples: &[f64]) -> Welford {
    let mut w = Welford::default();
    for &x in samples {
        w.push(x);
    }
    w
}

/// Merges one test's results from every rank (`parts`, in rank order; the first is rank 0).
pub fn merge(parts: &[RankPart], node_names: &[String]) -> TestResult {
    let Some(first) = parts.first() else {
        return TestResult {
            status: candor_model::Status::Failed,
            error: Some("no rank reported this test".into()),
            ..Default::default()
        };
    };
    let node_name = |i: u32| node_names.get(i as usize).cloned().unwrap_or_default();
    let mut out = first.result.clone();
    let t0_root = to_rank0(first.t0_ns, first.offset_ns);
    // Seconds from rank 0's run start, on rank 0's clock.
    let on_root = |p: &RankPart, s: f64| -> f64 {
        (to_rank0(p.t0_ns, p.offset_ns) - t0_root) as f64 / 1e9 + s
    };
    let is_write = first.result.throughput_with_flush.is_some();

    if let Some(bad) = parts.iter().find(|p| !p.result.status.is_ok()) {
        out.status = candor_model::Status::Failed;
        out.error = Some(format!(
            "rank {} on {}: {}",
            bad.rank,
            node_name(bad.node),
            bad.result.error.clone().unwrap_or_else(|| "failed".into())
        ));
    }

    // ---- repetitions: the aggregate over the ranks' spans ----
    let n_reps = parts.iter().map(|p| p.result.reps.len()).min().unwrap_or(0);
    let mut reps = Vec::with_capacity(n_reps);
    let mut aggregate = Vec::with_capacity(n_reps);
    let mut sum_of_rates = Vec::with_capacity(n_reps);
    let mut skew = Vec::with_capacity(n_reps);
    for k in 0..n_reps {
        let mut start = f64::INFINITY;
        let mut last_start = f64::NEG_INFINITY;
        let (mut end, mut io_end, mut flush_end) = (0.0f64, 0.0f64, 0.0f64);
        let mut rep = Repetition::default();
        let mut rates = 0.0;
        for p in parts {
            let r = &p.result.reps[k];
            let s = on_root(p, r.started_s);
            start = start.min(s);
            last_start = last_start.max(s);
            end = end.max(s + r.seconds);
            io_end = io_end.max(s + r.io_seconds);
            flush_end = flush_end.max(s + r.io_seconds + r.flush_seconds);
            rep.bytes += r.bytes;
            rep.ops += r.ops;
            rep.close_seconds = rep.close_seconds.max(r.close_seconds);
            rep.truncated |= r.truncated;
            rates += rate(r.bytes, r.seconds);
        }
        rep.started_s = start;
        rep.seconds = end - start;
        rep.io_seconds = io_end - start;
        rep.flush_seconds = (flush_end - io_end).max(0.0);
        aggregate.push(rate(rep.bytes, rep.seconds));
        sum_of_rates.push(rates);
        skew.push(last_start - start);
        reps.push(rep);
    }
    out.repetitions = reps.len() as u32;
    out.throughput = summarize(&aggregate);
    out.iops = summarize(
        &reps
            .iter()
            .map(|r| rate(r.ops, r.seconds))
            .collect::<Vec<_>>(),
    );
    if is_write {
        let without: Vec<f64> = reps.iter().map(|r| rate(r.bytes, r.io_seconds)).collect();
        let with: Vec<f64> = reps
            .iter()
            .map(|r| rate(r.bytes, r.io_seconds + r.flush_seconds))
            .collect();
        out.throughput_without_flush = Some(summarize(&without));
        out.throughput_with_flush = Some(summarize(&with));
    }
    out.reps = reps;

    // ---- latency: buckets summed ----
    let lat_parts: Vec<(&Latency, &HistogramDump)> = parts
        .iter()
        .map(|p| (&p.result.latency_ns, &p.result.latency_histogram))
        .collect();
    let (lat, dump) = merge_latency(&lat_parts);
    out.latency_ns = lat;
    out.latency_histogram = dump;

    // ---- CPU: every rank's time, over the longest wall time ----
    let mut cpu = Cpu::default();
    for p in parts {
        cpu.user_s += p.result.cpu.user_s;
        cpu.sys_s += p.result.cpu.sys_s;
        cpu.wall_s = cpu.wall_s.max(p.result.cpu.wall_s);
    }
    cpu.cpu_pct = if cpu.wall_s > 0.0 {
        100.0 * (cpu.user_s + cpu.sys_s) / cpu.wall_s
    } else {
        0.0
    };
    out.cpu = cpu;
    // Thread figures are per rank; the rank spread below replaces them.
    out.thread_aggregate = None;

    // ---- the witness: every rank's facts combined, and per node ----
    out.witness = combine_parallel(
        parts
            .iter()
            .filter_map(|p| p.result.witness.clone().map(|w| (p.node, w)))
            .collect(),
    );

    // ---- per rank ----
    let mut per_rank = Vec::with_capacity(parts.len());
    let mut moments = Welford::default();
    for p in parts {
        let r = &p.result;
        let rates: Vec<f64> = r
            .reps
            .iter()
            .take(n_reps)
            .map(|x| rate(x.bytes, x.seconds))
            .collect();
        moments.merge(&welford(&rates));
        let w = r.witness.as_ref();
        let full_ops = r
            .file_size
            .checked_div(r.record_size)
            .map_or(0, |n| n * r.threads as u64);
        per_rank.push(RankFigures {
            rank: p.rank,
            node: node_name(p.node),
            status: r.status,
            error: r.error.clone(),
            bytes: r.reps.iter().map(|x| x.bytes).sum(),
            ops: r.reps.iter().map(|x| x.ops).sum(),
            rep_bytes: r.reps.iter().map(|x| x.bytes).collect(),
            throughput: summarize(&rates),
            started_s: r.reps.iter().map(|x| on_root(p, x.started_s)).collect(),
            ended_s: r
                .reps
                .iter()
                .map(|x| on_root(p, x.started_s + x.seconds))
                .collect(),
            latency_ns: r.latency_ns.clone(),
            latency_histogram: r.latency_histogram.clone(),
            truncated: r.reps.iter().any(|x| x.truncated),
            // Stopped early but not by --runtime: another thread or rank finished first.
            stonewalled: r.thread_aggregate.as_ref().is_some_and(|t| t.stonewalled)
                || (full_ops > 0 && r.reps.iter().any(|x| !x.truncated && x.ops < full_ops)),
            verdict: w.map(|w| w.verdict),
            cache_hit_ratio: w.and_then(|w| w.cache_hit_ratio),
            write_amplification: w.and_then(|w| w.write_amplification),
            device_read_bytes: w.and_then(|w| w.device.as_ref()).map(|d| d.read_bytes),
            device_write_bytes: w.and_then(|w| w.device.as_ref()).map(|d| d.write_bytes),
        });
    }
    let by_rate = |a: &&RankFigures, b: &&RankFigures| {
        a.throughput
            .mean
            .partial_cmp(&b.throughput.mean)
            .unwrap_or(std::cmp::Ordering::Equal)
    };
    let slowest = per_rank.iter().min_by(by_rate).map(|f| f.rank);
    let fastest = per_rank.iter().max_by(by_rate).map(|f| f.rank);
    let mut means: Vec<f64> = per_rank.iter().map(|f| f.throughput.mean).collect();
    means.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    let median = if means.is_empty() {
        0.0
    } else if means.len() % 2 == 1 {
        means[means.len() / 2]
    } else {
        (means[means.len() / 2 - 1] + means[means.len() / 2]) / 2.0
    };
    let lagging: Vec<u32> = per_rank
        .iter()
        .filter(|f| f.throughput.mean < LAG_SHARE * median)
        .map(|f| f.rank)
        .collect();

    // ---- per node ----
    let mut notes = Vec::new();
    let mut per_node = Vec::new();
    let mut node_ids: Vec<u32> = parts.iter().map(|p| p.node).collect();
    node_ids.sort_unstable();
    node_ids.dedup();
    let reads = first
        .result
        .witness
        .as_ref()
        .is_some_and(|w| w.app.read_bytes > 0)
        || first.result.test.contains("read");
    let meant_device = first.result.intent == Intent::Device;
    for &n in &node_ids {
        let on_node: Vec<&RankPart> = parts.iter().filter(|p| p.node == n).collect();
        let w = combine_parallel(
            on_node
                .iter()
                .filter_map(|p| p.result.witness.clone().map(|w| (p.node, w)))
                .collect(),
        );
        let hit = w.as_ref().and_then(|w| w.cache_hit_ratio);
        let served = reads && meant_device && hit.is_some_and(|h| h > 0.5);
        if served {
            notes.push(format!(
                "on {} the reads were served by the page cache ({:.0}% hits), not the filesystem's storage: that node read data it held in memory; with one node per rank and --reorder a node reads what another wrote",
                node_name(n),
                hit.unwrap_or(0.0) * 100.0
            ));
        }
        per_node.push(NodeFigures {
            node: node_name(n),
            ranks: on_node.iter().map(|p| p.rank).collect(),
            verdict: w.as_ref().map(|w| w.verdict),
            cache_hit_ratio: hit,
            served_by_cache: served,
            traffic: w.as_ref().and_then(node_traffic),
        });
    }

    let spread = Spread {
        ranks: parts.len() as u32,
        nodes: node_ids.len() as u32,
        aggregate_bps: aggregate,
        sum_of_rank_bps: sum_of_rates,
        start_skew_s: skew,
        rank_throughput: Moments {
            mean: moments.mean(),
            stddev: moments.stddev(),
            n: moments.n,
        },
        slowest_rank: slowest,
        fastest_rank: fastest,
        lagging_ranks: lagging,
        per_rank,
        per_node,
        notes,
    };
    out.ranks = Some(spread);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use candor_model::{Status, Summary, Verdict};
    use candor_stats::Histogram;

    /// A small deterministic generator (xorshift), so the test needs no crate.
    fn samples(seed: u64, n: usize) -> Vec<u64> {
        let mut x = seed | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // Latencies from 50 ns to ~10 ms, skewed like real ones.
                50 + (x % 1000) * (x % 10_000) / 1000 * (1 + (x >> 60))
            })
            .collect()
    }

    fn hist(v: &[u64]) -> Histogram {
        let mut h = Histogram::new();
        for &x in v {
            h.record(x);
        }
        h
    }

    #[test]
    fn merged_percentiles_are_those_of_the_concatenated_samples() {
        let ranks: Vec<Vec<u64>> = (0..4)
            .map(|r| samples(r + 7, 5_000 + r as usize * 997))
            .collect();
        let all: Vec<u64> = ranks.iter().flatten().copied().collect();
        let whole = hist(&all);
        let hs: Vec<Histogram> = ranks.iter().map(|v| hist(v)).collect();
        let lats: Vec<Latency> = hs.iter().map(|h| h.latency()).collect();
        let dumps: Vec<HistogramDump> = hs.iter().map(|h| h.dump()).collect();
        let parts: Vec<(&Latency, &HistogramDump)> = lats.iter().zip(&dumps).collect();
        let (merged, dump) = merge_latency(&parts);
        // Bit for bit what one histogram of every sample says.
        assert_eq!(merged.p50, whole.quantile(0.50));
        assert_eq!(merged.p90, whole.quantile(0.90));
        assert_eq!(merged.p99, whole.quantile(0.99));
        assert_eq!(merged.p999, whole.quantile(0.999));
        assert_eq!(
            (merged.min, merged.max, merged.count),
            (whole.min(), whole.max(), whole.count())
        );
        assert!((merged.mean - whole.mean()).abs() <= whole.mean() * 1e-12);
        assert_eq!(dump, whole.dump());
        // And within the histogram's bound of the exact sample percentiles.
        let mut sorted = all.clone();
        sorted.sort_unstable();
        for (q, got) in [(0.5, merged.p50), (0.9, merged.p90), (0.99, merged.p99)] {
            let exact = sorted[((q * sorted.len() as f64).ceil() as usize).max(1) - 1] as f64;
            let err = (got as f64 - exact).abs() / exact;
            assert!(err <= dump.relative_error * 2.0, "q{q}: {got} vs {exact}");
        }
    }

    fn part(rank: u32, node: u32, t0: u64, offset: i64, reps: &[(f64, f64, u64)]) -> RankPart {
        let lat = hist(&samples(rank as u64 + 1, 100));
        RankPart {
            rank,
            node,
            t0_ns: t0,
            offset_ns: offset,
            result: TestResult {
                test: "write".into(),
                status: candor_model::Status::Ok,
                intent: candor_model::Intent::Device,
                throughput_with_flush: Some(Summary::default()),
                reps: reps
                    .iter()
                    .map(|&(started_s, seconds, bytes)| Repetition {
                        bytes,
                        ops: bytes / 4096,
                        seconds,
                        io_seconds: seconds,
                        started_s,
                        ..Default::default()
                    })
                    .collect(),
                latency_ns: lat.latency(),
                latency_histogram: lat.dump(),
                ..Default::default()
            },
        }
    }

    #[test]
    fn the_aggregate_is_all_bytes_over_the_earliest_start_to_the_latest_end() {
        // Rank 1 is on another node whose clock runs 5 s ahead of rank 0's, and started its
        // run 2 s (its clock) later. Its repetition starts 0.1 s after rank 0's, on rank 0's
        // clock, and ends last.
        let g = 1_000_000_000u64;
        let parts = vec![
            part(0, 0, 10 * g, 0, &[(1.0, 1.0, 100 << 20)]),
            part(1, 1, 17 * g, 5_000_000_000, &[(-0.9, 1.5, 60 << 20)]),
        ];
        let names = vec!["a".to_string(), "b".to_string()];
        let r = merge(&parts, &names);
        let rep = &r.reps[0];
        assert_eq!(rep.bytes, 160 << 20);
        assert!((rep.started_s - 1.0).abs() < 1e-9);
        assert!((rep.seconds - 1.6).abs() < 1e-9, "{}", rep.seconds);
        let want = (160u64 << 20) as f64 / 1.6;
        assert!((r.throughput.mean - want).abs() < 1e-3);
        let s: Spread = r.ranks.clone().unwrap();
        assert_eq!((s.ranks, s.nodes), (2, 2));
        assert!((s.start_skew_s[0] - 0.1).abs() < 1e-9);
        assert_eq!(s.slowest_rank, Some(1));
        assert_eq!(s.fastest_rank, Some(0));
        assert_eq!(s.lagging_ranks, vec![1]);
        assert!((s.per_rank[1].ended_s[0] - 2.6).abs() < 1e-9);
        let expect_sum = (100u64 << 20) as f64 + (60u64 << 20) as f64 / 1.5;
        assert!((s.sum_of_rank_bps[0] - expect_sum).abs() < 1e-3);
        // The ranks' rates combine exactly: two samples.
        assert_eq!(s.rank_throughput.n, 2);
        assert!((s.rank_throughput.mean - expect_sum / 2.0).abs() < 1e-3);
    }

    #[test]
    fn a_failed_rank_fails_the_merged_test_and_says_which() {
        let mut parts = vec![
            part(0, 0, 0, 0, &[(0.0, 1.0, 1 << 20)]),
            part(1, 0, 0, 0, &[]),
        ];
        parts[1].result.status = candor_model::Status::Failed;
        parts[1].result.error = Some("write x: No space left on device".into());
        let r = merge(&parts, &["n0".to_string()]);
        assert_eq!(r.status, Status::Failed);
        assert_eq!(
            r.error.as_deref(),
            Some("rank 1 on n0: write x: No space left on device")
        );
        assert!(r.reps.is_empty(), "no repetition is complete on every rank");
    }

    fn witness(app_write: u64, device_write: u64, seconds: f64) -> Witness {
        let mib = 1u64 << 20;
        let dev = DiskDelta {
            write_bytes: device_write * mib,
            write_ios: device_write,
            ..Default::default()
        };
        let f = Facts {
            test: "write".into(),
            intent: candor_model::Intent::Device,
            is_write: true,
            app_write: app_write * mib,
            timed_seconds: seconds,
            headline_bps: (app_write * mib) as f64 / seconds,
            device_window: dev,
            device_total: dev,
            window_seconds: seconds,
            total_seconds: seconds,
            repetitions: 1,
            flush_seconds: seconds / 2.0,
            flush_in_timing: true,
            ..Default::default()
        };
        let mut w = Witness::default();
        w.extra.facts = Some(f);
        w
    }

    #[test]
    fn side_by_side_ranks_count_a_node_device_once_and_every_rank_bytes() {
        // Ranks 0 and 1 share node 0: each wrote 100 MiB; rank 1's window, which closed
        // last, saw the node's 200 MiB, rank 0's only 190.
        // Rank 2 is alone on node 1 and wrote 100 MiB, which its device saw.
        let ws = vec![
            (0, witness(100, 190, 1.0)),
            (0, witness(100, 200, 1.1)),
            (1, witness(100, 100, 0.9)),
        ];
        let w = combine_parallel(ws).unwrap();
        let f = w.extra.facts.clone().unwrap();
        let mib = 1u64 << 20;
        assert_eq!(f.app_write, 300 * mib, "every rank's bytes");
        assert_eq!(
            f.device_total.write_bytes,
            300 * mib,
            "node 0 once, node 1 once"
        );
        assert!(
            (f.timed_seconds - 1.1).abs() < 1e-12,
            "the longest rank, not a sum"
        );
        assert!((f.headline_bps - (300 * mib) as f64 / 1.1).abs() < 1.0);
        assert_eq!(f.threads, 3, "the ranks' threads side by side");
        assert!(
            (f.flush_seconds - 0.55).abs() < 1e-12,
            "the longest flush, not a sum: {}",
            f.flush_seconds
        );
    }

    fn device() -> candor_model::Placement {
        candor_model::Placement::Device { name: "vda".into() }
    }

    #[test]
    fn ranks_of_one_node_are_the_job_own_traffic_never_foreign() {
        let mib = 1u64 << 20;
        // eBPF: two ranks on node 0 wrote 100 MiB each; each saw its own 100 MiB, the
        // journal's 2 MiB (kernel threads) and the other rank's 100 MiB (the job's); rank
        // 0's window also saw 1 MiB of a stranger, rank 1's (which closed last) 3 MiB.
        let exact = |foreign: u64| {
            let mut w = witness(100, 205, 1.0);
            let f = w.extra.facts.as_mut().unwrap();
            f.placement = device();
            f.exact = Some(candor_model::Exact {
                own_write_window: 102 * mib,
                own_write_total: 102 * mib,
                kernel_write_window: 2 * mib,
                kernel_write_total: 2 * mib,
                job_bytes: 100 * mib,
                foreign_bytes: foreign * mib,
                ..Default::default()
            });
            w
        };
        let each = [exact(1), exact(3)];
        for w in &each {
            let j = candor_witness::rules::judge(w.extra.facts.as_ref().unwrap());
            assert_eq!(
                j.foreign_device_bytes,
                w.extra.facts.as_ref().unwrap().exact.unwrap().foreign_bytes
            );
        }
        let w = combine_parallel(vec![(0, each[0].clone()), (0, each[1].clone())]).unwrap();
        let t = node_traffic(&w).unwrap();
        assert_eq!(
            t.own_write_bytes,
            202 * mib,
            "both ranks' bytes and the journal once"
        );
        assert_eq!(t.foreign_bytes, 3 * mib, "the stranger, once");
        assert!(t.exact && t.disturbed);
        assert_eq!(w.write_amplification, Some(1.01));
        // Without the stranger the node is quiet.
        let quiet = |w: &Witness| {
            let mut w = w.clone();
            w.extra
                .facts
                .as_mut()
                .unwrap()
                .exact
                .as_mut()
                .unwrap()
                .foreign_bytes = 0;
            w
        };
        let w = combine_parallel(vec![(0, quiet(&each[0])), (0, quiet(&each[1]))]).unwrap();
        assert!(!w.disturbed, "{}", w.explanation);
        assert_eq!(node_traffic(&w).unwrap().foreign_bytes, 0);

        // procfs: the device wrote 201 MiB; each rank's own io counters explain its 100,
        // the other rank's the other 100, and nothing else moved.
        let procfs = |others: u64| {
            let mut w = witness(100, 201, 1.0);
            let f = w.extra.facts.as_mut().unwrap();
            f.placement = device();
            f.own_total = Some(candor_model::ProcessIo {
                write_bytes: 100 * mib,
                ..Default::default()
            });
            f.job_io = Some([0, 100 * mib]);
            f.others_io = Some([0, others]);
            w
        };
        for w in [procfs(0), procfs(0)] {
            assert!(!candor_witness::rules::judge(w.extra.facts.as_ref().unwrap()).disturbed);
        }
        let w = combine_parallel(vec![(0, procfs(0)), (0, procfs(0))]).unwrap();
        let t = node_traffic(&w).unwrap();
        assert!(!w.disturbed, "{}", w.explanation);
        assert_eq!(
            (t.own_write_bytes, t.foreign_bytes, t.exact),
            (201 * mib, 0, false)
        );
        // A stranger that wrote 20 MiB (seen by both ranks) is foreign once.
        let mut a = procfs(20 * mib);
        a.extra.facts.as_mut().unwrap().device_total.write_bytes = 221 * mib;
        let w = combine_parallel(vec![(0, a), (0, procfs(20 * mib))]).unwrap();
        let t = node_traffic(&w).unwrap();
        assert!(w.disturbed);
        assert_eq!(t.foreign_bytes, 20 * mib);
    }

    #[test]
    fn the_kernel_threads_requests_count_once_per_node() {
        let mib = 1u64 << 20;
        let lat = |b: &[(u64, u64)]| HistogramDump {
            relative_error: 0.25,
            buckets: b.iter().map(|&(lo, n)| [lo, n]).collect(),
        };
        // Each rank wrote 4 MiB in 1024 O_DIRECT 4 KiB writes, each its own request of
        // about 40 us; every rank's window also saw the journal's requests on its node
        // (about 160 us each): 12 on node 0 (rank 1's window, which closed last; rank 0's
        // saw 10 of them), 5 on node 1.
        let rank = |journal: u64| {
            let mut w = witness(4, 4, 1.0);
            let f = w.extra.facts.as_mut().unwrap();
            f.placement = device();
            f.direct = true;
            f.ops = Some(candor_model::OpFacts {
                count: 1024,
                latency: lat(&[(40960, 1024)]),
            });
            let kernel = RequestStat {
                count: journal,
                bytes: journal * 16384,
                latency: lat(&[(163840, journal)]),
            };
            let mut write = RequestStat {
                count: 1024,
                bytes: 4 * mib,
                latency: lat(&[(32768, 1024)]),
            };
            write.add(&kernel);
            f.requests = Some(candor_model::RequestFacts {
                write,
                kernel_write: kernel,
                ..Default::default()
            });
            w
        };
        let w = combine_parallel(vec![(0, rank(10)), (0, rank(12)), (1, rank(5))]).unwrap();
        let r = w.extra.facts.as_ref().unwrap().requests.clone().unwrap();
        // Every rank's own 1024, and the journal's once per node: 12 + 5, not 10 + 12 + 5.
        assert_eq!(r.write.count, 3 * 1024 + 12 + 5);
        assert_eq!(r.write.bytes, 3 * 4 * mib + 17 * 16384);
        assert_eq!(r.kernel_write.count, 17);
        assert_eq!(r.write.latency.count(), r.write.count);
        assert_eq!(
            r.write.latency.buckets,
            vec![[32768, 3 * 1024], [163840, 17]]
        );
        // And so the operations are reconciled with every request once.
        let o = w.operations.expect("operations");
        assert_eq!((o.ops, o.requests), (3 * 1024, 3 * 1024 + 17));
        // A rank alone keeps its journal.
        let one = combine_parallel(vec![(0, rank(10))]).unwrap();
        let r = one.extra.facts.unwrap().requests.unwrap();
        assert_eq!((r.write.count, r.kernel_write.count), (1034, 10));
    }

    #[test]
    fn a_rank_that_moved_nothing_does_not_make_the_test_unverified() {
        // Rank 1 was stopped (a stonewall) before its first operation; rank 0 wrote 100 MiB.
        let on_device = |w: Witness| {
            let mut w = w;
            w.extra.facts.as_mut().unwrap().placement = device();
            let f = w.extra.facts.clone().unwrap();
            candor_witness::facts::apply(&f, &mut w);
            w
        };
        let idle = on_device(witness(0, 0, 1.0));
        assert_eq!(idle.verdict, Verdict::Unverified);
        for ws in [
            vec![(0, on_device(witness(100, 100, 1.0))), (0, idle.clone())],
            vec![(0, idle.clone()), (1, on_device(witness(100, 100, 1.0)))],
        ] {
            let w = combine_parallel(ws).unwrap();
            assert_eq!(w.verdict, Verdict::Device, "{}", w.explanation);
            assert_eq!(w.unverified_reason, None);
        }
    }

    #[test]
    fn bucket_widths_follow_the_histogram() {
        // Every value lands in the bucket whose [lo, lo + width) holds it.
        for v in [0u64, 5, 127, 128, 129, 1000, 65_535, 1 << 40, u64::MAX / 3] {
            let h = hist(&[v]);
            let lo = h.dump().buckets[0][0];
            assert!(lo <= v && v < lo + bucket_width(lo), "{v}: lo {lo}");
        }
    }
}
