//! The witness: observes the kernel around and during every test and turns what it saw
//! into `candor_model::Witness` (figures plus a verdict in plain words).
//!
//! The runner's side of the contract is small: `Witness::new` once per target,
//! `begin` before a repetition's timed region, `timed_end` when it ends, `finish` after the
//! runner has flushed the data to the device; `combine` merges repetitions into the
//! test's witness. `describe_host` and `describe_target` give the host description.

pub mod device;
pub mod filecache;
pub mod host;
pub mod verdict;
pub mod procfs;

use candor_model::{Host, TargetInfo};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `--witness auto|procfs|bpf|off`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Auto,
    Procfs,
    Bpf,
    Off,
}

#[derive(Clone, Debug)]
pub struct Config {
    pub mode: Mode,
    /// Timeline sampling period (`--witness-interval`, default 100 ms).
    pub interval: Duration,
}

/// What the runner tells the witness about a repetition when it ends.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    pub test: String,
    /// "device" or "cache": what the test meant to measure.
    pub intent: String,
    pub is_write: bool,
    pub direct: bool,
    /// Bytes the application asked for in the timed region.
    pub app_read_bytes: u64,
    pub app_write_bytes: u64,
    /// Seconds of the headline timed region.
    pub timed_seconds: f64,
    /// Headline throughput (bytes/s) the runner computed.
    pub headline_bps: f64,
}

/// The witness of one target for the whole run.
pub struct Witness {
    _target: PathBuf,
    _config: Config,
}

/// The observation of one repetition.
pub struct Watch {}

impl Witness {
    /// Sets the witness up for a target. The second value is a line to show the person when
    /// the requested source is not available and another is used (never an error).
    pub fn new(target: &Path, config: Config) -> (Witness, Option<String>) {
        (
            Witness {
                _target: target.to_path_buf(),
                _config: config,
            },
            None,
        )
    }

    /// Takes the first sample before a repetition's timed region; `files` are the test's files.
    pub fn begin(&self, _files: &[PathBuf]) -> Watch {
        Watch {}
    }
}

impl Watch {
    /// Marks the end of the timed region (second sample; the timeline stops).
    pub fn timed_end(&mut self) {}

    /// Takes the last sample, after the runner has flushed the files, and judges.
    pub fn finish(self, outcome: &Outcome) -> candor_model::Witness {
        candor_model::Witness {
            source: "off".into(),
            verdict: "unverified".into(),
            explanation: format!("{}: the witness is not built yet", outcome.test),
            ..Default::default()
        }
    }
}

/// Merges the witnesses of a test's repetitions into the test's witness.
pub fn combine(reps: Vec<candor_model::Witness>) -> Option<candor_model::Witness> {
    reps.into_iter().last()
}

/// The machine (CPU, caches, RAM, kernel).
pub fn describe_host() -> Host {
    host::describe_host()
}

/// The target's filesystem, mount options and block device.
pub fn describe_target(path: &Path) -> TargetInfo {
    host::describe_target(path)
}
