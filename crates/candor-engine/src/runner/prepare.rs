//! The untimed part of a repetition: the files a test needs, and the state of the page cache
//! when its timed region starts. Each decision about that state is made here, once:
//! - a test that needs the file finds it complete (written in 1 MiB writes and fsynced by
//!   `fill`, the one routine that writes candor's data outside a test);
//! - nothing is dirty: the target's filesystem is synced (`RunDir::syncfs`);
//! - a test meant for the device, writes included, finds none of its files cached (fio's
//!   default invalidate=1); `--keep-cache` and the "re" tests keep them;
//! - a "re" test finds its file read once into the cache.

use super::{is_root, may_read_elsewhere, pass_repetition, Coordinator, RunSettings};
use super::{pass_after_prep, Target};
use crate::buffer::BufferPattern;
use crate::clock::now_ns;
use crate::engines::{full_pio, EngineError, Fd, OpenSpec};
use crate::pattern::Pattern;
use crate::plan::Point;
use crate::signals;
use crate::verify::FileVerify;
use crate::workload::{Direction, FileState};
use candor_model::units::{format_bytes, ByteStyle};
use candor_model::{Intent, Precondition};
use candor_witness::Outcome;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Where a record test's threads work, once prepared.
pub(super) struct Prepared {
    /// One file per thread (on a block device, the device for every thread).
    pub paths: Vec<PathBuf>,
    /// Where each thread's region starts in its file: 0; this process's segment with
    /// `--shared-file`; the thread's slice of a block device.
    pub bases: Vec<u64>,
    /// The files are not candor's to create: shared by several processes, or a device.
    pub sharing: bool,
}

/// The size of each write of the untimed fill.
const FILL_CHUNK: u64 = 1 << 20;

/// Writes `size` bytes of candor's data at `base` of `path` (a new file when `create`) in
/// 1 MiB writes, then fsyncs. With `verify`, every record is stamped at generation 1 and
/// the chunks hold whole records.
fn fill(
    path: &Path,
    create: bool,
    base: u64,
    size: u64,
    seed: u64,
    pattern: BufferPattern,
    verify: Option<&FileVerify>,
) -> Result<(), EngineError> {
    if create {
        let _ = std::fs::remove_file(path);
    }
    let spec = OpenSpec {
        pattern,
        ..OpenSpec::plain(path, create, true)
    };
    let fd = Fd::open(&spec)?;
    let rs = verify.map_or(1, |v| v.record_size().max(1)) as u64;
    let chunk = (FILL_CHUNK / rs).max(1) * rs;
    let mut buf = spec.buffer(chunk.min(size.max(1)) as usize, seed)?;
    if let Some(v) = verify {
        v.forget();
    }
    let mut off = 0u64;
    while off < size {
        let n = (size - off).min(chunk);
        let mut piece = if n == buf.len() as u64 {
            None
        } else {
            Some(spec.buffer(n as usize, seed)?)
        };
        let b = piece.as_mut().unwrap_or(&mut buf);
        if let Some(v) = verify {
            for (j, r) in b.as_mut_slice().chunks_exact_mut(rs as usize).enumerate() {
                v.stamp(r, off + j as u64 * rs);
            }
        }
        full_pio(fd.record(b, base + off, true))?;
        off += n;
        if signals::stop_requested().is_some() {
            break;
        }
    }
    if let Some(v) = verify {
        v.prepared();
    }
    fd.fsync()
}

/// Creates an empty file of candor's (O_CREAT|O_EXCL), the shared file of `--shared-file`.
fn create_empty(path: &Path) -> Result<(), EngineError> {
    Fd::open(&OpenSpec::plain(path, true, true)).map(drop)
}

impl Target {
    /// Makes sure one complete file of `file_size` per thread exists (untimed), and returns
    /// their paths.
    pub(super) fn ensure_complete_files(
        &mut self,
        file_size: u64,
        threads: u32,
        s: &RunSettings,
    ) -> Result<Vec<PathBuf>, EngineError> {
        self.use_files(file_size, threads, None, s.buffer_pattern);
        let paths = self.paths();
        let device = self.dir.device();
        if let Some(fsset) = self.files.as_mut() {
            for (i, p) in paths.iter().enumerate() {
                if !fsset.complete[i] || !has_data(p, file_size, device.is_some()) {
                    fill(
                        p,
                        device.is_none(),
                        device.map_or(0, |d| d.base(i, file_size)),
                        file_size,
                        s.seed ^ i as u64,
                        s.buffer_pattern,
                        None,
                    )?;
                    fsset.complete[i] = true;
                }
            }
        }
        Ok(paths)
    }
}

/// Whether a file holds `size` bytes; a device's slice always has its size (whether it
/// holds candor's data is the file set's `complete`).
fn has_data(p: &Path, size: u64, device: bool) -> bool {
    device || std::fs::symlink_metadata(p).is_ok_and(|m| m.len() == size)
}

/// `--precondition`: brings the device under a test's files towards its steady state, as
/// PTS's preconditioning does on a whole device: `passes` sequential passes over the file
/// set (1 MiB writes, as `fill`), then every block of the test's record size (4 KiB at
/// least) overwritten once in a random order, fsynced. The witness watches it all and
/// says how much the device took. The files are complete afterwards.
pub(super) fn precondition(
    target: &mut Target,
    point: &Point,
    s: &RunSettings,
    passes: u32,
) -> Result<Precondition, EngineError> {
    let size = point.file_size;
    target.use_files(size, point.threads, None, s.buffer_pattern);
    let paths = target.paths();
    target.dir.syncfs();
    // On a raw device, thread i's "file" is its slice of the device.
    let device = target.dir.device();
    let files: Vec<PreconditionFile> = paths
        .iter()
        .enumerate()
        .map(|(i, p)| PreconditionFile {
            path: p.clone(),
            base: device.map_or(0, |d| d.base(i, size)),
            size,
            create: !has_data(p, size, device.is_some()),
        })
        .collect();
    let done = precondition_files(
        &target.witness,
        &files,
        passes,
        point.record_size,
        s.seed,
        s.buffer_pattern,
    )?;
    if let Some(fsset) = target.files.as_mut() {
        fsset.complete.iter_mut().for_each(|c| *c = true);
    }
    Ok(done)
}

/// A file `--precondition` writes: `size` bytes from `base` of `path`, made anew when
/// `create`.
pub struct PreconditionFile {
    pub path: PathBuf,
    pub base: u64,
    pub size: u64,
    pub create: bool,
}

/// `--precondition` on any set of files (run's test files, replay's laid-out files):
/// `passes` sequential passes over each, then every block of `record_size` (4 KiB at
/// least, at most the file) overwritten once in a random order, fsynced, under the
/// witness, which says how much reached the device.
pub fn precondition_files(
    witness: &candor_witness::Witness,
    files: &[PreconditionFile],
    passes: u32,
    record_size: u64,
    seed: u64,
    pattern: BufferPattern,
) -> Result<Precondition, EngineError> {
    let paths: Vec<PathBuf> = files.iter().map(|f| f.path.clone()).collect();
    let watch = witness.begin(&paths);
    let t0 = now_ns();
    let largest = files.iter().map(|f| f.size).max().unwrap_or(0);
    let block_of = |size: u64| record_size.max(4096).min(size.max(1));
    let mut sequential = 0u64;
    let mut random = 0u64;
    for pass in 0..passes {
        for (i, f) in files.iter().enumerate() {
            let seed = seed ^ i as u64 ^ ((pass as u64 + 1) << 40);
            fill(
                &f.path,
                f.create && pass == 0,
                f.base,
                f.size,
                seed,
                pattern,
                None,
            )?;
            sequential += f.size;
            if signals::stop_requested().is_some() {
                return Err(stopped(&f.path));
            }
        }
    }
    for (i, f) in files.iter().enumerate() {
        random += random_overwrite(
            &f.path,
            f.base,
            f.size,
            block_of(f.size),
            seed ^ i as u64,
            pattern,
        )?;
    }
    let seconds = now_ns().saturating_sub(t0) as f64 / 1e9;
    let written = sequential + random;
    let w = watch.finish(&Outcome {
        test: "precondition".into(),
        intent: Intent::Device,
        is_write: true,
        app_write_bytes: written,
        timed_seconds: seconds,
        headline_bps: if seconds > 0.0 {
            written as f64 / seconds
        } else {
            0.0
        },
        threads: files.len() as u32,
        ..Default::default()
    });
    Ok(preconditioned(
        passes,
        sequential,
        random,
        block_of(largest),
        seconds,
        &w,
    ))
}

/// The record of a preconditioning, from what was written and what the witness saw.
fn preconditioned(
    passes: u32,
    sequential: u64,
    random: u64,
    block: u64,
    seconds: f64,
    w: &candor_model::Witness,
) -> Precondition {
    let written = sequential + random;
    let device = w.extra.facts.as_ref().and_then(|f| match f.placement {
        candor_model::Placement::Device { .. } => Some(
            f.exact
                .as_ref()
                .map_or(f.device_total.write_bytes, |e| e.own_write_total),
        ),
        _ => None,
    });
    let share = device.map(|d| d as f64 / written.max(1) as f64);
    let reached = share.is_some_and(|x| x >= 0.9);
    let b = |n: u64| format_bytes(n, ByteStyle::PROSE);
    let explanation = match (device, share) {
        (Some(d), Some(x)) if reached => format!(
            "preconditioned with {passes} sequential pass(es) ({}) and {} of random {} overwrites in {seconds:.1} s; the device wrote {} ({:.0}% of it)",
            b(sequential), b(random), b(block), b(d), 100.0 * x
        ),
        (Some(d), Some(x)) => format!(
            "preconditioning wrote {} but the device took only {} ({:.0}%): the rest stayed in memory or was never written, so the device is not preconditioned",
            b(written), b(d), 100.0 * x
        ),
        _ => format!(
            "preconditioning wrote {} in {seconds:.1} s, but the witness saw no device to confirm it reached one ({})",
            b(written),
            w.unverified_reason.as_deref().unwrap_or("witness off")
        ),
    };
    Precondition {
        passes,
        sequential_bytes: sequential,
        random_bytes: random,
        random_block: block,
        seconds,
        device_write_bytes: device,
        device_share: share,
        reached_device: reached,
        explanation,
    }
}

fn stopped(p: &Path) -> EngineError {
    EngineError::new(
        "precondition",
        p,
        None,
        std::io::Error::from(std::io::ErrorKind::Interrupted),
    )
}

/// Overwrites every `block` of the `size` bytes at `base` of `path` once, in a random
/// order, then fsyncs; returns the bytes written.
fn random_overwrite(
    path: &Path,
    base: u64,
    size: u64,
    block: u64,
    seed: u64,
    pattern: BufferPattern,
) -> Result<u64, EngineError> {
    let spec = OpenSpec {
        pattern,
        ..OpenSpec::plain(path, false, true)
    };
    let fd = Fd::open(&spec)?;
    let mut buf = spec.buffer(block as usize, seed)?;
    let order = Pattern::random(size / block, seed);
    let mut written = 0;
    for i in 0..order.len() {
        full_pio(fd.record(&mut buf, base + order.at(i) * block, true))?;
        written += block;
        if i % 256 == 255 && signals::stop_requested().is_some() {
            return Err(stopped(path));
        }
    }
    fd.fsync()?;
    Ok(written)
}

/// `--shared-file`: one file per thread shared by every process, process k working on its
/// segment [k x file_size, (k + 1) x file_size). Segment 0's process owns the files (in its
/// run directory) and creates them; the others wait for that, then fill their segments when
/// the test needs existing data. Both barriers are passed whatever happens here.
fn prepare_shared(
    target: &mut Target,
    point: &Point,
    s: &RunSettings,
    seg: u64,
    paths: &[PathBuf],
    coord: &mut dyn Coordinator,
) -> Result<(), EngineError> {
    let base = seg * point.file_size;
    let fresh = point.spec.file == FileState::Fresh;
    let mut res = Ok(());
    if seg == 0 {
        for p in paths {
            if fresh {
                let _ = std::fs::remove_file(p);
            }
            if fresh || std::fs::symlink_metadata(p).is_err() {
                if let Err(e) = create_empty(p) {
                    res = Err(e);
                    break;
                }
            }
        }
    }
    coord.files_ready();
    if let Some(fsset) = target.files.as_mut() {
        if fresh {
            fsset.complete.iter_mut().for_each(|c| *c = false);
        } else if res.is_ok() {
            for (i, p) in paths.iter().enumerate() {
                let ok = fsset.complete[i]
                    && std::fs::symlink_metadata(p)
                        .is_ok_and(|m| m.len() >= base + point.file_size);
                if !ok {
                    let seed = s.seed ^ i as u64 ^ (seg << 20);
                    let filled = fill(
                        p,
                        false,
                        base,
                        point.file_size,
                        seed,
                        s.buffer_pattern,
                        None,
                    );
                    if let Err(e) = filled {
                        res = Err(e);
                        break;
                    }
                    fsset.complete[i] = true;
                }
            }
        }
    }
    coord.files_ready();
    res
}

/// Prepares a record test's repetition: the files (fresh, complete, or this process's
/// segment of shared ones), nothing dirty, and the cache state the test means to start
/// from. On failure the coordinator's steps are passed, so other processes do not wait.
pub(super) fn records(
    target: &mut Target,
    point: &Point,
    s: &RunSettings,
    coord: &mut dyn Coordinator,
) -> Result<Prepared, EngineError> {
    let spec = point.spec;
    target.use_files(
        point.file_size,
        point.threads,
        s.verify.map(|c| (c, point.record_size)),
        s.buffer_pattern,
    );
    let paths = target.paths();
    let shared = coord.shared_segment(&paths);
    let device = target.dir.device().is_some();
    let shared_files = shared.is_some();
    let sharing = shared_files || device;
    let bases: Vec<u64> = match (&shared, target.dir.device()) {
        (Some((seg, _)), _) => vec![seg * point.file_size; paths.len()],
        (None, Some(d)) => (0..paths.len())
            .map(|i| d.base(i, point.file_size))
            .collect(),
        (None, None) => vec![0; paths.len()],
    };
    let paths = match shared {
        Some((seg, spaths)) => {
            if let Err(e) = prepare_shared(target, point, s, seg, &spaths, coord) {
                pass_after_prep(coord, point, s);
                return Err(e);
            }
            spaths
        }
        None => paths,
    };
    match spec.file {
        _ if shared_files => {}
        FileState::Fresh => {
            if let Some(fsset) = target.files.as_mut() {
                for (i, n) in fsset.names.iter().enumerate() {
                    let _ = target.dir.remove_file(n);
                    fsset.complete[i] = false;
                    if let Some(v) = fsset.verify.get(i) {
                        v.forget();
                    }
                }
            }
        }
        FileState::Existing => {
            if let Some(fsset) = target.files.as_mut() {
                for (i, p) in paths.iter().enumerate() {
                    if fsset.complete[i] && has_data(p, point.file_size, device) {
                        continue;
                    }
                    let v = fsset.verify.get(i).map(|v| v.as_ref());
                    let seed = v.map_or(s.seed ^ i as u64, |_| 0);
                    let filled = fill(
                        p,
                        !device,
                        bases[i],
                        point.file_size,
                        seed,
                        s.buffer_pattern,
                        v,
                    );
                    if let Err(e) = filled {
                        pass_repetition(coord, point, s);
                        return Err(e);
                    }
                    fsset.complete[i] = true;
                }
            }
        }
    }
    target.dir.syncfs();
    // Every test meant for the device starts with none of its files' pages cached, writes
    // included (fio's default `invalidate=1` does the same). A write into pages left cached
    // by the untimed fill is a different workload: the fill's 1 MiB writes leave large
    // folios, and each 4 KiB write into one walks all of its buffer heads
    // (`ext4_block_write_begin`): median latency 16 us against 3.5 us into empty cache
    // (docs/performance.md, "Causes found").
    if !s.keep_cache && !spec.cached {
        for p in &paths {
            drop_file_cache(p);
        }
    }
    if spec.direction != Direction::Write
        && point.intent == Intent::Device
        && s.drop_caches
        && is_root()
    {
        drop_all_caches();
    }
    if spec.cached && !point.direct {
        for (p, &base) in paths.iter().zip(&bases) {
            warm_file(p, base, point.file_size);
        }
    }
    let paths = if may_read_elsewhere(point) {
        coord.read_elsewhere(&paths).unwrap_or(paths)
    } else {
        paths
    };
    Ok(Prepared {
        paths,
        bases,
        sharing,
    })
}

/// Writes back and drops a file's cached pages (fdatasync + POSIX_FADV_DONTNEED).
pub fn drop_file_cache(path: &Path) {
    drop_pages(path, true);
}

/// Drops a file's cached pages; with `writeback`, writes dirty pages back first so that
/// every page can go. Without it (between the passes of a time-based test, inside the
/// timed region, as fio's invalidate does) dirty pages are only queued for writeback and
/// stay cached.
pub(super) fn drop_pages(path: &Path, writeback: bool) {
    let Ok(c) = CString::new(path.as_os_str().as_bytes()) else {
        return;
    };
    // SAFETY: valid path; descriptor closed right after.
    unsafe {
        let fd = libc::open(
            c.as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NOFOLLOW,
        );
        if fd >= 0 {
            if writeback {
                libc::fdatasync(fd);
            }
            libc::posix_fadvise(fd, 0, 0, libc::POSIX_FADV_DONTNEED);
            libc::close(fd);
        }
    }
}

/// `--drop-caches`: syncs, then drops every clean page the kernel caches (root).
pub fn drop_all_caches() {
    // SAFETY: sync has no preconditions.
    unsafe { libc::sync() };
    let _ = candor_procfs::Kernel::system().drop_caches();
}

/// Reads a file once so the next test finds it in the page cache.
fn warm_file(path: &Path, base: u64, len: u64) {
    use std::os::unix::fs::FileExt;
    if let Ok(f) = std::fs::File::open(path) {
        let mut buf = vec![0u8; 1 << 20];
        let mut off = 0;
        while off < len {
            let want = (len - off).min(buf.len() as u64) as usize;
            match f.read_at(&mut buf[..want], base + off) {
                Ok(n) if n > 0 && signals::stop_requested().is_none() => off += n as u64,
                _ => break,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::{BadKind, VerifyConfig};

    #[test]
    fn a_filled_file_reads_back_clean_and_a_damaged_one_does_not() {
        use std::os::unix::fs::FileExt;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let v = FileVerify::new(
            VerifyConfig::new("run-1", 7),
            0,
            64 * 4096,
            4096,
            BufferPattern::Random,
        );
        fill(&p, true, 0, 64 * 4096, 0, BufferPattern::Random, Some(&v)).unwrap();
        assert_eq!(v.take().written, 0, "preparation writes are not counted");
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&p)
            .unwrap();
        let mut buf = vec![0u8; 4096];
        for r in 0..64u64 {
            f.read_exact_at(&mut buf, r * 4096).unwrap();
            assert_eq!(v.check(&buf, r * 4096), None, "record {r}");
        }
        // Record 3 copied over record 7; a byte of record 10 flipped.
        f.read_exact_at(&mut buf, 3 * 4096).unwrap();
        f.write_all_at(&buf, 7 * 4096).unwrap();
        f.read_exact_at(&mut buf, 10 * 4096).unwrap();
        buf[2000] ^= 0xff;
        f.write_all_at(&buf, 10 * 4096).unwrap();
        let mut found = Vec::new();
        for r in 0..64u64 {
            f.read_exact_at(&mut buf, r * 4096).unwrap();
            if let Some(k) = v.check(&buf, r * 4096) {
                found.push((r, k));
            }
        }
        assert_eq!(
            found,
            [(7, BadKind::Misdirected), (10, BadKind::Corruption)]
        );
        let t = v.take();
        assert_eq!((t.checked, t.bad), (128, 2));
        assert_eq!(t.first_bad, Some((0, 7 * 4096, BadKind::Misdirected)));
        assert!(t
            .describe(&|i| format!("t{i}.dat"))
            .unwrap()
            .contains("2 of 128 records"));
    }

    #[test]
    fn a_fill_writes_the_pattern_at_its_base_and_stops_at_its_size() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("g");
        // 3 MiB + 5 KiB: three whole chunks and a short one.
        let size = 3 * FILL_CHUNK + 5 * 1024;
        fill(&p, true, 0, size, 9, BufferPattern::Zero, None).unwrap();
        let data = std::fs::read(&p).unwrap();
        assert_eq!(data.len() as u64, size);
        assert!(data.iter().all(|&b| b == 0));
        // A segment of an existing file, past its end: the file grows to hold it.
        fill(&p, false, size, 4096, 9, BufferPattern::Random, None).unwrap();
        let data = std::fs::read(&p).unwrap();
        assert_eq!(data.len() as u64, size + 4096);
        assert!(data[size as usize..].iter().filter(|&&b| b == 0).count() < 64);
        // A new file refuses nothing of candor's own: the old one is replaced.
        fill(&p, true, 0, 4096, 9, BufferPattern::Zero, None).unwrap();
        assert_eq!(std::fs::read(&p).unwrap().len(), 4096);
    }
}
