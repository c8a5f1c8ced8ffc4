//! The values of the BPF maps and ring buffer exactly as the kernel writes them: `#[repr(C)]`
//! mirrors of the structs in `bpf/candor.bpf.c` (change both together), plus the pure
//! arithmetic that merges per-CPU copies. Nothing here touches the kernel.

/// Histogram sizes shared with the BPF program.
pub const LL_BUCKETS: usize = 256;
pub const L2_BUCKETS: usize = 64;
pub const PATH_MAX_BYTES: usize = 256;

/// Syscall slots, in the order of the BPF program's `SLOT_*` numbers.
pub const SLOT_NAMES: [&str; 30] = [
    "read",
    "write",
    "pread64",
    "pwrite64",
    "readv",
    "writev",
    "preadv",
    "pwritev",
    "preadv2",
    "pwritev2",
    "lseek",
    "fsync",
    "fdatasync",
    "openat",
    "close",
    "io_uring_enter",
    "page_fault",
    "mkdir",
    "rmdir",
    "unlink",
    "stat",
    "rename",
    "create",
    "getdents64",
    "copy_file_range",
    "sendfile",
    "splice",
    "io_submit",
    "io_getevents",
    "io_uring_setup",
];
pub const SLOT_PAGE_FAULT: usize = 16;
/// The first of the metadata slots (counted and timed, never a file phase): mkdir and
/// mkdirat; rmdir and unlinkat with AT_REMOVEDIR; unlink and unlinkat; stat, lstat,
/// newfstatat and statx; rename, renameat and renameat2; "create": openat with O_CREAT
/// (counted when it is called, whatever its result), creat, mknod and mknodat. After them,
/// calls that return bytes without a file phase (their `bytes` are what they returned):
/// getdents64 (and getdents), copy_file_range, sendfile, splice. Last, the calls of
/// asynchronous I/O, counted and timed only (their `bytes` stay 0): io_submit,
/// io_getevents (and io_pgetevents), io_uring_setup.
pub const SLOT_FIRST_META: usize = 17;

/// `diag` map indexes.
pub const DIAG_PHASES_LOST: u32 = 0;
pub const DIAG_STARTS_FULL: u32 = 1;
pub const DIAG_REQS_FULL: u32 = 2;
pub const DIAG_FDS_FULL: u32 = 3;
/// Not a loss: completions recovered when their request was used again.
pub const DIAG_COMPLETIONS_RECOVERED: u32 = 4;
/// Not a loss: phases that found the ring buffer full and were merged per process and
/// file in the `lost_phases` table, which user space drains with the ring buffer.
pub const DIAG_PHASES_MERGED: u32 = 5;
/// Block requests of the tracked set not counted per file: the `blk_files` table was full.
pub const DIAG_BLK_FILES_FULL: u32 = 6;
/// Processes of the set that ended: their files left open are collected when it moves.
pub const DIAG_SET_EXITS: u32 = 7;
pub const NDIAG: u32 = 8;

/// Phase flags.
pub const PHASE_OPENED: u32 = 1;
pub const PHASE_CLOSED: u32 = 2;
/// The file was in O_DIRECT mode when the phase began.
pub const PHASE_DIRECT: u32 = 4;
/// The descriptor is a block device (the phase's dev is the device itself).
pub const PHASE_BLKDEV: u32 = 8;
/// Several phases of one process on one file merged into one record (`merged` of them).
pub const PHASE_MERGED: u32 = 16;

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SysStat {
    pub count: u64,
    pub bytes: u64,
    pub time_ns: u64,
    pub errors: u64,
    pub lat: [u64; LL_BUCKETS],
}

impl Default for SysStat {
    fn default() -> Self {
        SysStat {
            count: 0,
            bytes: 0,
            time_ns: 0,
            errors: 0,
            lat: [0; LL_BUCKETS],
        }
    }
}

impl SysStat {
    /// Adds another CPU's copy (per-CPU maps hold one value per CPU).
    pub fn merge(&mut self, o: &SysStat) {
        self.count += o.count;
        self.bytes += o.bytes;
        self.time_ns += o.time_ns;
        self.errors += o.errors;
        add_into(&mut self.lat, &o.lat);
    }
}

/// A thread's syscall slot (`starts` map): what call it is in, since when (0: idle).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SysStart {
    pub ts: u64,
    pub arg: u64,
    pub slot: u32,
    pub fd: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct L2Hist {
    pub b: [u64; L2_BUCKETS],
}

impl Default for L2Hist {
    fn default() -> Self {
        L2Hist { b: [0; L2_BUCKETS] }
    }
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FdKey {
    pub tgid: u32,
    pub fd: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawPhase {
    pub tgid: u32,
    pub fd: u32,
    pub dev: u32,
    pub flags: u32,
    pub ino: u64,
    pub open_ns: u64,
    pub first_ns: u64,
    pub last_ns: u64,
    pub close_ns: u64,
    pub rbytes: u64,
    pub wbytes: u64,
    pub rcalls: u64,
    pub wcalls: u64,
    pub io_ns: u64,
    pub fsyncs: u64,
    pub fsync_ns: u64,
    pub lseeks: u64,
    pub pos: u64,
    pub size_hist: [u32; L2_BUCKETS],
    pub off_hist: [u32; L2_BUCKETS],
    pub path: [u8; PATH_MAX_BYTES],
    /// Nanoseconds inside the read calls and inside the write calls (`io_ns` is their sum).
    pub rio_ns: u64,
    pub wio_ns: u64,
    /// Phases this record stands for (0 or 1: one).
    pub merged: u64,
}

/// Key of the `lost_phases` table.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LostKey {
    pub tgid: u32,
    pub dev: u32,
    pub ino: u64,
}

/// Per process (`tree_io` table): the read and write calls no phase holds, by cause, and
/// the kernel's own I/O counters of its threads (task->ioac), summed as each exited.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct TreeIo {
    /// On descriptors that are not regular files or block devices (pipes, sockets,
    /// terminals, /dev/null).
    pub other_rbytes: u64,
    pub other_wbytes: u64,
    pub other_rcalls: u64,
    pub other_wcalls: u64,
    /// On files whose phase could not be kept (a table full).
    pub full_rbytes: u64,
    pub full_wbytes: u64,
    pub full_rcalls: u64,
    pub full_wcalls: u64,
    /// task->ioac at each thread's exit, summed: a process's io counters without reaped children.
    pub rchar: u64,
    pub wchar: u64,
    pub syscr: u64,
    pub syscw: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub threads_exited: u64,
}

impl Default for RawPhase {
    fn default() -> Self {
        RawPhase {
            tgid: 0,
            fd: 0,
            dev: 0,
            flags: 0,
            ino: 0,
            open_ns: 0,
            first_ns: 0,
            last_ns: 0,
            close_ns: 0,
            rbytes: 0,
            wbytes: 0,
            rcalls: 0,
            wcalls: 0,
            io_ns: 0,
            fsyncs: 0,
            fsync_ns: 0,
            lseeks: 0,
            pos: 0,
            size_hist: [0; L2_BUCKETS],
            off_hist: [0; L2_BUCKETS],
            path: [0; PATH_MAX_BYTES],
            rio_ns: 0,
            wio_ns: 0,
            merged: 0,
        }
    }
}

impl RawPhase {
    /// Reads a record from the ring buffer; None when it is too short.
    pub fn from_bytes(b: &[u8]) -> Option<RawPhase> {
        if b.len() < std::mem::size_of::<RawPhase>() {
            return None;
        }
        // SAFETY: RawPhase is plain old data (integers and arrays only, every bit pattern
        // valid) and `b` holds at least size_of::<RawPhase>() bytes; read_unaligned copes
        // with any alignment.
        Some(unsafe { std::ptr::read_unaligned(b.as_ptr() as *const RawPhase) })
    }

    /// The I/O counters this phase adds to its file's (`files` table) when it closes: the
    /// program folds a phase into its file only then. Cache misses are counted per file,
    /// never per phase, so it has none.
    pub fn file_stat(&self) -> FileStat {
        FileStat {
            rcalls: self.rcalls,
            wcalls: self.wcalls,
            rbytes: self.rbytes,
            wbytes: self.wbytes,
            io_ns: self.io_ns,
            misses: 0,
            fsyncs: self.fsyncs,
            fsync_ns: self.fsync_ns,
            closes: 0,
        }
    }
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FileKey {
    pub dev: u32,
    pub pad: u32,
    pub ino: u64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FileStat {
    pub rcalls: u64,
    pub wcalls: u64,
    pub rbytes: u64,
    pub wbytes: u64,
    pub io_ns: u64,
    pub misses: u64,
    pub fsyncs: u64,
    pub fsync_ns: u64,
    /// Phases (open..close) folded in; their I/O counters are added at close.
    pub closes: u64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BlkKey {
    pub dev: u32,
    pub dir: u8,
    pub owner: u8,
    pub pad: u16,
}

/// `blk_files` key: a file (its filesystem's device, kernel encoding, and inode) and a
/// direction (0 read, 1 write).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BlkFileKey {
    pub fdev: u32,
    pub dir: u8,
    pub pad: [u8; 3],
    pub ino: u64,
}

/// The tracked set's completed block bytes and requests for one file and direction, each
/// request counted once (by the file whose data it moved).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BlkFileStat {
    pub bytes: u64,
    pub requests: u64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlkStat {
    pub completions: u64,
    pub bytes: u64,
    pub lat_ns: u64,
    pub issues: u64,
    pub queued: u64,
    pub queue_ns: u64,
    pub errors: u64,
    pub depth_sum: u64,
    pub size: [u64; L2_BUCKETS],
    pub depth: [u64; L2_BUCKETS],
    pub lat: [u64; LL_BUCKETS],
}

impl Default for BlkStat {
    fn default() -> Self {
        BlkStat {
            completions: 0,
            bytes: 0,
            lat_ns: 0,
            issues: 0,
            queued: 0,
            queue_ns: 0,
            errors: 0,
            depth_sum: 0,
            size: [0; L2_BUCKETS],
            depth: [0; L2_BUCKETS],
            lat: [0; LL_BUCKETS],
        }
    }
}

/// Channels of `ChanKey::chan`: I/O moved without read or write calls.
pub const CHAN_AIO: u32 = 1;
pub const CHAN_URING: u32 = 2;
pub const CHAN_MMAP: u32 = 3;
pub const NCHAN: u32 = 4;

/// The channel's name as the audit tags its phases ("aio", "io_uring", "mmap").
pub fn chan_name(chan: u32) -> Option<&'static str> {
    match chan {
        CHAN_AIO => Some("aio"),
        CHAN_URING => Some("io_uring"),
        CHAN_MMAP => Some("mmap"),
        _ => None,
    }
}

/// A process's file and the channel its bytes moved through (`chan_files` key).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ChanKey {
    pub tgid: u32,
    pub dev: u32,
    pub ino: u64,
    pub chan: u32,
    pub pad: u32,
}

/// What moved through one channel on one file of one process, over the whole trace.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChanStat {
    pub rbytes: u64,
    pub wbytes: u64,
    pub rcalls: u64,
    pub wcalls: u64,
    pub fsyncs: u64,
    pub first_ns: u64,
    pub last_ns: u64,
    /// PHASE_DIRECT and PHASE_BLKDEV, as of any request seen.
    pub flags: u64,
    pub size_hist: [u32; L2_BUCKETS],
}

impl Default for ChanStat {
    fn default() -> Self {
        ChanStat {
            rbytes: 0,
            wbytes: 0,
            rcalls: 0,
            wcalls: 0,
            fsyncs: 0,
            first_ns: 0,
            last_ns: 0,
            flags: 0,
            size_hist: [0; L2_BUCKETS],
        }
    }
}

/// A channel's requests that could not be given to a file (`chan_lost`, per CPU).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChanLost {
    pub calls: u64,
    pub bytes: u64,
}

// SAFETY (all impls below): #[repr(C)], Copy, made only of integers and arrays of
// integers, so every bit pattern the kernel writes is a valid value.
unsafe impl aya::Pod for SysStat {}
unsafe impl aya::Pod for SysStart {}
unsafe impl aya::Pod for L2Hist {}
unsafe impl aya::Pod for FdKey {}
unsafe impl aya::Pod for RawPhase {}
unsafe impl aya::Pod for FileKey {}
unsafe impl aya::Pod for FileStat {}
unsafe impl aya::Pod for BlkKey {}
unsafe impl aya::Pod for BlkStat {}
unsafe impl aya::Pod for BlkFileKey {}
unsafe impl aya::Pod for BlkFileStat {}
unsafe impl aya::Pod for ChanKey {}
unsafe impl aya::Pod for ChanStat {}
unsafe impl aya::Pod for ChanLost {}
unsafe impl aya::Pod for LostKey {}
unsafe impl aya::Pod for TreeIo {}

fn add_into(a: &mut [u64], b: &[u64]) {
    for (x, y) in a.iter_mut().zip(b) {
        *x += *y;
    }
}

/// Everything one snapshot reads from the maps, per-CPU copies already summed.
#[derive(Clone, Debug, Default)]
pub struct RawSnapshot {
    /// CLOCK_MONOTONIC nanoseconds when the reading started (same clock as bpf_ktime_get_ns).
    pub taken_ns: u64,
    /// When the reading ended: the counters are from some moment in `taken_ns..=done_ns`
    /// (each map is read at its own moment).
    pub done_ns: u64,
    /// Events the kernel did not give a program, summed over the programs (see
    /// `Snapshot::diagnostics`).
    pub skipped_runs: u64,
    pub sys: Vec<SysStat>,
    pub lseek: L2Hist,
    pub cache_misses: u64,
    pub diag: [u64; NDIAG as usize],
    /// Per-file totals of the phases that have ended.
    pub files: Vec<(FileKey, FileStat)>,
    /// Phases still open (their counters are not in `files` yet).
    pub open: Vec<RawPhase>,
    pub blk: Vec<(BlkKey, BlkStat)>,
}

/// Sums the per-CPU copies of one per-CPU array slot.
pub fn sum_sys<'a>(copies: impl IntoIterator<Item = &'a SysStat>) -> SysStat {
    let mut s = SysStat::default();
    for c in copies {
        s.merge(c);
    }
    s
}

#[cfg(test)]
#[allow(clippy::field_reassign_with_default)]
mod tests {
    use super::*;

    #[test]
    fn layouts_match_the_c_structs() {
        // Sizes computed by hand from bpf/candor.bpf.c.
        assert_eq!(std::mem::size_of::<SysStat>(), 4 * 8 + 256 * 8);
        assert_eq!(
            std::mem::size_of::<RawPhase>(),
            16 + 8 + 13 * 8 + 64 * 4 * 2 + 256 + 3 * 8
        );
        assert_eq!(std::mem::size_of::<LostKey>(), 16);
        assert_eq!(std::mem::size_of::<TreeIo>(), 15 * 8);
        assert_eq!(std::mem::size_of::<FileKey>(), 16);
        assert_eq!(std::mem::size_of::<FileStat>(), 72);
        assert_eq!(std::mem::size_of::<BlkKey>(), 8);
        assert_eq!(std::mem::size_of::<BlkFileKey>(), 16);
        assert_eq!(std::mem::size_of::<BlkFileStat>(), 16);
        assert_eq!(std::mem::size_of::<BlkStat>(), 8 * 8 + 64 * 8 * 2 + 256 * 8);
        assert_eq!(std::mem::size_of::<FdKey>(), 8);
        assert_eq!(std::mem::size_of::<SysStart>(), 24);
        assert_eq!(std::mem::size_of::<ChanKey>(), 24);
        assert_eq!(std::mem::size_of::<ChanStat>(), 8 * 8 + 64 * 4);
        assert_eq!(std::mem::size_of::<ChanLost>(), 16);
    }

    #[test]
    fn per_cpu_copies_add_up() {
        let mut a = SysStat::default();
        a.count = 3;
        a.bytes = 4096;
        a.lat[10] = 3;
        let mut b = SysStat::default();
        b.count = 1;
        b.errors = 1;
        b.lat[10] = 1;
        let s = sum_sys([&a, &b]);
        assert_eq!(s.count, 4);
        assert_eq!(s.bytes, 4096);
        assert_eq!(s.errors, 1);
        assert_eq!(s.lat[10], 4);
    }

    #[test]
    fn phase_record_decodes_from_bytes() {
        let mut p = RawPhase::default();
        p.tgid = 42;
        p.wbytes = 1 << 20;
        p.path[..4].copy_from_slice(b"/x/y");
        // SAFETY: viewing a POD struct as bytes.
        let bytes = unsafe {
            std::slice::from_raw_parts(
                &p as *const RawPhase as *const u8,
                std::mem::size_of::<RawPhase>(),
            )
        };
        let mut buf = vec![0u8; 1];
        buf.extend_from_slice(bytes); // misaligned on purpose
        assert_eq!(RawPhase::from_bytes(&buf[1..]), Some(p));
        assert_eq!(RawPhase::from_bytes(&buf[1..10]), None);
    }
}
