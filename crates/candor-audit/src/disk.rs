//! Block device counters from diskstats, sampled on the same ticks as the phases, so
//! any window of the run (a phase, a test) has its device traffic.

use candor_procfs::{read_diskstats, DiskStat, Kernel};
use std::collections::BTreeMap;

/// The kernel name of the block device behind a device number (st_dev), from sysfs.
pub fn device_name(dev: u64) -> Option<String> {
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let uevent = Kernel::system().block(major, minor).attr("uevent").ok()?;
    uevent
        .lines()
        .find_map(|l| l.strip_prefix("DEVNAME="))
        .map(str::to_string)
}

/// Samples of all devices' counters, in time order.
#[derive(Default, Debug)]
pub struct DiskTimeline {
    samples: Vec<(f64, BTreeMap<String, DiskStat>)>,
}

impl DiskTimeline {
    pub fn sample(&mut self, t: f64) {
        if let Some(all) = read_diskstats() {
            self.push(t, all);
        }
    }

    pub fn push(&mut self, t: f64, counters: Vec<DiskStat>) {
        let by_name = counters.into_iter().map(|d| (d.name.clone(), d)).collect();
        self.samples.push((t, by_name));
    }

    /// A device's traffic over a window that covers [from, to]: from the last sample at or
    /// before `from` to the first at or after `to` (so the window is never shorter).
    pub fn delta(&self, device: &str, from: f64, to: f64) -> Option<DiskStat> {
        let before = self
            .samples
            .iter()
            .rev()
            .find(|(t, _)| *t <= from)
            .or(self.samples.first())?;
        let after = self
            .samples
            .iter()
            .find(|(t, _)| *t >= to)
            .or(self.samples.last())?;
        Some(after.1.get(device)?.delta(before.1.get(device)?))
    }

    /// The whole run's traffic on a device.
    pub fn total(&self, device: &str) -> Option<DiskStat> {
        let first = self.samples.first()?;
        let last = self.samples.last()?;
        Some(last.1.get(device)?.delta(first.1.get(device)?))
    }

    /// Time of the first and last samples.
    pub fn span(&self) -> Option<(f64, f64)> {
        Some((self.samples.first()?.0, self.samples.last()?.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_cover_the_phase() {
        let vda = |sectors: u64| DiskStat {
            name: "vda".into(),
            write_sectors: sectors,
            ..Default::default()
        };
        let mut t = DiskTimeline::default();
        let (a, b, c) = (vec![vda(100)], vec![vda(300)], vec![vda(1000)]);
        t.push(0.0, a);
        t.push(1.0, b);
        t.push(2.0, c);
        assert_eq!(t.delta("vda", 0.5, 0.9).map(|d| d.write_sectors), Some(200));
        assert_eq!(t.delta("vda", 1.0, 2.0).map(|d| d.write_sectors), Some(700));
        assert_eq!(t.total("vda").map(|d| d.write_bytes()), Some(900 * 512));
        assert_eq!(t.delta("sdz", 0.0, 1.0), None);
    }

    /// The root filesystem's device is named as the mount table and diskstats name it (a
    /// root on overlay or tmpfs has no device: skipped).
    #[test]
    fn names_the_root_device() {
        use std::os::unix::fs::MetadataExt;
        let dev = std::fs::metadata("/").expect("stat /").dev();
        let kernel = Kernel::system();
        // The mount table's source for "/", e.g. /dev/vda.
        let mounts = kernel.mountinfo().unwrap();
        let source = &mounts
            .iter()
            .rfind(|m| m.mount_point == "/")
            .expect("a mount on /")
            .source;
        let Some(name) = source.strip_prefix("/dev/") else {
            assert_eq!(device_name(dev), None, "/ is on {source}");
            candor_testkit::skip(format!("/ is on {source}, no block device"));
            return;
        };
        assert_eq!(device_name(dev).as_deref(), Some(name));
        let diskstats = kernel.diskstats().unwrap();
        assert!(
            diskstats.iter().any(|d| d.name == name),
            "{name} is a diskstats name"
        );
    }
}
