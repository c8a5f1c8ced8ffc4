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
    if let Some(t) = cpu_bound(f, verdict, ops) {
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
            // The disk's share decides the word: none (or hardly any) of it, memory's.
            let partly = if share <= crate::rules::CACHE_SHARE_MAX {
                ""
            } else {
                "partly "
            };
            s.push_str(&format!(
                ": of the {} it moved in the timed region, the disk under its file moved {}, the rest was the host's page cache, so its \"device\" speed is {partly}memory speed.",
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
        Some("sync") => crate::explain::sync_flag(f),
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
            if flag.starts_with("mount option") {
                format!("The writes, each written through ({flag}) and waiting for a request of its own, took")
            } else {
                format!("The {flag} writes, each waiting for a request of its own, took")
            },
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

fn cpu_bound(f: &Facts, verdict: Verdict, ops: Option<&Operations>) -> Option<Trap> {
    if !matches!(verdict, Verdict::Device | Verdict::Mixed) {
        return None;
    }
    // The runner measured its operations waiting for the device (the flush, writes held
    // back) for more of the timed region than a CPU-bound thread leaves: the note says
    // that, and not that the thread was on the CPU all along.
    if ops
        .and_then(|o| o.waited_time_share)
        .is_some_and(|t| t > 1.0 - CPU_BUSY_MIN)
    {
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

/// What compresses the test's bytes, as the facts name it: the compression set on the
/// test's files or their directory (btrfs's property, `chattr +c`), else the mount option
/// (`compress`, `compress-force`). None when nothing says the filesystem compresses.
pub fn compression(f: &Facts) -> Option<String> {
    let fs = f.fs.as_ref()?;
    if let Some(d) = fs.dir_compression.as_deref() {
        return Some(match d.strip_prefix("btrfs property compression=") {
            Some(a) => format!("{} compresses the test's files with {a} ({d})", fs.fs_type),
            None => format!("{} compresses the test's files ({d})", fs.fs_type),
        });
    }
    ["compress-force", "compress"].iter().find_map(|opt| {
        let v = fs.option(opt)?;
        let algo = v.split(':').next().unwrap_or(v);
        match algo {
            "no" | "none" => None,
            "" => Some(format!(
                "{} compresses with its default algorithm (mount option {opt})",
                fs.fs_type
            )),
            _ => Some(format!(
                "{} compresses with {algo} (mount option {opt}={v})",
                fs.fs_type
            )),
        }
    })
}

/// How the buffers candor wrote compress: None for random bytes (they do not) and when the
/// pattern is not known.
pub fn compressible(f: &Facts) -> Option<String> {
    let p = f.given.as_ref()?.buffer_pattern.as_str();
    if p == "zero" {
        return Some("zero-filled buffers compress to almost nothing".into());
    }
    let n: u32 = p
        .strip_prefix("compressible=")?
        .trim_end_matches('%')
        .parse()
        .ok()?;
    (n > 0).then(|| {
        format!(
            "buffers {n}% zeroes compress to about {}% of their size",
            100u32.saturating_sub(n)
        )
    })
}

/// The filesystem compressed compressible buffers: the fact that explains a write test's
/// stored bytes, and the figure.
pub fn compression_explains(f: &Facts) -> Option<(String, String)> {
    Some((compression(f)?, compressible(f)?))
}

/// Discards of this much or more inside the timed region are named.
pub const DISCARD_MIN: u64 = 1 << 20;

/// A filesystem mounted with `discard` whose device discarded inside the timed region: the
/// blocks earlier files freed, discarded as the filesystem commits (ext4's journal, xfs's
/// log), work the figure includes. The sentence, or None.
pub fn discarded(f: &Facts) -> Option<String> {
    let fs = f.fs.as_ref()?;
    let opt = fs.option("discard")?;
    let d = f.device_window.discard_bytes;
    if d < DISCARD_MIN {
        return None;
    }
    let how = if opt.is_empty() {
        "discard".to_string()
    } else {
        format!("discard={opt}")
    };
    Some(format!(
        "The device also discarded {} inside the timed region: {} is mounted with {how}, so the blocks that files freed are discarded as it commits, and the figure includes that work.",
        hb(d),
        fs.fs_type
    ))
}

fn stored(f: &Facts, a: &Attribution) -> Option<Trap> {
    let r = stored_ratio(f, a)?;
    let counted = "the bytes it left out never had to reach the device, so the share of the writes in the timed region is counted against what it stored.";
    if r < STORED_FEWER_MAX {
        let sentence = match compression_explains(f) {
            Some((what, how)) => format!(
                "{what}: it stored {} of the bytes it was given, once everything was on the device; {how}. The {}",
                pct(r),
                counted.strip_prefix("the ").unwrap_or(counted)
            ),
            None => {
                // Compression is a possibility only when nothing says it is off and the
                // buffers were not random bytes (which do not compress).
                let random = f
                    .given
                    .as_ref()
                    .is_some_and(|g| g.buffer_pattern == "random");
                let maybe = if random || (f.fs.is_some() && compression(f).is_none()) {
                    ""
                } else {
                    "compression, "
                };
                format!(
                    "The filesystem stored {} of the bytes it was given, once everything was on the device, for a reason the witness cannot tell from the mount options or the files' properties ({maybe}inline data, zeroes kept as holes, or pages written again before they were written back): {counted}",
                    pct(r)
                )
            }
        };
        Some(trap(TrapKind::StoredFewer, Some(r), sentence))
    } else if r > STORED_MORE_MIN {
        Some(trap(
            TrapKind::StoredMore,
            Some(r),
            match f.fs.as_ref().filter(|fs| fs.option("data") == Some("journal")) {
                // Writes written through by the mount: each carries its own commit.
                None if !f.osync && f.writes_through() => format!(
                    "{} wrote {r:.2}x the bytes it was given: it is mounted sync, so each write was written through with the journal and metadata it changed, a commit per write; the share of the writes in the timed region is counted against all it wrote.",
                    f.fs.as_ref().map_or("The filesystem", |fs| fs.fs_type.as_str())
                ),
                // The fact that decides it: every byte goes to the journal first.
                Some(fs) => format!(
                    "{} journals the data as well as the metadata (mount option data=journal): every byte is written twice, once to the journal and once in place, so it wrote {r:.2}x the bytes it was given; the share of the writes in the timed region is counted against all it wrote.",
                    fs.fs_type
                ),
                None => format!(
                    "The filesystem wrote {r:.2}x the bytes it was given (copy-on-write metadata, journal): the share of the writes in the timed region is counted against all it wrote."
                ),
            },
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

    use crate::testkit::MIB as M;
    use candor_model::advice::Given;
    use candor_model::FsFacts;

    /// 64 MiB written with the flush timed, 2 MiB of it stored (3%), on `fs` with buffers
    /// of `pattern`.
    fn compressed(fs: Option<FsFacts>, pattern: &str) -> candor_model::Facts {
        let mut f = write_facts(64 * M, 2 * M, 2 * M, 64 * M);
        f.flush_in_timing = true;
        f.fs = fs;
        f.given = Some(Given {
            buffer_pattern: pattern.into(),
            direct_accepted: true,
            file_size_accepted: true,
            fadvise_accepted: true,
            repeat: 1,
            ..Given::default()
        });
        f
    }

    fn btrfs(options: &str, dir: Option<&str>) -> Option<FsFacts> {
        Some(FsFacts {
            fs_type: "btrfs".into(),
            mount_options: options.into(),
            dir_compression: dir.map(str::to_string),
        })
    }

    fn stored_sentence(f: &candor_model::Facts) -> (String, String) {
        let j = judge(f);
        let t = j
            .traps
            .iter()
            .find(|t| t.kind == candor_model::TrapKind::StoredFewer)
            .unwrap_or_else(|| panic!("no stored-fewer trap: {}", j.explanation));
        (t.sentence.clone(), j.explanation)
    }

    #[test]
    fn compression_by_mount_option_is_named_with_its_algorithm() {
        for opt in ["compress", "compress-force"] {
            let o = format!("rw,relatime,{opt}=zstd:3,space_cache=v2");
            let (t, e) = stored_sentence(&compressed(btrfs(&o, None), "zero"));
            assert!(
                t.starts_with(&format!(
                    "btrfs compresses with zstd (mount option {opt}=zstd:3): it stored 3% of the bytes it was given, once everything was on the device; zero-filled buffers compress to almost nothing."
                )),
                "{t}"
            );
            assert!(!t.contains("inline data"), "a fact decides: {t}");
            assert!(
                e.ends_with("Use --buffer-pattern random to measure the device."),
                "{e}"
            );
        }
    }

    #[test]
    fn compression_by_property_on_an_uncompressed_mount_is_named() {
        let f = compressed(
            btrfs(
                "rw,relatime,space_cache=v2",
                Some("btrfs property compression=zstd"),
            ),
            "compressible=90%",
        );
        let (t, e) = stored_sentence(&f);
        assert!(
            t.starts_with(
                "btrfs compresses the test's files with zstd (btrfs property compression=zstd): it stored 3% of the bytes it was given, once everything was on the device; buffers 90% zeroes compress to about 10% of their size."
            ),
            "{t}"
        );
        assert!(
            e.ends_with("Use --buffer-pattern random to measure the device."),
            "{e}"
        );
        // chattr +c: the filesystem's default algorithm.
        let f = compressed(btrfs("rw", Some("chattr +c")), "zero");
        let (t, _) = stored_sentence(&f);
        assert!(
            t.starts_with("btrfs compresses the test's files (chattr +c):"),
            "{t}"
        );
    }

    #[test]
    fn without_a_fact_the_possibilities_are_said_as_such() {
        for fs in [None, btrfs("rw,relatime,compress=no", None)] {
            let (t, e) = stored_sentence(&compressed(fs, "random"));
            assert!(
                t.starts_with("The filesystem stored 3% of the bytes it was given, once everything was on the device, for a reason the witness cannot tell from the mount options or the files' properties ("),
                "{t}"
            );
            assert!(!e.contains("--buffer-pattern"), "{e}");
        }
        // Known not to compress: compression is not among the possibilities.
        let (t, _) = stored_sentence(&compressed(btrfs("rw,compress=no", None), "zero"));
        assert!(t.contains("properties (inline data, zeroes"), "{t}");
        // Compressing, but the buffers were random: not the reason either.
        let (t, _) = stored_sentence(&compressed(btrfs("rw,compress=zstd:3", None), "random"));
        assert!(t.contains("properties (inline data, zeroes"), "{t}");
    }

    #[test]
    fn discards_inside_the_timed_region_name_the_mount_option() {
        for (fs, opt) in [
            ("ext4", "discard"),
            ("xfs", "discard"),
            ("btrfs", "discard=async"),
        ] {
            let mut f = write_facts(64 * M, 64 * M, 64 * M, 64 * M);
            f.flush_in_timing = true;
            f.fs = Some(FsFacts {
                fs_type: fs.into(),
                mount_options: format!("rw,relatime,{opt}"),
                dir_compression: None,
            });
            f.device_window.discard_bytes = 48 * M;
            let e = judge(&f).explanation;
            assert!(
                e.contains(&format!(
                    "The device also discarded 48 MiB inside the timed region: {fs} is mounted with {opt}, so the blocks that files freed are discarded as it commits, and the figure includes that work. Mount without discard (and trim with fstrim between runs) to measure the writes alone."
                )),
                "{e}"
            );
            // Without the option, or with fewer discards, nothing is said.
            f.device_window.discard_bytes = 4096;
            assert!(!judge(&f).explanation.contains("discard"));
        }
    }

    #[test]
    fn data_journal_is_named_as_the_reason_for_bytes_written_twice() {
        let mut f = write_facts(32 * M, 64 * M, 64 * M, 32 * M);
        f.flush_in_timing = true;
        f.exclusive = true;
        f.fs = Some(FsFacts {
            fs_type: "ext4".into(),
            mount_options: "rw,relatime,data=journal".into(),
            dir_compression: None,
        });
        let j = judge(&f);
        let t = j
            .traps
            .iter()
            .find(|t| t.kind == candor_model::TrapKind::StoredMore)
            .unwrap_or_else(|| panic!("{}", j.explanation));
        assert!(
            t.sentence.starts_with("ext4 journals the data as well as the metadata (mount option data=journal): every byte is written twice, once to the journal and once in place, so it wrote 2.00x the bytes it was given;"),
            "{}",
            t.sentence
        );
        // data=ordered: the possibilities, as before.
        f.fs.as_mut().unwrap().mount_options = "rw,relatime,data=ordered".into();
        let j = judge(&f);
        assert!(
            j.explanation.contains("(copy-on-write metadata, journal)"),
            "{}",
            j.explanation
        );
    }

    fn ext4(options: &str) -> Option<FsFacts> {
        Some(FsFacts {
            fs_type: "ext4".into(),
            mount_options: options.into(),
            dir_compression: None,
        })
    }

    /// Buffered writes (no O_SYNC, no O_DIRECT, the flush out of the timing as the command
    /// line asked) that each waited about 40 us for a request of their own.
    fn written_through(fs: Option<FsFacts>) -> candor_model::Facts {
        let mut f = crate::testkit::direct_write();
        f.direct = false;
        f.flush_in_timing = false;
        f.fs = fs;
        f.given = Some(Given {
            no_fsync_in_timing: true,
            direct_accepted: true,
            file_size_accepted: true,
            fadvise_accepted: true,
            buffer_pattern: "random".into(),
            repeat: 3,
            ..Given::default()
        });
        f
    }

    #[test]
    fn a_sync_mount_is_named_and_its_writes_are_the_devices() {
        let f = written_through(ext4("rw,relatime,sync,noinit_itable"));
        let j = judge(&f);
        assert_eq!(
            j.operations.as_ref().and_then(|o| o.write_mode.as_deref()),
            Some("sync"),
            "{}",
            j.explanation
        );
        assert_eq!(j.verdict, Verdict::Device, "{}", j.explanation);
        assert!(!j.contradicts_intent, "{}", j.explanation);
        let e = &j.explanation;
        assert!(
            e.starts_with("ext4 is mounted sync: every write reached the device before write() returned. 100% of the written bytes reached the device (loop0) inside the timed region and 100% of the 16384 writes (mount option sync) waited for it: this is the device's figure."),
            "{e}"
        );
        // Not a page-cache story, and no remedy for one.
        for no in [
            "page cache",
            "memory speed",
            "held back",
            "--direct",
            "--no-fsync-in-timing",
        ] {
            assert!(!e.contains(no), "{no}: {e}");
        }
        assert!(f.in_force().osync);
    }

    #[test]
    fn a_sync_mount_whose_writes_did_not_wait_gets_no_page_cache_remedy() {
        // Written through to a device that answered at memory speed (a loop device over a
        // cached file): the trap names memory; --direct or the flush would change nothing.
        let mut f = written_through(ext4("rw,sync"));
        f.ops = Some(candor_model::OpFacts {
            count: 16384,
            latency: crate::testkit::dump(&[(2048, 16384)]),
        });
        f.requests.as_mut().unwrap().write.latency = crate::testkit::dump(&[(2048, 16384)]);
        let j = judge(&f);
        assert!(j.contradicts_intent, "{}", j.explanation);
        assert!(
            j.explanation
                .starts_with("ext4 is mounted sync: each write is written through to the device before write() returns."),
            "{}",
            j.explanation
        );
        assert!(
            j.traps
                .iter()
                .any(|t| t.kind == candor_model::TrapKind::FasterThanDevice),
            "{}",
            j.explanation
        );
        assert!(!j.explanation.contains("--direct"), "{}", j.explanation);
        assert!(
            !j.explanation.contains("--no-fsync-in-timing"),
            "{}",
            j.explanation
        );
        assert_eq!(
            candor_model::advice::conflict(&j.explanation, &f.in_force()),
            None
        );
    }

    #[test]
    fn a_sync_mount_is_named_for_the_bytes_its_commits_add() {
        // Small writes written through: each commits the journal and the inode with it.
        let mut f = written_through(ext4("rw,sync"));
        f.device_window.write_bytes = 192 * M;
        f.device_total.write_bytes = 192 * M;
        for p in [f.own_window.as_mut(), f.own_total.as_mut()]
            .into_iter()
            .flatten()
        {
            p.write_bytes = 64 * M;
        }
        f.exclusive = true;
        let j = judge(&f);
        let t = j
            .traps
            .iter()
            .find(|t| t.kind == candor_model::TrapKind::StoredMore)
            .unwrap_or_else(|| panic!("{}", j.explanation));
        assert!(
            t.sentence.starts_with("ext4 wrote 3.00x the bytes it was given: it is mounted sync, so each write was written through with the journal and metadata it changed, a commit per write;"),
            "{}",
            t.sentence
        );
    }

    #[test]
    fn sync_is_read_from_the_options_exactly() {
        for (opts, sync, dirs) in [
            ("rw,relatime,sync", true, Some("sync")),
            ("rw,relatime,dirsync", false, Some("dirsync")),
            ("rw,sync,wsync,inode64", true, Some("sync")),
            ("rw,wsync,inode64", false, Some("wsync")),
            ("rw,relatime,async", false, None),
        ] {
            let fs = ext4(opts).unwrap();
            assert_eq!(fs.writes_through().is_some(), sync, "{opts}");
            assert_eq!(fs.dirs_through(), dirs, "{opts}");
        }
        // The same writes on a mount without it: buffered, and judged as such.
        let j = judge(&written_through(ext4("rw,relatime,dirsync")));
        assert_eq!(
            j.operations.and_then(|o| o.write_mode),
            Some("buffered".into())
        );
        // A memory-mapped file's stores are not written through by the mount.
        let mut f = written_through(ext4("rw,sync"));
        f.test = "mmapwrite".into();
        assert!(!f.writes_through());
    }

    #[test]
    fn dax_is_named_and_the_page_cache_story_is_not_told() {
        // DAX: reads and writes go to the device's memory without the page cache or block
        // requests; the block layer saw none of the bytes.
        for opt in ["dax", "dax=always"] {
            for mut f in [
                write_facts(64 * M, 0, 0, 0),
                crate::testkit::read_facts(64 * M, 0, 0, candor_model::Intent::Device),
            ] {
                f.fs = ext4(&format!("rw,relatime,{opt}"));
                f.given = Some(Given {
                    direct_accepted: true,
                    file_size_accepted: true,
                    no_fsync_in_timing: f.is_write,
                    repeat: 3,
                    ..Given::default()
                });
                let j = judge(&f);
                assert_eq!(j.verdict, Verdict::Unverified, "{}", j.explanation);
                assert!(!j.contradicts_intent);
                let e = &j.explanation;
                assert!(
                    e.starts_with(&format!("ext4 is mounted {opt}: its files' reads and writes go straight to the device's memory, without the page cache and without block requests, so the witness's block-layer counts cannot see them; the figure is the device's own.")),
                    "{e}"
                );
                assert_eq!(
                    j.unverified_reason.as_deref(),
                    Some(format!("ext4 is mounted {opt}: the block layer does not see its files' reads and writes").as_str())
                );
                for no in [
                    "page cache absorbed",
                    "memory speed",
                    "--direct",
                    "3x RAM",
                    "--no-fsync",
                ] {
                    assert!(!e.contains(no), "{no}: {e}");
                }
            }
        }
        // dax=never (what xfs shows when the device cannot do DAX) and dax=inode (only
        // marked files) are not the fact: the usual story.
        for opt in ["dax=never", "dax=inode"] {
            let mut f = write_facts(64 * M, 0, 0, 0);
            f.fs = ext4(&format!("rw,{opt}"));
            assert_eq!(f.fs.as_ref().unwrap().dax(), None);
            assert_ne!(judge(&f).verdict, Verdict::Unverified);
        }
    }

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
