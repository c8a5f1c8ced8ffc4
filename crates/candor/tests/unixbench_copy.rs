//! `--preset unixbench-copy`: UnixBench's three File Copy tests as fstime runs them, and the
//! witness saying what their figures are.

mod common;
use common::{entries, run_in};

#[test]
fn unixbench_copy_runs_fstimes_three_tests_and_names_the_page_cache() {
    let dir = tempfile::tempdir_in("/var/tmp")
        .or_else(|_| tempfile::tempdir())
        .unwrap();
    // Two seconds each instead of fstime's 30: the same loop, shorter.
    let o = run_in(
        dir.path(),
        &[
            "--preset",
            "unixbench-copy",
            "--runtime",
            "2s",
            "--format",
            "json",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let doc: candor_model::RunDoc = serde_json::from_slice(&o.stdout).unwrap();
    let got: Vec<(&str, u64, u64)> = doc
        .results
        .iter()
        .map(|r| (r.test.as_str(), r.file_size, r.record_size))
        .collect();
    assert_eq!(
        got,
        [
            ("copy", 2_048_000, 1024),
            ("copy", 512_000, 256),
            ("copy", 8_192_000, 4096)
        ],
        "fstime -b 1024 -m 2000, -b 256 -m 500, -b 4096 -m 8000"
    );
    for r in &doc.results {
        assert_eq!(r.status, candor_model::Status::Ok, "{:?}", r.error);
        let rep = &r.reps[0];
        // Time-based like fstime: the file copied over and over for the run time.
        assert!(
            (1.9..3.0).contains(&rep.seconds),
            "{}: {} s",
            r.record_size,
            rep.seconds
        );
        assert!(
            rep.bytes > 4 * r.file_size,
            "{}: copied {} bytes of a {} file",
            r.record_size,
            rep.bytes,
            r.file_size
        );
        assert_eq!(rep.bytes % r.record_size, 0);
        assert_eq!(
            rep.ops,
            rep.bytes / r.record_size,
            "one read+write per buffer"
        );
        // The pairs' latency is a sample, and the result says so: about one pair in 16,
        // every pair still counted in the throughput and the operations.
        assert_eq!(r.latency_ns.sampled_every, Some(16), "{}", r.record_size);
        let timed = r.latency_ns.count;
        assert!(
            timed * 20 > rep.ops && timed * 12 < rep.ops,
            "{}: {timed} of {} pairs timed",
            r.record_size,
            rep.ops
        );
        let in_buckets: u64 = r.latency_histogram.buckets.iter().map(|b| b[1]).sum();
        assert_eq!(in_buckets, timed);
        // No flush inside the timing, the source in the page cache: the witness says the
        // figure is the page cache's.
        let w = r.witness.as_ref().expect("a witness");
        assert_eq!(
            w.verdict,
            candor_model::Verdict::Cache,
            "{}: {}",
            r.record_size,
            w.explanation
        );
    }
    let raw: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(raw["results"][0]["latency_ns"]["sampled_every"], 16);
    assert_eq!(doc.options.run().map(|o| o.time_based), Some(true));
    assert_eq!(doc.options.run().map(|o| o.fsync_in_timing), Some(false));
    assert!(doc
        .warnings
        .iter()
        .any(|n| n.contains("UnixBench's File Copy")));
    assert!(entries(dir.path()).is_empty(), "nothing left behind");
}
