//! The replay: a trace's files laid out in a directory candor owns, then every thread's
//! calls issued in order on its own thread, all threads together. Files are named by their
//! trace id (`n7`) and only ever reached through the directory's descriptor with
//! `O_NOFOLLOW`: a trace's paths are never used as paths, and nothing it says can name a
//! file outside the directory or a device.
//!
//! - [`layout`]: the trace's files made in the repetition's directory, by id.
//! - [`fds`]: the descriptors the replayed processes hold, shared by their threads.
//! - [`call`]: one recorded call made again on the kernel.
//! - [`player`]: every thread's calls in order, all threads together, in the recorded
//!   order where calls did not overlap.
//! - [`fidelity`]: the replay's outcome against the recording's, and the calls the kernel
//!   should count.

mod call;
mod fds;
mod fidelity;
mod layout;
mod player;

pub use call::open_flags;
pub use fds::{prepare, Prepared};
pub use fidelity::expected;
pub use layout::{lay_out, name_of, paths, Layout};
pub use player::play;

use crate::format::Kind;
use candor_stats::Histogram;
use std::collections::BTreeMap;
use std::os::fd::OwnedFd;

/// `--timing`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Timing {
    /// Every call as soon as the one before it in its thread has returned.
    Fast,
    /// Each call at its recorded time after the replay's start, gaps multiplied by the factor
    /// (`original` is 1).
    Scaled(f64),
}

impl Timing {
    pub fn parse(s: &str) -> Result<Timing, String> {
        match s {
            "fast" => Ok(Timing::Fast),
            "original" => Ok(Timing::Scaled(1.0)),
            _ => {
                let x = s.strip_prefix("scale=").and_then(|x| x.parse::<f64>().ok());
                match x {
                    Some(x) if x.is_finite() && x > 0.0 && x <= 1000.0 => Ok(Timing::Scaled(x)),
                    _ => Err(format!(
                        "'{s}' is not a timing: choose fast, original or scale=X (the recorded gaps times X, e.g. scale=0.5 for half)"
                    )),
                }
            }
        }
    }

    pub fn name(&self) -> String {
        match self {
            Timing::Fast => "fast".into(),
            Timing::Scaled(x) if *x == 1.0 => "original".into(),
            Timing::Scaled(x) => format!("scale={x}"),
        }
    }
}

/// The error of the system call that just failed.
fn last_error() -> std::io::Error {
    std::io::Error::last_os_error()
}

/// The calls of one kind the replay made.
#[derive(Debug, Default, Clone)]
pub struct KindStats {
    pub calls: u64,
    pub errors: u64,
    pub bytes: u64,
    pub latency: Histogram,
}

/// A call whose outcome in the replay was not the recording's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Divergence {
    /// Thread and call, both from 1 as the sentences say them.
    pub thread: usize,
    pub call: usize,
    pub kind: Kind,
    pub what: String,
}

impl Divergence {
    pub fn sentence(&self) -> String {
        format!(
            "call {} of thread {} ({}) {}",
            self.call,
            self.thread,
            self.kind.name(),
            self.what
        )
    }
}

/// What a replay did.
#[derive(Debug, Default)]
pub struct Played {
    pub kinds: BTreeMap<Kind, KindStats>,
    /// From the first thread's start to the last thread's end.
    pub seconds: f64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub read_ops: u64,
    pub write_ops: u64,
    pub read_latency: Histogram,
    pub write_latency: Histogram,
    /// The first divergences (at most `MAX_KEPT`) and how many there were in all.
    pub divergences: Vec<Divergence>,
    pub diverged: u64,
    /// Descriptors the replay still holds (opens the recording saw fail, descriptors its
    /// threads never closed): closed by the caller after the measured region.
    pub leftover: Vec<OwnedFd>,
    /// The replay was asked to stop before every call was made.
    pub stopped: bool,
}

impl Played {
    /// Every call's latency, whatever its kind.
    pub fn all_latency(&self) -> Histogram {
        let mut h = Histogram::new();
        for k in self.kinds.values() {
            h.merge(&k.latency);
        }
        h
    }
}

/// The divergences a replay keeps to say (it counts them all).
const MAX_KEPT: usize = 20;
