//! Phases: one record per open..close of a regular file by the tracked set (or per file
//! still open when its process ended), decoded from the ring buffer's raw records. This is
//! what `candor audit` rebuilds a program's tests from.

use crate::hist::{Hist, Scale};
use crate::raw::{RawPhase, PHASE_BLKDEV, PHASE_CLOSED, PHASE_DIRECT, PHASE_MERGED, PHASE_OPENED};
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
        }
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
