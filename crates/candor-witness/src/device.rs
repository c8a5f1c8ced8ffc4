//! Which block devices lie under a target, found through sysfs: the device number of the
//! filesystem -> sysfs's `dev/block/MAJ:MIN` -> the device, then down the stack to the
//! disks whose diskstats counters the witness reads. Every function reads through a
//! `Kernel` (candor-procfs) given as a parameter, so the tests build small sysfs trees
//! (partition, loop, dm, md) in a temporary directory.
//!
//! What is counted, and why:
//! - a partition: its whole disk, never both (other partitions of the disk share its queue,
//!   so their traffic is a disturbance the witness must see);
//! - dm and md: the disks beneath (`slaves/`), recursively (what the hardware moved);
//! - loop: the loop device itself. Beneath it lies a file on another filesystem whose page
//!   cache and unrelated traffic would blur the figures; the backing file's disk is only
//!   described.

use candor_model::BlockDevice;
use candor_procfs::{BlockDev, Kernel};
use std::path::{Path, PathBuf};

/// diskstats and sysfs `size` count 512-byte sectors, whatever the block size.
const SECTOR_BYTES: u64 = 512;

/// The devices under one filesystem.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resolved {
    /// The kernel name of the device the filesystem sits on ("vda", "sda1", "loop0", "dm-0").
    pub name: String,
    /// Whole devices whose diskstats lines are read and summed.
    pub counted: Vec<String>,
    /// sysfs directory of the device the filesystem sits on.
    pub dir: PathBuf,
    /// sysfs directory of the disk that best describes the hardware (model, rotational).
    pub disk_dir: PathBuf,
    /// For a loop device: its backing file.
    pub backing_file: Option<String>,
}

/// Resolves the device MAJ:MIN in the sysfs `kernel` reads.
pub fn resolve(kernel: &Kernel, major: u32, minor: u32) -> Option<Resolved> {
    let dev = kernel.block(major, minor).canonical().ok()?;
    let name = file_name(dev.dir())?;
    let mut counted = Vec::new();
    let mut disks = Vec::new();
    walk(&dev, 0, &mut counted, &mut disks);
    let backing_file = dev.loop_backing_file().map(|b| b.trim().to_string());
    let dir = dev.dir().to_path_buf();
    let disk_dir = disks.first().cloned().unwrap_or_else(|| dir.clone());
    Some(Resolved {
        name,
        counted,
        dir,
        disk_dir,
        backing_file,
    })
}

// Stacks are shallow (dm on md on partitions); the bound only guards against a loop in a
// corrupt tree.
const MAX_DEPTH: usize = 8;

fn walk(dev: &BlockDev, depth: usize, counted: &mut Vec<String>, disks: &mut Vec<PathBuf>) {
    let Some(name) = file_name(dev.dir()) else {
        return;
    };
    if depth > MAX_DEPTH {
        return;
    }
    if dev.is_partition() {
        if let Some(disk) = dev.parent() {
            return walk(&disk, depth + 1, counted, disks);
        }
    }
    if !dev.is_bound_loop() {
        let slaves = dev.slaves();
        if !slaves.is_empty() {
            for s in slaves {
                walk(&s, depth + 1, counted, disks);
            }
            return;
        }
    }
    if !counted.contains(&name) {
        counted.push(name);
        disks.push(dev.dir().to_path_buf());
    }
}

/// Describes a resolved device for the result file. `backing_disk` is what the backing file
/// of a loop device sits on, when known (its model and rotational flag describe the hardware).
pub fn describe(r: &Resolved, backing_disk: Option<&Resolved>) -> BlockDevice {
    let hw = BlockDev::at(backing_disk.map(|b| &b.disk_dir).unwrap_or(&r.disk_dir));
    let (dev, disk) = (BlockDev::at(&r.dir), BlockDev::at(&r.disk_dir));
    // Partitions have no queue/ of their own: their disk's applies.
    let queue = |d: &BlockDev, attr: &str| {
        let own = if d.has("queue") { d } else { &disk };
        own.attr(&format!("queue/{attr}")).ok()
    };
    let number = |attr: &str| queue(&dev, attr).and_then(|t| t.parse::<u64>().ok());
    let mut model = hardware_model(&hw);
    if let Some(bf) = &r.backing_file {
        let under = backing_disk
            .map(|b| format!(" on {} ({model})", b.name))
            .unwrap_or_default();
        model = format!("loop device backed by {bf}{under}");
    } else if let Ok(dm) = dev.attr("dm/name") {
        model = format!("device-mapper {dm} over {} ({model})", r.counted.join("+"));
    } else if let Ok(level) = dev.attr("md/level") {
        model = format!("md {level} over {} ({model})", r.counted.join("+"));
    }
    BlockDevice {
        name: r.name.clone(),
        counted: r.counted.clone(),
        model,
        rotational: hw.attr("queue/rotational").ok().as_deref() == Some("1"),
        size_bytes: dev.attr_u64("size").unwrap_or(0) * SECTOR_BYTES,
        scheduler: queue(&disk, "scheduler")
            .map(|s| crate::host::active_scheduler(&s))
            .unwrap_or_default(),
        logical_block_size: number("logical_block_size").unwrap_or(0) as u32,
        physical_block_size: number("physical_block_size").unwrap_or(0) as u32,
    }
}

/// A name for the hardware: the model the disk reports, else its driver (virtio disks have
/// no model file), else its kernel name.
fn hardware_model(disk: &BlockDev) -> String {
    if let Some(m) = disk.attr("device/model").ok().filter(|m| !m.is_empty()) {
        return m;
    }
    if let Some(drv) = disk.driver() {
        return drv;
    }
    let name = file_name(disk.dir()).unwrap_or_default();
    if name.starts_with("zram") {
        return "zram (compressed RAM)".into();
    }
    name
}

fn file_name(p: &Path) -> Option<String> {
    p.file_name().map(|n| n.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// A small sysfs: devices live under devices/..., dev/block/MAJ:MIN links to them.
    struct FakeSys {
        dir: tempfile::TempDir,
    }

    impl FakeSys {
        fn new() -> FakeSys {
            let dir = tempfile::tempdir().expect("tempdir");
            std::fs::create_dir_all(dir.path().join("sys/dev/block")).expect("mkdir");
            FakeSys { dir }
        }
        /// The reader of the tree (its sysfs is `sys/` below it).
        fn kernel(&self) -> Kernel {
            Kernel::at(self.dir.path())
        }
        fn root(&self) -> PathBuf {
            self.dir.path().join("sys")
        }
        fn device(&self, rel: &str, dev: &str, files: &[(&str, &str)]) -> PathBuf {
            let d = self.root().join("devices").join(rel);
            std::fs::create_dir_all(&d).expect("mkdir");
            for (f, v) in files {
                let p = d.join(f);
                std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
                std::fs::write(p, v).expect("write");
            }
            symlink(&d, self.root().join("dev/block").join(dev)).expect("symlink");
            d
        }
        fn slave(&self, holder: &Path, slave: &Path) {
            let s = holder.join("slaves");
            std::fs::create_dir_all(&s).expect("mkdir");
            symlink(slave, s.join(slave.file_name().expect("name"))).expect("symlink");
        }
    }

    fn disk_files() -> Vec<(&'static str, &'static str)> {
        vec![
            ("size", "2097152\n"),
            ("device/model", "Samsung SSD 870\n"),
            ("queue/rotational", "0\n"),
            ("queue/scheduler", "none [mq-deadline] kyber bfq\n"),
            ("queue/logical_block_size", "512\n"),
            ("queue/physical_block_size", "4096\n"),
        ]
    }

    #[test]
    fn partition_counts_its_disk_only() {
        let s = FakeSys::new();
        s.device("pci0/block/sda", "8:0", &disk_files());
        s.device(
            "pci0/block/sda/sda1",
            "8:1",
            &[("partition", "1\n"), ("size", "2048\n")],
        );
        let r = resolve(&s.kernel(), 8, 1).expect("resolves");
        assert_eq!(r.name, "sda1");
        assert_eq!(r.counted, vec!["sda".to_string()]);
        let b = describe(&r, None);
        assert_eq!(b.model, "Samsung SSD 870");
        assert_eq!(b.size_bytes, 2048 * 512);
        assert_eq!(b.scheduler, "mq-deadline");
        assert_eq!((b.logical_block_size, b.physical_block_size), (512, 4096));
        assert!(!b.rotational);
    }

    #[test]
    fn dm_over_partitions_of_two_disks_counts_both_disks() {
        let s = FakeSys::new();
        s.device("pci0/block/sda", "8:0", &disk_files());
        let sda2 = s.device("pci0/block/sda/sda2", "8:2", &[("partition", "2\n")]);
        s.device("pci0/block/sdb", "8:16", &disk_files());
        let sdb1 = s.device("pci0/block/sdb/sdb1", "8:17", &[("partition", "1\n")]);
        let dm = s.device(
            "virtual/block/dm-0",
            "253:0",
            &[
                ("dm/name", "vg-data\n"),
                ("size", "100\n"),
                ("queue/logical_block_size", "4096\n"),
            ],
        );
        s.slave(&dm, &sda2);
        s.slave(&dm, &sdb1);
        let r = resolve(&s.kernel(), 253, 0).expect("resolves");
        assert_eq!(r.name, "dm-0");
        assert_eq!(r.counted, vec!["sda".to_string(), "sdb".to_string()]);
        let b = describe(&r, None);
        assert!(
            b.model.starts_with("device-mapper vg-data over sda+sdb"),
            "{}",
            b.model
        );
        assert_eq!(b.logical_block_size, 4096);
    }

    #[test]
    fn loop_counts_itself_and_describes_backing_disk() {
        let s = FakeSys::new();
        s.device(
            "pci0/virtio1/block/vda",
            "254:0",
            &[("queue/rotational", "1\n")],
        );
        s.device(
            "virtual/block/loop0",
            "7:0",
            &[
                ("loop/backing_file", "/tmp/x/backing.img\n"),
                ("size", "131072\n"),
                ("queue/logical_block_size", "512\n"),
            ],
        );
        let r = resolve(&s.kernel(), 7, 0).expect("resolves");
        assert_eq!(r.counted, vec!["loop0".to_string()]);
        assert_eq!(r.backing_file.as_deref(), Some("/tmp/x/backing.img"));
        let under = resolve(&s.kernel(), 254, 0).expect("resolves");
        let b = describe(&r, Some(&under));
        assert!(b
            .model
            .starts_with("loop device backed by /tmp/x/backing.img on vda"));
        assert!(b.rotational);
        assert_eq!(b.size_bytes, 64 << 20);
    }

    #[test]
    fn md_of_whole_disks_and_missing_device() {
        let s = FakeSys::new();
        let a = s.device("pci0/block/nvme0n1", "259:0", &disk_files());
        let b = s.device("pci0/block/nvme1n1", "259:1", &disk_files());
        let md = s.device("virtual/block/md0", "9:0", &[("md/level", "raid1\n")]);
        s.slave(&md, &a);
        s.slave(&md, &b);
        let r = resolve(&s.kernel(), 9, 0).expect("resolves");
        assert_eq!(
            r.counted,
            vec!["nvme0n1".to_string(), "nvme1n1".to_string()]
        );
        assert!(describe(&r, None).model.starts_with("md raid1"));
        assert_eq!(resolve(&s.kernel(), 1, 99), None);
    }

    #[test]
    fn this_machines_root_disk() {
        // The real sysfs: whatever holds "/" must resolve to something diskstats knows.
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata("/").expect("stat /");
        let (maj, min) = (libc::major(meta.dev()), libc::minor(meta.dev()));
        let kernel = Kernel::system();
        let Some(r) = resolve(&kernel, maj, min) else {
            assert!(
                !kernel.block(maj, min).exists(),
                "/ is on block device {maj}:{min}, which did not resolve"
            );
            candor_testkit::skip(format!("/ is not on a block device here ({maj}:{min})"));
            return;
        };
        let stats = kernel.diskstats().expect("diskstats");
        for c in &r.counted {
            assert!(stats.iter().any(|d| &d.name == c), "{c} not in diskstats");
        }
    }
}
