//! Memory and pressure: /proc/meminfo, /proc/vmstat and /proc/pressure/io.

use std::collections::BTreeMap;

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
    let kv = crate::colon_values(text);
    let kb = |k: &str| kv.get(k).map(|v| v * 1024);
    Some(MemInfo {
        total: kb("MemTotal")?,
        available: kb("MemAvailable").unwrap_or(0),
        cached: kb("Cached").unwrap_or(0),
        dirty: kb("Dirty").unwrap_or(0),
        writeback: kb("Writeback").unwrap_or(0),
    })
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

pub fn read_meminfo() -> Option<MemInfo> {
    crate::Kernel::system().meminfo().ok()
}

pub fn read_vmstat() -> BTreeMap<String, i64> {
    crate::Kernel::system().vmstat().unwrap_or_default()
}

pub fn read_pressure() -> Option<[u64; 2]> {
    crate::Kernel::system().pressure_io().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

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
