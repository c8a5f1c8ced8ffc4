//! /proc/diskstats: every block device's cumulative counters.

/// Bytes per diskstats sector: the kernel always counts 512-byte units there, whatever the
/// device's logical block size.
pub const SECTOR_BYTES: u64 = 512;

/// One line of /proc/diskstats.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DiskStat {
    pub major: u32,
    pub minor: u32,
    pub name: String,
    pub read_ios: u64,
    pub read_sectors: u64,
    pub read_ms: u64,
    pub write_ios: u64,
    pub write_sectors: u64,
    pub write_ms: u64,
    pub in_flight: u64,
    pub io_ticks_ms: u64,
    /// Discard and flush fields appear on kernels 4.18+ and 5.5+; zero when absent.
    pub discard_ios: u64,
    pub discard_sectors: u64,
    pub discard_ms: u64,
    pub flush_ios: u64,
    pub flush_ms: u64,
}

impl DiskStat {
    pub fn read_bytes(&self) -> u64 {
        self.read_sectors.saturating_mul(SECTOR_BYTES)
    }
    pub fn write_bytes(&self) -> u64 {
        self.write_sectors.saturating_mul(SECTOR_BYTES)
    }

    /// Counter growth from `earlier` to `self`. Counters that went backwards (a device
    /// removed and re-added under the same name) give zero rather than a huge number.
    pub fn delta(&self, earlier: &DiskStat) -> DiskStat {
        let d = |a: u64, b: u64| a.saturating_sub(b);
        DiskStat {
            major: self.major,
            minor: self.minor,
            name: self.name.clone(),
            read_ios: d(self.read_ios, earlier.read_ios),
            read_sectors: d(self.read_sectors, earlier.read_sectors),
            read_ms: d(self.read_ms, earlier.read_ms),
            write_ios: d(self.write_ios, earlier.write_ios),
            write_sectors: d(self.write_sectors, earlier.write_sectors),
            write_ms: d(self.write_ms, earlier.write_ms),
            in_flight: self.in_flight,
            io_ticks_ms: d(self.io_ticks_ms, earlier.io_ticks_ms),
            discard_ios: d(self.discard_ios, earlier.discard_ios),
            discard_sectors: d(self.discard_sectors, earlier.discard_sectors),
            discard_ms: d(self.discard_ms, earlier.discard_ms),
            flush_ios: d(self.flush_ios, earlier.flush_ios),
            flush_ms: d(self.flush_ms, earlier.flush_ms),
        }
    }

    /// Field-wise sum, for a filesystem that spans several devices.
    pub fn add(&mut self, o: &DiskStat) {
        self.read_ios += o.read_ios;
        self.read_sectors += o.read_sectors;
        self.read_ms += o.read_ms;
        self.write_ios += o.write_ios;
        self.write_sectors += o.write_sectors;
        self.write_ms += o.write_ms;
        self.in_flight += o.in_flight;
        // Busy time of several devices is not additive: keep the busiest.
        self.io_ticks_ms = self.io_ticks_ms.max(o.io_ticks_ms);
        self.discard_ios += o.discard_ios;
        self.discard_sectors += o.discard_sectors;
        self.discard_ms += o.discard_ms;
        self.flush_ios += o.flush_ios;
        self.flush_ms += o.flush_ms;
    }

    /// Average device time per read or write request, microseconds (None without
    /// requests).
    pub fn avg_latency_us(&self) -> Option<f64> {
        let ios = self.read_ios + self.write_ios;
        (ios > 0).then(|| (self.read_ms + self.write_ms) as f64 * 1000.0 / ios as f64)
    }
}

/// Parses /proc/diskstats. Lines that do not have at least the 14 classic fields are skipped.
pub fn parse_diskstats(text: &str) -> Vec<DiskStat> {
    let mut out = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 14 {
            continue;
        }
        let n = |i: usize| -> Option<u64> { f.get(i).and_then(|s| s.parse().ok()) };
        let z = |i: usize| n(i).unwrap_or(0);
        let (Some(major), Some(minor)) = (f[0].parse().ok(), f[1].parse().ok()) else {
            continue;
        };
        let (Some(read_ios), Some(read_sectors), Some(write_ios), Some(write_sectors)) =
            (n(3), n(5), n(7), n(9))
        else {
            continue;
        };
        out.push(DiskStat {
            major,
            minor,
            name: f[2].to_string(),
            read_ios,
            read_sectors,
            read_ms: z(6),
            write_ios,
            write_sectors,
            write_ms: z(10),
            in_flight: z(11),
            io_ticks_ms: z(12),
            discard_ios: z(14),
            discard_sectors: z(16),
            discard_ms: z(17),
            flush_ios: z(18),
            flush_ms: z(19),
        });
    }
    out
}

pub fn read_diskstats() -> Option<Vec<DiskStat>> {
    crate::Kernel::system().diskstats().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const DISKSTATS: &str = include_str!("../tests/data/diskstats.txt");

    #[test]
    fn diskstats_captured_here() {
        let d = parse_diskstats(DISKSTATS);
        let vda = d.iter().find(|s| s.name == "vda").expect("vda line");
        assert_eq!((vda.major, vda.minor), (254, 0));
        assert_eq!(vda.read_ios, 190595);
        assert_eq!(vda.read_sectors, 4222266);
        assert_eq!(vda.read_bytes(), 4222266 * 512);
        assert_eq!(vda.write_ios, 39701);
        assert_eq!(vda.write_sectors, 5345304);
        assert_eq!(vda.io_ticks_ms, 18016);
        assert_eq!(vda.flush_ios, 5194);
        assert_eq!(d.iter().filter(|s| s.name.starts_with("loop")).count(), 8);
        let loop0 = d.iter().find(|s| s.name == "loop0").expect("loop0");
        assert_eq!(loop0.write_sectors, 18024);
    }

    #[test]
    fn diskstats_partitions_dm_and_old_kernels() {
        // Hand-made lines in the kernel's layout: a disk and its partitions (full stats),
        // a dm device, an md array, a 14-field line from a pre-4.18 kernel and a partition
        // line of the short layout kernels before 2.6.25 used.
        let text = "\
   8       0 sda 1000 10 80000 500 2000 20 160000 900 0 1200 1400 0 0 0 0 30 40
   8       1 sda1 600 5 48000 300 1500 10 120000 700 0 800 1000 0 0 0 0 0 0
   8       2 sda2 400 5 32000 200 500 10 40000 200 0 400 400 0 0 0 0 0 0
 253       1 dm-1 390 0 31200 210 480 0 38400 250 2 420 460 0 0 0 0 0 0
   9     127 md127 12 0 96 1 7 0 56 0 0 0 0 0 0 0 0 0 0
   3       0 hda 446216 784926 9550688 4382310 424847 312726 5922052 19310380 0 3376340 23705160
   3       1 hda1 35486 38030 38030 38030
";
        let d = parse_diskstats(text);
        assert_eq!(
            d.len(),
            6,
            "the 7-field partition line (pre-2.6.25 layout) is skipped"
        );
        let hda = d.iter().find(|s| s.name == "hda").expect("hda");
        assert_eq!((hda.io_ticks_ms, hda.flush_ios), (3376340, 0));
        let sda1 = &d[1];
        assert_eq!(sda1.name, "sda1");
        assert_eq!(sda1.write_bytes(), 120000 * 512);
        let dm = d.iter().find(|s| s.name == "dm-1").expect("dm-1");
        assert_eq!(dm.in_flight, 2);
        assert_eq!(dm.read_ms, 210);
        let md = d.iter().find(|s| s.name == "md127").expect("md127");
        assert_eq!(md.write_ios, 7);
    }

    #[test]
    fn diskstats_delta_sum_and_latency() {
        let a = parse_diskstats(" 7 0 loop0 10 0 80 1 20 0 160 2 0 3 4 0 0 0 0 0 0");
        let b = parse_diskstats(" 7 0 loop0 15 0 120 2 30 0 360 6 1 9 12 0 0 0 0 1 1");
        let d = b[0].delta(&a[0]);
        assert_eq!(d.read_ios, 5);
        assert_eq!(d.read_bytes(), 40 * 512);
        assert_eq!(d.write_bytes(), 200 * 512);
        assert_eq!(d.io_ticks_ms, 6);
        // A counter that went backwards (device re-created) gives zero, not wrap-around.
        assert_eq!(a[0].delta(&b[0]).read_ios, 0);
        let mut s = d.clone();
        s.add(&d);
        assert_eq!(s.write_sectors, 400);
        assert_eq!(s.io_ticks_ms, 6);
        // 5 ms over 15 requests.
        assert_eq!(d.avg_latency_us().map(|l| l.round()), Some(333.0));
        assert_eq!(DiskStat::default().avg_latency_us(), None);
    }
}
