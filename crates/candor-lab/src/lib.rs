//! Filesystems on loop devices: a backing file, `losetup`, `mkfs.<fs>`, a mount.
//!
//! - [`lab`]: `candor lab create/destroy/list`, a lasting set of filesystems under
//!   `DIR/.candor-lab/` for comparing filesystems without spare disks.
//! - [`scratch`]: a throw-away filesystem for tests, gone when dropped, that no other
//!   process writes to.
//! - [`spec`]: the filesystem kinds and the parsing of `--fs` and `--size`.

pub mod lab;
mod scratch;
pub mod spec;
mod sys;
mod trust;

pub use lab::{
    create, destroy, lab_root, list, CreateReport, CreateRequest, CreatedMember, DestroyReport,
    LabState, Member, MemberStatus, MemberView, Outcome,
};
pub use scratch::{scratch, scratch_device, scratch_in, scratch_parent, ScratchFs};
pub use spec::{check_size, parse_fs_list, parse_size, FsKind};
pub use sys::loop_direct_io;

#[derive(Debug, thiserror::Error)]
pub enum LabError {
    /// The machine cannot make this filesystem (not root, mkfs or losetup missing...).
    #[error("{0}")]
    Unsupported(String),
    #[error("{what} failed: {detail}")]
    Command { what: String, detail: String },
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// Bad input from the user (names, sizes, directories): nothing was done.
    #[error("{0}")]
    Usage(String),
    /// The operation needs root and the caller is not.
    #[error("{0}")]
    NeedsRoot(String),
    /// A step failed at run time; the sentence says what and what to do.
    #[error("{0}")]
    Failed(String),
}

impl LabError {
    /// Whether this machine lacks what was needed (a test is then skipped, not failed).
    pub fn is_unsupported(&self) -> bool {
        matches!(self, LabError::Unsupported(_))
    }
}
