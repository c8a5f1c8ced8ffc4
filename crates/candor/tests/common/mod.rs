//! Helpers shared by the integration tests (each test file uses some of them).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Whether `program` is on the PATH.
pub fn have(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|d| d.join(program).is_file()))
}

/// Why a lab of ext4, xfs and btrfs cannot be made here, if it cannot.
pub fn lab_skip_reason() -> Option<String> {
    if !is_root() {
        return Some("needs root".into());
    }
    for p in [
        "losetup",
        "mount",
        "umount",
        "mkfs.ext4",
        "mkfs.xfs",
        "mkfs.btrfs",
    ] {
        if !have(p) {
            return Some(format!("{p} is not installed"));
        }
    }
    None
}

/// The entries of a directory.
pub fn entries(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .expect("read the directory")
        .map(|e| e.expect("an entry").path())
        .collect()
}

/// The binary under test.
pub fn candor() -> Command {
    Command::new(env!("CARGO_BIN_EXE_candor"))
}

/// `candor run DIR ARGS --quiet`, waited for.
pub fn run_in(dir: &Path, args: &[&str]) -> Output {
    candor()
        .arg("run")
        .arg(dir)
        .args(args)
        .arg("--quiet")
        .output()
        .expect("candor runs")
}
