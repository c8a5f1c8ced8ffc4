//! `candor doctor` on real directories: it reports, exits 0, leaves nothing behind, and an
//! unprivileged user is told candor will fall back to the procfs witness.

use std::process::Command;

mod common;

const CANDOR: &str = env!("CARGO_BIN_EXE_candor");

#[test]
fn doctor_reports_and_leaves_the_target_as_it_was() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = Command::new(CANDOR)
        .args(["doctor", "--no-load"])
        .arg(dir.path())
        .output()
        .expect("run candor");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    for what in [
        "privileges",
        "kernel BTF",
        "BPF programs",
        "cachestat(2)",
        "O_DIRECT",
    ] {
        assert!(text.contains(what), "no {what} line in:\n{text}");
    }
    assert!(text.contains("candor will use:"), "{text}");
    let left: Vec<_> = std::fs::read_dir(dir.path()).expect("read_dir").collect();
    assert!(left.is_empty(), "doctor left files: {left:?}");
}

#[test]
fn doctor_refuses_a_target_that_is_not_a_directory() {
    let out = Command::new(CANDOR)
        .args(["doctor", "/nonexistent/candor-doctor"])
        .output()
        .expect("run candor");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("is not a directory"), "{err}");
}

/// As root: the programs load, and the same binary run as an unprivileged user says it
/// will use procfs and why.
#[test]
fn doctor_as_root_loads_and_as_nobody_falls_back() {
    if !common::need_bpf() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let out = Command::new(CANDOR)
        .arg("doctor")
        .arg(dir.path())
        .output()
        .expect("run candor");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("candor will use: the BPF witness"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.contains("BPF load") && l.contains(" ok ")),
        "{text}"
    );

    // The directory must be usable by nobody for the cachestat/O_DIRECT checks.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let Some(mut nobody) = common::candor_as_nobody() else {
        return;
    };
    let out = nobody
        .arg("doctor")
        .arg(dir.path())
        .output()
        .expect("setpriv runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("candor will use: the procfs witness") && text.contains("needs root"),
        "{text}"
    );
    let left: Vec<_> = std::fs::read_dir(dir.path()).expect("read_dir").collect();
    assert!(left.is_empty(), "doctor left files: {left:?}");
}
