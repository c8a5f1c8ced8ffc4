//! One filesystem of the lab, as the kernel holds it: its status (loop device, mount), and
//! the steps that make it (backing file, loop device checked through /sys, mkfs, mount),
//! bring it back after a reboot, and remove it; each step that fails undoes what it made.

use super::state::save_state;
use super::{member_paths, LabState, Member, MemberStatus};
use crate::spec::FsKind;
use crate::sys::{self, canonical, losetup, run};
use crate::trust;
use crate::LabError;
use std::path::{Path, PathBuf};

/// The status of a member from sysfs and the mount table.
pub(super) fn status_of(member: &Member, mounts: &[sys::MountEntry]) -> MemberStatus {
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
pub(super) fn build(
    root: &Path,
    state: &mut LabState,
    fs: FsKind,
    size: u64,
) -> Result<String, LabError> {
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
pub(super) fn revive(member: &Member, status: &MemberStatus) -> Result<String, LabError> {
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

/// Unmounts, detaches and removes one member. Only mounts whose source is a loop device
/// backed by the member's own file are unmounted; a busy mount stops here with an error and
/// leaves the member (and its state) in place so `destroy` can be run again.
pub(super) fn remove_member(member: &Member) -> Result<Vec<PathBuf>, LabError> {
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
