//! The channels other than read and write calls that the sampler sees a process use: an
//! `[aio]` ring or an io_uring ring in its memory map, an io_uring descriptor, a regular file
//! mapped into memory; each noted with its evidence and the files its process had open.

use super::ProcfsSource;
use crate::phase::ChannelUse;
use candor_procfs::{paths, Kernel, Pid};
use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::time::Instant;

impl ProcfsSource {
    /// Notes the channels other than read and write calls a process uses now: an `[aio]`
    /// ring in its memory map (Linux AIO: io_setup maps it, io_submit fills it), an
    /// io_uring descriptor or ring, a regular file mapped into memory.
    pub(super) fn scan_channels(&mut self, pid: u32, now: f64) {
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
    pub(super) fn channel_uses(&self) -> Vec<ChannelUse> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::procfs::tests::tempfile_dir;

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
}
