//! I/O engines: one file each behind the `Engine` trait, one entry each in `ENGINES`, which
//! is also the one place that says what an engine can do (O_DIRECT, `--verify`, a queue).
//! psync, sync and vector only say how to move one record (`shared::MoveRecord`) and share
//! `shared::RecordEngine` and its timed loop; io_uring keeps a queue of its own. Nothing here
//! allocates per I/O: buffers are made in `open`, before the timed region.

mod mmap;
mod null;
mod psync;
mod shared;
mod stdio;
mod sync;
mod uring;
mod vector;

use std::io;

pub use shared::{
    direct_supported, full_pio, op_loop, timed_loop, Direction, Engine, EngineError, Fd, Job,
    MoveRecord, OpenSpec, Passes, RecordEngine, RecordIo, ThreadStats,
};

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
    /// Whether it can open with O_DIRECT (`--direct` is ignored for the others).
    pub direct: bool,
    /// Whether it stamps and checks each record (`--verify`).
    pub verify: bool,
    /// Whether dropping the file's cached pages between the passes of a time-based test
    /// keeps the engine open (only the pages go, as with fio's invalidate at a wrap). When
    /// false the engine is closed and opened again around the drop. io_uring keeps its
    /// ring, registered buffers and io-wq workers: making them again every pass cost
    /// 1 MiB-record passes (128 records on a 128 MiB file) a ring setup, 32 MiB of new
    /// buffers filled with the pattern and pinned again, and new io-wq workers each.
    pub keeps_open_between_passes: bool,
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
        verify: true,
        keeps_open_between_passes: false,
        make: || Box::new(RecordEngine::<sync::Seek>::default()),
    },
    EngineEntry {
        name: "psync",
        kind: EngineKind::Psync,
        about: "pread/pwrite",
        queues: false,
        direct: true,
        verify: true,
        keeps_open_between_passes: false,
        make: || Box::new(RecordEngine::<psync::Pread>::default()),
    },
    EngineEntry {
        name: "vector",
        kind: EngineKind::Vector,
        about: "preadv/pwritev, each record in up to 16 iovecs",
        queues: false,
        direct: true,
        verify: true,
        keeps_open_between_passes: false,
        make: || Box::new(RecordEngine::<vector::Vectored>::default()),
    },
    EngineEntry {
        name: "stdio",
        kind: EngineKind::Stdio,
        about: "the C library's buffered fread/fwrite",
        queues: false,
        direct: false,
        verify: false,
        keeps_open_between_passes: false,
        make: || Box::new(stdio::StdioEngine::default()),
    },
    EngineEntry {
        name: "mmap",
        kind: EngineKind::Mmap,
        about: "memory-mapped file, msync to flush",
        queues: false,
        direct: false,
        verify: false,
        keeps_open_between_passes: false,
        make: || Box::new(mmap::MmapEngine::default()),
    },
    EngineEntry {
        name: "io_uring",
        kind: EngineKind::IoUring,
        about: "io_uring with registered buffers and file, --iodepth in flight",
        queues: true,
        direct: true,
        verify: true,
        keeps_open_between_passes: true,
        make: || Box::new(uring::UringEngine::default()),
    },
    EngineEntry {
        name: "null",
        kind: EngineKind::Null,
        about: "no I/O at all: measures candor itself",
        queues: false,
        direct: true,
        verify: false,
        keeps_open_between_passes: false,
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

    /// Whether a test on this engine opens its files with O_DIRECT when `--direct` asks.
    pub fn opens_direct(self, requested: bool) -> bool {
        requested && entry(self).direct
    }

    /// Whether this engine can run a test with `--verify`.
    pub fn verifies(self) -> bool {
        entry(self).verify
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

/// The CPU the calling thread is on now (`None` if the kernel cannot say).
pub fn current_cpu() -> Option<u32> {
    // SAFETY: sched_getcpu takes no arguments and only returns a number.
    let c = unsafe { libc::sched_getcpu() };
    u32::try_from(c).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pattern::Pattern;
    use std::sync::atomic::AtomicBool;

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
        let on = std::thread::spawn(move || pin_to_cpu(first).map(|_| current_cpu()))
            .join()
            .unwrap();
        assert_eq!(
            on.unwrap(),
            Some(first as u32),
            "a pinned thread runs there"
        );
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
    fn an_engine_that_is_not_open_says_so_instead_of_moving_nothing() {
        let stop = AtomicBool::new(false);
        let job = Job {
            pattern: Pattern::sequential(16),
            record_size: 4096,
            direction: Direction::Read,
            read_pct: 100,
            seed: 1,
            stop: &stop,
            deadline_ns: None,
            verify: None,
            base: 0,
            passes: None,
        };
        for e in ENGINES.iter().filter(|e| e.kind != EngineKind::Null) {
            let mut engine = (e.make)();
            let mut stats = ThreadStats::default();
            let r = engine.run(&job, &mut stats);
            assert!(r.is_err(), "{}: a run before open returned Ok", e.name);
            assert_eq!(stats.ops, 0);
        }
    }

    #[test]
    fn mix_respects_the_read_share() {
        let stop = AtomicBool::new(false);
        let job = Job {
            pattern: Pattern::sequential(10_000),
            record_size: 4096,
            direction: Direction::Mixed,
            read_pct: 70,
            seed: 3,
            stop: &stop,
            deadline_ns: None,
            verify: None,
            base: 0,
            passes: None,
        };
        let writes = (0..10_000).filter(|&i| job.is_write(i)).count();
        assert!(
            (2700..3300).contains(&writes),
            "{writes} writes of 10000 at 70% reads"
        );
    }
}
