//! Helpers shared by the integration tests (each test file uses some of them).
#![allow(dead_code)]

use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[allow(unused_imports)]
pub use candor_testkit::{have, is_root, need, need_or, need_programs, need_root, skip};

/// True when a lab of ext4, xfs and btrfs can be made here; otherwise skips (saying what
/// is missing) and returns false.
pub fn need_lab() -> bool {
    need_root("for loop devices and mounts")
        && need_programs(&[
            "losetup",
            "mount",
            "umount",
            "mkfs.ext4",
            "mkfs.xfs",
            "mkfs.btrfs",
        ])
}

/// A scratch filesystem on a loop device (gone when dropped); None after a skip when this
/// machine cannot make one. Anything else going wrong is a failure.
pub fn scratch(fs: &str, size_bytes: u64) -> Option<candor_lab::ScratchFs> {
    need_or(
        candor_lab::scratch(fs, size_bytes),
        candor_lab::LabError::is_unsupported,
    )
}

/// True when the eBPF witness must load here: root, and the kernel itself loads and
/// attaches an eBPF program to a tracepoint (candor_testkit::kernel_bpf, which asks the
/// kernel, not candor); otherwise skips and returns false. Where this is true, a run whose
/// witness is not eBPF is a failure, not a skip.
pub fn need_bpf() -> bool {
    candor_testkit::need_kernel_bpf("to load the eBPF witness")
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

/// candor run as the unprivileged user nobody (uid and gid 65534, no groups) through
/// `setpriv`; None after a skip when not root or without setpriv. The binary's path must
/// be reachable by nobody: where it is not, the test fails (its set-up is wrong).
pub fn candor_as_nobody() -> Option<Command> {
    if !need_root("to run candor as another user") || !need_programs(&["setpriv"]) {
        return None;
    }
    let mut c = Command::new("setpriv");
    c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(env!("CARGO_BIN_EXE_candor"));
    Some(c)
}

/// Options that make each test of a run last long enough to be interrupted in the middle:
/// 50 passes over 64 MiB in 4 KiB records.
pub const LONG: [&str; 6] = [
    "--file-size",
    "64m",
    "--record-size",
    "4k",
    "--repeat",
    "50",
];

/// A genuine dead run under `target`: `candor run` started on it and killed (SIGKILL, no
/// chance to clean up) once its run directory holds a data file. Returns that directory.
pub fn dead_run(target: &Path) -> PathBuf {
    let before: Vec<PathBuf> = run_dirs_in(target);
    let mut child = candor()
        .arg("run")
        .arg(target)
        .args(["--quiet", "--tests", "write"])
        .args(LONG)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("candor starts");
    let dir = poll_while_running(
        &mut child,
        2,
        "candor run never made its data file",
        "candor run ended before it could be killed",
        || {
            run_dirs_in(target)
                .into_iter()
                .filter(|d| !before.contains(d))
                .find(|d| has_data_file(d))
        },
    );
    child.kill().expect("kill candor run");
    child.wait().expect("reap candor run");
    dir
}

/// Calls `found` every `pause_ms` milliseconds until it gives a value, which it returns;
/// fails saying `never` after 60 seconds, or `ended` when `child` exits first.
pub fn poll_while_running<T>(
    child: &mut std::process::Child,
    pause_ms: u64,
    never: &str,
    ended: &str,
    mut found: impl FnMut() -> Option<T>,
) -> T {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        if let Some(v) = found() {
            return v;
        }
        assert!(std::time::Instant::now() < deadline, "{never}");
        assert!(child.try_wait().ok().flatten().is_none(), "{ended}");
        std::thread::sleep(std::time::Duration::from_millis(pause_ms));
    }
}

/// Whether the run directory `run_dir` holds a data file (a test is under way).
pub fn has_data_file(run_dir: &Path) -> bool {
    std::fs::read_dir(run_dir).is_ok_and(|r| {
        r.filter_map(|e| e.ok())
            .any(|e| e.file_name().to_string_lossy().ends_with(".dat"))
    })
}

/// The `.candor-*` entries of `target`.
pub fn run_dirs_in(target: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(target)
        .map(|r| {
            r.filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with(".candor-"))
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Runs candor with `args` under `strace -f -qq -e trace=FILTER` (run where the test
/// says, in `cwd`): candor's output and strace's log, one system call a line.
pub fn strace_candor(cwd: &Path, filter: &str, args: &[&str]) -> (Output, String) {
    let log = tempfile::NamedTempFile::new().expect("a file for strace's log");
    let out = Command::new("strace")
        .current_dir(cwd)
        .args(["-f", "-qq", "-e"])
        .arg(format!("trace={filter}"))
        .arg("-o")
        .arg(log.path())
        .arg(env!("CARGO_BIN_EXE_candor"))
        .args(args)
        .output()
        .expect("strace runs");
    let trace = std::fs::read_to_string(log.path()).expect("strace's log");
    (out, trace)
}

/// Runs `program args`, which must succeed (it is the test's own set-up); its stdout.
pub fn sh(program: &str, args: &[&str]) -> String {
    let o = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{program} {args:?}: {e}"));
    assert!(
        o.status.success(),
        "{program} {args:?}: {}",
        text(&o.stderr)
    );
    text(&o.stdout)
}

/// Writes a partition table on the device `dev` with one partition, 32 MiB from 1 MiB.
pub fn one_partition(dev: &str) {
    let table = Command::new("sfdisk")
        .args(["-q", dev])
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin
                .take()
                .expect("sfdisk's stdin")
                .write_all(b"start=2048, size=65536, type=83\n")?;
            c.wait_with_output()
        })
        .expect("sfdisk runs");
    assert!(table.status.success(), "sfdisk: {}", text(&table.stderr));
}

/// One mebibyte.
pub const MIB: u64 = 1 << 20;

/// `len` bytes of the device (or file) `dev` from `off`.
pub fn read_at(dev: &str, off: u64, len: usize) -> Vec<u8> {
    let f = std::fs::File::open(dev).expect("open the device");
    let mut b = vec![0u8; len];
    f.read_exact_at(&mut b, off).expect("read the device");
    b
}

/// A digest of the whole device, to show that a refusal wrote nothing.
pub fn digest(dev: &str) -> u64 {
    let f = std::fs::File::open(dev).expect("open the device");
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut b = vec![0u8; MIB as usize];
    let mut off = 0;
    while let Ok(n) = f.read_at(&mut b, off) {
        if n == 0 {
            break;
        }
        for &x in &b[..n] {
            h = (h ^ x as u64).wrapping_mul(0x100_0000_01b3);
        }
        off += n as u64;
    }
    h
}

/// `candor run --allow-device-writes DEV --quiet ARGS` on a block device, waited for.
pub fn run_device(dev: &str, args: &[&str]) -> Output {
    candor()
        .args(["run", "--allow-device-writes", dev, "--quiet"])
        .args(args)
        .output()
        .expect("run candor")
}

/// A refusal: exit 2, one sentence containing each of `says`, and the device untouched.
/// The sentence, for more checks.
pub fn refused(dev: &str, args: &[&str], says: &[&str]) -> String {
    let before = digest(dev);
    let o = run_device(dev, args);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    for s in says {
        assert!(err.contains(s), "{args:?}: expected \"{s}\" in: {err}");
    }
    assert_eq!(err.trim().lines().count(), 1, "one sentence: {err}");
    assert_eq!(
        digest(dev),
        before,
        "{args:?}: the refused run changed the device"
    );
    err
}

/// `candor audit --witness WITNESS -o DIR/audit-WITNESS.json FLAGS -- CMD` run in `dir`:
/// candor's output and the saved audit (a stale file of an earlier call removed first).
pub fn audit_json(
    dir: &Path,
    witness: &str,
    flags: &[&str],
    cmd: &[&str],
) -> (Output, serde_json::Value) {
    let json = dir.join(format!("audit-{witness}.json"));
    let _ = std::fs::remove_file(&json);
    let out = candor()
        .current_dir(dir)
        .args(["audit", "--witness", witness, "-o"])
        .arg(&json)
        .args(flags)
        .arg("--")
        .args(cmd)
        .output()
        .expect("candor runs");
    let text = std::fs::read_to_string(&json).unwrap_or_else(|e| {
        panic!(
            "no {}: {e}\nstderr: {}",
            json.display(),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out, serde_json::from_str(&text).expect("valid JSON"))
}

/// Sectors read and written by a block device so far, in bytes (/sys/block/NAME/stat).
pub fn disk_bytes(dev: &str) -> (u64, u64) {
    let name = dev.trim_start_matches("/dev/");
    let s = std::fs::read_to_string(format!("/sys/block/{name}/stat")).expect("the device's stat");
    let f: Vec<u64> = s
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    (f[2] * 512, f[6] * 512)
}
