//! Fault injection for candor's tests: `candor-faultfs`, a FUSE filesystem that passes
//! through to a backing directory and fails chosen reads and writes (EIO at byte offsets,
//! ENOSPC after a number of bytes, files that vanish), and [`FaultFs`], the test helper
//! that mounts it in a child process and unmounts it when dropped.
//!
//! ```no_run
//! use candor_faultfs::{FaultFs, Faults, MountError};
//! # let (backing, mnt) = (std::path::Path::new("/tmp/b"), std::path::Path::new("/tmp/m"));
//! let fs = match FaultFs::mount(backing, mnt, &Faults::new().eio_read(4096..8192)) {
//!     Ok(fs) => fs,
//!     Err(MountError::Skip(why)) => { eprintln!("skipped: {why}"); return; }
//!     Err(e) => panic!("{e}"),
//! };
//! // Reads of bytes 4096..8192 of any file under fs.path() now fail with EIO.
//! ```

pub mod faults;
mod fs;
mod mount;

pub use faults::{Fault, Faults};
pub use fs::serve;
pub use mount::{binary_path, FaultFs, MountError};
