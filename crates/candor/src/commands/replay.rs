//! `candor replay`: a recorded application's file I/O (a trace of `candor audit --record`,
//! an strace log, a fio iolog) replayed in candor's run directory on each target, under the
//! witness, which counts the calls the kernel saw per kind against the trace's. The result
//! is a normal run document: `report`, `compare`, HTML, fio-json and OpenMetrics read it
//! as they read `candor run`'s. docs/replay.md describes it.
//!
//! - [`repetition`]: one repetition on one target, measured under the witness.
//! - [`result`]: a target's result from its repetitions.
//! - [`recording`]: `candor audit --record`, which makes the traces replayed here.

mod recording;
mod repetition;
mod result;

pub use recording::{record_finish, record_start};

use crate::exit::{refusing, CmdResult, Failure, FAILED, OK};
use crate::output::Output;
use candor_engine::rundir::{clean_stale, new_run_id};
use candor_engine::signals;
use candor_model::{rfc3339_now, RunDoc};
use candor_procfs::paths;
use candor_replay::play::{self, Timing};
use candor_replay::{format, Trace};
use candor_report::Format;
use candor_witness::Mode;
use repetition::{one_rep, Interrupted, Pass, Target};
use std::path::{Path, PathBuf};

/// `candor replay --help`'s text before the options.
pub const LONG_ABOUT: &str = "Replay a recorded application's file I/O on one or more \
directories (default: the current directory), as a witnessed benchmark.

The trace's files are laid out at their recorded sizes in candor's run directory on each \
target; every recorded thread's calls are issued in order on a thread of its own, all \
threads together; the witness counts the calls the kernel saw per kind and compares them \
with the trace's (with eBPF). The trace's paths are never used as paths: files are named \
by their ids inside the run directory, which is removed at the end.";

/// `candor replay --help`'s examples.
pub const EXAMPLES: &str = "Examples:
  sudo candor audit --record app.trace -- ./app       record (root, eBPF)
  candor replay app.trace /mnt/ext4 /mnt/xfs -o r.json
  candor replay --from-strace app.log --traced-dir /srv/data /mnt/ext4
  strace -f -tt -T -y -o app.log ./app               an strace log to replay
  candor replay app.trace --timing original           keep the recorded gaps
  candor report app.trace --format fio-iolog -o app.iolog";

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The trace, then the directories to replay it on (default: the current directory).
    ///
    /// With --from-strace or --from-fio-iolog every path is a directory.
    #[arg(value_name = "TRACE] [TARGET")]
    pub paths: Vec<PathBuf>,

    /// Read an `strace -f -tt -T -y` log as the trace.
    #[arg(long, value_name = "LOG", conflicts_with = "from_fio_iolog")]
    pub from_strace: Option<PathBuf>,

    /// Read a fio iolog (version 2 or 3) as the trace.
    #[arg(long, value_name = "LOG")]
    pub from_fio_iolog: Option<PathBuf>,

    /// With --from-strace: a directory whose files the trace keeps (repeatable).
    ///
    /// [default: every file outside the system's directories (/usr, /lib, /etc, /proc...)]
    #[arg(long, value_name = "DIR")]
    pub traced_dir: Vec<String>,

    /// With --from-strace: keep the files' paths in the trace (they are never used as paths).
    #[arg(long)]
    pub keep_paths: bool,

    /// Save the trace read from a log in candor's trace format.
    #[arg(long, value_name = "FILE")]
    pub save_trace: Option<PathBuf>,

    /// fast (every call as soon as the one before it returned), original (the recorded
    /// gaps) or scale=X (the recorded gaps times X).
    #[arg(long, value_name = "MODE", default_value = "fast", value_parser = refusing(Timing::parse))]
    pub timing: Timing,

    /// Repetitions (mean, standard deviation, 95% confidence interval).
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub repeat: u32,

    /// Pin the replay's threads to these CPUs, round-robin (e.g. 0,1 or 0-3).
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<String>,

    /// Lay the files out as holes instead of writing them.
    #[arg(long)]
    pub sparse: bool,

    /// Keep the laid-out files' pages cached (by default they are dropped before each
    /// repetition, so the first reads go to the device as the recording's did).
    #[arg(long)]
    pub keep_cache: bool,

    /// Also write the kernel's drop_caches before each repetition (root).
    #[arg(long, conflicts_with = "keep_cache",
          help = format!("Also write {} before each repetition (root)", paths::DROP_CACHES))]
    pub drop_caches: bool,

    /// Before the first repetition on each target, write the trace's laid-out files
    /// sequentially PASSES times, then overwrite every block once at random (as `candor
    /// run --precondition`).
    ///
    /// PASSES is 2 when not given; the witness reports how much reached the device. Needs
    /// a filesystem on a block device.
    #[arg(long, value_name = "PASSES", num_args = 0..=1, require_equals = true, default_missing_value = "2", value_parser = refusing(candor_engine::plan::options::parse_passes))]
    pub precondition: Option<u32>,

    /// Witness source: auto, procfs, bpf or off.
    #[arg(long, value_name = "SOURCE", default_value = "auto", value_parser = refusing(Mode::parse))]
    pub witness: Mode,

    /// Save the result as JSON.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Write the HTML report.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,

    /// The format printed on stdout: table, json, csv, markdown, openmetrics, fio-json...
    #[arg(long, value_name = "FORMAT", value_parser = refusing(Format::from_arg))]
    pub format: Option<Format>,

    /// No progress lines.
    #[arg(short, long)]
    pub quiet: bool,
}

/// Reads the trace the arguments name; the rest of the paths are the targets.
fn load(a: &Args) -> Result<(Trace, String, Vec<PathBuf>), Failure> {
    let read_log = |p: &Path, what: &str| {
        std::fs::read_to_string(p)
            .map_err(|e| Failure::usage(format!("cannot read the {what} {}: {e}", p.display())))
    };
    if let Some(log) = &a.from_strace {
        let text = read_log(log, "strace log")?;
        let t = candor_replay::strace::parse(
            &text,
            &candor_replay::strace::Options {
                dirs: a.traced_dir.clone(),
                keep_paths: a.keep_paths,
            },
        )
        .map_err(|e| Failure::usage(format!("{}: {e}", log.display())))?;
        return Ok((t, log.display().to_string(), a.paths.clone()));
    }
    if let Some(log) = &a.from_fio_iolog {
        let text = read_log(log, "fio iolog")?;
        let t = candor_replay::fio::parse(&text)
            .map_err(|e| Failure::usage(format!("{}: {e}", log.display())))?;
        return Ok((t, log.display().to_string(), a.paths.clone()));
    }
    let Some(first) = a.paths.first() else {
        return Err(Failure::usage(
            "name the trace to replay: `candor replay TRACE [TARGET...]`, or read a log with --from-strace LOG",
        ));
    };
    let t = format::read(first).map_err(Failure::usage)?;
    Ok((t, first.display().to_string(), a.paths[1..].to_vec()))
}

/// `--precondition` on a replay: as `run`'s (passes in range, a block device under every
/// target), and the trace must start with files to write, which --sparse would leave as
/// holes.
fn check_precondition(
    passes: u32,
    trace: &Trace,
    sparse: bool,
    infos: &[candor_model::TargetInfo],
) -> Result<(), Failure> {
    candor_engine::plan::check_precondition(passes, infos)
        .map_err(|e| Failure::usage(e.message))?;
    if sparse {
        return Err(Failure::usage(
            "--precondition writes the trace's files in full, which --sparse would lay out as holes: drop one of them",
        ));
    }
    if !trace
        .header
        .files
        .iter()
        .any(|f| !f.dir && f.size.is_some_and(|s| s > 0))
    {
        return Err(Failure::usage(
            "--precondition writes the files the trace starts with, and this trace starts with none (its program made every file it used): drop --precondition",
        ));
    }
    Ok(())
}

/// A target must be a directory: a trace never names a device, and replay never writes one.
fn check_target(t: &Path) -> Result<PathBuf, Failure> {
    let m = std::fs::metadata(t).map_err(|e| {
        Failure::usage(format!(
            "cannot replay on {}: {e}; name an existing directory",
            t.display()
        ))
    })?;
    if !m.is_dir() {
        return Err(Failure::usage(format!(
            "{} is not a directory: a replay writes only in a directory of its own under a target directory",
            t.display()
        )));
    }
    Ok(std::fs::canonicalize(t).unwrap_or_else(|_| t.to_path_buf()))
}

pub fn run(a: Args) -> CmdResult {
    let started_at = rfc3339_now();
    let mut output = Output::new(a.format, "table", a.output.clone(), a.html.clone());
    output.check()?;
    if a.repeat == 0 {
        return Err(Failure::usage("--repeat 0 replays nothing: give 1 or more"));
    }
    let (trace, source, targets) = load(&a)?;
    if let Some(save) = &a.save_trace {
        crate::paths::check_output_file("--save-trace", save, "trace")?;
        let n = format::write(save, &trace).map_err(|e| {
            Failure::failed(format!("cannot save the trace {}: {e}", save.display()))
        })?;
        eprintln!(
            "wrote {} ({} calls, {:.1} bytes per call)",
            save.display(),
            trace.call_count(),
            n as f64 / trace.call_count().max(1) as f64
        );
    }
    let cpus = match &a.cpus {
        None => Vec::new(),
        Some(list) => candor_engine::plan::options::parse_cpus(
            Some(list),
            &candor_engine::engines::allowed_cpus(),
        )
        .map_err(|e| Failure::usage(e.message))?,
    };
    if a.drop_caches {
        candor_engine::plan::check_drop_caches().map_err(|e| Failure::usage(e.message))?;
    }
    let paths: Vec<PathBuf> = if targets.is_empty() {
        vec![PathBuf::from(".")]
    } else {
        targets
    };
    let paths = paths
        .iter()
        .map(|p| check_target(p))
        .collect::<Result<Vec<_>, _>>()?;
    if trace.call_count() == 0 {
        return Err(Failure::usage(format!(
            "{source} holds no calls on the traced files: nothing to replay"
        )));
    }
    let infos: Vec<candor_model::TargetInfo> = paths
        .iter()
        .map(|t| candor_witness::describe_target(t))
        .collect();
    if let Some(passes) = a.precondition {
        check_precondition(passes, &trace, a.sparse, &infos)?;
    }
    signals::install();
    for t in &paths {
        if let Ok(rep) = clean_stale(t) {
            for p in rep.removed() {
                eprintln!(
                    "candor: removed {} left behind by an earlier run that was killed",
                    p.display()
                );
            }
        }
    }
    let id = new_run_id();
    let mut doc = RunDoc::new("replay", std::env::args().collect(), started_at);
    doc.host = candor_witness::describe_host();
    doc.targets = infos;
    // What the trace itself says it left out (calls lost, I/O it could not hold).
    for n in &trace.header.notes {
        let w = format!("the trace: {n}");
        eprintln!("candor: {w}");
        doc.warnings.push(w);
    }
    let mut tgts = Vec::new();
    for p in &paths {
        let dir = super::run::make_run_dir(p, &id)?;
        let config = candor_witness::Config {
            mode: a.witness,
            interval: std::time::Duration::from_millis(100),
            trace_syscalls: false,
            job: Vec::new(),
        };
        let (w, note) = candor_witness::Witness::new(p, config);
        if let Some(n) = note {
            eprintln!("candor: {n}");
            doc.warnings.push(n);
        }
        tgts.push(Target {
            path: p.clone(),
            dir,
            witness: w,
            counting: None,
            reps: Vec::new(),
            precondition: None,
        });
    }
    doc.options = options_record(&a, &trace, &source);
    let expected = play::expected(&trace);
    let t0 = std::time::Instant::now();
    let mut stop = None;
    let mut failure = None;
    let passes = Pass::plan(
        &a,
        tgts.iter().any(|t| t.witness.counts_calls_by_attaching()),
    );
    'reps: for pass in passes {
        for t in tgts.iter_mut() {
            if pass == Pass::Counting && !t.witness.counts_calls_by_attaching() {
                continue;
            }
            if let Some(sig) = signals::stop_requested() {
                stop = Some(sig);
                break 'reps;
            }
            if !a.quiet {
                let which = match pass {
                    Pass::Counting => "the counting pass".to_string(),
                    Pass::Timed(rep) => format!("{}/{}", rep + 1, a.repeat),
                };
                eprintln!(
                    "candor: replaying {} calls of {} threads on {} ({which})",
                    trace.call_count(),
                    trace.calls.len(),
                    t.path.display(),
                );
            }
            match one_rep(&a, &trace, t, pass, &expected, &cpus, t0) {
                Ok(r) if pass == Pass::Counting => t.counting = Some(r),
                Ok(r) => t.reps.push(r),
                Err(e) if e == Interrupted.to_string() => {
                    stop = signals::stop_requested();
                    break 'reps;
                }
                Err(e) => {
                    failure = Some(e);
                    break 'reps;
                }
            }
        }
    }
    let mut cleanup = Vec::new();
    for t in tgts.iter_mut() {
        if let Err(e) = t.dir.remove() {
            cleanup.push(format!("could not remove {}: {e}", t.dir.path().display()));
        }
    }
    for t in &tgts {
        if !t.reps.is_empty() {
            doc.results.push(result::result_of(&a, &trace, t));
        }
    }
    for r in &doc.results {
        doc.warnings.extend(result::warnings(r, a.timing));
    }
    doc.warnings.extend(cleanup.iter().cloned());
    doc.finished_at = Some(rfc3339_now());
    let code = match (&stop, &failure) {
        (Some(sig), _) => {
            doc.stop_reason = Some(format!("interrupted by {}", signals::signal_name(*sig)));
            128 + sig
        }
        (None, Some(e)) => {
            doc.stop_reason = Some(format!("failed: {e}"));
            FAILED
        }
        (None, None) => {
            doc.complete = true;
            OK
        }
    };
    output.finish(&doc);
    for r in &doc.results {
        if let Some(w) = &r.witness {
            if let Some(c) = &w.syscalls_check {
                eprintln!("candor: {}: {}", r.target, c.sentence);
            }
        }
    }
    for w in doc
        .warnings
        .iter()
        .filter(|w| w.contains("diverged") || w.contains("the recording made its"))
    {
        eprintln!("candor: {w}");
    }
    for c in &cleanup {
        eprintln!("candor: {c}");
    }
    if let Some(e) = output.save_error() {
        eprintln!("candor: {e}");
        return Ok(FAILED);
    }
    if let Some(e) = failure {
        eprintln!("candor: {e}");
    }
    Ok(code)
}

fn options_record(a: &Args, t: &Trace, source: &str) -> candor_model::SavedOptions {
    candor_model::ReplaySaved {
        cpus: a.cpus.clone(),
        drop_caches: a.drop_caches,
        keep_cache: a.keep_cache,
        precondition_passes: a.precondition,
        repeat: a.repeat,
        sparse: a.sparse,
        timing: a.timing.name(),
        trace: source.into(),
        trace_source: t.header.source.clone(),
        witness: a.witness.name().into(),
    }
    .into()
}

/// For `candor report TRACE --format fio-iolog`: the trace as fio iolog version 3, and
/// how many calls have no iolog action.
pub fn fio_iolog(path: &Path) -> Result<(String, u64), Failure> {
    let t = format::read(path).map_err(Failure::usage)?;
    Ok(candor_replay::fio::write(&t))
}

/// Whether a regular file begins as a candor trace does (a pipe is never read here: its
/// bytes would be gone for the result's reader).
pub fn is_trace(path: &Path) -> bool {
    use std::io::Read;
    if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        return false;
    }
    let mut b = [0u8; 8];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut b))
        .is_ok()
        && &b == format::MAGIC
}
