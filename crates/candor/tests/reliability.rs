//! Faults survived, each injected for real: a full filesystem (ENOSPC from candor-faultfs),
//! a read-only filesystem, a directory without permission, a target removed while candor
//! runs, SIGINT/SIGTERM/SIGHUP at several moments, SIGKILL then `candor clean`, an I/O error
//! at an offset, data corrupted behind candor's back (`--verify`), symlinks planted in the
//! run directory, a block device target, and a soak. Every test drives the real binary;
//! one that needs what this machine lacks is skipped (candor-testkit), and a set-up that
//! fails where the capability exists (a loop device, a mount) is a failure.
//!
//! docs/reliability.md lists every fault, what candor does, and the test here that proves it.

use candor_faultfs::{FaultFs, Faults, MountError};
use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{candor, candor_as_nobody, has_data_file, need_or, need_root, run_dirs_in};

fn spawn_run(target: &Path, args: &[&str]) -> Child {
    candor()
        .arg("run")
        .arg(target)
        .arg("--quiet")
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("candor starts")
}

fn run(target: &Path, args: &[&str]) -> Output {
    candor()
        .arg("run")
        .arg(target)
        .arg("--quiet")
        .args(args)
        .output()
        .expect("candor runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

fn wait_for(what: &str, timeout_s: u64, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(timeout_s);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Whether a run directory under `target` holds a data file (a test is under way).
fn data_file_exists(target: &Path) -> bool {
    run_dirs_in(target).iter().any(|d| has_data_file(d))
}

/// Whether a data file in the run directory holds at least `bytes` (a test is writing).
fn data_file_holds(target: &Path, bytes: u64) -> bool {
    run_dirs_in(target).iter().any(|d| {
        std::fs::read_dir(d)
            .map(|r| {
                r.filter_map(|e| e.ok()).any(|e| {
                    e.file_name().to_string_lossy().ends_with(".dat")
                        && e.metadata().is_ok_and(|m| m.len() >= bytes)
                })
            })
            .unwrap_or(false)
    })
}

fn no_panic(err: &str) {
    assert!(
        !err.contains("panicked") && !err.contains("RUST_BACKTRACE"),
        "candor panicked: {err}"
    );
}

fn load(p: &Path) -> candor_model::RunDoc {
    candor_model::load_result(p).expect("the saved JSON loads back")
}

/// Mounts candor-faultfs over a fresh backing directory; None after a skip when this
/// machine cannot mount FUSE.
fn faultfs(faults: &Faults) -> Option<(tempfile::TempDir, FaultFs)> {
    let dir = tempfile::tempdir().unwrap();
    let backing = dir.path().join("backing");
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&backing).unwrap();
    std::fs::create_dir(&mnt).unwrap();
    let fs = need_or(FaultFs::mount(&backing, &mnt, faults), MountError::is_skip)?;
    Some((dir, fs))
}

// ---- what is not candor's stays as it was ----

#[derive(Debug, PartialEq)]
struct Entry {
    kind: &'static str,
    size: u64,
    mtime_ns: i128,
    mode: u32,
    sum: u64,
    link: Option<PathBuf>,
}

fn fnv(bytes: &[u8]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// Names, kinds, sizes, mtimes, modes and checksums of everything under `root`, candor's
/// run directories left out.
fn snapshot(root: &Path) -> BTreeMap<PathBuf, Entry> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().filter_map(|e| e.ok()) {
            let p = e.path();
            if p.parent() == Some(root) && e.file_name().to_string_lossy().starts_with(".candor-") {
                continue;
            }
            let m = std::fs::symlink_metadata(&p).unwrap();
            let ft = m.file_type();
            let (kind, sum, link) = if ft.is_symlink() {
                ("link", 0, std::fs::read_link(&p).ok())
            } else if ft.is_dir() {
                stack.push(p.clone());
                ("dir", 0, None)
            } else {
                ("file", fnv(&std::fs::read(&p).unwrap()), None)
            };
            out.insert(
                p.strip_prefix(root).unwrap().to_path_buf(),
                Entry {
                    kind,
                    size: if ft.is_dir() { 0 } else { m.len() },
                    mtime_ns: m.mtime() as i128 * 1_000_000_000 + m.mtime_nsec() as i128,
                    mode: m.mode(),
                    sum,
                    link,
                },
            );
        }
    }
    out
}

/// A target that already holds someone's data: files, a subdirectory, a symlink, a file
/// named like candor's own.
fn populate(root: &Path) {
    std::fs::write(root.join("notes.txt"), b"do not touch").unwrap();
    std::fs::create_dir(root.join("sub")).unwrap();
    std::fs::write(root.join("sub/data.bin"), vec![0xa5u8; 200_000]).unwrap();
    std::fs::write(root.join("t0.dat"), b"a user's file named like candor's").unwrap();
    std::os::unix::fs::symlink("notes.txt", root.join("link-to-notes")).unwrap();
    // Let mtimes settle into the past, so a touch would show.
    std::thread::sleep(Duration::from_millis(20));
}

#[test]
fn a_normal_run_a_killed_run_and_a_clean_leave_the_target_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    populate(dir.path());
    let before = snapshot(dir.path());
    assert_eq!(before.len(), 5);

    let o = run(
        dir.path(),
        &[
            "--tests",
            "write,read,randwrite",
            "--file-size",
            "4m",
            "--record-size",
            "64k",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        snapshot(dir.path()),
        before,
        "a normal run changed the target"
    );
    assert!(run_dirs_in(dir.path()).is_empty());

    // SIGKILL in the middle of a test: the run directory stays (nothing can run on
    // SIGKILL), and `candor clean` removes it, and only it.
    let mut child = spawn_run(
        dir.path(),
        &[&["--tests", "write,randread"][..], &common::LONG].concat(),
    );
    wait_for("a test to have written 1 MiB", 60, || {
        data_file_holds(dir.path(), 1 << 20)
    });
    child.kill().unwrap();
    let _ = child.wait();
    let stale = run_dirs_in(dir.path());
    assert_eq!(stale.len(), 1, "the killed run left its directory");
    assert_eq!(snapshot(dir.path()), before);
    let o = candor().arg("clean").arg(dir.path()).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("removed"));
    assert!(
        run_dirs_in(dir.path()).is_empty(),
        "clean removed the stale run"
    );
    assert_eq!(snapshot(dir.path()), before, "a clean changed the target");

    // Killed again, and this time the next run finds and removes the leftovers.
    common::dead_run(dir.path());
    assert_eq!(run_dirs_in(dir.path()).len(), 1);
    let o = run(dir.path(), &["--tests", "write", "--file-size", "1m"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("left behind by an earlier run"),
        "{}",
        stderr(&o)
    );
    assert!(run_dirs_in(dir.path()).is_empty());
    assert_eq!(snapshot(dir.path()), before);
}

// ---- full filesystem ----

#[test]
fn enospc_in_the_middle_of_a_write_test() {
    // 20 MiB of writes are allowed through the mount: the 4 MiB tests fit, the 32 MiB
    // write runs out in the middle of its file.
    let Some((_dir, fs)) = faultfs(&Faults::new().enospc_after(20 << 20)) else {
        return;
    };
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("r.json");
    let o = run(
        fs.path(),
        &[
            "--tests",
            "write,read",
            "--file-size",
            "4m,32m",
            "--record-size",
            "64k",
            "-o",
            json.to_str().unwrap(),
        ],
    );
    let err = stderr(&o);
    no_panic(&err);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        fs.faults_injected() > 0,
        "no ENOSPC was injected: {}",
        fs.log()
    );
    let target = fs.path().display().to_string();
    let line = err
        .lines()
        .find(|l| l.contains("ran out of space"))
        .unwrap_or_else(|| panic!("no sentence about the space: {err}"));
    assert!(line.contains(&target), "the target is named: {line}");
    assert!(
        line.contains("32M per file"),
        "the space the plan needed is named: {line}"
    );
    let doc = load(&json);
    assert!(!doc.complete);
    assert!(doc
        .stop_reason
        .as_deref()
        .unwrap_or("")
        .contains("ran out of space"));
    let done: Vec<(&str, u64)> = doc
        .results
        .iter()
        .map(|r| (r.test.as_str(), r.file_size))
        .collect();
    assert_eq!(
        done,
        [("write", 4 << 20), ("read", 4 << 20)],
        "completed tests kept"
    );
    assert!(doc.results.iter().all(|r| r.status.is_ok()));
    assert!(run_dirs_in(fs.path()).is_empty(), "candor's files removed");
}

#[test]
fn enospc_on_a_real_filesystem_filled_during_the_run() {
    // A 64 MiB ext4 on a loop device: the plan fits when candor starts, then another
    // writer takes every free block while candor's write test repeats.
    let Some(fs) = common::scratch("ext4", 64 << 20) else {
        return;
    };
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("r.json");
    let mut child = spawn_run(
        fs.path(),
        &[
            "--tests",
            "write",
            "--file-size",
            "16m",
            "--record-size",
            "64k",
            "--repeat",
            "500",
            "-o",
            json.to_str().unwrap(),
        ],
    );
    wait_for("a test to start", 60, || data_file_exists(fs.path()));
    let filler = fs.path().join("someone-elses-file");
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (filler, done) = (filler.clone(), done.clone());
        std::thread::spawn(move || {
            use std::io::Write;
            let mut f = std::fs::File::create(&filler).unwrap();
            let chunk = vec![0x5au8; 256 << 10];
            let mut full = 0u32;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                match f.write(&chunk) {
                    Ok(n) if n > 0 => full = 0,
                    _ => {
                        full += 1;
                        std::thread::sleep(Duration::from_millis(if full > 5 { 5 } else { 1 }));
                    }
                }
            }
        })
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break Some(st);
        }
        if Instant::now() > deadline {
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    writer.join().unwrap();
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
        panic!("candor never met the full filesystem");
    }
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        use std::io::Read;
        let _ = e.read_to_string(&mut err);
    }
    no_panic(&err);
    assert_eq!(status.and_then(|s| s.code()), Some(1), "{err}");
    let line = err
        .lines()
        .find(|l| l.contains("ran out of space"))
        .unwrap_or_else(|| panic!("no sentence about the space: {err}"));
    assert!(line.contains(&fs.path().display().to_string()), "{line}");
    assert!(line.contains("16M per file"), "{line}");
    let doc = load(&json);
    assert!(!doc.complete);
    assert!(run_dirs_in(fs.path()).is_empty(), "candor's files removed");
    assert!(filler.exists(), "the other writer's file is left alone");
}

#[test]
fn a_filesystem_too_small_for_the_plan_is_refused_before_writing() {
    let Some(fs) = common::scratch("ext4", 48 << 20) else {
        return;
    };
    let o = run(fs.path(), &["--tests", "write", "--file-size", "256m"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("free but the plan needs"), "{err}");
    assert!(err.contains(&fs.path().display().to_string()), "{err}");
    assert!(run_dirs_in(fs.path()).is_empty());
}

// ---- read-only, no permission, removed target ----

#[test]
fn a_read_only_filesystem_is_refused_and_nothing_is_written() {
    let Some(fs) = common::scratch("ext4", 32 << 20) else {
        return;
    };
    std::fs::write(fs.path().join("keep.txt"), b"before").unwrap();
    let st = Command::new("mount")
        .args(["-o", "remount,ro"])
        .arg(fs.path())
        .status()
        .unwrap();
    assert!(st.success(), "remount read-only");
    let before = snapshot(fs.path());
    let o = run(fs.path(), &["--tests", "write,read", "--file-size", "1m"]);
    let _ = Command::new("mount")
        .args(["-o", "remount,rw"])
        .arg(fs.path())
        .status();
    let err = stderr(&o);
    no_panic(&err);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("read-only filesystem"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one sentence: {err}");
    assert_eq!(snapshot(fs.path()), before);
}

#[test]
fn a_directory_without_permission_is_refused() {
    if !need_root("to run candor as another user") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let locked = dir.path().join("locked");
    std::fs::create_dir(&locked).unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o755)).unwrap();
    let hidden = dir.path().join("hidden");
    std::fs::create_dir(&hidden).unwrap();
    std::fs::create_dir(hidden.join("inner")).unwrap();
    std::fs::set_permissions(&hidden, std::fs::Permissions::from_mode(0o700)).unwrap();
    for (target, needle) in [
        (locked.clone(), "permission denied"),
        (hidden.join("inner"), "permission denied"),
    ] {
        let Some(mut nobody) = candor_as_nobody() else {
            return;
        };
        let o = nobody
            .arg("run")
            .arg(&target)
            .args(["--quiet", "--tests", "write", "--file-size", "1m"])
            .output()
            .expect("setpriv runs");
        let err = stderr(&o);
        no_panic(&err);
        assert_eq!(o.status.code(), Some(2), "{}: {err}", target.display());
        assert!(err.contains(needle), "{}: {err}", target.display());
        assert!(err.contains(&target.display().to_string()), "{err}");
    }
    assert_eq!(std::fs::read_dir(&locked).unwrap().count(), 0);
}

#[test]
fn a_target_removed_during_the_run_fails_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("victim");
    std::fs::create_dir(&target).unwrap();
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("r.json");
    let child = spawn_run(
        &target,
        &[
            "--tests",
            "write,read,randread,randwrite",
            "--file-size",
            "32m",
            "--record-size",
            "4k",
            "--repeat",
            "3",
            "-o",
            json.to_str().unwrap(),
        ],
    );
    wait_for("a test to have written 1 MiB", 60, || {
        data_file_holds(&target, 1 << 20)
    });
    // candor may create a file between remove_dir_all's listing and its rmdir: try again
    // until the directory is gone (once it is, nothing can be created in it).
    let gone_by = Instant::now() + Duration::from_secs(10);
    loop {
        match std::fs::remove_dir_all(&target) {
            Ok(()) => break,
            Err(e) if Instant::now() < gone_by && e.kind() != std::io::ErrorKind::NotFound => {
                std::thread::sleep(Duration::from_millis(10))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
            Err(e) => panic!("cannot remove the target: {e}"),
        }
    }
    let o = child.wait_with_output().unwrap();
    let err = stderr(&o);
    no_panic(&err);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("No such file or directory"),
        "the failure names what happened: {err}"
    );
    let doc = load(&json);
    assert!(doc
        .results
        .iter()
        .any(|r| r.status == candor_model::Status::Failed && r.error.is_some()));
    assert!(
        !target.exists(),
        "candor did not recreate the removed target"
    );
}

#[test]
fn files_vanishing_under_candor_fail_the_test_clearly() {
    // Every data file is deleted behind candor's back when it is closed: the write test
    // completes (its figure is of bytes that were written), and the read tests, whose
    // file is rewritten and vanishes again before they open it, fail with the reason.
    let Some((_dir, fs)) = faultfs(&Faults::new().vanish(".dat")) else {
        return;
    };
    let o = run(
        fs.path(),
        &[
            "--tests",
            "write,read,randread",
            "--file-size",
            "2m",
            "--record-size",
            "64k",
            "--format",
            "json",
        ],
    );
    let err = stderr(&o);
    no_panic(&err);
    assert!(fs.faults_injected() > 0, "{}", fs.log());
    assert_eq!(o.status.code(), Some(1), "{err}");
    let doc: candor_model::RunDoc = serde_json::from_slice(&o.stdout).unwrap();
    let st: Vec<(&str, &str)> = doc
        .results
        .iter()
        .map(|r| (r.test.as_str(), r.status.as_str()))
        .collect();
    assert_eq!(
        st,
        [("write", "ok"), ("read", "failed"), ("randread", "failed")]
    );
    for r in &doc.results[1..] {
        let e = r.error.as_deref().unwrap_or("");
        assert!(e.starts_with("open ") && e.contains("No such file"), "{e}");
    }
    assert!(run_dirs_in(fs.path()).is_empty());
}

// ---- signals ----

#[derive(Clone, Copy, Debug)]
enum Moment {
    /// As soon as the run directory exists: plan, probes and the witness's setup.
    Setup,
    /// A data file exists and has been written for a while.
    DuringTest,
    /// The first result was saved: the next test is being prepared.
    AfterFirstTest,
}

fn signal_at(sig: i32, name: &str, moment: Moment) {
    let dir = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("r.json");
    let mut child = spawn_run(
        dir.path(),
        &[
            "--tests",
            "write,read,randread,randwrite",
            "--file-size",
            "32m",
            "--record-size",
            "4k",
            "--repeat",
            "5",
            "-o",
            json.to_str().unwrap(),
        ],
    );
    match moment {
        Moment::Setup => wait_for("the run directory", 30, || {
            !run_dirs_in(dir.path()).is_empty()
        }),
        Moment::DuringTest => wait_for("a test to have written 1 MiB", 60, || {
            data_file_holds(dir.path(), 1 << 20)
        }),
        Moment::AfterFirstTest => wait_for("the first result", 120, || {
            candor_model::load_result(&json).is_ok_and(|d| !d.results.is_empty())
        }),
    }
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, sig) };
    let status = child.wait().unwrap();
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        use std::io::Read;
        let _ = e.read_to_string(&mut err);
    }
    no_panic(&err);
    assert_eq!(
        status.code(),
        Some(128 + sig),
        "{name} at {moment:?}: {err}"
    );
    assert!(
        err.contains(&format!("interrupted by {name}")),
        "{moment:?}: {err}"
    );
    assert!(
        run_dirs_in(dir.path()).is_empty(),
        "{name} at {moment:?}: files left {:?}",
        run_dirs_in(dir.path())
    );
    let doc = load(&json);
    assert!(!doc.complete, "{moment:?}");
    assert_eq!(
        doc.stop_reason.as_deref(),
        Some(format!("interrupted by {name}").as_str())
    );
    // What is in the JSON finished: every repetition of it.
    for r in &doc.results {
        assert_eq!(r.status, candor_model::Status::Ok, "{moment:?}: {}", r.test);
        assert_eq!(r.repetitions, 5, "{moment:?}: {} is whole", r.test);
    }
    if matches!(moment, Moment::AfterFirstTest) {
        // What finished is kept: at least the write test, first.
        assert_eq!(
            doc.results.first().map(|r| r.test.as_str()),
            Some("write"),
            "{moment:?}"
        );
    }
}

#[test]
fn sigint_sigterm_sighup_during_setup() {
    signal_at(libc::SIGINT, "SIGINT", Moment::Setup);
    signal_at(libc::SIGTERM, "SIGTERM", Moment::Setup);
    signal_at(libc::SIGHUP, "SIGHUP", Moment::Setup);
}

#[test]
fn sigint_sigterm_sighup_during_a_test() {
    signal_at(libc::SIGINT, "SIGINT", Moment::DuringTest);
    signal_at(libc::SIGTERM, "SIGTERM", Moment::DuringTest);
    signal_at(libc::SIGHUP, "SIGHUP", Moment::DuringTest);
}

#[test]
fn sigint_sigterm_sighup_between_tests() {
    signal_at(libc::SIGINT, "SIGINT", Moment::AfterFirstTest);
    signal_at(libc::SIGTERM, "SIGTERM", Moment::AfterFirstTest);
    signal_at(libc::SIGHUP, "SIGHUP", Moment::AfterFirstTest);
}

#[test]
fn a_second_sigint_exits_at_once_and_clean_finishes_the_job() {
    // The first SIGINT asks candor to stop cleanly; a second one means "now": candor exits
    // at once, possibly before its cleanup. Either way the target ends as it was once
    // `candor clean` has run.
    let dir = tempfile::tempdir().unwrap();
    populate(dir.path());
    let before = snapshot(dir.path());
    let mut child = spawn_run(
        dir.path(),
        &[
            "--tests",
            "write,randread",
            "--file-size",
            "64m",
            "--record-size",
            "4k",
            "--repeat",
            "20",
        ],
    );
    wait_for("a test to start", 60, || data_file_exists(dir.path()));
    // SAFETY: signalling our own child.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let status = child.wait().unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert!(
        status.code() == Some(130) || status.signal() == Some(libc::SIGINT),
        "{status:?}"
    );
    let o = candor().arg("clean").arg(dir.path()).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(run_dirs_in(dir.path()).is_empty());
    assert_eq!(snapshot(dir.path()), before);
}

// ---- I/O errors ----

#[test]
fn an_io_error_fails_that_test_and_the_others_continue() {
    // Reads of the byte at 1 MiB + 4 KiB fail with EIO, in every file.
    let Some((_dir, fs)) = faultfs(&Faults::new().eio_read((1 << 20) + 4096..(1 << 20) + 4097))
    else {
        return;
    };
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("r.json");
    let o = run(
        fs.path(),
        &[
            "--tests",
            "write,read,randwrite",
            "--file-size",
            "4m",
            "--record-size",
            "64k",
            "-o",
            json.to_str().unwrap(),
        ],
    );
    let err = stderr(&o);
    no_panic(&err);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(fs.faults_injected() > 0, "{}", fs.log());
    let doc = load(&json);
    assert!(doc.complete, "the run went on to the end");
    let st: Vec<(&str, &str)> = doc
        .results
        .iter()
        .map(|r| (r.test.as_str(), r.status.as_str()))
        .collect();
    assert_eq!(
        st,
        [("write", "ok"), ("read", "failed"), ("randwrite", "ok")]
    );
    let e = doc.results[1].error.clone().unwrap_or_default();
    assert!(e.contains("Input/output error"), "{e}");
    assert!(
        e.contains("offset 1048576"),
        "the failing record is named: {e}"
    );
    assert!(err.contains("read failed on"), "{err}");
    assert!(run_dirs_in(fs.path()).is_empty());
}

#[test]
fn an_io_error_on_write_is_named_too() {
    let Some((_dir, fs)) = faultfs(&Faults::new().eio_write(3 << 20..(3 << 20) + 1)) else {
        return;
    };
    let o = run(
        fs.path(),
        &[
            "--tests",
            "write",
            "--file-size",
            "4m",
            "--record-size",
            "64k",
            "--format",
            "json",
        ],
    );
    let err = stderr(&o);
    no_panic(&err);
    assert_eq!(o.status.code(), Some(1), "{err}");
    let doc: candor_model::RunDoc = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc.results[0].status, candor_model::Status::Failed);
    let e = doc.results[0].error.clone().unwrap_or_default();
    assert!(
        e.contains("Input/output error") && e.contains("offset 3145728"),
        "{e}"
    );
    assert!(run_dirs_in(fs.path()).is_empty());
}

/// A loop device and its mount, undone on drop (also when an assertion fails).
struct LoopMount {
    dev: String,
    mnt: PathBuf,
}

impl Drop for LoopMount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.mnt).status();
        let _ = Command::new("losetup").args(["-d", &self.dev]).status();
    }
}

#[test]
fn a_failing_block_device_under_the_filesystem() {
    // ext4 on a loop device whose backing file sits on candor-faultfs, which fails every
    // read of the image's second half: the block device under the filesystem fails as a
    // dying disk would, and the kernel hands candor EIO.
    if !need_root("for a loop device") || !common::need_programs(&["mkfs.ext4", "losetup"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (backing, fmnt, mnt) = (
        dir.path().join("b"),
        dir.path().join("f"),
        dir.path().join("m"),
    );
    for d in [&backing, &fmnt, &mnt] {
        std::fs::create_dir(d).unwrap();
    }
    let img = backing.join("disk.img");
    std::fs::File::create(&img)
        .unwrap()
        .set_len(256 << 20)
        .unwrap();
    let st = Command::new("mkfs.ext4")
        .args(["-q", "-F"])
        .arg(&img)
        .status()
        .expect("mkfs.ext4 runs");
    assert!(st.success(), "mkfs.ext4: {st}");
    let Some(fs) = need_or(
        FaultFs::mount(
            &backing,
            &fmnt,
            &Faults::new().eio_read(128 << 20..256 << 20),
        ),
        MountError::is_skip,
    ) else {
        return;
    };
    let out = Command::new("losetup")
        .args(["-f", "--show"])
        .arg(fs.path().join("disk.img"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "losetup: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lm = LoopMount {
        dev: String::from_utf8_lossy(&out.stdout).trim().to_string(),
        mnt: mnt.clone(),
    };
    assert!(Command::new("mount")
        .arg(&lm.dev)
        .arg(&mnt)
        .status()
        .unwrap()
        .success());
    // A 160 MiB file in a 256 MiB filesystem reaches the failing half.
    let o = run(
        &mnt,
        &[
            "--tests",
            "write,read,randread",
            "--file-size",
            "160m",
            "--record-size",
            "1m",
            "--format",
            "json",
        ],
    );
    let err = stderr(&o);
    no_panic(&err);
    assert!(fs.faults_injected() > 0, "{}", fs.log());
    assert_eq!(o.status.code(), Some(1), "{err}");
    let doc: candor_model::RunDoc = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc.results.len(), 3, "every test ran");
    let failed: Vec<&candor_model::TestResult> = doc
        .results
        .iter()
        .filter(|r| r.status == candor_model::Status::Failed)
        .collect();
    assert!(!failed.is_empty(), "a read of the failing half fails");
    for r in failed {
        let e = r.error.as_deref().unwrap_or("");
        assert!(
            e.contains("Input/output error") && e.contains("at offset"),
            "{}: {e}",
            r.test
        );
    }
    assert!(run_dirs_in(&mnt).is_empty(), "candor's files removed");
    drop(lm);
}

// ---- data verification ----

#[test]
fn verify_passes_on_honest_storage_across_generations() {
    let dir = tempfile::tempdir().unwrap();
    let all = "write,rewrite,read,randwrite,randread,recrewrite,randmix,bkwdread,strideread";
    // recrewrite at a queue depth above 1 is refused (see verify_refuses_what_it_cannot_check).
    let no_rec = "write,rewrite,read,randwrite,randread,randmix,bkwdread,strideread,pwrite,pread,pwritev,preadv";
    for (tests, extra) in [
        (all, &["--engine", "psync"][..]),
        (all, &["--engine", "sync"][..]),
        (no_rec, &["--engine", "io_uring", "--iodepth", "8"][..]),
        (all, &["--runtime", "30ms"][..]),
        (
            all,
            &["--runtime", "30ms", "--time-based", "--threads", "2"][..],
        ),
    ] {
        let mut args = vec![
            "--verify",
            "--tests",
            tests,
            "--file-size",
            "4m",
            "--record-size",
            "4k,64k",
            "--format",
            "json",
        ];
        args.extend_from_slice(extra);
        let o = run(dir.path(), &args);
        assert!(o.status.success(), "{extra:?}: {}", stderr(&o));
        let doc: candor_model::RunDoc = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(doc.results.len(), tests.split(',').count() * 2);
        for r in &doc.results {
            let v = serde_json::to_value(r.verify.as_ref().expect("a verify block")).unwrap();
            assert_eq!(v["bad_records"], 0, "{extra:?} {}: {v}", r.test);
            let reads = r.reps.iter().map(|x| x.ops).sum::<u64>();
            if matches!(
                r.test.as_str(),
                "read" | "randread" | "bkwdread" | "strideread" | "pread" | "preadv"
            ) {
                assert_eq!(
                    v["records_checked"], reads,
                    "{}: every record read is checked",
                    r.test
                );
            }
            if matches!(
                r.test.as_str(),
                "write" | "rewrite" | "randwrite" | "recrewrite" | "pwrite" | "pwritev"
            ) {
                assert_eq!(
                    v["records_written"], reads,
                    "{}: every record written is stamped",
                    r.test
                );
            }
        }
    }
    assert!(run_dirs_in(dir.path()).is_empty());
}

#[test]
fn verify_refuses_what_it_cannot_check() {
    let dir = tempfile::tempdir().unwrap();
    for (args, needle) in [
        (&["--verify", "--tests", "fwrite"][..], "stdio"),
        (&["--verify", "--tests", "mmapread"][..], "mmap"),
        (
            &["--verify", "--tests", "write", "--record-size", "32"][..],
            "64",
        ),
        (&["--verify", "--tests", "copy"][..], "not one"),
        (
            &[
                "--verify",
                "--tests",
                "recrewrite",
                "--engine",
                "io_uring",
                "--iodepth",
                "4",
            ][..],
            "--iodepth 1",
        ),
        (
            &["--buffer-pattern", "compressible=150%"][..],
            "not a buffer pattern",
        ),
    ] {
        let mut a = args.to_vec();
        a.extend_from_slice(&["--file-size", "1m"]);
        let o = run(dir.path(), &a);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(needle), "{args:?}: {}", stderr(&o));
    }
    assert!(run_dirs_in(dir.path()).is_empty());
}

/// Overwrites part of candor's data file while read tests repeat over it.
fn corrupt_during_reads(engine: &[&str], damage: impl Fn(&std::fs::File)) -> candor_model::RunDoc {
    let dir = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("r.json");
    let mut args = vec![
        "--verify",
        "--tests",
        "read",
        "--file-size",
        "8m",
        "--record-size",
        "4k",
        "--repeat",
        "30",
        "-o",
        json.to_str().unwrap(),
    ];
    args.extend_from_slice(engine);
    let child = spawn_run(dir.path(), &args);
    // The read test's file is written (untimed) first; damage it once it is whole.
    let mut file = None;
    wait_for("the prepared file", 60, || {
        for d in run_dirs_in(dir.path()) {
            let p = d.join("t0.dat");
            if std::fs::metadata(&p)
                .map(|m| m.len() == 8 << 20)
                .unwrap_or(false)
            {
                file = Some(p);
                return true;
            }
        }
        false
    });
    let p = file.unwrap();
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&p)
        .unwrap();
    damage(&f);
    f.sync_all().unwrap();
    let o = child.wait_with_output().unwrap();
    let err = stderr(&o);
    no_panic(&err);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("data verification failed"), "{err}");
    assert!(run_dirs_in(dir.path()).is_empty());
    load(&json)
}

#[test]
fn verify_finds_corruption_written_behind_candors_back() {
    for engine in [
        &["--engine", "psync"][..],
        &["--engine", "sync"][..],
        &["--engine", "vector"][..],
        &["--engine", "io_uring", "--iodepth", "4"][..],
    ] {
        corruption_found(engine);
    }
}

fn corruption_found(engine: &[&str]) {
    use std::os::unix::fs::FileExt;
    let doc = corrupt_during_reads(engine, |f| {
        let mut b = vec![0u8; 4096];
        f.read_exact_at(&mut b, 5 << 20).unwrap();
        b[1000] ^= 0x40;
        f.write_all_at(&b, 5 << 20).unwrap();
    });
    let r = &doc.results[0];
    assert_eq!(r.status, candor_model::Status::Failed);
    let v = serde_json::to_value(r.verify.as_ref().unwrap()).unwrap();
    assert!(v["bad_records"].as_u64().unwrap() >= 1, "{v}");
    assert_eq!(v["first_bad_offset"], 5 << 20, "{v}");
    assert_eq!(v["first_bad_kind"], "corruption", "{v}");
    assert!(r.error.as_deref().unwrap_or("").contains("offset 5242880"));
}

#[test]
fn verify_finds_a_misdirected_write() {
    use std::os::unix::fs::FileExt;
    // Record 7 written where record 300 belongs.
    let doc = corrupt_during_reads(&[], |f| {
        let mut b = vec![0u8; 4096];
        f.read_exact_at(&mut b, 7 * 4096).unwrap();
        f.write_all_at(&b, 300 * 4096).unwrap();
    });
    let v = serde_json::to_value(doc.results[0].verify.as_ref().unwrap()).unwrap();
    assert_eq!(v["first_bad_offset"], 300 * 4096, "{v}");
    assert_eq!(v["first_bad_kind"], "misdirected", "{v}");
    assert_eq!(v["kinds"]["corruption"], 0, "{v}");
}

#[test]
fn verify_finds_a_lost_write_as_stale_or_missing() {
    use std::os::unix::fs::FileExt;
    // A hole where a record was: as if the write never reached the disk.
    let doc = corrupt_during_reads(&[], |f| {
        f.write_all_at(&[0u8; 4096], 11 * 4096).unwrap();
    });
    let v = serde_json::to_value(doc.results[0].verify.as_ref().unwrap()).unwrap();
    assert_eq!(v["first_bad_offset"], 11 * 4096, "{v}");
    assert_eq!(v["first_bad_kind"], "stale", "{v}");
}

/// Keeps the first generation of the file's last record, lets `rewrite` overwrite the
/// whole file several times, then puts back `range` of the old record while `read`
/// repeats: what the read finds is an older generation of the right record.
fn older_generation_put_back(range: std::ops::Range<usize>) -> serde_json::Value {
    use std::os::unix::fs::FileExt;
    const SIZE: u64 = 32 << 20;
    const RS: usize = 4096;
    let last = SIZE - RS as u64;
    let dir = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("r.json");
    let child = spawn_run(
        dir.path(),
        &[
            "--verify",
            "--tests",
            "rewrite,read",
            "--file-size",
            "32m",
            "--record-size",
            "4k",
            "--repeat",
            "10",
            "-o",
            json.to_str().unwrap(),
        ],
    );
    // The file prepared for rewrite holds generation 1; rewrite goes from the start, so its
    // last record is still generation 1 when the file is first whole.
    let mut old = vec![0u8; RS];
    wait_for("the prepared file", 60, || {
        for d in run_dirs_in(dir.path()) {
            if let Ok(f) = std::fs::File::open(d.join("t0.dat")) {
                if f.metadata().map(|m| m.len() == SIZE).unwrap_or(false)
                    && f.read_exact_at(&mut old, last).is_ok()
                {
                    return true;
                }
            }
        }
        false
    });
    let gen = u64::from_le_bytes(old[32..40].try_into().unwrap());
    assert_eq!(gen, 1, "the kept record is the first generation");
    // rewrite's result is saved once its 10 repetitions are done; read comes next.
    wait_for("rewrite's result", 120, || {
        std::fs::read_to_string(&json)
            .map(|t| t.contains("\"rewrite\""))
            .unwrap_or(false)
    });
    let p = run_dirs_in(dir.path())
        .into_iter()
        .next()
        .expect("the run is still going")
        .join("t0.dat");
    let f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
    f.write_all_at(&old[range.clone()], last + range.start as u64)
        .unwrap();
    f.sync_all().unwrap();
    let o = child.wait_with_output().unwrap();
    let err = stderr(&o);
    no_panic(&err);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("data verification failed"), "{err}");
    let doc = load(&json);
    let rewrite = &doc.results[0];
    assert_eq!(rewrite.status, candor_model::Status::Ok);
    let read = &doc.results[1];
    assert_eq!(read.status, candor_model::Status::Failed);
    let v = serde_json::to_value(read.verify.clone().unwrap()).unwrap();
    assert_eq!(v["first_bad_offset"], last, "{v}");
    v
}

#[test]
fn verify_finds_a_stale_record_of_an_older_generation() {
    let v = older_generation_put_back(0..4096);
    assert_eq!(v["first_bad_kind"], "stale", "{v}");
    assert_eq!(v["kinds"]["corruption"], 0, "{v}");
}

#[test]
fn verify_finds_a_torn_record() {
    // Only the second half of the old record lands: a new header over an old tail.
    let v = older_generation_put_back(2048..4096);
    assert_eq!(v["first_bad_kind"], "torn", "{v}");
    assert_eq!(v["kinds"]["corruption"], 0, "{v}");
}

// ---- symlinks and devices ----

#[test]
fn a_symlink_planted_in_the_run_directory_is_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let victim = elsewhere.path().join("precious");
    std::fs::write(&victim, b"someone's data").unwrap();
    let before = snapshot(elsewhere.path());
    for _ in 0..3 {
        let child = spawn_run(
            dir.path(),
            &[
                "--tests",
                "write,read",
                "--file-size",
                "8m",
                "--record-size",
                "64k",
            ],
        );
        // Race: plant links named like candor's next files as soon as its directory exists.
        wait_for("the run directory", 30, || {
            !run_dirs_in(dir.path()).is_empty()
        });
        for d in run_dirs_in(dir.path()) {
            for name in ["t0.dat", "t1.dat", "direct-probe"] {
                let _ = std::os::unix::fs::symlink(&victim, d.join(name));
            }
        }
        let o = child.wait_with_output().unwrap();
        let err = stderr(&o);
        no_panic(&err);
        // Either candor removed the link before creating its file, or its exclusive,
        // no-follow create failed and the test says so.
        assert!(matches!(o.status.code(), Some(0) | Some(1)), "{err}");
        assert!(run_dirs_in(dir.path()).is_empty());
        assert_eq!(snapshot(elsewhere.path()), before, "the link was followed");
    }

    // A stale run directory holding a link to a directory: clean removes the link only.
    let stale = common::dead_run(dir.path());
    let _ = std::fs::remove_file(stale.join("t0.dat"));
    std::os::unix::fs::symlink(elsewhere.path(), stale.join("t0.dat")).unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), stale.join("sub")).unwrap();
    let o = candor().arg("clean").arg(dir.path()).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stale.exists());
    assert_eq!(snapshot(elsewhere.path()), before, "clean followed a link");

    // A `.candor-` symlink in the target (to someone's directory) is not candor's.
    let fake = dir.path().join(".candor-fake-2");
    std::os::unix::fs::symlink(elsewhere.path(), &fake).unwrap();
    let o = candor().arg("clean").arg(dir.path()).output().unwrap();
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).contains("not candor's"));
    assert!(std::fs::symlink_metadata(&fake).is_ok());
    assert_eq!(snapshot(elsewhere.path()), before);
}

#[test]
fn a_block_device_is_refused_before_anything_is_opened_for_writing() {
    if !need_root("for a loop device") || !common::need_programs(&["losetup", "strace"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("disk.img");
    let content: Vec<u8> = (0..(8u32 << 20))
        .map(|i| (i.wrapping_mul(2654435761) >> 24) as u8)
        .collect();
    std::fs::write(&img, &content).unwrap();
    let out = Command::new("losetup")
        .args(["-f", "--show"])
        .arg(&img)
        .output()
        .expect("losetup runs");
    assert!(
        out.status.success(),
        "losetup: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dev = String::from_utf8_lossy(&out.stdout).trim().to_string();
    // Every open of the device, as the kernel was asked for it (strace), in each run.
    let cwd = dir.path();
    let filter = "open,openat,openat2";
    let (o1, t1) = common::strace_candor(
        cwd,
        filter,
        &[
            "run",
            &dev,
            "--quiet",
            "--tests",
            "write",
            "--file-size",
            "1m",
        ],
    );
    let (o2, t2) = common::strace_candor(
        cwd,
        "open,openat,openat2,write,pwrite64,writev,pwritev,pwritev2,io_uring_enter",
        &[
            "run",
            &dev,
            "--quiet",
            "--allow-device-writes",
            "--tests",
            "write",
            "--file-size",
            "16m",
        ],
    );
    let (o3, t3) = common::strace_candor(cwd, filter, &["clean", &dev]);
    let _ = Command::new("losetup").args(["-d", &dev]).status();
    let opened_for_writing = |t: &str| -> Vec<String> {
        t.lines()
            .filter(|l| l.contains(&format!("\"{dev}\"")))
            .filter(|l| l.contains("O_WRONLY") || l.contains("O_RDWR") || l.contains("O_CREAT"))
            .map(str::to_string)
            .collect()
    };
    // Without consent, and for `clean`, the device is never opened for writing.
    for (what, t) in [("refused", &t1), ("clean", &t3)] {
        assert_eq!(
            opened_for_writing(t),
            Vec::<String>::new(),
            "{what}: {dev} opened for writing"
        );
        assert!(
            t.lines().any(|l| l.contains("openat(")),
            "{what}: strace saw no open at all: {t}"
        );
    }
    // With consent, the one open for writing is the exclusive claim (O_EXCL, held for the
    // run: docs/methodology.md), and nothing is written through it before the refusal.
    let claims = opened_for_writing(&t2);
    assert_eq!(claims.len(), 1, "too small: {claims:?}");
    assert!(claims[0].contains("O_EXCL"), "{}", claims[0]);
    let fd = claims[0]
        .rsplit("= ")
        .next()
        .and_then(|n| n.trim().parse::<u32>().ok())
        .unwrap_or_else(|| panic!("the claim failed: {}", claims[0]));
    let written: Vec<&str> = t2
        .lines()
        .filter(|l| {
            [
                "write(",
                "pwrite64(",
                "writev(",
                "pwritev(",
                "pwritev2(",
                "io_uring_enter(",
            ]
            .iter()
            .any(|c| l.contains(&format!("{c}{fd},")))
        })
        .collect();
    assert!(
        written.is_empty(),
        "too small: written to {dev}: {written:?}"
    );
    for o in [&o1, &o2, &o3] {
        no_panic(&stderr(o));
        assert_eq!(o.status.code(), Some(2), "{}", stderr(o));
    }
    assert!(stderr(&o1).contains("block device"), "{}", stderr(&o1));
    assert!(
        stderr(&o1).contains("--allow-device-writes"),
        "{}",
        stderr(&o1)
    );
    // Allowed, but the plan does not fit the 8 MiB device: refused before any write.
    assert!(stderr(&o2).contains("the plan needs"), "{}", stderr(&o2));
    assert_eq!(
        std::fs::read(&img).unwrap(),
        content,
        "the device's bytes are unchanged"
    );
}

// ---- soak ----

fn status_kib(pid: u32, field: &str) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = s.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// A process's descriptors in two counts: the files under `run_dir` (the test files, one
/// per thread open during a test, none between tests), and the rest less the ones that are
/// open for a moment all the time (a /proc listing and one file in it, the result being
/// written beside `-o`): a leak of any kind raises one of the two.
fn fd_counts(pid: u32, run_dir: &Path, out_dir: &Path) -> Option<(usize, usize)> {
    let mut files = 0;
    let mut rest = 0;
    for e in std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.flatten() {
        let Ok(target) = std::fs::read_link(e.path()) else {
            continue; // closed since the listing
        };
        if target.starts_with(run_dir) {
            files += 1;
        } else if !target.starts_with("/proc") && !target.starts_with(out_dir) {
            rest += 1;
        }
    }
    Some((files, rest))
}

#[test]
fn a_soak_holds_steady_memory_and_descriptors() {
    let dir = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("r.json");
    let mut child = spawn_run(
        dir.path(),
        &[
            "--duration",
            "20s",
            "--verify",
            "--tests",
            "write,read,randread,randwrite,randmix",
            "--file-size",
            "4m",
            "--record-size",
            "4k,64k",
            "-o",
            json.to_str().unwrap(),
        ],
    );
    let pid = child.id();
    let t0 = Instant::now();
    let mut samples: Vec<(f64, u64, usize)> = Vec::new();
    let mut most_test_files = 0;
    while child.try_wait().unwrap().is_none() {
        let fds = fd_counts(pid, dir.path(), out.path());
        if let (Some(rss), Some((files, fds))) = (status_kib(pid, "VmRSS:"), fds) {
            samples.push((t0.elapsed().as_secs_f64(), rss, fds));
            most_test_files = most_test_files.max(files);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let elapsed = t0.elapsed().as_secs_f64();
    assert!(
        elapsed >= 20.0,
        "the soak ran its duration ({elapsed:.1} s)"
    );
    let early: Vec<&(f64, u64, usize)> =
        samples.iter().filter(|s| s.0 > 3.0 && s.0 < 8.0).collect();
    let late: Vec<&(f64, u64, usize)> = samples.iter().filter(|s| s.0 >= 15.0).collect();
    assert!(early.len() > 5 && late.len() > 5, "{samples:?}");
    let max = |v: &[&(f64, u64, usize)], f: fn(&(f64, u64, usize)) -> u64| {
        v.iter().map(|s| f(s)).max().unwrap_or(0)
    };
    let rss_early = max(&early, |s| s.1);
    let rss_late = max(&late, |s| s.1);
    // The descriptors other than test files and momentary ones are compared at their floor
    // (a descriptor opened and closed between two listings of /proc/PID/fd can still be
    // counted by the listing); a leak raises the floor. The test files (one thread) are open
    // one at a time: ten tests whose files stayed open would show ten.
    assert!(
        most_test_files <= 2,
        "{most_test_files} test files open at once with one thread"
    );
    let min = |v: &[&(f64, u64, usize)]| v.iter().map(|s| s.2 as u64).min().unwrap_or(0);
    let fd_early = min(&early);
    let fd_late = min(&late);
    eprintln!(
        "soak: {} samples; VmRSS max {rss_early} KiB at 3-8 s, {rss_late} KiB after 15 s; descriptors at least {fd_early} then {fd_late}",
        samples.len()
    );
    assert!(
        rss_late <= rss_early + 4096,
        "memory grew: {rss_early} KiB -> {rss_late} KiB"
    );
    assert!(
        fd_late <= fd_early,
        "descriptors leak: {fd_early} -> {fd_late}"
    );
    let doc = load(&json);
    assert!(doc.complete);
    assert_eq!(doc.results.len(), 10, "one result per test of the plan");
    for r in &doc.results {
        let rounds = r.extra["rounds_throughput"].as_array().unwrap().len();
        assert!(rounds >= 2, "{}: {rounds} rounds", r.test);
        assert_eq!(r.extra["failed_rounds"], 0);
        assert_eq!(r.verify.as_ref().unwrap().bad_records, 0);
    }
    assert!(run_dirs_in(dir.path()).is_empty());
}

// ---- clean: only what a run of candor made, never across a mount ----

/// The line `candor clean` printed about `path`.
fn clean_line<'a>(out: &'a str, path: &Path) -> &'a str {
    let p = format!("{} (", path.display());
    out.lines()
        .find(|l| l.contains(&p))
        .unwrap_or_else(|| panic!("nothing said about {}: {out}", path.display()))
}

/// Unmounts on drop, so a failing test leaves no mount behind.
struct Unmount(PathBuf);
impl Drop for Unmount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn clean_never_crosses_a_mount_inside_a_dead_run() {
    if !need_root("to bind-mount a directory") || !common::need_programs(&["mount", "umount"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("thesis.txt"), b"four years of work").unwrap();
    std::fs::create_dir(outside.path().join("chapters")).unwrap();
    std::fs::write(outside.path().join("chapters/one.txt"), b"chapter one").unwrap();
    let dead = common::dead_run(dir.path());
    let bound = dead.join("bound");
    std::fs::create_dir(&bound).unwrap();
    let st = Command::new("mount")
        .arg("--bind")
        .arg(outside.path())
        .arg(&bound)
        .status()
        .unwrap();
    assert!(st.success(), "mount --bind failed");
    let guard = Unmount(bound.clone());

    let o = candor().arg("clean").arg(dir.path()).output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    assert_eq!(
        std::fs::read(outside.path().join("thesis.txt"))
            .ok()
            .as_deref(),
        Some(&b"four years of work"[..]),
        "clean removed a file behind a mount: {out}{}",
        stderr(&o)
    );
    assert_eq!(
        std::fs::read(outside.path().join("chapters/one.txt"))
            .ok()
            .as_deref(),
        Some(&b"chapter one"[..]),
        "clean removed a file behind a mount: {out}"
    );
    assert_eq!(o.status.code(), Some(0), "{out}{}", stderr(&o));
    let line = clean_line(&out, &dead);
    assert!(line.starts_with("left "), "{line}");
    assert!(
        line.contains("mount point inside kept") && line.contains(&bound.display().to_string()),
        "{line}"
    );
    // What was candor's around the mount is gone; the marker stays so a later clean can
    // finish once the mount is gone.
    let mut inside: Vec<String> = std::fs::read_dir(&dead)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    inside.sort();
    assert_eq!(inside, ["CANDOR-RUN", "bound"], "{out}");

    drop(guard);
    let o = candor().arg("clean").arg(dir.path()).output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    assert_eq!(o.status.code(), Some(0), "{out}{}", stderr(&o));
    assert!(clean_line(&out, &dead).starts_with("removed "), "{out}");
    assert!(!dead.exists());
    assert_eq!(
        std::fs::read(outside.path().join("thesis.txt")).unwrap(),
        b"four years of work"
    );
}

#[test]
fn clean_removes_only_a_run_dir_its_marker_proves_and_says_why_for_each() {
    if !need_root("to make directories owned by nobody") {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap();
    let boot = boot.trim();
    // Two genuine dead runs, each made in a directory of its own (a run removes the dead
    // runs it finds first) and moved here (a rename keeps the directory's inode).
    let made_a = tempfile::tempdir_in(dir.path().parent().unwrap()).unwrap();
    let made_b = tempfile::tempdir_in(dir.path().parent().unwrap()).unwrap();
    let a0 = common::dead_run(made_a.path());
    let b0 = common::dead_run(made_b.path());
    let this_boot = dir.path().join(".candor-genuine-this-boot");
    let other_boot = dir.path().join(".candor-genuine-other-boot");
    std::fs::rename(&a0, &this_boot).unwrap();
    std::fs::rename(&b0, &other_boot).unwrap();
    // The second one as if from before a reboot: only its boot id differs.
    let m = other_boot.join("CANDOR-RUN");
    let genuine = std::fs::read_to_string(&m).unwrap();
    assert!(genuine.contains(boot), "{genuine}");
    std::fs::write(
        &m,
        genuine.replace(boot, "0123abcd-0000-4000-8000-000000000000"),
    )
    .unwrap();

    let plant = |name: &str, marker: &str, mode: u32| -> PathBuf {
        let d = dir.path().join(name);
        std::fs::create_dir(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(mode)).unwrap();
        std::fs::write(d.join("CANDOR-RUN"), marker).unwrap();
        std::fs::set_permissions(d.join("CANDOR-RUN"), std::fs::Permissions::from_mode(0o600))
            .unwrap();
        std::fs::write(d.join("t0.dat"), b"someone's data").unwrap();
        d
    };
    let dead_pid = 4194998;
    let cases: Vec<(PathBuf, &str)> = vec![
        (
            plant(".candor-empty", "", 0o700),
            "marker not in candor's format",
        ),
        (
            plant(".candor-hello", "hello world\n", 0o700),
            "marker not in candor's format",
        ),
        (
            plant(
                ".candor-pid-minus-1",
                &format!("{{\"pid\":-1,\"boot_id\":\"{boot}\"}}\n"),
                0o700,
            ),
            "marker not in candor's format",
        ),
        (
            plant(
                ".candor-pid-0",
                &format!("{{\"pid\":0,\"boot_id\":\"{boot}\"}}\n"),
                0o700,
            ),
            "marker not in candor's format",
        ),
        (
            plant(
                ".candor-old-boot",
                &format!(
                    "{{\"pid\":{dead_pid},\"boot_id\":\"0123abcd-0000-4000-8000-000000000000\"}}\n"
                ),
                0o700,
            ),
            "marker not in candor's format",
        ),
        (
            plant(".candor-copied", &genuine, 0o700),
            "marker names another directory",
        ),
        (plant(".candor-wide", &genuine, 0o755), "mode 0755"),
    ];
    // A directory of nobody's with a thesis in it and a marker copied from a real run.
    let theirs = plant(".candor-nobody", &genuine, 0o700);
    std::fs::write(theirs.join("thesis.txt"), b"nobody's thesis").unwrap();
    for p in [
        theirs.clone(),
        theirs.join("CANDOR-RUN"),
        theirs.join("t0.dat"),
        theirs.join("thesis.txt"),
    ] {
        std::os::unix::fs::chown(&p, Some(65534), Some(65534)).unwrap();
    }

    let o = candor().arg("clean").arg(dir.path()).output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    assert_eq!(o.status.code(), Some(0), "{out}{}", stderr(&o));
    for (d, why) in &cases {
        let line = clean_line(&out, d);
        assert!(
            line.starts_with("left ") && line.contains(why),
            "{why}: {line}"
        );
        assert_eq!(
            std::fs::read(d.join("t0.dat")).ok().as_deref(),
            Some(&b"someone's data"[..]),
            "{line}"
        );
    }
    let line = clean_line(&out, &theirs);
    assert!(
        line.starts_with("left ") && line.contains("owned by uid 65534"),
        "{line}"
    );
    assert_eq!(
        std::fs::read(theirs.join("thesis.txt")).unwrap(),
        b"nobody's thesis"
    );
    let line = clean_line(&out, &this_boot);
    assert!(
        line.starts_with("removed ")
            && line.contains("dead run of pid")
            && line.contains("this boot"),
        "{line}"
    );
    let line = clean_line(&out, &other_boot);
    assert!(
        line.starts_with("removed ") && line.contains("another boot"),
        "{line}"
    );
    assert!(!this_boot.exists() && !other_boot.exists(), "{out}");
}
