//! The kernel's paths as candor's messages, help and evidence name them, written once.
//! [`crate::Kernel`] reads the same paths below its root; elsewhere a message that names a
//! kernel file takes its path from here.

use std::fmt::Display;

/// The process file system.
pub const PROC: &str = "/proc";
/// The kernel's objects (devices, their attributes).
pub const SYS: &str = "/sys";
/// What every path below /proc begins with.
pub const PROC_DIR: &str = "/proc/";
/// What every path below /sys begins with.
pub const SYS_DIR: &str = "/sys/";
/// Writing "3" drops the page cache, dentries and inodes (root only).
pub const DROP_CACHES: &str = "/proc/sys/vm/drop_caches";
/// This boot's id: runs that share it share the monotonic clock.
pub const BOOT_ID: &str = "/proc/sys/kernel/random/boot_id";
pub const HOSTNAME: &str = "/proc/sys/kernel/hostname";
pub const OS_RELEASE: &str = "/proc/sys/kernel/osrelease";
/// Every block device's I/O counters.
pub const DISKSTATS: &str = "/proc/diskstats";
pub const MEMINFO: &str = "/proc/meminfo";
pub const VMSTAT: &str = "/proc/vmstat";
/// Total I/O stall ("some" and "full").
pub const PRESSURE_IO: &str = "/proc/pressure/io";
pub const CPUINFO: &str = "/proc/cpuinfo";
pub const SWAPS: &str = "/proc/swaps";
pub const MOUNTS: &str = "/proc/mounts";
/// Every mount this process sees.
pub const SELF_MOUNTINFO: &str = "/proc/self/mountinfo";
/// This process's I/O counters (rchar, wchar, syscr, syscw, read_bytes, write_bytes).
pub const SELF_IO: &str = "/proc/self/io";
/// Any process's I/O counters, as messages name them.
pub const PID_IO: &str = "/proc/<pid>/io";
/// The kernel's type information, which the eBPF programs need.
pub const BTF_VMLINUX: &str = "/sys/kernel/btf/vmlinux";
/// Where tracefs is mounted, or mounted by candor when it is mounted nowhere.
pub const TRACEFS: &str = "/sys/kernel/tracing";
/// tracefs below debugfs, where older systems mount it.
pub const TRACEFS_DEBUG: &str = "/sys/kernel/debug/tracing";

/// A file of a process ("maps", "fd", "task/12/io"): `/proc/PID/FILE`.
pub fn pid(pid: impl Display, file: &str) -> String {
    format!("{PROC}/{pid}/{file}")
}

/// A block device's sysfs directory by number: `/sys/dev/block/MAJ:MIN`.
pub fn block(major: u32, minor: u32) -> String {
    format!("{SYS}/dev/block/{major}:{minor}")
}

/// A path below /proc or /sys ("/proc/x.json", "/sys/block"), for tests and messages.
pub fn under_proc(rest: &str) -> String {
    format!("{PROC}/{rest}")
}

/// A path below /sys.
pub fn under_sys(rest: &str) -> String {
    format!("{SYS}/{rest}")
}

#[cfg(test)]
mod tests {
    #[test]
    fn paths_are_the_kernels() {
        assert_eq!(super::pid(7, "maps"), "/proc/7/maps");
        assert_eq!(super::pid("self", "fd"), "/proc/self/fd");
        assert_eq!(super::block(7, 3), "/sys/dev/block/7:3");
        assert_eq!(super::under_proc("x.json"), "/proc/x.json");
        assert_eq!(super::under_sys("block"), "/sys/block");
        assert!(super::SELF_IO.starts_with(super::PROC_DIR));
        assert_eq!(super::PROC_DIR, format!("{}/", super::PROC));
        assert_eq!(super::SYS_DIR, format!("{}/", super::SYS));
    }
}
