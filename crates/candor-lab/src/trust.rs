//! What the lab trusts: only a lab directory and state file candor could have made for
//! the user running it.
//!
//! - The directory chain holding the lab (`--dir` and every directory above it) belongs to
//!   root or to the user, and none of it is writable by others without the sticky bit: no
//!   one else can rename or replace `.candor-lab` between a check and its use, so the paths
//!   handed to `losetup` and `mount` afterwards name what was checked.
//! - `.candor-lab` and `lab.json` are not symbolic links (opened with `O_NOFOLLOW`, checked
//!   with `fstat` on the opened descriptor), belong to the user (to root for root) and are
//!   not writable by group or others; `lab.json` is a regular file with one link.
//! - Every member's paths are exactly the ones the lab makes, `<lab>/<fs>.img` and
//!   `<lab>/mnt/<fs>`, and what exists at those paths is what the lab makes there (a regular
//!   file, directories; no links).
//!
//! Anything else is refused with one sentence naming what is wrong, before anything is done.

use crate::LabError;
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

/// A state file is a few hundred bytes; anything much larger is not one.
const STATE_MAX: u64 = 1 << 20;

pub(crate) fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}

/// Owners the lab trusts: the user running candor, and root.
fn trusted(uid: u32) -> bool {
    uid == euid() || uid == 0
}

fn whom() -> String {
    if euid() == 0 {
        "root".to_string()
    } else {
        format!("you (uid {}) or root", euid())
    }
}

fn writable_by_others(mode: u32) -> bool {
    mode & 0o022 != 0
}

/// Checks `dir` (absolute, resolved) and every directory above it.
pub(crate) fn check_chain(dir: &Path) -> Result<(), LabError> {
    for a in dir.ancestors() {
        let meta = std::fs::symlink_metadata(a).map_err(|e| {
            LabError::Usage(format!(
                "--dir {} cannot be used: {}: {e}",
                dir.display(),
                a.display()
            ))
        })?;
        if !trusted(meta.uid()) {
            return Err(LabError::Usage(format!(
                "--dir {} cannot hold a lab: {} is owned by uid {}, who could replace the lab's directory; \
                 choose a directory that only {} can change",
                dir.display(),
                a.display(),
                meta.uid(),
                whom()
            )));
        }
        let mode = meta.mode() & 0o7777;
        if writable_by_others(mode) && mode & 0o1000 == 0 {
            return Err(LabError::Usage(format!(
                "--dir {} cannot hold a lab: {} is writable by others without the sticky bit (mode {mode:04o}), \
                 so another user could swap the lab's directory; choose another --dir",
                dir.display(),
                a.display()
            )));
        }
    }
    Ok(())
}

/// The lab's directory, opened without following a link and checked on the descriptor.
pub(crate) struct LabDir {
    pub file: File,
    pub dev: u64,
    pub ino: u64,
}

/// Opens `root` (`DIR/.candor-lab`); `Ok(None)` when it does not exist.
pub(crate) fn open_lab_dir(root: &Path) -> Result<Option<LabDir>, LabError> {
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(root)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(LabError::Usage(format!(
                "{} is a symbolic link, not a directory candor made; candor leaves it alone",
                root.display()
            )))
        }
        Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => {
            let what = if std::fs::symlink_metadata(root).is_ok_and(|m| m.file_type().is_symlink())
            {
                "a symbolic link"
            } else {
                "not a directory"
            };
            return Err(LabError::Usage(format!(
                "{} is {what}, so candor did not make it; candor leaves it alone",
                root.display()
            )));
        }
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            return Err(LabError::NeedsRoot(format!(
                "cannot read the lab in {} ({e}): it is root's; run the command with sudo",
                root.display()
            )))
        }
        Err(e) => return Err(e.into()),
    };
    let meta = file.metadata()?;
    if !trusted(meta.uid()) {
        return Err(LabError::Usage(format!(
            "{} is owned by uid {}, not by {}: candor did not make it for you and leaves it alone",
            root.display(),
            meta.uid(),
            whom()
        )));
    }
    let mode = meta.mode() & 0o7777;
    if writable_by_others(mode) {
        return Err(LabError::Usage(format!(
            "{} has mode {mode:04o}: others can write in it, so candor does not trust what it holds; \
             candor leaves it alone",
            root.display()
        )));
    }
    Ok(Some(LabDir {
        dev: meta.dev(),
        ino: meta.ino(),
        file,
    }))
}

/// Whether `root` still names the directory `lab` (a `destroy` may have removed it while
/// this command waited for the lock).
pub(crate) fn still_there(root: &Path, lab: &LabDir) -> bool {
    std::fs::symlink_metadata(root).is_ok_and(|m| m.dev() == lab.dev && m.ino() == lab.ino)
}

/// Reads the state file in the lab's directory; `Ok(None)` when there is none.
pub(crate) fn read_state_file(root: &Path, name: &str) -> Result<Option<String>, LabError> {
    let path = root.join(name);
    let mut f = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(&path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(LabError::Usage(format!(
            "{} is a symbolic link, not a state file candor wrote; candor leaves this lab alone",
            path.display()
        )))
        }
        Err(e) => return Err(e.into()),
    };
    let meta = f.metadata()?;
    let mode = meta.mode() & 0o7777;
    let wrong = if !meta.file_type().is_file() {
        Some("is not a regular file".to_string())
    } else if !trusted(meta.uid()) {
        Some(format!("is owned by uid {}, not by {}", meta.uid(), whom()))
    } else if writable_by_others(mode) {
        Some(format!("has mode {mode:04o}: others can write it"))
    } else if meta.nlink() != 1 {
        Some(format!("has {} links", meta.nlink()))
    } else if meta.len() > STATE_MAX {
        Some(format!("is {} bytes long", meta.len()))
    } else {
        None
    };
    if let Some(w) = wrong {
        return Err(LabError::Usage(format!(
            "{} {w}: candor trusts only a state file it wrote, and leaves this lab alone",
            path.display()
        )));
    }
    let mut text = String::new();
    (&mut f)
        .take(STATE_MAX + 1)
        .read_to_string(&mut text)
        .map_err(|e| {
            LabError::Usage(format!(
                "{} is not a lab state file candor can read ({e}); candor leaves this lab alone",
                path.display()
            ))
        })?;
    Ok(Some(text))
}

/// What is at `path` inside the lab, if anything, must be what the lab makes there: a
/// regular file (`want_dir` false) or a directory, not a link, owned by the user or root
/// and not writable by others.
pub(crate) fn check_entry(path: &Path, want_dir: bool) -> Result<(), LabError> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    let mode = meta.mode() & 0o7777;
    let wrong = if meta.file_type().is_symlink() {
        Some("is a symbolic link".to_string())
    } else if want_dir && !meta.is_dir() {
        Some("is not a directory".to_string())
    } else if !want_dir && !meta.file_type().is_file() {
        Some("is not a regular file".to_string())
    } else if !trusted(meta.uid()) {
        Some(format!("is owned by uid {}, not by {}", meta.uid(), whom()))
    } else if writable_by_others(mode) && !(want_dir && mode & 0o1000 != 0) {
        Some(format!("has mode {mode:04o}: others can write it"))
    } else {
        None
    };
    match wrong {
        Some(w) => Err(LabError::Usage(format!(
            "{} {w}: the lab does not make it so, and candor leaves this lab alone",
            path.display()
        ))),
        None => Ok(()),
    }
}

/// Refuses a member path that is not exactly the one the lab makes.
pub(crate) fn check_member_path(
    state_path: &Path,
    what: &str,
    got: &Path,
    expected: &Path,
) -> Result<(), LabError> {
    if got == expected {
        return Ok(());
    }
    Err(LabError::Usage(format!(
        "{} lists {} as {what}, which is not the path the lab makes ({}); candor leaves this lab alone",
        state_path.display(),
        got.display(),
        expected.display()
    )))
}

/// Makes a directory with mode 0700 whatever the umask; `Ok(false)` when it was there.
pub(crate) fn make_private_dir(path: &Path) -> std::io::Result<bool> {
    use std::os::unix::fs::DirBuilderExt;
    match std::fs::DirBuilder::new().mode(0o700).create(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(false),
        Err(e) => return Err(e),
    }
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)?;
    f.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))?;
    Ok(true)
}

/// Creates a new file (`O_EXCL`, not following a link) with mode 0600 whatever the umask.
pub(crate) fn create_private_file(path: &Path) -> std::io::Result<File> {
    let f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)?;
    f.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
    Ok(f)
}
