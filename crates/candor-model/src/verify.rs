//! `--verify`'s outcome as a result saves it (`TestResult::verify`): typed here, saved with
//! the keys and in the order it has always had.

use serde::{Deserialize, Serialize};

/// The kinds of bad record a read can find.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "lowercase")]
pub enum BadKind {
    /// The payload does not match its header.
    Corruption,
    /// A good record of another file or offset.
    Misdirected,
    /// A good record of an earlier generation.
    Stale,
    /// Part of the record is of one write, part of another (or never written).
    Torn,
}

impl BadKind {
    pub const ALL: [BadKind; 4] = [
        BadKind::Corruption,
        BadKind::Misdirected,
        BadKind::Stale,
        BadKind::Torn,
    ];

    pub fn name(self) -> &'static str {
        match self {
            BadKind::Corruption => "corruption",
            BadKind::Misdirected => "misdirected",
            BadKind::Stale => "stale",
            BadKind::Torn => "torn",
        }
    }
}

/// Bad records of each kind.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(default)]
pub struct BadKinds {
    pub corruption: u64,
    pub misdirected: u64,
    pub stale: u64,
    pub torn: u64,
}

/// What `--verify` found in one test, summed over its files and repetitions. The fields are
/// in the order the file has always held them (alphabetical).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(default)]
pub struct VerifyOutcome {
    /// Records read back wrong.
    pub bad_records: u64,
    /// The first bad record: its file (index among the test's files), kind and offset.
    pub first_bad_file: Option<u32>,
    pub first_bad_kind: Option<BadKind>,
    pub first_bad_offset: Option<u64>,
    /// The header every record carries, bytes.
    pub header_bytes: u64,
    pub kinds: BadKinds,
    pub record_size: u64,
    pub records_checked: u64,
    pub records_written: u64,
}
