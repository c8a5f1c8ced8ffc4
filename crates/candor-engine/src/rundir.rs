//! candor's own run directory, `TARGET/.candor-<id>/`: the only place candor writes.
//! It is made with mkdir (fails if anything of that name exists), mode 0700 whatever the
//! umask, and holds a marker file (`CANDOR-RUN`, mode 0600) naming the process that owns
//! it and the directory itself; test files inside are created with
//! O_CREAT|O_EXCL|O_NOFOLLOW. `RunDir` removes everything on drop; `clean_stale` removes
//! run directories whose owner is gone (a killed run), proven by the marker.
//!
//! The marker is one line of JSON in a fixed layout:
//! `{"candor_run":1,"pid":P,"boot_id":"B","uid":U,"dev":D,"ino":I,"nonce":"N"}` where
//! `dev`/`ino` are the run directory's own device and inode numbers, `uid` its owner and
//! `nonce` 128 random bits. A directory is candor's only when it and its marker are owned
//! by the user cleaning (root cleans root's only), have modes 0700 and 0600, the marker is
//! byte for byte in that layout, and its `ino`/`uid` (and `dev`, for a marker from this
//! boot) are the directory's: a marker copied or written into another directory names
//! another inode. Removal goes through
//! directory descriptors ([`crate::fsat`]): no symbolic link is followed and no mount
//! point inside is crossed (what lies on another mount stays, and is named).

use crate::fsat::{self, Stat};
use std::ffi::{CStr, CString};
use std::fs;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

pub const PREFIX: &str = ".candor-";
pub const MARKER: &str = "CANDOR-RUN";
const MARKER_C: &CStr = c"CANDOR-RUN";
/// The lab's directory (`candor lab`), which shares the prefix.
const LAB_DIR: &str = ".candor-lab";
/// A marker is one short line; anything longer is not one.
const MARKER_MAX: u64 = 512;

#[derive(Debug)]
pub struct RunDir {
    path: PathBuf,
    keep: bool,
    /// The directory's device and inode numbers, so removal touches this directory only.
    identity: Option<(u64, u64)>,
    /// A raw block device target (`--allow-device-writes`): there is no directory; every
    /// thread's "file" is its slice of the device, and nothing is removed.
    device: Option<crate::device::Device>,
}

/// What a run's marker says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Marker {
    pub pid: u32,
    pub boot_id: String,
    pub uid: u32,
    pub dev: u64,
    pub ino: u64,
    pub nonce: String,
}

impl Marker {
    /// The one layout candor writes, newline included.
    pub fn render(&self) -> String {
        format!(
            "{{\"candor_run\":1,\"pid\":{},\"boot_id\":\"{}\",\"uid\":{},\"dev\":{},\"ino\":{},\"nonce\":\"{}\"}}\n",
            self.pid, self.boot_id, self.uid, self.dev, self.ino, self.nonce
        )
    }

    /// Parses a marker strictly: valid JSON with exactly these fields in range, and the
    /// text byte for byte what [`Marker::render`] writes. Anything else is None.
    pub fn parse(text: &str) -> Option<Marker> {
        let v: serde_json::Value = serde_json::from_str(text).ok()?;
        let o = v.as_object()?;
        if o.len() != 7 || o.get("candor_run")?.as_u64()? != 1 {
            return None;
        }
        let pid = o.get("pid")?.as_u64()?;
        if pid == 0 || pid > i32::MAX as u64 {
            return None;
        }
        let boot_id = o.get("boot_id")?.as_str()?.to_string();
        if !(boot_id.is_empty() || is_uuid(&boot_id)) {
            return None;
        }
        let nonce = o.get("nonce")?.as_str()?.to_string();
        if nonce.len() != 32
            || !nonce
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        {
            return None;
        }
        let m = Marker {
            pid: pid as u32,
            boot_id,
            uid: u32::try_from(o.get("uid")?.as_u64()?).ok()?,
            dev: o.get("dev")?.as_u64()?,
            ino: o.get("ino")?.as_u64()?,
            nonce,
        };
        (m.render() == text).then_some(m)
    }
}

/// `8-4-4-4-12` lower-case hex digits, as the kernel's boot id is.
fn is_uuid(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, &c)| match i {
            8 | 13 | 18 | 23 => c == b'-',
            _ => c.is_ascii_digit() || (b'a'..=b'f').contains(&c),
        })
}

/// 128 random bits from getrandom(2), in hex.
fn nonce() -> io::Result<String> {
    let mut buf = [0u8; 16];
    let mut got = 0;
    while got < buf.len() {
        // SAFETY: the pointer and length describe the unfilled part of buf.
        let n = unsafe { libc::getrandom(buf[got..].as_mut_ptr().cast(), buf.len() - got, 0) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        got += n as usize;
    }
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}

impl RunDir {
    /// Creates the run directory under `target`, mode 0700 whatever the umask, with its
    /// marker (mode 0600) naming this process and the directory's own inode.
    pub fn create(target: &Path, id: &str) -> io::Result<RunDir> {
        let path = target.join(format!("{PREFIX}{id}"));
        fs::DirBuilder::new().mode(0o700).create(&path)?;
        let mut dir = RunDir {
            path,
            keep: false,
            identity: None,
            device: None,
        };
        let d = fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW)
            .open(&dir.path)?;
        // 0700 whatever the umask. Best effort: a filesystem without Unix modes refuses
        // chmod, and the run goes on (`clean` then leaves such a directory, naming its mode).
        let _ = d.set_permissions(fs::Permissions::from_mode(0o700));
        let meta = d.metadata()?;
        dir.identity = Some((meta.dev(), meta.ino()));
        let marker = Marker {
            pid: std::process::id(),
            boot_id: boot_id(),
            uid: meta.uid(),
            dev: meta.dev(),
            ino: meta.ino(),
            nonce: nonce()?,
        };
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW)
            .mode(0o600)
            .open(dir.path.join(MARKER))?;
        let _ = f.set_permissions(fs::Permissions::from_mode(0o600));
        f.write_all(marker.render().as_bytes())?;
        Ok(dir)
    }

    /// The place of a run on a claimed block device: the device itself.
    pub fn on_device(device: crate::device::Device) -> RunDir {
        RunDir {
            path: device.path().to_path_buf(),
            keep: true,
            identity: None,
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

    /// Removes the run directory and everything in it, through directory descriptors: no
    /// link is followed, no mount inside is crossed (it stays, and the error names it), and
    /// a directory that is no longer the one made is not touched.
    pub fn remove(&mut self) -> io::Result<()> {
        if self.keep {
            return Ok(());
        }
        self.keep = true; // once
        let parent_path = match self.path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let parent = fsat::open_dir(&parent_path)?;
        let name = fsat::name_of(&self.path)?;
        let dir = match fsat::open_dir_beneath(parent.as_fd(), &name) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            other => other?,
        };
        let st = fsat::stat_at(dir.as_fd(), c"")?;
        if let Some((dev, ino)) = self.identity {
            if (st.dev, st.ino) != (dev, ino) {
                return Err(io::Error::other(format!(
                    "{} is no longer the run directory candor made; left in place",
                    self.path.display()
                )));
            }
        }
        let mut out = fsat::Removal::default();
        fsat::empty_dir(dir.as_fd(), &self.path, &st, &[], &mut out);
        drop(dir);
        if !out.complete() {
            return Err(io::Error::other(removal_problem(&out)));
        }
        fsat::remove_empty_dir(parent.as_fd(), &name, &st)
    }
}

/// One sentence on what a removal could not do.
fn removal_problem(out: &fsat::Removal) -> String {
    let mut parts = Vec::new();
    if !out.kept_mounts.is_empty() {
        parts.push(format!(
            "mount point inside kept: {}",
            out.kept_mounts
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    parts.extend(out.errors.iter().cloned());
    parts.join("; ")
}

impl Drop for RunDir {
    fn drop(&mut self) {
        let _ = self.remove();
    }
}

/// This boot's id; empty when the kernel does not say.
pub(crate) fn boot_id() -> String {
    candor_procfs::Kernel::system()
        .boot_id()
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

/// What `clean_stale` decided about one `.candor-*` entry, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// A dead run's directory, removed.
    Removed {
        pid: u32,
        this_boot: bool,
    },
    /// A dead run's directory, emptied but for mounts inside it (and its marker).
    MountsKept {
        pid: u32,
        kept: Vec<PathBuf>,
    },
    /// Its run is still going.
    Running {
        pid: u32,
    },
    /// `candor lab`'s directory.
    Lab,
    SymbolicLink,
    NotADirectory,
    /// The entry is itself a mount point.
    MountPoint,
    /// Owned by another user than the one cleaning.
    OwnedBy {
        uid: u32,
        you: u32,
    },
    /// Not mode 0700.
    Mode(u32),
    NoMarker,
    /// The marker file is not one candor wrote (a link, not a regular file, wrong owner or
    /// mode, several links).
    MarkerFile(String),
    /// The marker's text is not in candor's exact layout.
    MarkerFormat,
    /// The marker names another directory (or owner) than this one: copied or planted.
    OtherDirectory,
    /// Something failed while looking or removing.
    Error(String),
}

impl Verdict {
    pub fn removed(&self) -> bool {
        matches!(self, Verdict::Removed { .. })
    }
    pub fn is_error(&self) -> bool {
        matches!(self, Verdict::Error(_))
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Verdict::Removed { pid, this_boot } => write!(
                f,
                "dead run of pid {pid} from {}",
                if *this_boot {
                    "this boot"
                } else {
                    "another boot"
                }
            ),
            Verdict::MountsKept { pid, kept } => write!(
                f,
                "dead run of pid {pid}, emptied; mount point inside kept: {}",
                kept.iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Verdict::Running { pid } => write!(f, "its run is still going: pid {pid}"),
            Verdict::Lab => {
                f.write_str("candor lab's directory: remove it with candor lab destroy, not clean")
            }
            Verdict::SymbolicLink => f.write_str("a symbolic link: not candor's"),
            Verdict::NotADirectory => f.write_str("not a directory: not candor's"),
            Verdict::MountPoint => f.write_str("a mount point: not candor's"),
            Verdict::OwnedBy { uid, you } => {
                write!(f, "owned by uid {uid}, not by you (uid {you}): not yours")
            }
            Verdict::Mode(m) => write!(f, "mode {m:04o}, not 0700: not made by candor"),
            Verdict::NoMarker => f.write_str("no candor marker: not candor's"),
            Verdict::MarkerFile(why) => write!(f, "its marker {why}: not candor's"),
            Verdict::MarkerFormat => f.write_str("marker not in candor's format: not candor's"),
            Verdict::OtherDirectory => {
                f.write_str("marker names another directory: copied or planted, not candor's")
            }
            Verdict::Error(e) => f.write_str(e),
        }
    }
}

/// One `.candor-*` entry and what became of it.
#[derive(Debug, Clone)]
pub struct Cleaned {
    pub path: PathBuf,
    pub verdict: Verdict,
}

/// What `clean_stale` found, in name order.
#[derive(Debug, Default)]
pub struct CleanReport {
    pub entries: Vec<Cleaned>,
}

impl CleanReport {
    /// The run directories removed.
    pub fn removed(&self) -> impl Iterator<Item = &Path> {
        self.entries
            .iter()
            .filter(|c| c.verdict.removed())
            .map(|c| c.path.as_path())
    }
}

fn owner_alive(m: &Marker) -> bool {
    if m.boot_id != boot_id() {
        return false; // the machine rebooted since: the owner cannot be running
    }
    // SAFETY: signal 0 only checks that the process exists.
    let r = unsafe { libc::kill(m.pid as i32, 0) };
    r == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Removes run directories left by killed runs under `target`, and says for every
/// `.candor-*` entry why it was or was not removed.
pub fn clean_stale(target: &Path) -> io::Result<CleanReport> {
    let tfd = fsat::open_dir(target)?;
    let tstat = fsat::stat_at(tfd.as_fd(), c"")?;
    let mut names: Vec<CString> = fsat::names(tfd.as_fd())?
        .into_iter()
        .filter(|n| n.to_bytes().starts_with(PREFIX.as_bytes()))
        .collect();
    names.sort();
    let mut rep = CleanReport::default();
    for name in names {
        let path = target.join(std::ffi::OsStr::from_bytes(name.to_bytes()));
        let verdict = judge(tfd.as_fd(), &tstat, &name, &path);
        rep.entries.push(Cleaned { path, verdict });
    }
    Ok(rep)
}

fn judge(target: std::os::fd::BorrowedFd<'_>, tstat: &Stat, name: &CStr, path: &Path) -> Verdict {
    let st = match fsat::stat_at(target, name) {
        Ok(s) => s,
        Err(e) => return Verdict::Error(format!("cannot look at {}: {e}", path.display())),
    };
    if st.is_symlink() {
        return Verdict::SymbolicLink;
    }
    if !st.is_dir() {
        return Verdict::NotADirectory;
    }
    if name.to_bytes() == LAB_DIR.as_bytes() {
        return Verdict::Lab;
    }
    if st.other_mount_than(tstat) {
        return Verdict::MountPoint;
    }
    let dir = match fsat::open_dir_beneath(target, name) {
        Ok(d) => d,
        Err(e) => {
            return match e.raw_os_error() {
                Some(libc::ELOOP) => Verdict::SymbolicLink,
                Some(libc::ENOTDIR) => Verdict::NotADirectory,
                Some(libc::EXDEV) => Verdict::MountPoint,
                _ => Verdict::Error(format!("cannot open {}: {e}", path.display())),
            }
        }
    };
    let dst = match fsat::stat_at(dir.as_fd(), c"") {
        Ok(s) => s,
        Err(e) => return Verdict::Error(format!("cannot look at {}: {e}", path.display())),
    };
    let you = euid();
    if dst.uid != you {
        return Verdict::OwnedBy { uid: dst.uid, you };
    }
    if dst.mode & 0o7777 != 0o700 {
        return Verdict::Mode(dst.mode & 0o7777);
    }
    let marker = match read_marker(dir.as_fd(), you) {
        Ok(m) => m,
        Err(v) => return v,
    };
    // The inode and owner always; the device too when the marker is from this boot (a
    // filesystem's device number can change across a reboot, btrfs's or a loop device's,
    // and differs between the nodes sharing a network filesystem).
    let this_boot = marker.boot_id == boot_id();
    if (marker.ino, marker.uid) != (dst.ino, dst.uid) || (this_boot && marker.dev != dst.dev) {
        return Verdict::OtherDirectory;
    }
    if owner_alive(&marker) {
        return Verdict::Running { pid: marker.pid };
    }
    remove_dead(target, name, path, dir, &dst, &marker)
}

/// The marker of the run directory `dir`, if it is one candor wrote; the verdict otherwise.
fn read_marker(dir: std::os::fd::BorrowedFd<'_>, you: u32) -> Result<Marker, Verdict> {
    let st = match fsat::stat_at(dir, MARKER_C) {
        Ok(s) => s,
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Err(Verdict::NoMarker),
        Err(e) => return Err(Verdict::Error(format!("cannot look at its marker: {e}"))),
    };
    if st.is_symlink() {
        return Err(Verdict::MarkerFile("is a symbolic link".into()));
    }
    let mut f = match fsat::open_file_at(dir, MARKER_C) {
        Ok(f) => f,
        Err(e) => return Err(Verdict::Error(format!("cannot open its marker: {e}"))),
    };
    // What counts is the file opened, not the name looked at before.
    let meta = match f.metadata() {
        Ok(m) => m,
        Err(e) => return Err(Verdict::Error(format!("cannot look at its marker: {e}"))),
    };
    if !meta.file_type().is_file() {
        return Err(Verdict::MarkerFile("is not a regular file".into()));
    }
    if meta.uid() != you {
        return Err(Verdict::MarkerFile(format!(
            "is owned by uid {}",
            meta.uid()
        )));
    }
    if meta.mode() & 0o7777 != 0o600 {
        return Err(Verdict::MarkerFile(format!(
            "has mode {:04o}, not 0600",
            meta.mode() & 0o7777
        )));
    }
    if meta.nlink() != 1 {
        return Err(Verdict::MarkerFile(format!("has {} links", meta.nlink())));
    }
    if meta.len() > MARKER_MAX {
        return Err(Verdict::MarkerFormat);
    }
    let mut text = String::new();
    if (&mut f)
        .take(MARKER_MAX + 1)
        .read_to_string(&mut text)
        .is_err()
    {
        return Err(Verdict::MarkerFormat);
    }
    Marker::parse(&text).ok_or(Verdict::MarkerFormat)
}

/// Removes a dead run's directory: everything but the marker, then (when nothing on
/// another mount stayed) the marker and the directory.
fn remove_dead(
    target: std::os::fd::BorrowedFd<'_>,
    name: &CStr,
    path: &Path,
    dir: OwnedFd,
    dst: &Stat,
    marker: &Marker,
) -> Verdict {
    let mut out = fsat::Removal::default();
    fsat::empty_dir(dir.as_fd(), path, dst, &[MARKER_C], &mut out);
    if !out.errors.is_empty() {
        return Verdict::Error(format!(
            "could not remove {}: {}",
            path.display(),
            removal_problem(&out)
        ));
    }
    if !out.kept_mounts.is_empty() {
        return Verdict::MountsKept {
            pid: marker.pid,
            kept: out.kept_mounts,
        };
    }
    if let Err(e) = fsat::remove_file_at(dir.as_fd(), MARKER_C) {
        return Verdict::Error(format!("could not remove {}: {e}", path.display()));
    }
    drop(dir);
    match fsat::remove_empty_dir(target, name, dst) {
        Ok(()) => Verdict::Removed {
            pid: marker.pid,
            this_boot: marker.boot_id == boot_id(),
        },
        Err(e) => Verdict::Error(format!("could not remove {}: {e}", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pid that belonged to a process of ours that has exited and been reaped.
    fn dead_pid() -> u32 {
        let mut c = std::process::Command::new("true").spawn().unwrap();
        let pid = c.id();
        c.wait().unwrap();
        pid
    }

    /// A genuine run directory whose owner is dead: made here, its marker given a dead pid.
    fn dead_run(target: &Path, id: &str) -> PathBuf {
        let mut d = RunDir::create(target, id).unwrap();
        d.keep();
        let m = d.path().join(MARKER);
        let mut marker = Marker::parse(&fs::read_to_string(&m).unwrap()).unwrap();
        marker.pid = dead_pid();
        fs::write(&m, marker.render()).unwrap();
        d.path().to_path_buf()
    }

    fn verdict_of<'a>(rep: &'a CleanReport, p: &Path) -> &'a Verdict {
        &rep.entries
            .iter()
            .find(|c| c.path == p)
            .unwrap_or_else(|| panic!("{} not in {rep:?}", p.display()))
            .verdict
    }

    #[test]
    fn create_then_drop_leaves_nothing() {
        let t = tempfile::tempdir().unwrap();
        let p;
        {
            let d = RunDir::create(t.path(), "x1").unwrap();
            p = d.path().to_path_buf();
            fs::write(d.file("t0.dat"), b"data").unwrap();
            fs::create_dir(d.file("sub")).unwrap();
            fs::write(d.file("sub/t1.dat"), b"data").unwrap();
            assert!(p.join(MARKER).exists());
        }
        assert!(!p.exists());
        assert_eq!(fs::read_dir(t.path()).unwrap().count(), 0);
    }

    #[test]
    fn the_run_dir_and_marker_are_private_and_the_marker_names_the_dir() {
        let t = tempfile::tempdir().unwrap();
        let d = RunDir::create(t.path(), "m").unwrap();
        let meta = fs::symlink_metadata(d.path()).unwrap();
        assert_eq!(meta.mode() & 0o7777, 0o700);
        let mm = fs::symlink_metadata(d.path().join(MARKER)).unwrap();
        assert_eq!(mm.mode() & 0o7777, 0o600);
        let text = fs::read_to_string(d.path().join(MARKER)).unwrap();
        let m = Marker::parse(&text).expect("candor's own marker parses");
        assert_eq!(m.pid, std::process::id());
        assert_eq!((m.dev, m.ino, m.uid), (meta.dev(), meta.ino(), meta.uid()));
        assert_eq!(m.nonce.len(), 32);
        let other = RunDir::create(t.path(), "n").unwrap();
        let m2 = Marker::parse(&fs::read_to_string(other.path().join(MARKER)).unwrap()).unwrap();
        assert_ne!(m.nonce, m2.nonce);
        assert_ne!(m.ino, m2.ino);
    }

    #[test]
    fn clean_removes_dead_runs_only_and_never_foreign_dirs() {
        let t = tempfile::tempdir().unwrap();
        let dead = dead_run(t.path(), "dead");
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
        assert_eq!(rep.removed().collect::<Vec<_>>(), vec![dead.as_path()]);
        assert!(matches!(
            verdict_of(&rep, &dead),
            Verdict::Removed {
                this_boot: true,
                ..
            }
        ));
        assert_eq!(
            verdict_of(&rep, live.path()),
            &Verdict::Running {
                pid: std::process::id()
            }
        );
        assert!(matches!(
            verdict_of(&rep, &foreign),
            Verdict::Mode(_) | Verdict::NoMarker
        ));
        assert!(!dead.exists());
        assert_eq!(fs::read(foreign.join("precious")).unwrap(), b"keep");
        live.remove().unwrap();
    }

    #[test]
    fn a_planted_or_copied_marker_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let dead = dead_run(t.path(), "dead");
        let genuine = fs::read_to_string(dead.join(MARKER)).unwrap();
        let plant = |name: &str, text: &str| {
            let d = t.path().join(name);
            fs::DirBuilder::new().mode(0o700).create(&d).unwrap();
            fs::set_permissions(&d, fs::Permissions::from_mode(0o700)).unwrap();
            fs::write(d.join(MARKER), text).unwrap();
            fs::set_permissions(d.join(MARKER), fs::Permissions::from_mode(0o600)).unwrap();
            d
        };
        let copied = plant(".candor-copied", &genuine);
        let spaced = plant(".candor-spaced", &genuine.replace(",\"uid\"", ", \"uid\""));
        let hello = plant(".candor-hello", "hello world");
        let wide = plant(".candor-wide", &genuine);
        fs::set_permissions(&wide, fs::Permissions::from_mode(0o755)).unwrap();
        let linked = plant(".candor-linked", "");
        fs::remove_file(linked.join(MARKER)).unwrap();
        std::os::unix::fs::symlink(dead.join(MARKER), linked.join(MARKER)).unwrap();
        // Another device number: refused from this boot, accepted from another (device
        // numbers can change across a reboot; the inode still has to match).
        let rewrite = |d: &Path, f: &dyn Fn(&mut Marker)| {
            let mut m = Marker::parse(&fs::read_to_string(d.join(MARKER)).unwrap()).unwrap();
            f(&mut m);
            fs::write(d.join(MARKER), m.render()).unwrap();
        };
        let dev_now = dead_run(t.path(), "dev-now");
        rewrite(&dev_now, &|m| m.dev += 1);
        let dev_then = dead_run(t.path(), "dev-then");
        rewrite(&dev_then, &|m| {
            m.dev += 1;
            m.boot_id = "0123abcd-0000-4000-8000-000000000000".into();
        });
        let ino_then = dead_run(t.path(), "ino-then");
        rewrite(&ino_then, &|m| {
            m.ino += 1;
            m.boot_id = "0123abcd-0000-4000-8000-000000000000".into();
        });
        let rep = clean_stale(t.path()).unwrap();
        assert_eq!(verdict_of(&rep, &dev_now), &Verdict::OtherDirectory);
        assert_eq!(verdict_of(&rep, &ino_then), &Verdict::OtherDirectory);
        assert!(matches!(
            verdict_of(&rep, &dev_then),
            Verdict::Removed {
                this_boot: false,
                ..
            }
        ));
        assert_eq!(verdict_of(&rep, &copied), &Verdict::OtherDirectory);
        assert_eq!(verdict_of(&rep, &spaced), &Verdict::MarkerFormat);
        assert_eq!(verdict_of(&rep, &hello), &Verdict::MarkerFormat);
        assert_eq!(verdict_of(&rep, &wide), &Verdict::Mode(0o755));
        assert!(matches!(verdict_of(&rep, &linked), Verdict::MarkerFile(_)));
        assert!(verdict_of(&rep, &dead).removed());
        for d in [copied, spaced, hello, wide, linked] {
            assert!(d.join(MARKER).symlink_metadata().is_ok(), "{}", d.display());
        }
    }

    #[test]
    fn marker_parses_strictly() {
        let m = Marker {
            pid: 42,
            boot_id: "0123abcd-0000-4000-8000-00000000abcd".into(),
            uid: 0,
            dev: 2049,
            ino: 77,
            nonce: "00112233445566778899aabbccddeeff".into(),
        };
        let text = m.render();
        assert_eq!(Marker::parse(&text), Some(m.clone()));
        for bad in [
            String::new(),
            "hello world".into(),
            text.trim_end().to_string(),
            text.replace("\"pid\":42", "\"pid\":0"),
            text.replace("\"pid\":42", "\"pid\":-1"),
            text.replace("\"pid\":42", "\"pid\":4294967296"),
            text.replace("\"pid\":42", "\"pid\":42.0"),
            text.replace("0123abcd", "0123ABCD"),
            text.replace("ff\"", "f\""),
            text.replace("}\n", ",\"x\":1}\n"),
            text.replace("\"candor_run\":1", "\"candor_run\":2"),
            format!(" {text}"),
            "{\"pid\":42,\"boot_id\":\"abc\"}\n".into(),
        ] {
            assert_eq!(Marker::parse(&bad), None, "{bad:?}");
        }
    }
}
