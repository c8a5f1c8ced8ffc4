//! The kernel's files under /proc and /sys, read in one place for every crate: [`Kernel`]
//! reads them below a root ("/", or a captured tree in tests) with errors that name the
//! path — the mount tables, swaps, cpuinfo, boot id, meminfo, vmstat, io pressure,
//! diskstats, a process's stat, io, status, fds, maps and threads, block devices' sysfs
//! attributes (size, queue, holders, partitions, a loop device's backing file), cpu0's
//! caches, and the one write, drop_caches. Each file has a pure parser (text in, values
//! out, unit-tested on text captured from a real machine). The `read_*` functions are the
//! running system's sampled counters as `Option`s, for the samplers. Nothing here depends
//! on another candor crate.

mod diskstats;
mod io;
mod kernel;
mod mem;
mod mounts;
pub mod paths;
mod pid;

pub use diskstats::{parse_diskstats, read_diskstats, DiskStat, SECTOR_BYTES};
pub use io::{
    others_delta, read_others_io, read_pid_io, read_self_io, read_thread_io, OthersIo, PidIo,
};
pub use kernel::{
    cache_size, parse_cpuinfo, parse_inflight, BlockDev, Cache, CpuInfo, Error, Kernel, Pid,
    PidStat, Result,
};
pub use mem::{
    parse_meminfo, parse_pressure, parse_vmstat, read_meminfo, read_pressure, read_vmstat, MemInfo,
    VMSTAT_KEYS,
};
pub use mounts::{
    mount_for, parse_mountinfo, parse_mounts, parse_swaps, unescape, Mount, MountEntry,
};
pub use pid::{parse_stat, FdInfo};

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes this process has read from /proc through these readers. Reading /proc raises the
/// reader's own rchar; the witness takes its reads back out (see its `Sample`).
static READ_BYTES: AtomicU64 = AtomicU64::new(0);

/// CLOCK_MONOTONIC now, in nanoseconds (through the vDSO: no system call): the clock of
/// candor's timestamps and of the kernel's eBPF ones (`bpf_ktime_get_ns`).
#[inline]
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec to write into; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Whether `path` (absolute) is one of the kernel's files under /proc or /sys, which hold
/// no stored data.
pub fn is_kernel_file(path: &str) -> bool {
    path.starts_with(paths::PROC_DIR) || path.starts_with(paths::SYS_DIR)
}

/// How many bytes this process has read from /proc through these readers so far.
pub fn bytes_read() -> u64 {
    READ_BYTES.load(Ordering::Relaxed)
}

/// Counts `n` bytes read from /proc in [`bytes_read`].
fn count_read(n: usize) {
    READ_BYTES.fetch_add(n as u64, Ordering::Relaxed);
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

#[cfg(test)]
mod tests {
    #[test]
    fn kernel_files_are_those_of_proc_and_sys() {
        assert!(super::is_kernel_file("/proc/self/maps"));
        assert!(super::is_kernel_file("/sys/block/vda/size"));
        assert!(!super::is_kernel_file("/procedures/a"));
        assert!(!super::is_kernel_file("/var/tmp/sys/x"));
        assert!(!super::is_kernel_file("/proc"));
    }
}
