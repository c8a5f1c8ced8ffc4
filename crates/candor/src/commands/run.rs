//! `candor run`: options -> checks -> plan -> runner -> result saved after every test ->
//! the table (or another format) on stdout.

use crate::exit::{CmdResult, Failure, FAILED, OK};
use candor_engine::engines::{entry, parse_engine, EngineKind};
use candor_engine::plan::{self, Point, Sweep};
use candor_engine::rundir::{clean_stale, new_run_id, RunDir};
use candor_engine::runner::{self, Progress, RunSettings, StopReason, Target};
use candor_engine::signals;
use candor_engine::size::{format_size, parse_size, parse_size_list};
use candor_engine::verify::{BufferPattern, VerifyConfig, HEADER};
use candor_engine::workload::{self, parse_tests, TestSpec};
use candor_model::{RunDoc, TargetInfo, TestResult};
use candor_report::Format;
use std::collections::BTreeMap;
use std::ffi::CString;
use std::io::{IsTerminal, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

mod mpi;

#[derive(clap::Args, Debug, Default)]
pub struct Args {
    /// Directories to benchmark (default: the current directory). Several run the same plan
    /// in turn, interleaved by repetition.
    pub targets: Vec<PathBuf>,

    /// Tests to run, comma separated: write, rewrite, read, reread, randread, randwrite,
    /// bkwdread, recrewrite, strideread, fwrite, frewrite, fread, freread, randmix, pwrite,
    /// repwrite, pread, repread, pwritev, repwritev, preadv, repreadv, mmapwrite, mmapread,
    /// copy, create, stat, open, readdir, unlink, mkdir, rmdir; or iozone's numbers 0-12
    /// (each means its group).
    #[arg(long, value_name = "LIST")]
    pub tests: Option<String>,

    /// File size(s) per thread, e.g. 64m or 4k,64k,1m (binary units).
    #[arg(long, value_name = "LIST")]
    pub file_size: Option<String>,

    /// Record size(s): the size of each I/O, e.g. 4k,64k,1m.
    #[arg(long, value_name = "LIST")]
    pub record_size: Option<String>,

    /// iozone -a: sweep file sizes 64K..512M and record sizes 4K..16M by powers of two.
    #[arg(long)]
    pub auto: bool,
    #[arg(long, value_name = "SIZE")]
    pub min_file_size: Option<String>,
    #[arg(long, value_name = "SIZE")]
    pub max_file_size: Option<String>,
    #[arg(long, value_name = "SIZE")]
    pub min_record_size: Option<String>,
    #[arg(long, value_name = "SIZE")]
    pub max_record_size: Option<String>,

    /// A ready-made plan: "iozone" is iozone -a's sweep of all its tests.
    #[arg(long, value_name = "NAME")]
    pub preset: Option<String>,

    /// Thread count(s): one file per thread, all released together, e.g. 1,2,4,8.
    #[arg(long, value_name = "LIST")]
    pub threads: Option<String>,

    /// I/Os in flight per thread (io_uring), e.g. 1 or 1,4,16,32.
    #[arg(long, value_name = "LIST")]
    pub iodepth: Option<String>,

    /// I/O engine: sync, psync, vector, stdio, mmap, io_uring, null.
    #[arg(long, value_name = "NAME")]
    pub engine: Option<String>,

    /// Open files with O_DIRECT (bypass the page cache).
    #[arg(long)]
    pub direct: bool,

    /// Open files with O_SYNC.
    #[arg(long)]
    pub osync: bool,

    /// Leave the final fsync out of write tests' headline figure (iozone's default).
    /// Both figures are reported either way.
    #[arg(long)]
    pub no_fsync_in_timing: bool,

    /// Include close() in the timed region (iozone -c).
    #[arg(long)]
    pub close_in_timing: bool,

    /// Do not drop the files' cached pages before read tests (all reads then mean to hit
    /// the cache).
    #[arg(long)]
    pub keep_cache: bool,

    /// Also write /proc/sys/vm/drop_caches before read tests (root only).
    #[arg(long)]
    pub drop_caches: bool,

    /// Repetitions of each test (mean, standard deviation, 95% confidence interval).
    #[arg(long, value_name = "N")]
    pub repeat: Option<u32>,

    /// Stride read: records skipped between reads.
    #[arg(long, value_name = "N", default_value_t = 17)]
    pub stride: u64,

    /// randmix: percentage of reads.
    #[arg(long, value_name = "PCT", default_value_t = 50)]
    pub mix_read_pct: u32,

    /// Stop all threads of a test when the first one finishes (iozone's stonewalling).
    #[arg(long)]
    pub stonewall: bool,

    /// Cap each repetition's I/O time, e.g. 5s or 500ms; a capped repetition covers only
    /// part of the file and says so.
    #[arg(long, value_name = "DURATION")]
    pub runtime: Option<String>,

    /// With --runtime: keep going over the file, pass after pass, until the runtime ends
    /// (fio's time_based), instead of stopping after one pass.
    #[arg(long)]
    pub time_based: bool,

    /// Pin the I/O threads to these CPUs, e.g. 0,1 or 0-3: thread i runs on the i-th CPU
    /// of the list (wrapping around).
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<String>,

    /// Witness source: auto, procfs, bpf or off.
    #[arg(long, value_name = "SOURCE", default_value = "auto")]
    pub witness: String,

    /// With the eBPF witness, also trace every system call: per-call counts, bytes, time
    /// and latency in `witness.syscalls`. Off by default: enabling the kernel's syscall
    /// tracepoints costs every system call about 0.2 µs (a fifth of a cached 4 KiB read);
    /// io_uring and device-bound tests barely notice.
    #[arg(long)]
    pub trace_syscalls: bool,

    /// Witness timeline sampling period, e.g. 100ms.
    #[arg(long, value_name = "DURATION", default_value = "100ms")]
    pub witness_interval: String,

    /// Save the result as JSON (rewritten atomically after every test).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// What to print on stdout: table, json, csv, markdown, iozone, excel
    /// (default: table; iozone with --preset iozone).
    #[arg(long, value_name = "FORMAT")]
    pub format: Option<String>,

    /// Also write the HTML report.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,

    /// Allow a block device as a target (its contents are overwritten).
    #[arg(long)]
    pub allow_device_writes: bool,

    /// Seed of the random orders and buffer contents.
    #[arg(long, value_name = "N", default_value_t = 0x0c4a_d0c4)]
    pub seed: u64,

    /// No progress bar.
    #[arg(short, long)]
    pub quiet: bool,

    /// Run as one rank of an MPI job (`mpirun -n N candor run --mpi ...`): all ranks pass
    /// a barrier before each test, rank 0 merges and reports (see docs/mpi.md).
    #[arg(long)]
    pub mpi: bool,

    /// With --mpi: read tests meant for the device read another rank's files (the next
    /// node's, IOR's -C), so no node reads back what it wrote; needs a shared target.
    #[arg(long)]
    pub reorder: bool,

    /// With --mpi: one file per thread shared by all ranks, each rank on its own segment
    /// (IOR's default N-1 layout) instead of a file per rank; needs a shared target.
    #[arg(long)]
    pub shared_file: bool,

    /// Entries per thread for the metadata tests (create, stat, open, readdir, unlink,
    /// mkdir, rmdir).
    #[arg(long, value_name = "N", default_value_t = 1000)]
    pub files: u64,

    /// The device's ceiling, to report every result's efficiency against it:
    /// e.g. seq=510MB/s,iops=95000 (also seq-read, seq-write, iops-read, iops-write), or
    /// auto to measure it first (O_DIRECT, large sequential and 4 KiB random at depth 64).
    #[arg(long, value_name = "SPEC")]
    pub device_spec: Option<String>,

    /// Check the data: every record written carries a header (run, file, offset,
    /// generation, checksum) and a payload derived from it; read tests check every record
    /// and report corruption, misdirected, stale and torn records (see docs/reliability.md).
    #[arg(long)]
    pub verify: bool,

    /// What the buffers hold: random (incompressible, the default), zero, or
    /// compressible=N% (N% of each 4 KiB zero).
    #[arg(long, value_name = "PATTERN", default_value = "random")]
    pub buffer_pattern: String,

    /// Soak: repeat the whole plan until this much time has passed, e.g. 10m (the results
    /// hold each test's last round and every round's throughput).
    #[arg(long, value_name = "DURATION")]
    pub duration: Option<String>,
}

fn usage(m: impl Into<String>) -> Failure {
    Failure::usage(m)
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

fn parse_u32_list(text: &str, what: &str, max: u32) -> Result<Vec<u32>, Failure> {
    let mut out = Vec::new();
    for part in text.split(',') {
        let v: u32 = part.trim().parse().map_err(|_| {
            usage(format!(
                "'{part}' in --{what} is not a whole number: write e.g. --{what} 1,2,4"
            ))
        })?;
        if v == 0 || v > max {
            return Err(usage(format!(
                "--{what} {v} is out of range: use 1 to {max}"
            )));
        }
        if !out.contains(&v) {
            out.push(v);
        }
    }
    Ok(out)
}

fn size_arg(v: &Option<String>, what: &str) -> Result<Option<u64>, Failure> {
    v.as_deref()
        .map(|t| parse_size(t).map_err(|e| usage(format!("--{what}: {e}"))))
        .transpose()
}

fn rfc3339_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let days = secs.div_euclid(86400);
    let rem = secs.rem_euclid(86400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Writes `text` to `path` atomically: a new file beside it (O_EXCL), then rename.
pub fn save_atomic(path: &Path, text: &str) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_else(|| "result.json".into());
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW)
            .mode_0644()
            .open(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    };
    let r = write();
    if r.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    r
}

trait Mode0644 {
    fn mode_0644(&mut self) -> &mut Self;
}

impl Mode0644 for std::fs::OpenOptions {
    fn mode_0644(&mut self) -> &mut Self {
        use std::os::unix::fs::OpenOptionsExt as _;
        self.mode(0o644)
    }
}

/// Checks a target before anything is written: exists, is a directory (or an allowed
/// device), is writable.
fn check_target(t: &Path, allow_device: bool) -> Result<(), Failure> {
    let meta = std::fs::metadata(t).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => usage(format!(
            "{} does not exist: give an existing directory to benchmark",
            t.display()
        )),
        std::io::ErrorKind::PermissionDenied => usage(format!(
            "cannot reach {}: permission denied; choose a directory you can write to",
            t.display()
        )),
        _ => usage(format!("cannot use {}: {e}", t.display())),
    })?;
    if meta.file_type().is_block_device() {
        if allow_device {
            return Err(usage(format!(
                "{} is a block device: benchmarking raw devices is not supported; make a filesystem on it and give a directory there",
                t.display()
            )));
        }
        return Err(usage(format!(
            "{} is a block device: candor would overwrite its contents; give a directory on a filesystem instead (or --allow-device-writes if you mean it)",
            t.display()
        )));
    }
    if !meta.is_dir() {
        return Err(usage(format!("{} is not a directory: give the directory to benchmark (candor makes its own files there)", t.display())));
    }
    Ok(())
}

fn make_run_dir(t: &Path, id: &str) -> Result<RunDir, Failure> {
    RunDir::create(t, id).map_err(|e| match e.raw_os_error() {
        Some(libc::EROFS) => usage(format!(
            "{} is on a read-only filesystem: choose a writable directory",
            t.display()
        )),
        Some(libc::EACCES) | Some(libc::EPERM) => usage(format!(
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

/// Whether the filesystem accepts O_DIRECT: a probe file of candor's own in its run dir.
fn direct_supported(dir: &RunDir) -> Result<(), String> {
    let p = dir.file("direct-probe");
    let c = CString::new(p.as_os_str().as_bytes()).map_err(|e| e.to_string())?;
    // SAFETY: valid path.
    let fd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_RDWR
                | libc::O_CREAT
                | libc::O_EXCL
                | libc::O_DIRECT
                | libc::O_CLOEXEC
                | libc::O_NOFOLLOW,
            0o600,
        )
    };
    if fd < 0 {
        let e = std::io::Error::last_os_error();
        let _ = dir.remove_file("direct-probe");
        return Err(e.to_string());
    }
    // SAFETY: fd is open.
    unsafe { libc::close(fd) };
    let _ = dir.remove_file("direct-probe");
    Ok(())
}

struct Bar {
    bar: Option<indicatif::ProgressBar>,
    notes: Vec<String>,
    /// `--duration`: which pass over the plan is running (the bar counts one pass).
    round: Option<u64>,
}

impl Progress for Bar {
    fn start_point(&mut self, p: &Point, index: usize, total: usize) {
        if let Some(b) = &self.bar {
            b.set_message(format!(
                "{}[{}/{}] {} {} file, {} records, {} thread(s), QD {}",
                self.round
                    .map(|r| format!("round {r} "))
                    .unwrap_or_default(),
                index + 1,
                total,
                p.spec.name,
                format_size(p.file_size),
                format_size(p.record_size),
                p.threads,
                p.iodepth
            ));
        }
    }

    fn repetition_done(&mut self) {
        if let Some(b) = &self.bar {
            b.inc(1);
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

/// The plan, its settings and the notes the person should read about them.
struct Planned {
    points: Vec<Point>,
    settings: RunSettings,
    notes: Vec<String>,
    default_run: bool,
}

fn is_default_run(a: &Args) -> bool {
    a.tests.is_none()
        && a.file_size.is_none()
        && a.record_size.is_none()
        && !a.auto
        && a.preset.is_none()
        && a.threads.is_none()
        && a.iodepth.is_none()
        && a.engine.is_none()
}

/// `--cpus 0,2-3`: the listed CPUs, each one this process may run on.
fn parse_cpus(list: Option<&str>) -> Result<Vec<usize>, Failure> {
    let Some(list) = list else {
        return Ok(Vec::new());
    };
    let allowed = candor_engine::engines::allowed_cpus();
    let bad = |p: &str| {
        usage(format!(
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
                return Err(usage(format!(
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

fn plan(a: &Args, infos: &[TargetInfo], dirs: &[RunDir]) -> Result<Planned, Failure> {
    let mut notes = Vec::new();
    let repeat_default;
    let runtime = a
        .runtime
        .as_deref()
        .map(parse_duration)
        .transpose()
        .map_err(usage)?;
    let threads = a
        .threads
        .as_deref()
        .map(|t| parse_u32_list(t, "threads", 4096))
        .transpose()?
        .unwrap_or_else(|| vec![1]);
    let iodepths = a
        .iodepth
        .as_deref()
        .map(|t| parse_u32_list(t, "iodepth", 4096))
        .transpose()?
        .unwrap_or_else(|| vec![1]);
    if a.time_based && a.runtime.is_none() {
        return Err(usage(
            "--time-based needs --runtime to say when to stop: add e.g. --runtime 10s",
        ));
    }
    if a.mix_read_pct > 100 {
        return Err(usage(format!(
            "--mix-read-pct {} is not a percentage: use 0 to 100",
            a.mix_read_pct
        )));
    }
    if a.files == 0 || a.files > 10_000_000 {
        return Err(usage(format!(
            "--files {} is out of range: use 1 to 10000000",
            a.files
        )));
    }
    if a.stride == 0 {
        return Err(usage(
            "--stride 0 would read the same record forever: use 1 or more",
        ));
    }
    if let Some(r) = a.repeat {
        if r == 0 {
            return Err(usage("--repeat 0 runs nothing: use 1 or more"));
        }
    }
    let free = infos
        .iter()
        .map(|i| i.free_bytes)
        .filter(|&f| f > 0)
        .min()
        .unwrap_or(0);
    let mut direct = a.direct;
    let default_run = is_default_run(a);
    let mut runtime_ns = runtime.map(|d| d.as_nanos() as u64);
    let points;
    if default_run {
        // The quick, honest disk check: sequential 1 MiB and random 4 KiB, each at depth 1
        // and a deep queue, O_DIRECT where the filesystem takes it.
        repeat_default = 3;
        let mut size: u64 = 1 << 30;
        while size > 16 << 20 && size.saturating_mul(8) > free {
            size /= 2;
        }
        let refused: Vec<String> = dirs
            .iter()
            .zip(infos)
            .filter_map(|(d, i)| {
                direct_supported(d)
                    .err()
                    .map(|e| format!("{} ({}): {e}", i.path, i.fs_type))
            })
            .collect();
        if refused.is_empty() {
            direct = true;
        } else {
            notes.push(format!(
                "O_DIRECT is refused on {}: running buffered with each file's cache dropped before reads instead",
                refused.join(", ")
            ));
        }
        if runtime_ns.is_none() {
            runtime_ns = Some(2_000_000_000);
            notes.push(format!(
                "the default run caps each repetition at 2 s: tests that cannot cover the {} file in that time measure the part they reached (give --runtime to change it)",
                format_size(size)
            ));
        }
        let t = |n: &str| {
            workload::find(n).ok_or_else(|| Failure::failed(format!("internal: test {n} missing")))
        };
        let mk = |spec: &'static TestSpec, rs: u64, qd: u32| Point {
            spec,
            file_size: size,
            record_size: rs,
            threads: 1,
            iodepth: qd,
            engine: EngineKind::IoUring,
        };
        points = vec![
            mk(t("write")?, 1 << 20, 1),
            mk(t("write")?, 1 << 20, 8),
            mk(t("read")?, 1 << 20, 1),
            mk(t("read")?, 1 << 20, 8),
            mk(t("randread")?, 4 << 10, 1),
            mk(t("randread")?, 4 << 10, 32),
            mk(t("randwrite")?, 4 << 10, 1),
            mk(t("randwrite")?, 4 << 10, 32),
        ];
    } else {
        repeat_default = 1;
        let preset_iozone = match a.preset.as_deref() {
            None => false,
            Some("iozone") => true,
            Some(p) => {
                return Err(usage(format!(
                    "'{p}' is not a preset: the presets are iozone"
                )))
            }
        };
        let auto = a.auto || preset_iozone;
        let tests = match (&a.tests, preset_iozone) {
            (Some(t), _) => parse_tests(t).map_err(usage)?,
            (None, true) => parse_tests("0,1,2,3,4,5,6,7,9,10,11,12").map_err(usage)?,
            (None, false) => parse_tests("0,1,2").map_err(usage)?,
        };
        let engine = match &a.engine {
            Some(e) => parse_engine(e).map_err(usage)?,
            None if iodepths.iter().any(|&d| d > 1) => EngineKind::IoUring,
            None => EngineKind::Psync,
        };
        if iodepths.iter().any(|&d| d > 1) && !entry(engine).queues {
            return Err(usage(format!(
                "--iodepth above 1 needs a queueing engine, and {} is synchronous: add --engine io_uring",
                engine.name()
            )));
        }
        let (files, records) = if auto {
            let lo_f = size_arg(&a.min_file_size, "min-file-size")?.unwrap_or(plan::AUTO_MIN_FILE);
            let hi_f = size_arg(&a.max_file_size, "max-file-size")?.unwrap_or(plan::AUTO_MAX_FILE);
            let lo_r =
                size_arg(&a.min_record_size, "min-record-size")?.unwrap_or(plan::AUTO_MIN_RECORD);
            let hi_r =
                size_arg(&a.max_record_size, "max-record-size")?.unwrap_or(plan::AUTO_MAX_RECORD);
            if lo_f > hi_f || lo_r > hi_r {
                return Err(usage("the --min size is above the --max size: swap them"));
            }
            let f = match &a.file_size {
                Some(t) => parse_size_list(t).map_err(|e| usage(format!("--file-size: {e}")))?,
                None => plan::powers_of_two(lo_f, hi_f),
            };
            let r = match &a.record_size {
                Some(t) => parse_size_list(t).map_err(|e| usage(format!("--record-size: {e}")))?,
                None => plan::powers_of_two(lo_r, hi_r),
            };
            (f, r)
        } else {
            let f = match &a.file_size {
                Some(t) => parse_size_list(t).map_err(|e| usage(format!("--file-size: {e}")))?,
                None => vec![64 << 20],
            };
            let r = match &a.record_size {
                Some(t) => parse_size_list(t).map_err(|e| usage(format!("--record-size: {e}")))?,
                None => {
                    vec![if auto { 4 << 10 } else { 1 << 20 }
                        .min(*f.iter().min().unwrap_or(&(1 << 20)))]
                }
            };
            (f, r)
        };
        if files.is_empty() || records.is_empty() {
            return Err(usage("the size range is empty: widen --min/--max sizes"));
        }
        let largest_file = files.iter().copied().max().unwrap_or(0);
        // A sweep keeps only the records that fit its files, as iozone -a does.
        let records: Vec<u64> = if auto && a.record_size.is_none() {
            records.into_iter().filter(|&r| r <= largest_file).collect()
        } else {
            records
        };
        if let Some(&r) = records.iter().find(|&&r| r > largest_file) {
            return Err(usage(format!(
                "record size {} is larger than the file size {}: a record must fit in the file; use a smaller --record-size or a larger --file-size",
                format_size(r),
                format_size(largest_file)
            )));
        }
        if records.iter().any(|&r| r > u32::MAX as u64 / 2) {
            return Err(usage(
                "record sizes above 1G are not supported: use a smaller --record-size",
            ));
        }
        // UnixBench's file copy buffers unless record sizes were given.
        let copy_records: Vec<u64> = if a.record_size.is_some() {
            records.clone()
        } else {
            vec![256, 1024, 4096]
        };
        points = plan::build(&Sweep {
            tests: &tests,
            file_sizes: &files,
            record_sizes: &records,
            threads: &threads,
            iodepths: &iodepths,
            engine,
            auto,
            copy_record_sizes: &copy_records,
        });
        if points.is_empty() {
            return Err(usage(
                "no test fits: every record size is larger than every file size",
            ));
        }
    }

    // O_DIRECT constraints, checked before anything runs.
    if direct {
        for (d, info) in dirs.iter().zip(infos) {
            if let Err(e) = direct_supported(d) {
                return Err(usage(format!(
                    "the {} filesystem at {} refuses O_DIRECT ({e}): drop --direct to run buffered",
                    if info.fs_type.is_empty() {
                        "target's"
                    } else {
                        &info.fs_type
                    },
                    info.path
                )));
            }
            let lbs = info
                .device
                .as_ref()
                .map(|b| b.logical_block_size as u64)
                .filter(|&b| b > 0)
                .unwrap_or(512);
            if let Some(p) = points.iter().find(|p| {
                entry(p.engine).direct
                    && p.spec.special == candor_engine::special::Special::None
                    && p.record_size % lbs != 0
            }) {
                return Err(usage(format!(
                    "with --direct, the record size must be a multiple of the device's logical block size ({lbs} bytes on {}), and {} is not: choose e.g. --record-size 4k",
                    info.path,
                    format_size(p.record_size)
                )));
            }
        }
        if points.iter().any(|p| !entry(p.engine).direct) {
            notes.push("the stdio and mmap tests go through the page cache by nature: they ran without O_DIRECT".to_string());
        }
    }

    // Free space: the largest file set (one file per thread) must fit, with a margin.
    let need = points
        .iter()
        .map(|p| p.file_size.saturating_mul(p.threads as u64))
        .max()
        .unwrap_or(0);
    let need_with_margin = need + need / 50 + (16 << 20);
    for info in infos {
        if info.free_bytes > 0 && info.free_bytes < need_with_margin {
            return Err(usage(format!(
                "{} has {} free but the plan needs {} (file size x threads, plus a margin): free some space or choose a smaller --file-size or fewer --threads",
                info.path,
                format_size(info.free_bytes),
                format_size(need_with_margin)
            )));
        }
    }

    let settings = RunSettings {
        direct,
        osync: a.osync,
        fsync_in_timing: !a.no_fsync_in_timing,
        close_in_timing: a.close_in_timing,
        keep_cache: a.keep_cache,
        drop_caches: a.drop_caches,
        repeat: a.repeat.unwrap_or(repeat_default),
        stride: a.stride,
        mix_read_pct: a.mix_read_pct,
        stonewall: a.stonewall,
        runtime_ns,
        time_based: a.time_based,
        cpus: parse_cpus(a.cpus.as_deref())?,
        seed: a.seed,
        meta_files: a.files,
        verify: None,
    };
    if a.verify {
        check_verifiable(&points)?;
    }
    Ok(Planned {
        points,
        settings,
        notes,
        default_run,
    })
}

/// `--verify` needs records that an engine stamps and checks one by one.
fn check_verifiable(points: &[Point]) -> Result<(), Failure> {
    for p in points {
        let name = p.spec.name;
        if p.spec.special != candor_engine::special::Special::None {
            return Err(usage(format!(
                "--verify checks the records of the file tests, and {name} is not one: leave it out of --tests or drop --verify"
            )));
        }
        if matches!(
            p.engine,
            EngineKind::Stdio | EngineKind::Mmap | EngineKind::Null
        ) {
            return Err(usage(format!(
                "--verify works with the sync, psync, vector and io_uring engines, and {name} runs on {}: leave it out of --tests (or choose another --engine) or drop --verify",
                p.engine.name()
            )));
        }
        if (p.record_size as usize) < HEADER {
            return Err(usage(format!(
                "--verify puts a {HEADER}-byte header in every record, and {} is smaller: use a --record-size of 64 or more",
                format_size(p.record_size)
            )));
        }
        if p.spec.pattern == candor_engine::workload::PatternKind::SameRecord && p.iodepth > 1 {
            return Err(usage(format!(
                "{name} rewrites one record, and with --iodepth {} several of those writes are in flight at once, so which lands last is not defined and cannot be verified: run it at --iodepth 1",
                p.iodepth
            )));
        }
    }
    Ok(())
}

/// `--duration`: each test keeps its latest round's result, and every round's mean
/// throughput in `extra.rounds_throughput` (so memory does not grow with the rounds).
fn soak_merge(results: &mut Vec<TestResult>, new: Vec<TestResult>) {
    for mut r in new {
        let same = results.iter().position(|o| {
            o.target == r.target
                && o.test == r.test
                && o.file_size == r.file_size
                && o.record_size == r.record_size
                && o.threads == r.threads
                && o.iodepth == r.iodepth
        });
        let mut rounds: Vec<serde_json::Value> = Vec::new();
        let mut failed_rounds = 0u64;
        if let Some(i) = same {
            let old = results.remove(i);
            if let Some(serde_json::Value::Array(a)) = old.extra.get("rounds_throughput") {
                rounds = a.clone();
            }
            failed_rounds = old
                .extra
                .get("failed_rounds")
                .and_then(|v| v.as_u64())
                .unwrap_or(0);
            if !old.status.is_ok() && r.status.is_ok() {
                // A failure in an earlier round stays visible.
                r.status = old.status;
                r.error = old.error;
            }
        }
        if !r.status.is_ok() {
            failed_rounds += 1;
        }
        rounds.push(r.throughput.mean.into());
        r.extra
            .insert("rounds_throughput".into(), serde_json::Value::Array(rounds));
        r.extra.insert("failed_rounds".into(), failed_rounds.into());
        match same {
            Some(i) => results.insert(i, r),
            None => results.push(r),
        }
    }
}

fn options_map(a: &Args, p: &Planned, format: &str) -> BTreeMap<String, serde_json::Value> {
    let s = &p.settings;
    let mut m = BTreeMap::new();
    let mut put = |k: &str, v: serde_json::Value| {
        m.insert(k.to_string(), v);
    };
    put("default_run", p.default_run.into());
    put("direct", s.direct.into());
    put("osync", s.osync.into());
    put("fsync_in_timing", s.fsync_in_timing.into());
    put("close_in_timing", s.close_in_timing.into());
    put("keep_cache", s.keep_cache.into());
    put("drop_caches", s.drop_caches.into());
    put("repeat", s.repeat.into());
    put("stride", s.stride.into());
    put("mix_read_pct", s.mix_read_pct.into());
    put("stonewall", s.stonewall.into());
    put("runtime_s", s.runtime_ns.map(|n| n as f64 / 1e9).into());
    put("seed", s.seed.into());
    put("witness", a.witness.clone().into());
    put("trace_syscalls", a.trace_syscalls.into());
    put("format", format.into());
    put("verify", a.verify.into());
    put("buffer_pattern", a.buffer_pattern.clone().into());
    if let Some(d) = &a.duration {
        put("duration", d.clone().into());
    }
    m
}

/// `--device-spec auto`: measures the first target's ceilings with O_DIRECT before the plan
/// (large sequential reads and writes at depth 16, 4 KiB random at depth 64, 3 s each).
fn measure_ceiling(
    targets: &mut [Target],
    planned: &Planned,
    doc: &mut RunDoc,
) -> Result<crate::efficiency::DeviceSpec, Failure> {
    let Some(first) = targets.first() else {
        return Err(usage("no target to measure"));
    };
    let first_path = first.path.clone();
    if let Err(e) = direct_supported(&first.dir) {
        return Err(usage(format!(
            "--device-spec auto measures with O_DIRECT, which {} refuses ({e}): give the ceiling instead, e.g. --device-spec seq=510MB/s,iops=95000",
            first_path.display()
        )));
    }
    let free = doc.targets.first().map(|t| t.free_bytes).unwrap_or(0);
    let mut size: u64 = 1 << 30;
    while size > 16 << 20 && size.saturating_mul(4) > free {
        size /= 2;
    }
    let find = |n: &str| {
        workload::find(n).ok_or_else(|| Failure::failed(format!("internal: test {n} missing")))
    };
    let mk = |spec: &'static TestSpec, rs: u64, qd: u32| Point {
        spec,
        file_size: size,
        record_size: rs,
        threads: 1,
        iodepth: qd,
        engine: EngineKind::IoUring,
    };
    let points = vec![
        mk(find("write")?, 1 << 20, 16),
        mk(find("read")?, 1 << 20, 16),
        mk(find("randread")?, 4 << 10, 64),
        mk(find("randwrite")?, 4 << 10, 64),
    ];
    let settings = RunSettings {
        direct: true,
        repeat: 1,
        runtime_ns: Some(3_000_000_000),
        keep_cache: false,
        ..planned.settings.clone()
    };
    eprintln!(
        "candor: measuring the device's ceiling on {} (about 15 s)",
        first_path.display()
    );
    let mut got: Vec<TestResult> = Vec::new();
    let mut sink = |rs: Vec<TestResult>| got.extend(rs);
    let mut quiet = runner::NoProgress;
    if let Some(StopReason::Interrupted(sig)) =
        runner::run(&mut targets[..1], &points, &settings, &mut quiet, &mut sink)
    {
        return Err(Failure {
            code: 128 + sig,
            message: format!(
                "interrupted by {} while measuring the device's ceiling",
                signals::signal_name(sig)
            ),
        });
    }
    let pick = |t: &str, iops: bool| {
        got.iter()
            .find(|r| r.test == t && r.status.is_ok())
            .map(|r| if iops { r.iops.mean } else { r.throughput.mean })
    };
    let spec = crate::efficiency::DeviceSpec {
        seq_write: pick("write", false),
        seq_read: pick("read", false),
        iops_read: pick("randread", true),
        iops_write: pick("randwrite", true),
        source: "measured".into(),
    };
    if spec
        == (crate::efficiency::DeviceSpec {
            source: "measured".into(),
            ..Default::default()
        })
    {
        return Err(Failure::failed("the device's ceiling could not be measured: every measuring test failed; give --device-spec seq=...,iops=... instead"));
    }
    doc.warnings.push(format!(
        "device ceiling measured on {}: sequential read {:.0} MB/s, write {:.0} MB/s; 4 KiB random read {:.0} IOPS, write {:.0} IOPS",
        first_path.display(),
        spec.seq_read.unwrap_or(0.0) / 1e6,
        spec.seq_write.unwrap_or(0.0) / 1e6,
        spec.iops_read.unwrap_or(0.0),
        spec.iops_write.unwrap_or(0.0)
    ));
    Ok(spec)
}

/// Typed warnings about one result, each worded with its remedy.
fn result_warnings(r: &TestResult, default_run: bool) -> Vec<String> {
    let mut out = Vec::new();
    let label = format!(
        "{} ({} file, {} records, {} thread(s), QD {})",
        r.test,
        format_size(r.file_size),
        format_size(r.record_size),
        r.threads,
        r.iodepth
    );
    // Unsteady repetitions (CV > 10%) are flagged by the reporters from the data itself.
    let truncated: Vec<&candor_model::Repetition> = r.reps.iter().filter(|x| x.truncated).collect();
    if !truncated.is_empty() && !default_run {
        let want = (r.file_size / r.record_size.max(1)) * r.threads as u64;
        let done = truncated.iter().map(|x| x.ops).min().unwrap_or(0);
        out.push(format!(
            "{label}: --runtime ended {} of {} repetition(s) after {:.0}% of the file; the figure covers only that part: raise --runtime to cover the whole file",
            truncated.len(),
            r.reps.len(),
            // Rounded down: a cut repetition never reads as 100% of the file.
            (100.0 * done as f64 / want.max(1) as f64).floor()
        ));
    }
    out
}

pub fn run(a: Args) -> CmdResult {
    if a.mpi {
        return mpi::run(a);
    }
    if a.reorder || a.shared_file {
        return Err(usage(
            "--reorder and --shared-file arrange files between MPI ranks and need --mpi: run it as `mpirun -n 4 candor run --mpi ...`",
        ));
    }
    run_with(a, None)
}

fn run_with(a: Args, mpi: Option<&mpi::Session>) -> CmdResult {
    let started_at = rfc3339_now();
    let command_line: Vec<String> = std::env::args().collect();
    let format_name = a.format.clone().unwrap_or_else(|| {
        if a.preset.as_deref() == Some("iozone") {
            "iozone"
        } else {
            "table"
        }
        .to_string()
    });
    let format = Format::parse(&format_name).ok_or_else(|| {
        let names: Vec<&str> = Format::ALL.iter().map(|(n, _)| *n).collect();
        usage(format!(
            "'{}' is not a format: choose from {}",
            format_name,
            names.join(", ")
        ))
    })?;
    let mode = match a.witness.as_str() {
        "auto" => candor_witness::Mode::Auto,
        "procfs" => candor_witness::Mode::Procfs,
        "bpf" => candor_witness::Mode::Bpf,
        "off" => candor_witness::Mode::Off,
        other => {
            return Err(usage(format!(
                "'{other}' is not a witness source: choose auto, procfs, bpf or off"
            )))
        }
    };
    if a.trace_syscalls
        && matches!(
            mode,
            candor_witness::Mode::Procfs | candor_witness::Mode::Off
        )
    {
        return Err(usage(format!(
            "--trace-syscalls needs the eBPF witness, not --witness {}: use --witness bpf or auto",
            a.witness
        )));
    }
    let interval = parse_duration(&a.witness_interval).map_err(usage)?;
    let soak = a
        .duration
        .as_deref()
        .map(|d| parse_duration(d).map_err(|e| usage(format!("--duration: {e}"))))
        .transpose()?;
    if soak.is_some() && mpi.is_some() {
        return Err(usage(
            "--duration is not available with --mpi: repeat the MPI job instead",
        ));
    }
    if a.verify && (a.shared_file || a.reorder) {
        return Err(usage(
            "--verify follows the records each process writes in its own files, and with --shared-file or --reorder ranks read what others wrote: drop one of them",
        ));
    }
    let pattern = BufferPattern::parse(&a.buffer_pattern).map_err(usage)?;
    candor_engine::verify::set_buffer_pattern(pattern);
    let given_spec = match a.device_spec.as_deref() {
        None | Some("auto") => None,
        Some(t) => Some(crate::efficiency::parse_spec(t).map_err(usage)?),
    };
    // Over MPI only rank 0 saves, so only it checks the path; the ranks then agree, so that
    // no rank stops alone and leaves the others waiting.
    let output_ok = match a.output.as_ref().filter(|_| mpi::is_root(mpi)) {
        Some(out) if out.is_dir() => Err(usage(format!(
            "{} is a directory: give a file name for the JSON result",
            out.display()
        ))),
        Some(out) => match out.parent().filter(|p| !p.as_os_str().is_empty()) {
            Some(parent) if !parent.is_dir() => Err(usage(format!(
                "cannot save to {}: the directory {} does not exist",
                out.display(),
                parent.display()
            ))),
            _ => Ok(()),
        },
        None => Ok(()),
    };
    mpi::agree(mpi, output_ok)?;
    let targets: Vec<PathBuf> = if a.targets.is_empty() {
        vec![PathBuf::from(".")]
    } else {
        a.targets.clone()
    };
    mpi::agree(
        mpi,
        targets
            .iter()
            .try_for_each(|t| check_target(t, a.allow_device_writes)),
    )?;
    // Results and reports name each target by its full path ("." says nothing in a report).
    let targets: Vec<PathBuf> = targets
        .into_iter()
        .map(|t| std::fs::canonicalize(&t).unwrap_or(t))
        .collect();
    signals::install();

    // Stale run directories of killed runs go first (only candor's, by their marker).
    // Not over MPI: a run directory made on another node cannot be told from a stale one.
    for t in targets.iter().filter(|_| mpi.is_none()) {
        if let Ok(rep) = clean_stale(t) {
            for p in rep.removed {
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
        targets
            .iter()
            .map(|t| make_run_dir(t, &id))
            .collect::<Result<Vec<RunDir>, Failure>>(),
    )?;
    let infos: Vec<TargetInfo> = targets
        .iter()
        .map(|t| candor_witness::describe_target(t))
        .collect();
    let mut planned = mpi::agree(mpi, plan(&a, &infos, &dirs))?;
    if a.shared_file {
        mpi::check_shared_plan(&planned.points)?;
    }
    if a.verify {
        planned.settings.verify = Some(VerifyConfig::new(&id, a.seed));
    }

    let mut doc = RunDoc::new("run", command_line, started_at);
    doc.host = candor_witness::describe_host();
    doc.targets = infos;
    doc.options = options_map(&a, &planned, &format_name);
    doc.mpi = mpi.map(|m| m.info(a.reorder, a.shared_file));
    doc.warnings.extend(planned.notes.iter().cloned());
    for n in planned.notes.iter().filter(|_| mpi::is_root(mpi)) {
        eprintln!("candor: {n}");
    }

    let config = candor_witness::Config {
        mode,
        interval,
        trace_syscalls: a.trace_syscalls,
    };
    let mut run_targets = Vec::new();
    for (t, d) in targets.iter().zip(dirs) {
        let (w, note) = candor_witness::Witness::new(t, config.clone());
        if let Some(n) = note {
            if mpi::is_root(mpi) {
                eprintln!("candor: {n}");
            }
            if !doc.warnings.contains(&n) {
                doc.warnings.push(n);
            }
        }
        run_targets.push(Target::new(t.clone(), d, w));
    }

    let device_spec = match (&given_spec, a.device_spec.as_deref()) {
        (Some(s), _) => Some(s.clone()),
        (None, Some("auto")) => Some(measure_ceiling(&mut run_targets, &planned, &mut doc)?),
        _ => None,
    };
    if device_spec.is_some() && a.device_spec.as_deref() == Some("auto") {
        // One ceiling serves every target: say so when the targets sit on other devices.
        let dev = |t: &TargetInfo| t.device.as_ref().map(|d| d.name.clone());
        if let Some(first) = doc.targets.first().map(dev) {
            let others: Vec<String> = doc
                .targets
                .iter()
                .filter(|t| dev(t) != first)
                .map(|t| t.path.clone())
                .collect();
            if !others.is_empty() {
                let w = format!(
                    "the device's ceiling was measured under {} only: the efficiency of {} is against that device's ceiling, not their own; run them separately with --device-spec auto, or give --device-spec",
                    doc.targets[0].path,
                    others.join(", ")
                );
                eprintln!("candor: {w}");
                doc.warnings.push(w);
            }
        }
    }
    if let Some(spec) = &device_spec {
        doc.options.insert(
            "device_spec".into(),
            serde_json::json!({"source": spec.source, "seq_read": spec.seq_read, "seq_write": spec.seq_write, "iops_read": spec.iops_read, "iops_write": spec.iops_write}),
        );
    }

    let total =
        planned.points.len() as u64 * planned.settings.repeat as u64 * run_targets.len() as u64;
    let bar = if !a.quiet && std::io::stderr().is_terminal() && mpi::is_root(mpi) {
        let b = indicatif::ProgressBar::new(total);
        b.set_style(
            indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} {elapsed_precise} {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        Some(b)
    } else {
        None
    };
    let mut progress = Bar {
        bar,
        notes: Vec::new(),
        round: soak.map(|_| 1),
    };
    let mut save_error: Option<String> = None;
    let output = a.output.clone();
    let html = a.html.clone();
    let default_run = planned.default_run;
    let mut results: Vec<TestResult> = Vec::new();
    let stop = {
        let doc_ref = &mut doc;
        let results_ref = &mut results;
        let save_ref = &mut save_error;
        let mut sink = |mut rs: Vec<TestResult>| {
            if let Some(spec) = &device_spec {
                for r in rs.iter_mut() {
                    r.efficiency = crate::efficiency::efficiency(r, spec);
                }
            }
            for r in &rs {
                for w in result_warnings(r, default_run)
                    .into_iter()
                    .chain(mpi::warnings(r))
                {
                    if !doc_ref.warnings.contains(&w) {
                        doc_ref.warnings.push(w);
                    }
                }
            }
            if soak.is_some() {
                soak_merge(results_ref, rs);
            } else {
                results_ref.extend(rs);
            }
            doc_ref.results = results_ref.clone();
            if let Some(out) = &output {
                if let Err(e) = save_atomic(
                    out,
                    &serde_json::to_string_pretty(&*doc_ref).unwrap_or_default(),
                ) {
                    if save_ref.is_none() {
                        *save_ref = Some(format!("cannot save {}: {e}", out.display()));
                    }
                }
            }
        };
        match mpi {
            None => {
                // One pass of the plan, or (--duration) pass after pass until the time is up.
                let t0 = std::time::Instant::now();
                loop {
                    let stop = runner::run(
                        &mut run_targets,
                        &planned.points,
                        &planned.settings,
                        &mut progress,
                        &mut sink,
                    );
                    match soak {
                        Some(d) if stop.is_none() && t0.elapsed() < d => {
                            // The bar counts one pass over the plan: start it again.
                            progress.round = progress.round.map(|r| r + 1);
                            if let Some(b) = &progress.bar {
                                b.set_position(0);
                            }
                            continue;
                        }
                        _ => break stop,
                    }
                }
            }
            Some(m) => runner::run_coordinated(
                &mut run_targets,
                &planned.points,
                &planned.settings,
                &mut progress,
                &mut sink,
                &mut m.coordinator(a.reorder, a.shared_file),
            ),
        }
    };
    if let Some(b) = &progress.bar {
        b.finish_and_clear();
    }
    // Remove candor's files now, before printing: nothing is left behind even if the
    // terminal is gone.
    let mut cleanup_errors = Vec::new();
    for mut t in run_targets {
        if let Err(e) = t.dir.remove() {
            cleanup_errors.push(format!("could not remove {}: {e}", t.dir.path().display()));
        }
    }

    doc.results = results;
    doc.finished_at = Some(rfc3339_now());
    for n in progress.notes {
        if !doc.warnings.contains(&n) {
            doc.warnings.push(n);
        }
    }
    let code = match &stop {
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
    };
    if !mpi::is_root(mpi) {
        // Rank 0 reports for every rank.
        if stop.is_some() {
            mpi::stop_all(mpi, code);
        }
        return Ok(code);
    }
    if let Some(out) = &output {
        if let Err(e) = save_atomic(out, &serde_json::to_string_pretty(&doc).unwrap_or_default()) {
            save_error = Some(format!("cannot save {}: {e}", out.display()));
        }
    }
    if let Some(h) = &html {
        if let Err(e) = save_atomic(h, &candor_report::render_html(&doc)) {
            eprintln!("candor: cannot write the HTML report {}: {e}", h.display());
        }
    }
    let text = candor_report::render(&doc, format);
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes());
    let _ = stdout.flush();
    for e in &cleanup_errors {
        eprintln!("candor: {e}");
    }
    if let Some(e) = save_error {
        eprintln!("candor: {e}");
        return Ok(FAILED);
    }
    match &stop {
        Some(StopReason::Interrupted(sig)) => {
            eprintln!(
                "candor: interrupted by {}: {} test(s) finished{}; candor's files were removed",
                signals::signal_name(*sig),
                doc.results.len(),
                output
                    .as_ref()
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
    if stop.is_some() {
        mpi::stop_all(mpi, code);
    }
    Ok(code)
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
    fn dates_are_rfc3339() {
        let d = rfc3339_now();
        assert_eq!(d.len(), 20);
        assert!(d.ends_with('Z'));
        assert_eq!(&d[4..5], "-");
    }
}
