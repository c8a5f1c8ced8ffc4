//! Raw samples of the kernel's counters and the timeline sampler. A [`Sample`] is what the
//! counters said at one instant; the figures come from differences of two samples (the
//! begin, timed-end and finish samples of a repetition), and the timeline from the
//! differences of consecutive samples taken by a thread every `interval`.

use candor_model::TimelinePoint;
use candor_procfs::{self as procfs, DiskStat, MemInfo, PidIo};
use std::collections::BTreeMap;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The counters at one instant.
#[derive(Clone, Debug)]
pub struct Sample {
    pub at: Instant,
    /// The counted devices' diskstats, summed; None when none of them could be read.
    pub disk: Option<DiskStat>,
    pub io: Option<PidIo>,
    /// [`procfs::bytes_read`] just before this process's io was read: the part of rchar
    /// that is the witness's own reading.
    pub witness_read: u64,
    pub mem: Option<MemInfo>,
    pub vmstat: BTreeMap<String, i64>,
    pub pressure: Option<[u64; 2]>,
    /// Other processes' block-layer bytes by pid, with their parents (full samples only).
    pub others: Option<procfs::OthersIo>,
}

/// Sums the diskstats lines of the named devices; None when a name is missing (a device
/// that went away cannot be counted, and a partial sum would be wrong).
pub fn sum_devices(all: &[DiskStat], names: &[String]) -> Option<DiskStat> {
    if names.is_empty() {
        return None;
    }
    let mut sum: Option<DiskStat> = None;
    for n in names {
        let d = all.iter().find(|d| &d.name == n)?;
        match &mut sum {
            None => sum = Some(d.clone()),
            Some(s) => s.add(d),
        }
    }
    if let Some(s) = &mut sum {
        s.name = names.join("+");
    }
    sum
}

impl Sample {
    /// Reads every counter. `devices` are the diskstats names to sum (empty: none).
    pub fn take(devices: &[String]) -> Sample {
        Sample::read(devices, true)
    }

    /// The counters at this instant: with `full`, every one; without, the light sample of
    /// the timeline (device, process and dirty memory only).
    fn read(devices: &[String], full: bool) -> Sample {
        let disk = if devices.is_empty() {
            None
        } else {
            procfs::read_diskstats().and_then(|all| sum_devices(&all, devices))
        };
        let at = Instant::now();
        let witness_read = procfs::bytes_read();
        let io = procfs::read_self_io();
        let mem = procfs::read_meminfo();
        let (vmstat, pressure, others) = if full {
            (
                procfs::read_vmstat(),
                procfs::read_pressure(),
                procfs::read_others_io(std::process::id()),
            )
        } else {
            (BTreeMap::new(), None, None)
        };
        Sample {
            at,
            disk,
            io,
            witness_read,
            mem,
            vmstat,
            pressure,
            others,
        }
    }
}

/// Counter growth between two samples, when both had the counter.
pub fn disk_delta(a: &Sample, b: &Sample) -> Option<DiskStat> {
    Some(b.disk.as_ref()?.delta(a.disk.as_ref()?))
}
/// Growth of this process's io counters with the witness's own reads of the kernel's
/// counters taken out of rchar.
pub fn io_delta(a: &Sample, b: &Sample) -> Option<PidIo> {
    let mut d = b.io?.saturating_sub(a.io?);
    d.rchar = d
        .rchar
        .saturating_sub(b.witness_read.saturating_sub(a.witness_read));
    Some(d)
}
/// What the processes outside the job moved between two full samples: [read, write]
/// bytes. The job is candor's own process tree and `job`'s (the other ranks of an MPI job
/// on this machine) with their children. None when some process's counters were hidden
/// (not root): a partial sum cannot clear the device of foreign traffic.
pub fn others_delta(a: &Sample, b: &Sample, job: &[u32]) -> Option<[u64; 2]> {
    let (x, y) = (a.others.as_ref()?, b.others.as_ref()?);
    if !(x.complete && y.complete) {
        return None;
    }
    let mut roots = job.to_vec();
    roots.push(std::process::id());
    Some(procfs::others_delta(x, y, |p| !y.descends_from(p, &roots)))
}

/// What the other processes of the job (`job` and their children) moved between two full
/// samples; None without a job. They are the reader's own user's, so even without root
/// their counters are readable.
pub fn job_delta(a: &Sample, b: &Sample, job: &[u32]) -> Option<[u64; 2]> {
    if job.is_empty() {
        return None;
    }
    let (x, y) = (a.others.as_ref()?, b.others.as_ref()?);
    Some(procfs::others_delta(x, y, |p| y.descends_from(p, job)))
}
pub fn vmstat_delta(a: &Sample, b: &Sample) -> BTreeMap<String, i64> {
    b.vmstat
        .iter()
        .filter_map(|(k, v)| a.vmstat.get(k).map(|w| (k.clone(), v - w)))
        .collect()
}
pub fn pressure_delta(a: &Sample, b: &Sample) -> Option<[u64; 2]> {
    let (x, y) = (a.pressure?, b.pressure?);
    Some([y[0].saturating_sub(x[0]), y[1].saturating_sub(x[1])])
}

/// One timeline point from two consecutive samples; `origin` is the begin of the test.
pub fn point(origin: Instant, a: &Sample, b: &Sample) -> TimelinePoint {
    let dt = b.at.saturating_duration_since(a.at).as_secs_f64();
    let rate = |bytes: u64| if dt > 0.0 { bytes as f64 / dt } else { 0.0 };
    let d = disk_delta(a, b);
    let io = io_delta(a, b);
    TimelinePoint {
        t: b.at.saturating_duration_since(origin).as_secs_f64(),
        device_read_bps: rate(d.as_ref().map_or(0, DiskStat::read_bytes)),
        device_write_bps: rate(d.as_ref().map_or(0, DiskStat::write_bytes)),
        app_read_bps: rate(io.map_or(0, |i| i.rchar)),
        app_write_bps: rate(io.map_or(0, |i| i.wchar)),
        dirty_bytes: b.mem.map_or(0, |m| m.dirty),
    }
}

/// The most points one repetition's timeline keeps (an hour at the default 100 ms would be
/// 36,000); beyond it, neighbouring points are merged two by two.
pub const MAX_POINTS: usize = 2048;

/// Merges neighbouring points two by two: the rates of a merged point are the averages
/// weighted by the length of each interval (so the bytes they stand for are unchanged), its
/// time and dirty memory those of the later point.
pub fn halve(points: &[TimelinePoint]) -> Vec<TimelinePoint> {
    let mut out = Vec::with_capacity(points.len().div_ceil(2));
    let mut prev_t = 0.0;
    for pair in points.chunks(2) {
        let last = &pair[pair.len() - 1];
        let span = last.t - prev_t;
        let mut m = last.clone();
        if span > 0.0 {
            let mut t0 = prev_t;
            let (mut dr, mut dw, mut ar, mut aw) = (0.0, 0.0, 0.0, 0.0);
            for p in pair {
                let dt = p.t - t0;
                dr += p.device_read_bps * dt;
                dw += p.device_write_bps * dt;
                ar += p.app_read_bps * dt;
                aw += p.app_write_bps * dt;
                t0 = p.t;
            }
            m.device_read_bps = dr / span;
            m.device_write_bps = dw / span;
            m.app_read_bps = ar / span;
            m.app_write_bps = aw / span;
        }
        prev_t = last.t;
        out.push(m);
    }
    out
}

/// What the timeline thread hands back when stopped.
#[derive(Clone, Debug, Default)]
pub struct Timeline {
    pub points: Vec<TimelinePoint>,
    /// Highest Dirty seen (bytes), including the first and last samples.
    pub dirty_peak: u64,
}

/// A thread sampling every `interval` until stopped.
pub struct Sampler {
    origin: Instant,
    stop: Option<mpsc::Sender<()>>,
    /// The thread returns its timeline and its latest sample.
    handle: Option<JoinHandle<(Timeline, Sample)>>,
}

impl Sampler {
    /// Starts sampling from `first` (the begin sample). A zero interval disables the thread.
    pub fn start(first: &Sample, devices: Vec<String>, interval: Duration) -> Sampler {
        if interval.is_zero() {
            return Sampler {
                origin: first.at,
                stop: None,
                handle: None,
            };
        }
        let (tx, rx) = mpsc::channel::<()>();
        let origin = first.at;
        let mut prev = first.clone();
        let spawned = std::thread::Builder::new()
            .name("candor-witness".into())
            .spawn(move || {
                let mut tl = Timeline {
                    points: Vec::new(),
                    dirty_peak: prev.mem.map_or(0, |m| m.dirty),
                };
                let mut next = origin + interval;
                loop {
                    let wait = next.saturating_duration_since(Instant::now());
                    match rx.recv_timeout(wait) {
                        Err(mpsc::RecvTimeoutError::Timeout) => {}
                        // Stopped (or the watch was dropped): the caller takes its own last sample.
                        _ => return (tl, prev),
                    }
                    let s = Sample::read(&devices, false);
                    tl.dirty_peak = tl.dirty_peak.max(s.mem.map_or(0, |m| m.dirty));
                    tl.points.push(point(origin, &prev, &s));
                    prev = s;
                    if tl.points.len() >= MAX_POINTS {
                        tl.points = halve(&tl.points);
                    }
                    // Keep a fixed cadence; if sampling fell behind, skip missed ticks.
                    next += interval;
                    let now = Instant::now();
                    while next <= now {
                        next += interval;
                    }
                }
            });
        match spawned {
            Ok(h) => Sampler {
                origin,
                stop: Some(tx),
                handle: Some(h),
            },
            // No thread (resource limits): the test goes on without a timeline.
            Err(_) => Sampler {
                origin,
                stop: None,
                handle: None,
            },
        }
    }

    /// Stops the thread and returns what it saw; the last partial interval is closed with
    /// `last` so the timeline reaches the end of the timed region.
    pub fn stop(&mut self, last: &Sample) -> Timeline {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        let (mut tl, prev) = match self.handle.take().map(JoinHandle::join) {
            Some(Ok(r)) => r,
            _ => return Timeline::default(),
        };
        // Close the last partial interval, so that the timeline's bytes add up to the
        // window's (a zero-length interval has no rate).
        if last.at > prev.at {
            tl.points.push(point(self.origin, &prev, last));
        }
        tl.dirty_peak = tl.dirty_peak.max(last.mem.map_or(0, |m| m.dirty));
        tl
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn disk(name: &str, rs: u64, ws: u64) -> DiskStat {
        DiskStat {
            name: name.into(),
            read_sectors: rs,
            write_sectors: ws,
            ..Default::default()
        }
    }

    #[test]
    fn sums_only_named_devices_and_refuses_missing_ones() {
        let all = vec![
            disk("vda", 10, 20),
            disk("loop0", 1, 2),
            disk("sdb", 100, 200),
        ];
        let s = sum_devices(&all, &["vda".into(), "sdb".into()]).expect("sum");
        assert_eq!((s.read_sectors, s.write_sectors), (110, 220));
        assert_eq!(s.name, "vda+sdb");
        assert!(sum_devices(&all, &["vda".into(), "gone".into()]).is_none());
        assert!(sum_devices(&all, &[]).is_none());
    }

    #[test]
    fn point_turns_two_samples_into_rates() {
        let t0 = Instant::now();
        let a = Sample {
            at: t0,
            disk: Some(disk("loop0", 0, 0)),
            io: Some(PidIo::default()),
            witness_read: 0,
            mem: None,
            vmstat: BTreeMap::new(),
            pressure: Some([10, 5]),
            others: None,
        };
        let b = Sample {
            at: t0 + Duration::from_millis(500),
            disk: Some(disk("loop0", 2048, 4096)),
            io: Some(PidIo {
                rchar: (1 << 20) + 300,
                ..Default::default()
            }),
            // 300 bytes of rchar were the witness reading /proc.
            witness_read: 300,
            mem: Some(MemInfo {
                dirty: 8192,
                ..Default::default()
            }),
            vmstat: BTreeMap::new(),
            pressure: Some([30, 5]),
            others: None,
        };
        let p = point(t0, &a, &b);
        assert!((p.t - 0.5).abs() < 1e-9);
        assert!((p.device_read_bps - 2048.0 * 512.0 / 0.5).abs() < 1e-6);
        assert!((p.device_write_bps - 4096.0 * 512.0 / 0.5).abs() < 1e-6);
        assert!((p.app_read_bps - 2.0 * (1 << 20) as f64).abs() < 1e-6);
        assert_eq!(p.dirty_bytes, 8192);
        assert_eq!(pressure_delta(&a, &b), Some([20, 0]));
    }

    #[test]
    fn halving_keeps_the_bytes() {
        let p = |t: f64, w: f64, dirty: u64| TimelinePoint {
            t,
            device_write_bps: w,
            app_write_bps: 2.0 * w,
            dirty_bytes: dirty,
            ..Default::default()
        };
        // 0.1 s at 100 B/s, 0.3 s at 300 B/s, then an odd point out: 0.1 s at 50 B/s.
        let pts = vec![p(0.1, 100.0, 1), p(0.4, 300.0, 2), p(0.5, 50.0, 3)];
        let h = halve(&pts);
        assert_eq!(h.len(), 2);
        assert!((h[0].t - 0.4).abs() < 1e-12);
        // (10 + 90) bytes over 0.4 s.
        assert!((h[0].device_write_bps - 250.0).abs() < 1e-9);
        assert!((h[0].app_write_bps - 500.0).abs() < 1e-9);
        assert_eq!(h[0].dirty_bytes, 2);
        assert!((h[1].device_write_bps - 50.0).abs() < 1e-9);
        assert_eq!(h[1].dirty_bytes, 3);
    }

    #[test]
    fn the_sampler_ticks_and_stops() {
        let first = Sample::take(&[]);
        let mut s = Sampler::start(&first, Vec::new(), Duration::from_millis(20));
        std::thread::sleep(Duration::from_millis(130));
        let last = Sample::take(&[]);
        let tl = s.stop(&last);
        // Judged against the time that really passed until the thread stopped (a loaded
        // machine oversleeps, and the thread ticks on until it is told to stop): the k-th
        // tick comes no sooner than k intervals after the start (missed ticks are skipped,
        // never bunched), so there are at most elapsed / 20 ms of them, plus the point that
        // closes the window; at least one tick came in 130 ms.
        let elapsed = first.at.elapsed().as_secs_f64();
        let n = tl.points.len();
        let most = (elapsed / 0.020) as usize + 1;
        assert!(
            (2..=most).contains(&n),
            "{n} points in {elapsed:.3} s at 20 ms: {:?}",
            tl.points.iter().map(|p| p.t).collect::<Vec<_>>()
        );
        for (k, p) in tl.points[..n - 1].iter().enumerate() {
            let due = (k + 1) as f64 * 0.020;
            assert!(p.t >= due - 1e-3, "tick {k} at {} s, due at {due} s", p.t);
        }
        assert!(tl.points.windows(2).all(|w| w[0].t < w[1].t));
        let mut off = Sampler::start(&first, Vec::new(), Duration::ZERO);
        assert!(off.stop(&last).points.is_empty());
    }
}
