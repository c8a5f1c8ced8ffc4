//! Traces of an application's file I/O and their replay (docs/replay.md).
//!
//! - [`format`]: the trace itself (calls per thread, files by stable ids, never data) and
//!   its compact, checksummed binary encoding, with a reader that refuses a damaged or
//!   newer file in one sentence.
//! - [`strace`] and [`fio`]: an `strace -f -tt -T -y` log and fio's iolog v2/v3 read as a
//!   trace; a trace written out as fio iolog v3.
//! - [`play`]: the replay of a trace's calls in a directory candor owns, thread by thread,
//!   with the recorded concurrency, and the calls the kernel should count for it.

pub mod fio;
pub mod format;
pub mod play;
pub mod record;
pub mod strace;

pub use format::{Call, FileEntry, Header, Kind, ThreadEntry, Trace};
