//! Readers of the kernel's text counters: /proc/diskstats, /proc/self/io, /proc/meminfo,
//! /proc/vmstat and /proc/pressure/io. Each file has a pure parser (text in, numbers out,
//! unit-tested on text captured from a real machine) and a thin reader around it.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes per diskstats sector: the kernel always counts 512-byte units there, whatever the
/// device's logical block size.
pub const SECTOR_BYTES: u64 = 512;

/// One line of /proc/diskstats (the fields the witness uses).
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
        self.read_sectors * SECTOR_BYTES
    }
    pub fn write_bytes(&self) -> u64 {
        self.write_sectors * SECTOR_BYTES
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

/// /proc/self/io: what this process (all its threads, living and exited) moved.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SelfIo {
    /// Bytes passed to read-like syscalls, whatever served them.
    pub rchar: u64,
    pub wchar: u64,
    pub syscr: u64,
    pub syscw: u64,
    /// Bytes of block-layer reads this process submitted (cache misses, readahead, O_DIRECT).
    pub read_bytes: u64,
    /// Bytes this process dirtied or wrote directly (counted when dirtied, not when flushed).
    pub write_bytes: u64,
    /// Dirty bytes this process discarded before writeback (truncate, unlink).
    pub cancelled_write_bytes: u64,
}

impl SelfIo {
    pub fn delta(&self, e: &SelfIo) -> SelfIo {
        SelfIo {
            rchar: self.rchar.saturating_sub(e.rchar),
            wchar: self.wchar.saturating_sub(e.wchar),
            syscr: self.syscr.saturating_sub(e.syscr),
            syscw: self.syscw.saturating_sub(e.syscw),
            read_bytes: self.read_bytes.saturating_sub(e.read_bytes),
            write_bytes: self.write_bytes.saturating_sub(e.write_bytes),
            cancelled_write_bytes: self
                .cancelled_write_bytes
                .saturating_sub(e.cancelled_write_bytes),
        }
    }
}

/// Parses /proc/<pid>/io; None when a required field is missing.
pub fn parse_self_io(text: &str) -> Option<SelfIo> {
    let kv = parse_colon_values(text);
    let g = |k: &str| kv.get(k).copied();
    Some(SelfIo {
        rchar: g("rchar")?,
        wchar: g("wchar")?,
        syscr: g("syscr").unwrap_or(0),
        syscw: g("syscw").unwrap_or(0),
        read_bytes: g("read_bytes")?,
        write_bytes: g("write_bytes")?,
        cancelled_write_bytes: g("cancelled_write_bytes").unwrap_or(0),
    })
}

/// The /proc/meminfo lines the witness uses, in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemInfo {
    pub total: u64,
    pub available: u64,
    pub cached: u64,
    pub dirty: u64,
    pub writeback: u64,
}

/// Parses /proc/meminfo ("Key:   123 kB" lines); None without MemTotal.
pub fn parse_meminfo(text: &str) -> Option<MemInfo> {
    let kv = parse_colon_values(text);
    let kb = |k: &str| kv.get(k).map(|v| v * 1024);
    Some(MemInfo {
        total: kb("MemTotal")?,
        available: kb("MemAvailable").unwrap_or(0),
        cached: kb("Cached").unwrap_or(0),
        dirty: kb("Dirty").unwrap_or(0),
        writeback: kb("Writeback").unwrap_or(0),
    })
}

/// "key: number [unit]" lines into a map (the unit is left to the caller).
fn parse_colon_values(text: &str) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for line in text.lines() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        if let Some(Ok(n)) = v.split_whitespace().next().map(str::parse::<u64>) {
            m.insert(k.trim().to_string(), n);
        }
    }
    m
}

/// The /proc/vmstat counters the witness records (deltas per test).
pub const VMSTAT_KEYS: [&str; 5] = [
    "pgpgin",
    "pgpgout",
    "nr_dirtied",
    "nr_written",
    "workingset_refault_file",
];

/// Parses /proc/vmstat ("name value" lines), keeping only [`VMSTAT_KEYS`].
pub fn parse_vmstat(text: &str) -> BTreeMap<String, i64> {
    let mut m = BTreeMap::new();
    for line in text.lines() {
        let mut it = line.split_whitespace();
        if let (Some(k), Some(v)) = (it.next(), it.next()) {
            if VMSTAT_KEYS.contains(&k) {
                if let Ok(n) = v.parse::<i64>() {
                    m.insert(k.to_string(), n);
                }
            }
        }
    }
    m
}

/// Total stall time from /proc/pressure/io, microseconds: [some, full].
pub fn parse_pressure(text: &str) -> Option<[u64; 2]> {
    let mut some = None;
    let mut full = None;
    for line in text.lines() {
        let mut it = line.split_whitespace();
        let kind = it.next();
        let total = it
            .find_map(|f| f.strip_prefix("total="))
            .and_then(|v| v.parse::<u64>().ok());
        match kind {
            Some("some") => some = total,
            Some("full") => full = total,
            _ => {}
        }
    }
    // Older kernels have no "full" line for io pressure at the system level.
    Some([some?, full.unwrap_or(0)])
}

/// Bytes this process has read from /proc through these readers. The witness's own reads
/// raise candor's rchar; the figures subtract them (see `Sample::witness_read`).
static WITNESS_READ_BYTES: AtomicU64 = AtomicU64::new(0);

/// How many bytes the witness has read from /proc so far in this process.
pub fn witness_read_bytes() -> u64 {
    WITNESS_READ_BYTES.load(Ordering::Relaxed)
}

fn read(path: &str) -> Option<String> {
    let t = std::fs::read_to_string(path).ok()?;
    WITNESS_READ_BYTES.fetch_add(t.len() as u64, Ordering::Relaxed);
    Some(t)
}

/// Block-layer bytes (read + written, less cancelled writes) of every other process, by pid:
/// what lets the witness tell a filesystem's own extra traffic from another process's.
/// Without root, other users' processes are hidden, and a partial sum could not clear the
/// device of foreign traffic: None as soon as one cannot be read. As root, the few processes
/// the kernel still hides (a sandbox's init, processes of other PID namespaces' owners) are
/// left out, a limit docs/witness.md states.
pub fn read_others_io(own_pid: u32) -> Option<BTreeMap<u32, [u64; 2]>> {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        if pid == own_pid || is_kernel_thread(pid) {
            continue;
        }
        match std::fs::read_to_string(format!("/proc/{pid}/io")) {
            Ok(t) => {
                WITNESS_READ_BYTES.fetch_add(t.len() as u64, Ordering::Relaxed);
                if let Some(io) = parse_self_io(&t) {
                    out.insert(
                        pid,
                        [
                            io.read_bytes,
                            io.write_bytes.saturating_sub(io.cancelled_write_bytes),
                        ],
                    );
                }
            }
            // The process ended between the listing and the read: nothing to count.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {}
            Err(_) if root => {}
            Err(_) => return None,
        }
    }
    Some(out)
}

/// Kernel threads (kthreadd and its children) work for someone else: a loop device's worker
/// writing the backing file, writeback. The process that caused the work already counted it
/// when it dirtied or submitted, so counting the thread too would count it twice.
fn is_kernel_thread(pid: u32) -> bool {
    if pid == 2 {
        return true;
    }
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    parse_stat_ppid(&stat) == Some(2)
}

/// The parent pid from /proc/<pid>/stat (the field after the parenthesised command name,
/// which may itself hold spaces and parentheses).
pub fn parse_stat_ppid(stat: &str) -> Option<u32> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut f = rest.split_whitespace();
    f.next()?; // state
    f.next()?.parse().ok()
}

/// What other processes moved between two readings of [`read_others_io`]: a process absent
/// from the first reading started in between, so all its bytes count.
pub fn others_delta(a: &BTreeMap<u32, [u64; 2]>, b: &BTreeMap<u32, [u64; 2]>) -> [u64; 2] {
    let mut d = [0u64; 2];
    for (pid, v) in b {
        let before = a.get(pid).copied().unwrap_or([0, 0]);
        // A smaller value means the pid was reused by a new process.
        let grown = |i: usize| {
            if v[i] >= before[i] {
                v[i] - before[i]
            } else {
                v[i]
            }
        };
        d[0] += grown(0);
        d[1] += grown(1);
    }
    d
}

pub fn read_diskstats() -> Option<Vec<DiskStat>> {
    read("/proc/diskstats").map(|t| parse_diskstats(&t))
}
pub fn read_self_io() -> Option<SelfIo> {
    read("/proc/self/io").and_then(|t| parse_self_io(&t))
}
pub fn read_meminfo() -> Option<MemInfo> {
    read("/proc/meminfo").and_then(|t| parse_meminfo(&t))
}
pub fn read_vmstat() -> BTreeMap<String, i64> {
    read("/proc/vmstat")
        .map(|t| parse_vmstat(&t))
        .unwrap_or_default()
}
pub fn read_pressure() -> Option<[u64; 2]> {
    read("/proc/pressure/io").and_then(|t| parse_pressure(&t))
}

#[cfg(test)]
mod others_tests {
    use super::*;

    #[test]
    fn stat_parent_survives_odd_command_names() {
        assert_eq!(
            parse_stat_ppid("123 (kworker/0:1-events) I 2 0 0 0"),
            Some(2)
        );
        assert_eq!(parse_stat_ppid("77 (a) b) (c) S 1 77 77 0"), Some(1));
        assert_eq!(parse_stat_ppid("garbage"), None);
    }

    #[test]
    fn others_delta_counts_growth_and_newcomers() {
        let a: BTreeMap<u32, [u64; 2]> = [(1, [10, 20]), (2, [5, 5])].into_iter().collect();
        let b: BTreeMap<u32, [u64; 2]> = [(1, [15, 20]), (2, [5, 9]), (3, [100, 7])]
            .into_iter()
            .collect();
        assert_eq!(others_delta(&a, &b), [5 + 100, 4 + 7]);
        // pid reuse: a smaller value is a new process
        let c: BTreeMap<u32, [u64; 2]> = [(1, [3, 0])].into_iter().collect();
        assert_eq!(others_delta(&a, &c), [3, 0]);
    }

    #[test]
    fn others_io_reads_as_root_and_excludes_self() {
        let own = std::process::id();
        match read_others_io(own) {
            Some(m) => {
                assert!(!m.contains_key(&own));
                assert!(!m.is_empty(), "other processes are seen");
            }
            None => eprintln!(
                "skipped: other processes' /proc/<pid>/io is not readable here (needs root)"
            ),
        }
    }
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
    fn diskstats_delta_and_sum() {
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
    }

    #[test]
    fn self_io_captured_here() {
        let io = parse_self_io(include_str!("../tests/data/self_io.txt")).expect("parse");
        assert_eq!(io.rchar, 6976);
        assert_eq!(io.syscr, 10);
        assert_eq!(io.read_bytes, 0);
        assert_eq!(io.cancelled_write_bytes, 4096);
        let later = SelfIo {
            rchar: 10_000,
            read_bytes: 4096,
            ..io
        };
        assert_eq!(later.delta(&io).rchar, 10_000 - 6976);
        assert_eq!(later.delta(&io).read_bytes, 4096);
        assert!(parse_self_io("rchar: 1\n").is_none());
    }

    #[test]
    fn meminfo_captured_here() {
        let m = parse_meminfo(include_str!("../tests/data/meminfo.txt")).expect("parse");
        assert_eq!(m.total, 24730032 * 1024);
        assert_eq!(m.cached, 3434748 * 1024);
        assert_eq!(m.dirty, 157200 * 1024);
        assert_eq!(m.writeback, 0);
        assert!(parse_meminfo("Dirty: 4 kB\n").is_none());
    }

    #[test]
    fn vmstat_captured_here() {
        let v = parse_vmstat(include_str!("../tests/data/vmstat.txt"));
        assert_eq!(v.len(), 5);
        assert_eq!(v["pgpgin"], 2113931);
        assert_eq!(v["nr_dirtied"], 758908);
        assert_eq!(v["workingset_refault_file"], 0);
        // "workingset_refault_file" must not be confused with similarly named counters.
        assert!(!v.contains_key("workingset_refault_anon"));
    }

    #[test]
    fn pressure_captured_here() {
        let p = parse_pressure(include_str!("../tests/data/pressure_io.txt")).expect("parse");
        assert_eq!(p, [10708335, 10546440]);
        assert_eq!(
            parse_pressure("some avg10=0.00 avg60=0.00 avg300=0.00 total=42\n"),
            Some([42, 0])
        );
        assert_eq!(parse_pressure(""), None);
    }
}
