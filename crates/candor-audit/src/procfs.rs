//! The phase source that needs no privileges: samples the processes' files of procfs (through
//! `candor_procfs::Kernel`) every few milliseconds while the audited tree runs. Each tick it
//! finds the tree's processes (new ones by their parent), lists their open files (each
//! descriptor and its fdinfo: path, position, O_DIRECT, access mode) and reads every
//! thread's I/O counters, then hands each process's byte deltas to the files it had open.
//!
//! Why per thread: a process's own io counters also absorb the totals of the children it
//! reaps. Reading the threads separately shows that absorbed part apart, so the last bytes of
//! a child that ended between two ticks (what the child did after its last reading) can be
//! given back to the child's files instead of being lost or counted twice.
//!
//! Limits (stated in the audit's notes): open and close times are known to half a tick, the
//! time inside I/O calls and fsync are not seen at all, and bytes are shared between files a
//! process has open at the same time by how far each file's position moved (or evenly).

use crate::phase::{ChannelFile, ChannelUse, Observed, Phase, PhaseSource, ProcessRecord};
// The /proc parsers are candor-procfs's; `Io` is a process's (or a thread's) io counters.
use candor_procfs::{paths, FdInfo, Kernel, Pid, PidIo as Io};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::time::Instant;

struct OpenFile {
    phase: Phase,
    info: FdInfo,
    /// How far the position moved since the previous tick (shares bytes between files).
    moved: u64,
    /// The position has only moved forward so far (a sequential pass).
    sequential: bool,
    /// Open in the auditor itself when the command started: the caller's file, passed down
    /// (a lock that `flock` holds, a redirect), not one the command opened.
    inherited: bool,
    /// The position kept up with the bytes written (write calls, not pwrite).
    pos_follows: bool,
}

/// A file only ever written forward by write calls (its position kept up with its bytes)
/// cannot have taken more bytes than its size: the rest of a closing tick's bytes went
/// elsewhere (dd's summary written to /dev/null after it closed its output). Returns what
/// is taken off.
fn trim_to_size(f: &mut OpenFile) -> u64 {
    if !(f.sequential && f.pos_follows && f.info.writes() && !f.info.reads()) {
        return 0;
    }
    let Ok(md) = std::fs::metadata(&f.phase.path) else {
        return 0;
    };
    if !md.file_type().is_file() || Some(md.ino()) != f.phase.inode {
        return 0;
    }
    let excess = f.phase.write_bytes.saturating_sub(md.len());
    f.phase.write_bytes -= excess;
    excess
}

struct Proc {
    rec: ProcessRecord,
    /// Last reading of each live thread.
    threads: HashMap<u32, Io>,
    /// Last reading of the whole process (its io counters).
    total: Io,
    /// What has been accounted for this process so far: the larger of the whole reading
    /// and the threads' sum (the threads are read a moment after the whole).
    known: Io,
    /// Largest (whole - threads' sum) seen: what dead threads and reaped children brought.
    beyond_max: Io,
    /// Last readings of vanished children and threads, not yet seen arriving in `total`.
    gone: Io,
    /// Children that vanished and whose late bytes may still arrive in `total`.
    vanished_children: Vec<u32>,
    alive: bool,
    /// Files open at the last tick: fd -> file.
    files: HashMap<i32, OpenFile>,
    /// Indexes in `phases` of the files this process had open when it ended.
    last_files: Vec<usize>,
    /// Every regular file it was seen to have open (where I/O through another channel
    /// than read and write calls may have gone).
    seen_files: Vec<ChannelFile>,
}

/// One tick's reading of one process.
struct Reading {
    total: Option<Io>,
    threads: Option<HashMap<u32, Io>>,
    fds: Vec<(i32, String, FdInfo)>,
    /// Descriptors closed while the counters were read: they take this tick's bytes,
    /// then close.
    closing: Vec<i32>,
    /// The process had ended (a zombie) when it was read: its counters may have been
    /// read a moment before its end, so a later reading can still bring bytes its files
    /// moved before they closed.
    ended: bool,
}

pub struct ProcfsSource {
    t0: Instant,
    interval_s: f64,
    me: u32,
    prev_tick_s: f64,
    classified: HashMap<u32, bool>,
    procs: BTreeMap<u32, Proc>,
    /// Closed phases.
    phases: Vec<Phase>,
    out_total: u64,
    out_applied: u64,
    unattributed: Io,
    extra_notes: Vec<String>,
    output_probe: Option<Box<dyn Fn() -> u64 + Send>>,
    /// (device, inode) of the regular files the auditor had open when the command started.
    inherited: HashSet<(u64, u64)>,
    /// Channels other than read and write calls, by (pid, channel, mapped inode).
    channels: BTreeMap<(u32, &'static str, u64), ChannelUse>,
    /// When each process's channels are next looked at: at every tick while that is cheap,
    /// less often for a process whose memory map takes long to read (a large program's
    /// thousands of mappings), so the sampler keeps its pace.
    next_scan_s: HashMap<u32, f64>,
}

impl ProcfsSource {
    /// `interval_s` is the sampling period the runner will use (for the stated uncertainty).
    pub fn new(interval_s: f64) -> ProcfsSource {
        ProcfsSource {
            t0: Instant::now(),
            interval_s,
            me: std::process::id(),
            prev_tick_s: 0.0,
            classified: HashMap::new(),
            procs: BTreeMap::new(),
            phases: Vec::new(),
            out_total: 0,
            out_applied: 0,
            unattributed: Io::default(),
            extra_notes: Vec::new(),
            output_probe: None,
            inherited: HashSet::new(),
            channels: BTreeMap::new(),
            next_scan_s: HashMap::new(),
        }
    }

    fn now_s(&self) -> f64 {
        self.t0.elapsed().as_secs_f64()
    }

    fn add_proc(&mut self, pid: u32, ppid: u32, comm: String, now: f64) {
        self.classified.insert(pid, true);
        self.procs.entry(pid).or_insert_with(|| Proc {
            rec: ProcessRecord {
                pid,
                ppid,
                comm,
                first_seen_s: now,
                ..Default::default()
            },
            threads: HashMap::new(),
            total: Io::default(),
            known: Io::default(),
            beyond_max: Io::default(),
            gone: Io::default(),
            vanished_children: Vec::new(),
            alive: true,
            files: HashMap::new(),
            last_files: Vec::new(),
            seen_files: Vec::new(),
        });
    }

    /// New processes of the tree: any pid whose parent is in the tree (or is candor itself,
    /// for orphans re-parented to it as subreaper).
    fn discover(&mut self, now: f64) {
        let kernel = Kernel::system();
        let Ok(pids) = kernel.pids() else {
            return;
        };
        let mut fresh = Vec::new();
        for pid in pids {
            if self.classified.contains_key(&pid) {
                continue;
            }
            if let Ok(stat) = kernel.pid_stat(Pid::Id(pid)) {
                fresh.push((pid, stat.ppid, stat.comm));
            }
        }
        // Parents usually have lower pids, but not always: repeat until nothing joins.
        loop {
            let mut joined = Vec::new();
            fresh.retain(|(pid, ppid, comm)| {
                let in_tree = self.classified.get(ppid) == Some(&true)
                    || (*ppid == self.me && *pid != self.me);
                if in_tree {
                    joined.push((*pid, *ppid, comm.clone()));
                }
                !in_tree
            });
            if joined.is_empty() {
                break;
            }
            for (pid, ppid, comm) in joined {
                self.add_proc(pid, ppid, comm, now);
            }
        }
        for (pid, _, _) in fresh {
            self.classified.insert(pid, false);
        }
    }

    fn read_threads(pid: u32) -> Option<HashMap<u32, Io>> {
        let kernel = Kernel::system();
        let tids = kernel.pid_tasks(Pid::Id(pid)).ok()?;
        let mut out = HashMap::new();
        for tid in tids {
            if let Ok(io) = kernel.task_io(Pid::Id(pid), tid) {
                out.insert(tid, io);
            }
        }
        Some(out)
    }

    /// The files a process has open now: fd -> (path, fdinfo), pipes and sockets left out.
    fn read_fds(pid: u32) -> Vec<(i32, String, FdInfo)> {
        let kernel = Kernel::system();
        let Ok(fds) = kernel.pid_fds(Pid::Id(pid)) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for (fd, target) in fds {
            let Some(path) = target.to_str() else {
                continue;
            };
            if !path.starts_with('/') || candor_procfs::is_kernel_file(path) {
                continue;
            }
            let path = path.strip_suffix(" (deleted)").unwrap_or(path).to_string();
            let Ok(info) = kernel.pid_fdinfo(Pid::Id(pid), fd) else {
                continue;
            };
            out.push((fd as i32, path, info));
        }
        out
    }

    fn read(pid: u32) -> Reading {
        // The descriptors are listed before and after the counters: a file closed while
        // they are read (its last bytes are in them) is in the first list, one opened
        // meanwhile (its first bytes may be) in the second.
        let fds_before = Self::read_fds(pid);
        let kernel = Kernel::system();
        let total = kernel.pid_io(Pid::Id(pid)).ok();
        // A zombie's threads are gone: its whole reading is all there is.
        let zombie = kernel.pid_stat(Pid::Id(pid)).is_ok_and(|s| s.state == 'Z');
        let threads = if zombie {
            None
        } else {
            Self::read_threads(pid)
        };
        let (fds, closing) = if zombie {
            let closing = fds_before.iter().map(|f| f.0).collect();
            (fds_before, closing)
        } else {
            merge_fds(fds_before, Self::read_fds(pid))
        };
        Reading {
            total,
            threads,
            fds,
            closing,
            ended: zombie,
        }
    }

    /// A process vanished (reaped by its parent): close its files; its parent's counters
    /// will absorb its totals, and what it did after its last reading comes with them.
    fn vanish(&mut self, pid: u32, at: f64) {
        let Some(p) = self.procs.get_mut(&pid) else {
            return;
        };
        p.alive = false;
        p.rec.exit_s.get_or_insert(at);
        let last = p.known;
        let ppid = p.rec.ppid;
        self.close_all(pid, at);
        if let Some(parent) = self.procs.get_mut(&ppid) {
            parent.gone = parent.gone.plus(last);
            parent.vanished_children.push(pid);
        }
    }

    /// Moves one process's byte deltas to its files, then updates which files are open.
    fn apply(&mut self, pid: u32, r: Reading, total: Io, now: f64) {
        let mid = (self.prev_tick_s + now) / 2.0;
        let uncertainty = self.interval_s / 2.0;
        let Some(p) = self.procs.get_mut(&pid) else {
            return;
        };
        // Own activity: the live threads' deltas (new threads count from zero). What the
        // whole reading holds beyond the threads (dead threads, reaped children) only grows
        // when something ends; the whole is read a moment before the threads, so the
        // difference is taken against its running maximum.
        let absorbed = match r.threads.filter(|t| !t.is_empty()) {
            Some(threads) => {
                let mut own = Io::default();
                for (tid, io) in &threads {
                    let before = p.threads.get(tid).copied().unwrap_or_default();
                    own = own.plus(io.saturating_sub(before));
                }
                for (tid, io) in &p.threads {
                    if !threads.contains_key(tid) {
                        p.gone = p.gone.plus(*io);
                    }
                }
                let sum = threads.values().fold(Io::default(), |a, b| a.plus(*b));
                let beyond = total.saturating_sub(sum);
                let growth = beyond.saturating_sub(p.beyond_max);
                p.beyond_max = Io::max(p.beyond_max, beyond);
                p.known = Io::max(total, sum);
                p.threads = threads;
                (own, growth)
            }
            None => {
                // Against what was already counted (the threads are read after the whole,
                // so `known` may be ahead of the last whole reading).
                let fresh = total.saturating_sub(p.known);
                p.known = Io::max(p.known, total);
                if p.gone == Io::default() {
                    (fresh, Io::default())
                } else {
                    (Io::default(), fresh)
                }
            }
        };
        let (own, absorbed) = absorbed;
        // Beyond the last readings of what vanished, the absorbed part is their late bytes;
        // with nothing vanished, it is the reading gap and is already counted.
        let tail = if p.gone == Io::default() {
            Io::default()
        } else {
            absorbed.saturating_sub(p.gone)
        };
        p.gone = p.gone.saturating_sub(absorbed);
        p.total = total;
        if p.rec.comm.is_empty() {
            if let Ok(c) = Kernel::system().pid_comm(Pid::Id(pid)) {
                p.rec.comm = c.trim_end().to_string();
            }
        }
        p.rec.io = total;

        // stdout/stderr bytes are in wchar but are not file bytes.
        let mut own = own;
        let take = self
            .out_total
            .saturating_sub(self.out_applied)
            .min(own.wchar);
        own.wchar -= take;
        self.out_applied += take;
        // New files open a phase now (their bytes of this tick are theirs).
        let mut seen = HashSet::new();
        let mut replaced = Vec::new();
        let closing = r.closing;
        for (fd, path, info) in r.fds {
            seen.insert(fd);
            if let Some(f) = p.files.get_mut(&fd).filter(|f| f.phase.path == path) {
                // The same path on the same descriptor may still be a new open: the program
                // closed and reopened it between two ticks (iozone does, test after test).
                // Signs: other open flags, or a position that started over from zero
                // within this tick on a file that had only moved forward.
                let moved_now = if info.writes() { own.wchar } else { own.rchar };
                let restarted = f.sequential && info.pos < f.info.pos && info.pos <= moved_now;
                if info.flags == f.info.flags && !restarted {
                    f.sequential &= info.pos >= f.info.pos;
                    f.pos_follows = info.pos > 0 && info.pos >= f.phase.write_bytes;
                    f.moved = info.pos.abs_diff(f.info.pos);
                    f.info = info;
                    continue;
                }
                // The old phase keeps what was moved before the new open: in a direction
                // the new open does not take, all of this tick's bytes; in a shared one,
                // what the new position does not account for.
                let split = |moved: u64, old_dir: bool, new_dir: bool| -> u64 {
                    match (old_dir, new_dir) {
                        (true, false) => moved,
                        (true, true) => moved.saturating_sub(info.pos),
                        _ => 0,
                    }
                };
                let w = split(own.wchar, f.info.writes(), info.writes());
                let r = split(own.rchar, f.info.reads(), info.reads());
                let part = |x: u64, of: u64, total: u64| -> u64 {
                    if total == 0 {
                        0
                    } else {
                        ((x as f64 * of as f64 / total as f64).round() as u64).min(x)
                    }
                };
                let sw = part(own.write_bytes, w, own.wchar);
                let sr = part(own.read_bytes, r, own.rchar);
                f.phase.write_bytes += w;
                f.phase.read_bytes += r;
                *f.phase.storage_write_bytes.get_or_insert(0) += sw;
                *f.phase.storage_read_bytes.get_or_insert(0) += sr;
                own.wchar -= w;
                own.rchar -= r;
                own.write_bytes -= sw;
                own.read_bytes -= sr;
            }
            let Ok(md) = std::fs::metadata(&path) else {
                continue;
            };
            let ft = md.file_type();
            if !(ft.is_file() || ft.is_block_device()) {
                continue;
            }
            if !p
                .seen_files
                .iter()
                .any(|f| f.path == path && f.inode == Some(md.ino()))
            {
                p.seen_files.push(ChannelFile {
                    path: path.clone(),
                    dev: Some(md.dev()),
                    inode: Some(md.ino()),
                    direct: info.direct(),
                });
            }
            let file = OpenFile {
                phase: Phase {
                    pid,
                    fd,
                    path,
                    // A block device's own number: its traffic is on that device.
                    dev: Some(if ft.is_block_device() {
                        md.rdev()
                    } else {
                        md.dev()
                    }),
                    block_device: ft.is_block_device(),
                    inode: Some(md.ino()),
                    open_s: mid,
                    time_uncertainty_s: uncertainty,
                    direct: info.direct(),
                    source: "procfs".into(),
                    storage_read_bytes: Some(0),
                    storage_write_bytes: Some(0),
                    ..Default::default()
                },
                info,
                moved: info.pos,
                sequential: true,
                pos_follows: false,
                inherited: self.inherited.contains(&(md.dev(), md.ino())),
            };
            if let Some(old) = p.files.insert(fd, file) {
                replaced.push(old);
            }
        }
        let mut rest = Self::attribute(p, own);
        if r.ended && p.files.is_empty() && !p.last_files.is_empty() {
            // An ended process with no file open: what its final counters hold beyond the
            // last reading was moved before its files closed (the reading that saw them
            // close was taken a moment before its last calls: dd's last record, read
            // between its counters and the check that found it ended).
            let (w, r) = (rest.wchar > 0, rest.rchar > 0);
            if w || r {
                // The files that closed last (at the same tick).
                let latest = p
                    .last_files
                    .iter()
                    .filter_map(|&i| self.phases.get(i).map(|ph| ph.close_s))
                    .fold(f64::MIN, f64::max);
                let last: Vec<usize> = p
                    .last_files
                    .iter()
                    .copied()
                    .filter(|&i| self.phases.get(i).is_some_and(|ph| ph.close_s == latest))
                    .collect();
                let wrote = last
                    .iter()
                    .any(|&i| self.phases.get(i).is_some_and(|ph| ph.write_bytes > 0));
                let read = last
                    .iter()
                    .any(|&i| self.phases.get(i).is_some_and(|ph| ph.read_bytes > 0));
                let mut late = Io::default();
                if wrote {
                    late.wchar = rest.wchar;
                    late.write_bytes = rest.write_bytes;
                    rest.wchar = 0;
                    rest.write_bytes = 0;
                }
                if read {
                    late.rchar = rest.rchar;
                    late.read_bytes = rest.read_bytes;
                    rest.rchar = 0;
                    rest.read_bytes = 0;
                }
                Self::attribute_closed(&mut self.phases, &last, late);
            }
        }
        self.unattributed = self.unattributed.plus(rest);
        for old in replaced {
            let mut ph = old.phase;
            ph.close_s = mid;
            self.phases.push(ph);
        }
        let closed: Vec<i32> = p
            .files
            .keys()
            .filter(|fd| !seen.contains(fd) || closing.contains(fd))
            .copied()
            .collect();
        for fd in closed {
            if let Some(mut f) = p.files.remove(&fd) {
                self.unattributed.wchar += trim_to_size(&mut f);
                let mut ph = f.phase;
                ph.close_s = mid;
                p.last_files.push(self.phases.len());
                self.phases.push(ph);
            }
        }
        let vanished = std::mem::take(&mut p.vanished_children);
        if tail != Io::default() {
            // The late bytes of a vanished child go to the files it had open.
            let target = vanished
                .iter()
                .filter_map(|c| self.procs.get(c))
                .map(|c| c.last_files.clone())
                .find(|f| !f.is_empty());
            match target {
                Some(idx) => Self::attribute_closed(&mut self.phases, &idx, tail),
                None => {
                    if let Some(p) = self.procs.get_mut(&pid) {
                        let rest = Self::attribute(p, tail);
                        self.unattributed = self.unattributed.plus(rest);
                    }
                }
            }
        } else if p.gone != Io::default() {
            // Still waiting for a vanished child's totals to arrive.
            p.vanished_children = vanished;
        }
    }

    /// Shares a delta among a process's open files by access mode; returns what no file
    /// could take.
    /// A file passed down from the auditor's caller (the lock `flock` holds while it runs
    /// the audit, a redirect) takes a share only when its position moved: with pread the
    /// command's own file moves no position either, and the idle inherited one took half
    /// of its bytes.
    fn attribute(p: &mut Proc, d: Io) -> Io {
        let takes = |f: &OpenFile| !f.inherited || f.moved > 0;
        let mut readers: Vec<i32> = p
            .files
            .iter()
            .filter(|(_, f)| f.info.reads() && takes(f))
            .map(|(fd, _)| *fd)
            .collect();
        // When no reader's position moved, the reads were positional (pread) or went to
        // something that is not a file (/dev/zero, a pipe). A file read through to its end
        // whose position sits there cannot be told apart from the second, so it takes
        // nothing: the bytes stay "not attributed to a file" rather than be guessed (a
        // 76-byte configuration file held open was credited with 14.6 MiB of reads from
        // /dev/zero).
        if !readers.is_empty() && readers.iter().all(|fd| p.files[fd].moved == 0) {
            readers.retain(|fd| {
                let f = &p.files[fd];
                let size = std::fs::metadata(&f.phase.path)
                    .ok()
                    .filter(|md| Some(md.ino()) == f.phase.inode)
                    .map(|md| {
                        if md.file_type().is_block_device() {
                            u64::MAX
                        } else {
                            md.len()
                        }
                    });
                size.is_none_or(|size| f.info.pos < size)
            });
        }
        let writers: Vec<i32> = p
            .files
            .iter()
            .filter(|(_, f)| f.info.writes() && takes(f))
            .map(|(fd, _)| *fd)
            .collect();
        let mut rest = Io::default();
        if readers.is_empty() {
            rest.rchar = d.rchar;
            rest.read_bytes = d.read_bytes;
        }
        if writers.is_empty() {
            rest.wchar = d.wchar;
            rest.write_bytes = d.write_bytes;
        }
        let r = shares(&readers, p);
        for (fd, w) in readers.iter().zip(&r) {
            if let Some(f) = p.files.get_mut(fd) {
                f.phase.read_bytes += part(d.rchar, *w);
                *f.phase.storage_read_bytes.get_or_insert(0) += part(d.read_bytes, *w);
            }
        }
        let w = shares(&writers, p);
        for (fd, w) in writers.iter().zip(&w) {
            if let Some(f) = p.files.get_mut(fd) {
                f.phase.write_bytes += part(d.wchar, *w);
                *f.phase.storage_write_bytes.get_or_insert(0) += part(d.write_bytes, *w);
            }
        }
        rest
    }

    /// Shares late bytes among phases already closed (a vanished child's last files): the
    /// written bytes among the phases that wrote (or, when none did, those that moved
    /// nothing), the read bytes likewise, each direction among its own phases only.
    fn attribute_closed(phases: &mut [Phase], idx: &[usize], d: Io) {
        let takers = |moved: fn(&Phase) -> u64, other: fn(&Phase) -> u64| -> Vec<usize> {
            let did: Vec<usize> = idx
                .iter()
                .copied()
                .filter(|&i| phases.get(i).is_some_and(|ph| moved(ph) > 0))
                .collect();
            if !did.is_empty() {
                return did;
            }
            idx.iter()
                .copied()
                .filter(|&i| phases.get(i).is_some_and(|ph| other(ph) == 0))
                .collect()
        };
        let writers = takers(|p| p.write_bytes, |p| p.read_bytes);
        let readers = takers(|p| p.read_bytes, |p| p.write_bytes);
        let share =
            |x: u64, k: usize, n: usize| x / n as u64 + u64::from((k as u64) < x % n as u64);
        if d.wchar > 0 || d.write_bytes > 0 {
            let n = writers.len();
            for (k, &i) in writers.iter().enumerate() {
                let ph = &mut phases[i];
                ph.write_bytes += share(d.wchar, k, n);
                *ph.storage_write_bytes.get_or_insert(0) += share(d.write_bytes, k, n);
            }
        }
        if d.rchar > 0 || d.read_bytes > 0 {
            let n = readers.len();
            for (k, &i) in readers.iter().enumerate() {
                let ph = &mut phases[i];
                ph.read_bytes += share(d.rchar, k, n);
                *ph.storage_read_bytes.get_or_insert(0) += share(d.read_bytes, k, n);
            }
        }
    }

    /// Closes every file of a process (it ended) and remembers them for late bytes.
    fn close_all(&mut self, pid: u32, at: f64) {
        let Some(p) = self.procs.get_mut(&pid) else {
            return;
        };
        for (_, mut f) in p.files.drain() {
            self.unattributed.wchar += trim_to_size(&mut f);
            let mut ph = f.phase;
            ph.close_s = at;
            p.last_files.push(self.phases.len());
            self.phases.push(ph);
        }
    }
}

impl ProcfsSource {
    /// Notes the channels other than read and write calls a process uses now: an `[aio]`
    /// ring in its memory map (Linux AIO: io_setup maps it, io_submit fills it), an
    /// io_uring descriptor or ring, a regular file mapped into memory.
    fn scan_channels(&mut self, pid: u32, now: f64) {
        if self.next_scan_s.get(&pid).is_some_and(|t| now < *t) {
            return;
        }
        let started = Instant::now();
        let found = Self::channels_of(pid);
        // Ten times the reading's own cost between two readings: at most a tenth of the
        // sampler's time.
        let cost = started.elapsed().as_secs_f64();
        self.next_scan_s.insert(pid, now + 10.0 * cost);
        self.note_channels(pid, now, found);
    }

    fn channels_of(pid: u32) -> Vec<Seen> {
        let mut found: Vec<Seen> = Vec::new();
        let kernel = Kernel::system();
        if let Ok(maps) = kernel.pid_maps(Pid::Id(pid)) {
            for (channel, evidence, file) in channels_in_maps(&maps, pid) {
                if !found.iter().any(|f| f.0 == channel && f.2 == file) {
                    found.push((channel, evidence, file));
                }
            }
        }
        if !found.iter().any(|f| f.0 == "io_uring") {
            if let Ok(fds) = kernel.pid_fds(Pid::Id(pid)) {
                let uring = fds
                    .iter()
                    .any(|(_, t)| t.as_os_str() == "anon_inode:[io_uring]");
                if uring {
                    found.push((
                        "io_uring",
                        format!("an io_uring descriptor in {}", paths::pid(pid, "fd")),
                        None,
                    ));
                }
            }
        }
        found
    }

    fn note_channels(&mut self, pid: u32, now: f64, found: Vec<Seen>) {
        let comm = self
            .procs
            .get(&pid)
            .map(|p| p.rec.comm.clone())
            .unwrap_or_default();
        for (channel, evidence, file) in found {
            let inode = file.as_ref().map_or(0, |f| f.2);
            let e = self
                .channels
                .entry((pid, channel, inode))
                .or_insert_with(|| ChannelUse {
                    pid,
                    comm: comm.clone(),
                    channel: channel.to_string(),
                    evidence,
                    path: file.as_ref().map(|f| f.0.clone()),
                    dev: file.as_ref().map(|f| f.1),
                    inode: file.as_ref().map(|f| f.2),
                    first_seen_s: now,
                    ..Default::default()
                });
            e.last_seen_s = now;
            if e.comm.is_empty() {
                e.comm = comm.clone();
            }
            // The kernel's io-wq workers (threads named iou-wrk-PID) carry the SQEs it
            // cannot complete inline: buffered writes, for one.
            if channel == "io_uring" && !e.evidence.contains("io-wq") {
                let workers = io_wq_workers(pid);
                if workers > 0 {
                    e.evidence = format!(
                        "{} and {workers} io-wq worker thread{} (iou-wrk-{pid})",
                        e.evidence,
                        if workers == 1 { "" } else { "s" }
                    );
                }
            }
        }
    }

    /// The channels seen, each with the files its process had open.
    fn channel_uses(&self) -> Vec<ChannelUse> {
        self.channels
            .values()
            .map(|u| {
                let mut u = u.clone();
                if let Some(p) = self.procs.get(&u.pid) {
                    if u.channel != "mmap" {
                        u.files = p.seen_files.clone();
                    }
                    if u.comm.is_empty() {
                        u.comm = p.rec.comm.clone();
                    }
                }
                u
            })
            .collect()
    }
}

/// How many io-wq worker threads (`iou-wrk-*`) a process has now.
fn io_wq_workers(pid: u32) -> usize {
    let kernel = Kernel::system();
    let Ok(tids) = kernel.pid_tasks(Pid::Id(pid)) else {
        return 0;
    };
    tids.into_iter()
        .filter(|&tid| {
            kernel
                .task_comm(Pid::Id(pid), tid)
                .is_ok_and(|c| c.starts_with("iou-wrk-"))
        })
        .count()
}

/// A channel seen in use: (channel, evidence in words, the mapped file as (path, st_dev,
/// inode) for a mapping).
type Seen = (&'static str, String, Option<(String, u64, u64)>);

/// The channels other than read and write calls that one process's maps show:
/// (channel, evidence, mapped file as (path, st_dev, inode)). A mapped regular file counts
/// unless it is a program or library (it has an executable mapping) or one of the files
/// every program maps at start (locale archives...).
fn channels_in_maps(maps: &str, pid: u32) -> Vec<Seen> {
    let mut out = Vec::new();
    let mut lines: Vec<(String, u64, u64)> = Vec::new();
    let mut exec: HashSet<u64> = HashSet::new();
    for line in maps.lines() {
        let mut f = line.splitn(6, ' ');
        let (Some(_addr), Some(perms), Some(_off), Some(dev), Some(inode)) =
            (f.next(), f.next(), f.next(), f.next(), f.next())
        else {
            continue;
        };
        let path = f.next().unwrap_or("").trim_start();
        let inode: u64 = inode.parse().unwrap_or(0);
        if path.starts_with("/[aio]") {
            out.push((
                "aio",
                format!("an [aio] ring in {}", paths::pid(pid, "maps")),
                None,
            ));
            continue;
        }
        if path == "anon_inode:[io_uring]" {
            out.push((
                "io_uring",
                format!("an io_uring ring in {}", paths::pid(pid, "maps")),
                None,
            ));
            continue;
        }
        if inode == 0 || !path.starts_with('/') {
            continue;
        }
        if perms.contains('x') {
            exec.insert(inode);
            continue;
        }
        let Some((major, minor)) = dev.split_once(':') else {
            continue;
        };
        let (Ok(major), Ok(minor)) = (
            u32::from_str_radix(major, 16),
            u32::from_str_radix(minor, 16),
        ) else {
            continue;
        };
        lines.push((path.to_string(), libc::makedev(major, minor), inode));
    }
    let mut seen = HashSet::new();
    for (path, dev, inode) in lines {
        if exec.contains(&inode) || crate::phase::is_system_file(&path) || !seen.insert(inode) {
            continue;
        }
        // Shared memory (/dev/zero, SysV segments) and deleted files are not files a
        // figure can be about: the path must still name this very regular file.
        let same = std::fs::metadata(&path)
            .is_ok_and(|m| m.file_type().is_file() && m.ino() == inode && m.dev() == dev);
        if same {
            out.push((
                "mmap",
                format!("{path} mapped in {}", paths::pid(pid, "maps")),
                Some((path, dev, inode)),
            ));
        }
    }
    out
}

/// Weights of each file in a share: how far its position moved, or equal when none moved
/// (pread/pwrite leave the position alone). The weights of a group sum to 1.
fn shares(fds: &[i32], p: &Proc) -> Vec<f64> {
    let moved: Vec<f64> = fds
        .iter()
        .map(|fd| p.files.get(fd).map_or(0.0, |f| f.moved as f64))
        .collect();
    let sum: f64 = moved.iter().sum();
    if sum > 0.0 {
        moved.iter().map(|m| m / sum).collect()
    } else {
        vec![1.0 / fds.len().max(1) as f64; fds.len()]
    }
}

/// (device, inode) of the regular files this process has open: what a command it starts
/// inherits from it (and from its caller) unless marked close-on-exec.
fn own_open_files() -> HashSet<(u64, u64)> {
    let Ok(fds) = Kernel::system().pid_fd_links(Pid::Me) else {
        return HashSet::new();
    };
    fds.into_iter()
        .filter_map(|(_, link)| std::fs::metadata(link).ok())
        .filter(|md| md.file_type().is_file())
        .map(|md| (md.dev(), md.ino()))
        .collect()
}

/// A weighted part of a byte count. Rounding can lose or add a byte per file per tick when
/// bytes are shared; a single file always gets the whole count.
fn part(x: u64, w: f64) -> u64 {
    if w >= 1.0 {
        x
    } else {
        (x as f64 * w).round() as u64
    }
}

impl PhaseSource for ProcfsSource {
    fn name(&self) -> &'static str {
        "procfs"
    }

    fn attach(&mut self, root: u32, t0: Instant) -> Result<(), String> {
        self.t0 = t0;
        self.inherited = own_open_files();
        let now = self.now_s();
        self.add_proc(root, self.me, String::new(), now);
        self.sample();
        Ok(())
    }

    fn sample(&mut self) {
        let now = self.now_s();
        self.discover(now);
        // Read everything first, parents (lower pids) before children, then account: a
        // child that vanished is known before its parent's counters are judged.
        let pids: Vec<u32> = self
            .procs
            .iter()
            .filter(|(_, p)| p.alive)
            .map(|(pid, _)| *pid)
            .collect();
        // stdout/stderr bytes are in wchar and must come off it: count the output before
        // and after the readings. When the two counts agree, the readings hold exactly
        // that output; when the command wrote in between, its wchar may or may not hold
        // those bytes, so read again (a few times at most).
        let probe = |me: &Self| me.output_probe.as_ref().map(|p| p());
        let mut readings: Vec<(u32, Reading)> = Vec::new();
        let mut output = None;
        for _ in 0..3 {
            let before = probe(self);
            readings = pids.iter().map(|pid| (*pid, Self::read(*pid))).collect();
            output = before;
            if probe(self) == before {
                break;
            }
        }
        if let Some(o) = output {
            self.out_total = self.out_total.max(o);
        }
        let mid = (self.prev_tick_s + now) / 2.0;
        for (pid, r) in &readings {
            if r.total.is_none() {
                self.vanish(*pid, mid);
            }
        }
        for (pid, r) in readings {
            if let Some(total) = r.total {
                self.apply(pid, r, total, now);
                self.scan_channels(pid, now);
            }
        }
        self.prev_tick_s = now;
    }

    fn exited(&mut self, pid: u32) {
        // A zombie: its files are closed and its counters final; one more tick gives its
        // last bytes to the files it had open. An ended process's /proc files belong to
        // root, so without root its last bytes cannot be read.
        if Kernel::system().pid_io(Pid::Id(pid)).is_err() {
            self.extra_notes.push(format!(
                "the command's counters could not be read after it ended (only root can read an ended process's /proc files): \
                 what it did after the last reading, at {:.3} s, is missing; run as root for exact bytes",
                self.prev_tick_s
            ));
        }
        self.sample();
        let now = self.now_s();
        if let Some(p) = self.procs.get_mut(&pid) {
            p.alive = false;
            p.rec.exit_s = Some(now);
        }
        self.close_all(pid, now);
    }

    fn set_output_bytes(&mut self, bytes: u64) {
        self.out_total = self.out_total.max(bytes);
    }

    fn output_probe(&mut self, probe: Box<dyn Fn() -> u64 + Send>) {
        self.output_probe = Some(probe);
    }

    fn finish(&mut self) -> Observed {
        let now = self.now_s();
        let pids: Vec<u32> = self.procs.keys().copied().collect();
        for pid in pids {
            self.close_all(pid, now);
        }
        let mut phases = std::mem::take(&mut self.phases);
        phases.retain(|p| p.bytes() > 0 || p.wall_s() > 0.0);
        phases.sort_by(|a, b| a.open_s.total_cmp(&b.open_s));
        let mut notes = vec![format!(
            "observed by sampling /proc every {:.0} ms: open and close times are known to within {:.1} ms; \
             time inside I/O calls and fsync are not seen (the eBPF tracer, as root, sees them)",
            self.interval_s * 1e3,
            self.interval_s * 1e3 / 2.0
        )];
        if self.unattributed.rchar + self.unattributed.wchar > 0 {
            notes.push(format!(
                "{} bytes read and {} bytes written by the tree were not attributed to a file: they went to devices such as /dev/zero, pipes or sockets, or to files whose positions do not show which",
                self.unattributed.rchar, self.unattributed.wchar
            ));
        }
        notes.append(&mut self.extra_notes);
        Observed {
            source: "procfs".into(),
            phases,
            processes: self.procs.values().map(|p| p.rec.clone()).collect(),
            notes,
            channels: self.channel_uses(),
            ..Default::default()
        }
    }
}

/// The descriptors open at either listing (the later listing's entry where both have the
/// descriptor: its position is the newer), and those only the earlier one had: closed
/// during the reading, they take the tick's bytes (their last ones are in the counters)
/// and then close.
fn merge_fds(
    before: Vec<(i32, String, FdInfo)>,
    mut after: Vec<(i32, String, FdInfo)>,
) -> (Vec<(i32, String, FdInfo)>, Vec<i32>) {
    let mut closing = Vec::new();
    for b in before {
        if !after.iter().any(|a| a.0 == b.0) {
            closing.push(b.0);
            after.push(b);
        }
    }
    (after, closing)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_in_either_fd_listing_takes_the_tick() {
        let info = |pos: u64| FdInfo::parse(&format!("pos:\t{pos}\nflags:\t0100001\n"));
        let before = vec![
            (1, "/a".to_string(), info(10)),
            (3, "/b".to_string(), info(0)),
        ];
        let after = vec![
            (1, "/a".to_string(), info(20)),
            (4, "/c".to_string(), info(0)),
        ];
        let (merged, closing) = merge_fds(before, after);
        assert_eq!(closing, vec![3]);
        let mut got: Vec<(i32, String, u64)> = merged
            .into_iter()
            .map(|(fd, p, i)| (fd, p, i.pos))
            .collect();
        got.sort();
        // fd 1 with the later position; fd 3 closed during the reading; fd 4 opened.
        assert_eq!(
            got,
            vec![
                (1, "/a".into(), 20),
                (3, "/b".into(), 0),
                (4, "/c".into(), 0)
            ]
        );
    }

    /// What a process's maps show of fio's engines: the AIO ring, the io_uring ring, a
    /// mapped data file; not the program's own segments, shared memory or libraries.
    #[test]
    fn maps_show_aio_io_uring_and_mapped_files() {
        let dir = tempfile_dir("maps");
        let data = dir.join("data");
        std::fs::write(&data, b"x").unwrap();
        let md = std::fs::metadata(&data).unwrap();
        let (maj, min) = (libc::major(md.dev()), libc::minor(md.dev()));
        let exe_path = std::env::current_exe().unwrap();
        let exe = std::fs::metadata(&exe_path).unwrap();
        let maps = format!(
            "55ab43406000-55ab43423000 r--p 00000000 {emaj:02x}:{emin:02x} {eino}                   {exe}\n\
             55ab43423000-55ab434a3000 r-xp 0001d000 {emaj:02x}:{emin:02x} {eino}                   {exe}\n\
             7fa438622000-7fa439633000 rw-s 00000000 00:01 587                        /dev/zero (deleted)\n\
             7fa4382a9000-7fa438421000 rw-s 00000000 00:01 32768                      /SYSV00000000 (deleted)\n\
             7fa4425fc000-7fa4425fd000 rw-s 00000000 00:13 140202                     /[aio] (deleted)\n\
             7fd892a05000-7fd892a06000 rw-s 08000000 00:10 141056                     anon_inode:[io_uring]\n\
             7f93a6800000-7f93ae800000 r--s 00000000 {maj:02x}:{min:02x} {ino}                    {path}\n\
             7f93a6800000-7f93ae800000 r--p 00000000 fe:00 77                         /usr/lib/locale/locale-archive\n",
            emaj = libc::major(exe.dev()),
            emin = libc::minor(exe.dev()),
            eino = exe.ino(),
            exe = exe_path.display(),
            ino = md.ino(),
            path = data.display(),
        );
        let got: Vec<(&str, Option<String>)> = channels_in_maps(&maps, 42)
            .into_iter()
            .map(|(c, _, f)| (c, f.map(|f| f.0)))
            .collect();
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(
            got,
            vec![
                ("aio", None),
                ("io_uring", None),
                ("mmap", Some(data.display().to_string())),
            ]
        );
    }

    /// A vanished child's late bytes go whole to the file it wrote, even when it also had
    /// a file open for reading (once, half went to each, and the written file lost half).
    #[test]
    fn late_bytes_go_whole_to_the_files_of_their_direction() {
        let phase = |path: &str, w: u64, r: u64| Phase {
            path: path.into(),
            write_bytes: w,
            read_bytes: r,
            ..Default::default()
        };
        let mut phases = vec![phase("/in", 0, 100), phase("/out", 1000, 0)];
        let late = Io {
            wchar: 4001,
            rchar: 7,
            write_bytes: 4096,
            ..Default::default()
        };
        ProcfsSource::attribute_closed(&mut phases, &[0, 1], late);
        assert_eq!((phases[0].read_bytes, phases[0].write_bytes), (107, 0));
        assert_eq!((phases[1].read_bytes, phases[1].write_bytes), (0, 5001));
        assert_eq!(phases[1].storage_write_bytes, Some(4096));
        // Two writers share, to the byte.
        let mut two = vec![phase("/a", 1, 0), phase("/b", 1, 0)];
        ProcfsSource::attribute_closed(&mut two, &[0, 1], late);
        assert_eq!(two[0].write_bytes + two[1].write_bytes, 2 + 4001);
    }

    /// The reading that finds a process ended was taken a moment before its last write:
    /// its counters (read first) miss the last record, the ended check (read after) closes
    /// its file. The next reading's final counters bring that record, with no file open:
    /// it goes to the file that closed, not to "no regular file" (dd's 64 MiB once came
    /// out one 1 MiB record short).
    #[test]
    fn an_ended_process_s_last_record_goes_to_the_file_it_closed() {
        let dir = tempfile_dir("last-record");
        let path = dir.join("out");
        let f = std::fs::File::create(&path).unwrap();
        f.set_len(64 << 20).unwrap();
        let path = path.display().to_string();
        let mib = 1u64 << 20;
        let info = |pos: u64| FdInfo::parse(&format!("pos:\t{pos}\nflags:\t0140001\nmnt_id:\t1\n"));
        let io = |w: u64| Io {
            wchar: w,
            syscw: w / mib,
            write_bytes: w,
            ..Default::default()
        };
        let pid = 4_000_000;
        let mut src = ProcfsSource::new(0.005);
        src.add_proc(pid, 1, "dd".into(), 0.0);
        // Alive: 63 records written.
        let alive = Reading {
            total: Some(io(63 * mib)),
            threads: Some([(pid, io(63 * mib))].into_iter().collect()),
            fds: vec![(1, path.clone(), info(63 * mib))],
            closing: Vec::new(),
            ended: false,
        };
        src.apply(pid, alive, io(63 * mib), 0.01);
        // The racy reading: counters before the 64th record, ended by the time it checks.
        let racy = Reading {
            total: Some(io(63 * mib)),
            threads: None,
            fds: vec![(1, path.clone(), info(63 * mib))],
            closing: vec![1],
            ended: true,
        };
        src.apply(pid, racy, io(63 * mib), 0.02);
        // The final counters, read when the runner saw it end.
        let last = Reading {
            total: Some(io(64 * mib)),
            threads: None,
            fds: Vec::new(),
            closing: Vec::new(),
            ended: true,
        };
        src.apply(pid, last, io(64 * mib), 0.03);
        let obs = src.finish();
        let _ = std::fs::remove_dir_all(&dir);
        let written: u64 = obs
            .phases
            .iter()
            .filter(|p| p.path == path)
            .map(|p| p.write_bytes)
            .sum();
        assert_eq!(written, 64 * mib, "{obs:#?}");
        assert!(
            !obs.notes
                .iter()
                .any(|n| n.contains("not attributed to a file")),
            "{:?}",
            obs.notes
        );
    }

    /// Waits until `pid` (a child) has ended, without reaping it, as the audit's runner
    /// does.
    fn wait_zombie(pid: u32) {
        loop {
            // SAFETY: siginfo_t is plain data; waitid fills it.
            let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
            // SAFETY: valid pointer to a siginfo_t; WNOWAIT leaves the child unreaped.
            let r = unsafe {
                libc::waitid(
                    libc::P_PID,
                    pid as libc::id_t,
                    &mut info,
                    libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
                )
            };
            assert_eq!(r, 0, "waitid: {}", std::io::Error::last_os_error());
            // SAFETY: the fields are valid after a successful waitid.
            if unsafe { info.si_pid() } != 0 {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    }

    /// dd, a grandchild (sh runs it and reaps it), writes 32 MiB: every byte reaches its
    /// file's phase, however its end falls between two ticks. dd copies its stdin, fed by
    /// the test: the first 64 KiB, then (once a tick has seen dd's file open, so the file
    /// is known however slowly this machine schedules the sampler) the rest. Sampled as
    /// the runner does: until the command is a zombie, then `exited`, then reaped.
    #[test]
    fn sees_a_child_write_a_file() {
        use std::io::Write;
        let dir = tempfile_dir("sees-a-child");
        let file = dir.join("f");
        let script = format!(
            "dd of={} bs=64k count=512 iflag=fullblock status=none",
            file.display()
        );
        let mut src = ProcfsSource::new(0.002);
        let t0 = Instant::now();
        let mut child = std::process::Command::new("sh")
            .arg("-c")
            .arg(&script)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("sh runs");
        let pid = child.id();
        src.attach(pid, t0).expect("attach");
        let mut input = child.stdin.take().unwrap();
        let chunk = vec![0x5au8; 64 << 10];
        input.write_all(&chunk).unwrap();
        let seen_open = |src: &ProcfsSource| {
            src.procs
                .values()
                .any(|p| p.files.values().any(|f| f.phase.path.ends_with("/f")))
        };
        let deadline = Instant::now() + std::time::Duration::from_secs(30);
        while !seen_open(&src) {
            assert!(Instant::now() < deadline, "no tick saw dd's file in 30 s");
            std::thread::sleep(std::time::Duration::from_millis(2));
            src.sample();
        }
        let feeder = std::thread::spawn(move || {
            for _ in 1..512 {
                input.write_all(&chunk).unwrap();
            }
        });
        let zombie = std::thread::spawn(move || wait_zombie(pid));
        while !zombie.is_finished() {
            src.sample();
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        zombie.join().unwrap();
        feeder.join().unwrap();
        src.exited(pid);
        assert!(child.wait().expect("reap sh").success());
        let obs = src.finish();
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(std::fs::metadata(&file).map(|m| m.len()).ok(), None);
        let written: u64 = obs
            .phases
            .iter()
            .filter(|p| p.path.ends_with("/f"))
            .map(|p| p.write_bytes)
            .sum();
        assert_eq!(written, 512 * 65536, "{obs:#?}");
    }

    /// A fresh directory under the temporary directory.
    fn tempfile_dir(what: &str) -> std::path::PathBuf {
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "candor-audit-procfs-{what}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).expect("a temporary directory");
        dir
    }
}
