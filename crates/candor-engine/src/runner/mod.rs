//! The runner: takes the plan and the targets, and for every point runs every repetition
//! on every target in turn (interleaved, so drift in the machine does not favour one
//! target). A repetition has three parts, one file each: `prepare` (untimed: the files, and
//! what is cached and dirty when the timed region starts), `worker` (one thread's timed
//! passes) and `merge` (the threads' figures into one repetition); `repetition` strings
//! them together with the witness and the coordinator, for record tests and for the
//! special workloads alike.

mod merge;
mod prepare;
mod repetition;
mod rounds;
mod worker;

use crate::buffer::BufferPattern;
use crate::clock::now_ns;
use crate::engines::{EngineError, ThreadStats};
use crate::plan::Point;
use crate::rundir::RunDir;
use crate::signals;
use crate::verify::{FileVerify, Tally, VerifyConfig};
use crate::workload::Direction;
use candor_model::units::{format_bytes, ByteStyle};
use candor_model::{Cpu, Intent, Repetition, Status, SteadyRound, TestResult, ThreadAggregate};
use candor_stats::{summarize, Histogram};
use candor_witness::Witness;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

pub use crate::plan::RunSettings;
pub use prepare::{drop_all_caches, drop_file_cache, precondition_files, PreconditionFile};

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

    fn paths(&self) -> Vec<PathBuf> {
        self.files
            .as_ref()
            .map(|f| f.names.iter().map(|n| self.dir.file(n)).collect())
            .unwrap_or_default()
    }

    /// Makes the file set match (file_size, threads, and with --verify the record size),
    /// removing files of another set.
    fn use_files(
        &mut self,
        file_size: u64,
        threads: u32,
        verify: Option<(VerifyConfig, u64)>,
        pattern: BufferPattern,
    ) {
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
                .map(|i| Arc::new(FileVerify::new(cfg, i, file_size, rs as usize, pattern)))
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
    /// `--steady-state`: a round of `point` on `target` ended with these figures.
    fn round(&mut self, _point: &Point, _target: &std::path::Path, _round: &SteadyRound) {}
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

/// The coordinator of a run in one process that keeps where its clock started (the first
/// start, when `--duration` runs the plan again).
#[derive(Default)]
pub struct ClockKeeper {
    pub t0_ns: Option<u64>,
}

impl Coordinator for ClockKeeper {
    fn started(&mut self, run_t0_ns: u64) {
        self.t0_ns.get_or_insert(run_t0_ns);
    }
}

/// Whether a repetition of `point` calls `Coordinator::read_elsewhere`.
fn may_read_elsewhere(point: &Point) -> bool {
    point.spec.is_records()
        && point.spec.direction == Direction::Read
        && point.intent == Intent::Device
}

/// The coordinator's steps of a repetition, for a process that does not run it (its test
/// failed here), so that the other processes do not wait for it.
fn pass_repetition(coord: &mut dyn Coordinator, point: &Point, s: &RunSettings) {
    if point.spec.is_records() && coord.shared_segment(&[]).is_some() {
        coord.files_ready();
        coord.files_ready();
    }
    pass_after_prep(coord, point, s);
}

/// The coordinator's steps that follow the preparation of a repetition.
fn pass_after_prep(coord: &mut dyn Coordinator, point: &Point, s: &RunSettings) {
    if may_read_elsewhere(point) {
        let _ = coord.read_elsewhere(&[]);
    }
    coord.before_timed();
    if s.stonewall && point.spec.is_records() {
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

fn is_root() -> bool {
    // SAFETY: no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn errno_is_nospace(e: &EngineError) -> bool {
    matches!(e.errno(), Some(libc::ENOSPC) | Some(libc::EDQUOT))
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
        direct: point.direct,
        osync: s.osync,
        fsync_in_timing: s.fsync_in_timing,
        close_in_timing: s.close_in_timing,
        intent: point.intent,
        status: Status::Ok,
        fadvise: point.fadvise,
        direction: point.spec.data_direction(),
        access: point.spec.access(),
        ..Default::default()
    }
}

/// One point on one target while it runs.
#[derive(Default)]
struct PointRun {
    /// The repetitions kept (with `--steady-state`, the last window's rounds).
    reps: Vec<RepMeasure>,
    err: Option<String>,
    ramp: Option<candor_model::Ramp>,
    precondition: Option<candor_model::Precondition>,
    steady: Option<rounds::Rounds>,
}

/// Before a point's first repetition on a target: `--precondition`, then `--ramp`.
fn warm_up(
    target: &mut Target,
    point: &Point,
    s: &RunSettings,
    rep: u32,
    run_t0: u64,
    run: &mut PointRun,
) -> Result<(), EngineError> {
    if rep > 0 {
        return Ok(());
    }
    if let Some(passes) = s.precondition {
        run.precondition = Some(prepare::precondition(target, point, s, passes)?);
    }
    if let Some(ns) = s.ramp_ns {
        run.ramp = Some(repetition::ramp(target, point, s, ns, run_t0)?);
    }
    Ok(())
}

/// A repetition that failed: the whole run stops (a signal, no space left), or this test
/// fails on this target with the error's words (its files are rebuilt next time).
fn failure(target: &mut Target, point: &Point, e: EngineError) -> Result<String, StopReason> {
    if let Some(sig) = signals::stop_requested() {
        return Err(StopReason::Interrupted(sig));
    }
    if errno_is_nospace(&e) {
        return Err(StopReason::NoSpace(format!(
            "{} ran out of space during {} ({}): the plan needs {} per file x {} thread(s); free space or choose a smaller --file-size",
            target.path.display(),
            point.spec.name,
            e,
            format_bytes(point.file_size, ByteStyle::LABEL),
            point.threads
        )));
    }
    // Files of a failed test may be partial: rebuild them next time.
    if let Some(f) = target.files.as_mut() {
        f.complete.iter_mut().for_each(|c| *c = false);
    }
    Ok(e.to_string())
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
        hist.merge(&m.stats.all_latency());
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
    r.latency_ns.sampled_every = reps
        .iter()
        .map(|m| m.stats.latency_every)
        .max()
        .filter(|&n| n > 1);
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
        let mut runs: Vec<PointRun> = targets
            .iter()
            .map(|_| PointRun {
                steady: s.steady.map(rounds::Rounds::new),
                ..PointRun::default()
            })
            .collect();
        let passes = s.steady.map_or(s.repeat.max(1), |c| c.max_rounds);
        for rep in 0..passes {
            let mut ran = false;
            for (ti, target) in targets.iter_mut().enumerate() {
                let run = &mut runs[ti];
                if run.err.is_some() || run.steady.as_ref().is_some_and(|r| r.done()) {
                    pass_repetition(coord, point, s);
                    continue; // this test failed on this target, or is steady there
                }
                if let Some(sig) = signals::stop_requested() {
                    return Some(StopReason::Interrupted(sig));
                }
                ran = true;
                let measured = match warm_up(target, point, s, rep, run_t0, run) {
                    Err(e) => Err(e),
                    Ok(()) => match point.spec.special {
                        None => repetition::records(target, point, s, rep, run_t0, coord),
                        Some(w) => repetition::special(w, target, point, s, run_t0, coord),
                    },
                };
                match measured {
                    Ok(m) => match run.steady.as_mut() {
                        Some(r) => {
                            let round = r.add(m, point.spec.direction, &mut run.reps);
                            progress.round(point, &target.path, &round);
                        }
                        None => run.reps.push(m),
                    },
                    Err(e) => match failure(target, point, e) {
                        Err(stop) => return Some(stop),
                        Ok(message) => run.err = Some(message),
                    },
                }
                progress.repetition_done();
            }
            if let Some(sig) = signals::stop_requested() {
                return Some(StopReason::Interrupted(sig));
            }
            if !ran {
                break; // steady (or failed) on every target
            }
        }
        let mut results = Vec::with_capacity(targets.len());
        for (ti, run) in runs.into_iter().enumerate() {
            let PointRun {
                reps,
                mut err,
                ramp,
                precondition,
                steady,
            } = run;
            let base = base_result(&targets[ti], point, s);
            let mut r = summarise(base, reps, is_write);
            r.ramp = ramp;
            r.precondition = precondition;
            r.steady_state = steady.map(|x| x.conclude());
            if s.verify.is_some() && point.spec.is_records() {
                let tally = targets[ti].take_verify();
                r.verify = Some(tally.outcome(point.record_size));
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
                r.status = Status::Failed;
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
