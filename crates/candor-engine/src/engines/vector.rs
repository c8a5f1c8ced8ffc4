//! vector: preadv/pwritev. Each record travels in up to 16 iovecs of at least 4 KiB (so
//! O_DIRECT alignment holds), which is what makes the vectored path differ from pread.

use super::psync::make_buf;
use super::{timed_loop, Engine, EngineError, Fd, Job, OpenSpec, ThreadStats};
use crate::buffer::AlignedBuf;
use std::io;

const MAX_IOV: usize = 16;
const MIN_PIECE: usize = 4096;

#[derive(Default)]
pub struct VectorEngine {
    fd: Fd,
    buf: Option<AlignedBuf>,
    pieces: usize,
}

impl Engine for VectorEngine {
    fn open(&mut self, spec: &OpenSpec) -> Result<(), EngineError> {
        self.fd = Fd::open(spec)?;
        self.buf = Some(make_buf(spec)?);
        let rs = spec.record_size;
        let mut pieces = (rs / MIN_PIECE).clamp(1, MAX_IOV);
        while pieces > 1 && !rs.is_multiple_of(pieces * 512) {
            pieces -= 1;
        }
        self.pieces = pieces;
        Ok(())
    }

    fn run(&mut self, job: &Job, stats: &mut ThreadStats) -> Result<(), EngineError> {
        let fd = self.fd.raw();
        let path = self.fd.path.clone();
        let Some(buf) = self.buf.as_mut() else {
            return Ok(());
        };
        let len = buf.len();
        let pieces = self.pieces.max(1);
        let piece = len / pieces;
        let mut iov = [libc::iovec {
            iov_base: std::ptr::null_mut(),
            iov_len: 0,
        }; MAX_IOV];
        for (k, v) in iov.iter_mut().enumerate().take(pieces) {
            // SAFETY: k * piece < len.
            v.iov_base = unsafe { buf.as_mut_ptr().add(k * piece) } as *mut _;
            v.iov_len = if k + 1 == pieces {
                len - k * piece
            } else {
                piece
            };
        }
        let verify = job.verify;
        let base = buf.as_mut_ptr();
        let move_record = |off: u64, w: bool| {
            // SAFETY: every iovec points inside buf.
            let n = unsafe {
                if w {
                    libc::pwritev(fd, iov.as_ptr(), pieces as i32, off as i64)
                } else {
                    libc::preadv(fd, iov.as_ptr(), pieces as i32, off as i64)
                }
            };
            if n < 0 {
                return Err(EngineError::new(
                    if w { "pwritev" } else { "preadv" },
                    &path,
                    Some(off),
                    io::Error::last_os_error(),
                ));
            }
            if (n as usize) < len {
                return Err(EngineError::new(
                    if w { "pwritev" } else { "preadv" },
                    &path,
                    Some(off),
                    io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        format!("moved {n} of {len} bytes"),
                    ),
                ));
            }
            Ok(())
        };
        // --verify off: one branch per record.
        timed_loop(job, stats, |off, w| match verify {
            None => move_record(off, w),
            Some(v) => {
                if w {
                    // SAFETY: base is valid for len bytes, and no other reference to the
                    // buffer is live while no call is using the iovecs.
                    v.stamp(unsafe { std::slice::from_raw_parts_mut(base, len) }, off);
                }
                move_record(off, w)?;
                if !w {
                    // SAFETY: as above; the read has completed.
                    v.check(unsafe { std::slice::from_raw_parts(base, len) }, off);
                }
                Ok(())
            }
        })
    }

    fn flush(&mut self) -> Result<(), EngineError> {
        self.fd.fsync()
    }

    fn close(&mut self) -> Result<(), EngineError> {
        self.fd.close()
    }
}
