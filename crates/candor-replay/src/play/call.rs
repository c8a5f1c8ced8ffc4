//! One recorded call made again on the kernel, on the replay's own files and descriptors:
//! its flags, its buffer (aligned for O_DIRECT), its iovecs, and its result or why it could
//! not be made.

use super::fds::{FdCache, Fds};
use super::last_error;
use super::layout::name_of;
use crate::format::{Call, Kind};
use crate::strace::{
    IOV_MAX, O_ACCMODE, O_APPEND, O_CREAT, O_DIRECT, O_DIRECTORY, O_DSYNC, O_EXCL, O_NOATIME,
    O_NOFOLLOW, O_SYNC, O_TRUNC,
};
use std::borrow::Cow;
use std::collections::HashMap;
use std::ffi::CString;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::sync::Mutex;

/// Open flags a replay passes on: access mode and the flags that change how the kernel
/// treats the I/O; always O_NOFOLLOW and O_CLOEXEC.
pub fn open_flags(recorded: u32) -> i32 {
    let keep = O_ACCMODE
        | O_CREAT
        | O_EXCL
        | O_TRUNC
        | O_APPEND
        | O_DIRECT
        | O_DSYNC
        | O_SYNC
        | O_DIRECTORY
        | O_NOATIME;
    (recorded & keep) as i32 | libc::O_NOFOLLOW | libc::O_CLOEXEC
}

/// A buffer aligned for O_DIRECT, grown as calls need.
pub(super) struct Buffer {
    ptr: *mut u8,
    len: usize,
}

impl Buffer {
    pub(super) fn new() -> Buffer {
        Buffer {
            ptr: std::ptr::null_mut(),
            len: 0,
        }
    }

    fn get(&mut self, n: usize) -> *mut u8 {
        if n > self.len {
            self.free();
            let len = n.next_power_of_two().max(1 << 16);
            let layout = std::alloc::Layout::from_size_align(len, 4096).expect("a valid layout");
            // SAFETY: layout has a non-zero size.
            let p = unsafe { std::alloc::alloc(layout) };
            if p.is_null() {
                std::alloc::handle_alloc_error(layout);
            }
            // SAFETY: p points to len writable bytes.
            unsafe { std::ptr::write_bytes(p, 0x5A, len) };
            self.ptr = p;
            self.len = len;
        }
        self.ptr
    }

    fn free(&mut self) {
        if !self.ptr.is_null() {
            let layout =
                std::alloc::Layout::from_size_align(self.len, 4096).expect("a valid layout");
            // SAFETY: ptr was allocated with this layout.
            unsafe { std::alloc::dealloc(self.ptr, layout) };
            self.ptr = std::ptr::null_mut();
            self.len = 0;
        }
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        self.free();
    }
}

/// The largest single read or write a replay issues (a trace asking for more is cut to it,
/// and the difference is a divergence).
const MAX_IO: u64 = 256 << 20;

/// A vector call's iovecs over `size` bytes at `base`: as many as the recording's call had
/// (`count`, at least 1, at most IOV_MAX), the bytes shared out evenly (their lengths are
/// not recorded), the first ones one byte longer when they do not divide.
fn iovecs(base: *mut u8, size: usize, count: u32) -> Vec<libc::iovec> {
    let n = count.clamp(1, IOV_MAX) as usize;
    let (each, extra) = (size / n, size % n);
    let mut at = 0;
    (0..n)
        .map(|i| {
            let len = each + usize::from(i < extra);
            let v = libc::iovec {
                // SAFETY: at + len <= size, within the buffer at base.
                iov_base: unsafe { base.add(at) }.cast(),
                iov_len: len,
            };
            at += len;
            v
        })
        .collect()
}

/// What became of a call.
pub(super) enum Issued {
    /// The call was made: its result (-errno on failure).
    Done(i64),
    /// The call could not be made; why.
    Skipped(String),
}

/// A call's return value, or -errno when it failed.
fn ret(v: i64) -> i64 {
    if v < 0 {
        -(last_error().raw_os_error().unwrap_or(libc::EIO) as i64)
    } else {
        v
    }
}

/// Where a replay's calls are made: the repetition's directory, each file's path in it,
/// and the descriptors of the replayed processes.
pub(super) struct Place {
    pub(super) dir: RawFd,
    pub(super) names: HashMap<u32, CString>,
    pub(super) fds: Fds,
    /// Each replayed process's parent.
    pub(super) parents: HashMap<u32, u32>,
    /// The trace makes symbolic links: opens follow them, as the recording's did (they
    /// all lead inside `dir`: see `Place::link_target`).
    pub(super) links: bool,
    /// `dir`'s absolute path, which symbolic links made by the replay point into (none:
    /// not known, and they point at nothing).
    pub(super) dir_path: Option<Vec<u8>>,
    /// The mappings the replay's mmap calls made, kept for the pages the trace faults in
    /// through them.
    pub(super) maps: Maps,
}

/// The replay's file mappings, per file: kept (the trace holds no munmap) until the
/// repetition ends, at most MAX_MAPS of them (the oldest unmapped first).
#[derive(Default)]
pub(super) struct Maps(Mutex<MapTable>);

#[derive(Default)]
struct MapTable {
    /// (file, offset in the file, length, address), oldest first.
    live: std::collections::VecDeque<(u32, u64, usize, usize)>,
}

/// The most mappings a replay keeps at once (the kernel's default limit per process is
/// 65,530).
const MAX_MAPS: usize = 4096;

impl Maps {
    fn add(&self, file: u32, offset: u64, len: usize, at: *mut libc::c_void) {
        let mut t = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if t.live.len() >= MAX_MAPS {
            if let Some((_, _, l, p)) = t.live.pop_front() {
                // SAFETY: p and l are a mapping this table made and still holds.
                unsafe { libc::munmap(p as *mut libc::c_void, l) };
            }
        }
        t.live.push_back((file, offset, len, at as usize));
    }

    /// The newest mapping of `file` holding `offset`: its address there and the bytes
    /// it holds from there on.
    fn find(&self, file: u32, offset: u64) -> Option<(usize, usize)> {
        let t = self.0.lock().unwrap_or_else(|e| e.into_inner());
        t.live
            .iter()
            .rev()
            .find(|(f, o, l, _)| *f == file && *o <= offset && offset < *o + *l as u64)
            .map(|(_, o, l, p)| (p + (offset - o) as usize, l - (offset - o) as usize))
    }
}

impl Drop for Maps {
    fn drop(&mut self) {
        let t = self.0.get_mut().unwrap_or_else(|e| e.into_inner());
        for (_, _, l, p) in t.live.drain(..) {
            // SAFETY: each is a mapping this table made and still holds.
            unsafe { libc::munmap(p as *mut libc::c_void, l) };
        }
    }
}

/// What a symbolic link whose target is outside the trace points to: a name in the
/// replay's directory that no file of the replay has (theirs are `n` and a number).
const NOWHERE: &[u8] = b".outside-the-trace";

impl Place {
    /// What a symbolic link made by the replay points to: `target`'s path in the replay's
    /// directory, absolute, so that it names the same file wherever a rename moves the
    /// link; NOWHERE in that directory when the target is no file of the trace. Every link
    /// in the directory is one of these (the layout makes none), so following links never
    /// leads out of it, and a trace cannot name a path of its own.
    fn link_target(&self, target: Option<u32>) -> CString {
        let Some(dir) = &self.dir_path else {
            return CString::new(NOWHERE).expect("no NUL");
        };
        let mut v = dir.clone();
        v.push(b'/');
        match target {
            Some(t) => {
                let to = self.names.get(&t).cloned().unwrap_or_else(|| name_of(t));
                v.extend_from_slice(to.as_bytes());
            }
            None => v.extend_from_slice(NOWHERE),
        }
        CString::new(v).unwrap_or_else(|_| CString::new(NOWHERE).expect("no NUL"))
    }

    /// Makes one call of `process` again: through its descriptors for a call on one, by
    /// the file's path in the directory for the others. A descriptor the call leaves open
    /// that the recording's failed or replaced goes to `leftover`.
    pub(super) fn issue(
        &self,
        process: u32,
        c: &Call,
        buf: &mut Buffer,
        fd_cache: &mut FdCache,
        leftover: &mut Vec<OwnedFd>,
    ) -> Issued {
        let dir = self.dir;
        let kind = c.kind();
        // Only the calls that take a name look it up.
        let named = !kind.on_fd();
        let name = c.file.map(|f| match self.names.get(&f).filter(|_| named) {
            Some(n) => Cow::Borrowed(n.as_c_str()),
            None if named => Cow::Owned(name_of(f)),
            None => Cow::Borrowed(c""),
        });
        let fd = if kind.on_fd() {
            match self
                .fds
                .get_cached(fd_cache, process, &self.parents, c.fd, c.file)
            {
                Some(f) => f,
                None => {
                    return Issued::Skipped(format!(
                        "was not made: its descriptor {} was never opened in the replay",
                        c.fd
                    ))
                }
            }
        } else {
            -1
        };
        let Some(name) = name.or_else(|| (!kind.on_fd()).then_some(Cow::Borrowed(c""))) else {
            return Issued::Skipped("names no file".into());
        };
        let size = c.size.min(MAX_IO) as usize;
        // SAFETY (all calls below): dir and fd are descriptors the replay holds; names are
        // NUL-terminated; the buffer holds at least `size` bytes.
        let v = unsafe {
            match kind {
                Kind::Open => {
                    let mut flags = open_flags(c.flags);
                    if self.links && c.flags & O_NOFOLLOW == 0 {
                        // Links are followed as the recording's open followed them.
                        flags &= !libc::O_NOFOLLOW;
                    }
                    let r = libc::openat(dir, name.as_ptr(), flags, 0o600);
                    let replaced = if r >= 0 {
                        if c.result >= 0 {
                            self.fds.put(process, c.fd, r, c.file)
                        } else {
                            leftover.push(OwnedFd::from_raw_fd(r));
                            None
                        }
                    } else if c.result >= 0 {
                        self.fds.failed(process, c.fd)
                    } else {
                        None
                    };
                    if let Some(old) = replaced {
                        // The recording reused a descriptor the replay still held.
                        leftover.push(OwnedFd::from_raw_fd(old));
                    }
                    ret(r as i64)
                }
                Kind::Read => ret(libc::read(fd, buf.get(size).cast(), size) as i64),
                Kind::Write => ret(libc::write(fd, buf.get(size).cast(), size) as i64),
                Kind::Pread => {
                    ret(libc::pread(fd, buf.get(size).cast(), size, c.offset as i64) as i64)
                }
                Kind::Pwrite => {
                    ret(libc::pwrite(fd, buf.get(size).cast(), size, c.offset as i64) as i64)
                }
                Kind::Readv | Kind::Writev | Kind::Preadv | Kind::Pwritev => {
                    let iov = iovecs(buf.get(size), size, c.flags);
                    let n = iov.len() as i32;
                    ret(match kind {
                        Kind::Readv => libc::readv(fd, iov.as_ptr(), n),
                        Kind::Writev => libc::writev(fd, iov.as_ptr(), n),
                        Kind::Preadv => libc::preadv(fd, iov.as_ptr(), n, c.offset as i64),
                        _ => libc::pwritev(fd, iov.as_ptr(), n, c.offset as i64),
                    } as i64)
                }
                Kind::Dup => {
                    let r = libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0);
                    if r >= 0 {
                        if c.result >= 0 {
                            if let Some(old) = self.fds.put(process, c.result as i32, r, c.file) {
                                // dup2 over a descriptor closes it silently.
                                leftover.push(OwnedFd::from_raw_fd(old));
                            }
                        } else {
                            leftover.push(OwnedFd::from_raw_fd(r));
                        }
                        c.result
                    } else {
                        ret(-1)
                    }
                }
                Kind::Fsync => ret(libc::fsync(fd) as i64),
                Kind::Fdatasync => ret(libc::fdatasync(fd) as i64),
                Kind::SyncFileRange => {
                    ret(
                        libc::sync_file_range(fd, c.offset as i64, c.size as i64, c.flags & 7)
                            as i64,
                    )
                }
                Kind::Ftruncate => ret(libc::ftruncate(fd, c.offset as i64) as i64),
                Kind::Fallocate => {
                    ret(
                        libc::fallocate(fd, (c.flags & 0x1f) as i32, c.offset as i64, c.size as i64)
                            as i64,
                    )
                }
                Kind::Lseek => {
                    ret(libc::lseek(fd, c.offset as i64, (c.flags as i32).min(4)) as i64)
                }
                Kind::Close => match self.fds.take(process, c.fd) {
                    Some(real) => ret(libc::close(real) as i64),
                    None => {
                        return Issued::Skipped("was not made: its descriptor was not open".into())
                    }
                },
                Kind::Unlink => ret(libc::unlinkat(dir, name.as_ptr(), 0) as i64),
                Kind::Rmdir => ret(libc::unlinkat(dir, name.as_ptr(), libc::AT_REMOVEDIR) as i64),
                Kind::Mkdir => ret(libc::mkdirat(dir, name.as_ptr(), 0o700) as i64),
                Kind::Rename | Kind::Link => {
                    let Some(to) = c
                        .file2
                        .map(|f| self.names.get(&f).cloned().unwrap_or_else(|| name_of(f)))
                    else {
                        return Issued::Skipped("names no destination".into());
                    };
                    ret(if kind == Kind::Rename {
                        libc::renameat(dir, name.as_ptr(), dir, to.as_ptr())
                    } else {
                        libc::linkat(dir, name.as_ptr(), dir, to.as_ptr(), 0)
                    } as i64)
                }
                Kind::Symlink => {
                    let target = self.link_target(c.file2);
                    ret(libc::symlinkat(target.as_ptr(), dir, name.as_ptr()) as i64)
                }
                Kind::Getdents => {
                    let n = size.max(1);
                    ret(libc::syscall(libc::SYS_getdents64, fd, buf.get(n), n) as i64)
                }
                Kind::Fadvise => {
                    // posix_fadvise returns the error number itself.
                    let e = libc::posix_fadvise(fd, c.offset as i64, c.size as i64, c.flags as i32);
                    -(e as i64)
                }
                Kind::Readahead => {
                    ret(libc::readahead(fd, c.offset as i64, c.size as usize) as i64)
                }
                // sync() of the whole machine is replayed as a flush of the replay's own
                // filesystem: what the recording's flush did to the traced files.
                Kind::Syncfs => ret(libc::syncfs(dir) as i64),
                Kind::Truncate => {
                    // No truncateat: the file's path through the directory's descriptor.
                    let path = format!("/proc/self/fd/{dir}/");
                    let mut p = path.into_bytes();
                    p.extend_from_slice(name.to_bytes());
                    match CString::new(p) {
                        Ok(p) => ret(libc::truncate(p.as_ptr(), c.offset as i64) as i64),
                        Err(_) => return Issued::Skipped("names no file".into()),
                    }
                }
                Kind::Stat => {
                    let mut st: libc::stat = std::mem::zeroed();
                    ret(
                        libc::fstatat(dir, name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW)
                            as i64,
                    )
                }
                Kind::Fstat => {
                    let mut st: libc::stat = std::mem::zeroed();
                    ret(libc::syscall(libc::SYS_fstat, fd, &mut st as *mut libc::stat) as i64)
                }
                Kind::Mmap => {
                    let prot = (if c.flags & 1 != 0 { libc::PROT_READ } else { 0 })
                        | (if c.flags & 2 != 0 {
                            libc::PROT_WRITE
                        } else {
                            0
                        });
                    let share = if c.flags & 0x100 != 0 {
                        libc::MAP_SHARED
                    } else {
                        libc::MAP_PRIVATE
                    };
                    let len = (c.size as usize).max(1);
                    let off = (c.offset & !4095) as i64;
                    let p = libc::mmap(std::ptr::null_mut(), len, prot, share, fd, off);
                    if p == libc::MAP_FAILED {
                        ret(-1)
                    } else {
                        match c.file {
                            Some(f) => self.maps.add(f, off as u64, len, p),
                            None => {
                                libc::munmap(p, len);
                            }
                        }
                        0
                    }
                }
                Kind::Mapped => {
                    // The pages faulted in (or dirtied) through the newest mapping of the
                    // file that holds them, by the kernel's own fault path (madvise
                    // MADV_POPULATE_READ/WRITE): a page past the file's end fails the call
                    // (EFAULT) instead of raising SIGBUS.
                    let Some((at, held)) = c.file.and_then(|f| self.maps.find(f, c.offset)) else {
                        return Issued::Skipped(
                            "was not made: no mapping of its file made in the replay holds it"
                                .into(),
                        );
                    };
                    let advice = if c.flags & 1 != 0 {
                        libc::MADV_POPULATE_WRITE
                    } else {
                        libc::MADV_POPULATE_READ
                    };
                    let n = (c.size as usize).min(held);
                    ret(libc::madvise(at as *mut libc::c_void, n, advice) as i64)
                }
            }
        };
        if kind.is_data() && c.size > MAX_IO {
            return Issued::Skipped(format!(
                "asked for {} bytes, more than the replay's largest call ({MAX_IO})",
                c.size
            ));
        }
        Issued::Done(v)
    }
}
