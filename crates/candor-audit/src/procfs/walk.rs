//! The sampler's walk of /proc: which processes belong to the audited tree (new ones by
//! their parent), and one tick's reading of each: its io counters, every thread's, and its
//! open files (each descriptor's path and fdinfo), listed before and after the counters so
//! that a file closed or opened meanwhile is not missed.

use super::{Io, ProcfsSource};
use candor_procfs::{FdInfo, Kernel, Pid};
use std::collections::{HashMap, HashSet};
use std::os::unix::fs::MetadataExt;

/// One tick's reading of one process.
pub(super) struct Reading {
    pub(super) total: Option<Io>,
    pub(super) threads: Option<HashMap<u32, Io>>,
    pub(super) fds: Vec<(i32, String, FdInfo)>,
    /// Descriptors closed while the counters were read: they take this tick's bytes,
    /// then close.
    pub(super) closing: Vec<i32>,
    /// The process had ended (a zombie) when it was read: its counters may have been
    /// read a moment before its end, so a later reading can still bring bytes its files
    /// moved before they closed.
    pub(super) ended: bool,
}

impl ProcfsSource {
    /// New processes of the tree: any pid whose parent is in the tree (or is candor itself,
    /// for orphans re-parented to it as subreaper).
    pub(super) fn discover(&mut self, now: f64) {
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

    /// One process's reading; without its descriptors when not `with_fds` (the companion
    /// of the eBPF tracer between two readings of them).
    pub(super) fn read(pid: u32, with_fds: bool) -> Reading {
        // The descriptors are listed before and after the counters: a file closed while
        // they are read (its last bytes are in them) is in the first list, one opened
        // meanwhile (its first bytes may be) in the second.
        let fds_of = |pid| {
            if with_fds {
                Self::read_fds(pid)
            } else {
                Vec::new()
            }
        };
        let fds_before = fds_of(pid);
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
            merge_fds(fds_before, fds_of(pid))
        };
        Reading {
            total,
            threads,
            fds,
            closing,
            ended: zombie,
        }
    }
}

/// (device, inode) of the regular files this process has open: what a command it starts
/// inherits from it (and from its caller) unless marked close-on-exec.
pub(super) fn own_open_files() -> HashSet<(u64, u64)> {
    let Ok(fds) = Kernel::system().pid_fd_links(Pid::Me) else {
        return HashSet::new();
    };
    fds.into_iter()
        .filter_map(|(_, link)| std::fs::metadata(link).ok())
        .filter(|md| md.file_type().is_file())
        .map(|md| (md.dev(), md.ino()))
        .collect()
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
}
