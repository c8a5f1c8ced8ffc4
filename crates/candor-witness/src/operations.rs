//! Operations against requests: from the runner's timing of every operation and the
//! device's requests (eBPF: the test's own, with their service times; procfs: diskstats'
//! counts and averages), how many of the test's operations waited on the device and how
//! many were served from memory. Pure; docs/witness.md, "Operations", gives the reasons.

use candor_model::Direction;
use candor_model::{Facts, HistogramDump, OpFacts, Operations, Placement};

/// An operation waited on the device when it took at least this share of the time the
/// fastest tenth of the device's requests took. A page-cache hit costs a few microseconds;
/// a request, even on a fast SSD, tens: half the fast end of the requests lies between.
pub const WAITED_FRACTION: f64 = 0.5;
/// The quantile of the requests' service times the boundary is taken from.
pub const FAST_REQUEST_QUANTILE: f64 = 0.10;

/// Lower bound of the log-linear bucket (four per power of two, as the eBPF programs
/// count) that holds `v`.
pub fn coarse_lower(v: u64) -> u64 {
    if v < 8 {
        return v;
    }
    let m = 63 - v.leading_zeros();
    let quarter = (v >> (m - 2)) & 3;
    (1u64 << m) + quarter * (1u64 << (m - 2))
}

/// The runner's fine histogram on the eBPF programs' scale (four buckets per power of
/// two), so operations and requests are compared bucket for bucket and the facts stay
/// small.
pub fn coarse(d: &HistogramDump) -> HistogramDump {
    let mut out: std::collections::BTreeMap<u64, u64> = Default::default();
    for &[lo, n] in &d.buckets {
        *out.entry(coarse_lower(lo)).or_default() += n;
    }
    HistogramDump {
        relative_error: d.relative_error.max(0.25),
        buckets: out.into_iter().map(|(k, v)| [k, v]).collect(),
    }
}

/// One direction's operations of a test that both reads and writes; None for a test that
/// moves one way only (its operations are `Facts::ops`).
pub fn direction_ops(o: &crate::Outcome, write: bool) -> Option<OpFacts> {
    let (r, w) = (o.read_op_latency.count(), o.write_op_latency.count());
    if r == 0 || w == 0 {
        return None;
    }
    let d = if write {
        &o.write_op_latency
    } else {
        &o.read_op_latency
    };
    Some(OpFacts {
        count: d.count(),
        latency: coarse(d),
    })
}

/// Middle of a saved bucket, ns.
fn mid(d: &HistogramDump, lo: u64) -> f64 {
    lo as f64 * (1.0 + d.relative_error / 2.0)
}

/// Operations whose bucket's middle is at or above `ns`.
fn at_least(d: &HistogramDump, ns: f64) -> u64 {
    d.buckets
        .iter()
        .filter(|x| mid(d, x[0]) >= ns)
        .map(|x| x[1])
        .sum()
}

/// How many of the operations `ops` were timed into its histogram: all of them, or a
/// sample (a copy with small buffers times about one read+write pair in 16). Shares of
/// the operations are shares of these.
fn timed(ops: &OpFacts) -> f64 {
    match ops.latency.count() {
        0 => ops.count as f64,
        n => n as f64,
    }
}

/// The q-quantile of a saved histogram, ns (the middle of its bucket).
pub fn quantile_ns(d: &HistogramDump, q: f64) -> Option<f64> {
    d.quantile_lower(q).map(|lo| mid(d, lo))
}

/// A buffered write was held back by the kernel (balance_dirty_pages pausing the writer
/// until writeback catches up) when it took at least this long beyond copying its bytes:
/// the kernel pauses a writer for whole clock ticks (1 to 10 ms), while a write into the
/// page cache costs microseconds.
pub const THROTTLED_MIN_NS: f64 = 1_000_000.0;
/// The copying allowed for: a slow memory copy of 1 byte per nanosecond (1 GB/s).
pub const SLOW_COPY_NS_PER_BYTE: f64 = 1.0;

/// The word the saved operations use for a direction ("both" for reads and writes).
fn word(d: Direction) -> &'static str {
    match d {
        Direction::Read => "read",
        Direction::Write => "write",
        Direction::Mixed | Direction::Unknown => "both",
    }
}

/// Which way the figure goes: reads, writes or both.
fn direction(f: &Facts) -> Direction {
    match (f.app_read > 0, f.app_write > 0) {
        (true, false) => Direction::Read,
        (false, true) => Direction::Write,
        _ => Direction::Mixed,
    }
}

/// How a test's writes reach the device: "direct" (O_DIRECT) and "sync" (O_SYNC, or
/// write(2) on a filesystem mounted `sync`) writes each wait for their own request;
/// "buffered" ones are copied into the page cache.
pub fn write_mode(f: &Facts) -> &'static str {
    if f.direct {
        "direct"
    } else if f.writes_through() {
        "sync"
    } else {
        "buffered"
    }
}

/// The operations of a test against the device's requests; None when the test counted no
/// operations or there is no device to compare with. A test that both reads and writes is
/// reconciled as a whole and, when the runner kept its directions apart, per direction.
pub fn reconcile(f: &Facts) -> Option<Operations> {
    let ops = f.ops.as_ref().filter(|o| o.count > 0)?;
    if !matches!(f.placement, Placement::Device { .. }) {
        return None;
    }
    let dir = direction(f);
    let mut o = one(f, dir, ops, f.app_read + f.app_write);
    if dir == Direction::Mixed {
        let r = f.read_ops.as_ref().filter(|o| o.count > 0);
        let w = f.write_ops.as_ref().filter(|o| o.count > 0);
        if let (Some(r), Some(w)) = (r, w) {
            o.reads = Some(Box::new(one(f, Direction::Read, r, f.app_read)));
            o.writes = Some(Box::new(one(f, Direction::Write, w, f.app_write)));
        }
    }
    Some(o)
}

/// The operations `ops` of one direction (or both), which moved `bytes`.
fn one(f: &Facts, dir: Direction, ops: &OpFacts, bytes: u64) -> Operations {
    let (reads, writes) = (dir != Direction::Write, dir != Direction::Read);
    let mut o = Operations {
        direction: word(dir).to_string(),
        ops: ops.count,
        op_bytes: bytes as f64 / ops.count as f64,
        op_p50_us: quantile_ns(&ops.latency, 0.5).unwrap_or(0.0) / 1000.0,
        cache_inserts: f.cache_inserts,
        ..Default::default()
    };
    let d = &f.device_window;
    if let Some(r) = &f.requests {
        // eBPF: the test's own requests and their service times.
        let mut lat = HistogramDump::default();
        let (mut n, mut bytes) = (0, 0);
        for (on, s) in [(reads, &r.read), (writes, &r.write)] {
            if on {
                n += s.count;
                bytes += s.bytes;
                lat.merge(&s.latency);
            }
        }
        o.requests = n;
        o.request_bytes = if n > 0 { bytes as f64 / n as f64 } else { 0.0 };
        o.service_basis = "ebpf".into();
        o.service_us = quantile_ns(&lat, 0.5).map(|ns| ns / 1000.0);
        o.basis = "latency".into();
        if n == 0 {
            o.waited_share = Some(0.0);
        } else if let Some(fast) = quantile_ns(&lat, FAST_REQUEST_QUANTILE) {
            let b = fast * WAITED_FRACTION;
            o.waited_above_us = Some(b / 1000.0);
            o.waited_share = Some(at_least(&ops.latency, b) as f64 / timed(ops));
        }
    } else {
        // diskstats: every process's requests, and only their mean service time. Each
        // operation that waited needed at least one request, so requests / operations
        // bounds the share from above.
        let (n, bytes, ms) = match dir {
            Direction::Read => (d.read_ios, d.read_bytes, d.read_ms),
            Direction::Write => (d.write_ios, d.write_bytes, d.write_ms),
            Direction::Mixed | Direction::Unknown => (
                d.read_ios + d.write_ios,
                d.read_bytes + d.write_bytes,
                d.read_ms + d.write_ms,
            ),
        };
        o.requests = n;
        o.request_bytes = if n > 0 { bytes as f64 / n as f64 } else { 0.0 };
        o.service_basis = "diskstats".into();
        o.service_us = (n > 0).then(|| ms as f64 * 1000.0 / n as f64);
        o.basis = "requests".into();
        o.waited_share = Some((n as f64 / ops.count as f64).min(1.0));
    }
    o.requests_per_op = o.requests as f64 / ops.count as f64;
    if dir == Direction::Write {
        let mode = write_mode(f);
        o.write_mode = Some(mode.to_string());
        if mode == "buffered" {
            buffered_writes(f, ops, &mut o);
        }
    }
    o.memory_share = o.waited_share.map(|w| 1.0 - w);
    o
}

/// Buffered writes are copied into the page cache and none waits for a request of its
/// own: the device's requests are the flushers'. A write waited on the device when the
/// kernel held it back until writeback caught up (an operation far slower than a copy);
/// the timed region's share spent waiting is those writes' time (per thread) plus the
/// runner's flush when the timing includes it.
fn buffered_writes(f: &Facts, ops: &OpFacts, o: &mut Operations) {
    let boundary = THROTTLED_MIN_NS + o.op_bytes * SLOW_COPY_NS_PER_BYTE;
    // The kernel holds writers back only while writeback runs: with no write reaching the
    // device in the timed region, slow writes were slowed by something else (the CPU
    // taken by another process, a page fault).
    let writeback = f.device_window.write_bytes > 0;
    let slow = |x: &&[u64; 2]| writeback && mid(&ops.latency, x[0]) >= boundary;
    let held: u64 = ops.latency.buckets.iter().filter(slow).map(|x| x[1]).sum();
    // A sampled histogram's times stand for all the operations.
    let scale = ops.count as f64 / timed(ops);
    let held_ns: f64 = scale
        * ops
            .latency
            .buckets
            .iter()
            .filter(slow)
            .map(|x| mid(&ops.latency, x[0]) * x[1] as f64)
            .sum::<f64>();
    o.basis = "throttle".into();
    o.waited_above_us = Some(boundary / 1000.0);
    o.waited_share = Some(held as f64 / timed(ops));
    let flush = if f.flush_in_timing {
        f.flush_seconds
    } else {
        0.0
    };
    let threads = f.threads.max(1) as f64;
    let held_s = held_ns / 1e9 / threads;
    // The time the shares are of: the timed region for a test that only writes; for a test
    // that also reads (randmix), the writes' own time (their operations, per thread, and
    // the flush), since the reads' time is theirs.
    let of = if f.app_read > 0 {
        let writes_ns: f64 = scale
            * ops
                .latency
                .buckets
                .iter()
                .map(|x| mid(&ops.latency, x[0]) * x[1] as f64)
                .sum::<f64>();
        writes_ns / 1e9 / threads + flush
    } else {
        f.timed_seconds
    };
    if of > 0.0 {
        o.waited_time_share = Some(((held_s + flush) / of).clamp(0.0, 1.0));
        o.flush_share = f.flush_in_timing.then(|| (flush / of).clamp(0.0, 1.0));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::*;
    use candor_model::RequestStat;

    #[test]
    fn coarse_buckets_are_the_ebpf_ones() {
        assert_eq!(coarse_lower(5), 5);
        assert_eq!(coarse_lower(8), 8);
        assert_eq!(coarse_lower(11), 10);
        assert_eq!(coarse_lower(1000), 896);
        assert_eq!(coarse_lower(1024), 1024);
        assert_eq!(coarse_lower(1279), 1024);
        assert_eq!(coarse_lower(1280), 1280);
        assert_eq!(coarse_lower(40_000), 32768);
        assert_eq!(coarse_lower(41_000), 40960);
        // The same lower bounds as the eBPF histograms' buckets.
        let h = candor_bpf::hist::Hist::new(candor_bpf::hist::Scale::LogLinear, vec![0; 256]);
        for v in [
            0u64,
            7,
            8,
            9,
            15,
            16,
            100,
            4095,
            4096,
            123_456,
            9_999_999_999,
        ] {
            assert_eq!(
                coarse_lower(v),
                h.lower(candor_bpf::hist::ll_bucket(v)),
                "{v}"
            );
        }
        let fine = HistogramDump {
            relative_error: 1.0 / 64.0,
            buckets: vec![[1000, 3], [1040, 4], [1300, 1]],
        };
        let c = coarse(&fine);
        assert_eq!(c.buckets, vec![[896, 3], [1024, 4], [1280, 1]]);
        assert_eq!(c.relative_error, 0.25);
    }

    #[test]
    fn ebpf_counts_the_operations_slower_than_half_the_fast_requests() {
        let o = reconcile(&random_read(Some(34000))).expect("operations");
        assert_eq!(o.direction, "read");
        assert_eq!((o.ops, o.requests), (65536, 34000));
        // The fastest tenth of the requests sit in the 20480 ns bucket (middle 23040 ns):
        // an operation of at least 11.52 us waited.
        assert_eq!(o.waited_above_us, Some(11.52));
        assert_eq!(o.waited_share, Some(30000.0 / 65536.0));
        assert_eq!(o.memory_share, Some(35536.0 / 65536.0));
        assert_eq!(o.basis, "latency");
        assert_eq!(o.service_basis, "ebpf");
        // The median request: 32768-ns bucket, middle 36864 ns.
        assert_eq!(o.service_us, Some(36.864));
        assert!((o.op_bytes - 4096.0).abs() < 1e-9);
        assert!((o.requests_per_op - 34000.0 / 65536.0).abs() < 1e-12);
    }

    #[test]
    fn a_sampled_histogram_gives_the_shares_of_the_operations_it_timed() {
        // The same reads with one in 16 timed: the histogram holds 4096 of the 65536
        // operations, in the same proportions, and the shares are the same.
        let mut f = random_read(Some(34000));
        f.ops = Some(OpFacts {
            count: 65536,
            latency: dump(&[(2048, 35536 / 16), (40960, 30000 / 16)]),
        });
        let o = reconcile(&f).expect("operations");
        assert_eq!(o.ops, 65536);
        assert_eq!(o.waited_share, Some(1875.0 / 4096.0));
        assert!((o.waited_share.unwrap() - 30000.0 / 65536.0).abs() < 1e-3);
        // Buffered writes: 1 in 16 timed of 16384 + 1024 held back, and the held writes'
        // time stands for all of them.
        let whole = buffered_write(1024, 0.0, false, 64 * MIB);
        let mut f = whole.clone();
        f.ops = Some(OpFacts {
            count: 16384 + 1024,
            latency: dump(&[(4096, 1024), (4_194_304, 64)]),
        });
        let (a, b) = (reconcile(&whole).unwrap(), reconcile(&f).unwrap());
        assert_eq!(b.waited_share, Some(64.0 / 1088.0));
        assert_eq!(a.waited_share, b.waited_share);
        assert_eq!(a.waited_time_share, b.waited_time_share);
        assert!(b.waited_time_share.unwrap() > 0.7, "{b:?}");
    }

    #[test]
    fn diskstats_bound_the_waiting_operations_by_the_requests() {
        let o = reconcile(&random_read(None)).expect("operations");
        assert_eq!(o.basis, "requests");
        assert_eq!(o.service_basis, "diskstats");
        assert_eq!(o.requests, 34000);
        assert_eq!(o.waited_share, Some(34000.0 / 65536.0));
        assert_eq!(o.service_us, Some(400.0));
        assert_eq!(o.waited_above_us, None);
    }

    #[test]
    fn no_request_no_wait_and_no_device_no_block() {
        let mut f = random_read(Some(0));
        if let Some(r) = f.requests.as_mut() {
            r.read = RequestStat::default();
        }
        assert_eq!(reconcile(&f).and_then(|o| o.waited_share), Some(0.0));
        f.placement = Placement::Memory {
            fs_type: "tmpfs".into(),
        };
        assert!(reconcile(&f).is_none());
        let mut f = random_read(None);
        f.ops = None;
        assert!(reconcile(&f).is_none());
    }
}
