//! The phase source for root: candor-bpf's tracer, which sees every read, write, lseek,
//! fsync and close of the tree on kernel tracepoints and hands over one record per
//! open..close. Times are exact and the time inside the I/O calls is known.

use crate::phase::{Observed, Phase, PhaseSource};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

pub struct BpfSource {
    tracer: candor_bpf::Tracer,
    me: u32,
    t0_ns: u64,
    cwd: String,
    raw: Vec<candor_bpf::Phase>,
    /// Block counters by owner on every tick, for the storage bytes of each phase.
    snapshots: Vec<candor_bpf::Snapshot>,
    notes: Vec<String>,
    /// /proc sampling beside the tracer, for each process's own counters and the channels
    /// its maps and descriptors show; read every `COMPANION_EVERY` ticks (and at each
    /// process's exit), since the tracer itself counts every call.
    counters: crate::procfs::ProcfsSource,
    ticks: u64,
    /// The channels counted per file ("aio", "io_uring", "mmap"): their programs attached.
    counted: Vec<String>,
    /// Per channel, the requests not given to a file: [calls, bytes known].
    unattributed: std::collections::BTreeMap<String, [u64; 2]>,
    /// `--record`: the recording under way, stopped when the audit ends.
    recording: Option<(candor_bpf::record::Recording, Arc<crate::Recorder>)>,
}

/// How many of the runner's ticks (20 ms apart with eBPF) go by between two readings of
/// /proc beside the tracer: each reading lists /proc and reads every process of the tree,
/// which costs the machine far more than draining the tracer, and the counters it gives
/// are totals that a later reading still holds.
const COMPANION_EVERY: u64 = 5;

impl BpfSource {
    /// Loads the tracer, following candor itself until the command's process exists (so
    /// the command is followed from its first syscall). Err says why it cannot trace.
    /// With `record`, the tracer also records every file-I/O call of the tree into its
    /// sink until the audit ends.
    pub fn load(cwd: &str, record: Option<Arc<crate::Recorder>>) -> Result<BpfSource, String> {
        let me = std::process::id();
        let mut tracer = candor_bpf::Tracer::load(&candor_bpf::TraceOptions {
            seed_pids: vec![me],
            phases: true,
            record_except: record.as_ref().map(|_| me),
            ..Default::default()
        })
        .map_err(|e| e.to_string())?;
        let recording = match &record {
            Some(r) => {
                let sink = r
                    .take_sink()
                    .ok_or_else(|| "the recording was started already".to_string())?;
                let rec = tracer.take_recording(sink).map_err(|e| e.to_string())?;
                Some((rec, r.clone()))
            }
            None => None,
        };
        let notes = tracer
            .skipped()
            .into_iter()
            .map(|(tp, why)| format!("tracepoint {tp} not attached: {why}"))
            .collect();
        Ok(BpfSource {
            tracer,
            me,
            t0_ns: candor_bpf::monotonic_ns(),
            cwd: cwd.to_string(),
            raw: Vec::new(),
            snapshots: Vec::new(),
            notes,
            counters: crate::procfs::ProcfsSource::companion(0.02 * COMPANION_EVERY as f64),
            ticks: 0,
            counted: Vec::new(),
            unattributed: Default::default(),
            recording,
        })
    }

    fn snapshot(&mut self) {
        self.snapshot_as(false);
    }

    /// A reading of the counters; `tick` ones (between the first and the last) keep the
    /// programs' skipped events as last read.
    fn snapshot_as(&mut self, tick: bool) {
        let s = if tick {
            self.tracer.tick_snapshot()
        } else {
            self.tracer.snapshot_without_files()
        };
        match s {
            Ok(s) => self.snapshots.push(s),
            Err(e) => {
                let e = e.to_string();
                if !self.notes.contains(&e) {
                    self.notes.push(e);
                }
            }
        }
    }

    /// Bytes the tree itself moved on `dev` between two readings (submitted by its
    /// processes, or written back for inodes it dirtied), per direction, and the other
    /// processes' bytes.
    fn storage_between(&self, dev: candor_bpf::DevId, a: usize, b: usize) -> (u64, u64, u64) {
        let (before, after) = (&self.snapshots[a].block, &self.snapshots[b].block);
        let (mut r, mut w, mut foreign) = (0, 0, 0);
        for (k, c) in after {
            if k.dev != dev {
                continue;
            }
            let bytes = c.bytes.saturating_sub(before.get(k).map_or(0, |x| x.bytes));
            match k.owner {
                candor_bpf::snapshot::Owner::Foreign => {
                    foreign += bytes;
                    continue;
                }
                // The journal's and the kernel's housekeeping: the device's, not a file's.
                candor_bpf::snapshot::Owner::Kernel => continue,
                _ => {}
            }
            match k.dir {
                candor_bpf::Direction::Read => r += bytes,
                candor_bpf::Direction::Write => w += bytes,
                _ => {}
            }
        }
        (r, w, foreign)
    }

    /// Each phase's device bytes (read, written, other processes' bytes in its window) and
    /// how they were found, every request counted once.
    ///
    /// - A file whose requests the kernel named (`files`: a page of its page cache, or a
    ///   call on it in O_DIRECT mode; see `Tracer::block_files`) gets exactly those bytes,
    ///   shared among its phases by the bytes each moved in that direction: "request".
    /// - The other phases of a device whose windows (between the readings that bracket
    ///   them) overlap form one group: the tree's traffic over the group's window, less
    ///   the bytes of the group's files counted by request, is shared among them in
    ///   proportion to the bytes each moved in that direction: "share", an estimate.
    ///
    /// Groups never overlap, so the sums over phases never exceed the tree's own traffic
    /// on the device; traffic in a direction no phase of its group moved (the program's
    /// own loading, metadata) stays in the device's totals only.
    #[allow(clippy::type_complexity)]
    fn storage(
        &self,
        phases: &[candor_bpf::Phase],
        files: Option<&BTreeMap<(candor_bpf::DevId, u64), (u64, u64)>>,
    ) -> Vec<Option<(u64, u64, u64, &'static str)>> {
        let mut out = vec![None; phases.len()];
        // By request: each file's bytes among its phases.
        let mut exact: Vec<Option<(u64, u64)>> = vec![None; phases.len()];
        if let Some(files) = files {
            let mut of_file = BTreeMap::<(candor_bpf::DevId, u64), Vec<usize>>::new();
            for (i, p) in phases.iter().enumerate() {
                if !p.block_device && files.contains_key(&(p.dev, p.inode)) {
                    of_file.entry((p.dev, p.inode)).or_default().push(i);
                }
            }
            for (key, idx) in &of_file {
                let (r, w) = files[key];
                let reads = share_whole(
                    r,
                    &idx.iter()
                        .map(|&i| {
                            (
                                phases[i].read_bytes,
                                phases[i].read_bytes + phases[i].write_bytes,
                            )
                        })
                        .collect::<Vec<_>>(),
                );
                let writes = share_whole(
                    w,
                    &idx.iter()
                        .map(|&i| {
                            (
                                phases[i].write_bytes,
                                phases[i].read_bytes + phases[i].write_bytes,
                            )
                        })
                        .collect::<Vec<_>>(),
                );
                for (n, &i) in idx.iter().enumerate() {
                    exact[i] = Some((reads[n], writes[n]));
                }
            }
        }
        let mut spans: Vec<(candor_bpf::DevId, usize, usize, usize)> = Vec::new();
        for (i, p) in phases.iter().enumerate() {
            let end = p.close_ns.or(p.last_io_ns).unwrap_or(p.open_ns);
            let Some((a, b)) = window_index(&self.snapshots, p.open_ns, end) else {
                if let Some((r, w)) = exact[i] {
                    out[i] = Some((r, w, 0, "request"));
                }
                continue;
            };
            spans.push((p.dev, a, b, i));
        }
        spans.sort();
        let mut k = 0;
        while k < spans.len() {
            let (dev, start, mut end, _) = spans[k];
            let mut j = k + 1;
            while j < spans.len() && spans[j].0 == dev && spans[j].1 < end {
                end = end.max(spans[j].2);
                j += 1;
            }
            let group = &spans[k..j];
            let (r, w, foreign) = self.storage_between(dev, start, end);
            // What the group's files counted by request took is not the others' to share.
            let (er, ew) = group
                .iter()
                .filter_map(|g| exact[g.3])
                .fold((0u64, 0u64), |a, b| (a.0 + b.0, a.1 + b.1));
            let (r, w) = (r.saturating_sub(er), w.saturating_sub(ew));
            let members: Vec<(&candor_bpf::Phase, bool)> = group
                .iter()
                .map(|g| (&phases[g.3], exact[g.3].is_some()))
                .collect();
            let reads = share_out(
                r,
                &members
                    .iter()
                    .map(|(p, e)| (if *e { 0 } else { p.read_bytes }, p.direct && !e))
                    .collect::<Vec<_>>(),
            );
            let writes = share_out(
                w,
                &members
                    .iter()
                    .map(|(p, e)| {
                        (
                            if *e { 0 } else { p.write_bytes },
                            (p.direct || p.fsyncs > 0) && !e,
                        )
                    })
                    .collect::<Vec<_>>(),
            );
            for (n, g) in group.iter().enumerate() {
                out[g.3] = Some(match exact[g.3] {
                    Some((er, ew)) => (er, ew, foreign, "request"),
                    None => (reads[n], writes[n], foreign, "share"),
                });
            }
            k = j;
        }
        out
    }

    /// Adds the phases of what the tree moved through Linux AIO, io_uring and mappings
    /// (one per process, file and channel) to `raw`; returns a note per channel with the
    /// requests that could not be given to a file. Mapped pages of files the tree never
    /// opened (its executables) or of system files (shared libraries) are the loader's,
    /// not the program's I/O: left out.
    fn channel_phases(&mut self) -> Vec<String> {
        let (phases, lost) = match self.tracer.channel_phases() {
            Ok(x) => x,
            Err(e) => return vec![e.to_string()],
        };
        self.counted = self.tracer.channels_counted();
        for mut p in phases {
            if p.tgid == self.me {
                continue;
            }
            if p.channel == Some("mmap")
                && p.path.as_deref().is_none_or(crate::phase::is_system_file)
            {
                continue;
            }
            // Its wall time is that of the process's open..close of the file around it,
            // as for read and write calls (the first and last request counted otherwise).
            let end = p.close_ns.unwrap_or(p.open_ns);
            if let Some(q) = self.raw.iter().find(|q| {
                q.channel.is_none()
                    && q.tgid == p.tgid
                    && q.dev == p.dev
                    && q.inode == p.inode
                    && q.open_ns <= p.open_ns
                    && q.close_ns.is_some_and(|c| c >= end)
            }) {
                p.open_ns = q.open_ns;
                p.close_ns = q.close_ns;
            }
            self.raw.push(p);
        }
        for (chan, calls, bytes) in &lost {
            self.unattributed.insert(chan.to_string(), [*calls, *bytes]);
        }
        lost.into_iter()
            .map(|(chan, calls, bytes)| {
                let name = crate::phase::ChannelUse {
                    channel: chan.into(),
                    ..Default::default()
                }
                .name();
                let known = if bytes > 0 {
                    format!(" ({} known)", candor_model::units::format_bytes(bytes, candor_model::units::ByteStyle::TENTHS))
                } else {
                    String::new()
                };
                format!(
                    "{calls} request(s) through {name} could not be given to a file and are not in the file phases{known}"
                )
            })
            .collect()
    }

    fn drain(&mut self) {
        match self.tracer.drain_phases() {
            Ok(p) => self.raw.extend(p.into_iter().filter(|p| p.tgid != self.me)),
            Err(e) => self.notes.push(e.to_string()),
        }
    }
}

/// Shares `total` device bytes among the phases of a group, given each one's bytes in that
/// direction and whether they had to reach the device inside the window (O_DIRECT, or
/// fsync'd writes): those get their bytes first (shared by bytes when the device moved
/// less), and the rest is shared by the bytes the others moved (or, when none did, by
/// every phase's bytes: the filesystem's extra writes for the ones flushed). The shares
/// add up to at most `total`.
fn share_out(total: u64, phases: &[(u64, bool)]) -> Vec<u64> {
    let part = |x: u64, of: u64, all: u64| {
        if all == 0 {
            0
        } else {
            (x as u128 * of as u128 / all as u128) as u64
        }
    };
    let needs: Vec<u64> = phases
        .iter()
        .map(|&(b, must)| if must { b } else { 0 })
        .collect();
    let need: u64 = needs.iter().sum();
    if total <= need {
        return needs.iter().map(|&n| part(total, n, need)).collect();
    }
    let rest = total - need;
    let others: u64 = phases.iter().zip(&needs).map(|(p, n)| p.0 - n).sum();
    let all: u64 = phases.iter().map(|p| p.0).sum();
    phases
        .iter()
        .zip(&needs)
        .map(|(p, &n)| {
            n + if others > 0 {
                part(rest, p.0 - n, others)
            } else {
                part(rest, p.0, all)
            }
        })
        .collect()
}

/// Shares `total` whole among phases, by each one's bytes in the direction (the first of
/// each pair), or by all its bytes (the second) when none moved any that way, or to the
/// first when none moved anything: the shares add up to `total` exactly (what rounding
/// leaves goes to the largest).
fn share_whole(total: u64, phases: &[(u64, u64)]) -> Vec<u64> {
    if phases.is_empty() {
        return Vec::new();
    }
    let by_dir: u64 = phases.iter().map(|p| p.0).sum();
    let by_all: u64 = phases.iter().map(|p| p.1).sum();
    let weights: Vec<u64> = if by_dir > 0 {
        phases.iter().map(|p| p.0).collect()
    } else if by_all > 0 {
        phases.iter().map(|p| p.1).collect()
    } else {
        let mut w = vec![0; phases.len()];
        w[0] = 1;
        w
    };
    let all: u64 = weights.iter().sum();
    let mut out: Vec<u64> = weights
        .iter()
        .map(|&x| (total as u128 * x as u128 / all as u128) as u64)
        .collect();
    let left = total - out.iter().sum::<u64>();
    if let Some(i) = (0..weights.len()).max_by_key(|&i| weights[i]) {
        out[i] += left;
    }
    out
}

/// The indexes of the two snapshots `window` picks.
fn window_index(
    snapshots: &[candor_bpf::Snapshot],
    open_ns: u64,
    end_ns: u64,
) -> Option<(usize, usize)> {
    let before = snapshots.iter().rposition(|s| s.done_ns <= open_ns)?;
    let after = snapshots
        .iter()
        .position(|s| s.taken_ns >= end_ns)
        .unwrap_or(snapshots.len() - 1);
    Some((before, after.max(before)))
}

/// The two snapshots that bracket `open_ns..=end_ns`: the last one read wholly before the
/// start (a reading takes time, and a counter read after the start would already hold
/// some of the phase's bytes) and the first one begun after the end (or the last one).
#[cfg(test)]
fn window(
    snapshots: &[candor_bpf::Snapshot],
    open_ns: u64,
    end_ns: u64,
) -> Option<(&candor_bpf::Snapshot, &candor_bpf::Snapshot)> {
    let before = snapshots.iter().rev().find(|s| s.done_ns <= open_ns)?;
    let after = snapshots
        .iter()
        .find(|s| s.taken_ns >= end_ns)
        .or(snapshots.last())?;
    Some((before, after))
}

/// The metadata calls counted at each reading, from the first reading on. Readings inside a
/// stretch where no count moved are left out (the one before a change and the one after
/// are kept: they bound the change in time).
pub fn call_ticks(snapshots: &[candor_bpf::Snapshot], t0_ns: u64) -> Vec<crate::phase::CallTick> {
    let Some(first) = snapshots.first() else {
        return Vec::new();
    };
    let all: Vec<crate::phase::CallTick> = snapshots
        .iter()
        .map(|s| {
            let d = s.delta(first);
            let mut tick = crate::phase::CallTick {
                t_s: s.taken_ns.saturating_sub(t0_ns) as f64 / 1e9,
                ..Default::default()
            };
            for name in crate::phase::METADATA_CALLS {
                if let Some(c) = d.syscalls.get(name).filter(|c| c.count > 0) {
                    tick.count.insert(name.to_string(), c.count);
                    tick.time_ns.insert(name.to_string(), c.time_ns);
                }
            }
            tick
        })
        .collect();
    let n = all.len();
    (0..n)
        .filter(|&i| {
            i == 0
                || i + 1 == n
                || all[i].count != all[i - 1].count
                || all[i + 1].count != all[i].count
        })
        .map(|i| all[i].clone())
        .collect()
}

/// `path` without its "." components ("./tmp-x" opened in /d is /d/tmp-x); ".." is kept,
/// since a symbolic link before it decides where it leads. A trailing "." stays: it says
/// the descriptor named the directory itself (see `unnamed_file`).
fn without_dots(path: &str) -> String {
    let mut parts: Vec<&str> = path.split('/').collect();
    let last = parts.len().saturating_sub(1);
    let mut i = 0;
    parts.retain(|c| {
        let keep = *c != "." || i == last;
        i += 1;
        keep
    });
    parts.join("/")
}

/// A descriptor that read or wrote data yet names a directory was opened with O_TMPFILE
/// (ioping's test file): an unnamed file in that directory, said so instead of showing the
/// directory as the file (`/mnt/.`). A directory's own phase (an fsync of it) moves no
/// bytes and keeps its name.
fn unnamed_file(path: String, inode: u64, bytes: u64) -> String {
    let dir = path.ends_with("/.") || std::fs::metadata(&path).is_ok_and(|m| m.is_dir());
    if bytes == 0 || !dir {
        return path;
    }
    let d = path
        .strip_suffix("/.")
        .unwrap_or(&path)
        .trim_end_matches('/');
    format!("{d}/(an unnamed O_TMPFILE file, inode {inode})")
}

/// Converts a tracer phase to the audit's phase (times relative to `t0_ns`).
pub fn convert(p: &candor_bpf::Phase, t0_ns: u64, cwd: &str, now_ns: u64) -> Phase {
    let s = |ns: u64| ns.saturating_sub(t0_ns) as f64 / 1e9;
    let path = match &p.path {
        Some(x) if x.starts_with('/') => without_dots(x),
        Some(x) => without_dots(&format!("{}/{}", cwd.trim_end_matches('/'), x)),
        None => format!("<inode {} on {}:{}>", p.inode, p.dev.major, p.dev.minor),
    };
    let path = unnamed_file(path, p.inode, p.read_bytes + p.write_bytes);
    // The time inside the read calls and inside the write calls, each measured; the time
    // inside a channel (AIO, io_uring, a mapping) is not (none spent in a direction that
    // moved nothing).
    let (rt, wt) = if p.channel.is_some() {
        (
            (p.read_bytes == 0).then_some(0.0),
            (p.write_bytes == 0).then_some(0.0),
        )
    } else {
        (Some(p.read_ns as f64 / 1e9), Some(p.write_ns as f64 / 1e9))
    };
    Phase {
        pid: p.tgid,
        fd: p.fd as i32,
        path,
        dev: Some(libc::makedev(p.dev.major, p.dev.minor)),
        inode: Some(p.inode),
        open_s: s(p.open_ns),
        close_s: s(p.close_ns.or(p.last_io_ns).unwrap_or(now_ns)),
        time_uncertainty_s: 0.0,
        read_bytes: p.read_bytes,
        write_bytes: p.write_bytes,
        read_calls: Some(p.read_calls),
        write_calls: Some(p.write_calls),
        read_time_s: rt,
        write_time_s: wt,
        fsync_count: Some(p.fsyncs),
        fsync_time_s: (p.channel.is_none() || p.fsyncs == 0).then_some(p.fsync_ns as f64 / 1e9),
        lseek_count: Some(p.lseeks),
        record_sizes: p.record_sizes.to_dump().buckets,
        offsets: p.offsets.to_dump().buckets,
        direct: p.direct,
        block_device: p.block_device,
        source: "bpf".into(),
        channel: p.channel.map(str::to_string),
        ..Default::default()
    }
}

impl PhaseSource for BpfSource {
    fn name(&self) -> &'static str {
        "bpf"
    }

    fn before_spawn(&mut self) -> Result<(), String> {
        // A first reading of the block counters, so phases that open at once have a start.
        self.snapshot();
        Ok(())
    }

    fn attach(&mut self, root: u32, t0: Instant) -> Result<(), String> {
        let elapsed = t0.elapsed().as_nanos() as u64;
        self.t0_ns = candor_bpf::monotonic_ns().saturating_sub(elapsed);
        self.tracer.add_pid(root).map_err(|e| e.to_string())?;
        self.tracer.remove_pid(self.me).map_err(|e| e.to_string())?;
        self.snapshot();
        self.counters.attach(root, t0)
    }

    fn output_probe(&mut self, probe: Box<dyn Fn() -> u64 + Send>) {
        self.counters.output_probe(probe);
    }

    fn set_output_bytes(&mut self, bytes: u64) {
        self.counters.set_output_bytes(bytes);
    }

    fn sample(&mut self) {
        self.drain();
        self.snapshot_as(true);
        if self.ticks.is_multiple_of(COMPANION_EVERY) {
            self.counters.sample();
        }
        self.ticks += 1;
    }

    fn exited(&mut self, pid: u32) {
        self.counters.exited(pid);
        self.drain();
    }

    fn finish(&mut self) -> Observed {
        // The tree has ended: the recorder's last calls are in the ring buffer.
        if let Some((rec, to)) = self.recording.take() {
            to.ended(rec.stop());
        }
        self.drain();
        self.snapshot();
        let now = candor_bpf::monotonic_ns();
        match self.tracer.open_phases() {
            Ok(p) => self.raw.extend(p.into_iter().filter(|p| p.tgid != self.me)),
            Err(e) => self.notes.push(e.to_string()),
        }
        match self.tracer.lost_phases() {
            Ok(p) => self.raw.extend(p.into_iter().filter(|p| p.tgid != self.me)),
            Err(e) => self.notes.push(e.to_string()),
        }
        let completeness = match self.tracer.tree_io() {
            Ok(t) => Some(completeness(&self.raw, &t, self.me)),
            Err(e) => {
                self.notes.push(e.to_string());
                None
            }
        };
        let lost = self.channel_phases();
        let files = match self.tracer.block_files() {
            Ok(f) => Some(
                f.into_iter()
                    .map(|(k, r, w)| (k, (r, w)))
                    .collect::<BTreeMap<_, _>>(),
            ),
            Err(e) => {
                self.notes.push(format!(
                    "{e}: each phase's storage bytes are the tree's requests over its window shared by bytes (an estimate), not counted per request"
                ));
                None
            }
        };
        let storage = self.storage(&self.raw, files.as_ref());
        let mut phases: Vec<Phase> = self
            .raw
            .iter()
            .zip(storage)
            .map(|(p, st)| {
                let mut q = convert(p, self.t0_ns, &self.cwd, now);
                if let Some((r, w, foreign, by)) = st {
                    q.foreign_device_bytes = Some(foreign);
                    q.storage_read_bytes = Some(r);
                    q.storage_write_bytes = Some(w);
                    q.storage_by = Some(by.into());
                }
                q
            })
            .filter(|p| p.bytes() > 0 || p.fsync_count.unwrap_or(0) > 0)
            .filter(|p| !candor_procfs::is_kernel_file(&p.path))
            .collect();
        phases.sort_by(|a, b| a.open_s.total_cmp(&b.open_s));
        let mut notes = vec!["observed by eBPF on syscall tracepoints: every read, write, lseek, fsync and close of the tree".to_string()];
        notes.extend(self.notes.iter().cloned());
        notes.extend(lost);
        let mut block_requests_unseen = std::collections::BTreeMap::new();
        match self.tracer.unseen_completions() {
            Ok(unseen) => {
                for (dev, n) in unseen {
                    let name = dev.name().unwrap_or_else(|| dev.to_string());
                    notes.push(format!(
                        "the kernel did not run candor's completion program for {n} block request(s) on {name}: storage bytes on {name} can be short by that many requests"
                    ));
                    block_requests_unseen.insert(name, n);
                }
            }
            Err(e) => notes.push(e.to_string()),
        }
        let block_requests_recovered = match (self.snapshots.first(), self.snapshots.last()) {
            (Some(a), Some(b)) => b
                .completions_recovered
                .saturating_sub(a.completions_recovered),
            _ => 0,
        };
        if block_requests_recovered > 0 {
            notes.push(format!(
                "the kernel did not run candor's completion program for {block_requests_recovered} block request(s); each was counted when its request was used again, with its bytes and without a device latency"
            ));
        }
        let calls = call_ticks(&self.snapshots, self.t0_ns);
        // The channels the tracer counts for the tree but not per file.
        let mut channel_calls = std::collections::BTreeMap::new();
        if let (Some(a), Some(b)) = (self.snapshots.first(), self.snapshots.last()) {
            let d = b.delta(a);
            for name in [
                "io_submit",
                "io_getevents",
                "io_uring_setup",
                "io_uring_enter",
                "page_fault",
            ] {
                if let Some(c) = d.syscalls.get(name).filter(|c| c.count > 0) {
                    channel_calls.insert(name.to_string(), c.count);
                }
            }
        }
        let mut device_traffic = std::collections::BTreeMap::new();
        if let (Some(a), Some(b)) = (self.snapshots.first(), self.snapshots.last()) {
            use candor_bpf::snapshot::Owner;
            for (k, c) in &b.delta(a).block {
                let name = k.dev.name().unwrap_or_else(|| k.dev.to_string());
                let t: &mut crate::phase::DeviceTraffic = device_traffic.entry(name).or_default();
                let read = match k.dir {
                    candor_bpf::Direction::Read => true,
                    candor_bpf::Direction::Write => false,
                    candor_bpf::Direction::Discard => {
                        t.discarded_bytes += c.bytes;
                        continue;
                    }
                    candor_bpf::Direction::Other => {
                        t.zeroed_bytes += c.bytes;
                        continue;
                    }
                };
                let slot = match (k.owner, read) {
                    (o, true) if o.is_own() => &mut t.own_read_bytes,
                    (o, false) if o.is_own() => &mut t.own_write_bytes,
                    (Owner::Kernel, true) => &mut t.kernel_read_bytes,
                    (Owner::Kernel, false) => &mut t.kernel_write_bytes,
                    (_, true) => &mut t.foreign_read_bytes,
                    (_, false) => &mut t.foreign_write_bytes,
                };
                *slot += c.bytes;
            }
            // A device the tree's files are on that carried no request in the run: the
            // tracer saw every request, so its traffic is none, not unknown (the account
            // would otherwise fall back to /proc's counters, whose write_bytes are the
            // bytes dirtied, not the bytes the device wrote).
            for p in &phases {
                if let Some(name) = p.dev.and_then(crate::disk::device_name) {
                    device_traffic.entry(name).or_default();
                }
            }
        }
        let mut counted = self.counters.finish();
        // A channel the tracer counted that /proc never showed (a process that used it
        // between two readings): the tree's, without a process or a file.
        for (channel, calls) in [
            ("aio", &["io_submit"][..]),
            ("io_uring", &["io_uring_setup", "io_uring_enter"][..]),
        ] {
            let n: Vec<String> = calls
                .iter()
                .filter_map(|c| channel_calls.get(*c).map(|n| format!("{n} {c} calls")))
                .collect();
            if !n.is_empty() && !counted.channels.iter().any(|u| u.channel == channel) {
                counted.channels.push(crate::phase::ChannelUse {
                    channel: channel.into(),
                    evidence: format!("{} counted by eBPF", n.join(" and ")),
                    ..Default::default()
                });
            }
        }
        Observed {
            source: "bpf".into(),
            phases,
            processes: counted.processes,
            notes,
            block_requests_unseen,
            block_requests_recovered,
            calls,
            channels: counted.channels,
            channel_calls,
            still_running: Vec::new(),
            device_traffic,
            channels_counted: self.counted.clone(),
            channels_unattributed: self.unattributed.clone(),
            completeness,
        }
    }
}

/// The file records of the processes that exited, against those processes' own counters
/// (the kernel's task->ioac at each thread's exit), with what no record holds by cause.
pub fn completeness(
    raw: &[candor_bpf::Phase],
    tree: &[(u32, candor_bpf::raw::TreeIo)],
    me: u32,
) -> crate::phase::Completeness {
    let mut c = crate::phase::Completeness::default();
    let exited: std::collections::BTreeSet<u32> = tree
        .iter()
        .filter(|(pid, t)| *pid != me && t.threads_exited > 0)
        .map(|(pid, _)| *pid)
        .collect();
    for (pid, t) in tree {
        if !exited.contains(pid) {
            continue;
        }
        c.processes += 1;
        c.process_read_bytes += t.rchar;
        c.process_write_bytes += t.wchar;
        c.process_read_calls += t.syscr;
        c.process_write_calls += t.syscw;
        c.other_bytes += t.other_rbytes + t.other_wbytes;
        c.other_calls += t.other_rcalls + t.other_wcalls;
        c.unattributed_bytes += t.full_rbytes + t.full_wbytes;
        c.unattributed_calls += t.full_rcalls + t.full_wcalls;
    }
    // Read and write calls only: what moved through AIO, io_uring or a mapping is in no
    // process's read and write counters.
    for p in raw
        .iter()
        .filter(|p| p.channel.is_none() && exited.contains(&p.tgid))
    {
        c.file_read_bytes += p.read_bytes;
        c.file_write_bytes += p.write_bytes;
        c.file_read_calls += p.read_calls;
        c.file_write_calls += p.write_calls;
        c.merged_phases += p.merged;
    }
    c
}

#[cfg(test)]
mod tests {
    #[allow(unused_imports)]
    use super::share_out as _;
    use super::window;
    use candor_bpf::Snapshot;

    fn snap(taken_ns: u64, done_ns: u64) -> Snapshot {
        Snapshot::decode(&candor_bpf::raw::RawSnapshot {
            taken_ns,
            done_ns,
            ..Default::default()
        })
    }

    #[test]
    fn device_bytes_go_first_to_the_phases_that_had_to_reach_the_device() {
        use super::share_out;
        // A 1000-byte fsync'd file and a 500-byte buffered one; the device wrote 1100.
        assert_eq!(
            share_out(1100, &[(1000, true), (500, false)]),
            vec![1000, 100]
        );
        // Less than the flushed file's bytes: all of it to that file.
        assert_eq!(share_out(800, &[(1000, true), (500, false)]), vec![800, 0]);
        // Only flushed files: the extra by bytes.
        assert_eq!(
            share_out(3000, &[(1000, true), (500, true)]),
            vec![2000, 1000]
        );
        // Nothing had to reach the device: by bytes; no bytes at all: nothing given.
        assert_eq!(
            share_out(300, &[(100, false), (200, false)]),
            vec![100, 200]
        );
        assert_eq!(share_out(300, &[(0, false), (0, false)]), vec![0, 0]);
        let s = share_out(12345, &[(7, true), (11, false), (13, true)]);
        assert!(s.iter().sum::<u64>() <= 12345);
    }

    #[test]
    fn a_reading_that_straddles_the_open_does_not_start_the_window() {
        // The second reading began before the open (100) but ended after it: its block
        // counters may already hold the phase's first requests.
        let s = [snap(10, 20), snap(90, 130), snap(300, 310), snap(400, 410)];
        let (a, b) = window(&s, 100, 250).expect("a window");
        assert_eq!((a.taken_ns, b.taken_ns), (10, 300));
        // Nothing read wholly before the open: no window at all, rather than a short one.
        assert!(window(&s[1..], 100, 250).is_none());
        // Past the last reading, the last one closes the window.
        let (_, b) = window(&s, 100, 500).expect("a window");
        assert_eq!(b.taken_ns, 400);
    }

    #[test]
    fn dot_components_leave_the_path() {
        use super::without_dots;
        assert_eq!(without_dots("/d/./tmp-x/./f"), "/d/tmp-x/f");
        assert_eq!(without_dots("/d/."), "/d/.");
        assert_eq!(without_dots("/d/../e/f"), "/d/../e/f");
        assert_eq!(without_dots("/d/f"), "/d/f");
    }

    /// Data read or written through a descriptor that names a directory: an O_TMPFILE
    /// file, named as one; a directory's fsync keeps the directory's name.
    #[test]
    fn an_o_tmpfile_file_is_not_shown_as_its_directory() {
        use super::unnamed_file;
        let d = std::env::temp_dir().join(format!("candor-tmpfile-{}", std::process::id()));
        std::fs::create_dir_all(&d).expect("a temporary directory");
        let dir = d.display().to_string();
        assert_eq!(
            unnamed_file(format!("{dir}/."), 12, 4096),
            format!("{dir}/(an unnamed O_TMPFILE file, inode 12)")
        );
        assert_eq!(
            unnamed_file(dir.clone(), 12, 1),
            format!("{dir}/(an unnamed O_TMPFILE file, inode 12)")
        );
        assert_eq!(unnamed_file(dir.clone(), 12, 0), dir);
        let f = format!("{dir}/f");
        std::fs::write(&f, b"x").expect("write");
        assert_eq!(unnamed_file(f.clone(), 13, 1), f);
        let _ = std::fs::remove_dir_all(&d);
    }
}
