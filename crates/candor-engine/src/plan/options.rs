//! What a person asked of `candor run`: the vocabularies (engine, witness source, buffer
//! pattern) already typed by the command line, lists, sizes and durations as they were
//! written, so that the plan step can say in one sentence which one is wrong and how.
//! The small parsers here are pure, with their tests beside them.

use super::PlanError;
use crate::engines::{parse_engine, EngineKind};
use crate::size::parse_size;
use crate::verify::BufferPattern;
use crate::workload::Hint;
use candor_model::refusal::refusing;
use candor_procfs::paths::DROP_CACHES;
use candor_report::Format;
use candor_witness::Mode;
use std::path::PathBuf;
use std::time::Duration;

/// `candor run`'s options, each defined once, here: its flag, help (the doc comment),
/// heading, default and value check are clap's attributes, its saved name is given in
/// `record` (`plan/mod.rs`), and the plan checks it against the others and the targets.
/// Vocabularies (engine, witness source, format, buffer pattern, hint) are typed by value
/// parsers that refuse in one sentence; lists, sizes and durations are kept as written so
/// that the plan can say which one is wrong and how. The command line flattens this type
/// after its targets; `--help` shows the fields in this order under these headings.
#[derive(clap::Args, Clone, Debug)]
pub struct RunOptions {
    /// Tests to run, comma separated names or iozone's numbers 0-12.
    ///
    /// The names: write, rewrite, read, reread, randread, randwrite, bkwdread, recrewrite,
    /// strideread, fwrite, frewrite, fread, freread, randmix, pwrite, repwrite, pread,
    /// repread, pwritev, repwritev, preadv, repreadv, mmapwrite, mmapread, copy, create,
    /// stat, open, readdir, unlink, mkdir, rmdir; iozone's numbers 0-12 each mean their
    /// group. [default: write,read,randread,randwrite in the default run; 0,1,2 otherwise]
    #[arg(long, value_name = "LIST", help_heading = PLAN)]
    pub tests: Option<String>,

    /// File size(s) per thread, e.g. 64m or 4k,64k,1m (binary units).
    ///
    /// [default: 1g, halved until 8 files per thread fit in the free space, 16m at least;
    /// with --auto the sweep's]
    #[arg(long, value_name = "LIST", help_heading = PLAN)]
    pub file_size: Option<String>,

    /// Record size(s): the size of each I/O, e.g. 4k,64k,1m.
    ///
    /// Without it each test gets its kind's record, at most the smallest file; with --auto
    /// the sweep's. [default: 1m for sequential tests, 4k for random ones]
    #[arg(long, value_name = "LIST", help_heading = PLAN)]
    pub record_size: Option<String>,

    /// iozone -a: sweep file sizes 64K..512M and record sizes 4K..16M by powers of two.
    ///
    /// Each point runs once unless --repeat says otherwise; records under 64 KiB are
    /// skipped for files over 32 MiB, as iozone does.
    #[arg(long, help_heading = PLAN)]
    pub auto: bool,

    /// With --auto: the smallest file size of the sweep.
    ///
    /// [default: 64k]
    #[arg(long, value_name = "SIZE", help_heading = PLAN)]
    pub min_file_size: Option<String>,

    /// With --auto: the largest file size of the sweep.
    ///
    /// [default: 512m]
    #[arg(long, value_name = "SIZE", help_heading = PLAN)]
    pub max_file_size: Option<String>,

    /// With --auto: the smallest record size of the sweep.
    ///
    /// [default: 4k]
    #[arg(long, value_name = "SIZE", help_heading = PLAN)]
    pub min_record_size: Option<String>,

    /// With --auto: the largest record size of the sweep (at most the file).
    ///
    /// [default: 16m]
    #[arg(long, value_name = "SIZE", help_heading = PLAN)]
    pub max_record_size: Option<String>,

    /// A ready-made plan: iozone or unixbench-copy.
    ///
    /// "iozone" is iozone -a's sweep of all its tests (several minutes), printed in
    /// iozone's layout; "unixbench-copy" is UnixBench's three File Copy tests as its fstime
    /// runs them (256/1024/4096-byte buffers on 500/2000/8000 KiB files, 30 s each, no
    /// flush). [default: none: the default run, or the plan the options make]
    #[arg(long, value_name = "NAME", help_heading = PLAN)]
    pub preset: Option<String>,

    /// Thread count(s): one file per thread, all released together, e.g. 1,2,4,8.
    ///
    /// [default: 1]
    #[arg(long, value_name = "LIST", help_heading = PLAN)]
    pub threads: Option<String>,

    /// I/Os in flight per thread (io_uring), e.g. 1 or 1,4,16,32.
    ///
    /// A depth above 1 chooses io_uring when --engine is not given. [default: 1 and 8
    /// (sequential) or 32 (random) in the default run; 1 otherwise]
    #[arg(long, value_name = "LIST", help_heading = ENGINE)]
    pub iodepth: Option<String>,

    /// I/O engine: sync, psync, vector, stdio, mmap, io_uring, null.
    ///
    /// Tests named after an interface (fwrite, pread, mmapread...) use theirs whatever
    /// this says. [default: io_uring in the default run; psync otherwise, io_uring when
    /// --iodepth is above 1]
    #[arg(long, value_name = "NAME", value_parser = refusing(parse_engine), help_heading = ENGINE)]
    pub engine: Option<EngineKind>,

    /// Open files with O_DIRECT (bypass the page cache).
    ///
    /// The default run uses O_DIRECT where the filesystem takes it; a plan of options runs
    /// buffered without this.
    #[arg(long, help_heading = ENGINE)]
    pub direct: bool,

    /// Open files with O_SYNC.
    ///
    /// Every write then waits for the device.
    #[arg(long, help_heading = ENGINE)]
    pub osync: bool,

    /// Leave the final fsync out of write tests' headline figure (iozone's default).
    ///
    /// Both figures are reported either way.
    #[arg(long, help_heading = TIMING)]
    pub no_fsync_in_timing: bool,

    /// Include close() in the timed region (iozone -c).
    ///
    /// Off by default: close() is outside the timing.
    #[arg(long, help_heading = TIMING)]
    pub close_in_timing: bool,

    /// Do not drop the files' cached pages before read tests.
    ///
    /// All reads then mean to hit the cache.
    #[arg(long, help_heading = TIMING)]
    pub keep_cache: bool,

    /// Also write the kernel's drop_caches before read tests meant for the device (root).
    ///
    /// Every clean page on the machine is dropped, not only the test's files' (root only;
    /// refused otherwise).
    #[arg(long, help_heading = TIMING,
          help = format!("Also write {DROP_CACHES} before read tests meant for the device (root)"),
          long_help = format!("Also write {DROP_CACHES} before read tests meant for the device (root).\n\n\
              Every clean page on the machine is dropped, not only the test's files' (root only; refused otherwise)."))]
    pub drop_caches: bool,

    /// Repetitions of each test (mean, standard deviation, 95% confidence interval).
    ///
    /// Below the repetitions a meaningful interval needs, the tables show min-max instead.
    /// [default: 3; 1 with --auto, --preset iozone or --steady-state]
    #[arg(long, value_name = "N", help_heading = PLAN)]
    pub repeat: Option<u32>,

    /// Stride read: records skipped between reads.
    #[arg(long, value_name = "N", default_value_t = 17, help_heading = PLAN)]
    pub stride: u64,

    /// randmix: percentage of reads.
    #[arg(long, value_name = "PCT", default_value_t = 50, help_heading = PLAN)]
    pub mix_read_pct: u32,

    /// Stop all threads of a test when the first one finishes (iozone's stonewalling).
    ///
    /// Each thread's bytes are reported; off by default (every thread does its whole file).
    #[arg(long, help_heading = ENGINE)]
    pub stonewall: bool,

    /// Cap each repetition's I/O time, e.g. 5s or 500ms.
    ///
    /// A capped repetition covers only part of the file and says so. [default: 2s in the
    /// default run and whenever --file-size is not given (the files are then the default
    /// run's); none otherwise]
    #[arg(long, value_name = "DURATION", help_heading = TIMING)]
    pub runtime: Option<String>,

    /// With --runtime: keep going over the file until the runtime ends (fio's time_based).
    ///
    /// Pass after pass, instead of stopping after one pass.
    #[arg(long, help_heading = TIMING)]
    pub time_based: bool,

    /// Pin the I/O threads to these CPUs, e.g. 0,1 or 0-3.
    ///
    /// Thread i runs on the i-th CPU of the list (wrapping around). [default: not pinned]
    #[arg(long, value_name = "LIST", help_heading = ENGINE)]
    pub cpus: Option<String>,

    /// Witness source: auto, procfs, bpf or off.
    ///
    /// auto uses eBPF where it loads (root), else /proc.
    #[arg(long, value_name = "SOURCE", default_value = "auto", value_parser = refusing(Mode::parse), help_heading = WITNESS)]
    pub witness: Mode,

    /// With the eBPF witness, also trace every system call.
    ///
    /// Per-call counts, bytes, time and latency in `witness.syscalls`. Off by default:
    /// enabling the kernel's syscall tracepoints costs every system call about 0.2 µs (a
    /// fifth of a cached 4 KiB read); io_uring and device-bound tests barely notice.
    #[arg(long, help_heading = WITNESS)]
    pub trace_syscalls: bool,

    /// Witness timeline sampling period, e.g. 100ms.
    #[arg(long, value_name = "DURATION", default_value = "100ms", help_heading = WITNESS)]
    pub witness_interval: String,

    /// Save the result as JSON (rewritten atomically after every test).
    ///
    /// [default: not saved]
    #[arg(short, long, value_name = "FILE", help_heading = OUTPUT)]
    pub output: Option<PathBuf>,

    /// What to print on stdout: table, json, csv, markdown, iozone, excel, openmetrics,
    /// fio-json.
    ///
    /// [default: table; iozone with --preset iozone]
    #[arg(long, value_name = "FORMAT", value_parser = refusing(Format::from_arg), help_heading = OUTPUT)]
    pub format: Option<Format>,

    /// Also write the HTML report.
    ///
    /// [default: none]
    #[arg(long, value_name = "FILE", help_heading = OUTPUT)]
    pub html: Option<PathBuf>,

    /// Allow a block device as a target, overwriting candor's region of it.
    ///
    /// candor benchmarks the device itself, O_DIRECT by default, on `threads x
    /// --file-size` bytes from --offset, overwriting them. Refused when the device is in
    /// use (mounted, a mounted partition, swap, held by device-mapper or md, the backing of
    /// a loop device) or holds any signature libblkid knows: a filesystem, partition table,
    /// RAID or swap area (see --destroy-existing-data).
    #[arg(long, help_heading = TARGETS)]
    pub allow_device_writes: bool,

    /// With --allow-device-writes: overwrite a device even though it holds a signature.
    ///
    /// A filesystem, a partition table or another signature: its data is destroyed.
    #[arg(long, requires = "allow_device_writes", help_heading = TARGETS)]
    pub destroy_existing_data: bool,

    /// On a block device: where candor's region starts (a multiple of the logical block).
    ///
    /// [default: 0]
    #[arg(long, value_name = "SIZE", requires = "allow_device_writes", help_heading = TARGETS)]
    pub offset: Option<String>,

    /// On a block device: go through the page cache instead of the default O_DIRECT.
    ///
    /// Not with --direct.
    #[arg(long, conflicts_with = "direct", help_heading = TARGETS)]
    pub buffered: bool,

    /// Seed of the random orders and buffer contents.
    #[arg(long, value_name = "N", default_value_t = 0x0c4a_d0c4, help_heading = PLAN)]
    pub seed: u64,

    /// No progress bar.
    ///
    /// The notes, warnings and the output are still printed.
    #[arg(short, long, help_heading = OUTPUT)]
    pub quiet: bool,

    /// Run as one rank of an MPI job (`mpirun -n N candor run --mpi ...`).
    ///
    /// All ranks pass a barrier before each test, rank 0 merges and reports (see
    /// docs/mpi.md).
    #[arg(long, help_heading = MPI)]
    pub mpi: bool,

    /// With --mpi: read tests meant for the device read another rank's files.
    ///
    /// The next node's, IOR's -C, so no node reads back what it wrote; needs a shared
    /// target.
    #[arg(long, help_heading = MPI)]
    pub reorder: bool,

    /// With --mpi: one file per thread shared by all ranks, each on its own segment.
    ///
    /// IOR's default N-1 layout, instead of a file per rank; needs a shared target.
    #[arg(long, help_heading = MPI)]
    pub shared_file: bool,

    /// With --mpi: every rank also saves its own result as DIR/rank-N.json.
    ///
    /// Before the merge (`candor merge DIR/rank-*.json` gives the MPI run's figures
    /// again). [default: none]
    #[arg(long, value_name = "DIR", help_heading = MPI)]
    pub rank_output: Option<PathBuf>,

    /// Entries per thread for the metadata tests.
    ///
    /// create, stat, open, readdir, unlink, mkdir, rmdir.
    #[arg(long, value_name = "N", default_value_t = 1000, help_heading = PLAN)]
    pub files: u64,

    /// The device's ceiling, to report every result's efficiency against it.
    ///
    /// e.g. seq=510MB/s,iops=95000 (also seq-read, seq-write, iops-read, iops-write), or
    /// auto to measure it first (O_DIRECT, large sequential and 4 KiB random at depth 64).
    /// [default: none: no efficiency figures]
    #[arg(long, value_name = "SPEC", help_heading = WITNESS)]
    pub device_spec: Option<String>,

    /// Check the data: every record written carries a header, every record read is checked.
    ///
    /// The header holds the run, file, offset, generation and checksum, and the payload is
    /// derived from it; read tests report corruption, misdirected, stale and torn records
    /// (see docs/reliability.md).
    #[arg(long, help_heading = ENGINE)]
    pub verify: bool,

    /// What the buffers hold: random, zero, or compressible=N%.
    ///
    /// random is incompressible; compressible=N% makes N% of each 4 KiB zero.
    #[arg(long, value_name = "PATTERN", default_value = "random", value_parser = refusing(BufferPattern::parse), help_heading = ENGINE)]
    pub buffer_pattern: BufferPattern,

    /// The access hint given to the kernel for each test's files (posix_fadvise).
    ///
    /// auto is what the test means, as fio does: random for random tests, sequential for
    /// sequential ones; none under --preset iozone. Also none, random or sequential.
    #[arg(long, value_name = "HINT", default_value = "auto", value_parser = refusing(Hint::parse), help_heading = ENGINE)]
    pub fadvise: Hint,

    /// Soak: repeat the whole plan until this much time has passed, e.g. 10m.
    ///
    /// The results hold each test's last round and every round's throughput. [default: one
    /// pass over the plan]
    #[arg(long, value_name = "DURATION", help_heading = PLAN)]
    pub duration: Option<String>,

    /// Warm each test up for this long before its repetitions, e.g. 10s.
    ///
    /// The same workload, not measured (fio's ramp_time); what it did is kept in the
    /// result's `ramp`. [default: no warm-up]
    #[arg(long, value_name = "DURATION", help_heading = STEADY)]
    pub ramp: Option<String>,

    /// Run each test in rounds until a window of them is steady (SNIA PTS).
    ///
    /// Steady on the application's throughput and the device's: range within 20% and
    /// least-squares slope excursion within 10% of the window's average, or the most rounds
    /// have run. Optional parameters after '=': window=5,range=20%,slope=10%,round=5s,max=25
    /// (the defaults; see docs/methodology.md).
    #[arg(long, value_name = "PARAMS", num_args = 0..=1, require_equals = true, default_missing_value = "", help_heading = STEADY)]
    pub steady_state: Option<String>,

    /// Before each test, write its files sequentially PASSES times, then overwrite every
    /// block once at random.
    ///
    /// PASSES is 2 when not given, as PTS writes twice the capacity; the witness reports how
    /// much reached the device. Needs a filesystem on a block device.
    #[arg(long, value_name = "PASSES", num_args = 0..=1, require_equals = true, default_missing_value = "2", value_parser = refusing(parse_passes), help_heading = STEADY)]
    pub precondition: Option<u32>,
}

/// The headings of `candor run --help`, in the order they are shown.
const PLAN: &str = "Plan";
const ENGINE: &str = "Engine and I/O";
const TIMING: &str = "Timing and cache";
const WITNESS: &str = "Witness";
const STEADY: &str = "Steady state and preconditioning";
const TARGETS: &str = "Targets and devices";
const OUTPUT: &str = "Output";
const MPI: &str = "MPI";

impl Default for RunOptions {
    /// The command line's defaults: the options of `candor run` given nothing.
    fn default() -> Self {
        use clap::{Args, FromArgMatches};
        let cmd = RunOptions::augment_args(clap::Command::new("run").no_binary_name(true));
        let matches = cmd
            .try_get_matches_from(std::iter::empty::<&str>())
            .expect("every option has a default");
        RunOptions::from_arg_matches(&matches).expect("the defaults are valid options")
    }
}

impl RunOptions {
    /// No option that shapes the plan was given: the default run's preset applies.
    pub fn shapes_nothing(&self) -> bool {
        self.tests.is_none()
            && self.file_size.is_none()
            && self.record_size.is_none()
            && !self.auto
            && self.preset.is_none()
            && self.threads.is_none()
            && self.iodepth.is_none()
            && self.engine.is_none()
    }
}

/// `5s`, `500ms`, `2m`, `1.5` (seconds).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim().to_ascii_lowercase();
    let (num, mult) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = t.strip_suffix("us") {
        (n, 1e-6)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = t.strip_suffix('h') {
        (n, 3600.0)
    } else {
        (t.as_str(), 1.0)
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("'{text}' is not a duration: write e.g. 5s, 500ms or 2m"))?;
    if !v.is_finite() || v <= 0.0 || v * mult > 1e7 {
        return Err(format!(
            "'{text}' is not a usable duration: give a positive time such as 5s"
        ));
    }
    Ok(Duration::from_secs_f64(v * mult))
}

/// `--precondition=PASSES`: a whole number (the plan says which are too many).
pub fn parse_passes(text: &str) -> Result<u32, String> {
    text.trim().parse().map_err(|_| {
        format!(
            "--precondition={text}: give the number of sequential passes, e.g. --precondition=2"
        )
    })
}

/// `--threads 1,2,4`: whole numbers from 1 to `max`, repeats dropped, order kept.
pub fn parse_u32_list(text: &str, what: &str, max: u32) -> Result<Vec<u32>, PlanError> {
    let mut out = Vec::new();
    for part in text.split(',') {
        let v: u32 = part.trim().parse().map_err(|_| {
            PlanError::usage(format!(
                "'{part}' in --{what} is not a whole number: write e.g. --{what} 1,2,4"
            ))
        })?;
        if v == 0 || v > max {
            return Err(PlanError::usage(format!(
                "--{what} {v} is out of range: use 1 to {max}"
            )));
        }
        if !out.contains(&v) {
            out.push(v);
        }
    }
    Ok(out)
}

/// One size option (`--min-file-size 64k`), if given.
pub fn size_arg(v: &Option<String>, what: &str) -> Result<Option<u64>, PlanError> {
    v.as_deref()
        .map(|t| parse_size(t).map_err(|e| PlanError::usage(format!("--{what}: {e}"))))
        .transpose()
}

/// `--cpus 0,2-3`: the listed CPUs, each one of `allowed` (the CPUs this process may use).
pub fn parse_cpus(list: Option<&str>, allowed: &[usize]) -> Result<Vec<usize>, PlanError> {
    let Some(list) = list else {
        return Ok(Vec::new());
    };
    let bad = |p: &str| {
        PlanError::usage(format!(
            "--cpus {list}: '{p}' is not a CPU number or range: use e.g. 0,1 or 0-3 (this process may use CPUs {allowed:?})"
        ))
    };
    let mut cpus = Vec::new();
    for part in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (a.trim().parse::<usize>(), b.trim().parse::<usize>()),
            None => (part.parse::<usize>(), part.parse::<usize>()),
        };
        let (Ok(lo), Ok(hi)) = (lo, hi) else {
            return Err(bad(part));
        };
        if lo > hi {
            return Err(bad(part));
        }
        for c in lo..=hi {
            if !allowed.contains(&c) {
                return Err(PlanError::usage(format!(
                    "--cpus {list}: CPU {c} is not available to this process: choose from {allowed:?}"
                )));
            }
            cpus.push(c);
        }
    }
    if cpus.is_empty() {
        return Err(bad(list));
    }
    Ok(cpus)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("5s").unwrap(), Duration::from_secs(5));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("1.5").unwrap(), Duration::from_millis(1500));
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("fast").is_err());
        assert!(parse_duration("-1s").is_err());
    }

    #[test]
    fn lists_keep_order_and_drop_repeats() {
        assert_eq!(parse_u32_list("4,1,4", "threads", 8).unwrap(), vec![4, 1]);
        let e = parse_u32_list("0", "threads", 8).unwrap_err();
        assert!(e.message.contains("out of range"), "{}", e.message);
        let e = parse_u32_list("x", "iodepth", 8).unwrap_err();
        assert!(e.message.contains("not a whole number"), "{}", e.message);
    }

    #[test]
    fn cpus_are_ranges_of_allowed_cpus() {
        assert_eq!(parse_cpus(None, &[0, 1]).unwrap(), Vec::<usize>::new());
        assert_eq!(parse_cpus(Some("0-1"), &[0, 1]).unwrap(), vec![0, 1]);
        assert!(parse_cpus(Some("7-3"), &[0, 1]).is_err());
        assert!(parse_cpus(Some("2"), &[0, 1])
            .unwrap_err()
            .message
            .contains("not available"));
        assert!(parse_cpus(Some(","), &[0, 1]).is_err());
    }

    #[test]
    fn default_options_shape_nothing() {
        assert!(RunOptions::default().shapes_nothing());
        let o = RunOptions {
            threads: Some("2".into()),
            ..RunOptions::default()
        };
        assert!(!o.shapes_nothing());
    }
}
