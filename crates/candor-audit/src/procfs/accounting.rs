//! The sampler's accounting, tick by tick: a process's own bytes (its live threads' deltas)
//! told apart from what its counters absorbed of the children it reaped, handed to the files
//! it had open; files that opened, reopened or closed since the last tick; the late bytes of
//! a vanished child or of an ended process given back to the files they closed.

use super::walk::Reading;
use super::{Io, OpenFile, ProcfsSource};
use crate::phase::{ChannelFile, Phase};
use candor_procfs::{Kernel, Pid};
use std::collections::HashSet;
use std::os::unix::fs::{FileTypeExt, MetadataExt};

/// A file only ever written forward by write calls (its position kept up with its bytes)
/// cannot have taken more bytes than its size: the rest of a closing tick's bytes went
/// elsewhere (dd's summary written to /dev/null after it closed its output). Returns what
/// is taken off.
fn trim_to_size(f: &mut OpenFile) -> u64 {
    if !forward(f) {
        return 0;
    }
    trim_phase(&mut f.phase)
}

/// Whether a file was only ever written forward by write calls.
fn forward(f: &OpenFile) -> bool {
    f.sequential && f.pos_follows && f.info.writes() && !f.info.reads()
}

/// Takes off a forward-only writer's phase what is beyond its file's size; returns it.
fn trim_phase(ph: &mut Phase) -> u64 {
    let Ok(md) = std::fs::metadata(&ph.path) else {
        return 0;
    };
    if !md.file_type().is_file() || Some(md.ino()) != ph.inode {
        return 0;
    }
    let excess = ph.write_bytes.saturating_sub(md.len());
    ph.write_bytes -= excess;
    excess
}

impl ProcfsSource {
    /// A process vanished (reaped by its parent): close its files; its parent's counters
    /// will absorb its totals, and what it did after its last reading comes with them.
    pub(super) fn vanish(&mut self, pid: u32, at: f64) {
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
    pub(super) fn apply(&mut self, pid: u32, r: Reading, total: Io, now: f64) {
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
                // A file written forward to its end cannot take more than its size: the
                // rest came after it closed (dd's summary to /dev/null).
                for &i in &last {
                    if self.forward_writers.contains(&i) {
                        if let Some(ph) = self.phases.get_mut(i) {
                            self.unattributed.wchar += trim_phase(ph);
                        }
                    }
                }
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
                if forward(&f) {
                    self.forward_writers.insert(self.phases.len());
                }
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

    /// Closes every file of a process (it ended) and remembers them for late bytes.
    pub(super) fn close_all(&mut self, pid: u32, at: f64) {
        let Some(p) = self.procs.get_mut(&pid) else {
            return;
        };
        for (_, mut f) in p.files.drain() {
            self.unattributed.wchar += trim_to_size(&mut f);
            if forward(&f) {
                self.forward_writers.insert(self.phases.len());
            }
            let mut ph = f.phase;
            ph.close_s = at;
            p.last_files.push(self.phases.len());
            self.phases.push(ph);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phase::PhaseSource;
    use crate::procfs::tests::tempfile_dir;
    use candor_procfs::FdInfo;

    /// Ends the sampling and removes `dir`: the bytes written to `path` in every phase, and
    /// what was observed.
    fn finish_writing(
        mut src: ProcfsSource,
        dir: &std::path::Path,
        path: &str,
    ) -> (u64, crate::phase::Observed) {
        let obs = src.finish();
        let _ = std::fs::remove_dir_all(dir);
        let written = obs
            .phases
            .iter()
            .filter(|p| p.path == path)
            .map(|p| p.write_bytes)
            .sum();
        (written, obs)
    }

    /// A reading of a process found ended, with its counters `total` and, when given, its
    /// descriptor 1 open on a file at a position and seen closing.
    fn ended(total: Io, closing: Option<(&str, FdInfo)>) -> Reading {
        Reading {
            total: Some(total),
            threads: None,
            closing: closing.iter().map(|_| 1).collect(),
            fds: closing
                .into_iter()
                .map(|(p, i)| (1, p.to_string(), i))
                .collect(),
            ended: true,
        }
    }

    /// dd's way of ending: its output written whole and closed, then its summary written to
    /// /dev/null; a reading that finds it ended after the close brings the summary's bytes
    /// with no file open. They are not the output file's: a file written forward to its end
    /// takes no more than its size (a fresh-clone run once gave dd's 200 MiB file 63 bytes
    /// more than its size).
    #[test]
    fn late_bytes_beyond_a_forward_writer_s_size_are_not_its() {
        let dir = tempfile_dir("late-summary");
        let path = dir.join("out");
        let f = std::fs::File::create(&path).unwrap();
        let mib = 1u64 << 20;
        f.set_len(4 * mib).unwrap();
        let path = path.display().to_string();
        let info = |pos: u64| FdInfo::parse(&format!("pos:\t{pos}\nflags:\t0100001\nmnt_id:\t1\n"));
        let io = |w: u64| Io {
            wchar: w,
            syscw: w.div_ceil(mib),
            write_bytes: w,
            ..Default::default()
        };
        let pid = 4_000_001;
        let mut src = ProcfsSource::new(0.005);
        src.add_proc(pid, 1, "dd".into(), 0.0);
        for (k, t) in [(1u64, 0.01), (2, 0.02), (3, 0.03), (4, 0.04)] {
            let alive = Reading {
                total: Some(io(k * mib)),
                threads: Some([(pid, io(k * mib))].into_iter().collect()),
                fds: vec![(1, path.clone(), info(k * mib))],
                closing: Vec::new(),
                ended: false,
            };
            src.apply(pid, alive, io(k * mib), t);
        }
        // Closed, then ended: the summary's 98 bytes arrive with no file open.
        let closed = ended(io(4 * mib), Some((&path, info(4 * mib))));
        src.apply(pid, closed, io(4 * mib), 0.05);
        let last = ended(io(4 * mib + 98), None);
        src.apply(pid, last, io(4 * mib + 98), 0.06);
        let (written, obs) = finish_writing(src, &dir, &path);
        assert_eq!(written, 4 * mib, "{obs:#?}");
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
        let racy = ended(io(63 * mib), Some((&path, info(63 * mib))));
        src.apply(pid, racy, io(63 * mib), 0.02);
        // The final counters, read when the runner saw it end.
        let last = ended(io(64 * mib), None);
        src.apply(pid, last, io(64 * mib), 0.03);
        let (written, obs) = finish_writing(src, &dir, &path);
        assert_eq!(written, 64 * mib, "{obs:#?}");
        assert!(
            !obs.notes
                .iter()
                .any(|n| n.contains("not attributed to a file")),
            "{:?}",
            obs.notes
        );
    }
}
