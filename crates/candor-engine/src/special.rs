//! Workloads that are not records on one file: UnixBench-style file copy and metadata
//! operations (create, stat, open, unlink, mkdir, rmdir, readdir over N entries, as iozone's
//! fileop and mdtest do). Each implements `Special`; the runner gives them its repetition's
//! frame (barrier release, witness, coordinator, timing) and they report operations per
//! second with every operation timed. Nothing here knows the runner.

use crate::buffer::{AlignedBuf, BufferPattern};
use crate::clock::now_ns;
use crate::engines::{EngineError, ThreadStats};
use crate::signals;
use candor_model::CallCount;
use std::collections::BTreeMap;
use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// What a special workload's preparation and passes need to know.
pub struct SpecialCtx<'a> {
    /// The run directory: where its trees and copies go.
    pub root: &'a Path,
    /// Entries per thread (`--files`).
    pub entries: u64,
    pub file_size: u64,
    pub record_size: u64,
    /// Include the final fsync in the timed pass (copy).
    pub fsync: bool,
    /// Copy, time-based (`--time-based --runtime`): copy the file over and over for this
    /// long, both files rewound at the end of the source, as UnixBench's fstime does.
    pub copy_for_ns: Option<u64>,
    /// One complete data file per thread, when `needs_data_files` said so.
    pub data_files: &'a [PathBuf],
    /// Metadata: where each thread's sample of counted operations ends.
    pub sample: Option<&'a SampleGate>,
}

/// The system calls a timed pass made, per kind, by the names the witness's kernel count
/// uses ("create" for an open with O_CREAT, beside its "openat"; "getdents64" with the
/// bytes of the records read, its calls being the C library's choice). The witness checks
/// them against what the kernel counted (`candor_model::CallFacts`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Calls(pub BTreeMap<String, CallCount>);

impl Calls {
    /// One more call of `kind` (returning `bytes`, for the calls that move bytes).
    fn one(&mut self, kind: &str, bytes: Option<u64>) {
        self.add_calls(kind, 1, bytes);
    }

    /// `n` more calls of `kind`, which returned `bytes` in all (for the calls that move
    /// bytes).
    fn add_calls(&mut self, kind: &str, n: u64, bytes: Option<u64>) {
        let c = self.0.entry(kind.to_string()).or_insert(CallCount {
            calls: Some(0),
            bytes: bytes.map(|_| 0),
            errors: 0,
        });
        c.calls = c.calls.map(|k| k + n);
        if let (Some(a), Some(b)) = (c.bytes.as_mut(), bytes) {
            *a += b;
        }
    }

    /// Bytes returned by calls of `kind` whose number the runner does not decide.
    fn bytes_only(&mut self, kind: &str, bytes: u64) {
        let c = self.0.entry(kind.to_string()).or_insert(CallCount {
            calls: None,
            bytes: Some(0),
            errors: 0,
        });
        c.bytes = c.bytes.map(|b| b + bytes);
    }

    /// Adds another thread's calls.
    pub fn add(&mut self, o: &Calls) {
        for (k, v) in &o.0 {
            let c = self.0.entry(k.clone()).or_insert(CallCount {
                calls: v.calls.map(|_| 0),
                bytes: v.bytes.map(|_| 0),
                errors: 0,
            });
            c.calls = c.calls.zip(v.calls).map(|(a, b)| a + b);
            c.bytes = c.bytes.zip(v.bytes).map(|(a, b)| a + b);
        }
    }
}

/// The end of the sample of operations whose system calls the kernel counts (metadata
/// tests with the eBPF witness): each thread arrives after its first `ops` operations (or
/// at the end of its pass, if it made fewer) with the calls it made so far, and waits
/// there until the runner has read the kernel's count and let the counting program go.
/// Counting costs every system call of the machine the kernel's slow path while the
/// program is attached, so only this sample pays it.
#[derive(Debug)]
pub struct SampleGate {
    /// Operations each thread makes inside the sample.
    pub ops: u64,
    threads: usize,
    state: std::sync::Mutex<GateState>,
    cv: std::sync::Condvar,
}

#[derive(Debug, Default)]
struct GateState {
    arrived: usize,
    ops: u64,
    calls: Calls,
    open: bool,
}

thread_local! {
    /// Whether this thread has arrived at the gate of its current pass.
    static ARRIVED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

impl SampleGate {
    pub fn new(ops: u64, threads: usize) -> SampleGate {
        SampleGate {
            ops,
            threads,
            state: Default::default(),
            cv: Default::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, GateState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A thread's pass begins: it has not arrived yet.
    pub fn enter(&self) {
        ARRIVED.with(|a| a.set(false));
    }

    /// This thread has made `ops` operations and `calls`: the end of its sample. Waits
    /// until the runner opens the gate. A thread arrives once per pass; later calls return
    /// at once.
    pub fn arrive(&self, ops: u64, calls: &Calls) {
        if ARRIVED.with(|a| a.replace(true)) {
            return;
        }
        let mut g = self.lock();
        g.arrived += 1;
        g.ops += ops;
        g.calls.add(calls);
        self.cv.notify_all();
        while !g.open {
            g = self.cv.wait(g).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// The runner: waits for every thread to arrive; the sample's operations and calls.
    pub fn all_arrived(&self) -> (u64, Calls) {
        let mut g = self.lock();
        while g.arrived < self.threads {
            g = self.cv.wait(g).unwrap_or_else(|e| e.into_inner());
        }
        (g.ops, g.calls.clone())
    }

    /// The runner: lets the threads go on.
    pub fn open(&self) {
        self.lock().open = true;
        self.cv.notify_all();
    }
}

/// One thread's work: a file and its copy, or a directory (twice).
#[derive(Clone, Debug)]
pub struct Work {
    pub from: PathBuf,
    pub to: PathBuf,
}

/// A test that is not records on one file per thread. `TestSpec::special` names the one a
/// test is; adding one is an implementation here and an entry in the catalog.
pub trait Special: Sync + std::fmt::Debug {
    /// Copy is planned per file size and buffer size; the metadata operations once per
    /// thread count.
    fn is_copy(&self) -> bool {
        false
    }
    /// Whether it changes the filesystem (what the witness expects).
    fn writes(&self) -> bool;
    /// Whether each thread needs a complete data file of `file_size` to start from.
    fn needs_data_files(&self) -> bool {
        false
    }
    /// Untimed: brings thread `i`'s tree or file to the state the pass starts from.
    fn prepare(&self, ctx: &SpecialCtx, i: usize) -> Result<Work, EngineError>;
    /// One thread's timed pass, every operation into `stats` and every system call into
    /// `calls`; returns the nanoseconds of it spent flushing.
    fn pass(
        &self,
        work: &Work,
        ctx: &SpecialCtx,
        stats: &mut ThreadStats,
        calls: &mut Calls,
    ) -> Result<u64, EngineError>;
    /// The bytes a repetition reports: copy counts what it read, metadata moves none.
    fn reported_bytes(&self, _stats: &ThreadStats) -> u64 {
        0
    }
    /// Untimed, after the pass.
    fn cleanup(&self, _work: &Work) {}
    /// A metadata operation: its name and the inodes each adds to the filesystem (the
    /// witness reconciles the test by them); None for copy.
    fn meta(&self) -> Option<(&'static str, i64)> {
        None
    }
}

/// UnixBench's file copy: read a file and write a copy of it, `record_size` bytes at a time.
#[derive(Debug)]
pub struct FileCopy;

/// One metadata operation over `--files` entries per thread.
#[derive(Debug)]
pub struct Meta(pub MetaOp);

pub static COPY: FileCopy = FileCopy;
pub static CREATE: Meta = Meta(MetaOp::Create);
pub static STAT: Meta = Meta(MetaOp::Stat);
pub static OPEN: Meta = Meta(MetaOp::Open);
pub static READDIR: Meta = Meta(MetaOp::Readdir);
pub static UNLINK: Meta = Meta(MetaOp::Unlink);
pub static MKDIR: Meta = Meta(MetaOp::Mkdir);
pub static RMDIR: Meta = Meta(MetaOp::Rmdir);

impl Special for FileCopy {
    fn is_copy(&self) -> bool {
        true
    }

    fn writes(&self) -> bool {
        true
    }

    fn needs_data_files(&self) -> bool {
        true
    }

    fn prepare(&self, ctx: &SpecialCtx, i: usize) -> Result<Work, EngineError> {
        let from = ctx.data_files.get(i).cloned().ok_or_else(|| {
            EngineError::new(
                "copy",
                ctx.root,
                None,
                io::Error::other("no data file for this thread"),
            )
        })?;
        Ok(Work {
            from,
            to: ctx.root.join(format!("t{i}.copy")),
        })
    }

    fn pass(
        &self,
        work: &Work,
        ctx: &SpecialCtx,
        stats: &mut ThreadStats,
        calls: &mut Calls,
    ) -> Result<u64, EngineError> {
        copy_pass(
            &work.from,
            &work.to,
            ctx.record_size as usize,
            ctx.file_size,
            (stats, calls),
            ctx.fsync,
            ctx.copy_for_ns,
        )
    }

    fn reported_bytes(&self, stats: &ThreadStats) -> u64 {
        stats.read_bytes
    }

    fn cleanup(&self, work: &Work) {
        let _ = std::fs::remove_file(&work.to);
    }
}

impl Special for Meta {
    fn writes(&self) -> bool {
        matches!(
            self.0,
            MetaOp::Create | MetaOp::Unlink | MetaOp::Mkdir | MetaOp::Rmdir
        )
    }

    fn prepare(&self, ctx: &SpecialCtx, i: usize) -> Result<Work, EngineError> {
        let d = ctx.root.join(format!("meta{i}"));
        ensure_tree(&d, ctx.entries, self.0)?;
        Ok(Work {
            from: d.clone(),
            to: d,
        })
    }

    fn pass(
        &self,
        work: &Work,
        ctx: &SpecialCtx,
        stats: &mut ThreadStats,
        calls: &mut Calls,
    ) -> Result<u64, EngineError> {
        meta_pass(&work.from, ctx.entries, self.0, (stats, calls), ctx.sample).map(|_| 0)
    }

    fn meta(&self) -> Option<(&'static str, i64)> {
        Some(match self.0 {
            MetaOp::Create => ("create", 1),
            MetaOp::Stat => ("stat", 0),
            MetaOp::Open => ("open", 0),
            MetaOp::Readdir => ("readdir", 0),
            MetaOp::Unlink => ("unlink", -1),
            MetaOp::Mkdir => ("mkdir", 1),
            MetaOp::Rmdir => ("rmdir", -1),
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetaOp {
    Create,
    Stat,
    Open,
    Readdir,
    Unlink,
    Mkdir,
    Rmdir,
}

fn cpath(p: &Path) -> Result<CString, EngineError> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| {
        EngineError::new(
            "path",
            p,
            None,
            io::Error::from(io::ErrorKind::InvalidInput),
        )
    })
}

fn check(r: libc::c_int, op: &'static str, p: &Path) -> Result<(), EngineError> {
    if r < 0 {
        Err(EngineError::last(op, p, None))
    } else {
        Ok(())
    }
}

fn entry_name(i: u64) -> String {
    format!("f{i:08}")
}

/// The per-thread directory of a metadata workload, with `n` files (or directories for rmdir)
/// in it when `populated`.
fn ensure_tree(dir: &Path, n: u64, op: MetaOp) -> Result<(), EngineError> {
    match std::fs::create_dir(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(EngineError::new("mkdir", dir, None, e)),
    }
    let want_files = matches!(
        op,
        MetaOp::Stat | MetaOp::Open | MetaOp::Readdir | MetaOp::Unlink
    );
    let want_dirs = matches!(op, MetaOp::Rmdir);
    let want_empty = matches!(op, MetaOp::Create | MetaOp::Mkdir);
    // Bring the tree to the state the operation starts from (untimed).
    for i in 0..n {
        let p = dir.join(entry_name(i));
        let meta = std::fs::symlink_metadata(&p).ok();
        if want_empty {
            match meta {
                Some(m) if m.is_dir() => {
                    std::fs::remove_dir(&p).map_err(|e| EngineError::new("rmdir", &p, None, e))?
                }
                Some(_) => {
                    std::fs::remove_file(&p).map_err(|e| EngineError::new("unlink", &p, None, e))?
                }
                None => {}
            }
        } else if want_files && !meta.as_ref().is_some_and(|m| m.is_file()) {
            if meta.is_some_and(|m| m.is_dir()) {
                std::fs::remove_dir(&p).map_err(|e| EngineError::new("rmdir", &p, None, e))?;
            }
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&p)
                .map_err(|e| EngineError::new("create", &p, None, e))?;
        } else if want_dirs && !meta.as_ref().is_some_and(|m| m.is_dir()) {
            if meta.is_some() {
                std::fs::remove_file(&p).map_err(|e| EngineError::new("unlink", &p, None, e))?;
            }
            std::fs::create_dir(&p).map_err(|e| EngineError::new("mkdir", &p, None, e))?;
        }
    }
    Ok(())
}

/// Runs one metadata pass over `n` entries of `dir`, timing every operation.
fn meta_pass(
    dir: &Path,
    n: u64,
    op: MetaOp,
    (stats, calls): (&mut ThreadStats, &mut Calls),
    sample: Option<&SampleGate>,
) -> Result<(), EngineError> {
    if op == MetaOp::Readdir {
        let d = cpath(dir)?;
        // SAFETY: valid path; the stream is closed below.
        let stream = unsafe { libc::opendir(d.as_ptr()) };
        calls.one("openat", None);
        if stream.is_null() {
            return Err(EngineError::last("opendir", dir, None));
        }
        let mut t0 = now_ns();
        loop {
            // SAFETY: stream is open.
            let ent = unsafe { libc::readdir64(stream) };
            if ent.is_null() {
                break;
            }
            // The kernel's record of this entry, as getdents64 returned it (glibc hands
            // the records over as they are).
            // SAFETY: ent points at the entry readdir64 returned.
            calls.bytes_only("getdents64", u64::from(unsafe { (*ent).d_reclen }));
            let t1 = now_ns();
            stats.latency.record(t1 - t0);
            stats.ops += 1;
            t0 = t1;
        }
        // SAFETY: closing the stream opened above.
        unsafe { libc::closedir(stream) };
        calls.one("close", None);
        return Ok(());
    }
    let mut t0 = now_ns();
    for i in 0..n {
        if signals::stop_requested().is_some() {
            break;
        }
        let p = dir.join(entry_name(i));
        let c = cpath(&p)?;
        // SAFETY: c is a valid path for each call.
        unsafe {
            match op {
                MetaOp::Create => {
                    let fd = libc::open(
                        c.as_ptr(),
                        libc::O_CREAT
                            | libc::O_EXCL
                            | libc::O_WRONLY
                            | libc::O_CLOEXEC
                            | libc::O_NOFOLLOW,
                        0o600,
                    );
                    calls.one("openat", None);
                    calls.one("create", None);
                    check(fd, "create", &p)?;
                    libc::close(fd);
                    calls.one("close", None);
                }
                MetaOp::Stat => {
                    let mut st: libc::stat64 = std::mem::zeroed();
                    calls.one("stat", None);
                    check(libc::stat64(c.as_ptr(), &mut st), "stat", &p)?;
                }
                MetaOp::Open => {
                    let fd = libc::open(
                        c.as_ptr(),
                        libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NOFOLLOW,
                    );
                    calls.one("openat", None);
                    check(fd, "open", &p)?;
                    libc::close(fd);
                    calls.one("close", None);
                }
                MetaOp::Unlink => {
                    calls.one("unlink", None);
                    check(libc::unlink(c.as_ptr()), "unlink", &p)?
                }
                MetaOp::Mkdir => {
                    calls.one("mkdir", None);
                    check(libc::mkdir(c.as_ptr(), 0o700), "mkdir", &p)?
                }
                MetaOp::Rmdir => {
                    calls.one("rmdir", None);
                    check(libc::rmdir(c.as_ptr()), "rmdir", &p)?
                }
                MetaOp::Readdir => {}
            }
        }
        let t1 = now_ns();
        stats.latency.record(t1 - t0);
        stats.ops += 1;
        t0 = t1;
        if let Some(g) = sample.filter(|g| g.ops == stats.ops) {
            // The wait at the gate is no operation's latency; it is in the pass's time.
            g.arrive(stats.ops, calls);
            t0 = now_ns();
        }
    }
    Ok(())
}

/// Copies with buffers smaller than this time about one read+write pair in
/// `COPY_SAMPLE_EVERY`; larger buffers time every pair. Two clock readings and a histogram
/// entry cost about 60 ns, a sixth of a 1 KiB pair copied in the page cache (0.35 µs), and
/// under 1% of a 64 KiB one.
pub const COPY_SAMPLE_BELOW: usize = 64 << 10;
/// The mean gap between timed pairs of a sampled copy. Each gap is drawn uniformly from 1
/// to 2 x this - 1, so the timed pairs fall anywhere in the file, not always at the same
/// offset within a page.
pub const COPY_SAMPLE_EVERY: u64 = 16;

/// One in how many read+write pairs a copy with `chunk`-byte buffers times (1: every one).
pub fn copy_timed_every(chunk: usize) -> u64 {
    if chunk < COPY_SAMPLE_BELOW {
        COPY_SAMPLE_EVERY
    } else {
        1
    }
}

/// Copies `src` to a new `dst` with `chunk`-byte reads and writes, timing the pairs
/// `copy_timed_every` says (in `stats.latency`; `stats.latency_every` says which). With
/// `for_ns`, copies for that long instead: at the end of `src` both files go back to their
/// start and the copy goes on (fstime's copy loop), `size` bytes per round.
///
/// The calling thread gets a descriptor table of its own first (`unshare(CLONE_FILES)`),
/// as a single-threaded copier such as fstime has: the kernel then looks each read's and
/// write's descriptor up without taking a reference and the file position without its
/// lock, which a table shared by the process's threads costs every call. The thread's
/// table holds the process's descriptors of that instant until the thread ends.
fn copy_pass(
    src: &Path,
    dst: &Path,
    chunk: usize,
    size: u64,
    (stats, calls): (&mut ThreadStats, &mut Calls),
    fsync: bool,
    for_ns: Option<u64>,
) -> Result<u64, EngineError> {
    // SAFETY: unshare with CLONE_FILES only changes this thread's descriptor table. A
    // failure (a seccomp filter, no memory) leaves the shared table: slower, still right.
    unsafe { libc::unshare(libc::CLONE_FILES) };
    let _ = std::fs::remove_file(dst);
    calls.one("unlink", None);
    let s = cpath(src)?;
    let d = cpath(dst)?;
    let mut buf = AlignedBuf::new(chunk, 1, BufferPattern::Random).ok_or_else(|| {
        EngineError::new(
            "allocate",
            src,
            None,
            io::Error::from(io::ErrorKind::OutOfMemory),
        )
    })?;
    // SAFETY: valid paths; descriptors closed at the end.
    let (fi, fo) = unsafe {
        (
            libc::open(
                s.as_ptr(),
                libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NOFOLLOW,
            ),
            libc::open(
                d.as_ptr(),
                libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_CLOEXEC | libc::O_NOFOLLOW,
                0o600,
            ),
        )
    };
    calls.one("openat", None);
    calls.one("openat", None);
    calls.one("create", None);
    let close = |fd: i32, calls: &mut Calls| {
        if fd >= 0 {
            // SAFETY: closing our own descriptor.
            unsafe { libc::close(fd) };
            calls.one("close", None);
        }
    };
    if fi < 0 || fo < 0 {
        let e = io::Error::last_os_error();
        close(fi, calls);
        close(fo, calls);
        return Err(EngineError::new(
            "open",
            if fi < 0 { src } else { dst },
            None,
            e,
        ));
    }
    let every = copy_timed_every(chunk);
    // The loop's system calls, counted here and handed to `calls` once at the end.
    let mut n_read = [0u64; 2];
    let mut n_write = [0u64; 2];
    let mut n_lseek = 0u64;
    let mut ops = 0u64;
    let mut moved = 0u64;
    let mut round = 0u64;
    let mut flush_ns = 0;
    let mut rng = now_ns() | 1;
    // Pairs to go before the next timed one (0: this one).
    let mut skip = 0u64;
    let deadline = for_ns.map(|d| now_ns().saturating_add(d));
    let result = (|| -> Result<(), EngineError> {
        loop {
            // A timed pair reads the clock, and checks the deadline and signals with it.
            let t0 = if skip == 0 {
                if signals::stop_requested().is_some() {
                    break;
                }
                let t = now_ns();
                if deadline.is_some_and(|d| t >= d) {
                    break;
                }
                Some(t)
            } else {
                None
            };
            if deadline.is_some() && round >= size {
                // SAFETY: both descriptors are open.
                unsafe {
                    libc::lseek(fi, 0, libc::SEEK_SET);
                    libc::lseek(fo, 0, libc::SEEK_SET);
                }
                n_lseek += 2;
                round = 0;
            } else if deadline.is_none() && moved >= size {
                break;
            }
            // SAFETY: buf holds chunk bytes.
            let n = unsafe { libc::read(fi, buf.as_mut_ptr() as *mut _, chunk) };
            n_read[0] += 1;
            if n < 0 {
                return Err(EngineError::last("read", src, Some(moved)));
            }
            n_read[1] += n as u64;
            if n == 0 {
                if deadline.is_some() && round > 0 {
                    round = size;
                    continue;
                }
                break;
            }
            let mut done = 0usize;
            while done < n as usize {
                // SAFETY: buf holds n bytes.
                let w = unsafe {
                    libc::write(fo, buf.as_ptr().add(done) as *const _, n as usize - done)
                };
                n_write[0] += 1;
                if w < 0 {
                    return Err(EngineError::last("write", dst, Some(moved)));
                }
                n_write[1] += w as u64;
                done += w as usize;
            }
            moved += n as u64;
            round += n as u64;
            ops += 1;
            match t0 {
                Some(t0) => {
                    stats.latency.record(now_ns().saturating_sub(t0));
                    if every > 1 {
                        // xorshift64: the next gap, uniform in 0..2 x every - 1 pairs skipped.
                        rng ^= rng << 13;
                        rng ^= rng >> 7;
                        rng ^= rng << 17;
                        skip = rng % (2 * every - 1);
                    }
                }
                None => skip -= 1,
            }
        }
        if fsync {
            let f0 = now_ns();
            // SAFETY: fo is open.
            calls.one("fsync", None);
            if unsafe { libc::fsync(fo) } != 0 {
                return Err(EngineError::last("fsync", dst, None));
            }
            flush_ns = now_ns() - f0;
        }
        Ok(())
    })();
    for (kind, [n, bytes]) in [("read", n_read), ("write", n_write)] {
        if n > 0 {
            calls.add_calls(kind, n, Some(bytes));
        }
    }
    if n_lseek > 0 {
        calls.add_calls("lseek", n_lseek, None);
    }
    close(fi, calls);
    close(fo, calls);
    result?;
    stats.ops += ops;
    stats.latency_every = stats.latency_every.max(every);
    stats.read_bytes += moved;
    stats.write_bytes += moved;
    Ok(flush_ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_passes_count_every_entry() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("m");
        let mut st = ThreadStats::default();
        ensure_tree(&d, 50, MetaOp::Create).unwrap();
        let mut calls = Calls::default();
        meta_pass(&d, 50, MetaOp::Create, (&mut st, &mut calls), None).unwrap();
        let n = |c: &Calls, k: &str| c.0.get(k).and_then(|c| c.calls);
        assert_eq!(
            (n(&calls, "create"), n(&calls, "openat"), n(&calls, "close")),
            (Some(50), Some(50), Some(50))
        );
        assert_eq!(st.ops, 50);
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 50);
        for op in [MetaOp::Stat, MetaOp::Open] {
            let mut st = ThreadStats::default();
            ensure_tree(&d, 50, op).unwrap();
            meta_pass(&d, 50, op, (&mut st, &mut Calls::default()), None).unwrap();
            assert_eq!(st.ops, 50, "{op:?}");
        }
        let mut st = ThreadStats::default();
        let mut calls = Calls::default();
        meta_pass(&d, 50, MetaOp::Readdir, (&mut st, &mut calls), None).unwrap();
        assert_eq!(st.ops, 52, "50 entries plus . and ..");
        // Records of 19 bytes and the name with its NUL, 8-byte aligned: 32 for f00000000,
        // 24 for . and ..
        assert_eq!(
            calls.0["getdents64"],
            CallCount {
                calls: None,
                bytes: Some(50 * 32 + 2 * 24),
                errors: 0
            }
        );
        let mut st = ThreadStats::default();
        let mut calls = Calls::default();
        meta_pass(&d, 50, MetaOp::Unlink, (&mut st, &mut calls), None).unwrap();
        assert_eq!(n(&calls, "unlink"), Some(50));
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 0);
        ensure_tree(&d, 20, MetaOp::Mkdir).unwrap();
        let mut st = ThreadStats::default();
        meta_pass(
            &d,
            20,
            MetaOp::Mkdir,
            (&mut st, &mut Calls::default()),
            None,
        )
        .unwrap();
        assert!(d.join(entry_name(19)).is_dir());
        let mut st = ThreadStats::default();
        ensure_tree(&d, 20, MetaOp::Rmdir).unwrap();
        meta_pass(
            &d,
            20,
            MetaOp::Rmdir,
            (&mut st, &mut Calls::default()),
            None,
        )
        .unwrap();
        assert_eq!(st.ops, 20);
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 0);
    }

    #[test]
    fn copy_makes_an_identical_file() {
        let t = tempfile::tempdir().unwrap();
        let a = t.path().join("a");
        let b = t.path().join("b");
        let data: Vec<u8> = (0..100_000u32).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(&a, &data).unwrap();
        let mut st = ThreadStats::default();
        let mut calls = Calls::default();
        copy_pass(
            &a,
            &b,
            1024,
            data.len() as u64,
            (&mut st, &mut calls),
            true,
            None,
        )
        .unwrap();
        assert_eq!(std::fs::read(&b).unwrap(), data);
        assert_eq!(st.ops, 98, "ceil(100000 / 1024) chunks");
        let rw = CallCount {
            calls: Some(98),
            bytes: Some(100_000),
            errors: 0,
        };
        assert_eq!((calls.0["read"], calls.0["write"]), (rw, rw));
        assert_eq!(calls.0["fsync"].calls, Some(1));
        assert_eq!(st.read_bytes, 100_000);
    }

    #[test]
    fn time_based_copy_starts_over_like_fstime() {
        let t = tempfile::tempdir().unwrap();
        let a = t.path().join("a");
        let b = t.path().join("b");
        let data: Vec<u8> = (0..256 * 500u32).map(|i| (i * 13 % 251) as u8).collect();
        std::fs::write(&a, &data).unwrap();
        let mut st = ThreadStats::default();
        let t0 = now_ns();
        copy_pass(
            &a,
            &b,
            256,
            data.len() as u64,
            (&mut st, &mut Calls::default()),
            false,
            Some(200_000_000),
        )
        .unwrap();
        let took = now_ns() - t0;
        assert!(took >= 200_000_000, "ran {took} ns");
        // Several rounds over the same 125 KiB, each chunk a 256-byte read and write, and
        // the copy is the source (rewound, not appended).
        assert!(st.read_bytes > 3 * data.len() as u64, "{}", st.read_bytes);
        assert_eq!(st.read_bytes % 256, 0);
        assert_eq!(st.ops, st.read_bytes / 256);
        assert_eq!(std::fs::read(&b).unwrap(), data);
    }

    #[test]
    fn small_buffers_time_a_random_sample_of_pairs_and_large_ones_every_pair() {
        let t = tempfile::tempdir().unwrap();
        let a = t.path().join("a");
        let b = t.path().join("b");
        let data: Vec<u8> = (0..1024 * 512u32).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(&a, &data).unwrap();
        let mut st = ThreadStats::default();
        let mut calls = Calls::default();
        copy_pass(
            &a,
            &b,
            256,
            data.len() as u64,
            (&mut st, &mut calls),
            false,
            Some(300_000_000),
        )
        .unwrap();
        assert_eq!(st.latency_every, 16);
        // About one pair in 16 timed, at random: a binomial count far from its bounds.
        let timed = st.latency.count();
        assert!(
            timed * 20 > st.ops && timed * 12 < st.ops,
            "{timed} of {} pairs timed",
            st.ops
        );
        // Every call is still counted, timed or not: a read and a write per pair, and
        // both files rewound at the end of each round.
        let n = |k: &str| calls.0.get(k).and_then(|c| c.calls);
        assert_eq!((n("read"), n("write")), (Some(st.ops), Some(st.ops)));
        assert_eq!(calls.0["read"].bytes, Some(st.ops * 256));
        assert_eq!(calls.0["write"].bytes, Some(st.ops * 256));
        let rounds = st.ops / 2048;
        assert!(rounds >= 2, "{rounds}");
        let lseeks = n("lseek").unwrap();
        assert!(
            lseeks == 2 * rounds || lseeks == 2 * (rounds - 1),
            "{lseeks}"
        );
        assert_eq!(std::fs::read(&b).unwrap(), data);

        // 64 KiB buffers time every pair.
        let mut st = ThreadStats::default();
        let mut calls = Calls::default();
        std::fs::remove_file(&b).unwrap();
        copy_pass(
            &a,
            &b,
            64 << 10,
            data.len() as u64,
            (&mut st, &mut calls),
            false,
            None,
        )
        .unwrap();
        assert_eq!((st.ops, st.latency.count(), st.latency_every), (8, 8, 1));
        assert_eq!(calls.0["read"].calls, Some(8));
        assert!(!calls.0.contains_key("lseek"));
        assert_eq!(std::fs::read(&b).unwrap(), data);
    }
}
