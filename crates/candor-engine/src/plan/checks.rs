//! The plan's checks of the options against each other, the points and the targets: each
//! refuses in one sentence (`PlanError`) before anything runs.

use super::{PlanError, Point, RunOptions};
use crate::engines::{self, EngineKind};
use crate::rundir::RunDir;
use crate::size::parse_size_list;
use crate::verify::HEADER;
use crate::workload::PatternKind;
use candor_model::units::{format_bytes, ByteStyle};
use candor_model::TargetInfo;

/// `--steady-state`: its parameters, and the options it replaces.
pub(super) fn check_steady(o: &RunOptions) -> Result<Option<crate::steady::Criteria>, PlanError> {
    let Some(text) = o.steady_state.as_deref() else {
        return Ok(None);
    };
    let c =
        crate::steady::parse(text).map_err(|e| PlanError::usage(format!("--steady-state: {e}")))?;
    let replaced = [
        (o.repeat.is_some(), "--repeat", "max="),
        (o.runtime.is_some(), "--runtime", "round="),
        (o.duration.is_some(), "--duration", "max= and round="),
    ];
    if let Some((_, opt, param)) = replaced.iter().find(|r| r.0) {
        return Err(PlanError::usage(format!(
            "--steady-state runs each test in rounds until steady, which {opt} would contradict: drop {opt} and give the rounds with --steady-state={param}..."
        )));
    }
    Ok(Some(c))
}

/// `--ramp`, `--steady-state` and `--precondition` work on the record tests of one process,
/// and preconditioning needs a device under every target.
pub(super) fn check_warmups(
    o: &RunOptions,
    points: &[Point],
    infos: &[TargetInfo],
) -> Result<(), PlanError> {
    let given: Vec<&str> = [
        (o.ramp.is_some(), "--ramp"),
        (o.steady_state.is_some(), "--steady-state"),
        (o.precondition.is_some(), "--precondition"),
    ]
    .iter()
    .filter(|g| g.0)
    .map(|g| g.1)
    .collect();
    let Some(first) = given.first() else {
        return Ok(());
    };
    if o.mpi {
        return Err(PlanError::usage(format!(
            "{first} is not available with --mpi: run it on one node without --mpi"
        )));
    }
    if let Some(p) = points.iter().find(|p| !p.spec.is_records()) {
        return Err(PlanError::usage(format!(
            "{first} works on the record tests' files, and {} is not one: leave it out of --tests",
            p.spec.name
        )));
    }
    let Some(passes) = o.precondition else {
        return Ok(());
    };
    if o.verify {
        return Err(PlanError::usage(
            "--precondition overwrites the files at random without the records' headers, which --verify would report as stale: drop one of them",
        ));
    }
    check_precondition(passes, infos)
}

/// `--precondition=PASSES`, for every command that takes it: 1 to 100 passes, and a block
/// device under every target.
pub fn check_precondition(passes: u32, infos: &[TargetInfo]) -> Result<(), PlanError> {
    if passes == 0 || passes > 100 {
        return Err(PlanError::usage(format!(
            "--precondition={passes} is out of range: give 1 to 100 sequential passes"
        )));
    }
    for i in infos {
        if candor_witness::is_memory_fs(&i.fs_type) || i.device.is_none() {
            let what = if i.fs_type.is_empty() {
                "a filesystem".to_string()
            } else {
                i.fs_type.clone()
            };
            return Err(PlanError::usage(format!(
                "--precondition brings a device to its steady state, and {} is on {what} with no block device under it: drop --precondition or give a directory on a disk's filesystem",
                i.path
            )));
        }
    }
    Ok(())
}

/// The counts and shares, whatever the plan.
pub(super) fn check_counts(o: &RunOptions) -> Result<(), PlanError> {
    if o.time_based && o.runtime.is_none() {
        return Err(PlanError::usage(
            "--time-based needs --runtime to say when to stop: add e.g. --runtime 10s",
        ));
    }
    if o.mix_read_pct > 100 {
        return Err(PlanError::usage(format!(
            "--mix-read-pct {} is not a percentage: use 0 to 100",
            o.mix_read_pct
        )));
    }
    if o.files == 0 || o.files > 10_000_000 {
        return Err(PlanError::usage(format!(
            "--files {} is out of range: use 1 to 10000000",
            o.files
        )));
    }
    if o.stride == 0 {
        return Err(PlanError::usage(
            "--stride 0 would read the same record forever: use 1 or more",
        ));
    }
    if o.repeat == Some(0) {
        return Err(PlanError::usage("--repeat 0 runs nothing: use 1 or more"));
    }
    Ok(())
}

/// O_DIRECT, checked before anything runs: each filesystem takes it, and every record is a
/// whole number of the device's logical blocks.
pub(super) fn check_direct(
    points: &[Point],
    infos: &[TargetInfo],
    dirs: &[RunDir],
) -> Result<(), PlanError> {
    for (d, info) in dirs.iter().zip(infos) {
        if let Err(e) = engines::direct_supported(d) {
            return Err(PlanError::usage(format!(
                "the {} filesystem at {} refuses O_DIRECT ({e}): drop --direct to run buffered",
                if info.fs_type.is_empty() {
                    "target's"
                } else {
                    &info.fs_type
                },
                info.path
            )));
        }
        let lbs = info
            .device
            .as_ref()
            .map(|b| b.logical_block_size as u64)
            .filter(|&b| b > 0)
            .unwrap_or(512);
        if let Some(p) = points
            .iter()
            .find(|p| p.can_direct() && p.record_size % lbs != 0)
        {
            return Err(PlanError::usage(format!(
                "with --direct, the record size must be a multiple of the device's logical block size ({lbs} bytes on {}), and {} is not: choose e.g. --record-size 4k",
                info.path,
                format_bytes(p.record_size, ByteStyle::LABEL)
            )));
        }
    }
    Ok(())
}

/// The largest file candor makes: a file offset is a signed 64-bit number (`off_t`).
pub const MAX_FILE_SIZE: u64 = i64::MAX as u64;

/// The file sizes given on the command line, each at most [`MAX_FILE_SIZE`]: checked before
/// any arithmetic is made with them (a size near 2^64 would wrap the sums after it). A
/// size that does not parse is left to the option's own check.
pub(super) fn check_size_options(o: &RunOptions) -> Result<(), PlanError> {
    for (what, v) in [
        ("file-size", &o.file_size),
        ("min-file-size", &o.min_file_size),
        ("max-file-size", &o.max_file_size),
    ] {
        let Some(text) = v.as_deref() else { continue };
        let Ok(sizes) = parse_size_list(text) else {
            continue;
        };
        if let Some(s) = sizes.iter().find(|&&s| s > MAX_FILE_SIZE) {
            return Err(PlanError::usage(format!(
                "--{what} {s} is larger than any file can be (8 EiB less one byte, the largest file offset): choose a smaller --{what}"
            )));
        }
    }
    Ok(())
}

/// Each point's files together (file size x threads) add up to at most
/// [`MAX_FILE_SIZE`], so that every sum made with them is exact.
pub(super) fn check_sizes(points: &[Point]) -> Result<(), PlanError> {
    for p in points {
        let total = p.file_size.checked_mul(p.threads as u64);
        if total.is_none_or(|t| t > MAX_FILE_SIZE) {
            return Err(PlanError::usage(format!(
                "--file-size {} with --threads {} makes {} x {} bytes, more than any filesystem or device holds: choose a smaller --file-size or fewer --threads",
                p.file_size, p.threads, p.threads, p.file_size
            )));
        }
    }
    Ok(())
}

/// Free bytes of the filesystem holding `path` (statvfs, for an unprivileged user); None
/// when statvfs cannot be read.
pub(super) fn free_space(path: &std::path::Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs is plain integers; zeroed is a valid value to be overwritten.
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: c is a valid NUL-terminated path and s a writable statvfs.
    if unsafe { libc::statvfs(c.as_ptr(), &mut s) } != 0 {
        return None;
    }
    (s.f_bavail as u64).checked_mul(s.f_frsize as u64)
}

/// The largest file set (one file per thread) must fit on every target, with a margin. A
/// target that reads 0 bytes free has no room (its free space is read again, as 0 also
/// stands for "not known" in the description); only a target whose free space cannot be
/// read at all is not checked, and a note says so. Devices are checked by
/// [`check_devices`].
pub(super) fn check_free_space(
    points: &[Point],
    infos: &[TargetInfo],
    dirs: &[RunDir],
    notes: &mut Vec<String>,
) -> Result<(), PlanError> {
    let need = points
        .iter()
        .map(|p| p.file_size.saturating_mul(p.threads as u64))
        .max()
        .unwrap_or(0);
    let need_with_margin = need.saturating_add(need / 50).saturating_add(16 << 20);
    for (info, dir) in infos.iter().zip(dirs) {
        if dir.device().is_some() {
            continue;
        }
        let free = match info.free_bytes {
            0 => match free_space(dir.path()) {
                Some(f) => f,
                None => {
                    notes.push(format!(
                        "the free space of {} cannot be read (statvfs failed): the plan's {} were not checked against it",
                        info.path,
                        format_bytes(need_with_margin, ByteStyle::LABEL)
                    ));
                    continue;
                }
            },
            f => f,
        };
        if free < need_with_margin {
            return Err(PlanError::usage(format!(
                "{} has {} free but the plan needs {} (file size x threads, plus a margin): free some space or choose a smaller --file-size or fewer --threads",
                info.path,
                format_bytes(free, ByteStyle::LABEL),
                format_bytes(need_with_margin, ByteStyle::LABEL)
            )));
        }
    }
    Ok(())
}

/// A block device target: only the record tests on engines that address an offset can
/// work on a slice of it, and every thread's slice must lie inside the device.
pub(super) fn check_devices(points: &[Point], dirs: &[RunDir]) -> Result<(), PlanError> {
    for d in dirs.iter().filter_map(|d| d.device()) {
        let shown = d.path().display();
        if let Some(p) = points.iter().find(|p| !p.spec.is_records()) {
            return Err(PlanError::usage(format!(
                "the {} test makes and removes files, which needs a filesystem, and {shown} is a raw device: leave it out of --tests",
                p.spec.name
            )));
        }
        if let Some(p) = points
            .iter()
            .find(|p| matches!(p.engine, EngineKind::Stdio | EngineKind::Mmap))
        {
            return Err(PlanError::usage(format!(
                "the {} test ({} engine) cannot work on a slice of {shown}: leave it out of --tests or choose another --engine",
                p.spec.name,
                p.engine.name()
            )));
        }
        let need = points
            .iter()
            .map(|p| p.file_size.saturating_mul(p.threads as u64))
            .max()
            .unwrap_or(0);
        if need > d.room() {
            return Err(PlanError::usage(format!(
                "the plan needs {} (file size x threads) from offset {} of {shown}, which has {} there: choose a smaller --file-size, fewer --threads or a lower --offset",
                format_bytes(need, ByteStyle::LABEL),
                d.offset(),
                format_bytes(d.room(), ByteStyle::LABEL)
            )));
        }
    }
    Ok(())
}

/// `--verify` needs records that an engine stamps and checks one by one.
pub(super) fn check_verifiable(points: &[Point]) -> Result<(), PlanError> {
    for p in points {
        let name = p.spec.name;
        if !p.spec.is_records() {
            return Err(PlanError::usage(format!(
                "--verify checks the records of the file tests, and {name} is not one: leave it out of --tests or drop --verify"
            )));
        }
        if !p.engine.verifies() {
            let able: Vec<&str> = engines::ENGINES
                .iter()
                .filter(|e| e.verify)
                .map(|e| e.name)
                .collect();
            let (last, rest) = able.split_last().unwrap_or((&"", &[]));
            return Err(PlanError::usage(format!(
                "--verify works with the {} and {last} engines, and {name} runs on {}: leave it out of --tests (or choose another --engine) or drop --verify",
                rest.join(", "),
                p.engine.name()
            )));
        }
        if (p.record_size as usize) < HEADER {
            return Err(PlanError::usage(format!(
                "--verify puts a {HEADER}-byte header in every record, and {} is smaller: use a --record-size of 64 or more",
                format_bytes(p.record_size, ByteStyle::LABEL)
            )));
        }
        if p.spec.pattern == PatternKind::SameRecord && p.iodepth > 1 {
            return Err(PlanError::usage(format!(
                "{name} rewrites one record, and with --iodepth {} several of those writes are in flight at once, so which lands last is not defined and cannot be verified: run it at --iodepth 1",
                p.iodepth
            )));
        }
    }
    Ok(())
}

/// `--drop-caches` writes the kernel's drop_caches, which only root may: refused up front
/// rather than silently not done. Opening it for writing drops nothing (writing does).
pub fn check_drop_caches() -> Result<(), PlanError> {
    let kernel = candor_procfs::Kernel::system();
    kernel.may_drop_caches().map_err(|e| {
        let path = kernel.drop_caches_path();
        let why = e.io().map_or_else(|| e.to_string(), |io| io.to_string());
        PlanError::usage(format!(
            "--drop-caches writes {}, which this process may not ({why}): run as root or leave it out",
            path.display()
        ))
    })
}

/// `--shared-file` needs engines that write at an offset: the stdio and mmap tests cannot
/// work on one segment of a file.
pub(super) fn check_shared_file(points: &[Point]) -> Result<(), PlanError> {
    match points
        .iter()
        .find(|p| matches!(p.engine, EngineKind::Stdio | EngineKind::Mmap))
    {
        Some(p) => Err(PlanError::usage(format!(
            "--shared-file gives each rank a segment of one file, which the {} test ({} engine) cannot address: leave it out of --tests or drop --shared-file",
            p.spec.name,
            p.engine.name()
        ))),
        None => Ok(()),
    }
}
