//! A process's I/O counters: /proc/<pid>/io (also /proc/self/io and a thread's
//! /proc/<pid>/task/<tid>/io), and the block-layer bytes of every other process.

use crate::{Error, Kernel, Pid};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The counters of /proc/<pid>/io: what a process (all its threads, living and exited, and
/// the children it reaped) moved.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
#[serde(default)]
pub struct PidIo {
    /// Bytes passed to read-like calls, whatever served them.
    pub rchar: u64,
    pub wchar: u64,
    pub syscr: u64,
    pub syscw: u64,
    /// Bytes of block-layer reads the process submitted (cache misses, readahead, O_DIRECT).
    pub read_bytes: u64,
    /// Bytes the process dirtied or wrote directly (counted when dirtied, not when flushed).
    pub write_bytes: u64,
    /// Dirty bytes the process discarded before writeback (truncate, unlink).
    pub cancelled_write_bytes: u64,
}

impl PidIo {
    /// Parses the text of /proc/<pid>/io; None when rchar, wchar, read_bytes or write_bytes
    /// is missing (syscr, syscw and cancelled_write_bytes default to zero).
    pub fn parse(text: &str) -> Option<PidIo> {
        let kv = crate::colon_values(text);
        let g = |k: &str| kv.get(k).copied();
        Some(PidIo {
            rchar: g("rchar")?,
            wchar: g("wchar")?,
            syscr: g("syscr").unwrap_or(0),
            syscw: g("syscw").unwrap_or(0),
            read_bytes: g("read_bytes")?,
            write_bytes: g("write_bytes")?,
            cancelled_write_bytes: g("cancelled_write_bytes").unwrap_or(0),
        })
    }

    /// Growth from `earlier` to `self`, counter by counter (never below zero).
    pub fn saturating_sub(self, earlier: PidIo) -> PidIo {
        self.zip(earlier, u64::saturating_sub)
    }

    pub fn plus(self, o: PidIo) -> PidIo {
        self.zip(o, u64::saturating_add)
    }

    /// The larger of each counter.
    pub fn max(self, o: PidIo) -> PidIo {
        self.zip(o, u64::max)
    }

    fn zip(self, o: PidIo, f: fn(u64, u64) -> u64) -> PidIo {
        PidIo {
            rchar: f(self.rchar, o.rchar),
            wchar: f(self.wchar, o.wchar),
            syscr: f(self.syscr, o.syscr),
            syscw: f(self.syscw, o.syscw),
            read_bytes: f(self.read_bytes, o.read_bytes),
            write_bytes: f(self.write_bytes, o.write_bytes),
            cancelled_write_bytes: f(self.cancelled_write_bytes, o.cancelled_write_bytes),
        }
    }
}

/// /proc/self/io.
pub fn read_self_io() -> Option<PidIo> {
    Kernel::system().pid_io(Pid::Me).ok()
}

/// The calling thread's own counters (/proc/thread-self/io), read with one `read` call of
/// the whole file, and the bytes that call returned. The kernel formats the counters when
/// that call starts and counts the call itself after it (one more `syscr`, that many more
/// `rchar`), so two readings around some work differ from the work's own read-like calls
/// and bytes by exactly the first reading's one call and its bytes; write-like calls
/// (`syscw`, `wchar`) by nothing. None when the file cannot be read or parsed.
pub fn read_thread_io() -> Option<(PidIo, u64)> {
    use std::io::Read;
    let mut f = std::fs::File::open("/proc/thread-self/io").ok()?;
    let mut buf = [0u8; 1024];
    // One call: the whole file is a few hundred bytes, and a second call (to see the end
    // of the file) would be one more read-like call after the figures were taken.
    let n = f.read(&mut buf).ok()?;
    if n == 0 || n == buf.len() {
        return None;
    }
    crate::count_read(n);
    let text = std::str::from_utf8(&buf[..n]).ok()?;
    PidIo::parse(text).map(|io| (io, n as u64))
}

/// The io file at `path` (/proc/<pid>/io, /proc/<pid>/task/<tid>/io); None when it cannot
/// be read (the process ended) or parsed. [`Kernel::pid_io`] and [`Kernel::task_io`] are
/// the same by process id.
pub fn read_pid_io(path: &str) -> Option<PidIo> {
    let t = std::fs::read_to_string(path).ok()?;
    crate::count_read(t.len());
    PidIo::parse(&t)
}

/// Block-layer bytes (read + written, less cancelled writes) of every other process, by pid,
/// with each one's parent: what lets the witness tell a filesystem's own extra traffic from
/// another process's, and the processes of the same job (candor's children, the other ranks
/// of an MPI job and theirs) from strangers.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OthersIo {
    /// pid -> (parent pid, [read_bytes, write_bytes - cancelled_write_bytes]).
    pub procs: BTreeMap<u32, (u32, [u64; 2])>,
    /// Whether every process's counters could be read. Without root, other users'
    /// processes are hidden: the map then holds only the readable ones (the caller's own
    /// user's, which is where a job's processes are), and a partial sum cannot clear the
    /// device of foreign traffic. As root, the few processes the kernel still hides (a
    /// sandbox's init, processes of other PID namespaces' owners) are left out, a limit
    /// docs/witness.md states, and the reading counts as complete.
    pub complete: bool,
}

impl OthersIo {
    /// Whether `pid` is one of `roots` or descends from one of them (through the parents
    /// this reading saw; a chain longer than 64 is cut, a loop cannot hang it).
    pub fn descends_from(&self, pid: u32, roots: &[u32]) -> bool {
        let mut p = pid;
        for _ in 0..64 {
            if roots.contains(&p) {
                return true;
            }
            match self.procs.get(&p) {
                Some(&(parent, _)) if parent != p && parent > 1 => p = parent,
                _ => return roots.contains(&p),
            }
        }
        false
    }
}

/// Reads [`OthersIo`]; None when /proc cannot be listed.
pub fn read_others_io(own_pid: u32) -> Option<OthersIo> {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let mut out = OthersIo {
        procs: BTreeMap::new(),
        complete: true,
    };
    let k = Kernel::system();
    for pid in k.pids().ok()? {
        if pid == own_pid || pid == 2 {
            continue;
        }
        let Some(ppid) = parent_of(&k, pid) else {
            // The process ended between the listing and the read.
            continue;
        };
        if ppid == 2 {
            continue;
        }
        match k.pid_io(Pid::Id(pid)) {
            Ok(io) => {
                out.procs.insert(
                    pid,
                    (
                        ppid,
                        [
                            io.read_bytes,
                            io.write_bytes.saturating_sub(io.cancelled_write_bytes),
                        ],
                    ),
                );
            }
            Err(Error::Malformed { .. }) => {}
            // The process ended between the listing and the read: nothing to count.
            Err(Error::Read { source: e, .. }) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(Error::Read { source: e, .. }) if e.raw_os_error() == Some(libc::ESRCH) => {}
            Err(_) if root => {}
            Err(_) => out.complete = false,
        }
    }
    Some(out)
}

/// A process's parent from /proc/<pid>/stat; None when it ended. Kernel threads (kthreadd,
/// pid 2, and its children) work for someone else: a loop device's worker writing the
/// backing file, writeback. The process that caused the work already counted it when it
/// dirtied or submitted, so the caller leaves them out rather than count it twice.
fn parent_of(k: &Kernel, pid: u32) -> Option<u32> {
    k.pid_stat(Pid::Id(pid)).ok().map(|s| s.ppid)
}

/// What the processes that `keep` accepts moved between two readings of
/// [`read_others_io`]: [read, write] bytes. A process absent from the first reading started
/// in between, so all its bytes count.
pub fn others_delta(a: &OthersIo, b: &OthersIo, keep: impl Fn(u32) -> bool) -> [u64; 2] {
    let mut d = [0u64; 2];
    for (&pid, &(_, v)) in &b.procs {
        if !keep(pid) {
            continue;
        }
        let before = a.procs.get(&pid).map_or([0, 0], |x| x.1);
        // A smaller value means the pid was reused by a new process.
        let grown = |i: usize| {
            if v[i] >= before[i] {
                v[i] - before[i]
            } else {
                v[i]
            }
        };
        d[0] += grown(0);
        d[1] += grown(1);
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two readings of this thread's counters with nothing between: the first reading's
    /// one call and its bytes, exactly, and no write-like call.
    #[test]
    fn a_threads_reading_costs_one_read_call() {
        let (a, len) = read_thread_io().expect("/proc/thread-self/io");
        let (b, len_b) = read_thread_io().expect("/proc/thread-self/io");
        assert_eq!(b.syscr - a.syscr, 1);
        assert_eq!(b.rchar - a.rchar, len);
        assert_eq!((b.syscw, b.wchar), (a.syscw, a.wchar));
        // Work between the readings is counted on top of it, call for call.
        let mut f = std::fs::File::open("/proc/self/stat").expect("open");
        let mut buf = [0u8; 7];
        use std::io::Read;
        let n = f.read(&mut buf).expect("read") + f.read(&mut buf).expect("read");
        let (c, _) = read_thread_io().expect("/proc/thread-self/io");
        assert_eq!(c.syscr - b.syscr, 1 + 2);
        assert_eq!(c.rchar - b.rchar, len_b + n as u64);
    }

    #[test]
    fn pid_io_captured_here() {
        let io = PidIo::parse(include_str!("../tests/data/self_io.txt")).expect("parse");
        assert_eq!(io.rchar, 6976);
        assert_eq!(io.syscr, 10);
        assert_eq!(io.read_bytes, 0);
        assert_eq!(io.cancelled_write_bytes, 4096);
        let later = PidIo {
            rchar: 10_000,
            read_bytes: 4096,
            ..io
        };
        assert_eq!(later.saturating_sub(io).rchar, 10_000 - 6976);
        assert_eq!(later.saturating_sub(io).read_bytes, 4096);
        assert_eq!(io.saturating_sub(later).rchar, 0, "never below zero");
        assert_eq!(io.plus(later).rchar, 6976 + 10_000);
        assert_eq!(io.max(later).rchar, 10_000);
        assert!(PidIo::parse("rchar: 1\n").is_none());
        assert!(PidIo::parse("garbage\n:::\nrchar: x").is_none());
    }

    #[test]
    fn others_delta_counts_growth_and_newcomers() {
        let io = |v: &[(u32, u32, [u64; 2])]| OthersIo {
            procs: v.iter().map(|&(p, pp, b)| (p, (pp, b))).collect(),
            complete: true,
        };
        let a = io(&[(10, 1, [10, 20]), (20, 1, [5, 5])]);
        let b = io(&[(10, 1, [15, 20]), (20, 1, [5, 9]), (30, 20, [100, 7])]);
        assert_eq!(others_delta(&a, &b, |_| true), [5 + 100, 4 + 7]);
        // pid reuse: a smaller value is a new process
        let c = io(&[(10, 1, [3, 0])]);
        assert_eq!(others_delta(&a, &c, |_| true), [3, 0]);
        // Process 30 is 20's child: leaving 20's family out leaves both out.
        assert!(b.descends_from(30, &[20]) && b.descends_from(20, &[20]));
        assert!(!b.descends_from(10, &[20]));
        assert_eq!(others_delta(&a, &b, |p| !b.descends_from(p, &[20])), [5, 0]);
        // A child of the reader itself (absent from the map) descends from it.
        let d = io(&[(40, 99, [1, 1])]);
        assert!(d.descends_from(40, &[99]));
    }

    #[test]
    fn others_io_reads_as_root_and_excludes_self() {
        let own = std::process::id();
        let m = read_others_io(own).expect("/proc lists");
        assert!(!m.procs.contains_key(&own));
        assert!(!m.procs.is_empty(), "other processes are seen");
        if !m.complete {
            assert!(
                !candor_testkit::is_root(),
                "as root, every process's /proc/<pid>/io is readable"
            );
            candor_testkit::skip("other users' /proc/<pid>/io is not readable here (needs root)");
        }
    }

    #[test]
    fn own_io_reads_and_counts_its_bytes() {
        let before = crate::bytes_read();
        let io = read_self_io().expect("/proc/self/io is readable");
        assert!(io.rchar > 0);
        assert!(crate::bytes_read() > before);
    }
}
