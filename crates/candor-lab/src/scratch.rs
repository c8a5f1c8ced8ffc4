//! Throw-away filesystems for tests: [`scratch`] makes a filesystem on a loop device in a
//! fresh directory and removes all of it (mount, loop device, backing file, directory) when
//! the [`ScratchFs`] is dropped.

use crate::sys::{is_root, losetup, run};
use crate::LabError;
use std::path::{Path, PathBuf};

/// The mkfs command and its "force, quiet" flags for a filesystem.
fn mkfs_args(fs: &str) -> Option<(&'static str, &'static [&'static str])> {
    match fs {
        "ext4" => Some(("mkfs.ext4", &["-q", "-F"])),
        "ext2" => Some(("mkfs.ext2", &["-q", "-F"])),
        "xfs" => Some(("mkfs.xfs", &["-q", "-f"])),
        "btrfs" => Some(("mkfs.btrfs", &["-q", "-f"])),
        _ => None,
    }
}

/// A filesystem on a loop device, mounted; unmounted and removed when dropped.
#[derive(Debug)]
pub struct ScratchFs {
    pub fs: String,
    pub mount_point: PathBuf,
    pub loop_device: String,
    backing: PathBuf,
    dir: PathBuf,
    mounted: bool,
}

impl ScratchFs {
    pub fn path(&self) -> &Path {
        &self.mount_point
    }

    /// Unmounts the filesystem, leaving it on its loop device (which goes on drop).
    pub fn unmount(&mut self) -> Result<(), LabError> {
        if self.mounted {
            run("umount", &[&self.mount_point.display().to_string()])?;
            self.mounted = false;
        }
        Ok(())
    }
}

impl Drop for ScratchFs {
    fn drop(&mut self) {
        if self.mounted {
            let mp = self.mount_point.display().to_string();
            if run("umount", &[&mp]).is_err() {
                let _ = run("umount", &["-l", &mp]);
            }
        }
        let _ = run("losetup", &["-d", &self.loop_device]);
        let _ = std::fs::remove_file(&self.backing);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Makes a `fs` filesystem of `size_bytes` on a loop device under a fresh directory in
/// `parent` ([`scratch_parent`] when None). `Err(Unsupported)` means this
/// machine cannot make it (not root, no loop devices, a program missing) and the test
/// should be skipped with that reason; any other error is a failure.
pub fn scratch_in(parent: Option<&Path>, fs: &str, size_bytes: u64) -> Result<ScratchFs, LabError> {
    if !is_root() {
        return Err(LabError::Unsupported(
            "needs root for losetup and mount".into(),
        ));
    }
    let (mkfs, flags) =
        mkfs_args(fs).ok_or_else(|| LabError::Usage(format!("no recipe for filesystem {fs}")))?;
    let parent = parent.map(Path::to_path_buf).unwrap_or_else(scratch_parent);
    let dir = parent.join(format!(
        "candor-scratch-{fs}-{}-{}",
        std::process::id(),
        unique()
    ));
    std::fs::create_dir(&dir)?;
    let backing = dir.join("backing.img");
    let mount_point = dir.join("mnt");
    std::fs::create_dir(&mount_point)?;
    let cleanup_dir = |e: LabError| {
        let _ = std::fs::remove_dir_all(&dir);
        e
    };
    let f = std::fs::File::create(&backing).map_err(|e| cleanup_dir(e.into()))?;
    f.set_len(size_bytes).map_err(|e| cleanup_dir(e.into()))?;
    drop(f);
    if !Path::new("/dev/loop-control").exists() {
        return Err(cleanup_dir(LabError::Unsupported(
            "no loop devices here (/dev/loop-control does not exist)".into(),
        )));
    }
    let loop_device = losetup(&backing).map_err(cleanup_dir)?;
    let mut s = ScratchFs {
        fs: fs.to_string(),
        mount_point: mount_point.clone(),
        loop_device: loop_device.clone(),
        backing,
        dir: dir.clone(),
        mounted: false,
    };
    let mut args: Vec<&str> = flags.to_vec();
    args.push(&loop_device);
    run(mkfs, &args)?;
    let mp = mount_point.display().to_string();
    // ext4 zeroes the inode tables mkfs left for later from a kernel thread after mount,
    // about 10 MB in the first seconds of a 256 MiB filesystem: writes no test made, on
    // the device a test's witness watches. A scratch filesystem needs no zeroed tables.
    if fs == "ext4" {
        run("mount", &["-o", "noinit_itable", &loop_device, &mp])?;
    } else {
        run("mount", &[&loop_device, &mp])?;
    }
    s.mounted = true;
    Ok(s)
}

/// A bare loop device (no filesystem, not mounted) over a zeroed file of `size_bytes` in
/// a fresh directory under [`scratch_parent`]; detached and removed when
/// dropped. `fs` is "none" and `mount_point` a directory nothing is mounted on.
pub fn scratch_device(size_bytes: u64) -> Result<ScratchFs, LabError> {
    if !is_root() {
        return Err(LabError::Unsupported("needs root for losetup".into()));
    }
    let dir = scratch_parent().join(format!(
        "candor-scratch-dev-{}-{}",
        std::process::id(),
        unique()
    ));
    std::fs::create_dir(&dir)?;
    let backing = dir.join("backing.img");
    let made = std::fs::File::create(&backing).and_then(|f| f.set_len(size_bytes));
    if let Err(e) = made {
        let _ = std::fs::remove_dir_all(&dir);
        return Err(e.into());
    }
    let loop_device = match losetup(&backing) {
        Ok(d) => d,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&dir);
            return Err(e);
        }
    };
    Ok(ScratchFs {
        fs: "none".into(),
        mount_point: dir.clone(),
        loop_device,
        backing,
        dir,
        mounted: false,
    })
}

/// Where scratch loop devices keep their backing files: the system temporary directory,
/// unless it lives in memory (tmpfs, ramfs), where a loop device would answer at memory
/// speed and the witness rightly calls its figures the page cache's; then /var/tmp,
/// which the filesystem hierarchy keeps on storage.
pub fn scratch_parent() -> PathBuf {
    let tmp = std::env::temp_dir();
    if crate::sys::in_memory(&tmp) && Path::new("/var/tmp").is_dir() {
        PathBuf::from("/var/tmp")
    } else {
        tmp
    }
}

/// [`scratch_in`] under [`scratch_parent`].
pub fn scratch(fs: &str, size_bytes: u64) -> Result<ScratchFs, LabError> {
    scratch_in(None, fs, size_bytes)
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scratch_backing_files_are_kept_off_memory_filesystems() {
        // /dev/shm is tmpfs on Linux: it must be seen as memory, and a scratch parent
        // must never be one while /var/tmp is on storage.
        assert!(
            crate::sys::in_memory(Path::new("/dev/shm")),
            "/dev/shm is tmpfs"
        );
        assert!(!crate::sys::in_memory(Path::new("/nonexistent/candor")));
        if !crate::sys::in_memory(Path::new("/var/tmp")) {
            let p = scratch_parent();
            assert!(!crate::sys::in_memory(&p), "{} is in memory", p.display());
        }
    }

    #[test]
    fn scratch_ext4_mounts_and_goes_away() {
        let Some(s) = candor_testkit::need_or(scratch("ext4", 64 << 20), LabError::is_unsupported)
        else {
            return;
        };
        let mp = s.mount_point.clone();
        std::fs::write(mp.join("x"), b"hello").unwrap();
        let mounted = || crate::sys::mounts().unwrap().iter().any(|m| m.target == mp);
        assert!(mounted());
        drop(s);
        assert!(!mounted());
        assert!(!mp.exists());
    }
}
