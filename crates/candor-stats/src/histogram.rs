//! A log-linear histogram of nanosecond values (the HdrHistogram idea, written for the
//! hot path): 64 linear sub-buckets per power of two, so any value read back is within
//! 1/128 of the truth (bucket midpoint, clamped to the recorded min and max). Recording is
//! a leading-zero count, a shift and an add: no allocation, no branch on the value's size
//! beyond one comparison. Histograms merge by adding counts, which is what makes
//! per-thread and per-rank statistics exact once combined.

use candor_model::{HistogramDump, Latency};

const SUB_BITS: u32 = 6;
const SUB: u64 = 1 << SUB_BITS;
/// Enough buckets for every u64.
const BUCKETS: usize = ((64 - SUB_BITS as usize) + 1) * SUB as usize;

/// The largest relative error of a value read back from the histogram (half a bucket).
pub const RELATIVE_ERROR: f64 = 1.0 / (2.0 * SUB as f64);

#[derive(Clone)]
pub struct Histogram {
    counts: Box<[u64]>,
    total: u64,
    sum: u128,
    min: u64,
    max: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Histogram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Histogram")
            .field("total", &self.total)
            .field("min", &self.min)
            .field("max", &self.max)
            .finish()
    }
}

#[inline(always)]
fn index_of(v: u64) -> usize {
    if v < SUB {
        return v as usize;
    }
    let msb = 63 - v.leading_zeros();
    let shift = msb - SUB_BITS;
    let mantissa = v >> shift;
    ((shift as u64 + 1) * SUB + (mantissa - SUB)) as usize
}

/// Lower bound and width of bucket `i`.
fn bucket_bounds(i: usize) -> (u64, u64) {
    let i = i as u64;
    if i < 2 * SUB {
        return (i, 1);
    }
    let shift = i / SUB - 1;
    let mantissa = SUB + i % SUB;
    (mantissa << shift, 1u64 << shift)
}

impl Histogram {
    pub fn new() -> Self {
        Histogram {
            counts: vec![0u64; BUCKETS].into_boxed_slice(),
            total: 0,
            sum: 0,
            min: u64::MAX,
            max: 0,
        }
    }

    #[inline(always)]
    pub fn record(&mut self, v: u64) {
        // SAFETY-free: index_of never exceeds BUCKETS - 1 for any u64.
        if let Some(c) = self.counts.get_mut(index_of(v)) {
            *c += 1;
        }
        self.total += 1;
        self.sum += v as u128;
        if v < self.min {
            self.min = v;
        }
        if v > self.max {
            self.max = v;
        }
    }

    /// Adds `n` observations of `v` at once (used when rebuilding from saved buckets).
    pub fn record_n(&mut self, v: u64, n: u64) {
        if n == 0 {
            return;
        }
        if let Some(c) = self.counts.get_mut(index_of(v)) {
            *c += n;
        }
        self.total += n;
        self.sum += v as u128 * n as u128;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    pub fn merge(&mut self, other: &Histogram) {
        for (a, b) in self.counts.iter_mut().zip(other.counts.iter()) {
            *a += *b;
        }
        self.total += other.total;
        self.sum += other.sum;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    pub fn count(&self) -> u64 {
        self.total
    }

    pub fn min(&self) -> u64 {
        if self.total == 0 {
            0
        } else {
            self.min
        }
    }

    pub fn max(&self) -> u64 {
        self.max
    }

    pub fn mean(&self) -> f64 {
        if self.total == 0 {
            0.0
        } else {
            self.sum as f64 / self.total as f64
        }
    }

    /// The value below which a share `q` (0..=1) of the observations lie.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.total == 0 {
            return 0;
        }
        let q = q.clamp(0.0, 1.0);
        let rank = ((q * self.total as f64).ceil() as u64).max(1);
        let mut seen = 0u64;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                let (lo, width) = bucket_bounds(i);
                let mid = lo + width / 2;
                return mid.clamp(self.min, self.max);
            }
        }
        self.max
    }

    pub fn latency(&self) -> Latency {
        Latency {
            min: self.min(),
            mean: self.mean(),
            p50: self.quantile(0.50),
            p90: self.quantile(0.90),
            p99: self.quantile(0.99),
            p999: self.quantile(0.999),
            max: self.max(),
            count: self.total,
            sampled_every: None,
        }
    }

    /// The saved form: (lower bound, count) of every non-empty bucket.
    pub fn dump(&self) -> HistogramDump {
        let buckets = self
            .counts
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(|(i, &c)| [bucket_bounds(i).0, c])
            .collect();
        HistogramDump {
            relative_error: RELATIVE_ERROR,
            buckets,
        }
    }

    /// Rebuilds a histogram from its saved form. Min, max and mean are approximate (bucket
    /// bounds), which is within the same error as every other value read from it.
    pub fn from_dump(d: &HistogramDump) -> Histogram {
        let mut h = Histogram::new();
        for &[lo, n] in &d.buckets {
            h.record_n(lo, n);
        }
        h
    }

    /// Raw bucket counts (for merging across processes).
    pub fn raw_counts(&self) -> &[u64] {
        &self.counts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_and_bounds_agree_everywhere() {
        for v in (0u64..5000).chain([u64::MAX, u64::MAX / 3, 1 << 40, (1 << 40) - 1]) {
            let i = index_of(v);
            assert!(i < BUCKETS);
            let (lo, w) = bucket_bounds(i);
            assert!(lo <= v && v - lo < w, "v={v} i={i} lo={lo} w={w}");
        }
    }

    #[test]
    fn error_bound_holds_on_every_scale() {
        // Every value read back lies within RELATIVE_ERROR of a value that was recorded.
        let mut x = 1u64;
        while x < (1u64 << 50) {
            for v in [x, x + x / 3, x * 2 - 1] {
                let mut h = Histogram::new();
                h.record(v);
                h.record(v * 3); // a second value so min/max clamping alone cannot hide the error
                let got = h.quantile(0.5) as f64;
                let err = (got - v as f64).abs() / v as f64;
                assert!(err <= RELATIVE_ERROR + 1e-12, "v={v} got={got} err={err}");
            }
            x = x * 3 + 1;
        }
    }

    #[test]
    fn percentiles_of_a_uniform_sequence() {
        let mut h = Histogram::new();
        for v in 1..=100_000u64 {
            h.record(v);
        }
        for (q, want) in [(0.5, 50_000.0), (0.9, 90_000.0), (0.99, 99_000.0)] {
            let got = h.quantile(q) as f64;
            assert!(
                (got - want).abs() / want <= RELATIVE_ERROR * 2.0,
                "q={q} got={got}"
            );
        }
        assert_eq!(h.min(), 1);
        assert_eq!(h.max(), 100_000);
        assert!((h.mean() - 50_000.5).abs() < 1e-6);
    }

    #[test]
    fn merge_equals_recording_everything_in_one() {
        let mut a = Histogram::new();
        let mut b = Histogram::new();
        let mut all = Histogram::new();
        for v in 0..10_000u64 {
            let x = v * v % 7919 + 100;
            if v % 3 == 0 {
                a.record(x)
            } else {
                b.record(x)
            }
            all.record(x);
        }
        a.merge(&b);
        assert_eq!(a.raw_counts(), all.raw_counts());
        assert_eq!(a.latency(), all.latency());
    }

    #[test]
    fn dump_round_trip_keeps_buckets() {
        let mut h = Histogram::new();
        for v in [5u64, 5, 700, 123_456, 9_999_999] {
            h.record(v);
        }
        let back = Histogram::from_dump(&h.dump());
        assert_eq!(back.raw_counts(), h.raw_counts());
        assert_eq!(back.count(), 5);
    }

    #[test]
    fn empty_histogram_reads_zero() {
        let h = Histogram::new();
        assert_eq!(h.quantile(0.99), 0);
        assert_eq!(h.latency().count, 0);
        assert_eq!(h.min(), 0);
    }
}
