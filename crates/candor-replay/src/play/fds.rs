//! The descriptors of the replayed processes, shared by their threads: a recorded
//! descriptor found in its process, inherited from a parent, or waited for while another
//! thread opens it; and those the trace's processes had before it began, opened first.

use super::call::open_flags;
use super::last_error;
use super::layout::{c_paths, name_of};
use crate::format::Trace;
use std::collections::HashMap;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// The descriptors of the replayed processes: (process, recorded fd) -> (the replay's fd,
/// its file). The replay's fd is FAILED when the open that made it in the recording
/// failed in the replay.
type FdMap = HashMap<(u32, i32), (RawFd, Option<u32>)>;

/// The descriptor of an open that failed in the replay: a call on it is not made, at once
/// (without waiting for another thread to open it).
const FAILED: RawFd = -1;

#[derive(Default)]
pub(super) struct Fds {
    map: Mutex<FdMap>,
    changed: Condvar,
    /// Bumped on every change of the table: a thread's last lookup stays good until then.
    version: std::sync::atomic::AtomicU64,
}

/// A thread's last descriptor lookup, reused while the table has not changed (a run of
/// reads on one descriptor takes no lock).
#[derive(Default)]
pub(super) struct FdCache {
    key: Option<(u32, i32, Option<u32>)>,
    real: RawFd,
    version: u64,
}

/// How long a call waits for a descriptor another thread has yet to open.
const FD_WAIT: Duration = Duration::from_secs(2);

impl Fds {
    /// The replay's descriptor for a recorded one: this process's; else one inherited from
    /// its parents (duplicated into this process's table); else another descriptor this
    /// process holds on the same file; waiting for another thread's open up to `FD_WAIT`.
    fn get(
        &self,
        process: u32,
        parents: &HashMap<u32, u32>,
        fd: i32,
        file: Option<u32>,
    ) -> Option<RawFd> {
        let deadline = Instant::now() + FD_WAIT;
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(&(real, f)) = map.get(&(process, fd)) {
                if real == FAILED {
                    return None;
                }
                if f == file || file.is_none() {
                    return Some(real);
                }
            }
            let mut p = parents.get(&process).copied();
            let mut hops = 0;
            while let Some(pp) = p {
                if let Some(&(real, f)) = map.get(&(pp, fd)) {
                    if real != FAILED && (f == file || file.is_none()) {
                        // SAFETY: real is a descriptor the replay holds open.
                        let d = unsafe { libc::fcntl(real, libc::F_DUPFD_CLOEXEC, 0) };
                        if d >= 0 {
                            map.insert((process, fd), (d, f));
                            self.bump();
                            return Some(d);
                        }
                    }
                }
                hops += 1;
                p = if hops < 64 {
                    parents.get(&pp).copied()
                } else {
                    None
                };
            }
            if file.is_some() {
                if let Some((_, &(real, _))) = map
                    .iter()
                    .find(|((pr, _), (r, f))| *pr == process && *f == file && *r != FAILED)
                {
                    return Some(real);
                }
            }
            let now = Instant::now();
            if now >= deadline {
                return None;
            }
            map = self
                .changed
                .wait_timeout(map, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// `get`, through the thread's cache.
    pub(super) fn get_cached(
        &self,
        cache: &mut FdCache,
        process: u32,
        parents: &HashMap<u32, u32>,
        fd: i32,
        file: Option<u32>,
    ) -> Option<RawFd> {
        use std::sync::atomic::Ordering;
        let key = Some((process, fd, file));
        let version = self.version.load(Ordering::Acquire);
        if cache.key == key && cache.version == version {
            return Some(cache.real);
        }
        let real = self.get(process, parents, fd, file)?;
        // A lookup that changed the table (a descriptor duplicated from a parent) is
        // cached against the version it made.
        *cache = FdCache {
            key,
            real,
            version: self.version.load(Ordering::Acquire),
        };
        Some(real)
    }

    /// Every descriptor in the table, owned by the caller, the table left empty.
    pub(super) fn drain(&self) -> Vec<OwnedFd> {
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        let all = map
            .drain()
            .filter(|(_, (real, _))| *real != FAILED)
            // SAFETY: each descriptor in the table is held by the replay alone.
            .map(|(_, (real, _))| unsafe { OwnedFd::from_raw_fd(real) })
            .collect();
        self.bump();
        all
    }

    fn bump(&self) {
        self.version
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
    }

    /// Records the replay's descriptor for a recorded one; returns the one it replaces.
    pub(super) fn put(
        &self,
        process: u32,
        fd: i32,
        real: RawFd,
        file: Option<u32>,
    ) -> Option<RawFd> {
        let old = {
            let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
            let old = map.insert((process, fd), (real, file));
            self.bump();
            old
        };
        self.changed.notify_all();
        old.map(|o| o.0).filter(|&o| o != FAILED)
    }

    /// Marks a recorded descriptor whose open failed in the replay: calls on it are not
    /// made, and do not wait for it. Returns the descriptor it replaces, as `put` does.
    pub(super) fn failed(&self, process: u32, fd: i32) -> Option<RawFd> {
        self.put(process, fd, FAILED, None)
    }

    /// Forgets a recorded descriptor (closed); returns the replay's.
    pub(super) fn take(&self, process: u32, fd: i32) -> Option<RawFd> {
        let r = {
            let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
            let r = map
                .remove(&(process, fd))
                .map(|o| o.0)
                .filter(|&o| o != FAILED);
            self.bump();
            r
        };
        self.changed.notify_all();
        r
    }
}

/// The descriptors a replay opens before its measured region: those the trace's processes
/// had before it began.
#[derive(Default)]
pub struct Prepared {
    pub(super) fds: Fds,
}

/// Opens the trace's inherited descriptors on the laid-out files.
pub fn prepare(t: &Trace, dir: BorrowedFd) -> std::io::Result<Prepared> {
    let p = Prepared::default();
    let names = c_paths(t);
    for i in &t.header.inherited {
        let name = names
            .get(&i.file)
            .cloned()
            .unwrap_or_else(|| name_of(i.file));
        // SAFETY: dir is a valid descriptor and name NUL-terminated.
        let fd =
            unsafe { libc::openat(dir.as_raw_fd(), name.as_ptr(), open_flags(i.flags), 0o600) };
        if fd < 0 {
            let e = last_error();
            // Close what was opened so far.
            drop(p.fds.drain());
            return Err(e);
        }
        p.fds.put(i.process, i.fd, fd, Some(i.file));
    }
    Ok(p)
}
