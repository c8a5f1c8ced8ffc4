//! From a repetition's facts to the witness the result keeps: the judgement written into
//! it (with the facts, so repetitions can be summed), the device block, and the merging of
//! a test's repetitions, whose facts are summed and judged again by the same rules.

use crate::rules::judge;
use candor_model::{DeviceIo, Facts, Placement, Witness};

pub fn device_io(f: &Facts) -> Option<DeviceIo> {
    let Placement::Device { name } = &f.placement else {
        return None;
    };
    let d = &f.device_total;
    let ios = d.read_ios + d.write_ios;
    let bytes = d.read_bytes + d.write_bytes;
    Some(DeviceIo {
        name: name.clone(),
        read_bytes: d.read_bytes,
        write_bytes: d.write_bytes,
        read_ios: d.read_ios,
        write_ios: d.write_ios,
        avg_request_bytes: if ios > 0 {
            bytes as f64 / ios as f64
        } else {
            0.0
        },
        util: if f.total_seconds > 0.0 {
            (d.io_ticks_ms as f64 / 1000.0 / f.total_seconds).clamp(0.0, 1.0)
        } else {
            0.0
        },
        avg_latency_us: if ios > 0 {
            (d.read_ms + d.write_ms) as f64 * 1000.0 / ios as f64
        } else {
            0.0
        },
        write_bytes_in_window: f.device_window.write_bytes,
    })
}

/// Writes the figures and the judgement of `facts` into a witness, and keeps the facts in
/// `extra.facts` so that [`combine`] can sum repetitions.
pub fn apply(facts: &Facts, w: &mut Witness) {
    let j = judge(facts);
    w.verdict = j.verdict;
    w.device_share = j.device_share;
    w.explanation = j.explanation;
    w.contradicts_intent = j.contradicts_intent;
    w.unverified_reason = j.unverified_reason;
    w.app.read_bytes = facts.app_read;
    w.app.write_bytes = facts.app_write;
    w.process_io = facts.own_total;
    w.device = device_io(facts);
    w.cache_hit_ratio = j.cache_hit_ratio;
    w.write_amplification = j.write_amplification;
    w.flushed_in_window = j.flushed_in_window;
    w.disturbed = j.disturbed;
    w.foreign_device_bytes = j.foreign_device_bytes;
    w.precision = j.precision;
    w.operations = j.operations;
    w.syscalls_check = j.syscalls_check;
    w.traps = j.traps;
    w.extra.facts = Some(facts.clone());
}

/// Merges the witnesses of a test's repetitions: byte counts are summed and the figures and
/// verdict recomputed from the sums; memory is taken from the first and last repetitions,
/// counters are summed, and the timeline is the last repetition's.
pub fn combine(reps: Vec<Witness>) -> Option<Witness> {
    let mut it = reps.into_iter();
    let first = it.next()?;
    let mut facts = first.extra.facts.clone();
    if let Some(f) = facts.as_mut() {
        f.repetitions = f.repetitions.max(1);
    }
    let moved = |w: &Witness| w.app.read_bytes + w.app.write_bytes > 0;
    // The judgement that stands when the repetitions cannot be summed: the last one's that
    // moved bytes (a repetition stopped before its first operation moved none, and its
    // "no bytes moved" is not the test's).
    let mut judged: Option<Witness> = None;
    let mut out = first;
    for w in it {
        match (facts.as_mut(), w.extra.facts.as_ref()) {
            (Some(f), Some(g)) => f.add(g),
            _ => facts = None,
        }
        merge_observations(&mut out, &w);
        if moved(&w) || judged.as_ref().is_none_or(|j| !moved(j)) {
            judged = Some(w);
        }
    }
    match (facts, judged) {
        (Some(f), _) => apply(&f, &mut out),
        // Repetitions without facts (witness off, or a source that keeps none): a
        // repetition's own judgement stands rather than an invented one.
        (None, Some(w)) if moved(&w) || !moved(&out) => {
            out.verdict = w.verdict;
            out.device_share = w.device_share;
            out.explanation = w.explanation;
            out.contradicts_intent = w.contradicts_intent;
            out.unverified_reason = w.unverified_reason;
        }
        _ => {}
    }
    Some(out)
}

/// Adds the buckets of `b` to `a` (both in the saved [lower bound, count] form).
fn merge_dump(a: &mut candor_model::HistogramDump, b: &candor_model::HistogramDump) {
    let mut m: std::collections::BTreeMap<u64, u64> =
        a.buckets.iter().map(|x| (x[0], x[1])).collect();
    for x in &b.buckets {
        *m.entry(x[0]).or_insert(0) += x[1];
    }
    a.buckets = m.into_iter().map(|(k, v)| [k, v]).collect();
    a.relative_error = a.relative_error.max(b.relative_error);
}

/// The q-quantile of a saved histogram in microseconds: the middle of its bucket.
fn dump_quantile_us(d: &candor_model::HistogramDump, q: f64) -> f64 {
    let total: u64 = d.buckets.iter().map(|x| x[1]).sum();
    if total == 0 {
        return 0.0;
    }
    let rank = ((q * total as f64).ceil() as u64).max(1);
    let mut seen = 0;
    for x in &d.buckets {
        seen += x[1];
        if seen >= rank {
            return x[0] as f64 * (1.0 + d.relative_error / 2.0) / 1000.0;
        }
    }
    0.0
}

/// The eBPF figures of several repetitions, summed (they are counts over each repetition).
fn merge_bpf(out: &mut Witness, w: &Witness) {
    if let (Some(a), Some(b)) = (out.syscalls.as_mut(), w.syscalls.as_ref()) {
        for (name, s) in b {
            let t = a.entry(name.clone()).or_default();
            t.count += s.count;
            t.bytes += s.bytes;
            t.time_ns += s.time_ns;
            merge_dump(&mut t.latency, &s.latency);
        }
    }
    if let (Some(a), Some(b)) = (out.block.as_mut(), w.block.as_ref()) {
        for (dir, s) in b {
            let t = a.entry(dir.clone()).or_default();
            t.completions += s.completions;
            t.bytes += s.bytes;
            merge_dump(&mut t.size_histogram, &s.size_histogram);
            merge_dump(&mut t.latency, &s.latency);
            t.p50_us = dump_quantile_us(&t.latency, 0.5);
            t.p99_us = dump_quantile_us(&t.latency, 0.99);
        }
    }
    out.cache_misses = match (out.cache_misses, w.cache_misses) {
        (Some(a), Some(b)) => Some(a + b),
        _ => None,
    };
}

fn merge_observations(out: &mut Witness, w: &Witness) {
    merge_bpf(out, w);
    if let (Some(m), Some(n)) = (out.memory.as_mut(), w.memory.as_ref()) {
        m.dirty_after = n.dirty_after;
        m.dirty_peak = m.dirty_peak.max(n.dirty_peak);
        m.writeback_after = n.writeback_after;
        m.cached_after = n.cached_after;
    } else if out.memory.is_none() {
        out.memory = w.memory.clone();
    }
    for (k, v) in &w.vmstat {
        *out.vmstat.entry(k.clone()).or_insert(0) += v;
    }
    out.io_pressure_us = match (out.io_pressure_us, w.io_pressure_us) {
        (Some(a), Some(b)) => Some([a[0] + b[0], a[1] + b[1]]),
        _ => None,
    };
    if let (Some(a), Some(b)) = (out.file_cache.as_mut(), w.file_cache.as_ref()) {
        a.resident_after = b.resident_after;
        a.dirty_after = b.dirty_after;
        a.file_pages = a.file_pages.max(b.file_pages);
    } else if out.file_cache.is_none() {
        out.file_cache = w.file_cache.clone();
    }
    if !w.timeline.is_empty() {
        out.timeline = w.timeline.clone();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::*;
    use candor_model::Verdict;

    #[test]
    fn bpf_figures_of_repetitions_add_up() {
        let rep = |n: u64| {
            let mut w = Witness::default();
            let mut sc = std::collections::BTreeMap::new();
            sc.insert(
                "pwrite64".to_string(),
                candor_model::SyscallStat {
                    count: n,
                    bytes: n * 4096,
                    time_ns: n * 1000,
                    latency: candor_model::HistogramDump {
                        relative_error: 0.25,
                        buckets: vec![[1000, n]],
                    },
                },
            );
            w.syscalls = Some(sc);
            let mut bl = std::collections::BTreeMap::new();
            bl.insert(
                "write".to_string(),
                candor_model::BlockStat {
                    completions: n,
                    bytes: n * 4096,
                    latency: candor_model::HistogramDump {
                        relative_error: 0.25,
                        buckets: vec![[100_000 * n, n]],
                    },
                    ..Default::default()
                },
            );
            w.block = Some(bl);
            w.cache_misses = Some(n);
            w
        };
        let c = combine(vec![rep(10), rep(30)]).unwrap();
        let s = &c.syscalls.as_ref().unwrap()["pwrite64"];
        assert_eq!((s.count, s.bytes, s.time_ns), (40, 40 * 4096, 40_000));
        assert_eq!(s.latency.buckets, vec![[1000, 40]]);
        let b = &c.block.as_ref().unwrap()["write"];
        assert_eq!((b.completions, b.bytes), (40, 40 * 4096));
        // 30 of the 40 completions took 3 ms: the median is in that bucket.
        assert!((b.p50_us - 3000.0 * 1.125).abs() < 1e-6, "{}", b.p50_us);
        assert_eq!(c.cache_misses, Some(40));
    }

    #[test]
    fn combine_sums_and_rejudges() {
        let mut a = Witness::default();
        apply(&write_facts(32 * MIB, 32 * MIB, 32 * MIB, 32 * MIB), &mut a);
        let mut b = Witness::default();
        apply(&write_facts(32 * MIB, 0, 32 * MIB, 32 * MIB), &mut b);
        assert_eq!(a.verdict, Verdict::Device);
        assert_eq!(b.verdict, Verdict::Cache);
        let c = combine(vec![a, b]).expect("combined");
        assert_eq!(c.verdict, Verdict::Mixed);
        assert_eq!(c.app.write_bytes, 64 * MIB);
        assert_eq!(c.flushed_in_window, Some(0.5));
        assert_eq!(c.device_share, Some(0.5));
        let dev = c.device.clone().expect("device");
        assert_eq!(dev.write_bytes, 64 * MIB);
        assert_eq!(dev.write_bytes_in_window, 32 * MIB);
        assert_eq!(c.extra.facts.as_ref().expect("facts").repetitions, 2);
        assert!(combine(vec![]).is_none());
    }

    /// The paths by which a test that moved bytes could say "the test reported no bytes
    /// moved": a repetition that moved none (stopped before its first operation by the
    /// runtime cap, a stonewall or a signal) beside others that did.
    #[test]
    fn a_repetition_that_moved_nothing_does_not_speak_for_the_test() {
        let mut none = Witness::default();
        apply(&write_facts(0, 0, 0, 0), &mut none);
        assert_eq!(none.verdict, Verdict::Unverified);
        assert_eq!(
            none.unverified_reason.as_deref(),
            Some("the test reported no bytes moved")
        );
        let mut some = Witness::default();
        apply(
            &write_facts(32 * MIB, 32 * MIB, 32 * MIB, 32 * MIB),
            &mut some,
        );
        // Summed, in either order: the bytes that moved are judged.
        for reps in [
            vec![none.clone(), some.clone()],
            vec![some.clone(), none.clone()],
        ] {
            let c = combine(reps).expect("combined");
            assert_eq!(c.verdict, Verdict::Device, "{}", c.explanation);
            assert_eq!(c.unverified_reason, None);
        }
        // Repetitions that cannot be summed (one kept no facts): the judgement of the last
        // one that moved bytes stands, not the last one's.
        let mut bare = none.clone();
        bare.extra.facts = None;
        for reps in [
            vec![some.clone(), bare.clone()],
            vec![bare.clone(), some.clone(), bare.clone()],
        ] {
            let c = combine(reps).expect("combined");
            assert_eq!(c.verdict, Verdict::Device, "{}", c.explanation);
            assert_eq!(c.unverified_reason, None);
        }
        // A test none of whose repetitions moved anything says so.
        let c = combine(vec![bare.clone(), none.clone()]).expect("combined");
        assert_eq!(c.verdict, Verdict::Unverified);
    }

    #[test]
    fn device_block_and_units() {
        let f = write_facts(32 * MIB, 32 * MIB, 32 * MIB, 32 * MIB);
        let d = device_io(&f).expect("device");
        assert_eq!(d.avg_request_bytes, MIB as f64);
        assert!((d.util - 0.2 / 1.5).abs() < 1e-9);
        assert!((d.avg_latency_us - 40_000.0 / 32.0).abs() < 1e-9);
    }
}
