//! The runner: takes the plan and the targets, and for every point runs every repetition
//! on every target in turn (interleaved, so drift in the machine does not favour one
//! target). Per repetition: prepare the files (untimed), let the witness take its first
//! sample, release all threads together by a barrier, time each thread's pass, flush,
//! let the witness judge. Per-thread statistics are merged after the threads are joined.

use crate::buffer::AlignedBuf;
use crate::clock::{now_ns, process_cpu};
use crate::engines::{entry, EngineError, Job, OpenSpec, ThreadStats};
use crate::plan::Point;
use crate::rundir::RunDir;
use crate::signals;
use crate::verify::{FileVerify, Tally, VerifyConfig};
use crate::workload::{Direction, FileState};
use candor_model::{Cpu, Intent, Repetition, TestResult, ThreadAggregate};
use candor_stats::{summarize, Histogram};
use candor_witness::{Outcome, Watch, Witness};
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::sync::Barrier;

/// How tests are run (everything but the plan's points).
#[derive(Clone, Debug)]
pub struct RunSettings {
    pub direct: bool,
    pub osync: bool,
    pub fsync_in_timing: bool,
    pub close_in_timing: bool,
    pub keep_cache: bool,
    /// Also write /proc/sys/vm/drop_caches before device-meant reads (root only).
    pub drop_caches: bool,
    pub repeat: u32,
    pub stride: u64,
    pub mix_read_pct: u32,
    pub stonewall: bool,
    /// Cap on one repetition's I/O time.
    pub runtime_ns: Option<u64>,
    /// Loop over the file until `runtime_ns` ends (fio's time_based) instead of one pass.
    pub time_based: bool,
    /// CPUs the I/O threads are pinned to: thread i on cpus[i % len] (empty: not pinned).
    pub cpus: Vec<usize>,
    pub seed: u64,
    /// Entries per thread for the metadata tests.
    pub meta_files: u64,
    /// `--verify`: every record written carries a header, every record read is checked.
    pub verify: Option<VerifyConfig>,
}

/// Why a run stopped before the end of its plan.
#[derive(Debug)]
pub enum StopReason {
    Interrupted(i32),
    /// ENOSPC or EDQUOT: the rest of the plan cannot run either.
    NoSpace(String),
}

/// One target during the run.
pub struct Target {
    pub path: PathBuf,
    pub dir: RunDir,
    pub witness: Witness,
    files: Option<FileSet>,
    /// Verification found in file sets already replaced, not yet reported.
    verify_pending: Tally,
}

struct FileSet {
    file_size: u64,
    names: Vec<String>,
    /// Whether each file holds file_size bytes of candor's data.
    complete: Vec<bool>,
    /// With --verify: the record size the files are written in (records carry headers, so
    /// another record size needs the files rewritten), and each file's state.
    record_size: u64,
    verify: Vec<Arc<FileVerify>>,
}

impl Target {
    pub fn new(path: PathBuf, dir: RunDir, witness: Witness) -> Target {
        Target {
            path,
            dir,
            witness,
            files: None,
            verify_pending: Tally::default(),
        }
    }

    /// What verification found since the last call (all files, all repetitions).
    pub fn take_verify(&mut self) -> Tally {
        let mut t = std::mem::take(&mut self.verify_pending);
        if let Some(f) = &self.files {
            for v in &f.verify {
                t.merge(&v.take());
            }
        }
        t
    }

    /// The current data files, one per thread.
    pub(crate) fn file_paths(&self) -> Vec<PathBuf> {
        self.paths()
    }

    /// Makes sure one complete file of `file_size` per thread exists (untimed).
    pub(crate) fn ensure_complete_files(
        &mut self,
        file_size: u64,
        threads: u32,
        seed: u64,
    ) -> Result<(), EngineError> {
        self.use_files(file_size, threads, None);
        let paths = self.paths();
        if let Some(fsset) = self.files.as_mut() {
            for (i, p) in paths.iter().enumerate() {
                let ok = fsset.complete[i]
                    && std::fs::symlink_metadata(p)
                        .map(|m| m.len() == file_size)
                        .unwrap_or(false);
                if !ok {
                    fill_file(p, file_size, seed ^ i as u64)?;
                    fsset.complete[i] = true;
                }
            }
        }
        Ok(())
    }

    fn paths(&self) -> Vec<PathBuf> {
        self.files
            .as_ref()
            .map(|f| f.names.iter().map(|n| self.dir.file(n)).collect())
            .unwrap_or_default()
    }

    /// Makes the file set match (file_size, threads, and with --verify the record size),
    /// removing files of another set.
    fn use_files(&mut self, file_size: u64, threads: u32, verify: Option<(VerifyConfig, u64)>) {
        let rs = verify.map_or(0, |v| v.1);
        let fits = self.files.as_ref().is_some_and(|f| {
            f.file_size == file_size && f.names.len() == threads as usize && f.record_size == rs
        });
        if fits {
            return;
        }
        if let Some(old) = self.files.take() {
            for v in &old.verify {
                self.verify_pending.merge(&v.take());
            }
            for n in &old.names {
                let _ = self.dir.remove_file(n);
            }
        }
        let names: Vec<String> = (0..threads).map(|i| format!("t{i}.dat")).collect();
        let verify = match verify {
            Some((cfg, rs)) => (0..threads)
                .map(|i| Arc::new(FileVerify::new(cfg, i, file_size, rs as usize)))
                .collect(),
            None => Vec::new(),
        };
        self.files = Some(FileSet {
            file_size,
            complete: vec![false; names.len()],
            names,
            record_size: rs,
            verify,
        });
    }
}

/// What the person is shown while tests run.
pub trait Progress {
    fn start_point(&mut self, point: &Point, index: usize, total: usize);
    fn repetition_done(&mut self);
    fn note(&mut self, line: &str);
}

pub struct NoProgress;

/// What a run across several processes (MPI ranks) needs from the runner: every rank
/// passes `before_timed` just before each repetition's timed region (also for a repetition
/// it skips, so all ranks pass it the same number of times), and each point's results go
/// through `point_done`, which may gather them and return the merged results (or `None`
/// on a process that does not report). A single process uses `NoCoordinator`.
pub trait Coordinator {
    /// The runner's clock (`clock::now_ns`) at the start of the run: `Repetition::started_s`
    /// counts from here.
    fn started(&mut self, _run_t0_ns: u64) {}
    /// All processes meet here before the timed region of each repetition.
    fn before_timed(&mut self) {}
    /// The results of one point (one per target); what is returned goes to the sink.
    fn point_done(&mut self, results: Vec<TestResult>) -> Option<Vec<TestResult>> {
        Some(results)
    }
    /// Whether `--stonewall` reaches across processes: then a process's first thread to
    /// finish sets `stop` even when it is the only thread.
    fn spans_processes(&self) -> bool {
        false
    }
    /// With `--stonewall`, called by the main thread once the threads are released (and for
    /// a repetition this process skips, with `stop` already set): tells the other processes
    /// when `stop` is set here, sets it when another process finished first, and returns
    /// once every process has finished; true when another process stopped this one.
    fn stonewall(&mut self, _stop: &AtomicBool) -> bool {
        false
    }
    /// Before a read meant for the device, once this process has prepared its own files:
    /// the files to read instead (another process's, so that no node reads back what it
    /// wrote itself), or `None` to read its own. Called with an empty list by a process
    /// that skips the repetition.
    fn read_elsewhere(&mut self, _own: &[PathBuf]) -> Option<Vec<PathBuf>> {
        None
    }
    /// `--shared-file`: this process's segment number in one file per thread shared by every
    /// process, and those files (mapped from `own`, its own files' paths); `None` to use
    /// files of its own. Segment 0's process creates the files.
    fn shared_segment(&self, _own: &[PathBuf]) -> Option<(u64, Vec<PathBuf>)> {
        None
    }
    /// A barrier passed twice while shared files are prepared: after they are created, and
    /// after every process has filled its segment.
    fn files_ready(&mut self) {}
}

/// Whether a repetition of `point` calls `Coordinator::read_elsewhere`.
fn may_read_elsewhere(point: &Point, s: &RunSettings) -> bool {
    point.spec.special == crate::special::Special::None
        && point.spec.direction == Direction::Read
        && intent(point, s) == Intent::Device
}

/// The coordinator's steps of a repetition, for a process that does not run it (its test
/// failed here), so that the other processes do not wait for it.
fn pass_repetition(coord: &mut dyn Coordinator, point: &Point, s: &RunSettings) {
    if point.spec.special == crate::special::Special::None && coord.shared_segment(&[]).is_some() {
        coord.files_ready();
        coord.files_ready();
    }
    pass_after_prep(coord, point, s);
}

/// The coordinator's steps that follow the preparation of a repetition.
fn pass_after_prep(coord: &mut dyn Coordinator, point: &Point, s: &RunSettings) {
    if may_read_elsewhere(point, s) {
        let _ = coord.read_elsewhere(&[]);
    }
    coord.before_timed();
    if s.stonewall && point.spec.special == crate::special::Special::None {
        coord.stonewall(&AtomicBool::new(true));
    }
}

pub struct NoCoordinator;

impl Coordinator for NoCoordinator {}

impl Progress for NoProgress {
    fn start_point(&mut self, _: &Point, _: usize, _: usize) {}
    fn repetition_done(&mut self) {}
    fn note(&mut self, _: &str) {}
}

/// Per repetition, as measured.
pub(crate) struct RepMeasure {
    pub(crate) rep: Repetition,
    pub(crate) threads: Vec<(u64, f64)>,
    pub(crate) stats: ThreadStats,
    pub(crate) cpu: (f64, f64, f64),
    pub(crate) witness: Option<candor_model::Witness>,
    pub(crate) stonewalled: bool,
}

/// What the test meant to measure.
pub fn intent(point: &Point, s: &RunSettings) -> Intent {
    if point.spec.direction == Direction::Write {
        Intent::Device
    } else if point.spec.cached || s.keep_cache {
        Intent::Cache
    } else {
        Intent::Device
    }
}

fn is_root() -> bool {
    // SAFETY: no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Writes a whole file of candor's data (untimed preparation for tests that need one).
fn fill_file(path: &Path, size: u64, seed: u64) -> Result<(), EngineError> {
    let _ = std::fs::remove_file(path);
    let spec = OpenSpec {
        path: path.to_path_buf(),
        create: true,
        write: true,
        direct: false,
        osync: false,
        file_size: size,
        record_size: 0,
        iodepth: 1,
        seed,
    };
    let fd = crate::engines::Fd::open(&spec)?;
    let chunk = (1u64 << 20).min(size) as usize;
    let mut buf = AlignedBuf::new(chunk, seed).ok_or_else(|| {
        EngineError::new(
            "allocate",
            path,
            None,
            std::io::Error::from(std::io::ErrorKind::OutOfMemory),
        )
    })?;
    let mut off = 0u64;
    while off < size {
        let n = ((size - off) as usize).min(chunk);
        let mut piece = if n == chunk {
            None
        } else {
            AlignedBuf::new(n, seed)
        };
        let b = piece.as_mut().unwrap_or(&mut buf);
        crate::engines::full_pio(fd.raw(), b, off, true, path)?;
        off += n as u64;
        if signals::stop_requested().is_some() {
            break;
        }
    }
    fd.fsync()
}

/// Creates an empty file of candor's (O_CREAT|O_EXCL), the shared file of `--shared-file`.
fn create_empty(path: &Path) -> Result<(), EngineError> {
    let spec = OpenSpec {
        path: path.to_path_buf(),
        create: true,
        write: true,
        direct: false,
        osync: false,
        file_size: 0,
        record_size: 0,
        iodepth: 1,
        seed: 0,
    };
    crate::engines::Fd::open(&spec).map(drop)
}

/// Writes `size` bytes of candor's data at `base` of an existing file (one process's
/// segment of a shared file), untimed.
fn fill_segment(path: &Path, base: u64, size: u64, seed: u64) -> Result<(), EngineError> {
    let spec = OpenSpec {
        path: path.to_path_buf(),
        create: false,
        write: true,
        direct: false,
        osync: false,
        file_size: size,
        record_size: 0,
        iodepth: 1,
        seed,
    };
    let fd = crate::engines::Fd::open(&spec)?;
    let chunk = (1u64 << 20).min(size.max(1)) as usize;
    let mut off = 0u64;
    while off < size {
        let n = ((size - off) as usize).min(chunk);
        let mut buf = AlignedBuf::new(n, seed).ok_or_else(|| {
            EngineError::new(
                "allocate",
                path,
                None,
                std::io::Error::from(std::io::ErrorKind::OutOfMemory),
            )
        })?;
        crate::engines::full_pio(fd.raw(), &mut buf, base + off, true, path)?;
        off += n as u64;
        if signals::stop_requested().is_some() {
            break;
        }
    }
    fd.fsync()
}

/// `--shared-file`: one file per thread shared by every process, process k working on its
/// segment [k x file_size, (k + 1) x file_size). Segment 0's process owns the files (in its
/// run directory) and creates them; the others wait for that, then fill their segments when
/// the test needs existing data. Both barriers are passed whatever happens here.
fn prepare_shared(
    target: &mut Target,
    point: &Point,
    s: &RunSettings,
    seg: u64,
    paths: &[PathBuf],
    coord: &mut dyn Coordinator,
) -> Result<(), EngineError> {
    let base = seg * point.file_size;
    let fresh = point.spec.file == FileState::Fresh;
    let mut res = Ok(());
    if seg == 0 {
        for p in paths {
            if fresh {
                let _ = std::fs::remove_file(p);
            }
            if fresh || std::fs::symlink_metadata(p).is_err() {
                if let Err(e) = create_empty(p) {
                    res = Err(e);
                    break;
                }
            }
        }
    }
    coord.files_ready();
    if let Some(fsset) = target.files.as_mut() {
        if fresh {
            fsset.complete.iter_mut().for_each(|c| *c = false);
        } else if res.is_ok() {
            for (i, p) in paths.iter().enumerate() {
                let ok = fsset.complete[i]
                    && std::fs::symlink_metadata(p)
                        .map(|m| m.len() >= base + point.file_size)
                        .unwrap_or(false);
                if !ok {
                    let seed = s.seed ^ i as u64 ^ (seg << 20);
                    if let Err(e) = fill_segment(p, base, point.file_size, seed) {
                        res = Err(e);
                        break;
                    }
                    fsset.complete[i] = true;
                }
            }
        }
    }
    coord.files_ready();
    res
}

/// Writes back and drops a file's cached pages (fdatasync + POSIX_FADV_DONTNEED).
fn drop_file_cache(path: &Path) {
    let Ok(c) = CString::new(path.as_os_str().as_bytes()) else {
        return;
    };
    // SAFETY: valid path; descriptor closed right after.
    unsafe {
        let fd = libc::open(
            c.as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NOFOLLOW,
        );
        if fd >= 0 {
            libc::fdatasync(fd);
            libc::posix_fadvise(fd, 0, 0, libc::POSIX_FADV_DONTNEED);
            libc::close(fd);
        }
    }
}

fn drop_all_caches() {
    // SAFETY: sync has no preconditions.
    unsafe { libc::sync() };
    let _ = std::fs::write("/proc/sys/vm/drop_caches", "3");
}

/// Reads a file once so the next test finds it in the page cache.
fn warm_file(path: &Path) {
    use std::io::Read;
    if let Ok(mut f) = std::fs::File::open(path) {
        let mut buf = vec![0u8; 1 << 20];
        while let Ok(n) = f.read(&mut buf) {
            if n == 0 || signals::stop_requested().is_some() {
                break;
            }
        }
    }
}

fn errno_is_nospace(e: &EngineError) -> bool {
    matches!(e.errno(), Some(libc::ENOSPC) | Some(libc::EDQUOT))
}

#[derive(Default)]
struct WorkerOut {
    stats: ThreadStats,
    t_start: u64,
    t_io_end: u64,
    flush_ns: u64,
    close_ns: u64,
    error: Option<EngineError>,
    ran_all: bool,
}

/// Runs one repetition of `point` on `target`.
fn run_repetition(
    target: &mut Target,
    point: &Point,
    s: &RunSettings,
    rep: u32,
    run_t0: u64,
    coord: &mut dyn Coordinator,
) -> Result<RepMeasure, EngineError> {
    let spec = point.spec;
    target.use_files(
        point.file_size,
        point.threads,
        s.verify.map(|c| (c, point.record_size)),
    );
    let paths = target.paths();
    let is_write = spec.direction != Direction::Read;
    let direct = s.direct && entry(point.engine).direct;

    // ---- untimed preparation ----
    let shared = coord.shared_segment(&paths);
    let sharing = shared.is_some();
    let shared_base = shared.as_ref().map_or(0, |(seg, _)| seg * point.file_size);
    let paths = match shared {
        Some((seg, spaths)) => {
            if let Err(e) = prepare_shared(target, point, s, seg, &spaths, coord) {
                pass_after_prep(coord, point, s);
                return Err(e);
            }
            spaths
        }
        None => paths,
    };
    match spec.file {
        _ if sharing => {}
        FileState::Fresh => {
            if let Some(fsset) = target.files.as_mut() {
                for (i, n) in fsset.names.iter().enumerate() {
                    let _ = target.dir.remove_file(n);
                    fsset.complete[i] = false;
                    if let Some(v) = fsset.verify.get(i) {
                        v.forget();
                    }
                }
            }
        }
        FileState::Existing => {
            let seed = s.seed;
            if let Some(fsset) = target.files.as_mut() {
                for (i, p) in paths.iter().enumerate() {
                    let ok = fsset.complete[i]
                        && std::fs::symlink_metadata(p)
                            .map(|m| m.len() == point.file_size)
                            .unwrap_or(false);
                    if !ok {
                        let filled = match fsset.verify.get(i) {
                            Some(v) => v.fill_file(p, point.file_size),
                            None => fill_file(p, point.file_size, seed ^ i as u64),
                        };
                        if let Err(e) = filled {
                            pass_repetition(coord, point, s);
                            return Err(e);
                        }
                        fsset.complete[i] = true;
                    }
                }
            }
        }
    }
    target.dir.syncfs();
    let meant = intent(point, s);
    // Every test meant for the device starts with none of its files' pages cached, writes
    // included (fio's default `invalidate=1` does the same). A write into pages left cached
    // by the untimed fill is a different workload: the fill's 1 MiB writes leave large
    // folios, and each 4 KiB write into one walks all of its buffer heads
    // (`ext4_block_write_begin`): median latency 16 us against 3.5 us into empty cache
    // (docs/performance.md, "Causes found").
    if !s.keep_cache && !spec.cached {
        for p in &paths {
            drop_file_cache(p);
        }
    }
    if spec.direction != Direction::Write && meant == Intent::Device && s.drop_caches && is_root() {
        drop_all_caches();
    }
    if spec.cached && !direct {
        for p in &paths {
            warm_file(p);
        }
    }
    let paths = if may_read_elsewhere(point, s) {
        coord.read_elsewhere(&paths).unwrap_or(paths)
    } else {
        paths
    };

    // ---- the timed repetition ----
    let n = point.threads as usize;
    let records = point.file_size / point.record_size;
    let start = Barrier::new(n + 1);
    let split_flush = is_write && !s.fsync_in_timing;
    let mid_a = Barrier::new(n + 1);
    let mid_b = Barrier::new(n + 1);
    let stop = AtomicBool::new(false);
    let abort = AtomicBool::new(false);
    let stonewalled = AtomicBool::new(false);
    let deadline_holder = std::sync::OnceLock::<u64>::new();

    let mut watch: Option<Watch> = None;
    let mut cpu0 = (0.0, 0.0);
    let mut cpu1 = (0.0, 0.0);
    let mut t_release = 0u64;
    let mut t_main_end = 0u64;

    let outs: Vec<WorkerOut> = std::thread::scope(|scope| {
        let mut handles = Vec::with_capacity(n);
        for (i, path) in paths.iter().enumerate() {
            let open = OpenSpec {
                path: path.clone(),
                create: spec.file == FileState::Fresh && !sharing,
                write: is_write,
                direct,
                osync: s.osync,
                file_size: point.file_size,
                record_size: point.record_size as usize,
                iodepth: point.iodepth,
                seed: s.seed ^ ((i as u64) << 32) ^ rep as u64,
            };
            let job_seed = s
                .seed
                .wrapping_mul(31)
                .wrapping_add(i as u64 * 7919 + rep as u64);
            let (start, mid_a, mid_b, stop, abort, stonewalled, deadline_holder) = (
                &start,
                &mid_a,
                &mid_b,
                &stop,
                &abort,
                &stonewalled,
                &deadline_holder,
            );
            let kind = point.engine;
            let stride = s.stride;
            let mix = s.mix_read_pct;
            let fsync_in = s.fsync_in_timing;
            let close_in = s.close_in_timing;
            let stonewall = s.stonewall && (n > 1 || coord.spans_processes());
            let pattern_kind = spec.pattern;
            let direction = spec.direction;
            let record_size = point.record_size as usize;
            let pin = (!s.cpus.is_empty()).then(|| s.cpus[i % s.cpus.len()]);
            let time_based = s.time_based;
            let file_verify: Option<Arc<FileVerify>> =
                target.files.as_ref().and_then(|f| f.verify.get(i).cloned());
            handles.push(scope.spawn(move || {
                let mut out = WorkerOut::default();
                let mut engine = (entry(kind).make)();
                let pinned = pin.map_or(Ok(()), crate::engines::pin_to_cpu).map_err(|e| {
                    EngineError::new("pin the thread to a CPU (--cpus)", &open.path, None, e)
                });
                if let Err(e) = pinned.and_then(|_| engine.open(&open)) {
                    out.error = Some(e);
                    abort.store(true, Ordering::SeqCst);
                }
                start.wait();
                let failed = out.error.is_some() || abort.load(Ordering::SeqCst);
                if failed && stonewall {
                    stop.store(true, Ordering::SeqCst);
                }
                if !failed {
                    let mut job = Job {
                        pattern: pattern_kind.build(records, stride, job_seed),
                        record_size,
                        direction,
                        read_pct: mix,
                        seed: job_seed,
                        stop,
                        deadline_ns: deadline_holder.get().copied(),
                        verify: file_verify.as_deref(),
                        base: shared_base,
                    };
                    out.t_start = now_ns();
                    let mut r = engine.run(&job, &mut out.stats);
                    // Time-based: pass after pass (a new random order each) until the deadline.
                    let mut pass = 0u64;
                    while time_based
                        && r.is_ok()
                        && job.deadline_ns.is_some()
                        && !job.should_stop(now_ns())
                    {
                        pass += 1;
                        job.pattern =
                            pattern_kind.build(records, stride, job_seed.wrapping_add(pass << 40));
                        r = engine.run(&job, &mut out.stats);
                    }
                    out.t_io_end = now_ns();
                    out.ran_all = out.stats.ops >= records;
                    if let Err(e) = r {
                        out.error = Some(e);
                        stop.store(true, Ordering::SeqCst);
                    } else if stonewall && !stop.swap(true, Ordering::SeqCst) {
                        stonewalled.store(true, Ordering::SeqCst);
                    }
                    if is_write && fsync_in && out.error.is_none() {
                        let f0 = now_ns();
                        if let Err(e) = engine.flush() {
                            out.error = Some(e);
                        }
                        out.flush_ns = now_ns() - f0;
                    }
                }
                if split_flush {
                    mid_a.wait();
                    mid_b.wait();
                    if out.error.is_none() && !failed {
                        let f0 = now_ns();
                        if let Err(e) = engine.flush() {
                            out.error = Some(e);
                        }
                        out.flush_ns = now_ns() - f0;
                    }
                }
                if close_in && !failed {
                    let c0 = now_ns();
                    if let Err(e) = engine.close() {
                        if out.error.is_none() {
                            out.error = Some(e);
                        }
                    }
                    out.close_ns = now_ns() - c0;
                }
                drop(engine);
                out
            }));
        }
        watch = Some(target.witness.begin(&paths));
        cpu0 = process_cpu();
        // Last thing before the release: the witness's first sample can take a while, and
        // it must not delay one process's start against the others'.
        coord.before_timed();
        t_release = now_ns();
        if let Some(rt) = s.runtime_ns {
            let _ = deadline_holder.set(t_release + rt);
        }
        start.wait();
        if s.stonewall && coord.stonewall(&stop) {
            stonewalled.store(true, Ordering::SeqCst);
        }
        if split_flush {
            mid_a.wait();
            t_main_end = now_ns();
            cpu1 = process_cpu();
            if let Some(w) = watch.as_mut() {
                w.timed_end();
            }
            mid_b.wait();
        }
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| WorkerOut {
                    error: Some(EngineError::new(
                        "worker",
                        Path::new("-"),
                        None,
                        std::io::Error::other("a worker thread panicked"),
                    )),
                    ..Default::default()
                })
            })
            .collect()
    });
    if !split_flush {
        t_main_end = now_ns();
        cpu1 = process_cpu();
        if let Some(w) = watch.as_mut() {
            w.timed_end();
        }
    }

    // ---- merge ----
    let mut first_error = None;
    let mut stats = ThreadStats::default();
    let mut threads = Vec::with_capacity(n);
    let min_start = outs
        .iter()
        .map(|o| o.t_start)
        .filter(|&t| t > 0)
        .min()
        .unwrap_or(t_release);
    let mut io_end = min_start;
    let mut flush_end = min_start;
    let mut headline_end = min_start;
    let mut close_max = 0u64;
    let mut all_ran = true;
    for o in outs {
        if first_error.is_none() {
            first_error = o.error;
        }
        stats += &o.stats;
        all_ran &= o.ran_all;
        let io = o.t_io_end.max(o.t_start);
        let flushed = io + o.flush_ns;
        let close = if s.close_in_timing { o.close_ns } else { 0 };
        let head = if s.fsync_in_timing { flushed } else { io } + close;
        io_end = io_end.max(io);
        flush_end = flush_end.max(flushed);
        headline_end = headline_end.max(head);
        close_max = close_max.max(o.close_ns);
        let secs = (head - o.t_start.min(head)) as f64 / 1e9;
        threads.push((o.stats.bytes(), secs));
    }
    if let Some(e) = first_error {
        drop(watch.take());
        return Err(e);
    }
    let bytes = stats.bytes();
    let seconds = (headline_end - min_start) as f64 / 1e9;
    let io_seconds = (io_end - min_start) as f64 / 1e9;
    let flush_seconds = (flush_end - io_end) as f64 / 1e9;
    let wall = (t_main_end.saturating_sub(t_release)) as f64 / 1e9;
    let headline_bps = if seconds > 0.0 {
        bytes as f64 / seconds
    } else {
        0.0
    };
    let witness = watch.map(|w| {
        w.finish(&Outcome {
            test: spec.name.to_string(),
            intent: meant,
            is_write,
            direct,
            app_read_bytes: stats.read_bytes,
            app_write_bytes: stats.write_bytes,
            timed_seconds: seconds,
            headline_bps,
        })
    });
    if let Some(fsset) = target.files.as_mut() {
        if is_write && spec.file == FileState::Fresh {
            let full = stats.ops == records * point.threads as u64;
            fsset.complete.iter_mut().for_each(|c| *c = full);
        }
    }
    Ok(RepMeasure {
        rep: Repetition {
            bytes,
            ops: stats.ops,
            seconds,
            io_seconds,
            flush_seconds,
            close_seconds: close_max as f64 / 1e9,
            truncated: !all_ran && !stonewalled.load(Ordering::SeqCst),
            started_s: (min_start.saturating_sub(run_t0)) as f64 / 1e9,
        },
        threads,
        cpu: (cpu1.0 - cpu0.0, cpu1.1 - cpu0.1, wall.max(seconds)),
        witness,
        stonewalled: stonewalled.load(Ordering::SeqCst),
        stats,
    })
}

fn base_result(target: &Target, point: &Point, s: &RunSettings) -> TestResult {
    TestResult {
        target: target.path.display().to_string(),
        test: point.spec.name.to_string(),
        engine: point.engine.name().to_string(),
        file_size: point.file_size,
        record_size: point.record_size,
        threads: point.threads,
        iodepth: point.iodepth,
        direct: s.direct
            && entry(point.engine).direct
            && point.spec.special == crate::special::Special::None,
        osync: s.osync,
        fsync_in_timing: s.fsync_in_timing,
        close_in_timing: s.close_in_timing,
        intent: intent(point, s),
        status: candor_model::Status::Ok,
        ..Default::default()
    }
}

/// Turns the repetitions of one test into its result.
fn summarise(mut r: TestResult, reps: Vec<RepMeasure>, is_write: bool) -> TestResult {
    let rate = |b: u64, s: f64| if s > 0.0 { b as f64 / s } else { 0.0 };
    let tp: Vec<f64> = reps
        .iter()
        .map(|m| rate(m.rep.bytes, m.rep.seconds))
        .collect();
    let iops: Vec<f64> = reps
        .iter()
        .map(|m| rate(m.rep.ops, m.rep.seconds))
        .collect();
    r.repetitions = reps.len() as u32;
    r.throughput = summarize(&tp);
    r.iops = summarize(&iops);
    if is_write {
        let without: Vec<f64> = reps
            .iter()
            .map(|m| rate(m.rep.bytes, m.rep.io_seconds))
            .collect();
        let with: Vec<f64> = reps
            .iter()
            .map(|m| rate(m.rep.bytes, m.rep.io_seconds + m.rep.flush_seconds))
            .collect();
        r.throughput_without_flush = Some(summarize(&without));
        r.throughput_with_flush = Some(summarize(&with));
    }
    let mut hist = Histogram::new();
    let mut cpu = Cpu::default();
    let k = reps.len().max(1) as f64;
    for m in &reps {
        hist.merge(&m.stats.latency);
        cpu.user_s += m.cpu.0 / k;
        cpu.sys_s += m.cpu.1 / k;
        cpu.wall_s += m.cpu.2 / k;
    }
    cpu.cpu_pct = if cpu.wall_s > 0.0 {
        100.0 * (cpu.user_s + cpu.sys_s) / cpu.wall_s
    } else {
        0.0
    };
    r.cpu = cpu;
    r.latency_ns = hist.latency();
    r.latency_histogram = hist.dump();
    if r.threads > 1 {
        let mut agg = ThreadAggregate::default();
        for m in &reps {
            let rates: Vec<f64> = m.threads.iter().map(|&(b, s)| rate(b, s)).collect();
            let total: u64 = m.threads.iter().map(|t| t.0).sum();
            agg.children_see += rates.iter().sum::<f64>() / k;
            agg.parent_sees += rate(total, m.rep.seconds) / k;
            agg.min_thread += rates.iter().cloned().fold(f64::INFINITY, f64::min) / k;
            agg.max_thread += rates.iter().cloned().fold(0.0, f64::max) / k;
            agg.avg_thread += rates.iter().sum::<f64>() / rates.len().max(1) as f64 / k;
            agg.stonewalled |= m.stonewalled;
            agg.per_thread_bytes = m.threads.iter().map(|t| t.0).collect();
        }
        r.thread_aggregate = Some(agg);
    }
    let mut ws = Vec::new();
    for m in reps {
        r.reps.push(m.rep);
        if let Some(w) = m.witness {
            ws.push(w);
        }
    }
    r.witness = candor_witness::combine(ws);
    r
}

/// Runs the plan. `sink` receives the results of each point (one per target) as soon as
/// they exist, so the caller can save them. Returns why the run stopped early, if it did.
pub fn run(
    targets: &mut [Target],
    points: &[Point],
    s: &RunSettings,
    progress: &mut dyn Progress,
    sink: &mut dyn FnMut(Vec<TestResult>),
) -> Option<StopReason> {
    run_coordinated(targets, points, s, progress, sink, &mut NoCoordinator)
}

/// `run`, with other processes kept in step by `coord` (see `Coordinator`).
pub fn run_coordinated(
    targets: &mut [Target],
    points: &[Point],
    s: &RunSettings,
    progress: &mut dyn Progress,
    sink: &mut dyn FnMut(Vec<TestResult>),
    coord: &mut dyn Coordinator,
) -> Option<StopReason> {
    let run_t0 = now_ns();
    coord.started(run_t0);
    for (idx, point) in points.iter().enumerate() {
        progress.start_point(point, idx, points.len());
        let is_write = point.spec.direction != Direction::Read;
        let mut per_target: Vec<(Vec<RepMeasure>, Option<String>)> =
            targets.iter().map(|_| (Vec::new(), None)).collect();
        for rep in 0..s.repeat.max(1) {
            for (ti, target) in targets.iter_mut().enumerate() {
                if per_target[ti].1.is_some() {
                    pass_repetition(coord, point, s);
                    continue; // this test already failed on this target
                }
                if let Some(sig) = signals::stop_requested() {
                    return Some(StopReason::Interrupted(sig));
                }
                let measured = if point.spec.special == crate::special::Special::None {
                    run_repetition(target, point, s, rep, run_t0, coord)
                } else {
                    crate::special::run_repetition(target, point, s, run_t0, coord)
                };
                match measured {
                    Ok(m) => per_target[ti].0.push(m),
                    Err(e) => {
                        if let Some(sig) = signals::stop_requested() {
                            return Some(StopReason::Interrupted(sig));
                        }
                        if errno_is_nospace(&e) {
                            return Some(StopReason::NoSpace(format!(
                                "{} ran out of space during {} ({}): the plan needs {} per file x {} thread(s); free space or choose a smaller --file-size",
                                target.path.display(),
                                point.spec.name,
                                e,
                                crate::size::format_size(point.file_size),
                                point.threads
                            )));
                        }
                        // Files of a failed test may be partial: rebuild them next time.
                        if let Some(f) = target.files.as_mut() {
                            f.complete.iter_mut().for_each(|c| *c = false);
                        }
                        per_target[ti].1 = Some(e.to_string());
                    }
                }
                progress.repetition_done();
            }
            if let Some(sig) = signals::stop_requested() {
                return Some(StopReason::Interrupted(sig));
            }
        }
        let mut results = Vec::with_capacity(targets.len());
        for (ti, (reps, mut err)) in per_target.into_iter().enumerate() {
            let base = base_result(&targets[ti], point, s);
            let mut r = summarise(base, reps, is_write);
            if s.verify.is_some() && point.spec.special == crate::special::Special::None {
                let tally = targets[ti].take_verify();
                r.verify = Some(tally.to_json(point.record_size));
                if tally.bad > 0 {
                    // What is on disk is not what candor wrote: rewrite before the next test.
                    if let Some(f) = targets[ti].files.as_mut() {
                        f.complete.iter_mut().for_each(|c| *c = false);
                    }
                }
                if err.is_none() {
                    err = tally.describe(&|i| format!("t{i}.dat"));
                }
            }
            if let Some(e) = err {
                r.status = candor_model::Status::Failed;
                progress.note(&format!(
                    "{} on {} failed: {e}",
                    point.spec.name,
                    targets[ti].path.display()
                ));
                r.error = Some(e);
            }
            results.push(r);
        }
        if let Some(results) = coord.point_done(results) {
            sink(results);
        }
    }
    None
}
