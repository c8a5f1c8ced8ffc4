//! The ranks of an MPI result (`TestResult::ranks`): what each rank did, each node's
//! witness, and the spread between them, as `candor run` over MPI and `candor merge` save
//! them.

use crate::{HistogramDump, Latency, Status, Summary, Verdict};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// The spread between ranks (saved as `TestResult::ranks`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct Spread {
    pub ranks: u32,
    pub nodes: u32,
    /// Per repetition: all bytes over (latest end - earliest start), bytes/s.
    pub aggregate_bps: Vec<f64>,
    /// Per repetition: the sum of the ranks' own rates (what the ranks saw), bytes/s.
    pub sum_of_rank_bps: Vec<f64>,
    /// Per repetition: latest start - earliest start, seconds (how well the barrier aligned).
    pub start_skew_s: Vec<f64>,
    /// Every rank's repetitions, combined: mean and spread of a rank's throughput.
    pub rank_throughput: Moments,
    pub slowest_rank: Option<u32>,
    pub fastest_rank: Option<u32>,
    /// Ranks whose mean throughput is below `LAG_SHARE` (candor-mpi) of the median rank's.
    pub lagging_ranks: Vec<u32>,
    pub per_rank: Vec<RankFigures>,
    pub per_node: Vec<NodeFigures>,
    /// Plain sentences about this test's figures.
    pub notes: Vec<String>,
}

/// What one rank did in one test (saved under `ranks.per_rank`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct RankFigures {
    pub rank: u32,
    pub node: String,
    pub status: Status,
    pub error: Option<String>,
    /// Over all repetitions.
    pub bytes: u64,
    pub ops: u64,
    /// Per repetition.
    pub rep_bytes: Vec<u64>,
    /// Per repetition: the rank's bytes over its own span, bytes/s.
    pub throughput: Summary,
    /// Per repetition, seconds from rank 0's run start, on rank 0's clock.
    pub started_s: Vec<f64>,
    pub ended_s: Vec<f64>,
    pub latency_ns: Latency,
    pub latency_histogram: HistogramDump,
    pub truncated: bool,
    pub stonewalled: bool,
    pub verdict: Option<Verdict>,
    pub cache_hit_ratio: Option<f64>,
    pub write_amplification: Option<f64>,
    pub device_read_bytes: Option<u64>,
    pub device_write_bytes: Option<u64>,
}

/// One node's witness of one test: the combination of its ranks' witnesses.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct NodeFigures {
    pub node: String,
    pub ranks: Vec<u32>,
    pub verdict: Option<Verdict>,
    pub cache_hit_ratio: Option<f64>,
    /// A read test meant for the device that this node's page cache served (mostly) anyway.
    pub served_by_cache: bool,
    /// The node's device traffic, the job's own and foreign.
    pub traffic: Option<NodeTraffic>,
}

/// One node's device bytes over a test (begin -> finish of its ranks' widest windows),
/// split between the job and everything else. The job's own are every rank's requests on
/// the node, the writeback of the pages they dirtied and the filesystem's work for them
/// (journal and transaction commits); the other ranks of the job are never foreign.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct NodeTraffic {
    pub own_read_bytes: u64,
    pub own_write_bytes: u64,
    /// Other processes' device bytes, every direction.
    pub foreign_bytes: u64,
    /// Whether foreign bytes made this node's figures `disturbed`.
    pub disturbed: bool,
    /// True when eBPF attributed every request to its submitter; false when the procfs
    /// counters bounded the split (docs/witness.md, Attribution).
    pub exact: bool,
}

/// Mean, standard deviation and count, as combined from the ranks' Welford states.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct Moments {
    pub mean: f64,
    pub stddev: f64,
    pub n: u64,
}

impl Spread {
    /// A saved `ranks` value read into its type: the object MPI runs save or, from older
    /// or hand-written files, a bare list of ranks, and entries whose `throughput` is a
    /// number or that give `bytes` and `seconds` instead. None when it reads as neither.
    pub fn from_saved(v: Value) -> Option<Spread> {
        if v.is_object() {
            if let Ok(s) = serde_json::from_value::<Spread>(v.clone()) {
                return Some(s);
            }
        }
        let list = v
            .get("per_rank")
            .and_then(Value::as_array)
            .or_else(|| v.as_array())?;
        let per_rank = list
            .iter()
            .enumerate()
            .map(|(i, e)| loose_rank(i, e))
            .collect::<Option<Vec<_>>>()?;
        let u32s = |key: &str| -> Vec<u32> {
            v.get(key)
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|x| x.as_u64())
                        .map(|x| x as u32)
                        .collect()
                })
                .unwrap_or_default()
        };
        let rank = |key: &str| v.get(key).and_then(Value::as_u64).map(|x| x as u32);
        Some(Spread {
            ranks: rank("ranks").unwrap_or(per_rank.len() as u32),
            nodes: rank("nodes").unwrap_or_default(),
            slowest_rank: rank("slowest_rank"),
            fastest_rank: rank("fastest_rank"),
            lagging_ranks: u32s("lagging_ranks"),
            notes: v
                .get("notes")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|x| x.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default(),
            per_rank,
            ..Default::default()
        })
    }
}

/// One rank of a loosely written `ranks`: `rank` (else its place), `node`, and its
/// throughput as a summary, a number, or `bytes` over `seconds`.
fn loose_rank(i: usize, e: &Value) -> Option<RankFigures> {
    let t = e.get("throughput");
    let throughput = match t {
        Some(t) if t.is_number() => Summary {
            mean: t.as_f64()?,
            ..Default::default()
        },
        Some(t) => serde_json::from_value(t.clone()).ok()?,
        None => {
            let b = e.get("bytes")?.as_f64()?;
            let s = e.get("seconds")?.as_f64()?;
            Summary {
                mean: if s > 0.0 { b / s } else { return None },
                ..Default::default()
            }
        }
    };
    Some(RankFigures {
        rank: e.get("rank").and_then(Value::as_u64).unwrap_or(i as u64) as u32,
        node: e
            .get("node")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        bytes: e.get("bytes").and_then(Value::as_f64).unwrap_or(0.0) as u64,
        throughput,
        ..Default::default()
    })
}

/// `TestResult::ranks` as read from a file (within the readers' limits).
pub(crate) fn opt_spread<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Spread>, D::Error> {
    Ok(crate::bounded::opt_value(d)?.and_then(Spread::from_saved))
}

/// `TestResult::ranks` as saved: every object's keys in alphabetical order, as files of
/// schema version 2 (which kept it as a free JSON value) have them.
pub(crate) fn save_spread<S: Serializer>(v: &Option<Spread>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        None => s.serialize_none(),
        Some(spread) => serde_json::to_value(spread)
            .map_err(serde::ser::Error::custom)?
            .serialize(s),
    }
}
