//! The result model: every figure candor measures ends up in these types, and every
//! reporter reads them back from JSON. Fields are only ever added (with a serde default),
//! so files written by older versions of the same `schema_version` still load.
//! The schema is documented in `docs/results-schema.md`.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub mod advice;
pub mod audit;
pub mod bounded;
mod extra;
mod facts;
mod load;
mod operations;
mod options;
mod ranks;
pub mod refusal;
mod source;
mod steady;
mod time;
pub mod units;
mod verify;
mod vocab;
pub use extra::WitnessExtra;
pub use facts::{
    CallCount, CallFacts, CallSample, Ceiling, DiskDelta, Exact, Facts, FsFacts, LoopFacts,
    MetaFacts, OpFacts, Placement, RequestFacts, RequestStat,
};
pub use load::{
    load_result, load_result_within, parse_result, LoadError, DEFAULT_MAX_INPUT, LARGEST_FIGURE,
};
pub use operations::{CallCheck, KindCheck, Operations, Trap, TrapKind};
pub use options::{
    AuditSaved, DeviceSpecSaved, OptionsOf, ReplaySaved, RunSaved, SavedOptions, SteadySaved,
};
pub use ranks::{Moments, NodeFigures, NodeTraffic, RankFigures, Spread};
pub use source::{Chosen, WitnessSource};
pub use steady::{Precondition, Ramp, SteadyBasis, SteadyRound, SteadyState, WindowFit};
pub use time::{rfc3339, rfc3339_now};
pub use verify::{BadKind, BadKinds, VerifyOutcome};
pub use vocab::{Access, Direction, Fadvise, Intent, Status, Verdict};

/// Bumped when a field changes meaning or is removed; additions keep the version.
pub const SCHEMA_VERSION: u32 = 3;

/// The value of `tool` in every file candor writes.
pub const TOOL: &str = "candor";

/// One saved run: `candor run` writes it, `candor report` and `candor compare` read it.
#[derive(Serialize, Deserialize, Clone, Debug, Default)]
#[serde(default)]
pub struct RunDoc {
    pub schema_version: u32,
    pub tool: String,
    /// "run" for `candor run`, "audit" for `candor audit`.
    pub kind: String,
    pub candor_version: String,
    #[serde(deserialize_with = "crate::bounded::vec")]
    pub command_line: Vec<String>,
    /// RFC 3339, UTC.
    pub started_at: String,
    pub finished_at: Option<String>,
    /// False while the run is going on and when it was interrupted or failed.
    pub complete: bool,
    /// Why the run stopped early ("interrupted by SIGINT", "failed: ...").
    pub stop_reason: Option<String>,
    pub host: Host,
    #[serde(deserialize_with = "crate::bounded::vec")]
    pub targets: Vec<TargetInfo>,
    /// The options as the run understood them, typed by the command that saved them (for
    /// the report header, `candor merge` and the fio export).
    pub options: SavedOptions,
    #[serde(deserialize_with = "crate::bounded::vec")]
    pub results: Vec<TestResult>,
    /// Typed warnings, already worded for a person, each with its remedy.
    #[serde(deserialize_with = "crate::bounded::vec")]
    pub warnings: Vec<String>,
    /// Present for runs made over MPI.
    pub mpi: Option<MpiInfo>,
    /// Present for `candor audit`.
    #[serde(
        deserialize_with = "crate::audit::opt_audit",
        serialize_with = "crate::audit::save_audit"
    )]
    pub audit: Option<audit::AuditDoc>,
    /// Where the run's clock started (`Repetition::started_s` counts from it), so that
    /// `candor merge` can put runs of several machines on one time line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clock: Option<RunClock>,
}

/// How `MpiInfo::library` begins in a result made by `candor merge` (runs of one plan, one
/// per rank, started by any launcher, without barriers between them).
pub const MERGE_LIBRARY: &str = "candor merge";

/// The instant a run's repetition times count from, on the machine's clocks.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct RunClock {
    /// CLOCK_MONOTONIC, ns: exact between runs of one boot of one machine.
    pub monotonic_ns: u64,
    /// The same instant on CLOCK_REALTIME, ns since 1970: comparable between machines as far
    /// as their clocks agree (NTP: typically within a millisecond).
    pub realtime_ns: u64,
    /// The kernel's random boot_id: runs with the same one share the monotonic clock.
    pub boot_id: String,
}

impl RunDoc {
    pub fn new(kind: &str, command_line: Vec<String>, started_at: String) -> Self {
        RunDoc {
            schema_version: SCHEMA_VERSION,
            tool: TOOL.to_string(),
            kind: kind.to_string(),
            candor_version: env!("CARGO_PKG_VERSION").to_string(),
            command_line,
            started_at,
            ..Default::default()
        }
    }
}

/// The machine, as source document 000's Table 1 describes it.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct Host {
    pub hostname: String,
    pub os: String,
    pub kernel: String,
    pub cpu_model: String,
    pub cores: u32,
    pub threads: u32,
    #[serde(deserialize_with = "crate::bounded::vec")]
    pub caches: Vec<CpuCache>,
    pub ram_bytes: u64,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct CpuCache {
    pub level: u32,
    /// "Data", "Instruction" or "Unified".
    pub kind: String,
    pub size_bytes: u64,
}

/// A directory candor benchmarked, with what lies under it.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct TargetInfo {
    pub path: String,
    pub fs_type: String,
    pub mount_point: String,
    pub mount_source: String,
    pub mount_options: String,
    pub free_bytes: u64,
    pub total_bytes: u64,
    /// None for filesystems with no block device (tmpfs, FUSE, network).
    pub device: Option<BlockDevice>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct BlockDevice {
    /// Kernel name of what the filesystem sits on ("vda", "sda1", "loop0").
    pub name: String,
    /// The whole disk(s) whose counters are read: the disk of a partition, and what lies
    /// beneath a loop, dm or md device.
    #[serde(deserialize_with = "crate::bounded::vec")]
    pub counted: Vec<String>,
    pub model: String,
    pub rotational: bool,
    pub size_bytes: u64,
    pub scheduler: String,
    pub logical_block_size: u32,
    pub physical_block_size: u32,
}

/// Mean, spread and confidence of one figure over the repetitions.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct Summary {
    pub mean: f64,
    pub stddev: f64,
    pub min: f64,
    pub max: f64,
    /// 95% confidence interval of the mean (Student t), [low, high].
    pub ci95: [f64; 2],
    /// Coefficient of variation, stddev / mean (0 when n < 2).
    pub cv: f64,
    pub n: u32,
    /// One value per repetition, in the order they ran.
    #[serde(deserialize_with = "crate::bounded::vec")]
    pub samples: Vec<f64>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct Latency {
    pub min: u64,
    pub mean: f64,
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub p999: u64,
    pub max: u64,
    /// How many operations were timed.
    pub count: u64,
    /// The operations timed were a sample: about one in this many, chosen at random (a
    /// copy with buffers under 64 KiB); absent when every operation was timed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampled_every: Option<u64>,
}

/// A histogram in its saved form: (lower bound in ns, count) for every non-empty bucket.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct HistogramDump {
    /// Relative width of a bucket (the largest error of a percentile read from it).
    pub relative_error: f64,
    #[serde(deserialize_with = "crate::bounded::vec")]
    pub buckets: Vec<[u64; 2]>,
}

impl HistogramDump {
    /// Adds the counts of `b` (a histogram on the same scale).
    pub fn merge(&mut self, b: &HistogramDump) {
        let mut m: BTreeMap<u64, u64> = self.buckets.iter().map(|x| (x[0], x[1])).collect();
        for x in &b.buckets {
            *m.entry(x[0]).or_insert(0) += x[1];
        }
        self.buckets = m.into_iter().map(|(k, v)| [k, v]).collect();
        self.relative_error = self.relative_error.max(b.relative_error);
    }

    pub fn count(&self) -> u64 {
        self.buckets.iter().map(|x| x[1]).sum()
    }

    /// The lower bound of the bucket holding the q-quantile (None when empty).
    pub fn quantile_lower(&self, q: f64) -> Option<u64> {
        let total = self.count();
        if total == 0 {
            return None;
        }
        let rank = ((q * total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for x in &self.buckets {
            seen += x[1];
            if seen >= rank {
                return Some(x[0]);
            }
        }
        self.buckets.last().map(|x| x[0])
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct Cpu {
    /// CPU seconds of the whole process (all threads) during the timed region, mean per repetition.
    pub user_s: f64,
    pub sys_s: f64,
    /// Wall seconds of the timed region, mean per repetition.
    pub wall_s: f64,
    /// (user + sys) / wall, in percent (iozone -+u): 100 = one core busy.
    pub cpu_pct: f64,
}

/// Aggregates of a multi-thread test, both ways iozone reports them.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct ThreadAggregate {
    /// Sum of the per-thread rates (iozone "Children see"), bytes/s.
    pub children_see: f64,
    /// Total bytes over the wall time of the slowest thread (iozone "Parent sees"), bytes/s.
    pub parent_sees: f64,
    pub min_thread: f64,
    pub max_thread: f64,
    pub avg_thread: f64,
    pub stonewalled: bool,
    /// Bytes each thread moved in the last repetition.
    #[serde(deserialize_with = "crate::bounded::vec")]
    pub per_thread_bytes: Vec<u64>,
}

/// One repetition of one test, as measured.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct Repetition {
    pub bytes: u64,
    pub ops: u64,
    /// Seconds of the headline timed region (with flush unless --no-fsync-in-timing).
    pub seconds: f64,
    /// Seconds from the first operation to the end of the last one, before any flush.
    pub io_seconds: f64,
    /// Seconds spent in fsync/msync/fflush at the end of a write test.
    pub flush_seconds: f64,
    /// Seconds spent in close, when measured.
    pub close_seconds: f64,
    /// True when --runtime stopped the repetition before the whole file was covered.
    pub truncated: bool,
    /// Seconds since the run started at which this repetition's timed region began.
    pub started_s: f64,
    /// With `--cpus`: where each thread ran, as the thread saw it (absent without pinning).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::bounded::vec")]
    pub pinned: Vec<Pinned>,
}

/// One pinned thread of a repetition (`--cpus`), in thread order.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(default)]
pub struct Pinned {
    /// The CPUs the kernel let the thread run on once pinned (its affinity, read back).
    #[serde(deserialize_with = "crate::bounded::vec")]
    pub allowed: Vec<u32>,
    /// The CPU the thread was on when its I/O ended (`sched_getcpu`).
    pub last_cpu: Option<u32>,
}

/// One test at one point of the plan (target x test x sizes x threads x depth).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct TestResult {
    pub target: String,
    pub test: String,
    pub engine: String,
    pub file_size: u64,
    pub record_size: u64,
    pub threads: u32,
    pub iodepth: u32,
    pub direct: bool,
    pub osync: bool,
    pub fsync_in_timing: bool,
    pub close_in_timing: bool,
    /// What the test is meant to measure: "device" (caches dropped first) or "cache"
    /// (re-tests and --keep-cache, which read what is already in memory).
    pub intent: Intent,
    pub status: Status,
    /// The access hint the test's files were opened with (absent: none).
    #[serde(skip_serializing_if = "is_no_hint")]
    pub fadvise: Fadvise,
    /// Which way the test's data goes (absent for metadata tests, and in files saved
    /// before it was stored: [`TestResult::direction`] then tells it from the test's name).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub direction: Option<Direction>,
    /// How the test walks its file (record tests only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub access: Option<Access>,
    pub error: Option<String>,
    pub repetitions: u32,
    /// Headline throughput, bytes per second.
    pub throughput: Summary,
    /// Write tests: throughput with the flush left out of the timing.
    pub throughput_without_flush: Option<Summary>,
    /// Write tests: throughput with the flush inside the timing.
    pub throughput_with_flush: Option<Summary>,
    /// Operations per second (one operation = one record).
    pub iops: Summary,
    pub latency_ns: Latency,
    pub latency_histogram: HistogramDump,
    pub cpu: Cpu,
    pub thread_aggregate: Option<ThreadAggregate>,
    #[serde(deserialize_with = "crate::bounded::vec")]
    pub reps: Vec<Repetition>,
    pub witness: Option<Witness>,
    /// Share of a device's ceiling reached (studies).
    pub efficiency: Option<Efficiency>,
    /// Data verification outcome (--verify).
    pub verify: Option<VerifyOutcome>,
    /// Per-rank figures of an MPI run.
    #[serde(
        deserialize_with = "crate::ranks::opt_spread",
        serialize_with = "crate::ranks::save_spread"
    )]
    pub ranks: Option<Spread>,
    /// Figures kept by name: with `--duration`, `rounds_throughput` and `failed_rounds`;
    /// `candor replay`'s `replay` (docs/results-schema.md).
    #[serde(deserialize_with = "crate::bounded::value_map")]
    pub extra: BTreeMap<String, serde_json::Value>,
    /// `--ramp`: the unmeasured warm-up before the repetitions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ramp: Option<Ramp>,
    /// `--precondition`: the writes to the test's files before it, and what the device took.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub precondition: Option<Precondition>,
    /// `--steady-state`: every round and the verdict; the figures above are the window's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steady_state: Option<SteadyState>,
}

fn is_no_hint(f: &Fadvise) -> bool {
    *f == Fadvise::None
}

impl TestResult {
    /// Which way the headline figure's data goes: as stored, or for a file saved before
    /// it was (and a metadata test) from the test's name.
    pub fn direction(&self) -> Direction {
        match self.direction {
            Some(d) => d,
            None if matches!(self.test.as_str(), "randmix" | "copy") => Direction::Mixed,
            None if is_write_test(&self.test) => Direction::Write,
            None => Direction::Read,
        }
    }

    /// Whether the headline figure includes writing.
    pub fn is_write(&self) -> bool {
        self.direction().writes()
    }
}

/// True for tests whose headline figure includes writing.
pub fn is_write_test(name: &str) -> bool {
    matches!(
        name,
        "write"
            | "rewrite"
            | "randwrite"
            | "recrewrite"
            | "fwrite"
            | "frewrite"
            | "pwrite"
            | "repwrite"
            | "pwritev"
            | "repwritev"
            | "mmapwrite"
            | "randmix"
            | "copy"
    )
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct Efficiency {
    /// What the figure is compared with: "seq" (bytes/s) or "iops".
    pub basis: String,
    pub ceiling: f64,
    /// Where the ceiling came from: "spec" or "measured".
    pub source: String,
    pub share: f64,
}

/// What the kernel saw during one test.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct Witness {
    /// "procfs", "bpf" or "off".
    pub source: String,
    pub verdict: Verdict,
    /// For "mixed": the share of the application's bytes that the device moved.
    pub device_share: Option<f64>,
    /// One plain sentence, with a suggestion when the verdict is not what the test meant.
    pub explanation: String,
    /// True when the verdict contradicts the test's intent (a device test served by the cache...).
    pub contradicts_intent: bool,
    /// Why the witness could not observe (verdict "unverified").
    pub unverified_reason: Option<String>,
    pub app: AppIo,
    pub process_io: Option<ProcessIo>,
    pub device: Option<DeviceIo>,
    /// Reads: share of the bytes that did not come from the device.
    pub cache_hit_ratio: Option<f64>,
    /// Writes: device bytes written because of the test, after the data is on disk, over app bytes.
    pub write_amplification: Option<f64>,
    /// Writes: share of the app bytes that reached the device inside the timed region.
    pub flushed_in_window: Option<f64>,
    pub disturbed: bool,
    /// Device traffic that candor's own counters cannot explain.
    pub foreign_device_bytes: u64,
    /// |headline - witness throughput| / headline, when the witness can compute one.
    pub precision: Option<f64>,
    pub memory: Option<MemoryDelta>,
    /// Deltas of selected vmstat counters.
    #[serde(deserialize_with = "crate::bounded::map")]
    pub vmstat: BTreeMap<String, i64>,
    /// The io pressure's "some" and "full" total stall, microseconds, during the test.
    pub io_pressure_us: Option<[u64; 2]>,
    pub file_cache: Option<FileCache>,
    #[serde(deserialize_with = "crate::bounded::vec")]
    pub timeline: Vec<TimelinePoint>,
    /// eBPF only: per syscall name.
    #[serde(deserialize_with = "crate::bounded::opt_map")]
    pub syscalls: Option<BTreeMap<String, SyscallStat>>,
    /// eBPF only: per direction ("read", "write").
    #[serde(deserialize_with = "crate::bounded::opt_map")]
    pub block: Option<BTreeMap<String, BlockStat>>,
    /// eBPF only: pages of the tracked files inserted into the page cache (misses).
    pub cache_misses: Option<u64>,
    /// The test's operations against the device's requests: how many waited on the device
    /// and how many were served from memory (docs/witness.md, "Operations").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operations: Option<Operations>,
    /// Copy and metadata tests: their system calls as the runner made them against the
    /// kernel's count (docs/witness.md, "Metadata tests").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub syscalls_check: Option<CallCheck>,
    /// Traps of the host that make a figure other than it seems (a loop device over a
    /// cached file, a CPU-bound test...), each with its sentence.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::bounded::vec")]
    pub traps: Vec<Trap>,
    /// Details a source adds (documented in docs/results-schema.md), and the facts the
    /// verdict was judged from (`extra.facts`).
    pub extra: WitnessExtra,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct AppIo {
    pub read_bytes: u64,
    pub write_bytes: u64,
}

/// Growth of a process's io counters (procfs) over an interval (candor's own over a test, the
/// witness's own reads of /proc taken out of rchar).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq)]
#[serde(default)]
pub struct ProcessIo {
    /// Bytes returned by read-like calls (cache hits included).
    pub rchar: u64,
    pub wchar: u64,
    /// Block-layer reads submitted by the process (misses, readahead, O_DIRECT).
    pub read_bytes: u64,
    /// Bytes dirtied (buffered) or written directly.
    pub write_bytes: u64,
    pub cancelled_write_bytes: u64,
}

impl std::ops::AddAssign<&ProcessIo> for ProcessIo {
    fn add_assign(&mut self, o: &ProcessIo) {
        self.rchar += o.rchar;
        self.wchar += o.wchar;
        self.read_bytes += o.read_bytes;
        self.write_bytes += o.write_bytes;
        self.cancelled_write_bytes += o.cancelled_write_bytes;
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct DeviceIo {
    /// Devices counted ("vda", or "loop0+vda").
    pub name: String,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub read_ios: u64,
    pub write_ios: u64,
    pub avg_request_bytes: f64,
    /// Share of the interval the device was busy (diskstats io_ticks).
    pub util: f64,
    pub avg_latency_us: f64,
    /// Write bytes inside the timed region only (the rest came with the final flush).
    pub write_bytes_in_window: u64,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct MemoryDelta {
    pub dirty_before: u64,
    pub dirty_after: u64,
    pub dirty_peak: u64,
    pub writeback_after: u64,
    pub cached_before: u64,
    pub cached_after: u64,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct FileCache {
    /// Which call answered: "cachestat" or "mincore".
    pub method: String,
    pub file_pages: u64,
    pub resident_before: u64,
    pub resident_after: u64,
    pub dirty_before: Option<u64>,
    pub dirty_after: Option<u64>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct TimelinePoint {
    /// Seconds since the test's timed region began.
    pub t: f64,
    pub device_read_bps: f64,
    pub device_write_bps: f64,
    /// What candor's process moved (rchar/wchar rate), bytes/s.
    pub app_read_bps: f64,
    pub app_write_bps: f64,
    pub dirty_bytes: u64,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct SyscallStat {
    pub count: u64,
    pub bytes: u64,
    pub time_ns: u64,
    pub latency: HistogramDump,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct BlockStat {
    pub completions: u64,
    pub bytes: u64,
    pub size_histogram: HistogramDump,
    pub latency: HistogramDump,
    pub p50_us: f64,
    pub p99_us: f64,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct MpiInfo {
    pub ranks: u32,
    pub nodes: u32,
    #[serde(deserialize_with = "crate::bounded::vec")]
    pub ranks_per_node: Vec<u32>,
    #[serde(deserialize_with = "crate::bounded::vec")]
    pub node_names: Vec<String>,
    pub shared_file: bool,
    pub reorder: bool,
    /// The MPI library and launcher the run used (e.g. "Open MPI v4.1.4 (OMPI)").
    pub library: String,
    /// Node of each rank, by index into `node_names`.
    #[serde(deserialize_with = "crate::bounded::vec")]
    pub rank_nodes: Vec<u32>,
    /// Each rank's clock minus rank 0's clock, estimated at the start (ns); rank times are
    /// shifted by it onto rank 0's clock before spans are computed.
    #[serde(deserialize_with = "crate::bounded::vec")]
    pub clock_offsets_ns: Vec<i64>,
    /// Half the round trip of the exchange each offset came from: the offset's uncertainty.
    #[serde(deserialize_with = "crate::bounded::vec")]
    pub clock_uncertainty_ns: Vec<u64>,
}
