//! What a person asked of `candor run`: the vocabularies (engine, witness source, buffer
//! pattern) already typed by the command line, lists, sizes and durations as they were
//! written, so that the plan step can say in one sentence which one is wrong and how.
//! The small parsers here are pure, with their tests beside them.

use super::PlanError;
use crate::engines::EngineKind;
use crate::size::parse_size;
use crate::verify::BufferPattern;
use std::time::Duration;

/// The defaults of the options that have one (the command line shows them in its help).
pub const STRIDE: u64 = 17;
pub const MIX_READ_PCT: u32 = 50;
pub const SEED: u64 = 0x0c4a_d0c4;
pub const META_FILES: u64 = 1000;
pub const WITNESS_INTERVAL: &str = "100ms";

/// `candor run`'s options, before they are checked against each other and the targets.
#[derive(Clone, Debug)]
pub struct RunOptions {
    pub tests: Option<String>,
    pub file_size: Option<String>,
    pub record_size: Option<String>,
    /// iozone -a's sweep.
    pub auto: bool,
    pub min_file_size: Option<String>,
    pub max_file_size: Option<String>,
    pub min_record_size: Option<String>,
    pub max_record_size: Option<String>,
    /// `--preset NAME` (see `presets::PRESETS`).
    pub preset: Option<String>,
    pub threads: Option<String>,
    pub iodepth: Option<String>,
    pub engine: Option<EngineKind>,
    pub direct: bool,
    pub osync: bool,
    pub no_fsync_in_timing: bool,
    pub close_in_timing: bool,
    pub keep_cache: bool,
    pub drop_caches: bool,
    pub repeat: Option<u32>,
    pub stride: u64,
    pub mix_read_pct: u32,
    pub stonewall: bool,
    pub runtime: Option<String>,
    pub time_based: bool,
    pub cpus: Option<String>,
    pub seed: u64,
    /// Entries per thread for the metadata tests.
    pub files: u64,
    pub verify: bool,
    pub buffer_pattern: BufferPattern,
    /// `--fadvise`: the access hint the tests' files get.
    pub fadvise: crate::workload::Hint,
    pub witness: candor_witness::Mode,
    pub trace_syscalls: bool,
    pub witness_interval: String,
    /// `--duration`: repeat the plan until this much time has passed.
    pub duration: Option<String>,
    /// `--device-spec`: the ceilings, or `auto` to measure them first.
    pub device_spec: Option<String>,
    /// `--ramp`: an unmeasured warm-up of each test before its repetitions.
    pub ramp: Option<String>,
    /// `--steady-state[=PARAMS]`: rounds until steady ("" for the defaults).
    pub steady_state: Option<String>,
    /// `--precondition[=PASSES]`: sequential passes over each test's files, then random
    /// overwrites, before the test.
    pub precondition: Option<u32>,
    /// Run as one rank of an MPI job, and how the ranks share files.
    pub mpi: bool,
    pub reorder: bool,
    pub shared_file: bool,
    /// `--buffered`: a block device target through the page cache (its default is O_DIRECT).
    pub buffered: bool,
}

impl Default for RunOptions {
    /// The command line's defaults.
    fn default() -> Self {
        RunOptions {
            tests: None,
            file_size: None,
            record_size: None,
            auto: false,
            min_file_size: None,
            max_file_size: None,
            min_record_size: None,
            max_record_size: None,
            preset: None,
            threads: None,
            iodepth: None,
            engine: None,
            direct: false,
            osync: false,
            no_fsync_in_timing: false,
            close_in_timing: false,
            keep_cache: false,
            drop_caches: false,
            repeat: None,
            stride: STRIDE,
            mix_read_pct: MIX_READ_PCT,
            stonewall: false,
            runtime: None,
            time_based: false,
            cpus: None,
            seed: SEED,
            files: META_FILES,
            verify: false,
            buffer_pattern: BufferPattern::Random,
            fadvise: crate::workload::Hint::Auto,
            witness: candor_witness::Mode::Auto,
            trace_syscalls: false,
            witness_interval: WITNESS_INTERVAL.into(),
            duration: None,
            device_spec: None,
            ramp: None,
            steady_state: None,
            precondition: None,
            mpi: false,
            reorder: false,
            shared_file: false,
            buffered: false,
        }
    }
}

impl RunOptions {
    /// No option that shapes the plan was given: the default run's preset applies.
    pub fn shapes_nothing(&self) -> bool {
        self.tests.is_none()
            && self.file_size.is_none()
            && self.record_size.is_none()
            && !self.auto
            && self.preset.is_none()
            && self.threads.is_none()
            && self.iodepth.is_none()
            && self.engine.is_none()
    }
}

/// `5s`, `500ms`, `2m`, `1.5` (seconds).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim().to_ascii_lowercase();
    let (num, mult) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = t.strip_suffix("us") {
        (n, 1e-6)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = t.strip_suffix('h') {
        (n, 3600.0)
    } else {
        (t.as_str(), 1.0)
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("'{text}' is not a duration: write e.g. 5s, 500ms or 2m"))?;
    if !v.is_finite() || v <= 0.0 || v * mult > 1e7 {
        return Err(format!(
            "'{text}' is not a usable duration: give a positive time such as 5s"
        ));
    }
    Ok(Duration::from_secs_f64(v * mult))
}

/// `--precondition=PASSES`: a whole number (the plan says which are too many).
pub fn parse_passes(text: &str) -> Result<u32, String> {
    text.trim().parse().map_err(|_| {
        format!(
            "--precondition={text}: give the number of sequential passes, e.g. --precondition=2"
        )
    })
}

/// `--threads 1,2,4`: whole numbers from 1 to `max`, repeats dropped, order kept.
pub fn parse_u32_list(text: &str, what: &str, max: u32) -> Result<Vec<u32>, PlanError> {
    let mut out = Vec::new();
    for part in text.split(',') {
        let v: u32 = part.trim().parse().map_err(|_| {
            PlanError::usage(format!(
                "'{part}' in --{what} is not a whole number: write e.g. --{what} 1,2,4"
            ))
        })?;
        if v == 0 || v > max {
            return Err(PlanError::usage(format!(
                "--{what} {v} is out of range: use 1 to {max}"
            )));
        }
        if !out.contains(&v) {
            out.push(v);
        }
    }
    Ok(out)
}

/// One size option (`--min-file-size 64k`), if given.
pub fn size_arg(v: &Option<String>, what: &str) -> Result<Option<u64>, PlanError> {
    v.as_deref()
        .map(|t| parse_size(t).map_err(|e| PlanError::usage(format!("--{what}: {e}"))))
        .transpose()
}

/// `--cpus 0,2-3`: the listed CPUs, each one of `allowed` (the CPUs this process may use).
pub fn parse_cpus(list: Option<&str>, allowed: &[usize]) -> Result<Vec<usize>, PlanError> {
    let Some(list) = list else {
        return Ok(Vec::new());
    };
    let bad = |p: &str| {
        PlanError::usage(format!(
            "--cpus {list}: '{p}' is not a CPU number or range: use e.g. 0,1 or 0-3 (this process may use CPUs {allowed:?})"
        ))
    };
    let mut cpus = Vec::new();
    for part in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (a.trim().parse::<usize>(), b.trim().parse::<usize>()),
            None => (part.parse::<usize>(), part.parse::<usize>()),
        };
        let (Ok(lo), Ok(hi)) = (lo, hi) else {
            return Err(bad(part));
        };
        if lo > hi {
            return Err(bad(part));
        }
        for c in lo..=hi {
            if !allowed.contains(&c) {
                return Err(PlanError::usage(format!(
                    "--cpus {list}: CPU {c} is not available to this process: choose from {allowed:?}"
                )));
            }
            cpus.push(c);
        }
    }
    if cpus.is_empty() {
        return Err(bad(list));
    }
    Ok(cpus)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("5s").unwrap(), Duration::from_secs(5));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("1.5").unwrap(), Duration::from_millis(1500));
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("fast").is_err());
        assert!(parse_duration("-1s").is_err());
    }

    #[test]
    fn lists_keep_order_and_drop_repeats() {
        assert_eq!(parse_u32_list("4,1,4", "threads", 8).unwrap(), vec![4, 1]);
        let e = parse_u32_list("0", "threads", 8).unwrap_err();
        assert!(e.message.contains("out of range"), "{}", e.message);
        let e = parse_u32_list("x", "iodepth", 8).unwrap_err();
        assert!(e.message.contains("not a whole number"), "{}", e.message);
    }

    #[test]
    fn cpus_are_ranges_of_allowed_cpus() {
        assert_eq!(parse_cpus(None, &[0, 1]).unwrap(), Vec::<usize>::new());
        assert_eq!(parse_cpus(Some("0-1"), &[0, 1]).unwrap(), vec![0, 1]);
        assert!(parse_cpus(Some("7-3"), &[0, 1]).is_err());
        assert!(parse_cpus(Some("2"), &[0, 1])
            .unwrap_err()
            .message
            .contains("not available"));
        assert!(parse_cpus(Some(","), &[0, 1]).is_err());
    }

    #[test]
    fn default_options_shape_nothing() {
        assert!(RunOptions::default().shapes_nothing());
        let o = RunOptions {
            threads: Some("2".into()),
            ..RunOptions::default()
        };
        assert!(!o.shapes_nothing());
    }
}
