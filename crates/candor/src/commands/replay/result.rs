//! A target's result from its repetitions: a run document's test result, with the replay's
//! own figures (per kind, the recording's, the divergences) and the sentences comparing
//! the replay with the recording.

use super::repetition::Target;
use super::Args;
use candor_model::{Cpu, Intent, Repetition, Status, TestResult};
use candor_replay::play::Timing;
use candor_replay::Trace;
use candor_stats::{summarize, Histogram};

/// One target's result from its repetitions.
pub(super) fn result_of(a: &Args, trace: &Trace, t: &Target) -> TestResult {
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
        hist.merge(&r.played.all_latency());
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
        .map(|r| r.played.all_latency().count())
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
            "notes": trace.header.notes,
            "figure": trace.header.recorded_figure,
        },
        "diverged_calls": diverged / t.reps.len() as u64,
        "divergences": first,
    });
    if let Some(c) = &t.counting {
        // The counting pass's own time: what counting every call cost (not in the figures).
        replay["counting_pass"] = serde_json::json!({
            "seconds": c.played.seconds,
            "calls": c.played.all_latency().count(),
        });
    }
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
        witness: {
            let reps = t.reps.iter().map(|r| r.witness.clone()).collect();
            match &t.counting {
                Some(c) => candor_witness::combine_counted(reps, &c.witness),
                None => candor_witness::combine(reps),
            }
        },
        precondition: t.precondition.clone(),
        extra,
        ..Default::default()
    }
}

/// The trace as the result names it: the log it was read from (and its kind), or its file.
fn doc_source(a: &Args, t: &Trace) -> String {
    match (&a.from_strace, &a.from_fio_iolog, a.paths.first()) {
        (Some(p), _, _) | (_, Some(p), _) => format!("{} ({})", p.display(), t.header.source),
        (_, _, Some(p)) => p.display().to_string(),
        _ => String::new(),
    }
}

/// The sentences a result adds to the run's warnings: the recording's time and rate beside
/// the replay's, and where the replay diverged.
pub(super) fn warnings(r: &TestResult, timing: Timing) -> Vec<String> {
    let mut out = Vec::new();
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
        out.push(format!(
            "On {}: the recording made its {} calls in {:.3} s ({:.2} MB/s of reads and writes{own}); the replay {:.3} s ({:.2} MB/s), mean of {} repetitions with --timing {}.",
            r.target,
            rec["calls"].as_u64().unwrap_or(0),
            secs,
            mb(rec["throughput"].as_f64().unwrap_or(0.0)),
            r.reps.iter().map(|x| x.seconds).sum::<f64>() / r.reps.len().max(1) as f64,
            mb(r.throughput.mean),
            r.reps.len(),
            timing.name()
        ));
    }
    if let Some(d) = r.extra.get("replay").and_then(|x| x.get("divergence")) {
        if let Some(s) = d.as_str() {
            out.push(s.to_string());
        }
    }
    out
}
