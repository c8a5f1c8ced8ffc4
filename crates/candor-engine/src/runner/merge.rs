//! The threads' figures into one repetition: the headline span runs from the earliest
//! thread start to the latest thread end (iozone's "parent sees"); each thread's own rate is
//! kept for the thread aggregate. Pure: clock values in, figures out.

use super::worker::WorkerOut;
use crate::engines::{EngineError, ThreadStats};

/// A repetition's figures, before the witness and the run's clock are added.
pub(super) struct Merged {
    pub stats: ThreadStats,
    /// (bytes, seconds) per thread.
    pub threads: Vec<(u64, f64)>,
    /// The earliest thread start (clock value).
    pub start: u64,
    /// The headline span, the I/O alone, and the flush after it, in seconds.
    pub seconds: f64,
    pub io_seconds: f64,
    pub flush_seconds: f64,
    pub close_seconds: f64,
    /// Whether every thread covered its whole file at least once.
    pub all_ran: bool,
    /// With `--cpus`: where each thread ran.
    pub pinned: Vec<candor_model::Pinned>,
}

/// Merges a record test's threads; the first thread's error, if any, instead.
/// `release` stands in for the start when no thread started.
pub(super) fn records(
    outs: Vec<WorkerOut>,
    fsync_in_timing: bool,
    close_in_timing: bool,
    release: u64,
) -> Result<Merged, EngineError> {
    let start = outs
        .iter()
        .map(|o| o.t_start)
        .filter(|&t| t > 0)
        .min()
        .unwrap_or(release);
    let mut first_error = None;
    let mut stats = ThreadStats::default();
    let mut threads = Vec::with_capacity(outs.len());
    let mut io_end = start;
    let mut flush_end = start;
    let mut headline_end = start;
    let mut close_max = 0u64;
    let mut all_ran = true;
    let mut pinned = Vec::new();
    for o in outs {
        pinned.extend(o.pinned);
        if first_error.is_none() {
            first_error = o.error;
        }
        stats += &o.stats;
        all_ran &= o.ran_all;
        let io = o.t_io_end.max(o.t_start);
        let flushed = io + o.flush_ns;
        let close = if close_in_timing { o.close_ns } else { 0 };
        let head = if fsync_in_timing { flushed } else { io } + close;
        io_end = io_end.max(io);
        flush_end = flush_end.max(flushed);
        headline_end = headline_end.max(head);
        close_max = close_max.max(o.close_ns);
        let secs = (head - o.t_start.min(head)) as f64 / 1e9;
        threads.push((o.stats.bytes(), secs));
    }
    if let Some(e) = first_error {
        return Err(e);
    }
    Ok(Merged {
        stats,
        threads,
        start,
        seconds: (headline_end - start) as f64 / 1e9,
        io_seconds: (io_end - start) as f64 / 1e9,
        flush_seconds: (flush_end - io_end) as f64 / 1e9,
        close_seconds: close_max as f64 / 1e9,
        all_ran,
        pinned,
    })
}

/// One thread of a special workload: its statistics, the clock at its start and end, the
/// part of it spent flushing, its error, and where it ran when pinned (`--cpus`).
pub(super) type SpecialOut = (
    ThreadStats,
    u64,
    u64,
    u64,
    Option<EngineError>,
    Option<candor_model::Pinned>,
);

/// Merges a special workload's threads (whose passes include their flush).
pub(super) fn special(outs: Vec<SpecialOut>) -> Result<Merged, EngineError> {
    let mut stats = ThreadStats::default();
    let mut threads = Vec::with_capacity(outs.len());
    let mut first = u64::MAX;
    let mut last = 0;
    let mut flush_max = 0;
    let mut pinned = Vec::new();
    for (st, t0, t1, flush, err, pin) in outs {
        if let Some(e) = err {
            return Err(e);
        }
        pinned.extend(pin);
        first = first.min(t0);
        last = last.max(t1);
        flush_max = flush_max.max(flush);
        threads.push((st.bytes(), (t1 - t0) as f64 / 1e9));
        stats += &st;
    }
    let seconds = last.saturating_sub(first) as f64 / 1e9;
    Ok(Merged {
        stats,
        threads,
        start: first,
        seconds,
        io_seconds: (seconds - flush_max as f64 / 1e9).max(0.0),
        flush_seconds: flush_max as f64 / 1e9,
        close_seconds: 0.0,
        all_ran: true,
        pinned,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(bytes: u64, start: u64, io_end: u64, flush: u64, close: u64) -> WorkerOut {
        WorkerOut {
            stats: ThreadStats {
                write_bytes: bytes,
                ops: bytes / 4096,
                ..Default::default()
            },
            t_start: start,
            t_io_end: io_end,
            flush_ns: flush,
            close_ns: close,
            error: None,
            ran_all: true,
            pinned: None,
        }
    }

    #[test]
    fn the_headline_spans_the_earliest_start_to_the_latest_end() {
        let outs = vec![
            out(4096 * 10, 1_000, 3_000, 500, 100),
            out(4096 * 20, 2_000, 5_000, 1_000, 50),
        ];
        let m = records(outs, true, false, 0).unwrap();
        assert_eq!(m.start, 1_000);
        // The second thread ends last: I/O at 5000, flushed at 6000.
        assert_eq!(m.seconds, 5_000e-9);
        assert_eq!(m.io_seconds, 4_000e-9);
        assert_eq!(m.flush_seconds, 1_000e-9);
        assert_eq!(m.close_seconds, 100e-9);
        assert_eq!(m.stats.bytes(), 4096 * 30);
        assert_eq!(
            m.threads,
            vec![(4096 * 10, 2_500e-9), (4096 * 20, 4_000e-9)]
        );
        // Without the flush in the headline, and with the close in it.
        let outs = vec![out(4096, 1_000, 3_000, 500, 100)];
        let m = records(outs, false, true, 0).unwrap();
        assert_eq!(m.seconds, 2_100e-9);
    }

    #[test]
    fn the_first_error_wins_and_no_start_falls_back_to_the_release() {
        let mut a = out(0, 0, 0, 0, 0);
        a.error = Some(EngineError::new(
            "open",
            std::path::Path::new("a"),
            None,
            std::io::Error::other("first"),
        ));
        let mut b = out(0, 0, 0, 0, 0);
        b.error = Some(EngineError::new(
            "open",
            std::path::Path::new("b"),
            None,
            std::io::Error::other("second"),
        ));
        let e = records(vec![a, b], true, false, 7).err().unwrap();
        assert_eq!(e.path, "a");
        let m = records(vec![out(0, 0, 0, 0, 0)], true, false, 7).unwrap();
        assert_eq!((m.start, m.seconds), (7, 0.0));
    }
}
