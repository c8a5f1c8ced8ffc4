//! What every engine shares: how a file is opened (`OpenSpec`, `Fd`), one pass of a test
//! (`Job`), what a thread measured (`ThreadStats`), errors, the timed loop of the
//! synchronous engines, and `RecordEngine`, the engine that psync, sync and vector are made
//! of: each says only how to move one record (`MoveRecord`, given a `RecordIo`), psync and
//! sync through the one loop that finishes short transfers (`whole_record`).

use crate::buffer::{AlignedBuf, BufferPattern};
use crate::clock::now_ns;
use crate::pattern::Pattern;
use crate::rundir::RunDir;
use crate::verify::FileVerify;
use candor_stats::Histogram;
use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

pub trait Engine: Send {
    /// Opens (or creates) the file and makes the buffers.
    fn open(&mut self, spec: &OpenSpec) -> Result<(), EngineError>;
    /// Runs the job, recording every operation's latency.
    fn run(&mut self, job: &Job, stats: &mut ThreadStats) -> Result<(), EngineError>;
    /// Makes written data durable (fsync, msync, fflush + fsync).
    fn flush(&mut self) -> Result<(), EngineError>;
    /// Closes the file; dropping the engine closes it too.
    fn close(&mut self) -> Result<(), EngineError>;
}

/// How a test's file is opened, and what its buffers hold.
#[derive(Clone, Debug)]
pub struct OpenSpec {
    pub path: PathBuf,
    /// Create it: O_CREAT|O_EXCL (never an existing file).
    pub create: bool,
    pub write: bool,
    pub direct: bool,
    pub osync: bool,
    pub file_size: u64,
    pub record_size: usize,
    pub iodepth: u32,
    /// Seeds the buffer contents.
    pub seed: u64,
    /// What the buffers are filled with (`--buffer-pattern`).
    pub pattern: BufferPattern,
    /// The access hint given to the kernel right after open (posix_fadvise).
    pub advice: candor_model::Fadvise,
}

impl OpenSpec {
    /// A buffered open of one of candor's files, for preparation; the runner sets the rest
    /// for a test with struct update syntax.
    pub fn plain(path: &Path, create: bool, write: bool) -> OpenSpec {
        OpenSpec {
            path: path.to_path_buf(),
            create,
            write,
            direct: false,
            osync: false,
            file_size: 0,
            record_size: 0,
            iodepth: 1,
            seed: 0,
            pattern: BufferPattern::default(),
            advice: candor_model::Fadvise::None,
        }
    }

    /// An engine's `n` record buffers, the `k`th filled from this spec's seed + k. Where they
    /// span 64 KiB or more they are cut from one mapping in huge pages
    /// (`AlignedBuf::in_huge_pages`): an O_DIRECT request made from physically contiguous
    /// memory is a few scatter-gather segments instead of one per 4 KiB page, so two
    /// threads' 1 MiB requests fit a virtio queue together. Below that, or where the mapping
    /// cannot be made, they are heap buffers.
    pub fn record_buffers(&self, n: usize) -> Result<Vec<AlignedBuf>, EngineError> {
        let n = n.max(1);
        if self.record_size.saturating_mul(n) >= 64 << 10 {
            if let Some(b) = AlignedBuf::in_huge_pages(n, self.record_size, self.seed, self.pattern)
            {
                return Ok(b);
            }
        }
        (0..n)
            .map(|k| self.buffer(self.record_size, self.seed.wrapping_add(k as u64)))
            .collect()
    }

    /// A buffer of `len` bytes filled with this spec's pattern from `seed`.
    pub fn buffer(&self, len: usize, seed: u64) -> Result<AlignedBuf, EngineError> {
        AlignedBuf::new(len, seed, self.pattern).ok_or_else(|| {
            EngineError::new(
                "allocate",
                &self.path,
                None,
                io::Error::from(io::ErrorKind::OutOfMemory),
            )
        })
    }
}

/// What a test does with its records (`Mixed`: random reads and writes mixed by
/// `--mix-read-pct`).
pub use candor_model::Direction;

/// One pass of a test on one thread's file.
pub struct Job<'a> {
    pub pattern: Pattern,
    pub record_size: usize,
    pub direction: Direction,
    /// For `Direction::Mixed`: percentage of reads.
    pub read_pct: u32,
    pub seed: u64,
    /// Set by the first thread to finish (stonewalling) or by a signal.
    pub stop: &'a AtomicBool,
    /// Stop issuing at this clock value (`--runtime`).
    pub deadline_ns: Option<u64>,
    /// `--verify`: stamp each record before it is written, check each record read.
    pub verify: Option<&'a FileVerify>,
    /// Where this thread's region of the file starts: 0, or a process's segment of a file
    /// shared by several processes (`--shared-file` over MPI).
    pub base: u64,
    /// Time-based with nothing to do between passes (no pages to drop): how to make the
    /// passes after this one, so an engine with a queue goes on into the next pass without
    /// letting its queue drain at the end of each (fio's time-based jobs do not drain at a
    /// wrap either). None: the engine stops at the end of `pattern`.
    pub passes: Option<Passes>,
}

/// The passes of a time-based test: pass `k` (0 is the first) visits the same records in
/// an order of its own. The one place that says how a pass's order is made.
#[derive(Clone, Copy, Debug)]
pub struct Passes {
    pub kind: crate::workload::PatternKind,
    pub records: u64,
    pub stride: u64,
    pub seed: u64,
}

impl Passes {
    pub fn pattern(&self, pass: u64) -> Pattern {
        self.kind.build(
            self.records,
            self.stride,
            self.seed.wrapping_add(pass << 40),
        )
    }
}

impl Job<'_> {
    /// Whether operation `i` writes.
    #[inline(always)]
    pub fn is_write(&self, i: u64) -> bool {
        match self.direction {
            Direction::Read | Direction::Unknown => false,
            Direction::Write => true,
            Direction::Mixed => mix_hash(self.seed ^ i) % 100 >= self.read_pct as u64,
        }
    }

    #[inline(always)]
    pub fn offset(&self, i: u64) -> u64 {
        self.offset_in(&self.pattern, i)
    }

    /// The offset of operation `i` of a pass whose order is `pattern` (see `passes`).
    #[inline(always)]
    pub fn offset_in(&self, pattern: &Pattern, i: u64) -> u64 {
        self.base + pattern.at(i) * self.record_size as u64
    }

    #[inline(always)]
    pub fn should_stop(&self, now: u64) -> bool {
        self.stop.load(Ordering::Relaxed)
            || crate::signals::stop_requested().is_some()
            || self.deadline_ns.is_some_and(|d| now >= d)
    }
}

#[inline(always)]
fn mix_hash(mut z: u64) -> u64 {
    z = (z ^ (z >> 33)).wrapping_mul(0xff51_afd7_ed55_8ccd);
    z = (z ^ (z >> 33)).wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    z ^ (z >> 33)
}

/// What one thread measured in one pass. Merged with `+=` across threads.
///
/// A record test's operations are timed into the histogram of their direction (one
/// chosen per operation, so a mixed test keeps its reads' and its writes' latencies
/// apart); `latency` holds the operations that have no direction (copy and metadata).
#[derive(Debug, Default)]
pub struct ThreadStats {
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub ops: u64,
    pub latency: Histogram,
    pub read_latency: Histogram,
    pub write_latency: Histogram,
    /// About one operation in how many went into `latency` (0 and 1: every one): a copy
    /// with small buffers times a sample of its read+write pairs.
    pub latency_every: u64,
}

impl ThreadStats {
    pub fn bytes(&self) -> u64 {
        self.read_bytes + self.write_bytes
    }

    /// Times one record operation of `len` bytes in its direction's histogram.
    #[inline(always)]
    pub fn record_op(&mut self, write: bool, ns: u64, len: u64) {
        if write {
            self.write_latency.record(ns);
            self.write_bytes += len;
        } else {
            self.read_latency.record(ns);
            self.read_bytes += len;
        }
        self.ops += 1;
    }

    /// Every operation's latency, whatever its direction.
    pub fn all_latency(&self) -> Histogram {
        let mut h = self.latency.clone();
        h.merge(&self.read_latency);
        h.merge(&self.write_latency);
        h
    }
}

impl std::ops::AddAssign<&ThreadStats> for ThreadStats {
    fn add_assign(&mut self, o: &ThreadStats) {
        self.read_bytes += o.read_bytes;
        self.write_bytes += o.write_bytes;
        self.ops += o.ops;
        self.latency.merge(&o.latency);
        self.read_latency.merge(&o.read_latency);
        self.write_latency.merge(&o.write_latency);
        self.latency_every = self.latency_every.max(o.latency_every);
    }
}

/// An I/O error with where it happened.
#[derive(Debug, thiserror::Error)]
#[error("{op} {path}{}: {source}", offset.map(|o| format!(" at offset {o}")).unwrap_or_default())]
pub struct EngineError {
    pub op: &'static str,
    pub path: String,
    pub offset: Option<u64>,
    #[source]
    pub source: io::Error,
}

impl EngineError {
    /// An engine asked to run before it was opened (or after it was closed): an error, so
    /// that a pass can never report no bytes moved without saying why.
    pub fn not_open(path: &Path) -> Self {
        EngineError::new(
            "run",
            path,
            None,
            io::Error::other("the engine was not open (run before open, or after close)"),
        )
    }

    pub fn new(op: &'static str, path: &Path, offset: Option<u64>, source: io::Error) -> Self {
        EngineError {
            op,
            path: path.display().to_string(),
            offset,
            source,
        }
    }

    /// The error of the last system call.
    pub fn last(op: &'static str, path: &Path, offset: Option<u64>) -> Self {
        EngineError::new(op, path, offset, io::Error::last_os_error())
    }

    /// A record that moved fewer bytes than it holds.
    pub fn short(op: &'static str, path: &Path, offset: u64, moved: i64, len: usize) -> Self {
        EngineError::new(
            op,
            path,
            Some(offset),
            io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("moved {moved} of {len} bytes"),
            ),
        )
    }

    pub fn errno(&self) -> Option<i32> {
        self.source.raw_os_error()
    }
}

/// An open file descriptor closed on drop.
#[derive(Debug, Default)]
pub struct Fd {
    fd: Option<i32>,
    pub path: PathBuf,
}

impl Fd {
    pub fn open(spec: &OpenSpec) -> Result<Fd, EngineError> {
        let fd = Fd::open_path(&spec.path, spec.write, spec.create, spec.direct, spec.osync)?;
        let advice = match spec.advice {
            candor_model::Fadvise::None => None,
            candor_model::Fadvise::Random => Some(libc::POSIX_FADV_RANDOM),
            candor_model::Fadvise::Sequential => Some(libc::POSIX_FADV_SEQUENTIAL),
        };
        if let Some(a) = advice {
            // SAFETY: fd is open; offset 0 and length 0 cover the whole file.
            let r = unsafe { libc::posix_fadvise(fd.raw(), 0, 0, a) };
            if r != 0 {
                return Err(EngineError::new(
                    "posix_fadvise",
                    &spec.path,
                    None,
                    io::Error::from_raw_os_error(r),
                ));
            }
        }
        Ok(fd)
    }

    /// Opens `path` as the engines do: never following a link, a created file never one
    /// that existed (O_CREAT|O_EXCL), mode 0600.
    fn open_path(
        path: &Path,
        write: bool,
        create: bool,
        direct: bool,
        osync: bool,
    ) -> Result<Fd, EngineError> {
        let c = CString::new(path.as_os_str().as_bytes()).map_err(|_| {
            EngineError::new(
                "open",
                path,
                None,
                io::Error::from(io::ErrorKind::InvalidInput),
            )
        })?;
        let mut flags = libc::O_CLOEXEC | libc::O_NOFOLLOW;
        flags |= if write { libc::O_RDWR } else { libc::O_RDONLY };
        if create {
            flags |= libc::O_CREAT | libc::O_EXCL;
        }
        if direct {
            flags |= libc::O_DIRECT;
        }
        if osync {
            flags |= libc::O_SYNC;
        }
        // SAFETY: c is a valid C string.
        let fd = unsafe { libc::open(c.as_ptr(), flags, 0o600) };
        if fd < 0 {
            return Err(EngineError::last("open", path, None));
        }
        Ok(Fd {
            fd: Some(fd),
            path: path.to_path_buf(),
        })
    }

    #[inline(always)]
    pub fn raw(&self) -> i32 {
        self.fd.unwrap_or(-1)
    }

    /// The transfer of `buf` to (`write`) or from this file at `off`.
    pub fn record<'a>(&'a self, buf: &'a mut AlignedBuf, off: u64, write: bool) -> RecordIo<'a> {
        RecordIo {
            fd: self.raw(),
            buf,
            off,
            write,
            path: &self.path,
        }
    }

    pub fn fsync(&self) -> Result<(), EngineError> {
        if let Some(fd) = self.fd {
            // SAFETY: fd is open.
            if unsafe { libc::fsync(fd) } != 0 {
                return Err(EngineError::last("fsync", &self.path, None));
            }
        }
        Ok(())
    }

    pub fn close(&mut self) -> Result<(), EngineError> {
        if let Some(fd) = self.fd.take() {
            // SAFETY: fd is open and owned here.
            if unsafe { libc::close(fd) } != 0 {
                return Err(EngineError::last("close", &self.path, None));
            }
        }
        Ok(())
    }

    /// Gives up ownership (the caller closes it some other way, e.g. fclose).
    pub fn take(&mut self) -> Option<i32> {
        self.fd.take()
    }
}

impl Drop for Fd {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

/// Whether the filesystem under `dir` accepts O_DIRECT: a probe file of candor's own,
/// opened as the engines open their files, then removed. The error is the kernel's reason.
pub fn direct_supported(dir: &RunDir) -> Result<(), String> {
    const PROBE: &str = "direct-probe";
    if let Some(d) = dir.device() {
        // A device is probed by opening it as the engines will, read-only: nothing written.
        return Fd::open_path(d.path(), false, false, true, false)
            .map(drop)
            .map_err(|e| e.source.to_string());
    }
    let opened = Fd::open_path(&dir.file(PROBE), true, true, true, false);
    let _ = dir.remove_file(PROBE);
    opened.map(drop).map_err(|e| e.source.to_string())
}

/// The timed loop of every synchronous engine: for each operation, read the clock, do
/// `op(offset, is_write)`, read the clock again (the end of one operation is the start of
/// the next). Monomorphised per engine, so the call is inlined; one relaxed atomic load per
/// operation checks for a stop.
#[inline(always)]
pub fn op_loop<F>(job: &Job, stats: &mut ThreadStats, mut op: F) -> Result<(), EngineError>
where
    F: FnMut(u64, bool) -> Result<(), EngineError>,
{
    let n = job.pattern.len();
    let rs = job.record_size as u64;
    let mut t0 = now_ns();
    for i in 0..n {
        if job.should_stop(t0) {
            break;
        }
        let w = job.is_write(i);
        op(job.offset(i), w)?;
        let t1 = now_ns();
        stats.record_op(w, t1 - t0, rs);
        t0 = t1;
    }
    Ok(())
}

/// `op_loop` for engines that move each record through one buffer: with `--verify`, the
/// record is stamped before it is written and checked after it is read. The loop is
/// compiled once with verification and once without, so the plain loop has no
/// verification branch at all.
#[inline(always)]
pub fn timed_loop<F>(
    job: &Job,
    stats: &mut ThreadStats,
    buf: &mut AlignedBuf,
    mut op: F,
) -> Result<(), EngineError>
where
    F: FnMut(&mut AlignedBuf, u64, bool) -> Result<(), EngineError>,
{
    match job.verify {
        None => op_loop(job, stats, |off, w| op(buf, off, w)),
        Some(v) => op_loop(job, stats, |off, w| {
            if w {
                v.stamp(buf.as_mut_slice(), off);
            }
            op(buf, off, w)?;
            if !w {
                v.check(buf.as_slice(), off);
            }
            Ok(())
        }),
    }
}

/// One record's transfer, as a synchronous engine makes it: `buf` to the file `fd` at
/// `off` (`write`) or from it; `path` names the file in errors.
pub struct RecordIo<'a> {
    pub fd: i32,
    pub buf: &'a mut AlignedBuf,
    pub off: u64,
    pub write: bool,
    pub path: &'a Path,
}

/// Moves a whole record with a positioned call, finishing short transfers.
#[inline(always)]
pub fn full_pio(io: RecordIo) -> Result<(), EngineError> {
    // The system call itself, not the C library's wrapper: in a multi-threaded process
    // the wrapper brackets each call with cancellation bookkeeping (two atomic updates,
    // about 5% of a cached 4 KiB read) for a pthread_cancel that candor never uses.
    let call = if io.write {
        libc::SYS_pwrite64
    } else {
        libc::SYS_pread64
    };
    whole_record(io, ("pwrite", "pread"), |fd, at, len, off| {
        // SAFETY: `at` is valid for `len` bytes (whole_record); fd is open.
        unsafe { libc::syscall(call, fd, at, len, off as i64) as isize }
    })
}

/// Moves a whole record in as many calls as it takes: `part(fd, at, len, off)` moves what
/// it can of the `len` bytes at `at` (the part not moved yet, `off` in the file) and
/// returns what its system call returned; a short transfer goes on where it stopped, a
/// call a signal interrupted is made again, and an error is named by `calls` (the write's
/// and the read's names, see `part_moved`).
#[inline(always)]
pub fn whole_record<F>(
    io: RecordIo,
    calls: (&'static str, &'static str),
    mut part: F,
) -> Result<(), EngineError>
where
    F: FnMut(i32, *mut u8, usize, u64) -> isize,
{
    let len = io.buf.len();
    let base = io.buf.as_mut_ptr();
    let mut done = 0usize;
    while done < len {
        // SAFETY: done < len, so the pointer stays inside the buffer.
        let at = unsafe { base.add(done) };
        let n = part(io.fd, at, len - done, io.off + done as u64);
        if let Some(n) = part_moved(n, io.write, calls, io.path, io.off)? {
            done += n;
        }
    }
    Ok(())
}

/// What one call that moves part of a record returned (`n`, as the system call gives it):
/// the bytes it moved, None when a signal interrupted it (call again), or the error, named
/// by the call (`calls`: the write's and the read's names); a read that finds the file's end
/// before the record's is one.
#[inline(always)]
pub fn part_moved(
    n: isize,
    write: bool,
    calls: (&'static str, &'static str),
    path: &Path,
    off: u64,
) -> Result<Option<usize>, EngineError> {
    if n < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::Interrupted {
            return Ok(None);
        }
        let call = if write { calls.0 } else { calls.1 };
        return Err(EngineError::new(call, path, Some(off), e));
    }
    if n == 0 {
        return Err(EngineError::new(
            calls.1,
            path,
            Some(off),
            io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the file ended before the record did",
            ),
        ));
    }
    Ok(Some(n as usize))
}

/// How a synchronous engine moves one record: the only part in which psync, sync and
/// vector differ.
pub trait MoveRecord: Default + Send {
    /// Once the file is open and the buffer made (vector splits it into pieces here).
    fn opened(&mut self, _spec: &OpenSpec) {}
    /// Before each pass (sync forgets the file position it assumed).
    fn start_pass(&mut self) {}
    /// Moves the whole record.
    fn move_record(&mut self, io: RecordIo) -> Result<(), EngineError>;
}

/// A synchronous engine: one descriptor, one buffer, the timed loop, fsync to flush.
#[derive(Default)]
pub struct RecordEngine<M: MoveRecord> {
    fd: Fd,
    buf: Option<AlignedBuf>,
    mover: M,
}

impl<M: MoveRecord> Engine for RecordEngine<M> {
    fn open(&mut self, spec: &OpenSpec) -> Result<(), EngineError> {
        self.fd = Fd::open(spec)?;
        self.buf = spec.record_buffers(1)?.pop();
        self.mover.opened(spec);
        Ok(())
    }

    fn run(&mut self, job: &Job, stats: &mut ThreadStats) -> Result<(), EngineError> {
        let RecordEngine { fd, buf, mover } = self;
        let Some(buf) = buf.as_mut() else {
            return Err(EngineError::not_open(&fd.path));
        };
        let raw = fd.raw();
        let path = fd.path.as_path();
        mover.start_pass();
        timed_loop(job, stats, buf, |buf, off, write| {
            mover.move_record(RecordIo {
                fd: raw,
                buf,
                off,
                write,
                path,
            })
        })
    }

    fn flush(&mut self) -> Result<(), EngineError> {
        self.fd.fsync()
    }

    fn close(&mut self) -> Result<(), EngineError> {
        self.fd.close()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Record buffers that span 64 KiB or more start on a 2 MiB boundary of one mapping (the
    /// huge-page path), one after another; smaller ones are the heap's. Both fill the k-th
    /// from seed + k.
    #[test]
    fn large_record_buffers_come_from_one_huge_page_mapping() {
        let spec = |record_size| OpenSpec {
            record_size,
            seed: 3,
            ..OpenSpec::plain(Path::new("x"), false, false)
        };
        let one = spec(1 << 20).record_buffers(1).unwrap();
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].as_ptr() as usize % (2 << 20), 0);
        assert_eq!(one[0].len(), 1 << 20);
        let slots = spec(16 << 10).record_buffers(4).unwrap();
        assert_eq!(slots[0].as_ptr() as usize % (2 << 20), 0);
        for (k, b) in slots.iter().enumerate() {
            assert_eq!(
                b.as_ptr() as usize,
                slots[0].as_ptr() as usize + k * (16 << 10)
            );
        }
        // The k-th slot is filled from seed + k, as the heap buffers are.
        let heap = spec(16 << 10).buffer(16 << 10, 4).unwrap();
        assert_eq!(slots[1].as_slice(), heap.as_slice());
        let small = spec(4 << 10).record_buffers(2).unwrap();
        assert_eq!(small.len(), 2);
        assert_eq!(
            small[1].as_slice(),
            spec(4 << 10).buffer(4 << 10, 4).unwrap().as_slice()
        );
    }
}
