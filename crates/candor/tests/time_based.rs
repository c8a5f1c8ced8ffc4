//! `--time-based` and `--cpus`, driven through the real binary: a time-based run keeps
//! going over the file until its runtime ends (so it moves more than one pass), pinning
//! runs on the CPUs it was given, and bad values get exit code 2 and one sentence.

use std::process::Output;

mod common;
use common::run_in;

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

#[test]
fn pinned_threads_run_and_bad_cpu_lists_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_in(
        dir.path(),
        &[
            "--engine",
            "io_uring",
            "--iodepth",
            "4",
            "--threads",
            "2",
            "--tests",
            "randread",
            "--file-size",
            "1m",
            "--record-size",
            "4k",
            "--keep-cache",
            "--cpus",
            "0",
            "--witness",
            "off",
            "--format",
            "json",
        ],
    );
    assert_eq!(first_result(&out)["status"], "ok");

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
