//! `candor run` driven as a person would: the real binary on real files in temporary
//! directories. Every test name and engine must produce positive, plausible figures and a
//! JSON result that loads back; every bad input gets its exit code and its sentence, and
//! nothing is left behind.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

mod common;
use common::{candor, entries, run_in};

fn load(path: &Path) -> candor_model::RunDoc {
    candor_model::load_result(path).expect("the saved JSON loads back")
}

/// Figures a real measurement of `bytes` must satisfy.
fn assert_plausible(r: &candor_model::TestResult) {
    assert_eq!(
        r.status,
        candor_model::Status::Ok,
        "{} failed: {:?}",
        r.test,
        r.error
    );
    assert!(
        r.throughput.mean > 0.0,
        "{}: throughput {}",
        r.test,
        r.throughput.mean
    );
    // The headline is what the repetitions measured: the mean over the repetitions of
    // their bytes over their timed seconds (and operations over seconds for IOPS).
    let n = r.reps.len() as f64;
    assert_eq!(r.reps.len(), r.repetitions as usize, "{}", r.test);
    let tp = r
        .reps
        .iter()
        .map(|p| p.bytes as f64 / p.seconds)
        .sum::<f64>()
        / n;
    let iops = r.reps.iter().map(|p| p.ops as f64 / p.seconds).sum::<f64>() / n;
    assert!(
        (r.throughput.mean - tp).abs() <= tp * 1e-9,
        "{}: throughput {} B/s, the repetitions say {tp}",
        r.test,
        r.throughput.mean
    );
    assert!(
        (r.iops.mean - iops).abs() <= iops * 1e-9,
        "{}: {} IOPS, the repetitions say {iops}",
        r.test,
        r.iops.mean
    );
    for rep in &r.reps {
        // The timed region holds the I/O (and the flush and close when they are timed).
        assert!(
            rep.io_seconds > 0.0 && rep.io_seconds <= rep.seconds * (1.0 + 1e-9),
            "{}: {rep:?}",
            r.test
        );
    }
    let ops = r.file_size / r.record_size * r.threads as u64;
    for rep in &r.reps {
        assert_eq!(
            rep.ops, ops,
            "{}: one pass touches every record once",
            r.test
        );
        assert_eq!(rep.bytes, ops * r.record_size);
        assert!(rep.seconds > 0.0);
    }
    assert_eq!(
        r.latency_ns.count,
        ops * r.repetitions as u64,
        "{}: every operation timed",
        r.test
    );
    assert_eq!(r.latency_ns.sampled_every, None, "{}: not a sample", r.test);
    assert!(
        r.latency_ns.p50 > 0
            && r.latency_ns.p50 <= r.latency_ns.p99
            && r.latency_ns.p99 <= r.latency_ns.max
    );
    assert!(r.cpu.wall_s > 0.0);
    if r.is_write() {
        let with = r
            .throughput_with_flush
            .as_ref()
            .expect("write tests report both figures");
        let without = r
            .throughput_without_flush
            .as_ref()
            .expect("write tests report both figures");
        assert!(
            without.mean >= with.mean * 0.999,
            "{}: leaving the flush out cannot be slower",
            r.test
        );
    } else {
        assert!(r.throughput_without_flush.is_none());
    }
}

#[test]
fn every_test_name_runs_and_the_json_loads() {
    let dir = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("r.json");
    let all = "write,rewrite,read,reread,randread,randwrite,bkwdread,recrewrite,strideread,fwrite,frewrite,fread,freread,randmix,pwrite,repwrite,pread,repread,pwritev,repwritev,preadv,repreadv,mmapwrite,mmapread";
    let o = run_in(
        dir.path(),
        &[
            "--tests",
            all,
            "--file-size",
            "2m",
            "--record-size",
            "64k",
            "-o",
            json.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let doc = load(&json);
    assert!(doc.complete);
    assert_eq!(doc.schema_version, candor_model::SCHEMA_VERSION);
    let names: Vec<&str> = doc.results.iter().map(|r| r.test.as_str()).collect();
    assert_eq!(names, all.split(',').collect::<Vec<_>>());
    for r in &doc.results {
        assert_plausible(r);
    }
    let engine = |t: &str| {
        doc.results
            .iter()
            .find(|r| r.test == t)
            .unwrap()
            .engine
            .clone()
    };
    assert_eq!(engine("fwrite"), "stdio");
    assert_eq!(engine("pread"), "psync");
    assert_eq!(engine("preadv"), "vector");
    assert_eq!(engine("mmapread"), "mmap");
    // Host and target are described.
    assert!(doc.host.cores > 0 && doc.host.ram_bytes > 0);
    assert!(!doc.targets[0].fs_type.is_empty());
    assert_eq!(
        entries(dir.path()),
        Vec::<PathBuf>::new(),
        "candor's files are gone"
    );
}

#[test]
fn iozone_numbers_select_groups() {
    let dir = tempfile::tempdir().unwrap();
    let o = run_in(
        dir.path(),
        &[
            "--tests",
            "3,4,5",
            "--file-size",
            "1m",
            "--record-size",
            "16k",
            "--format",
            "json",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let doc: candor_model::RunDoc = serde_json::from_slice(&o.stdout).unwrap();
    let names: Vec<&str> = doc.results.iter().map(|r| r.test.as_str()).collect();
    assert_eq!(names, ["bkwdread", "recrewrite", "strideread"]);
}

#[test]
fn every_engine_runs() {
    for engine in [
        "sync", "psync", "vector", "stdio", "mmap", "io_uring", "null",
    ] {
        let dir = tempfile::tempdir().unwrap();
        let o = run_in(
            dir.path(),
            &[
                "--engine",
                engine,
                "--tests",
                "write,read,randread",
                "--file-size",
                "4m",
                "--record-size",
                "16k",
                "--format",
                "json",
            ],
        );
        assert!(
            o.status.success(),
            "{engine}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let doc: candor_model::RunDoc = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(doc.results.len(), 3);
        for r in &doc.results {
            assert_eq!(r.engine, engine);
            assert_plausible(r);
        }
        assert!(entries(dir.path()).is_empty(), "{engine} left files behind");
    }
}

#[test]
fn io_uring_depth_threads_repetitions_and_statistics() {
    let dir = tempfile::tempdir().unwrap();
    let o = run_in(
        dir.path(),
        &[
            "--engine",
            "io_uring",
            "--iodepth",
            "1,8",
            "--threads",
            "1,2",
            "--tests",
            "randread",
            "--file-size",
            "4m",
            "--record-size",
            "4k",
            "--repeat",
            "3",
            "--format",
            "json",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let doc: candor_model::RunDoc = serde_json::from_slice(&o.stdout).unwrap();
    let points: Vec<(u32, u32)> = doc.results.iter().map(|r| (r.threads, r.iodepth)).collect();
    assert_eq!(points, [(1, 1), (1, 8), (2, 1), (2, 8)]);
    for r in &doc.results {
        assert_plausible(r);
        assert_eq!(r.repetitions, 3);
        assert_eq!(r.throughput.samples.len(), 3);
        let s = &r.throughput;
        assert!(s.min <= s.mean && s.mean <= s.max);
        assert!(s.ci95[0] <= s.mean && s.mean <= s.ci95[1]);
        if r.threads == 2 {
            let agg = r
                .thread_aggregate
                .as_ref()
                .expect("multi-thread aggregates");
            assert_eq!(agg.per_thread_bytes, vec![4 << 20, 4 << 20]);
            // The sum of per-thread rates is at least the total over the slowest's time.
            assert!(agg.children_see >= agg.parent_sees * 0.999);
            assert!(agg.min_thread <= agg.max_thread);
        }
    }
}

#[test]
fn stonewall_stops_the_others_and_counts_what_each_moved() {
    let dir = tempfile::tempdir().unwrap();
    let o = run_in(
        dir.path(),
        &[
            "--threads",
            "2",
            "--stonewall",
            "--tests",
            "write",
            "--file-size",
            "8m",
            "--record-size",
            "4k",
            "--repeat",
            "1",
            "--format",
            "json",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let doc: candor_model::RunDoc = serde_json::from_slice(&o.stdout).unwrap();
    let r = &doc.results[0];
    let agg = r.thread_aggregate.as_ref().unwrap();
    assert!(agg.stonewalled);
    assert_eq!(agg.per_thread_bytes.len(), 2);
    let total: u64 = agg.per_thread_bytes.iter().sum();
    assert_eq!(total, r.reps[0].bytes);
    assert!(
        agg.per_thread_bytes.contains(&(8 << 20)),
        "the first finisher wrote its whole file"
    );
}

#[test]
fn flush_is_timed_both_ways() {
    let dir = tempfile::tempdir().unwrap();
    for extra in [&[][..], &["--no-fsync-in-timing"][..]] {
        let mut args = vec![
            "--tests",
            "write",
            "--file-size",
            "32m",
            "--record-size",
            "1m",
            "--format",
            "json",
        ];
        args.extend_from_slice(extra);
        let o = run_in(dir.path(), &args);
        assert!(o.status.success());
        let doc: candor_model::RunDoc = serde_json::from_slice(&o.stdout).unwrap();
        let r = &doc.results[0];
        let rep = &r.reps[0];
        assert!(rep.flush_seconds > 0.0, "the flush was measured");
        let with = r.throughput_with_flush.as_ref().unwrap().mean;
        let without = r.throughput_without_flush.as_ref().unwrap().mean;
        if extra.is_empty() {
            assert!(r.fsync_in_timing);
            assert!(
                (r.throughput.mean - with).abs() / with < 1e-9,
                "headline includes the flush"
            );
        } else {
            assert!(!r.fsync_in_timing);
            assert!(
                (r.throughput.mean - without).abs() / without < 1e-9,
                "headline leaves the flush out"
            );
        }
    }
}

fn expect_usage(o: &Output, needle: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "expected exit 2, stderr: {err}");
    assert!(
        err.contains(needle),
        "stderr should contain {needle:?}: {err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one plain sentence: {err}");
}

#[test]
fn bad_input_gets_exit_2_one_sentence_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&["--file-size", "0"], "zero"),
        (&["--file-size", "12q"], "is not a size"),
        (&["--record-size", "abc"], "is not a size"),
        (
            &["--file-size", "64k", "--record-size", "1m"],
            "larger than the file size",
        ),
        (&["--tests", "wirte"], "'wirte' is not a test"),
        (&["--tests", "14"], "0 to 12"),
        (&["--engine", "aio"], "not an engine"),
        (
            &["--iodepth", "8", "--engine", "psync"],
            "needs a queueing engine",
        ),
        (&["--threads", "0"], "out of range"),
        (&["--repeat", "0"], "--repeat 0"),
        (&["--format", "xml"], "not a format"),
        (&["--witness", "strace"], "not a witness source"),
        (
            &["--witness", "procfs", "--trace-syscalls"],
            "--trace-syscalls needs the eBPF witness",
        ),
        (&["--runtime", "soon"], "not a duration"),
        (&["--mix-read-pct", "150"], "percentage"),
        (
            &["--direct", "--record-size", "100", "--file-size", "1m"],
            "multiple of the device's logical block size",
        ),
        (&["--file-size", "1t", "--threads", "64"], "free"),
    ];
    for (args, needle) in cases {
        let o = run_in(dir.path(), args);
        expect_usage(&o, needle);
        assert!(
            entries(dir.path()).is_empty(),
            "{args:?} left something behind"
        );
    }
}

#[test]
fn bad_targets_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope");
    expect_usage(
        &candor()
            .args(["run", missing.to_str().unwrap()])
            .output()
            .unwrap(),
        "does not exist",
    );
    let file = dir.path().join("f");
    std::fs::write(&file, b"x").unwrap();
    expect_usage(
        &candor()
            .args(["run", file.to_str().unwrap()])
            .output()
            .unwrap(),
        "not a directory",
    );
    assert_eq!(entries(dir.path()), vec![file]);
}

#[test]
fn a_block_device_without_consent_is_refused() {
    // A block device is refused before anything is opened for writing.
    let dev = ["/dev/vda", "/dev/sda", "/dev/loop0", "/dev/nvme0n1"]
        .into_iter()
        .find(|p| {
            use std::os::unix::fs::FileTypeExt;
            std::fs::metadata(p)
                .map(|m| m.file_type().is_block_device())
                .unwrap_or(false)
        });
    match dev {
        Some(d) => expect_usage(&candor().args(["run", d]).output().unwrap(), "block device"),
        None => common::skip("no block device node to try"),
    }
}

#[test]
fn o_direct_refused_by_tmpfs_is_named() {
    let shm = Path::new("/dev/shm");
    let fs_is_tmpfs = std::fs::read_to_string("/proc/mounts")
        .map(|m| {
            m.lines()
                .any(|l| l.split(' ').nth(1) == Some("/dev/shm") && l.contains("tmpfs"))
        })
        .unwrap_or(false);
    if !fs_is_tmpfs {
        common::skip("/dev/shm is not tmpfs here");
        return;
    }
    let dir = tempfile::tempdir_in(shm).unwrap();
    let o = run_in(
        dir.path(),
        &["--direct", "--tests", "write", "--file-size", "1m"],
    );
    // tmpfs has accepted O_DIRECT since Linux 6.6: the run must then succeed, and before
    // it be refused in one sentence naming O_DIRECT.
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    let mut v = release
        .trim()
        .split(|c: char| !c.is_ascii_digit())
        .map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (v.next().unwrap_or(0), v.next().unwrap_or(0));
    if (major, minor) >= (6, 6) {
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    } else {
        expect_usage(&o, "refuses O_DIRECT");
    }
    assert!(entries(dir.path()).is_empty());
}

#[test]
fn read_only_and_forbidden_targets() {
    if !common::need_root("to mount a read-only filesystem and to switch user") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ro = dir.path().join("ro");
    std::fs::create_dir(&ro).unwrap();
    let m = Command::new("mount")
        .args([
            "-t",
            "tmpfs",
            "-o",
            "ro,size=8m",
            "none",
            ro.to_str().unwrap(),
        ])
        .status()
        .unwrap();
    assert!(m.success());
    let o = run_in(&ro, &["--tests", "write", "--file-size", "1m"]);
    let _ = Command::new("umount").arg(&ro).status();
    expect_usage(&o, "read-only");

    // Permission denied: an unprivileged user on a root-owned directory.
    let locked = dir.path().join("locked");
    std::fs::create_dir(&locked).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o755)).unwrap();
    let Some(mut nobody) = common::candor_as_nobody() else {
        return;
    };
    let o = nobody
        .args([
            "run",
            locked.to_str().unwrap(),
            "--quiet",
            "--tests",
            "write",
            "--file-size",
            "1m",
        ])
        .output()
        .expect("setpriv runs");
    expect_usage(&o, "permission denied");
    assert!(entries(&locked).is_empty());
}

#[test]
fn sigint_in_the_middle_leaves_no_file_and_keeps_what_finished() {
    let dir = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("r.json");
    let child = candor()
        .args([
            "run",
            dir.path().to_str().unwrap(),
            "--quiet",
            "--tests",
            "write,randread",
        ])
        .args(common::LONG)
        .args(["-o", json.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the write test has finished (the result is saved after every point, so
    // -o holds it) and randread, 50 passes over 64 MiB, is running: then interrupt.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while candor_model::load_result(&json).map_or(true, |d| d.results.is_empty()) {
        assert!(
            std::time::Instant::now() < deadline,
            "no finished test saved within 60 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // SAFETY: kill has no memory preconditions; the pid is our unreaped child's.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted by SIGINT"), "{err}");
    assert!(
        entries(dir.path()).is_empty(),
        "files left: {:?}",
        entries(dir.path())
    );
    let doc = load(&json);
    assert!(!doc.complete);
    assert_eq!(doc.stop_reason.as_deref(), Some("interrupted by SIGINT"));
    // What finished is kept: the write test, whole; randread did not finish.
    let names: Vec<&str> = doc.results.iter().map(|r| r.test.as_str()).collect();
    assert_eq!(names, ["write"], "{names:?}");
    let w = &doc.results[0];
    assert_eq!(w.status, candor_model::Status::Ok, "{:?}", w.error);
    assert_eq!(w.reps.len(), w.repetitions as usize);
    assert!(w.reps.iter().all(|r| r.bytes == 64 << 20));
}

#[test]
fn clean_removes_only_candors_stale_run_directories() {
    let dir = tempfile::tempdir().unwrap();
    let stale = common::dead_run(dir.path());
    std::fs::write(stale.join("t0.dat"), vec![7u8; 4096]).unwrap();
    let foreign = dir.path().join(".candor-mine");
    std::fs::create_dir(&foreign).unwrap();
    std::fs::write(foreign.join("notes.txt"), b"mine").unwrap();
    let o = candor()
        .args(["clean", dir.path().to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).contains("removed"));
    assert!(!stale.exists());
    assert_eq!(std::fs::read(foreign.join("notes.txt")).unwrap(), b"mine");
    // A run also cleans what a killed run left.
    let stale = common::dead_run(dir.path());
    let o = run_in(dir.path(), &["--tests", "write", "--file-size", "1m"]);
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("left behind by an earlier run"));
    assert!(!stale.exists());
    assert!(foreign.exists());
}

#[test]
fn efficiency_is_computed_against_a_given_spec() {
    let dir = tempfile::tempdir().unwrap();
    let o = run_in(
        dir.path(),
        &[
            "--tests",
            "read,randread",
            "--file-size",
            "4m",
            "--record-size",
            "4k",
            "--device-spec",
            "seq=2GB/s,iops=100k",
            "--format",
            "json",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let doc: candor_model::RunDoc = serde_json::from_slice(&o.stdout).unwrap();
    let read = &doc.results[0];
    let e = read.efficiency.as_ref().expect("efficiency present");
    assert_eq!(e.basis, "seq");
    assert!((e.share - read.throughput.mean / 2e9).abs() < 1e-9);
    let rr = &doc.results[1];
    let e = rr.efficiency.as_ref().unwrap();
    assert_eq!(e.basis, "iops");
    assert!((e.share - rr.iops.mean / 1e5).abs() < 1e-9);
    expect_usage(
        &run_in(dir.path(), &["--device-spec", "speed=3"]),
        "not a --device-spec key",
    );
}

#[test]
fn copy_and_metadata_workloads() {
    let dir = tempfile::tempdir().unwrap();
    let o = run_in(
        dir.path(),
        &[
            "--tests",
            "copy,create,stat,open,readdir,unlink,mkdir,rmdir",
            "--file-size",
            "1m",
            "--files",
            "300",
            "--repeat",
            "1",
            "--format",
            "json",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let doc: candor_model::RunDoc = serde_json::from_slice(&o.stdout).unwrap();
    let copies: Vec<&candor_model::TestResult> =
        doc.results.iter().filter(|r| r.test == "copy").collect();
    assert_eq!(
        copies.iter().map(|r| r.record_size).collect::<Vec<_>>(),
        [256, 1024, 4096],
        "UnixBench's buffer sizes"
    );
    for r in &copies {
        assert_eq!(r.status, candor_model::Status::Ok);
        assert_eq!(r.reps[0].bytes, 1 << 20, "the whole file is copied");
        assert_eq!(r.reps[0].ops, (1 << 20) / r.record_size);
        // The rate is the repetition's bytes over its own time, nothing else.
        let want = r.reps[0].bytes as f64 / r.reps[0].seconds;
        assert!(
            (r.throughput.mean / want - 1.0).abs() < 1e-9,
            "copy {}: {} B/s for {want}",
            r.record_size,
            r.throughput.mean
        );
    }
    for name in ["create", "stat", "open", "unlink", "mkdir", "rmdir"] {
        let r = doc.results.iter().find(|r| r.test == name).unwrap();
        assert_eq!(r.status, candor_model::Status::Ok, "{name}: {:?}", r.error);
        assert_eq!(r.reps[0].ops, 300, "{name} touches every entry once");
        let want = 300.0 / r.reps[0].seconds;
        assert!(
            (r.iops.mean / want - 1.0).abs() < 1e-9,
            "{name}: {} ops/s for {want}",
            r.iops.mean
        );
        assert_eq!(r.latency_ns.count, 300);
    }
    let rd = doc.results.iter().find(|r| r.test == "readdir").unwrap();
    assert_eq!(rd.reps[0].ops, 302, "300 entries plus . and ..");
    assert!(entries(dir.path()).is_empty());
}

/// `candor run --help`'s options: (heading, option name, its description joined into one
/// line). Blocks are separated by blank lines; a heading is a line at the margin ending ':'.
fn help_options(help: &str) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    let mut heading = String::new();
    let mut current: Option<(String, String)> = None;
    let mut flush = |c: &mut Option<(String, String)>, h: &str| {
        if let Some((name, desc)) = c.take() {
            out.push((h.to_string(), name, desc.trim().to_string()));
        }
    };
    for line in help.lines() {
        if !line.starts_with(' ') && line.trim_end().ends_with(':') {
            flush(&mut current, &heading);
            heading = line.trim_end().trim_end_matches(':').to_string();
            continue;
        }
        let t = line.trim();
        if t.starts_with('-') && line.starts_with("  ") && !line.starts_with("        ") {
            flush(&mut current, &heading);
            let name = t
                .split([' ', ','])
                .find(|w| w.starts_with("--"))
                .unwrap_or(t)
                .to_string();
            current = Some((name, String::new()));
            continue;
        }
        if let Some((_, desc)) = current.as_mut() {
            if !t.is_empty() {
                desc.push(' ');
                desc.push_str(t);
            }
        }
    }
    flush(&mut current, &heading);
    out
}

/// What an option's "[default: ...]" says.
fn stated_default<'a>(opts: &'a [(String, String, String)], name: &str) -> &'a str {
    let (_, _, desc) = opts
        .iter()
        .find(|o| o.1 == name)
        .unwrap_or_else(|| panic!("{name} is not in --help"));
    let from = desc
        .find("[default: ")
        .unwrap_or_else(|| panic!("{name} states no default: {desc}"))
        + "[default: ".len();
    let to = desc[from..].find(']').expect("a closed [default: ...]") + from;
    &desc[from..to]
}

/// The plan `candor run` makes of `o` on a target with `free` bytes free.
fn plan_of(o: &candor_engine::plan::RunOptions, free: u64) -> candor_engine::plan::Plan {
    let base = tempfile::tempdir().unwrap();
    let dir = candor_engine::rundir::RunDir::create(base.path(), "t").unwrap();
    let info = candor_model::TargetInfo {
        path: "/t".into(),
        free_bytes: free,
        ..Default::default()
    };
    let plan = candor_engine::plan::Plan::new(o, "t", &[info], std::slice::from_ref(&dir))
        .expect("a plan");
    drop(dir);
    plan
}

/// `-h` is a summary, `--help` the long text with every option under its heading,
/// described, with its default and examples; the defaults it states are the plan's.
#[test]
fn help_groups_every_option_and_states_the_plans_real_defaults() {
    use candor_engine::plan::RunOptions;
    use candor_engine::size::parse_size;
    let long = common::text(&candor().args(["run", "--help"]).output().unwrap().stdout);
    let short = common::text(&candor().args(["run", "-h"]).output().unwrap().stdout);
    assert!(
        short.len() * 2 < long.len(),
        "-h is a summary ({} bytes), --help the long text ({} bytes)",
        short.len(),
        long.len()
    );
    assert!(long.contains("Examples:") && !short.contains("Examples:"));
    assert!(long.contains("candor run --tests randread --engine io_uring --iodepth 1,32"));

    let opts = help_options(&long);
    assert!(opts.len() >= 50, "{} options in --help", opts.len());
    let headings = [
        "Plan",
        "Engine and I/O",
        "Timing and cache",
        "Witness",
        "Steady state and preconditioning",
        "Targets and devices",
        "Output",
        "MPI",
    ];
    for (heading, name, desc) in &opts {
        if name == "--help" {
            continue;
        }
        assert!(
            headings.contains(&heading.as_str())
                || (heading == "Arguments" && name == "[TARGETS]..."),
            "{name} is under '{heading}', not one of the groups"
        );
        assert!(desc.len() > 10, "{name} has no description: '{desc}'");
    }
    for h in headings {
        assert!(opts.iter().any(|o| o.0 == h), "no option under {h}");
        assert!(
            short.contains(&format!("\n{h}:\n")),
            "-h has no heading {h}"
        );
    }
    // Every option that takes a value says what it is when not given.
    for (_, name, _) in opts.iter().filter(|o| o.1.starts_with("--")) {
        let line = long
            .lines()
            .find(|l| l.trim_start().starts_with(name.as_str()) || l.contains(&format!(", {name}")))
            .unwrap();
        if line.contains('<') && !line.contains("[=<") {
            let _ = stated_default(&opts, name);
        }
    }

    // The default run, on a target with room for its largest file.
    let default = plan_of(&RunOptions::default(), u64::MAX / 2);
    // A plan of options that leaves the rest to the defaults.
    let options = plan_of(
        &RunOptions {
            tests: Some("write,randread".into()),
            ..RunOptions::default()
        },
        u64::MAX / 2,
    );
    let given_file = plan_of(
        &RunOptions {
            file_size: Some("1m".into()),
            ..RunOptions::default()
        },
        u64::MAX / 2,
    );

    let repeat = stated_default(&opts, "--repeat");
    let n: u32 = repeat.split([' ', ';']).next().unwrap().parse().unwrap();
    assert_eq!(
        (default.settings.repeat, options.settings.repeat),
        (n, n),
        "{repeat}"
    );

    let runtime = stated_default(&opts, "--runtime");
    let cap = candor_engine::plan::options::parse_duration(runtime.split(' ').next().unwrap())
        .unwrap()
        .as_nanos() as u64;
    assert!(runtime.contains("default run"), "{runtime}");
    assert_eq!(default.settings.runtime_ns, Some(cap), "{runtime}");
    assert_eq!(options.settings.runtime_ns, Some(cap), "{runtime}");
    assert_eq!(given_file.settings.runtime_ns, None, "{runtime}");

    let file = stated_default(&opts, "--file-size");
    let size = parse_size(file.split([' ', ',']).next().unwrap()).unwrap();
    assert!(default.points.iter().all(|p| p.file_size == size), "{file}");
    assert!(options.points.iter().all(|p| p.file_size == size), "{file}");
    assert!(file.contains("8 files per thread fit"), "{file}");

    let record = stated_default(&opts, "--record-size");
    let (seq, rnd) = record
        .strip_suffix(" for random ones")
        .and_then(|r| r.split_once(" for sequential tests, "))
        .unwrap_or_else(|| panic!("{record}"));
    let (seq, rnd) = (parse_size(seq).unwrap(), parse_size(rnd).unwrap());
    for p in default.points.iter().chain(&options.points) {
        let want = if p.spec.name.starts_with("rand") {
            rnd
        } else {
            seq
        };
        assert_eq!(p.record_size, want, "{} {record}", p.spec.name);
    }

    let depth = stated_default(&opts, "--iodepth");
    assert!(
        depth.starts_with("1 and 8 (sequential) or 32 (random) in the default run; 1 otherwise"),
        "{depth}"
    );
    for p in &default.points {
        let deep = if p.spec.name.starts_with("rand") {
            32
        } else {
            8
        };
        assert!(
            [1, deep].contains(&p.iodepth),
            "{} qd{}",
            p.spec.name,
            p.iodepth
        );
    }
    assert!(options.points.iter().all(|p| p.iodepth == 1));

    let engine = stated_default(&opts, "--engine");
    assert!(
        engine.starts_with("io_uring in the default run; psync"),
        "{engine}"
    );
    assert!(default.points.iter().all(|p| p.engine.name() == "io_uring"));
    assert!(options.points.iter().all(|p| p.engine.name() == "psync"));

    let tests = stated_default(&opts, "--tests");
    let (in_default, otherwise) = tests
        .strip_suffix(" otherwise")
        .and_then(|t| t.split_once(" in the default run; "))
        .unwrap_or_else(|| panic!("{tests}"));
    let mut names: Vec<&str> = default.points.iter().map(|p| p.spec.name).collect();
    names.dedup();
    assert_eq!(names.join(","), in_default);
    let groups: Vec<&str> = candor_engine::workload::parse_tests(otherwise)
        .unwrap()
        .iter()
        .map(|t| t.name)
        .collect();
    let mut names: Vec<&str> = given_file.points.iter().map(|p| p.spec.name).collect();
    names.dedup();
    assert_eq!(names, groups);

    let threads = stated_default(&opts, "--threads");
    assert_eq!(threads, "1");
    assert!(default.points.iter().all(|p| p.threads == 1));
}

/// A plan of options keeps the default run's record size per test kind and its three
/// repetitions, and says in one line the engine, depth and O_DIRECT it does not keep.
#[test]
fn options_not_given_keep_the_default_runs_values_and_say_which_do_not() {
    let dir = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("r.json");
    let o = run_in(
        dir.path(),
        &[
            "--tests",
            "write,randwrite",
            "--file-size",
            "1m",
            "--witness",
            "off",
            "-o",
            json.to_str().unwrap(),
        ],
    );
    let err = common::text(&o.stderr);
    assert!(o.status.success(), "{err}");
    let doc = load(&json);
    let got: Vec<(&str, u64, u32)> = doc
        .results
        .iter()
        .map(|r| (r.test.as_str(), r.record_size, r.repetitions))
        .collect();
    assert_eq!(got, [("write", 1 << 20, 3), ("randwrite", 4096, 3)]);
    let saved = doc.options.run().expect("a run's options");
    assert_eq!(saved.repeat, 3);
    assert_eq!(saved.runtime_s, None);
    let said: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("the default run uses"))
        .collect();
    assert_eq!(said.len(), 1, "{err}");
    assert!(
        said[0].contains("add --engine io_uring --iodepth 1,32 --direct for those"),
        "{err}"
    );
}
