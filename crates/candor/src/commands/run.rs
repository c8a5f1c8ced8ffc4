//! `candor run`: the pipeline. The options become a plan in one step (candor-engine checks
//! them all against each other and the targets), the targets get their witnesses, the
//! runner runs the plan, each point's results are collected and saved as they arrive, and
//! the output gets the whole result: JSON, HTML and the text format on stdout.

use crate::exit::{refusing, CmdResult, Failure, FAILED, OK};
use crate::output::Output;
use candor_engine::ceiling;
use candor_engine::collect::Collector;
use candor_engine::device;
use candor_engine::engines::{parse_engine, EngineKind};
use candor_engine::plan::{
    options, presets, Ceiling, ErrorKind, Plan, PlanError, Point, RunOptions,
};
use candor_engine::rundir::{clean_stale, new_run_id, RunDir};
use candor_engine::runner::{self, Progress, StopReason, Target};
use candor_engine::signals;
use candor_engine::verify::BufferPattern;
use candor_engine::workload::Hint;
use candor_model::units::{format_bytes, ByteStyle};
use candor_model::{rfc3339_now, RunDoc, SteadyRound, TargetInfo, TestResult};
use candor_report::Format;
use candor_witness::Mode;
use std::io::IsTerminal;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

mod mpi;

/// The merged result's sentences about the ranks, for the run's warnings (`candor merge` too).
pub fn rank_warnings(r: &TestResult) -> Vec<String> {
    mpi::warnings(r)
}

/// `candor run --help`'s text before the options.
pub const LONG_ABOUT: &str = "Benchmark one or more directories (default: the current directory).

With no option that shapes the plan (--tests, --file-size, --record-size, --auto, --preset, \
--threads, --iodepth, --engine) candor runs the default run: sequential 1 MiB writes and reads \
at queue depths 1 and 8, random 4 KiB reads and writes at depths 1 and 32, on io_uring with \
O_DIRECT where the filesystem takes it, on a 1 GiB file (halved until 8 of it fit in the free \
space, 16 MiB at least), 3 repetitions each capped at 2 s: about a minute.

A plan of options keeps the default run's file size, record sizes (1 MiB for sequential tests, \
4 KiB for random ones), 3 repetitions and 2 s cap for the options it is not given; it runs psync \
at depth 1, buffered, unless --engine, --iodepth or --direct say otherwise, and says so in one \
line. --auto and --preset iozone sweep the sizes and run each point once.";

/// `candor run --help`'s examples.
pub const EXAMPLES: &str = "Examples:
  candor run                                        the default run in the current directory
  candor run /mnt/data -o r.json --html r.html      ... of /mnt/data, saved and drawn
  candor run --tests randread,randwrite --direct    4 KiB random I/O, O_DIRECT, 3 repetitions
  candor run --tests randread --engine io_uring --iodepth 1,32 --direct
                                                    the default run's depths for one test
  candor run --tests 0,1,2 --file-size 1g --record-size 4k,1m --repeat 5
  candor run --preset iozone --html report.html     iozone -a (several minutes)
  candor run --threads 1,2,4 --stonewall --tests write,read /mnt/a /mnt/b
  candor run --precondition --steady-state --tests randwrite --direct /mnt/ssd
  sudo candor run /dev/sdX --allow-device-writes    a whole unused device (its data is lost)";

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Directories to benchmark (default: the current directory).
    ///
    /// Several run the same plan in turn, interleaved by repetition. A block device needs
    /// --allow-device-writes.
    pub targets: Vec<PathBuf>,

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

    /// Also write /proc/sys/vm/drop_caches before read tests meant for the device (root).
    ///
    /// Every clean page on the machine is dropped, not only the test's files' (root only;
    /// refused otherwise).
    #[arg(long, help_heading = TIMING)]
    pub drop_caches: bool,

    /// Repetitions of each test (mean, standard deviation, 95% confidence interval).
    ///
    /// Below the repetitions a meaningful interval needs, the tables show min-max instead.
    /// [default: 3; 1 with --auto, --preset iozone or --steady-state]
    #[arg(long, value_name = "N", help_heading = PLAN)]
    pub repeat: Option<u32>,

    /// Stride read: records skipped between reads.
    #[arg(long, value_name = "N", default_value_t = options::STRIDE, help_heading = PLAN)]
    pub stride: u64,

    /// randmix: percentage of reads.
    #[arg(long, value_name = "PCT", default_value_t = options::MIX_READ_PCT, help_heading = PLAN)]
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
    #[arg(long, value_name = "DURATION", default_value = options::WITNESS_INTERVAL, help_heading = WITNESS)]
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
    #[arg(long, value_name = "FORMAT", value_parser = refusing(parse_format), help_heading = OUTPUT)]
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
    #[arg(long, value_name = "N", default_value_t = options::SEED, help_heading = PLAN)]
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
    #[arg(long, value_name = "N", default_value_t = options::META_FILES, help_heading = PLAN)]
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
    #[arg(long, value_name = "PASSES", num_args = 0..=1, require_equals = true, default_missing_value = "2", value_parser = refusing(options::parse_passes), help_heading = STEADY)]
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

fn parse_format(name: &str) -> Result<Format, String> {
    Format::parse(name)
        .ok_or_else(|| format!("'{name}' is not a format: choose from {}", Format::names()))
}

impl Args {
    /// The options the plan is made from.
    fn options(&self) -> RunOptions {
        RunOptions {
            tests: self.tests.clone(),
            file_size: self.file_size.clone(),
            record_size: self.record_size.clone(),
            auto: self.auto,
            min_file_size: self.min_file_size.clone(),
            max_file_size: self.max_file_size.clone(),
            min_record_size: self.min_record_size.clone(),
            max_record_size: self.max_record_size.clone(),
            preset: self.preset.clone(),
            threads: self.threads.clone(),
            iodepth: self.iodepth.clone(),
            engine: self.engine,
            direct: self.direct,
            osync: self.osync,
            no_fsync_in_timing: self.no_fsync_in_timing,
            close_in_timing: self.close_in_timing,
            keep_cache: self.keep_cache,
            drop_caches: self.drop_caches,
            repeat: self.repeat,
            stride: self.stride,
            mix_read_pct: self.mix_read_pct,
            stonewall: self.stonewall,
            runtime: self.runtime.clone(),
            time_based: self.time_based,
            cpus: self.cpus.clone(),
            seed: self.seed,
            files: self.files,
            verify: self.verify,
            buffer_pattern: self.buffer_pattern,
            fadvise: self.fadvise,
            witness: self.witness,
            trace_syscalls: self.trace_syscalls,
            witness_interval: self.witness_interval.clone(),
            duration: self.duration.clone(),
            device_spec: self.device_spec.clone(),
            ramp: self.ramp.clone(),
            steady_state: self.steady_state.clone(),
            precondition: self.precondition,
            mpi: self.mpi,
            reorder: self.reorder,
            shared_file: self.shared_file,
            buffered: self.buffered,
        }
    }
}

pub fn run(a: Args) -> CmdResult {
    if a.mpi {
        return mpi::run(a);
    }
    if a.reorder || a.shared_file {
        return Err(Failure::usage(
            "--reorder and --shared-file arrange files between MPI ranks and need --mpi: run it as `mpirun -n 4 candor run --mpi ...`",
        ));
    }
    if a.rank_output.is_some() {
        return Err(Failure::usage(
            "--rank-output saves each MPI rank's own result and needs --mpi; a single run's result is already its own (-o FILE)",
        ));
    }
    run_with(a, None)
}

/// The pipeline. Over MPI every rank runs it; the ranks agree at each step that can
/// refuse, and only rank 0 saves and prints.
fn run_with(a: Args, mpi: Option<&mpi::Session>) -> CmdResult {
    let started_at = rfc3339_now();
    let options = a.options();
    let default_format = presets::default_format(a.preset.as_deref());
    let mut output = Output::new(a.format, default_format, a.output.clone(), a.html.clone());
    mpi::agree(
        mpi,
        if mpi::is_root(mpi) {
            output.check()
        } else {
            Ok(())
        },
    )?;
    let paths = mpi::agree(mpi, target_paths(&a.targets, a.allow_device_writes))?;
    // Before any rank claims a device: the ranks refuse it together with the plan's
    // sentence, instead of every rank but the first finding it busy.
    mpi::agree(
        mpi,
        Plan::one_process_per_device(
            paths.iter().any(|t| device::is_block_device(t)),
            mpi.is_some(),
        )
        .map_err(refused),
    )?;
    signals::install();
    let region = Region::of(&a)?;
    let (id, dirs, infos) = prepare_targets(&paths, &region, mpi)?;
    let plan = mpi::agree(
        mpi,
        Plan::new(&options, &id, &infos, &dirs).map_err(refused),
    )?;
    let mut doc = RunDoc::new("run", std::env::args().collect(), started_at);
    doc.host = candor_witness::describe_host();
    doc.targets = infos;
    doc.options = plan.record.clone();
    doc.options
        .insert("format".into(), output.format_name().into());
    doc.mpi = mpi.map(|m| m.info(a.reorder, a.shared_file));
    say_all(&mut doc, &plan.notes, mpi::is_root(mpi));
    let job = mpi::job_peers(mpi);
    let mut targets = witnessed(paths, dirs, &plan, &job, &mut doc, mpi::is_root(mpi));
    let spec = device_ceiling(&plan, &mut targets, &mut doc)?;
    let mut collector = Collector::new(plan.default_run(), plan.soak.is_some(), spec);
    let mut progress = Bar::new(&plan, targets.len(), a.quiet || !mpi::is_root(mpi));
    let mut kept = Kept::default();
    let stop = execute(
        &mut targets,
        &plan,
        &mut progress,
        mpi,
        &a,
        &mut kept,
        &mut |rs| {
            let warnings = collector.add(&mut doc.results, rs, &mpi::warnings);
            add_warnings(&mut doc, warnings);
            output.save(&doc);
        },
    );
    doc.clock = kept.t0_ns.map(candor_engine::clock::run_clock);
    progress.finish();
    // candor's files go now, before anything is printed: nothing is left behind even if
    // the terminal is gone.
    let cleanup_errors = remove_run_dirs(targets);
    add_warnings(&mut doc, progress.notes);
    let code = conclude(&mut doc, &stop);
    if let (Some(dir), Some(m), Some(own)) = (&a.rank_output, mpi, kept.own) {
        if let Err(e) = m.save_own(dir, &doc, own) {
            eprintln!("candor: {e}");
        }
    }
    if !mpi::is_root(mpi) {
        // Rank 0 reports for every rank.
        if stop.is_some() {
            mpi::stop_all(mpi, code);
        }
        return Ok(code);
    }
    output.finish(&doc);
    let code = tell(&doc, &stop, &output, &cleanup_errors, code);
    if stop.is_some() {
        mpi::stop_all(mpi, code);
    }
    Ok(code)
}

/// A plan refused: its sentence, with the exit code its kind means.
fn refused(e: PlanError) -> Failure {
    let code = match e.kind {
        ErrorKind::Usage => crate::exit::USAGE,
        ErrorKind::Failed => FAILED,
        ErrorKind::Interrupted(sig) => 128 + sig,
    };
    Failure {
        code,
        message: e.message,
    }
}

/// The targets as given (default: the current directory), each checked before anything is
/// written, named by its full path (a report that says "." says nothing).
fn target_paths(given: &[PathBuf], allow_device: bool) -> Result<Vec<PathBuf>, Failure> {
    let targets: Vec<PathBuf> = if given.is_empty() {
        vec![PathBuf::from(".")]
    } else {
        given.to_vec()
    };
    for t in &targets {
        check_target(t, allow_device)?;
    }
    Ok(targets
        .into_iter()
        .map(|t| std::fs::canonicalize(&t).unwrap_or(t))
        .collect())
}

/// Removes what killed runs left behind, makes this run's directories and describes each
/// target: the run id, the run directories and the descriptions.
fn prepare_targets(
    paths: &[PathBuf],
    region: &Region,
    mpi: Option<&mpi::Session>,
) -> Result<(String, Vec<RunDir>, Vec<TargetInfo>), Failure> {
    // Stale run directories of killed runs go first (only candor's, by their marker).
    // Not over MPI: a run directory made on another node cannot be told from a stale one.
    for t in paths
        .iter()
        .filter(|t| mpi.is_none() && !device::is_block_device(t))
    {
        if let Ok(rep) = clean_stale(t) {
            for p in rep.removed() {
                eprintln!(
                    "candor: removed {} left behind by an earlier run that was killed",
                    p.display()
                );
            }
        }
    }
    let id = mpi::run_id(mpi, new_run_id());
    let dirs = mpi::agree(
        mpi,
        paths
            .iter()
            .map(|t| {
                if device::is_block_device(t) {
                    device::claim(t, region.offset, region.destroy)
                        .map(RunDir::on_device)
                        .map_err(Failure::usage)
                } else {
                    make_run_dir(t, &id)
                }
            })
            .collect::<Result<Vec<RunDir>, Failure>>(),
    )?;
    let infos = paths
        .iter()
        .map(|t| candor_witness::describe_target(t))
        .collect();
    Ok((id, dirs, infos))
}

/// Each target with its witness; the witness's notes go to the person and the result.
/// `job`: the other processes of the same job on this machine (MPI ranks on this node).
fn witnessed(
    paths: Vec<PathBuf>,
    dirs: Vec<RunDir>,
    plan: &Plan,
    job: &[u32],
    doc: &mut RunDoc,
    say: bool,
) -> Vec<Target> {
    let mut targets = Vec::new();
    let config = candor_witness::Config {
        job: job.to_vec(),
        ..plan.witness.clone()
    };
    for (t, d) in paths.into_iter().zip(dirs) {
        let (mut w, note) = candor_witness::Witness::new(&t, config.clone());
        // A ceiling given on the command line (not one measured here) bounds what the
        // device can do: the witness names figures beyond it.
        if let candor_engine::plan::Ceiling::Given(spec) = &plan.ceiling {
            w.set_ceiling(Some(candor_model::Ceiling {
                read_bps: spec.seq_read,
                write_bps: spec.seq_write,
                read_iops: spec.iops_read,
                write_iops: spec.iops_write,
            }));
        }
        if let Some(n) = note {
            say_all(doc, &[n], say);
        }
        targets.push(Target::new(t, d, w));
    }
    targets
}

/// The ceilings of `--device-spec`, measured first when it says `auto`; recorded in the
/// result's options.
fn device_ceiling(
    plan: &Plan,
    targets: &mut [Target],
    doc: &mut RunDoc,
) -> Result<Option<candor_engine::efficiency::DeviceSpec>, Failure> {
    let spec = match &plan.ceiling {
        Ceiling::None => return Ok(None),
        Ceiling::Given(s) => s.clone(),
        Ceiling::Measure => {
            let free = doc.targets.first().map(|t| t.free_bytes).unwrap_or(0);
            let (spec, note) =
                ceiling::measure(targets, plan, free, &mut |m| eprintln!("candor: {m}"))
                    .map_err(refused)?;
            doc.warnings.push(note);
            if let Some(w) = ceiling::other_devices(&doc.targets) {
                eprintln!("candor: {w}");
                doc.warnings.push(w);
            }
            spec
        }
    };
    doc.options.insert(
        "device_spec".into(),
        serde_json::json!({"source": spec.source, "seq_read": spec.seq_read, "seq_write": spec.seq_write, "iops_read": spec.iops_read, "iops_write": spec.iops_write}),
    );
    Ok(Some(spec))
}

/// What a run keeps besides its results: where its clock started, and over MPI with
/// `--rank-output` this rank's own results before the merge.
#[derive(Default)]
struct Kept {
    t0_ns: Option<u64>,
    own: Option<Vec<TestResult>>,
}

/// Runs the plan: once, pass after pass until `--duration` is up, or in step with the
/// other MPI ranks.
fn execute(
    targets: &mut [Target],
    plan: &Plan,
    progress: &mut Bar,
    mpi: Option<&mpi::Session>,
    a: &Args,
    kept: &mut Kept,
    sink: &mut dyn FnMut(Vec<TestResult>),
) -> Option<StopReason> {
    if let Some(m) = mpi {
        let mut coord = m.coordinator(a.reorder, a.shared_file);
        if a.rank_output.is_some() {
            coord = coord.keep_own();
        }
        let stop = runner::run_coordinated(
            targets,
            &plan.points,
            &plan.settings,
            progress,
            sink,
            &mut coord,
        );
        kept.t0_ns = Some(coord.run_t0_ns());
        kept.own = coord.take_own();
        return stop;
    }
    let t0 = std::time::Instant::now();
    let mut clock = runner::ClockKeeper::default();
    loop {
        let stop = runner::run_coordinated(
            targets,
            &plan.points,
            &plan.settings,
            progress,
            sink,
            &mut clock,
        );
        kept.t0_ns = clock.t0_ns;
        match plan.soak {
            Some(d) if stop.is_none() && t0.elapsed() < d => progress.next_round(),
            _ => return stop,
        }
    }
}

fn remove_run_dirs(targets: Vec<Target>) -> Vec<String> {
    let mut errors = Vec::new();
    for mut t in targets {
        if let Err(e) = t.dir.remove() {
            errors.push(format!("could not remove {}: {e}", t.dir.path().display()));
        }
    }
    errors
}

/// Ends the result: whether it is complete, why it stopped; returns the exit code.
fn conclude(doc: &mut RunDoc, stop: &Option<StopReason>) -> i32 {
    doc.finished_at = Some(rfc3339_now());
    match stop {
        None => {
            doc.complete = true;
            if doc.results.iter().any(|r| !r.status.is_ok()) {
                FAILED
            } else {
                OK
            }
        }
        Some(StopReason::Interrupted(sig)) => {
            doc.stop_reason = Some(format!("interrupted by {}", signals::signal_name(*sig)));
            128 + sig
        }
        Some(StopReason::NoSpace(m)) => {
            doc.stop_reason = Some(format!("failed: {m}"));
            FAILED
        }
    }
}

/// Says on stderr what the person must know after the output: files not removed, a result
/// not saved, why the run stopped, which tests failed. Returns the exit code.
fn tell(
    doc: &RunDoc,
    stop: &Option<StopReason>,
    output: &Output,
    cleanup_errors: &[String],
    code: i32,
) -> i32 {
    for e in cleanup_errors {
        eprintln!("candor: {e}");
    }
    if let Some(e) = output.save_error() {
        eprintln!("candor: {e}");
        return FAILED;
    }
    match stop {
        Some(StopReason::Interrupted(sig)) => {
            eprintln!(
                "candor: interrupted by {}: {} test(s) finished{}; candor's files were removed",
                signals::signal_name(*sig),
                doc.results.len(),
                output
                    .json()
                    .map(|o| format!(" and are saved in {}", o.display()))
                    .unwrap_or_default()
            );
        }
        Some(StopReason::NoSpace(m)) => {
            eprintln!("candor: {m}");
        }
        None => {
            for r in doc.results.iter().filter(|r| !r.status.is_ok()) {
                eprintln!(
                    "candor: {} failed on {}: {}",
                    r.test,
                    r.target,
                    r.error.clone().unwrap_or_default()
                );
            }
        }
    }
    code
}

/// Adds warnings to the result, each once.
fn add_warnings(doc: &mut RunDoc, warnings: Vec<String>) {
    for w in warnings {
        if !doc.warnings.contains(&w) {
            doc.warnings.push(w);
        }
    }
}

/// Notes the person reads now (when `say`) and the result keeps.
fn say_all(doc: &mut RunDoc, notes: &[String], say: bool) {
    for n in notes.iter().filter(|_| say) {
        eprintln!("candor: {n}");
    }
    add_warnings(doc, notes.to_vec());
}

/// Where candor works on a block device target, and whether it may destroy what is there.
struct Region {
    offset: u64,
    destroy: bool,
}

impl Region {
    fn of(a: &Args) -> Result<Region, Failure> {
        let offset = match a.offset.as_deref() {
            None => 0,
            Some(s) => candor_engine::size::parse_size(s)
                .map_err(|e| Failure::usage(format!("--offset: {e}")))?,
        };
        Ok(Region {
            offset,
            destroy: a.destroy_existing_data,
        })
    }
}

/// Checks a target before anything is written: exists, is a directory (or an allowed
/// device), is writable.
fn check_target(t: &Path, allow_device: bool) -> Result<(), Failure> {
    let meta = std::fs::metadata(t).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Failure::usage(format!(
            "{} does not exist: give an existing directory to benchmark",
            t.display()
        )),
        std::io::ErrorKind::PermissionDenied => Failure::usage(format!(
            "cannot reach {}: permission denied; choose a directory you can write to",
            t.display()
        )),
        _ => Failure::usage(format!("cannot use {}: {e}", t.display())),
    })?;
    if meta.file_type().is_block_device() {
        if allow_device {
            // Checked and claimed with the run's directories (device::claim).
            return Ok(());
        }
        return Err(Failure::usage(format!(
            "{} is a block device: candor would overwrite its contents; give a directory on a filesystem instead (or --allow-device-writes if you mean it)",
            t.display()
        )));
    }
    if !meta.is_dir() {
        return Err(Failure::usage(format!("{} is not a directory: give the directory to benchmark (candor makes its own files there)", t.display())));
    }
    if let Some(fs) = crate::paths::pseudo_fs(t) {
        return Err(Failure::usage(format!(
            "{} is on a {fs} pseudo-filesystem, which holds the kernel's own entries and cannot hold benchmark files: give a directory on a real filesystem",
            t.display()
        )));
    }
    // 0 bytes free is no room at all (only an unreadable statfs leaves it to the plan,
    // which says it could not check). A read-only filesystem (which often reads 0 free)
    // is said as such when the run directory cannot be made.
    if crate::paths::free_bytes(t) == Some(0) && !crate::paths::read_only(t) {
        return Err(Failure::usage(format!(
            "{} has 0 B free, so no test file fits: free some space or choose another target",
            t.display()
        )));
    }
    Ok(())
}

fn make_run_dir(t: &Path, id: &str) -> Result<RunDir, Failure> {
    RunDir::create(t, id).map_err(|e| match e.raw_os_error() {
        Some(libc::EROFS) => Failure::usage(format!(
            "{} is on a read-only filesystem: choose a writable directory",
            t.display()
        )),
        Some(libc::EACCES) | Some(libc::EPERM) => Failure::usage(format!(
            "cannot write in {}: permission denied; choose a directory you can write to",
            t.display()
        )),
        Some(libc::ENOSPC) | Some(libc::EDQUOT) => Failure::failed(format!(
            "{} has no space left, not even for candor's run directory: free some space",
            t.display()
        )),
        _ => Failure::failed(format!(
            "cannot create candor's run directory in {}: {e}",
            t.display()
        )),
    })
}

/// The progress bar on a terminal, and the runner's notes.
struct Bar {
    bar: Option<indicatif::ProgressBar>,
    /// The run's estimate, the time left, and off a terminal the periodic progress lines.
    pace: crate::progress::Pace,
    notes: Vec<String>,
    /// `--duration`: which pass over the plan is running (the bar counts one pass).
    round: Option<u64>,
    quiet: bool,
}

impl Progress for Bar {
    fn start_point(&mut self, p: &Point, index: usize, total: usize) {
        if let Some(line) = self.pace.start_point(index) {
            self.say(&line);
        }
        if let Some(b) = &self.bar {
            b.set_prefix(self.pace.left());
            b.set_message(format!(
                "{}[{}/{}] {} {} file, {} records, {} thread(s), QD {}",
                self.round
                    .map(|r| format!("round {r} "))
                    .unwrap_or_default(),
                index + 1,
                total,
                p.spec.name,
                format_bytes(p.file_size, ByteStyle::LABEL),
                format_bytes(p.record_size, ByteStyle::LABEL),
                p.threads,
                p.iodepth
            ));
        }
    }

    fn repetition_done(&mut self) {
        self.pace.repetition_done();
        if let Some(b) = &self.bar {
            b.set_prefix(self.pace.left());
            b.inc(1);
        }
    }

    fn round(&mut self, p: &Point, target: &Path, r: &SteadyRound) {
        use candor_model::units::rate_text;
        if self.quiet {
            return;
        }
        let line = format!(
            "{} on {}: round {}: application {}, device {}",
            p.spec.name,
            target.display(),
            r.round,
            rate_text(r.app_bps),
            r.device_bps.map_or("not seen".to_string(), rate_text)
        );
        match &self.bar {
            Some(b) => b.println(format!("candor: {line}")),
            None => eprintln!("candor: {line}"),
        }
    }

    fn note(&mut self, line: &str) {
        match &self.bar {
            Some(b) => b.println(format!("candor: {line}")),
            None => eprintln!("candor: {line}"),
        }
        self.notes.push(line.to_string());
    }
}

impl Bar {
    fn new(plan: &Plan, targets: usize, quiet: bool) -> Bar {
        let passes = plan
            .settings
            .steady
            .map_or(plan.settings.repeat, |c| c.max_rounds);
        let total = plan.points.len() as u64 * passes as u64 * targets as u64;
        let terminal = std::io::stderr().is_terminal();
        let pace = crate::progress::Pace::new(
            &plan.points,
            &plan.settings,
            plan.soak,
            targets,
            quiet,
            terminal,
        );
        let bar = (!quiet && terminal).then(|| {
            let b = indicatif::ProgressBar::new(total);
            b.set_style(
                indicatif::ProgressStyle::with_template(
                    "{bar:30} {pos}/{len} {elapsed_precise} {prefix} {msg}",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            b
        });
        Bar {
            bar,
            pace,
            notes: Vec::new(),
            round: plan.soak.map(|_| 1),
            quiet,
        }
    }

    /// `--duration`: the next pass over the plan; the bar counts one pass, so it starts
    /// again.
    fn next_round(&mut self) {
        self.round = self.round.map(|r| r + 1);
        self.pace.next_round();
        if let Some(b) = &self.bar {
            b.set_position(0);
        }
    }

    /// A line for the person, above the bar on a terminal.
    fn say(&self, line: &str) {
        match &self.bar {
            Some(b) => b.println(format!("candor: {line}")),
            None => eprintln!("candor: {line}"),
        }
    }

    fn finish(&mut self) {
        self.pace.finish();
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}
