//! The two bucket scales the BPF programs fill, and histograms over them. The bucket
//! arithmetic mirrors `l2_bucket` and `ll_bucket` in `bpf/candor.bpf.c` and is tested here
//! against the same examples.

use candor_model::HistogramDump;
use serde::Serialize;

/// How a histogram's buckets divide the values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Scale {
    /// Bucket 0 holds 0; bucket i >= 1 holds [2^(i-1), 2^i). Sizes and offsets.
    Log2,
    /// Values below 8 exact; above, four buckets per power of two (at most 25% wide).
    /// Latencies in nanoseconds.
    LogLinear,
    /// Bucket i holds the value i (the last bucket holds everything above). Queue depths.
    Linear,
}

/// Bucket of `v` on the log2 scale (as the BPF program computes it).
pub fn l2_bucket(v: u64, buckets: usize) -> usize {
    if v == 0 {
        return 0;
    }
    let b = 64 - v.leading_zeros() as usize;
    b.min(buckets - 1)
}

/// Bucket of `v` on the log-linear scale (as the BPF program computes it).
pub fn ll_bucket(v: u64) -> usize {
    if v < 8 {
        return v as usize;
    }
    let m = 63 - v.leading_zeros() as u64;
    (((m - 1) * 4 + ((v >> (m - 2)) & 3)) & 255) as usize
}

/// A histogram read from a BPF map.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Hist {
    pub scale: Scale,
    pub counts: Vec<u64>,
}

impl Hist {
    pub fn new(scale: Scale, counts: Vec<u64>) -> Hist {
        Hist { scale, counts }
    }

    pub fn from_u32(scale: Scale, counts: &[u32]) -> Hist {
        Hist::new(scale, counts.iter().map(|&c| u64::from(c)).collect())
    }

    /// Smallest value that falls in bucket `i`.
    pub fn lower(&self, i: usize) -> u64 {
        match self.scale {
            Scale::Linear => i as u64,
            Scale::Log2 => {
                if i == 0 {
                    0
                } else {
                    1u64 << (i - 1).min(63)
                }
            }
            Scale::LogLinear => {
                if i < 8 {
                    i as u64
                } else {
                    let shift = (i / 4 - 1) as u32;
                    let sub = (i % 4) as u128;
                    let v = (4 + sub).checked_shl(shift).unwrap_or(u128::MAX);
                    u64::try_from(v).unwrap_or(u64::MAX)
                }
            }
        }
    }

    /// Largest value that falls in bucket `i`.
    pub fn upper(&self, i: usize) -> u64 {
        match self.scale {
            Scale::Linear => i as u64,
            Scale::Log2 if i == 0 => 0,
            Scale::LogLinear if i < 8 => i as u64,
            _ => {
                if i + 1 >= self.counts.len() {
                    u64::MAX
                } else {
                    self.lower(i + 1).saturating_sub(1)
                }
            }
        }
    }

    /// Largest width of a bucket relative to its lower bound.
    pub fn relative_error(&self) -> f64 {
        match self.scale {
            Scale::Linear => 0.0,
            Scale::Log2 => 1.0,
            Scale::LogLinear => 0.25,
        }
    }

    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    pub fn is_empty(&self) -> bool {
        self.total() == 0
    }

    /// The q-quantile (0..=1), as the middle of the bucket that holds it; None when empty.
    pub fn quantile(&self, q: f64) -> Option<u64> {
        let total = self.total();
        if total == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                let lo = self.lower(i);
                let hi = self.upper(i);
                if hi == u64::MAX {
                    return Some(lo);
                }
                return Some(lo + (hi - lo) / 2);
            }
        }
        None
    }

    /// Bucket-by-bucket difference (a later reading minus an earlier one).
    pub fn minus(&self, earlier: &Hist) -> Hist {
        let counts = self
            .counts
            .iter()
            .enumerate()
            .map(|(i, &c)| c.saturating_sub(earlier.counts.get(i).copied().unwrap_or(0)))
            .collect();
        Hist::new(self.scale, counts)
    }

    pub fn add(&mut self, other: &Hist) {
        if self.counts.len() < other.counts.len() {
            self.counts.resize(other.counts.len(), 0);
        }
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
    }

    /// The saved form: (lower bound, count) for every non-empty bucket.
    pub fn to_dump(&self) -> HistogramDump {
        HistogramDump {
            relative_error: self.relative_error(),
            buckets: self
                .counts
                .iter()
                .enumerate()
                .filter(|(_, &c)| c > 0)
                .map(|(i, &c)| [self.lower(i), c])
                .collect(),
        }
    }

    /// Non-empty buckets as (lower, upper, count), for printing.
    pub fn rows(&self) -> Vec<(u64, u64, u64)> {
        self.counts
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(|(i, &c)| (self.lower(i), self.upper(i), c))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log2_buckets_start_at_powers_of_two() {
        assert_eq!(l2_bucket(0, 64), 0);
        assert_eq!(l2_bucket(1, 64), 1);
        assert_eq!(l2_bucket(4095, 64), 12);
        assert_eq!(l2_bucket(4096, 64), 13);
        assert_eq!(l2_bucket(u64::MAX, 64), 63);
        let h = Hist::new(Scale::Log2, vec![0; 64]);
        assert_eq!(h.lower(13), 4096);
        assert_eq!(h.upper(13), 8191);
        assert_eq!(h.lower(0), 0);
    }

    #[test]
    fn log_linear_buckets_contain_their_values() {
        let h = Hist::new(Scale::LogLinear, vec![0; 256]);
        for v in [
            0u64,
            1,
            7,
            8,
            9,
            14,
            15,
            16,
            100,
            1000,
            4096,
            123_456_789,
            1 << 40,
        ] {
            let b = ll_bucket(v);
            assert!(h.lower(b) <= v && v <= h.upper(b), "v={v} b={b}");
        }
        // Every bucket is at most 25% wide relative to its lower bound.
        for b in 8..250 {
            let (lo, hi) = (h.lower(b), h.upper(b));
            assert!(((hi - lo + 1) as f64) / (lo as f64) <= 0.25 + 1e-9, "b={b}");
            assert_eq!(ll_bucket(lo), b);
            assert_eq!(ll_bucket(hi), b);
        }
    }

    #[test]
    fn quantiles_come_from_the_right_bucket() {
        let mut counts = vec![0u64; 256];
        counts[ll_bucket(1000)] = 99;
        counts[ll_bucket(1_000_000)] = 1;
        let h = Hist::new(Scale::LogLinear, counts);
        let p50 = h.quantile(0.5).unwrap_or(0);
        assert!((896..=1023).contains(&p50), "{p50}");
        let p99 = h.quantile(0.99).unwrap_or(0);
        assert!(p99 < 2000, "{p99}");
        let max = h.quantile(1.0).unwrap_or(0);
        assert!(max > 800_000, "{max}");
        assert_eq!(Hist::new(Scale::Log2, vec![0; 64]).quantile(0.5), None);
    }

    #[test]
    fn dump_lists_non_empty_buckets_by_lower_bound() {
        let mut counts = vec![0u64; 64];
        counts[13] = 4096;
        let d = Hist::new(Scale::Log2, counts).to_dump();
        assert_eq!(d.buckets, vec![[4096, 4096]]);
        assert_eq!(d.relative_error, 1.0);
    }

    #[test]
    fn differences_never_go_negative() {
        let a = Hist::new(Scale::Linear, vec![5, 1, 0]);
        let b = Hist::new(Scale::Linear, vec![2, 3, 0]);
        assert_eq!(a.minus(&b).counts, vec![3, 0, 0]);
    }
}
