//! Summaries of repeated measurements and the tests that compare them.

use candor_model::Summary;
use statrs::distribution::{ContinuousCDF, StudentsT};

/// Two-sided Student-t quantile for a confidence level (0.95 -> t such that 95% lie within ±t).
pub fn student_t_quantile(confidence: f64, df: f64) -> f64 {
    match StudentsT::new(0.0, 1.0, df) {
        Ok(t) => t.inverse_cdf(0.5 + confidence / 2.0),
        Err(_) => f64::NAN,
    }
}

/// Mean, sample standard deviation (n - 1), min, max, 95% confidence interval of the mean
/// and coefficient of variation of the samples. With one sample the interval is the point.
pub fn summarize(samples: &[f64]) -> Summary {
    let n = samples.len();
    if n == 0 {
        return Summary::default();
    }
    let mut w = Welford::default();
    for &x in samples {
        w.push(x);
    }
    let mean = w.mean();
    let sd = w.stddev();
    let half = if n >= 2 {
        student_t_quantile(0.95, (n - 1) as f64) * sd / (n as f64).sqrt()
    } else {
        0.0
    };
    let min = samples.iter().cloned().fold(f64::INFINITY, f64::min);
    let max = samples.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    Summary {
        mean,
        stddev: sd,
        min,
        max,
        ci95: [mean - half, mean + half],
        cv: if mean != 0.0 && n >= 2 {
            sd / mean
        } else {
            0.0
        },
        n: n as u32,
        samples: samples.to_vec(),
    }
}

/// Streaming mean and variance (Welford), mergeable exactly (Chan et al.), so per-thread or
/// per-rank figures combine without keeping the samples.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Welford {
    pub n: u64,
    pub mean: f64,
    pub m2: f64,
}

impl Welford {
    pub fn push(&mut self, x: f64) {
        self.n += 1;
        let d = x - self.mean;
        self.mean += d / self.n as f64;
        self.m2 += d * (x - self.mean);
    }

    pub fn merge(&mut self, o: &Welford) {
        if o.n == 0 {
            return;
        }
        if self.n == 0 {
            *self = *o;
            return;
        }
        let n = self.n + o.n;
        let d = o.mean - self.mean;
        self.mean += d * o.n as f64 / n as f64;
        self.m2 += o.m2 + d * d * (self.n as f64 * o.n as f64) / n as f64;
        self.n = n;
    }

    pub fn mean(&self) -> f64 {
        self.mean
    }

    /// Sample variance (n - 1).
    pub fn variance(&self) -> f64 {
        if self.n < 2 {
            0.0
        } else {
            self.m2 / (self.n - 1) as f64
        }
    }

    pub fn stddev(&self) -> f64 {
        self.variance().sqrt()
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Welch {
    pub t: f64,
    pub df: f64,
    /// Two-sided p-value.
    pub p: f64,
}

/// Welch's unequal-variance t-test on two sets of repetitions. None when either side has
/// fewer than two samples, or both have no spread at all.
pub fn welch_t_test(a: &[f64], b: &[f64]) -> Option<Welch> {
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let sa = summarize(a);
    let sb = summarize(b);
    let va = sa.stddev.powi(2) / a.len() as f64;
    let vb = sb.stddev.powi(2) / b.len() as f64;
    let se2 = va + vb;
    if se2 <= 0.0 {
        return None;
    }
    let t = (sa.mean - sb.mean) / se2.sqrt();
    let df = se2 * se2 / (va * va / (a.len() - 1) as f64 + vb * vb / (b.len() - 1) as f64);
    let dist = StudentsT::new(0.0, 1.0, df).ok()?;
    let p = 2.0 * (1.0 - dist.cdf(t.abs()));
    Some(Welch { t, df, p })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn summary_matches_hand_computed_values() {
        // samples 2, 4, 4, 4, 5, 5, 7, 9: mean 5, sample variance 32/7.
        let s = summarize(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]);
        assert!(close(s.mean, 5.0, 1e-12));
        assert!(close(s.stddev, (32.0f64 / 7.0).sqrt(), 1e-12));
        assert_eq!(s.min, 2.0);
        assert_eq!(s.max, 9.0);
        // t(0.975, 7) = 2.364624; half width = 2.364624 * 2.13809 / sqrt(8) = 1.78752
        assert!(close(s.ci95[0], 5.0 - 1.78752, 1e-4), "{:?}", s.ci95);
        assert!(close(s.ci95[1], 5.0 + 1.78752, 1e-4));
        assert!(close(s.cv, (32.0f64 / 7.0).sqrt() / 5.0, 1e-12));
    }

    #[test]
    fn t_quantiles_match_tables() {
        assert!(close(student_t_quantile(0.95, 1.0), 12.7062, 1e-3));
        assert!(close(student_t_quantile(0.95, 2.0), 4.3027, 1e-3));
        assert!(close(student_t_quantile(0.95, 10.0), 2.2281, 1e-3));
        assert!(close(student_t_quantile(0.95, 1000.0), 1.9623, 1e-3));
    }

    #[test]
    fn one_sample_has_a_point_interval() {
        let s = summarize(&[3.0]);
        assert_eq!(s.ci95, [3.0, 3.0]);
        assert_eq!(s.stddev, 0.0);
        assert_eq!(s.n, 1);
        assert_eq!(summarize(&[]).n, 0);
    }

    #[test]
    fn welford_merge_equals_one_pass() {
        let xs: Vec<f64> = (0..1000).map(|i| ((i * 37) % 101) as f64 * 1.5).collect();
        let mut all = Welford::default();
        xs.iter().for_each(|&x| all.push(x));
        let mut a = Welford::default();
        let mut b = Welford::default();
        xs[..333].iter().for_each(|&x| a.push(x));
        xs[333..].iter().for_each(|&x| b.push(x));
        a.merge(&b);
        assert_eq!(a.n, all.n);
        assert!(close(a.mean, all.mean, 1e-9));
        assert!(close(a.variance(), all.variance(), 1e-6));
    }

    #[test]
    fn welch_detects_a_real_difference_and_not_noise() {
        // Hand-checked: a = [10,11,12], b = [20,21,22]: t = -12.247, df = 4, p ≈ 0.00025.
        let w = welch_t_test(&[10.0, 11.0, 12.0], &[20.0, 21.0, 22.0]).unwrap();
        assert!(close(w.t, -12.2474, 1e-3));
        assert!(close(w.df, 4.0, 1e-9));
        assert!(w.p < 0.001);
        let same = welch_t_test(&[10.0, 12.0, 11.0], &[11.0, 10.0, 12.0]).unwrap();
        assert!(same.p > 0.5);
        assert!(welch_t_test(&[1.0], &[2.0, 3.0]).is_none());
    }
}
