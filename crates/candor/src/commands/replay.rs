//! `candor replay`: a recorded application's file I/O (a trace of `candor audit --record`,
//! an strace log, a fio iolog) replayed in candor's run directory on each target, under the
//! witness, which counts the calls the kernel saw per kind against the trace's. The result
//! is a normal run document: `report`, `compare`, HTML, fio-json and OpenMetrics read it
//! as they read `candor run`'s. docs/replay.md describes it.

use crate::exit::{refusing, CmdResult, Failure, FAILED, OK};
use crate::output::Output;
use candor_engine::rundir::{clean_stale, new_run_id, RunDir};
use candor_engine::signals;
use candor_model::{rfc3339_now, Cpu, Intent, Repetition, RunDoc, Status, TestResult};
use candor_procfs::paths;
use candor_replay::play::{self, Played, Timing};
use candor_replay::{format, Trace};
use candor_report::Format;
use candor_stats::{summarize, Histogram};
use candor_witness::Mode;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
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

/// A repetition cut short by a signal (not kept).
struct Interrupted;

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("interrupted")
    }
}

/// One target's run directory and witness.
struct Target {
    path: PathBuf,
    dir: RunDir,
    witness: candor_witness::Witness,
    reps: Vec<Rep>,
    precondition: Option<candor_model::Precondition>,
}

/// One repetition's figures.
struct Rep {
    played: Played,
    cpu: (f64, f64),
    witness: candor_model::Witness,
    started_s: f64,
}

fn rusage() -> (f64, f64) {
    // SAFETY: getrusage fills a plain struct.
    let mut r: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: r is a writable rusage.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut r) };
    let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (s(r.ru_utime), s(r.ru_stime))
}

/// A fresh directory for one repetition inside the run directory, opened without
/// following links.
fn rep_dir(run: &RunDir, rep: u32) -> std::io::Result<(PathBuf, OwnedFd)> {
    let p = run.file(&format!("r{rep}"));
    std::fs::DirBuilder::new().create(&p)?;
    let d = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&p)?;
    Ok((p, d.into()))
}

/// Removes a repetition's directory, holding only the replay's files and directories
/// (`remove_dir_all` never follows a link out of it).
fn remove_rep_dir(p: &Path) {
    let _ = std::fs::remove_dir_all(p);
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
            reps: Vec::new(),
            precondition: None,
        });
    }
    doc.options = options_record(&a, &trace, &source);
    let expected = play::expected(&trace);
    let t0 = std::time::Instant::now();
    let mut stop = None;
    let mut failure = None;
    'reps: for rep in 0..a.repeat {
        for t in tgts.iter_mut() {
            if let Some(sig) = signals::stop_requested() {
                stop = Some(sig);
                break 'reps;
            }
            if !a.quiet {
                eprintln!(
                    "candor: replaying {} calls of {} threads on {} ({}/{})",
                    trace.call_count(),
                    trace.calls.len(),
                    t.path.display(),
                    rep + 1,
                    a.repeat
                );
            }
            match one_rep(&a, &trace, t, rep, &expected, &cpus, t0) {
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
            doc.results.push(result_of(&a, &trace, t));
        }
    }
    for r in &doc.results {
        if let Some(rec) = r.extra.get("replay").and_then(|x| x.get("recorded")) {
            let secs = rec["seconds"].as_f64().unwrap_or(0.0);
            let mb = |bps: f64| bps / 1e6;
            // The program's own figure, as it printed it, when the audit read one.
            let own = rec["figure"]
                .get("printed")
                .and_then(|p| p.as_str())
                .map(|p| {
                    format!(
                        "; {}'s own figure then: {p}",
                        rec["figure"]["program"].as_str().unwrap_or("the program")
                    )
                })
                .unwrap_or_default();
            doc.warnings.push(format!(
                "On {}: the recording made its {} calls in {:.3} s ({:.2} MB/s of reads and writes{own}); the replay {:.3} s ({:.2} MB/s), mean of {} repetitions with --timing {}.",
                r.target,
                rec["calls"].as_u64().unwrap_or(0),
                secs,
                mb(rec["throughput"].as_f64().unwrap_or(0.0)),
                r.reps.iter().map(|x| x.seconds).sum::<f64>() / r.reps.len().max(1) as f64,
                mb(r.throughput.mean),
                r.reps.len(),
                a.timing.name()
            ));
        }
        if let Some(d) = r.extra.get("replay").and_then(|x| x.get("divergence")) {
            if let Some(s) = d.as_str() {
                doc.warnings.push(s.to_string());
            }
        }
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

fn options_record(
    a: &Args,
    t: &Trace,
    source: &str,
) -> std::collections::BTreeMap<String, serde_json::Value> {
    let mut o = std::collections::BTreeMap::new();
    o.insert("trace".into(), source.into());
    o.insert("trace_source".into(), t.header.source.clone().into());
    o.insert("timing".into(), a.timing.name().into());
    o.insert("repeat".into(), a.repeat.into());
    o.insert("sparse".into(), a.sparse.into());
    o.insert("keep_cache".into(), a.keep_cache.into());
    o.insert("drop_caches".into(), a.drop_caches.into());
    if let Some(n) = a.precondition {
        o.insert("precondition_passes".into(), n.into());
    }
    o.insert("witness".into(), a.witness.name().into());
    if let Some(c) = &a.cpus {
        o.insert("cpus".into(), c.clone().into());
    }
    o
}

fn one_rep(
    a: &Args,
    trace: &Trace,
    t: &mut Target,
    rep: u32,
    expected: &std::collections::BTreeMap<String, candor_model::CallCount>,
    cpus: &[usize],
    t0: std::time::Instant,
) -> Result<Rep, String> {
    let (path, dir) = rep_dir(&t.dir, rep).map_err(|e| {
        format!(
            "cannot make the replay's directory in {}: {e}",
            t.dir.path().display()
        )
    })?;
    // The files are preconditioned before the first repetition on each target, as `run`
    // does before a test's first, and their pages dropped after it.
    let precondition = a.precondition.filter(|_| rep == 0);
    let laid = play::lay_out(
        trace,
        dir.as_fd(),
        a.sparse,
        a.keep_cache || precondition.is_some(),
    );
    let layout = match laid {
        Ok(l) => l,
        Err(e) => {
            remove_rep_dir(&path);
            return Err(format!(
                "cannot lay out the trace's files in {}: {e}",
                path.display()
            ));
        }
    };
    let _ = layout;
    let rel = play::paths(trace);
    let files: Vec<PathBuf> = trace
        .header
        .files
        .iter()
        .filter(|f| !f.dir && f.size.is_some())
        .map(|f| path.join(&rel[&f.id]))
        .collect();
    if let Some(passes) = precondition {
        let sized: Vec<candor_engine::runner::PreconditionFile> = trace
            .header
            .files
            .iter()
            .filter(|f| !f.dir && f.size.is_some_and(|s| s > 0))
            .map(|f| candor_engine::runner::PreconditionFile {
                path: path.join(&rel[&f.id]),
                base: 0,
                size: f.size.unwrap_or(0),
                create: false,
            })
            .collect();
        let record = trace
            .calls
            .iter()
            .flatten()
            .filter(|c| c.kind().is_data() && c.size > 0)
            .map(|c| c.size)
            .min()
            .unwrap_or(4096);
        if !a.quiet {
            eprintln!(
                "candor: preconditioning the trace's {} files on {} ({passes} passes)",
                sized.len(),
                t.path.display()
            );
        }
        let done = candor_engine::runner::precondition_files(
            &t.witness,
            &sized,
            passes,
            record,
            rep as u64,
            candor_engine::buffer::BufferPattern::default(),
        );
        match done {
            Ok(p) => {
                eprintln!("candor: on {}: {}", t.path.display(), p.explanation);
                t.precondition = Some(p);
            }
            Err(e) => {
                remove_rep_dir(&path);
                if signals::stop_requested().is_some() {
                    return Err(Interrupted.to_string());
                }
                return Err(format!("cannot precondition the trace's files: {e}"));
            }
        }
        if !a.keep_cache {
            for f in &files {
                candor_engine::runner::drop_file_cache(f);
            }
        }
    }
    let prepared = match play::prepare(trace, dir.as_fd()) {
        Ok(p) => p,
        Err(e) => {
            remove_rep_dir(&path);
            return Err(format!(
                "cannot open the trace's inherited descriptors in {}: {e}",
                path.display()
            ));
        }
    };
    if a.drop_caches {
        candor_engine::runner::drop_all_caches();
    }
    let started_s = t0.elapsed().as_secs_f64();
    // With eBPF the calls are counted by a program that every system call of the machine
    // pays for while it is attached: the first repetition is counted (every repetition
    // makes the same calls) and the others run without it.
    let sampled = a.repeat > 1 && t.witness.counts_calls_by_attaching();
    let counted = rep == 0 || !sampled;
    let mut watch = if counted {
        t.witness.begin_counting_calls(&files)
    } else {
        t.witness.begin(&files)
    };
    let cpu0 = rusage();
    let stop = || signals::stop_requested().is_some();
    let mut played = play::play(trace, dir.as_fd(), a.timing, cpus, prepared, &stop);
    watch.timed_end();
    let cpu1 = rusage();
    // What the replay still held goes after the measured region.
    played.leftover.clear();
    let hist = all_latency(&played);
    let outcome = candor_witness::Outcome {
        test: "replay".into(),
        intent: if a.keep_cache {
            Intent::Cache
        } else {
            Intent::Device
        },
        is_write: played.write_bytes > played.read_bytes,
        direct: false,
        app_read_bytes: played.read_bytes,
        app_write_bytes: played.write_bytes,
        timed_seconds: played.seconds,
        headline_bps: (played.read_bytes + played.write_bytes) as f64 / played.seconds.max(1e-9),
        ops: hist.count(),
        op_latency: hist.dump(),
        read_op_latency: played.read_latency.dump(),
        write_op_latency: played.write_latency.dump(),
        flush_in_timing: true,
        cpu_seconds: Some((cpu1.0 - cpu0.0) + (cpu1.1 - cpu0.1)),
        threads: trace.calls.len() as u32,
        calls: counted.then(|| expected.clone()),
        calls_sample: (sampled && counted).then(|| candor_model::CallSample {
            ops: hist.count(),
            of: hist.count() * u64::from(a.repeat),
            repetitions: Some(a.repeat),
        }),
        ..Default::default()
    };
    let witness = watch.finish(&outcome);
    remove_rep_dir(&path);
    if played.stopped {
        return Err(Interrupted.to_string());
    }
    Ok(Rep {
        played,
        cpu: (cpu1.0 - cpu0.0, cpu1.1 - cpu0.1),
        witness,
        started_s,
    })
}

fn all_latency(p: &Played) -> Histogram {
    let mut h = Histogram::new();
    for k in p.kinds.values() {
        h.merge(&k.latency);
    }
    h
}

/// One target's result from its repetitions.
fn result_of(a: &Args, trace: &Trace, t: &Target) -> TestResult {
    let secs: Vec<f64> = t.reps.iter().map(|r| r.played.seconds.max(1e-9)).collect();
    let bytes: Vec<u64> = t
        .reps
        .iter()
        .map(|r| r.played.read_bytes + r.played.write_bytes)
        .collect();
    let mut hist = Histogram::new();
    let mut kinds: std::collections::BTreeMap<String, (u64, u64, u64, Histogram)> =
        Default::default();
    for r in &t.reps {
        hist.merge(&all_latency(&r.played));
        for (k, s) in &r.played.kinds {
            let e = kinds.entry(k.name().to_string()).or_default();
            e.0 += s.calls;
            e.1 += s.errors;
            e.2 += s.bytes;
            e.3.merge(&s.latency);
        }
    }
    let ops: Vec<u64> = t
        .reps
        .iter()
        .map(|r| all_latency(&r.played).count())
        .collect();
    let n = t.reps.len() as f64;
    let user: f64 = t.reps.iter().map(|r| r.cpu.0).sum::<f64>() / n;
    let sys: f64 = t.reps.iter().map(|r| r.cpu.1).sum::<f64>() / n;
    let wall: f64 = secs.iter().sum::<f64>() / n;
    let data_ops: u64 = t
        .reps
        .iter()
        .map(|r| r.played.read_ops + r.played.write_ops)
        .sum();
    let all_bytes: u64 = bytes.iter().sum();
    let opens = trace
        .calls
        .iter()
        .flatten()
        .filter(|c| c.kind() == candor_replay::Kind::Open);
    let direct = opens
        .clone()
        .any(|c| c.flags & candor_replay::strace::O_DIRECT != 0);
    let osync = opens
        .clone()
        .any(|c| c.flags & candor_replay::strace::O_SYNC == candor_replay::strace::O_SYNC);
    let per_kind: serde_json::Map<String, serde_json::Value> = kinds
        .iter()
        .map(|(k, (calls, errors, b, h))| {
            let l = h.latency();
            (
                k.clone(),
                serde_json::json!({
                    "calls": calls / t.reps.len() as u64,
                    "errors": errors / t.reps.len() as u64,
                    "bytes": b / t.reps.len() as u64,
                    "per_second": *calls as f64 / secs.iter().sum::<f64>(),
                    "latency_ns": {"mean": l.mean, "p50": l.p50, "p99": l.p99, "max": l.max},
                }),
            )
        })
        .collect();
    let recorded_span = trace.span_ns() as f64 / 1e9;
    let recorded_bytes: u64 = trace
        .calls
        .iter()
        .flatten()
        .filter(|c| c.kind().is_data())
        .map(|c| c.result.max(0) as u64)
        .sum();
    let diverged: u64 = t.reps.iter().map(|r| r.played.diverged).sum();
    // The first repetition that diverged says where.
    let first: Vec<String> = t
        .reps
        .iter()
        .find(|r| r.played.diverged > 0)
        .map(|r| {
            r.played
                .divergences
                .iter()
                .map(|d| d.sentence())
                .take(5)
                .collect()
        })
        .unwrap_or_default();
    let mut replay = serde_json::json!({
        "trace": doc_source(a, trace),
        "timing": a.timing.name(),
        "threads": trace.calls.len(),
        "processes": trace.header.threads.iter().map(|t| t.process).collect::<std::collections::BTreeSet<_>>().len(),
        "files": trace.header.files.len(),
        "calls": per_kind,
        "recorded": {
            "seconds": recorded_span,
            "bytes": recorded_bytes,
            "calls": trace.call_count(),
            "throughput": recorded_bytes as f64 / recorded_span.max(1e-9),
            "complete": trace.header.complete,
            "figure": trace.header.recorded_figure,
        },
        "diverged_calls": diverged / t.reps.len() as u64,
        "divergences": first,
    });
    if diverged > 0 {
        replay["divergence"] = serde_json::json!(format!(
            "The replay on {} diverged from the trace in {} calls per repetition: {}.",
            t.path.display(),
            diverged / t.reps.len() as u64,
            first.join("; ")
        ));
    }
    let mut extra = std::collections::BTreeMap::new();
    extra.insert("replay".to_string(), replay);
    let throughput: Vec<f64> = bytes
        .iter()
        .zip(&secs)
        .map(|(b, s)| *b as f64 / s)
        .collect();
    let iops: Vec<f64> = ops.iter().zip(&secs).map(|(o, s)| *o as f64 / s).collect();
    TestResult {
        target: t.path.display().to_string(),
        test: "replay".into(),
        engine: "replay".into(),
        file_size: trace.header.files.iter().filter_map(|f| f.size).sum(),
        record_size: all_bytes / data_ops.max(1),
        threads: trace.calls.len() as u32,
        iodepth: 1,
        direct,
        osync,
        fsync_in_timing: true,
        close_in_timing: true,
        intent: if a.keep_cache {
            Intent::Cache
        } else {
            Intent::Device
        },
        status: Status::Ok,
        repetitions: t.reps.len() as u32,
        throughput: summarize(&throughput),
        iops: summarize(&iops),
        latency_ns: hist.latency(),
        latency_histogram: hist.dump(),
        cpu: Cpu {
            user_s: user,
            sys_s: sys,
            wall_s: wall,
            cpu_pct: if wall > 0.0 {
                (user + sys) / wall * 100.0
            } else {
                0.0
            },
        },
        reps: t
            .reps
            .iter()
            .zip(&bytes)
            .zip(&ops)
            .map(|((r, b), o)| Repetition {
                bytes: *b,
                ops: *o,
                seconds: r.played.seconds,
                io_seconds: r.played.seconds,
                started_s: r.started_s,
                ..Default::default()
            })
            .collect(),
        witness: candor_witness::combine(t.reps.iter().map(|r| r.witness.clone()).collect()),
        precondition: t.precondition.clone(),
        extra,
        ..Default::default()
    }
}

fn doc_source(a: &Args, t: &Trace) -> String {
    match (&a.from_strace, &a.from_fio_iolog, a.paths.first()) {
        (Some(p), _, _) | (_, Some(p), _) => format!("{} ({})", p.display(), t.header.source),
        (_, _, Some(p)) => p.display().to_string(),
        _ => String::new(),
    }
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

/// `candor audit --record`: a recording under way.
pub struct Recording {
    recording: candor_bpf::record::Recording,
    converter: std::sync::Arc<std::sync::Mutex<Option<candor_replay::record::Spool>>>,
    path: PathBuf,
    dirs: Vec<String>,
    started_at: String,
}

/// Starts recording the children candor starts from now on (root, eBPF), keeping the
/// files under `dirs` (default: the current directory). Refused in one sentence when the
/// recorder cannot load or the trace cannot be written.
pub fn record_start(path: &Path, dirs: &[PathBuf], keep_paths: bool) -> Result<Recording, Failure> {
    crate::paths::check_output_file("--record", path, "trace")?;
    let dirs: Vec<String> = if dirs.is_empty() {
        vec![std::env::current_dir()
            .map(|d| d.display().to_string())
            .unwrap_or_else(|_| ".".into())]
    } else {
        dirs.iter()
            .map(|d| {
                std::fs::canonicalize(d)
                    .map(|c| c.display().to_string())
                    .map_err(|e| {
                        Failure::usage(format!(
                            "--record-dir {}: {e}; name an existing directory",
                            d.display()
                        ))
                    })
            })
            .collect::<Result<_, _>>()?
    };
    let converter = std::sync::Arc::new(std::sync::Mutex::new(Some(
        candor_replay::record::Spool::new(candor_replay::strace::Options {
            dirs: dirs.clone(),
            keep_paths,
        }),
    )));
    let sink = converter.clone();
    let recording = candor_bpf::record::start(Box::new(move |c| {
        if let Some(conv) = sink.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
            conv.push(&candor_replay::record::Recorded {
                ts: c.ts,
                dur: c.dur,
                ret: c.ret,
                args: c.args,
                extra: c.extra,
                tid: c.tid,
                tgid: c.tgid,
                nr: c.nr,
                p1: c.p1,
                p2: c.p2,
            });
        }
    }))
    .map_err(|e| {
        Failure::usage(format!(
            "--record needs the eBPF recorder, which is not available: {e}"
        ))
    })?;
    Ok(Recording {
        recording,
        converter,
        path: path.to_path_buf(),
        dirs,
        started_at: rfc3339_now(),
    })
}

/// Ends a recording: the trace written, with the program's own figure (the first the audit
/// read from its output), and a line saying what it holds.
pub fn record_finish(
    r: Recording,
    command: &[String],
    figure: Option<&candor_audit::Claim>,
) -> Result<(), Failure> {
    let lost = r.recording.stop();
    let Some(conv) = r.converter.lock().unwrap_or_else(|e| e.into_inner()).take() else {
        return Err(Failure::failed("the recording was lost"));
    };
    let mut t = conv.finish(lost);
    let host = candor_witness::describe_host();
    t.header.command = command.to_vec();
    t.header.host = host.hostname.clone();
    t.header.kernel = host.kernel.clone();
    t.header.started_at = r.started_at;
    t.header.recorded_figure = figure.map(|c| {
        serde_json::json!({
            "program": c.program,
            "test": c.test,
            "bytes_per_second": c.claimed_bps,
            "printed": c.printed,
        })
    });
    if let Some(d) = r.dirs.first() {
        t.header.fs = candor_witness::describe_target(Path::new(d)).fs_type;
    }
    if t.header.files.iter().any(|f| f.path.is_some()) {
        t.header.dirs = r.dirs.clone();
    }
    let n = format::write(&r.path, &t).map_err(|e| {
        Failure::failed(format!("cannot write the trace {}: {e}", r.path.display()))
    })?;
    let calls = t.call_count();
    eprintln!(
        "candor: recorded {calls} calls of {} threads on {} files in {} ({n} bytes, {:.1} per call){}",
        t.header.threads.len(),
        t.header.files.len(),
        r.path.display(),
        n as f64 / calls.max(1) as f64,
        if lost > 0 {
            format!("; {lost} calls were lost: the trace is incomplete")
        } else {
            String::new()
        }
    );
    for n in &t.header.notes {
        eprintln!("candor: {n}");
    }
    Ok(())
}
