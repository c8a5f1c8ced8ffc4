//! `candor run`: the pipeline. The options become a plan in one step (candor-engine checks
//! them all against each other and the targets), the targets get their witnesses, the
//! runner runs the plan, each point's results are collected and saved as they arrive, and
//! the output gets the whole result: JSON, HTML and the text format on stdout. Whether this
//! process is the only one or one rank of an MPI job is its `Role`.

use crate::exit::{CmdResult, Failure, FAILED, OK};
use crate::output::Output;
use candor_engine::ceiling;
use candor_engine::collect::Collector;
use candor_engine::device;
use candor_engine::plan::{presets, Ceiling, ErrorKind, Plan, PlanError, Point, RunOptions};
use candor_engine::runner::{Progress, StopReason, Target};
use candor_engine::signals;
use candor_model::units::{format_bytes, ByteStyle};
use candor_model::{rfc3339_now, RunDoc, SteadyRound, TestResult};
use role::{Kept, Role};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use targets::Region;

mod mpi;
mod role;
mod targets;
pub(crate) use targets::make_run_dir;

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

    /// Every other option, each defined once in candor-engine (`plan/options.rs`).
    #[command(flatten)]
    pub options: RunOptions,
}

pub fn run(a: Args) -> CmdResult {
    let o = &a.options;
    if o.mpi {
        return mpi::run(a);
    }
    if o.reorder || o.shared_file {
        return Err(Failure::usage(
            "--reorder and --shared-file arrange files between MPI ranks and need --mpi: run it as `mpirun -n 4 candor run --mpi ...`",
        ));
    }
    if o.rank_output.is_some() {
        return Err(Failure::usage(
            "--rank-output saves each MPI rank's own result and needs --mpi; a single run's result is already its own (-o FILE)",
        ));
    }
    run_with(a, Role::Single)
}

/// The pipeline. Over MPI every rank runs it; the ranks agree at each step that can
/// refuse, and only rank 0 saves and prints.
fn run_with(a: Args, role: Role) -> CmdResult {
    let started_at = rfc3339_now();
    let o = &a.options;
    let default_format = presets::default_format(o.preset.as_deref());
    let mut output = Output::new(o.format, default_format, o.output.clone(), o.html.clone());
    role.agree(if role.reports() {
        output.check()
    } else {
        Ok(())
    })?;
    let paths = role.agree(targets::target_paths(&a.targets, o.allow_device_writes))?;
    // Before any rank claims a device: the ranks refuse it together with the plan's
    // sentence, instead of every rank but the first finding it busy.
    role.agree(
        Plan::one_process_per_device(paths.iter().any(|t| device::is_block_device(t)), o.mpi)
            .map_err(refused),
    )?;
    signals::install();
    let region = Region::of(o)?;
    let (id, dirs, infos) = targets::prepare_targets(&paths, &region, &role)?;
    let plan = role.agree(Plan::new(o, &id, &infos, &dirs).map_err(refused))?;
    let mut doc = RunDoc::new("run", std::env::args().collect(), started_at);
    doc.host = candor_witness::describe_host();
    doc.targets = infos;
    doc.options = candor_model::RunSaved {
        format: Some(output.format_name().into()),
        ..plan.record.clone()
    }
    .into();
    doc.mpi = role.mpi_info(o);
    say_all(&mut doc, &plan.notes, role.reports());
    let job = role.job_peers();
    let mut targets = targets::witnessed(paths, dirs, &plan, &job, &mut doc, role.reports());
    let spec = device_ceiling(&plan, &mut targets, &mut doc)?;
    let mut collector = Collector::new(plan.default_run(), plan.soak.is_some(), spec);
    let mut progress = Bar::new(&plan, targets.len(), o.quiet || !role.reports());
    let mut kept = Kept::default();
    let stop = role.execute(
        &mut targets,
        &plan,
        &mut progress,
        o,
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
    role.save_own(o, &doc, kept);
    if !role.reports() {
        // Rank 0 reports for every rank.
        role.stopped(&stop, code);
        return Ok(code);
    }
    output.finish(&doc);
    let code = tell(&doc, &stop, &output, &cleanup_errors, code);
    role.stopped(&stop, code);
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
    if let Some(o) = doc.options.run_mut() {
        o.device_spec = Some(candor_model::DeviceSpecSaved {
            iops_read: spec.iops_read,
            iops_write: spec.iops_write,
            seq_read: spec.seq_read,
            seq_write: spec.seq_write,
            source: spec.source.clone(),
        });
    }
    Ok(Some(spec))
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
