//! How tests are run: everything the plan decides beside its points. The runner reads it;
//! it lives with the plan so that the plan never needs the runner.

use crate::buffer::BufferPattern;
use crate::verify::VerifyConfig;

/// How tests are run (everything but the plan's points).
#[derive(Clone, Debug)]
pub struct RunSettings {
    pub direct: bool,
    pub osync: bool,
    pub fsync_in_timing: bool,
    pub close_in_timing: bool,
    pub keep_cache: bool,
    /// Also write the kernel's drop_caches before device-meant reads (root only).
    pub drop_caches: bool,
    pub repeat: u32,
    pub stride: u64,
    pub mix_read_pct: u32,
    pub stonewall: bool,
    /// Cap on one repetition's I/O time.
    pub runtime_ns: Option<u64>,
    /// Loop over the file until `runtime_ns` ends (fio's time_based) instead of one pass.
    pub time_based: bool,
    /// CPUs the I/O threads are pinned to: thread i on cpus[i % len] (empty: not pinned).
    pub cpus: Vec<usize>,
    pub seed: u64,
    /// Entries per thread for the metadata tests.
    pub meta_files: u64,
    /// `--verify`: every record written carries a header, every record read is checked.
    pub verify: Option<VerifyConfig>,
    /// What every buffer is filled with (`--buffer-pattern`).
    pub buffer_pattern: BufferPattern,
    /// `--fadvise`: the access hint each test's files get.
    pub fadvise: crate::workload::Hint,
    /// `--ramp`: each test runs this long, unmeasured, before its first repetition.
    pub ramp_ns: Option<u64>,
    /// `--steady-state`: each test runs in rounds (time-based repetitions of
    /// `runtime_ns`) until a window of them is steady, or the most rounds have run.
    pub steady: Option<crate::steady::Criteria>,
    /// `--precondition`: sequential passes over each test's files, then random overwrites
    /// of one file set's size, before the test.
    pub precondition: Option<u32>,
    /// The options advice depends on (`candor_model::advice::Given`), for the whole run:
    /// the runner narrows `direct_accepted`, `file_size_accepted` and `fadvise_accepted`
    /// to each test.
    pub given: candor_model::advice::Given,
}
