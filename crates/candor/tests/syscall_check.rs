//! Copy and metadata tests reconciled by their system calls: `candor run --witness bpf` as
//! root on an ext4 made for the test on a loop device. The counts asserted come from the
//! arguments (100 or 4000 entries, a 1 MiB file in 4 KiB or 48 KiB records), not from what the
//! runner says, so a runner that miscounts and a witness that agrees with it anyway both
//! fail. Without root or eBPF each case is a counted skip; with them, a witness that does
//! not load is a failure. The procfs case needs neither.

mod common;
use common::{need_bpf, run_in, text};
use serde_json::Value;
use std::path::Path;
use std::sync::Mutex;

/// The cases share the loop devices and the tracer: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn results(dir: &Path, witness: &str, args: &[&str]) -> Vec<Value> {
    let mut all = vec!["--witness", witness, "--format", "json", "--repeat", "1"];
    all.extend_from_slice(args);
    let o = run_in(dir, &all);
    assert!(o.status.success(), "{args:?}: {}", text(&o.stderr));
    let doc: Value = serde_json::from_slice(&o.stdout).expect("JSON on stdout");
    let rs = doc["results"].as_array().cloned().unwrap_or_default();
    assert!(!rs.is_empty(), "{args:?}: no result");
    for r in &rs {
        assert_eq!(
            r["witness"]["source"],
            witness,
            "the {witness} witness did not load: {}",
            text(&o.stderr).trim()
        );
    }
    rs
}

fn check<'a>(rs: &'a [Value], test: &str) -> &'a Value {
    let r = rs
        .iter()
        .find(|r| r["test"] == test)
        .unwrap_or_else(|| panic!("no {test} result"));
    let c = &r["witness"]["syscalls_check"];
    eprintln!("{test}: {}", c["sentence"]);
    c
}

/// (expected, counted) calls of one kind.
fn calls(c: &Value, kind: &str) -> (Option<u64>, Option<u64>) {
    let k = &c["kinds"][kind];
    (k["expected"].as_u64(), k["counted"].as_u64())
}

/// 100 of each metadata operation (no more than the sample: all of them are counted) are
/// 100 calls of its kind to the kernel, and the listing of 100 entries is their records,
/// byte for byte.
#[test]
fn a_hundred_metadata_operations_are_a_hundred_calls() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !need_bpf() {
        return;
    }
    let Some(fs) = common::scratch("ext4", 256 << 20) else {
        return;
    };
    let rs = results(
        fs.path(),
        "bpf",
        &[
            "--tests",
            "create,stat,open,readdir,unlink,mkdir,rmdir",
            "--files",
            "100",
        ],
    );
    let n = Some(100);
    for (test, kinds) in [
        ("create", &["create", "openat", "close"][..]),
        ("stat", &["stat"]),
        ("open", &["openat", "close"]),
        ("unlink", &["unlink"]),
        ("mkdir", &["mkdir"]),
        ("rmdir", &["rmdir"]),
    ] {
        let c = check(&rs, test);
        assert_eq!(c["verdict"], "match", "{test}: {c:#}");
        for k in kinds {
            assert_eq!(calls(c, k), (n, n), "{test} {k}: {c:#}");
        }
        let w = &rs.iter().find(|r| r["test"] == test).expect("result")["witness"];
        assert_ne!(w["verdict"], "unverified", "{w:#}");
        // Counted for this test only, not traced: the block says where the counts are.
        let why = w["extra"]["bpf_syscalls"].as_str().unwrap_or_default();
        assert!(why.contains("syscalls_check"), "{w:#}");
        // Every operation was counted: no sample is named.
        assert!(c["sample"].is_null(), "{c:#}");
        assert_eq!(c["counted_by"], "ebpf", "{c:#}");
    }
    // The listing: one open and one close of the directory; its records are 32 bytes for
    // each f00000000 and 24 for . and .. (19 bytes and the name with its NUL, 8-aligned).
    // Always counted whole: a listing is a handful of calls.
    let c = check(&rs, "readdir");
    assert_eq!(c["verdict"], "match", "{c:#}");
    assert_eq!(calls(c, "openat"), (Some(1), Some(1)), "{c:#}");
    assert_eq!(calls(c, "close"), (Some(1), Some(1)), "{c:#}");
    let g = &c["kinds"]["getdents64"];
    assert_eq!(g["expected_bytes"], 100 * 32 + 2 * 24, "{c:#}");
    assert_eq!(g["counted_bytes"], 100 * 32 + 2 * 24, "{c:#}");
    assert!(g["counted"].as_u64().unwrap_or(0) >= 2, "{c:#}");
}

/// Longer metadata passes are counted on a sample, exactly, and the result says so: 2
/// threads of 4000 entries, each counted for its first 200 operations (a twentieth): 400
/// calls of the kind of the 8000 operations.
#[test]
fn a_metadata_run_counts_a_sample_exactly_and_says_so() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !need_bpf() {
        return;
    }
    let Some(fs) = common::scratch("ext4", 256 << 20) else {
        return;
    };
    let rs = results(
        fs.path(),
        "bpf",
        &[
            "--tests",
            "create,stat",
            "--files",
            "4000",
            "--threads",
            "2",
        ],
    );
    for (test, kinds) in [
        ("create", &["create", "openat", "close"][..]),
        ("stat", &["stat"]),
    ] {
        let c = check(&rs, test);
        assert_eq!(c["verdict"], "match", "{test}: {c:#}");
        for k in kinds {
            assert_eq!(calls(c, k), (Some(400), Some(400)), "{test} {k}: {c:#}");
        }
        assert_eq!(c["sample"]["ops"], 400, "{c:#}");
        assert_eq!(c["sample"]["of"], 8000, "{c:#}");
        let s = c["sentence"].as_str().unwrap_or_default();
        assert!(
            s.starts_with(
                "The kernel counted the system calls the runner made in a sample of 400 of its 8000 operations"
            ),
            "{s}"
        );
        assert!(s.contains("slow path"), "{s}");
        // The rest of the timed region ran without the program, and the figure still counts
        // every operation.
        let r = rs.iter().find(|r| r["test"] == test).expect("result");
        assert_eq!(
            r["witness"]["extra"]["facts"]["ops"]["count"], 8000,
            "{test}"
        );
    }
}

/// A copy's reads and writes are the kernel's, in number and in bytes, counted by each
/// thread's own /proc io counters (no tracepoint); a record size that does not divide the
/// file ends with a short read and write.
#[test]
fn a_copy_is_its_reads_and_writes() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !need_bpf() {
        return;
    }
    let Some(fs) = common::scratch("ext4", 256 << 20) else {
        return;
    };
    for (record, n) in [("4k", 256u64), ("48k", 22)] {
        let rs = results(
            fs.path(),
            "bpf",
            &[
                "--tests",
                "copy",
                "--file-size",
                "1m",
                "--record-size",
                record,
            ],
        );
        let c = check(&rs, "copy");
        assert_eq!(c["verdict"], "match", "{c:#}");
        assert_eq!(c["counted_by"], "thread_io", "{c:#}");
        for k in ["read", "write"] {
            assert_eq!(calls(c, k), (Some(n), Some(n)), "{record} {k}: {c:#}");
            assert_eq!(c["kinds"][k]["counted_bytes"], 1 << 20, "{c:#}");
        }
        // The source and the copy: two opens, one of them a create, two closes, one fsync,
        // made by the runner and not counted (no program on the syscall tracepoint).
        assert_eq!(calls(c, "openat"), (Some(2), None), "{c:#}");
        assert_eq!(calls(c, "create"), (Some(1), None), "{c:#}");
        assert_eq!(calls(c, "close"), (Some(2), None), "{c:#}");
        assert_eq!(calls(c, "fsync"), (Some(1), None), "{c:#}");
        let s = c["sentence"].as_str().unwrap_or_default();
        assert!(
            s.contains(&format!("exactly: {n} read (1.0 MiB), {n} write (1.0 MiB)")),
            "{s}"
        );
    }
}

/// Without eBPF the per-kind check of a metadata test is not made, and the result says so;
/// a copy's reads and writes are still counted exactly by its thread's own counters.
#[test]
fn without_ebpf_the_calls_are_said_not_counted() {
    let dir = tempfile::tempdir_in("/var/tmp").expect("a directory under /var/tmp");
    let rs = results(
        dir.path(),
        "procfs",
        &[
            "--tests",
            "unlink,copy",
            "--files",
            "100",
            "--file-size",
            "256k",
            "--record-size",
            "4k",
        ],
    );
    let c = check(&rs, "unlink");
    assert_eq!(c["verdict"], "not_counted", "{c:#}");
    assert_eq!(calls(c, "unlink"), (Some(100), None), "{c:#}");
    assert!(
        c["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("does not count system calls per kind"),
        "{c:#}"
    );
    let c = check(&rs, "copy");
    assert_eq!(c["verdict"], "match", "{c:#}");
    assert_eq!(c["counted_by"], "thread_io", "{c:#}");
    for k in ["read", "write"] {
        assert_eq!(calls(c, k), (Some(64), Some(64)), "{k}: {c:#}");
        assert_eq!(c["kinds"][k]["counted_bytes"], 256 << 10, "{c:#}");
    }
}
