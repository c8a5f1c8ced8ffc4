//! Snapshots: the cumulative counters of the tracked process set, decoded from the raw
//! map values (pure, no kernel access), and deltas between two of them.

use crate::hist::{Hist, Scale};
use crate::raw::{self, RawSnapshot};
use serde::Serialize;
use std::collections::BTreeMap;

/// A block device as the kernel's tracepoints name it (major, minor of the whole disk).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct DevId {
    pub major: u32,
    pub minor: u32,
}

impl DevId {
    /// From the kernel-internal dev_t the tracepoints carry (MAJOR << 20 | MINOR).
    pub fn from_kernel(dev: u32) -> DevId {
        DevId {
            major: dev >> 20,
            minor: dev & 0xfffff,
        }
    }

    /// The kernel-internal dev_t of this device (what the BPF maps are keyed by).
    pub fn to_kernel(self) -> u32 {
        (self.major << 20) | (self.minor & 0xfffff)
    }

    /// From a user-space `st_dev`.
    pub fn from_st_dev(dev: u64) -> DevId {
        DevId {
            major: libc::major(dev),
            minor: libc::minor(dev),
        }
    }

    /// The kernel name of the device ("vda", "loop0"), from sysfs; None when unknown.
    pub fn name(self) -> Option<String> {
        self.sysfs().uevent_name().ok()
    }

    /// The device's directory in sysfs.
    fn sysfs(self) -> candor_procfs::BlockDev {
        candor_procfs::Kernel::system().block(self.major, self.minor)
    }

    /// The device of a kernel block name ("vda", "loop0"), from sysfs.
    pub fn from_name(name: &str) -> Option<DevId> {
        let (major, minor) = candor_procfs::Kernel::system()
            .block_named(name)
            .number()
            .ok()?;
        Some(DevId { major, minor })
    }

    /// The whole disk of a partition (what block tracepoints report); the device itself
    /// when it is not a partition or sysfs does not say.
    pub fn whole_disk(self) -> DevId {
        match self.sysfs().disk_number() {
            Ok((major, minor)) => DevId { major, minor },
            Err(_) => self,
        }
    }

    /// The whole disk under a path's filesystem (a partition's disk; the device itself
    /// otherwise), which is what block tracepoints report. None for filesystems without
    /// a block device (tmpfs, FUSE...).
    pub fn disk_under(path: &std::path::Path) -> Option<DevId> {
        use std::os::unix::fs::MetadataExt;
        let md = std::fs::metadata(path).ok()?;
        let dev = DevId::from_st_dev(md.dev());
        if !dev.sysfs().exists() {
            return None;
        }
        Some(dev.whole_disk())
    }
}

impl std::fmt::Display for DevId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.major, self.minor)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    Read,
    Write,
    Discard,
    /// A request that moves no data (a bare cache flush).
    Other,
}

impl Direction {
    fn from_raw(d: u8) -> Direction {
        match d {
            0 => Direction::Read,
            1 => Direction::Write,
            2 => Direction::Discard,
            _ => Direction::Other,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Read => "read",
            Direction::Write => "write",
            Direction::Discard => "discard",
            Direction::Other => "other",
        }
    }
}

/// Who a block request is attributed to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Owner {
    /// Submitted by a process outside the tracked set (or with no known submitter).
    Foreign,
    /// Submitted by a tracked process (direct I/O, reads, fsync from the caller...).
    Tracked,
    /// Written back by a kernel thread for an inode the tracked set dirtied.
    Writeback,
    /// Submitted by a kernel thread outside any inode's writeback: a journal commit,
    /// filesystem housekeeping. Neither the set's own nor another process's.
    Kernel,
    /// Submitted by another process of the same job (`Tracer::add_job_pid`: another MPI
    /// rank on this machine, or its children), or written back for an inode one of them
    /// dirtied: the job's, neither the set's own nor foreign.
    Job,
}

impl Owner {
    fn from_raw(o: u8) -> Owner {
        match o {
            1 => Owner::Tracked,
            2 => Owner::Writeback,
            3 => Owner::Kernel,
            4 => Owner::Job,
            _ => Owner::Foreign,
        }
    }

    /// True for the tracked set's own traffic (in its context or written back for it).
    pub fn is_own(self) -> bool {
        matches!(self, Owner::Tracked | Owner::Writeback)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct BlockKey {
    pub dev: DevId,
    pub dir: Direction,
    pub owner: Owner,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SyscallCounters {
    pub count: u64,
    /// Bytes returned by the data-moving calls (0 for the others).
    pub bytes: u64,
    /// Total nanoseconds inside the call.
    pub time_ns: u64,
    pub errors: u64,
    /// Nanoseconds, log-linear.
    pub latency: Hist,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BlockCounters {
    pub completions: u64,
    pub bytes: u64,
    /// Sum of issue -> complete nanoseconds over the completions that had an issue.
    pub latency_ns: u64,
    /// Issues, requeued requests counted once.
    pub issues: u64,
    /// Issues whose request the kernel stamped when it made it (`start_time_ns`, when the
    /// device keeps I/O statistics or has a scheduler), and their nanoseconds from that
    /// stamp to the issue.
    pub queued: u64,
    pub queue_ns: u64,
    pub errors: u64,
    /// Sum over issues of the device's in-flight requests just after the issue.
    pub depth_sum: u64,
    /// Request bytes, log2.
    pub sizes: Hist,
    /// In-flight requests at issue, linear.
    pub depth: Hist,
    /// Issue -> complete nanoseconds, log-linear.
    pub latency: Hist,
}

impl BlockCounters {
    fn minus(&self, e: &BlockCounters) -> BlockCounters {
        BlockCounters {
            completions: self.completions.saturating_sub(e.completions),
            bytes: self.bytes.saturating_sub(e.bytes),
            latency_ns: self.latency_ns.saturating_sub(e.latency_ns),
            issues: self.issues.saturating_sub(e.issues),
            queued: self.queued.saturating_sub(e.queued),
            queue_ns: self.queue_ns.saturating_sub(e.queue_ns),
            errors: self.errors.saturating_sub(e.errors),
            depth_sum: self.depth_sum.saturating_sub(e.depth_sum),
            sizes: self.sizes.minus(&e.sizes),
            depth: self.depth.minus(&e.depth),
            latency: self.latency.minus(&e.latency),
        }
    }

    /// Adds another set of counters (to merge owners or devices).
    pub fn add(&mut self, o: &BlockCounters) {
        self.completions += o.completions;
        self.bytes += o.bytes;
        self.latency_ns += o.latency_ns;
        self.issues += o.issues;
        self.queued += o.queued;
        self.queue_ns += o.queue_ns;
        self.errors += o.errors;
        self.depth_sum += o.depth_sum;
        self.sizes.add(&o.sizes);
        self.depth.add(&o.depth);
        self.latency.add(&o.latency);
    }

    pub fn empty() -> BlockCounters {
        BlockCounters {
            completions: 0,
            bytes: 0,
            latency_ns: 0,
            issues: 0,
            queued: 0,
            queue_ns: 0,
            errors: 0,
            depth_sum: 0,
            sizes: Hist::new(Scale::Log2, vec![0; raw::L2_BUCKETS]),
            depth: Hist::new(Scale::Linear, vec![0; raw::L2_BUCKETS]),
            latency: Hist::new(Scale::LogLinear, vec![0; raw::LL_BUCKETS]),
        }
    }
}

/// A regular file the tracked set did I/O on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct FileId {
    /// The filesystem's device (st_dev's major:minor).
    pub dev: DevId,
    pub inode: u64,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FileCounters {
    pub read_calls: u64,
    pub write_calls: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    /// Nanoseconds inside read/write calls on the file.
    pub io_ns: u64,
    /// Pages of the file inserted into the page cache (reads from storage, new pages).
    pub cache_misses: u64,
    pub fsyncs: u64,
    pub fsync_ns: u64,
}

impl FileCounters {
    fn minus(&self, e: &FileCounters) -> FileCounters {
        FileCounters {
            read_calls: self.read_calls.saturating_sub(e.read_calls),
            write_calls: self.write_calls.saturating_sub(e.write_calls),
            read_bytes: self.read_bytes.saturating_sub(e.read_bytes),
            write_bytes: self.write_bytes.saturating_sub(e.write_bytes),
            io_ns: self.io_ns.saturating_sub(e.io_ns),
            cache_misses: self.cache_misses.saturating_sub(e.cache_misses),
            fsyncs: self.fsyncs.saturating_sub(e.fsyncs),
            fsync_ns: self.fsync_ns.saturating_sub(e.fsync_ns),
        }
    }
}

/// Events the tracer lost: a map or the ring buffer was full, or the kernel did not run a
/// program. All zero in a trustworthy snapshot.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Diagnostics {
    pub phases_lost: u64,
    pub syscalls_untimed: u64,
    pub requests_untracked: u64,
    pub fds_untracked: u64,
    /// Tracepoint events no program saw: the kernel does not run a program inside itself
    /// on one CPU, so an interrupt's event that lands while the same program runs there is
    /// dropped (the programs' `recursion_misses`). A dropped block completion is a
    /// request's bytes missing.
    pub events_skipped: u64,
}

/// Cumulative counters of the tracked set since the tracer was loaded (or, for a value
/// returned by [`Snapshot::delta`], between two snapshots).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Snapshot {
    /// CLOCK_MONOTONIC nanoseconds when the reading started (the clock of the BPF
    /// timestamps).
    pub taken_ns: u64,
    /// When the reading ended. Maps are read one after another, so a counter may hold
    /// events up to `done_ns`: a window that must exclude everything after an instant
    /// starts at a snapshot whose `done_ns` is before it.
    pub done_ns: u64,
    /// Per syscall name ("read", "pwrite64", ...; "page_fault" counts user page faults).
    pub syscalls: BTreeMap<String, SyscallCounters>,
    /// File offsets that lseek returned, log2.
    pub lseek_offsets: Hist,
    /// Pages inserted into the page cache by the tracked set or for its files.
    pub cache_misses: u64,
    pub block: BTreeMap<BlockKey, BlockCounters>,
    pub files: BTreeMap<FileId, FileCounters>,
    pub diagnostics: Diagnostics,
    /// Block completions the kernel did not hand to the completion program, counted when
    /// their request was next used (blk-mq reuses a request only after it completed): their
    /// bytes are in `block`, without a device latency. Not a loss, so not a diagnostic.
    pub completions_recovered: u64,
}

impl Snapshot {
    /// Decodes what the loader read from the maps.
    pub fn decode(raw: &RawSnapshot) -> Snapshot {
        let syscalls = raw
            .sys
            .iter()
            .enumerate()
            .filter_map(|(i, s)| {
                let name = raw::SLOT_NAMES.get(i)?;
                Some((
                    name.to_string(),
                    SyscallCounters {
                        count: s.count,
                        bytes: s.bytes,
                        time_ns: s.time_ns,
                        errors: s.errors,
                        latency: Hist::new(Scale::LogLinear, s.lat.to_vec()),
                    },
                ))
            })
            .collect();
        let mut block: BTreeMap<BlockKey, BlockCounters> = BTreeMap::new();
        for (k, v) in &raw.blk {
            let key = BlockKey {
                dev: DevId::from_kernel(k.dev),
                dir: Direction::from_raw(k.dir),
                owner: Owner::from_raw(k.owner),
            };
            let c = BlockCounters {
                completions: v.completions,
                bytes: v.bytes,
                latency_ns: v.lat_ns,
                issues: v.issues,
                queued: v.queued,
                queue_ns: v.queue_ns,
                errors: v.errors,
                depth_sum: v.depth_sum,
                sizes: Hist::new(Scale::Log2, v.size.to_vec()),
                depth: Hist::new(Scale::Linear, v.depth.to_vec()),
                latency: Hist::new(Scale::LogLinear, v.lat.to_vec()),
            };
            block.entry(key).and_modify(|e| e.add(&c)).or_insert(c);
        }
        let mut files: BTreeMap<FileId, FileCounters> = BTreeMap::new();
        // Open phases have not been folded into the per-file totals yet.
        let open = raw.open.iter().map(|p| (p.dev, p.ino, p.file_stat()));
        let stats = raw.files.iter().map(|(k, v)| (k.dev, k.ino, *v));
        for (dev, inode, v) in stats.chain(open) {
            let id = FileId {
                dev: DevId::from_kernel(dev),
                inode,
            };
            let f = files.entry(id).or_default();
            f.read_calls += v.rcalls;
            f.write_calls += v.wcalls;
            f.read_bytes += v.rbytes;
            f.write_bytes += v.wbytes;
            f.io_ns += v.io_ns;
            f.cache_misses += v.misses;
            f.fsyncs += v.fsyncs;
            f.fsync_ns += v.fsync_ns;
        }
        Snapshot {
            taken_ns: raw.taken_ns,
            done_ns: raw.done_ns,
            syscalls,
            lseek_offsets: Hist::new(Scale::Log2, raw.lseek.b.to_vec()),
            cache_misses: raw.cache_misses,
            block,
            files,
            diagnostics: Diagnostics {
                phases_lost: raw.diag[raw::DIAG_PHASES_LOST as usize],
                syscalls_untimed: raw.diag[raw::DIAG_STARTS_FULL as usize],
                requests_untracked: raw.diag[raw::DIAG_REQS_FULL as usize],
                fds_untracked: raw.diag[raw::DIAG_FDS_FULL as usize],
                events_skipped: raw.skipped_runs,
            },
            completions_recovered: raw.diag[raw::DIAG_COMPLETIONS_RECOVERED as usize],
        }
    }

    /// What happened between `earlier` and this snapshot.
    pub fn delta(&self, earlier: &Snapshot) -> Snapshot {
        let syscalls = self
            .syscalls
            .iter()
            .map(|(name, s)| {
                let d = match earlier.syscalls.get(name) {
                    Some(e) => SyscallCounters {
                        count: s.count.saturating_sub(e.count),
                        bytes: s.bytes.saturating_sub(e.bytes),
                        time_ns: s.time_ns.saturating_sub(e.time_ns),
                        errors: s.errors.saturating_sub(e.errors),
                        latency: s.latency.minus(&e.latency),
                    },
                    None => s.clone(),
                };
                (name.clone(), d)
            })
            .collect();
        let block = self
            .block
            .iter()
            .map(|(k, v)| {
                let d = match earlier.block.get(k) {
                    Some(e) => v.minus(e),
                    None => v.clone(),
                };
                (*k, d)
            })
            .filter(|(_, v)| v.completions > 0 || v.issues > 0)
            .collect();
        let files = self
            .files
            .iter()
            .map(|(k, v)| {
                let d = match earlier.files.get(k) {
                    Some(e) => v.minus(e),
                    None => *v,
                };
                (*k, d)
            })
            .filter(|(_, v)| *v != FileCounters::default())
            .collect();
        let (a, b) = (&self.diagnostics, &earlier.diagnostics);
        Snapshot {
            taken_ns: self.taken_ns,
            done_ns: self.done_ns,
            syscalls,
            lseek_offsets: self.lseek_offsets.minus(&earlier.lseek_offsets),
            cache_misses: self.cache_misses.saturating_sub(earlier.cache_misses),
            block,
            files,
            diagnostics: Diagnostics {
                phases_lost: a.phases_lost.saturating_sub(b.phases_lost),
                syscalls_untimed: a.syscalls_untimed.saturating_sub(b.syscalls_untimed),
                requests_untracked: a.requests_untracked.saturating_sub(b.requests_untracked),
                fds_untracked: a.fds_untracked.saturating_sub(b.fds_untracked),
                events_skipped: a.events_skipped.saturating_sub(b.events_skipped),
            },
            completions_recovered: self
                .completions_recovered
                .saturating_sub(earlier.completions_recovered),
        }
    }

    /// Counters of one syscall (zero when it never ran).
    pub fn syscall(&self, name: &str) -> (u64, u64) {
        self.syscalls
            .get(name)
            .map(|s| (s.count, s.bytes))
            .unwrap_or((0, 0))
    }

    /// Block counters merged over the devices in `devices` (all when empty) for the
    /// requests whose owner passes `owner`.
    pub fn block_sum(
        &self,
        devices: &[DevId],
        dir: Direction,
        owner: impl Fn(Owner) -> bool,
    ) -> BlockCounters {
        let mut sum = BlockCounters::empty();
        for (k, v) in &self.block {
            if k.dir == dir && owner(k.owner) && (devices.is_empty() || devices.contains(&k.dev)) {
                sum.add(v);
            }
        }
        sum
    }

    /// Bytes the tracked set moved on `devices` (all when empty), in `dir`, including
    /// writeback done for it.
    pub fn own_bytes(&self, devices: &[DevId], dir: Direction) -> u64 {
        self.block_sum(devices, dir, Owner::is_own).bytes
    }

    /// Bytes other processes moved on `devices` (all when empty), every direction.
    pub fn foreign_bytes(&self, devices: &[DevId]) -> u64 {
        self.bytes_of(devices, Owner::Foreign)
    }

    /// Bytes kernel threads moved on `devices` outside any inode's writeback (journal
    /// commits, filesystem housekeeping), every direction.
    pub fn kernel_bytes(&self, devices: &[DevId]) -> u64 {
        self.bytes_of(devices, Owner::Kernel)
    }

    /// Bytes the job's other processes moved on `devices` (all when empty), every
    /// direction, writeback done for them included.
    pub fn job_bytes(&self, devices: &[DevId]) -> u64 {
        self.bytes_of(devices, Owner::Job)
    }

    fn bytes_of(&self, devices: &[DevId], owner: Owner) -> u64 {
        [Direction::Read, Direction::Write, Direction::Discard]
            .into_iter()
            .map(|d| self.block_sum(devices, d, |o| o == owner).bytes)
            .sum()
    }
}

#[cfg(test)]
#[allow(clippy::field_reassign_with_default)]
pub(crate) mod tests {
    use super::*;
    use crate::raw::{BlkKey, BlkStat, FileKey, FileStat, SysStat};

    pub fn raw_example(writes: u64, own_write_bytes: u64, foreign_bytes: u64) -> RawSnapshot {
        let mut sys = vec![SysStat::default(); raw::SLOT_NAMES.len()];
        sys[1].count = writes;
        sys[1].bytes = writes * 4096;
        sys[1].time_ns = writes * 2000;
        sys[1].lat[crate::hist::ll_bucket(2000)] = writes;
        let dev = (254 << 20) | 16;
        let mut own = BlkStat::default();
        own.completions = own_write_bytes / (1 << 20);
        own.bytes = own_write_bytes;
        own.size[21] = own.completions;
        own.issues = own.completions;
        own.lat_ns = own.completions * 500_000;
        own.lat[crate::hist::ll_bucket(500_000)] = own.completions;
        let mut foreign = BlkStat::default();
        foreign.completions = foreign_bytes / 4096;
        foreign.bytes = foreign_bytes;
        RawSnapshot {
            taken_ns: 1,
            done_ns: 1,
            skipped_runs: 0,
            sys,
            cache_misses: 7,
            blk: vec![
                (
                    BlkKey {
                        dev,
                        dir: 1,
                        owner: 2,
                        pad: 0,
                    },
                    own,
                ),
                (
                    BlkKey {
                        dev,
                        dir: 1,
                        owner: 0,
                        pad: 0,
                    },
                    foreign,
                ),
            ],
            files: vec![(
                FileKey {
                    dev: (8 << 20) | 1,
                    pad: 0,
                    ino: 12,
                },
                FileStat {
                    wcalls: writes,
                    wbytes: writes * 4096,
                    ..Default::default()
                },
            )],
            ..Default::default()
        }
    }

    #[test]
    fn decodes_raw_values() {
        let s = Snapshot::decode(&raw_example(4096, 16 << 20, 1 << 20));
        assert_eq!(s.syscall("write"), (4096, 16 << 20));
        assert_eq!(s.syscall("read"), (0, 0));
        assert_eq!(s.syscalls["page_fault"].count, 0);
        let dev = DevId {
            major: 254,
            minor: 16,
        };
        assert_eq!(s.own_bytes(&[dev], Direction::Write), 16 << 20);
        assert_eq!(
            s.own_bytes(&[DevId { major: 8, minor: 0 }], Direction::Write),
            0
        );
        assert_eq!(s.foreign_bytes(&[]), 1 << 20);
        let f = s.files[&FileId {
            dev: DevId { major: 8, minor: 1 },
            inode: 12,
        }];
        assert_eq!(f.write_calls, 4096);
        assert_eq!(s.cache_misses, 7);
    }

    /// A phase still open counts in its file's totals, every counter but the cache misses
    /// (kept per file); a file with only an open phase has its totals all the same.
    #[test]
    fn open_phases_add_to_their_files() {
        let mut raw = raw_example(10, 0, 0);
        raw.files[0].1.misses = 3;
        let phase = |ino| crate::raw::RawPhase {
            dev: (8 << 20) | 1,
            ino,
            rcalls: 2,
            wcalls: 5,
            rbytes: 8192,
            wbytes: 20480,
            io_ns: 700,
            fsyncs: 1,
            fsync_ns: 900,
            ..Default::default()
        };
        raw.open = vec![phase(12), phase(13)];
        let s = Snapshot::decode(&raw);
        let file = |inode| {
            s.files[&FileId {
                dev: DevId { major: 8, minor: 1 },
                inode,
            }]
        };
        let only_phase = FileCounters {
            read_calls: 2,
            write_calls: 5,
            read_bytes: 8192,
            write_bytes: 20480,
            io_ns: 700,
            cache_misses: 0,
            fsyncs: 1,
            fsync_ns: 900,
        };
        assert_eq!(file(13), only_phase);
        assert_eq!(
            file(12),
            FileCounters {
                write_calls: 15,
                write_bytes: 20480 + 10 * 4096,
                cache_misses: 3,
                ..only_phase
            }
        );
    }

    #[test]
    fn delta_subtracts_everything() {
        let a = Snapshot::decode(&raw_example(10, 1 << 20, 0));
        let b = Snapshot::decode(&raw_example(4106, 17 << 20, 1 << 20));
        let d = b.delta(&a);
        assert_eq!(d.syscall("write"), (4096, 16 << 20));
        assert_eq!(d.syscalls["write"].latency.total(), 4096);
        assert_eq!(d.own_bytes(&[], Direction::Write), 16 << 20);
        assert_eq!(d.foreign_bytes(&[]), 1 << 20);
        assert_eq!(d.cache_misses, 0);
        assert_eq!(b.delta(&b).block.len(), 0);
    }

    #[test]
    fn kernel_dev_numbers_convert() {
        let d = DevId::from_kernel((259 << 20) | 3);
        assert_eq!(
            d,
            DevId {
                major: 259,
                minor: 3
            }
        );
        assert_eq!(d.to_kernel(), (259 << 20) | 3);
        assert_eq!(
            DevId::from_st_dev(libc::makedev(8, 17)),
            DevId {
                major: 8,
                minor: 17
            }
        );
    }
}
