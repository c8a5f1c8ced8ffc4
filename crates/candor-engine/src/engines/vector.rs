//! vector: preadv/pwritev. Each record travels in up to 16 iovecs of at least 4 KiB (so
//! O_DIRECT alignment holds), which is what makes the vectored path differ from pread.

use super::shared::{EngineError, MoveRecord, OpenSpec, RecordIo};

const MAX_IOV: usize = 16;
const MIN_PIECE: usize = 4096;

pub struct Vectored {
    pieces: usize,
}

impl Default for Vectored {
    fn default() -> Self {
        Vectored { pieces: 1 }
    }
}

impl MoveRecord for Vectored {
    fn opened(&mut self, spec: &OpenSpec) {
        let rs = spec.record_size;
        let mut pieces = (rs / MIN_PIECE).clamp(1, MAX_IOV);
        while pieces > 1 && !rs.is_multiple_of(pieces * 512) {
            pieces -= 1;
        }
        self.pieces = pieces;
    }

    #[inline(always)]
    fn move_record(&mut self, io: RecordIo) -> Result<(), EngineError> {
        let RecordIo {
            fd,
            buf,
            off,
            write: w,
            path,
        } = io;
        let len = buf.len();
        let pieces = self.pieces.clamp(1, MAX_IOV);
        let piece = len / pieces;
        let base = buf.as_mut_ptr();
        // On the stack, rebuilt per call: a few stores beside a system call, and no
        // pointer into the buffer outlives the call that uses it.
        let mut iov = [libc::iovec {
            iov_base: std::ptr::null_mut(),
            iov_len: 0,
        }; MAX_IOV];
        for (k, v) in iov.iter_mut().enumerate().take(pieces) {
            // SAFETY: k * piece < len.
            v.iov_base = unsafe { base.add(k * piece) } as *mut _;
            v.iov_len = if k + 1 == pieces {
                len - k * piece
            } else {
                piece
            };
        }
        // The system call, not the C library's wrapper, as psync does (the wrapper's
        // cancellation bookkeeping). The offset goes as (low, high) words; on a 64-bit
        // kernel the low word holds all of it.
        // SAFETY: every iovec points inside buf, which lives across the call.
        let n = unsafe {
            libc::syscall(
                if w {
                    libc::SYS_pwritev
                } else {
                    libc::SYS_preadv
                },
                fd,
                iov.as_ptr(),
                pieces as libc::c_int,
                off as libc::c_long,
                0 as libc::c_long,
            )
        };
        let op = if w { "pwritev" } else { "preadv" };
        if n < 0 {
            return Err(EngineError::last(op, path, Some(off)));
        }
        if (n as usize) < len {
            return Err(EngineError::short(op, path, off, n as i64, len));
        }
        Ok(())
    }
}
