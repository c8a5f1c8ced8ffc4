//! Block device counters from /proc/diskstats, sampled on the same ticks as the phases, so
//! any window of the run (a phase, a test) has its device traffic.

use std::collections::BTreeMap;

/// One device's cumulative counters (bytes, not sectors).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DiskCounters {
    pub read_ios: u64,
    pub read_bytes: u64,
    pub read_ms: u64,
    pub write_ios: u64,
    pub write_bytes: u64,
    pub write_ms: u64,
    pub io_ms: u64,
}

impl DiskCounters {
    pub fn saturating_sub(self, o: DiskCounters) -> DiskCounters {
        DiskCounters {
            read_ios: self.read_ios.saturating_sub(o.read_ios),
            read_bytes: self.read_bytes.saturating_sub(o.read_bytes),
            read_ms: self.read_ms.saturating_sub(o.read_ms),
            write_ios: self.write_ios.saturating_sub(o.write_ios),
            write_bytes: self.write_bytes.saturating_sub(o.write_bytes),
            write_ms: self.write_ms.saturating_sub(o.write_ms),
            io_ms: self.io_ms.saturating_sub(o.io_ms),
        }
    }

    /// Average device time per request, microseconds (None without requests).
    pub fn avg_latency_us(&self) -> Option<f64> {
        let ios = self.read_ios + self.write_ios;
        (ios > 0).then(|| (self.read_ms + self.write_ms) as f64 * 1000.0 / ios as f64)
    }
}

/// Parses /proc/diskstats (lines of at least 14 fields; shorter or odd lines are skipped).
pub fn parse_diskstats(text: &str) -> BTreeMap<String, DiskCounters> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 14 {
            continue;
        }
        let n = |i: usize| f.get(i).and_then(|x| x.parse::<u64>().ok()).unwrap_or(0);
        out.insert(
            f[2].to_string(),
            DiskCounters {
                read_ios: n(3),
                read_bytes: n(5).saturating_mul(512),
                read_ms: n(6),
                write_ios: n(7),
                write_bytes: n(9).saturating_mul(512),
                write_ms: n(10),
                io_ms: n(12),
            },
        );
    }
    out
}

/// The kernel name of the block device behind a device number (st_dev), from sysfs.
pub fn device_name(dev: u64) -> Option<String> {
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let uevent = std::fs::read_to_string(format!("/sys/dev/block/{major}:{minor}/uevent")).ok()?;
    uevent
        .lines()
        .find_map(|l| l.strip_prefix("DEVNAME="))
        .map(str::to_string)
}

/// Samples of all devices' counters, in time order.
#[derive(Default, Debug)]
pub struct DiskTimeline {
    samples: Vec<(f64, BTreeMap<String, DiskCounters>)>,
}

impl DiskTimeline {
    pub fn sample(&mut self, t: f64) {
        if let Ok(text) = std::fs::read_to_string("/proc/diskstats") {
            self.samples.push((t, parse_diskstats(&text)));
        }
    }

    pub fn push(&mut self, t: f64, counters: BTreeMap<String, DiskCounters>) {
        self.samples.push((t, counters));
    }

    /// A device's traffic over a window that covers [from, to]: from the last sample at or
    /// before `from` to the first at or after `to` (so the window is never shorter).
    pub fn delta(&self, device: &str, from: f64, to: f64) -> Option<DiskCounters> {
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
        Some(after.1.get(device)?.saturating_sub(*before.1.get(device)?))
    }

    /// The whole run's traffic on a device.
    pub fn total(&self, device: &str) -> Option<DiskCounters> {
        let first = self.samples.first()?;
        let last = self.samples.last()?;
        Some(last.1.get(device)?.saturating_sub(*first.1.get(device)?))
    }

    /// Time of the first and last samples.
    pub fn span(&self) -> Option<(f64, f64)> {
        Some((self.samples.first()?.0, self.samples.last()?.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = " 253       0 vda 1000 5 20480 300 2000 10 40960 600 0 700 900 0 0 0 0 0 0\n   7       0 loop0 1 0 8 0 0 0 0 0 0 0 0\n short line\n";

    #[test]
    fn diskstats_lines() {
        let d = parse_diskstats(SAMPLE);
        assert_eq!(d["vda"].read_bytes, 20480 * 512);
        assert_eq!(d["vda"].write_ios, 2000);
        assert_eq!(d["vda"].io_ms, 700);
        assert_eq!(d["loop0"].read_bytes, 8 * 512);
        assert_eq!(d.len(), 2);
    }

    #[test]
    fn windows_cover_the_phase() {
        let mut t = DiskTimeline::default();
        let mut a = BTreeMap::new();
        a.insert(
            "vda".to_string(),
            DiskCounters {
                write_bytes: 100,
                ..Default::default()
            },
        );
        let mut b = a.clone();
        b.insert(
            "vda".to_string(),
            DiskCounters {
                write_bytes: 300,
                ..Default::default()
            },
        );
        let mut c = a.clone();
        c.insert(
            "vda".to_string(),
            DiskCounters {
                write_bytes: 1000,
                ..Default::default()
            },
        );
        t.push(0.0, a);
        t.push(1.0, b);
        t.push(2.0, c);
        assert_eq!(t.delta("vda", 0.5, 0.9).map(|d| d.write_bytes), Some(200));
        assert_eq!(t.delta("vda", 1.0, 2.0).map(|d| d.write_bytes), Some(700));
        assert_eq!(t.total("vda").map(|d| d.write_bytes), Some(900));
        assert_eq!(t.delta("sdz", 0.0, 1.0), None);
    }

    #[test]
    fn names_the_root_device() {
        let Ok(md) = std::fs::metadata("/") else {
            return;
        };
        use std::os::unix::fs::MetadataExt;
        match device_name(md.dev()) {
            Some(n) => assert!(!n.is_empty()),
            None => eprintln!("skipped: / has no block device here"),
        }
    }
}
