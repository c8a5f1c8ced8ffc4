//! candor's own run directory, `TARGET/.candor-<id>/`: the only place candor writes.
//! It is made with mkdir (fails if anything of that name exists), mode 0700, and holds a
//! marker file naming the process that owns it; test files inside are created with
//! O_CREAT|O_EXCL|O_NOFOLLOW. `RunDir` removes everything on drop; `clean_stale` removes
//! run directories whose owner is gone (a killed run), recognised by the marker only.

use std::ffi::CString;
use std::fs;
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

pub const PREFIX: &str = ".candor-";
pub const MARKER: &str = "CANDOR-RUN";

#[derive(Debug)]
pub struct RunDir {
    path: PathBuf,
    keep: bool,
    /// A raw block device target (`--allow-device-writes`): there is no directory; every
    /// thread's "file" is its slice of the device, and nothing is removed.
    device: Option<crate::device::Device>,
}

impl RunDir {
    /// Creates the run directory under `target`.
    pub fn create(target: &Path, id: &str) -> io::Result<RunDir> {
        let path = target.join(format!("{PREFIX}{id}"));
        fs::DirBuilder::new().mode(0o700).create(&path)?;
        let dir = RunDir {
            path,
            keep: false,
            device: None,
        };
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW)
            .mode(0o600)
            .open(dir.path.join(MARKER))?;
        writeln!(
            f,
            "{{\"pid\":{},\"boot_id\":\"{}\"}}",
            std::process::id(),
            boot_id()
        )?;
        Ok(dir)
    }

    /// The place of a run on a claimed block device: the device itself.
    pub fn on_device(device: crate::device::Device) -> RunDir {
        RunDir {
            path: device.path().to_path_buf(),
            keep: true,
            device: Some(device),
        }
    }

    /// The block device when the target is one.
    pub fn device(&self) -> Option<&crate::device::Device> {
        self.device.as_ref()
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The path of one of candor's files; on a device, the device (each thread works on its
    /// slice of it).
    pub fn file(&self, name: &str) -> PathBuf {
        match &self.device {
            Some(_) => self.path.clone(),
            None => self.path.join(name),
        }
    }

    /// Removes one of candor's files (not following links); nothing on a device.
    pub fn remove_file(&self, name: &str) -> io::Result<()> {
        if self.device.is_some() {
            return Ok(());
        }
        match fs::remove_file(self.path.join(name)) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            other => other,
        }
    }

    /// syncfs(2) on the filesystem under the run directory, so a test starts with no dirty
    /// data of earlier tests left to flush.
    pub fn syncfs(&self) {
        if let Some(d) = &self.device {
            return d.sync();
        }
        if let Ok(c) = CString::new(self.path.as_os_str().as_bytes()) {
            // SAFETY: valid path; the descriptor is closed right after.
            unsafe {
                let fd = libc::open(
                    c.as_ptr(),
                    libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
                );
                if fd >= 0 {
                    libc::syncfs(fd);
                    libc::close(fd);
                }
            }
        }
    }

    /// Leaves the directory in place (for debugging with --keep-files).
    pub fn keep(&mut self) {
        self.keep = true;
    }

    pub fn remove(&mut self) -> io::Result<()> {
        if self.keep {
            return Ok(());
        }
        self.keep = true; // once
                          // remove_dir_all never follows symbolic links, so a link planted inside cannot
                          // make it delete anything outside the run directory.
        match fs::remove_dir_all(&self.path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            other => other,
        }
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        let _ = self.remove();
    }
}

fn boot_id() -> String {
    fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// A unique id for a run: time and pid, in hex.
pub fn new_run_id() -> String {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros())
        .unwrap_or(0);
    format!("{:x}-{}", t, std::process::id())
}

/// What `clean_stale` found.
#[derive(Debug, Default)]
pub struct CleanReport {
    pub removed: Vec<PathBuf>,
    /// Run directories whose owner still runs.
    pub in_use: Vec<PathBuf>,
    /// `.candor-*` entries without candor's marker: left alone.
    pub not_ours: Vec<PathBuf>,
    pub errors: Vec<String>,
}

fn owner_alive(marker: &str) -> bool {
    let v: serde_like::Marker = serde_like::parse(marker);
    if v.boot_id != boot_id() {
        return false; // the machine rebooted since: the owner cannot be running
    }
    if v.pid == 0 {
        return false;
    }
    // SAFETY: signal 0 only checks that the process exists.
    let r = unsafe { libc::kill(v.pid as i32, 0) };
    r == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Removes run directories left by killed runs under `target`.
pub fn clean_stale(target: &Path) -> io::Result<CleanReport> {
    let mut rep = CleanReport::default();
    for entry in fs::read_dir(target)? {
        let entry = entry?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !name.starts_with(PREFIX) {
            continue;
        }
        let path = entry.path();
        let meta = fs::symlink_metadata(&path)?;
        if !meta.is_dir() {
            rep.not_ours.push(path);
            continue;
        }
        let marker = path.join(MARKER);
        let text = match fs::symlink_metadata(&marker) {
            Ok(m) if m.is_file() => fs::read_to_string(&marker).unwrap_or_default(),
            _ => {
                rep.not_ours.push(path);
                continue;
            }
        };
        if owner_alive(&text) {
            rep.in_use.push(path);
            continue;
        }
        match fs::remove_dir_all(&path) {
            Ok(()) => rep.removed.push(path),
            Err(e) => rep.errors.push(format!("{}: {e}", path.display())),
        }
    }
    Ok(rep)
}

/// The marker's two fields, read without a JSON dependency in this crate.
mod serde_like {
    #[derive(Default)]
    pub struct Marker {
        pub pid: u64,
        pub boot_id: String,
    }

    pub fn parse(s: &str) -> Marker {
        let field = |k: &str| -> Option<String> {
            let at = s.find(&format!("\"{k}\":"))? + k.len() + 3;
            let rest = s[at..].trim_start();
            let rest = rest.strip_prefix('"').unwrap_or(rest);
            let end = rest.find(['"', ',', '}']).unwrap_or(rest.len());
            Some(rest[..end].to_string())
        };
        Marker {
            pid: field("pid").and_then(|p| p.parse().ok()).unwrap_or(0),
            boot_id: field("boot_id").unwrap_or_default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_then_drop_leaves_nothing() {
        let t = tempfile::tempdir().unwrap();
        let p;
        {
            let d = RunDir::create(t.path(), "x1").unwrap();
            p = d.path().to_path_buf();
            fs::write(d.file("t0.dat"), b"data").unwrap();
            assert!(p.join(MARKER).exists());
        }
        assert!(!p.exists());
        assert_eq!(fs::read_dir(t.path()).unwrap().count(), 0);
    }

    #[test]
    fn clean_removes_dead_runs_only_and_never_foreign_dirs() {
        let t = tempfile::tempdir().unwrap();
        // A dead run: marker with a pid that cannot exist.
        let dead = t.path().join(".candor-dead");
        fs::create_dir(&dead).unwrap();
        fs::write(
            dead.join(MARKER),
            format!("{{\"pid\":4194999,\"boot_id\":\"{}\"}}", boot_id()),
        )
        .unwrap();
        fs::write(dead.join("t0.dat"), b"x").unwrap();
        // A live run (this process).
        let mut live = RunDir::create(t.path(), "live").unwrap();
        // Someone else's directory that merely starts with the prefix.
        let foreign = t.path().join(".candor-notmine");
        fs::create_dir(&foreign).unwrap();
        fs::write(foreign.join("precious"), b"keep").unwrap();
        // A symlink planted inside the dead run pointing at the foreign data.
        std::os::unix::fs::symlink(&foreign, dead.join("link")).unwrap();

        let rep = clean_stale(t.path()).unwrap();
        assert_eq!(rep.removed, vec![dead.clone()]);
        assert_eq!(rep.in_use, vec![live.path().to_path_buf()]);
        assert_eq!(rep.not_ours, vec![foreign.clone()]);
        assert!(!dead.exists());
        assert_eq!(fs::read(foreign.join("precious")).unwrap(), b"keep");
        live.remove().unwrap();
    }

    #[test]
    fn marker_parses() {
        let m = serde_like::parse("{\"pid\":42,\"boot_id\":\"abc-def\"}\n");
        assert_eq!(m.pid, 42);
        assert_eq!(m.boot_id, "abc-def");
    }
}
