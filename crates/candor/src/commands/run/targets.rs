//! `candor run`'s targets: each checked before anything is written (a directory on a real
//! filesystem with room, or a block device candor may claim), the stale run directories of
//! killed runs removed, this run's directories made, and each target given its witness.

use super::role::Role;
use crate::exit::Failure;
use candor_engine::device;
use candor_engine::plan::{Ceiling, Plan, RunOptions};
use candor_engine::rundir::{clean_stale, new_run_id, RunDir};
use candor_engine::runner::Target;
use candor_model::{RunDoc, TargetInfo};
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

/// The targets as given (default: the current directory), each checked before anything is
/// written, named by its full path (a report that says "." says nothing).
pub(super) fn target_paths(given: &[PathBuf], allow_device: bool) -> Result<Vec<PathBuf>, Failure> {
    let targets: Vec<PathBuf> = if given.is_empty() {
        vec![PathBuf::from(".")]
    } else {
        given.to_vec()
    };
    for t in &targets {
        check_target(t, allow_device)?;
    }
    Ok(targets
        .into_iter()
        .map(|t| std::fs::canonicalize(&t).unwrap_or(t))
        .collect())
}

/// Removes what killed runs left behind, makes this run's directories and describes each
/// target: the run id, the run directories and the descriptions.
pub(super) fn prepare_targets(
    paths: &[PathBuf],
    region: &Region,
    role: &Role,
) -> Result<(String, Vec<RunDir>, Vec<TargetInfo>), Failure> {
    // Stale run directories of killed runs go first (only candor's, by their marker).
    // Not over MPI: a run directory made on another node cannot be told from a stale one.
    for t in paths
        .iter()
        .filter(|t| role.cleans_stale() && !device::is_block_device(t))
    {
        if let Ok(rep) = clean_stale(t) {
            for p in rep.removed() {
                eprintln!(
                    "candor: removed {} left behind by an earlier run that was killed",
                    p.display()
                );
            }
        }
    }
    let id = role.run_id(new_run_id());
    let dirs = role.agree(
        paths
            .iter()
            .map(|t| {
                if device::is_block_device(t) {
                    device::claim(t, region.offset, region.destroy)
                        .map(RunDir::on_device)
                        .map_err(Failure::usage)
                } else {
                    make_run_dir(t, &id)
                }
            })
            .collect::<Result<Vec<RunDir>, Failure>>(),
    )?;
    let infos = paths
        .iter()
        .map(|t| candor_witness::describe_target(t))
        .collect();
    Ok((id, dirs, infos))
}

/// Each target with its witness; the witness's notes go to the person and the result.
/// `job`: the other processes of the same job on this machine (MPI ranks on this node).
pub(super) fn witnessed(
    paths: Vec<PathBuf>,
    dirs: Vec<RunDir>,
    plan: &Plan,
    job: &[u32],
    doc: &mut RunDoc,
    say: bool,
) -> Vec<Target> {
    let mut targets = Vec::new();
    let config = candor_witness::Config {
        job: job.to_vec(),
        ..plan.witness.clone()
    };
    for (t, d) in paths.into_iter().zip(dirs) {
        let (mut w, note) = candor_witness::Witness::new(&t, config.clone());
        // A ceiling given on the command line (not one measured here) bounds what the
        // device can do: the witness names figures beyond it.
        if let Ceiling::Given(spec) = &plan.ceiling {
            w.set_ceiling(Some(candor_model::Ceiling {
                read_bps: spec.seq_read,
                write_bps: spec.seq_write,
                read_iops: spec.iops_read,
                write_iops: spec.iops_write,
            }));
        }
        if let Some(n) = note {
            super::say_all(doc, &[n], say);
        }
        targets.push(Target::new(t, d, w));
    }
    targets
}
/// Where candor works on a block device target, and whether it may destroy what is there.
pub(super) struct Region {
    offset: u64,
    destroy: bool,
}

impl Region {
    pub(super) fn of(o: &RunOptions) -> Result<Region, Failure> {
        let offset = match o.offset.as_deref() {
            None => 0,
            Some(s) => candor_engine::size::parse_size(s)
                .map_err(|e| Failure::usage(format!("--offset: {e}")))?,
        };
        Ok(Region {
            offset,
            destroy: o.destroy_existing_data,
        })
    }
}

/// Checks a target before anything is written: exists, is a directory (or an allowed
/// device), is writable.
fn check_target(t: &Path, allow_device: bool) -> Result<(), Failure> {
    let meta = std::fs::metadata(t).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Failure::usage(format!(
            "{} does not exist: give an existing directory to benchmark",
            t.display()
        )),
        std::io::ErrorKind::PermissionDenied => Failure::usage(format!(
            "cannot reach {}: permission denied; choose a directory you can write to",
            t.display()
        )),
        _ => Failure::usage(format!("cannot use {}: {e}", t.display())),
    })?;
    if meta.file_type().is_block_device() {
        if allow_device {
            // Checked and claimed with the run's directories (device::claim).
            return Ok(());
        }
        return Err(Failure::usage(format!(
            "{} is a block device: candor would overwrite its contents; give a directory on a filesystem instead (or --allow-device-writes if you mean it)",
            t.display()
        )));
    }
    if !meta.is_dir() {
        return Err(Failure::usage(format!("{} is not a directory: give the directory to benchmark (candor makes its own files there)", t.display())));
    }
    if let Some(fs) = crate::paths::pseudo_fs(t) {
        return Err(Failure::usage(format!(
            "{} is on a {fs} pseudo-filesystem, which holds the kernel's own entries and cannot hold benchmark files: give a directory on a real filesystem",
            t.display()
        )));
    }
    // 0 bytes free is no room at all (only an unreadable statfs leaves it to the plan,
    // which says it could not check). A read-only filesystem (which often reads 0 free)
    // is said as such when the run directory cannot be made.
    if crate::paths::free_bytes(t) == Some(0) && !crate::paths::read_only(t) {
        return Err(Failure::usage(format!(
            "{} has 0 B free, so no test file fits: free some space or choose another target",
            t.display()
        )));
    }
    Ok(())
}

/// candor's run directory in `t`, or the sentence that says why it cannot be made.
pub(crate) fn make_run_dir(t: &Path, id: &str) -> Result<RunDir, Failure> {
    RunDir::create(t, id).map_err(|e| match e.raw_os_error() {
        Some(libc::EROFS) => Failure::usage(format!(
            "{} is on a read-only filesystem: choose a writable directory",
            t.display()
        )),
        Some(libc::EACCES) | Some(libc::EPERM) => Failure::usage(format!(
            "cannot write in {}: permission denied; choose a directory you can write to",
            t.display()
        )),
        Some(libc::ENOSPC) | Some(libc::EDQUOT) => Failure::failed(format!(
            "{} has no space left, not even for candor's run directory: free some space",
            t.display()
        )),
        _ => Failure::failed(format!(
            "cannot create candor's run directory in {}: {e}",
            t.display()
        )),
    })
}
