//! Phases: one record per open..close of a regular file by the tracked set (or per file
//! still open when its process ended), decoded from the ring buffer's raw records. This is
//! what `candor audit` rebuilds a program's tests from.

use crate::hist::{Hist, Scale};
use crate::raw::{
    chan_name, ChanKey, ChanStat, RawPhase, PHASE_BLKDEV, PHASE_CLOSED, PHASE_DIRECT, PHASE_MERGED,
    PHASE_OPENED,
};
use crate::snapshot::DevId;
use serde::Serialize;

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Phase {
    pub tgid: u32,
    pub fd: u32,
    /// The filesystem's device (st_dev) and the file's inode.
    pub dev: DevId,
    pub inode: u64,
    /// The path as the program passed it to openat (relative paths stay relative);
    /// None when the file was opened before tracing began.
    pub path: Option<String>,
    /// False when the process ended (or tracing stopped) with the file still open.
    pub closed: bool,
    /// The file was in O_DIRECT mode during the phase (from its openat, or from the first
    /// call the tracer saw on a descriptor it did not see opened, such as dd's dup2'd
    /// output). An fcntl(F_SETFL) that turns O_DIRECT on or off ends the phase there and
    /// starts another in the new mode.
    pub direct: bool,
    /// The descriptor is a block device: `dev` is the device itself and `inode` its node
    /// in /dev.
    pub block_device: bool,
    /// CLOCK_MONOTONIC nanoseconds: open (or first sight), first and last I/O, close.
    pub open_ns: u64,
    pub first_io_ns: Option<u64>,
    pub last_io_ns: Option<u64>,
    pub close_ns: Option<u64>,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub read_calls: u64,
    pub write_calls: u64,
    /// Nanoseconds inside read and write calls, and each measured apart.
    pub io_ns: u64,
    pub read_ns: u64,
    pub write_ns: u64,
    /// 0 for a record of one phase; otherwise the record holds this many phases that
    /// ended while the ring buffer was full, merged per process and file (their times then
    /// span the first open to the last close).
    pub merged: u64,
    pub fsyncs: u64,
    pub fsync_ns: u64,
    pub lseeks: u64,
    /// Bytes per read/write call, log2.
    pub record_sizes: Hist,
    /// File offset of each read/write, log2 (positional calls: their offset; others: the
    /// position the tracer follows through lseek and the bytes moved).
    pub offsets: Hist,
    /// None for read and write calls on a descriptor; "aio", "io_uring" or "mmap" for the
    /// bytes a process moved through that channel on this file over the whole trace (one
    /// phase per process, file and channel; `fd` is u32::MAX, `io_ns` 0: the time inside
    /// the channel is not measured; the calls are iocbs, completions or faults/dirtied
    /// folios; see docs/bpf.md).
    pub channel: Option<&'static str>,
}

impl Phase {
    pub fn decode(r: &RawPhase) -> Phase {
        let path = if r.flags & PHASE_OPENED != 0 {
            let end = r.path.iter().position(|&b| b == 0).unwrap_or(r.path.len());
            Some(String::from_utf8_lossy(&r.path[..end]).into_owned())
        } else {
            None
        };
        let closed = r.flags & PHASE_CLOSED != 0;
        let nz = |v: u64| if v == 0 { None } else { Some(v) };
        Phase {
            tgid: r.tgid,
            fd: r.fd,
            dev: DevId::from_kernel(r.dev),
            inode: r.ino,
            path,
            closed,
            direct: r.flags & PHASE_DIRECT != 0,
            block_device: r.flags & PHASE_BLKDEV != 0,
            open_ns: r.open_ns,
            first_io_ns: nz(r.first_ns),
            last_io_ns: nz(r.last_ns),
            close_ns: if closed { nz(r.close_ns) } else { None },
            read_bytes: r.rbytes,
            write_bytes: r.wbytes,
            read_calls: r.rcalls,
            write_calls: r.wcalls,
            io_ns: r.io_ns,
            read_ns: r.rio_ns,
            write_ns: r.wio_ns,
            merged: if r.flags & PHASE_MERGED != 0 {
                r.merged.max(1)
            } else {
                0
            },
            fsyncs: r.fsyncs,
            fsync_ns: r.fsync_ns,
            lseeks: r.lseeks,
            record_sizes: Hist::from_u32(Scale::Log2, &r.size_hist),
            offsets: Hist::from_u32(Scale::Log2, &r.off_hist),
            channel: None,
        }
    }

    /// The phase of what one process moved through one channel on one file (None for an
    /// unknown channel number).
    pub fn from_channel(k: &ChanKey, s: &ChanStat) -> Option<Phase> {
        let channel = chan_name(k.chan)?;
        let nz = |v: u64| if v == 0 { None } else { Some(v) };
        Some(Phase {
            tgid: k.tgid,
            fd: u32::MAX,
            dev: DevId::from_kernel(k.dev),
            inode: k.ino,
            path: None,
            closed: true,
            direct: s.flags & u64::from(PHASE_DIRECT) != 0,
            block_device: s.flags & u64::from(PHASE_BLKDEV) != 0,
            open_ns: s.first_ns,
            first_io_ns: nz(s.first_ns),
            last_io_ns: nz(s.last_ns),
            close_ns: nz(s.last_ns),
            read_bytes: s.rbytes,
            write_bytes: s.wbytes,
            read_calls: s.rcalls,
            write_calls: s.wcalls,
            io_ns: 0,
            read_ns: 0,
            write_ns: 0,
            fsyncs: s.fsyncs,
            fsync_ns: 0,
            lseeks: 0,
            record_sizes: Hist::from_u32(Scale::Log2, &s.size_hist),
            offsets: Hist::from_u32(Scale::Log2, &[0; crate::raw::L2_BUCKETS]),
            channel: Some(channel),
            merged: 0,
        })
    }

    /// "read", "write", "both" or "none".
    pub fn direction(&self) -> &'static str {
        match (self.read_bytes > 0, self.write_bytes > 0) {
            (true, true) => "both",
            (true, false) => "read",
            (false, true) => "write",
            (false, false) => "none",
        }
    }

    /// Wall nanoseconds from open (or first sight) to close or last I/O.
    pub fn wall_ns(&self) -> u64 {
        let end = self.close_ns.or(self.last_io_ns).unwrap_or(self.open_ns);
        end.saturating_sub(self.open_ns)
    }
}

#[cfg(test)]
#[allow(clippy::field_reassign_with_default)]
mod tests {
    use super::*;
    use crate::hist::l2_bucket;

    #[test]
    fn decodes_a_closed_write_phase() {
        let mut r = RawPhase::default();
        r.tgid = 7;
        r.fd = 3;
        r.dev = (8 << 20) | 1;
        r.ino = 99;
        r.flags = PHASE_OPENED | PHASE_CLOSED;
        r.open_ns = 1_000;
        r.first_ns = 2_000;
        r.last_ns = 9_000;
        r.close_ns = 10_000;
        r.wbytes = 16 << 20;
        r.wcalls = 4096;
        r.size_hist[l2_bucket(4096, 64)] = 4096;
        r.path[..10].copy_from_slice(b"/tmp/a.dat");
        let p = Phase::decode(&r);
        assert_eq!(p.path.as_deref(), Some("/tmp/a.dat"));
        assert_eq!(p.dev, DevId { major: 8, minor: 1 });
        assert_eq!(p.direction(), "write");
        assert_eq!(p.wall_ns(), 9_000);
        assert_eq!(p.record_sizes.to_dump().buckets, vec![[4096, 4096]]);
        assert_eq!(p.close_ns, Some(10_000));
        assert!(!p.direct);
        r.flags |= PHASE_DIRECT;
        assert!(Phase::decode(&r).direct);
    }

    #[test]
    fn a_channel_record_is_a_closed_phase_tagged_with_its_channel() {
        let k = ChanKey {
            tgid: 9,
            dev: (7 << 20) | 3,
            ino: 12,
            chan: crate::raw::CHAN_URING,
            pad: 0,
        };
        let mut s = ChanStat::default();
        s.rbytes = 32 << 20;
        s.rcalls = 8192;
        s.first_ns = 100;
        s.last_ns = 900;
        s.flags = u64::from(PHASE_DIRECT);
        s.size_hist[l2_bucket(4096, 64)] = 8192;
        let p = Phase::from_channel(&k, &s).expect("a known channel");
        assert_eq!(p.channel, Some("io_uring"));
        assert_eq!(p.dev, DevId { major: 7, minor: 3 });
        assert_eq!((p.open_ns, p.close_ns), (100, Some(900)));
        assert!(p.closed && p.direct && !p.block_device);
        assert_eq!((p.read_bytes, p.read_calls, p.io_ns), (32 << 20, 8192, 0));
        assert_eq!(p.record_sizes.to_dump().buckets, vec![[4096, 8192]]);
        assert_eq!(p.fd, u32::MAX);
        let unknown = ChanKey { chan: 9, ..k };
        assert_eq!(Phase::from_channel(&unknown, &s), None);
    }

    #[test]
    fn a_file_opened_before_tracing_has_no_path() {
        let mut r = RawPhase::default();
        r.open_ns = 5;
        r.rbytes = 1;
        let p = Phase::decode(&r);
        assert_eq!(p.path, None);
        assert!(!p.closed);
        assert_eq!(p.close_ns, None);
        assert_eq!(p.direction(), "read");
    }
}
