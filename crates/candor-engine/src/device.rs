//! A block device as a target (`--allow-device-writes`). Writing a raw device destroys what
//! it holds, so every check is made before the first write, and each refusal is one
//! sentence:
//! - the device is not mounted, holds no mounted partition, is no active swap, and nothing
//!   is stacked on it or on one of its partitions: no device-mapper or md device in
//!   sysfs' `holders`, and no loop device whose backing file it is (every
//!   loop device's `loop/backing_file`, compared by device number: `losetup -o` on a
//!   device leaves `holders` empty) — from the mount table, the active swaps and sysfs;
//! - the kernel agrees: candor opens it with O_EXCL, which the kernel refuses while the
//!   device or one of its partitions is mounted or claimed, and the claim is held for the
//!   whole run, so nothing can mount it in the middle;
//! - it carries no signature of any kind libblkid knows (filesystems, partition tables,
//!   RAID, LVM, LUKS, swap...: `crate::blkid`), nor one of candor's own table
//!   (`SIGNATURES`), unless `--destroy-existing-data` says to destroy it; when the
//!   signature check cannot run, the device is refused (it is never taken to be blank);
//! - the region candor works in, from `--offset` for `threads x --file-size` bytes, lies
//!   inside the device and starts on a logical block.
//!
//! Each thread works on its own slice of the region: thread i at
//! `offset + i x file_size` (`Device::base`).

use candor_procfs::{BlockDev, Kernel};
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// A checked, claimed block device and the start of candor's region on it.
#[derive(Debug)]
pub struct Device {
    path: PathBuf,
    /// The kernel's name ("loop3", "nvme0n1p2").
    name: String,
    size: u64,
    offset: u64,
    /// The O_EXCL descriptor held for the run.
    claim: i32,
}

impl Device {
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The device's size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Where candor's region starts (`--offset`).
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Bytes from the offset to the end of the device: what a plan may use.
    pub fn room(&self) -> u64 {
        self.size.saturating_sub(self.offset)
    }

    /// Where thread `i`'s slice starts for files of `file_size`.
    pub fn base(&self, i: usize, file_size: u64) -> u64 {
        self.offset + i as u64 * file_size
    }

    /// Writes the device's cache back (fsync on the claim), the device's counterpart of a
    /// filesystem's syncfs.
    pub fn sync(&self) {
        // SAFETY: claim is an open descriptor owned by self.
        unsafe {
            libc::fsync(self.claim);
        }
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        // SAFETY: claim is an open descriptor owned by self, closed once.
        unsafe {
            libc::close(self.claim);
        }
    }
}

/// A signature of something that lives on a device: its name, where its magic is and what
/// the bytes are. Positions are the formats' own (their on-disk layouts).
pub struct Signature {
    pub what: &'static str,
    pub at: usize,
    pub magic: &'static [u8],
}

/// What candor recognises on a device before it agrees to overwrite it.
pub const SIGNATURES: &[Signature] = &[
    Signature {
        what: "an ext2/3/4 filesystem",
        at: 1024 + 56,
        magic: &[0x53, 0xEF],
    },
    Signature {
        what: "an XFS filesystem",
        at: 0,
        magic: b"XFSB",
    },
    Signature {
        what: "a btrfs filesystem",
        at: 65536 + 64,
        magic: b"_BHRfS_M",
    },
    Signature {
        what: "an F2FS filesystem",
        at: 1024,
        magic: &[0x10, 0x20, 0xF5, 0xF2],
    },
    Signature {
        what: "a squashfs image",
        at: 0,
        magic: b"hsqs",
    },
    Signature {
        what: "an ISO 9660 filesystem",
        at: 32769,
        magic: b"CD001",
    },
    Signature {
        what: "an NTFS filesystem",
        at: 3,
        magic: b"NTFS    ",
    },
    Signature {
        what: "a FAT filesystem",
        at: 54,
        magic: b"FAT1",
    },
    Signature {
        what: "a FAT32 filesystem",
        at: 82,
        magic: b"FAT32",
    },
    Signature {
        what: "a GPT partition table",
        at: 512,
        magic: b"EFI PART",
    },
    Signature {
        what: "a GPT partition table",
        at: 4096,
        magic: b"EFI PART",
    },
    Signature {
        what: "an LVM physical volume",
        at: 512,
        magic: b"LABELONE",
    },
    Signature {
        what: "a LUKS encrypted volume",
        at: 0,
        magic: b"LUKS\xba\xbe",
    },
    Signature {
        what: "a LUKS2 encrypted volume",
        at: 0,
        magic: b"SKUL\xba\xbe",
    },
    Signature {
        what: "a Linux swap area",
        at: 4096 - 10,
        magic: b"SWAPSPACE2",
    },
    Signature {
        what: "a Linux swap area",
        at: 4096 - 10,
        magic: b"SWAP-SPACE",
    },
    Signature {
        what: "an md RAID member",
        at: 4096,
        magic: &[0xFC, 0x4E, 0x2B, 0xA9],
    },
    Signature {
        what: "an md RAID member",
        at: 0,
        magic: &[0xFC, 0x4E, 0x2B, 0xA9],
    },
];

/// How many bytes from the start of a device the signatures need.
pub const PROBE_LEN: usize = 65536 + 4096;

/// What the first bytes of a device hold, by `SIGNATURES`, and a DOS partition table (the
/// boot signature 55 AA with at least one partition entry in use).
pub fn signatures(head: &[u8]) -> Vec<&'static str> {
    let mut found: Vec<&'static str> = SIGNATURES
        .iter()
        .filter(|s| head.get(s.at..s.at + s.magic.len()) == Some(s.magic))
        .map(|s| s.what)
        .collect();
    if head.get(510..512) == Some(&[0x55, 0xAA]) {
        let used = (0..4).any(|k| head.get(446 + k * 16 + 4).is_some_and(|&t| t != 0));
        if used
            && !found
                .iter()
                .any(|w| w.contains("FAT") || w.contains("NTFS"))
        {
            found.push("a DOS partition table");
        }
    }
    found.dedup();
    found
}

/// Checks `path` (a block device) and claims it; `threads x file_size` bytes from `offset`
/// must fit, which the plan checks once it knows them (`Device::room`). Errors are the
/// sentence to print.
pub fn claim(path: &Path, offset: u64, destroy: bool) -> Result<Device, String> {
    let shown = path.display();
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot use {shown}: {e}"))?;
    if !meta.file_type().is_block_device() {
        return Err(format!("{shown} is not a block device"));
    }
    let rdev = meta.rdev();
    let (major, minor) = (libc::major(rdev), libc::minor(rdev));
    let kernel = Kernel::system();
    let sys = kernel.block(major, minor);
    let name = sys.name().unwrap_or_else(|_| format!("{major}:{minor}"));
    // The device and its partitions: a mount or holder of any of them refuses the device.
    let mut parts: Vec<(String, u32, u32)> = vec![(name.clone(), major, minor)];
    parts.extend(sys.partitions());
    if let Some(why) = in_use(&kernel, &parts) {
        return Err(in_use_sentence(&shown, &why));
    }
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| format!("{shown} is not a usable path"))?;
    // SAFETY: c is a valid C string; the descriptor is owned by the Device or closed below.
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDWR | libc::O_EXCL | libc::O_CLOEXEC) };
    if fd < 0 {
        let e = std::io::Error::last_os_error();
        return Err(match e.raw_os_error() {
            Some(libc::EBUSY) => format!(
                "{shown} is busy: the kernel refuses an exclusive open (mounted, or claimed by another program); candor never writes a device in use"
            ),
            Some(libc::EACCES) | Some(libc::EPERM) => format!(
                "cannot open {shown} for writing: permission denied; benchmarking a raw device needs write access to it (usually root)"
            ),
            Some(libc::EROFS) => format!("{shown} is read-only: candor cannot write it"),
            _ => format!("cannot open {shown}: {e}"),
        });
    }
    // Looked at again with the claim held: anything stacked on it in the meantime (a
    // loop device, which O_EXCL does not keep out) refuses it too.
    if let Some(why) = in_use(&kernel, &parts) {
        // SAFETY: fd was opened above and is closed once, here.
        unsafe { libc::close(fd) };
        return Err(in_use_sentence(&shown, &why));
    }
    let dev = Device {
        path: path.to_path_buf(),
        name,
        // SAFETY: fd is open; seeking a block device's end gives its size.
        size: unsafe { libc::lseek(fd, 0, libc::SEEK_END) }.max(0) as u64,
        offset,
        claim: fd,
    };
    if dev.size == 0 {
        return Err(format!(
            "{shown} has no capacity (an empty or detached device)"
        ));
    }
    let lbs = logical_block(&sys);
    if !offset.is_multiple_of(lbs) {
        return Err(format!(
            "--offset {offset} does not start on a logical block of {shown} ({lbs} bytes): give a multiple of {lbs}"
        ));
    }
    if offset >= dev.size {
        return Err(format!(
            "--offset {offset} is beyond the end of {shown} ({} bytes)",
            dev.size
        ));
    }
    let mut head = vec![0u8; PROBE_LEN.min(dev.size as usize)];
    // SAFETY: fd is open and head is writable for its length.
    let n = unsafe { libc::pread(fd, head.as_mut_ptr().cast(), head.len(), 0) };
    if n < 0 {
        return Err(format!(
            "cannot read the start of {shown} to look for a filesystem: {}",
            std::io::Error::last_os_error()
        ));
    }
    head.truncate(n as usize);
    if destroy {
        // Told to destroy whatever is there: what it is does not matter.
        return Ok(dev);
    }
    let found = match crate::blkid::probe(fd, path)? {
        crate::blkid::Found::Nothing => None,
        f => f.describe(),
    };
    // candor's own table too, in case the library on this machine is older than a format.
    let found = found.or_else(|| {
        let own = signatures(&head);
        (!own.is_empty()).then(|| format!("{} (found by candor's own check)", own.join(" and ")))
    });
    if let Some(what) = found {
        return Err(format!(
            "{shown} holds {what}: candor does not write over it; wipe it first (wipefs -a {shown}) or add --destroy-existing-data if you mean to destroy it"
        ));
    }
    Ok(dev)
}

/// The refusal of a device in use, `why` saying by what.
fn in_use_sentence(shown: &impl std::fmt::Display, why: &str) -> String {
    format!(
        "{shown} is in use ({why}): candor never writes a device in use; unmount it or detach what is stacked on it (losetup -d, dmsetup remove, mdadm --stop) first"
    )
}

/// Why one of `parts` is in use: mounted (by device number or by the mount's source, as
/// btrfs mounts show an anonymous number), an active swap area, or held by a stacked
/// device. None when free.
fn in_use(kernel: &Kernel, parts: &[(String, u32, u32)]) -> Option<String> {
    let mounts = kernel.mountinfo().unwrap_or_default();
    let swaps = kernel.swaps().unwrap_or_default();
    for (name, major, minor) in parts {
        let dev_path = format!("/dev/{name}");
        for m in &mounts {
            let source_is = std::fs::canonicalize(&m.source)
                .map(|p| p == Path::new(&dev_path))
                .unwrap_or(false);
            if (m.major, m.minor) == (*major, *minor) || m.source == dev_path || source_is {
                return Some(format!("{dev_path} is mounted on {}", m.mount_point));
            }
        }
        if swaps.contains(&dev_path) {
            return Some(format!("{dev_path} is an active swap area"));
        }
    }
    stacked(kernel, parts)
}

/// What is stacked on one of `parts`, from sysfs: a holder (device-mapper, md, bcache...
/// in `holders/`), or a loop device whose backing file is one of them
/// (`loop/backing_file`, compared by device number, as `losetup -o` leaves `holders/`
/// empty). None when nothing is.
fn stacked(kernel: &Kernel, parts: &[(String, u32, u32)]) -> Option<String> {
    let mut found = Vec::new();
    for (name, _, _) in parts {
        let dev_path = format!("/dev/{name}");
        let Ok(holders) = kernel.block_named(name).holders() else {
            continue;
        };
        for h in holders {
            let held = kernel.block_named(&h);
            let dm = held
                .attr("dm/name")
                .ok()
                .map(|n| format!(" (device-mapper {n})"))
                .or_else(|| held.has("md").then(|| " (md RAID)".to_string()))
                .unwrap_or_default();
            found.push(format!("{h}{dm} is stacked on {dev_path}"));
        }
    }
    let numbers: Vec<u64> = parts
        .iter()
        .map(|&(_, ma, mi)| libc::makedev(ma, mi))
        .collect();
    for name in kernel.block_names().unwrap_or_default() {
        let dev = kernel.block_named(&name);
        let Some(backing) = dev.loop_backing_file() else {
            continue;
        };
        let Ok(m) = std::fs::metadata(&backing) else {
            continue;
        };
        if m.file_type().is_block_device() && numbers.contains(&m.rdev()) {
            let offset = dev
                .attr_u64("loop/offset")
                .ok()
                .filter(|&o| o > 0)
                .map(|o| format!(" (losetup -o {o})"))
                .unwrap_or_default();
            found.push(format!("{name} uses {backing} as its backing file{offset}"));
        }
    }
    (!found.is_empty()).then(|| found.join("; "))
}

/// The device's logical block size from sysfs (a partition's is its disk's); 512 if unknown.
fn logical_block(sys: &BlockDev) -> u64 {
    sys.queue("logical_block_size")
        .ok()
        .and_then(|t| t.parse().ok())
        .filter(|&b: &u64| b > 0)
        .unwrap_or(512)
}

/// Whether `path` is a block device.
pub fn is_block_device(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.file_type().is_block_device())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(at: usize, bytes: &[u8]) -> Vec<u8> {
        let mut v = vec![0u8; PROBE_LEN];
        v[at..at + bytes.len()].copy_from_slice(bytes);
        v
    }

    #[test]
    fn a_zeroed_device_holds_nothing() {
        assert!(signatures(&vec![0u8; PROBE_LEN]).is_empty());
        assert!(signatures(&[]).is_empty());
    }

    #[test]
    fn each_signature_is_found_where_its_format_puts_it() {
        assert_eq!(
            signatures(&with(1080, &[0x53, 0xEF])),
            vec!["an ext2/3/4 filesystem"]
        );
        assert_eq!(signatures(&with(0, b"XFSB")), vec!["an XFS filesystem"]);
        assert_eq!(
            signatures(&with(65600, b"_BHRfS_M")),
            vec!["a btrfs filesystem"]
        );
        assert_eq!(
            signatures(&with(512, b"EFI PART")),
            vec!["a GPT partition table"]
        );
        assert_eq!(
            signatures(&with(4086, b"SWAPSPACE2")),
            vec!["a Linux swap area"]
        );
        // One byte off is not the format.
        assert!(signatures(&with(1081, &[0x53, 0xEF])).is_empty());
    }

    #[test]
    fn a_dos_table_needs_an_entry_in_use() {
        let mut v = with(510, &[0x55, 0xAA]);
        assert!(
            signatures(&v).is_empty(),
            "a bare boot signature is no table"
        );
        v[446 + 4] = 0x83;
        assert_eq!(signatures(&v), vec!["a DOS partition table"]);
    }

    /// A sysfs tree of `holders/` and `dm/name` for a device with one partition: the
    /// device-mapper on the disk and the md array on the partition are both named.
    #[test]
    fn holders_of_the_device_and_of_its_partitions_are_named() {
        let root = tempfile::tempdir().unwrap();
        let sys = root.path().join("sys");
        let mk = |p: &str| std::fs::create_dir_all(sys.join(p)).unwrap();
        mk("class/block/vdz/holders/dm-3");
        mk("class/block/vdz1/holders/md9");
        mk("class/block/vdz2/holders");
        mk("block/dm-3/dm");
        std::fs::write(sys.join("block/dm-3/dm/name"), "vg-data\n").unwrap();
        mk("block/md9/md");
        let k = Kernel::at(root.path());
        let parts = |names: &[&str]| -> Vec<(String, u32, u32)> {
            names.iter().map(|n| (n.to_string(), 250, 0)).collect()
        };
        assert_eq!(
            stacked(&k, &parts(&["vdz", "vdz1", "vdz2"])).as_deref(),
            Some("dm-3 (device-mapper vg-data) is stacked on /dev/vdz; md9 (md RAID) is stacked on /dev/vdz1")
        );
        assert_eq!(
            stacked(&k, &parts(&["vdz1"])).as_deref(),
            Some("md9 (md RAID) is stacked on /dev/vdz1"),
            "a partition's holder alone"
        );
        assert_eq!(stacked(&k, &parts(&["vdz2"])), None);
    }

    #[test]
    fn a_regular_file_is_refused_as_a_device() {
        let f = tempfile::NamedTempFile::new().unwrap();
        let e = claim(f.path(), 0, false).unwrap_err();
        assert!(e.contains("is not a block device"), "{e}");
    }
}
