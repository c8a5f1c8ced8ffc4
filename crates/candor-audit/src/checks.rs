//! What particular tools bring to the reconciliation, after the rows of `reconcile`:
//!
//! - **metadata figures** (mdtest, bonnie++'s file tests): operations per second, checked
//!   against the calls the kernel counted (eBPF's metadata slots: creates, stats, unlinks,
//!   mkdir/rmdir, renames, opens), their number and the time they were being made;
//! - **IOR's read-back**: a read figure served by the page cache because each task read the
//!   file it had just written (no `-C`), or its neighbour's file on the same node (`-C` on
//!   one node: one page cache for every task);
//! - **sysbench's fsyncs**: the fsync count it reports (fsyncs/s times its total time)
//!   against the fsync calls seen on its files;
//! - **UnixBench's fstime**: its copy, read and write figures against the page cache.

use crate::claims::{Claim, Direction};
use crate::phase::{CallTick, Observed};
use crate::reconcile::{is_metadata, Row, AGREEMENT};

/// Replaces the metadata rows and adds each tool's sentences to its rows.
pub fn apply(claims: &[Claim], rows: &mut [Row], observed: &Observed) {
    for (c, r) in claims.iter().zip(rows.iter_mut()) {
        if is_metadata(c) {
            *r = metadata_row(c, observed);
            continue;
        }
        match c.program.as_str() {
            "ior" => ior_read_back(c, r, observed),
            "sysbench" => sysbench_fsyncs(c, r),
            "fstime" | "unixbench" => fstime_cache(c, r),
            _ => {}
        }
    }
}

fn flag<'a>(c: &'a Claim, prefix: &str) -> Option<&'a str> {
    c.flags.iter().find_map(|f| f.strip_prefix(prefix))
}

fn has(c: &Claim, f: &str) -> bool {
    c.flags.iter().any(|x| x == f)
}

fn add(r: &mut Row, sentence: String) {
    if r.explanation.is_empty()
        || r.explanation.starts_with("claimed and observed agree")
        || r.explanation.starts_with("claimed and observed differ by")
    {
        r.explanation = sentence;
    } else {
        r.explanation = format!("{}; {sentence}", r.explanation);
    }
}

/// The calls that carry out a metadata operation on what it works on.
fn calls_for(op: &str, on: &str) -> &'static [&'static str] {
    match (op, on) {
        ("create", "files") => &["create"],
        ("create", _) => &["mkdir"],
        ("stat", _) => &["stat"],
        ("read", _) => &["openat"],
        ("remove", "files") | ("delete", _) => &["unlink"],
        ("remove", _) => &["rmdir"],
        ("rename", _) => &["rename"],
        _ => &[],
    }
}

/// What the tracer's readings say about the calls of `names`.
struct Counted {
    /// Calls over the run, and seconds inside them.
    calls: u64,
    inside_s: f64,
    /// The bulk of them: the readings from just before 2.5% of the calls to the one where
    /// 97.5% had been made, the calls in that window, its length (the longest the calls can
    /// have taken) and the time between the first reading that saw them rise and the last
    /// before the end (the shortest: 0 when they all fell between two readings).
    bulk_calls: u64,
    bulk_s: f64,
    bulk_min_s: f64,
    /// Readings in the bulk window where the count did not move for 3 readings or more:
    /// the calls came in separate bursts (iterations, or phases in between).
    bursts: bool,
}

fn counted(ticks: &[CallTick], names: &[&str]) -> Counted {
    let total = |t: &CallTick| -> u64 {
        names
            .iter()
            .map(|n| t.count.get(*n).copied().unwrap_or(0))
            .sum()
    };
    let inside = |t: &CallTick| -> u64 {
        names
            .iter()
            .map(|n| t.time_ns.get(*n).copied().unwrap_or(0))
            .sum()
    };
    let cum: Vec<u64> = ticks.iter().map(total).collect();
    let n = cum.last().copied().unwrap_or(0);
    let reading_s = ticks
        .windows(2)
        .map(|w| w[1].t_s - w[0].t_s)
        .filter(|d| *d > 0.0)
        .fold(f64::INFINITY, f64::min);
    let mut out = Counted {
        calls: n,
        inside_s: ticks.last().map(inside).unwrap_or(0) as f64 / 1e9,
        bulk_calls: 0,
        bulk_s: 0.0,
        bulk_min_s: 0.0,
        bursts: false,
    };
    if n == 0 {
        return out;
    }
    let at = |share: f64| cum.iter().position(|&c| c as f64 >= share * n as f64);
    let (Some(lo), Some(hi)) = (at(0.025), at(0.975)) else {
        return out;
    };
    let from = lo.saturating_sub(1);
    out.bulk_calls = cum[hi] - cum[from];
    out.bulk_s = (ticks[hi].t_s - ticks[from].t_s).max(0.0);
    out.bulk_min_s = if hi > lo {
        (ticks[hi - 1].t_s - ticks[lo].t_s).max(0.0)
    } else {
        0.0
    };
    // Readings are kept only around changes: a still stretch shows as a long interval.
    out.bursts = (from + 1..=hi).any(|i| {
        cum[i] == cum[i - 1] && ticks[i].t_s - ticks[i - 1].t_s >= 3.0 * reading_s.min(1.0)
    });
    out
}

/// A metadata figure against the calls the kernel counted.
pub fn metadata_row(c: &Claim, observed: &Observed) -> Row {
    let op = flag(c, "operation ").unwrap_or("").to_string();
    let on = flag(c, "on ").unwrap_or(if c.program == "bonnie++" { "files" } else { "" });
    let claimed = c.iops.unwrap_or(0.0);
    let iterations = c.extra.get("iterations").copied().unwrap_or(1.0).max(1.0);
    let items = c
        .extra
        .get("items")
        .or_else(|| c.extra.get("files"))
        .copied();
    let mut r = Row {
        test: c.test.clone(),
        program: c.program.clone(),
        direction: Direction::Unknown,
        threads: c.threads,
        operation: Some(op.clone()),
        claimed_ops_per_s: Some(claimed),
        claimed_ops: items.map(|i| (i * iterations).round() as u64),
        ..Default::default()
    };
    let names = calls_for(&op, on);
    if observed.source != "bpf" || observed.calls.is_empty() {
        r.verdict = "unverified".into();
        r.explanation = format!(
            "a rate of {op} operations: checking it needs the kernel's count of the calls, which only the eBPF source gives (run the audit as root)"
        );
        return r;
    }
    if names.is_empty() {
        r.verdict = "unverified".into();
        r.explanation = format!("no call of the kernel stands for {c:?}'s operation", c = op);
        return r;
    }
    let k = counted(&observed.calls, names);
    let calls = k.calls;
    r.observed_calls = Some(calls);
    let what = names.join("/");
    let mut why: Vec<String> = Vec::new();
    if calls == 0 {
        r.verdict = "unverified".into();
        r.explanation = format!("the kernel saw no {what} call of the program");
        return r;
    }
    let tasks = c.threads.max(1) as f64;
    // Calls that carry out this operation alone: a file create, unlink, mkdir, rmdir or
    // rename of mdtest's own phase. Stats and opens serve several phases, a tree's mkdir and
    // rmdir are a handful among the directories', and bonnie++ creates and deletes its files
    // twice (in order, then at random): those calls are shared and only counted.
    let bonnie = c.program == "bonnie++";
    let shared = matches!(names[0], "stat" | "openat") || on == "tree" || bonnie;
    let mut count_fits = false;
    if let Some(expected) = r.claimed_ops {
        if shared {
            why.push(format!(
                "{expected} {op} operations claimed; the kernel saw {calls} {what} calls over the whole run (the program's other phases make them too)"
            ));
        } else {
            let d = calls as f64 / expected.max(1) as f64 - 1.0;
            count_fits = d.abs() <= AGREEMENT;
            if count_fits {
                why.push(format!(
                    "{expected} {op} operations claimed, {calls} {what} calls seen"
                ));
            } else {
                r.verdict = if d < 0.0 { "overstated" } else { "understated" }.into();
                why.push(format!(
                    "{expected} {op} operations claimed but the kernel saw {calls} {what} calls"
                ));
            }
        }
    }
    if shared {
        if r.verdict.is_empty() {
            r.verdict = "unverified".into();
        }
        why.push(format!(
            "{what} calls serve several of the program's phases: their rate cannot be told apart"
        ));
        r.explanation = why.join("; ");
        return r;
    }
    // The fastest the program could have gone: every counted call is this operation's, and
    // the tasks made them in parallel.
    if k.inside_s > 0.0 {
        let fastest = calls as f64 / (k.inside_s / tasks);
        r.observed_ops_per_s_in_calls = Some(fastest);
        if count_fits && claimed > fastest * (1.0 + AGREEMENT) {
            r.verdict = "overstated".into();
            why.push(format!(
                "{claimed:.0} {op}s/s is faster than the kernel served them: {calls} {what} calls took {:.3} s inside the kernel, at most {fastest:.0}/s for {} task{}",
                k.inside_s,
                c.threads.max(1),
                if c.threads > 1 { "s" } else { "" }
            ));
        }
    }
    // The rate over the bulk of the calls, to the readings' precision: the calls took at
    // most the window from the reading before they began to the one after they ended, and at
    // least the time between the first reading that saw them and the last before the end.
    if k.bulk_s > 0.0 {
        let low = k.bulk_calls as f64 / k.bulk_s;
        let high = (k.bulk_min_s > 0.0).then(|| k.bulk_calls as f64 / k.bulk_min_s);
        r.observed_ops_per_s = Some(low);
        r.wall_s = Some(k.bulk_s);
        let range = match high {
            Some(h) => format!("between {low:.0}/s and {h:.0}/s"),
            None => format!("at least {low:.0}/s"),
        };
        if k.bursts {
            why.push(format!(
                "the {what} calls came in separate bursts (iterations, or other phases between them): their rate is not timed"
            ));
        } else {
            why.push(format!(
                "{} {what} calls were made within {:.3} s of the tracer's readings: {range}",
                k.bulk_calls, k.bulk_s
            ));
            if r.verdict.is_empty() {
                if high.is_some_and(|h| claimed > h * (1.0 + AGREEMENT)) {
                    r.verdict = "overstated".into();
                    r.ratio = high.map(|h| claimed / h);
                } else if claimed < low * (1.0 - AGREEMENT) {
                    r.verdict = "understated".into();
                    r.ratio = Some(claimed / low);
                } else if high.is_some_and(|h| h <= low * (1.0 + 2.0 * AGREEMENT)) {
                    r.verdict = "agrees".into();
                    r.ratio = Some(claimed / low);
                } else {
                    why.push(
                        "the readings are too far apart to time them to 5%: the claim is inside that range"
                            .into(),
                    );
                }
            }
        }
    }
    if r.verdict.is_empty() {
        r.verdict = "unverified".into();
    }
    r.explanation = why.join("; ");
    r
}

/// IOR's read figures served by the page cache: each task reading back the file it had
/// itself written (no `-C`, or `-C` on one node, where IOR's shift by whole nodes changes
/// nothing), or a file another task wrote on this node.
fn ior_read_back(c: &Claim, r: &mut Row, observed: &Observed) {
    if c.direction != Direction::Read || has(c, "direct") {
        return;
    }
    let Some(cache) = r.cache_share.filter(|s| *s >= 0.05) else {
        return;
    };
    let pct = cache * 100.0;
    // Who wrote each file the reads came from, before it was read.
    let reads: Vec<&crate::phase::Phase> = r
        .phases
        .iter()
        .filter_map(|&i| observed.phases.get(i))
        .collect();
    let writer = |p: &crate::phase::Phase| {
        observed
            .phases
            .iter()
            .filter(|q| q.path == p.path && q.write_bytes > 0 && q.close_s <= p.open_s)
            .max_by(|a, b| a.close_s.total_cmp(&b.close_s))
            .map(|q| q.pid)
    };
    let own = !reads.is_empty() && reads.iter().all(|p| writer(p) == Some(p.pid));
    let other = !reads.is_empty() && reads.iter().all(|p| writer(p).is_some_and(|w| w != p.pid));
    let reorder = has(c, "reorder") || has(c, "reorder_random");
    let nodes: Option<u32> = flag(c, "nodes ").and_then(|n| n.parse().ok());
    let sentence = if own && !reorder {
        format!(
            "page-cache read-back: without -C each task read back the file it had itself just written, and {pct:.0}% of it came from this node's page cache, not from storage (-C with tasks on several nodes, or a cache drop between the phases, reads storage)"
        )
    } else if own {
        format!(
            "page-cache read-back: with -C each task still read back the file it had itself written (IOR shifts the tasks by whole nodes: on one node that changes nothing), and {pct:.0}% of it came from this node's page cache (-C avoids the cache only across nodes)"
        )
    } else if other && nodes == Some(1) {
        format!(
            "page-cache read-back: each task read a file another task had written on this one node, which shares its page cache: {pct:.0}% of the reads came from it (-C avoids the cache only across nodes)"
        )
    } else if !reorder {
        format!(
            "page-cache read-back: without -C the tasks read back what they had just written, and {pct:.0}% came from this node's page cache, not from storage"
        )
    } else {
        format!("{pct:.0}% of the reads came from this node's page cache despite -C")
    };
    add(r, sentence);
    if cache >= 0.5 && r.verdict == "agrees" {
        r.verdict = "cache speed".into();
    }
}

/// sysbench's fsync count (fsyncs/s times its total time) against the fsync calls seen on
/// its files.
fn sysbench_fsyncs(c: &Claim, r: &mut Row) {
    let Some(claimed) = c.extra.get("fsyncs").copied() else {
        return;
    };
    // A mixed test reports one fsync count for both figures: checked once, on the write.
    if c.direction == Direction::Read && c.test == "rndrw" {
        return;
    }
    let Some(seen) = r.fsync_count else {
        if claimed > 0.0 {
            add(
                r,
                format!("sysbench counted {claimed:.0} fsyncs; counting fsync calls needs the eBPF source"),
            );
        }
        return;
    };
    let d = (seen as f64 - claimed).abs();
    // fsyncs/s is printed with two decimals: the count is known to about total time / 100.
    let slack = 1.0 + c.seconds.unwrap_or(0.0) * 0.005 + claimed * 0.01;
    if d <= slack {
        add(
            r,
            format!("sysbench counted {claimed:.0} fsyncs and the kernel saw {seen} fsync calls on its files"),
        );
    } else {
        add(
            r,
            format!(
                "sysbench counted {claimed:.0} fsyncs but the kernel saw {seen} fsync calls on its files"
            ),
        );
        if r.verdict == "agrees" {
            r.verdict = "overstated".into();
        }
    }
}

/// fstime's figures against the page cache: its copy reads a file it has just written and
/// read, and writes another that is never flushed while it is timed.
fn fstime_cache(c: &Claim, r: &mut Row) {
    let read_cached = r.cache_share.filter(|s| *s >= 0.5);
    let unflushed = r.flushed_share.filter(|s| *s < 0.5);
    let copy = c.test.starts_with("copy");
    if copy || read_cached.is_some() || unflushed.is_some() {
        let mut parts = Vec::new();
        if let Some(s) = read_cached {
            parts.push(format!(
                "{:.0}% of the reads came from the page cache",
                s * 100.0
            ));
        }
        if let Some(s) = unflushed {
            parts.push(format!(
                "only {:.0}% of the written bytes reached the device before the file was closed",
                s * 100.0
            ));
        }
        if copy {
            parts.push(
                "fstime copies a file it has just written and read, with no flush inside its timer: a page-cache figure".into(),
            );
        }
        add(r, parts.join("; "));
        if r.verdict == "agrees" {
            r.verdict = "cache speed".into();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn tick(t: f64, n: &[(&str, u64, u64)]) -> CallTick {
        CallTick {
            t_s: t,
            count: n.iter().map(|(k, c, _)| (k.to_string(), *c)).collect(),
            time_ns: n.iter().map(|(k, _, ns)| (k.to_string(), *ns)).collect(),
        }
    }

    fn md(test: &str, op: &str, on: &str, rate: f64, items: f64) -> Claim {
        Claim {
            program: "mdtest".into(),
            test: test.into(),
            threads: 2,
            iops: Some(rate),
            flags: vec![
                "metadata".into(),
                format!("operation {op}"),
                format!("on {on}"),
            ],
            extra: BTreeMap::from([
                ("items".to_string(), items),
                ("iterations".to_string(), 1.0),
            ]),
            ..Default::default()
        }
    }

    fn observed(ticks: Vec<CallTick>) -> Observed {
        Observed {
            source: "bpf".into(),
            calls: ticks,
            ..Default::default()
        }
    }

    #[test]
    fn creates_counted_and_timed() {
        // 5000 creates made over 1 s (50 readings of 20 ms).
        let mut ticks = vec![tick(0.0, &[])];
        for i in 1..=50 {
            ticks.push(tick(i as f64 * 0.02, &[("create", 100 * i, 2_000_000 * i)]));
        }
        ticks.push(tick(2.0, &[("create", 5000, 100_000_000)]));
        let o = observed(ticks);
        let r = metadata_row(&md("file creation", "create", "files", 5000.0, 5000.0), &o);
        assert_eq!(r.observed_calls, Some(5000));
        assert_eq!(r.claimed_ops, Some(5000));
        assert!((r.observed_ops_per_s.unwrap_or(0.0) - 5000.0).abs() < 1e-6);
        assert_eq!(r.verdict, "agrees", "{}", r.explanation);
        assert!(r
            .explanation
            .contains("5000 create operations claimed, 5000 create calls seen"));
        assert!(
            r.explanation.contains("between 5000/s and 5217/s"),
            "{}",
            r.explanation
        );
        // Twice the rate the calls were made at: overstated.
        let r = metadata_row(&md("file creation", "create", "files", 10000.0, 5000.0), &o);
        assert_eq!(r.verdict, "overstated");
        // Fewer calls than items: said, and overstated.
        let r = metadata_row(&md("file creation", "create", "files", 5000.0, 10000.0), &o);
        assert!(
            r.explanation
                .contains("10000 create operations claimed but the kernel saw 5000"),
            "{}",
            r.explanation
        );
        assert_eq!(r.verdict, "overstated");
        // Over 20 readings the range is 11% wide: a claim inside it is not judged.
        let mut ticks = vec![tick(0.0, &[])];
        for i in 1..=20 {
            ticks.push(tick(i as f64 * 0.02, &[("create", 100 * i, 0)]));
        }
        let r = metadata_row(
            &md("file creation", "create", "files", 5200.0, 2000.0),
            &observed(ticks),
        );
        assert_eq!(r.verdict, "unverified", "{}", r.explanation);
        assert!(r.explanation.contains("too far apart"), "{}", r.explanation);
    }

    #[test]
    fn faster_than_the_kernel_served_them() {
        // 1000 creates took 0.1 s inside the kernel for 2 tasks: at most 20000/s.
        let o = observed(vec![
            tick(0.0, &[]),
            tick(
                0.02,
                &[("create", 1000, 100_000_000), ("stat", 1000, 100_000_000)],
            ),
        ]);
        let r = metadata_row(&md("file creation", "create", "files", 2e6, 1000.0), &o);
        assert_eq!(r.verdict, "overstated", "{}", r.explanation);
        assert_eq!(r.observed_ops_per_s_in_calls, Some(20000.0));
        assert!(r.explanation.contains("faster than the kernel served them"));
        // 1000 creates between two readings 20 ms apart, 10 ms inside the kernel: at least
        // 50000/s; a claim of 60000/s cannot be judged, one of 15000/s is below what the
        // kernel did.
        let o = observed(vec![
            tick(0.0, &[]),
            tick(
                0.02,
                &[("create", 1000, 10_000_000), ("stat", 1000, 1_000_000)],
            ),
        ]);
        let r = metadata_row(&md("file creation", "create", "files", 60000.0, 1000.0), &o);
        assert_eq!(r.verdict, "unverified", "{}", r.explanation);
        assert!(
            r.explanation.contains("at least 50000/s"),
            "{}",
            r.explanation
        );
        let r = metadata_row(&md("file creation", "create", "files", 15000.0, 1000.0), &o);
        assert_eq!(r.verdict, "understated", "{}", r.explanation);
        // Stats serve several phases: neither bounded nor timed.
        let r = metadata_row(&md("file stat", "stat", "files", 2e6, 1000.0), &o);
        assert_eq!(r.verdict, "unverified");
        assert!(
            r.explanation.contains("cannot be told apart"),
            "{}",
            r.explanation
        );
    }

    #[test]
    fn stray_calls_outside_the_bulk_do_not_stretch_the_window() {
        // Ten creates at start (a library's files), 5000 in 1 s, four at the end.
        // (The reading before a change is kept, as call_ticks keeps it.)
        let mut ticks = vec![
            tick(0.0, &[]),
            tick(0.02, &[("create", 10, 1_000_000)]),
            tick(1.0, &[("create", 10, 1_000_000)]),
        ];
        for i in 1..=50u64 {
            ticks.push(tick(
                1.0 + i as f64 * 0.02,
                &[("create", 10 + 100 * i, 1_000_000 + 2_000_000 * i)],
            ));
        }
        ticks.push(tick(3.0, &[("create", 5014, 101_000_000)]));
        let o = observed(ticks);
        let r = metadata_row(&md("file creation", "create", "files", 5000.0, 5000.0), &o);
        assert_eq!(r.verdict, "agrees", "{}", r.explanation);
        assert_eq!(r.observed_calls, Some(5014));
        // The window runs from the reading before the bulk to the one after: not from the
        // stray creates a second earlier.
        let w = r.wall_s.unwrap_or(0.0);
        assert!(w < 1.0 + 1e-9, "{w}");
        // Two iterations a second apart: separate bursts, not timed.
        let mut ticks = vec![tick(0.0, &[])];
        for i in 1..=20u64 {
            ticks.push(tick(i as f64 * 0.02, &[("create", 50 * i, 0)]));
        }
        ticks.push(tick(1.0, &[("create", 1000, 0)]));
        for i in 1..=20u64 {
            ticks.push(tick(1.0 + i as f64 * 0.02, &[("create", 1000 + 50 * i, 0)]));
        }
        let o = observed(ticks);
        let mut c = md("file creation", "create", "files", 2500.0, 1000.0);
        c.extra.insert("iterations".into(), 2.0);
        let r = metadata_row(&c, &o);
        assert_eq!(r.verdict, "unverified", "{}", r.explanation);
        assert!(
            r.explanation.contains("separate bursts"),
            "{}",
            r.explanation
        );
    }

    #[test]
    fn without_ebpf_the_row_says_why() {
        let o = Observed {
            source: "procfs".into(),
            ..Default::default()
        };
        let r = metadata_row(&md("file creation", "create", "files", 5000.0, 2000.0), &o);
        assert_eq!(r.verdict, "unverified");
        assert!(r.explanation.contains("eBPF"));
        assert_eq!(r.claimed_ops_per_s, Some(5000.0));
    }

    fn ior_read(flags: &[&str]) -> Claim {
        Claim {
            program: "ior".into(),
            test: "read".into(),
            direction: Direction::Read,
            flags: flags.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
    }

    fn ior_phases(readers: [u32; 2]) -> Observed {
        let p = |pid: u32, path: &str, open: f64, r: u64, w: u64| crate::phase::Phase {
            pid,
            path: path.into(),
            open_s: open,
            close_s: open + 0.1,
            read_bytes: r,
            write_bytes: w,
            ..Default::default()
        };
        Observed {
            source: "bpf".into(),
            phases: vec![
                p(10, "/t/ior.dat.00000000", 0.0, 0, 1 << 20),
                p(11, "/t/ior.dat.00000001", 0.0, 0, 1 << 20),
                p(readers[0], "/t/ior.dat.00000000", 1.0, 1 << 20, 0),
                p(readers[1], "/t/ior.dat.00000001", 1.0, 1 << 20, 0),
            ],
            ..Default::default()
        }
    }

    #[test]
    fn ior_read_back_is_named() {
        let row = |share: f64| Row {
            cache_share: Some(share),
            phases: vec![2, 3],
            verdict: "agrees".into(),
            explanation: "claimed and observed agree within 1.0%".into(),
            ..Default::default()
        };
        // No -C: each task read its own file.
        let mut r = row(1.0);
        ior_read_back(
            &ior_read(&["nodes 1", "file_per_process"]),
            &mut r,
            &ior_phases([10, 11]),
        );
        assert!(
            r.explanation.starts_with("page-cache read-back: without -C each task read back the file it had itself just written"),
            "{}",
            r.explanation
        );
        assert!(r
            .explanation
            .contains("100% of it came from this node's page cache"));
        assert_eq!(r.verdict, "cache speed");
        // -C on one node with IOR's shift by whole nodes: still its own file.
        let mut r = row(0.98);
        ior_read_back(
            &ior_read(&["nodes 1", "reorder"]),
            &mut r,
            &ior_phases([10, 11]),
        );
        assert!(
            r.explanation
                .contains("with -C each task still read back the file it had itself written"),
            "{}",
            r.explanation
        );
        // The other task's file, on the same node.
        let mut r = row(0.98);
        ior_read_back(
            &ior_read(&["nodes 1", "reorder"]),
            &mut r,
            &ior_phases([11, 10]),
        );
        assert!(
            r.explanation
                .contains("a file another task had written on this one node"),
            "{}",
            r.explanation
        );
        // Reads from storage: nothing to say.
        let mut r = row(0.0);
        r.explanation.clear();
        ior_read_back(&ior_read(&["nodes 1"]), &mut r, &ior_phases([10, 11]));
        assert!(r.explanation.is_empty());
    }

    #[test]
    fn fstime_copy_is_named_a_page_cache_figure() {
        let c = Claim {
            program: "fstime".into(),
            test: "copy 256".into(),
            direction: Direction::Write,
            ..Default::default()
        };
        let mut r = Row {
            flushed_share: Some(0.0),
            verdict: "agrees".into(),
            explanation: "claimed and observed agree within 2.0%".into(),
            ..Default::default()
        };
        fstime_cache(&c, &mut r);
        assert_eq!(r.verdict, "cache speed");
        assert!(
            r.explanation
                .starts_with("only 0% of the written bytes reached the device"),
            "{}",
            r.explanation
        );
        assert!(r
            .explanation
            .contains("fstime copies a file it has just written and read"));
        // A read test from storage: nothing added.
        let c = Claim {
            program: "fstime".into(),
            test: "read 1024".into(),
            direction: Direction::Read,
            ..Default::default()
        };
        let mut r = Row {
            cache_share: Some(0.1),
            explanation: "x".into(),
            ..Default::default()
        };
        fstime_cache(&c, &mut r);
        assert_eq!(r.explanation, "x");
    }

    #[test]
    fn sysbench_fsync_counts() {
        let c = Claim {
            program: "sysbench".into(),
            test: "seqwr".into(),
            direction: Direction::Write,
            seconds: Some(5.0),
            extra: BTreeMap::from([("fsyncs".to_string(), 2487.0)]),
            ..Default::default()
        };
        let mut r = Row {
            fsync_count: Some(2487),
            verdict: "agrees".into(),
            ..Default::default()
        };
        sysbench_fsyncs(&c, &mut r);
        assert!(
            r.explanation
                .contains("counted 2487 fsyncs and the kernel saw 2487"),
            "{}",
            r.explanation
        );
        let mut r = Row {
            fsync_count: Some(1000),
            verdict: "agrees".into(),
            ..Default::default()
        };
        sysbench_fsyncs(&c, &mut r);
        assert!(r.explanation.contains("but the kernel saw 1000"));
        assert_eq!(r.verdict, "overstated");
    }
}
