//! The ranks of an MPI result as reports show them: each rank's rate, and the spread
//! between them in one sentence.

use crate::units;
use candor_model::TestResult;

/// One rank's figures, as reports show them.
#[derive(Clone, Debug, PartialEq)]
pub struct RankRate {
    pub rank: u64,
    pub node: String,
    /// Mean throughput over the repetitions, bytes/s.
    pub mean: f64,
    pub ci95: [f64; 2],
    pub samples: Vec<f64>,
}

/// The per-rank entries of `TestResult::ranks`: the `per_rank` list of an MPI result (or a
/// bare list), each with "rank", "node" and "throughput" (a summary or a number), or "bytes"
/// and "seconds".
pub fn rank_rates(r: &TestResult) -> Option<Vec<RankRate>> {
    let v = r.ranks.as_ref()?;
    let arr = v
        .get("per_rank")
        .and_then(|p| p.as_array())
        .or_else(|| v.as_array())?;
    let mut out = Vec::new();
    for (i, e) in arr.iter().enumerate() {
        let rank = e.get("rank").and_then(|x| x.as_u64()).unwrap_or(i as u64);
        let node = e
            .get("node")
            .and_then(|x| x.as_str())
            .unwrap_or_default()
            .to_string();
        let t = e.get("throughput");
        let mean = t
            .and_then(|t| {
                t.as_f64()
                    .or_else(|| t.get("mean").and_then(|m| m.as_f64()))
            })
            .or_else(|| {
                let b = e.get("bytes")?.as_f64()?;
                let s = e.get("seconds")?.as_f64()?;
                (s > 0.0).then(|| b / s)
            })?;
        let ci = t
            .and_then(|t| t.get("ci95"))
            .and_then(|c| Some([c.get(0)?.as_f64()?, c.get(1)?.as_f64()?]))
            .unwrap_or([mean, mean]);
        let samples = t
            .and_then(|t| t.get("samples"))
            .and_then(|s| s.as_array())
            .map(|a| a.iter().filter_map(|x| x.as_f64()).collect())
            .unwrap_or_default();
        out.push(RankRate {
            rank,
            node,
            mean,
            ci95: ci,
            samples,
        });
    }
    Some(out)
}

/// The per-rank spread of an MPI result in one sentence, with the ranks that lagged and the
/// notes the run recorded.
pub fn rank_spread(r: &TestResult) -> Option<String> {
    let ranks = rank_rates(r)?;
    if ranks.len() < 2 {
        return None;
    }
    let slow = ranks.iter().min_by(|a, b| a.mean.total_cmp(&b.mean))?;
    let fast = ranks.iter().max_by(|a, b| a.mean.total_cmp(&b.mean))?;
    let at = |x: &RankRate| {
        if x.node.is_empty() {
            format!("rank {}", x.rank)
        } else {
            format!("rank {} ({})", x.rank, x.node)
        }
    };
    let mut s = format!(
        "{} ranks: slowest {} at {}, fastest {} at {}",
        ranks.len(),
        at(slow),
        units::rate_text(slow.mean),
        at(fast),
        units::rate_text(fast.mean)
    );
    let v = r.ranks.as_ref();
    let lagging: Vec<String> = v
        .and_then(|v| v.get("lagging_ranks"))
        .and_then(|l| l.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_u64())
                .map(|x| x.to_string())
                .collect()
        })
        .unwrap_or_default();
    if !lagging.is_empty() {
        s.push_str(&format!(
            "; lagging (below 90% of the median rank): {}",
            lagging.join(", ")
        ));
    }
    s.push('.');
    if let Some(notes) = v.and_then(|v| v.get("notes")).and_then(|n| n.as_array()) {
        for n in notes.iter().filter_map(|n| n.as_str()) {
            s.push_str(&format!(" {}.", sentence_case(n)));
        }
    }
    Some(s)
}

/// The text with its first letter in upper case (notes are saved as clauses).
fn sentence_case(t: &str) -> String {
    let mut c = t.chars();
    match c.next() {
        Some(first) => first.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}
