//! One repetition of a replay on one target: a fresh directory in the run directory, the
//! trace's files laid out (and preconditioned before the first), the replay measured under
//! the witness, the directory removed.

use super::Args;
use candor_engine::rundir::RunDir;
use candor_engine::signals;
use candor_model::{CallCount, Intent};
use candor_replay::play::{self, Played};
use candor_replay::Trace;
use std::collections::BTreeMap;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// A repetition cut short by a signal (not kept).
pub(super) struct Interrupted;

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("interrupted")
    }
}

/// One target's run directory and witness.
pub(super) struct Target {
    pub(super) path: PathBuf,
    pub(super) dir: RunDir,
    pub(super) witness: candor_witness::Witness,
    /// The counting pass, when the calls were counted on a pass of their own.
    pub(super) counting: Option<Rep>,
    pub(super) reps: Vec<Rep>,
    pub(super) precondition: Option<candor_model::Precondition>,
}

/// Which replay of the trace on a target this is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Pass {
    /// Made before the timed repetitions only to count the calls. With eBPF, counting
    /// makes every system call of the machine take the kernel's slow path (about 0.3 us
    /// each, a third of a cached 4 KiB read), so with `--timing fast` the calls are counted
    /// on a pass of their own and no timed repetition pays for it. Its figures are not the
    /// result's.
    Counting,
    /// A timed repetition (from 0).
    Timed(u32),
}

impl Pass {
    /// The passes a replay makes on each target, in order.
    pub(super) fn plan(a: &Args, counts_by_attaching: bool) -> Vec<Pass> {
        let mut v = Vec::new();
        if Self::counting_pass(a, counts_by_attaching) {
            v.push(Pass::Counting);
        }
        v.extend((0..a.repeat).map(Pass::Timed));
        v
    }

    /// Whether the calls are counted on a pass of their own: with eBPF (counted by
    /// attaching a program) and `--timing fast`, where the counting's cost would be in the
    /// figure. With recorded gaps the calls wait for their time anyway, and the first
    /// repetition is counted.
    pub(super) fn counting_pass(a: &Args, counts_by_attaching: bool) -> bool {
        counts_by_attaching && a.timing == play::Timing::Fast
    }

    fn dir_name(self) -> String {
        match self {
            Pass::Counting => "count".to_string(),
            Pass::Timed(rep) => format!("r{rep}"),
        }
    }
}

/// One repetition's figures.
pub(super) struct Rep {
    pub(super) played: Played,
    /// User and system CPU seconds.
    pub(super) cpu: (f64, f64),
    pub(super) witness: candor_model::Witness,
    pub(super) started_s: f64,
}

/// This process's user and system CPU seconds so far.
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
fn rep_dir(run: &RunDir, pass: Pass) -> std::io::Result<(PathBuf, OwnedFd)> {
    let p = run.file(&pass.dir_name());
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

/// One pass on one target; the error is one sentence, or `Interrupted`'s.
pub(super) fn one_rep(
    a: &Args,
    trace: &Trace,
    t: &mut Target,
    pass: Pass,
    expected: &BTreeMap<String, CallCount>,
    cpus: &[usize],
    t0: std::time::Instant,
) -> Result<Rep, String> {
    let rep = match pass {
        Pass::Counting => 0,
        Pass::Timed(rep) => rep,
    };
    let (path, dir) = rep_dir(&t.dir, pass).map_err(|e| {
        format!(
            "cannot make the replay's directory in {}: {e}",
            t.dir.path().display()
        )
    })?;
    // The files are preconditioned before the first timed repetition on each target, as
    // `run` does before a test's first, and their pages dropped after it.
    let precondition = a.precondition.filter(|_| pass == Pass::Timed(0));
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
    // pays for while it is attached: they are counted once, on the counting pass or else on
    // the first repetition (every repetition makes the same calls), and the other
    // repetitions run without it.
    let attaching = t.witness.counts_calls_by_attaching();
    let own_pass = Pass::counting_pass(a, attaching);
    let sampled = attaching && (own_pass || a.repeat > 1);
    let counted = !attaching || pass == Pass::Counting || (!own_pass && rep == 0);
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
    let hist = played.all_latency();
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
            counting_pass: own_pass.then_some(true),
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
