//! candor-bpf owns candor's eBPF tracer: BPF programs on kernel tracepoints (see
//! `bpf/candor.bpf.c`) that follow a set of processes (a seed pid, its threads and
//! children) and aggregate, in the kernel, what that set did:
//!
//! - syscalls (read/write families, lseek, fsync, fdatasync, openat, close,
//!   io_uring_enter, user page faults): count, bytes, time, latency histogram, per file;
//! - block requests per device, direction and owner (the set, writeback done for inodes
//!   the set dirtied, or foreign): completions, bytes, sizes, device latency, queue time,
//!   in-flight depth;
//! - page-cache inserts for the set or its files (cache misses);
//! - one "phase" per open..close of a file, for `candor audit`.
//!
//! [`Tracer::load`] returns [`Unavailable`] with a plain reason when the host or the build
//! cannot trace; [`probe`] says what the host supports without loading anything.
//! Decoding ([`Snapshot`], [`Phase`]) and the conversion to the result model ([`model`])
//! are pure and tested without root.

pub mod hist;
pub mod model;
pub mod phase;
pub mod probe;
pub mod raw;
pub mod record;
pub mod snapshot;

#[cfg_attr(candor_bpf_disabled, path = "disabled.rs")]
#[cfg_attr(not(candor_bpf_disabled), path = "enabled.rs")]
mod imp;

pub use hist::{Hist, Scale};
pub use phase::Phase;
pub use probe::{probe, HostSupport};
pub use snapshot::{
    BlockCounters, BlockKey, DevId, Direction, FileCounters, FileId, Owner, Snapshot,
    SyscallCounters,
};

/// Why the BPF tracer cannot run here, in words a person can act on.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Unavailable {
    #[error("this candor was built without its BPF programs ({0})")]
    NotBuilt(String),
    #[error("eBPF needs root (or CAP_BPF and CAP_PERFMON); run candor as root to use it")]
    NotPermitted,
    #[error(
        "the kernel has no BTF ({} is missing), which the BPF programs need",
        candor_procfs::paths::BTF_VMLINUX
    )]
    NoBtf,
    #[error("the kernel has no tracepoint {0}")]
    MissingTracepoint(String),
    #[error("the tracepoint {0} has a record layout the BPF programs do not expect: {1}")]
    Layout(String, String),
    #[error("the kernel refused candor's BPF programs: {0}")]
    Load(String),
    #[error("could not attach to tracepoint {0}: {1}")]
    Attach(String, String),
}

/// A failure while reading an attached tracer's maps.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("reading the BPF maps failed: {0}")]
pub struct TraceError(pub String);

/// What to trace.
#[derive(Clone, Debug)]
pub struct TraceOptions {
    /// Processes to follow from the start (their threads and later children are added
    /// by the kernel as they appear).
    pub seed_pids: Vec<u32>,
    /// Keep per-file phases and per-file totals (what `candor audit` needs). Off, the
    /// tracer keeps only per-syscall, block and cache figures and costs less per call.
    pub phases: bool,
    /// Threads of the tracked set with this name (at most 15 bytes) are left out of the
    /// syscall figures: a monitor's own sampling thread inside the traced process (the
    /// witness names its thread "candor-witness"). Their block I/O still counts.
    pub quiet_thread_name: Option<String>,
    /// Trace every system call of the tracked set (raw_syscalls:sys_enter/sys_exit: count,
    /// bytes, time and latency per call). Off, those two programs are not attached: no
    /// syscall figures, and no cost per call. Enabling any syscall tracepoint sends every
    /// system call on the machine through the kernel's slower syscall path; with both
    /// programs this cost about 0.2 µs per call here (docs/performance.md).
    pub syscalls: bool,
    /// With `syscalls`, attach programs that return at once instead of the real ones: no
    /// figures, only the kernel's own cost of running a program on every system call (what
    /// `examples/overhead.rs` measures as the floor of any syscall tracing).
    pub empty_syscall_programs: bool,
    /// Record every file-I/O call of the tracked set, except this process's (`candor audit
    /// --record`): the syscall programs hand each one to user space, taken with
    /// [`Tracer::take_recording`]. Needs `syscalls`.
    pub record_except: Option<u32>,
    /// Leave the page-insertion program (`cache_misses`) unattached until a caller asks
    /// for it ([`Tracer::count_cache_inserts`]): a test that only writes adds a page to
    /// the cache with nearly every write, and needs no count of them.
    pub cache_inserts_on_demand: bool,
    /// Let callers suspend the dirtying program (which marks the inodes the set dirties,
    /// so that their writeback is the set's): attached from the start, detached while a
    /// caller that marked the files it will write itself ([`Tracer::mark_written`]) suspends
    /// it ([`Tracer::suspend_dirtying`]) and no caller needs it ([`Tracer::count_dirtying`]).
    /// It runs with the page's mapping locked and interrupts off on every page a write
    /// dirties.
    pub dirtying_suspendable: bool,
}

impl Default for TraceOptions {
    fn default() -> Self {
        TraceOptions {
            seed_pids: Vec::new(),
            phases: true,
            quiet_thread_name: None,
            syscalls: true,
            empty_syscall_programs: false,
            record_except: None,
            cache_inserts_on_demand: false,
            dirtying_suspendable: false,
        }
    }
}

impl TraceOptions {
    /// Follows the calling process.
    pub fn this_process() -> TraceOptions {
        TraceOptions {
            seed_pids: vec![std::process::id()],
            ..Default::default()
        }
    }

    /// Without the syscall programs (see [`TraceOptions::syscalls`]).
    pub fn without_syscalls(mut self) -> TraceOptions {
        self.syscalls = false;
        self
    }

    /// Without per-file phases.
    pub fn without_phases(mut self) -> TraceOptions {
        self.phases = false;
        self
    }
}

/// An attached tracer. Dropping it detaches every program.
pub struct Tracer {
    inner: imp::Loaded,
    /// Paths seen at openat, to name files reached through another descriptor (dup2).
    paths: std::collections::HashMap<(DevId, u64), String>,
    /// Loaded with per-file phases (`TraceOptions::phases`).
    phases: bool,
}

impl Tracer {
    /// Loads and attaches the programs. Never panics; every reason it cannot trace comes
    /// back as [`Unavailable`].
    pub fn load(opts: &TraceOptions) -> Result<Tracer, Unavailable> {
        Ok(Tracer {
            inner: imp::Loaded::load(opts)?,
            paths: Default::default(),
            phases: opts.phases,
        })
    }

    /// Whether every system call is traced (see [`TraceOptions::syscalls`]).
    pub fn traces_syscalls(&self) -> bool {
        self.inner.traces_syscalls()
    }

    /// Whether system calls are counted right now: traced, or counted on demand
    /// ([`Tracer::count_syscalls`]).
    pub fn counts_syscalls(&self) -> bool {
        self.inner.counts_syscalls()
    }

    /// Counts the tracked set's system calls per kind, for as long as a caller needs them
    /// (a test whose operations are system calls), in a tracer loaded without its syscall
    /// programs: one program on raw_syscalls:sys_exit that keeps each kind's count, errors
    /// and bytes returned, and no time or latency (half the kernel's dispatch and no clock
    /// reads, docs/bpf.md). `true` asks for it, `false` lets it go; it is detached when
    /// every caller has let go, so other tests pay nothing per call. A tracer loaded with
    /// [`TraceOptions::syscalls`] counts them throughout and this does nothing.
    pub fn count_syscalls(&mut self, on: bool) -> Result<(), TraceError> {
        self.inner.count_syscalls(on)
    }

    /// Counts pages added to the page cache (`cache_misses`) for as long as a caller needs
    /// them, in a tracer loaded with [`TraceOptions::cache_inserts_on_demand`]: `true` asks,
    /// `false` lets go; detached when every caller has let go. Otherwise they are counted
    /// throughout and this does nothing.
    pub fn count_cache_inserts(&mut self, on: bool) -> Result<(), TraceError> {
        self.inner.count_cache_inserts(on)
    }

    /// Whether pages added to the page cache are counted right now.
    pub fn counts_cache_inserts(&self) -> bool {
        self.inner.counts_cache_inserts()
    }

    /// Keeps the dirtying program attached for as long as a caller needs it, whoever
    /// suspends it, in a tracer loaded with [`TraceOptions::dirtying_suspendable`]
    /// (`true` asks, `false` lets go); otherwise it is attached throughout and this does
    /// nothing.
    pub fn count_dirtying(&mut self, on: bool) -> Result<(), TraceError> {
        self.inner.count_dirtying(on)
    }

    /// Detaches the dirtying program while a caller suspends it and no caller needs it,
    /// in a tracer loaded with [`TraceOptions::dirtying_suspendable`] (`true` suspends,
    /// `false` lets go); otherwise this does nothing.
    pub fn suspend_dirtying(&mut self, on: bool) -> Result<(), TraceError> {
        self.inner.suspend_dirtying(on)
    }

    /// Whether the inodes the set dirties are marked right now.
    pub fn counts_dirtying(&self) -> bool {
        self.inner.counts_dirtying()
    }

    /// Marks `path`'s inode as the set's, as the dirtying program would once the set
    /// dirtied it: its writeback is the set's from now on. `Ok(false)` when its key cannot
    /// be told from user space (the file is missing, or its filesystem is not one whose
    /// inodes are keyed as its mount says: ext2/3/4, xfs, btrfs, f2fs); the caller then
    /// needs the dirtying program.
    pub fn mark_written(&mut self, path: &std::path::Path) -> Result<bool, TraceError> {
        self.inner.mark_written(path)
    }

    /// The recorded calls of a tracer loaded with [`TraceOptions::record_except`], handed to
    /// `sink` by a thread of their own until the returned recording is stopped (after the
    /// tracer is dropped, the last ones too). Once only.
    pub fn take_recording(
        &mut self,
        sink: Box<dyn FnMut(record::RawCall) + Send>,
    ) -> Result<record::Recording, TraceError> {
        self.inner.take_recording(sink)
    }

    /// Adds a process (and, from now on, its children) to the tracked set.
    pub fn add_pid(&mut self, pid: u32) -> Result<(), TraceError> {
        self.inner.add_pid(pid)
    }

    /// Adds another process of the same job (another MPI rank on this machine), and from
    /// now on its children: its block requests, and the writeback of inodes it dirtied,
    /// are [`Owner::Job`], neither the set's own nor foreign. Its system calls and page
    /// cache are not counted. A process already in the set stays in it.
    pub fn add_job_pid(&mut self, pid: u32) -> Result<(), TraceError> {
        self.inner.add_job_pid(pid)
    }

    /// Leaves one thread of a tracked process out of the syscall figures from now on.
    pub fn quiet_thread(&mut self, tid: u32) -> Result<(), TraceError> {
        self.inner.quiet_thread(tid)
    }

    /// Stops following a process (its children already added stay).
    pub fn remove_pid(&mut self, pid: u32) -> Result<(), TraceError> {
        self.inner.remove_pid(pid)
    }

    /// The tgids followed right now.
    pub fn tracked(&self) -> Result<Vec<u32>, TraceError> {
        self.inner.tracked()
    }

    /// Optional tracepoints that could not be attached, with why (the figures they feed
    /// are then missing, not wrong).
    pub fn skipped(&self) -> Vec<(String, String)> {
        self.inner.skipped()
    }

    /// Cumulative counters since load. Cheap (a few dozen map reads); take one before and
    /// one after a test and use [`Snapshot::delta`].
    pub fn snapshot(&self) -> Result<Snapshot, TraceError> {
        Ok(Snapshot::decode(&self.inner.read()?))
    }

    /// A snapshot without the per-file totals and the open phases (`files` and the open
    /// files' figures empty): what a tracer that takes its files from the phases (`candor
    /// audit`) needs each tick, at a cost that does not grow with the files touched.
    pub fn snapshot_without_files(&self) -> Result<Snapshot, TraceError> {
        Ok(Snapshot::decode(&self.inner.read_with(false, true)?))
    }

    /// `snapshot_without_files` that keeps `events_skipped` as the last reading that asked
    /// for it left it (asking costs a system call per program): for the readings between a
    /// first and a last one that ask.
    pub fn tick_snapshot(&self) -> Result<Snapshot, TraceError> {
        Ok(Snapshot::decode(&self.inner.read_with(false, false)?))
    }

    /// Block requests, per device, that the programs saw issued and never saw complete:
    /// completions the kernel did not hand to the program. (On 6.18, under CPU
    /// contention, the completion program's own run count was now and then 127 for 128
    /// completions the tracepoint reported, with no recursion miss counted; this is how
    /// candor notices.) Compares the programs' in-flight count with the kernel's
    /// (the device's sysfs `inflight`); both leave flushes out, and devices with iostats off
    /// (whose requests the kernel does not count) are skipped. A request caught between
    /// the two readings, or completed by the device but not yet by the kernel's soft
    /// interrupt, looks lost for a moment, so an excess is read again up to five times
    /// over 77 ms and the smallest one counts. Only devices with an excess are returned.
    pub fn unseen_completions(&self) -> Result<Vec<(DevId, u64)>, TraceError> {
        let mut least: std::collections::BTreeMap<DevId, u64> = Default::default();
        // One reading when nothing is amiss; otherwise a few more, further apart, so a
        // request in flight outside the kernel's count (a flush) has time to finish.
        for (i, wait_ms) in [0u64, 2, 5, 10, 20, 40].into_iter().enumerate() {
            std::thread::sleep(std::time::Duration::from_millis(wait_ms));
            let mut now: std::collections::BTreeMap<DevId, u64> = Default::default();
            for (dev, n) in self.inner.inflight()? {
                let dev = DevId::from_kernel(dev);
                let excess = kernel_inflight(dev).map_or(0, |k| n.saturating_sub(k));
                now.insert(dev, excess);
            }
            if i == 0 {
                least = now;
            } else {
                for (dev, e) in least.iter_mut() {
                    *e = (*e).min(now.get(dev).copied().unwrap_or(0));
                }
            }
            if least.values().all(|e| *e == 0) {
                break;
            }
        }
        Ok(least.into_iter().filter(|(_, n)| *n > 0).collect())
    }

    /// Phases finished since the last call: files closed, and files still open when their
    /// process ended. In open order.
    pub fn drain_phases(&mut self) -> Result<Vec<Phase>, TraceError> {
        let mut phases: Vec<Phase> = self.inner.drain()?.iter().map(Phase::decode).collect();
        name_phases(&mut self.paths, &mut phases);
        Ok(phases)
    }

    /// What the tracked set moved without read or write calls (Linux AIO, io_uring,
    /// mapped files), one phase per process, file and channel over the whole trace, named
    /// from the files' openat calls seen so far (drain the phases first); and per channel
    /// the requests that could not be given to a file: (channel, calls, bytes known).
    #[allow(clippy::type_complexity)]
    pub fn channel_phases(
        &mut self,
    ) -> Result<(Vec<Phase>, Vec<(&'static str, u64, u64)>), TraceError> {
        let (files, lost) = self.inner.channels()?;
        let mut phases: Vec<Phase> = files
            .iter()
            .filter_map(|(k, s)| Phase::from_channel(k, s))
            .collect();
        name_phases(&mut self.paths, &mut phases);
        let lost = lost
            .iter()
            .enumerate()
            .filter(|(_, l)| l.calls > 0)
            .filter_map(|(i, l)| Some((raw::chan_name(i as u32)?, l.calls, l.bytes)))
            .collect();
        Ok((phases, lost))
    }

    /// The channels whose I/O is counted per file ("aio", "io_uring", "mmap"): their
    /// programs attached (a tracer without phases counts none).
    pub fn channels_counted(&self) -> Vec<String> {
        let skipped: Vec<String> = self.skipped().into_iter().map(|(tp, _)| tp).collect();
        let attached = |tps: &[&str]| tps.iter().all(|t| !skipped.iter().any(|s| s == t));
        let mut out = Vec::new();
        if !self.phases {
            return out;
        }
        if self.traces_syscalls() {
            out.push("aio".to_string());
        }
        if attached(&["io_uring:io_uring_create", "io_uring:io_uring_complete"]) {
            out.push("io_uring".to_string());
        }
        if attached(&[
            "filemap:mm_filemap_map_pages",
            "filemap:mm_filemap_fault",
            "writeback:writeback_dirty_folio",
        ]) {
            out.push("mmap".to_string());
        }
        out
    }

    /// Phases that ended while the ring buffer was full, merged per process and file (one
    /// phase each, `merged` saying how many it stands for). Read them once, at the end:
    /// the table keeps them, so two readings hold the same phases.
    pub fn lost_phases(&mut self) -> Result<Vec<Phase>, TraceError> {
        let mut phases: Vec<Phase> = self.inner.lost()?.iter().map(Phase::decode).collect();
        name_phases(&mut self.paths, &mut phases);
        Ok(phases)
    }

    /// Per process of the tracked set (by id): read and write calls that no phase holds
    /// (on pipes, sockets and other descriptors that are not files, or lost to a full
    /// table), and the kernel's own I/O counters of the threads that have exited.
    pub fn tree_io(&self) -> Result<Vec<(u32, raw::TreeIo)>, TraceError> {
        self.inner.tree_io()
    }

    /// The tracked set's block bytes by the file whose data each request moved, each
    /// request counted once: ((the file's device, inode), read bytes, written bytes). A
    /// request names its file when the kernel says so: a page of the file's page cache
    /// (buffered reads, readahead, writeback), or a call on a file in O_DIRECT mode it was
    /// made in. Requests naming no file (metadata, the journal, AIO and io_uring buffers)
    /// stay in the device's totals only.
    #[allow(clippy::type_complexity)]
    pub fn block_files(&self) -> Result<Vec<((DevId, u64), u64, u64)>, TraceError> {
        let mut m = std::collections::BTreeMap::<(DevId, u64), (u64, u64)>::new();
        for (k, v) in self.inner.block_files()? {
            let e = m.entry((DevId::from_kernel(k.fdev), k.ino)).or_default();
            match k.dir {
                0 => e.0 += v.bytes,
                1 => e.1 += v.bytes,
                _ => {}
            }
        }
        Ok(m.into_iter().map(|(k, (r, w))| (k, r, w)).collect())
    }

    /// Files the tracked set has open right now, as phases so far (not removed).
    pub fn open_phases(&mut self) -> Result<Vec<Phase>, TraceError> {
        let mut phases: Vec<Phase> = self.inner.open()?.iter().map(Phase::decode).collect();
        name_phases(&mut self.paths, &mut phases);
        Ok(phases)
    }
}

/// The kernel's count of requests in flight on a whole disk (reads + writes), from sysfs.
fn kernel_inflight(dev: DevId) -> Option<u64> {
    candor_procfs::Kernel::system()
        .block(dev.major, dev.minor)
        .inflight()
        .ok()
        .flatten()
}

/// Gives a path to phases of files reached without an openat the tracer saw (a dup2'd
/// descriptor, as dd does with its output), from another phase of the same file.
fn name_phases(known: &mut std::collections::HashMap<(DevId, u64), String>, phases: &mut [Phase]) {
    for p in phases.iter() {
        if let Some(path) = &p.path {
            known.insert((p.dev, p.inode), path.clone());
        }
    }
    for p in phases.iter_mut() {
        if p.path.is_none() {
            p.path = known.get(&(p.dev, p.inode)).cloned();
        }
    }
}

/// CLOCK_MONOTONIC in nanoseconds: the clock of every BPF timestamp.
pub use candor_procfs::monotonic_ns;

#[cfg(test)]
#[allow(clippy::field_reassign_with_default)]
mod tests {
    use super::*;

    #[test]
    fn a_duplicated_descriptor_gets_the_path_of_its_file() {
        let mut opened = raw::RawPhase::default();
        opened.ino = 5;
        opened.flags = raw::PHASE_OPENED | raw::PHASE_CLOSED;
        opened.path[..2].copy_from_slice(b"/f");
        let mut duped = raw::RawPhase::default();
        duped.ino = 5;
        duped.fd = 1;
        let mut other = raw::RawPhase::default();
        other.ino = 6;
        let mut phases: Vec<Phase> = [opened, duped, other].iter().map(Phase::decode).collect();
        let mut known = Default::default();
        name_phases(&mut known, &mut phases);
        assert_eq!(phases[1].path.as_deref(), Some("/f"));
        assert_eq!(phases[2].path, None);
    }
}
