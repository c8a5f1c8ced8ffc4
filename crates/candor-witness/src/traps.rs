//! Traps of the host: conditions under which a figure is not what it seems although its
//! bytes add up. A loop device whose file sits in the host's page cache, a device that
//! answers faster than any storage could or than the ceiling it was given, a test bound by
//! candor's own CPU, writeback of earlier pages inside the timed region, a filesystem that
//! stores fewer or more bytes than it was given. Each is found from the facts alone (pure)
//! and named with one sentence; docs/witness.md, "Traps", gives the reasons for the
//! thresholds.

use crate::explain::pct;
use crate::operations::quantile_ns;
use crate::rules::Attribution;
use candor_model::units::{format_bytes, ByteStyle};
use candor_model::{Facts, LoopFacts, Operations, Trap, TrapKind, Verdict};

/// A median request served faster than this is memory, not storage: the fastest storage
/// media answer a 4 KiB read in about 10 us at the device (3D XPoint; NAND flash 50-100
/// us), and the block layer adds to that; RAM disks and a loop device over a cached file
/// answer in a few.
pub const MEMORY_SPEED_US: f64 = 5.0;
/// A figure more than this much above its --device-spec ceiling is beyond the device.
pub const SPEC_MARGIN: f64 = 1.10;
/// CPU-bound: candor's threads on the CPU at least this share of the timed region...
pub const CPU_BUSY_MIN: f64 = 0.90;
/// ...while the device was busy at most this share of it.
pub const DEVICE_BUSY_MAX: f64 = 0.70;
/// Writes of this much or more inside a read test's timed region are writeback of pages
/// dirtied before it (an ext4 or xfs journal commit of a read test's atime is a few KiB).
pub const EARLIER_WRITEBACK_MIN: u64 = 1 << 20;
/// The filesystem stored fewer (more) bytes than it was given when its device writes,
/// once everything is on disk, are below (above) these shares of the application's.
pub const STORED_FEWER_MAX: f64 = 0.90;
pub const STORED_MORE_MIN: f64 = 1.20;

/// The device writes a write test caused, over the bytes it gave (None when it wrote
/// nothing or the device writes are not known to be its own). The bytes given are the
/// application's, or fewer when it wrote the same pages again while they were still dirty
/// (a copy that starts its file over, as UnixBench's fstime does): the kernel counts a page
/// once each time it goes dirty (the process's `write_bytes`), and only those can reach the
/// device. A filesystem that compresses or keeps holes is given every page once.
pub fn stored_ratio(f: &Facts, a: &Attribution) -> Option<f64> {
    let given = given_bytes(f);
    (given > 0 && a.own_write_total > 0).then(|| a.own_write_total as f64 / given as f64)
}

/// The bytes a write test gave the filesystem to store: the application's, or the bytes it
/// dirtied when fewer (pages written again while still dirty went to the device once).
pub fn given_bytes(f: &Facts) -> u64 {
    let dirtied = f
        .own_total
        .as_ref()
        .map(|p| p.write_bytes)
        .filter(|&d| d > 0);
    dirtied.map_or(f.app_write, |d| d.min(f.app_write))
}

/// The loop device's file lies on a filesystem that keeps its data in memory (tmpfs): its
/// storage is memory, whatever its requests took.
pub fn loop_in_memory(l: &LoopFacts) -> bool {
    l.backing_fs
        .as_deref()
        .is_some_and(crate::host::is_memory_fs)
}

/// The loop device's requests do not reach a disk as they are: it goes through the host's
/// page cache (no direct I/O to its file), or its file is in memory.
pub fn loop_through_memory(l: &LoopFacts) -> bool {
    !l.direct_io || loop_in_memory(l)
}

/// The share of the bytes that went to a loop device that the disk under its file moved
/// in the timed region; None when the loop device uses direct I/O to a file on a disk (its
/// requests reach the disk as they are) or the disk's counters are unknown. The disk's
/// counters hold every process's traffic, so this is an upper bound. A file in memory has
/// no disk: the share is 0.
pub fn loop_disk_share(f: &Facts, own_read: u64, own_write_window: u64) -> Option<f64> {
    let l = f.loop_device.as_ref().filter(|l| loop_through_memory(l))?;
    let b = l.backing_window?;
    let through = own_read.min(f.app_read) + own_write_window.min(f.app_write);
    if through == 0 {
        return None;
    }
    let disk = b.read_bytes.min(own_read) + b.write_bytes.min(own_write_window);
    Some((disk as f64 / through as f64).min(1.0))
}

fn hb(b: u64) -> String {
    format_bytes(b, ByteStyle::WITNESS)
}

fn trap(kind: TrapKind, value: Option<f64>, sentence: String) -> Trap {
    Trap {
        kind,
        value,
        sentence,
    }
}

/// Every trap the facts show, in the order the explanation gives them.
pub fn find(f: &Facts, a: &Attribution, verdict: Verdict, ops: Option<&Operations>) -> Vec<Trap> {
    let mut out = Vec::new();
    if let Some(t) = loop_device(f, a) {
        out.push(t);
    }
    if let Some(t) = faster_than_device(f, ops) {
        out.push(t);
    }
    if let Some(t) = faster_than_spec(f, verdict) {
        out.push(t);
    }
    if let Some(t) = cpu_bound(f, verdict) {
        out.push(t);
    }
    if let Some(t) = earlier_writeback(f) {
        out.push(t);
    }
    if let Some(t) = stored(f, a) {
        out.push(t);
    }
    out
}

fn loop_device(f: &Facts, a: &Attribution) -> Option<Trap> {
    let l = f.loop_device.as_ref()?;
    let on = l
        .backing_disk
        .as_deref()
        .map(|d| format!(" (on {d})"))
        .unwrap_or_default();
    let cached = l
        .backing_resident
        .filter(|_| l.backing_pages > 0)
        .map(|r| r as f64 / l.backing_pages as f64);
    let cached_words = cached
        .filter(|c| *c > 0.0)
        .map(|c| {
            format!(
                ", {} of it in the host's page cache when the test began",
                pct(c)
            )
        })
        .unwrap_or_default();
    let mut s = format!(
        "The target's device {} is a loop device over the file {}{on}",
        l.device, l.backing_file
    );
    if !loop_in_memory(l) {
        s.push_str(&cached_words);
    } else {
        let fs = l.backing_fs.as_deref().unwrap_or("memory");
        let took = f
            .requests
            .as_ref()
            .and_then(|r| {
                let (what, st) = if f.app_write > f.app_read {
                    ("write", &r.write)
                } else {
                    ("read", &r.read)
                };
                let p50 = quantile_ns(&st.latency, 0.5)? / 1000.0;
                Some(format!(
                    " (its {what} requests took {p50:.1} us at the median: the loop device's own work, not a disk's)"
                ))
            })
            .unwrap_or_default();
        s.push_str(&format!(
            ", which lies on {fs}: its storage is memory, so every byte it moved was memory's, whatever its requests took{took}."
        ));
        return Some(trap(TrapKind::LoopDevice, cached, s));
    }
    if l.direct_io {
        s.push_str(": it uses direct I/O, so its requests reach the disk as a disk's own would.");
        return Some(trap(TrapKind::LoopDevice, cached, s));
    }
    s.push_str(" and does not use direct I/O");
    match (loop_disk_share(f, a.own_read, a.own_write_window), l.backing_window) {
        (Some(share), Some(b)) if share < crate::rules::DEVICE_SHARE_MIN => {
            let moved = a.own_read.min(f.app_read) + a.own_write_window.min(f.app_write);
            s.push_str(&format!(
                ": of the {} it moved in the timed region, the disk under its file moved {}, the rest was the host's page cache, so its \"device\" speed is partly memory speed.",
                hb(moved),
                hb(b.read_bytes.min(a.own_read) + b.write_bytes.min(a.own_write_window))
            ));
        }
        _ => s.push_str(
            ": its file's pages can sit in the host's page cache, so its speed can be memory speed (candor lab sets direct I/O on its loop devices).",
        ),
    }
    Some(trap(TrapKind::LoopDevice, cached, s))
}

fn faster_than_device(f: &Facts, ops: Option<&Operations>) -> Option<Trap> {
    faster_reads(f, ops).or_else(|| faster_writes(f, ops))
}

/// The operations of one direction: the whole when the test goes that way only, its part
/// of a test that reads and writes.
fn of_direction<'a>(o: Option<&'a Operations>, dir: &str) -> Option<&'a Operations> {
    let o = o?;
    if o.direction == dir {
        Some(o)
    } else if o.direction == "both" {
        if dir == "read" {
            o.reads.as_deref()
        } else {
            o.writes.as_deref()
        }
    } else {
        None
    }
}

/// Reads whose requests (eBPF), or whose O_DIRECT operations (each one its own request),
/// completed faster than storage answers.
fn faster_reads(f: &Facts, ops: Option<&Operations>) -> Option<Trap> {
    let o = of_direction(ops, "read");
    let (p50, whose) = match f.requests.as_ref() {
        Some(r) if r.read.count > 0 => (
            quantile_ns(&r.read.latency, 0.5)? / 1000.0,
            "The device's read requests took",
        ),
        Some(_) => return None,
        None if f.direct => (
            o?.op_p50_us,
            "The O_DIRECT reads, each a request of its own, took",
        ),
        None => return None,
    };
    if f.app_read == 0 || ops.is_some_and(|o| o.direction == "write") {
        return None;
    }
    (p50 > 0.0 && p50 < MEMORY_SPEED_US).then(|| {
        trap(
            TrapKind::FasterThanDevice,
            Some(p50),
            format!(
                "{whose} {p50:.1} us at the median, faster than any storage device answers: memory answered them (a RAM disk, a loop device over a cached file, or a cache of the host's)."
            ),
        )
    })
}

/// O_DIRECT and O_SYNC writes, each of which returns once its own request has completed,
/// whose requests (eBPF), or the writes themselves, completed faster than storage takes a
/// write, even into its own write cache. Buffered writes are copies into the page cache
/// and are judged otherwise (operations.rs).
fn faster_writes(f: &Facts, ops: Option<&Operations>) -> Option<Trap> {
    let o = of_direction(ops, "write")?;
    let flag = match o.write_mode.as_deref() {
        Some("direct") => "O_DIRECT",
        Some("sync") => "O_SYNC",
        _ => return None,
    };
    let (p50, whose) = match f.requests.as_ref() {
        Some(r) if r.write.count > 0 => (
            quantile_ns(&r.write.latency, 0.5)? / 1000.0,
            "The device's write requests took".to_string(),
        ),
        Some(_) => return None,
        None => (
            o.op_p50_us,
            format!("The {flag} writes, each waiting for a request of its own, took"),
        ),
    };
    (p50 > 0.0 && p50 < MEMORY_SPEED_US).then(|| {
        trap(
            TrapKind::FasterThanDevice,
            Some(p50),
            format!(
                "{whose} {p50:.1} us at the median, faster than any storage device completes a write, even into its own write cache: memory took them (a RAM disk, a loop device over a cached file, or the host's cache under a virtual disk), so the figure is memory's, not storage's."
            ),
        )
    })
}

fn faster_than_spec(f: &Facts, verdict: Verdict) -> Option<Trap> {
    let c = f.ceiling?;
    if verdict != Verdict::Device || f.timed_seconds <= 0.0 {
        return None;
    }
    let reads = f.app_write == 0;
    let sequential = f.access == Some(candor_model::Access::Sequential);
    let (figure, ceiling, unit) = if sequential {
        let bps = f.headline_bps;
        let ceil = if reads { c.read_bps } else { c.write_bps }?;
        (bps, ceil, "B/s")
    } else {
        let iops = f.ops.as_ref()?.count as f64 / f.timed_seconds;
        let ceil = if reads { c.read_iops } else { c.write_iops }?;
        (iops, ceil, "IOPS")
    };
    if ceiling <= 0.0 || figure <= ceiling * SPEC_MARGIN {
        return None;
    }
    let shown = |x: f64| {
        if unit == "IOPS" {
            format!("{:.0} IOPS", x)
        } else {
            format!("{}/s", hb(x as u64))
        }
    };
    Some(trap(
        TrapKind::FasterThanSpec,
        Some(figure / ceiling),
        format!(
            "The figure, {}, is {:.1}x the ceiling given with --device-spec ({}): a cache below the filesystem (the host's or the device's) served part of it, or the ceiling is wrong.",
            shown(figure),
            figure / ceiling,
            shown(ceiling)
        ),
    ))
}

fn cpu_bound(f: &Facts, verdict: Verdict) -> Option<Trap> {
    if !matches!(verdict, Verdict::Device | Verdict::Mixed) {
        return None;
    }
    let cpu = f.cpu_seconds?;
    let threads = f.threads.max(1) as f64;
    if f.timed_seconds <= 0.0 || f.window_seconds <= 0.0 {
        return None;
    }
    let busy = cpu / (f.timed_seconds * threads);
    let device_busy = (f.device_window.io_ticks_ms as f64 / 1000.0 / f.window_seconds).min(1.0);
    (busy >= CPU_BUSY_MIN && device_busy <= DEVICE_BUSY_MAX).then(|| {
        trap(
            TrapKind::CpuBound,
            Some(busy.min(1.0)),
            format!(
                "candor's {} on the CPU {} of the time while the device was idle {} of it: the figure is bounded by the CPU (candor's and the kernel's work per operation), not by the device.",
                if threads > 1.0 { "threads were" } else { "thread was" },
                pct(busy.min(1.0)),
                pct(1.0 - device_busy)
            ),
        )
    })
}

fn earlier_writeback(f: &Facts) -> Option<Trap> {
    if f.app_write > 0 {
        return None;
    }
    let (bytes, whose) = match f.writeback_window {
        // eBPF: flushers writing files candor dirtied (an earlier test's).
        Some(wb) => (wb, "pages candor dirtied in an earlier test"),
        None => {
            // procfs: the device's writes beyond what other processes wrote meanwhile, up
            // to what was dirty when the test began.
            let dirty = f.dirty_at_begin?;
            let others = f.others_io.map_or(0, |o| o[1]);
            let w = f
                .device_window
                .write_bytes
                .saturating_sub(others)
                .min(dirty);
            (
                w,
                "pages dirtied before the test (by an earlier test or another process)",
            )
        }
    };
    (bytes >= EARLIER_WRITEBACK_MIN).then(|| {
        trap(
            TrapKind::EarlierWriteback,
            Some(bytes as f64),
            format!(
                "The device also wrote {} of {whose} inside the timed region: the reads shared it with that writeback.",
                hb(bytes)
            ),
        )
    })
}

fn stored(f: &Facts, a: &Attribution) -> Option<Trap> {
    let r = stored_ratio(f, a)?;
    if r < STORED_FEWER_MAX {
        Some(trap(
            TrapKind::StoredFewer,
            Some(r),
            format!(
                "The filesystem stored {} of the bytes it was given, once everything was on the device (compression, inline data, zeroes kept as holes, or pages written again before they were written back): the bytes it left out never had to reach the device, so the share of the writes in the timed region is counted against what it stored.",
                pct(r)
            ),
        ))
    } else if r > STORED_MORE_MIN {
        Some(trap(
            TrapKind::StoredMore,
            Some(r),
            format!(
                "The filesystem wrote {r:.2}x the bytes it was given (copy-on-write metadata, journal): the share of the writes in the timed region is counted against all it wrote."
            ),
        ))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use crate::rules::judge;
    use crate::testkit::{write_facts, MIB};
    use candor_model::Verdict;

    #[test]
    fn pages_written_again_while_dirty_are_not_bytes_left_out() {
        // A copy loop over a 2 MiB file: 1 GiB written, 3 MiB of pages went dirty (the
        // kernel wrote the file back once in the middle), 1 MiB of it reached the device in
        // the timed region and 3 MiB in all. That is the page cache's speed, not a
        // filesystem storing 0.3% of what it was given.
        let j = judge(&write_facts(1024 * MIB, MIB, 3 * MIB, 3 * MIB));
        assert!(
            j.traps
                .iter()
                .all(|t| t.kind != candor_model::TrapKind::StoredFewer),
            "{:?}",
            j.traps
        );
        assert_eq!(j.verdict, Verdict::Cache, "{}", j.explanation);
        // Compression is still seen: every page dirtied once, a tenth stored.
        let j = judge(&write_facts(64 * MIB, 6 * MIB, 6 * MIB, 64 * MIB));
        assert_eq!(j.traps[0].kind, candor_model::TrapKind::StoredFewer);
        // A 30 s copy loop over a 2 MiB file: 1 GiB written, the file written back every few
        // seconds (8 MiB dirtied), the journal doubling it (16 MiB stored, 8 in the window).
        // The window's writes stand for at most the 8 MiB dirtied, not half of the 1 GiB.
        let j = judge(&write_facts(1024 * MIB, 8 * MIB, 16 * MIB, 8 * MIB));
        assert!(
            j.flushed_in_window.is_some_and(|x| x < 0.01),
            "{:?}",
            j.flushed_in_window
        );
        assert_eq!(j.verdict, Verdict::Cache, "{}", j.explanation);
    }
}
