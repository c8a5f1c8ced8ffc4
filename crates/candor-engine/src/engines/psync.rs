//! psync: pread/pwrite, one record per call.

use super::{full_pio, timed_loop, Engine, EngineError, Fd, Job, OpenSpec, ThreadStats};
use crate::buffer::AlignedBuf;
use std::io;

#[derive(Default)]
pub struct PsyncEngine {
    fd: Fd,
    buf: Option<AlignedBuf>,
}

pub(super) fn make_buf(spec: &OpenSpec) -> Result<AlignedBuf, EngineError> {
    AlignedBuf::new(spec.record_size, spec.seed).ok_or_else(|| {
        EngineError::new(
            "allocate",
            &spec.path,
            None,
            io::Error::from(io::ErrorKind::OutOfMemory),
        )
    })
}

impl Engine for PsyncEngine {
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
        timed_loop(job, stats, |off, w| match job.verify {
            None => full_pio(fd, buf, off, w, &path),
            Some(v) => {
                if w {
                    v.stamp(buf.as_mut_slice(), off);
                }
                full_pio(fd, buf, off, w, &path)?;
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
