//! `candor audit -- CMD [ARGS...]`: runs another benchmark under the witness, prints what it
//! claimed next to what the kernel saw, and exits with the command's own exit code.

use crate::exit::{refusing, CmdResult, Failure};
use crate::output::save_atomic;
use candor_audit::{report, Exit, Options, SourceChoice};
use candor_model::{rfc3339_now, RunDoc};
use candor_procfs::paths::{DISKSTATS, PROC};
use std::path::PathBuf;
use std::time::Duration;

#[derive(clap::Args, Debug)]
#[command(
    after_help = "The command's output passes through unchanged. Exit code: the command's own; \
128+N when it was killed by signal N; 127 when it was not found, 126 when it could not be run; \
2 for bad usage of candor audit itself.\n\nExample: candor audit -o fio.json -- fio --name=r \
--filename=/var/tmp/f --rw=read --bs=128k --size=1g --direct=1"
)]
pub struct Args {
    /// Write the audit (phases, claims, reconciliation, witness) to FILE.json.
    #[arg(short, long, value_name = "FILE.json")]
    pub output: Option<PathBuf>,
    /// How to observe: eBPF when it loads (root), else /proc sampling; or force one.
    #[arg(long, value_name = "auto|procfs|bpf", default_value = "auto", value_parser = refusing(parse_source))]
    pub witness: SourceChoice,
    /// Sampling period of procfs and of diskstats: milliseconds, or a time with its unit.
    #[arg(long, value_name = "MS", default_value = "5", value_parser = refusing(parse_interval),
          help = format!("Sampling period of {PROC} and {DISKSTATS}: milliseconds (5), or a time with its unit (20ms, 0.5s)"))]
    pub interval: u64,
    /// Do not pass the command's output through (it is still parsed).
    #[arg(short, long)]
    pub quiet: bool,
    /// Stop when the command exits, even if processes it started still run (they are
    /// named, and what they did afterwards is left out); by default the audit waits for
    /// them.
    #[arg(long)]
    pub stop_at_exit: bool,
    /// Also record the command's file I/O, call by call, as a trace for `candor replay`
    /// (root, eBPF; docs/replay.md).
    #[arg(long, value_name = "TRACE")]
    pub record: Option<PathBuf>,
    /// With --record: a directory whose files the trace keeps (repeatable; default: the
    /// current directory).
    #[arg(long, value_name = "DIR", requires = "record")]
    pub record_dir: Vec<PathBuf>,
    /// With --record: keep the files' paths in the trace (default: ids only).
    #[arg(long, requires = "record")]
    pub keep_paths: bool,
    /// The command to audit, after `--`.
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "CMD"
    )]
    pub command: Vec<String>,
}

/// `--witness`: the witness sources of `candor run` that can audit (all but `off`).
fn parse_source(name: &str) -> Result<SourceChoice, String> {
    SourceChoice::named(name)
        .filter(|s| *s != SourceChoice::Off)
        .ok_or_else(|| format!("--witness {name}: use auto, procfs or bpf"))
}

/// `--interval`: a bare number is milliseconds (`5`), anything else a time with its unit
/// (`20ms`, `0.5s`), as `candor run --witness-interval` takes it; whole milliseconds from 1
/// to 10000.
fn parse_interval(text: &str) -> Result<u64, String> {
    const RANGE: &str = "give a sampling period between 1 ms and 10 s, e.g. 5 or 20ms";
    let t = text.trim();
    let ms = if let Ok(n) = t.parse::<u64>() {
        n
    } else {
        let d = candor_engine::plan::options::parse_duration(t)
            .map_err(|e| format!("--interval {text}: {e}"))?;
        let ms = d.as_secs_f64() * 1e3;
        if ms.fract() != 0.0 {
            return Err(format!("--interval {text}: {RANGE}, in whole milliseconds"));
        }
        ms as u64
    };
    if ms == 0 || ms > 10_000 {
        return Err(format!("--interval {text}: {RANGE}"));
    }
    Ok(ms)
}

pub fn run(args: Args) -> CmdResult {
    let source = args.witness;
    if let Some(out) = &args.output {
        let dir = out.parent().filter(|p| !p.as_os_str().is_empty());
        if let Some(d) = dir {
            if !d.is_dir() {
                return Err(Failure::usage(format!(
                    "-o {}: the directory {} does not exist",
                    out.display(),
                    d.display()
                )));
            }
        }
        // A device, pipe, link or directory is refused before the command runs: saving
        // replaces the file named, and must never replace /dev/null or what a link names.
        crate::paths::check_output_file("-o", out, "audit")?;
    }
    if args.record.is_some() && source == SourceChoice::Procfs {
        return Err(Failure::usage(
            "--record records with the eBPF tracer: leave out --witness procfs",
        ));
    }
    let started_at = rfc3339_now();
    let recording = match &args.record {
        Some(t) => Some(super::replay::record_start(
            t,
            &args.record_dir,
            args.keep_paths,
        )?),
        None => None,
    };
    let opts = Options {
        source,
        interval: Duration::from_millis(args.interval),
        pass_through: !args.quiet,
        stop_at_exit: args.stop_at_exit,
        record: recording.as_ref().map(|r| r.recorder.clone()),
    };
    let audit = candor_audit::audit(&args.command, &opts).map_err(|e| match &recording {
        Some(_) => Failure::usage(format!(
            "--record needs the eBPF recorder, which is not available: {}",
            e.0
        )),
        None => Failure::usage(format!(
            "--witness bpf: {} (use --witness auto to fall back to /proc sampling)",
            e.0
        )),
    })?;
    if let Some(r) = recording {
        super::replay::record_finish(r, &args.command, audit.claims.first())?;
    }
    // Names and lines from the command (its files, its output) show their control characters
    // escaped, never obeyed by the terminal.
    eprint!(
        "{}",
        candor_report::escape::terminal(&report::render_table(&audit))
    );
    if let Some(path) = &args.output {
        let mut doc = RunDoc::new("audit", std::env::args().collect(), started_at);
        doc.finished_at = Some(rfc3339_now());
        doc.complete = matches!(audit.run.exit, Exit::Code(_));
        doc.stop_reason = report::exit_sentence(
            &audit.run.exit,
            audit.run.argv.first().map(String::as_str).unwrap_or(""),
        );
        doc.host = candor_witness::describe_host();
        doc.targets = vec![candor_witness::describe_target(std::path::Path::new(
            &audit.run.cwd,
        ))];
        doc.options = candor_model::AuditSaved {
            interval_ms: args.interval,
            stop_at_exit: args.stop_at_exit,
            witness: source.name().into(),
        }
        .into();
        doc.audit = candor_model::audit::AuditDoc::from_saved(report::audit_value(&audit));
        let text = serde_json::to_string_pretty(&doc)
            .map_err(|e| Failure::failed(format!("could not encode the audit: {e}")))?;
        save_atomic(path, &text)
            .map_err(|e| Failure::failed(format!("could not write {}: {e}", path.display())))?;
        eprintln!("wrote {}", path.display());
    }
    Ok(audit.run.exit.code())
}
