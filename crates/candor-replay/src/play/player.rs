//! Every thread's calls issued in order on a thread of its own, all threads released
//! together; a call waits for the calls other threads ended before it began in the
//! recording; each thread's figures and divergences merged into what the replay did.

use super::call::{Buffer, Issued, Place};
use super::fds::{FdCache, Prepared};
use super::fidelity::compare;
use super::layout::c_paths;
use super::{Divergence, KindStats, Played, Timing, MAX_KEPT};
use crate::format::{Kind, Trace};
use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One thread's share of the replay.
struct ThreadOut {
    kinds: BTreeMap<Kind, KindStats>,
    divergences: Vec<Divergence>,
    diverged: u64,
    start: Instant,
    end: Instant,
    leftover: Vec<OwnedFd>,
    stopped: bool,
}

/// What the replay's threads share.
struct Shared<'a> {
    place: Place,
    timing: Timing,
    t0_ns: u64,
    go: std::sync::Barrier,
    released: Mutex<Option<Instant>>,
    trace: &'a Trace,
    /// Per thread: the calls it has made so far, and when each of its calls ended in the
    /// recording (kept non-decreasing).
    done: Vec<std::sync::atomic::AtomicUsize>,
    ends: Vec<Vec<u64>>,
    /// Whether the replay was asked to stop (a signal): every thread stops at its next call.
    stop: &'a (dyn Fn() -> bool + Sync),
}

/// How long a call waits for the calls of other threads that ended before it began in the
/// recording; past it, the call goes ahead (a trace whose clock went backwards).
const ORDER_WAIT: Duration = Duration::from_secs(5);

impl Shared<'_> {
    /// Waits until every other thread has made each call that ended, in the recording,
    /// before this one began: calls ordered in the recording stay ordered; calls that
    /// overlapped may overlap.
    fn wait_for_earlier(&self, me: usize, start_ns: u64) -> bool {
        use std::sync::atomic::Ordering;
        let mut since: Option<Instant> = None;
        let mut waited = false;
        // A wait that lasts past its spins and yields sleeps longer and longer (20 us
        // doubling to 1 ms): hundreds of threads waiting their turn (a shell's processes,
        // which ran one after another) would otherwise wake every 20 us on every CPU beside
        // the one thread that can go (400 processes took 11 s to replay what the recording
        // made in 0.3 s).
        let mut nap = Duration::from_micros(20);
        for (j, ends) in self.ends.iter().enumerate() {
            if j == me {
                continue;
            }
            let need = ends.partition_point(|&e| e < start_ns);
            let mut spins = 0u32;
            while self.done[j].load(Ordering::Acquire) < need {
                if (self.stop)() {
                    return true;
                }
                waited = true;
                spins += 1;
                if spins < 64 {
                    std::hint::spin_loop();
                } else if spins < 256 {
                    std::thread::yield_now();
                } else {
                    let t = *since.get_or_insert_with(Instant::now);
                    if t.elapsed() > ORDER_WAIT {
                        return true;
                    }
                    std::thread::sleep(nap);
                    nap = (nap * 2).min(Duration::from_millis(1));
                }
            }
        }
        waited
    }
}

/// Replays every thread's calls, all threads released together; `cpus` pins the threads
/// round-robin.
pub fn play(
    t: &Trace,
    dir: BorrowedFd,
    timing: Timing,
    cpus: &[usize],
    prepared: Prepared,
    stop: &(dyn Fn() -> bool + Sync),
) -> Played {
    let t0_ns = t
        .calls
        .iter()
        .flatten()
        .map(|c| c.start_ns)
        .min()
        .unwrap_or(0);
    let parents = t
        .header
        .threads
        .iter()
        .filter_map(|th| th.parent.map(|p| (th.process, p)))
        .collect();
    let shared = Arc::new(Shared {
        place: Place {
            dir: dir.as_raw_fd(),
            names: c_paths(t),
            fds: prepared.fds,
            parents,
            links: t.calls.iter().flatten().any(|c| c.kind() == Kind::Symlink),
            dir_path: std::fs::read_link(format!("/proc/self/fd/{}", dir.as_raw_fd()))
                .ok()
                .map(|p| std::os::unix::ffi::OsStringExt::into_vec(p.into_os_string())),
            maps: Default::default(),
        },
        timing,
        t0_ns,
        go: std::sync::Barrier::new(t.calls.len()),
        released: Mutex::new(None),
        trace: t,
        stop,
        done: t.calls.iter().map(|_| Default::default()).collect(),
        ends: t
            .calls
            .iter()
            .map(|calls| {
                let mut max = 0;
                calls
                    .iter()
                    .map(|c| {
                        max = (c.start_ns + c.dur_ns).max(max);
                        max
                    })
                    .collect()
            })
            .collect(),
    });
    let outs: Vec<ThreadOut> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..t.calls.len())
            .map(|i| {
                let sh = Arc::clone(&shared);
                let cpu = (!cpus.is_empty()).then(|| cpus[i % cpus.len()]);
                s.spawn(move || run_thread(&sh, i, cpu))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a replay thread does not panic"))
            .collect()
    });
    let mut p = Played::default();
    let start = outs.iter().map(|o| o.start).min();
    let end = outs.iter().map(|o| o.end).max();
    if let (Some(a), Some(b)) = (start, end) {
        p.seconds = b.saturating_duration_since(a).as_secs_f64();
    }
    for o in outs {
        for (k, s) in o.kinds {
            let e = p.kinds.entry(k).or_default();
            e.calls += s.calls;
            e.errors += s.errors;
            e.bytes += s.bytes;
            e.latency.merge(&s.latency);
            if k.is_read() {
                p.read_bytes += s.bytes;
                p.read_ops += s.calls;
                p.read_latency.merge(&s.latency);
            } else if k.is_write() {
                p.write_bytes += s.bytes;
                p.write_ops += s.calls;
                p.write_latency.merge(&s.latency);
            }
        }
        p.diverged += o.diverged;
        p.stopped |= o.stopped;
        for d in o.divergences {
            if p.divergences.len() < MAX_KEPT {
                p.divergences.push(d);
            }
        }
        p.leftover.extend(o.leftover);
    }
    // Whatever the threads left open (their processes would have closed it at exit).
    p.leftover.extend(shared.place.fds.drain());
    p.divergences.sort_by_key(|d| (d.thread, d.call));
    p
}

/// Pins the calling thread to one CPU.
fn pin(cpu: usize) {
    // SAFETY: cpu_set_t is plain bits; the calls get a valid set for this thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// One recorded thread's calls, in order, on this thread.
fn run_thread(sh: &Shared, index: usize, cpu: Option<usize>) -> ThreadOut {
    if let Some(c) = cpu {
        pin(c);
    }
    let calls = &sh.trace.calls[index];
    let process = sh.trace.header.threads[index].process;
    let mut out = ThreadOut {
        kinds: BTreeMap::new(),
        divergences: Vec::new(),
        diverged: 0,
        start: Instant::now(),
        end: Instant::now(),
        leftover: Vec::new(),
        stopped: false,
    };
    let mut buf = Buffer::new();
    // Per kind, by its code, while the thread runs (a map lookup per call is not free).
    let mut kinds: Vec<KindStats> = vec![KindStats::default(); Kind::ALL.len()];
    let mut seen = vec![false; Kind::ALL.len()];
    let mut fd_cache = FdCache::default();
    sh.go.wait();
    let released = *sh
        .released
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(Instant::now);
    out.start = Instant::now();
    // One clock reading per call, as `run`'s loop: the end of a call is the start of the
    // next unless the thread waited in between (the recorded gaps, other threads).
    let mut t = out.start;
    for (i, c) in calls.iter().enumerate() {
        if (sh.stop)() {
            out.stopped = true;
            break;
        }
        let mut waited = false;
        if let Timing::Scaled(x) = sh.timing {
            waited = true;
            let at = released
                + Duration::from_nanos(((c.start_ns.saturating_sub(sh.t0_ns)) as f64 * x) as u64);
            loop {
                let now = Instant::now();
                if at <= now || (sh.stop)() {
                    break;
                }
                std::thread::sleep((at - now).min(Duration::from_millis(50)));
            }
        }
        waited |= sh.wait_for_earlier(index, c.start_ns);
        if waited {
            t = Instant::now();
        }
        let r = sh
            .place
            .issue(process, c, &mut buf, &mut fd_cache, &mut out.leftover);
        let end = Instant::now();
        let ns = end.saturating_duration_since(t).as_nanos() as u64;
        t = end;
        sh.done[index].store(i + 1, std::sync::atomic::Ordering::Release);
        let code = c.kind().code() as usize % Kind::ALL.len();
        seen[code] = true;
        let k = &mut kinds[code];
        let diverged = match r {
            Issued::Done(v) => {
                k.calls += 1;
                k.latency.record(ns);
                if v < 0 {
                    k.errors += 1;
                } else if c.kind().is_data() {
                    k.bytes += v as u64;
                }
                compare(c, v)
            }
            Issued::Skipped(what) => Some(what),
        };
        if let Some(what) = diverged {
            out.diverged += 1;
            if out.divergences.len() < MAX_KEPT {
                out.divergences.push(Divergence {
                    thread: index + 1,
                    call: i + 1,
                    kind: c.kind(),
                    what,
                });
            }
        }
    }
    out.end = Instant::now();
    out.kinds = kinds
        .into_iter()
        .enumerate()
        .filter(|(code, _)| seen[*code])
        .filter_map(|(code, k)| Kind::from_code(code as u8).map(|kind| (kind, k)))
        .collect();
    out
}
