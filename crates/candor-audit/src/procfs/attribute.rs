//! How the sampler shares a process's byte deltas among its files: among the files open
//! now by access mode and by how far each position moved, and (for late bytes, a vanished
//! child's or an ended process's) among the phases already closed.

use super::{Io, OpenFile, Proc, ProcfsSource};
use crate::phase::Phase;
use std::os::unix::fs::{FileTypeExt, MetadataExt};

impl ProcfsSource {
    /// Shares a delta among a process's open files by access mode; returns what no file
    /// could take.
    /// A file passed down from the auditor's caller (the lock `flock` holds while it runs
    /// the audit, a redirect) takes a share only when its position moved: with pread the
    /// command's own file moves no position either, and the idle inherited one took half
    /// of its bytes.
    pub(super) fn attribute(p: &mut Proc, d: Io) -> Io {
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
    pub(super) fn attribute_closed(phases: &mut [Phase], idx: &[usize], d: Io) {
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

/// A weighted part of a byte count. Rounding can lose or add a byte per file per tick when
/// bytes are shared; a single file always gets the whole count.
fn part(x: u64, w: f64) -> u64 {
    if w >= 1.0 {
        x
    } else {
        (x as f64 * w).round() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
