//! psync: pread/pwrite, one record per call.

use super::shared::{full_pio, EngineError, MoveRecord};
use crate::buffer::AlignedBuf;
use std::path::Path;

#[derive(Default)]
pub struct Pread;

impl MoveRecord for Pread {
    #[inline(always)]
    fn move_record(
        &mut self,
        fd: i32,
        buf: &mut AlignedBuf,
        off: u64,
        write: bool,
        path: &Path,
    ) -> Result<(), EngineError> {
        full_pio(fd, buf, off, write, path)
    }
}
