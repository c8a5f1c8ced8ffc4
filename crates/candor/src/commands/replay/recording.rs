//! `candor audit --record`: the sink the audit's eBPF tracer hands the program's calls to
//! (packed while it runs, made into a trace after), and the trace written with the
//! program's own figure.

use crate::exit::Failure;
use candor_model::rfc3339_now;
use candor_replay::format;
use std::path::{Path, PathBuf};

/// `candor audit --record`: a recording under way.
pub struct Recording {
    /// What the audit records into (`candor_audit::Options::record`).
    pub recorder: std::sync::Arc<candor_audit::Recorder>,
    converter: std::sync::Arc<std::sync::Mutex<Option<candor_replay::record::Spool>>>,
    path: PathBuf,
    dirs: Vec<String>,
    started_at: String,
}

/// Makes the sink of a recording of the program the audit runs (root, eBPF: the audit's
/// tracer records), keeping the files under `dirs` (default: the current directory).
/// Refused in one sentence when the trace cannot be written.
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
    let converter = std::sync::Arc::new(std::sync::Mutex::new(Some(start_dir(
        candor_replay::record::Spool::new(candor_replay::strace::Options {
            dirs: dirs.clone(),
            keep_paths,
        }),
    ))));
    let sink = converter.clone();
    let recorder = candor_audit::Recorder::new(Box::new(move |c| {
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
    }));
    Ok(Recording {
        recorder,
        converter,
        path: path.to_path_buf(),
        dirs,
        started_at: rfc3339_now(),
    })
}

/// The audit starts the command in candor's own working directory.
fn start_dir(spool: candor_replay::record::Spool) -> candor_replay::record::Spool {
    match std::env::current_dir() {
        Ok(d) => spool.starts_in(d.display().to_string()),
        Err(_) => spool,
    }
}

/// Ends a recording: the trace written, with the program's own figure (the first the audit
/// read from its output), and a line saying what it holds.
pub fn record_finish(
    r: Recording,
    command: &[String],
    figure: Option<&candor_audit::Claim>,
) -> Result<(), Failure> {
    let Some(lost) = r.recorder.lost() else {
        return Err(Failure::failed(
            "the recording did not start: the audit ran without its eBPF tracer; run it as root on a kernel that loads eBPF (candor doctor says what is missing)",
        ));
    };
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
