//! `candor audit` driven as a person would: the built binary, real fio and dd runs on real
//! files, and the JSON it writes read back.

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

mod common;

/// One audit at a time: a test's device traffic would be another test's foreign traffic.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

fn candor() -> Command {
    Command::new(env!("CARGO_BIN_EXE_candor"))
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// A scratch directory on a filesystem that takes O_DIRECT (ext4 under /var/tmp here).
fn scratch() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("candor-audit-test")
        .tempdir_in("/var/tmp")
        .or_else(|_| tempfile::tempdir())
        .expect("a temporary directory")
}

fn audit(dir: &Path, witness: &str, cmd: &[&str]) -> (Output, Value) {
    common::audit_json(dir, witness, &[], cmd)
}

/// The witnesses a test runs with: eBPF and procfs where the kernel loads eBPF (the
/// kernel's answer, not candor's: candor's eBPF witness then has to work), procfs alone
/// elsewhere, with the reason the eBPF half is missing, which the test reports as its
/// skip once the procfs half has passed ([`bpf_half`]).
fn witness_modes() -> (Vec<&'static str>, Option<String>) {
    if !is_root() {
        return (vec!["procfs"], Some("needs root for the eBPF half".into()));
    }
    match candor_testkit::kernel_bpf() {
        Ok(()) => (vec!["bpf", "procfs"], None),
        Err(why) => (vec!["procfs"], Some(format!("the eBPF half: {why}"))),
    }
}

/// Counts the eBPF half a test could not run as its skip (after the procfs half passed).
fn bpf_half(missing: Option<String>) {
    if let Some(why) = missing {
        candor_testkit::skip(why);
    }
}

/// Writes `mib` MiB of zeros to `file` with dd (outside any audit).
fn lay_out(file: &Path, mib: u32) {
    let st = Command::new("dd")
        .args(["if=/dev/zero", "bs=1M", "status=none"])
        .arg(format!("count={mib}"))
        .arg(format!("of={}", file.display()))
        .status()
        .expect("dd runs");
    assert!(st.success(), "dd lays out {}", file.display());
}

fn row(v: &Value) -> &Value {
    &v["audit"]["reconciliation"][0]
}

#[test]
fn fio_direct_read_is_reconciled() {
    let _one = serial();
    if !candor_testkit::need_programs(&["fio"]) {
        return;
    }
    let dir = scratch();
    let file = dir.path().join("dread.dat");
    // Lay the file out first, so the audited run is the read alone.
    lay_out(&file, 256);
    let (modes, missing) = witness_modes();
    for w in modes {
        let (out, v) = audit(
            dir.path(),
            w,
            &[
                "fio",
                "--name=dread",
                &format!("--filename={}", file.display()),
                "--rw=read",
                "--bs=128k",
                "--size=256m",
                "--direct=1",
                "--output-format=json",
            ],
        );
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // fio's JSON passed through unchanged on stdout.
        let fio_json: Value = serde_json::from_slice(&out.stdout).expect("fio's JSON on stdout");
        let io_bytes = fio_json["jobs"][0]["read"]["io_bytes"].as_u64();
        assert_eq!(io_bytes, Some(256 << 20));
        assert_eq!(v["kind"], "audit");
        let a = &v["audit"];
        assert_eq!(a["claims"].as_array().map(Vec::len), Some(1));
        let r = row(&v);
        assert_eq!(r["test"], "dread");
        assert_eq!(r["record_size"], 128 << 10);
        assert_eq!(
            r["claimed_Bps"].as_f64(),
            fio_json["jobs"][0]["read"]["bw_bytes"].as_f64()
        );
        let ratio = r["ratio"].as_f64().expect("a ratio");
        let source = a["source"].as_str().unwrap_or("");
        if source == "bpf" {
            assert_eq!(r["observed_bytes"], 256 << 20, "{r:#}");
            assert!((ratio - 1.0).abs() <= 0.03, "direct read within 3%: {r:#}");
            assert!(r["observed_syscall_Bps"].as_f64().is_some());
        } else {
            // Sampling gives the ends of the phase to a few milliseconds.
            let b = r["observed_bytes"].as_f64().unwrap_or(0.0);
            assert!((b / (256u64 << 20) as f64 - 1.0).abs() < 0.02, "{r:#}");
            assert!((ratio - 1.0).abs() <= 0.15, "{r:#}");
        }
        let table = String::from_utf8_lossy(&out.stderr);
        assert!(
            table.contains("claimed") && table.contains("dread"),
            "{table}"
        );
    }
    bpf_half(missing);
}

/// A file the auditor's caller left open (the lock `flock` holds while it runs the audit)
/// is passed down to the command. With procfs, which counts bytes per process, it must not
/// take a share of bytes the command moved through a file it opened itself with pread,
/// which moves no position to tell the two apart: once it took half.
#[test]
fn a_file_passed_down_from_the_caller_takes_no_share_of_the_bytes() {
    let _one = serial();
    if !candor_testkit::need_programs(&["fio", "sh"]) {
        return;
    }
    let dir = scratch();
    let file = dir.path().join("pread.dat");
    lay_out(&file, 64);
    let held = dir.path().join("held.lock");
    std::fs::write(&held, b"").expect("the held file");
    let json = dir.path().join("audit.json");
    // sh opens the held file on descriptor 3 without close-on-exec, then becomes candor.
    let out = Command::new("sh")
        .arg("-c")
        .arg("exec 3<\"$0\"; exec \"$@\"")
        .arg(&held)
        .arg(env!("CARGO_BIN_EXE_candor"))
        .args(["audit", "--witness", "procfs", "-o"])
        .arg(&json)
        .arg("--")
        .args([
            "fio",
            "--name=pread",
            "--rw=read",
            "--bs=64k",
            "--size=64m",
            "--direct=1",
        ])
        .arg(format!("--filename={}", file.display()))
        .args(["--ioengine=psync", "--output-format=json"])
        .current_dir(dir.path())
        .output()
        .expect("sh runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).expect("the audit JSON"))
        .expect("valid JSON");
    let phases = v["audit"]["phases"].as_array().expect("phases");
    let on = |path: &Path| -> u64 {
        phases
            .iter()
            .filter(|p| p["path"].as_str() == path.to_str())
            .map(|p| p["read_bytes"].as_u64().unwrap_or(0))
            .sum()
    };
    assert!(
        phases.iter().any(|p| p["path"].as_str() == held.to_str()),
        "the held file is seen open in fio: {phases:#?}"
    );
    assert_eq!(on(&held), 0, "{phases:#?}");
    let read = on(&file) as f64 / (64u64 << 20) as f64;
    assert!((read - 1.0).abs() < 0.02, "{read}: {phases:#?}");
}

/// The verdict a row must have for its claimed/observed ratio: within
/// [`candor_audit::reconcile::AGREEMENT`] the figures agree (or, for a figure the page cache
/// made, "cache speed"), beyond it the claim over- or understates.
fn verdict_for(ratio: f64, cache_speed: bool) -> &'static str {
    let off = ratio - 1.0;
    if off.abs() <= candor_audit::reconcile::AGREEMENT {
        if cache_speed {
            "cache speed"
        } else {
            "agrees"
        }
    } else if off > 0.0 {
        "overstated"
    } else {
        "understated"
    }
}

/// The writeback threshold of this machine's page cache in bytes (what the kernel lets be
/// dirty before the flusher threads start): `vm.dirty_background_bytes`, or
/// `vm.dirty_background_ratio` of the memory available.
fn dirty_background_bytes() -> u64 {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .unwrap_or_else(|e| panic!("{p}: {e}"))
            .trim()
            .parse::<u64>()
            .unwrap_or_else(|e| panic!("{p}: {e}"))
    };
    let bytes = read("/proc/sys/vm/dirty_background_bytes");
    if bytes > 0 {
        return bytes;
    }
    let meminfo = std::fs::read_to_string("/proc/meminfo").expect("/proc/meminfo");
    let available_kib: u64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("MemAvailable in /proc/meminfo");
    available_kib * 1024 / 100 * read("/proc/sys/vm/dirty_background_ratio")
}

/// fio writing 128 MiB through the page cache onto xfs on a loop device nobody else uses
/// (so the device's writes are fio's alone, for the procfs witness too; a fresh ext4 would
/// zero its inode tables, 24 MiB on this size, a few seconds after the mount). Without a flush
/// none of it reaches the device while the file is open, as the machine lets more than that
/// be dirty: the row says the figure is the page cache's, by name, and never calls it
/// agreement. With `--end_fsync=1` the flush is inside fio's timing and all of it reaches
/// the device before the close: the row says so and does not speak of the page cache.
#[test]
fn fio_buffered_write_explains_the_page_cache() {
    let _one = serial();
    if !candor_testkit::need_programs(&["fio"]) {
        return;
    }
    let Some(fs) = common::scratch("xfs", 384 << 20) else {
        return;
    };
    const SIZE: u64 = 128 << 20;
    let background = dirty_background_bytes();
    let (modes, missing) = witness_modes();
    for w in modes {
        for end_fsync in [false, true] {
            let case = format!("{w} end_fsync={}", end_fsync as u8);
            let file = fs
                .path()
                .join(format!("bwrite-{w}-{}.dat", end_fsync as u8));
            let (out, v) = audit(
                fs.path(),
                w,
                &[
                    "fio",
                    "--name=bwrite",
                    &format!("--filename={}", file.display()),
                    "--rw=write",
                    "--bs=64k",
                    "--size=128m",
                    &format!("--end_fsync={}", end_fsync as u8),
                ],
            );
            assert_eq!(
                out.status.code(),
                Some(0),
                "{case}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            std::fs::remove_file(&file).expect("fio's file");
            assert_eq!(v["audit"]["source"], w, "{case}");
            let r = row(&v);
            assert_eq!(r["test"], "bwrite", "{case}: {v:#}");
            assert_eq!(r["direction"], "write", "{case}");
            assert!(
                r["claimed_Bps"].as_f64().unwrap_or(0.0) > 0.0,
                "{case}: {r:#}"
            );
            let observed = r["observed_bytes"].as_f64().unwrap_or(0.0);
            assert!((observed / SIZE as f64 - 1.0).abs() < 0.02, "{case}: {r:#}");
            let flags = v["audit"]["claims"][0]["flags"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            assert_eq!(
                flags.iter().any(|x| x == "fsync_in_timing"),
                end_fsync,
                "{case}: fio times its end_fsync: {flags:?}"
            );
            let share = r["flushed_share"]
                .as_f64()
                .unwrap_or_else(|| panic!("{case}: the share flushed on the loop device: {r:#}"));
            let ratio = r["ratio"].as_f64().expect("a ratio");
            let why = r["explanation"].as_str().unwrap_or("");
            eprintln!("{case}: flushed {share:.4}, {} — {why}", r["verdict"]);
            let page_cache = format!(
                "only {:.0}% of the written bytes reached the device while the file was open: \
                 the figure is the page cache's speed (put a flush inside the timing: fio --end_fsync=1, iozone -e)",
                share * 100.0
            );
            if end_fsync {
                assert!(share >= 0.95, "{case}: the fsync before the close: {r:#}");
                let flush = format!(
                    "the flush is inside the timing: the device wrote {:.0}% of the bytes before the file was closed",
                    share * 100.0
                );
                assert!(why.contains(&flush), "{case}: '{flush}' in: {why}");
                assert!(!why.contains("page cache"), "{case}: {why}");
                assert_eq!(r["verdict"], verdict_for(ratio, false), "{case}: {r:#}");
            } else {
                assert!(
                    share < 0.05,
                    "{case}: {share} of {SIZE} bytes flushed while the kernel lets {background} be dirty: {r:#}"
                );
                assert!(
                    why.contains(&page_cache),
                    "{case}: '{page_cache}' in: {why}"
                );
                assert_eq!(r["verdict"], verdict_for(ratio, true), "{case}: {r:#}");
            }
        }
    }
    bpf_half(missing);
}

#[test]
fn dd_direct_write_bytes_are_exact() {
    let _one = serial();
    let dir = scratch();
    let (modes, missing) = witness_modes();
    for w in modes {
        let of = dir.path().join(format!("dd-{w}.dat"));
        let (out, v) = audit(
            dir.path(),
            w,
            &[
                "dd",
                "if=/dev/zero",
                &format!("of={}", of.display()),
                "bs=1M",
                "count=64",
                "oflag=direct",
            ],
        );
        assert_eq!(out.status.code(), Some(0));
        // dd's own summary still reaches stderr.
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("67108864 bytes"), "{err}");
        let r = row(&v);
        assert_eq!(r["test"], "write");
        assert_eq!(r["claimed_bytes"], 64 << 20);
        assert_eq!(r["observed_bytes"], 64 << 20, "{w}: {r:#}");
        assert_eq!(r["record_size"], 1 << 20);
        let phases = v["audit"]["phases"].as_array().cloned().unwrap_or_default();
        let on_file: Vec<&Value> = phases
            .iter()
            .filter(|p| p["path"] == of.display().to_string())
            .collect();
        assert!(!on_file.is_empty(), "{phases:#?}");
        // dd opens its output with O_DIRECT and writes it through a dup2'd descriptor.
        assert!(
            on_file.iter().all(|p| p["direct"] == true),
            "{w}: O_DIRECT seen: {on_file:#?}"
        );
        let storage: u64 = on_file
            .iter()
            .map(|p| p["storage_write_bytes"].as_u64().unwrap_or(0))
            .sum();
        // O_DIRECT bytes go to storage. (With eBPF, a request the block layer issues from
        // a kernel thread is counted as that thread's, so allow a sliver.) Now and then
        // the kernel does not run the eBPF completion program for a request; the audit
        // must then say so, and the shortfall must fit in the requests it names.
        let device = on_file[0]["device"].as_str().unwrap_or_default();
        let unseen = v["audit"]["block_requests_unseen"][device]
            .as_u64()
            .unwrap_or(0);
        let short = (64u64 << 20).saturating_sub(storage);
        if unseen > 0 {
            let max_request =
                std::fs::read_to_string(format!("/sys/class/block/{device}/queue/max_sectors_kb"))
                    .ok()
                    .and_then(|s| s.trim().parse::<u64>().ok())
                    .map(|kb| kb << 10)
                    .expect("the device's max_sectors_kb in sysfs");
            eprintln!(
                "{w}: the audit reports {unseen} completion(s) on {device} unseen; storage is short by {short} bytes"
            );
            assert!(
                short <= unseen.saturating_mul(max_request),
                "short by {short} bytes, more than {unseen} unseen request(s) can hold: {on_file:#?}"
            );
        } else {
            assert!(
                storage.abs_diff(64 << 20) <= (64 << 20) / 100,
                "O_DIRECT bytes went to storage, and no unseen completion was reported: {on_file:#?}"
            );
        }
    }
    bpf_half(missing);
}

#[test]
fn output_and_exit_code_pass_through() {
    let _one = serial();
    let dir = scratch();
    let out = candor()
        .current_dir(dir.path())
        .args([
            "audit",
            "--",
            "sh",
            "-c",
            "printf 'hello\\n'; printf 'oops\\n' >&2; exit 3",
        ])
        .output()
        .expect("candor runs");
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(out.stdout, b"hello\n", "stdout is the command's alone");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("oops\n"), "{err}");
    assert!(err.contains("touched no regular file"), "{err}");
    assert!(err.contains("exited with code 3"), "{err}");
}

#[test]
fn command_not_found_is_said_plainly() {
    let _one = serial();
    let dir = scratch();
    let json = dir.path().join("nf.json");
    let out = candor()
        .current_dir(dir.path())
        .args(["audit", "-o"])
        .arg(&json)
        .args(["--", "candor-no-such-program-xyz"])
        .output()
        .expect("candor runs");
    assert_eq!(out.status.code(), Some(127));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("command not found"), "{err}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).expect("JSON written"))
        .expect("valid JSON");
    assert_eq!(v["audit"]["exit"]["not_found"], true);
    assert_eq!(v["complete"], false);
}

#[test]
fn killed_by_a_signal_still_reports() {
    let _one = serial();
    let dir = scratch();
    let out = candor()
        .current_dir(dir.path())
        .args([
            "audit",
            "--",
            "sh",
            "-c",
            "dd if=/dev/zero of=x bs=64k count=64 status=none; kill -9 $$",
        ])
        .output()
        .expect("candor runs");
    assert_eq!(out.status.code(), Some(128 + 9));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("killed by signal 9 (SIGKILL)"), "{err}");
}

#[test]
fn bad_usage_is_exit_2() {
    let _one = serial();
    let out = candor()
        .args(["audit", "--witness", "sometimes", "--", "true"])
        .output()
        .expect("candor runs");
    assert_eq!(out.status.code(), Some(2));
    let out = candor().args(["audit"]).output().expect("candor runs");
    assert_eq!(out.status.code(), Some(2), "a command is required");
    let out = candor()
        .args(["audit", "-o", "/nonexistent-dir/x.json", "--", "true"])
        .output()
        .expect("candor runs");
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn sigterm_goes_on_to_the_command_and_the_audit_still_reports() {
    let _one = serial();
    let dir = scratch();
    let json = dir.path().join("term.json");
    let mut child = candor()
        .current_dir(dir.path())
        .args(["audit", "-o"])
        .arg(&json)
        .args(["--", "sleep", "30"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("candor runs");
    // Once `sleep` runs under candor: the signal must reach the running command.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !has_child_named(child.id(), "sleep") {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("candor audit did not start sleep in 30 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().expect("candor ends");
    assert_eq!(out.status.code(), Some(128 + 15));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("killed by signal 15 (SIGTERM)"), "{err}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).expect("JSON written"))
        .expect("valid JSON");
    assert_eq!(v["audit"]["exit"]["signal"], 15);
}

/// Whether a process named `name` whose parent is `parent` runs (from /proc/PID/stat:
/// "pid (comm) state ppid ...").
fn has_child_named(parent: u32, name: &str) -> bool {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return false;
    };
    dir.flatten().any(|e| {
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            return false;
        };
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            return false;
        };
        let ppid = stat[close + 1..].split_whitespace().nth(1);
        &stat[open + 1..close] == name && ppid == Some(parent.to_string().as_str())
    })
}
