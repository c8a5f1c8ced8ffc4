//! sysbench's fileio test, as its source prints it (src/tests/fileio/sb_fileio.c and
//! src/sysbench.c). The mode lines before the run ("4 files, 64MiB each", "Block size
//! 16KiB", the fsync lines, "Extra file open flags", "Doing random r/w test"), then either
//! the 1.0 blocks
//!
//! ```text
//! File operations:
//!     reads/s:                      20527.53
//!     writes/s:                     13685.02
//!     fsyncs/s:                     1369.10
//! Throughput:
//!     read, MiB/s:                  320.74
//!     written, MiB/s:               213.83
//! ```
//!
//! or the 1.1 block ("read:  IOPS=%4.2f %4.2f MiB/s (%4.2f MB/s)", "fsync: IOPS=%4.2f"),
//! then "General statistics" (total time, events), "Latency (ms)" and "Threads fairness".
//! Every rate is a count over the total time (`time_interval` of the cumulative report),
//! in MiB (1.0 divides by its `megabyte`, 1024 * 1024). `prepare` prints "N bytes written in
//! S seconds (R MiB/sec)." One claim per direction that moved data; the fsync count that
//! sysbench says it made is kept beside the figures (`fsyncs`) to be checked against the
//! fsync calls the kernel saw.

use super::{figures_left, number_prefix, parse_size, Claim, Direction, Parsed, Unread};
use std::collections::BTreeSet;

const MIB: f64 = 1024.0 * 1024.0;

/// Whether an output is sysbench's fileio test.
pub fn sniff(text: &str) -> bool {
    text.lines().take(3).any(|l| l.starts_with("sysbench "))
        && (text.contains("File operations:")
            || text.contains("Doing ")
            || text.contains("Creating files for the test"))
}

/// Figures of a value after its label: "    reads/s:                      0.00".
fn after_colon(line: &str, label: &str) -> Option<f64> {
    let rest = line.trim_start().strip_prefix(label)?;
    let rest = rest.trim_start().strip_prefix(':').unwrap_or(rest);
    let (v, unit) = number_prefix(rest.trim())?;
    let unit = unit.trim();
    (unit.is_empty() || unit == "s").then_some(v)
}

#[derive(Default)]
struct Run {
    version: String,
    threads: u32,
    file_size: Option<u64>,
    files: Option<u64>,
    block: Option<u64>,
    mode: Option<(String, bool)>,
    direct: bool,
    sync_flags: Vec<String>,
    fsync_freq: Option<u64>,
    fsync_end: bool,
    fsync_all: bool,
    io_mode: Option<String>,
    reads_s: Option<(f64, usize)>,
    writes_s: Option<(f64, usize)>,
    fsyncs_s: Option<(f64, usize)>,
    read_mibs: Option<(f64, usize)>,
    write_mibs: Option<(f64, usize)>,
    total_s: Option<f64>,
    events: Option<f64>,
    latency_ms: Vec<(String, f64)>,
    fairness: Vec<(String, f64)>,
    intervals: Vec<[f64; 3]>,
}

/// The test mode from "Doing ... test": candor's short name (sysbench's option value) and
/// whether it is random.
fn mode_of(words: &str) -> Option<(String, bool)> {
    let m = match words {
        "sequential write (creation)" => "seqwr",
        "sequential rewrite" => "seqrewr",
        "sequential read" => "seqrd",
        "random read" => "rndrd",
        "random write" => "rndwr",
        "random r/w" => "rndrw",
        _ => return None,
    };
    Some((m.to_string(), m.starts_with("rnd")))
}

/// Reads a sysbench fileio output (prepare or run).
pub fn read(text: &str) -> Parsed {
    let lines: Vec<&str> = text.lines().collect();
    let mut r = Run {
        threads: 1,
        ..Default::default()
    };
    let mut used: BTreeSet<usize> = BTreeSet::new();
    let mut unread = Vec::new();
    let mut results_from = usize::MAX;
    let mut prepare: Option<(u64, f64, f64, usize, String)> = None;
    let mut block = "";
    for (i, raw) in lines.iter().enumerate() {
        let n = i + 1;
        let l = raw.trim();
        if let Some(v) = l.strip_prefix("sysbench ") {
            r.version = v.split_whitespace().next().unwrap_or("").to_string();
            used.insert(n);
        } else if let Some(v) = l.strip_prefix("Number of threads:") {
            if let Ok(t) = v.trim().parse() {
                r.threads = t;
                used.insert(n);
            }
        } else if let Some(v) = l.strip_prefix("Extra file open flags:") {
            r.direct = v.contains("directio");
            r.sync_flags = v
                .split_whitespace()
                .filter(|w| *w == "sync" || *w == "dsync")
                .map(str::to_string)
                .collect();
            used.insert(n);
        } else if let Some((count, each)) = l
            .strip_suffix(" each")
            .and_then(|x| x.split_once(" files, "))
        {
            // "4 files, 64MiB each" (run) or "4 files, 65536Kb each, 256Mb total" (prepare).
            r.files = count.trim().parse().ok();
            r.file_size = parse_size(each);
            used.insert(n);
        } else if let Some((count, rest)) = l.split_once(" files, ") {
            r.files = count.trim().parse().ok();
            if let Some(kb) = rest
                .split(',')
                .next()
                .and_then(|x| x.trim().strip_suffix("Kb each"))
                .and_then(|k| k.trim().parse::<u64>().ok())
            {
                r.file_size = Some(kb * 1024);
            }
            used.insert(n);
        } else if l.ends_with("total file size") {
            used.insert(n);
        } else if let Some(v) = l.strip_prefix("Block size ") {
            r.block = parse_size(v);
            used.insert(n);
        } else if l.starts_with("Merging requests up to")
            || l.starts_with("Number of IO requests:")
            || l.starts_with("Read/Write ratio for combined")
            || l.starts_with("Report intermediate results every")
        {
            used.insert(n);
        } else if let Some(v) = l.strip_prefix("Periodic FSYNC enabled, calling fsync() each ") {
            r.fsync_freq = v.split_whitespace().next().and_then(|x| x.parse().ok());
            used.insert(n);
        } else if l.starts_with("Calling fsync() at the end of test") {
            r.fsync_end = l.contains("Enabled");
        } else if l.starts_with("Calling fsync() after each write operation") {
            r.fsync_all = true;
        } else if let Some(v) = l
            .strip_prefix("Using ")
            .and_then(|x| x.strip_suffix(" I/O mode"))
        {
            r.io_mode = Some(v.to_string());
        } else if let Some(v) = l
            .strip_prefix("Doing ")
            .and_then(|x| x.strip_suffix(" test"))
        {
            r.mode = mode_of(v);
            if r.mode.is_none() {
                unread.push(Unread::new(
                    "sysbench",
                    n,
                    l,
                    "a test mode candor does not know",
                ));
            }
        } else if l.starts_with("[ ") && l.contains("s ] reads:") {
            // "[ 1s ] reads: 51.30 MiB/s writes: 34.20 MiB/s fsyncs: 217.88/s latency ...".
            let f = |key: &str| {
                l.split_once(key)
                    .and_then(|(_, rest)| number_prefix(rest.trim_start()))
                    .map(|(v, _)| v)
            };
            match (f("reads:"), f("writes:"), f("fsyncs:")) {
                (Some(a), Some(b), Some(c)) => {
                    r.intervals.push([a, b, c]);
                    used.insert(n);
                }
                _ => unread.push(Unread::new(
                    "sysbench",
                    n,
                    l,
                    "an intermediate report whose reads, writes or fsyncs could not be read",
                )),
            }
        } else if l == "File operations:" || l == "Throughput:" {
            results_from = results_from.min(n);
            block = if l == "Throughput:" {
                "throughput"
            } else {
                "ops"
            };
        } else if l == "General statistics:" {
            block = "general";
        } else if l == "Latency (ms):" {
            block = "latency";
        } else if l == "Threads fairness:" {
            block = "fairness";
        } else if l.contains(" bytes written in ") && l.ends_with("MiB/sec).") {
            // prepare: "268435456 bytes written in 0.40 seconds (636.58 MiB/sec)."
            let bytes = l.split_whitespace().next().and_then(|b| b.parse().ok());
            let secs = l
                .split_once(" written in ")
                .and_then(|(_, x)| number_prefix(x))
                .map(|(v, _)| v);
            let rate = l
                .split_once('(')
                .and_then(|(_, x)| number_prefix(x))
                .map(|(v, _)| v);
            match (bytes, secs, rate) {
                (Some(b), Some(s), Some(rt)) => {
                    prepare = Some((b, s, rt, n, l.to_string()));
                    used.insert(n);
                }
                _ => unread.push(Unread::new(
                    "sysbench",
                    n,
                    l,
                    "the prepare summary's bytes, seconds or rate could not be read",
                )),
            }
            results_from = results_from.min(n);
        } else if block == "ops" {
            let put = |slot: &mut Option<(f64, usize)>, v: Option<f64>| match v {
                Some(v) => {
                    *slot = Some((v, n));
                    true
                }
                None => false,
            };
            let ok = put(&mut r.reads_s, after_colon(l, "reads/s"))
                || put(&mut r.writes_s, after_colon(l, "writes/s"))
                || put(&mut r.fsyncs_s, after_colon(l, "fsyncs/s"));
            if ok {
                used.insert(n);
            }
        } else if block == "throughput" {
            if let Some(v) = after_colon(l, "read, MiB/s") {
                r.read_mibs = Some((v, n));
                used.insert(n);
            } else if let Some(v) = after_colon(l, "written, MiB/s") {
                r.write_mibs = Some((v, n));
                used.insert(n);
            } else if let Some((dir, rest)) = l.split_once(": IOPS=") {
                // sysbench 1.1: "read:  IOPS=20527.53 320.74 MiB/s (336.32 MB/s)".
                let mut it = rest.split_whitespace();
                let iops = it.next().and_then(|x| x.parse::<f64>().ok());
                let mib = it.next().and_then(|x| x.parse::<f64>().ok());
                let ok = match (dir.trim(), iops, mib) {
                    ("read", Some(i), Some(m)) => {
                        r.reads_s = Some((i, n));
                        r.read_mibs = Some((m, n));
                        true
                    }
                    ("write", Some(i), Some(m)) => {
                        r.writes_s = Some((i, n));
                        r.write_mibs = Some((m, n));
                        true
                    }
                    ("fsync", Some(i), _) => {
                        r.fsyncs_s = Some((i, n));
                        true
                    }
                    _ => false,
                };
                if ok {
                    used.insert(n);
                }
            }
        } else if block == "general" {
            if let Some(v) = after_colon(l, "total time") {
                r.total_s = Some(v);
                used.insert(n);
            } else if let Some(v) = after_colon(l, "total number of events") {
                r.events = Some(v);
                used.insert(n);
            }
        } else if block == "latency" {
            if let Some((k, v)) = l.split_once(':') {
                let key = k.trim();
                let key = match key.strip_suffix("th percentile") {
                    Some(p) => format!("p{}", p.trim()),
                    None => key.to_string(),
                };
                if let Ok(v) = v.trim().parse::<f64>() {
                    r.latency_ms.push((key, v));
                    used.insert(n);
                } else if v.trim() == "disabled" {
                    used.insert(n);
                }
            }
        } else if block == "fairness" {
            if let Some((k, v)) = l.split_once(':') {
                let name = if k.trim().starts_with("events") {
                    "events"
                } else {
                    "execution_time_s"
                };
                if let Some((avg, sd)) = v.trim().split_once('/') {
                    if let (Ok(a), Ok(s)) = (avg.trim().parse(), sd.trim().parse()) {
                        r.fairness.push((format!("{name}_avg"), a));
                        r.fairness.push((format!("{name}_stddev"), s));
                        used.insert(n);
                    }
                }
            }
        }
    }
    let in_results = |n: usize| n >= results_from;
    unread.extend(figures_left("sysbench", &lines, &in_results, &used));
    let mut claims = Vec::new();
    if let Some((bytes, secs, rate, line, printed)) = prepare {
        claims.push(Claim {
            program: "sysbench".into(),
            test: "prepare".into(),
            direction: Direction::Write,
            file_size: r.file_size,
            threads: 1,
            claimed_bps: if secs > 0.0 { bytes as f64 / secs } else { 0.0 },
            bytes: Some(bytes),
            seconds: Some(secs),
            basis: "bytes written over the seconds prepare timed (an fsync per file inside)".into(),
            printed,
            line,
            extra: [("printed_rate_Bps".to_string(), rate * MIB)].into(),
            // prepare fsyncs every file before it stops its timer.
            flags: vec!["fsync_in_timing".into()],
            filename: Some("test_file.*".into()),
            ..Default::default()
        });
    }
    let Some(total) = r.total_s else {
        return Parsed { claims, unread }.sane();
    };
    let (mode, random) = r.mode.clone().unwrap_or_else(|| ("fileio".into(), false));
    let fsyncs = r.fsyncs_s.map(|(v, _)| v * total);
    for (dir, mibs, ops) in [
        (Direction::Read, r.read_mibs, r.reads_s),
        (Direction::Write, r.write_mibs, r.writes_s),
    ] {
        let Some((mib, line)) = mibs else { continue };
        let iops = ops.map(|(v, _)| v);
        if mib <= 0.0 && iops.unwrap_or(0.0) <= 0.0 {
            continue;
        }
        let bps = mib * MIB;
        let mut c = Claim {
            program: "sysbench".into(),
            test: mode.clone(),
            direction: dir,
            file_size: r.file_size,
            record_size: r.block,
            threads: r.threads.max(1),
            claimed_bps: bps,
            bytes: Some((bps * total).round() as u64),
            seconds: Some(total),
            iops,
            basis: format!(
                "{} over sysbench's total time ({} files)",
                if dir == Direction::Read {
                    "bytes read"
                } else {
                    "bytes written"
                },
                r.files.unwrap_or(0)
            ),
            printed: lines.get(line - 1).map(|l| l.trim()).unwrap_or("").into(),
            line,
            filename: Some("test_file.*".into()),
            ..Default::default()
        };
        for (k, v) in &r.latency_ms {
            if k == "sum" {
                c.extra.insert("latency_sum_ms".into(), *v);
            } else {
                c.latency_ns.insert(k.clone(), v * 1e6);
            }
        }
        for (k, v) in &r.fairness {
            c.extra.insert(k.clone(), *v);
        }
        if let Some(e) = r.events {
            c.extra.insert("events".into(), e);
        }
        if let Some((v, _)) = r.fsyncs_s {
            c.extra.insert("fsyncs_per_s".into(), v);
        }
        if let Some(f) = fsyncs {
            c.extra.insert("fsyncs".into(), f.round());
        }
        if let Some(f) = r.fsync_freq {
            c.extra.insert("fsync_every_requests".into(), f as f64);
        }
        if !r.intervals.is_empty() {
            let k = if dir == Direction::Read { 0 } else { 1 };
            let v: Vec<f64> = r.intervals.iter().map(|x| x[k] * MIB).collect();
            c.extra
                .insert("interval_reports".into(), r.intervals.len() as f64);
            c.extra.insert(
                "interval_min_Bps".into(),
                v.iter().copied().fold(f64::INFINITY, f64::min),
            );
            c.extra.insert(
                "interval_max_Bps".into(),
                v.iter().copied().fold(0.0, f64::max),
            );
        }
        if random {
            c.flags.push("random".into());
        }
        if r.direct {
            c.flags.push("direct".into());
        }
        for f in &r.sync_flags {
            c.flags.push(format!("o_{f}"));
        }
        if dir == Direction::Write && (r.fsync_end || r.fsync_all || r.fsync_freq.is_some()) {
            // Every fsync sysbench makes is an event inside its timer.
            c.flags.push("fsync_in_timing".into());
        }
        if let Some(m) = &r.io_mode {
            if m != "synchronous" {
                c.flags.push(format!("io_mode {m}"));
            }
        }
        if !r.version.is_empty() {
            c.flags.push(format!("version {}", r.version));
        }
        claims.push(c);
    }
    Parsed { claims, unread }.sane()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(name: &str) -> String {
        let p = format!("{}/tests/data/sysbench/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
    }

    fn one(name: &str) -> Parsed {
        let r = read(&data(name));
        assert!(r.unread.is_empty(), "{name}: {:?}", r.unread);
        r
    }

    #[test]
    fn seqwr_with_periodic_fsync() {
        let r = one("seqwr.txt");
        assert_eq!(r.claims.len(), 1);
        let c = &r.claims[0];
        assert_eq!(c.test, "seqwr");
        assert_eq!(c.direction, Direction::Write);
        assert_eq!(c.claimed_bps, 193.97 * MIB);
        assert_eq!(c.iops, Some(12414.21));
        assert_eq!(c.seconds, Some(5.0419));
        assert_eq!(c.file_size, Some(64 << 20));
        assert_eq!(c.record_size, Some(16 << 10));
        assert_eq!(c.threads, 1);
        assert_eq!(c.extra["fsyncs_per_s"], 497.36);
        assert_eq!(c.extra["fsyncs"], (497.36f64 * 5.0419).round());
        assert_eq!(c.extra["fsync_every_requests"], 100.0);
        assert_eq!(c.extra["events"], 65104.0);
        assert_eq!(c.extra["latency_sum_ms"], 4987.61);
        assert_eq!(c.extra["events_avg"], 65104.0);
        assert_eq!(c.extra["events_stddev"], 0.0);
        assert_eq!(c.extra["execution_time_s_avg"], 4.9876);
        assert_eq!(c.extra["execution_time_s_stddev"], 0.0);
        assert_eq!(c.latency_ns["min"], 0.0);
        assert_eq!(c.latency_ns["avg"], 0.08e6);
        assert_eq!(c.latency_ns["max"], 29.15e6);
        assert_eq!(c.latency_ns["p95"], 0.01e6);
        assert!(c.flags.contains(&"fsync_in_timing".to_string()));
        assert!(c.flags.contains(&"version 1.0.20".to_string()));
        assert_eq!(c.line, 28);
        assert_eq!(c.filename.as_deref(), Some("test_file.*"));
    }

    #[test]
    fn rndrw_gives_two_claims() {
        let r = one("rndrw.txt");
        assert_eq!(r.claims.len(), 2);
        let (rd, wr) = (&r.claims[0], &r.claims[1]);
        assert_eq!((rd.test.as_str(), rd.direction), ("rndrw", Direction::Read));
        assert_eq!(
            (wr.test.as_str(), wr.direction),
            ("rndrw", Direction::Write)
        );
        assert_eq!(rd.claimed_bps, 320.74 * MIB);
        assert_eq!(wr.claimed_bps, 213.83 * MIB);
        assert_eq!(rd.iops, Some(20527.53));
        assert_eq!(wr.iops, Some(13685.02));
        assert_eq!(rd.extra["fsyncs_per_s"], 1369.10);
        assert!(rd.flags.contains(&"random".to_string()));
        assert!(!rd.flags.contains(&"fsync_in_timing".to_string()));
        assert!(wr.flags.contains(&"fsync_in_timing".to_string()));
        assert_eq!(rd.seconds, Some(5.0120));
        assert_eq!(rd.extra["events"], 178359.0);
    }

    #[test]
    fn direct_random_read() {
        let r = one("rndrd-direct.txt");
        assert_eq!(r.claims.len(), 1);
        let c = &r.claims[0];
        assert_eq!(c.direction, Direction::Read);
        assert_eq!(c.claimed_bps, 730.03 * MIB);
        assert_eq!(c.iops, Some(46722.07));
        assert_eq!(c.extra["fsyncs"], 0.0);
        assert!(c.flags.contains(&"direct".to_string()));
        assert_eq!(c.latency_ns["max"], 59.96e6);
    }

    #[test]
    fn no_fsync_two_threads() {
        let r = one("rndwr-nofsync-2threads.txt");
        let c = &r.claims[0];
        assert_eq!(r.claims.len(), 1);
        assert_eq!(c.threads, 2);
        assert_eq!(c.claimed_bps, 6697.83 * MIB);
        assert_eq!(c.iops, Some(428661.14));
        assert!(!c.flags.contains(&"fsync_in_timing".to_string()));
        assert_eq!(c.extra["events_avg"], 1071818.0);
        assert_eq!(c.extra["events_stddev"], 5553.0);
        assert_eq!(c.extra["execution_time_s_avg"], 4.5919);
        assert_eq!(c.extra["execution_time_s_stddev"], 0.03);
        assert!(!c.extra.contains_key("fsync_every_requests"));
    }

    #[test]
    fn fsync_after_every_write_and_a_99th_percentile() {
        let r = one("seqrewr-fsync-all.txt");
        let c = &r.claims[0];
        assert_eq!(c.test, "seqrewr");
        assert_eq!(c.record_size, Some(64 << 10));
        assert_eq!(c.claimed_bps, 19.84 * MIB);
        assert_eq!(c.extra["fsyncs_per_s"], 317.42);
        assert_eq!(c.latency_ns["p99"], 7.98e6);
        assert!(c.flags.contains(&"fsync_in_timing".to_string()));
    }

    #[test]
    fn intermediate_reports() {
        let r = one("rndrw-intervals.txt");
        assert_eq!(r.claims.len(), 2);
        let c = &r.claims[0];
        assert_eq!(c.extra["interval_reports"], 3.0);
        assert_eq!(c.extra["interval_min_Bps"], 51.30 * MIB);
        assert_eq!(c.extra["interval_max_Bps"], 66.57 * MIB);
        let w = &r.claims[1];
        assert_eq!(w.extra["interval_min_Bps"], 34.20 * MIB);
        assert_eq!(w.extra["interval_max_Bps"], 44.38 * MIB);
        assert_eq!(c.claimed_bps, 60.36 * MIB);
        assert_eq!(w.claimed_bps, 40.24 * MIB);
    }

    #[test]
    fn seqrd_and_prepare() {
        let r = one("seqrd.txt");
        assert_eq!(r.claims.len(), 1);
        assert_eq!(r.claims[0].test, "seqrd");
        assert_eq!(r.claims[0].direction, Direction::Read);
        let p = one("prepare.txt");
        assert_eq!(p.claims.len(), 1);
        let c = &p.claims[0];
        assert_eq!(c.test, "prepare");
        assert_eq!(c.bytes, Some(268435456));
        assert_eq!(c.seconds, Some(0.40));
        assert_eq!(c.extra["printed_rate_Bps"], 636.58 * MIB);
        assert_eq!(c.file_size, Some(64 << 20));
    }

    #[test]
    fn failures_give_no_claims_and_no_false_lines() {
        assert!(one("missing-files.txt").claims.is_empty());
        assert!(one("no-mode.txt").claims.is_empty());
    }

    #[test]
    fn a_line_it_cannot_read_is_named() {
        let t = data("seqwr.txt").replace(
            "    writes/s:                     12414.21",
            "    writes/s:                     12414.21\n    renames/s:                    3.00",
        );
        let r = read(&t);
        assert_eq!(r.unread.len(), 1, "{:?}", r.unread);
        assert_eq!(r.unread[0].line, 24);
        assert!(r.unread[0].text.contains("renames/s"));
        assert_eq!(r.claims.len(), 1, "the figures still read");
    }
}
