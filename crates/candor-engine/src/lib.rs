//! candor's benchmark engine: the test catalog (`workload`), access patterns (`pattern`),
//! I/O engines (`engines`, one file each), the plan (`plan`), the run directory that is the
//! only place candor writes (`rundir`), signal handling (`signals`) and the runner.

pub mod buffer;
pub mod clock;
pub mod engines;
pub mod pattern;
pub mod plan;
pub mod rundir;
pub mod runner;
pub mod signals;
pub mod size;
pub mod special;
pub mod verify;
pub mod workload;
