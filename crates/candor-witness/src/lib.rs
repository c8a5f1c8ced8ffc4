//! The witness: observes the kernel around and during every test and turns what it saw
//! into `candor_model::Witness` (figures plus a verdict in plain words).
//!
//! The runner's side of the contract is small: `Witness::new` once per target,
//! `begin` before a repetition's timed region, `timed_end` when it ends, `finish` after the
//! runner has flushed the data to the device; `combine` merges repetitions into the
//! test's witness. `describe_host` and `describe_target` give the host description.

pub mod bpf;
pub mod calls;
pub mod device;
pub mod explain;
pub mod facts;
pub mod filecache;
pub mod host;
pub mod metadata;
pub mod operations;
pub mod rules;
pub mod sample;
pub mod source;
#[cfg(test)]
mod testkit;
pub mod traps;

use candor_model::{
    Access, CallFacts, Ceiling, Chosen, DiskDelta, Facts, Fadvise, FileCache, FsFacts,
    HistogramDump, Host, Intent, LoopFacts, MemoryDelta, OpFacts, Placement, ProcessIo, TargetInfo,
};
use candor_procfs as procfs;
use filecache::Residency;
use sample::{Sample, Sampler, Timeline};
pub use source::{Probe, Source};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// `--witness auto|procfs|bpf|off`: the one source type of `candor run` and `candor audit`.
pub use candor_model::WitnessSource as Mode;

#[derive(Clone, Debug)]
pub struct Config {
    pub mode: Mode,
    /// Timeline sampling period (`--witness-interval`, default 100 ms).
    pub interval: Duration,
    /// With the eBPF source, also trace every system call (`--trace-syscalls`).
    pub trace_syscalls: bool,
    /// The other processes of the same job on this machine (the other ranks of an MPI job
    /// on this node): their traffic, and their children's, is the job's own, never foreign.
    pub job: Vec<u32>,
}

/// What the runner tells the witness about a repetition when it ends.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    pub test: String,
    /// What the test meant to measure.
    pub intent: Intent,
    pub is_write: bool,
    pub direct: bool,
    /// Bytes the application asked for in the timed region.
    pub app_read_bytes: u64,
    pub app_write_bytes: u64,
    /// Seconds of the headline timed region.
    pub timed_seconds: f64,
    /// Headline throughput (bytes/s) the runner computed.
    pub headline_bps: f64,
    /// How the test walked its files (None for copy and metadata workloads).
    pub access: Option<Access>,
    /// The hint its files were opened with.
    pub fadvise: Fadvise,
    /// Operations in the timed region, and the runner's histogram of their latencies
    /// (empty when it kept none).
    pub ops: u64,
    pub op_latency: HistogramDump,
    /// The same operations by direction (record tests; empty for copy and metadata).
    pub read_op_latency: HistogramDump,
    pub write_op_latency: HistogramDump,
    /// Writes opened with O_SYNC.
    pub osync: bool,
    /// The runner's flush (fsync) of the written files, and whether the headline's timed
    /// region includes it.
    pub flush_seconds: f64,
    pub flush_in_timing: bool,
    /// CPU seconds (user + system) of the process over the timed region.
    pub cpu_seconds: Option<f64>,
    /// Threads that did the I/O.
    pub threads: u32,
    /// A metadata test: its operation and the inodes each adds (the witness counts the
    /// filesystem's inodes in use around the timed region into `inodes_used`).
    pub meta: Option<candor_model::MetaFacts>,
    /// Copy and metadata tests: the system calls the runner made in the timed region, per
    /// kind (`CallFacts::expected`); the watch must have begun with `begin_counting_calls`
    /// for the kernel to count them. None for the other tests.
    pub calls: Option<std::collections::BTreeMap<String, candor_model::CallCount>>,
    /// `calls` are those of the first operations of each thread only (the eBPF count
    /// stopped there: `Watch::calls_sampled`): how many, of how many. None: of all.
    pub calls_sample: Option<candor_model::CallSample>,
    /// Copy: the read and write calls and bytes of the runner's threads, counted by each
    /// thread's own /proc io counters around its pass (no tracepoint). They are the
    /// kernel's count of those kinds, whatever the source.
    pub calls_thread_io: Option<std::collections::BTreeMap<String, candor_model::CallCount>>,
    /// The options advice depends on (`Facts::given`).
    pub given: Option<candor_model::advice::Given>,
}

/// The witness of one target for the whole run.
pub struct Witness {
    target: PathBuf,
    config: Config,
    /// None when the witness is off.
    source: Option<Arc<dyn Source>>,
    placement: Placement,
    /// The diskstats names to sum (empty when there is no block device).
    devices: Vec<String>,
    /// The device is a `candor lab` loop device: candor's alone.
    exclusive: bool,
    /// The target's device is a loop device: its file and the disk under it.
    looped: Option<Looped>,
    /// The device's ceiling given with `--device-spec`, to name figures beyond it.
    ceiling: Option<Ceiling>,
    /// The target's filesystem type and mount options.
    fs: Option<FsFacts>,
}

/// A loop device under the target.
#[derive(Clone, Debug)]
struct Looped {
    device: String,
    backing_file: String,
    /// The whole disks under the backing file, as diskstats names them.
    backing_disks: Vec<String>,
    /// The filesystem type the backing file lies on.
    backing_fs: Option<String>,
}

impl Looped {
    /// The backing file lies on a filesystem that keeps its data in memory (tmpfs): the
    /// loop device's storage is memory, and no disk moves a byte for it.
    fn in_memory(&self) -> bool {
        self.backing_fs.as_deref().is_some_and(host::is_memory_fs)
    }
}

/// What the loop device's file and disk looked like at one instant.
#[derive(Clone, Debug, Default)]
struct LoopSample {
    disk: Option<procfs::DiskStat>,
    direct_io: bool,
    pages: u64,
    resident: Option<u64>,
}

impl Looped {
    fn sample(&self, residency: bool) -> LoopSample {
        let disk =
            procfs::read_diskstats().and_then(|all| sample::sum_devices(&all, &self.backing_disks));
        let direct_io = procfs::Kernel::system()
            .block_named(&self.device)
            .loop_direct_io();
        let (pages, resident) = if residency {
            let r = filecache::residency(&[PathBuf::from(&self.backing_file)]);
            (r.pages, (!r.method.is_empty()).then_some(r.resident))
        } else {
            (0, None)
        };
        LoopSample {
            disk,
            direct_io,
            pages,
            resident,
        }
    }
}

/// The observation of one repetition.
pub struct Watch {
    source: Option<Arc<dyn Source>>,
    placement: Placement,
    files: Vec<PathBuf>,
    probe: Option<Box<dyn Probe>>,
    begin: Sample,
    end: Option<Sample>,
    sampler: Sampler,
    timeline: Timeline,
    cache_before: Residency,
    cache_end: Option<Residency>,
    exclusive: bool,
    looped: Option<(Looped, LoopSample)>,
    loop_end: Option<LoopSample>,
    ceiling: Option<Ceiling>,
    /// The other processes of the job (`Config::job`).
    job: Vec<u32>,
    /// The target, and its filesystem's inodes in use at begin and at the end of the timed
    /// region (statfs; None when it does not count them).
    target: PathBuf,
    inodes_begin: Option<u64>,
    inodes_end: Option<u64>,
    /// The target's filesystem (`Witness::fs`).
    fs: Option<FsFacts>,
}

/// The inodes in use on `path`'s filesystem (`f_files - f_ffree`); None when the
/// filesystem does not count them (btrfs reports no total) or statfs fails.
fn inodes_in_use(path: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs is plain integers; zeroed is a valid value, and c is a valid path.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: c is a valid NUL-terminated path and st a writable statvfs.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 || st.f_files == 0 {
        return None;
    }
    Some((st.f_files as u64).saturating_sub(st.f_ffree as u64))
}

/// Where the target's bytes go, as the verdict rules see it, and the devices to count.
fn placement_of(target: &Path, place: Option<&host::Placement>) -> (Placement, Vec<String>) {
    let Some(p) = place.cloned() else {
        return (
            Placement::Unobservable {
                reason: format!("cannot find the filesystem of {}", target.display()),
            },
            Vec::new(),
        );
    };
    match p.device {
        Some(d) if !d.counted.is_empty() => (
            Placement::Device {
                name: d.counted.join("+"),
            },
            d.counted,
        ),
        _ if host::is_memory_fs(&p.mount.fs_type) => (
            Placement::Memory {
                fs_type: p.mount.fs_type,
            },
            Vec::new(),
        ),
        _ => (
            Placement::Unobservable {
                reason: format!(
                    "{} ({}) has no block device whose counters the witness can read",
                    p.mount.mount_point, p.mount.fs_type
                ),
            },
            Vec::new(),
        ),
    }
}

impl Witness {
    /// Sets the witness up for a target. The second value is a line to show the person when
    /// the requested source is not available and another is used (never an error).
    pub fn new(target: &Path, config: Config) -> (Witness, Option<String>) {
        let place = host::place(target);
        let (placement, devices) = placement_of(target, place.as_ref());
        // A loop device whose backing file `candor lab` made carries nothing but what the
        // filesystem on it does for candor's tests.
        let exclusive = place
            .as_ref()
            .and_then(|p| p.device.as_ref())
            .and_then(|d| d.backing_file.as_deref())
            .is_some_and(|b| b.contains("/.candor-lab/"));
        let looped = place.as_ref().and_then(|p| {
            let d = p.device.as_ref()?;
            Some(Looped {
                device: d.name.clone(),
                backing_file: d.backing_file.clone()?,
                backing_disks: p
                    .backing
                    .as_ref()
                    .map(|b| b.counted.clone())
                    .unwrap_or_default(),
                backing_fs: d
                    .backing_file
                    .as_deref()
                    .and_then(|b| host::place(Path::new(b)))
                    .map(|b| b.mount.fs_type),
            })
        });
        let fs = place.as_ref().map(|p| FsFacts {
            fs_type: p.mount.fs_type.clone(),
            mount_options: host::merge_options(&p.mount.options, &p.mount.super_options),
            dir_compression: None,
        });
        let mut note = None;
        let chosen = config
            .mode
            .choose(|| bpf::open(target, place.as_ref(), config.trace_syscalls, &config.job));
        let source: Option<Arc<dyn Source>> = match chosen {
            Chosen::Off => None,
            Chosen::Procfs => Some(Arc::new(source::Procfs)),
            Chosen::Bpf(s) => Some(Arc::from(s)),
            // Asked for by name or not, `run` falls back and says so.
            Chosen::NoBpf { why, .. } => {
                let syscalls = if config.trace_syscalls {
                    " --trace-syscalls has nothing to trace with."
                } else {
                    ""
                };
                note = Some(format!(
                    "The eBPF witness is not available ({why}): using /proc counters, which see the whole device.{syscalls}"
                ));
                Some(Arc::new(source::Procfs))
            }
        };
        (
            Witness {
                target: target.to_path_buf(),
                config,
                source,
                placement,
                devices,
                exclusive,
                looped,
                ceiling: None,
                fs,
            },
            note,
        )
    }

    /// The device's ceiling (`--device-spec`): figures beyond it are named as a trap.
    pub fn set_ceiling(&mut self, ceiling: Option<Ceiling>) {
        self.ceiling = ceiling;
    }

    /// The target this witness observes.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// The value `witness.source` will have ("procfs", "bpf" or "off").
    pub fn source_name(&self) -> &'static str {
        self.source.as_ref().map_or("off", |s| s.name())
    }

    /// Whether counting a test's calls (`begin_counting_calls`) attaches a program that
    /// every system call of the machine pays for while it is attached (eBPF without
    /// --trace-syscalls): the runner then counts a sample (`Watch::calls_sampled`).
    pub fn counts_calls_by_attaching(&self) -> bool {
        self.source
            .as_ref()
            .is_some_and(|s| s.counts_calls_by_attaching())
    }

    /// Takes the first sample before a repetition's timed region; `files` are the test's files.
    pub fn begin(&self, files: &[PathBuf]) -> Watch {
        self.begin_with(files, false, true)
    }

    /// `begin` for a test that only writes: the eBPF source leaves the pages added to the
    /// page cache uncounted (nearly every buffered write adds one, and their program would
    /// cost each write more than the witness may; docs/bpf.md).
    pub fn begin_writing(&self, files: &[PathBuf]) -> Watch {
        self.begin_with(files, false, false)
    }

    /// `begin` for a test whose operations are system calls the runner counts (copy,
    /// metadata; `Outcome::calls`): the eBPF source counts the test's calls per kind over
    /// the timed region, attaching its syscall programs for this repetition only when
    /// `--trace-syscalls` has not attached them for the whole run.
    pub fn begin_counting_calls(&self, files: &[PathBuf]) -> Watch {
        self.begin_with(files, true, true)
    }

    fn begin_with(&self, files: &[PathBuf], calls: bool, reads: bool) -> Watch {
        let files = files.to_vec();
        if self.source.is_none() {
            let begin = Sample::take(&[]);
            return Watch {
                source: None,
                placement: self.placement.clone(),
                files,
                probe: None,
                sampler: Sampler::start(&begin, Vec::new(), Duration::ZERO),
                begin,
                end: None,
                timeline: Timeline::default(),
                cache_before: Residency::default(),
                cache_end: None,
                exclusive: self.exclusive,
                looped: None,
                loop_end: None,
                ceiling: None,
                job: Vec::new(),
                target: self.target.clone(),
                inodes_begin: None,
                inodes_end: None,
                fs: None,
            };
        }
        // Residency first and the sample last, so the sample sits next to the timed region.
        let cache_before = filecache::residency(&files);
        let looped = self.looped.clone().map(|l| {
            let s = l.sample(true);
            (l, s)
        });
        let inodes_begin = inodes_in_use(&self.target);
        let begin = Sample::take(&self.devices);
        // The probe starts after the sample, so its figures hold the test, not the witness.
        let probe = self.source.as_ref().map(|s| s.start(&files, calls, reads));
        let sampler = Sampler::start(&begin, self.devices.clone(), self.config.interval);
        Watch {
            source: self.source.clone(),
            placement: self.placement.clone(),
            files,
            probe,
            begin,
            end: None,
            sampler,
            timeline: Timeline::default(),
            cache_before,
            cache_end: None,
            exclusive: self.exclusive,
            looped,
            loop_end: None,
            ceiling: self.ceiling,
            job: self.config.job.clone(),
            target: self.target.clone(),
            inodes_begin,
            inodes_end: None,
            fs: self.fs.clone(),
        }
    }
}

impl Watch {
    /// Marks the end of the timed region (second sample; the timeline stops).
    pub fn timed_end(&mut self) {
        if self.source.is_none() || self.end.is_some() {
            return;
        }
        if let Some(p) = self.probe.as_mut() {
            p.timed_end();
        }
        let devices = devices_of(&self.placement);
        let s = Sample::take(&devices);
        self.inodes_end = inodes_in_use(&self.target);
        self.loop_end = self.looped.as_ref().map(|(l, _)| l.sample(false));
        self.timeline = self.sampler.stop(&s);
        self.end = Some(s);
        self.cache_end = Some(filecache::residency(&self.files));
    }

    /// The end of the sample of operations whose calls the kernel counts (a test begun
    /// with `begin_counting_calls`): the count is read here, then `resume` is called (the
    /// runner lets its threads go on: they need not wait for the rest), then the counting
    /// program is let go, so the rest of the timed region runs without it. Without this
    /// call the count covers the whole timed region.
    pub fn calls_sampled(&mut self, resume: impl FnOnce()) {
        if let Some(p) = self.probe.as_mut() {
            p.calls_end();
        }
        resume();
        if let Some(p) = self.probe.as_mut() {
            p.calls_release();
        }
    }

    /// Takes the last sample, after the runner has flushed the files, and judges.
    pub fn finish(mut self, outcome: &Outcome) -> candor_model::Witness {
        let Some(source) = self.source.clone() else {
            let mut w = candor_model::Witness {
                source: "off".into(),
                ..Default::default()
            };
            let facts = facts_from(
                outcome,
                Placement::Unobservable {
                    reason: "the witness was turned off (--witness off)".into(),
                },
                &self.begin,
                &self.begin,
                &self.begin,
                &[],
            );
            let mut facts = facts;
            thread_io_calls(outcome, &mut facts);
            facts::apply(&facts, &mut w);
            return w;
        };
        // Without a source that counts them, the calls stay uncounted, and why.
        let uncounted = format!(
            "the {} witness does not count system calls per kind; the eBPF witness does",
            source.name()
        );
        // A runner that did not mark the end of the timed region gets the end here.
        self.timed_end();
        if let Some(p) = self.probe.as_mut() {
            p.before_last();
        }
        let devices = devices_of(&self.placement);
        let last = Sample::take(&devices);
        let end = self.end.clone().unwrap_or_else(|| last.clone());
        let mut facts = facts_from(
            outcome,
            self.placement.clone(),
            &self.begin,
            &end,
            &last,
            &self.job,
        );
        facts.exclusive = self.exclusive;
        facts.ceiling = self.ceiling;
        // Whether --direct would be taken: the test's own file opened O_DIRECT, read-only
        // (a regular file only: a device takes it, and --buffered means none is opened so).
        if let Some(g) = facts.given.as_mut().filter(|g| g.direct_accepted) {
            if !facts.direct {
                if let Some(t) = self.files.first().and_then(|p| host::takes_direct(p)) {
                    g.direct_accepted = t;
                }
            }
        }
        // The compression set on the test's files (or the directory they are made in): a
        // getxattr and an ioctl, after the timed region.
        facts.fs = self.fs.take().map(|mut fs| {
            let first = self.files.first().cloned();
            fs.dir_compression = first
                .iter()
                .flat_map(|f| {
                    [
                        f.clone(),
                        f.parent().map(Path::to_path_buf).unwrap_or_default(),
                    ]
                })
                .chain([self.target.clone()])
                .find_map(|p| host::compression_set(&p));
            fs
        });
        facts.meta = outcome.meta.clone().map(|mut m| {
            m.inodes_used = match (self.inodes_begin, self.inodes_end) {
                (Some(a), Some(b)) => Some(b as i64 - a as i64),
                _ => None,
            };
            m
        });
        facts.loop_device = self.looped.as_ref().map(|(l, b)| LoopFacts {
            device: l.device.clone(),
            backing_file: l.backing_file.clone(),
            direct_io: b.direct_io,
            backing_disk: (!l.backing_disks.is_empty()).then(|| l.backing_disks.join("+")),
            backing_fs: l.backing_fs.clone(),
            backing_window: match (
                &b.disk,
                self.loop_end.as_ref().and_then(|e| e.disk.as_ref()),
            ) {
                (Some(x), Some(y)) => Some(disk_stat_delta(&y.delta(x))),
                // A file in memory: no disk moved anything for it.
                _ if l.in_memory() => Some(DiskDelta::default()),
                _ => None,
            },
            backing_pages: b.pages,
            backing_resident: b.resident,
        });
        let mut w = candor_model::Witness {
            source: source.name().into(),
            ..Default::default()
        };
        if self.begin.disk.is_none() || last.disk.is_none() {
            if let Placement::Device { name } = &self.placement {
                facts.placement = Placement::Unobservable {
                    reason: format!("{} has no line for {name}", candor_procfs::paths::DISKSTATS),
                };
            }
        }
        if let Some(c) = facts.calls.as_mut() {
            c.not_counted = Some(uncounted);
        }
        if let Some(p) = self.probe.as_mut() {
            p.finish(&mut facts, &mut w);
        }
        thread_io_calls(outcome, &mut facts);
        facts::apply(&facts, &mut w);
        w.memory = memory_of(&self.begin, &last, &self.timeline);
        w.vmstat = sample::vmstat_delta(&self.begin, &last);
        w.io_pressure_us = sample::pressure_delta(&self.begin, &last);
        w.file_cache = file_cache_of(&self.cache_before, self.cache_end.as_ref());
        w.timeline = std::mem::take(&mut self.timeline.points);
        w
    }
}

/// A copy's reads and writes counted by its threads' own counters: the kernel's count of
/// those kinds, in place of any other.
fn thread_io_calls(o: &Outcome, facts: &mut Facts) {
    if let (Some(c), Some(io)) = (facts.calls.as_mut(), o.calls_thread_io.as_ref()) {
        c.counted = Some(io.clone());
        c.counted_by = Some("thread_io".into());
        c.not_counted = None;
    }
}

/// The diskstats names behind a placement ("loop0", "sda+sdb").
fn devices_of(p: &Placement) -> Vec<String> {
    match p {
        Placement::Device { name } => name.split('+').map(str::to_string).collect(),
        _ => Vec::new(),
    }
}

fn disk_stat_delta(d: &procfs::DiskStat) -> DiskDelta {
    DiskDelta {
        read_bytes: d.read_bytes(),
        write_bytes: d.write_bytes(),
        read_ios: d.read_ios,
        write_ios: d.write_ios,
        read_ms: d.read_ms,
        write_ms: d.write_ms,
        io_ticks_ms: d.io_ticks_ms,
        discard_bytes: d.discard_sectors * 512,
    }
}

fn disk_delta(a: &Sample, b: &Sample) -> DiskDelta {
    sample::disk_delta(a, b)
        .map(|d| disk_stat_delta(&d))
        .unwrap_or_default()
}

fn own_delta(a: &Sample, b: &Sample) -> Option<ProcessIo> {
    sample::io_delta(a, b).map(|d| ProcessIo {
        rchar: d.rchar,
        wchar: d.wchar,
        read_bytes: d.read_bytes,
        write_bytes: d.write_bytes,
        cancelled_write_bytes: d.cancelled_write_bytes,
    })
}

/// The plain facts of one repetition from its three samples.
fn facts_from(
    o: &Outcome,
    placement: Placement,
    begin: &Sample,
    end: &Sample,
    last: &Sample,
    job: &[u32],
) -> Facts {
    Facts {
        test: o.test.clone(),
        // A write benchmark means to measure storage, whatever the runner calls it.
        intent: if o.is_write { Intent::Device } else { o.intent },
        is_write: o.is_write,
        direct: o.direct,
        app_read: o.app_read_bytes,
        app_write: o.app_write_bytes,
        timed_seconds: o.timed_seconds,
        headline_bps: o.headline_bps,
        ram_bytes: begin.mem.map_or(0, |m| m.total),
        placement,
        device_window: disk_delta(begin, end),
        device_total: disk_delta(begin, last),
        own_window: own_delta(begin, end),
        own_total: own_delta(begin, last),
        exact: None,
        others_io: sample::others_delta(begin, last, job),
        job_io: sample::job_delta(begin, last, job),
        exclusive: false,
        window_seconds: end.at.saturating_duration_since(begin.at).as_secs_f64(),
        total_seconds: last.at.saturating_duration_since(begin.at).as_secs_f64(),
        repetitions: 1,
        access: o.access,
        fadvise: o.fadvise,
        ops: (o.ops > 0).then(|| OpFacts {
            count: o.ops,
            latency: operations::coarse(&o.op_latency),
        }),
        // A test that both reads and writes keeps each direction's operations apart.
        read_ops: operations::direction_ops(o, false),
        write_ops: operations::direction_ops(o, true),
        osync: o.osync,
        flush_seconds: o.flush_seconds,
        flush_in_timing: o.flush_in_timing,
        cpu_seconds: o.cpu_seconds,
        threads: o.threads.max(1),
        dirty_at_begin: begin.mem.map(|m| m.dirty),
        calls: o.calls.as_ref().map(|expected| {
            let io = sample::io_delta(begin, end);
            CallFacts {
                expected: expected.clone(),
                counted: None,
                syscr: io.map(|d| d.syscr),
                syscw: io.map(|d| d.syscw),
                not_counted: Some("the witness was turned off (--witness off)".into()),
                sample: o.calls_sample,
                counted_by: None,
            }
        }),
        given: o.given.clone(),
        ..Default::default()
    }
}

fn memory_of(begin: &Sample, last: &Sample, tl: &Timeline) -> Option<MemoryDelta> {
    let (b, l) = (begin.mem?, last.mem?);
    Some(MemoryDelta {
        dirty_before: b.dirty,
        dirty_after: l.dirty,
        dirty_peak: tl.dirty_peak.max(b.dirty).max(l.dirty),
        writeback_after: l.writeback,
        cached_before: b.cached,
        cached_after: l.cached,
    })
}

fn file_cache_of(before: &Residency, end: Option<&Residency>) -> Option<FileCache> {
    let end = end.copied().unwrap_or_default();
    let method = if before.method.is_empty() {
        end.method
    } else {
        before.method
    };
    if method.is_empty() {
        return None;
    }
    Some(FileCache {
        method: method.into(),
        file_pages: before.pages.max(end.pages),
        resident_before: before.resident,
        resident_after: end.resident,
        dirty_before: before.dirty,
        dirty_after: end.dirty,
    })
}

/// Merges the witnesses of a test's repetitions into the test's witness.
pub fn combine(reps: Vec<candor_model::Witness>) -> Option<candor_model::Witness> {
    facts::combine(reps)
}

/// Merges the witnesses of a test's repetitions whose calls were counted on a pass of
/// their own (`candor replay`'s counting pass): the repetitions' figures, judged with the
/// pass's count of the calls, as if their first repetition had been counted.
pub fn combine_counted(
    mut reps: Vec<candor_model::Witness>,
    pass: &candor_model::Witness,
) -> Option<candor_model::Witness> {
    if let (Some(first), Some(calls)) = (
        reps.first_mut().and_then(|w| w.extra.facts.as_mut()),
        pass.extra.facts.as_ref().map(|f| f.calls.clone()),
    ) {
        first.calls = calls;
    }
    facts::combine(reps)
}

/// The machine (CPU, caches, RAM, kernel).
pub fn describe_host() -> Host {
    host::describe_host()
}

/// Whether a filesystem of this type keeps its data in memory (tmpfs, ramfs...).
pub fn is_memory_fs(fs_type: &str) -> bool {
    host::is_memory_fs(fs_type)
}

/// The target's filesystem, mount options and block device.
pub fn describe_target(path: &Path) -> TargetInfo {
    host::describe_target(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use candor_model::Verdict;
    use std::io::{Read, Write};
    use std::time::Instant;

    fn config(mode: Mode) -> Config {
        Config {
            mode,
            interval: Duration::from_millis(10),
            trace_syscalls: true,
            job: Vec::new(),
        }
    }

    /// This process's sampler threads (named "candor-witness"), each with whether it has
    /// taken a sample yet: a sampler reads /proc on every tick and on nothing else, so its
    /// own `rchar` (its thread's io counters) is 0 until its first.
    fn samplers() -> Vec<(u32, bool)> {
        let kernel = procfs::Kernel::system();
        let tasks = kernel
            .pid_tasks(procfs::Pid::Me)
            .expect("this process's threads");
        tasks
            .into_iter()
            .filter_map(|tid| {
                let comm = kernel.read(format!("proc/self/task/{tid}/comm")).ok()?;
                if comm.trim_end() != "candor-witness" {
                    return None;
                }
                // Read without counting: this reading is not a sampler's.
                let io = kernel.read(format!("proc/self/task/{tid}/io")).ok()?;
                let rchar = procfs::PidIo::parse(&io)?.rchar;
                Some((tid, rchar > 0))
            })
            .collect()
    }

    /// A 16 MiB file just written, read 4 times through the procfs witness with a 10 ms
    /// timeline. Its pages are all in the page cache before the watch begins (the witness
    /// says so), so reading them moves nothing on the device: the verdict must be `cache`
    /// on a block device, and `memory` where the temporary directory has none.
    ///
    /// As root the witness reads every process's counters and takes the device's reads
    /// that no other process accounts for as the test's (the filesystem's work for it), so
    /// a shared disk's reads by processes it cannot see (one that came and went between
    /// two samples) could make the verdict `device`: the file is then on a scratch ext4
    /// on a loop device nobody else reads. Otherwise, in the temporary directory, only this
    /// process's own reads are the test's.
    #[test]
    fn a_watch_on_a_real_file_fills_every_procfs_figure() {
        // The mkfs and mount of other tests of this process would join its io counters when
        // reaped, as device reads of this one: none runs while this watch does.
        let _one = crate::testkit::scratch_lock();
        const SIZE: u64 = 16 << 20;
        const READS: u64 = 4;
        let tmp = tempfile::tempdir().unwrap();
        let scratch = if candor_testkit::is_root() {
            let Some(fs) = candor_testkit::need_or(
                candor_lab::scratch("ext4", 128 << 20),
                candor_lab::LabError::is_unsupported,
            ) else {
                return;
            };
            Some(fs)
        } else {
            None
        };
        let dir = scratch.as_ref().map_or(tmp.path(), |fs| fs.path());
        let p = dir.join("f");
        std::fs::File::create(&p)
            .unwrap()
            .write_all(&vec![1u8; SIZE as usize])
            .unwrap();
        let (w, note) = Witness::new(dir, config(Mode::Procfs));
        assert!(note.is_none(), "procfs asked, procfs given");
        let (expected, words) = match &w.placement {
            Placement::Device { .. } => (
                Verdict::Cache,
                "of these reads came from the page cache: this is memory speed",
            ),
            Placement::Memory { .. } => (Verdict::Memory, "every figure is memory speed"),
            Placement::Unobservable { reason } => panic!("a temporary directory: {reason}"),
        };
        let before: Vec<u32> = samplers().into_iter().map(|(tid, _)| tid).collect();
        let mut watch = w.begin(std::slice::from_ref(&p));
        let t0 = Instant::now();
        let mut buf = Vec::new();
        for _ in 0..READS {
            buf.clear();
            std::fs::File::open(&p)
                .unwrap()
                .read_to_end(&mut buf)
                .unwrap();
            assert_eq!(buf.len() as u64, SIZE);
        }
        // The timed region ends once this watch's sampler has taken a sample of its own
        // (every sampler begun since, still running, has).
        let deadline = t0 + Duration::from_secs(30);
        loop {
            let new: Vec<bool> = samplers()
                .into_iter()
                .filter(|(tid, _)| !before.contains(tid))
                .map(|(_, sampled)| sampled)
                .collect();
            if !new.is_empty() && new.iter().all(|s| *s) {
                break;
            }
            assert!(Instant::now() < deadline, "no sample in 30 s at 10 ms");
            std::thread::sleep(Duration::from_millis(1));
        }
        let secs = t0.elapsed().as_secs_f64();
        watch.timed_end();
        let out = watch.finish(&Outcome {
            test: "reread".into(),
            intent: Intent::Cache,
            app_read_bytes: READS * SIZE,
            timed_seconds: secs,
            headline_bps: (READS * SIZE) as f64 / secs,
            ..Default::default()
        });
        assert_eq!(out.source, "procfs");
        assert_eq!(out.app.read_bytes, READS * SIZE);
        assert!(out.memory.is_some());
        assert!(!out.vmstat.is_empty());
        // At least one tick inside the timed region, and the point that closes it.
        assert!(out.timeline.len() >= 2, "{:?}", out.timeline);
        assert!(out.timeline.windows(2).all(|p| p[0].t < p[1].t));
        let fc = out.file_cache.clone().expect("file cache");
        assert_eq!(fc.file_pages * 4096, SIZE);
        assert_eq!(
            fc.resident_before, fc.file_pages,
            "the whole file in memory"
        );
        let pio = out.process_io.expect("process io");
        // Other tests run in this process at the same time, so rchar is only bounded below
        // here (the subtraction of the witness's own reads is tested in sample.rs).
        assert!(pio.rchar >= READS * SIZE, "rchar {}", pio.rchar);
        assert_eq!(out.verdict, expected, "{}", out.explanation);
        assert!(!out.contradicts_intent, "{}", out.explanation);
        assert!(out.explanation.contains(words), "{}", out.explanation);
        if expected == Verdict::Cache {
            let hit = out.cache_hit_ratio.expect("a cache hit ratio");
            assert!(hit >= 0.95, "{hit}: {}", out.explanation);
        }
        let combined = combine(vec![out.clone(), out]).expect("combined");
        assert_eq!(combined.app.read_bytes, 2 * READS * SIZE);
        assert_eq!(combined.verdict, expected);
    }

    #[test]
    fn off_is_unverified_and_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let (w, note) = Witness::new(dir.path(), config(Mode::Off));
        assert!(note.is_none());
        assert_eq!(w.source_name(), "off");
        let mut watch = w.begin(&[]);
        watch.timed_end();
        let out = watch.finish(&Outcome {
            test: "read".into(),
            intent: Intent::Device,
            app_read_bytes: 4096,
            ..Default::default()
        });
        assert_eq!(out.source, "off");
        assert_eq!(out.verdict, Verdict::Unverified);
        assert!(out
            .unverified_reason
            .unwrap_or_default()
            .contains("--witness off"));
    }

    /// Where the eBPF witness can load (root, and the kernel itself loads and attaches an
    /// eBPF program: asked of the kernel, not of candor-bpf's probe) it must load;
    /// elsewhere it falls back to procfs with one line. A witness that falls back where it
    /// could load is a failure.
    #[test]
    fn bpf_requested_loads_where_it_can_and_falls_back_with_one_line_elsewhere() {
        let dir = tempfile::tempdir().unwrap();
        let kernel = if candor_testkit::is_root() {
            candor_testkit::kernel_bpf().err()
        } else {
            Some("not root".to_string())
        };
        let (w, note) = Witness::new(dir.path(), config(Mode::Bpf));
        match kernel {
            Some(missing) => {
                assert_eq!(w.source_name(), "procfs", "eBPF loaded without {missing}");
                let note = note.expect("a fallback line");
                assert!(note.contains("procfs") || note.contains("/proc"), "{note}");
                assert!(!note.contains('\n'));
            }
            None => {
                assert_eq!(w.source_name(), "bpf", "eBPF can load here: {note:?}");
                assert!(note.is_none(), "{note:?}");
            }
        }
    }

    #[test]
    fn a_missing_target_is_unobservable_not_an_error() {
        let (w, _) = Witness::new(Path::new("/nonexistent/candor"), config(Mode::Procfs));
        let out = w.begin(&[]).finish(&Outcome {
            test: "read".into(),
            intent: Intent::Device,
            app_read_bytes: 4096,
            ..Default::default()
        });
        assert_eq!(out.verdict, Verdict::Unverified);
    }
}
