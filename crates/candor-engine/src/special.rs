//! Workloads that are not records on one file: UnixBench-style file copy and metadata
//! operations (create, stat, open, unlink, mkdir, rmdir, readdir over N entries, as iozone's
//! fileop and mdtest do). They share the runner's plumbing (barrier release, witness,
//! coordinator, repetitions) and report operations per second with every operation timed.

use crate::buffer::AlignedBuf;
use crate::clock::{now_ns, process_cpu};
use crate::engines::{EngineError, ThreadStats};
use crate::plan::Point;
use crate::runner::{Coordinator, RepMeasure, RunSettings, Target};
use crate::signals;
use candor_model::Repetition;
use candor_witness::Outcome;
use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Barrier;

/// The special workloads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Special {
    None,
    /// Read a file and write a copy of it, `record_size` bytes at a time.
    Copy,
    Meta(MetaOp),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetaOp {
    Create,
    Stat,
    Open,
    Readdir,
    Unlink,
    Mkdir,
    Rmdir,
}

fn cpath(p: &Path) -> Result<CString, EngineError> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| {
        EngineError::new(
            "path",
            p,
            None,
            io::Error::from(io::ErrorKind::InvalidInput),
        )
    })
}

fn check(r: libc::c_int, op: &'static str, p: &Path) -> Result<(), EngineError> {
    if r < 0 {
        Err(EngineError::new(op, p, None, io::Error::last_os_error()))
    } else {
        Ok(())
    }
}

fn entry_name(i: u64) -> String {
    format!("f{i:08}")
}

/// The per-thread directory of a metadata workload, with `n` files (or directories for rmdir)
/// in it when `populated`.
fn ensure_tree(dir: &Path, n: u64, op: MetaOp) -> Result<(), EngineError> {
    match std::fs::create_dir(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(EngineError::new("mkdir", dir, None, e)),
    }
    let want_files = matches!(
        op,
        MetaOp::Stat | MetaOp::Open | MetaOp::Readdir | MetaOp::Unlink
    );
    let want_dirs = matches!(op, MetaOp::Rmdir);
    let want_empty = matches!(op, MetaOp::Create | MetaOp::Mkdir);
    // Bring the tree to the state the operation starts from (untimed).
    for i in 0..n {
        let p = dir.join(entry_name(i));
        let meta = std::fs::symlink_metadata(&p).ok();
        if want_empty {
            match meta {
                Some(m) if m.is_dir() => {
                    std::fs::remove_dir(&p).map_err(|e| EngineError::new("rmdir", &p, None, e))?
                }
                Some(_) => {
                    std::fs::remove_file(&p).map_err(|e| EngineError::new("unlink", &p, None, e))?
                }
                None => {}
            }
        } else if want_files && !meta.as_ref().is_some_and(|m| m.is_file()) {
            if meta.is_some_and(|m| m.is_dir()) {
                std::fs::remove_dir(&p).map_err(|e| EngineError::new("rmdir", &p, None, e))?;
            }
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&p)
                .map_err(|e| EngineError::new("create", &p, None, e))?;
        } else if want_dirs && !meta.as_ref().is_some_and(|m| m.is_dir()) {
            if meta.is_some() {
                std::fs::remove_file(&p).map_err(|e| EngineError::new("unlink", &p, None, e))?;
            }
            std::fs::create_dir(&p).map_err(|e| EngineError::new("mkdir", &p, None, e))?;
        }
    }
    Ok(())
}

/// Runs one metadata pass over `n` entries of `dir`, timing every operation.
fn meta_pass(dir: &Path, n: u64, op: MetaOp, stats: &mut ThreadStats) -> Result<(), EngineError> {
    if op == MetaOp::Readdir {
        let d = cpath(dir)?;
        // SAFETY: valid path; the stream is closed below.
        let stream = unsafe { libc::opendir(d.as_ptr()) };
        if stream.is_null() {
            return Err(EngineError::new(
                "opendir",
                dir,
                None,
                io::Error::last_os_error(),
            ));
        }
        let mut t0 = now_ns();
        loop {
            // SAFETY: stream is open.
            let ent = unsafe { libc::readdir64(stream) };
            if ent.is_null() {
                break;
            }
            let t1 = now_ns();
            stats.latency.record(t1 - t0);
            stats.ops += 1;
            t0 = t1;
        }
        // SAFETY: closing the stream opened above.
        unsafe { libc::closedir(stream) };
        return Ok(());
    }
    let mut t0 = now_ns();
    for i in 0..n {
        if signals::stop_requested().is_some() {
            break;
        }
        let p = dir.join(entry_name(i));
        let c = cpath(&p)?;
        // SAFETY: c is a valid path for each call.
        unsafe {
            match op {
                MetaOp::Create => {
                    let fd = libc::open(
                        c.as_ptr(),
                        libc::O_CREAT
                            | libc::O_EXCL
                            | libc::O_WRONLY
                            | libc::O_CLOEXEC
                            | libc::O_NOFOLLOW,
                        0o600,
                    );
                    check(fd, "create", &p)?;
                    libc::close(fd);
                }
                MetaOp::Stat => {
                    let mut st: libc::stat64 = std::mem::zeroed();
                    check(libc::stat64(c.as_ptr(), &mut st), "stat", &p)?;
                }
                MetaOp::Open => {
                    let fd = libc::open(
                        c.as_ptr(),
                        libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NOFOLLOW,
                    );
                    check(fd, "open", &p)?;
                    libc::close(fd);
                }
                MetaOp::Unlink => check(libc::unlink(c.as_ptr()), "unlink", &p)?,
                MetaOp::Mkdir => check(libc::mkdir(c.as_ptr(), 0o700), "mkdir", &p)?,
                MetaOp::Rmdir => check(libc::rmdir(c.as_ptr()), "rmdir", &p)?,
                MetaOp::Readdir => {}
            }
        }
        let t1 = now_ns();
        stats.latency.record(t1 - t0);
        stats.ops += 1;
        t0 = t1;
    }
    Ok(())
}

/// Copies `src` to a new `dst` with `chunk`-byte reads and writes, timing each pair.
fn copy_pass(
    src: &Path,
    dst: &Path,
    chunk: usize,
    size: u64,
    stats: &mut ThreadStats,
    fsync: bool,
) -> Result<u64, EngineError> {
    let _ = std::fs::remove_file(dst);
    let s = cpath(src)?;
    let d = cpath(dst)?;
    let mut buf = AlignedBuf::new(chunk, 1).ok_or_else(|| {
        EngineError::new(
            "allocate",
            src,
            None,
            io::Error::from(io::ErrorKind::OutOfMemory),
        )
    })?;
    // SAFETY: valid paths; descriptors closed at the end.
    let (fi, fo) = unsafe {
        (
            libc::open(
                s.as_ptr(),
                libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NOFOLLOW,
            ),
            libc::open(
                d.as_ptr(),
                libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_CLOEXEC | libc::O_NOFOLLOW,
                0o600,
            ),
        )
    };
    let close = |fd: i32| {
        if fd >= 0 {
            // SAFETY: closing our own descriptor.
            unsafe { libc::close(fd) };
        }
    };
    if fi < 0 || fo < 0 {
        let e = io::Error::last_os_error();
        close(fi);
        close(fo);
        return Err(EngineError::new(
            "open",
            if fi < 0 { src } else { dst },
            None,
            e,
        ));
    }
    let mut moved = 0u64;
    let mut t0 = now_ns();
    let mut flush_ns = 0;
    let result = (|| -> Result<(), EngineError> {
        while moved < size {
            if signals::stop_requested().is_some() {
                break;
            }
            // SAFETY: buf holds chunk bytes.
            let n = unsafe { libc::read(fi, buf.as_mut_ptr() as *mut _, chunk) };
            if n < 0 {
                return Err(EngineError::new(
                    "read",
                    src,
                    Some(moved),
                    io::Error::last_os_error(),
                ));
            }
            if n == 0 {
                break;
            }
            let mut done = 0usize;
            while done < n as usize {
                // SAFETY: buf holds n bytes.
                let w = unsafe {
                    libc::write(fo, buf.as_ptr().add(done) as *const _, n as usize - done)
                };
                if w < 0 {
                    return Err(EngineError::new(
                        "write",
                        dst,
                        Some(moved),
                        io::Error::last_os_error(),
                    ));
                }
                done += w as usize;
            }
            moved += n as u64;
            let t1 = now_ns();
            stats.latency.record(t1 - t0);
            stats.ops += 1;
            t0 = t1;
        }
        if fsync {
            let f0 = now_ns();
            // SAFETY: fo is open.
            if unsafe { libc::fsync(fo) } != 0 {
                return Err(EngineError::new(
                    "fsync",
                    dst,
                    None,
                    io::Error::last_os_error(),
                ));
            }
            flush_ns = now_ns() - f0;
        }
        Ok(())
    })();
    close(fi);
    close(fo);
    result?;
    stats.read_bytes += moved;
    stats.write_bytes += moved;
    Ok(flush_ns)
}

/// One repetition of a special workload on one target.
pub(crate) fn run_repetition(
    target: &mut Target,
    point: &Point,
    s: &RunSettings,
    run_t0: u64,
    coord: &mut dyn Coordinator,
) -> Result<RepMeasure, EngineError> {
    let special = point.spec.special;
    let n = point.threads as usize;
    let entries = s.meta_files.max(1);
    let root = target.dir.path().to_path_buf();
    // Untimed preparation. A failure still passes the coordinator's barrier, so processes
    // kept in step by it do not wait for this one forever.
    let prepared = (|| -> Result<Vec<(PathBuf, PathBuf)>, EngineError> {
        let mut work: Vec<(PathBuf, PathBuf)> = Vec::with_capacity(n);
        match special {
            Special::Copy => {
                target.ensure_complete_files(point.file_size, point.threads, s.seed)?;
                for (i, p) in target.file_paths().into_iter().enumerate() {
                    work.push((p, root.join(format!("t{i}.copy"))));
                }
            }
            Special::Meta(op) => {
                for i in 0..n {
                    let d = root.join(format!("meta{i}"));
                    ensure_tree(&d, entries, op)?;
                    work.push((d.clone(), d));
                }
            }
            Special::None => {
                return Err(EngineError::new(
                    "plan",
                    &root,
                    None,
                    io::Error::other("not a special workload"),
                ))
            }
        }
        Ok(work)
    })();
    let work = match prepared {
        Ok(w) => w,
        Err(e) => {
            coord.before_timed();
            return Err(e);
        }
    };
    target.dir.syncfs();
    let files: Vec<PathBuf> = work.iter().map(|w| w.0.clone()).collect();
    let start = Barrier::new(n + 1);
    let mut watch = None;
    let mut cpu0 = (0.0, 0.0);
    let mut t_release = 0;
    let fsync = s.fsync_in_timing;
    let outs: Vec<(ThreadStats, u64, u64, u64, Option<EngineError>)> =
        std::thread::scope(|scope| {
            let handles: Vec<_> = work
                .iter()
                .map(|(a, b)| {
                    let start = &start;
                    scope.spawn(move || {
                        let mut st = ThreadStats::default();
                        start.wait();
                        let t0 = now_ns();
                        let mut flush = 0;
                        let r = match special {
                            Special::Copy => copy_pass(
                                a,
                                b,
                                point.record_size as usize,
                                point.file_size,
                                &mut st,
                                fsync,
                            )
                            .map(|f| flush = f),
                            Special::Meta(op) => meta_pass(a, entries, op, &mut st),
                            Special::None => Ok(()),
                        };
                        let t1 = now_ns();
                        (st, t0, t1, flush, r.err())
                    })
                })
                .collect();
            coord.before_timed();
            watch = Some(target.witness.begin(&files));
            cpu0 = process_cpu();
            t_release = now_ns();
            start.wait();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        (
                            ThreadStats::default(),
                            0,
                            0,
                            0,
                            Some(EngineError::new(
                                "worker",
                                Path::new("-"),
                                None,
                                io::Error::other("a worker thread panicked"),
                            )),
                        )
                    })
                })
                .collect()
        });
    let t_end = now_ns();
    let cpu1 = process_cpu();
    if let Some(w) = watch.as_mut() {
        w.timed_end();
    }
    let mut stats = ThreadStats::default();
    let mut threads = Vec::new();
    let mut first = u64::MAX;
    let mut last = 0;
    let mut flush_max = 0;
    for (st, t0, t1, flush, err) in outs {
        if let Some(e) = err {
            return Err(e);
        }
        first = first.min(t0);
        last = last.max(t1);
        flush_max = flush_max.max(flush);
        threads.push((st.bytes(), (t1 - t0) as f64 / 1e9));
        stats += &st;
    }
    if special == Special::Copy {
        for (_, b) in &work {
            let _ = std::fs::remove_file(b);
        }
    }
    let seconds = last.saturating_sub(first) as f64 / 1e9;
    let is_write = matches!(
        special,
        Special::Copy
            | Special::Meta(MetaOp::Create | MetaOp::Unlink | MetaOp::Mkdir | MetaOp::Rmdir)
    );
    let witness = watch.map(|w| {
        w.finish(&Outcome {
            test: point.spec.name.to_string(),
            intent: candor_model::Intent::Device,
            is_write,
            direct: false,
            app_read_bytes: stats.read_bytes,
            app_write_bytes: stats.write_bytes,
            timed_seconds: seconds,
            headline_bps: if seconds > 0.0 {
                stats.bytes() as f64 / seconds
            } else {
                0.0
            },
        })
    });
    let wall = t_end.saturating_sub(t_release) as f64 / 1e9;
    Ok(RepMeasure {
        rep: Repetition {
            bytes: if special == Special::Copy {
                stats.read_bytes
            } else {
                0
            },
            ops: stats.ops,
            seconds,
            io_seconds: (seconds - flush_max as f64 / 1e9).max(0.0),
            flush_seconds: flush_max as f64 / 1e9,
            close_seconds: 0.0,
            truncated: false,
            started_s: first.saturating_sub(run_t0) as f64 / 1e9,
        },
        threads,
        cpu: (cpu1.0 - cpu0.0, cpu1.1 - cpu0.1, wall.max(seconds)),
        witness,
        stonewalled: false,
        stats,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_passes_count_every_entry() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("m");
        let mut st = ThreadStats::default();
        ensure_tree(&d, 50, MetaOp::Create).unwrap();
        meta_pass(&d, 50, MetaOp::Create, &mut st).unwrap();
        assert_eq!(st.ops, 50);
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 50);
        for op in [MetaOp::Stat, MetaOp::Open] {
            let mut st = ThreadStats::default();
            ensure_tree(&d, 50, op).unwrap();
            meta_pass(&d, 50, op, &mut st).unwrap();
            assert_eq!(st.ops, 50, "{op:?}");
        }
        let mut st = ThreadStats::default();
        meta_pass(&d, 50, MetaOp::Readdir, &mut st).unwrap();
        assert_eq!(st.ops, 52, "50 entries plus . and ..");
        let mut st = ThreadStats::default();
        meta_pass(&d, 50, MetaOp::Unlink, &mut st).unwrap();
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 0);
        ensure_tree(&d, 20, MetaOp::Mkdir).unwrap();
        let mut st = ThreadStats::default();
        meta_pass(&d, 20, MetaOp::Mkdir, &mut st).unwrap();
        assert!(d.join(entry_name(19)).is_dir());
        let mut st = ThreadStats::default();
        ensure_tree(&d, 20, MetaOp::Rmdir).unwrap();
        meta_pass(&d, 20, MetaOp::Rmdir, &mut st).unwrap();
        assert_eq!(st.ops, 20);
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 0);
    }

    #[test]
    fn copy_makes_an_identical_file() {
        let t = tempfile::tempdir().unwrap();
        let a = t.path().join("a");
        let b = t.path().join("b");
        let data: Vec<u8> = (0..100_000u32).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(&a, &data).unwrap();
        let mut st = ThreadStats::default();
        copy_pass(&a, &b, 1024, data.len() as u64, &mut st, true).unwrap();
        assert_eq!(std::fs::read(&b).unwrap(), data);
        assert_eq!(st.ops, 98, "ceil(100000 / 1024) chunks");
        assert_eq!(st.read_bytes, 100_000);
    }
}
