//! `--time-based` and `--cpus`, driven through the real binary: a time-based run keeps
//! going over the file until its runtime ends (so it moves more than one pass), pinned
//! threads run on the CPUs they were given (as the run records it and as /proc shows it
//! while the run goes on), and bad values get exit code 2 and one sentence.

use std::process::Output;

mod common;
use common::{candor, run_in};

fn first_result(out: &Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    doc["results"][0].clone()
}

#[test]
fn time_based_goes_over_the_file_until_the_runtime_ends() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_in(
        dir.path(),
        &[
            "--engine",
            "psync",
            "--tests",
            "randread",
            "--file-size",
            "1m",
            "--record-size",
            "4k",
            "--keep-cache",
            "--runtime",
            "300ms",
            "--time-based",
            "--repeat",
            "1",
            "--witness",
            "off",
            "--format",
            "json",
        ],
    );
    let r = first_result(&out);
    assert_eq!(r["status"], "ok");
    let rep = &r["reps"][0];
    let ops = rep["ops"].as_u64().unwrap();
    // 256 records per pass; a cached pass takes well under the 300 ms.
    assert!(ops > 256 * 2, "{ops} operations: expected several passes");
    assert_eq!(rep["truncated"], false);
    let secs = rep["seconds"].as_f64().unwrap();
    assert!((0.25..5.0).contains(&secs), "{secs} s for a 300 ms runtime");
    assert_eq!(
        r["latency_ns"]["count"].as_u64().unwrap(),
        ops,
        "every operation timed"
    );
}

/// Copy and metadata tests pin their threads as record tests do, and record it: thread i
/// on the i-th CPU listed (wrapping around), in every repetition.
#[test]
fn copy_and_metadata_threads_are_pinned_and_recorded() {
    let mine = allowed_list(&std::fs::read_to_string("/proc/self/status").unwrap())
        .expect("this process's Cpus_allowed_list");
    if mine.len() < 2 {
        common::skip(format!(
            "pinning is not observable on one CPU (this process may use {mine:?})"
        ));
        return;
    }
    let (first, last) = (mine[0], mine[mine.len() - 1]);
    let list = format!("{last},{first}");
    let want = [last, first, last];
    let dir = tempfile::tempdir().unwrap();
    let out = run_in(
        dir.path(),
        &[
            "--tests",
            "copy,create,stat,unlink",
            "--threads",
            "3",
            "--file-size",
            "256k",
            "--record-size",
            "64k",
            "--files",
            "50",
            "--repeat",
            "2",
            "--cpus",
            &list,
            "--witness",
            "off",
            "--format",
            "json",
        ],
    );
    first_result(&out);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let results = doc["results"].as_array().unwrap();
    let names: Vec<&str> = results
        .iter()
        .map(|r| r["test"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["copy", "create", "stat", "unlink"], "{doc}");
    for r in results {
        let test = &r["test"];
        assert_eq!(r["status"], "ok", "{test}: {r}");
        let reps = r["reps"].as_array().unwrap();
        assert_eq!(reps.len(), 2, "{test}");
        for (k, rep) in reps.iter().enumerate() {
            let pinned = rep["pinned"]
                .as_array()
                .unwrap_or_else(|| panic!("{test} rep {k}: no pinned threads recorded: {rep}"));
            assert_eq!(pinned.len(), 3, "{test} rep {k}: one record per thread");
            for (i, (p, &cpu)) in pinned.iter().zip(&want).enumerate() {
                assert_eq!(
                    p["allowed"],
                    serde_json::json!([cpu]),
                    "{test} rep {k} thread {i}"
                );
                assert_eq!(
                    p["last_cpu"], cpu,
                    "{test} rep {k} thread {i} ran elsewhere"
                );
            }
        }
    }
    // Without --cpus nothing is pinned and nothing is recorded.
    let out = run_in(
        dir.path(),
        &[
            "--tests",
            "copy,create",
            "--threads",
            "2",
            "--file-size",
            "64k",
            "--files",
            "10",
            "--witness",
            "off",
            "--format",
            "json",
        ],
    );
    first_result(&out);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for r in doc["results"].as_array().unwrap() {
        assert!(r["reps"][0].get("pinned").is_none(), "{}", r["reps"][0]);
    }
}

/// The CPUs a task may run on, from its `Cpus_allowed_list` line ("0-1,3").
fn allowed_list(status: &str) -> Option<Vec<u32>> {
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?
        .trim();
    let mut cpus = Vec::new();
    for part in list.split(',').filter(|p| !p.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        cpus.extend(a.parse::<u32>().ok()?..=b.parse::<u32>().ok()?);
    }
    Some(cpus)
}

/// Each of the process's tasks: its CPUs allowed and the CPU it last ran on (field 39 of
/// its stat line). Tasks that end while being read are left out.
fn tasks(pid: u32) -> Vec<(Vec<u32>, u32)> {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|t| {
            let status = std::fs::read_to_string(t.path().join("status")).ok()?;
            let stat = std::fs::read_to_string(t.path().join("stat")).ok()?;
            // The fields after the command name, which may hold spaces, start at 3.
            let after = &stat[stat.rfind(')')? + 2..];
            let cpu = after.split(' ').nth(39 - 3)?.parse().ok()?;
            Some((allowed_list(&status)?, cpu))
        })
        .collect()
}

#[test]
fn pinned_threads_run_where_they_were_pinned_and_bad_cpu_lists_are_refused() {
    let mine = allowed_list(&std::fs::read_to_string("/proc/self/status").unwrap())
        .expect("this process's Cpus_allowed_list");
    if mine.len() < 2 {
        common::skip(format!(
            "pinning is not observable on one CPU (this process may use {mine:?})"
        ));
        return;
    }
    // The last CPU and the first, in that order: thread i goes to the i-th listed, wrapping
    // around, so three threads land on last, first, last; unpinned they could run on any.
    let (first, last) = (mine[0], mine[mine.len() - 1]);
    let list = format!("{last},{first}");
    let want = [last, first, last];
    let dir = tempfile::tempdir().unwrap();
    let out = run_in(
        dir.path(),
        &[
            "--engine",
            "io_uring",
            "--iodepth",
            "4",
            "--threads",
            "3",
            "--tests",
            "randread",
            "--file-size",
            "1m",
            "--record-size",
            "4k",
            "--keep-cache",
            "--repeat",
            "2",
            "--cpus",
            &list,
            "--witness",
            "off",
            "--format",
            "json",
        ],
    );
    let doc: serde_json::Value = {
        let r = first_result(&out);
        assert_eq!(r["status"], "ok");
        serde_json::from_slice(&out.stdout).unwrap()
    };
    assert_eq!(doc["options"]["cpus"], serde_json::json!([last, first]));
    for (k, rep) in doc["results"][0]["reps"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
    {
        let pinned = rep["pinned"].as_array().expect("pinned threads recorded");
        assert_eq!(pinned.len(), 3, "rep {k}: one record per thread");
        for (i, (p, &cpu)) in pinned.iter().zip(&want).enumerate() {
            assert_eq!(p["allowed"], serde_json::json!([cpu]), "rep {k} thread {i}");
            assert_eq!(p["last_cpu"], cpu, "rep {k} thread {i} ran elsewhere");
        }
    }
    // Without --cpus nothing is pinned and nothing is recorded.
    let out = run_in(
        dir.path(),
        &[
            "--tests",
            "randread",
            "--threads",
            "2",
            "--file-size",
            "64k",
            "--keep-cache",
            "--witness",
            "off",
            "--format",
            "json",
        ],
    );
    let r = first_result(&out);
    assert!(r["reps"][0].get("pinned").is_none(), "{}", r["reps"][0]);

    // Seen from outside, as the kernel shows it: while a time-based run of two threads
    // pinned to the last CPU goes on, two of its tasks may run there alone and last ran
    // there. Watched until seen or the run ends, whichever comes first.
    let child = candor()
        .arg("run")
        .arg(dir.path())
        .args([
            "--engine",
            "psync",
            "--threads",
            "2",
            "--tests",
            "randread",
            "--file-size",
            "1m",
            "--record-size",
            "4k",
            "--keep-cache",
            "--runtime",
            "2s",
            "--time-based",
            "--cpus",
            &last.to_string(),
            "--witness",
            "off",
            "--quiet",
        ])
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("candor runs");
    let pid = child.id();
    let mut seen = Vec::new();
    let mut child = child;
    while child.try_wait().unwrap().is_none() {
        let now = tasks(pid);
        let pinned: Vec<_> = now.iter().filter(|(a, _)| a == &[last]).collect();
        if pinned.len() >= 2 {
            seen = now;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let status = child.wait().unwrap();
    assert!(status.success(), "exit {:?}", status.code());
    let pinned: Vec<_> = seen.iter().filter(|(a, _)| a == &[last]).collect();
    assert!(
        pinned.len() >= 2,
        "no two tasks pinned to CPU {last} were seen during the run: {seen:?}"
    );
    assert!(
        pinned.iter().all(|&&(_, cpu)| cpu == last),
        "a pinned task last ran elsewhere: {pinned:?}"
    );
    // The main thread is not pinned: it may still use every CPU this process may.
    assert!(
        seen.iter().any(|(a, _)| a == &mine),
        "the main thread keeps the process's CPUs: {seen:?}"
    );

    for bad in ["x", "3-1", "100000", ","] {
        let out = run_in(
            dir.path(),
            &["--tests", "read", "--file-size", "64k", "--cpus", bad],
        );
        assert_eq!(out.status.code(), Some(2), "--cpus {bad}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("--cpus"), "--cpus {bad}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "one sentence: {err}");
    }
    let out = run_in(
        dir.path(),
        &["--tests", "read", "--file-size", "64k", "--time-based"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--runtime"));
    // Nothing left behind by the refused runs.
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// io_uring can be traced here: strace is installed and the kernel allows io_uring (else a
/// counted skip, with its reason).
fn io_uring_under_strace_can_run() -> bool {
    if !common::need_programs(&["strace"]) {
        return false;
    }
    if std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled").is_ok_and(|v| v.trim() != "0")
    {
        common::skip("io_uring is disabled (kernel.io_uring_disabled)");
        return false;
    }
    true
}

/// A directory for one strace test on the disk under /var/tmp (O_DIRECT and dropped pages
/// need a real filesystem, not tmpfs), and the run directory `run` inside it.
fn uring_scratch(prefix: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in("/var/tmp")
        .expect("a directory under /var/tmp");
    let work = dir.path().join("run");
    std::fs::create_dir(&work).unwrap();
    (dir, work)
}

/// A time-based io_uring randread of 1 MiB records at depth 8 in `work`, one repetition,
/// witness off, with `extra` options, under `strace -f -e FILTER -o LOG`: its first result
/// and strace's log.
fn io_uring_under_strace(
    work: &std::path::Path,
    filter: &str,
    log: &std::path::Path,
    extra: &[&str],
) -> (serde_json::Value, String) {
    io_uring_test_under_strace(work, "randread", filter, log, extra)
}

/// As [`io_uring_under_strace`], for the test `test`.
fn io_uring_test_under_strace(
    work: &std::path::Path,
    test: &str,
    filter: &str,
    log: &std::path::Path,
    extra: &[&str],
) -> (serde_json::Value, String) {
    let out = std::process::Command::new("strace")
        .args(["-f", "-qq", "-e", filter, "-o"])
        .arg(log)
        .arg(env!("CARGO_BIN_EXE_candor"))
        .arg("run")
        .arg(work)
        .args(["--engine", "io_uring", "--iodepth", "8", "--tests", test])
        .args(["--record-size", "1m", "--time-based", "--repeat", "1"])
        .args(["--witness", "off", "--format", "json", "--quiet"])
        .args(extra)
        .output()
        .expect("strace runs");
    let r = first_result(&out);
    (r, std::fs::read_to_string(log).expect("strace's log"))
}

/// An uncached time-based io_uring test drops the file's pages before every pass but keeps
/// its ring: one `io_uring_setup` per thread for the whole run, however many passes, and
/// one `POSIX_FADV_DONTNEED` per pass after the first. Closing and opening the engine
/// around every drop made the ring, its io-wq workers and 32 MiB of registered buffers
/// anew each pass (22 ring setups in 1 s on an 8 MiB file of 1 MiB records, 186 MB/s under
/// strace, against 1 setup and 926 MB/s since).
#[test]
fn io_uring_keeps_its_ring_across_passes_that_drop_the_cache() {
    if !io_uring_under_strace_can_run() {
        return;
    }
    // On the disk, not /tmp: the test must be one meant for the device (pages dropped).
    let (dir, work) = uring_scratch("candor-uring-passes");
    let trace = dir.path().join("strace.out");
    let (r, log) = io_uring_under_strace(
        &work,
        "trace=io_uring_setup,fadvise64",
        &trace,
        &["--file-size", "4m", "--runtime", "500ms"],
    );
    assert_eq!(r["status"], "ok", "{r}");
    let ops = r["reps"][0]["ops"].as_u64().unwrap();
    let passes = ops / 4;
    assert!(passes >= 3, "{ops} operations: expected several passes");
    let setups = log
        .lines()
        .filter(|l| l.contains("io_uring_setup(") && !l.contains("= -"))
        .count();
    let drops = log
        .lines()
        .filter(|l| l.contains("POSIX_FADV_DONTNEED"))
        .count() as u64;
    assert_eq!(setups, 1, "one ring for the whole run:\n{log}");
    // Pages to drop between passes: the queue drains at the end of each (4 records).
    let (r, log) = io_uring_under_strace(
        &work,
        "trace=io_uring_enter",
        &dir.path().join("enter.out"),
        &["--file-size", "4m", "--runtime", "300ms"],
    );
    assert_eq!(r["status"], "ok");
    assert_eq!(
        largest_submit(&log),
        4,
        "one pass at a time when its pages go"
    );
    assert!(
        drops + 1 >= passes,
        "{drops} page drops for {passes} passes: every pass after the first starts uncached"
    );
}

/// An O_DIRECT time-based io_uring `test` (1 MiB records, depth 8, 300 ms) on a file of
/// `file_size` in `work`, its `io_uring_enter` calls traced to `log`: the operations it
/// counted, after checking it ended well, and strace's log.
fn direct_enters(
    work: &std::path::Path,
    test: &str,
    file_size: &str,
    log: &std::path::Path,
) -> (u64, String) {
    let (r, log) = io_uring_test_under_strace(
        work,
        test,
        "trace=io_uring_enter",
        log,
        &["--direct", "--file-size", file_size, "--runtime", "300ms"],
    );
    assert_eq!(r["status"], "ok", "{r}");
    (r["reps"][0]["ops"].as_u64().unwrap(), log)
}

/// The first `n` lines of a log, for a failure's message.
fn head(log: &str, n: usize) -> String {
    log.lines().take(n).collect::<Vec<_>>().join("\n")
}

/// The largest `to_submit` of any `io_uring_enter` in an strace log.
fn largest_submit(log: &str) -> u64 {
    submits(log).into_iter().max().unwrap_or(0)
}

/// The `to_submit` of every `io_uring_enter` in an strace log, in order.
fn submits(log: &str) -> Vec<u64> {
    log.lines()
        .filter_map(|l| l.split_once("io_uring_enter(")?.1.split(", ").nth(1))
        .filter_map(|n| n.parse().ok())
        .collect()
}

/// A time-based io_uring test with nothing to do between passes (cached here; O_DIRECT
/// alike) goes on into the next pass with its queue full. With 4 records per pass and 8
/// slots, once the reads are seen to complete inline (page cache hits: whole batches, no
/// chunks) an `io_uring_enter` submits all 8 (4 from each of two passes); an engine that
/// drained its queue at the end of every pass never had more than 4 in flight (1 MiB
/// records on a 128 MiB file at depth 32: the last 32 of every 128 I/Os went out at a
/// falling depth).
#[test]
fn io_uring_keeps_its_queue_full_across_passes() {
    if !io_uring_under_strace_can_run() {
        return;
    }
    let (dir, work) = uring_scratch("candor-uring-queue");
    let trace = dir.path().join("strace.out");
    let (r, log) = io_uring_under_strace(
        &work,
        "trace=io_uring_enter",
        &trace,
        &["--file-size", "4m", "--keep-cache", "--runtime", "300ms"],
    );
    assert_eq!(r["status"], "ok", "{r}");
    let ops = r["reps"][0]["ops"].as_u64().unwrap();
    assert!(ops >= 4 * 3, "{ops} operations: expected several passes");
    assert_eq!(
        largest_submit(&log),
        8,
        "every slot in flight across the passes' ends:\n{}",
        &log[..log.len().min(4000)]
    );
}

/// I/O that goes to a device is handed to the kernel 4 requests at a time, so the device
/// starts on the first while the rest are built (a whole queue in one call is plugged and
/// reaches the device only with its last request); records the block layer merges into
/// one request go together. At depth 8 with O_DIRECT: a stride read of 1 MiB records (17
/// apart on a 64 MiB file, so no two are adjacent) never submits more than 4 in a call,
/// and its first fill is two calls of 4; a sequential read submits all 8 in one call, as
/// they merge. The engine that submitted whole batches submitted 8 in both. Reads served
/// inline get whole batches too: `io_uring_keeps_its_queue_full_across_passes`.
#[test]
fn io_uring_hands_a_device_its_queue_in_chunks() {
    if !io_uring_under_strace_can_run() {
        return;
    }
    let (dir, work) = uring_scratch("candor-uring-chunks");
    let (ops, log) = direct_enters(&work, "strideread", "64m", &dir.path().join("stride.out"));
    assert!(ops >= 16, "{ops} operations: expected more than two fills");
    assert_eq!(
        submits(&log).into_iter().take(2).collect::<Vec<_>>(),
        vec![4, 4],
        "the first fill in two chunks:\n{}",
        head(&log, 20)
    );
    assert_eq!(
        largest_submit(&log),
        4,
        "a call handed the device more than a chunk"
    );
    let (_, log) = direct_enters(&work, "read", "64m", &dir.path().join("seq.out"));
    assert_eq!(
        largest_submit(&log),
        8,
        "contiguous records go in one call:\n{}",
        head(&log, 20)
    );
}

/// Every `io_uring_enter` of an O_DIRECT io_uring test reaps at least one completion: the
/// loop waits for one per call, and hands the kernel the completion ring's head before the
/// next. With the head left behind (kept in the process until the call after), each call
/// that submitted returned at once on the completions already reaped and a second call
/// waited: 2513 calls for about 1250 I/Os (read, O_DIRECT, 1 MiB, depth 32, 2 threads, 1 s).
#[test]
fn io_uring_makes_one_enter_per_completion_at_most() {
    if !io_uring_under_strace_can_run() {
        return;
    }
    // On the disk, not /tmp (tmpfs refuses O_DIRECT).
    let (dir, work) = uring_scratch("candor-uring-enters");
    let (ops, log) = direct_enters(&work, "randread", "8m", &dir.path().join("enter.out"));
    assert!(ops >= 16, "{ops} operations: expected more than a pass");
    let enters = log
        .lines()
        .filter(|l| l.contains("io_uring_enter("))
        .count() as u64;
    // At most one call per completion; a tenth more for calls a signal cut short.
    assert!(
        enters <= ops + ops / 10,
        "{enters} io_uring_enter calls for {ops} I/Os:\n{}",
        head(&log, 40)
    );
}
