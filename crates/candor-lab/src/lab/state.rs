//! The lab's state file, `DIR/.candor-lab/lab.json`: read only when candor could have
//! written it (its kind and version, each member once at exactly the paths the lab makes,
//! see [`trust`]), and written atomically, mode 0600.

use super::{member_paths, LabState};
use crate::trust;
use crate::LabError;
use std::io::Write;
use std::path::{Path, PathBuf};

const STATE_FILE: &str = "lab.json";
const STATE_KIND: &str = "candor-lab";
const STATE_VERSION: u32 = 1;

/// The state file of the lab in `root`.
pub(super) fn state_path(root: &Path) -> PathBuf {
    root.join(STATE_FILE)
}

/// Reads the state of the lab in `root` (checked by [`trust::open_lab_dir`]); `Ok(None)`
/// when it has no state file. A state is trusted only if candor could have written it:
/// see [`trust`].
pub(super) fn load_state(root: &Path) -> Result<Option<LabState>, LabError> {
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
pub(super) fn save_state(root: &Path, state: &LabState) -> Result<(), LabError> {
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

pub(super) fn new_state() -> LabState {
    LabState {
        kind: STATE_KIND.to_string(),
        version: STATE_VERSION,
        members: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::tests::{tmp, usage_text};
    use crate::lab::Member;
    use crate::spec::FsKind;

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
}
