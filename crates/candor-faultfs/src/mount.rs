//! The test helper: start `candor-faultfs` as a child process, wait until the kernel shows
//! the mount, and on drop unmount it and reap the child. Mount failures caused by the
//! machine (no /dev/fuse, the binary not built, and without root: no fusermount3 or no
//! permission to mount) are [`MountError::Skip`], so a test can skip; as root with
//! /dev/fuse, a mount that fails is [`MountError::Failed`].

use crate::faults::Faults;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

#[derive(Debug, thiserror::Error)]
pub enum MountError {
    /// This machine cannot mount the filesystem; the test should be skipped.
    #[error("{0}")]
    Skip(String),
    /// The filesystem should have mounted and did not.
    #[error("{0}")]
    Failed(String),
}

impl MountError {
    /// Whether this machine cannot mount the filesystem (the test is skipped).
    pub fn is_skip(&self) -> bool {
        matches!(self, MountError::Skip(_))
    }
}

/// A mounted `candor-faultfs`; unmounted when dropped.
#[derive(Debug)]
pub struct FaultFs {
    mountpoint: PathBuf,
    child: Option<Child>,
    log: PathBuf,
}

/// Where the `candor-faultfs` binary is: `$CANDOR_FAULTFS` if set, else beside the running
/// test executable's directory (`target/<profile>/`, which holds the workspace's binaries
/// when they have been built).
pub fn binary_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("CANDOR_FAULTFS") {
        return Some(PathBuf::from(p));
    }
    let exe = std::env::current_exe().ok()?;
    let mut dir = exe.parent()?;
    for _ in 0..2 {
        let candidate = dir.join("candor-faultfs");
        if candidate.is_file() {
            return Some(candidate);
        }
        dir = dir.parent()?;
    }
    None
}

fn is_mounted_here(mountpoint: &Path) -> bool {
    let Ok(mounts) = candor_procfs::Kernel::system().mounts() else {
        return false;
    };
    mounts.iter().any(|m| {
        // The source is our FSName; the type is "fuse" or "fuse.candor-faultfs" depending
        // on how the mount was made.
        m.source == "candor-faultfs" && m.target == mountpoint && m.fstype.starts_with("fuse")
    })
}

fn unmount(mountpoint: &Path) -> bool {
    let mp = mountpoint.as_os_str();
    for (prog, args) in [
        ("fusermount3", vec!["-u"]),
        ("umount", vec![]),
        ("fusermount3", vec!["-u", "-z"]),
        ("umount", vec!["-l"]),
    ] {
        let ok = Command::new(prog)
            .args(&args)
            .arg(mp)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if ok || !is_mounted_here(mountpoint) {
            return true;
        }
    }
    false
}

impl FaultFs {
    /// Mounts a view of `backing` at `mountpoint` (both existing directories) with `faults`,
    /// running the binary found by [`binary_path`]. Waits up to 10 s for the mount to appear.
    pub fn mount(
        backing: &Path,
        mountpoint: &Path,
        faults: &Faults,
    ) -> Result<FaultFs, MountError> {
        let Some(bin) = binary_path() else {
            return Err(MountError::Skip(
                "the candor-faultfs binary is not built (cargo build -p candor-faultfs)".into(),
            ));
        };
        FaultFs::mount_with(&bin, backing, mountpoint, faults)
    }

    /// [`FaultFs::mount`] with the `candor-faultfs` binary at `bin` (in the crate's own
    /// tests, `env!("CARGO_BIN_EXE_candor-faultfs")`).
    pub fn mount_with(
        bin: &Path,
        backing: &Path,
        mountpoint: &Path,
        faults: &Faults,
    ) -> Result<FaultFs, MountError> {
        if !Path::new("/dev/fuse").exists() {
            return Err(MountError::Skip("no /dev/fuse on this machine".into()));
        }
        if !bin.is_file() {
            return Err(MountError::Skip(format!(
                "the candor-faultfs binary is not at {} (cargo build -p candor-faultfs)",
                bin.display()
            )));
        }
        let mountpoint = std::fs::canonicalize(mountpoint).map_err(|e| {
            MountError::Failed(format!("mount point {}: {e}", mountpoint.display()))
        })?;
        let log = std::env::temp_dir().join(format!(
            "candor-faultfs-{}-{}.log",
            std::process::id(),
            unique()
        ));
        let log_file = std::fs::File::create(&log)
            .map_err(|e| MountError::Failed(format!("cannot create {}: {e}", log.display())))?;
        let mut cmd = Command::new(bin);
        cmd.arg(backing).arg(&mountpoint).args(faults.to_args());
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            // Root may let other users in without /etc/fuse.conf's user_allow_other.
            cmd.arg("--allow-other");
        }
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log_file)
            .spawn()
            .map_err(|e| MountError::Failed(format!("cannot run {}: {e}", bin.display())))?;
        let mut fs = FaultFs {
            mountpoint,
            child: Some(child),
            log,
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if is_mounted_here(&fs.mountpoint) {
                return Ok(fs);
            }
            let exited = fs.child.as_mut().and_then(|c| c.try_wait().ok().flatten());
            if let Some(status) = exited {
                fs.child = None;
                let why = fs.log().trim().to_string();
                // Without root, mounting goes through fusermount3, which may be missing or
                // not allowed here; root mounts directly, and a failure is a failure.
                // SAFETY: geteuid has no preconditions.
                let root = unsafe { libc::geteuid() } == 0;
                let machine = ["fusermount", "Permission denied", "Operation not permitted"];
                return Err(if !root && machine.iter().any(|m| why.contains(m)) {
                    MountError::Skip(format!("cannot mount FUSE here: {why}"))
                } else {
                    MountError::Failed(format!("candor-faultfs exited ({status}): {why}"))
                });
            }
            if Instant::now() > deadline {
                return Err(MountError::Failed(format!(
                    "candor-faultfs did not mount {} within 10 s: {}",
                    fs.mountpoint.display(),
                    fs.log().trim()
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The mount point: do the I/O under test here.
    pub fn path(&self) -> &Path {
        &self.mountpoint
    }

    /// What the filesystem reported so far: one line per injected fault.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// How many faults were injected so far.
    pub fn faults_injected(&self) -> usize {
        self.log()
            .lines()
            .filter(|l| {
                l.contains(" on read ") || l.contains(" on write ") || l.contains(" vanished ")
            })
            .count()
    }
}

impl Drop for FaultFs {
    fn drop(&mut self) {
        if is_mounted_here(&self.mountpoint) {
            unmount(&self.mountpoint);
        }
        if let Some(mut child) = self.child.take() {
            let deadline = Instant::now() + Duration::from_secs(5);
            loop {
                match child.try_wait() {
                    Ok(Some(_)) => break,
                    Ok(None) if Instant::now() < deadline => {
                        std::thread::sleep(Duration::from_millis(20))
                    }
                    _ => {
                        let _ = child.kill();
                        let _ = child.wait();
                        break;
                    }
                }
            }
        }
        if is_mounted_here(&self.mountpoint) {
            unmount(&self.mountpoint);
        }
        let _ = std::fs::remove_file(&self.log);
    }
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}
