//! `candor audit` with eBPF on programs of its own whose every call is known: thousands of
//! small files opened and closed quickly are all in the file records (the kernel's own
//! per-process counters and strace's counts agree), an O_DIRECT mode set later with
//! fcntl(F_SETFL) is followed, and a file both written and read gets its read and write
//! times measured apart.

use serde_json::Value;
use std::path::Path;

mod common;

/// One audit at a time: a test's device traffic would be another test's foreign traffic.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

fn scratch() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("candor-audit-complete")
        .tempdir_in("/var/tmp")
        .or_else(|_| tempfile::tempdir())
        .expect("a temporary directory")
}

fn ready() -> bool {
    common::need_root("for the eBPF witness")
        && common::need_bpf()
        && common::need_programs(&["python3"])
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("a number: {v}"))
}

fn arr(v: &Value) -> Vec<Value> {
    v.as_array().cloned().unwrap_or_default()
}

/// The python3 binary itself (not a wrapper script that would add processes).
fn python() -> String {
    let out = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .expect("python3 runs");
    common::text(&out.stdout).trim().to_string()
}

/// Creates, writes (1000 bytes), fsyncs every 100th, reads back and deletes N files.
const SMALL_FILES: &str = r#"
import os, sys
d = sys.argv[1]; n = int(sys.argv[2])
buf = b"x" * 1000
for i in range(n):
    p = d + "/f" + str(i)
    fd = os.open(p, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
    os.write(fd, buf)
    if i % 100 == 0:
        os.fsync(fd)
    os.close(fd)
    fd = os.open(p, os.O_RDONLY)
    os.read(fd, 4096)
    os.close(fd)
    os.unlink(p)
"#;

/// (read bytes, write bytes, read calls, write calls, fsyncs, phases) of the phases under
/// `dir`.
fn under(v: &Value, dir: &Path) -> (u64, u64, u64, u64, u64, u64) {
    let d = dir.display().to_string();
    let mut t = (0, 0, 0, 0, 0, 0);
    for p in arr(&v["audit"]["phases"]) {
        if p["path"].as_str().unwrap_or("").starts_with(&d) {
            t.0 += u(&p["read_bytes"]);
            t.1 += u(&p["write_bytes"]);
            t.2 += p["read_calls"].as_u64().unwrap_or(0);
            t.3 += p["write_calls"].as_u64().unwrap_or(0);
            t.4 += p["fsync_count"].as_u64().unwrap_or(0);
            t.5 += 1;
        }
    }
    t
}

/// 5000 files created, written, read and deleted as fast as python can: every write and
/// read of them is in the file records (exact figures from the program), the records hold
/// at least 99% of what the kernel's own counters say the processes read and wrote, and
/// under strace the write and read calls are strace's counts.
#[test]
fn thousands_of_small_files_are_all_in_the_file_records() {
    if !ready() {
        return;
    }
    let _g = serial();
    let py = python();
    let dir = scratch();
    let d = dir.path().join("sf");
    std::fs::create_dir(&d).unwrap();
    let script = dir.path().join("small.py");
    std::fs::write(&script, SMALL_FILES).unwrap();
    let (out, v) = common::audit_json(
        dir.path(),
        "bpf",
        &["-q"],
        &[
            &py,
            "-S",
            script.to_str().unwrap(),
            d.to_str().unwrap(),
            "5000",
        ],
    );
    let stderr = common::text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let (r, w, rc, wc, fs, _) = under(&v, &d);
    assert_eq!(
        (r, w, rc, wc, fs),
        (5_000_000, 5_000_000, 5000, 5000, 50),
        "{stderr}"
    );
    // The kernel's own counters of the processes (task->ioac at exit).
    let c = &v["audit"]["account"]["completeness"];
    let file = u(&c["file_read_bytes"]) + u(&c["file_write_bytes"]);
    let procs = u(&c["process_read_bytes"]) + u(&c["process_write_bytes"]);
    assert!(
        file as f64 >= 0.99 * procs as f64 && file <= procs,
        "{file} of {procs}: {c:#}"
    );
    let calls = u(&c["file_read_calls"]) + u(&c["file_write_calls"]);
    let pcalls = u(&c["process_read_calls"]) + u(&c["process_write_calls"]);
    assert!(
        calls as f64 >= 0.99 * pcalls as f64,
        "{calls} of {pcalls}: {c:#}"
    );
    assert_eq!(u(&c["unattributed_calls"]), 0, "{c:#}");
    assert!(
        stderr.contains("  complete the file records hold "),
        "{stderr}"
    );
    // /proc/PID/io of the python process, as the audit read it.
    let root = &arr(&v["audit"]["processes"])[0];
    let pid = u(&root["pid"]);
    let (pr, pw): (u64, u64) = arr(&v["audit"]["phases"])
        .iter()
        .filter(|p| u(&p["pid"]) == pid)
        .fold((0, 0), |a, p| {
            (a.0 + u(&p["read_bytes"]), a.1 + u(&p["write_bytes"]))
        });
    let (rchar, wchar) = (u(&root["rchar"]), u(&root["wchar"]));
    assert!(
        pw as f64 >= 0.99 * wchar as f64 && pr as f64 >= 0.99 * rchar as f64,
        "file records read {pr} wrote {pw}; /proc/{pid}/io rchar {rchar} wchar {wchar}"
    );

    // Under strace (slower: 1000 files), the calls are strace's.
    if !common::need_programs(&["strace"]) {
        return;
    }
    let summary = dir.path().join("strace.txt");
    let (out, v) = common::audit_json(
        dir.path(),
        "bpf",
        &["-q"],
        &[
            "strace",
            "-f",
            "-c",
            "-o",
            summary.to_str().unwrap(),
            &py,
            "-S",
            script.to_str().unwrap(),
            d.to_str().unwrap(),
            "1000",
        ],
    );
    assert!(out.status.success(), "{}", common::text(&out.stderr));
    let text = std::fs::read_to_string(&summary).expect("strace's summary");
    let mut counts = std::collections::BTreeMap::new();
    for l in text.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() >= 5 && f[0].parse::<f64>().is_ok() {
            if let Ok(n) = f[3].parse::<u64>() {
                counts.insert(f[f.len() - 1].to_string(), n);
            }
        }
    }
    // Every read and write call python made (strace's whole count, its start-up reads of
    // modules included) is in python's file records.
    let py_pid = arr(&v["audit"]["processes"])
        .iter()
        .find(|p| p["comm"].as_str().is_some_and(|c| c.starts_with("python")))
        .map(|p| u(&p["pid"]))
        .expect("python's process");
    let c = &v["audit"]["account"]["completeness"];
    let (mut reads, mut writes) = (0, 0);
    for p in arr(&v["audit"]["phases"]) {
        if u(&p["pid"]) == py_pid {
            reads += p["read_calls"].as_u64().unwrap_or(0);
            writes += p["write_calls"].as_u64().unwrap_or(0);
        }
    }
    let (sr, sw) = (counts["read"], counts["write"]);
    assert_eq!(writes, sw, "write calls: {counts:?}; {c:#}");
    assert!(
        reads as f64 >= 0.99 * sr as f64 && reads <= sr,
        "read calls {reads} against strace's {sr}: {counts:?}"
    );
}

/// A file written buffered, then switched to O_DIRECT with fcntl(F_SETFL) and written
/// again: two phases, the first buffered and the second direct, each with its 1 MiB.
#[test]
fn an_o_direct_mode_set_with_fcntl_is_followed() {
    if !ready() {
        return;
    }
    let _g = serial();
    let dir = scratch();
    let f = dir.path().join("d.dat");
    let script = r#"
import os, sys, mmap, fcntl
fd = os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
buf = mmap.mmap(-1, 1 << 20)
buf.write(b"y" * (1 << 20))
os.write(fd, buf)
os.fsync(fd)
fl = fcntl.fcntl(fd, fcntl.F_GETFL)
fcntl.fcntl(fd, fcntl.F_SETFL, fl | os.O_DIRECT)
os.pwrite(fd, buf, 1 << 20)
os.close(fd)
"#;
    let (out, v) = common::audit_json(
        dir.path(),
        "bpf",
        &["-q"],
        &[&python(), "-S", "-c", script, f.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", common::text(&out.stderr));
    let d = f.display().to_string();
    let phases: Vec<Value> = arr(&v["audit"]["phases"])
        .into_iter()
        .filter(|p| p["path"] == d.as_str())
        .collect();
    let modes: Vec<(bool, u64)> = phases
        .iter()
        .map(|p| (p["direct"].as_bool().unwrap(), u(&p["write_bytes"])))
        .collect();
    assert_eq!(
        modes,
        vec![(false, 1 << 20), (true, 1 << 20)],
        "{phases:#?}"
    );
}

/// One open of a file that writes one byte with O_DSYNC (the call waits for the device)
/// and reads 8 MiB from the page cache: the write's time is measured, not the share of
/// the time its one byte would get (which would be about a millionth of it).
#[test]
fn read_and_write_times_are_measured_apart() {
    if !ready() {
        return;
    }
    let _g = serial();
    let dir = scratch();
    let f = dir.path().join("t.dat");
    std::fs::write(&f, vec![7u8; 8 << 20]).unwrap();
    let script = r#"
import os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_DSYNC)
n = 0
while True:
    b = os.read(fd, 1 << 20)
    if not b:
        break
    n += len(b)
os.pwrite(fd, b"z", n)
os.close(fd)
"#;
    let (out, v) = common::audit_json(
        dir.path(),
        "bpf",
        &["-q"],
        &[&python(), "-S", "-c", script, f.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", common::text(&out.stderr));
    let d = f.display().to_string();
    let p = arr(&v["audit"]["phases"])
        .into_iter()
        .find(|p| p["path"] == d.as_str())
        .expect("the file's phase");
    assert_eq!((u(&p["read_bytes"]), u(&p["write_bytes"])), (8 << 20, 1));
    assert_eq!(u(&p["write_calls"]), 1);
    let rt = p["read_time_s"].as_f64().unwrap();
    let wt = p["write_time_s"].as_f64().unwrap();
    let by_bytes = (rt + wt) / ((8 << 20) + 1) as f64;
    assert!(
        wt > 1000.0 * by_bytes && wt > 1e-6 && rt > 0.0,
        "write time {wt} s, read time {rt} s: {p:#}"
    );
}
