//! Fault injection for candor's tests: `candor-faultfs`, a FUSE filesystem that passes
//! through to a backing directory and fails chosen reads and writes (EIO at byte offsets,
//! ENOSPC after a number of bytes, files that vanish), and [`FaultFs`], the test helper
//! that mounts it in a child process and unmounts it when dropped.
//!
//! ```no_run
//! use candor_faultfs::{FaultFs, Faults, MountError};
//! # let (backing, mnt) = (std::path::Path::new("/tmp/b"), std::path::Path::new("/tmp/m"));
//! // A machine that cannot mount FUSE skips the test; a mount that fails where it can
//! // fails the test.
//! let mounted = FaultFs::mount(backing, mnt, &Faults::new().eio_read(4096..8192));
//! let Some(fs) = candor_testkit::need_or(mounted, MountError::is_skip) else {
//!     return;
//! };
//! // Reads of bytes 4096..8192 of any file under fs.path() now fail with EIO.
//! ```

pub mod faults;
mod fs;
mod mount;

pub use faults::{Fault, Faults};
pub use fs::serve;
pub use mount::{binary_path, FaultFs, MountError};
