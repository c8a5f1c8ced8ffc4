//! The host and the target as the result file describes them: CPU, caches, RAM, kernel
//! (`describe_host`), and the filesystem, mount and block device under a directory
//! (`describe_target`). The kernel's files are read through candor-procfs's `Kernel`, whose
//! parsers are tested on text captured from this project's machines.

use candor_model::{CpuCache, Host, TargetInfo};
use candor_procfs::Kernel;
use std::path::Path;

pub use candor_procfs::{cache_size, mount_for, Mount};

/// Parses the text of the mount table (mountinfo); mount points and sources
/// have their octal escapes (`\040` for a space) decoded.
pub fn mountinfo(text: &str) -> Vec<Mount> {
    candor_procfs::parse_mountinfo(text)
}

/// CPU description from the text of cpuinfo: model name, physical cores, hardware
/// threads.
pub fn cpuinfo(text: &str) -> (String, u32, u32) {
    let c = candor_procfs::parse_cpuinfo(text);
    (c.model, c.cores, c.threads)
}

/// The scheduler in use, from sysfs "none [mq-deadline] kyber" -> "mq-deadline".
pub fn active_scheduler(text: &str) -> String {
    text.split_whitespace()
        .find_map(|s| s.strip_prefix('[').and_then(|s| s.strip_suffix(']')))
        .unwrap_or_else(|| text.trim())
        .to_string()
}

/// Filesystems that keep their data in memory: a figure measured on them is memory speed.
pub fn is_memory_fs(fs_type: &str) -> bool {
    matches!(
        fs_type,
        "tmpfs" | "ramfs" | "hugetlbfs" | "devtmpfs" | "shm"
    )
}

/// PRETTY_NAME from /etc/os-release.
pub fn os_release(text: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let v = l.strip_prefix("PRETTY_NAME=")?;
        Some(v.trim().trim_matches('"').to_string())
    })
}

/// MemTotal from the text of meminfo, in bytes.
pub fn mem_total(text: &str) -> Option<u64> {
    candor_procfs::parse_meminfo(text).map(|m| m.total)
}

/// The machine: CPU model, cores and threads, cache sizes of cpu0, RAM, kernel, hostname.
pub fn describe_host() -> Host {
    let kernel = Kernel::system();
    let cpu = kernel.cpuinfo().unwrap_or_default();
    let caches = kernel
        .cpu_caches()
        .unwrap_or_default()
        .into_iter()
        .map(|c| CpuCache {
            level: c.level,
            kind: c.kind,
            size_bytes: c.size_bytes,
        })
        .collect();
    Host {
        hostname: kernel.hostname().unwrap_or_default(),
        os: std::fs::read_to_string("/etc/os-release")
            .ok()
            .and_then(|t| os_release(&t))
            .unwrap_or_else(|| "Linux".into()),
        kernel: kernel.os_release().unwrap_or_default(),
        cpu_model: cpu.model,
        cores: cpu.cores,
        threads: cpu.threads,
        caches,
        ram_bytes: kernel.meminfo().map(|m| m.total).unwrap_or(0),
    }
}

/// Where a target lives: its mount and the devices under it.
#[derive(Clone, Debug, Default)]
pub struct Placement {
    pub mount: Mount,
    /// None when no block device lies under the filesystem (tmpfs, FUSE, network).
    pub device: Option<crate::device::Resolved>,
    /// For a loop device: what its backing file sits on.
    pub backing: Option<crate::device::Resolved>,
}

/// The mount's own options, then the filesystem's (superblock) options that add something:
/// "rw,relatime" and "rw,discard" make "rw,relatime,discard".
pub fn merge_options(mount: &str, superblock: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    for o in mount.split(',').chain(superblock.split(',')) {
        if !o.is_empty() && !out.contains(&o) {
            out.push(o);
        }
    }
    out.join(",")
}

/// Finds the mount and block devices under `path` (which must exist).
pub fn place(path: &Path) -> Option<Placement> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let canon = std::fs::canonicalize(path).ok()?;
    let sys = &Kernel::system();
    if let Ok(m) = std::fs::metadata(&canon) {
        if m.file_type().is_block_device() {
            // A raw device target: the device itself, with no filesystem or mount.
            let device = crate::device::resolve(sys, libc::major(m.rdev()), libc::minor(m.rdev()));
            let backing = backing_of(sys, device.as_ref());
            return Some(Placement {
                mount: Mount {
                    major: libc::major(m.rdev()),
                    minor: libc::minor(m.rdev()),
                    fs_type: RAW.into(),
                    source: canon.to_string_lossy().into_owned(),
                    ..Mount::default()
                },
                device,
                backing,
            });
        }
    }
    let mounts = sys.mountinfo().ok()?;
    let mount = mount_for(&mounts, &canon.to_string_lossy())?.clone();
    let dev = std::fs::metadata(&canon).ok()?.dev();
    let mut device = crate::device::resolve(sys, libc::major(dev), libc::minor(dev));
    if device.is_none() && mount.source.starts_with("/dev/") {
        // btrfs (and others) give files an anonymous st_dev; the mount source names the
        // real device.
        if let Ok(m) = std::fs::metadata(&mount.source) {
            if m.file_type().is_block_device() {
                device = crate::device::resolve(sys, libc::major(m.rdev()), libc::minor(m.rdev()));
            }
        }
    }
    let backing = backing_of(sys, device.as_ref());
    Some(Placement {
        mount,
        device,
        backing,
    })
}

/// The `fs_type` of a target that is a block device itself (`--allow-device-writes`).
pub const RAW: &str = "raw device";

/// For a loop device: the device under its backing file.
fn backing_of(
    sys: &Kernel,
    device: Option<&crate::device::Resolved>,
) -> Option<crate::device::Resolved> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(device?.backing_file.as_ref()?).ok()?;
    crate::device::resolve(sys, libc::major(m.dev()), libc::minor(m.dev()))
}

/// The target's filesystem, mount options, free space and block device.
pub fn describe_target(path: &Path) -> TargetInfo {
    // The path as the person gave it: the runner keys its results by it, and the mount
    // point already says where it really lives.
    let mut t = TargetInfo {
        path: path.display().to_string(),
        ..Default::default()
    };
    if let Some((free, total)) = space(path) {
        t.free_bytes = free;
        t.total_bytes = total;
    }
    if let Some(size) = device_size(path) {
        // A raw device has no free space to speak of: its size, all of it candor's to use
        // from --offset (the plan checks the region against it).
        t.free_bytes = 0;
        t.total_bytes = size;
    }
    if let Some(p) = place(path) {
        t.fs_type = p.mount.fs_type.clone();
        t.mount_point = p.mount.mount_point.clone();
        t.mount_source = p.mount.source.clone();
        t.mount_options = merge_options(&p.mount.options, &p.mount.super_options);
        t.device = p
            .device
            .as_ref()
            .map(|d| crate::device::describe(d, p.backing.as_ref()));
    }
    t
}

/// The size of a block device, from sysfs; None for anything else.
fn device_size(path: &Path) -> Option<u64> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let m = std::fs::metadata(path).ok()?;
    if !m.file_type().is_block_device() {
        return None;
    }
    let dev = m.rdev();
    Kernel::system()
        .block(libc::major(dev), libc::minor(dev))
        .size_bytes()
        .ok()
}

/// Free (for an unprivileged user) and total bytes of the filesystem holding `path`.
fn space(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: c is a valid NUL-terminated path and s a writable statvfs.
    if unsafe { libc::statvfs(c.as_ptr(), &mut s) } != 0 {
        return None;
    }
    let frsize = s.f_frsize as u64;
    Some((s.f_bavail as u64 * frsize, s.f_blocks as u64 * frsize))
}

#[cfg(test)]
mod merge_tests {
    #[test]
    fn options_are_merged_without_repeats() {
        assert_eq!(
            super::merge_options("rw,relatime", "rw,discard,resv_strict"),
            "rw,relatime,discard,resv_strict"
        );
        assert_eq!(super::merge_options("ro", ""), "ro");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn o_direct_is_asked_of_regular_files_only_and_nothing_is_written() {
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let f = dir.path().join("f");
        std::fs::write(&f, b"x").unwrap();
        // A disk filesystem takes O_DIRECT; the file is left as it was.
        assert_eq!(takes_direct(&f), Some(true));
        assert_eq!(std::fs::read(&f).unwrap(), b"x");
        // A directory, a symlink, a missing file: not asked.
        assert_eq!(takes_direct(dir.path()), None);
        let l = dir.path().join("l");
        std::os::unix::fs::symlink(&f, &l).unwrap();
        assert_eq!(takes_direct(&l), None);
        assert_eq!(takes_direct(&dir.path().join("missing")), None);
        // Nothing compresses a plain file here.
        assert_eq!(compression_set(&f), None);
    }

    #[test]
    fn mountinfo_captured_and_longest_match() {
        let m = mountinfo(include_str!("../tests/data/host_mountinfo.txt"));
        let root = mount_for(&m, "/work/main").expect("root");
        assert_eq!(root.fs_type, "ext4");
        assert_eq!(root.source, "/dev/vda");
        assert_eq!((root.major, root.minor), (254, 0));
        assert!(root.super_options.contains("discard"));
        // /dev/shm is mounted twice; the later mount hides the first.
        let shm = mount_for(&m, "/dev/shm/x").expect("shm");
        assert_eq!(shm.fs_type, "tmpfs");
        assert_eq!((shm.major, shm.minor), (0, 27));
        // "/devices" is not under "/dev".
        assert_eq!(
            mount_for(&m, "/devices").map(|m| m.mount_point.as_str()),
            Some("/")
        );
    }

    #[test]
    fn mountinfo_escapes_and_optional_fields() {
        let text = "97 27 7:3 / /tmp/my\\040disk rw,relatime shared:50 master:2 - xfs /dev/loop3 rw,attr2\n";
        let m = mountinfo(text);
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].mount_point, "/tmp/my disk");
        assert_eq!(m[0].fs_type, "xfs");
        assert_eq!(m[0].source, "/dev/loop3");
        assert_eq!(mount_for(&m, "/tmp/my disk/a").map(|m| m.minor), Some(3));
    }

    #[test]
    fn cpuinfo_captured() {
        let text = include_str!("../tests/data/host_cpuinfo.txt");
        let (model, cores, threads) = cpuinfo(text);
        assert_eq!(model, "Intel(R) Xeon(R) Processor");
        assert_eq!((cores, threads), (2, 2));
    }

    #[test]
    fn sizes_and_scheduler() {
        assert_eq!(cache_size("48K\n"), Some(48 * 1024));
        assert_eq!(cache_size("307200K"), Some(307200 * 1024));
        assert_eq!(cache_size("1M"), Some(1 << 20));
        assert_eq!(cache_size("x"), None);
        assert_eq!(
            active_scheduler("none [mq-deadline] kyber bfq \n"),
            "mq-deadline"
        );
        assert_eq!(active_scheduler("none\n"), "none");
    }
    #[test]
    fn os_release_and_mem_total() {
        let t = "NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n";
        assert_eq!(
            os_release(t).as_deref(),
            Some("Debian GNU/Linux 12 (bookworm)")
        );
        assert_eq!(
            mem_total(include_str!("../tests/data/host_meminfo.txt")),
            Some(24730032 * 1024)
        );
    }

    #[test]
    fn host_of_this_machine() {
        let h = describe_host();
        assert!(h.threads >= 1 && h.cores >= 1 && h.cores <= h.threads);
        assert!(h.ram_bytes > 0);
        assert!(!h.kernel.is_empty());
        assert!(h.caches.iter().any(|c| c.level == 1));
    }

    #[test]
    fn target_on_tmpfs() {
        let shm = Path::new("/dev/shm");
        if !candor_testkit::need_path(shm, "no tmpfs at /dev/shm") {
            return;
        }
        let t = describe_target(shm);
        assert_eq!(t.fs_type, "tmpfs");
        assert!(t.device.is_none());
        assert!(t.total_bytes > 0);
    }

    #[test]
    fn target_in_the_source_tree() {
        let dir = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).expect("tempdir");
        let t = describe_target(dir.path());
        assert!(!t.fs_type.is_empty());
        assert_eq!(t.path, dir.path().display().to_string());
        let canon = std::fs::canonicalize(dir.path()).expect("canonical");
        assert!(canon.starts_with(&t.mount_point));
        // A filesystem whose st_dev is a block device the kernel lists must be described
        // with it (others, such as overlay or btrfs, may or may not name one).
        use std::os::unix::fs::MetadataExt;
        let dev = std::fs::metadata(dir.path()).expect("stat").dev();
        if candor_procfs::Kernel::system()
            .block(libc::major(dev), libc::minor(dev))
            .exists()
        {
            let d = t.device.as_ref().expect("the block device is described");
            assert!(
                !d.counted.is_empty() && d.logical_block_size >= 512,
                "{d:?}"
            );
        }
        if let Some(d) = &t.device {
            assert!(
                !d.counted.is_empty() && d.logical_block_size >= 512,
                "{d:?}"
            );
        }
    }

    #[test]
    fn targets_on_loop_filesystems() {
        let _one = crate::testkit::scratch_lock();
        // 320 MiB: mkfs.xfs refuses less than 300 MB. ext4 and xfs have the loop device as st_dev; btrfs gives files an anonymous st_dev, so the
        // mount source has to name the device.
        for fs in ["ext4", "xfs", "btrfs"] {
            let Some(s) = candor_testkit::need_or(
                candor_lab::scratch(fs, 320 << 20),
                candor_lab::LabError::is_unsupported,
            ) else {
                return;
            };
            let t = describe_target(s.path());
            assert_eq!(t.fs_type, fs);
            let loop_name = s.loop_device.trim_start_matches("/dev/").to_string();
            let d = t
                .device
                .as_ref()
                .expect("a device under the loop filesystem");
            assert_eq!(d.name, loop_name);
            assert_eq!(d.counted, vec![loop_name.clone()]);
            assert!(d.model.starts_with("loop device backed by "), "{}", d.model);
            assert!(d.size_bytes >= 320 << 20, "{}", d.size_bytes);
            assert_eq!(t.mount_source, s.loop_device);
        }
    }
}

/// The compression set on a file or directory itself, and how: btrfs's `compression`
/// property (the `btrfs.compression` attribute, "btrfs property compression=zstd") or the
/// inode's compress flag (`chattr +c`, FS_COMPR_FL). None when neither is set, the value is
/// "none"/"no", or it cannot be read.
pub fn compression_set(path: &Path) -> Option<String> {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::OpenOptionsExt;
    use std::os::unix::io::AsRawFd;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    let name = c"btrfs.compression";
    let mut buf = [0u8; 64];
    // SAFETY: c and name are valid NUL-terminated strings; buf is writable for its length.
    let n = unsafe {
        libc::lgetxattr(
            c.as_ptr(),
            name.as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    if n > 0 {
        let v = String::from_utf8_lossy(&buf[..n as usize])
            .trim_end_matches('\0')
            .trim()
            .to_string();
        if !v.is_empty() && v != "none" && v != "no" {
            return Some(format!("btrfs property compression={v}"));
        }
    }
    // O_NOFOLLOW and O_NONBLOCK: nothing but the file itself is opened, and never waited on.
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .ok()?;
    let mut flags: libc::c_long = 0;
    // SAFETY: FS_IOC_GETFLAGS writes one long into flags, a valid pointer.
    let r = unsafe { libc::ioctl(f.as_raw_fd(), libc::FS_IOC_GETFLAGS, &mut flags) };
    const FS_COMPR_FL: libc::c_long = 0x0000_0004;
    (r == 0 && flags & FS_COMPR_FL != 0).then(|| "chattr +c".to_string())
}

/// Whether the filesystem under a regular file takes O_DIRECT: the file opened read-only
/// with O_DIRECT and closed (nothing created, read or written). None for anything but a
/// regular file, or when the open fails for another reason than EINVAL.
pub fn takes_direct(path: &Path) -> Option<bool> {
    use std::os::unix::fs::OpenOptionsExt;
    let m = std::fs::symlink_metadata(path).ok()?;
    if !m.file_type().is_file() {
        return None;
    }
    match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
    {
        Ok(_) => Some(true),
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => Some(false),
        Err(_) => None,
    }
}
