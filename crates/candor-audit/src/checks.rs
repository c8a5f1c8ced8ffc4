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
            "ior" => ior_read_back(c, r),
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

/// Calls of `names` counted over the run, the time they were being made (the sum of the
/// reading intervals in which their count rose) and the time inside them.
fn counted(ticks: &[CallTick], names: &[&str]) -> (u64, f64, f64) {
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
    let mut active = 0.0;
    for w in ticks.windows(2) {
        if total(&w[1]) > total(&w[0]) {
            active += (w[1].t_s - w[0].t_s).max(0.0);
        }
    }
    let last = ticks.last();
    (
        last.map(total).unwrap_or(0),
        active,
        last.map(inside).unwrap_or(0) as f64 / 1e9,
    )
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
    let (calls, active, inside) = counted(&observed.calls, names);
    r.observed_calls = Some(calls);
    let what = names.join("/");
    let mut why: Vec<String> = Vec::new();
    if calls == 0 {
        r.verdict = "unverified".into();
        r.explanation = format!("the kernel saw no {what} call of the program");
        return r;
    }
    let tasks = c.threads.max(1) as f64;
    // bonnie++ creates and deletes its files twice (in order, then at random): both of its
    // figures of an operation share the calls.
    let bonnie = c.program == "bonnie++";
    if inside > 0.0 {
        r.observed_ops_per_s_in_calls = Some(calls as f64 / (inside / tasks));
    }
    // Tree and per-phase counts: mdtest's items are per operation and iteration; a stat or
    // create figure's calls are shared with the other phases of the same call (directory and
    // file creates are different calls; stats of directories and files are both "stat").
    if let Some(expected) = r.claimed_ops {
        let shared = matches!(names[0], "stat" | "openat") || on == "tree" || bonnie;
        if shared {
            why.push(format!(
                "{} {op} operations claimed; the kernel saw {calls} {what} calls over the whole run (the program's other phases make them too)",
                expected
            ));
        } else {
            let d = calls as f64 / expected.max(1) as f64 - 1.0;
            if d.abs() > AGREEMENT {
                why.push(format!(
                    "{expected} {op} operations claimed but the kernel saw {calls} {what} calls"
                ));
            } else {
                why.push(format!(
                    "{expected} {op} operations claimed, {calls} {what} calls seen"
                ));
            }
        }
    }
    // The tracer is read every few tens of milliseconds: a phase shorter than ten readings
    // cannot be timed to 5%.
    let readings = observed
        .calls
        .windows(2)
        .map(|w| w[1].t_s - w[0].t_s)
        .filter(|d| *d > 0.0)
        .fold(f64::INFINITY, f64::min);
    if active > 0.0 {
        r.observed_ops_per_s = Some(calls as f64 / active);
        r.wall_s = Some(active);
    }
    let fastest = r.observed_ops_per_s_in_calls;
    if let Some(f) = fastest.filter(|f| claimed > f * (1.0 + AGREEMENT)) {
        r.verdict = "overstated".into();
        why.push(format!(
            "{claimed:.0} {op}s/s is faster than the kernel served them: {calls} {what} calls took {inside:.3} s inside the kernel, at most {f:.0}/s for {} task{}",
            c.threads.max(1),
            if c.threads > 1 { "s" } else { "" }
        ));
    }
    let unique = !(matches!(names[0], "stat" | "openat") || on == "tree" || bonnie);
    match (r.observed_ops_per_s, readings.is_finite()) {
        (Some(o), true) if unique && active >= 10.0 * readings => {
            let ratio = claimed / o;
            r.ratio = Some(ratio);
            if r.verdict.is_empty() {
                r.verdict = if (ratio - 1.0).abs() <= AGREEMENT {
                    "agrees"
                } else if ratio > 1.0 {
                    "overstated"
                } else {
                    "understated"
                }
                .into();
            }
            why.push(format!(
                "{what} calls were made for {active:.2} s: {o:.0}/s"
            ));
            if r.verdict == "overstated" && fastest.is_none_or(|f| claimed <= f * (1.0 + AGREEMENT))
            {
                why.push(
                    "the program's timer covered less than the time its calls were being made (other iterations and phases share the counted window when they interleave)".into(),
                );
            }
        }
        _ => {
            if r.verdict.is_empty() {
                r.verdict = "unverified".into();
            }
            if unique {
                why.push(format!(
                    "the {what} calls were made within {active:.3} s, under ten readings of the tracer: too short to time them to 5% (the count is checked)"
                ));
            } else {
                why.push(format!(
                    "{what} calls serve several of the program's phases: only the fastest possible rate is checked"
                ));
            }
        }
    }
    r.explanation = why.join("; ");
    r
}

/// IOR's read figures served by the page cache: the read-back of the file each task had just
/// written, or on one node (-C) of its neighbour's.
fn ior_read_back(c: &Claim, r: &mut Row) {
    if c.direction != Direction::Read || has(c, "direct") {
        return;
    }
    let Some(cache) = r.cache_share.filter(|s| *s >= 0.05) else {
        return;
    };
    let nodes: Option<u32> = flag(c, "nodes ").and_then(|n| n.parse().ok());
    let pct = cache * 100.0;
    if !has(c, "reorder") && !has(c, "reorder_random") {
        add(
            r,
            format!(
                "page-cache read-back: without -C each task read back the file it had just written, and {pct:.0}% of it came from this node's page cache, not from storage (-C with tasks on several nodes, or a cache drop between the phases, reads storage)"
            ),
        );
    } else if nodes == Some(1) {
        add(
            r,
            format!(
                "page-cache read-back: -C made each task read its neighbour's file, but every task ran on this one node and shares its page cache: {pct:.0}% of the reads came from it (-C avoids the cache only across nodes)"
            ),
        );
    } else {
        add(
            r,
            format!("{pct:.0}% of the reads came from this node's page cache despite -C"),
        );
    }
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
        // 2000 creates made over 0.4 s (20 readings of 20 ms).
        let mut ticks = vec![tick(0.0, &[])];
        for i in 1..=20 {
            ticks.push(tick(i as f64 * 0.02, &[("create", 100 * i, 2_000_000 * i)]));
        }
        ticks.push(tick(1.0, &[("create", 2000, 40_000_000)]));
        let o = observed(ticks);
        let r = metadata_row(&md("file creation", "create", "files", 5000.0, 2000.0), &o);
        assert_eq!(r.observed_calls, Some(2000));
        assert_eq!(r.claimed_ops, Some(2000));
        assert!((r.observed_ops_per_s.unwrap_or(0.0) - 5000.0).abs() < 1e-6);
        assert_eq!(r.verdict, "agrees", "{}", r.explanation);
        assert!(r
            .explanation
            .contains("2000 create operations claimed, 2000 create calls seen"));
        // Twice the rate the calls were made at: overstated.
        let r = metadata_row(&md("file creation", "create", "files", 10000.0, 2000.0), &o);
        assert_eq!(r.verdict, "overstated");
        // Fewer calls than items: said.
        let r = metadata_row(&md("file creation", "create", "files", 5000.0, 4000.0), &o);
        assert!(
            r.explanation
                .contains("4000 create operations claimed but the kernel saw 2000"),
            "{}",
            r.explanation
        );
    }

    #[test]
    fn faster_than_the_kernel_served_them() {
        // 1000 stats took 0.1 s inside the kernel for 2 tasks: at most 20000/s.
        let o = observed(vec![
            tick(0.0, &[]),
            tick(0.02, &[("stat", 1000, 100_000_000)]),
        ]);
        let r = metadata_row(&md("file stat", "stat", "files", 2e6, 1000.0), &o);
        assert_eq!(r.verdict, "overstated", "{}", r.explanation);
        assert_eq!(r.observed_ops_per_s_in_calls, Some(20000.0));
        assert!(r.explanation.contains("faster than the kernel served them"));
        // A plausible stat rate over one reading: unverified, the count only.
        let r = metadata_row(&md("file stat", "stat", "files", 15000.0, 1000.0), &o);
        assert_eq!(r.verdict, "unverified");
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

    #[test]
    fn ior_read_back_is_named() {
        let mut r = Row {
            cache_share: Some(1.0),
            verdict: "agrees".into(),
            explanation: "claimed and observed agree within 1.0%".into(),
            ..Default::default()
        };
        ior_read_back(&ior_read(&["nodes 1", "file_per_process"]), &mut r);
        assert!(
            r.explanation
                .starts_with("page-cache read-back: without -C"),
            "{}",
            r.explanation
        );
        assert!(r
            .explanation
            .contains("100% of it came from this node's page cache"));
        assert_eq!(r.verdict, "cache speed");
        let mut r = Row {
            cache_share: Some(0.98),
            ..Default::default()
        };
        ior_read_back(&ior_read(&["nodes 1", "reorder"]), &mut r);
        assert!(r
            .explanation
            .contains("-C made each task read its neighbour's file"));
        let mut r = Row {
            cache_share: Some(0.0),
            ..Default::default()
        };
        ior_read_back(&ior_read(&["nodes 1"]), &mut r);
        assert!(r.explanation.is_empty());
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
