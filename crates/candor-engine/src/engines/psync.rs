//! psync: pread/pwrite, one record per call.

use super::shared::{full_pio, EngineError, MoveRecord, RecordIo};

#[derive(Default)]
pub struct Pread;

impl MoveRecord for Pread {
    #[inline(always)]
    fn move_record(&mut self, io: RecordIo) -> Result<(), EngineError> {
        full_pio(io)
    }
}
