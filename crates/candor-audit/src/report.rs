//! The audit's two outputs: the terminal table (test, sizes, claimed, observed, ratio,
//! verdict, then the reasons) and the JSON value stored under `audit` in the RunDoc.

use crate::reconcile::Row;
use crate::runner::Exit;
use crate::Audit;
use candor_model::{AppIo, DeviceIo, ProcessIo, Verdict, Witness};
use serde_json::{json, Value};

/// A rate as every table prints it, with its unit: "1600 MB/s" (or MiB/s under
/// `--units binary`), so the audit's figure is the one `candor report` of it shows.
pub fn human_rate(bps: f64) -> String {
    candor_model::units::rate_text(bps)
}

fn size(b: Option<u64>) -> String {
    match b {
        Some(b) if b >= 1024 && b % 1024 == 0 => {
            let units = ["KiB", "MiB", "GiB", "TiB"];
            let mut v = b / 1024;
            let mut u = 0;
            while v >= 1024 && v % 1024 == 0 && u + 1 < units.len() {
                v /= 1024;
                u += 1;
            }
            format!("{v} {}", units[u])
        }
        Some(b) => format!("{b} B"),
        None => "-".into(),
    }
}

/// The sentence about how the command ended, when it is not a plain exit 0.
pub fn exit_sentence(exit: &Exit, program: &str) -> Option<String> {
    match exit {
        Exit::Code(0) => None,
        Exit::Code(c) => Some(format!("{program} exited with code {c}")),
        Exit::Signal(s) => Some(format!(
            "{program} was killed by signal {s} ({})",
            signal_name(*s)
        )),
        Exit::NotFound => Some(format!(
            "{program}: command not found (check the name and PATH)"
        )),
        Exit::NotStarted(why) => Some(format!("{program} could not be started: {why}")),
    }
}

fn signal_name(s: i32) -> &'static str {
    match s {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGABRT => "SIGABRT",
        libc::SIGHUP => "SIGHUP",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGBUS => "SIGBUS",
        _ => "signal",
    }
}

/// The terminal table and the lines under it.
pub fn render_table(a: &Audit) -> String {
    let mut s = String::new();
    let program = a
        .run
        .argv
        .first()
        .map(String::as_str)
        .unwrap_or("the command");
    s.push_str(&format!(
        "\ncandor audit: {} (observed by {}, {} file phase{}, {:.2} s)\n",
        a.run.argv.join(" "),
        a.run.observed.source,
        a.run.observed.phases.len(),
        if a.run.observed.phases.len() == 1 {
            ""
        } else {
            "s"
        },
        a.run.wall_s
    ));
    if !a.rows.is_empty() {
        let head = [
            "test",
            "file size",
            "record",
            "claimed",
            "observed",
            "in calls",
            "ratio",
            "verdict",
        ];
        let mut table: Vec<[String; 8]> = Vec::new();
        for r in &a.rows {
            let ops = |x: f64| format!("{x:.0} op/s");
            let (claimed, observed, in_calls) = match r.claimed_ops_per_s {
                // A metadata figure: operations per second, not bytes.
                Some(c) => (
                    ops(c),
                    r.observed_ops_per_s.map(ops),
                    r.observed_ops_per_s_in_calls.map(ops),
                ),
                None => (
                    human_rate(r.claimed_bps),
                    r.observed_wall_bps.map(human_rate),
                    r.observed_syscall_bps.map(human_rate),
                ),
            };
            // The ratio the verdict rests on, marked c when it is over the time inside the
            // calls.
            let ratio = r
                .judged_ratio()
                .map(|(x, calls)| format!("{x:.2}{}", if calls { " c" } else { "" }));
            table.push([
                r.test.clone(),
                size(r.file_size),
                size(r.record_size),
                claimed,
                observed.unwrap_or_else(|| "-".into()),
                in_calls.unwrap_or_else(|| "-".into()),
                ratio.unwrap_or_else(|| "-".into()),
                r.verdict.clone(),
            ]);
        }
        let mut w = head.map(str::len);
        for row in &table {
            for (i, c) in row.iter().enumerate() {
                w[i] = w[i].max(c.chars().count());
            }
        }
        let last = head.len() - 1;
        let line = |cells: [&str; 8]| {
            let mut l = String::new();
            for (i, c) in cells.iter().enumerate() {
                let pad = w[i].saturating_sub(c.chars().count());
                if i == 0 || i == last {
                    l.push_str(c);
                    l.push_str(&" ".repeat(pad));
                } else {
                    l.push_str(&" ".repeat(pad));
                    l.push_str(c);
                }
                l.push_str("  ");
            }
            l.trim_end().to_string() + "\n"
        };
        s.push_str(&line(head));
        for row in &table {
            s.push_str(&line(std::array::from_fn(|i| row[i].as_str())));
        }
        s.push_str("observed: bytes over the wall time from open to close (fsync and close included); in calls: over the time inside the I/O calls; ratio = claimed / observed, or claimed / in calls when marked c (the figure agrees with that and not with the wall time: the program timed its calls)\n");
        for (i, r) in a.rows.iter().enumerate() {
            s.push_str(&format!("  {}. {}: {}\n", i + 1, r.test, r.explanation));
            if let (Some(calls), Some(rs)) = (r.observed_syscall_bps, r.ratio_syscall) {
                s.push_str(&format!(
                    "     inside the I/O calls only: {} (ratio {rs:.2})\n",
                    human_rate(calls)
                ));
            }
        }
    }
    let parsed = a.claims.iter().any(|c| c.basis != "generic");
    if a.run.observed.phases.is_empty() {
        // Files it created without writing to them: the likely cause is a copy by reflink
        // (cp on xfs or btrfs clones the source's extents with FICLONE), which moves no data.
        let created = a
            .run
            .observed
            .calls
            .last()
            .and_then(|t| t.count.get("create"))
            .copied()
            .unwrap_or(0);
        let why = if created > 0 {
            format!(
                " (it created {created} file{} without writing to {}: a copy by reflink, FICLONE, shares the source's extents and moves no data)",
                if created == 1 { "" } else { "s" },
                if created == 1 { "it" } else { "them" }
            )
        } else {
            String::new()
        };
        s.push_str(&format!(
            "{program} touched no regular file or block device with a read, write or copy call{why}: there is nothing to reconcile\n"
        ));
    } else if !parsed {
        // No parser knows the program: the account is the report.
        s.push_str(&format!(
            "what {program} did (the read and write calls of its tree, by file; {}):\n",
            if !a.rows.is_empty() {
                format!("no parser reads {program}'s output: the figures above were found by the generic reader")
            } else if a.claims.is_empty() && a.unread.is_empty() {
                format!("no figure found in {program}'s output")
            } else {
                format!("no figure of {program}'s output could be checked")
            }
        ));
        s.push_str(&crate::account::render(&a.account));
    }
    for u in &a.unread {
        s.push_str(&format!(
            "could not read line {} of {}'s output ({}): {}\n",
            u.line,
            u.program,
            u.text.trim(),
            u.why
        ));
    }
    for n in &a.run.observed.notes {
        s.push_str(&format!("note: {n}\n"));
    }
    if let Some(e) = exit_sentence(&a.run.exit, program) {
        s.push_str(&format!("{e}\n"));
    }
    s
}

/// The run as a whole, in the result model's witness block.
pub fn witness(a: &Audit) -> Witness {
    let app_read: u64 = a.run.observed.phases.iter().map(|p| p.read_bytes).sum();
    let app_write: u64 = a.run.observed.phases.iter().map(|p| p.write_bytes).sum();
    let storage_read: Option<u64> = a
        .run
        .observed
        .phases
        .iter()
        .map(|p| p.storage_read_bytes)
        .sum();
    let mut w = Witness {
        source: a.run.observed.source.clone(),
        app: AppIo {
            read_bytes: app_read,
            write_bytes: app_write,
        },
        ..Default::default()
    };
    if let Some(root) = a.run.observed.processes.first() {
        w.process_io = Some(ProcessIo {
            rchar: root.io.rchar,
            wchar: root.io.wchar,
            read_bytes: root.io.read_bytes,
            write_bytes: root.io.write_bytes,
            cancelled_write_bytes: root.io.cancelled_write_bytes,
        });
    }
    let mut dev = DeviceIo {
        name: a.run.devices.join("+"),
        ..Default::default()
    };
    let mut lat_ms = 0u64;
    for d in &a.run.devices {
        if let Some(c) = a.run.disks.total(d) {
            dev.read_bytes += c.read_bytes();
            dev.write_bytes += c.write_bytes();
            dev.read_ios += c.read_ios;
            dev.write_ios += c.write_ios;
            lat_ms += c.read_ms + c.write_ms;
            // Over the span the device counters cover: the window observed.
            let span = a
                .run
                .disks
                .span()
                .map(|(from, to)| to - from)
                .filter(|s| *s > 0.0)
                .unwrap_or(a.run.wall_s);
            if span > 0.0 {
                dev.util = dev.util.max(c.io_ticks_ms as f64 / 1000.0 / span);
            }
        }
    }
    let ios = dev.read_ios + dev.write_ios;
    if ios > 0 {
        dev.avg_request_bytes = (dev.read_bytes + dev.write_bytes) as f64 / ios as f64;
        dev.avg_latency_us = lat_ms as f64 * 1000.0 / ios as f64;
    }
    if app_read > 0 {
        if let Some(s) = storage_read {
            w.cache_hit_ratio = Some(1.0 - s.min(app_read) as f64 / app_read as f64);
        }
    }
    // Where the data came from, as for candor's own tests.
    let app = (app_read + app_write) as f64;
    let moved = (dev.read_bytes + dev.write_bytes) as f64;
    w.verdict = if app == 0.0 {
        Verdict::Unverified
    } else if moved >= 0.9 * app {
        Verdict::Device
    } else if moved <= 0.1 * app {
        Verdict::Cache
    } else {
        w.device_share = Some(moved / app);
        Verdict::Mixed
    };
    let worst = a.rows.iter().find(|r| r.verdict != "agrees");
    w.explanation = match (worst, a.rows.is_empty()) {
        (_, true) if !a.account.sentence.is_empty() => {
            format!("no claimed figure to check; {}", a.account.sentence)
        }
        (_, true) => "no claimed figure to check".into(),
        (Some(r), _) => format!("{} {}: {}", r.test, r.verdict, r.explanation),
        (None, _) => "every claimed figure agrees with what the kernel saw, within 5%".into(),
    };
    w.contradicts_intent = worst.is_some_and(|r| r.verdict == "overstated");
    if a.rows.is_empty() {
        w.unverified_reason = Some("the program printed no figure candor can read".into());
    }
    w.foreign_device_bytes = a
        .rows
        .iter()
        .filter_map(|r| r.foreign_device_bytes)
        .max()
        .unwrap_or(0);
    w.disturbed = a
        .rows
        .iter()
        .any(|r| r.explanation.contains("another process moved"));
    w.device = Some(dev);
    w
}

/// The phases as saved: each with its kind from what it did (`kind`: "read", "write",
/// "mixed" or "unknown"; `read_share`: the share of its bytes that were read;
/// `kind_words`: "mixed: 93% read / 7% write by bytes").
fn phases_value(phases: &[crate::Phase]) -> Value {
    Value::Array(
        phases
            .iter()
            .map(|p| {
                let mut v = serde_json::to_value(p).unwrap_or(Value::Null);
                if let Value::Object(m) = &mut v {
                    m.insert("kind".into(), json!(p.direction().as_str()));
                    m.insert("read_share".into(), json!(p.read_share()));
                    m.insert("kind_words".into(), json!(p.kind_words()));
                }
                v
            })
            .collect(),
    )
}

/// The value stored under `audit` in the RunDoc.
pub fn audit_value(a: &Audit) -> Value {
    let rows: Vec<&Row> = a.rows.iter().collect();
    json!({
        "command": a.run.argv,
        "cwd": a.run.cwd,
        "exit": match &a.run.exit {
            Exit::Code(c) => json!({"code": c}),
            Exit::Signal(s) => json!({"signal": s, "code": 128 + s}),
            Exit::NotFound => json!({"not_found": true, "code": 127}),
            Exit::NotStarted(why) => json!({"not_started": why, "code": 126}),
        },
        "exit_message": exit_sentence(&a.run.exit, a.run.argv.first().map(String::as_str).unwrap_or("")),
        "wall_s": a.run.wall_s,
        "source": a.run.observed.source,
        "notes": a.run.observed.notes,
        "block_requests_unseen": a.run.observed.block_requests_unseen,
        "block_requests_recovered": a.run.observed.block_requests_recovered,
        "devices": a.run.devices,
        "processes": a.run.observed.processes,
        "phases": phases_value(&a.run.observed.phases),
        "claims": a.claims,
        "unread": a.unread,
        "calls": a.run.observed.calls,
        "channels": a.run.observed.channels,
        "channel_calls": a.run.observed.channel_calls,
        "still_running": a.run.observed.still_running,
        "reconciliation": rows,
        "account": a.account,
        "witness": witness(a),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_and_sizes() {
        // In the unit every table prints (MB/s by default), whole figures, not rescaled.
        assert_eq!(human_rate(1677721600.0), "1678 MB/s");
        assert_eq!(human_rate(4267.0 * 1048576.0), "4474 MB/s");
        assert_eq!(human_rate(512.0), "0.51 kB/s");
        assert_eq!(size(Some(64 << 20)), "64 MiB");
        assert_eq!(size(Some(65536)), "64 KiB");
        assert_eq!(size(Some(1536)), "1536 B");
        assert_eq!(size(None), "-");
    }

    fn audit_with(rows: Vec<Row>, phases: Vec<crate::Phase>, exit: Exit) -> Audit {
        let observed = crate::Observed {
            source: "bpf".into(),
            phases,
            processes: Vec::new(),
            notes: vec!["a note".into()],
            ..Default::default()
        };
        let account = crate::account::account(&observed, &[]);
        Audit {
            run: crate::runner::Outcome {
                argv: vec!["fio".into(), "--name=r".into()],
                cwd: "/".into(),
                exit,
                stdout: String::new(),
                stderr: String::new(),
                observed,
                disks: crate::disk::DiskTimeline::default(),
                wall_s: 1.5,
                devices: vec!["vda".into()],
            },
            claims: Vec::new(),
            unread: Vec::new(),
            rows,
            account,
        }
    }

    /// The device's utilisation is its busy time over the span its readings cover, not
    /// over a duration that ended earlier (a writer left running once gave 2046%).
    #[test]
    fn utilisation_is_over_the_window_the_device_was_read() {
        let mut a = audit_with(Vec::new(), Vec::new(), Exit::Code(0));
        a.run.wall_s = 0.01;
        let vda = |ticks: u64| candor_procfs::DiskStat {
            name: "vda".into(),
            io_ticks_ms: ticks,
            ..Default::default()
        };
        a.run.disks.push(0.0, vec![vda(100)]);
        a.run.disks.push(2.0, vec![vda(1100)]);
        let util = witness(&a).device.map(|d| d.util);
        assert_eq!(util, Some(0.5));
    }

    #[test]
    fn table_has_one_line_per_figure_and_the_reasons() {
        let row = Row {
            test: "r".into(),
            file_size: Some(512 << 20),
            record_size: Some(128 << 10),
            claimed_bps: 400.0 * 1048576.0,
            observed_wall_bps: Some(200.0 * 1048576.0),
            observed_syscall_bps: Some(390.0 * 1048576.0),
            ratio: Some(2.0),
            ratio_syscall: Some(400.0 / 390.0),
            verdict: "overstated".into(),
            explanation: "the timer stopped before the fsync: 1.28 s of flush were left out".into(),
            ..Default::default()
        };
        let t = render_table(&audit_with(vec![row], Vec::new(), Exit::Code(0)));
        let lines: Vec<&str> = t.lines().collect();
        let head = lines
            .iter()
            .position(|l| l.starts_with("test"))
            .expect("a header");
        assert!(lines[head].contains("claimed") && lines[head].ends_with("verdict"));
        let row = lines[head + 1];
        for cell in [
            "r",
            "512 MiB",
            "128 KiB",
            "419 MB/s",
            "210 MB/s",
            "2.00",
            "overstated",
        ] {
            assert!(row.contains(cell), "{cell} in {row:?}");
        }
        assert!(t.contains("1. r: the timer stopped before the fsync: 1.28 s"));
        assert!(t.contains("inside the I/O calls only: 409 MB/s (ratio 1.03)"));
        assert!(t.contains("note: a note"));
        assert!(row.contains("409 MB/s") && !row.contains(" c "), "{row:?}");
        // A figure that agrees over the time inside the calls and not over the wall time
        // (ioping times its requests): the ratio shown is the one the verdict rests on,
        // marked, beside both observed figures.
        let calls = Row {
            test: "requests completed read".into(),
            claimed_bps: 113e6,
            observed_wall_bps: Some(10.2e6),
            observed_syscall_bps: Some(111e6),
            ratio: Some(113.0 / 10.2),
            ratio_syscall: Some(113.0 / 111.0),
            verdict: "agrees".into(),
            ..Default::default()
        };
        let t = render_table(&audit_with(vec![calls], Vec::new(), Exit::Code(0)));
        let row = t
            .lines()
            .find(|l| l.starts_with("requests completed read"))
            .expect("the row");
        for cell in ["113 MB/s", "10.2 MB/s", "111 MB/s", "1.02 c", "agrees"] {
            assert!(row.contains(cell), "{cell} in {row:?}");
        }
        assert!(!row.contains("11.08"), "{row:?}");
        let v = audit_value(&audit_with(Vec::new(), Vec::new(), Exit::Signal(9)));
        assert_eq!(v["exit"]["code"], 137);
        assert_eq!(v["reconciliation"].as_array().map(Vec::len), Some(0));
    }

    #[test]
    fn without_figures_the_phases_are_the_report() {
        let p = crate::Phase {
            pid: 7,
            path: "/data/f".into(),
            open_s: 0.5,
            close_s: 1.5,
            write_bytes: 1 << 20,
            ..Default::default()
        };
        let t = render_table(&audit_with(Vec::new(), vec![p], Exit::Code(0)));
        // The account, not a list of phases: totals and the files.
        assert!(t.contains("what fio did"), "{t}");
        assert!(t.contains("written  1.0 MiB"), "{t}");
        assert!(t.contains("/data/f"), "{t}");
        let t = render_table(&audit_with(Vec::new(), Vec::new(), Exit::NotFound));
        assert!(
            t.contains("touched no regular file") && t.contains("command not found"),
            "{t}"
        );
        assert!(!t.contains("reflink"), "nothing was created: {t}");
        // A file created and never written (cp on xfs or btrfs clones it): the sentence
        // names the likely cause.
        let mut a = audit_with(Vec::new(), Vec::new(), Exit::Code(0));
        a.run.observed.calls = vec![crate::phase::CallTick {
            t_s: 0.1,
            count: [("create".to_string(), 1), ("openat".to_string(), 3)].into(),
            time_ns: Default::default(),
        }];
        let t = render_table(&a);
        assert!(
            t.contains("touched no regular file or block device with a read, write or copy call (it created 1 file without writing to it: a copy by reflink"),
            "{t}"
        );
    }

    #[test]
    fn a_line_that_could_not_be_read_is_named_and_the_phases_still_print() {
        let p = crate::Phase {
            pid: 7,
            path: "/data/t.tmp".into(),
            open_s: 0.5,
            close_s: 1.5,
            write_bytes: 1 << 20,
            ..Default::default()
        };
        let mut a = audit_with(Vec::new(), vec![p], Exit::Code(0));
        a.run.argv = vec!["iozone".into(), "-i0".into()];
        let text = "kB  reclen  write\n   1024    4   12x4\n";
        a.unread = crate::claims::iozone::read(text).unread;
        assert_eq!(a.unread.len(), 1);
        let t = render_table(&a);
        assert!(
            t.contains("could not read line 2 of iozone's output (1024    4   12x4)"),
            "{t}"
        );
        assert!(t.contains("/data/t.tmp"), "{t}");
        assert_eq!(audit_value(&a)["unread"][0]["line"], 2);
    }

    #[test]
    fn exits_in_words() {
        assert_eq!(exit_sentence(&Exit::Code(0), "fio"), None);
        assert_eq!(
            exit_sentence(&Exit::Signal(9), "fio").as_deref(),
            Some("fio was killed by signal 9 (SIGKILL)")
        );
        assert!(exit_sentence(&Exit::NotFound, "nosuch")
            .is_some_and(|s| s.contains("command not found")));
    }
}
