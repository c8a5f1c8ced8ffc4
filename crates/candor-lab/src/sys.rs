//! The system calls and programs the lab relies on: running `losetup`/`mkfs`/`mount`,
//! the mount table and the loop devices' backing files (through candor-procfs), free
//! space, locks.

use crate::LabError;
use candor_procfs::Kernel;
use std::fs::File;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs a program; its trimmed stdout on success, its stderr in the error otherwise.
pub(crate) fn run(cmd: &str, args: &[&str]) -> Result<String, LabError> {
    let out = Command::new(cmd).args(args).output().map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            LabError::Unsupported(format!("{cmd} is not installed"))
        } else {
            LabError::Failed(format!("cannot run {cmd}: {e}"))
        }
    })?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
        let stdout = String::from_utf8_lossy(&out.stdout).trim().to_string();
        return Err(LabError::Command {
            what: format!("{cmd} {}", args.join(" ")),
            detail: if stderr.is_empty() { stdout } else { stderr },
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Attaches `backing` to a free loop device that reads and writes it with direct I/O, so
/// the device behaves like a disk: without it, the loop device's requests go through the
/// host's page cache of its file and its "device" speed is memory speed. A filesystem that
/// cannot do O_DIRECT under the file leaves the device buffered (the witness names that).
pub(crate) fn losetup(backing: &Path) -> Result<String, LabError> {
    run(
        "losetup",
        &[
            "--direct-io=on",
            "-f",
            "--show",
            &backing.display().to_string(),
        ],
    )
}

/// Whether a loop device ("/dev/loop3") reads and writes its file with direct I/O.
pub fn loop_direct_io(device: &str) -> bool {
    let name = device.trim_start_matches("/dev/");
    Kernel::system().block_named(name).loop_direct_io()
}

/// Whether `program` is an executable file in a directory of $PATH.
pub(crate) fn on_path(program: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::env::var_os("PATH").is_some_and(|paths| {
        std::env::split_paths(&paths).any(|d| {
            std::fs::metadata(d.join(program))
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
    })
}

pub(crate) fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// One line of the mount table.
pub(crate) use candor_procfs::MountEntry;

pub(crate) fn mounts() -> Result<Vec<MountEntry>, LabError> {
    Kernel::system()
        .mounts()
        .map_err(|e| LabError::Failed(e.to_string()))
}

/// Loop devices (`/dev/loopN`) whose backing file is `backing`, found through each loop
/// device's `loop/backing_file` in sysfs, so a device number reused by someone else after a
/// reboot is never mistaken for ours.
pub(crate) fn loops_backed_by(backing: &Path) -> Vec<String> {
    let want = canonical(backing);
    let kernel = Kernel::system();
    let Ok(names) = kernel.block_names() else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for name in names {
        if !name.starts_with("loop") {
            continue;
        }
        let Some(text) = kernel.block_named(&name).loop_backing_file() else {
            continue;
        };
        let path = text.strip_suffix(" (deleted)").unwrap_or(&text);
        if Path::new(path) == want {
            found.push(format!("/dev/{name}"));
        }
    }
    found.sort();
    found
}

/// The path with symbolic links resolved where it exists (the kernel reports resolved
/// paths), unchanged otherwise.
pub(crate) fn canonical(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

/// Whether `dir` is on a filesystem held in memory (tmpfs, ramfs); false when unknown.
pub(crate) fn in_memory(dir: &Path) -> bool {
    const TMPFS_MAGIC: i64 = 0x0102_1994;
    const RAMFS_MAGIC: i64 = 0x8584_58f6;
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: statfs is plain old data; zeroed is a valid value to be overwritten.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: c is a valid NUL-terminated path and st a valid out pointer.
    if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 {
        return false;
    }
    let t = st.f_type as i64;
    t == TMPFS_MAGIC || t == RAMFS_MAGIC
}

/// Bytes available to an unprivileged writer on the filesystem holding `dir`.
pub(crate) fn free_bytes(dir: &Path) -> Result<u64, LabError> {
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| LabError::Usage(format!("{} is not a usable path", dir.display())))?;
    // SAFETY: statvfs is plain old data; zeroed is a valid value to be overwritten.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: c is a valid NUL-terminated path and st a valid out pointer.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return Err(std::io::Error::last_os_error().into());
    }
    Ok((st.f_bavail as u64).saturating_mul(st.f_frsize as u64))
}

/// An exclusive advisory lock on a directory, so two `candor lab` commands on the same lab
/// do not interleave. Released when dropped.
pub(crate) struct DirLock {
    _file: File,
}

/// Locks the directory open as `dir` (on a descriptor of its own, sharing the lock).
pub(crate) fn lock_file(dir: &File) -> Result<DirLock, LabError> {
    let file = dir.try_clone()?;
    // SAFETY: the descriptor is valid for the life of `file`.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
        return Err(std::io::Error::last_os_error().into());
    }
    Ok(DirLock { _file: file })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_space_is_reported() {
        let free = free_bytes(Path::new("/")).expect("statvfs /");
        assert!(free > 0);
    }
}
