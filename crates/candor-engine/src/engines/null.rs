//! null: no I/O at all. Every operation goes through the same timed loop, so its rate is
//! the ceiling of candor's own harness (fio's null engine is the equivalent).

use super::shared::{op_loop, Engine, EngineError, Job, OpenSpec, ThreadStats};

#[derive(Default)]
pub struct NullEngine;

impl Engine for NullEngine {
    fn open(&mut self, _spec: &OpenSpec) -> Result<(), EngineError> {
        Ok(())
    }

    fn run(&mut self, job: &Job, stats: &mut ThreadStats) -> Result<(), EngineError> {
        op_loop(job, stats, |off, _| {
            std::hint::black_box(off);
            Ok(())
        })
    }

    fn flush(&mut self) -> Result<(), EngineError> {
        Ok(())
    }

    fn close(&mut self) -> Result<(), EngineError> {
        Ok(())
    }
}
