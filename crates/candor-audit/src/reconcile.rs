//! Claimed against observed: which phases each claim is about, the observed throughput two
//! ways (bytes over the time inside the I/O calls; bytes over the phase's wall time from
//! open to close, flush and close included), their ratio to the claim, and the reason in
//! words when they differ by more than 5%.

use crate::claims::{Claim, Direction};
use crate::phase::Phase;
use candor_model::units::{format_bytes, ByteStyle};
use candor_procfs::DiskStat;
use std::collections::{BTreeMap, BTreeSet};

/// Claimed and observed within this share are said to agree.
pub const AGREEMENT: f64 = 0.05;

/// One line of the reconciliation table: a schema type of the result model, so that the
/// reports read the saved audit as the audit wrote it.
pub use candor_model::audit::ReconciliationRow as Row;

/// Which phases each claim is about, claim by claim (indexes into `phases`).
///
/// - A claim that names its file (fio's `filename`, dd's `of=`/`if=`) takes the phases on
///   that file in its direction; fio jobs without a filename use fio's "job.N.M" names.
///   Several claims on the same file (fio numjobs without group reporting) take the
///   processes in turn.
/// - Otherwise (iozone, and claims flagged `phases_in_order`: tools that run one test after
///   another on the same files, as IOR, bonnie++ and fstime do), claims take the phases in
///   program order: each the next phase in its direction (on its file, when it names one)
///   that moved at least half the claimed file, `threads` of them at a time.
/// - Metadata claims (flagged `metadata`) take no phase: they are checked against the calls
///   the kernel counted (`checks::metadata_row`).
pub fn match_phases(claims: &[Claim], phases: &[Phase], cwd: &str) -> Vec<Vec<usize>> {
    let mut used: BTreeSet<usize> = BTreeSet::new();
    let mut out = vec![Vec::new(); claims.len()];
    let dir_ok = |c: &Claim, p: &Phase| match c.direction {
        Direction::Read => p.read_bytes > 0,
        Direction::Write => p.write_bytes > 0,
        Direction::Mixed | Direction::Unknown => p.bytes() > 0,
    };
    // Claims that name their file.
    let mut turn: BTreeMap<String, usize> = BTreeMap::new();
    for (ci, c) in claims.iter().enumerate() {
        if c.program == "iozone" || in_order(c) || is_metadata(c) {
            // iozone runs every test on the same file(s): program order decides, below.
            continue;
        }
        let named: Vec<usize> = phases
            .iter()
            .enumerate()
            .filter(|(_, p)| dir_ok(c, p) && file_matches(c, p, cwd))
            .map(|(i, _)| i)
            .collect();
        if named.is_empty() {
            continue;
        }
        let pids: Vec<u32> = named
            .iter()
            .map(|&i| phases[i].pid)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let same = claims
            .iter()
            .filter(|o| o.test == c.test && o.direction == c.direction && o.filename == c.filename)
            .count();
        let take: Vec<usize> = if same > 1 && pids.len() >= same {
            // One process per claim, in turn.
            let k = turn
                .entry(format!("{}|{:?}", c.test, c.direction))
                .or_insert(0);
            let pid = pids[*k % pids.len()];
            *k += 1;
            named
                .into_iter()
                .filter(|&i| phases[i].pid == pid)
                .collect()
        } else {
            named
        };
        used.extend(take.iter().copied());
        out[ci] = take;
    }
    // The rest in program order.
    let mut next = 0;
    for (ci, c) in claims.iter().enumerate() {
        if !out[ci].is_empty() || is_metadata(c) {
            continue;
        }
        let want = c.threads.max(1) as usize;
        let min_bytes = c.file_size.map(|f| f / 2).unwrap_or(1);
        let mut got = Vec::new();
        let mut i = next;
        while i < phases.len() && got.len() < want {
            let p = &phases[i];
            let moved = match c.direction {
                Direction::Read => p.read_bytes,
                Direction::Write => p.write_bytes,
                _ => p.bytes(),
            };
            let on_its_file = (c.program != "iozone" && !in_order(c))
                || c.filename.is_none()
                || file_matches(c, p, cwd);
            if !used.contains(&i) && on_its_file && dir_ok(c, p) && moved >= min_bytes.max(1) {
                got.push(i);
                used.insert(i);
            }
            i += 1;
        }
        if !got.is_empty() {
            next = got.last().map_or(next, |&l| l + 1);
            if c.threads > 1 {
                // Parallel phases of one test start together: back up so the next claim
                // can also use phases that opened before this one's last.
                next = got[0] + 1;
            }
        }
        out[ci] = got;
    }
    out
}

fn in_order(c: &Claim) -> bool {
    c.flags.iter().any(|f| f == "phases_in_order")
}

/// A figure of operations per second that moves no bytes (mdtest, bonnie++'s file tests).
pub fn is_metadata(c: &Claim) -> bool {
    c.flags.iter().any(|f| f == "metadata")
}

pub(crate) fn file_matches(c: &Claim, p: &Phase, cwd: &str) -> bool {
    match &c.filename {
        Some(f) => {
            // fio allows several files separated by ':'.
            f.split(':').any(|f| {
                let abs = if f.starts_with('/') {
                    f.to_string()
                } else {
                    format!("{}/{}", cwd.trim_end_matches('/'), f)
                };
                match abs.strip_suffix('*') {
                    // iozone's "iozone.DUMMY.*" default names in throughput mode.
                    Some(prefix) => {
                        p.path.starts_with(prefix) || p.path.contains(&f[..f.len() - 1])
                    }
                    None => p.path == abs || p.path == f,
                }
            })
        }
        None if c.program == "fio" => {
            let base = p.path.rsplit('/').next().unwrap_or("");
            base.strip_prefix(&format!("{}.", c.test))
                .is_some_and(|rest| rest.split('.').all(|n| n.parse::<u32>().is_ok()))
        }
        None => false,
    }
}

/// Builds the table. `device_window(dev, from, to)` gives the device traffic of the device
/// with that number over a window (None when it has no block device or was not sampled).
pub fn reconcile(
    claims: &[Claim],
    phases: &[Phase],
    cwd: &str,
    device_window: &dyn Fn(u64, f64, f64) -> Option<(String, DiskStat)>,
) -> Vec<Row> {
    let groups = match_phases(claims, phases, cwd);
    claims
        .iter()
        .zip(groups)
        .map(|(c, idx)| row(c, phases, idx, device_window))
        .collect()
}

fn row(
    c: &Claim,
    phases: &[Phase],
    idx: Vec<usize>,
    device_window: &dyn Fn(u64, f64, f64) -> Option<(String, DiskStat)>,
) -> Row {
    let mut r = Row {
        test: c.test.clone(),
        program: c.program.clone(),
        direction: c.direction,
        record_size: c.record_size,
        file_size: c.file_size,
        threads: c.threads,
        claimed_bps: c.claimed_bps,
        claimed_bytes: c.bytes,
        claimed_seconds: c.seconds,
        phases: idx.clone(),
        ..Default::default()
    };
    let sel: Vec<&Phase> = idx.iter().filter_map(|&i| phases.get(i)).collect();
    if sel.is_empty() {
        r.verdict = "unverified".into();
        r.explanation = "no file phase of the program matches this figure (the file was held open \
                         for less than one sampling period, or the program used no regular file)"
            .into();
        return r;
    }
    let moved = |p: &Phase| match c.direction {
        Direction::Read => p.read_bytes,
        Direction::Write => p.write_bytes,
        _ => p.bytes(),
    };
    let bytes: u64 = sel.iter().map(|p| moved(p)).sum();
    let open = sel.iter().map(|p| p.open_s).fold(f64::INFINITY, f64::min);
    let close = sel
        .iter()
        .map(|p| p.close_s)
        .fold(f64::NEG_INFINITY, f64::max);
    let span = (close - open).max(0.0);
    let uncertainty = sel.iter().map(|p| p.time_uncertainty_s).fold(0.0, f64::max);
    r.observed_bytes = Some(bytes);
    r.wall_s = Some(span);
    // Per process: iozone's "children see" adds the processes' own rates; everything else
    // is total bytes over the whole span.
    let mut per_pid: BTreeMap<u32, (u64, f64, Option<f64>, f64, f64)> = BTreeMap::new();
    for p in &sel {
        let e =
            per_pid
                .entry(p.pid)
                .or_insert((0, 0.0, Some(0.0), f64::INFINITY, f64::NEG_INFINITY));
        e.0 += moved(p);
        e.2 = match (e.2, io_time(p, c.direction)) {
            (Some(a), Some(b)) => Some(a + b),
            _ => None,
        };
        e.3 = e.3.min(p.open_s);
        e.4 = e.4.max(p.close_s);
    }
    let children_see = c.basis.starts_with("children see");
    let rate = |b: u64, s: f64| (s > 0.0).then(|| b as f64 / s);
    if children_see && per_pid.len() > 1 {
        r.observed_wall_bps = per_pid.values().map(|e| rate(e.0, e.4 - e.3)).sum();
        r.observed_syscall_bps = per_pid
            .values()
            .map(|e| e.2.and_then(|t| rate(e.0, t)))
            .sum();
    } else {
        r.observed_wall_bps = rate(bytes, span);
        let t: Option<f64> = per_pid.values().map(|e| e.2).sum();
        r.io_time_s = t;
        // Processes that ran side by side (IOR's tasks, fio's jobs) spent their time in the
        // calls at once: the aggregate rate inside the calls is the sum of theirs.
        let side_by_side = per_pid.len() > 1
            && per_pid
                .values()
                .map(|e| e.3)
                .fold(f64::NEG_INFINITY, f64::max)
                < per_pid.values().map(|e| e.4).fold(f64::INFINITY, f64::min);
        r.observed_syscall_bps = if side_by_side {
            per_pid
                .values()
                .map(|e| e.2.and_then(|t| rate(e.0, t)))
                .sum()
        } else {
            t.and_then(|t| rate(bytes, t))
        };
    }
    let fsync: Option<f64> = sel.iter().map(|p| p.fsync_time_s).sum();
    r.fsync_time_s = fsync;
    r.fsync_count = sel.iter().map(|p| p.fsync_count).sum();
    r.ratio = r
        .observed_wall_bps
        .filter(|o| *o > 0.0)
        .map(|o| c.claimed_bps / o);
    r.ratio_syscall = r
        .observed_syscall_bps
        .filter(|o| *o > 0.0)
        .map(|o| c.claimed_bps / o);

    // What the kernel counted for storage, and what the device did in the window.
    let storage_read: Option<u64> = sel.iter().map(|p| p.storage_read_bytes).sum();
    let storage_write: Option<u64> = sel.iter().map(|p| p.storage_write_bytes).sum();
    // Reads of holes came from neither the device nor the page cache.
    let holes: u64 = sel.iter().filter_map(|p| p.hole_read_bytes).sum();
    if c.direction == Direction::Read && bytes > 0 {
        if holes > 0 {
            r.hole_share = Some(holes.min(bytes) as f64 / bytes as f64);
        }
        if let Some(s) = storage_read {
            r.cache_share = Some(1.0 - ((s + holes).min(bytes) as f64 / bytes as f64));
        }
    }
    let dev = sel.iter().find_map(|p| p.dev);
    if let Some((name, d)) = dev.and_then(|dev| device_window(dev, open, close)) {
        r.device = Some(name);
        r.device_read_bytes = Some(d.read_bytes());
        r.device_write_bytes = Some(d.write_bytes());
        // Writes: the tree's own data can reach the device up to what it wrote, even when
        // the kernel did not count it at dirtying (pages dirty from before).
        // Every phase of the tree on this device counts, for the part of it inside the
        // window (a sibling job reading at the same time is not "another process"), and
        // so do its earlier writes (writeback); without request owners the foreign figure
        // is therefore a lower bound.
        let ours: f64 = phases
            .iter()
            .filter(|p| p.dev == dev)
            .map(|p| {
                let inside = (p.close_s.min(close) - p.open_s.max(open)).max(0.0);
                let share = if p.wall_s() > 0.0 {
                    inside / p.wall_s()
                } else if p.open_s >= open && p.close_s <= close {
                    1.0
                } else {
                    0.0
                };
                let w = p.storage_write_bytes.unwrap_or(0).max(p.write_bytes) as f64;
                // What the tree wrote before the window may be written back inside it.
                let w_share = if p.close_s <= open { 1.0 } else { share };
                p.storage_read_bytes.unwrap_or(0) as f64 * share + w * w_share
            })
            .sum();
        let ours = ours.round() as u64;
        let theirs = (d.read_bytes() + d.write_bytes()).saturating_sub(ours);
        // Who submitted each request, when the source knows; else the counters' difference.
        let known: Option<u64> = sel.iter().filter_map(|p| p.foreign_device_bytes).max();
        r.foreign_device_bytes = Some(known.unwrap_or(theirs));
        if c.direction == Direction::Write && bytes > 0 {
            // With per-request owners, only the tree's own device writes count.
            let flushed = match known {
                Some(_) => storage_write.unwrap_or(0),
                None => d.write_bytes(),
            };
            r.flushed_share = Some(flushed.min(bytes) as f64 / bytes as f64);
        }
    }
    let direct = sel.iter().all(|p| p.direct);
    r.lseek_count = sel.iter().map(|p| p.lseek_count).sum();
    let highest = sel
        .iter()
        .flat_map(|p| p.offsets.iter())
        .filter(|b| b[1] > 0)
        .map(|b| b[0])
        .max();
    if let (Some(h), Some(fs)) = (highest, c.file_size.filter(|f| *f > 0)) {
        // The bucket [h, 2h) holds offsets up to 2h; h is what is certainly reached.
        r.offset_reach = Some((h as f64 / fs as f64).min(1.0));
    }
    judge(c, &mut r, bytes, uncertainty, direct);
    r
}

fn io_time(p: &Phase, d: Direction) -> Option<f64> {
    match d {
        Direction::Read => p.read_time_s,
        Direction::Write => p.write_time_s,
        _ => p.io_time_s(),
    }
}

/// The verdict and the reasons, in plain words.
fn judge(c: &Claim, r: &mut Row, bytes: u64, uncertainty: f64, direct: bool) {
    let Some(ratio) = r.ratio else {
        r.verdict = "unverified".into();
        r.explanation = "the phase took no measurable time".into();
        return;
    };
    let off = ratio - 1.0;
    r.verdict = if off.abs() <= AGREEMENT {
        "agrees"
    } else if off > 0.0 {
        "overstated"
    } else {
        "understated"
    }
    .into();
    let mut why: Vec<String> = Vec::new();
    let has = |f: &str| c.flags.iter().any(|x| x == f);
    // Stonewalling: some processes stopped before the file was done.
    if has("stonewalled") {
        let min = c.extra.get("min_xfer_bytes").copied().unwrap_or(0.0);
        why.push(format!(
            "the first thread to finish stopped the others (stonewalling): the slowest moved only {} of {}",
            format_bytes(min.round() as u64, ByteStyle::TENTHS),
            format_bytes(c.file_size.unwrap_or(0), ByteStyle::TENTHS)
        ));
    }
    // The flush, when it was seen and the claim left it out.
    let fsync_s = r.fsync_time_s.unwrap_or(0.0);
    if fsync_s > 0.0
        && c.direction == Direction::Write
        && !has("fsync_in_timing")
        && off > AGREEMENT
    {
        why.push(format!(
            "the timer stopped before the fsync: {fsync_s:.2} s of flush were left out"
        ));
    }
    // A timer around the I/O calls only.
    if let (Some(rs), Some(io), Some(wall)) = (r.ratio_syscall, r.io_time_s, r.wall_s) {
        if (rs - 1.0).abs() <= AGREEMENT && off > AGREEMENT && fsync_s == 0.0 {
            why.push(format!(
                "the program timed only its I/O calls ({io:.3} s): {:.3} s of the open..close were outside them",
                (wall - io).max(0.0)
            ));
        }
    }
    // Buffered writes that never reached the device while the file was open.
    if c.direction == Direction::Write && !direct {
        if let Some(share) = r.flushed_share {
            if share < 0.5 {
                why.push(format!(
                    "only {:.0}% of the written bytes reached the device while the file was open: \
                     the figure is the page cache's speed (put a flush inside the timing: fio --end_fsync=1, iozone -e)",
                    share * 100.0
                ));
            } else if !has("fsync_in_timing") && fsync_s == 0.0 && share < 0.95 {
                why.push(format!(
                    "{:.0}% of the written bytes reached the device while the file was open; the rest was left in the page cache (no flush inside the timing)",
                    share * 100.0
                ));
            } else if has("fsync_in_timing") {
                why.push(format!(
                    "the flush is inside the timing: the device wrote {:.0}% of the bytes before the file was closed",
                    share * 100.0
                ));
            }
        }
    }
    // Random tests that stay in a corner of the file.
    let random = c.test.contains("rand") || has("random");
    if let (true, Some(reach)) = (random, r.offset_reach) {
        if reach < 0.25 {
            why.push(format!(
                "the random offsets stayed in the first {:.0}% of the file: the test did not cover it",
                (reach * 2.0).min(1.0) * 100.0
            ));
        }
    }
    // Reads of unallocated ranges.
    if let Some(h) = r.hole_share.filter(|h| *h >= 0.05) {
        why.push(format!(
            "{:.0}% of these reads were of holes (unallocated ranges of a sparse file): {}",
            h * 100.0,
            crate::holes::HOLE_WORDS
        ));
    }
    // Reads served from memory.
    if let Some(cache) = r.cache_share {
        if cache >= 0.05 {
            why.push(format!(
                "{:.0}% of these reads came from the page cache",
                cache * 100.0
            ));
        }
    }
    // Other processes on the same device.
    if let (Some(f), Some(name)) = (r.foreign_device_bytes, &r.device) {
        let threshold = (bytes as f64 * 0.10).max(1024.0 * 1024.0);
        if f as f64 > threshold {
            why.push(format!(
                "another process moved {} on {name} during the test",
                format_bytes(f, ByteStyle::TENTHS)
            ));
        }
    }
    // The program's timer against open..close.
    if r.observed_syscall_bps.is_none() {
        if let (Some(claimed_s), Some(wall)) = (c.seconds, r.wall_s) {
            if wall > claimed_s * (1.0 + AGREEMENT) && off > AGREEMENT {
                why.push(format!(
                    "the program timed {claimed_s:.3} s of the {wall:.3} s the file was open: opening, setup and closing are outside its timer"
                ));
            }
        }
        if let Some(wall) = r.wall_s {
            if wall > 0.0 && 2.0 * uncertainty / wall > AGREEMENT {
                why.push(format!(
                    "the file was open only {:.0} ms and sampling knows its ends to {:.1} ms, too coarse for a 5% check",
                    wall * 1e3,
                    uncertainty * 1e3
                ));
            }
        }
    }
    if let (Some(cb), true) = (c.bytes, bytes > 0) {
        let d = (cb as f64 - bytes as f64) / bytes as f64;
        if d.abs() > AGREEMENT {
            why.push(format!(
                "the program counted {} but moved {} through the file",
                format_bytes(cb, ByteStyle::TENTHS),
                format_bytes(bytes, ByteStyle::TENTHS)
            ));
        }
    }
    let cache_speed =
        (c.direction == Direction::Write && !direct && r.flushed_share.is_some_and(|x| x < 0.5))
            || (c.direction == Direction::Read && r.cache_share.is_some_and(|x| x >= 0.5));
    if cache_speed && off.abs() <= AGREEMENT {
        r.verdict = "cache speed".into();
    }
    if off.abs() > AGREEMENT && why.is_empty() {
        why.push(format!(
            "claimed and observed differ by {:.0}% and none of the known causes (flush, page cache, other processes, stonewalling) was seen",
            off.abs() * 100.0
        ));
    }
    if why.is_empty() {
        r.explanation = format!(
            "claimed and observed agree within {:.1}%",
            off.abs() * 100.0
        );
    } else {
        r.explanation = why.join("; ");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phase(pid: u32, path: &str, open: f64, close: f64, read: u64, write: u64) -> Phase {
        Phase {
            pid,
            path: path.into(),
            open_s: open,
            close_s: close,
            read_bytes: read,
            write_bytes: write,
            dev: Some(1),
            storage_read_bytes: Some(read),
            storage_write_bytes: Some(write),
            source: "test".into(),
            ..Default::default()
        }
    }

    fn claim(test: &str, dir: Direction, fs: u64, bps: f64) -> Claim {
        Claim {
            program: "iozone".into(),
            test: test.into(),
            direction: dir,
            file_size: Some(fs),
            record_size: Some(65536),
            threads: 1,
            claimed_bps: bps,
            basis: "per test".into(),
            ..Default::default()
        }
    }

    fn no_device(_: u64, _: f64, _: f64) -> Option<(String, DiskStat)> {
        None
    }

    #[test]
    fn iozone_phases_in_program_order() {
        let mb = 1 << 20;
        let phases = vec![
            phase(1, "/t/iozone.tmp", 0.0, 0.01, 4096, 0), // the small read at start
            phase(1, "/t/iozone.tmp", 0.1, 1.1, 0, 16 * mb),
            phase(1, "/t/iozone.tmp", 1.2, 2.2, 0, 16 * mb),
            phase(1, "/t/iozone.tmp", 2.3, 2.8, 17 * mb, 0),
            phase(1, "/t/iozone.tmp", 2.9, 3.4, 17 * mb, 0),
        ];
        let claims = vec![
            claim("write", Direction::Write, 16 * mb, 16.0 * mb as f64),
            claim("rewrite", Direction::Write, 16 * mb, 16.0 * mb as f64),
            claim("read", Direction::Read, 16 * mb, 34.0 * mb as f64),
            claim("reread", Direction::Read, 16 * mb, 34.0 * mb as f64),
        ];
        let m = match_phases(&claims, &phases, "/");
        assert_eq!(m, vec![vec![1], vec![2], vec![3], vec![4]]);
        let rows = reconcile(&claims, &phases, "/", &no_device);
        assert_eq!(rows[0].verdict, "agrees");
        assert_eq!(rows[0].observed_wall_bps, Some(16.0 * mb as f64));
        assert_eq!(rows[2].observed_wall_bps, Some(34.0 * mb as f64));
    }

    #[test]
    fn iozone_table_claims_take_phases_on_its_file_in_order() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/iozone/3.487/table-fsync-close-e-c.txt"
        ))
        .unwrap_or_default();
        let claims = crate::claims::iozone::parse(&text);
        assert_eq!(claims.len(), 4);
        let f = "/var/tmp/ioz.8xwQ/t.tmp";
        let mb = 1 << 20;
        let phases = vec![
            phase(9, "/var/tmp/other.log", 0.0, 5.0, 0, 64 * mb),
            phase(9, f, 0.1, 0.12, 4096, 0),
            phase(9, f, 0.2, 1.2, 0, 32 * mb),
            phase(9, f, 1.3, 2.3, 0, 32 * mb),
            phase(9, f, 2.4, 2.9, 32 * mb + 65536, 0),
            phase(9, f, 3.0, 3.5, 32 * mb + 65536, 0),
        ];
        let m = match_phases(&claims, &phases, "/");
        assert_eq!(m, vec![vec![2], vec![3], vec![4], vec![5]]);
        let rows = reconcile(&claims, &phases, "/", &no_device);
        assert!(rows
            .iter()
            .all(|r| r.record_size == Some(65536) && r.file_size == Some(32 * mb)));
    }

    #[test]
    fn iozone_throughput_claims_take_parallel_phases() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/iozone/3.487/throughput-t2.txt"
        ))
        .unwrap_or_default();
        let claims = crate::claims::iozone::parse(&text);
        let mb = 1 << 20;
        let (a, b) = ("/var/tmp/ioz.8xwQ/a.tmp", "/var/tmp/ioz.8xwQ/b.tmp");
        let phases = vec![
            phase(20, a, 0.0, 1.0, 0, 32 * mb),
            phase(21, b, 0.0, 1.3, 0, 25 * mb),
            phase(20, a, 1.4, 2.0, 0, 32 * mb),
            phase(21, b, 1.4, 2.1, 0, 30 * mb),
            phase(20, a, 2.2, 2.5, 32 * mb, 0),
            phase(21, b, 2.2, 2.6, 26 * mb, 0),
        ];
        let m = match_phases(&claims, &phases, "/");
        assert_eq!(m[0], vec![0, 1]);
        assert_eq!(m[1], vec![2, 3]);
        assert_eq!(m[2], vec![4, 5]);
        let rows = reconcile(&claims, &phases, "/", &no_device);
        assert!(
            rows[0].explanation.contains("stonewalling"),
            "{}",
            rows[0].explanation
        );
    }

    #[test]
    fn timer_that_leaves_out_the_fsync() {
        let mb = 1 << 20;
        let mut p = phase(1, "/t/f", 0.0, 3.0, 0, 100 * mb);
        p.write_time_s = Some(1.0);
        p.fsync_time_s = Some(2.0);
        p.fsync_count = Some(1);
        let c = claim("write", Direction::Write, 100 * mb, 100.0 * mb as f64);
        let rows = reconcile(&[c], &[p], "/", &no_device);
        let r = &rows[0];
        assert_eq!(r.observed_syscall_bps, Some(100.0 * mb as f64));
        assert_eq!(r.ratio_syscall, Some(1.0));
        assert_eq!(r.ratio, Some(3.0));
        assert_eq!(r.verdict, "overstated");
        assert!(
            r.explanation
                .contains("timer stopped before the fsync: 2.00 s"),
            "{}",
            r.explanation
        );
    }

    #[test]
    fn reads_from_the_cache_and_foreign_traffic() {
        let mb = 1 << 20;
        let mut p = phase(1, "/t/f", 0.0, 1.0, 100 * mb, 0);
        p.storage_read_bytes = Some(5 * mb);
        let c = claim("read", Direction::Read, 100 * mb, 300.0 * mb as f64);
        let dev = |_: u64, _: f64, _: f64| {
            Some((
                "vda".to_string(),
                DiskStat {
                    read_sectors: 5 * mb / 512,
                    write_sectors: 1200 * mb / 512,
                    ..Default::default()
                },
            ))
        };
        let rows = reconcile(&[c], &[p], "/", &dev);
        let r = &rows[0];
        assert_eq!(r.verdict, "overstated");
        assert!(
            r.explanation
                .contains("95% of these reads came from the page cache"),
            "{}",
            r.explanation
        );
        assert!(
            r.explanation
                .contains("another process moved 1.2 GiB on vda"),
            "{}",
            r.explanation
        );
    }

    #[test]
    fn buffered_write_that_never_reached_the_device() {
        let mb = 1 << 20;
        let p = phase(7, "/t/w.0.0", 0.0, 0.1, 0, 64 * mb);
        let mut c = claim("w", Direction::Write, 64 * mb, 640.0 * mb as f64);
        c.program = "fio".into();
        let dev = |_: u64, _: f64, _: f64| Some(("vda".to_string(), DiskStat::default()));
        let rows = reconcile(
            std::slice::from_ref(&c),
            std::slice::from_ref(&p),
            "/",
            &dev,
        );
        assert_eq!(rows[0].phases, vec![0], "fio's job.N.M file name");
        assert!(rows[0]
            .explanation
            .contains("only 0% of the written bytes reached the device"));
        // With the flush inside the timing the sentence says so.
        c.flags.push("fsync_in_timing".into());
        let dev = |_: u64, _: f64, _: f64| {
            Some((
                "vda".to_string(),
                DiskStat {
                    write_sectors: 64 * mb / 512,
                    ..Default::default()
                },
            ))
        };
        let rows = reconcile(&[c], &[p], "/", &dev);
        assert!(
            rows[0].explanation.contains("flush is inside the timing"),
            "{}",
            rows[0].explanation
        );
    }

    #[test]
    fn stonewalling_and_children_see() {
        let mb = 1 << 20;
        let phases = vec![
            phase(2, "/t/a", 0.0, 1.0, 0, 32 * mb),
            phase(3, "/t/b", 0.0, 2.0, 0, 25 * mb),
        ];
        let mut c = claim("write", Direction::Write, 32 * mb, 60.0 * mb as f64);
        c.threads = 2;
        c.basis = "children see (sum of per-process rates)".into();
        c.flags.push("stonewalled".into());
        c.extra.insert("min_xfer_bytes".into(), 25.0 * mb as f64);
        let rows = reconcile(&[c], &phases, "/", &no_device);
        let r = &rows[0];
        assert_eq!(r.phases, vec![0, 1]);
        assert_eq!(
            r.observed_wall_bps,
            Some(32.0 * mb as f64 + 12.5 * mb as f64)
        );
        assert!(r.explanation.contains("stonewalling"), "{}", r.explanation);
    }

    #[test]
    fn random_offsets_that_do_not_cover_the_file() {
        let mb = 1 << 20;
        let mut p = phase(1, "/t/f", 0.0, 1.0, 64 * mb, 0);
        p.offsets = vec![[0, 10], [4096, 20], [2 * mb, 100]];
        let c = claim("randread", Direction::Read, 64 * mb, 64.0 * mb as f64);
        let rows = reconcile(
            std::slice::from_ref(&c),
            std::slice::from_ref(&p),
            "/",
            &no_device,
        );
        assert_eq!(rows[0].offset_reach, Some(2.0 / 64.0));
        assert!(
            rows[0]
                .explanation
                .contains("random offsets stayed in the first 6%"),
            "{}",
            rows[0].explanation
        );
        p.offsets.push([32 * mb, 100]);
        let rows = reconcile(&[c], &[p], "/", &no_device);
        assert!(!rows[0].explanation.contains("random offsets"));
    }

    #[test]
    fn side_by_side_processes_add_their_rates_inside_the_calls() {
        let mb = 1 << 20;
        let mut a = phase(1, "/t/ior.dat.00000000", 0.0, 1.0, 0, 256 * mb);
        let mut b = phase(2, "/t/ior.dat.00000001", 0.0, 1.0, 0, 256 * mb);
        a.write_time_s = Some(0.5);
        b.write_time_s = Some(0.5);
        let mut c = claim("write", Direction::Write, 256 * mb, 512.0 * mb as f64);
        c.program = "ior".into();
        c.threads = 2;
        c.filename = Some("/t/ior.dat*".into());
        c.flags.push("phases_in_order".into());
        let rows = reconcile(&[c.clone()], &[a.clone(), b.clone()], "/", &no_device);
        // Each task wrote 256 MiB in 0.5 s inside its calls, at the same time: 1 GiB/s.
        assert_eq!(rows[0].observed_syscall_bps, Some(1024.0 * mb as f64));
        assert_eq!(rows[0].io_time_s, Some(1.0));
        // One after the other: 512 MiB over 1 s inside the calls.
        b.open_s = 1.5;
        b.close_s = 2.5;
        let rows = reconcile(&[c], &[a, b], "/", &no_device);
        assert_eq!(rows[0].observed_syscall_bps, Some(512.0 * mb as f64));
    }

    #[test]
    fn unmatched_claim_is_unverified() {
        let c = claim("write", Direction::Write, 1 << 20, 1.0);
        let rows = reconcile(&[c], &[], "/", &no_device);
        assert_eq!(rows[0].verdict, "unverified");
    }
}
