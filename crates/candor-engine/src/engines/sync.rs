//! sync: lseek + read/write, as iozone does; the lseek is skipped when the file position is
//! already where the next record starts (sequential tests), as a program would.

use super::psync::make_buf;
use super::{timed_loop, Engine, EngineError, Fd, Job, OpenSpec, ThreadStats};
use crate::buffer::AlignedBuf;
use std::io;

#[derive(Default)]
pub struct SyncEngine {
    fd: Fd,
    buf: Option<AlignedBuf>,
}

impl Engine for SyncEngine {
    fn open(&mut self, spec: &OpenSpec) -> Result<(), EngineError> {
        self.fd = Fd::open(spec)?;
        self.buf = Some(make_buf(spec)?);
        Ok(())
    }

    fn run(&mut self, job: &Job, stats: &mut ThreadStats) -> Result<(), EngineError> {
        let fd = self.fd.raw();
        let path = self.fd.path.clone();
        let Some(buf) = self.buf.as_mut() else {
            return Ok(());
        };
        let mut pos: u64 = u64::MAX;
        let mut move_record = |buf: &mut AlignedBuf, off: u64, w: bool| {
            if pos != off {
                // SAFETY: fd is open.
                if unsafe { libc::lseek(fd, off as i64, libc::SEEK_SET) } < 0 {
                    return Err(EngineError::new(
                        "lseek",
                        &path,
                        Some(off),
                        io::Error::last_os_error(),
                    ));
                }
            }
            let len = buf.len();
            let mut done = 0usize;
            while done < len {
                // SAFETY: buf valid for len bytes.
                let n = unsafe {
                    if w {
                        libc::write(fd, buf.as_ptr().add(done) as *const _, len - done)
                    } else {
                        libc::read(fd, buf.as_mut_ptr().add(done) as *mut _, len - done)
                    }
                };
                if n < 0 {
                    let e = io::Error::last_os_error();
                    if e.kind() == io::ErrorKind::Interrupted {
                        continue;
                    }
                    pos = u64::MAX;
                    return Err(EngineError::new(
                        if w { "write" } else { "read" },
                        &path,
                        Some(off),
                        e,
                    ));
                }
                if n == 0 {
                    return Err(EngineError::new(
                        "read",
                        &path,
                        Some(off),
                        io::Error::new(
                            io::ErrorKind::UnexpectedEof,
                            "the file ended before the record did",
                        ),
                    ));
                }
                done += n as usize;
            }
            pos = off + len as u64;
            Ok(())
        };
        // --verify off: one branch per record.
        timed_loop(job, stats, |off, w| match job.verify {
            None => move_record(buf, off, w),
            Some(v) => {
                if w {
                    v.stamp(buf.as_mut_slice(), off);
                }
                move_record(buf, off, w)?;
                if !w {
                    v.check(buf.as_slice(), off);
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
