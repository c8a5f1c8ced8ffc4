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

use crate::spec::{check_size, FsKind};
use crate::sys::{self, canonical, losetup, run};
use crate::trust;
use crate::LabError;
use candor_model::units::{format_bytes, ByteStyle};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The lab's directory inside the directory the user names.
pub const LAB_DIR_NAME: &str = ".candor-lab";
const STATE_FILE: &str = "lab.json";
const STATE_KIND: &str = "candor-lab";
const STATE_VERSION: u32 = 1;

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

fn state_path(root: &Path) -> PathBuf {
    root.join(STATE_FILE)
}

/// Reads the state of the lab in `root` (checked by [`trust::open_lab_dir`]); `Ok(None)`
/// when it has no state file. A state is trusted only if candor could have written it:
/// see [`trust`].
fn load_state(root: &Path) -> Result<Option<LabState>, LabError> {
    let path = state_path(root);
    let Some(text) = trust::read_state_file(root, STATE_FILE)? else {
        return Ok(None);
    };
    let state: LabState = serde_json::from_str(&text).map_err(|e| {
        LabError::Usage(format!(
            "{} is not a lab state file candor can read ({e}); candor leaves that directory alone",
            path.display()
        ))
    })?;
    if state.kind != STATE_KIND {
        return Err(LabError::Usage(format!(
            "{} was not written by candor lab; candor leaves that directory alone",
            path.display()
        )));
    }
    if state.version != STATE_VERSION {
        return Err(LabError::Usage(format!(
            "{} has state version {}, this candor reads version {STATE_VERSION}",
            path.display(),
            state.version
        )));
    }
    check_members(root, &path, &state)?;
    Ok(Some(state))
}

/// The paths the lab makes for `fs`: its backing file and its mount point.
fn member_paths(root: &Path, fs: FsKind) -> (PathBuf, PathBuf) {
    (
        root.join(format!("{fs}.img")),
        root.join("mnt").join(fs.name()),
    )
}

/// Each member once, with exactly the paths the lab makes, and what is at them what the
/// lab makes there.
fn check_members(root: &Path, path: &Path, state: &LabState) -> Result<(), LabError> {
    for (i, m) in state.members.iter().enumerate() {
        if state.members[..i].iter().any(|o| o.fs == m.fs) {
            return Err(LabError::Usage(format!(
                "{} lists {} twice, so candor did not write it; candor leaves this lab alone",
                path.display(),
                m.fs
            )));
        }
        let (backing, mount_point) = member_paths(root, m.fs);
        trust::check_member_path(
            path,
            &format!("the {} backing file", m.fs),
            &m.backing,
            &backing,
        )?;
        trust::check_member_path(
            path,
            &format!("the {} mount point", m.fs),
            &m.mount_point,
            &mount_point,
        )?;
        trust::check_entry(&backing, false)?;
    }
    trust::check_entry(&root.join("mnt"), true)?;
    Ok(())
}

/// Writes the state atomically (temporary file, fsync, rename), mode 0600.
fn save_state(root: &Path, state: &LabState) -> Result<(), LabError> {
    let tmp = root.join(format!("{STATE_FILE}.tmp"));
    let text =
        serde_json::to_string_pretty(state).map_err(|e| LabError::Io(std::io::Error::other(e)))?;
    match std::fs::remove_file(&tmp) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e.into()),
        _ => {}
    }
    let mut f = trust::create_private_file(&tmp)?;
    f.write_all(text.as_bytes())?;
    f.write_all(b"\n")?;
    f.sync_all()?;
    drop(f);
    std::fs::rename(&tmp, state_path(root))?;
    Ok(())
}

fn new_state() -> LabState {
    LabState {
        kind: STATE_KIND.to_string(),
        version: STATE_VERSION,
        members: Vec::new(),
    }
}

/// The status of a member from sysfs and the mount table.
fn status_of(member: &Member, mounts: &[sys::MountEntry]) -> MemberStatus {
    let loops = sys::loops_backed_by(&member.backing);
    let mp = canonical(&member.mount_point);
    for l in &loops {
        if mounts.iter().any(|m| &m.source == l && m.target == mp) {
            return MemberStatus::Mounted {
                loop_device: l.clone(),
            };
        }
    }
    if let Some(l) = loops.first() {
        return MemberStatus::Attached {
            loop_device: l.clone(),
        };
    }
    if member.backing.exists() {
        MemberStatus::Detached
    } else {
        MemberStatus::Missing
    }
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

/// Things made for one new member so far, undone in reverse on failure.
#[derive(Default)]
struct Made {
    backing: bool,
    loop_device: Option<String>,
    mount_point_dir: bool,
    mounted: bool,
}

fn undo(member: &Member, made: &Made) {
    if made.mounted {
        let _ = run("umount", &[&member.mount_point.display().to_string()]);
    }
    if let Some(l) = &made.loop_device {
        let _ = run("losetup", &["-d", l]);
    }
    if made.backing {
        let _ = std::fs::remove_file(&member.backing);
    }
    if made.mount_point_dir {
        let _ = std::fs::remove_dir(&member.mount_point);
    }
}

/// Attaches `backing` to a free loop device and checks, through /sys, that the device is
/// really backed by it before anything is written to it.
fn attach(backing: &Path) -> Result<String, LabError> {
    let device = losetup(backing).map_err(|e| match e {
        LabError::Command { detail, .. } => LabError::Failed(format!(
            "cannot attach {} to a loop device: {detail}",
            backing.display()
        )),
        other => other,
    })?;
    if !sys::loops_backed_by(backing).contains(&device) {
        let _ = run("losetup", &["-d", &device]);
        return Err(LabError::Failed(format!(
            "losetup reported {device} for {}, but /sys does not show that device backed by it; nothing was formatted",
            backing.display()
        )));
    }
    Ok(device)
}

/// Mounts a lab filesystem `nosuid,nodev`: a set-user-id file or a device node in an
/// image is never honoured.
fn mount(device: &str, mount_point: &Path) -> Result<(), LabError> {
    run(
        "mount",
        &[
            "-o",
            "nosuid,nodev",
            device,
            &mount_point.display().to_string(),
        ],
    )
    .map(|_| ())
}

/// Makes one member: backing file, loop device, mkfs, mount point, mount. The state lists
/// the member before anything is made, and is saved again once it is formatted.
fn build(root: &Path, state: &mut LabState, fs: FsKind, size: u64) -> Result<String, LabError> {
    let (backing, mount_point) = member_paths(root, fs);
    let member = Member {
        fs,
        size,
        backing,
        mount_point,
        formatted: false,
    };
    state.members.push(member.clone());
    save_state(root, state)?;
    let mut made = Made::default();
    let result = build_steps(&member, &mut made);
    match result {
        Ok(device) => {
            if let Some(m) = state.members.iter_mut().find(|m| m.fs == fs) {
                m.formatted = true;
            }
            save_state(root, state)?;
            Ok(device)
        }
        Err(e) => {
            undo(&member, &made);
            state.members.retain(|m| m.fs != fs);
            save_state(root, state)?;
            Err(e)
        }
    }
}

fn build_steps(member: &Member, made: &mut Made) -> Result<String, LabError> {
    let file = trust::create_private_file(&member.backing).map_err(|e| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                LabError::Failed(format!(
                    "{} exists but the lab did not make it; candor leaves it alone: move it away and try again",
                    member.backing.display()
                ))
            } else {
                LabError::Failed(format!(
                    "cannot create {}: {e}",
                    member.backing.display()
                ))
            }
        })?;
    made.backing = true;
    file.set_len(member.size)?;
    drop(file);

    let device = attach(&member.backing)?;
    made.loop_device = Some(device.clone());

    let (mkfs, flags) = member.fs.mkfs();
    let mut args: Vec<&str> = flags.to_vec();
    args.push(&device);
    run(mkfs, &args).map_err(|e| match e {
        LabError::Command { detail, .. } => {
            LabError::Failed(format!("{mkfs} failed on {device}: {detail}"))
        }
        other => other,
    })?;

    if let Some(parent) = member.mount_point.parent() {
        trust::make_private_dir(parent)?;
        trust::check_entry(parent, true)?;
    }
    match trust::make_private_dir(&member.mount_point) {
        Ok(true) => made.mount_point_dir = true,
        Ok(false) => {
            trust::check_entry(&member.mount_point, true)?;
            let empty = std::fs::read_dir(&member.mount_point)?.next().is_none();
            if !empty {
                return Err(LabError::Failed(format!(
                    "{} exists and is not empty; candor does not mount over files it did not make",
                    member.mount_point.display()
                )));
            }
        }
        Err(e) => return Err(e.into()),
    }
    mount(&device, &member.mount_point)?;
    made.mounted = true;
    Ok(device)
}

/// Brings a formatted member back: attach its backing file if needed, mount it.
fn revive(member: &Member, status: &MemberStatus) -> Result<String, LabError> {
    if let MemberStatus::Mounted { loop_device } = status {
        return Ok(loop_device.clone());
    }
    if matches!(status, MemberStatus::Missing) {
        return Err(LabError::Failed(format!(
            "the lab's {} backing file {} is gone; run candor lab destroy, then create again",
            member.fs,
            member.backing.display()
        )));
    }
    // The mount point first, so nothing is attached when it cannot be used.
    if let Some(parent) = member.mount_point.parent() {
        trust::make_private_dir(parent)?;
        trust::check_entry(parent, true)?;
    }
    trust::make_private_dir(&member.mount_point)?;
    trust::check_entry(&member.mount_point, true)?;
    let (device, attached_now) = match status {
        MemberStatus::Attached { loop_device } => (loop_device.clone(), false),
        _ => (attach(&member.backing)?, true),
    };
    if let Err(e) = mount(&device, &member.mount_point) {
        if attached_now {
            let _ = run("losetup", &["-d", &device]);
        }
        return Err(e);
    }
    Ok(device)
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

/// Unmounts, detaches and removes one member. Only mounts whose source is a loop device
/// backed by the member's own file are unmounted; a busy mount stops here with an error and
/// leaves the member (and its state) in place so `destroy` can be run again.
fn remove_member(member: &Member) -> Result<Vec<PathBuf>, LabError> {
    let loops = sys::loops_backed_by(&member.backing);
    let mounts = sys::mounts()?;
    // Deepest first, in case something was mounted inside the lab's filesystem.
    let mut ours: Vec<&sys::MountEntry> = mounts
        .iter()
        .filter(|m| loops.contains(&m.source))
        .collect();
    ours.sort_by_key(|m| std::cmp::Reverse(m.target.components().count()));
    ours.dedup_by(|a, b| a.target == b.target);
    for m in ours {
        let target = m.target.display().to_string();
        run("umount", &[&target]).map_err(|e| {
            let detail = match e {
                LabError::Command { detail, .. } => detail,
                other => other.to_string(),
            };
            LabError::Failed(format!(
                "cannot unmount {target} ({detail}); leave that directory and close the files in it, \
                 then run candor lab destroy again"
            ))
        })?;
    }
    for l in &loops {
        run("losetup", &["-d", l]).map_err(|e| {
            LabError::Failed(format!(
                "cannot detach {l} from {}: {e}",
                member.backing.display()
            ))
        })?;
    }
    let mut left = Vec::new();
    match std::fs::remove_file(&member.backing) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            return Err(LabError::Failed(format!(
                "cannot remove {}: {e}",
                member.backing.display()
            )))
        }
    }
    match std::fs::remove_dir(&member.mount_point) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(_) => left.push(member.mount_point.clone()),
    }
    Ok(left)
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

    fn tmp() -> PathBuf {
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
    fn state_round_trips_and_foreign_state_is_refused() {
        let d = tmp();
        let mut s = new_state();
        s.members.push(Member {
            fs: FsKind::Xfs,
            size: 300 << 20,
            backing: d.join("xfs.img"),
            mount_point: d.join("mnt/xfs"),
            formatted: true,
        });
        save_state(&d, &s).expect("save");
        let back = load_state(&d).expect("load").expect("some state");
        assert_eq!(back.members, s.members);
        assert!(!d.join("lab.json.tmp").exists());

        std::fs::write(
            d.join(STATE_FILE),
            r#"{"kind":"other","version":1,"members":[]}"#,
        )
        .expect("write");
        assert!(matches!(load_state(&d), Err(LabError::Usage(_))));
        std::fs::write(d.join(STATE_FILE), "not json").expect("write");
        assert!(matches!(load_state(&d), Err(LabError::Usage(_))));
        std::fs::remove_dir_all(&d).expect("cleanup");
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

    fn usage_text(r: Result<impl std::fmt::Debug, LabError>) -> String {
        match r {
            Err(LabError::Usage(m)) => m,
            other => panic!("expected a usage error, got {other:?}"),
        }
    }

    #[test]
    fn a_state_is_trusted_only_with_the_paths_the_lab_makes() {
        use std::os::unix::fs::PermissionsExt;
        let d = tmp();
        let member = |backing: PathBuf, mount_point: PathBuf| Member {
            fs: FsKind::Ext4,
            size: 64 << 20,
            backing,
            mount_point,
            formatted: true,
        };
        let write = |m: Vec<Member>| {
            let mut s = new_state();
            s.members = m;
            std::fs::write(
                d.join(STATE_FILE),
                serde_json::to_string(&s).expect("serialise"),
            )
            .expect("write");
            std::fs::set_permissions(d.join(STATE_FILE), std::fs::Permissions::from_mode(0o600))
                .expect("chmod");
        };
        let good = member(d.join("ext4.img"), d.join("mnt/ext4"));
        write(vec![good.clone()]);
        assert!(load_state(&d).expect("load").is_some());
        for (bad, needle) in [
            (
                vec![member(PathBuf::from("/etc/passwd"), d.join("mnt/ext4"))],
                "not the path the lab makes",
            ),
            (
                vec![member(d.join("../ext4.img"), d.join("mnt/ext4"))],
                "not the path the lab makes",
            ),
            (
                vec![member(d.join("ext4.img"), PathBuf::from("/etc"))],
                "not the path the lab makes",
            ),
            (
                vec![member(d.join("ext4.img"), d.join("mnt/../mnt/ext4"))],
                "not the path the lab makes",
            ),
            (vec![good.clone(), good.clone()], "twice"),
        ] {
            write(bad.clone());
            let m = usage_text(load_state(&d));
            assert!(m.contains(needle), "{bad:?}: {m}");
        }
        // The state file itself: writable by others, or a link.
        write(vec![good.clone()]);
        std::fs::set_permissions(d.join(STATE_FILE), std::fs::Permissions::from_mode(0o666))
            .expect("chmod");
        assert!(usage_text(load_state(&d)).contains("mode 0666"));
        std::fs::rename(d.join(STATE_FILE), d.join("elsewhere.json")).expect("rename");
        std::os::unix::fs::symlink(d.join("elsewhere.json"), d.join(STATE_FILE)).expect("ln");
        assert!(usage_text(load_state(&d)).contains("symbolic link"));
        // A backing file that is a link.
        std::fs::remove_file(d.join(STATE_FILE)).expect("rm");
        write(vec![good]);
        std::os::unix::fs::symlink("/etc/passwd", d.join("ext4.img")).expect("ln");
        assert!(usage_text(load_state(&d)).contains("symbolic link"));
        std::fs::remove_dir_all(&d).expect("cleanup");
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
