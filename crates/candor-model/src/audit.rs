//! The words and rows of `candor audit` that the saved document carries (`RunDoc::audit`)
//! and the reports read back: one type each, written by the audit and read by the reports.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use std::collections::BTreeMap;

/// Which way the data went in a claimed figure: the one direction type (`vocab.rs`).
pub use crate::vocab::Direction;

/// One line of the audit's reconciliation table (`audit.reconciliation` in a saved audit):
/// a figure the audited program claimed against what the kernel saw.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct ReconciliationRow {
    pub test: String,
    pub program: String,
    pub direction: Direction,
    pub record_size: Option<u64>,
    pub file_size: Option<u64>,
    pub threads: u32,
    #[serde(rename = "claimed_Bps")]
    pub claimed_bps: f64,
    /// Bytes over the time spent inside the read/write calls (None without a syscall tracer).
    #[serde(rename = "observed_syscall_Bps")]
    pub observed_syscall_bps: Option<f64>,
    /// Bytes over the wall time from open to close, fsync and close included.
    #[serde(rename = "observed_wall_Bps")]
    pub observed_wall_bps: Option<f64>,
    /// claimed / observed over the wall time (the end-to-end figure: what a person waiting
    /// for the data sees).
    pub ratio: Option<f64>,
    /// claimed / observed over the time inside the I/O calls.
    pub ratio_syscall: Option<f64>,
    pub claimed_bytes: Option<u64>,
    pub observed_bytes: Option<u64>,
    pub claimed_seconds: Option<f64>,
    pub wall_s: Option<f64>,
    pub io_time_s: Option<f64>,
    pub fsync_count: Option<u64>,
    pub fsync_time_s: Option<f64>,
    /// Reads: share of the bytes the page cache served (the kernel read less from storage).
    pub cache_share: Option<f64>,
    /// Reads: share of the bytes that fell in holes of a sparse file (zeros made up by
    /// the filesystem: neither the device nor the page cache held them).
    pub hole_share: Option<f64>,
    /// Writes: share of the bytes the device wrote while the file was open.
    pub flushed_share: Option<f64>,
    pub device: Option<String>,
    pub device_read_bytes: Option<u64>,
    pub device_write_bytes: Option<u64>,
    /// Device bytes in the window that the audited tree does not account for.
    pub foreign_device_bytes: Option<u64>,
    /// Random tests, when offsets were seen: the share of the file the offsets reached
    /// (from the highest power-of-two bucket of offsets, so a lower bound of the reach).
    pub offset_reach: Option<f64>,
    /// lseek calls in the phases (eBPF).
    pub lseek_count: Option<u64>,
    /// Metadata figures (mdtest, bonnie++'s file tests), which move no bytes: the operation
    /// ("create", "stat", "read", "remove", "rename") and the calls it was checked against.
    pub operation: Option<String>,
    /// The operations per second claimed (`claimed_Bps` is then 0).
    pub claimed_ops_per_s: Option<f64>,
    /// The operations the program says it made (its items times its iterations).
    pub claimed_ops: Option<u64>,
    /// The matching calls the kernel saw the tree make over the whole run (eBPF).
    pub observed_calls: Option<u64>,
    /// Those calls over the time they were being made (the readings of the tracer where
    /// their count rose): the observed rate the claim is compared with.
    pub observed_ops_per_s: Option<f64>,
    /// Those calls over the time spent inside them shared among the tasks: the fastest the
    /// program could have gone.
    pub observed_ops_per_s_in_calls: Option<f64>,
    /// "agrees", "overstated", "understated" or "unverified".
    pub verdict: String,
    pub explanation: String,
    /// Indexes of the phases behind the row.
    pub phases: Vec<usize>,
}

/// A saved `candor audit` (`RunDoc::audit`): the audited command, the sentence of how it
/// ended and the reconciliation rows typed; the rest of what the audit saved (its phases,
/// processes, claims, account, witness...) kept by name as it was written.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct AuditDoc {
    pub command: Vec<String>,
    pub exit_message: Option<String>,
    /// Rows that do not read as one (a file edited by hand) are left out.
    #[serde(deserialize_with = "readable_rows")]
    pub reconciliation: Vec<ReconciliationRow>,
    #[serde(flatten)]
    pub rest: BTreeMap<String, Value>,
}

impl AuditDoc {
    /// A saved audit read into its type; None when it is not an object that reads as one.
    pub fn from_saved(v: Value) -> Option<AuditDoc> {
        serde_json::from_value(v).ok()
    }
}

fn readable_rows<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<ReconciliationRow>, D::Error> {
    let rows: Vec<Value> = crate::bounded::vec(d)?;
    Ok(rows
        .into_iter()
        .filter_map(|r| serde_json::from_value(r).ok())
        .collect())
}

/// `RunDoc::audit` as read from a file (within the readers' limits).
pub(crate) fn opt_audit<'de, D: Deserializer<'de>>(d: D) -> Result<Option<AuditDoc>, D::Error> {
    Ok(crate::bounded::opt_value(d)?.and_then(AuditDoc::from_saved))
}

/// `RunDoc::audit` as saved: every object's keys in alphabetical order, as files of schema
/// version 2 (which kept it as a free JSON value) have them.
pub(crate) fn save_audit<S: Serializer>(v: &Option<AuditDoc>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        None => s.serialize_none(),
        Some(a) => serde_json::to_value(a)
            .map_err(serde::ser::Error::custom)?
            .serialize(s),
    }
}

impl ReconciliationRow {
    /// The ratio the verdict rests on, and whether it is over the time inside the I/O
    /// calls: claimed / observed over the wall time, except for a figure that agrees with
    /// the bytes over the time inside the calls and not over the wall time (the program
    /// timed its calls: ioping), whose ratio is claimed / in calls. Every table shows this
    /// one, so a row's ratio and its verdict say the same thing.
    pub fn judged_ratio(&self) -> Option<(f64, bool)> {
        let within = |x: Option<f64>| x.is_some_and(|x| (x - 1.0).abs() <= 0.05);
        if self.verdict == "agrees" && !within(self.ratio) && within(self.ratio_syscall) {
            return self.ratio_syscall.map(|x| (x, true));
        }
        self.ratio.map(|x| (x, false))
    }
}

/// What the kernel threads' bytes on a device are: the journal and housekeeping, and the
/// I/O of loop devices to their backing files on it (the tree's bytes once more).
pub fn kernel_label(backing: &[String]) -> String {
    if backing.is_empty() {
        return "journal and housekeeping".into();
    }
    format!(
        "journal, housekeeping and {} reading and writing {} backing file{} (the tree's bytes on {} once more)",
        backing.join(", "),
        if backing.len() == 1 { "its" } else { "their" },
        if backing.len() == 1 { "" } else { "s" },
        if backing.len() == 1 { "that loop device" } else { "those loop devices" }
    )
}

#[cfg(test)]
mod kernel_label_tests {
    use super::kernel_label;

    #[test]
    fn a_device_under_a_loop_device_says_whose_bytes_its_kernel_threads_moved() {
        assert_eq!(kernel_label(&[]), "journal and housekeeping");
        assert_eq!(
            kernel_label(&["loop0 (/var/tmp/img)".to_string()]),
            "journal, housekeeping and loop0 (/var/tmp/img) reading and writing its backing file (the tree's bytes on that loop device once more)"
        );
        assert!(kernel_label(&["loop0 (/a)".into(), "loop1 (/b)".into()])
            .contains("loop0 (/a), loop1 (/b) reading and writing their backing files"));
    }
}
