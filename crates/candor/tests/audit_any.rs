//! `candor audit` on programs it has no parser for (dbench, fs_mark, ioping, stress-ng,
//! hdparm), on a block device and on sparse files: the generic reader finds the figures
//! each tool prints (exact numbers from its own output) and says what became of each; the
//! account gives totals that match strace's counts and the program's own files; a block
//! device is a `raw device` phase counted to the byte; reads of holes are named as zeros the
//! filesystem made up, not page-cache reads.

use serde_json::Value;
use std::path::Path;
use std::process::Output;

mod common;

/// One audit at a time: a test's device traffic would be another test's foreign traffic.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

fn scratch() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("candor-audit-any")
        .tempdir_in("/var/tmp")
        .or_else(|_| tempfile::tempdir())
        .expect("a temporary directory")
}

fn audit(dir: &Path, witness: &str, cmd: &[&str]) -> (Output, Value) {
    common::audit_json(dir, witness, &[], cmd)
}

/// The witnesses to test: both as root (eBPF must then load), procfs alone otherwise.
fn witnesses() -> Vec<&'static str> {
    if common::is_root() && common::need_bpf() {
        vec!["bpf", "procfs"]
    } else {
        vec!["procfs"]
    }
}

fn arr(v: &Value) -> Vec<Value> {
    v.as_array().cloned().unwrap_or_default()
}

/// The command's own output (stdout then stderr) as candor passed it through.
fn output_of(out: &Output) -> (String, String) {
    (common::text(&out.stdout), common::text(&out.stderr))
}

/// The claim printed as `printed` (exactly), or a failure listing what was read.
fn claim<'a>(claims: &'a [Value], printed: &str, what: &str) -> &'a Value {
    claims
        .iter()
        .find(|c| c["printed"] == printed)
        .unwrap_or_else(|| panic!("{what}: no claim printed as {printed:?} in {claims:#?}"))
}

/// The row of the reconciliation made for the claim on line `line`.
fn row_for<'a>(rows: &'a [Value], program: &str, test: &str) -> &'a Value {
    rows.iter()
        .find(|r| r["program"] == program && r["test"] == test)
        .unwrap_or_else(|| panic!("no row for {program} {test:?} in {rows:#?}"))
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("a number: {v}"))
}

/// Phases whose path is under `dir`: (read bytes, write bytes, write calls, fsyncs).
fn under(v: &Value, dir: &Path) -> (u64, u64, u64, u64) {
    let d = dir.display().to_string();
    let mut t = (0, 0, 0, 0);
    for p in arr(&v["audit"]["phases"]) {
        if p["path"].as_str().unwrap_or("").starts_with(&d) {
            t.0 += u(&p["read_bytes"]);
            t.1 += u(&p["write_bytes"]);
            t.2 += p["write_calls"].as_u64().unwrap_or(0);
            t.3 += p["fsync_count"].as_u64().unwrap_or(0);
        }
    }
    t
}

/// strace -c's call counts from its summary file.
fn strace_counts(path: &Path) -> std::collections::BTreeMap<String, u64> {
    let text = std::fs::read_to_string(path).expect("strace's summary");
    let mut m = std::collections::BTreeMap::new();
    for l in text.lines() {
        let w: Vec<&str> = l.split_whitespace().collect();
        // % time, seconds, usecs/call, calls, [errors,] syscall
        if w.len() >= 5 && w[0].parse::<f64>().is_ok() {
            if let Ok(calls) = w[3].parse::<u64>() {
                m.insert(w[w.len() - 1].to_string(), calls);
            }
        }
    }
    m
}

/// dbench: its "Throughput N MB/sec" is found and reconciled with the bytes its clients
/// moved (the assumption said), the progress lines are named as such; under strace the
/// account's write calls and fsyncs on dbench's files equal strace's pwrite64 and fsync
/// counts exactly.
#[test]
fn dbench_throughput_is_found_and_its_calls_match_strace() {
    if !common::need_programs(&["dbench", "strace"]) {
        return;
    }
    let _g = serial();
    for w in witnesses() {
        let dir = scratch();
        let db = dir.path().join("db");
        std::fs::create_dir(&db).unwrap();
        let summary = dir.path().join("strace.txt");
        let (out, v) = audit(
            dir.path(),
            w,
            &[
                "strace",
                "-f",
                "-c",
                "-o",
                summary.to_str().unwrap(),
                "dbench",
                "-D",
                db.to_str().unwrap(),
                "-t",
                "3",
                "2",
            ],
        );
        let (stdout, stderr) = output_of(&out);
        assert!(out.status.success(), "{w}: {stderr}");
        // The exact figure dbench printed.
        let line = stdout
            .lines()
            .find(|l| l.starts_with("Throughput "))
            .unwrap_or_else(|| panic!("{w}: dbench printed no Throughput line: {stdout}"));
        let value = line.split_whitespace().nth(1).unwrap();
        let printed = format!("{value} MB/sec");
        let claims = arr(&v["audit"]["claims"]);
        let c = claim(&claims, &printed, w);
        let mb: f64 = value.parse().unwrap();
        assert_eq!(c["claimed_bps"].as_f64(), Some(mb * 1e6), "{w}");
        assert_eq!(c["basis"], "generic");
        assert_eq!(c["test"], "Throughput");
        assert_eq!(
            claims.len(),
            1,
            "{w}: only the headline is a claim: {claims:#?}"
        );
        let rows = arr(&v["audit"]["reconciliation"]);
        let r = row_for(&rows, "strace", "Throughput");
        let why = r["explanation"].as_str().unwrap();
        assert!(why.contains("assumed:"), "{w}: {why}");
        assert!(
            ["agrees", "unverified"].contains(&r["verdict"].as_str().unwrap()),
            "{w}: {r:#}"
        );
        // The observed bytes are every byte read and written through files.
        let total: u64 = arr(&v["audit"]["phases"])
            .iter()
            .map(|p| u(&p["read_bytes"]) + u(&p["write_bytes"]))
            .sum();
        assert_eq!(u(&r["observed_bytes"]), total, "{w}");
        let unread = arr(&v["audit"]["unread"]);
        assert!(
            unread.iter().any(|x| x["text"]
                .as_str()
                .is_some_and(|t| t.contains("MB/sec  execute"))
                && x["why"].as_str().unwrap().contains("running figure")),
            "{w}: the progress lines are named: {unread:#?}"
        );
        // The account, against strace.
        let acc = &v["audit"]["account"];
        let (_, written, write_calls, fsyncs) = under(&v, &db);
        let counts = strace_counts(&summary);
        assert!(written > 0, "{w}");
        assert_eq!(
            u(&acc["write"]["bytes"]),
            arr(&v["audit"]["phases"])
                .iter()
                .map(|p| u(&p["write_bytes"]))
                .sum::<u64>()
        );
        if w == "bpf" {
            assert_eq!(
                Some(&write_calls),
                counts.get("pwrite64"),
                "{w}: pwrite64 calls: {counts:?}"
            );
            assert_eq!(
                Some(&fsyncs),
                counts.get("fsync"),
                "{w}: fsync calls: {counts:?}"
            );
            assert_eq!(acc["fsync_count"].as_u64(), counts.get("fsync").copied());
        }
        assert!(stderr.contains("what strace did"), "{w}: {stderr}");
        assert!(stderr.contains("  verdict  "), "{w}: {stderr}");
        assert!(stderr.contains("files, most bytes first"), "{w}: {stderr}");
        assert!(!stderr.contains("no figures recognised"), "{w}: {stderr}");
    }
}

/// fs_mark: its Files/sec is listed as unread with the exact value and why; the account's
/// bytes written are its 200 files of 4096 bytes plus its log, exactly, with its 200
/// fsyncs (eBPF), the write amplification and a verdict printed.
#[test]
fn fs_mark_gets_an_account_and_its_files_per_second_is_named() {
    if !common::need_programs(&["fs_mark"]) {
        return;
    }
    let _g = serial();
    for w in witnesses() {
        let dir = scratch();
        let d = dir.path().join("fsm");
        let (out, v) = audit(
            dir.path(),
            w,
            &[
                "fs_mark",
                "-d",
                d.to_str().unwrap(),
                "-n",
                "200",
                "-s",
                "4096",
                "-t",
                "1",
            ],
        );
        let (stdout, stderr) = output_of(&out);
        assert!(out.status.success(), "{w}: {stderr}");
        // fs_mark's table: the row under its header.
        let lines: Vec<&str> = stdout.lines().collect();
        let h = lines
            .iter()
            .position(|l| l.contains("Files/sec"))
            .unwrap_or_else(|| panic!("{w}: no table: {stdout}"));
        let value = lines[h + 1].split_whitespace().nth(3).unwrap();
        let unread = arr(&v["audit"]["unread"]);
        let files_per_s = unread
            .iter()
            .find(|x| x["line"] == h as u64 + 2)
            .unwrap_or_else(|| panic!("{w}: the figure is named: {unread:#?}"));
        let why = files_per_s["why"].as_str().unwrap();
        assert!(
            why.starts_with(&format!(
                "Files/sec = {}: a rate of files",
                value.parse::<f64>().unwrap()
            )),
            "{w}: {why}"
        );
        assert!(
            arr(&v["audit"]["claims"]).is_empty(),
            "{w}: nothing made up"
        );
        let log = std::fs::metadata(dir.path().join("fs_log.txt"))
            .expect("fs_mark's log")
            .len();
        let (_, written, write_calls, fsyncs) = under(&v, &d);
        let acc = &v["audit"]["account"];
        let phases = arr(&v["audit"]["phases"]);
        assert_eq!(
            u(&acc["write"]["bytes"]),
            phases.iter().map(|p| u(&p["write_bytes"])).sum::<u64>(),
            "{w}"
        );
        if w == "bpf" {
            // Every file and the log, exactly (fs_mark also writes a temporary
            // fs_log.txt.PID).
            assert_eq!(written, 200 * 4096, "{w}");
            let log_phase: u64 = phases
                .iter()
                .filter(|p| p["path"].as_str().unwrap().ends_with("/fs_log.txt"))
                .map(|p| u(&p["write_bytes"]))
                .sum();
            assert_eq!(log_phase, log, "{w}");
            assert_eq!(write_calls, 200, "{w}");
            assert_eq!(fsyncs, 200, "{w}");
            assert_eq!(acc["fsync_count"], 200, "{w}");
            assert_eq!(
                acc["write"]["record_sizes"][0],
                serde_json::json!([4096, 200])
            );
            let amp = acc["write_amplification"].as_f64().expect("amplification");
            assert!(amp > 1.0, "{w}: 4 KiB files with an fsync each: {amp}");
            assert!(stderr.contains("fsync    200 calls"), "{w}: {stderr}");
        }
        assert!(stderr.contains("write amplification"), "{w}: {stderr}");
        assert!(stderr.contains("  verdict  "), "{w}: {stderr}");
        // The 200 files are one line of the account, under their directory (eBPF sees
        // every one; /proc sampling misses files open for less than a period).
        if w == "bpf" {
            let group = arr(&acc["files"])
                .into_iter()
                .find(|f| f["kind"] == "files")
                .unwrap_or_else(|| panic!("{w}: {acc:#}"));
            assert!(
                group["path"]
                    .as_str()
                    .unwrap()
                    .ends_with("/fsm/ (200 files)"),
                "{w}: {group}"
            );
            assert_eq!(u(&group["write_bytes"]), 200 * 4096, "{w}");
            assert_eq!(u(&group["fsyncs"]), 200, "{w}");
            assert!(
                why.contains(&format!(
                    "the tree wrote 200 files in {}/ over",
                    d.display()
                )),
                "{w}: {why}"
            );
            assert!(stderr.contains("fsm/ (200 files)"), "{w}: {stderr}");
        }
    }
}

/// ioping: its summary ("N requests completed in T, S read, I k iops, R MiB/s") is a claim
/// with the bytes and IOPS it printed, checked against what the tree read; its latency line
/// is named as unread.
#[test]
fn ioping_summary_and_latency() {
    if !common::need_programs(&["ioping"]) {
        return;
    }
    let _g = serial();
    for w in witnesses() {
        let dir = scratch();
        let (out, v) = audit(dir.path(), w, &["ioping", "-c", "20", "-i", "0", "."]);
        let (stdout, stderr) = output_of(&out);
        assert!(out.status.success(), "{w}: {stderr}");
        let lines: Vec<&str> = stdout.lines().collect();
        let n = lines
            .iter()
            .position(|l| l.contains("requests completed in"))
            .unwrap_or_else(|| panic!("{w}: {stdout}"));
        let summary = lines[n];
        // "19 requests completed in 1.2 ms, 76 KiB read, 15.9 k iops, 62.1 MiB/s"
        let parts: Vec<&str> = summary.split(", ").collect();
        let kib: u64 = parts[1].split_whitespace().next().unwrap().parse().unwrap();
        let rate = parts[3].trim();
        let claims = arr(&v["audit"]["claims"]);
        let c = claim(&claims, rate, w);
        assert_eq!(c["line"], n as u64 + 1, "{w}");
        assert_eq!(c["direction"], "read");
        assert_eq!(c["bytes"], kib * 1024, "{w}: {c:#}");
        let rows = arr(&v["audit"]["reconciliation"]);
        let r = rows
            .iter()
            .find(|r| r["claimed_Bps"] == c["claimed_bps"])
            .expect("a row for the summary");
        assert_ne!(r["verdict"], "overstated", "{w}: {r:#}");
        if w == "bpf" {
            assert!(u(&r["observed_bytes"]) >= kib * 1024, "{w}: {r:#}");
            // ioping leaves its first request out of its summary (its "(warmup)"): 19 of
            // the 20 reads of 4 KiB the tree made (strace: 20 pread64 of 4096 bytes after
            // the 1 MiB it writes), and the sentence says so.
            assert_eq!(kib, 76, "{w}: {summary}");
            assert_eq!(u(&r["observed_bytes"]), 80 * 1024, "{w}: {r:#}");
            let why = r["explanation"].as_str().unwrap();
            assert!(
                why.contains(
                    "19 of the 20 reads of 4.0 KiB the tree made: 1 request left out of the figure"
                ),
                "{w}: {why}"
            );
        }
        let lat = lines
            .iter()
            .position(|l| l.starts_with("min/avg/max/mdev"))
            .unwrap();
        let unread = arr(&v["audit"]["unread"]);
        assert!(
            unread
                .iter()
                .any(|x| x["line"] == lat as u64 + 1
                    && x["why"].as_str().unwrap().contains("latency")),
            "{w}: {unread:#?}"
        );
    }
}

/// stress-ng's hdd stressor: its read and write MB/sec rates are claims with the exact
/// figures it printed.
#[test]
fn stress_ng_rates_are_found() {
    if !common::need_programs(&["stress-ng"]) {
        return;
    }
    let _g = serial();
    let w = witnesses()[0];
    let dir = scratch();
    let (out, v) = audit(
        dir.path(),
        w,
        &[
            "stress-ng",
            "--hdd",
            "1",
            "--hdd-bytes",
            "16M",
            "-t",
            "2",
            "--metrics-brief",
            "--temp-path",
            dir.path().to_str().unwrap(),
        ],
    );
    let (stdout, stderr) = output_of(&out);
    assert!(out.status.success(), "{w}: {stderr}");
    let all = format!("{stdout}{stderr}");
    let claims = arr(&v["audit"]["claims"]);
    for dir_word in ["read rate", "write rate"] {
        let l = all
            .lines()
            .find(|l| l.contains(&format!("MB/sec {dir_word}")))
            .unwrap_or_else(|| panic!("stress-ng printed no {dir_word}: {all}"));
        let words: Vec<&str> = l.split_whitespace().collect();
        let i = words.iter().position(|x| *x == "MB/sec").unwrap();
        let c = claim(&claims, &format!("{} MB/sec", words[i - 1]), w);
        assert_eq!(
            c["direction"],
            if dir_word == "read rate" {
                "read"
            } else {
                "write"
            }
        );
    }
}

/// A block device read (dd with O_DIRECT, and hdparm -t, which no parser reads) is a `raw
/// device` phase counted to the byte, not "touched no regular file".
#[test]
fn a_block_device_read_is_a_raw_device_phase() {
    if !common::need_root("for a loop device") {
        return;
    }
    let Some(dev) = common::need_or(
        candor_lab::scratch_device(128 << 20),
        candor_lab::LabError::is_unsupported,
    ) else {
        return;
    };
    let _g = serial();
    let lo = dev.loop_device.clone();
    for w in witnesses() {
        let dir = scratch();
        let (out, v) = audit(
            dir.path(),
            w,
            &[
                "dd",
                &format!("if={lo}"),
                "of=/dev/null",
                // Longer for /proc sampling to see the device open.
                if w == "bpf" { "bs=1M" } else { "bs=4k" },
                if w == "bpf" {
                    "count=64"
                } else {
                    "count=16384"
                },
                "iflag=direct",
            ],
        );
        assert!(out.status.success(), "{w}: {}", common::text(&out.stderr));
        let phases = arr(&v["audit"]["phases"]);
        let p = phases
            .iter()
            .find(|p| p["path"] == lo.as_str())
            .unwrap_or_else(|| panic!("{w}: no phase on {lo}: {phases:#?}"));
        assert_eq!(p["block_device"], true, "{w}");
        // eBPF counts the calls' bytes; /proc sampling can give the file a few KiB of the
        // loader's reads made in the same tick.
        let read = u(&p["read_bytes"]);
        if w == "bpf" {
            assert_eq!(read, 64 << 20, "{w}");
        } else {
            assert!(
                (64 << 20..(64 << 20) + (64 << 10)).contains(&read),
                "{w}: {read}"
            );
        }
        if common::have("hdparm") {
            let (out, v) = audit(dir.path(), w, &["hdparm", "-t", "--direct", &lo]);
            let (stdout, stderr) = output_of(&out);
            assert!(out.status.success(), "{w}: {stderr}");
            assert!(!stderr.contains("touched no regular file"), "{w}: {stderr}");
            assert!(
                stderr.contains(&format!("raw device {lo}")),
                "{w}: {stderr}"
            );
            // hdparm's "N MB" are MiB.
            let l = stdout
                .lines()
                .find(|l| l.contains(" MB in "))
                .unwrap_or_else(|| panic!("{w}: {stdout}"));
            let mb: u64 = l
                .split(':')
                .nth(1)
                .unwrap()
                .split_whitespace()
                .next()
                .unwrap()
                .parse()
                .unwrap();
            let read: u64 = arr(&v["audit"]["phases"])
                .iter()
                .filter(|p| p["path"] == lo.as_str())
                .map(|p| u(&p["read_bytes"]))
                .sum();
            if w == "bpf" {
                assert_eq!(read, mb << 20, "{w}: {stdout}");
            } else {
                assert!(read >= mb << 20, "{w}: {read} {stdout}");
            }
            assert_eq!(v["audit"]["account"]["files"][0]["kind"], "raw device");
        } else {
            common::skip("hdparm is not installed");
        }
    }
}

/// A 64 MiB sparse file read with and without O_DIRECT: every byte is a hole, named as
/// zeros made up by the filesystem, never "from the page cache".
#[test]
fn a_sparse_file_read_is_holes_not_page_cache() {
    let _g = serial();
    for w in witnesses() {
        for flag in [None, Some("iflag=direct")] {
            let dir = scratch();
            let f = dir.path().join("sparse");
            std::fs::File::create(&f)
                .and_then(|x| x.set_len(64 << 20))
                .unwrap();
            let mut cmd = vec![
                "dd".to_string(),
                format!("if={}", f.display()),
                "of=/dev/null".into(),
                // Longer for /proc sampling to see the file open.
                if w == "bpf" { "bs=1M" } else { "bs=4k" }.into(),
            ];
            cmd.extend(flag.map(String::from));
            let args: Vec<&str> = cmd.iter().map(String::as_str).collect();
            let (out, v) = audit(dir.path(), w, &args);
            let what = format!("{w} {flag:?}");
            let stderr = common::text(&out.stderr);
            assert!(out.status.success(), "{what}: {stderr}");
            let p = arr(&v["audit"]["phases"])
                .into_iter()
                .find(|p| p["path"] == f.display().to_string())
                .unwrap_or_else(|| panic!("{what}: no phase"));
            let read = u(&p["read_bytes"]);
            if w == "bpf" {
                assert_eq!(read, 64 << 20, "{what}");
            } else {
                assert!(
                    (64 << 20..(64 << 20) + (64 << 10)).contains(&read),
                    "{what}: {read}"
                );
            }
            // The file has no data at all: every byte read was a hole.
            assert_eq!(u(&p["hole_read_bytes"]), read, "{what}");
            let r = &v["audit"]["reconciliation"][0];
            assert_eq!(r["hole_share"], 1.0, "{what}: {r:#}");
            let why = r["explanation"].as_str().unwrap();
            assert!(
                why.contains("zeros made up by the filesystem, not the page cache or the device"),
                "{what}: {why}"
            );
            assert!(!why.contains("came from the page cache"), "{what}: {why}");
            assert!(
                u(&v["audit"]["account"]["read_from_holes_bytes"]) >= 64 << 20,
                "{what}"
            );
        }
    }
}

/// Copies the kernel makes between two descriptors are followed per file like a read and
/// a write: coreutils' `cp` (copy_file_range) and a sendfile from Python put the copied
/// bytes on the source's and the destination's phases, to the byte, and a run that wrote
/// nothing to the device in its time says so (no write amplification of 1 taken from the
/// bytes the process dirtied).
#[test]
fn kernel_copies_between_files_are_followed_per_file() {
    let _g = serial();
    if !common::is_root() || !common::need_bpf() || !common::need_programs(&["cp", "python3"]) {
        return;
    }
    let dir = scratch();
    let from = dir.path().join("from");
    std::fs::write(&from, vec![b'k'; 3_000_000]).unwrap();
    let sendfile = "import os,sys\n\
        i=os.open(sys.argv[1],os.O_RDONLY);o=os.open(sys.argv[2],os.O_WRONLY|os.O_CREAT,0o644)\n\
        off=0\n\
        while True:\n    n=os.sendfile(o,i,None,1<<20)\n    off+=n\n    if n==0: break\n";
    for (how, cmd) in [
        ("cp", vec!["cp".to_string()]),
        (
            "sendfile",
            vec!["python3".to_string(), "-c".into(), sendfile.into()],
        ),
    ] {
        let to = dir.path().join(format!("to-{how}"));
        let mut args = cmd.clone();
        args.push(from.display().to_string());
        args.push(to.display().to_string());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (out, v) = audit(dir.path(), "bpf", &args);
        assert!(out.status.success(), "{how}: {}", common::text(&out.stderr));
        assert_eq!(std::fs::metadata(&to).unwrap().len(), 3_000_000, "{how}");
        let phase = |path: &Path| {
            arr(&v["audit"]["phases"])
                .into_iter()
                .find(|p| p["path"] == path.display().to_string())
                .unwrap_or_else(|| panic!("{how}: no phase for {}: {v:#}", path.display()))
        };
        let (src, dst) = (phase(&from), phase(&to));
        assert_eq!(u(&src["read_bytes"]), 3_000_000, "{how}: {src:#}");
        assert_eq!(u(&src["write_bytes"]), 0, "{how}: {src:#}");
        assert_eq!(u(&dst["write_bytes"]), 3_000_000, "{how}: {dst:#}");
        assert_eq!(u(&dst["read_bytes"]), 0, "{how}: {dst:#}");
        // The kernel counts these copies in the tasks' write counters too: the file
        // records hold every byte they say the tree wrote, but for its writes to pipes
        // (the interpreter's launcher scripts).
        let c = &v["audit"]["account"]["completeness"];
        assert!(
            u(&c["process_write_bytes"]) <= u(&c["file_write_bytes"]) + u(&c["other_bytes"]),
            "{how}: {c:#}"
        );
        // Neither program flushes: what the device wrote for them inside the run is what
        // the tracer's own count says, never the bytes they dirtied.
        let acc = &v["audit"]["account"];
        let own: u64 = acc["device_traffic"]
            .as_object()
            .map(|m| m.values().map(|t| u(&t["own_write_bytes"])).sum())
            .unwrap_or(0);
        let wa = acc["write_amplification"].as_f64().unwrap_or(0.0);
        assert!(
            (wa - own as f64 / u(&acc["write"]["bytes"]) as f64).abs() < 1e-9,
            "{how}: amplification {wa} from the device's {own} bytes: {acc:#}"
        );
    }
}

/// On a filesystem of its own (ext4 on a loop device, which nothing else uses), fs_mark's
/// write amplification in the account is within 10% of the device's own count of bytes
/// written over the bytes fs_mark wrote, and dbench's page-cache share of reads (its load
/// file copied there too) within 0.05 of 1 - device reads / bytes read.
#[test]
fn amplification_and_cache_share_against_the_device_counters() {
    if !common::need_programs(&["fs_mark", "dbench"]) || !common::need_root("for a loop device") {
        return;
    }
    if !common::need_bpf() {
        return;
    }
    let Some(fs) = common::scratch("ext4", 512 << 20) else {
        return;
    };
    let _g = serial();
    let lo = fs.loop_device.clone();
    let name = lo.trim_start_matches("/dev/").to_string();
    let mnt = fs.path().to_path_buf();
    let dir = scratch();
    let settle = || {
        // SAFETY: sync takes no arguments.
        unsafe { libc::sync() };
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    // fs_mark: 500 files of 4 KiB, an fsync each. fs_mark keeps its directory's name in a
    // short buffer: it is given a short relative path (a link to the mount).
    std::os::unix::fs::symlink(&mnt, dir.path().join("m")).expect("a link to the mount");
    settle();
    let before = common::disk_bytes(&lo);
    let fm = std::path::PathBuf::from("m/fm");
    let (out, v) = audit(
        dir.path(),
        "bpf",
        &[
            "fs_mark",
            "-d",
            fm.to_str().unwrap(),
            "-n",
            "500",
            "-s",
            "4096",
            "-t",
            "1",
        ],
    );
    let after = common::disk_bytes(&lo);
    assert!(out.status.success(), "{}", common::text(&out.stderr));
    let acc = &v["audit"]["account"];
    let written = u(&acc["write"]["bytes"]) as f64;
    let device = (after.1 - before.1) as f64;
    let truth = device / written;
    let amp = acc["write_amplification"].as_f64().expect("amplification");
    assert!(
        (amp / truth - 1.0).abs() <= 0.10,
        "write amplification {amp:.3} against the device's {truth:.3} ({device} bytes for {written})"
    );
    let traffic = &acc["device_traffic"][&name];
    assert_eq!(traffic["foreign_write_bytes"], 0, "{traffic}");
    // dbench, with its load file on the same filesystem.
    let load = mnt.join("client.txt");
    std::fs::copy("/usr/share/dbench/client.txt", &load).expect("dbench's load file");
    let db = mnt.join("db");
    std::fs::create_dir(&db).unwrap();
    settle();
    let before = common::disk_bytes(&lo);
    let (out, v) = audit(
        dir.path(),
        "bpf",
        &[
            "dbench",
            "-c",
            load.to_str().unwrap(),
            "-D",
            db.to_str().unwrap(),
            "-t",
            "3",
            "2",
        ],
    );
    let after = common::disk_bytes(&lo);
    assert!(out.status.success(), "{}", common::text(&out.stderr));
    let acc = &v["audit"]["account"];
    let read = u(&acc["read"]["bytes"]) as f64;
    let truth = 1.0 - (after.0 - before.0) as f64 / read;
    let share = u(&acc["read_from_cache_bytes"]) as f64 / read;
    assert!(
        (share - truth).abs() <= 0.05,
        "cache share {share:.3} against {truth:.3} ({} device bytes read for {read})",
        after.0 - before.0
    );
    eprintln!("fs_mark amplification {amp:.3}; dbench cache share {share:.4} (device: {truth:.4})");
}

/// A phase's kind is what it did: one perl process opens one file read-write, reads 13
/// blocks of 64 KiB and writes one (851968 bytes read, 65536 written, in one open..close).
/// The phase is `mixed` with its exact read share (13/14), and the text says so with the
/// shares (it was once called `read`, by a rule that ignored a direction below one eighth
/// of the other).
#[test]
fn a_phase_that_reads_and_writes_is_mixed_with_its_shares() {
    if !common::need_programs(&["perl"]) {
        return;
    }
    let _g = serial();
    for w in witnesses() {
        let dir = scratch();
        let f = dir.path().join("rw.dat");
        std::fs::write(&f, vec![7u8; 1 << 20]).expect("the file");
        let script = "open(my $f, '+<', $ARGV[0]) or die; my $b; \
                      for (1..13) { sysread($f, $b, 65536) == 65536 or die } \
                      syswrite($f, 'x' x 65536) == 65536 or die; \
                      select(undef, undef, undef, 0.2); close($f) or die";
        let (out, v) = audit(dir.path(), w, &["perl", "-e", script, f.to_str().unwrap()]);
        let (_, stderr) = output_of(&out);
        assert!(out.status.success(), "{w}: {stderr}");
        let phases = arr(&v["audit"]["phases"]);
        let p = phases
            .iter()
            .find(|p| p["path"].as_str().is_some_and(|s| s.ends_with("/rw.dat")))
            .unwrap_or_else(|| panic!("{w}: no phase of rw.dat in {phases:#?}"));
        assert_eq!(p["kind"], "mixed", "{w}: {p:#}");
        if w == "bpf" {
            // procfs shares the process's other reads of a tick (perl's own start-up)
            // among the files whose positions moved in it: a few KiB more.
            assert_eq!((u(&p["read_bytes"]), u(&p["write_bytes"])), (851968, 65536));
            assert_eq!(p["read_share"].as_f64(), Some(13.0 / 14.0), "{w}: {p:#}");
        }
        assert_eq!(
            p["kind_words"], "mixed: 93% read / 7% write by bytes",
            "{w}: {p:#}"
        );
        let files = arr(&v["audit"]["account"]["files"]);
        let line = files
            .iter()
            .find(|x| x["path"].as_str().is_some_and(|s| s.ends_with("/rw.dat")))
            .unwrap_or_else(|| panic!("{w}: {files:#?}"));
        assert_eq!(line["direction"], "mixed", "{w}: {line:#}");
        assert!(
            stderr.contains("rw.dat (mixed: 93% read / 7% write by bytes)"),
            "{w}: {stderr}"
        );
    }
}
