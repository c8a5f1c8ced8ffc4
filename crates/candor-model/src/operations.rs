//! What the witness derives about a test's operations (as opposed to its bytes): how the
//! application's operations compare with the device's requests, how many of them waited on
//! the device and how many were served from memory; and the traps of the host it named.
//! docs/witness.md says how each figure is computed.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The operations of a test against the device's requests, for the direction the test's
/// figure is about (reads for read tests, writes for write tests).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct Operations {
    /// "read", "write" or "both".
    pub direction: String,
    /// Operations the test made in the timed region, and their mean size in bytes.
    pub ops: u64,
    pub op_bytes: f64,
    /// The test's device requests of that direction in the timed region (eBPF: its own;
    /// procfs: every process's), and their mean size.
    pub requests: u64,
    pub request_bytes: f64,
    /// requests / ops.
    pub requests_per_op: f64,
    /// Median time of an operation, as the runner timed it, microseconds.
    pub op_p50_us: f64,
    /// The device's service time of a request (issue to completion): the median of the
    /// test's own requests with eBPF, the mean of every request from diskstats otherwise.
    pub service_us: Option<f64>,
    /// "ebpf" or "diskstats": where `service_us` came from.
    pub service_basis: String,
    /// An operation that took at least this long waited on the device (half the fastest
    /// tenth of the device's requests); None when the service times are not known.
    pub waited_above_us: Option<f64>,
    /// Share of the operations that waited on the device, and share served from memory
    /// (page cache hits, pages brought in by readahead or read-around for an earlier
    /// operation). None when it cannot be told.
    pub waited_share: Option<f64>,
    pub memory_share: Option<f64>,
    /// "latency" (each operation's time against the boundary) or "requests" (at most one
    /// waiting operation per request: an upper bound, without eBPF).
    pub basis: String,
    /// eBPF: pages the page cache took in for the test's files in the timed region.
    pub cache_inserts: Option<u64>,
    /// A sequential read whose operations mostly found their data in memory because the
    /// kernel's readahead kept the device busy ahead of them: the throughput is still the
    /// device's.
    pub pipelined: bool,
    /// Writes: how they reached the device ("direct": O_DIRECT, "sync": O_SYNC, each
    /// operation waits for its own request; "buffered": through the page cache).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_mode: Option<String>,
    /// Buffered writes: share of the timed region spent waiting for the device, the
    /// runner's flush (when the timing includes it) plus the writes the kernel held back
    /// until writeback caught up (`waited_share` of them); the rest was copying into the
    /// page cache.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waited_time_share: Option<f64>,
    /// Buffered writes whose timing includes the flush: its share of the timed region.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flush_share: Option<f64>,
    /// A test that both reads and writes (`direction` "both"): its reads and its writes
    /// reconciled apart, each against the device's requests of its direction. The fields
    /// above are then both directions together.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reads: Option<Box<Operations>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub writes: Option<Box<Operations>>,
}

/// What trap of the host a result fell into.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum TrapKind {
    /// The target is a loop device; the sentence says where its file lives, whether the
    /// file is in the host's page cache and whether the loop device uses direct I/O.
    LoopDevice,
    /// The device's requests completed faster than any device of its kind could.
    FasterThanDevice,
    /// The figure is beyond the ceiling given with --device-spec.
    FasterThanSpec,
    /// candor's threads were busy nearly all the time while the device idled part of it.
    CpuBound,
    /// Writeback of pages dirtied before the test landed inside its timed region.
    EarlierWriteback,
    /// The filesystem stored fewer bytes than it was given (compression, inline data,
    /// zeroes left as holes), so "the rest waited in the page cache" would be wrong.
    StoredFewer,
    /// The filesystem stored more bytes than it was given (copy-on-write metadata,
    /// journaling), within the timed region or after.
    StoredMore,
}

/// A named trap, the figure behind it and the sentence that explains it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Trap {
    pub kind: TrapKind,
    /// The figure the trap was found by: the share of a loop device's backing file in the
    /// host's page cache, a request's median service time in microseconds, the figure and
    /// its ceiling's ratio, candor's CPU share, the bytes written back, the bytes stored
    /// over the bytes given.
    pub value: Option<f64>,
    pub sentence: String,
}

/// A copy or metadata test's system calls, the runner's against the kernel's count.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct CallCheck {
    /// "match": the kernel counted every kind the runner made, call for call and byte for
    /// byte; "mismatch": at least one kind differs (the result is then `unverified`);
    /// "not_counted": no per-kind count (no eBPF), `reason` says why.
    pub verdict: String,
    /// Per kind the runner made ("create", "unlink", "read"...).
    #[serde(deserialize_with = "crate::bounded::map")]
    pub kinds: BTreeMap<String, KindCheck>,
    /// The one sentence the reports show.
    pub sentence: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The kinds were counted over a sample of the test's operations (`ops` of `of`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sample: Option<crate::CallSample>,
    /// What counted them: "ebpf" or "thread_io" (`CallFacts::counted_by`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counted_by: Option<String>,
}

/// One kind of call: what the runner made and what the kernel counted.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct KindCheck {
    /// None: the runner does not decide how many calls it takes (getdents64).
    pub expected: Option<u64>,
    pub counted: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counted_bytes: Option<u64>,
    /// Calls the kernel saw fail.
    pub errors: u64,
    /// Whether this kind matched (None when it could not be counted).
    pub matches: Option<bool>,
}
