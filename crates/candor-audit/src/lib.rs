//! `candor audit -- CMD`: runs someone else's benchmark under observation, rebuilds what it
//! did file by file from the kernel's point of view, reads what it claimed, and puts the
//! two side by side with the reasons they differ.
//!
//! - [`claims`]: pure parsers of iozone, fio, dd, IOR, mdtest, sysbench, bonnie++ and
//!   UnixBench output into [`Claim`]s, and the lines they could not read.
//! - [`phase`]: one open..close of a file ([`Phase`]) and the [`PhaseSource`] seam, with two
//!   sources: [`bpf`] (candor-bpf's tracer, root) and [`procfs`] (sampling, no privileges).
//! - [`disk`]: the kernel's diskstats on the same ticks.
//! - [`reconcile`]: claims matched to phases, observed throughput two ways, verdicts.
//! - [`checks`]: what particular tools bring (metadata rates against counted calls, IOR's
//!   page-cache read-back, sysbench's fsync counts, fstime's page-cache copy).
//! - [`runner`]: runs the command with its output passed through and captured.
//! - [`report`]: the terminal table and the JSON stored in the RunDoc.

pub mod account;
pub mod bpf;
pub mod channels;
pub mod checks;
pub mod claims;
pub mod disk;
pub mod generic;
pub mod holes;
pub mod phase;
pub mod procfs;
pub mod reconcile;
pub mod report;
pub mod runner;

pub use claims::{Claim, Direction};
pub use phase::{Observed, Phase, PhaseSource, ProcessRecord};
pub use reconcile::{reconcile, Row};
pub use runner::{Exit, Outcome};

use candor_model::Chosen;
use disk::device_name;
use std::time::Duration;

/// Which phase source to use (`--witness`): the witness source of `candor run` too (`Off`
/// cannot audit).
pub use candor_model::WitnessSource as SourceChoice;

/// `candor audit --record`: the sink the tree's recorded calls go to while the audit runs
/// (eBPF only: the tracer's own syscall programs record them), and, once it has ended, how
/// many calls the kernel could not hand over.
pub struct Recorder {
    sink: std::sync::Mutex<Option<RecordSink>>,
    lost: std::sync::Mutex<Option<u64>>,
}

/// Where each recorded call goes, in the order the kernel handed them over.
pub type RecordSink = Box<dyn FnMut(candor_bpf::record::RawCall) + Send>;

impl Recorder {
    pub fn new(sink: RecordSink) -> std::sync::Arc<Recorder> {
        std::sync::Arc::new(Recorder {
            sink: std::sync::Mutex::new(Some(sink)),
            lost: std::sync::Mutex::new(None),
        })
    }

    /// The calls the kernel could not hand over; None when the recording never started.
    pub fn lost(&self) -> Option<u64> {
        *self.lost.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn take_sink(&self) -> Option<RecordSink> {
        self.sink.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    fn ended(&self, lost: u64) {
        *self.lost.lock().unwrap_or_else(|e| e.into_inner()) = Some(lost);
    }
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("lost", &self.lost())
            .finish()
    }
}

#[derive(Clone, Debug)]
pub struct Options {
    pub source: SourceChoice,
    /// Sampling period of the processes' counters and of diskstats.
    pub interval: Duration,
    /// Pass the command's output through to candor's stdout/stderr.
    pub pass_through: bool,
    /// Stop when the command exits, even if processes it started still run (they are
    /// named); by default the audit waits for them.
    pub stop_at_exit: bool,
    /// Record every file-I/O call of the tree (`--record`): eBPF only, refused otherwise.
    pub record: Option<std::sync::Arc<Recorder>>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            source: SourceChoice::Auto,
            interval: Duration::from_millis(5),
            pass_through: true,
            stop_at_exit: false,
            record: None,
        }
    }
}

/// Everything an audit found: the command's run as the runner saw it, and what was read of
/// its output and reconciled with it.
pub struct Audit {
    pub run: Outcome,
    pub claims: Vec<Claim>,
    /// Lines of the output that looked like figures but could not be read.
    pub unread: Vec<claims::Unread>,
    pub rows: Vec<Row>,
    /// What the tree did, whatever the program printed.
    pub account: account::Account,
}

/// Why the requested source could not be used (with `SourceChoice::Bpf`), before anything
/// ran.
#[derive(Debug)]
pub struct SourceUnavailable(pub String);

/// Runs `argv` under the chosen source, then parses its claims and reconciles them.
///
/// The calling process becomes a child subreaper (orphans of the command are re-parented
/// to it, so they stay observable) and installs SIGTERM/SIGHUP/SIGINT handlers that pass
/// the signal on to the command. Every child of the calling process counts as part of the
/// audited tree, so run one audit at a time and start no other children meanwhile.
pub fn audit(argv: &[String], opts: &Options) -> Result<Audit, SourceUnavailable> {
    runner::catch_signals();
    let cwd = std::env::current_dir()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| ".".into());
    let mut fallback_note = None;
    let sampling = || Box::new(procfs::ProcfsSource::new(opts.interval.as_secs_f64()));
    let load = || bpf::BpfSource::load(&cwd, opts.record.clone());
    let mut source: Box<dyn PhaseSource> = match opts.source.choose(load) {
        Chosen::Bpf(b) => Box::new(b),
        // Only the tracer records: a recording cannot fall back to /proc sampling.
        Chosen::Procfs if opts.record.is_some() => {
            return Err(SourceUnavailable(
                "a recording is made by the eBPF tracer, not by /proc sampling".into(),
            ))
        }
        Chosen::NoBpf { why, .. } if opts.record.is_some() => return Err(SourceUnavailable(why)),
        Chosen::Procfs => sampling(),
        Chosen::NoBpf { why, asked: true } => return Err(SourceUnavailable(why)),
        Chosen::NoBpf { why, asked: false } => {
            fallback_note = Some(format!("eBPF not used ({why}); /proc sampling instead"));
            sampling()
        }
        Chosen::Off => {
            return Err(SourceUnavailable(
                "an audit needs a witness: use auto, procfs or bpf".into(),
            ))
        }
    };
    let interval = if source.name() == "bpf" {
        // The tracer records every call itself; ticks only drain it and sample the devices.
        opts.interval.max(Duration::from_millis(20))
    } else {
        opts.interval
    };
    let mut run = runner::run(
        argv,
        source.as_mut(),
        interval,
        opts.pass_through,
        opts.stop_at_exit,
    );
    let observed = &mut run.observed;
    phase::drop_startup_noise(observed);
    holes::find(observed);
    if let Some(n) = fallback_note {
        observed.notes.insert(0, n);
    }
    let channel_notes = channels::notes(observed);
    observed.notes.extend(channel_notes);
    let observed = &run.observed;
    let claims::Parsed { claims, mut unread } = claims::read(argv, &run.stdout, &run.stderr);
    generic::annotate(&mut unread, &observed.phases);
    let disks = &run.disks;
    let window = |dev: u64, from: f64, to: f64| {
        let name = device_name(dev)?;
        Some((name.clone(), disks.delta(&name, from, to)?))
    };
    let (generic, known): (Vec<Claim>, Vec<Claim>) =
        claims.iter().cloned().partition(|c| c.basis == "generic");
    let mut rows = reconcile(&known, &observed.phases, &run.cwd, &window);
    checks::apply(&known, &mut rows, observed);
    channels::apply(&known, &mut rows, observed, &run.cwd, &window);
    rows.extend(generic::reconcile(
        &generic,
        &observed.phases,
        observed
            .channels
            .iter()
            .any(|u| !observed.channels_counted.contains(&u.channel)),
        observed.source == "bpf",
    ));
    let device_totals: Vec<(String, u64, u64)> = run
        .devices
        .iter()
        .filter_map(|d| {
            let t = disks.total(d)?;
            Some((d.clone(), t.read_bytes(), t.write_bytes()))
        })
        .collect();
    let account = account::account(observed, &device_totals);
    Ok(Audit {
        run,
        claims,
        unread,
        rows,
        account,
    })
}
