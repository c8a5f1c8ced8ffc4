//! sync: lseek + read/write, as iozone does; the lseek is skipped when the file position is
//! already where the next record starts (sequential tests), as a program would.

use super::shared::{part_moved, EngineError, MoveRecord};
use crate::buffer::AlignedBuf;
use std::path::Path;

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
    fn move_record(
        &mut self,
        fd: i32,
        buf: &mut AlignedBuf,
        off: u64,
        w: bool,
        path: &Path,
    ) -> Result<(), EngineError> {
        // System calls, not the C library's wrappers, as psync does: read and write are
        // cancellation points, and in a multi-threaded process their wrappers do two atomic
        // updates per call for a pthread_cancel that candor never uses.
        if self.pos != off {
            // SAFETY: fd is open.
            if unsafe { libc::syscall(libc::SYS_lseek, fd, off as i64, libc::SEEK_SET) } < 0 {
                self.pos = u64::MAX;
                return Err(EngineError::last("lseek", path, Some(off)));
            }
        }
        let len = buf.len();
        let mut done = 0usize;
        while done < len {
            // SAFETY: buf valid for len bytes.
            let n = unsafe {
                if w {
                    libc::syscall(libc::SYS_write, fd, buf.as_ptr().add(done), len - done)
                } else {
                    libc::syscall(libc::SYS_read, fd, buf.as_mut_ptr().add(done), len - done)
                }
            };
            match part_moved(n as isize, w, ("write", "read"), path, off) {
                Ok(Some(n)) => done += n,
                Ok(None) => continue,
                Err(e) => {
                    self.pos = u64::MAX;
                    return Err(e);
                }
            }
        }
        self.pos = off + len as u64;
        Ok(())
    }
}
