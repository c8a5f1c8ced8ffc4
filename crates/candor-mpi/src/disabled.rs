//! The build without MPI: a `World` that cannot be made, so every `--mpi` run stops at
//! `init` with the sentence that says how to get a build with MPI.

use crate::clock::Offset;
use crate::Error;

enum Never {}

/// No MPI in this build: never constructed.
pub struct World(Never);

impl World {
    pub fn init() -> Result<World, Error> {
        Err(Error::NotBuilt)
    }
    pub fn rank(&self) -> u32 {
        match self.0 {}
    }
    pub fn size(&self) -> u32 {
        match self.0 {}
    }
    pub fn barrier(&self) {
        match self.0 {}
    }
    pub fn processor_name(&self) -> String {
        match self.0 {}
    }
    pub fn library(&self) -> String {
        match self.0 {}
    }
    pub fn all_gather_bytes(&self, _mine: &[u8]) -> Vec<Vec<u8>> {
        match self.0 {}
    }
    pub fn gather_bytes(&self, _mine: &[u8]) -> Option<Vec<Vec<u8>>> {
        match self.0 {}
    }
    pub fn broadcast_bytes(&self, _data: Vec<u8>) -> Vec<u8> {
        match self.0 {}
    }
    pub fn clock_offsets(&self, _now: &dyn Fn() -> u64, _rounds: usize) -> Vec<Offset> {
        match self.0 {}
    }
    pub fn first_done(&self, _stop: &std::sync::atomic::AtomicBool) -> bool {
        match self.0 {}
    }
    pub fn abort(&self, _code: i32) -> ! {
        match self.0 {}
    }
}
