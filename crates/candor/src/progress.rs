//! How long a run will take and how far it has got. Before the first test, one line with an
//! estimate of the whole run from its plan (each repetition's bytes at an assumed speed, or
//! its `--runtime` cap, plus a fixed cost per repetition); after the first test, the
//! estimate again from what that test took. As tests finish, the fixed cost of a
//! repetition (from the latest tests) and the device's speed (from the tests with large
//! files) are measured from the times they took, and the time left follows them: beside the
//! progress bar on a terminal, and otherwise (a log, a pipe, a batch job) in one line on
//! stderr at most every [`EVERY`]: which test of how many, the time spent and the time left.

use candor_engine::plan::{Point, RunSettings};
use candor_model::units::rate_text;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The speed assumed before anything is measured: a modest SSD, or a disk's page cache.
const ASSUMED_BPS: f64 = 200e6;
/// What each repetition is assumed to cost beyond its bytes (files opened, flushed, caches
/// dropped, the witness read) before anything is measured.
const OVERHEAD_S: f64 = 0.05;

/// What a repetition costs: a fixed time, and its bytes at a speed.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Model {
    bps: f64,
    overhead: f64,
    /// The speed was fitted to tests of different sizes (not the assumed one).
    measured: bool,
}

const ASSUMED: Model = Model {
    bps: ASSUMED_BPS,
    overhead: OVERHEAD_S,
    measured: false,
};
/// Off a terminal, a progress line at most this often.
pub const EVERY: Duration = Duration::from_secs(10);

/// One test (plan point) as the estimate sees it.
#[derive(Clone, Copy, Debug)]
struct Work {
    /// Bytes one repetition moves on one target: the file size times the threads.
    bytes: f64,
    /// `--runtime`: each repetition's I/O stops here (or lasts this long, `--time-based`).
    cap: Option<f64>,
    time_based: bool,
    /// Seconds spent once per target before the repetitions (`--ramp`).
    ramp: f64,
    /// Repetitions on all targets together.
    reps: f64,
    targets: f64,
}

impl Work {
    /// Seconds this test takes under `m`.
    fn seconds(&self, m: &Model) -> f64 {
        let io = self.bytes / m.bps;
        let io = match self.cap {
            Some(c) if self.time_based => c,
            Some(c) => io.min(c),
            None => io,
        };
        self.reps * (io + m.overhead) + self.targets * self.ramp
    }
}

/// Files from this size tell the device's speed: below it a test's time is mostly its
/// fixed cost (files made, flushed and dropped from the cache, the witness read).
const SPEED_FROM: f64 = 16.0 * 1048576.0;
/// The fixed cost is the median over this many of the latest tests (it grows with the
/// file size in a sweep, where each test writes and flushes its file first).
const RECENT: usize = 50;

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(v[v.len() / 2])
}

/// The model that explains the tests `done` (each with the seconds it took), robust to a
/// noisy test: the fixed cost of a repetition is the median of the latest tests' time
/// beyond their bytes; the speed, the median of the bytes over the rest of the time of the
/// tests with files of [`SPEED_FROM`] or more (`prior`'s until there are some). A
/// repetition that lasted its cap tells the fixed cost only.
fn fit(done: &[(Work, f64)], prior: Model) -> Model {
    let per_rep = |(w, t): &(Work, f64)| (t - w.targets * w.ramp).max(0.0) / w.reps.max(1.0);
    let capped = |w: &Work, y: f64| w.cap.is_some_and(|c| w.time_based || y >= c);
    let recent = &done[done.len().saturating_sub(RECENT)..];
    let speeds: Vec<f64> = done
        .iter()
        .filter(|(w, _)| w.bytes >= SPEED_FROM)
        .filter_map(|d| {
            let y = per_rep(d);
            let io = y - prior.overhead;
            (!capped(&d.0, y) && io > 0.0).then(|| d.0.bytes / io)
        })
        .collect();
    let bps = median(speeds).map(|b| b.clamp(1e5, 1e12));
    let k = 1.0 / bps.unwrap_or(prior.bps);
    let beyond: Vec<f64> = recent
        .iter()
        .map(|d| {
            let y = per_rep(d);
            match d.0.cap {
                Some(c) if capped(&d.0, y) => y - c,
                _ => y - k * d.0.bytes,
            }
        })
        .collect();
    Model {
        bps: bps.unwrap_or(prior.bps),
        overhead: median(beyond).map_or(prior.overhead, |o| o.max(0.0)),
        measured: bps.is_some(),
    }
}

/// A short time to a precision that means something: "0.27 s", "1.5 s".
fn secs(x: f64) -> String {
    if x < 1.0 {
        format!("{x:.2} s")
    } else {
        format!("{x:.1} s")
    }
}

/// "45s", "3m20s", "1h05m".
pub fn span(secs: f64) -> String {
    let s = secs.max(0.0).round() as u64;
    if s < 60 {
        format!("{s}s")
    } else if s < 3600 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{}h{:02}m", s / 3600, (s % 3600) / 60)
    }
}

struct State {
    work: Vec<Work>,
    started: Instant,
    /// The test running (index into `work`).
    point: usize,
    /// Repetitions of it finished, on all targets.
    reps_done: u64,
    /// When it started.
    point_started: Instant,
    /// The tests finished, with the seconds each took.
    done: Vec<(Work, f64)>,
    model: Model,
    /// `--duration`: the run passes over the plan until this much time has passed.
    soak: Option<Duration>,
    round: u64,
}

impl State {
    fn total(&self) -> f64 {
        self.work.iter().map(|w| w.seconds(&self.model)).sum()
    }

    /// Seconds left: the rest of the test running and the tests after it.
    fn left(&self) -> f64 {
        let elapsed = self.started.elapsed().as_secs_f64();
        if let Some(d) = self.soak {
            return d.as_secs_f64() - elapsed;
        }
        let Some(now) = self.work.get(self.point) else {
            return 0.0;
        };
        let share = 1.0 - (self.reps_done as f64 / now.reps.max(1.0)).min(1.0);
        let later: f64 = self.work[self.point + 1..]
            .iter()
            .map(|w| w.seconds(&self.model))
            .sum();
        now.seconds(&self.model) * share + later
    }

    fn line(&self) -> String {
        let n = self.work.len();
        let reps = self.work.get(self.point).map_or(0.0, |w| w.reps) as u64;
        format!(
            "progress: {}test {} of {n}, repetition {} of {reps}, {} elapsed, about {} left{}",
            if self.soak.is_some() {
                format!("round {}, ", self.round)
            } else {
                String::new()
            },
            (self.point + 1).min(n),
            (self.reps_done + 1).min(reps),
            span(self.started.elapsed().as_secs_f64()),
            span(self.left()),
            if self.model.measured && self.soak.is_none() {
                format!(" (measured {})", rate_text(self.model.bps))
            } else {
                String::new()
            }
        )
    }
}

/// The run's estimate and progress, shared with the thread that writes the periodic lines.
pub struct Pace {
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
    ticker: Option<std::thread::JoinHandle<()>>,
    /// The estimate was refined from the first test's speed.
    refined: bool,
    quiet: bool,
}

impl Pace {
    /// The estimate of a run of `points` on `targets` targets with settings `s`, said on
    /// stderr at once unless `quiet`; off a `terminal`, a thread says the progress every
    /// [`EVERY`] until [`Pace::finish`].
    pub fn new(
        points: &[Point],
        s: &RunSettings,
        soak: Option<Duration>,
        targets: usize,
        quiet: bool,
        terminal: bool,
    ) -> Pace {
        let passes = s.steady.map_or(s.repeat.max(1), |c| c.max_rounds) as f64;
        let t = targets.max(1) as f64;
        // --steady-state rounds are time-based repetitions of their own length.
        let (cap, time_based) = match s.steady {
            Some(c) => (Some(c.round_ns as f64 / 1e9), true),
            None => (s.runtime_ns.map(|n| n as f64 / 1e9), s.time_based),
        };
        let work = points
            .iter()
            .map(|p| Work {
                bytes: p.file_size as f64 * p.threads.max(1) as f64,
                cap,
                time_based,
                ramp: s.ramp_ns.map_or(0.0, |n| n as f64 / 1e9),
                reps: passes * t,
                targets: t,
            })
            .collect();
        let state = State {
            work,
            started: Instant::now(),
            point: 0,
            reps_done: 0,
            point_started: Instant::now(),
            done: Vec::new(),
            model: ASSUMED,
            soak,
            round: 1,
        };
        if !quiet {
            eprintln!("candor: {}", estimate(&state, s, targets));
        }
        let state = Arc::new(Mutex::new(state));
        let stop = Arc::new(AtomicBool::new(false));
        let ticker = (!quiet && !terminal).then(|| {
            let (state, stop) = (state.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut last = Instant::now();
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(200));
                    if last.elapsed() >= EVERY && !stop.load(Ordering::Relaxed) {
                        last = Instant::now();
                        if let Ok(s) = state.lock() {
                            eprintln!("candor: {}", s.line());
                        }
                    }
                }
            })
        });
        Pace {
            state,
            stop,
            ticker,
            refined: false,
            quiet,
        }
    }

    /// Test `index` starts. After the first test, the sentence of the estimate refined from
    /// the speed it ran at (once; None otherwise).
    pub fn start_point(&mut self, index: usize) -> Option<String> {
        let mut s = self.state.lock().ok()?;
        let took = s.point_started.elapsed().as_secs_f64();
        if index > s.point && s.soak.is_none() {
            if let Some(w) = s.work.get(s.point).copied() {
                s.done.push((w, took));
                s.model = fit(&s.done, s.model);
            }
        }
        s.point = index;
        s.reps_done = 0;
        s.point_started = Instant::now();
        if index == 0 || self.refined || s.soak.is_some() || self.quiet {
            return None;
        }
        self.refined = true;
        let elapsed = s.started.elapsed().as_secs_f64();
        let total = elapsed + s.left();
        let m = s.model;
        Some(format!(
            "the first test took {}: the run should take about {} in all, {} left ({}){}",
            span(took),
            span(total),
            span(total - elapsed),
            if m.measured {
                format!(
                    "{} a repetition besides its I/O at {}",
                    secs(m.overhead),
                    rate_text(m.bps)
                )
            } else {
                format!("{} a repetition besides its I/O", secs(m.overhead))
            },
            if s.work.len() > index + 1 {
                "; measured again as tests finish"
            } else {
                ""
            }
        ))
    }

    pub fn repetition_done(&self) {
        if let Ok(mut s) = self.state.lock() {
            s.reps_done += 1;
        }
    }

    /// `--duration`: the next pass over the plan.
    pub fn next_round(&self) {
        if let Ok(mut s) = self.state.lock() {
            s.round += 1;
            s.point = 0;
            s.reps_done = 0;
        }
    }

    /// "about 2m10s left", for the progress bar.
    pub fn left(&self) -> String {
        self.state
            .lock()
            .map(|s| format!("about {} left", span(s.left())))
            .unwrap_or_default()
    }

    /// The run is over: the periodic lines stop.
    pub fn finish(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.ticker.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Pace {
    fn drop(&mut self) {
        self.finish();
    }
}

/// The line said before the run: its size, its length and what the length assumes.
fn estimate(s: &State, settings: &RunSettings, targets: usize) -> String {
    let n = s.work.len();
    let passes = settings
        .steady
        .map_or(settings.repeat.max(1), |c| c.max_rounds);
    let reps = if settings.steady.is_some() {
        format!("at most {passes} steady-state rounds")
    } else {
        format!("{passes} repetition{}", if passes == 1 { "" } else { "s" })
    };
    let plan = format!(
        "{n} test{} x {reps}{}",
        if n == 1 { "" } else { "s" },
        if targets > 1 {
            format!(" x {targets} targets")
        } else {
            String::new()
        }
    );
    if let Some(d) = s.soak {
        return format!(
            "estimate: {plan} per pass, about {} a pass; --duration runs passes for {}",
            span(s.total()),
            span(d.as_secs_f64())
        );
    }
    let basis = match (settings.runtime_ns, settings.time_based) {
        _ if settings.steady.is_some() => "each round's length".to_string(),
        (Some(ns), true) => format!(
            "each repetition lasting {}, --time-based",
            span(ns as f64 / 1e9)
        ),
        (Some(ns), false) => format!(
            "each repetition's file at an assumed {}, capped at {}",
            rate_text(ASSUMED_BPS),
            span(ns as f64 / 1e9)
        ),
        (None, _) => format!(
            "each repetition's file at an assumed {}",
            rate_text(ASSUMED_BPS)
        ),
    };
    format!(
        "estimate: {plan}, about {} ({basis}){}",
        span(s.total()),
        if n > 1 && settings.steady.is_none() {
            "; measured again after the first test"
        } else {
            ""
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn work(bytes: f64, cap: Option<f64>) -> Work {
        Work {
            bytes,
            cap,
            time_based: false,
            ramp: 0.0,
            reps: 3.0,
            targets: 1.0,
        }
    }

    #[test]
    fn spans_read_as_people_write_them() {
        assert_eq!(span(0.4), "0s");
        assert_eq!(span(45.0), "45s");
        assert_eq!(span(200.0), "3m20s");
        assert_eq!(span(3900.0), "1h05m");
        assert_eq!(span(-3.0), "0s");
    }

    #[test]
    fn a_test_costs_its_bytes_at_the_speed_or_its_cap() {
        let m = Model {
            bps: 100e6,
            ..ASSUMED
        };
        // 100 MB at 100 MB/s, 3 repetitions: 3 x (1 s + overhead).
        let w = work(100e6, None);
        assert!((w.seconds(&m) - 3.0 * (1.0 + OVERHEAD_S)).abs() < 1e-9);
        // A 2 s cap holds a slow device's repetition to 2 s.
        let w = work(1e9, Some(2.0));
        assert!((w.seconds(&m) - 3.0 * (2.0 + OVERHEAD_S)).abs() < 1e-9);
        // --time-based lasts the cap whatever the speed.
        let w = Work {
            time_based: true,
            ..work(1e3, Some(2.0))
        };
        assert!((w.seconds(&m) - 3.0 * (2.0 + OVERHEAD_S)).abs() < 1e-9);
    }

    #[test]
    fn the_fit_finds_the_fixed_cost_and_the_speed() {
        // 0.25 s a repetition, and 100 MB/s.
        let at = |bytes: f64| (work(bytes, None), 3.0 * (0.25 + bytes / 100e6));
        // Small files only: the speed stays the assumed one, the rest is the fixed cost.
        let m = fit(&[at(65536.0), at(65536.0)], ASSUMED);
        assert!(!m.measured);
        assert_eq!(m.bps, ASSUMED_BPS);
        let want = 0.25 + 65536.0 / 100e6 - 65536.0 / ASSUMED_BPS;
        assert!((m.overhead - want).abs() < 1e-9, "{m:?}");
        // Then files large enough to tell the speed, one of them slowed by something else.
        let mut done = vec![at(65536.0), at(1e6), at(100e6), at(200e6)];
        done.push((work(50e6, None), 30.0));
        let m = fit(&done, m);
        assert!(m.measured);
        // The speed from the large files with the fixed cost known so far (a little off
        // 0.25 s: the assumed speed still counted in it), the slow one outvoted.
        assert!((m.bps - 100e6).abs() < 1e6, "{m:?}");
        // A repetition that lasted its cap tells the fixed cost only.
        let capped = Work {
            time_based: true,
            ..work(1e6, Some(1.0))
        };
        let m = fit(&[(capped, 3.0 * 1.2)], ASSUMED);
        assert!((m.overhead - 0.2).abs() < 1e-9, "{m:?}");
        assert_eq!(m.bps, ASSUMED_BPS);
    }
}
