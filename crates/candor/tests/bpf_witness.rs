//! `candor run` as root with the eBPF witness: by default it traces block requests, the
//! page cache and writeback but not every system call (the syscall tracepoints cost each
//! call about 0.2 µs); `--trace-syscalls` adds per-call figures, which must count exactly
//! the calls candor made.

mod common;
use common::{need_bpf, run_in, text};

/// Runs a 16 MiB psync write in 4 KiB records with the eBPF witness and returns the
/// test's witness block, or None (after a skip) when this machine has no eBPF witness; as
/// root in a build with the programs, a witness that does not load is a failure.
fn write_16m_4k(extra: &[&str]) -> Option<serde_json::Value> {
    test_16m_4k("write", extra)
}

fn test_16m_4k(test: &str, extra: &[&str]) -> Option<serde_json::Value> {
    if !need_bpf() {
        return None;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let mut args = vec![
        "--witness",
        "bpf",
        "--tests",
        test,
        "--engine",
        "psync",
        "--file-size",
        "16m",
        "--record-size",
        "4k",
        "--repeat",
        "1",
        "--format",
        "json",
    ];
    args.extend_from_slice(extra);
    let o = run_in(dir.path(), &args);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON on stdout");
    let w = doc["results"][0]["witness"].clone();
    assert_eq!(
        w["source"],
        "bpf",
        "the eBPF witness did not load as root: {}",
        text(&o.stderr).trim()
    );
    Some(w)
}

#[test]
fn by_default_the_bpf_witness_leaves_syscalls_untraced_and_says_so() {
    let Some(w) = write_16m_4k(&[]) else { return };
    assert!(w["syscalls"].is_null(), "{}", w["syscalls"]);
    let why = w["extra"]["bpf_syscalls"].as_str().unwrap_or_default();
    assert!(why.contains("--trace-syscalls"), "{why}");
    // The exact figures that cost nothing per call are there: the block requests of the
    // write (the flush is in the timing, so all 16 MiB reach the device) and the cache.
    let block = w["block"]["write"]["bytes"].as_u64().unwrap_or(0);
    assert!(
        block >= 16 << 20,
        "block write bytes {block}; the witness's exact figures: {}",
        w["extra"]["facts"]["exact"]
    );
    // A test that only writes leaves the pages it adds to the cache uncounted, and says why.
    assert!(w["cache_misses"].is_null(), "{w}");
    let why = w["extra"]["bpf_cache_inserts"].as_str().unwrap_or_default();
    assert!(why.contains("only writes"), "{w}");
}

/// A test that reads counts the pages its reads brought into the cache: a 16 MiB file
/// read with its pages dropped first brings in every one of its 4096 pages that was not
/// in memory when the read began (none, unless the kernel kept some of them).
#[test]
fn a_read_counts_the_pages_it_brings_into_the_cache() {
    let Some(w) = test_16m_4k("read", &[]) else {
        return;
    };
    let resident = w["file_cache"]["resident_before"].as_u64().unwrap_or(0);
    let pages = w["cache_misses"].as_u64();
    assert!(
        pages.is_some_and(|p| p + resident >= 4096),
        "cache_misses {pages:?}, {resident} pages in memory before: {w}"
    );
    assert!(w["extra"]["bpf_cache_inserts"].is_null(), "{w}");
}

#[test]
fn trace_syscalls_counts_each_4k_write_of_a_16m_file() {
    let Some(w) = write_16m_4k(&["--trace-syscalls"]) else {
        return;
    };
    let pw = &w["syscalls"]["pwrite64"];
    assert_eq!(pw["count"].as_u64(), Some(4096), "{}", w["syscalls"]);
    assert_eq!(pw["bytes"].as_u64(), Some(16 << 20));
    assert!(pw["time_ns"].as_u64().unwrap_or(0) > 0);
    // The flush timed with the test is its one fsync.
    assert_eq!(w["syscalls"]["fsync"]["count"].as_u64(), Some(1));
    assert!(w["extra"].get("bpf_syscalls").is_none());
}
