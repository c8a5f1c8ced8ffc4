//! One repetition of one point on one target: prepare (untimed), release every thread
//! together by a barrier with the witness's first sample just before, time each thread's
//! work, let the witness take its last sample, merge. Record tests run `worker::Worker`s
//! over an engine; copy and metadata run their `Special` passes in the same frame.

use super::merge::{self, Merged};
use super::worker::{Gates, Worker, WorkerOut};
use super::{prepare, Coordinator, RepMeasure, RunSettings, Target};
use crate::clock::{now_ns, process_cpu};
use crate::engines::{EngineError, OpenSpec, ThreadStats};
use crate::plan::Point;
use crate::special::{Calls, SampleGate, Special, SpecialCtx};
use crate::workload::{Direction, FileState};
use candor_model::{Intent, Repetition};
use candor_witness::{Outcome, Watch};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Barrier;

fn panicked() -> EngineError {
    EngineError::new(
        "worker",
        Path::new("-"),
        None,
        std::io::Error::other("a worker thread panicked"),
    )
}

/// Clock and CPU readings of the main thread around the timed region.
#[derive(Default)]
struct Frame {
    release: u64,
    end: u64,
    cpu0: (f64, f64),
    cpu1: (f64, f64),
}

impl Frame {
    fn end(&mut self, watch: &mut Option<Watch>) {
        self.end = now_ns();
        self.cpu1 = process_cpu();
        if let Some(w) = watch.as_mut() {
            w.timed_end();
        }
    }
}

/// What a repetition reports beside the merged figures.
struct Reported {
    bytes: u64,
    truncated: bool,
    stonewalled: bool,
}

/// The witness's judgement and the repetition's record, from the merged figures.
fn measure(
    m: Merged,
    frame: &Frame,
    watch: Option<Watch>,
    outcome: Outcome,
    r: Reported,
    run_t0: u64,
) -> RepMeasure {
    let Reported {
        bytes,
        truncated,
        stonewalled,
    } = r;
    let witness = watch.map(|w| {
        w.finish(&Outcome {
            app_read_bytes: m.stats.read_bytes,
            app_write_bytes: m.stats.write_bytes,
            timed_seconds: m.seconds,
            headline_bps: if m.seconds > 0.0 {
                m.stats.bytes() as f64 / m.seconds
            } else {
                0.0
            },
            ops: m.stats.ops,
            op_latency: m.stats.all_latency().dump(),
            read_op_latency: m.stats.read_latency.dump(),
            write_op_latency: m.stats.write_latency.dump(),
            flush_seconds: m.flush_seconds,
            cpu_seconds: Some((frame.cpu1.0 - frame.cpu0.0) + (frame.cpu1.1 - frame.cpu0.1)),
            ..outcome
        })
    });
    let wall = frame.end.saturating_sub(frame.release) as f64 / 1e9;
    RepMeasure {
        rep: Repetition {
            bytes,
            ops: m.stats.ops,
            seconds: m.seconds,
            io_seconds: m.io_seconds,
            flush_seconds: m.flush_seconds,
            close_seconds: m.close_seconds,
            truncated,
            started_s: m.start.saturating_sub(run_t0) as f64 / 1e9,
            pinned: m.pinned,
        },
        threads: m.threads,
        cpu: (
            frame.cpu1.0 - frame.cpu0.0,
            frame.cpu1.1 - frame.cpu0.1,
            wall.max(m.seconds),
        ),
        witness,
        stonewalled,
        stats: m.stats,
    }
}

/// Runs one repetition of a record test.
pub(super) fn records(
    target: &mut Target,
    point: &Point,
    s: &RunSettings,
    rep: u32,
    run_t0: u64,
    coord: &mut dyn Coordinator,
) -> Result<RepMeasure, EngineError> {
    let spec = point.spec;
    let prepared = prepare::records(target, point, s, coord)?;
    let is_write = spec.direction != Direction::Read;
    let direct = point.direct;
    let n = point.threads as usize;
    let records = point.file_size / point.record_size;
    let flush_after = is_write && !s.fsync_in_timing;
    let stonewall = s.stonewall && (n > 1 || coord.spans_processes());
    // A time-based test meant for the device drops its files' pages again before every pass
    // after the first, as fio does when it wraps around (`invalidate=1`): reads would
    // otherwise read what the first pass left cached, and buffered writes would rewrite
    // pages still dirty in memory (a 4 KiB psync randwrite over a 256 MiB file ran at 6.2x
    // fio's IOPS, at memory speed, while fio's passes started writeback of the last one).
    // --keep-cache keeps them (a write test means the device even then).
    let refresh_cache = s.time_based && point.intent == Intent::Device && !direct && !s.keep_cache;
    let workers: Vec<Worker> = prepared
        .paths
        .iter()
        .enumerate()
        .map(|(i, path)| Worker {
            engine: point.engine,
            open: OpenSpec {
                direct,
                osync: s.osync,
                file_size: point.file_size,
                record_size: point.record_size as usize,
                iodepth: point.iodepth,
                seed: s.seed ^ ((i as u64) << 32) ^ rep as u64,
                pattern: s.buffer_pattern,
                advice: point.fadvise,
                ..OpenSpec::plain(
                    path,
                    spec.file == FileState::Fresh && !prepared.sharing,
                    is_write,
                )
            },
            pin: (!s.cpus.is_empty()).then(|| s.cpus[i % s.cpus.len()]),
            pattern: spec.pattern,
            records,
            stride: s.stride,
            seed: s
                .seed
                .wrapping_mul(31)
                .wrapping_add(i as u64 * 7919 + rep as u64),
            direction: spec.direction,
            read_pct: s.mix_read_pct,
            verify: target.files.as_ref().and_then(|f| f.verify.get(i).cloned()),
            base: prepared.bases[i],
            stonewall,
            time_based: s.time_based,
            refresh_cache,
            flush_in: is_write && s.fsync_in_timing,
            flush_after,
            close_in: s.close_in_timing,
        })
        .collect();

    let gates = Gates::new(n);
    let mut watch: Option<Watch> = None;
    let mut frame = Frame::default();
    let outs: Vec<WorkerOut> = std::thread::scope(|scope| {
        let g = &gates;
        let handles: Vec<_> = workers
            .into_iter()
            .map(|w| scope.spawn(move || w.run(g)))
            .collect();
        // A test that only writes has no read whose pages the witness must count.
        watch = Some(if spec.direction == Direction::Write {
            target.witness.begin_writing(&prepared.paths)
        } else {
            target.witness.begin(&prepared.paths)
        });
        frame.cpu0 = process_cpu();
        // Last thing before the release: the witness's first sample can take a while, and
        // it must not delay one process's start against the others'.
        coord.before_timed();
        frame.release = now_ns();
        if let Some(rt) = s.runtime_ns {
            let _ = gates.deadline.set(frame.release + rt);
        }
        gates.start.wait();
        if s.stonewall && coord.stonewall(&gates.stop) {
            gates.stonewalled.store(true, Ordering::SeqCst);
        }
        if flush_after {
            gates.mid_a.wait();
            frame.end(&mut watch);
            gates.mid_b.wait();
        }
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| WorkerOut {
                    error: Some(panicked()),
                    ..Default::default()
                })
            })
            .collect()
    });
    if !flush_after {
        frame.end(&mut watch);
    }
    let m = match merge::records(outs, s.fsync_in_timing, s.close_in_timing, frame.release) {
        Ok(m) => m,
        Err(e) => {
            drop(watch.take());
            return Err(e);
        }
    };
    if let Some(fsset) = target.files.as_mut() {
        if is_write && spec.file == FileState::Fresh {
            let full = m.stats.ops == records * point.threads as u64;
            fsset.complete.iter_mut().for_each(|c| *c = full);
        }
    }
    let stonewalled = gates.stonewalled.load(Ordering::SeqCst);
    let truncated = !m.all_ran && !stonewalled;
    let bytes = m.stats.bytes();
    let outcome = Outcome {
        test: spec.name.to_string(),
        intent: point.intent,
        is_write,
        direct,
        access: Some(spec.pattern.access()),
        fadvise: point.fadvise,
        threads: point.threads,
        osync: s.osync && is_write,
        flush_in_timing: is_write && s.fsync_in_timing,
        given: Some(candor_model::advice::Given {
            direct_accepted: s.given.direct_accepted && point.can_direct(),
            ..s.given.clone()
        }),
        ..Default::default()
    };
    let r = Reported {
        bytes,
        truncated,
        stonewalled,
    };
    Ok(measure(m, &frame, watch, outcome, r, run_t0))
}

/// Runs one repetition of a special workload (copy, metadata) in the same frame.
pub(super) fn special(
    workload: &'static dyn Special,
    target: &mut Target,
    point: &Point,
    s: &RunSettings,
    run_t0: u64,
    coord: &mut dyn Coordinator,
) -> Result<RepMeasure, EngineError> {
    let n = point.threads as usize;
    let root = target.dir.path().to_path_buf();
    // Untimed preparation. A failure still passes the coordinator's barrier, so processes
    // kept in step by it do not wait for this one forever.
    let data_files = if workload.needs_data_files() {
        match target.ensure_complete_files(point.file_size, point.threads, s) {
            Ok(p) => p,
            Err(e) => {
                coord.before_timed();
                return Err(e);
            }
        }
    } else {
        Vec::new()
    };
    let ctx = SpecialCtx {
        root: &root,
        entries: s.meta_files.max(1),
        file_size: point.file_size,
        record_size: point.record_size,
        fsync: s.fsync_in_timing,
        copy_for_ns: s.runtime_ns.filter(|_| s.time_based),
        data_files: &data_files,
        sample: None,
    };
    // A copy's reads and writes are counted by each thread's own I/O counters, with no
    // tracepoint; a metadata test's calls by the witness's counting program, over a
    // sample of the operations when that program costs every call while attached.
    let thread_io = workload.is_copy()
        && target.witness.source_name() != "off"
        && candor_procfs::read_thread_io().is_some();
    let gate = (workload.meta().is_some() && target.witness.counts_calls_by_attaching())
        .then(|| SampleGate::new(sample_ops(ctx.entries), n));
    let ctx = SpecialCtx {
        sample: gate.as_ref(),
        ..ctx
    };
    let work = match (0..n)
        .map(|i| workload.prepare(&ctx, i))
        .collect::<Result<Vec<_>, _>>()
    {
        Ok(w) => w,
        Err(e) => {
            coord.before_timed();
            return Err(e);
        }
    };
    target.dir.syncfs();
    let files: Vec<_> = work.iter().map(|w| w.from.clone()).collect();
    let start = Barrier::new(n + 1);
    let mut watch = None;
    let mut frame = Frame::default();
    let mut calls = Calls::default();
    let mut sampled = None;
    let mut io_counted: Option<Calls> = thread_io.then(Calls::default);
    let outs: Vec<merge::SpecialOut> = std::thread::scope(|scope| {
        let handles: Vec<_> = work
            .iter()
            .enumerate()
            .map(|(i, w)| {
                let (start, ctx) = (&start, &ctx);
                // Thread i on the i-th CPU of --cpus, wrapping around, as record tests'.
                let cpu = (!s.cpus.is_empty()).then(|| s.cpus[i % s.cpus.len()]);
                scope.spawn(move || {
                    let mut st = ThreadStats::default();
                    let pinned = super::worker::pin(cpu, &w.from);
                    let mut calls = Calls::default();
                    // A thread that leaves early (an error, a panic) still arrives.
                    let _leave = ctx.sample.map(Leave::new);
                    let io0 = thread_io.then(candor_procfs::read_thread_io).flatten();
                    start.wait();
                    let mut pinned = match pinned {
                        Ok(p) => p,
                        Err(e) => return ((st, 0, 0, 0, Some(e), None), (calls, None)),
                    };
                    let t0 = now_ns();
                    let r = workload.pass(w, ctx, &mut st, &mut calls);
                    let t1 = now_ns();
                    if let Some(g) = ctx.sample {
                        // Fewer operations than the sample: all of them are the sample.
                        g.arrive(st.ops, &calls);
                    }
                    let io = io0.and_then(|(a, len)| {
                        let (b, _) = candor_procfs::read_thread_io()?;
                        Some(thread_io_calls(a, len, b))
                    });
                    if let Some(p) = pinned.as_mut() {
                        p.last_cpu = crate::engines::current_cpu();
                    }
                    let flush = *r.as_ref().unwrap_or(&0);
                    ((st, t0, t1, flush, r.err(), pinned), (calls, io))
                })
            })
            .collect();
        coord.before_timed();
        // The operations are system calls: the witness counts them by kind (a copy's
        // reads and writes are counted by its threads instead).
        watch = Some(if thread_io {
            target.witness.begin(&files)
        } else {
            target.witness.begin_counting_calls(&files)
        });
        frame.cpu0 = process_cpu();
        frame.release = now_ns();
        start.wait();
        if let Some(g) = gate.as_ref() {
            // Every thread has made its sample: read the kernel's count, let the threads
            // go on, and let the counting program go.
            sampled = Some(g.all_arrived());
            match watch.as_mut() {
                Some(w) => w.calls_sampled(|| g.open()),
                None => g.open(),
            }
        }
        handles
            .into_iter()
            .map(|h| {
                let (out, (c, io)) = h.join().unwrap_or_else(|_| {
                    (
                        (ThreadStats::default(), 0, 0, 0, Some(panicked()), None),
                        (Calls::default(), None),
                    )
                });
                calls.add(&c);
                io_counted = match (io_counted.take(), io) {
                    (Some(mut a), Some(b)) => {
                        a.add(&b);
                        Some(a)
                    }
                    _ => None,
                };
                out
            })
            .collect()
    });
    frame.end(&mut watch);
    let m = merge::special(outs)?;
    // The sample's calls are what the kernel's count is checked against; a sample that
    // held every operation is said as such (`CallCheck::sample` is then absent).
    let sample = sampled;
    for w in &work {
        workload.cleanup(w);
    }
    let bytes = workload.reported_bytes(&m.stats);
    let meta = workload.meta().map(|(op, per)| candor_model::MetaFacts {
        op: op.into(),
        inodes_per_op: per,
        inodes_used: None,
    });
    // Lookups (stat, open, readdir) of a tree made before the timed region are meant to
    // be answered by the kernel's caches, as mdtest's and fileop's are.
    let lookups = meta.as_ref().is_some_and(|m| m.inodes_per_op == 0);
    let outcome = Outcome {
        test: point.spec.name.to_string(),
        intent: if lookups {
            Intent::Cache
        } else {
            Intent::Device
        },
        is_write: workload.writes(),
        direct: false,
        threads: point.threads,
        meta,
        calls_sample: sample.as_ref().map(|(ops, _)| candor_model::CallSample {
            ops: *ops,
            of: m.stats.ops,
            repetitions: None,
            counting_pass: None,
        }),
        calls: Some(sample.map_or(calls.0, |(_, c)| c.0)),
        calls_thread_io: io_counted.map(|c| c.0),
        // Copy and metadata tests take neither O_DIRECT nor an access hint.
        given: Some(candor_model::advice::Given {
            direct_accepted: false,
            fadvise_accepted: false,
            ..s.given.clone()
        }),
        ..Default::default()
    };
    let r = Reported {
        bytes,
        truncated: false,
        stonewalled: false,
    };
    Ok(measure(m, &frame, watch, outcome, r, run_t0))
}

/// Operations per thread whose calls the kernel counts when counting costs every call
/// (`SampleGate`): the first twentieth of the pass, at least 100 (docs/bpf.md, "Counting a
/// test's calls", gives the measurement behind it).
fn sample_ops(entries: u64) -> u64 {
    entries.div_ceil(20).max(100)
}

/// Arrives at the sample's gate when its thread leaves, whatever way it leaves (its own
/// arrival, if it made one, is kept).
struct Leave<'a>(&'a SampleGate);

impl Leave<'_> {
    fn new(g: &SampleGate) -> Leave<'_> {
        g.enter();
        Leave(g)
    }
}

impl Drop for Leave<'_> {
    fn drop(&mut self) {
        self.0.arrive(0, &Calls::default());
    }
}

/// A thread's reads and writes between two readings of its I/O counters, `a` (whose own
/// read call and its `len` bytes are counted after it) and `b`.
fn thread_io_calls(a: candor_procfs::PidIo, len: u64, b: candor_procfs::PidIo) -> Calls {
    let d = b.saturating_sub(a);
    let count = |calls: u64, bytes: u64| candor_model::CallCount {
        calls: Some(calls),
        bytes: Some(bytes),
        errors: 0,
    };
    Calls(
        [
            (
                "read".to_string(),
                count(d.syscr.saturating_sub(1), d.rchar.saturating_sub(len)),
            ),
            ("write".to_string(), count(d.syscw, d.wchar)),
        ]
        .into(),
    )
}

/// `--ramp`: the point's workload run for `ramp_ns`, time-based, before its first
/// repetition; nothing of it is measured (fio's `ramp_time`). What it did is kept apart.
pub(super) fn ramp(
    target: &mut Target,
    point: &Point,
    s: &RunSettings,
    ramp_ns: u64,
    run_t0: u64,
) -> Result<candor_model::Ramp, EngineError> {
    let warm = RunSettings {
        runtime_ns: Some(ramp_ns),
        time_based: true,
        stonewall: false,
        ..s.clone()
    };
    let m = records(
        target,
        point,
        &warm,
        u32::MAX,
        run_t0,
        &mut super::NoCoordinator,
    )?;
    Ok(candor_model::Ramp {
        asked_seconds: ramp_ns as f64 / 1e9,
        seconds: m.rep.seconds,
        ops: m.rep.ops,
        bytes: m.rep.bytes,
    })
}
