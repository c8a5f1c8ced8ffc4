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

/// The per-rank entries of `TestResult::ranks` (`Spread::per_rank`): each rank's mean
/// throughput, its 95% interval (the mean itself when none was saved) and its samples.
pub fn rank_rates(r: &TestResult) -> Option<Vec<RankRate>> {
    let spread = r.ranks.as_ref()?;
    Some(
        spread
            .per_rank
            .iter()
            .map(|p| {
                let t = &p.throughput;
                RankRate {
                    rank: u64::from(p.rank),
                    node: p.node.clone(),
                    mean: t.mean,
                    ci95: if t.ci95 == [0.0, 0.0] {
                        [t.mean, t.mean]
                    } else {
                        t.ci95
                    },
                    samples: t.samples.clone(),
                }
            })
            .collect(),
    )
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
    let spread = r.ranks.as_ref()?;
    let lagging: Vec<String> = spread.lagging_ranks.iter().map(u32::to_string).collect();
    if !lagging.is_empty() {
        s.push_str(&format!(
            "; lagging (below 90% of the median rank): {}",
            lagging.join(", ")
        ));
    }
    s.push('.');
    for n in &spread.notes {
        s.push_str(&format!(" {}.", sentence_case(n)));
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
