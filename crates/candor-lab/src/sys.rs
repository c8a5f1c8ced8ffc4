//! The system calls and programs the lab relies on: running `losetup`/`mkfs`/`mount`,
//! reading /proc/mounts and the loop devices' backing files in /sys, free space, locks.
//! Parsing is split from reading so it can be tested without root.

use crate::LabError;
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
    std::fs::read_to_string(format!("/sys/block/{name}/loop/dio")).is_ok_and(|t| t.trim() == "1")
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

/// One line of /proc/mounts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MountEntry {
    pub source: String,
    pub target: PathBuf,
    pub fstype: String,
}

/// /proc/mounts escapes space, tab, newline and backslash as `\ooo`.
fn unescape_mount_field(field: &str) -> String {
    let b = field.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 4 <= b.len() {
            let oct = &b[i + 1..i + 4];
            if oct.iter().all(|c| (b'0'..=b'7').contains(c)) {
                let v = oct
                    .iter()
                    .fold(0u32, |acc, c| acc * 8 + u32::from(c - b'0'));
                if let Ok(v) = u8::try_from(v) {
                    out.push(v);
                    i += 4;
                    continue;
                }
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

pub(crate) fn parse_mounts(text: &str) -> Vec<MountEntry> {
    text.lines()
        .filter_map(|line| {
            let mut f = line.split(' ');
            let source = unescape_mount_field(f.next()?);
            let target = PathBuf::from(unescape_mount_field(f.next()?));
            let fstype = f.next()?.to_string();
            Some(MountEntry {
                source,
                target,
                fstype,
            })
        })
        .collect()
}

pub(crate) fn mounts() -> Result<Vec<MountEntry>, LabError> {
    Ok(parse_mounts(&std::fs::read_to_string("/proc/mounts")?))
}

/// Loop devices (`/dev/loopN`) whose backing file is `backing`, found through
/// /sys/block/loopN/loop/backing_file, so a device number reused by someone else after a
/// reboot is never mistaken for ours.
pub(crate) fn loops_backed_by(backing: &Path) -> Vec<String> {
    let want = canonical(backing);
    let Ok(entries) = std::fs::read_dir("/sys/block") else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        if !name.starts_with("loop") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(e.path().join("loop/backing_file")) else {
            continue;
        };
        let text = text.trim_end_matches('\n');
        let path = text.strip_suffix(" (deleted)").unwrap_or(text);
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
    fn mounts_are_parsed_and_unescaped() {
        let text = "/dev/loop3 /tmp/a\\040b/mnt/ext4 ext4 rw,relatime 0 0\n\
                    proc /proc proc rw 0 0\n";
        let m = parse_mounts(text);
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].source, "/dev/loop3");
        assert_eq!(m[0].target, PathBuf::from("/tmp/a b/mnt/ext4"));
        assert_eq!(m[0].fstype, "ext4");
        assert_eq!(m[1].target, PathBuf::from("/proc"));
    }

    #[test]
    fn unescape_leaves_plain_backslashes() {
        assert_eq!(unescape_mount_field("a\\134b"), "a\\b");
        assert_eq!(unescape_mount_field("a\\9"), "a\\9");
        assert_eq!(unescape_mount_field("end\\"), "end\\");
    }

    #[test]
    fn free_space_is_reported() {
        let free = free_bytes(Path::new("/")).expect("statvfs /");
        assert!(free > 0);
    }
}
