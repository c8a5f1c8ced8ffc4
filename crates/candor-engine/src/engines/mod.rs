//! I/O engines: one file each behind the `Engine` trait, one entry each in `ENGINES`.
//! Synchronous engines only say how to move one record (`SyncOp`) and share one timed loop;
//! io_uring keeps a queue of its own. Nothing here allocates per I/O: buffers are made in
//! `open`, before the timed region.

mod mmap;
mod null;
mod psync;
mod stdio;
mod sync;
mod uring;
mod vector;

use crate::buffer::AlignedBuf;
use crate::clock::now_ns;
use crate::pattern::Pattern;
use crate::rundir::RunDir;
use crate::workload::Direction;
use candor_stats::Histogram;
use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// How a test's file is opened.
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
}

/// One pass of a test on one thread's file.
pub struct Job<'a> {
    pub pattern: Pattern,
    pub record_size: usize,
    pub direction: Direction,
    /// For `Direction::Mix`: percentage of reads.
    pub read_pct: u32,
    pub seed: u64,
    /// Set by the first thread to finish (stonewalling) or by a signal.
    pub stop: &'a AtomicBool,
    /// Stop issuing at this clock value (`--runtime`).
    pub deadline_ns: Option<u64>,
    /// `--verify`: stamp each record before it is written, check each record read. `None`
    /// costs the engines one predictable branch per I/O.
    pub verify: Option<&'a crate::verify::FileVerify>,
    /// Where this thread's region of the file starts: 0, or a process's segment of a file
    /// shared by several processes (`--shared-file` over MPI).
    pub base: u64,
}

impl Job<'_> {
    /// Whether operation `i` writes.
    #[inline(always)]
    pub fn is_write(&self, i: u64) -> bool {
        match self.direction {
            Direction::Read => false,
            Direction::Write => true,
            Direction::Mix => mix_hash(self.seed ^ i) % 100 >= self.read_pct as u64,
        }
    }

    #[inline(always)]
    pub fn offset(&self, i: u64) -> u64 {
        self.base + self.pattern.at(i) * self.record_size as u64
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
#[derive(Debug, Default)]
pub struct ThreadStats {
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub ops: u64,
    pub latency: Histogram,
}

impl ThreadStats {
    pub fn bytes(&self) -> u64 {
        self.read_bytes + self.write_bytes
    }
}

impl std::ops::AddAssign<&ThreadStats> for ThreadStats {
    fn add_assign(&mut self, o: &ThreadStats) {
        self.read_bytes += o.read_bytes;
        self.write_bytes += o.write_bytes;
        self.ops += o.ops;
        self.latency.merge(&o.latency);
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
    pub fn new(
        op: &'static str,
        path: &std::path::Path,
        offset: Option<u64>,
        source: io::Error,
    ) -> Self {
        EngineError {
            op,
            path: path.display().to_string(),
            offset,
            source,
        }
    }

    pub fn errno(&self) -> Option<i32> {
        self.source.raw_os_error()
    }
}

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

/// `--engine` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EngineKind {
    Sync,
    Psync,
    Vector,
    Stdio,
    Mmap,
    IoUring,
    Null,
}

pub struct EngineEntry {
    pub name: &'static str,
    pub kind: EngineKind,
    pub about: &'static str,
    /// Whether it keeps more than one I/O in flight.
    pub queues: bool,
    /// Whether it can open with O_DIRECT.
    pub direct: bool,
    pub make: fn() -> Box<dyn Engine>,
}

/// The engine table: adding an engine is one module and one entry here.
pub const ENGINES: &[EngineEntry] = &[
    EngineEntry {
        name: "sync",
        kind: EngineKind::Sync,
        about: "read/write with lseek",
        queues: false,
        direct: true,
        make: || Box::new(sync::SyncEngine::default()),
    },
    EngineEntry {
        name: "psync",
        kind: EngineKind::Psync,
        about: "pread/pwrite",
        queues: false,
        direct: true,
        make: || Box::new(psync::PsyncEngine::default()),
    },
    EngineEntry {
        name: "vector",
        kind: EngineKind::Vector,
        about: "preadv/pwritev, each record in up to 16 iovecs",
        queues: false,
        direct: true,
        make: || Box::new(vector::VectorEngine::default()),
    },
    EngineEntry {
        name: "stdio",
        kind: EngineKind::Stdio,
        about: "the C library's buffered fread/fwrite",
        queues: false,
        direct: false,
        make: || Box::new(stdio::StdioEngine::default()),
    },
    EngineEntry {
        name: "mmap",
        kind: EngineKind::Mmap,
        about: "memory-mapped file, msync to flush",
        queues: false,
        direct: false,
        make: || Box::new(mmap::MmapEngine::default()),
    },
    EngineEntry {
        name: "io_uring",
        kind: EngineKind::IoUring,
        about: "io_uring with registered buffers and file, --iodepth in flight",
        queues: true,
        direct: true,
        make: || Box::new(uring::UringEngine::default()),
    },
    EngineEntry {
        name: "null",
        kind: EngineKind::Null,
        about: "no I/O at all: measures candor itself",
        queues: false,
        direct: true,
        make: || Box::new(null::NullEngine),
    },
];

pub fn entry(kind: EngineKind) -> &'static EngineEntry {
    ENGINES
        .iter()
        .find(|e| e.kind == kind)
        .unwrap_or(&ENGINES[1])
}

pub fn parse_engine(name: &str) -> Result<EngineKind, String> {
    let n = name.trim().to_ascii_lowercase().replace('-', "_");
    let n = if n == "iouring" || n == "uring" {
        "io_uring".to_string()
    } else {
        n
    };
    ENGINES
        .iter()
        .find(|e| e.name == n)
        .map(|e| e.kind)
        .ok_or_else(|| {
            let names: Vec<&str> = ENGINES.iter().map(|e| e.name).collect();
            format!(
                "'{name}' is not an engine: choose from {}",
                names.join(", ")
            )
        })
}

impl EngineKind {
    pub fn name(self) -> &'static str {
        entry(self).name
    }
}

/// Pins the calling thread to one CPU (`--cpus`): the thread then never migrates, so its
/// caches stay warm and the scheduler's balancing does not add to the figures.
pub fn pin_to_cpu(cpu: usize) -> io::Result<()> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    // SAFETY: cpu_set_t is plain data; CPU_SET is given an index checked above.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The CPUs this process may run on (what `--cpus` may name).
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: cpu_set_t is plain data filled by the kernel.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
}

// ---- shared pieces of the synchronous engines ----

/// An open file descriptor closed on drop.
#[derive(Debug, Default)]
pub struct Fd {
    fd: Option<i32>,
    pub path: PathBuf,
}

impl Fd {
    pub fn open(spec: &OpenSpec) -> Result<Fd, EngineError> {
        Fd::open_path(&spec.path, spec.write, spec.create, spec.direct, spec.osync)
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
            return Err(EngineError::new(
                "open",
                path,
                None,
                io::Error::last_os_error(),
            ));
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

    pub fn fsync(&self) -> Result<(), EngineError> {
        if let Some(fd) = self.fd {
            // SAFETY: fd is open.
            if unsafe { libc::fsync(fd) } != 0 {
                return Err(EngineError::new(
                    "fsync",
                    &self.path,
                    None,
                    io::Error::last_os_error(),
                ));
            }
        }
        Ok(())
    }

    pub fn close(&mut self) -> Result<(), EngineError> {
        if let Some(fd) = self.fd.take() {
            // SAFETY: fd is open and owned here.
            if unsafe { libc::close(fd) } != 0 {
                return Err(EngineError::new(
                    "close",
                    &self.path,
                    None,
                    io::Error::last_os_error(),
                ));
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
    let opened = Fd::open_path(&dir.file(PROBE), true, true, true, false);
    let _ = dir.remove_file(PROBE);
    opened.map(drop).map_err(|e| e.source.to_string())
}

/// The timed loop of every synchronous engine: for each operation, read the clock, move one
/// record with `op(offset, is_write)`, read the clock again. Monomorphised per engine, so
/// the call is inlined; one relaxed atomic load per operation checks for a stop.
#[inline(always)]
pub fn timed_loop<F>(job: &Job, stats: &mut ThreadStats, mut op: F) -> Result<(), EngineError>
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
        stats.latency.record(t1 - t0);
        if w {
            stats.write_bytes += rs;
        } else {
            stats.read_bytes += rs;
        }
        stats.ops += 1;
        t0 = t1;
    }
    Ok(())
}

/// Moves a whole record with a positioned call, finishing short transfers.
#[inline(always)]
pub fn full_pio(
    fd: i32,
    buf: &mut AlignedBuf,
    off: u64,
    write: bool,
    path: &std::path::Path,
) -> Result<(), EngineError> {
    let len = buf.len();
    let mut done = 0usize;
    while done < len {
        // The system call itself, not the C library's wrapper: in a multi-threaded process
        // the wrapper brackets each call with cancellation bookkeeping (two atomic updates,
        // about 5% of a cached 4 KiB read) for a pthread_cancel that candor never uses.
        // SAFETY: buf is valid for len bytes; fd is open.
        let n = unsafe {
            if write {
                libc::syscall(
                    libc::SYS_pwrite64,
                    fd,
                    buf.as_ptr().add(done),
                    len - done,
                    (off + done as u64) as i64,
                )
            } else {
                libc::syscall(
                    libc::SYS_pread64,
                    fd,
                    buf.as_mut_ptr().add(done),
                    len - done,
                    (off + done as u64) as i64,
                )
            }
        } as isize;
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(EngineError::new(
                if write { "pwrite" } else { "pread" },
                path,
                Some(off),
                e,
            ));
        }
        if n == 0 {
            return Err(EngineError::new(
                "pread",
                path,
                Some(off),
                io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the file ended before the record did",
                ),
            ));
        }
        done += n as usize;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pins_to_an_allowed_cpu_and_refuses_others() {
        let cpus = allowed_cpus();
        assert!(!cpus.is_empty(), "the process may run on no CPU at all?");
        let first = cpus[0];
        // In a thread of its own, so the test runner's threads keep their affinity.
        let got = std::thread::spawn(move || pin_to_cpu(first).map(|_| allowed_cpus()))
            .join()
            .unwrap();
        assert_eq!(got.unwrap(), vec![first]);
        assert!(pin_to_cpu(libc::CPU_SETSIZE as usize).is_err());
    }

    #[test]
    fn every_engine_name_parses_back() {
        for e in ENGINES {
            assert_eq!(parse_engine(e.name).unwrap(), e.kind);
        }
        assert_eq!(parse_engine("io-uring").unwrap(), EngineKind::IoUring);
        assert!(parse_engine("aio").unwrap_err().contains("choose from"));
    }

    #[test]
    fn mix_respects_the_read_share() {
        let stop = AtomicBool::new(false);
        let job = Job {
            pattern: Pattern::sequential(10_000),
            record_size: 4096,
            direction: Direction::Mix,
            read_pct: 70,
            seed: 3,
            stop: &stop,
            deadline_ns: None,
            verify: None,
            base: 0,
        };
        let writes = (0..10_000).filter(|&i| job.is_write(i)).count();
        assert!(
            (2700..3300).contains(&writes),
            "{writes} writes of 10000 at 70% reads"
        );
    }
}
