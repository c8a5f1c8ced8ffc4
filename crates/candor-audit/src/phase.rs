//! What the audited program did, file by file: a phase is one open..close of a file by one
//! process of the tree. Phases come from a [`PhaseSource`]: the eBPF tracer (every syscall,
//! exact times) or procfs sampling (what /proc shows every few milliseconds).

use serde::{Deserialize, Serialize};
use std::time::Instant;

/// One open..close of a file by one process.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct Phase {
    /// Process (thread group) id.
    pub pid: u32,
    pub fd: i32,
    pub path: String,
    /// Device number (st_dev) and inode of the file, when known.
    pub dev: Option<u64>,
    pub inode: Option<u64>,
    /// Seconds since the audit started the command.
    pub open_s: f64,
    pub close_s: f64,
    /// How far off `open_s` and `close_s` may be (half the sampling period for procfs, 0 when
    /// every syscall was seen).
    pub time_uncertainty_s: f64,
    /// Bytes the program moved through the file (what the read/write calls returned).
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub read_calls: Option<u64>,
    pub write_calls: Option<u64>,
    /// Seconds spent inside the read and write calls (eBPF only).
    pub read_time_s: Option<f64>,
    pub write_time_s: Option<f64>,
    pub fsync_count: Option<u64>,
    pub fsync_time_s: Option<f64>,
    pub lseek_count: Option<u64>,
    /// (record size in bytes, calls) for every size seen.
    pub record_sizes: Vec<[u64; 2]>,
    /// (lower bound of a power-of-two bucket of file offsets, calls), when offsets were
    /// seen: a random test that covers the file fills every bucket up to its size.
    pub offsets: Vec<[u64; 2]>,
    /// Opened with O_DIRECT.
    pub direct: bool,
    /// The file is a block device (`dev` is the device itself): a `raw device` phase.
    pub block_device: bool,
    /// Bytes of the file's reads that fell in unallocated ranges (holes, unwritten
    /// extents) at the end of the audit: zeros made up by the filesystem, neither from the
    /// page cache nor from the device (see [`crate::holes`]).
    pub hole_read_bytes: Option<u64>,
    /// Bytes the kernel counted as going to or coming from storage for this file
    /// (the process's io counters' read_bytes and write_bytes attributed to it; reads below `read_bytes`
    /// were served by the page cache).
    pub storage_read_bytes: Option<u64>,
    pub storage_write_bytes: Option<u64>,
    /// How the storage bytes were found (eBPF): "request" (every block request that moved
    /// the file's data, counted once: the kernel named the file, through a page of its
    /// page cache or a call on it in O_DIRECT mode) or "share" (an estimate: the tree's
    /// requests that named no file, over the window of the phases overlapping it, shared
    /// by the bytes each moved). None with procfs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_by: Option<String>,
    /// Device traffic during the phase on the file's device (all processes).
    pub device: Option<String>,
    pub device_read_bytes: Option<u64>,
    pub device_write_bytes: Option<u64>,
    /// Average device time per request during the phase, microseconds.
    pub device_latency_us: Option<f64>,
    /// Device bytes during the phase that other processes submitted (eBPF knows who
    /// submitted each request; without it this stays None and the reconciliation
    /// subtracts the tree's bytes from the device counters instead).
    pub foreign_device_bytes: Option<u64>,
    /// "bpf" or "procfs".
    pub source: String,
    /// None: read and write calls on a descriptor. "aio", "io_uring" or "mmap": what one
    /// process moved through that channel on this file, counted per file by eBPF over the
    /// whole run (`open_s`..`close_s` span its first and last counted request; the time
    /// inside the channel is not measured). For "mmap" the bytes are pages faulted into
    /// the process's mappings (each once) and pages it dirtied through them: a lower bound
    /// of what it read and wrote there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
}

impl Phase {
    pub fn wall_s(&self) -> f64 {
        (self.close_s - self.open_s).max(0.0)
    }

    pub fn bytes(&self) -> u64 {
        self.read_bytes + self.write_bytes
    }

    /// What the phase did: `Read` or `Write` when it moved bytes one way only, `Mixed`
    /// when it moved bytes both ways (however small one side: [`Phase::read_share`] says
    /// how much of each), `Unknown` when it moved nothing.
    pub fn direction(&self) -> crate::Direction {
        direction_of(self.read_bytes, self.write_bytes)
    }

    /// The share of the phase's bytes that were read (None when it moved nothing).
    pub fn read_share(&self) -> Option<f64> {
        read_share(self.read_bytes, self.write_bytes)
    }

    /// The phase's kind in words: "read", "write", "mixed: 93% read / 7% write by bytes"
    /// or "nothing moved".
    pub fn kind_words(&self) -> String {
        kind_words(self.read_bytes, self.write_bytes)
    }

    /// Seconds inside the I/O calls of the main direction, when the source timed them.
    pub fn io_time_s(&self) -> Option<f64> {
        match (self.read_time_s, self.write_time_s) {
            (Some(r), Some(w)) => Some(r + w),
            (Some(r), None) => Some(r),
            (None, Some(w)) => Some(w),
            _ => None,
        }
    }
}

/// What bytes moved `read` and `written` did: reads only, writes only, both, or nothing.
pub fn direction_of(read: u64, written: u64) -> crate::Direction {
    use crate::Direction;
    match (read > 0, written > 0) {
        (true, true) => Direction::Mixed,
        (true, false) => Direction::Read,
        (false, true) => Direction::Write,
        (false, false) => Direction::Unknown,
    }
}

/// read / (read + written), None when nothing moved.
pub fn read_share(read: u64, written: u64) -> Option<f64> {
    let all = read + written;
    (all > 0).then(|| read as f64 / all as f64)
}

/// The kind in words, with the shares of a mix by bytes: "mixed: 93% read / 7% write by
/// bytes". A share is never rounded to 0% or 100% while that side moved a byte.
pub fn kind_words(read: u64, written: u64) -> String {
    use crate::Direction;
    match direction_of(read, written) {
        Direction::Read => "read".into(),
        Direction::Write => "write".into(),
        Direction::Unknown => "nothing moved".into(),
        Direction::Mixed => {
            let r = read_share(read, written).unwrap_or(0.0) * 100.0;
            let shown = |x: f64| -> String {
                if x > 0.0 && x < 0.5 {
                    "<1".into()
                } else if x < 100.0 && x > 99.5 {
                    ">99".into()
                } else {
                    format!("{x:.0}")
                }
            };
            format!(
                "mixed: {}% read / {}% write by bytes",
                shown(r),
                shown(100.0 - r)
            )
        }
    }
}

/// Files every program reads or maps at start: shared libraries, locale and time zone
/// files, the loader's cache. No benchmark is about them.
pub fn is_system_file(path: &str) -> bool {
    const PLACES: &[&str] = &[
        "/lib/",
        "/lib64/",
        "/usr/lib/",
        "/usr/lib64/",
        "/usr/share/locale/",
        "/usr/lib/locale/",
    ];
    const FILES: &[&str] = &[
        "/etc/ld.so.cache",
        "/etc/localtime",
        "/etc/nsswitch.conf",
        "/etc/passwd",
        "/etc/group",
    ];
    PLACES.iter().any(|d| path.starts_with(d)) || FILES.contains(&path)
}

/// The dynamic loader's and the C library's small reads of shared libraries, locale and
/// time zone files: every program makes them, no benchmark is about them.
pub fn is_startup_noise(p: &Phase) -> bool {
    p.write_bytes == 0 && p.read_bytes <= 64 * 1024 && is_system_file(&p.path)
}

/// Removes startup noise, and says how much was removed.
pub fn drop_startup_noise(o: &mut Observed) {
    let before = o.phases.len();
    o.phases.retain(|p| !is_startup_noise(p));
    let n = before - o.phases.len();
    if n > 0 {
        o.notes.push(format!(
            "{n} small read{} of shared libraries and locale files at program start left out",
            if n == 1 { "" } else { "s" }
        ));
    }
}

/// One process of the audited tree.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct ProcessRecord {
    pub pid: u32,
    pub ppid: u32,
    pub comm: String,
    pub first_seen_s: f64,
    pub exit_s: Option<f64>,
    /// The process's io counters at its last reading (for the root: after the whole tree finished),
    /// its counters saved beside the fields above.
    #[serde(flatten)]
    pub io: candor_procfs::PidIo,
}

/// Everything a phase source saw.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct Observed {
    pub source: String,
    pub phases: Vec<Phase>,
    pub processes: Vec<ProcessRecord>,
    /// Sentences about the limits of what was seen ("times are sampled every 5 ms").
    pub notes: Vec<String>,
    /// Per device (kernel name): block requests the eBPF programs saw issued and never
    /// saw complete, because the kernel did not run the completion program for them.
    /// Storage and device bytes on that device can be short by these requests. Empty
    /// when none were missed (and always for procfs).
    pub block_requests_unseen: std::collections::BTreeMap<String, u64>,
    /// eBPF only: block completions the kernel did not hand to candor's program but that
    /// were counted all the same when their request was used again (blk-mq reuses a
    /// request only after it completed): their bytes are in the figures, their device
    /// latency is not. 0 with procfs.
    pub block_requests_recovered: u64,
    /// eBPF only: the tree's metadata calls (and opens) as counted at each reading of the
    /// tracer, cumulative from the first reading: what a metadata figure (mdtest, bonnie++'s
    /// file tests) is checked against. Empty with procfs, which cannot count calls.
    pub calls: Vec<CallTick>,
    /// I/O channels other than read and write calls that the tree's processes used (Linux
    /// AIO, io_uring, mapped files): what moved through them is not in the phases' bytes.
    pub channels: Vec<ChannelUse>,
    /// eBPF only: the tree's calls of the channels the tracer counts but does not give to
    /// a file (`io_uring_enter`, `page_fault`), over the whole run.
    pub channel_calls: std::collections::BTreeMap<String, u64>,
    /// Processes of the tree still running when the audit stopped (`--stop-at-exit`):
    /// what they did afterwards is not in the audit. Their counters are those read then.
    pub still_running: Vec<ProcessRecord>,
    /// eBPF only: every block request on each device over the run, counted once by its
    /// owner (the tree, the kernel's journal and housekeeping, others). Empty with procfs.
    pub device_traffic: std::collections::BTreeMap<String, DeviceTraffic>,
    /// eBPF only: the channels whose bytes were counted per process and file ("aio",
    /// "io_uring", "mmap"; their phases carry `channel`). A channel used but not in this
    /// list was not watched (a tracepoint this kernel lacks, or procfs).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub channels_counted: Vec<String>,
    /// eBPF only: per counted channel, the requests that could not be given to a file
    /// ([calls, bytes known]): an AIO call with more iocbs than the tracer reads, a request
    /// on a file it could not resolve. Their bytes are in no phase.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub channels_unattributed: std::collections::BTreeMap<String, [u64; 2]>,
    /// eBPF only: the file records' totals against the processes' own counters.
    pub completeness: Option<Completeness>,
}

/// What the file records hold of what the tree's processes read and wrote, by the kernel's
/// own counters of each process (task->ioac summed as its threads exited: what
/// the process's io counters showed, without reaped children), and the rest by cause.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct Completeness {
    /// Processes whose counters are in the figures (every one that exited).
    pub processes: usize,
    /// Their counters: bytes (rchar, wchar) and calls (syscr, syscw).
    pub process_read_bytes: u64,
    pub process_write_bytes: u64,
    pub process_read_calls: u64,
    pub process_write_calls: u64,
    /// Their file records (every phase, /proc and start-up reads included).
    pub file_read_bytes: u64,
    pub file_write_bytes: u64,
    pub file_read_calls: u64,
    pub file_write_calls: u64,
    /// Read and write calls on descriptors that are not files (pipes, sockets, terminals,
    /// /dev/null): bytes and calls.
    pub other_bytes: u64,
    pub other_calls: u64,
    /// Calls on files that no record holds because a table of the tracer was full.
    pub unattributed_bytes: u64,
    pub unattributed_calls: u64,
    /// Phases that ended while the ring buffer was full, kept merged per process and file.
    pub merged_phases: u64,
}

impl Completeness {
    /// The sentence: "the file records hold X of the Y bytes ...".
    pub fn sentence(&self) -> String {
        use candor_model::units::{format_bytes, ByteStyle};
        let b = |x: u64| format_bytes(x, ByteStyle::TENTHS);
        let proc_bytes = self.process_read_bytes + self.process_write_bytes;
        let file_bytes = self.file_read_bytes + self.file_write_bytes;
        let proc_calls = self.process_read_calls + self.process_write_calls;
        let file_calls = self.file_read_calls + self.file_write_calls;
        let pct = |x: u64, of: u64| {
            if of == 0 {
                100.0
            } else {
                x as f64 * 100.0 / of as f64
            }
        };
        let mut s = format!(
            "the file records hold {} of the {} the {} process{} read and wrote ({:.1}%), in {} of their {} read and write calls",
            b(file_bytes),
            b(proc_bytes),
            self.processes,
            if self.processes == 1 { "" } else { "es" },
            pct(file_bytes, proc_bytes),
            file_calls,
            proc_calls
        );
        let mut rest = Vec::new();
        if self.other_calls > 0 {
            rest.push(format!(
                "{} in {} calls on pipes, sockets, terminals and devices, not files",
                b(self.other_bytes),
                self.other_calls
            ));
        }
        if self.unattributed_calls > 0 {
            rest.push(format!(
                "{} in {} calls not attributed to a file: the tracer's table of files was full",
                b(self.unattributed_bytes),
                self.unattributed_calls
            ));
        }
        let left =
            proc_bytes.saturating_sub(file_bytes + self.other_bytes + self.unattributed_bytes);
        if left > 0 {
            rest.push(format!(
                "{} not attributed to a file: read by the kernel for the processes (execve loading programs and scripts)",
                b(left)
            ));
        }
        if !rest.is_empty() {
            s += &format!("; the rest: {}", rest.join("; "));
        }
        if self.merged_phases > 0 {
            s += &format!(
                "; {} open..close records arrived while the tracer's buffer was full and are kept merged per process and file",
                self.merged_phases
            );
        }
        s
    }
}

/// A device's block traffic over the run by owner (eBPF knows each request's submitter).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct DeviceTraffic {
    /// Submitted by the tree's processes, or written back for inodes they dirtied.
    pub own_read_bytes: u64,
    pub own_write_bytes: u64,
    /// Submitted by kernel threads outside any inode's writeback (journal commits).
    pub kernel_read_bytes: u64,
    pub kernel_write_bytes: u64,
    /// Submitted by processes outside the tree.
    pub foreign_read_bytes: u64,
    pub foreign_write_bytes: u64,
    /// Requests that carry no data, whoever sent them: write-zeroes (ext4 zeroing its inode
    /// tables after mkfs; the device's own counters count them as writes) and discards.
    pub zeroed_bytes: u64,
    pub discarded_bytes: u64,
    /// The loop devices of the audit whose backing file is on this device ("loop0
    /// (/var/tmp/img)"): their reads and writes of it are made by kernel threads, so they
    /// are in `kernel_*` here, the same bytes as the tree's on the loop device.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub backing: Vec<String>,
}

/// A process of the tree moved I/O through a channel the audit does not count per file.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct ChannelUse {
    pub pid: u32,
    pub comm: String,
    /// "aio" (Linux AIO: io_submit), "io_uring", or "mmap" (a file mapped into memory).
    pub channel: String,
    /// What showed it, in words ("an [aio] ring in" the process's maps).
    pub evidence: String,
    /// mmap: the mapped file (path, device number, inode).
    pub path: Option<String>,
    pub dev: Option<u64>,
    pub inode: Option<u64>,
    /// aio and io_uring: the regular files the process had open while it used the channel
    /// (where its I/O may have gone), with whether they were open with O_DIRECT.
    pub files: Vec<ChannelFile>,
    /// Seconds since the audit started the command: when the channel was first and last
    /// seen in use.
    pub first_seen_s: f64,
    pub last_seen_s: f64,
}

/// A file a process had open while it used a channel.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct ChannelFile {
    pub path: String,
    pub dev: Option<u64>,
    pub inode: Option<u64>,
    pub direct: bool,
}

impl ChannelUse {
    /// The channel in words, as the audit's sentences name it.
    pub fn name(&self) -> String {
        match self.channel.as_str() {
            "aio" => "Linux AIO (io_submit)".into(),
            "io_uring" => "io_uring (io_uring_enter and its io-wq workers)".into(),
            "mmap" => format!(
                "a memory mapping of {} (page faults and writeback, no read or write calls)",
                self.path.as_deref().unwrap_or("a file")
            ),
            other => other.to_string(),
        }
    }
}

/// The calls of the tree counted up to one reading of the tracer.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct CallTick {
    /// Seconds since the audit started the command.
    pub t_s: f64,
    /// Calls by name ("create", "stat", "unlink", "mkdir", "rmdir", "rename", "openat").
    pub count: std::collections::BTreeMap<String, u64>,
    /// Nanoseconds spent inside them, by name.
    pub time_ns: std::collections::BTreeMap<String, u64>,
}

/// The calls the metadata figures are checked against.
pub const METADATA_CALLS: [&str; 7] = [
    "create", "stat", "unlink", "mkdir", "rmdir", "rename", "openat",
];

/// Where phases come from. The runner calls `attach` once the child exists (before it
/// runs the command), `sample` periodically while the tree runs, `exited` for each process
/// of the tree that has ended but is not reaped yet (its /proc entry is still readable), and
/// `finish` at the end.
pub trait PhaseSource {
    /// "bpf" or "procfs".
    fn name(&self) -> &'static str;
    /// Called just before the command is started (a tracer that follows children of the
    /// calling process starts here, so it sees the command from its first syscall).
    fn before_spawn(&mut self) -> Result<(), String> {
        Ok(())
    }
    fn attach(&mut self, root: u32, t0: Instant) -> Result<(), String>;
    fn sample(&mut self);
    fn exited(&mut self, pid: u32);
    /// Bytes the tree wrote to its stdout and stderr so far (captured by the runner), so a
    /// source that only sees per-process totals can leave them out of the file bytes.
    fn set_output_bytes(&mut self, _bytes: u64) {}
    /// A function giving the same count at any moment (bytes read by candor plus bytes
    /// still waiting in the pipes), for a source to call right after it reads the counters.
    fn output_probe(&mut self, _probe: Box<dyn Fn() -> u64 + Send>) {}
    fn finish(&mut self) -> Observed;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;

    #[test]
    fn the_kind_is_what_the_phase_did() {
        assert_eq!(direction_of(13, 1), Direction::Mixed);
        assert_eq!(direction_of(1, 0), Direction::Read);
        assert_eq!(direction_of(0, 9), Direction::Write);
        assert_eq!(direction_of(0, 0), Direction::Unknown);
        assert_eq!(
            kind_words(851968, 65536),
            "mixed: 93% read / 7% write by bytes"
        );
        assert_eq!(kind_words(1, 1000), "mixed: <1% read / >99% write by bytes");
        assert_eq!(kind_words(5, 0), "read");
        assert_eq!(kind_words(0, 0), "nothing moved");
        assert_eq!(read_share(3, 1), Some(0.75));
        assert_eq!(read_share(0, 0), None);
    }

    /// The rest of what the processes moved is named by cause: device and pipe calls, and
    /// the kernel's reads for them; splice, which the kernel's counters leave out, is never
    /// given as a cause of what they hold.
    #[test]
    fn the_completeness_sentence_names_the_causes_of_the_rest() {
        let c = Completeness {
            processes: 2,
            process_read_bytes: 50_000,
            process_write_bytes: 41_000,
            process_read_calls: 20,
            process_write_calls: 19,
            file_read_bytes: 7_000,
            file_write_bytes: 41_000,
            file_read_calls: 8,
            file_write_calls: 11,
            other_bytes: 40_960,
            other_calls: 10,
            ..Default::default()
        };
        let s = c.sentence();
        assert!(
            s.starts_with("the file records hold 46.9 KiB of the 88.9 KiB the 2 processes read and wrote (52.7%), in 19 of their 39 read and write calls"),
            "{s}"
        );
        assert!(
            s.contains("40.0 KiB in 10 calls on pipes, sockets, terminals and devices")
                && s.contains(
                    "2.0 KiB not attributed to a file: read by the kernel for the processes"
                ),
            "{s}"
        );
        assert!(!s.contains("splice"), "{s}");
    }
}
