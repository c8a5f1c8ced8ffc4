//! mmap: the file mapped shared; a write copies a record into the mapping, a read copies
//! it out (so page faults are inside the timing). A new file is sized with ftruncate first.
//! Flushing is msync(MS_SYNC) then fsync. The access hint is given to the mapping too
//! (madvise), where page faults look for it.

use super::shared::{timed_loop, Engine, EngineError, Fd, Job, OpenSpec, ThreadStats};
use crate::buffer::AlignedBuf;
use std::io;

pub struct MmapEngine {
    fd: Fd,
    map: *mut u8,
    len: usize,
    buf: Option<AlignedBuf>,
}

// SAFETY: the mapping is used by one thread at a time.
unsafe impl Send for MmapEngine {}

impl Default for MmapEngine {
    fn default() -> Self {
        MmapEngine {
            fd: Fd::default(),
            map: std::ptr::null_mut(),
            len: 0,
            buf: None,
        }
    }
}

impl Engine for MmapEngine {
    fn open(&mut self, spec: &OpenSpec) -> Result<(), EngineError> {
        // A mapping goes through the page cache by definition: the engine table says mmap
        // has no O_DIRECT, so the spec never asks for it.
        let mut plain = spec.clone();
        plain.write = true; // PROT_WRITE|MAP_SHARED needs O_RDWR even for reads
        self.fd = Fd::open(&plain)?;
        let len = spec.file_size as usize;
        if spec.create {
            // SAFETY: fd is open.
            if unsafe { libc::ftruncate(self.fd.raw(), spec.file_size as i64) } != 0 {
                return Err(EngineError::new(
                    "ftruncate",
                    &spec.path,
                    None,
                    io::Error::last_os_error(),
                ));
            }
        }
        let prot = if spec.write {
            libc::PROT_READ | libc::PROT_WRITE
        } else {
            libc::PROT_READ
        };
        // SAFETY: mapping a file we own of the given length.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                prot,
                libc::MAP_SHARED,
                self.fd.raw(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(EngineError::new(
                "mmap",
                &spec.path,
                None,
                io::Error::last_os_error(),
            ));
        }
        self.map = p as *mut u8;
        self.len = len;
        // The access hint reaches page faults through the mapping, not the descriptor: a
        // fault in a mapping without MADV_RANDOM reads around the faulting page (the
        // kernel's mmap read-around, up to read_ahead_kb), whatever posix_fadvise said of
        // the file. fio's mmap engine advises the mapping as its other engines advise the
        // file; without it candor's uncached random mmap reads found most of their pages
        // read in around an earlier fault (the witness said `mixed`).
        let advice = match spec.advice {
            candor_model::Fadvise::None => None,
            candor_model::Fadvise::Random => Some(libc::MADV_RANDOM),
            candor_model::Fadvise::Sequential => Some(libc::MADV_SEQUENTIAL),
        };
        if let Some(a) = advice {
            // SAFETY: p/len describe the mapping just made.
            if unsafe { libc::madvise(p, len, a) } != 0 {
                return Err(EngineError::new(
                    "madvise",
                    &spec.path,
                    None,
                    io::Error::last_os_error(),
                ));
            }
        }
        self.buf = Some(spec.buffer(spec.record_size, spec.seed)?);
        Ok(())
    }

    fn run(&mut self, job: &Job, stats: &mut ThreadStats) -> Result<(), EngineError> {
        let map = self.map;
        let maplen = self.len;
        let path = self.fd.path.as_path();
        let Some(buf) = self.buf.as_mut() else {
            return Err(EngineError::not_open(path));
        };
        let len = buf.len();
        timed_loop(job, stats, buf, |buf, off, w| {
            let o = off as usize;
            if o + len > maplen {
                return Err(EngineError::new(
                    "mmap copy",
                    path,
                    Some(off),
                    io::Error::from(io::ErrorKind::UnexpectedEof),
                ));
            }
            // SAFETY: o + len lies inside the mapping; buf is len bytes.
            unsafe {
                if w {
                    std::ptr::copy_nonoverlapping(buf.as_ptr(), map.add(o), len);
                } else {
                    std::ptr::copy_nonoverlapping(map.add(o), buf.as_mut_ptr(), len);
                }
            }
            Ok(())
        })
    }

    fn flush(&mut self) -> Result<(), EngineError> {
        if !self.map.is_null() {
            // SAFETY: map/len describe our mapping.
            if unsafe { libc::msync(self.map as *mut _, self.len, libc::MS_SYNC) } != 0 {
                return Err(EngineError::new(
                    "msync",
                    &self.fd.path,
                    None,
                    io::Error::last_os_error(),
                ));
            }
        }
        self.fd.fsync()
    }

    fn close(&mut self) -> Result<(), EngineError> {
        if !self.map.is_null() {
            // SAFETY: unmapping our own mapping once.
            unsafe { libc::munmap(self.map as *mut _, self.len) };
            self.map = std::ptr::null_mut();
        }
        self.fd.close()
    }
}

impl Drop for MmapEngine {
    fn drop(&mut self) {
        let _ = self.close();
    }
}
