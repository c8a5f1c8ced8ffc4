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

/// Creates, writes (1000 bytes), fsyncs every 1000th, reads back and deletes N files.
const SMALL_FILES: &str = r#"
import os, sys
d = sys.argv[1]; n = int(sys.argv[2])
buf = b"x" * 1000
for i in range(n):
    p = d + "/f" + str(i)
    fd = os.open(p, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
    os.write(fd, buf)
    if i % 1000 == 0:
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

/// 20000 files created, written, read and deleted as fast as python can (40000 open..close
/// records in a second or two: the ring buffer used to overflow and lose a few percent of
/// them, 40% at worst, with no note): every write and read of them is in the file records
/// (exact figures from the program), the records hold at least 99% of what the kernel's own
/// counters say the processes read and wrote, and under strace (1000 files) the write and
/// read calls are strace's counts.
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
            "20000",
        ],
    );
    let stderr = common::text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let (r, w, rc, wc, fs, _) = under(&v, &d);
    assert_eq!(
        (r, w, rc, wc, fs),
        (20_000_000, 20_000_000, 20000, 20000, 20),
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

    // Under strace (slower: 1000 files), the calls are strace's. The loader's reads of
    // shared libraries (left out of the phases as start-up noise) are a few of its reads.
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
    let dir_s = d.display().to_string();
    let py_pid = arr(&v["audit"]["phases"])
        .iter()
        .find(|p| p["path"].as_str().is_some_and(|x| x.starts_with(&dir_s)))
        .map(|p| u(&p["pid"]))
        .expect("python's process");
    let c = &v["audit"]["account"]["completeness"];
    let (mut reads, mut writes) = (0, 0);
    // Read and write calls only: pages faulted in through a mapping (python maps some of
    // the files it loads) are phases of the `mmap` channel, not calls.
    for p in arr(&v["audit"]["phases"]) {
        if u(&p["pid"]) == py_pid && p["channel"].is_null() {
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

/// With the procfs witness, a 76-byte configuration file held open while the program reads
/// 14 MiB from /dev/zero is not credited with those reads (it was, all 14.6 MiB): its
/// position sits at its end and never moves, so the bytes are said to be not attributed
/// to a file. (In the tick that opened and read it, the program's other reads of that tick
/// still go to it: its own start-up reads here.)
#[test]
fn procfs_does_not_credit_a_small_file_with_reads_it_could_not_supply() {
    if !common::need_programs(&["python3"]) {
        return;
    }
    let _g = serial();
    let dir = scratch();
    let conf = dir.path().join("conf.txt");
    std::fs::write(&conf, [b'c'; 76]).unwrap();
    let script = r#"
import os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
os.read(fd, 4096)
time.sleep(0.2)
z = os.open("/dev/zero", os.O_RDONLY)
n = 0
while n < 14 << 20:
    n += len(os.read(z, 65536))
    time.sleep(0.0005)
os.close(fd)
"#;
    let (out, v) = common::audit_json(
        dir.path(),
        "procfs",
        &["-q"],
        &[&python(), "-S", "-c", script, conf.to_str().unwrap()],
    );
    let stderr = common::text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let path = conf.display().to_string();
    let credited: u64 = arr(&v["audit"]["phases"])
        .iter()
        .filter(|p| p["path"] == path.as_str())
        .map(|p| u(&p["read_bytes"]))
        .sum();
    assert!(
        (76..1 << 20).contains(&credited),
        "{credited} bytes credited to {path}"
    );
    let note = arr(&v["audit"]["notes"])
        .into_iter()
        .filter_map(|n| n.as_str().map(String::from))
        .find(|n| n.contains("not attributed to a file"))
        .unwrap_or_else(|| panic!("no note of unattributed bytes: {stderr}"));
    let read: u64 = note.split_whitespace().next().unwrap().parse().unwrap();
    assert!(read >= (14 << 20) - (1 << 20), "{note}");
}

/// fs_mark on ext4 on a loop device of its own: every block request has one owner, so the
/// device bytes of its 500 files' phases sum to no more than the tree's own writes, and
/// the tree's, the journal's and the others' writes with the zeroing named apart add up
/// to the device's own count (/sys/block/loopN/stat) within 1%.
#[test]
fn device_bytes_are_attributed_once() {
    if !ready() || !common::need_programs(&["fs_mark"]) {
        return;
    }
    let Some(fs) = common::scratch("ext4", 256 << 20) else {
        return;
    };
    let _g = serial();
    let lo = fs.loop_device.clone();
    let name = lo.trim_start_matches("/dev/").to_string();
    let dir = scratch();
    // fs_mark keeps its directory's name in a short buffer: a short relative link.
    std::os::unix::fs::symlink(fs.path(), dir.path().join("m")).expect("a link to the mount");
    // A fresh ext4 zeroes its inode tables in the background for a while after it is
    // mounted: wait until the device has been quiet for half a second (at most 10 s), so
    // the device's count covers the audit alone.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut last = common::disk_bytes(&lo);
    loop {
        // SAFETY: sync takes no arguments.
        unsafe { libc::sync() };
        std::thread::sleep(std::time::Duration::from_millis(500));
        let now = common::disk_bytes(&lo);
        if now == last || std::time::Instant::now() > deadline {
            break;
        }
        last = now;
    }
    let before = common::disk_bytes(&lo);
    let (out, v) = common::audit_json(
        dir.path(),
        "bpf",
        &["-q"],
        &[
            "fs_mark", "-d", "m/fm", "-n", "500", "-s", "4096", "-t", "1",
        ],
    );
    let after = common::disk_bytes(&lo);
    assert!(out.status.success(), "{}", common::text(&out.stderr));
    let t = &v["audit"]["account"]["device_traffic"][&name];
    let own = u(&t["own_write_bytes"]);
    // The device's write count holds write-zeroes too (ext4 zeroing its inode tables on
    // a fresh filesystem), which the account names apart.
    let all =
        own + u(&t["kernel_write_bytes"]) + u(&t["foreign_write_bytes"]) + u(&t["zeroed_bytes"]);
    let device = after.1 - before.1;
    assert!(
        (all as f64 - device as f64).abs() <= 0.01 * device as f64,
        "owners' writes {all} against the device's {device}: {t}"
    );
    let fm = dir.path().join("m/fm").display().to_string();
    let phases = arr(&v["audit"]["phases"]);
    let on_files: u64 = phases
        .iter()
        .filter(|p| p["path"].as_str().unwrap_or("").starts_with(&fm))
        .map(|p| p["storage_write_bytes"].as_u64().unwrap_or(0))
        .sum();
    // Every phase on the loop device's filesystem (phases on other devices count against
    // the tree's traffic there, not here).
    use std::os::unix::fs::MetadataExt;
    let rdev = std::fs::metadata(&lo).expect("the loop device").rdev();
    let on_all: u64 = phases
        .iter()
        .filter(|p| p["dev"].as_u64() == Some(rdev))
        .map(|p| p["storage_write_bytes"].as_u64().unwrap_or(0))
        .sum();
    let others: Vec<String> = phases
        .iter()
        .filter(|p| p["storage_write_bytes"].as_u64().unwrap_or(0) > 0)
        .filter(|p| !p["path"].as_str().unwrap_or("").starts_with(&fm))
        .map(|p| {
            format!(
                "{} dev {} {} ({})",
                p["path"], p["dev"], p["storage_write_bytes"], p["storage_by"]
            )
        })
        .collect();
    assert!(
        on_files > 0 && on_all >= on_files && on_all <= own,
        "phases' device writes {on_all} ({on_files} on fs_mark's files) against the tree's {own}: {others:?}"
    );
}

/// ioping writes its 1 MiB work file and then reads it 4 KiB at a time: the read phase's
/// time is the time inside its read calls, at least the time ioping itself printed for
/// its requests (it leaves the first one out), where splitting the phase's time by bytes
/// gave the reads about a fourteenth of it.
#[test]
fn ioping_reads_get_their_own_time() {
    if !ready() || !common::need_programs(&["ioping"]) {
        return;
    }
    let _g = serial();
    let dir = scratch();
    let (out, v) = common::audit_json(
        dir.path(),
        "bpf",
        &[],
        &["ioping", "-c", "20", "-i", "0", "."],
    );
    let stdout = common::text(&out.stdout);
    assert!(out.status.success(), "{}", common::text(&out.stderr));
    // "19 requests completed in 12.8 ms, 76 KiB read, 1.49 k iops, 5.81 MiB/s"
    let summary = stdout
        .lines()
        .find(|l| l.contains("requests completed in"))
        .unwrap_or_else(|| panic!("{stdout}"));
    let t: Vec<&str> = summary
        .split(" in ")
        .nth(1)
        .unwrap()
        .split(',')
        .next()
        .unwrap()
        .split_whitespace()
        .collect();
    let scale = match t[1] {
        "us" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        "min" => 60.0,
        other => panic!("unit {other} in {summary}"),
    };
    let printed = t[0].parse::<f64>().unwrap() * scale;
    let phases = arr(&v["audit"]["phases"]);
    let p = phases
        .iter()
        .find(|p| u(&p["read_bytes"]) == 80 << 10)
        .unwrap_or_else(|| panic!("no phase of ioping's 20 reads: {phases:#?}"));
    assert_eq!(u(&p["write_bytes"]), 1 << 20, "{p:#}");
    let rt = p["read_time_s"].as_f64().unwrap();
    assert!(
        rt >= 0.95 * printed,
        "read time {rt} s against ioping's {printed} s for 19 of its 20 reads: {p:#}"
    );
}

/// Writes FILE_A whole (4 MiB in 64 KiB calls) and, at the same time, 8 MiB over the
/// first 1 MiB of FILE_B again and again (1 MiB of data), then fsyncs both.
const TWO_FILES: &str = r#"
import os, sys
a = os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
b = os.open(sys.argv[2], os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
buf = b"y" * 65536
for i in range(64):
    os.write(a, buf)
    os.pwrite(b, buf, (2 * i % 16) * 65536)
    os.pwrite(b, buf, ((2 * i + 1) % 16) * 65536)
os.fsync(a)
os.fsync(b)
os.close(a)
os.close(b)
"#;

/// A referee process stopped (SIGINT, so that it flushes what it printed) and reaped
/// when the test ends, whether it passed or not.
struct Referee(std::process::Child);

impl Drop for Referee {
    fn drop(&mut self) {
        // SAFETY: a signal to the child this test started.
        unsafe { libc::kill(self.0.id() as i32, libc::SIGINT) };
        let _ = self.0.wait();
    }
}

/// The physical extents of a file, in 512-byte sectors of its device: [start, end).
fn extents(path: &Path) -> Vec<(u64, u64)> {
    let out = std::process::Command::new("filefrag")
        .args(["-e", "-b512"])
        .arg(path)
        .output()
        .expect("filefrag runs");
    let text = common::text(&out.stdout);
    let mut v = Vec::new();
    // "   0:        0..    2047:      34816..     36863:   2048:             last,eof"
    for l in text.lines() {
        let f: Vec<&str> = l.split(':').map(str::trim).collect();
        if f.len() >= 4 && f[0].parse::<u64>().is_ok() {
            let phys: Vec<u64> = f[2]
                .split("..")
                .map(|x| x.trim().parse().expect("a sector"))
                .collect();
            v.push((phys[0], phys[1] + 1));
        }
    }
    assert!(!v.is_empty(), "no extents of {}: {text}", path.display());
    v
}

/// Two files written at the same time by one process, on ext4 of its own: each file's
/// device writes are the block requests that carried its data, counted once, and match
/// an independent count (bpftrace on block:block_rq_complete, each write request's
/// sectors laid over the file's extents from filefrag) and the data each file holds: 4 MiB
/// for the file written whole, 1 MiB for the one written 8 times over the same 1 MiB
/// (sharing the tree's writes by bytes moved gave them a third and two thirds).
#[test]
fn two_files_written_at_once_get_their_own_device_writes() {
    if !ready() || !common::need_programs(&["bpftrace", "filefrag"]) {
        return;
    }
    let Some(fs) = common::scratch("ext4", 128 << 20) else {
        return;
    };
    let _g = serial();
    let lo = fs.loop_device.clone();
    let dev = std::fs::read_to_string(format!("/sys/block/{}/dev", lo.trim_start_matches("/dev/")))
        .expect("the device's number");
    let (major, minor) = dev.trim().split_once(':').expect("major:minor");
    let kdev = (major.parse::<u64>().unwrap() << 20) | minor.parse::<u64>().unwrap();
    let dir = scratch();
    let script = dir.path().join("two.py");
    std::fs::write(&script, TWO_FILES).expect("the script");
    let (fa, fb) = (fs.path().join("a.dat"), fs.path().join("b.dat"));
    // The referee: every completed request on the device, as "sector sectors rwbs".
    let log = dir.path().join("bpftrace.log");
    let referee = Referee(
        std::process::Command::new("bpftrace")
            .args([
                "-e",
                &format!(
                    "BEGIN {{ printf(\"ready\\n\"); }} tracepoint:block:block_rq_complete /args->dev == {kdev}/ {{ printf(\"%llu %u %s\\n\", args->sector, args->nr_sector, args->rwbs); }}"
                ),
            ])
            .stdout(std::fs::File::create(&log).expect("the referee's log"))
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("bpftrace starts"),
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !std::fs::read_to_string(&log).is_ok_and(|t| t.contains("ready")) {
        assert!(
            std::time::Instant::now() < deadline,
            "bpftrace did not start"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let (out, v) = common::audit_json(
        dir.path(),
        "bpf",
        &["-q"],
        &[
            &python(),
            script.to_str().unwrap(),
            fa.to_str().unwrap(),
            fb.to_str().unwrap(),
        ],
    );
    std::thread::sleep(std::time::Duration::from_millis(500));
    drop(referee);
    assert!(out.status.success(), "{}", common::text(&out.stderr));
    let reqs: Vec<(u64, u64)> = std::fs::read_to_string(&log)
        .expect("bpftrace's log")
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() != 3 || !f[2].starts_with('W') {
                return None;
            }
            Some((f[0].parse().ok()?, f[1].parse().ok()?))
        })
        .collect();
    let on = |ext: &[(u64, u64)]| -> u64 {
        let mut bytes = 0;
        for &(s, n) in &reqs {
            for &(a, b) in ext {
                let (lo, hi) = (s.max(a), (s + n).min(b));
                if hi > lo {
                    bytes += (hi - lo) * 512;
                }
            }
        }
        bytes
    };
    let (ref_a, ref_b) = (on(&extents(&fa)), on(&extents(&fb)));
    assert_eq!((ref_a, ref_b), (4 << 20, 1 << 20), "the referee's count");
    let phases = arr(&v["audit"]["phases"]);
    let of = |f: &Path| {
        phases
            .iter()
            .find(|p| p["path"] == f.display().to_string())
            .unwrap_or_else(|| panic!("no phase of {}: {phases:#?}", f.display()))
            .clone()
    };
    let (pa, pb) = (of(&fa), of(&fb));
    assert_eq!(
        (u(&pa["write_bytes"]), u(&pb["write_bytes"])),
        (4 << 20, 8 << 20)
    );
    assert_eq!(
        (u(&pa["storage_write_bytes"]), u(&pb["storage_write_bytes"])),
        (ref_a, ref_b),
        "{pa:#} {pb:#}"
    );
    assert_eq!(pa["storage_by"], "request");
    assert_eq!(pb["storage_by"], "request");
    let name = lo.trim_start_matches("/dev/");
    let own = u(&v["audit"]["account"]["device_traffic"][name]["own_write_bytes"]);
    let all: u64 = phases
        .iter()
        .map(|p| p["storage_write_bytes"].as_u64().unwrap_or(0))
        .sum();
    assert!(all <= own, "phases' writes {all} against the tree's {own}");
}

/// Two fresh ext4 filesystems of their own, whose first files get the same inode number:
/// the audited tree writes one on the first and syncs; the test itself (outside the tree)
/// has dirtied the other just before. The flusher writes both back, and the second
/// device's writes are another process's (foreign), not the tree's: a flusher's request is
/// the tree's only for an inode the tree dirtied on that very device (inodes used to be
/// known by number alone, and the tree was credited with the other device's writeback).
#[test]
fn writeback_of_another_filesystems_inode_of_the_same_number_is_foreign() {
    if !ready() {
        return;
    }
    let Some(a) = common::scratch("ext4", 128 << 20) else {
        return;
    };
    let Some(b) = common::scratch("ext4", 128 << 20) else {
        return;
    };
    let _g = serial();
    let (fa, fb) = (a.path().join("f"), b.path().join("f"));
    std::fs::write(&fb, vec![3u8; 4 << 20]).expect("the other file");
    std::fs::write(&fa, b"").expect("the tree's file");
    use std::os::unix::fs::MetadataExt;
    let ino = |p: &Path| std::fs::metadata(p).expect("a file").ino();
    assert_eq!(
        ino(&fa),
        ino(&fb),
        "fresh filesystems give their first file one number"
    );
    let dir = scratch();
    // syncfs of the other filesystem from the tree: its flusher writes the other inode
    // back while the tree's inode of the same number is marked as the tree's.
    let cmd = format!(
        "dd if=/dev/zero of={} bs=1M count=4 status=none && sync -f {} && sync -f {}",
        fa.display(),
        fa.display(),
        fb.display()
    );
    let (out, v) = common::audit_json(dir.path(), "bpf", &["-q"], &["sh", "-c", &cmd]);
    assert!(out.status.success(), "{}", common::text(&out.stderr));
    let name = |s: &str| s.trim_start_matches("/dev/").to_string();
    let t = &v["audit"]["account"]["device_traffic"];
    assert!(
        u(&t[name(&a.loop_device)]["own_write_bytes"]) >= 4 << 20,
        "the tree's own file: {t:#}"
    );
    // What the tree's own syncfs writes of the other filesystem in its own context (its
    // superblock, a few blocks) is the tree's; the other file's 4 MiB is not.
    let other = &t[name(&b.loop_device)];
    assert!(
        other.is_null() || u(&other["own_write_bytes"]) < 1 << 20,
        "the other device ({}): its writeback is not the tree's: {t:#}",
        b.loop_device
    );
}
