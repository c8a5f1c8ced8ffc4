//! Directory work through descriptors: open a directory beneath another without following
//! a symbolic link or crossing a mount, and remove a tree that way. Used for candor's run
//! directories (`RunDir::remove`, `clean_stale`): nothing reached through a link or a mount
//! placed inside one is ever removed.
//!
//! Each directory is opened relative to its parent's descriptor with `openat2(2)` and
//! `RESOLVE_BENEATH | RESOLVE_NO_XDEV | RESOLVE_NO_SYMLINKS` (kernel 5.6 and later); where
//! the kernel lacks it, with `openat(O_NOFOLLOW)` and a comparison of the mount id
//! (`statx`, 5.8 and later) and the device with the parent's. Every entry is looked at with
//! `statx(AT_SYMLINK_NOFOLLOW)` first: an entry on another mount (a bind mount of a file or
//! directory from elsewhere, a filesystem mounted there) is left in place and named.

use std::ffi::{CStr, CString, OsStr};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// How deep a tree is removed; deeper is an error (candor's run directories are flat).
const MAX_DEPTH: usize = 64;

fn cstr(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

/// What `statx` says of an entry (not following a final symbolic link).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stat {
    pub mode: u32,
    pub uid: u32,
    pub dev: u64,
    pub ino: u64,
    /// The mount the entry is on, when the kernel says (5.8 and later).
    pub mnt_id: Option<u64>,
    /// The root of a mount (`STATX_ATTR_MOUNT_ROOT`), when the kernel says.
    pub mount_root: bool,
}

impl Stat {
    pub fn is_dir(&self) -> bool {
        self.mode & libc::S_IFMT == libc::S_IFDIR
    }
    pub fn is_symlink(&self) -> bool {
        self.mode & libc::S_IFMT == libc::S_IFLNK
    }
    /// Whether this entry lies on another mount than `root`.
    pub fn other_mount_than(&self, root: &Stat) -> bool {
        if self.dev != root.dev || self.mount_root {
            return true;
        }
        matches!((self.mnt_id, root.mnt_id), (Some(a), Some(b)) if a != b)
    }
}

/// `statx` of `name` in `dir` (or of `dir` itself when `name` is empty), not following a
/// final symbolic link and not triggering an automount.
pub(crate) fn stat_at(dir: BorrowedFd<'_>, name: &CStr) -> io::Result<Stat> {
    let mut flags = libc::AT_SYMLINK_NOFOLLOW | libc::AT_NO_AUTOMOUNT;
    if name.is_empty() {
        flags |= libc::AT_EMPTY_PATH;
    }
    // SAFETY: statx is plain old data; zeroed is a valid value to be overwritten.
    let mut st: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: valid descriptor, NUL-terminated name and out pointer.
    let r = unsafe {
        libc::statx(
            dir.as_raw_fd(),
            name.as_ptr(),
            flags,
            libc::STATX_BASIC_STATS | libc::STATX_MNT_ID,
            &mut st,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    let mount_root_attr = libc::STATX_ATTR_MOUNT_ROOT as u64;
    Ok(Stat {
        mode: u32::from(st.stx_mode),
        uid: st.stx_uid,
        dev: libc::makedev(st.stx_dev_major, st.stx_dev_minor),
        ino: st.stx_ino,
        mnt_id: (st.stx_mask & libc::STATX_MNT_ID != 0).then_some(st.stx_mnt_id),
        mount_root: st.stx_attributes_mask & mount_root_attr != 0
            && st.stx_attributes & mount_root_attr != 0,
    })
}

/// `struct open_how` of openat2(2) (its first version, 24 bytes).
#[repr(C)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}

/// Opens the directory `name` beneath `dir`: never through a symbolic link (`ELOOP`), never
/// onto another mount (`EXDEV`), never a non-directory (`ENOTDIR`).
pub(crate) fn open_dir_beneath(dir: BorrowedFd<'_>, name: &CStr) -> io::Result<OwnedFd> {
    let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    let how = OpenHow {
        flags: flags as u64,
        mode: 0,
        resolve: libc::RESOLVE_BENEATH
            | libc::RESOLVE_NO_XDEV
            | libc::RESOLVE_NO_SYMLINKS
            | libc::RESOLVE_NO_MAGICLINKS,
    };
    // SAFETY: valid descriptor, NUL-terminated name, and a valid open_how of its size.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dir.as_raw_fd(),
            name.as_ptr(),
            &how as *const OpenHow,
            std::mem::size_of::<OpenHow>(),
        )
    };
    if fd >= 0 {
        // SAFETY: a descriptor the kernel just returned, owned by nobody else.
        return Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) });
    }
    let err = io::Error::last_os_error();
    if !matches!(err.raw_os_error(), Some(libc::ENOSYS) | Some(libc::EPERM)) {
        return Err(err);
    }
    open_dir_checked(dir, name)
}

/// [`open_dir_beneath`] without openat2: `O_NOFOLLOW` refuses a final link, a single name
/// has no other component to follow, and the mount is compared after the open.
fn open_dir_checked(dir: BorrowedFd<'_>, name: &CStr) -> io::Result<OwnedFd> {
    let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    if name.to_bytes().contains(&b'/') || matches!(name.to_bytes(), b"." | b"..") {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    // SAFETY: valid descriptor and NUL-terminated name.
    let fd = unsafe { libc::openat(dir.as_raw_fd(), name.as_ptr(), flags) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a descriptor the kernel just returned, owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let parent = stat_at(dir, c"")?;
    let child = stat_at(fd.as_fd(), c"")?;
    if child.other_mount_than(&parent) {
        return Err(io::Error::from_raw_os_error(libc::EXDEV));
    }
    Ok(fd)
}

/// Opens the regular file `name` in `dir` for reading, not following a link and not
/// blocking on a FIFO.
pub(crate) fn open_file_at(dir: BorrowedFd<'_>, name: &CStr) -> io::Result<std::fs::File> {
    let flags =
        libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC;
    // SAFETY: valid descriptor and NUL-terminated name.
    let fd = unsafe { libc::openat(dir.as_raw_fd(), name.as_ptr(), flags) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a descriptor the kernel just returned, owned by nobody else.
    Ok(unsafe { std::fs::File::from_raw_fd(fd) })
}

/// The names in a directory, `.` and `..` left out.
pub(crate) fn names(dir: BorrowedFd<'_>) -> io::Result<Vec<CString>> {
    // fdopendir takes the descriptor over: give it a duplicate.
    // SAFETY: valid descriptor.
    let dup = unsafe { libc::fcntl(dir.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 0) };
    if dup < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: dup is a directory descriptor we own; on failure we close it.
    let dirp = unsafe { libc::fdopendir(dup) };
    if dirp.is_null() {
        let e = io::Error::last_os_error();
        // SAFETY: dup is ours and still open.
        unsafe { libc::close(dup) };
        return Err(e);
    }
    // SAFETY: rewind, since the duplicate shares its offset with `dir`.
    unsafe { libc::rewinddir(dirp) };
    let mut out = Vec::new();
    let result = loop {
        // SAFETY: errno is thread-local; readdir's NULL is told apart through it.
        unsafe { *libc::__errno_location() = 0 };
        // SAFETY: dirp is a valid open DIR*.
        let ent = unsafe { libc::readdir(dirp) };
        if ent.is_null() {
            let errno = io::Error::last_os_error();
            break if errno.raw_os_error() == Some(0) {
                Ok(())
            } else {
                Err(errno)
            };
        }
        // SAFETY: d_name is NUL-terminated within the entry readdir returned.
        let name = unsafe { CStr::from_ptr((*ent).d_name.as_ptr()) };
        if name.to_bytes() != b"." && name.to_bytes() != b".." {
            out.push(name.to_owned());
        }
    };
    // SAFETY: dirp is valid; closedir closes dup too.
    unsafe { libc::closedir(dirp) };
    result.map(|()| out)
}

fn unlink_at(dir: BorrowedFd<'_>, name: &CStr, flags: i32) -> io::Result<()> {
    // SAFETY: valid descriptor and NUL-terminated name.
    if unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), flags) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// What a removal left.
#[derive(Debug, Default)]
pub(crate) struct Removal {
    /// Entries on another mount, left in place.
    pub kept_mounts: Vec<PathBuf>,
    /// Entries that could not be removed, with the reason.
    pub errors: Vec<String>,
}

impl Removal {
    pub fn complete(&self) -> bool {
        self.kept_mounts.is_empty() && self.errors.is_empty()
    }
}

/// Removes everything in the directory `dir` (shown as `here`) except the names in `spare`,
/// staying on `root`'s mount and never following a link. Returns whether the directory is
/// now empty but for `spare`.
pub(crate) fn empty_dir(
    dir: BorrowedFd<'_>,
    here: &Path,
    root: &Stat,
    spare: &[&CStr],
    out: &mut Removal,
) -> bool {
    empty_at(dir, here, root, spare, 0, out)
}

fn empty_at(
    dir: BorrowedFd<'_>,
    here: &Path,
    root: &Stat,
    spare: &[&CStr],
    depth: usize,
    out: &mut Removal,
) -> bool {
    let list = match names(dir) {
        Ok(l) => l,
        Err(e) => {
            out.errors.push(format!("{}: {e}", here.display()));
            return false;
        }
    };
    let mut emptied = true;
    for name in list {
        if spare.contains(&name.as_c_str()) {
            continue;
        }
        let path = here.join(OsStr::from_bytes(name.to_bytes()));
        let st = match stat_at(dir, &name) {
            Ok(s) => s,
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => continue,
            Err(e) => {
                out.errors.push(format!("{}: {e}", path.display()));
                emptied = false;
                continue;
            }
        };
        if st.other_mount_than(root) {
            out.kept_mounts.push(path);
            emptied = false;
            continue;
        }
        if st.is_dir() {
            if depth >= MAX_DEPTH {
                out.errors.push(format!(
                    "{}: more than {MAX_DEPTH} directories deep",
                    path.display()
                ));
                emptied = false;
                continue;
            }
            let sub = match open_dir_beneath(dir, &name) {
                Ok(fd) => fd,
                Err(e) if e.raw_os_error() == Some(libc::EXDEV) => {
                    out.kept_mounts.push(path);
                    emptied = false;
                    continue;
                }
                Err(e) => {
                    out.errors.push(format!("{}: {e}", path.display()));
                    emptied = false;
                    continue;
                }
            };
            let sub_empty = empty_at(sub.as_fd(), &path, root, &[], depth + 1, out);
            drop(sub);
            if !sub_empty {
                emptied = false;
                continue;
            }
            if let Err(e) = unlink_at(dir, &name, libc::AT_REMOVEDIR) {
                out.errors.push(format!("{}: {e}", path.display()));
                emptied = false;
            }
        } else {
            match unlink_at(dir, &name, 0) {
                Ok(()) => {}
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {}
                // A file that is a mount point (a bind mount of a file).
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                    out.kept_mounts.push(path);
                    emptied = false;
                }
                Err(e) => {
                    out.errors.push(format!("{}: {e}", path.display()));
                    emptied = false;
                }
            }
        }
    }
    emptied
}

/// Removes the directory `name` in `parent` (now empty) only if it is still the directory
/// `expect` describes: a directory swapped in meanwhile is left alone.
pub(crate) fn remove_empty_dir(
    parent: BorrowedFd<'_>,
    name: &CStr,
    expect: &Stat,
) -> io::Result<()> {
    let now = stat_at(parent, name)?;
    if now.dev != expect.dev || now.ino != expect.ino {
        return Err(io::Error::other(
            "the directory was replaced while it was being removed",
        ));
    }
    unlink_at(parent, name, libc::AT_REMOVEDIR)
}

/// Removes the file `name` in `dir` (not following a link).
pub(crate) fn remove_file_at(dir: BorrowedFd<'_>, name: &CStr) -> io::Result<()> {
    unlink_at(dir, name, 0)
}

/// Opens a directory by path (following links: the caller named it).
pub(crate) fn open_dir(path: &Path) -> io::Result<OwnedFd> {
    let c = cstr(path.as_os_str())?;
    // SAFETY: NUL-terminated path.
    let fd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a descriptor the kernel just returned, owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

pub(crate) fn name_of(path: &Path) -> io::Result<CString> {
    cstr(
        path.file_name()
            .ok_or_else(|| io::Error::from_raw_os_error(libc::EINVAL))?,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Unmounts on drop.
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg(&self.0).status();
        }
    }

    #[test]
    fn links_and_mounts_are_never_entered_with_or_without_openat2() {
        let t = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("keep"), b"keep").unwrap();
        let top = open_dir(t.path()).unwrap();
        std::os::unix::fs::symlink(outside.path(), t.path().join("link")).unwrap();
        for open in [open_dir_beneath, open_dir_checked] {
            let e = open(top.as_fd(), c"link").unwrap_err();
            assert!(
                matches!(e.raw_os_error(), Some(libc::ELOOP) | Some(libc::ENOTDIR)),
                "{e}"
            );
        }
        if !candor_testkit::need_root("to bind-mount a directory") {
            return;
        }
        let bound = t.path().join("bound");
        std::fs::create_dir(&bound).unwrap();
        let st = std::process::Command::new("mount")
            .arg("--bind")
            .arg(outside.path())
            .arg(&bound)
            .status()
            .unwrap();
        assert!(st.success(), "mount --bind");
        let _guard = Unmount(bound.clone());
        // The same filesystem, another mount: the device alone cannot tell.
        let root = stat_at(top.as_fd(), c"").unwrap();
        let b = stat_at(top.as_fd(), c"bound").unwrap();
        assert_eq!(b.dev, root.dev);
        assert!(b.other_mount_than(&root));
        for open in [open_dir_beneath, open_dir_checked] {
            let e = open(top.as_fd(), c"bound").unwrap_err();
            assert_eq!(e.raw_os_error(), Some(libc::EXDEV), "{e}");
        }
        let mut out = Removal::default();
        assert!(!empty_dir(top.as_fd(), t.path(), &root, &[], &mut out));
        assert_eq!(out.kept_mounts, vec![bound.clone()]);
        assert!(out.errors.is_empty(), "{:?}", out.errors);
        assert_eq!(std::fs::read(outside.path().join("keep")).unwrap(), b"keep");
        assert!(!t.path().join("link").exists());
    }
}
