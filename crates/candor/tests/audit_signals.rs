//! `candor audit` and signals (docs/audit.md, "Signals"): SIGTERM and SIGHUP sent to candor
//! go on to the command, one that arrives before the command started is sent as soon as it
//! has, and either way candor waits for the command to end and reports. And `--interval`
//! under the eBPF source: the sampling period, at least 20 ms with eBPF.

mod common;

use serde_json::Value;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One audit at a time: candor counts every child of the test process as part of the
/// audited tree only for its own children, but the signals and timings want a quiet host.
static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn scratch() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("candor-audit-signals-")
        .tempdir_in("/var/tmp")
        .expect("a directory under /var/tmp")
}

fn start(dir: &Path, witness: &str, json: &Path, cmd: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_candor"))
        .current_dir(dir)
        .args(["audit", "-q", "--witness", witness, "-o"])
        .arg(json)
        .arg("--")
        .args(cmd)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("candor runs")
}

fn signal(child: &Child, sig: libc::c_int) {
    // SAFETY: signalling our own child.
    assert_eq!(unsafe { libc::kill(child.id() as i32, sig) }, 0);
}

/// The `sleep` processes whose argument is `marker` (unique to the test), candor's own
/// command line, which holds it too, left out.
fn running_with(marker: &str) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return vec![];
    };
    let want = format!("sleep\0{marker}\0");
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c == want.as_bytes())
        })
        .collect()
}

/// Whether process `pid` has a handler for `sig` (SigCgt in /proc/PID/status).
fn catches(pid: u32, sig: libc::c_int) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            let hex = s
                .lines()
                .find_map(|l| l.strip_prefix("SigCgt:"))?
                .trim()
                .to_string();
            u64::from_str_radix(&hex, 16).ok()
        })
        .is_some_and(|mask| mask & (1 << (sig - 1)) != 0)
}

/// Waits for `child` (at most `limit`), killing it and failing past that.
fn finish(mut child: Child, limit: Duration) -> std::process::Output {
    let t = Instant::now();
    while child.try_wait().expect("try_wait").is_none() {
        if t.elapsed() > limit {
            let _ = child.kill();
            panic!("candor audit still runs after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().expect("candor's output")
}

fn saved(json: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(json).expect("the audit was saved"))
        .expect("valid JSON")
}

/// SIGHUP sent to candor reaches the running command: one that traps it exits with its
/// own code (3), which candor passes on and saves; one that does not is killed by it
/// (129, "killed by signal 1 (SIGHUP)").
#[test]
fn sighup_goes_on_to_the_command() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = scratch();
    let started = dir.path().join("started");
    let got = dir.path().join("got-hup");
    let script = format!(
        "trap 'echo hup > {}; exit 3' HUP; : > {}; while :; do sleep 0.05; done",
        got.display(),
        started.display()
    );
    let json = dir.path().join("trap.json");
    let child = start(dir.path(), "procfs", &json, &["sh", "-c", &script]);
    let t = Instant::now();
    while !started.exists() {
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "the command never started"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    signal(&child, libc::SIGHUP);
    let out = finish(child, Duration::from_secs(20));
    assert_eq!(out.status.code(), Some(3), "{}", common::text(&out.stderr));
    assert_eq!(
        std::fs::read_to_string(&got).expect("the trap ran"),
        "hup\n"
    );
    assert_eq!(saved(&json)["audit"]["exit"]["code"], 3);

    let json = dir.path().join("plain.json");
    let marker = format!("30.{}1", std::process::id());
    let child = start(dir.path(), "procfs", &json, &["sleep", &marker]);
    let t = Instant::now();
    while running_with(&marker).is_empty() {
        assert!(t.elapsed() < Duration::from_secs(30), "sleep never started");
        std::thread::sleep(Duration::from_millis(10));
    }
    signal(&child, libc::SIGHUP);
    let out = finish(child, Duration::from_secs(20));
    let err = common::text(&out.stderr);
    assert_eq!(out.status.code(), Some(128 + 1), "{err}");
    assert!(err.contains("killed by signal 1 (SIGHUP)"), "{err}");
    let v = saved(&json);
    assert_eq!(v["audit"]["exit"]["signal"], 1);
    assert_eq!(v["audit"]["exit"]["code"], 129);
    assert!(running_with(&marker).is_empty(), "sleep left running");
}

/// A signal that arrives while candor prepares (loading eBPF takes a while, before the
/// command starts) is sent to the command as soon as it has started: candor does not die
/// of it, the command ends at once (not after its 30 s), and the audit says it was killed.
#[test]
fn a_signal_before_the_command_starts_is_sent_once_it_has() {
    if !common::need_bpf() {
        return;
    }
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = scratch();
    for (i, sig) in [libc::SIGTERM, libc::SIGHUP].into_iter().enumerate() {
        let json = dir.path().join(format!("early-{sig}.json"));
        let marker = format!("30.{}{i}", std::process::id());
        let t = Instant::now();
        let child = start(dir.path(), "bpf", &json, &["sleep", &marker]);
        // Once candor catches the signal (its handlers are installed first thing in the
        // audit, /proc/PID/status's SigCgt), inside the eBPF load (300-440 ms here).
        while !catches(child.id(), sig) {
            assert!(
                t.elapsed() < Duration::from_secs(20),
                "candor never caught {sig}"
            );
            std::thread::sleep(Duration::from_micros(200));
        }
        let before = running_with(&marker).is_empty();
        signal(&child, sig);
        let out = finish(child, Duration::from_secs(20));
        let err = common::text(&out.stderr);
        assert!(
            before,
            "the command had already started: the test is too late"
        );
        assert_eq!(out.status.code(), Some(128 + sig), "{err}");
        assert!(t.elapsed() < Duration::from_secs(20), "{err}");
        let v = saved(&json);
        assert_eq!(v["audit"]["exit"]["signal"], sig, "{v:#}");
        assert!(running_with(&marker).is_empty(), "sleep left running");
    }
}

/// A signal at any moment of candor's start, from right after it was started to after
/// its command runs: the command never outlives candor, candor never hangs, and once
/// candor's handlers are in place (whenever it saves an audit) the exit says the signal.
#[test]
fn a_signal_at_any_moment_of_the_start_leaves_nothing_running() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = scratch();
    let mut reported = 0;
    for (i, delay_us) in [0u64, 200, 500, 1000, 2000, 4000, 8000, 16000, 50000]
        .into_iter()
        .enumerate()
    {
        let json = dir.path().join(format!("any-{i}.json"));
        let marker = format!("30.{}{i}", std::process::id());
        let child = start(dir.path(), "procfs", &json, &["sleep", &marker]);
        std::thread::sleep(Duration::from_micros(delay_us));
        signal(&child, libc::SIGTERM);
        let out = finish(child, Duration::from_secs(20));
        let err = common::text(&out.stderr);
        use std::os::unix::process::ExitStatusExt;
        if out.status.signal() == Some(libc::SIGTERM) {
            // Killed before its handlers were in place: nothing was started.
            assert!(
                !json.exists(),
                "{delay_us} us: an audit saved, yet candor died"
            );
        } else {
            assert_eq!(out.status.code(), Some(128 + 15), "{delay_us} us: {err}");
            assert_eq!(saved(&json)["audit"]["exit"]["signal"], 15);
            reported += 1;
        }
        // Nothing left running, whichever way it went.
        let t = Instant::now();
        while !running_with(&marker).is_empty() {
            assert!(
                t.elapsed() < Duration::from_secs(2),
                "{delay_us} us: sleep left running after candor ended"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    assert!(reported > 0, "no signal was ever passed on");
}

/// `--interval` is the sampling period: over a 2 s command, /proc/diskstats is read
/// about once per period (counted with strace); with eBPF a period under 20 ms is taken
/// as 20 ms, so `--interval 1` samples at most once per 20 ms.
#[test]
fn interval_sets_the_sampling_period_and_ebpf_holds_it_at_20_ms_or_more() {
    if !common::need_bpf() || !common::need_programs(&["strace"]) {
        return;
    }
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = scratch();
    let samples = |interval: &str| -> (usize, f64) {
        let json = dir.path().join(format!("interval-{interval}.json"));
        let (out, trace) = common::strace_candor(
            dir.path(),
            "openat",
            &[
                "audit",
                "-q",
                "--witness",
                "bpf",
                "--interval",
                interval,
                "-o",
                json.to_str().unwrap(),
                "--",
                "sleep",
                "2",
            ],
        );
        assert!(out.status.success(), "{}", common::text(&out.stderr));
        let v = saved(&json);
        assert_eq!(
            v["options"]["interval_ms"],
            interval.parse::<u64>().unwrap()
        );
        assert_eq!(v["audit"]["source"], "bpf", "{v:#}");
        let wall = v["audit"]["wall_s"].as_f64().expect("wall_s");
        let n = trace
            .lines()
            .filter(|l| l.contains("\"/proc/diskstats\""))
            .count();
        (n, wall)
    };
    // Outside the sampling loop: one reading before the command, one after it.
    const OUTSIDE: f64 = 4.0;
    let (slow, wall_slow) = samples("200");
    assert!(
        (slow as f64) <= wall_slow / 0.2 + 1.0 + OUTSIDE && (slow as f64) >= wall_slow / 0.3,
        "--interval 200: {slow} readings in {wall_slow} s"
    );
    let (fast, wall_fast) = samples("1");
    assert!(
        (fast as f64) <= wall_fast / 0.020 + 1.0 + OUTSIDE,
        "--interval 1 with eBPF: {fast} readings in {wall_fast} s, more than one per 20 ms"
    );
    assert!(
        fast >= 2 * slow,
        "--interval 1 sampled no more often than 200: {fast} and {slow}"
    );
}

/// The command's exit ends the sampling at once, not at the end of the period it falls
/// in: a 0.3 s command under `--interval 10s` is audited in well under 10 s.
#[test]
fn a_long_interval_does_not_hold_the_audit_after_the_command_exits() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = scratch();
    let json = dir.path().join("long-interval.json");
    let started = std::time::Instant::now();
    let out = common::candor()
        .current_dir(dir.path())
        .args(["audit", "-q", "--interval", "10s", "-o"])
        .arg(&json)
        .args(["--", "sleep", "0.3"])
        .output()
        .expect("run candor audit");
    let took = started.elapsed().as_secs_f64();
    assert!(out.status.success(), "{}", common::text(&out.stderr));
    assert!(
        took < 5.0,
        "candor audit --interval 10s of a 0.3 s command took {took:.1} s"
    );
    let v = saved(&json);
    assert_eq!(v["options"]["interval_ms"], 10000);
    let wall = v["audit"]["wall_s"].as_f64().expect("wall_s");
    assert!((0.3..5.0).contains(&wall), "wall_s {wall}");
}
