//! `candor doctor` on real directories: it reports, exits 0, leaves nothing behind, and an
//! unprivileged user is told candor will fall back to the procfs witness.

use std::process::Command;

mod common;

const CANDOR: &str = env!("CARGO_BIN_EXE_candor");

/// A doctor line `(status, detail)`: "ok" with `detail` where the host has the thing
/// (`has`), "no" where it has not.
fn ok_if(has: bool, (status, detail): (String, String), ok_detail: &str) {
    if has {
        assert_eq!((status.as_str(), detail.as_str()), ("ok", ok_detail));
    } else {
        assert_eq!(status, "no", "{detail}");
    }
}

/// Each line of `candor doctor --no-load` says what this host has, checked against the
/// host itself (root, the BTF file, the kernel's own eBPF answer, the kernel's version,
/// an O_DIRECT read in the same directory); nothing is left in the target.
#[test]
fn doctor_reports_and_leaves_the_target_as_it_was() {
    // A directory on a disk (not tmpfs, where O_DIRECT is refused).
    let dir = tempfile::Builder::new()
        .prefix("candor-doctor-")
        .tempdir_in("/var/tmp")
        .expect("tempdir");
    let out = Command::new(CANDOR)
        .args(["doctor", "--no-load"])
        .arg(dir.path())
        .output()
        .expect("run candor");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    // "  what  ok|no  detail", the name padded to the longest.
    let line = |what: &str| -> (String, String) {
        let l = text
            .lines()
            .find(|l| l.trim_start().starts_with(what))
            .unwrap_or_else(|| panic!("no {what} line in:\n{text}"));
        let rest = l.trim_start()[what.len()..].trim_start();
        let (status, detail) = rest.split_once("  ").unwrap_or((rest, ""));
        (status.to_string(), detail.trim().to_string())
    };
    let root = candor_testkit::is_root();
    let (status, detail) = line("privileges");
    if root {
        assert_eq!((status.as_str(), detail.as_str()), ("ok", "root"));
    } else {
        assert!(detail.starts_with("not root"), "{detail}");
    }
    let btf = std::path::Path::new("/sys/kernel/btf/vmlinux").exists();
    ok_if(btf, line("kernel BTF"), "/sys/kernel/btf/vmlinux");
    let (status, detail) = line("BPF programs");
    assert!(
        (status == "ok" && detail == "built into this candor")
            || (status == "no" && detail.starts_with("not built: ")),
        "{status} {detail}"
    );
    // Where the kernel itself loads eBPF, nothing stands in candor's way, and --no-load
    // leaves the load untried.
    let kernel_bpf = root && candor_testkit::kernel_bpf().is_ok();
    if kernel_bpf {
        assert_eq!(
            line("BPF load"),
            ("ok".to_string(), "not tried (--no-load)".to_string())
        );
        assert!(text.contains("candor will use: the BPF witness"), "{text}");
    } else {
        assert!(
            text.contains("candor will use: the procfs witness"),
            "{text}"
        );
    }
    // cachestat(2) is in Linux 6.5 and later; the probe file's 16 fresh pages are cached.
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").expect("osrelease");
    let mut v = release.trim().split(|c: char| !c.is_ascii_digit());
    let (major, minor): (u32, u32) = (
        v.next().unwrap().parse().unwrap(),
        v.next().unwrap().parse().unwrap(),
    );
    let (status, detail) = line("cachestat(2)");
    if (major, minor) >= (6, 5) {
        assert_eq!(
            (status.as_str(), detail.as_str()),
            ("ok", "works here (16 of 16 pages of a fresh file cached)")
        );
    } else {
        assert_eq!(
            (status.as_str(), detail.as_str()),
            (
                "no",
                "not in this kernel (needs Linux 6.5); mincore(2) is used instead"
            )
        );
    }
    // O_DIRECT as this test finds it in the same directory.
    let probe = dir.path().join("direct-probe");
    std::fs::write(&probe, vec![1u8; 4096]).expect("a probe file");
    let direct = {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECT)
            .open(&probe)
            .is_ok()
    };
    std::fs::remove_file(&probe).expect("remove the probe file");
    ok_if(
        direct,
        line("O_DIRECT"),
        "a 4 KiB aligned read bypassed the page cache",
    );
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
