//! The witness's raw measurements of a repetition (or the sum of several), as plain
//! numbers: what its rules judge. They are kept in the result (`Witness::facts`, saved at
//! `witness.extra.facts`) so that repetitions, and the ranks of an MPI job, can be summed
//! and judged again with the same rules.

use crate::{Access, Fadvise, HistogramDump, Intent, ProcessIo};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Where the target's bytes can go.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Placement {
    /// A block device; `name` as shown ("vda", "loop0", "sda+sdb").
    Device { name: String },
    /// A filesystem that lives in memory (tmpfs...).
    Memory { fs_type: String },
    /// The witness cannot see the storage (FUSE, network, a failed sample): why.
    Unobservable { reason: String },
}

impl Default for Placement {
    fn default() -> Self {
        Placement::Unobservable {
            reason: "nothing was observed".into(),
        }
    }
}

/// Growth of the diskstats counters of the counted devices over an interval.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq)]
#[serde(default)]
pub struct DiskDelta {
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub read_ios: u64,
    pub write_ios: u64,
    pub read_ms: u64,
    pub write_ms: u64,
    pub io_ticks_ms: u64,
    /// Bytes the device was told to discard (TRIM): a filesystem mounted with `discard`
    /// discards the blocks it frees as it commits. Not part of `write_bytes`.
    pub discard_bytes: u64,
}

/// Device bytes attributed exactly (eBPF): no allowance needed.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq)]
#[serde(default)]
pub struct Exact {
    /// The test's own: candor's process tree, the flushers writing back its files, and
    /// kernel threads outside any inode's writeback (journal commits, transaction
    /// commits: the filesystem's work).
    pub own_read_window: u64,
    pub own_read_total: u64,
    pub own_write_window: u64,
    pub own_write_total: u64,
    /// Other processes', every direction.
    pub foreign_bytes: u64,
    /// Of the own bytes, the kernel threads' (journal, housekeeping): every process of a
    /// job on one machine sees them, so a merge of side-by-side processes counts them once.
    pub kernel_read_window: u64,
    pub kernel_read_total: u64,
    pub kernel_write_window: u64,
    pub kernel_write_total: u64,
    /// The other processes of the same job on this machine (the other MPI ranks here),
    /// every direction: neither this process's nor foreign.
    pub job_bytes: u64,
}

/// Everything measured about one repetition (or the sum of several), as plain numbers.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct Facts {
    pub test: String,
    /// What the test meant to measure (a write test always means the device).
    pub intent: Intent,
    pub is_write: bool,
    pub direct: bool,
    pub app_read: u64,
    pub app_write: u64,
    /// The runner's timed seconds and headline throughput.
    pub timed_seconds: f64,
    pub headline_bps: f64,
    pub ram_bytes: u64,
    pub placement: Placement,
    /// begin -> timed_end.
    pub device_window: DiskDelta,
    /// begin -> finish (after the runner's flush).
    pub device_total: DiskDelta,
    pub own_window: Option<ProcessIo>,
    pub own_total: Option<ProcessIo>,
    pub exact: Option<Exact>,
    /// Block-layer [read, write] bytes of every other process over begin -> finish; None
    /// when other processes' counters cannot be read (not root).
    pub others_io: Option<[u64; 2]>,
    /// Block-layer [read, write] bytes of the other processes of the same job on this
    /// machine (the other ranks of an MPI job on this node, and their children) over
    /// begin -> finish: the job's own traffic, neither this process's nor foreign. None
    /// when there is no such job.
    pub job_io: Option<[u64; 2]>,
    /// The device is candor's alone (a `candor lab` loop device): all its traffic is the
    /// test's.
    pub exclusive: bool,
    /// Seconds between the witness's samples: begin -> timed_end and begin -> finish.
    pub window_seconds: f64,
    pub total_seconds: f64,
    /// How many repetitions these facts sum.
    pub repetitions: u32,
    /// How the test walked its files; None for workloads that are not records on a file
    /// (copy, metadata) and in facts saved before operations were counted.
    pub access: Option<Access>,
    /// The hint the test's files were opened with.
    pub fadvise: Fadvise,
    /// The operations the test made in the timed region.
    pub ops: Option<OpFacts>,
    /// A test that both reads and writes (randmix): its reads and its writes apart (None
    /// for single-direction tests, whose operations are `ops`).
    pub read_ops: Option<OpFacts>,
    pub write_ops: Option<OpFacts>,
    /// Writes opened with O_SYNC: each returns once its data is on the device.
    pub osync: bool,
    /// Seconds of the runner's flush (fsync) after the writes (the longest thread's, summed
    /// over repetitions), and whether the headline's timed region includes it.
    pub flush_seconds: f64,
    pub flush_in_timing: bool,
    /// eBPF: the test's own device requests completed in the timed region.
    pub requests: Option<RequestFacts>,
    /// eBPF: pages of the test's files the page cache took in during the timed region.
    pub cache_inserts: Option<u64>,
    /// eBPF: bytes the kernel's flushers wrote in the timed region for files candor's
    /// processes had dirtied (this test's or an earlier one's).
    pub writeback_window: Option<u64>,
    /// CPU seconds (user + system) of candor's process over the timed region.
    pub cpu_seconds: Option<f64>,
    /// Threads that did the test's I/O.
    pub threads: u32,
    /// Dirty page-cache bytes of the whole machine when the repetition began.
    pub dirty_at_begin: Option<u64>,
    /// The target's device is a loop device: where its requests really went.
    pub loop_device: Option<LoopFacts>,
    /// The device's ceiling, when one was given (`--device-spec`).
    pub ceiling: Option<Ceiling>,
    /// A metadata test (create, stat, open, readdir, unlink, mkdir, rmdir): what it did and
    /// what the kernel counted of it.
    pub meta: Option<MetaFacts>,
    /// Copy and metadata tests: the system calls the runner made in the timed region, and
    /// what the kernel counted of them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub calls: Option<CallFacts>,
    /// The options the run was given that advice depends on (`advice::Given`); None in
    /// facts saved before they were kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub given: Option<crate::advice::Given>,
    /// The filesystem under the target: what it does to the bytes it is given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fs: Option<FsFacts>,
}

/// What the filesystem under the target does to the bytes it stores, as far as it can be
/// read cheaply: its type and mount options, and the compression set on the test's
/// directory (btrfs's `compression` property, `chattr +c`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct FsFacts {
    pub fs_type: String,
    /// The mount options, as this process's mountinfo gives them (both sets, comma separated).
    pub mount_options: String,
    /// The compression set on the directory the test's files are made in, and how it was
    /// set ("btrfs property compression=zstd", "chattr +c"); None when none is set or it
    /// cannot be read.
    pub dir_compression: Option<String>,
}

impl FsFacts {
    /// The value of a mount option (`compress=zstd:3` gives "zstd:3" for "compress"), or
    /// "" for a flag that is set (`discard`); None when absent.
    pub fn option(&self, name: &str) -> Option<&str> {
        self.mount_options
            .split(',')
            .find_map(|o| match o.split_once('=') {
                Some((k, v)) if k == name => Some(v),
                None if o == name => Some(""),
                _ => None,
            })
    }

    /// The mount option that writes every buffered write through to the device before the
    /// call returns (`sync`); None when writes may wait in the page cache.
    pub fn writes_through(&self) -> Option<&'static str> {
        self.option("sync").map(|_| "sync")
    }

    /// The mount option that makes the operations that change a directory (create,
    /// unlink, mkdir, rmdir) reach the device before the call returns: `sync` and
    /// `dirsync`, and xfs's `wsync`. None when they may wait in memory.
    pub fn dirs_through(&self) -> Option<&'static str> {
        ["sync", "dirsync", "wsync"]
            .into_iter()
            .find(|o| self.option(o).is_some())
    }

    /// The mount option that gives every file direct access to the device's memory (DAX):
    /// `dax` or `dax=always` (ext4, xfs). Reads and writes then bypass the page cache and
    /// the block layer alike. `dax=inode` (only files marked for it) and `dax=never` (what
    /// xfs shows when the device cannot do DAX) are not.
    pub fn dax(&self) -> Option<String> {
        match self.option("dax")? {
            "" => Some("dax".into()),
            "always" => Some("dax=always".into()),
            _ => None,
        }
    }
}

/// A copy or metadata test's system calls, per kind: what the runner says it made in the
/// timed region, and what the kernel counted of the test's process there. Kinds are the
/// eBPF programs' names: "create" (openat with O_CREAT, creat), "openat", "close", "stat"
/// (stat, lstat, newfstatat, statx), "unlink", "mkdir", "rmdir" (and unlinkat with
/// AT_REMOVEDIR), "getdents64", "read", "write", "lseek", "fsync", "copy_file_range",
/// "sendfile", "splice".
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct CallFacts {
    /// What the runner made, per kind.
    pub expected: BTreeMap<String, CallCount>,
    /// eBPF: the calls of candor's own threads (the witness's sampler left out) the kernel
    /// counted in the timed region, per kind (every kind, even those the runner did not
    /// name). None when they were not counted.
    pub counted: Option<BTreeMap<String, CallCount>>,
    /// Without the per-kind count: the process's io counters' read-like (syscr) and write-like
    /// (syscw) calls of candor's whole process over the timed region, the witness's own
    /// reads of /proc included.
    pub syscr: Option<u64>,
    pub syscw: Option<u64>,
    /// Why the kernel's per-kind count is missing.
    pub not_counted: Option<String>,
    /// The calls above are those of a sample of the test's operations (the first ones of
    /// each thread in the timed region), not of all of them; None: of all of them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sample: Option<CallSample>,
    /// What counted `counted`: "ebpf" (the counting program, every kind) or "thread_io"
    /// (each thread's /proc io counters: read-like and write-like calls and their bytes,
    /// no tracepoint). None when nothing counted them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counted_by: Option<String>,
}

/// The operations whose calls were counted: `ops` of the test's `of` (the first of each
/// thread's, in the timed region; or, with `repetitions`, those of the first repetition).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
#[serde(default)]
pub struct CallSample {
    pub ops: u64,
    pub of: u64,
    /// The sample is the first of this many repetitions (`candor replay`), each making
    /// the same calls; None: the first operations of each thread.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repetitions: Option<u32>,
    /// Some(true): the calls were counted on a pass of their own, made before the
    /// `repetitions` timed ones (`candor replay --timing fast` with eBPF), so no timed
    /// repetition paid for the counting. None in files from before it was kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counting_pass: Option<bool>,
}

/// Calls of one kind, and the bytes they returned (read-like and copy calls).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
#[serde(default)]
pub struct CallCount {
    /// None: the runner does not decide how many calls it takes (a directory listing's
    /// getdents64 calls are the C library's choice; its bytes are the runner's).
    pub calls: Option<u64>,
    pub bytes: Option<u64>,
    /// Calls that failed (kernel count only).
    pub errors: u64,
}

impl CallFacts {
    /// Adds another repetition's calls (per kind; a count one side lacks stays unknown).
    pub fn add(&mut self, o: &CallFacts) {
        fn sum(a: Option<u64>, b: Option<u64>) -> Option<u64> {
            Some(a? + b?)
        }
        // A kind one repetition lacks is one it made none of.
        fn add_map(a: &mut BTreeMap<String, CallCount>, b: &BTreeMap<String, CallCount>) {
            for (k, v) in b {
                let e = a.entry(k.clone()).or_insert(CallCount {
                    calls: Some(0),
                    bytes: v.bytes.map(|_| 0),
                    errors: 0,
                });
                e.calls = sum(e.calls, v.calls);
                e.bytes = sum(e.bytes, v.bytes);
                e.errors += v.errors;
            }
        }
        add_map(&mut self.expected, &o.expected);
        self.counted = match (self.counted.take(), o.counted.as_ref()) {
            (Some(mut a), Some(b)) => {
                add_map(&mut a, b);
                Some(a)
            }
            _ => None,
        };
        self.syscr = sum(self.syscr, o.syscr);
        self.syscw = sum(self.syscw, o.syscw);
        if self.not_counted.is_none() {
            self.not_counted = o.not_counted.clone();
        }
        // A sample of each repetition is a sample of the whole: its operations add up.
        // (Repetitions of one test are all sampled or none.)
        self.sample = match (self.sample, o.sample) {
            (Some(a), Some(b)) => Some(CallSample {
                ops: a.ops + b.ops,
                of: a.of + b.of,
                repetitions: a.repetitions.or(b.repetitions),
                counting_pass: a.counting_pass.or(b.counting_pass),
            }),
            (a, b) => a.or(b),
        };
        if self.counted_by != o.counted_by {
            self.counted_by = None;
        }
    }
}

/// A metadata test's operations as the kernel counted them.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct MetaFacts {
    /// The operation ("create", "stat", ...).
    pub op: String,
    /// Inodes each operation adds to the filesystem (1 for create and mkdir, -1 for unlink
    /// and rmdir, 0 for the others).
    pub inodes_per_op: i64,
    /// The change in the filesystem's inodes in use over the timed region, by statfs(2)
    /// (`f_files - f_ffree`); None when the filesystem does not count its inodes (btrfs).
    pub inodes_used: Option<i64>,
}

/// The operations a test made: how many, and how long each took (the runner's own
/// timing of every operation, on the log-linear scale of the eBPF latency histograms:
/// four buckets per power of two).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct OpFacts {
    pub count: u64,
    pub latency: HistogramDump,
}

/// Device requests of one direction: how many, their bytes, and their service times
/// (issue to completion).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct RequestStat {
    pub count: u64,
    pub bytes: u64,
    pub latency: HistogramDump,
}

/// The test's own device requests, per direction (eBPF).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct RequestFacts {
    pub read: RequestStat,
    pub write: RequestStat,
    /// Of `read` and `write`, the kernel threads' requests outside any inode's writeback
    /// (journal and transaction commits): every process of a job on one machine sees them,
    /// so a merge of side-by-side processes counts them once per machine.
    pub kernel_read: RequestStat,
    pub kernel_write: RequestStat,
}

/// A loop device under the target: the file behind it and what the disk under that file
/// did while the loop device worked.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct LoopFacts {
    /// "loop3".
    pub device: String,
    pub backing_file: String,
    /// Whether the loop device reads and writes its file with O_DIRECT (`loop/dio`).
    pub direct_io: bool,
    /// The disk under the backing file ("vda"), when known.
    pub backing_disk: Option<String>,
    /// The filesystem type the backing file lies on ("ext4", "tmpfs"), when known.
    pub backing_fs: Option<String>,
    /// That disk's diskstats over the timed region (every process's traffic).
    pub backing_window: Option<DiskDelta>,
    /// Pages of the backing file, and how many were in the host's page cache when the
    /// repetition began (cachestat; None when it cannot be read).
    pub backing_pages: u64,
    pub backing_resident: Option<u64>,
}

/// A device's ceiling, as `--device-spec` gives it (bytes/s and operations/s).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq)]
#[serde(default)]
pub struct Ceiling {
    pub read_bps: Option<f64>,
    pub write_bps: Option<f64>,
    pub read_iops: Option<f64>,
    pub write_iops: Option<f64>,
}

impl OpFacts {
    pub fn add(&mut self, o: &OpFacts) {
        self.count += o.count;
        self.latency.merge(&o.latency);
    }
}

impl RequestStat {
    pub fn add(&mut self, o: &RequestStat) {
        self.count += o.count;
        self.bytes += o.bytes;
        self.latency.merge(&o.latency);
    }
}

impl std::ops::AddAssign<&DiskDelta> for DiskDelta {
    fn add_assign(&mut self, o: &DiskDelta) {
        self.read_bytes += o.read_bytes;
        self.write_bytes += o.write_bytes;
        self.read_ios += o.read_ios;
        self.write_ios += o.write_ios;
        self.read_ms += o.read_ms;
        self.write_ms += o.write_ms;
        self.io_ticks_ms += o.io_ticks_ms;
        self.discard_bytes += o.discard_bytes;
    }
}

impl std::ops::AddAssign<&Exact> for Exact {
    fn add_assign(&mut self, b: &Exact) {
        self.own_read_window += b.own_read_window;
        self.own_read_total += b.own_read_total;
        self.own_write_window += b.own_write_window;
        self.own_write_total += b.own_write_total;
        self.foreign_bytes += b.foreign_bytes;
        self.kernel_read_window += b.kernel_read_window;
        self.kernel_read_total += b.kernel_read_total;
        self.kernel_write_window += b.kernel_write_window;
        self.kernel_write_total += b.kernel_write_total;
        self.job_bytes += b.job_bytes;
    }
}

impl DiskDelta {
    /// Each field's larger value.
    pub fn widest(&self, b: &DiskDelta) -> DiskDelta {
        DiskDelta {
            read_bytes: self.read_bytes.max(b.read_bytes),
            write_bytes: self.write_bytes.max(b.write_bytes),
            read_ios: self.read_ios.max(b.read_ios),
            write_ios: self.write_ios.max(b.write_ios),
            read_ms: self.read_ms.max(b.read_ms),
            write_ms: self.write_ms.max(b.write_ms),
            io_ticks_ms: self.io_ticks_ms.max(b.io_ticks_ms),
            discard_bytes: self.discard_bytes.max(b.discard_bytes),
        }
    }
}

/// `a += b` when both are known; a repetition without the counter makes the sum unknown.
pub(crate) fn add_opt<T: Copy>(a: &mut Option<T>, b: &Option<T>, f: impl Fn(&mut T, &T)) {
    match (a.as_mut(), b) {
        (Some(x), Some(y)) => f(x, y),
        _ => *a = None,
    }
}

impl Facts {
    /// Adds another repetition of the same test (one that ran after this one).
    pub fn add(&mut self, o: &Facts) {
        self.app_read += o.app_read;
        self.app_write += o.app_write;
        // The combined headline is bytes over time, like any throughput.
        let bytes = self.headline_bps * self.timed_seconds + o.headline_bps * o.timed_seconds;
        self.timed_seconds += o.timed_seconds;
        self.headline_bps = if self.timed_seconds > 0.0 {
            bytes / self.timed_seconds
        } else {
            0.0
        };
        self.device_window += &o.device_window;
        self.device_total += &o.device_total;
        add_opt(&mut self.own_window, &o.own_window, |a, b| *a += b);
        add_opt(&mut self.own_total, &o.own_total, |a, b| *a += b);
        add_opt(&mut self.others_io, &o.others_io, |a, b| {
            a[0] += b[0];
            a[1] += b[1];
        });
        add_opt(&mut self.job_io, &o.job_io, |a, b| {
            a[0] += b[0];
            a[1] += b[1];
        });
        add_opt(&mut self.exact, &o.exact, |a, b| *a += b);
        self.window_seconds += o.window_seconds;
        self.total_seconds += o.total_seconds;
        self.repetitions += o.repetitions.max(1);
        self.exclusive &= o.exclusive;
        if let Placement::Unobservable { .. } = o.placement {
            self.placement = o.placement.clone();
        }
        match (self.ops.as_mut(), &o.ops) {
            (Some(a), Some(b)) => a.add(b),
            _ => self.ops = None,
        }
        for (a, b) in [
            (&mut self.read_ops, &o.read_ops),
            (&mut self.write_ops, &o.write_ops),
        ] {
            match (a.as_mut(), b) {
                (Some(x), Some(y)) => x.add(y),
                _ => *a = None,
            }
        }
        self.flush_seconds += o.flush_seconds;
        match (self.requests.as_mut(), &o.requests) {
            (Some(a), Some(b)) => {
                a.read.add(&b.read);
                a.write.add(&b.write);
                a.kernel_read.add(&b.kernel_read);
                a.kernel_write.add(&b.kernel_write);
            }
            _ => self.requests = None,
        }
        add_opt(&mut self.cache_inserts, &o.cache_inserts, |a, b| *a += b);
        add_opt(&mut self.writeback_window, &o.writeback_window, |a, b| {
            *a += b
        });
        add_opt(&mut self.cpu_seconds, &o.cpu_seconds, |a, b| *a += b);
        if let (Some(a), Some(b)) = (self.meta.as_mut(), &o.meta) {
            add_opt(&mut a.inodes_used, &b.inodes_used, |x, y| *x += y);
        }
        match (self.calls.as_mut(), &o.calls) {
            (Some(a), Some(b)) => a.add(b),
            // A repetition outside the sample of calls (counted on the first repetition
            // only: `CallSample::repetitions`) leaves the sample's count as it is.
            (Some(a), None) if a.sample.is_some_and(|s| s.repetitions.is_some()) => {}
            _ => self.calls = None,
        }
        self.threads = self.threads.max(o.threads);
        if let (Some(a), Some(b)) = (self.loop_device.as_mut(), &o.loop_device) {
            add_opt(&mut a.backing_window, &b.backing_window, |x, y| *x += y);
            a.backing_pages = a.backing_pages.max(b.backing_pages);
            add_opt(&mut a.backing_resident, &b.backing_resident, |x, y| {
                *x = (*x).max(*y)
            });
            a.direct_io &= b.direct_io;
        }
    }
}

impl Facts {
    /// The test's writes each reach the device before their call returns: opened with
    /// O_SYNC, or made with write(2) on a filesystem mounted `sync` (a memory-mapped file's
    /// stores are not system calls and are not written through). O_DIRECT writes are said
    /// as such whatever the mount.
    pub fn writes_through(&self) -> bool {
        self.osync
            || (!self.direct
                && !self.test.starts_with("mmap")
                && self
                    .fs
                    .as_ref()
                    .is_some_and(|fs| fs.writes_through().is_some()))
    }

    /// The options in force for this test, for advice (`advice::Suggestion::fits`). Facts
    /// saved before the run's options were kept give them from what the facts hold: the
    /// flush out of the timing taken as `--no-fsync-in-timing`, and a record test (neither
    /// copy nor metadata) as one `--direct`, `--file-size` and `--fadvise` shape.
    pub fn in_force(&self) -> crate::advice::InForce {
        let given = self.given.clone().unwrap_or_else(|| {
            let records = self.meta.is_none() && self.calls.is_none();
            crate::advice::Given {
                no_fsync_in_timing: self.is_write && !self.flush_in_timing,
                direct_accepted: records,
                file_size_accepted: records,
                fadvise_accepted: records,
                repeat: self.repetitions,
                ..Default::default()
            }
        });
        crate::advice::InForce {
            direct: self.direct,
            osync: self.writes_through(),
            flush_in_timing: self.flush_in_timing,
            fadvise: self.fadvise,
            given,
        }
    }
}
