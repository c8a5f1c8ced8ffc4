//! candor's benchmark engine: the plan (`plan`: options and targets in, checked, every test
//! point out; ready-made plans in `plan::presets`), the test catalog (`workload`), access
//! patterns (`pattern`), I/O engines (`engines`, one file each), the run directory that is
//! the only place candor writes (`rundir`), signal handling (`signals`), the runner, and
//! what becomes of results as they arrive (`collect`, `efficiency`, `ceiling`).

pub mod blkid;
pub mod buffer;
pub mod ceiling;
pub mod clock;
pub mod collect;
pub mod device;
pub mod efficiency;
pub mod engines;
mod fsat;
pub mod pattern;
pub mod plan;
pub mod rundir;
pub mod runner;
pub mod signals;
pub mod size;
pub mod special;
pub mod steady;
pub mod verify;
pub mod workload;
