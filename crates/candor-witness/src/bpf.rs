//! The eBPF source: exact attribution of block requests, syscalls and page-cache misses to
//! candor's own processes. Not built yet: [`open`] says so, and the witness falls back to
//! procfs with that line.

use crate::host::Placement;
use crate::source::Source;
use std::path::Path;

/// Opens the eBPF source for a target, or says in one line why it cannot.
pub fn open(_target: &Path, _placement: Option<&Placement>) -> Result<Box<dyn Source>, String> {
    Err("this build of candor has no eBPF witness yet".into())
}
