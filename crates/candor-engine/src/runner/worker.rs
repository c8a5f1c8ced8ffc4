//! One thread of a record test's repetition: open the engine (untimed), wait for the
//! release, run pass after pass until the file is done, the runtime ends or another thread
//! stonewalls, then flush and close as the settings say. Everything it shares with the
//! other threads is in `Gates`; everything that is its own is in `Worker`.

use super::prepare::drop_pages;
use crate::clock::now_ns;
use crate::engines::{
    allowed_cpus, current_cpu, entry, pin_to_cpu, EngineError, EngineKind, Job, OpenSpec, Passes,
    ThreadStats,
};
use crate::verify::FileVerify;
use crate::workload::{Direction, PatternKind};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, OnceLock};

/// What the threads of one repetition share.
pub(super) struct Gates {
    /// Every thread and the main thread: the release.
    pub start: Barrier,
    /// With the flush outside the timed region: the end of the timed region, then the
    /// start of the flush, so the witness samples between them.
    pub mid_a: Barrier,
    pub mid_b: Barrier,
    /// Stop issuing (a thread stonewalled, failed, or a signal came).
    pub stop: AtomicBool,
    /// A thread could not open its engine: the others do not start.
    pub abort: AtomicBool,
    /// The first thread to finish stopped the others.
    pub stonewalled: AtomicBool,
    /// `--runtime`: the clock value at which to stop, set at the release.
    pub deadline: OnceLock<u64>,
}

impl Gates {
    pub fn new(threads: usize) -> Gates {
        Gates {
            start: Barrier::new(threads + 1),
            mid_a: Barrier::new(threads + 1),
            mid_b: Barrier::new(threads + 1),
            stop: AtomicBool::new(false),
            abort: AtomicBool::new(false),
            stonewalled: AtomicBool::new(false),
            deadline: OnceLock::new(),
        }
    }
}

/// One thread's part of a repetition.
pub(super) struct Worker {
    pub engine: EngineKind,
    pub open: OpenSpec,
    pub pin: Option<usize>,
    pub pattern: PatternKind,
    pub records: u64,
    pub stride: u64,
    pub seed: u64,
    pub direction: Direction,
    pub read_pct: u32,
    pub verify: Option<Arc<FileVerify>>,
    pub base: u64,
    /// Whether this thread stops the others when it finishes first.
    pub stonewall: bool,
    pub time_based: bool,
    /// Time-based and meant for the device through the page cache: each new pass starts
    /// with the file's pages dropped again (the engine closed, the pages dropped, the
    /// engine opened again; or only the pages dropped, for an engine whose entry says it
    /// `keeps_open_between_passes`), as fio does when it wraps around. Without it every pass after
    /// the first reads what the first left in the cache.
    pub refresh_cache: bool,
    /// Flush inside the timed region (after the last I/O) ...
    pub flush_in: bool,
    /// ... or after it, between the two middle barriers.
    pub flush_after: bool,
    pub close_in: bool,
}

/// Pins the calling thread to `cpu` (`--cpus`; nothing without it) and reads back where
/// the kernel now lets it run. The caller sets `last_cpu` when its work ends. Record tests'
/// workers and the copy and metadata threads pin themselves through this one function.
pub(super) fn pin(
    cpu: Option<usize>,
    path: &Path,
) -> Result<Option<candor_model::Pinned>, EngineError> {
    let Some(cpu) = cpu else {
        return Ok(None);
    };
    pin_to_cpu(cpu)
        .map_err(|e| EngineError::new("pin the thread to a CPU (--cpus)", path, None, e))?;
    Ok(Some(candor_model::Pinned {
        allowed: allowed_cpus().into_iter().map(|c| c as u32).collect(),
        last_cpu: None,
    }))
}

/// What one thread measured.
#[derive(Default)]
pub(super) struct WorkerOut {
    pub stats: ThreadStats,
    pub t_start: u64,
    pub t_io_end: u64,
    pub flush_ns: u64,
    pub close_ns: u64,
    pub error: Option<EngineError>,
    /// Whether it covered the whole file at least once.
    pub ran_all: bool,
    /// With `--cpus`: where the thread ran, as it saw it.
    pub pinned: Option<candor_model::Pinned>,
}

impl Worker {
    /// The thread's body. Passes every barrier whatever happens, so no thread (nor the main
    /// thread) waits for ever on one that failed.
    pub fn run(self, g: &Gates) -> WorkerOut {
        let mut out = WorkerOut::default();
        let mut engine = (entry(self.engine).make)();
        let pinned = pin(self.pin, &self.open.path).map(|p| out.pinned = p);
        if let Err(e) = pinned.and_then(|_| engine.open(&self.open)) {
            out.error = Some(e);
            g.abort.store(true, Ordering::SeqCst);
        }
        g.start.wait();
        let failed = out.error.is_some() || g.abort.load(Ordering::SeqCst);
        if failed && self.stonewall {
            g.stop.store(true, Ordering::SeqCst);
        }
        if !failed {
            let passes = Passes {
                kind: self.pattern,
                records: self.records,
                stride: self.stride,
                seed: self.seed,
            };
            let mut job = Job {
                pattern: passes.pattern(0),
                record_size: self.open.record_size,
                direction: self.direction,
                read_pct: self.read_pct,
                seed: self.seed,
                stop: &g.stop,
                deadline_ns: g.deadline.get().copied(),
                verify: self.verify.as_deref(),
                base: self.base,
                passes: None,
            };
            // Nothing to do between passes: an engine with a queue goes straight on. Not
            // with --verify, where a read of the last pass and a write of the next could
            // then be in flight on the same record together.
            if self.time_based
                && !self.refresh_cache
                && job.deadline_ns.is_some()
                && job.verify.is_none()
            {
                job.passes = Some(passes);
            }
            out.t_start = now_ns();
            let mut r = engine.run(&job, &mut out.stats);
            // Time-based: pass after pass (a new random order each) until the deadline.
            let reopen = OpenSpec {
                create: false,
                ..self.open.clone()
            };
            let mut pass = 0u64;
            while self.time_based
                && r.is_ok()
                && job.deadline_ns.is_some()
                && !job.should_stop(now_ns())
            {
                pass += 1;
                if self.refresh_cache {
                    if entry(self.engine).keeps_open_between_passes {
                        drop_pages(&reopen.path, false);
                    } else {
                        r = engine.close().and_then(|_| {
                            drop_pages(&reopen.path, false);
                            engine.open(&reopen)
                        });
                        if r.is_err() {
                            break;
                        }
                    }
                }
                job.pattern = passes.pattern(pass);
                r = engine.run(&job, &mut out.stats);
            }
            out.t_io_end = now_ns();
            if let Some(p) = out.pinned.as_mut() {
                p.last_cpu = current_cpu();
            }
            out.ran_all = out.stats.ops >= self.records;
            if let Err(e) = r {
                out.error = Some(e);
                g.stop.store(true, Ordering::SeqCst);
            } else if self.stonewall && !g.stop.swap(true, Ordering::SeqCst) {
                g.stonewalled.store(true, Ordering::SeqCst);
            }
            if self.flush_in && out.error.is_none() {
                out.flush_ns = timed_flush(&mut *engine, &mut out.error);
            }
        }
        if self.flush_after {
            g.mid_a.wait();
            g.mid_b.wait();
            if out.error.is_none() && !failed {
                out.flush_ns = timed_flush(&mut *engine, &mut out.error);
            }
        }
        if self.close_in && !failed {
            let c0 = now_ns();
            if let Err(e) = engine.close() {
                if out.error.is_none() {
                    out.error = Some(e);
                }
            }
            out.close_ns = now_ns() - c0;
        }
        drop(engine);
        out
    }
}

/// Flushes, keeping the first error; returns the time it took.
fn timed_flush(engine: &mut dyn crate::engines::Engine, error: &mut Option<EngineError>) -> u64 {
    let f0 = now_ns();
    if let Err(e) = engine.flush() {
        *error = Some(e);
    }
    now_ns() - f0
}
