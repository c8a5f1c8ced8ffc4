//! sync: lseek + read/write, as iozone does; the lseek is skipped when the file position is
//! already where the next record starts (sequential tests), as a program would.

use super::shared::{whole_record, EngineError, MoveRecord, RecordIo};

pub struct Seek {
    /// Where the file position is, as far as this engine knows (`u64::MAX`: unknown).
    pos: u64,
}

impl Default for Seek {
    fn default() -> Self {
        Seek { pos: u64::MAX }
    }
}

impl MoveRecord for Seek {
    fn start_pass(&mut self) {
        self.pos = u64::MAX;
    }

    #[inline(always)]
    fn move_record(&mut self, io: RecordIo) -> Result<(), EngineError> {
        let (fd, off, len) = (io.fd, io.off, io.buf.len());
        // System calls, not the C library's wrappers, as psync does: read and write are
        // cancellation points, and in a multi-threaded process their wrappers do two atomic
        // updates per call for a pthread_cancel that candor never uses.
        if self.pos != off {
            // SAFETY: fd is open.
            if unsafe { libc::syscall(libc::SYS_lseek, fd, off as i64, libc::SEEK_SET) } < 0 {
                self.pos = u64::MAX;
                return Err(EngineError::last("lseek", io.path, Some(off)));
            }
        }
        let call = if io.write {
            libc::SYS_write
        } else {
            libc::SYS_read
        };
        // After an error the file position is unknown.
        whole_record(io, ("write", "read"), |fd, at, len, _| {
            // SAFETY: `at` is valid for `len` bytes (whole_record); fd is open.
            unsafe { libc::syscall(call, fd, at, len) as isize }
        })
        .inspect_err(|_| self.pos = u64::MAX)?;
        self.pos = off + len as u64;
        Ok(())
    }
}
