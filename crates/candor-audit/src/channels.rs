//! Figures whose bytes moved through Linux AIO (io_submit), io_uring, or files mapped
//! into memory.
//!
//! With eBPF those bytes are counted per process and file (phases tagged with their
//! `channel`) and a figure is judged against them as against read and write calls; the
//! row's sentence says which channel carried them. Bytes counted through a mapping are a
//! lower bound (a page read again through a mapping that holds it makes no event), so a
//! figure above them is `unverified`, never `overstated`.
//!
//! A channel that was not counted (the procfs witness, or a kernel without the
//! tracepoints) leaves the file's read and write calls holding none of those bytes, so a
//! figure measured against them would be called overstated by millions of times. Such a
//! figure is `unverified`, with a sentence naming the channel and the process that used
//! it, unless the block layer (which sees every channel) contradicts it: O_DIRECT I/O
//! through AIO or io_uring goes to the device, so a device that moved less than the
//! figure's bytes over the whole time the process could have made them shows it
//! overstated.

use crate::claims::{Claim, Direction};
use crate::phase::{ChannelUse, Observed, Phase};
use crate::reconcile::{file_matches, is_metadata, Row, AGREEMENT};
use candor_model::units::{format_bytes, ByteStyle};
use candor_procfs::DiskStat;

/// Rewrites the rows whose figures may have moved through an uncounted channel, and the
/// reason of an unmatched figure with eBPF (which sees every read and write call, so a
/// sampling period is not why).
pub fn apply(
    claims: &[Claim],
    rows: &mut [Row],
    observed: &Observed,
    cwd: &str,
    device_window: &dyn Fn(u64, f64, f64) -> Option<(String, DiskStat)>,
) {
    for (c, r) in claims.iter().zip(rows.iter_mut()) {
        if is_metadata(c) {
            continue;
        }
        let counted: Vec<&Phase> = r
            .phases
            .iter()
            .filter_map(|&i| observed.phases.get(i))
            .filter(|p| p.channel.is_some())
            .collect();
        if !counted.is_empty() {
            judge_counted(c, r, &counted, observed);
            continue;
        }
        let uses = relevant(c, r, observed, cwd);
        if uses.is_empty() {
            if r.verdict == "unverified" && r.phases.is_empty() && observed.source == "bpf" {
                r.explanation = "no read or write call of the program moved bytes through a file \
                                 this figure is about (eBPF saw every such call of the tree): the \
                                 program used no regular file for it, or moved its I/O through a \
                                 channel this audit did not see"
                    .into();
            }
            continue;
        }
        if matches!(r.verdict.as_str(), "agrees" | "cache speed" | "understated") {
            continue;
        }
        judge(c, r, &uses, observed, device_window);
    }
}

/// A figure matched by bytes counted through a channel: judged as read and write calls
/// are, with the channel named; above what a mapping showed, or above what a channel
/// counted while some of its requests could not be given to a file, unverified.
fn judge_counted(c: &Claim, r: &mut Row, counted: &[&Phase], observed: &Observed) {
    let moved = |p: &Phase| match c.direction {
        Direction::Read => p.read_bytes,
        Direction::Write => p.write_bytes,
        _ => p.bytes(),
    };
    let calls = |p: &Phase| match c.direction {
        Direction::Read => p.read_calls.unwrap_or(0),
        Direction::Write => p.write_calls.unwrap_or(0),
        _ => p.read_calls.unwrap_or(0) + p.write_calls.unwrap_or(0),
    };
    let mut parts: Vec<String> = Vec::new();
    let mut names: Vec<&str> = counted
        .iter()
        .filter_map(|p| p.channel.as_deref())
        .collect();
    names.sort_unstable();
    names.dedup();
    for name in &names {
        let these: Vec<&&Phase> = counted
            .iter()
            .filter(|p| p.channel.as_deref() == Some(*name))
            .collect();
        let b: u64 = these.iter().map(|p| moved(p)).sum();
        let n: u64 = these.iter().map(|p| calls(p)).sum();
        let what = match *name {
            "aio" => format!("{n} iocbs submitted"),
            "io_uring" => format!("{n} completions"),
            _ => format!(
                "{} pages {}",
                b / 4096,
                if c.direction == Direction::Write {
                    "dirtied"
                } else {
                    "faulted in"
                }
            ),
        };
        parts.push(format!(
            "{} moved through {} ({what}, counted per file by eBPF)",
            format_bytes(b, ByteStyle::TENTHS),
            channel_words(name)
        ));
    }
    let through = parts.join(" and ");
    let mapped = names.contains(&"mmap");
    let lost: Vec<String> = names
        .iter()
        .filter_map(|n| {
            let [calls, _] = observed.channels_unattributed.get(*n)?;
            (*calls > 0).then(|| format!("{calls} requests through {}", channel_words(n)))
        })
        .collect();
    if r.verdict == "overstated" && !lost.is_empty() {
        r.verdict = "unverified".into();
        r.ratio = None;
        r.ratio_syscall = None;
        r.observed_wall_bps = None;
        r.observed_syscall_bps = None;
        r.explanation = format!(
            "{through}; but {} could not be given to a file, so a figure above these bytes cannot be checked",
            lost.join(" and ")
        );
        return;
    }
    if r.verdict == "overstated" && mapped {
        // A mapping shows each page once: reads and writes of pages it already holds
        // make no event, so more than the counted bytes may have moved.
        r.verdict = "unverified".into();
        r.ratio = None;
        r.ratio_syscall = None;
        r.observed_wall_bps = None;
        r.observed_syscall_bps = None;
        r.explanation = format!(
            "{through}: a mapping shows each page once, and a program that reads or writes a page again through it makes no event, so a figure above these bytes cannot be checked"
        );
        return;
    }
    r.explanation = if r.explanation.is_empty() {
        through
    } else {
        format!("{}; {through}", r.explanation)
    };
}

/// The channel in the words of a row's sentence.
fn channel_words(channel: &str) -> &'static str {
    match channel {
        "aio" => "Linux AIO (io_submit)",
        "io_uring" => "io_uring",
        _ => "a memory mapping",
    }
}

/// One note per channel and program (and mapped file): who moved I/O outside read and
/// write calls, so a reader of a program without figures knows its bytes are not all in
/// the phases (or, with eBPF, that they are, in the phases of that channel).
pub fn notes(observed: &Observed) -> Vec<String> {
    let mut groups: Vec<(String, String, Vec<u32>)> = Vec::new();
    for u in &observed.channels {
        if observed.channels_counted.contains(&u.channel) {
            continue;
        }
        let key = (u.name(), u.comm.clone());
        match groups.iter_mut().find(|g| g.0 == key.0 && g.1 == key.1) {
            Some(g) => g.2.push(u.pid),
            None => groups.push((key.0, key.1, vec![u.pid])),
        }
    }
    groups
        .into_iter()
        .map(|(name, comm, mut pids)| {
            pids.sort_unstable();
            pids.dedup();
            pids.retain(|&p| p != 0);
            let who = if pids.is_empty() {
                "the command's tree".to_string()
            } else {
                format!(
                    "{} (pid {})",
                    if comm.is_empty() { "a process" } else { &comm },
                    pids.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
                )
            };
            format!(
                "{who} moved I/O through {name}, which this audit does not count per file: those bytes are not in the file phases"
            )
        })
        .chain(counted_notes(observed))
        .collect()
}

/// What the channels counted per file carried, per channel: one note each.
fn counted_notes(observed: &Observed) -> Vec<String> {
    let mut out = Vec::new();
    for name in &observed.channels_counted {
        let these: Vec<&Phase> = observed
            .phases
            .iter()
            .filter(|p| p.channel.as_deref() == Some(name.as_str()))
            .collect();
        if these.is_empty() {
            continue;
        }
        let r: u64 = these.iter().map(|p| p.read_bytes).sum();
        let w: u64 = these.iter().map(|p| p.write_bytes).sum();
        let files: std::collections::BTreeSet<&str> =
            these.iter().map(|p| p.path.as_str()).collect();
        let mut pids: Vec<u32> = these.iter().map(|p| p.pid).collect();
        pids.sort_unstable();
        pids.dedup();
        let how = if name == "mmap" {
            " (pages faulted in and dirtied, each page once per fault or dirtying: a lower bound)"
        } else {
            ""
        };
        out.push(format!(
            "{} read and {} written through {} by {} process{} on {} file{}, counted per file by eBPF{how}: in the file phases marked {name}",
            format_bytes(r, ByteStyle::TENTHS),
            format_bytes(w, ByteStyle::TENTHS),
            channel_words(name),
            pids.len(),
            if pids.len() == 1 { "" } else { "es" },
            files.len(),
            if files.len() == 1 { "" } else { "s" },
        ));
    }
    out
}

/// The channel uses whose I/O may be behind the figure: a mapping of its file, or AIO or
/// io_uring in a process that had its file open (or made its matched phases). A figure
/// that names no file and matched no phase may be any of them.
fn relevant<'a>(c: &Claim, r: &Row, observed: &'a Observed, cwd: &str) -> Vec<&'a ChannelUse> {
    let phases: Vec<&Phase> = r
        .phases
        .iter()
        .filter_map(|&i| observed.phases.get(i))
        .collect();
    let names_a_file = c.filename.is_some() || c.program == "fio";
    let on_file = |path: &str, dev: Option<u64>, inode: Option<u64>| {
        let p = Phase {
            path: path.to_string(),
            ..Default::default()
        };
        (names_a_file && file_matches(c, &p, cwd))
            || phases
                .iter()
                .any(|q| q.path == path || (inode.is_some() && q.inode == inode && q.dev == dev))
    };
    // What the read and write calls moved falls short of the figure.
    let claimed = c
        .bytes
        .map(|b| b as f64)
        .or_else(|| c.seconds.map(|s| c.claimed_bps * s));
    let short = match (claimed, r.observed_bytes) {
        (Some(want), Some(got)) => (got as f64) < want * (1.0 - AGREEMENT),
        _ => true,
    };
    observed
        .channels
        .iter()
        .filter(|u| !observed.channels_counted.contains(&u.channel))
        .filter(|u| {
            if !names_a_file && phases.is_empty() {
                return true;
            }
            if u.pid == 0 {
                // Seen for the tree only (counted by eBPF, never in /proc).
                return short;
            }
            match u.channel.as_str() {
                "mmap" => u
                    .path
                    .as_deref()
                    .is_some_and(|path| on_file(path, u.dev, u.inode)),
                // The files the process had open, when /proc saw them; else the process.
                _ if u.files.is_empty() => phases.iter().any(|q| q.pid == u.pid),
                _ => u.files.iter().any(|f| on_file(&f.path, f.dev, f.inode)),
            }
        })
        .collect()
}

fn judge(
    c: &Claim,
    r: &mut Row,
    uses: &[&ChannelUse],
    observed: &Observed,
    device_window: &dyn Fn(u64, f64, f64) -> Option<(String, DiskStat)>,
) {
    let bytes = c
        .bytes
        .or_else(|| c.seconds.map(|s| (c.claimed_bps * s).round() as u64));
    // One clause per channel: who used it, and what showed it.
    let mut clauses: Vec<String> = Vec::new();
    let mut channels: Vec<&str> = Vec::new();
    for u in uses {
        if channels.contains(&u.channel.as_str()) {
            continue;
        }
        channels.push(&u.channel);
        let same: Vec<&&ChannelUse> = uses.iter().filter(|v| v.channel == u.channel).collect();
        let mut pids: Vec<u32> = same.iter().map(|v| v.pid).collect();
        pids.sort_unstable();
        pids.dedup();
        pids.retain(|&p| p != 0);
        let who = if pids.is_empty() {
            c.program.clone()
        } else {
            format!(
                "{} (pid {})",
                if u.comm.is_empty() {
                    &c.program
                } else {
                    &u.comm
                },
                pids.iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        let mut seen = vec![u.evidence.clone()];
        if u.pid != 0 {
            // The tracer's counts of the channel's calls, for the tree.
            let calls: &[&str] = match u.channel.as_str() {
                "aio" => &["io_submit"],
                "io_uring" => &["io_uring_enter"],
                _ => &[],
            };
            for name in calls {
                if let Some(n) = observed.channel_calls.get(*name) {
                    seen.push(format!("{n} {name} calls counted by eBPF"));
                }
            }
        }
        clauses.push(format!(
            "{who} moved its I/O through {}, which this audit does not count per file ({} showed it)",
            u.name(),
            seen.join(" and ")
        ));
    }
    let what = match bytes {
        Some(b) => format!("its {}", format_bytes(b, ByteStyle::TENTHS)),
        None => "its figure".to_string(),
    };
    let mut why = format!(
        "{}: {what} cannot be checked against the file's read/write calls",
        clauses.join("; ")
    );
    r.verdict = "unverified".into();
    // What read and write calls moved says nothing of this figure: no rate, no ratio.
    r.observed_wall_bps = None;
    r.observed_syscall_bps = None;
    r.ratio = None;
    r.ratio_syscall = None;
    // Nor of where its bytes came from or went: the shares were of those calls' bytes.
    r.cache_share = None;
    r.flushed_share = None;
    // The block layer sees every channel: O_DIRECT I/O through AIO or io_uring reaches
    // the device, so the device's bytes over the whole time those processes could have
    // made them bound the figure from above (the device may be shared: only a shortfall
    // says something).
    let direct = c.flags.iter().any(|f| f == "direct")
        || uses
            .iter()
            .filter(|u| u.channel != "mmap")
            .any(|u| !u.files.is_empty() && u.files.iter().all(|f| f.direct));
    let queued: Vec<&&ChannelUse> = uses.iter().filter(|u| u.channel != "mmap").collect();
    if let (true, Some(b), false) = (direct, bytes, queued.is_empty()) {
        if let Some(d) = device_check(c, b, &queued, observed, device_window) {
            let (name, moved, from, to) = d;
            let verb = if c.direction == Direction::Read {
                "read"
            } else {
                "wrote"
            };
            if (moved as f64) < b as f64 * (1.0 - AGREEMENT) {
                r.verdict = "overstated".into();
                why = format!(
                    "{why}; but the device {name} {verb} only {} from {from:.3} s to {to:.3} s, the whole time these processes ran, and O_DIRECT I/O goes to the device: fewer than the {} claimed",
                    format_bytes(moved, ByteStyle::TENTHS),
                    format_bytes(b, ByteStyle::TENTHS)
                );
            } else {
                why = format!(
                    "{why}; the device {name} {verb} {} while these processes ran, at least the {} claimed, as O_DIRECT I/O must (the device is shared with the rest of the system, so this bounds the bytes, not the rate)",
                    format_bytes(moved, ByteStyle::TENTHS),
                    format_bytes(b, ByteStyle::TENTHS)
                );
            }
        }
    }
    r.explanation = why;
}

/// The device bytes in the figure's direction over the lifetime of the processes that
/// used the channel: (device, bytes, from, to).
fn device_check(
    c: &Claim,
    _bytes: u64,
    uses: &[&&ChannelUse],
    observed: &Observed,
    device_window: &dyn Fn(u64, f64, f64) -> Option<(String, DiskStat)>,
) -> Option<(String, u64, f64, f64)> {
    if !matches!(c.direction, Direction::Read | Direction::Write) {
        return None;
    }
    let dev = uses
        .iter()
        .flat_map(|u| u.files.iter())
        .find_map(|f| f.dev)?;
    let mut from = f64::INFINITY;
    let mut to: f64 = 0.0;
    for u in uses {
        let rec = observed.processes.iter().find(|p| p.pid == u.pid);
        from = from.min(rec.map_or(u.first_seen_s, |p| p.first_seen_s.min(u.first_seen_s)));
        to = to.max(
            rec.and_then(|p| p.exit_s)
                .unwrap_or(u.last_seen_s)
                .max(u.last_seen_s),
        );
    }
    // The process may have started its I/O before the first reading that saw it.
    let from = (from - 0.05).max(0.0);
    let (name, d) = device_window(dev, from, to)?;
    let moved = if c.direction == Direction::Read {
        d.read_bytes()
    } else {
        d.write_bytes()
    };
    Some((name, moved, from, to))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phase::ChannelFile;

    fn aio_user(pid: u32, path: &str, direct: bool) -> ChannelUse {
        ChannelUse {
            pid,
            comm: "fio".into(),
            channel: "aio".into(),
            evidence: format!(
                "an [aio] ring in {}",
                candor_procfs::paths::pid(pid, "maps")
            ),
            files: vec![ChannelFile {
                path: path.into(),
                dev: Some(1),
                inode: Some(12),
                direct,
            }],
            first_seen_s: 0.1,
            last_seen_s: 1.0,
            ..Default::default()
        }
    }

    fn claim(direct: bool) -> Claim {
        Claim {
            program: "fio".into(),
            test: "j".into(),
            direction: Direction::Read,
            claimed_bps: 766.0 * (1 << 20) as f64,
            bytes: Some(766 << 20),
            seconds: Some(1.0),
            filename: Some("/t/f".into()),
            flags: if direct {
                vec!["direct".into()]
            } else {
                vec![]
            },
            ..Default::default()
        }
    }

    fn observed(uses: Vec<ChannelUse>, phases: Vec<Phase>) -> Observed {
        Observed {
            source: "procfs".into(),
            phases,
            channels: uses,
            ..Default::default()
        }
    }

    /// The procfs witness saw 3 bytes of read calls on the file; fio read 766 MiB through
    /// AIO: unverified, the channel named, no ratio.
    #[test]
    fn an_aio_figure_is_unverified_and_names_the_channel() {
        let p = Phase {
            pid: 7,
            path: "/t/f".into(),
            open_s: 0.1,
            close_s: 1.1,
            read_bytes: 3,
            dev: Some(1),
            inode: Some(12),
            ..Default::default()
        };
        let o = observed(vec![aio_user(7, "/t/f", false)], vec![p.clone()]);
        let c = claim(false);
        let none = |_: u64, _: f64, _: f64| None;
        let mut rows = crate::reconcile(std::slice::from_ref(&c), &o.phases, "/", &none);
        assert_eq!(rows[0].verdict, "overstated", "without this pass");
        apply(std::slice::from_ref(&c), &mut rows, &o, "/", &none);
        assert_eq!(rows[0].verdict, "unverified");
        assert_eq!(rows[0].ratio, None);
        assert_eq!(rows[0].cache_share, None);
        assert_eq!(
            rows[0].explanation,
            format!(
                "fio (pid 7) moved its I/O through Linux AIO (io_submit), which this audit does not count per file \
                 (an [aio] ring in {} showed it): its 766.0 MiB cannot be checked against the file's read/write calls",
                candor_procfs::paths::pid(7, "maps")
            )
        );
    }

    /// O_DIRECT reads go to the device: a device that read less than the figure's bytes
    /// while the process ran makes it overstated; one that read at least as much leaves
    /// it unverified, with the bound said.
    #[test]
    fn the_device_can_contradict_an_o_direct_figure() {
        let o = observed(vec![aio_user(7, "/t/f", true)], vec![]);
        let c = claim(true);
        let dev_reads = |b: u64| {
            move |_: u64, _: f64, _: f64| {
                Some((
                    "vdb".to_string(),
                    DiskStat {
                        read_sectors: b / 512,
                        ..Default::default()
                    },
                ))
            }
        };
        let short = dev_reads(100 << 20);
        let mut rows = crate::reconcile(std::slice::from_ref(&c), &o.phases, "/", &short);
        apply(std::slice::from_ref(&c), &mut rows, &o, "/", &short);
        assert_eq!(rows[0].verdict, "overstated", "{}", rows[0].explanation);
        assert!(
            rows[0]
                .explanation
                .contains("the device vdb read only 100.0 MiB"),
            "{}",
            rows[0].explanation
        );
        let enough = dev_reads(800 << 20);
        let mut rows = crate::reconcile(std::slice::from_ref(&c), &o.phases, "/", &enough);
        apply(std::slice::from_ref(&c), &mut rows, &o, "/", &enough);
        assert_eq!(rows[0].verdict, "unverified");
        assert!(
            rows[0]
                .explanation
                .contains("the device vdb read 800.0 MiB while these processes ran, at least the 766.0 MiB claimed"),
            "{}",
            rows[0].explanation
        );
    }

    /// A job too short for any reading of /proc: eBPF's counts stand for the tree.
    #[test]
    fn a_channel_counted_by_ebpf_alone_is_the_program_s() {
        let tree = ChannelUse {
            channel: "aio".into(),
            evidence: "512 io_submit calls counted by eBPF".into(),
            ..Default::default()
        };
        let mut o = observed(vec![tree], vec![]);
        o.source = "bpf".into();
        let c = claim(false);
        let none = |_: u64, _: f64, _: f64| None;
        let mut rows = crate::reconcile(std::slice::from_ref(&c), &o.phases, "/", &none);
        apply(std::slice::from_ref(&c), &mut rows, &o, "/", &none);
        assert_eq!(rows[0].verdict, "unverified");
        assert_eq!(
            rows[0].explanation,
            "fio moved its I/O through Linux AIO (io_submit), which this audit does not count per file \
             (512 io_submit calls counted by eBPF showed it): its 766.0 MiB cannot be checked against the file's read/write calls"
        );
        // With a procfs reading of the process, the counts join what procfs showed.
        let mut o = observed(vec![aio_user(7, "/t/f", false)], vec![]);
        o.channel_calls.insert("io_submit".into(), 512);
        let mut rows = crate::reconcile(std::slice::from_ref(&c), &o.phases, "/", &none);
        apply(std::slice::from_ref(&c), &mut rows, &o, "/", &none);
        assert!(
            rows[0].explanation.contains(&format!(
                "(an [aio] ring in {} and 512 io_submit calls counted by eBPF showed it)",
                candor_procfs::paths::pid(7, "maps")
            )),
            "{}",
            rows[0].explanation
        );
    }

    /// A process that used AIO on one file and read calls on another: the figure about
    /// the other file keeps its verdict.
    #[test]
    fn aio_on_another_file_of_the_same_process_leaves_a_figure_alone() {
        let p = Phase {
            pid: 7,
            path: "/t/f".into(),
            open_s: 0.0,
            close_s: 1.0,
            read_bytes: 100 << 20,
            dev: Some(1),
            inode: Some(12),
            ..Default::default()
        };
        let mut aio = aio_user(7, "/t/other", false);
        aio.files[0].inode = Some(13);
        let o = observed(vec![aio], vec![p]);
        let c = claim(false);
        let none = |_: u64, _: f64, _: f64| None;
        let mut rows = crate::reconcile(std::slice::from_ref(&c), &o.phases, "/", &none);
        apply(std::slice::from_ref(&c), &mut rows, &o, "/", &none);
        assert_eq!(rows[0].verdict, "overstated", "{}", rows[0].explanation);
        assert!(!rows[0].explanation.contains("AIO"));
    }

    /// The phase eBPF counted for one process's channel on the file.
    fn counted_phase(channel: &str, read: u64, calls: u64) -> Phase {
        Phase {
            pid: 7,
            fd: -1,
            path: "/t/f".into(),
            open_s: 0.0,
            close_s: 1.0,
            read_bytes: read,
            read_calls: Some(calls),
            dev: Some(1),
            inode: Some(12),
            source: "bpf".into(),
            channel: Some(channel.into()),
            ..Default::default()
        }
    }

    /// With eBPF, bytes counted through io_uring on the file are judged like read calls:
    /// 766 MiB in 1 s agrees with the claim, and the sentence says which channel carried
    /// them; the "not counted" sentence and its `unverified` are gone.
    #[test]
    fn a_figure_matched_by_counted_io_uring_bytes_agrees_and_names_the_channel() {
        let mut o = observed(
            vec![ChannelUse {
                channel: "io_uring".into(),
                ..aio_user(7, "/t/f", true)
            }],
            vec![counted_phase("io_uring", 766 << 20, 12256)],
        );
        o.source = "bpf".into();
        o.channels_counted = vec!["aio".into(), "io_uring".into(), "mmap".into()];
        let c = claim(true);
        let none = |_: u64, _: f64, _: f64| None;
        let mut rows = crate::reconcile(std::slice::from_ref(&c), &o.phases, "/", &none);
        apply(std::slice::from_ref(&c), &mut rows, &o, "/", &none);
        assert_eq!(rows[0].verdict, "agrees", "{}", rows[0].explanation);
        assert_eq!(rows[0].observed_bytes, Some(766 << 20));
        assert_eq!(
            rows[0].explanation,
            "claimed and observed agree within 0.0%; 766.0 MiB moved through io_uring \
             (12256 completions, counted per file by eBPF)"
        );
        // Counted channels make no "not counted" note; they say what they carried.
        let n = notes(&o);
        assert!(
            n.iter().all(|x| !x.contains("does not count per file")),
            "{n:?}"
        );
        assert!(
            n.contains(&"766.0 MiB read and 0 B written through io_uring by 1 process on 1 file, counted per file by eBPF: in the file phases marked io_uring".to_string()),
            "{n:?}"
        );
    }

    /// Counted AIO bytes well below the figure: overstated, as read calls would be.
    #[test]
    fn counted_aio_bytes_below_the_figure_make_it_overstated() {
        let mut o = observed(vec![], vec![counted_phase("aio", 100 << 20, 1600)]);
        o.source = "bpf".into();
        o.channels_counted = vec!["aio".into()];
        let c = claim(false);
        let none = |_: u64, _: f64, _: f64| None;
        let mut rows = crate::reconcile(std::slice::from_ref(&c), &o.phases, "/", &none);
        apply(std::slice::from_ref(&c), &mut rows, &o, "/", &none);
        assert_eq!(rows[0].verdict, "overstated", "{}", rows[0].explanation);
        assert!(
            rows[0]
                .explanation
                .ends_with("100.0 MiB moved through Linux AIO (io_submit) (1600 iocbs submitted, counted per file by eBPF)"),
            "{}",
            rows[0].explanation
        );
    }

    /// Counted AIO bytes short of the figure while some iocbs could not be given to a
    /// file: unverified, the requests named, never overstated.
    #[test]
    fn a_figure_above_a_channel_with_unattributed_requests_is_unverified() {
        let mut o = observed(vec![], vec![counted_phase("aio", 100 << 20, 1600)]);
        o.source = "bpf".into();
        o.channels_counted = vec!["aio".into()];
        o.channels_unattributed.insert("aio".into(), [2048, 0]);
        let c = claim(false);
        let none = |_: u64, _: f64, _: f64| None;
        let mut rows = crate::reconcile(std::slice::from_ref(&c), &o.phases, "/", &none);
        apply(std::slice::from_ref(&c), &mut rows, &o, "/", &none);
        assert_eq!(rows[0].verdict, "unverified", "{}", rows[0].explanation);
        assert_eq!(rows[0].ratio, None);
        assert!(
            rows[0].explanation.ends_with(
                "; but 2048 requests through Linux AIO (io_submit) could not be given to a file, so a figure above these bytes cannot be checked"
            ),
            "{}",
            rows[0].explanation
        );
    }

    /// A mapping shows each page once: a figure above the pages counted through it is
    /// unverified, never overstated; one that matches them agrees.
    #[test]
    fn a_figure_above_the_pages_of_a_mapping_is_unverified() {
        let mut o = observed(vec![], vec![counted_phase("mmap", 32 << 20, 512)]);
        o.source = "bpf".into();
        o.channels_counted = vec!["mmap".into()];
        let c = claim(false);
        let none = |_: u64, _: f64, _: f64| None;
        let mut rows = crate::reconcile(std::slice::from_ref(&c), &o.phases, "/", &none);
        apply(std::slice::from_ref(&c), &mut rows, &o, "/", &none);
        assert_eq!(rows[0].verdict, "unverified");
        assert_eq!(rows[0].ratio, None);
        assert_eq!(
            rows[0].explanation,
            "32.0 MiB moved through a memory mapping (8192 pages faulted in, counted per file by eBPF): \
             a mapping shows each page once, and a program that reads or writes a page again through it \
             makes no event, so a figure above these bytes cannot be checked"
        );
        o.phases[0].read_bytes = 766 << 20;
        let mut rows = crate::reconcile(std::slice::from_ref(&c), &o.phases, "/", &none);
        apply(std::slice::from_ref(&c), &mut rows, &o, "/", &none);
        assert_eq!(rows[0].verdict, "agrees", "{}", rows[0].explanation);
    }

    /// A channel on another file is not this figure's; an unmatched figure with eBPF does
    /// not blame a sampling period.
    #[test]
    fn other_files_channels_are_not_this_figure_s() {
        let mut o = observed(vec![aio_user(9, "/t/other", false)], vec![]);
        o.source = "bpf".into();
        let c = claim(false);
        let none = |_: u64, _: f64, _: f64| None;
        let mut rows = crate::reconcile(std::slice::from_ref(&c), &o.phases, "/", &none);
        apply(std::slice::from_ref(&c), &mut rows, &o, "/", &none);
        assert_eq!(rows[0].verdict, "unverified");
        assert!(
            rows[0].explanation.starts_with("no read or write call"),
            "{}",
            rows[0].explanation
        );
        assert!(!rows[0].explanation.contains("sampling"));
    }
}
