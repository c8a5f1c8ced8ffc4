//! The kernel's text counters under /proc, read in one place for every crate that reads
//! them (the witness of `candor run`, the audit's /proc sampling): /proc/diskstats, a
//! process's io, stat and fdinfo, /proc/meminfo, /proc/vmstat and /proc/pressure/io.
//! Each file has a pure parser (text in, numbers out, unit-tested on text captured from a
//! real machine) and a thin reader around it. Nothing here depends on another candor
//! crate.

mod diskstats;
mod io;
mod mem;
mod pid;

pub use diskstats::{parse_diskstats, read_diskstats, DiskStat, SECTOR_BYTES};
pub use io::{others_delta, read_others_io, read_pid_io, read_self_io, OthersIo, PidIo};
pub use mem::{
    parse_meminfo, parse_pressure, parse_vmstat, read_meminfo, read_pressure, read_vmstat, MemInfo,
    VMSTAT_KEYS,
};
pub use pid::{parse_stat, FdInfo};

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes this process has read from /proc through these readers. Reading /proc raises the
/// reader's own rchar; the witness takes its reads back out (see its `Sample`).
static READ_BYTES: AtomicU64 = AtomicU64::new(0);

/// How many bytes this process has read from /proc through these readers so far.
pub fn bytes_read() -> u64 {
    READ_BYTES.load(Ordering::Relaxed)
}

/// Reads a /proc file whole, counting its bytes in [`bytes_read`].
fn read(path: &str) -> std::io::Result<String> {
    let t = std::fs::read_to_string(path)?;
    READ_BYTES.fetch_add(t.len() as u64, Ordering::Relaxed);
    Ok(t)
}

/// "key: number [unit]" lines into a map (the unit is left to the caller; lines without a
/// number are skipped).
fn colon_values(text: &str) -> BTreeMap<&str, u64> {
    let mut m = BTreeMap::new();
    for line in text.lines() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        if let Some(Ok(n)) = v.split_whitespace().next().map(str::parse::<u64>) {
            m.insert(k.trim(), n);
        }
    }
    m
}
