//! The replay: a trace's files laid out in a directory candor owns, then every thread's
//! calls issued in order on its own thread, all threads together. Files are named by their
//! trace id (`n7`) and only ever reached through the directory's descriptor with
//! `O_NOFOLLOW`: a trace's paths are never used as paths, and nothing it says can name a
//! file outside the directory or a device.

use crate::format::{Call, Kind, Trace};
use crate::strace::{
    O_ACCMODE, O_APPEND, O_CREAT, O_DIRECT, O_DIRECTORY, O_DSYNC, O_EXCL, O_NOATIME, O_SYNC,
    O_TRUNC,
};
use candor_model::CallCount;
use candor_stats::Histogram;
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::ffi::CString;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// `--timing`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Timing {
    /// Every call as soon as the one before it in its thread has returned.
    Fast,
    /// Each call at its recorded time after the replay's start, gaps multiplied by the factor
    /// (`original` is 1).
    Scaled(f64),
}

impl Timing {
    pub fn parse(s: &str) -> Result<Timing, String> {
        match s {
            "fast" => Ok(Timing::Fast),
            "original" => Ok(Timing::Scaled(1.0)),
            _ => {
                let x = s.strip_prefix("scale=").and_then(|x| x.parse::<f64>().ok());
                match x {
                    Some(x) if x.is_finite() && x > 0.0 && x <= 1000.0 => Ok(Timing::Scaled(x)),
                    _ => Err(format!(
                        "'{s}' is not a timing: choose fast, original or scale=X (the recorded gaps times X, e.g. scale=0.5 for half)"
                    )),
                }
            }
        }
    }

    pub fn name(&self) -> String {
        match self {
            Timing::Fast => "fast".into(),
            Timing::Scaled(x) if *x == 1.0 => "original".into(),
            Timing::Scaled(x) => format!("scale={x}"),
        }
    }
}

/// The name of a trace's file in the run directory.
pub fn name_of(id: u32) -> CString {
    CString::new(format!("n{id}")).expect("no NUL in a number")
}

/// Each file's path in the repetition's directory: `n7` at the top, `n3/n7` inside the
/// directory `n3`, as the header places it. A file that existed at the start is never put
/// in a directory that did not (it is at the top instead), nor is any file in a chain of
/// directories that loops or runs deeper than 64.
pub fn paths(t: &Trace) -> HashMap<u32, String> {
    let by_id: HashMap<u32, &crate::FileEntry> = t.header.files.iter().map(|f| (f.id, f)).collect();
    let parent = |f: &crate::FileEntry| {
        f.parent
            .and_then(|p| by_id.get(&p))
            .filter(|p| p.dir && (f.size.is_none() || p.size.is_some()))
            .copied()
    };
    t.header
        .files
        .iter()
        .map(|f| {
            let mut chain = vec![f.id];
            let mut at = parent(f);
            while let Some(p) = at {
                if chain.contains(&p.id) || chain.len() > 64 {
                    chain.truncate(1);
                    break;
                }
                chain.push(p.id);
                at = parent(p);
            }
            let path: Vec<String> = chain.iter().rev().map(|id| format!("n{id}")).collect();
            (f.id, path.join("/"))
        })
        .collect()
}

/// `paths` as the C strings the calls take.
fn c_paths(t: &Trace) -> HashMap<u32, CString> {
    paths(t)
        .into_iter()
        .map(|(id, p)| (id, CString::new(p).expect("no NUL in ids")))
        .collect()
}

/// What the layout made.
#[derive(Debug, Default, Clone, Copy)]
pub struct Layout {
    pub files: u64,
    pub dirs: u64,
    pub bytes: u64,
}

fn last_error() -> std::io::Error {
    std::io::Error::last_os_error()
}

/// Makes the trace's files as they were when it began: directories, and files of their
/// sizes, written (a fixed non-zero pattern) or, with `sparse`, holes; each file's data is
/// flushed, and unless `keep_cache` its cached pages are dropped so the replay's first
/// reads go to the device as the recording's did.
pub fn lay_out(
    t: &Trace,
    dir: BorrowedFd,
    sparse: bool,
    keep_cache: bool,
) -> std::io::Result<Layout> {
    let mut l = Layout::default();
    let chunk = vec![0xA5u8; 1 << 20];
    let names = c_paths(t);
    // Directories first, each after the one it is in; then the files.
    let mut order: Vec<&crate::FileEntry> = t.header.files.iter().collect();
    let depth = |id: u32| {
        names
            .get(&id)
            .map_or(0, |n| n.as_bytes().iter().filter(|&&b| b == b'/').count())
    };
    order.sort_by_key(|f| (!f.dir, depth(f.id), f.id));
    for f in order {
        let Some(size) = f.size else { continue };
        let name = names.get(&f.id).cloned().unwrap_or_else(|| name_of(f.id));
        if f.dir {
            // SAFETY: dir is a valid descriptor and name a NUL-terminated name.
            if unsafe { libc::mkdirat(dir.as_raw_fd(), name.as_ptr(), 0o700) } != 0 {
                return Err(last_error());
            }
            l.dirs += 1;
            continue;
        }
        // SAFETY: as above; the flags make a new regular file or fail.
        let fd = unsafe {
            libc::openat(
                dir.as_raw_fd(),
                name.as_ptr(),
                libc::O_CREAT | libc::O_EXCL | libc::O_WRONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                0o600,
            )
        };
        if fd < 0 {
            return Err(last_error());
        }
        // SAFETY: fd was just opened and is owned here.
        let file = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) });
        if sparse {
            file.set_len(size)?;
        } else {
            use std::io::Write;
            let mut w = &file;
            let mut left = size;
            while left > 0 {
                let n = left.min(chunk.len() as u64) as usize;
                w.write_all(&chunk[..n])?;
                left -= n as u64;
            }
        }
        file.sync_all()?;
        if !keep_cache {
            // SAFETY: a valid descriptor; advice only.
            unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        }
        l.files += 1;
        l.bytes += size;
    }
    Ok(l)
}

/// The calls of one kind the replay made.
#[derive(Debug, Default, Clone)]
pub struct KindStats {
    pub calls: u64,
    pub errors: u64,
    pub bytes: u64,
    pub latency: Histogram,
}

/// A call whose outcome in the replay was not the recording's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Divergence {
    /// Thread and call, both from 1 as the sentences say them.
    pub thread: usize,
    pub call: usize,
    pub kind: Kind,
    pub what: String,
}

impl Divergence {
    pub fn sentence(&self) -> String {
        format!(
            "call {} of thread {} ({}) {}",
            self.call,
            self.thread,
            self.kind.name(),
            self.what
        )
    }
}

/// What a replay did.
#[derive(Debug, Default)]
pub struct Played {
    pub kinds: BTreeMap<Kind, KindStats>,
    /// From the first thread's start to the last thread's end.
    pub seconds: f64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub read_ops: u64,
    pub write_ops: u64,
    pub read_latency: Histogram,
    pub write_latency: Histogram,
    /// The first divergences (at most `MAX_KEPT`) and how many there were in all.
    pub divergences: Vec<Divergence>,
    pub diverged: u64,
    /// Descriptors the replay still holds (opens the recording saw fail, descriptors its
    /// threads never closed): closed by the caller after the measured region.
    pub leftover: Vec<OwnedFd>,
    /// The replay was asked to stop before every call was made.
    pub stopped: bool,
}

const MAX_KEPT: usize = 20;

/// The descriptors of the replayed processes: (process, recorded fd) -> (fd, file).
/// (process, recorded fd) -> (the replay's fd, its file).
type FdMap = HashMap<(u32, i32), (RawFd, Option<u32>)>;

#[derive(Default)]
struct Fds {
    map: Mutex<FdMap>,
    changed: Condvar,
    /// Bumped on every change of the table: a thread's last lookup stays good until then.
    version: std::sync::atomic::AtomicU64,
}

/// A thread's last descriptor lookup, reused while the table has not changed (a run of
/// reads on one descriptor takes no lock).
#[derive(Default)]
struct FdCache {
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
                if f == file || file.is_none() {
                    return Some(real);
                }
            }
            let mut p = parents.get(&process).copied();
            let mut hops = 0;
            while let Some(pp) = p {
                if let Some(&(real, f)) = map.get(&(pp, fd)) {
                    if f == file || file.is_none() {
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
                    .find(|((pr, _), (_, f))| *pr == process && *f == file)
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
    fn get_cached(
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

    fn bump(&self) {
        self.version
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
    }

    fn put(&self, process: u32, fd: i32, real: RawFd, file: Option<u32>) -> Option<RawFd> {
        let old = {
            let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
            let old = map.insert((process, fd), (real, file));
            self.bump();
            old
        };
        self.changed.notify_all();
        old.map(|o| o.0)
    }

    fn take(&self, process: u32, fd: i32) -> Option<RawFd> {
        let r = {
            let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
            let r = map.remove(&(process, fd)).map(|o| o.0);
            self.bump();
            r
        };
        self.changed.notify_all();
        r
    }
}

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
struct Buffer {
    ptr: *mut u8,
    len: usize,
}

impl Buffer {
    fn new() -> Buffer {
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
    let n = count.clamp(1, crate::strace::IOV_MAX) as usize;
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

fn errno_name(e: i32) -> String {
    let name = match e {
        libc::ENOENT => "ENOENT",
        libc::EBADF => "EBADF",
        libc::EEXIST => "EEXIST",
        libc::EINVAL => "EINVAL",
        libc::EISDIR => "EISDIR",
        libc::ENOTDIR => "ENOTDIR",
        libc::ENOSPC => "ENOSPC",
        libc::EIO => "EIO",
        libc::ENOTEMPTY => "ENOTEMPTY",
        libc::EACCES => "EACCES",
        libc::EPERM => "EPERM",
        libc::ELOOP => "ELOOP",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        _ => return format!("errno {e}"),
    };
    name.to_string()
}

/// One thread's share of the replay.
struct ThreadOut {
    kinds: BTreeMap<Kind, KindStats>,
    divergences: Vec<Divergence>,
    diverged: u64,
    start: Instant,
    end: Instant,
    leftover: Vec<OwnedFd>,
    stopped: bool,
}

struct Shared<'a> {
    dir: RawFd,
    /// Each file's path in the repetition's directory.
    names: HashMap<u32, CString>,
    fds: Fds,
    parents: HashMap<u32, u32>,
    timing: Timing,
    t0_ns: u64,
    go: std::sync::Barrier,
    released: Mutex<Option<Instant>>,
    trace: &'a Trace,
    /// Per thread: the calls it has made so far, and when each of its calls ended in the
    /// recording (kept non-decreasing).
    done: Vec<std::sync::atomic::AtomicUsize>,
    ends: Vec<Vec<u64>>,
    /// Whether the replay was asked to stop (a signal): every thread stops at its next call.
    stop: &'a (dyn Fn() -> bool + Sync),
}

/// How long a call waits for the calls of other threads that ended before it began in the
/// recording; past it, the call goes ahead (a trace whose clock went backwards).
const ORDER_WAIT: Duration = Duration::from_secs(5);

impl Shared<'_> {
    /// Waits until every other thread has made each call that ended, in the recording,
    /// before this one began: calls ordered in the recording stay ordered; calls that
    /// overlapped may overlap.
    fn wait_for_earlier(&self, me: usize, start_ns: u64) -> bool {
        use std::sync::atomic::Ordering;
        let mut since: Option<Instant> = None;
        let mut waited = false;
        for (j, ends) in self.ends.iter().enumerate() {
            if j == me {
                continue;
            }
            let need = ends.partition_point(|&e| e < start_ns);
            let mut spins = 0u32;
            while self.done[j].load(Ordering::Acquire) < need {
                if (self.stop)() {
                    return true;
                }
                waited = true;
                spins += 1;
                if spins < 64 {
                    std::hint::spin_loop();
                } else if spins < 256 {
                    std::thread::yield_now();
                } else {
                    let t = *since.get_or_insert_with(Instant::now);
                    if t.elapsed() > ORDER_WAIT {
                        return true;
                    }
                    std::thread::sleep(Duration::from_micros(20));
                }
            }
        }
        waited
    }
}

/// The descriptors a replay opens before its measured region: those the trace's processes
/// had before it began.
#[derive(Default)]
pub struct Prepared {
    fds: Fds,
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
            // Release what was opened so far.
            for (_, (real, _)) in p.fds.map.lock().unwrap_or_else(|e| e.into_inner()).drain() {
                // SAFETY: each descriptor in the table is held here alone.
                unsafe { libc::close(real) };
            }
            return Err(e);
        }
        p.fds.put(i.process, i.fd, fd, Some(i.file));
    }
    Ok(p)
}

/// Replays every thread's calls, all threads released together; `cpus` pins the threads
/// round-robin.
pub fn play(
    t: &Trace,
    dir: BorrowedFd,
    timing: Timing,
    cpus: &[usize],
    prepared: Prepared,
    stop: &(dyn Fn() -> bool + Sync),
) -> Played {
    let t0_ns = t
        .calls
        .iter()
        .flatten()
        .map(|c| c.start_ns)
        .min()
        .unwrap_or(0);
    let parents = t
        .header
        .threads
        .iter()
        .filter_map(|th| th.parent.map(|p| (th.process, p)))
        .collect();
    let shared = Arc::new(Shared {
        dir: dir.as_raw_fd(),
        names: c_paths(t),
        fds: prepared.fds,
        parents,
        timing,
        t0_ns,
        go: std::sync::Barrier::new(t.calls.len()),
        released: Mutex::new(None),
        trace: t,
        stop,
        done: t.calls.iter().map(|_| Default::default()).collect(),
        ends: t
            .calls
            .iter()
            .map(|calls| {
                let mut max = 0;
                calls
                    .iter()
                    .map(|c| {
                        max = (c.start_ns + c.dur_ns).max(max);
                        max
                    })
                    .collect()
            })
            .collect(),
    });
    let outs: Vec<ThreadOut> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..t.calls.len())
            .map(|i| {
                let sh = Arc::clone(&shared);
                let cpu = (!cpus.is_empty()).then(|| cpus[i % cpus.len()]);
                s.spawn(move || run_thread(&sh, i, cpu))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a replay thread does not panic"))
            .collect()
    });
    let mut p = Played::default();
    let start = outs.iter().map(|o| o.start).min();
    let end = outs.iter().map(|o| o.end).max();
    if let (Some(a), Some(b)) = (start, end) {
        p.seconds = b.saturating_duration_since(a).as_secs_f64();
    }
    for o in outs {
        for (k, s) in o.kinds {
            let e = p.kinds.entry(k).or_default();
            e.calls += s.calls;
            e.errors += s.errors;
            e.bytes += s.bytes;
            e.latency.merge(&s.latency);
            if k.is_read() {
                p.read_bytes += s.bytes;
                p.read_ops += s.calls;
                p.read_latency.merge(&s.latency);
            } else if k.is_write() {
                p.write_bytes += s.bytes;
                p.write_ops += s.calls;
                p.write_latency.merge(&s.latency);
            }
        }
        p.diverged += o.diverged;
        p.stopped |= o.stopped;
        for d in o.divergences {
            if p.divergences.len() < MAX_KEPT {
                p.divergences.push(d);
            }
        }
        p.leftover.extend(o.leftover);
    }
    // Whatever the threads left open (their processes would have closed it at exit).
    let map = std::mem::take(&mut *shared.fds.map.lock().unwrap_or_else(|e| e.into_inner()));
    for (_, (real, _)) in map {
        // SAFETY: each descriptor in the table is held by the replay alone.
        p.leftover.push(unsafe { OwnedFd::from_raw_fd(real) });
    }
    p.divergences.sort_by_key(|d| (d.thread, d.call));
    p
}

fn pin(cpu: usize) {
    // SAFETY: cpu_set_t is plain bits; the calls get a valid set for this thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

fn run_thread(sh: &Shared, index: usize, cpu: Option<usize>) -> ThreadOut {
    if let Some(c) = cpu {
        pin(c);
    }
    let calls = &sh.trace.calls[index];
    let process = sh.trace.header.threads[index].process;
    let mut out = ThreadOut {
        kinds: BTreeMap::new(),
        divergences: Vec::new(),
        diverged: 0,
        start: Instant::now(),
        end: Instant::now(),
        leftover: Vec::new(),
        stopped: false,
    };
    let mut buf = Buffer::new();
    // Per kind, by its code, while the thread runs (a map lookup per call is not free).
    let mut kinds: Vec<KindStats> = vec![KindStats::default(); Kind::ALL.len()];
    let mut seen = vec![false; Kind::ALL.len()];
    let mut fd_cache = FdCache::default();
    sh.go.wait();
    let released = *sh
        .released
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(Instant::now);
    out.start = Instant::now();
    // One clock reading per call, as `run`'s loop: the end of a call is the start of the
    // next unless the thread waited in between (the recorded gaps, other threads).
    let mut t = out.start;
    for (i, c) in calls.iter().enumerate() {
        if (sh.stop)() {
            out.stopped = true;
            break;
        }
        let mut waited = false;
        if let Timing::Scaled(x) = sh.timing {
            waited = true;
            let at = released
                + Duration::from_nanos(((c.start_ns.saturating_sub(sh.t0_ns)) as f64 * x) as u64);
            loop {
                let now = Instant::now();
                if at <= now || (sh.stop)() {
                    break;
                }
                std::thread::sleep((at - now).min(Duration::from_millis(50)));
            }
        }
        waited |= sh.wait_for_earlier(index, c.start_ns);
        if waited {
            t = Instant::now();
        }
        let r = issue(sh, process, c, &mut buf, &mut fd_cache, &mut out.leftover);
        let end = Instant::now();
        let ns = end.saturating_duration_since(t).as_nanos() as u64;
        t = end;
        sh.done[index].store(i + 1, std::sync::atomic::Ordering::Release);
        let code = c.kind().code() as usize % Kind::ALL.len();
        seen[code] = true;
        let k = &mut kinds[code];
        match r {
            Issued::Done(v) => {
                k.calls += 1;
                k.latency.record(ns);
                if v < 0 {
                    k.errors += 1;
                } else if c.kind().is_data() {
                    k.bytes += v as u64;
                }
                if let Some(what) = compare(c, v) {
                    out.diverged += 1;
                    if out.divergences.len() < MAX_KEPT {
                        out.divergences.push(Divergence {
                            thread: index + 1,
                            call: i + 1,
                            kind: c.kind(),
                            what,
                        });
                    }
                }
            }
            Issued::Skipped(what) => {
                out.diverged += 1;
                if out.divergences.len() < MAX_KEPT {
                    out.divergences.push(Divergence {
                        thread: index + 1,
                        call: i + 1,
                        kind: c.kind(),
                        what,
                    });
                }
            }
        }
    }
    out.end = Instant::now();
    out.kinds = kinds
        .into_iter()
        .enumerate()
        .filter(|(code, _)| seen[*code])
        .filter_map(|(code, k)| Kind::from_code(code as u8).map(|kind| (kind, k)))
        .collect();
    out
}

/// The difference between a call's replayed and recorded outcome, in words.
fn compare(c: &Call, got: i64) -> Option<String> {
    let want = c.result;
    match (want < 0, got < 0) {
        (false, true) => Some(format!(
            "failed with {} where the recording's succeeded",
            errno_name(-got as i32)
        )),
        (true, false) => Some(format!(
            "succeeded where the recording's failed with {}",
            errno_name(-want as i32)
        )),
        (false, false) if c.kind().is_data() && got != want => Some(format!(
            "returned {got} bytes where the recording's returned {want}"
        )),
        _ => None,
    }
}

enum Issued {
    /// The call was made: its result (-errno on failure).
    Done(i64),
    /// The call could not be made; why.
    Skipped(String),
}

fn ret(v: i64) -> i64 {
    if v < 0 {
        -(last_error().raw_os_error().unwrap_or(libc::EIO) as i64)
    } else {
        v
    }
}

fn issue(
    sh: &Shared,
    process: u32,
    c: &Call,
    buf: &mut Buffer,
    fd_cache: &mut FdCache,
    leftover: &mut Vec<OwnedFd>,
) -> Issued {
    let dir = sh.dir;
    let kind = c.kind();
    // Only the calls that take a name look it up.
    let named = matches!(
        kind,
        Kind::Open | Kind::Unlink | Kind::Rmdir | Kind::Mkdir | Kind::Rename | Kind::Stat
    );
    let name = c.file.map(|f| match sh.names.get(&f).filter(|_| named) {
        Some(n) => Cow::Borrowed(n.as_c_str()),
        None if named => Cow::Owned(name_of(f)),
        None => Cow::Borrowed(c""),
    });
    let fd = if kind.on_fd() {
        match sh
            .fds
            .get_cached(fd_cache, process, &sh.parents, c.fd, c.file)
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
                let r = libc::openat(dir, name.as_ptr(), open_flags(c.flags), 0o600);
                if r >= 0 {
                    if c.result >= 0 {
                        if let Some(old) = sh.fds.put(process, c.fd, r, c.file) {
                            // The recording reused a descriptor the replay still held.
                            leftover.push(OwnedFd::from_raw_fd(old));
                        }
                    } else {
                        leftover.push(OwnedFd::from_raw_fd(r));
                    }
                }
                ret(r as i64)
            }
            Kind::Read => ret(libc::read(fd, buf.get(size).cast(), size) as i64),
            Kind::Write => ret(libc::write(fd, buf.get(size).cast(), size) as i64),
            Kind::Pread => ret(libc::pread(fd, buf.get(size).cast(), size, c.offset as i64) as i64),
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
                        if let Some(old) = sh.fds.put(process, c.result as i32, r, c.file) {
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
                ret(libc::sync_file_range(fd, c.offset as i64, c.size as i64, c.flags & 7) as i64)
            }
            Kind::Ftruncate => ret(libc::ftruncate(fd, c.offset as i64) as i64),
            Kind::Fallocate => {
                ret(
                    libc::fallocate(fd, (c.flags & 0x1f) as i32, c.offset as i64, c.size as i64)
                        as i64,
                )
            }
            Kind::Lseek => ret(libc::lseek(fd, c.offset as i64, (c.flags as i32).min(4)) as i64),
            Kind::Close => match sh.fds.take(process, c.fd) {
                Some(real) => ret(libc::close(real) as i64),
                None => return Issued::Skipped("was not made: its descriptor was not open".into()),
            },
            Kind::Unlink => ret(libc::unlinkat(dir, name.as_ptr(), 0) as i64),
            Kind::Rmdir => ret(libc::unlinkat(dir, name.as_ptr(), libc::AT_REMOVEDIR) as i64),
            Kind::Mkdir => ret(libc::mkdirat(dir, name.as_ptr(), 0o700) as i64),
            Kind::Rename => {
                let Some(to) = c
                    .file2
                    .map(|f| sh.names.get(&f).cloned().unwrap_or_else(|| name_of(f)))
                else {
                    return Issued::Skipped("names no destination".into());
                };
                ret(libc::renameat(dir, name.as_ptr(), dir, to.as_ptr()) as i64)
            }
            Kind::Stat => {
                let mut st: libc::stat = std::mem::zeroed();
                ret(libc::fstatat(dir, name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) as i64)
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
                    libc::munmap(p, len);
                    0
                }
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

/// The calls the kernel should count for a replay of `t`, per kind as the eBPF witness
/// names them, with the bytes of reads and writes. Calls of kinds it does not count
/// (sync_file_range, ftruncate, fallocate, fstat, mmap) are not in it.
pub fn expected(t: &Trace) -> BTreeMap<String, CallCount> {
    let mut out: BTreeMap<String, CallCount> = BTreeMap::new();
    let mut add = |name: &str, bytes: Option<u64>| {
        let e = out.entry(name.to_string()).or_insert(CallCount {
            calls: Some(0),
            bytes: bytes.map(|_| 0),
            errors: 0,
        });
        e.calls = e.calls.map(|n| n + 1);
        if let (Some(a), Some(b)) = (e.bytes.as_mut(), bytes) {
            *a += b;
        }
    };
    for c in t.calls.iter().flatten() {
        let bytes = c.kind().is_data().then(|| c.result.max(0) as u64);
        let name = match c.kind() {
            Kind::Open => {
                if c.flags & O_CREAT != 0 {
                    // counted as a create as well as an openat
                    add("create", None);
                }
                "openat"
            }
            Kind::Read => "read",
            Kind::Write => "write",
            Kind::Pread => "pread64",
            Kind::Pwrite => "pwrite64",
            Kind::Readv => "readv",
            Kind::Writev => "writev",
            Kind::Preadv => "preadv",
            Kind::Pwritev => "pwritev",
            Kind::Fsync => "fsync",
            Kind::Fdatasync => "fdatasync",
            Kind::Lseek => "lseek",
            Kind::Close => "close",
            Kind::Unlink => "unlink",
            Kind::Rename => "rename",
            Kind::Mkdir => "mkdir",
            Kind::Rmdir => "rmdir",
            Kind::Stat => "stat",
            _ => continue,
        };
        add(name, bytes);
    }
    out
}
