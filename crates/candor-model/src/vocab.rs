//! The words a result is judged in: what a test meant to measure, whether it ran, and
//! what the witness concluded. Each serialises to the lowercase word the JSON has always
//! held, so saved files are unchanged and old files load.

use serde::{Deserialize, Serialize};
use std::fmt;

/// What a test is meant to measure.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[serde(rename_all = "lowercase")]
pub enum Intent {
    /// Storage: caches are dropped first (or the writes must reach the device). Files
    /// written before intents were typed may hold "" here.
    #[default]
    #[serde(alias = "")]
    Device,
    /// Memory: re-tests and `--keep-cache` read what is already in the page cache.
    Cache,
}

/// Whether a test ran to the end.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Readers have always taken "" as ok.
    #[default]
    #[serde(alias = "")]
    Ok,
    Failed,
}

/// Where the witness says a figure's bytes came from (docs/witness.md, "The verdict").
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// The device moved the bytes (and, for reads meant for it, the operations waited on it).
    Device,
    /// The page cache served the bytes: memory speed.
    Cache,
    /// Part device, part memory; `device_share` says how much.
    Mixed,
    /// The filesystem keeps its data in RAM (tmpfs): there is no device.
    Memory,
    /// The witness could not observe; `unverified_reason` says why ("" in a witness that
    /// was never judged).
    #[default]
    #[serde(alias = "")]
    Unverified,
}

/// Which way a test's or a figure's data goes: the one read/write direction every crate
/// uses (the engine's tests, the results, the witness's operations, the audit's claims,
/// the reports).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    Read,
    Write,
    /// Both in one figure (a mixed workload, a copy).
    Mixed,
    /// Not known (an audited program's figure that does not say).
    #[default]
    Unknown,
}

impl Direction {
    /// Whether the data goes this way at all (`Mixed` goes both ways).
    pub fn reads(self) -> bool {
        matches!(self, Direction::Read | Direction::Mixed)
    }

    /// Whether the data goes this way at all (`Mixed` goes both ways).
    pub fn writes(self) -> bool {
        matches!(self, Direction::Write | Direction::Mixed)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Read => "read",
            Direction::Write => "write",
            Direction::Mixed => "mixed",
            Direction::Unknown => "unknown",
        }
    }
}

/// How a test walks its file (the order of its records).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Access {
    Sequential,
    Backward,
    Random,
    /// Every n-th record (iozone's stride read).
    Stride,
    /// One record again and again (iozone's record rewrite).
    SameRecord,
}

/// The access hint given to the kernel for a test's files (posix_fadvise(2) right after
/// open). `none` leaves the kernel's readahead to guess from the pattern it sees.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[serde(rename_all = "lowercase")]
pub enum Fadvise {
    #[default]
    None,
    /// POSIX_FADV_RANDOM: no readahead and no read-around; a read brings in what it asks.
    Random,
    /// POSIX_FADV_SEQUENTIAL: twice the device's readahead window.
    Sequential,
}

impl Access {
    pub fn as_str(self) -> &'static str {
        match self {
            Access::Sequential => "sequential",
            Access::Backward => "backward",
            Access::Random => "random",
            Access::Stride => "stride",
            Access::SameRecord => "same_record",
        }
    }
}

impl Fadvise {
    pub fn as_str(self) -> &'static str {
        match self {
            Fadvise::None => "none",
            Fadvise::Random => "random",
            Fadvise::Sequential => "sequential",
        }
    }
}

impl Intent {
    pub fn as_str(self) -> &'static str {
        match self {
            Intent::Device => "device",
            Intent::Cache => "cache",
        }
    }
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Failed => "failed",
        }
    }

    pub fn is_ok(self) -> bool {
        self == Status::Ok
    }
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Device => "device",
            Verdict::Cache => "cache",
            Verdict::Mixed => "mixed",
            Verdict::Memory => "memory",
            Verdict::Unverified => "unverified",
        }
    }

    /// Whether this verdict is what a test of `intent` meant to measure.
    pub fn fits(self, intent: Intent) -> bool {
        match intent {
            Intent::Device => self == Verdict::Device,
            Intent::Cache => self == Verdict::Cache,
        }
    }
}

/// Display as the saved word; parse the saved word back (the error names the word).
macro_rules! as_word {
    ($($t:ty: $($v:expr),*;)*) => {$(
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
        impl std::str::FromStr for $t {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                [$($v),*]
                    .into_iter()
                    .find(|v| v.as_str() == s)
                    .ok_or_else(|| format!("unknown {} \"{s}\"", stringify!($t).to_lowercase()))
            }
        }
    )*};
}
as_word! {
    Access: Access::Sequential, Access::Backward, Access::Random, Access::Stride, Access::SameRecord;
    Fadvise: Fadvise::None, Fadvise::Random, Fadvise::Sequential;
    Intent: Intent::Device, Intent::Cache;
    Status: Status::Ok, Status::Failed;
    Verdict: Verdict::Device, Verdict::Cache, Verdict::Mixed, Verdict::Memory, Verdict::Unverified;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_the_saved_ones() {
        for v in [
            Verdict::Device,
            Verdict::Cache,
            Verdict::Mixed,
            Verdict::Memory,
            Verdict::Unverified,
        ] {
            let json = serde_json::to_string(&v).unwrap();
            assert_eq!(json, format!("\"{v}\""));
            assert_eq!(serde_json::from_str::<Verdict>(&json).unwrap(), v);
            assert_eq!(v.as_str().parse::<Verdict>(), Ok(v));
        }
        for i in [Intent::Device, Intent::Cache] {
            assert_eq!(serde_json::to_string(&i).unwrap(), format!("\"{i}\""));
        }
        for s in [Status::Ok, Status::Failed] {
            assert_eq!(serde_json::to_string(&s).unwrap(), format!("\"{s}\""));
        }
        assert!(serde_json::from_str::<Verdict>("\"maybe\"").is_err());
        assert_eq!(
            "maybe".parse::<Verdict>(),
            Err("unknown verdict \"maybe\"".to_string())
        );
        assert_eq!(serde_json::from_str::<Status>("\"\"").unwrap(), Status::Ok);
    }

    #[test]
    fn a_verdict_fits_its_intent() {
        assert!(Verdict::Device.fits(Intent::Device));
        assert!(!Verdict::Mixed.fits(Intent::Device));
        assert!(Verdict::Cache.fits(Intent::Cache));
        assert!(!Verdict::Memory.fits(Intent::Cache));
    }
}
