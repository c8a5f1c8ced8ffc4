//! stdio: the C library's buffered fwrite/fread (iozone's fwrite/fread tests). The stream
//! is made from candor's own descriptor (opened with O_EXCL/O_NOFOLLOW); fseeko only when
//! the next record is not where the stream already is. Flushing is fflush then fsync.

use super::shared::{timed_loop, Engine, EngineError, Fd, Job, OpenSpec, ThreadStats};
use crate::buffer::AlignedBuf;
use std::io;

pub struct StdioEngine {
    fd: Fd,
    fp: *mut libc::FILE,
    buf: Option<AlignedBuf>,
}

// SAFETY: the FILE* is used by one thread at a time (the engine is moved, never shared).
unsafe impl Send for StdioEngine {}

impl Default for StdioEngine {
    fn default() -> Self {
        StdioEngine {
            fd: Fd::default(),
            fp: std::ptr::null_mut(),
            buf: None,
        }
    }
}

impl Engine for StdioEngine {
    fn open(&mut self, spec: &OpenSpec) -> Result<(), EngineError> {
        // The C library's buffer cannot be O_DIRECT-aligned: the engine table says stdio
        // has no O_DIRECT, so the spec never asks for it.
        self.fd = Fd::open(spec)?;
        let mode: &[u8] = if spec.write { b"r+\0" } else { b"r\0" };
        // SAFETY: fd is open; mode is a C string.
        let fp = unsafe { libc::fdopen(self.fd.raw(), mode.as_ptr() as *const _) };
        if fp.is_null() {
            return Err(EngineError::new(
                "fdopen",
                &spec.path,
                None,
                io::Error::last_os_error(),
            ));
        }
        self.fd.take(); // fclose owns the descriptor now
        self.fd.path = spec.path.clone();
        self.fp = fp;
        self.buf = Some(spec.buffer(spec.record_size, spec.seed)?);
        Ok(())
    }

    fn run(&mut self, job: &Job, stats: &mut ThreadStats) -> Result<(), EngineError> {
        let fp = self.fp;
        let path = self.fd.path.as_path();
        let Some(buf) = self.buf.as_mut() else {
            return Err(EngineError::not_open(&self.fd.path));
        };
        let len = buf.len();
        let mut pos = u64::MAX;
        timed_loop(job, stats, buf, |buf, off, w| {
            // SAFETY: fp is an open stream; buf valid for len bytes.
            unsafe {
                if pos != off && libc::fseeko(fp, off as i64, libc::SEEK_SET) != 0 {
                    return Err(EngineError::new(
                        "fseeko",
                        path,
                        Some(off),
                        io::Error::last_os_error(),
                    ));
                }
                let n = if w {
                    libc::fwrite(buf.as_ptr() as *const _, 1, len, fp)
                } else {
                    libc::fread(buf.as_mut_ptr() as *mut _, 1, len, fp)
                };
                if n != len {
                    pos = u64::MAX;
                    let e = io::Error::last_os_error();
                    let e = if e.raw_os_error().unwrap_or(0) == 0 {
                        io::Error::new(
                            io::ErrorKind::UnexpectedEof,
                            format!("moved {n} of {len} bytes"),
                        )
                    } else {
                        e
                    };
                    return Err(EngineError::new(
                        if w { "fwrite" } else { "fread" },
                        path,
                        Some(off),
                        e,
                    ));
                }
            }
            pos = off + len as u64;
            Ok(())
        })
    }

    fn flush(&mut self) -> Result<(), EngineError> {
        if self.fp.is_null() {
            return Ok(());
        }
        // SAFETY: fp is an open stream.
        unsafe {
            if libc::fflush(self.fp) != 0 {
                return Err(EngineError::new(
                    "fflush",
                    &self.fd.path,
                    None,
                    io::Error::last_os_error(),
                ));
            }
            if libc::fsync(libc::fileno(self.fp)) != 0 {
                return Err(EngineError::new(
                    "fsync",
                    &self.fd.path,
                    None,
                    io::Error::last_os_error(),
                ));
            }
        }
        Ok(())
    }

    fn close(&mut self) -> Result<(), EngineError> {
        if self.fp.is_null() {
            return Ok(());
        }
        let fp = std::mem::replace(&mut self.fp, std::ptr::null_mut());
        // SAFETY: fp is an open stream, closed once.
        if unsafe { libc::fclose(fp) } != 0 {
            return Err(EngineError::new(
                "fclose",
                &self.fd.path,
                None,
                io::Error::last_os_error(),
            ));
        }
        Ok(())
    }
}

impl Drop for StdioEngine {
    fn drop(&mut self) {
        let _ = self.close();
    }
}
