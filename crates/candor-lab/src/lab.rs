//! `candor lab`: a set of filesystems on loop devices kept under one directory,
//! `DIR/.candor-lab/`, for comparisons without spare disks.
//!
//! The lab owns exactly what its state file (`DIR/.candor-lab/lab.json`, marked with
//! `"kind": "candor-lab"`) lists: one sparse backing file per filesystem
//! (`DIR/.candor-lab/<fs>.img`), the loop device attached to it (found again through
//! /sys by its backing file, never by a remembered device name), and its mount point
//! (`DIR/.candor-lab/mnt/<fs>`). The state is saved before every step that makes something,
//! so an interrupted `create` leaves nothing that `destroy` does not know about. `create`
//! undoes everything it made in the same call when a step fails, and `destroy` removes only
//! listed things, with non-recursive directory removal, so files a person added survive.
//!
//! This module holds what a lab is and its commands (`list`, `create`, `destroy`, with the
//! checks made before anything is made); `state` reads and writes its state file, `member`
//! makes, brings back and removes one filesystem.

mod member;
mod state;

use crate::spec::{check_size, FsKind};
use crate::sys;
use crate::trust;
use crate::LabError;
use candor_model::units::{format_bytes, ByteStyle};
use member::{build, remove_member, revive, status_of};
use serde::{Deserialize, Serialize};
use state::{load_state, new_state, save_state, state_path};
use std::path::{Path, PathBuf};

/// The lab's directory inside the directory the user names.
pub const LAB_DIR_NAME: &str = ".candor-lab";

/// `DIR/.candor-lab`.
pub fn lab_root(dir: &Path) -> PathBuf {
    dir.join(LAB_DIR_NAME)
}

/// The state file: what this lab made.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LabState {
    pub kind: String,
    pub version: u32,
    pub members: Vec<Member>,
}

/// One filesystem of the lab.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Member {
    pub fs: FsKind,
    /// Size of the backing file, in bytes.
    pub size: u64,
    pub backing: PathBuf,
    pub mount_point: PathBuf,
    /// True once mkfs succeeded: the backing file holds this filesystem.
    pub formatted: bool,
}

/// Where a member stands now, as the kernel sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemberStatus {
    /// Its loop device is mounted on its mount point.
    Mounted { loop_device: String },
    /// Its loop device exists but is not mounted there.
    Attached { loop_device: String },
    /// The backing file exists, no loop device uses it (after a reboot, say).
    Detached,
    /// The backing file is gone.
    Missing,
}

impl std::fmt::Display for MemberStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MemberStatus::Mounted { .. } => f.write_str("mounted"),
            MemberStatus::Attached { .. } => f.write_str("not mounted"),
            MemberStatus::Detached => f.write_str("no loop device"),
            MemberStatus::Missing => f.write_str("backing file missing"),
        }
    }
}

/// A member with its status.
#[derive(Debug, Clone)]
pub struct MemberView {
    pub member: Member,
    pub status: MemberStatus,
}

impl MemberView {
    pub fn loop_device(&self) -> Option<&str> {
        match &self.status {
            MemberStatus::Mounted { loop_device } | MemberStatus::Attached { loop_device } => {
                Some(loop_device)
            }
            _ => None,
        }
    }
}

/// What `candor lab create` is asked for.
#[derive(Debug, Clone)]
pub struct CreateRequest {
    /// The directory whose filesystem holds the backing files; the lab lives in
    /// `dir/.candor-lab`.
    pub dir: PathBuf,
    pub filesystems: Vec<FsKind>,
    /// Size of each filesystem, in bytes.
    pub size: u64,
}

/// What happened to one requested filesystem.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Made now: backing file, loop device, mkfs, mount.
    Created,
    /// It was there and mounted; nothing done.
    Existed,
    /// It was there but not mounted (after a reboot, say); attached and mounted again.
    Remounted,
}

#[derive(Debug, Clone)]
pub struct CreatedMember {
    pub member: Member,
    pub loop_device: String,
    pub outcome: Outcome,
}

#[derive(Debug, Clone)]
pub struct CreateReport {
    pub root: PathBuf,
    /// In the order requested.
    pub members: Vec<CreatedMember>,
    /// Bytes free on the backing filesystem before anything was made.
    pub free_before: u64,
}

impl CreateReport {
    /// Sum of the sizes of the backing files made by this call (sparse: an upper bound on
    /// the space they will take).
    pub fn new_bytes(&self) -> u64 {
        self.members
            .iter()
            .filter(|m| m.outcome == Outcome::Created)
            .map(|m| m.member.size)
            .sum()
    }
}

#[derive(Debug, Clone, Default)]
pub struct DestroyReport {
    /// Members unmounted, detached and removed.
    pub removed: Vec<Member>,
    /// Paths left in place because they were not empty or not the lab's (files a person
    /// added, say).
    pub left: Vec<PathBuf>,
}

impl DestroyReport {
    pub fn nothing_to_do(&self) -> bool {
        self.removed.is_empty() && self.left.is_empty()
    }
}

/// The paths the lab makes for `fs`: its backing file and its mount point.
fn member_paths(root: &Path, fs: FsKind) -> (PathBuf, PathBuf) {
    (
        root.join(format!("{fs}.img")),
        root.join("mnt").join(fs.name()),
    )
}

/// `dir` made canonical; None when it does not exist (so there is no lab in it).
fn existing_dir(dir: &Path) -> Result<Option<PathBuf>, LabError> {
    match std::fs::canonicalize(dir) {
        Ok(d) => Ok(Some(d)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(LabError::Usage(format!(
            "--dir {} cannot be used: {e}",
            dir.display()
        ))),
    }
}

/// The lab in `dir`, with the status of each member; `Ok(None)` when there is none.
/// Needs no privileges.
pub fn list(dir: &Path) -> Result<Option<Vec<MemberView>>, LabError> {
    let Some(dir) = existing_dir(dir)? else {
        return Ok(None);
    };
    let root = lab_root(&dir);
    trust::check_chain(&dir)?;
    let Some(_lab) = trust::open_lab_dir(&root)? else {
        return Ok(None);
    };
    let Some(state) = load_state(&root)? else {
        return Ok(None);
    };
    let mounts = sys::mounts()?;
    Ok(Some(
        state
            .members
            .into_iter()
            .map(|member| {
                let status = status_of(&member, &mounts);
                MemberView { member, status }
            })
            .collect(),
    ))
}

fn check_dir(dir: &Path) -> Result<PathBuf, LabError> {
    let meta = std::fs::metadata(dir)
        .map_err(|e| LabError::Usage(format!("--dir {} cannot be used: {e}", dir.display())))?;
    if !meta.is_dir() {
        return Err(LabError::Usage(format!(
            "--dir {} is not a directory",
            dir.display()
        )));
    }
    // Absolute, resolved paths: mount points are compared with the mount table's.
    Ok(std::fs::canonicalize(dir)?)
}

/// Every program `create` will run is there before anything is made.
fn check_programs(kinds: &[FsKind]) -> Result<(), LabError> {
    for (program, package) in [
        ("losetup", "util-linux"),
        ("mount", "mount"),
        ("umount", "mount"),
    ] {
        if !sys::on_path(program) {
            return Err(LabError::Failed(format!(
                "{program} is not installed (Debian package {package}); nothing was made"
            )));
        }
    }
    for &k in kinds {
        let (mkfs, _) = k.mkfs();
        if !sys::on_path(mkfs) {
            return Err(LabError::Failed(format!(
                "{mkfs} is not installed, so the lab cannot make {k}: install the {} package; nothing was made",
                k.package()
            )));
        }
    }
    Ok(())
}

/// Opens the lab's directory (making it, mode 0700, when `make`), checks it and locks it.
/// A `destroy` that removed the directory while this command waited for the lock leaves
/// it unlinked: then start again (`make`), or report no lab (`Ok(None)`). Returns whether
/// this call made the directory, and the lock.
fn lock_lab(root: &Path, make: bool) -> Result<Option<(bool, sys::DirLock)>, LabError> {
    for _ in 0..100 {
        let made = if make {
            trust::make_private_dir(root)
                .map_err(|e| LabError::Failed(format!("cannot create {}: {e}", root.display())))?
        } else {
            false
        };
        let Some(lab) = trust::open_lab_dir(root)? else {
            if make {
                continue;
            }
            return Ok(None);
        };
        let lock = sys::lock_file(&lab.file)?;
        if trust::still_there(root, &lab) {
            return Ok(Some((made, lock)));
        }
        if !make {
            return Ok(None);
        }
    }
    Ok(None)
}

/// Makes the lab, or completes it: filesystems already there and mounted are reported as
/// [`Outcome::Existed`]. Needs root. On failure, everything this call made is undone; what
/// was there before stays.
pub fn create(req: &CreateRequest) -> Result<CreateReport, LabError> {
    if req.filesystems.is_empty() {
        return Err(LabError::Usage(
            "name at least one filesystem with --fs, such as --fs ext4,xfs,btrfs".into(),
        ));
    }
    check_size(req.size, &req.filesystems).map_err(LabError::Usage)?;
    if !sys::is_root() {
        return Err(LabError::NeedsRoot(
            "candor lab create needs root (it attaches loop devices, runs mkfs and mounts); run it with sudo".into(),
        ));
    }
    let dir = check_dir(&req.dir)?;
    trust::check_chain(&dir)?;
    check_programs(&req.filesystems)?;
    let root = lab_root(&dir);
    let free_before = sys::free_bytes(&dir)?;

    // Make or open the lab's directory, lock it, then read its state under the lock, so
    // two commands on one lab run one after the other.
    let (made_root, _lock) = lock_lab(&root, true)?.ok_or_else(|| {
        LabError::Failed(format!(
            "{} kept disappearing while candor waited for it; try again",
            root.display()
        ))
    })?;
    // Refusals from here on leave nothing behind: a directory made by this call goes.
    let refuse = |e: LabError| {
        if made_root {
            let _ = std::fs::remove_dir(&root);
        }
        e
    };
    let existing = load_state(&root).map_err(refuse)?;
    if existing.is_none() && !made_root && std::fs::read_dir(&root)?.next().is_some() {
        return Err(LabError::Usage(format!(
            "{} exists but holds no lab state file, so candor did not make it; \
             remove it or choose another --dir",
            root.display()
        )));
    }
    let new_kinds: Vec<FsKind> = req
        .filesystems
        .iter()
        .copied()
        .filter(|k| {
            !existing
                .as_ref()
                .is_some_and(|s| s.members.iter().any(|m| m.fs == *k && m.formatted))
        })
        .collect();
    let needed = req.size.saturating_mul(new_kinds.len() as u64);
    if needed > free_before {
        return Err(refuse(LabError::Usage(format!(
            "{} has {} free but {} filesystem(s) of {} need up to {}; the backing files are sparse, \
             but filled filesystems would run the host out of space: choose a smaller --size or another --dir",
            dir.display(),
            format_bytes(free_before, ByteStyle::PROSE),
            new_kinds.len(),
            format_bytes(req.size, ByteStyle::PROSE),
            format_bytes(needed, ByteStyle::PROSE)
        ))));
    }
    let fresh = existing.is_none();
    let mut state = existing.unwrap_or_else(new_state);
    if fresh {
        save_state(&root, &state).map_err(refuse)?;
    }

    let result = create_members(&root, &mut state, req);
    match result {
        Ok(members) => Ok(CreateReport {
            root,
            members,
            free_before,
        }),
        Err((e, created_now)) => {
            // Undo the members this call made, newest first; earlier ones stay.
            for fs in created_now.iter().rev() {
                if let Some(m) = state.members.iter().find(|m| m.fs == *fs).cloned() {
                    let _ = remove_member(&m);
                    state.members.retain(|x| x.fs != *fs);
                    let _ = save_state(&root, &state);
                }
            }
            if state.members.is_empty() {
                let _ = std::fs::remove_file(state_path(&root));
                let _ = std::fs::remove_dir(root.join("mnt"));
                if made_root || std::fs::read_dir(&root).is_ok_and(|mut d| d.next().is_none()) {
                    let _ = std::fs::remove_dir(&root);
                }
            }
            Err(e)
        }
    }
}

type CreateFailure = (LabError, Vec<FsKind>);

fn create_members(
    root: &Path,
    state: &mut LabState,
    req: &CreateRequest,
) -> Result<Vec<CreatedMember>, CreateFailure> {
    let mut created_now: Vec<FsKind> = Vec::new();
    let mut out = Vec::new();
    let mounts = sys::mounts().map_err(|e| (e, Vec::new()))?;
    for &fs in &req.filesystems {
        let known = state.members.iter().find(|m| m.fs == fs).cloned();
        if let Some(member) = known {
            if member.formatted {
                let status = status_of(&member, &mounts);
                let outcome = if matches!(status, MemberStatus::Mounted { .. }) {
                    Outcome::Existed
                } else {
                    Outcome::Remounted
                };
                let loop_device = revive(&member, &status).map_err(|e| (e, created_now.clone()))?;
                out.push(CreatedMember {
                    member,
                    loop_device,
                    outcome,
                });
                continue;
            }
            // Listed but never formatted: an interrupted create. Clear it and start again.
            remove_member(&member).map_err(|e| (e, created_now.clone()))?;
            state.members.retain(|m| m.fs != fs);
            save_state(root, state).map_err(|e| (e, created_now.clone()))?;
        }
        let loop_device = build(root, state, fs, req.size).map_err(|e| (e, created_now.clone()))?;
        created_now.push(fs);
        let member = state
            .members
            .iter()
            .find(|m| m.fs == fs)
            .cloned()
            .ok_or_else(|| {
                (
                    LabError::Failed(format!("the lab state lost {fs} while making it")),
                    created_now.clone(),
                )
            })?;
        out.push(CreatedMember {
            member,
            loop_device,
            outcome: Outcome::Created,
        });
    }
    Ok(out)
}

/// Removes the lab in `dir`: unmounts its filesystems, detaches their loop devices, deletes
/// their backing files and mount points, then the state file and the lab directory when
/// empty. With no lab there, does nothing and says so (`nothing_to_do`).
pub fn destroy(dir: &Path) -> Result<DestroyReport, LabError> {
    let Some(dir) = existing_dir(dir)? else {
        return Ok(DestroyReport::default());
    };
    let root = lab_root(&dir);
    trust::check_chain(&dir)?;
    // Locked before the state is read: a destroy running meanwhile has finished.
    let Some((_, _lock)) = lock_lab(&root, false)? else {
        return Ok(DestroyReport::default());
    };
    let Some(mut state) = load_state(&root)? else {
        if std::fs::read_dir(&root)?.next().is_none() {
            // An empty lab directory: left by a create interrupted before its first save.
            std::fs::remove_dir(&root)?;
            return Ok(DestroyReport::default());
        }
        return Err(LabError::Usage(format!(
            "{} holds no lab state file, so candor did not make it (or it was changed by hand); nothing was removed",
            root.display()
        )));
    };
    if !sys::is_root() {
        return Err(LabError::NeedsRoot(
            "candor lab destroy needs root (it unmounts and detaches loop devices); run it with sudo".into(),
        ));
    }
    let mut report = DestroyReport::default();
    while let Some(member) = state.members.last().cloned() {
        let left = remove_member(&member)?;
        report.left.extend(left);
        state.members.pop();
        save_state(&root, &state)?;
        report.removed.push(member);
    }
    std::fs::remove_file(state_path(&root))?;
    for d in [root.join("mnt"), root.clone()] {
        match std::fs::remove_dir(&d) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(_) => report.left.push(d),
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn tmp() -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "candor-lab-unit-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0)
        ));
        std::fs::create_dir_all(&d).expect("mkdir");
        d
    }

    #[test]
    fn nothing_to_destroy_or_list_where_there_is_no_lab() {
        let d = tmp();
        assert!(destroy(&d).expect("destroy").nothing_to_do());
        assert!(destroy(&d.join("does-not-exist"))
            .expect("destroy")
            .nothing_to_do());
        assert!(list(&d).expect("list").is_none());
        // An empty lab directory (a create stopped before its first save) is removed.
        std::fs::create_dir(lab_root(&d)).expect("mkdir");
        assert!(destroy(&d).expect("destroy").nothing_to_do());
        assert!(!lab_root(&d).exists());
        std::fs::remove_dir_all(&d).expect("cleanup");
    }

    #[test]
    fn bad_requests_are_usage_errors_before_anything_is_made() {
        let d = tmp();
        let req = |filesystems: Vec<FsKind>, size: u64| CreateRequest {
            dir: d.clone(),
            filesystems,
            size,
        };
        assert!(matches!(
            create(&req(vec![], 1 << 30)),
            Err(LabError::Usage(_))
        ));
        assert!(matches!(
            create(&req(vec![FsKind::Xfs], 100 << 20)),
            Err(LabError::Usage(_))
        ));
        assert!(!lab_root(&d).exists());
        std::fs::remove_dir_all(&d).expect("cleanup");
    }

    pub(super) fn usage_text(r: Result<impl std::fmt::Debug, LabError>) -> String {
        match r {
            Err(LabError::Usage(m)) => m,
            other => panic!("expected a usage error, got {other:?}"),
        }
    }

    #[test]
    fn a_lab_directory_others_can_change_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let d = tmp();
        let root = lab_root(&d);
        std::fs::create_dir(&root).expect("mkdir");
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o777)).expect("chmod");
        assert!(usage_text(trust::open_lab_dir(&root).map(|_| ())).contains("mode 0777"));
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o700)).expect("chmod");
        assert!(trust::open_lab_dir(&root).expect("open").is_some());
        std::fs::remove_dir(&root).expect("rmdir");
        std::os::unix::fs::symlink(&d, &root).expect("ln");
        assert!(usage_text(trust::open_lab_dir(&root).map(|_| ())).contains("symbolic link"));
        std::fs::remove_file(&root).expect("rm");
        // The chain: a directory writable by all without the sticky bit, then with it.
        let shared = d.join("shared");
        std::fs::create_dir(&shared).expect("mkdir");
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).expect("chmod");
        let dir = std::fs::canonicalize(&shared).expect("canonical");
        assert!(usage_text(trust::check_chain(&dir)).contains("without the sticky bit"));
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).expect("chmod");
        trust::check_chain(&dir).expect("a sticky directory of one's own is fine");
        std::fs::remove_dir_all(&d).expect("cleanup");
    }
}
