//! `RunDoc::options`: the options a saved result was made with, typed by the command that
//! saved them (`candor run`, `candor audit`, `candor replay`). In the JSON they are one
//! object whose keys are in alphabetical order, as they have always been; a key this
//! candor does not know (a newer candor's, or a hand-made file's) is kept as it was, so
//! `candor merge` still compares it and a file saved again still holds it.

use serde::de::Deserializer;
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// The saved options: the group of the command that saved them, and the keys no group
/// knows.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SavedOptions {
    pub of: OptionsOf,
    /// Keys this candor does not know, and known keys whose value does not fit their type
    /// (kept as they were, never lost).
    pub unknown: BTreeMap<String, Value>,
}

/// Which command's options a result holds.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum OptionsOf {
    /// None that this candor knows (an empty object, or a file whose keys fit no group).
    #[default]
    None,
    Run(Box<RunSaved>),
    Audit(AuditSaved),
    Replay(ReplaySaved),
}

/// `candor run`'s options as the run understood them (its plan's effective settings).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct RunSaved {
    /// The buffers' contents (`--buffer-pattern`): `random`, `zero` or `compressible=N%`.
    pub buffer_pattern: String,
    /// The close inside the timed region (`--close-in-timing`).
    pub close_in_timing: bool,
    /// `--cpus`: the CPUs listed, in order (absent without it).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cpus: Vec<usize>,
    /// The default run: no option shaped the plan.
    pub default_run: bool,
    /// On a block device: where candor's region began, bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_offset: Option<u64>,
    /// `--device-spec`: the ceilings efficiency is judged against, given or measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_spec: Option<DeviceSpecSaved>,
    /// O_DIRECT.
    pub direct: bool,
    /// The page cache dropped before each test (`--drop-caches`).
    pub drop_caches: bool,
    /// `--duration`: the soak's length as given ("10m").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration: Option<String>,
    /// The access hint (`--fadvise`): `auto`, `none`, `random` or `sequential`.
    pub fadvise: String,
    /// The output's format (`--format`, or the preset's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// The flush inside the timed region (false with `--no-fsync-in-timing`).
    pub fsync_in_timing: bool,
    /// The page cache kept between a test and the next (`--keep-cache`).
    pub keep_cache: bool,
    /// The share of reads of a mixed test, percent (`--mix-read-pct`).
    pub mix_read_pct: u32,
    /// O_SYNC (`--osync`).
    pub osync: bool,
    /// `--precondition`: the passes written over the test's files first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub precondition_passes: Option<u32>,
    /// `--ramp`: the unmeasured warm-up, seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ramp_s: Option<f64>,
    /// Repetitions of each test.
    pub repeat: u32,
    /// The cap on a repetition, seconds (`--runtime`); saved as null without one.
    pub runtime_s: Option<f64>,
    /// The seed of the random offsets and buffers (`--seed`).
    pub seed: u64,
    /// `--steady-state`: its parameters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steady_state: Option<SteadySaved>,
    /// `--stonewall`.
    pub stonewall: bool,
    /// The stride of the stride read, in records (`--stride`).
    pub stride: u64,
    /// Repetitions run for their whole `--runtime` (`--time-based`).
    pub time_based: bool,
    /// `--trace-syscalls`.
    pub trace_syscalls: bool,
    /// `--verify`.
    pub verify: bool,
    /// The witness source asked for (`--witness`): `auto`, `procfs`, `bpf` or `off`.
    pub witness: String,
}

/// `--device-spec`'s ceilings, bytes/s and operations/s (null: not given).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct DeviceSpecSaved {
    pub iops_read: Option<f64>,
    pub iops_write: Option<f64>,
    pub seq_read: Option<f64>,
    pub seq_write: Option<f64>,
    /// `spec` (given) or `measured`.
    pub source: String,
}

/// `--steady-state`'s parameters.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct SteadySaved {
    /// The most rounds run before the verdict is given.
    pub max_rounds: u32,
    /// The largest range in the window, as a share of its average.
    pub range: f64,
    /// Each round's length, seconds.
    pub round_s: f64,
    /// The largest excursion of the window's least-squares line, as a share of its average.
    pub slope: f64,
    /// Rounds in the window.
    pub window: u32,
}

/// `candor audit`'s options.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct AuditSaved {
    /// How often the /proc counters were sampled, milliseconds (`--interval`).
    pub interval_ms: u64,
    /// The witness stopped when the command exited, not its last descendant
    /// (`--stop-at-exit`).
    pub stop_at_exit: bool,
    /// The witness source that observed: `procfs` or `bpf`.
    pub witness: String,
}

/// `candor replay`'s options.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct ReplaySaved {
    /// `--cpus` as given (absent without it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpus: Option<String>,
    /// `--drop-caches`.
    pub drop_caches: bool,
    /// `--keep-cache`.
    pub keep_cache: bool,
    /// `--precondition`: the passes written over the trace's files first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub precondition_passes: Option<u32>,
    /// Repetitions of the trace on each target.
    pub repeat: u32,
    /// `--sparse`: the trace's files laid out as holes.
    pub sparse: bool,
    /// `--timing`: `fast`, `original` or `scale=X`.
    pub timing: String,
    /// The trace replayed (the file given).
    pub trace: String,
    /// Where the trace's calls came from: `record`, `strace` or `fio-iolog`.
    pub trace_source: String,
    /// The witness source asked for (`--witness`).
    pub witness: String,
}

impl From<RunSaved> for SavedOptions {
    fn from(r: RunSaved) -> Self {
        SavedOptions {
            of: OptionsOf::Run(Box::new(r)),
            unknown: BTreeMap::new(),
        }
    }
}

impl From<AuditSaved> for SavedOptions {
    fn from(a: AuditSaved) -> Self {
        SavedOptions {
            of: OptionsOf::Audit(a),
            unknown: BTreeMap::new(),
        }
    }
}

impl From<ReplaySaved> for SavedOptions {
    fn from(r: ReplaySaved) -> Self {
        SavedOptions {
            of: OptionsOf::Replay(r),
            unknown: BTreeMap::new(),
        }
    }
}

impl SavedOptions {
    /// `candor run`'s options, when these are.
    pub fn run(&self) -> Option<&RunSaved> {
        match &self.of {
            OptionsOf::Run(r) => Some(r.as_ref()),
            _ => None,
        }
    }

    pub fn run_mut(&mut self) -> Option<&mut RunSaved> {
        match &mut self.of {
            OptionsOf::Run(r) => Some(r.as_mut()),
            _ => None,
        }
    }

    /// `candor audit`'s options, when these are.
    pub fn audit(&self) -> Option<&AuditSaved> {
        match &self.of {
            OptionsOf::Audit(a) => Some(a),
            _ => None,
        }
    }

    /// `candor replay`'s options, when these are.
    pub fn replay(&self) -> Option<&ReplaySaved> {
        match &self.of {
            OptionsOf::Replay(r) => Some(r),
            _ => None,
        }
    }

    /// Every option as saved, by its saved name (the group's and the unknown keys): what
    /// compares two results' options whole, naming the one that differs.
    pub fn entries(&self) -> BTreeMap<String, Value> {
        let group = match &self.of {
            OptionsOf::None => Ok(Value::Null),
            OptionsOf::Run(r) => serde_json::to_value(r),
            OptionsOf::Audit(a) => serde_json::to_value(a),
            OptionsOf::Replay(r) => serde_json::to_value(r),
        };
        let mut m = BTreeMap::new();
        // The groups hold strings, numbers and bools only: they always encode.
        if let Ok(Value::Object(g)) = group {
            m.extend(g);
        }
        // A known key whose value did not fit its type is saved as it was read.
        m.extend(self.unknown.iter().map(|(k, v)| (k.clone(), v.clone())));
        m
    }
}

impl Serialize for SavedOptions {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // One sorted map, as the options were saved when they were a map of values.
        self.entries().serialize(s)
    }
}

impl<'de> Deserialize<'de> for SavedOptions {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(SavedOptions::from_map(crate::bounded::value_map(d)?))
    }
}

/// The keys of `m` that fit the group `T` (each alone: a field of `T`, of its type).
fn fitting<T: serde::de::DeserializeOwned>(m: &BTreeMap<String, Value>) -> Vec<&String> {
    m.iter()
        .filter(|(k, v)| {
            let one = Value::Object([((*k).clone(), (*v).clone())].into_iter().collect());
            serde_json::from_value::<T>(one).is_ok()
        })
        .map(|(k, _)| k)
        .collect()
}

/// `m`'s keys that fit `T` read into it, the others left in `m`.
fn take<T: serde::de::DeserializeOwned + Default>(m: &mut BTreeMap<String, Value>) -> T {
    let keys: Vec<String> = fitting::<T>(m).into_iter().cloned().collect();
    let fit: serde_json::Map<String, Value> = keys
        .iter()
        .filter_map(|k| m.remove_entry(k.as_str()))
        .collect();
    // Each key fits alone and the fields are independent: they fit together.
    serde_json::from_value(Value::Object(fit)).unwrap_or_default()
}

impl SavedOptions {
    /// The options of a saved object: the group most of its keys fit (the command that
    /// saved it), the rest kept as unknown.
    pub fn from_map(mut m: BTreeMap<String, Value>) -> SavedOptions {
        let fits = [
            fitting::<RunSaved>(&m).len(),
            fitting::<AuditSaved>(&m).len(),
            fitting::<ReplaySaved>(&m).len(),
        ];
        let best = fits.iter().copied().max().unwrap_or(0);
        let of = if best == 0 || fits.iter().filter(|&&n| n == best).count() > 1 {
            OptionsOf::None
        } else if fits[0] == best {
            OptionsOf::Run(Box::new(take(&mut m)))
        } else if fits[1] == best {
            OptionsOf::Audit(take(&mut m))
        } else {
            OptionsOf::Replay(take(&mut m))
        };
        SavedOptions { of, unknown: m }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_that_fit_no_group_or_their_type_are_kept() {
        let text = r#"{"direct":"yes","future":[1,2],"repeat":3,"seed":7,"witness":"off"}"#;
        let o: SavedOptions = serde_json::from_str(text).unwrap();
        let r = o.run().expect("a run's options");
        assert_eq!((r.repeat, r.seed, r.witness.as_str()), (3, 7, "off"));
        assert!(!r.direct);
        assert_eq!(o.unknown.len(), 2);
        assert_eq!(o.unknown["direct"], Value::from("yes"));
        // A run's always-saved keys the file lacked are written with their defaults.
        let back = serde_json::to_string(&o).unwrap();
        assert!(back.contains(r#""direct":"yes""#), "{back}");
        assert!(back.contains(r#""future":[1,2]"#), "{back}");
    }

    #[test]
    fn keys_that_fit_several_groups_alike_stay_unknown() {
        let text = r#"{"witness":"procfs"}"#;
        let o: SavedOptions = serde_json::from_str(text).unwrap();
        assert_eq!(o.of, OptionsOf::None);
        assert_eq!(serde_json::to_string(&o).unwrap(), text);
        let empty: SavedOptions = serde_json::from_str("{}").unwrap();
        assert_eq!(empty, SavedOptions::default());
        assert_eq!(serde_json::to_string(&empty).unwrap(), "{}");
    }
}
