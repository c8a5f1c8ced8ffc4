//! What a test's warm-up, preconditioning and steady-state rounds were, as saved
//! (docs/methodology.md, "Steady state, preconditioning and warm-up"; docs/results-schema.md).

use serde::{Deserialize, Serialize};

/// `--steady-state`: the rounds a test ran, and whether a window of them was steady on the
/// application's figure and on the device's.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct SteadyState {
    /// A window of rounds met the criteria before the last round allowed.
    pub attained: bool,
    /// The round (counted from 1) that closed the first steady window; None when not attained.
    pub round: Option<u32>,
    /// Rounds that ran (the round reached, or the maximum).
    pub rounds_run: u32,
    /// The criteria: rounds in the window, the largest range and slope excursion as
    /// shares of the window's average, each round's length and the most rounds.
    pub window: u32,
    pub range_limit: f64,
    pub slope_limit: f64,
    pub round_seconds: f64,
    pub max_rounds: u32,
    /// What the verdict rests on.
    pub basis: SteadyBasis,
    /// The device moved (almost) nothing over the window: the figure is the page cache's
    /// (or memory's), whatever its steadiness.
    pub device_idle: bool,
    /// The window judged (the steady one, else the last): on the application's figure and on
    /// the device's (None when the witness saw no device figure).
    pub app: Option<WindowFit>,
    pub device: Option<WindowFit>,
    /// Every round's figures, in order.
    #[serde(deserialize_with = "crate::bounded::vec")]
    pub rounds: Vec<SteadyRound>,
    /// One sentence: the verdict, the round, and what it rests on.
    pub explanation: String,
}

/// What a steady-state verdict rests on.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum SteadyBasis {
    /// The application's figure and the device's were both judged.
    #[default]
    Device,
    /// The device was idle over the window: only the application's figure was judged, and
    /// its steady state is the page cache's.
    PageCache,
    /// The witness gave no device figure (off, unverified, or a filesystem in memory): only
    /// the application's figure was judged.
    Application,
}

impl SteadyBasis {
    pub fn name(self) -> &'static str {
        match self {
            SteadyBasis::Device => "device",
            SteadyBasis::PageCache => "page_cache",
            SteadyBasis::Application => "application",
        }
    }
}

/// One round of a steady-state test.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct SteadyRound {
    /// Counted from 1.
    pub round: u32,
    /// The application's throughput over the round, bytes/s.
    pub app_bps: f64,
    /// The device's, in the test's direction, over the same seconds (None when the witness
    /// gave no device figure).
    pub device_bps: Option<f64>,
    /// The round's timed seconds, and when it began (seconds since the run started).
    pub seconds: f64,
    pub started_s: f64,
}

/// The criteria applied to one window of rounds, for one figure.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct WindowFit {
    /// The window's first and last rounds (counted from 1).
    pub first_round: u32,
    pub last_round: u32,
    pub average: f64,
    pub min: f64,
    pub max: f64,
    /// max - min, and as a share of the average.
    pub range: f64,
    pub range_share: f64,
    /// The least-squares line over the window: its slope per round and its value at the
    /// first round.
    pub slope: f64,
    pub intercept: f64,
    /// How far the line moves across the window, |slope| x (rounds - 1), and as a share of
    /// the average.
    pub slope_excursion: f64,
    pub slope_share: f64,
    /// Both shares within their limits.
    pub steady: bool,
}

/// `--precondition`: the writes made to a test's files before its measurements, and what the
/// device took of them.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct Precondition {
    /// Sequential passes over the file set, then random overwrites of one file set's size
    /// in blocks of `random_block` bytes.
    pub passes: u32,
    pub sequential_bytes: u64,
    pub random_bytes: u64,
    pub random_block: u64,
    pub seconds: f64,
    /// Bytes the witness saw the device write meanwhile (the process's own with eBPF);
    /// None when it saw no device.
    pub device_write_bytes: Option<u64>,
    /// device_write_bytes over the bytes written.
    pub device_share: Option<f64>,
    /// The device took (nearly) all of it: 90% or more.
    pub reached_device: bool,
    /// One sentence.
    pub explanation: String,
}

/// `--ramp`: the warm-up run before a test's measurements (not measured).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct Ramp {
    /// The warm-up asked for, and how long it ran.
    pub asked_seconds: f64,
    pub seconds: f64,
    pub ops: u64,
    pub bytes: u64,
}
