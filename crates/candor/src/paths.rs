//! Checks of the paths a command is given, made before anything runs: a target on a
//! pseudo-filesystem, an output file that cannot be written where it is asked for. Each
//! refusal is one sentence naming the option (or the target) and what to do.

use crate::exit::Failure;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileTypeExt;
use std::path::Path;

/// The kernel's pseudo-filesystems, by `statfs` f_type (linux/magic.h): the kernel's own
/// views and controls, which cannot hold a benchmark's files (most refuse to create a
/// file; hugetlbfs takes no write(2)). tmpfs, ramfs and devtmpfs are real filesystems in
/// memory, and stay allowed.
const PSEUDO: &[(i64, &str)] = &[
    (0x9fa0, "proc"),
    (0x6265_6572, "sysfs"),
    (0x6462_6720, "debugfs"),
    (0x7472_6163, "tracefs"),
    (0x0027_e0eb, "cgroup"),
    (0x6367_7270, "cgroup2"),
    (0x7363_6673, "securityfs"),
    (0xcafe_4a11, "bpf"),
    (0x6265_6570, "configfs"),
    (0x6165_676c, "pstore"),
    (0xde5e_81e4, "efivarfs"),
    (0x1cd1, "devpts"),
    (0x1980_0202, "mqueue"),
    (0x9584_58f6, "hugetlbfs"),
    (0x4249_4e4d, "binfmt_misc"),
    (0xf97c_ff8c, "selinuxfs"),
    (0x4341_5d53, "smackfs"),
    (0x6e73_6673, "nsfs"),
    (0x6573_5543, "fusectl"),
    (0x0187, "autofs"),
];

/// The statfs of `path`; None when it cannot be read.
fn statfs(path: &Path) -> Option<libc::statfs> {
    let c = CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: statfs is plain integers; zeroed is a valid value to be overwritten.
    let mut s: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: c is a valid NUL-terminated path and s a writable statfs.
    (unsafe { libc::statfs(c.as_ptr(), &mut s) } == 0).then_some(s)
}

/// The name of the pseudo-filesystem `path` lies on, if it does.
#[allow(clippy::unnecessary_cast)] // f_type's type differs between architectures.
pub fn pseudo_fs(path: &Path) -> Option<&'static str> {
    let t = statfs(path)?.f_type as i64;
    PSEUDO.iter().find(|&&(m, _)| m == t).map(|&(_, n)| n)
}

/// Free bytes of the filesystem holding `path` for an unprivileged user (what candor may
/// take); None when statfs cannot be read.
#[allow(clippy::unnecessary_cast)] // the fields' types differ between architectures.
pub fn free_bytes(path: &Path) -> Option<u64> {
    let s = statfs(path)?;
    (s.f_bavail as u64).checked_mul(s.f_frsize as u64)
}

/// Whether the filesystem holding `path` is mounted read-only (statvfs' ST_RDONLY).
#[allow(clippy::unnecessary_cast)] // f_flag's type differs between architectures.
pub fn read_only(path: &Path) -> bool {
    let Ok(c) = CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: statvfs is plain integers; zeroed is a valid value to be overwritten.
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: c is a valid NUL-terminated path and s a writable statvfs.
    (unsafe { libc::statvfs(c.as_ptr(), &mut s) } == 0)
        && s.f_flag as u64 & libc::ST_RDONLY as u64 != 0
}

/// Why the directory `dir` cannot take a new file, as the end of a sentence; None when it
/// can (it exists, is a directory, on a real filesystem, writable).
fn unwritable(dir: &Path) -> Option<String> {
    let shown = dir.display();
    match std::fs::metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Some(format!("the directory {shown} does not exist"))
        }
        Err(e) => return Some(format!("{shown} cannot be reached ({e})")),
        Ok(m) if !m.is_dir() => return Some(format!("{shown} is not a directory")),
        Ok(_) => {}
    }
    if let Some(fs) = pseudo_fs(dir) {
        return Some(format!(
            "{shown} is on a {fs} pseudo-filesystem, which cannot hold files"
        ));
    }
    let c = CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: c is a valid NUL-terminated path.
    if unsafe { libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) } != 0 {
        let e = std::io::Error::last_os_error();
        return Some(match e.raw_os_error() {
            Some(libc::EROFS) => format!("{shown} is on a read-only filesystem"),
            Some(libc::EACCES) | Some(libc::EPERM) => {
                format!("{shown} is not writable (permission denied)")
            }
            _ => format!("{shown} cannot be written ({e})"),
        });
    }
    None
}

/// Checks an output file (`option` FILE, the `what` it holds) before anything runs: not a
/// directory, nor a device, pipe or link that the atomic save (a rename over it) would
/// replace, in a directory that exists and can be written.
pub fn check_output_file(option: &str, file: &Path, what: &str) -> Result<(), Failure> {
    let shown = file.display();
    if let Ok(m) = std::fs::symlink_metadata(file) {
        let t = m.file_type();
        if t.is_dir() || (t.is_symlink() && file.is_dir()) {
            return Err(Failure::usage(format!(
                "{option} {shown} is a directory: give a file name for the {what}"
            )));
        }
        if !t.is_file() {
            let kind = if t.is_symlink() {
                "a symbolic link"
            } else if t.is_block_device() || t.is_char_device() {
                "a device"
            } else if t.is_fifo() {
                "a pipe"
            } else {
                "not a regular file"
            };
            return Err(Failure::usage(format!(
                "{option} {shown} is {kind}, which saving the {what} would replace: give the name of a regular file"
            )));
        }
    }
    let dir = file
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    match unwritable(dir) {
        Some(why) => Err(Failure::usage(format!(
            "cannot save to {shown} (the {what}, {option}): {why}; choose another place"
        ))),
        None => Ok(()),
    }
}

/// Checks an output directory (`option` DIR) that is made if missing: an existing one is
/// a writable directory; a missing one has a nearest existing ancestor that is.
pub fn check_output_dir(option: &str, dir: &Path) -> Result<(), Failure> {
    let mut at = dir;
    while !at.as_os_str().is_empty() && std::fs::symlink_metadata(at).is_err() {
        match at.parent() {
            Some(p) => at = p,
            None => break,
        }
    }
    let at = if at.as_os_str().is_empty() {
        Path::new(".")
    } else {
        at
    };
    match unwritable(at) {
        Some(why) => Err(Failure::usage(format!(
            "cannot save to {} ({option}): {why}; choose another directory",
            dir.display()
        ))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_and_sys_are_pseudo_filesystems_and_tmp_is_not() {
        assert_eq!(pseudo_fs(Path::new("/proc")), Some("proc"));
        let self_fd = candor_procfs::paths::pid("self", "fd");
        assert_eq!(pseudo_fs(Path::new(&self_fd)), Some("proc"));
        assert_eq!(pseudo_fs(Path::new("/sys")), Some("sysfs"));
        assert_eq!(pseudo_fs(&std::env::temp_dir()), None);
    }

    #[test]
    fn output_files_are_checked_where_they_would_go() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        assert!(check_output_file("-o", &d.join("r.json"), "JSON result").is_ok());
        let e = check_output_file("--html", d, "HTML report").unwrap_err();
        assert_eq!(e.code, crate::exit::USAGE);
        assert!(e.message.starts_with("--html ") && e.message.contains("is a directory"));
        let e = check_output_file("--html", &d.join("no/x.html"), "HTML report").unwrap_err();
        assert!(e.message.contains("does not exist"), "{}", e.message);
        std::os::unix::fs::symlink("/dev/null", d.join("null")).unwrap();
        let e = check_output_file("-o", &d.join("null"), "JSON result").unwrap_err();
        assert!(e.message.contains("a symbolic link"), "{}", e.message);
        let in_proc = candor_procfs::paths::under_proc("x.json");
        let e = check_output_file("-o", Path::new(&in_proc), "JSON result").unwrap_err();
        assert!(
            e.message.contains("proc pseudo-filesystem"),
            "{}",
            e.message
        );
    }

    #[test]
    fn an_output_directory_may_be_made_below_a_writable_one() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        assert!(check_output_dir("--rank-output", &d.join("a/b")).is_ok());
        std::fs::write(d.join("f"), b"x").unwrap();
        let e = check_output_dir("--rank-output", &d.join("f/ranks")).unwrap_err();
        assert!(e.message.contains("is not a directory"), "{}", e.message);
    }
}
