//! Whether a side's figure differs from the first side's beyond chance: Welch's t-test on
//! the repetitions, or the 95% intervals when the test cannot run.

use candor_model::TestResult;

/// Significance level of the Welch test.
pub const ALPHA: f64 = 0.05;

/// Whether a side's figure differs from the first side's beyond chance.
#[derive(Clone, Debug, PartialEq)]
pub enum Significance {
    /// The first side itself.
    Baseline,
    /// Welch's t-test on the repetitions.
    Welch { p: f64, significant: bool },
    /// Confidence intervals compared (the t-test needs spread on at least one side).
    Intervals { overlap: bool },
    /// Fewer than two repetitions on a side: nothing can be said.
    TooFewRuns,
}

impl Significance {
    pub fn is_significant(&self) -> bool {
        matches!(
            self,
            Significance::Welch {
                significant: true,
                ..
            } | Significance::Intervals { overlap: false }
        )
    }

    /// "yes (p=0.002)", "no (p=0.41)", "yes (CIs apart)", "n/a (1 run)".
    pub fn cell(&self) -> String {
        match self {
            Significance::Baseline => String::new(),
            Significance::Welch { p, significant } => format!(
                "{} ({})",
                if *significant { "yes" } else { "no" },
                fmt_p(*p)
            ),
            Significance::Intervals { overlap: false } => "yes (CIs apart)".into(),
            Significance::Intervals { overlap: true } => "no (CIs overlap)".into(),
            Significance::TooFewRuns => "n/a (1 run)".into(),
        }
    }
}

/// "p<0.001", "p=0.023".
fn fmt_p(p: f64) -> String {
    if p < 0.001 {
        "p<0.001".into()
    } else {
        format!("p={p:.3}")
    }
}

/// Decides the significance of `b` against the baseline `a`.
pub fn significance(a: &TestResult, b: &TestResult) -> Significance {
    let (sa, sb) = (&a.throughput, &b.throughput);
    if sa.n < 2 || sb.n < 2 || sa.samples.len() < 2 || sb.samples.len() < 2 {
        return Significance::TooFewRuns;
    }
    match candor_stats::welch_t_test(&sa.samples, &sb.samples) {
        Some(w) if w.p.is_finite() => Significance::Welch {
            p: w.p,
            significant: w.p < ALPHA,
        },
        _ => Significance::Intervals {
            overlap: sa.ci95[0] <= sb.ci95[1] && sb.ci95[0] <= sa.ci95[1],
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::compare;
    use crate::compare::fixtures::{lettered, result, side};
    use candor_model::Summary;

    #[test]
    fn noise_is_not_called_a_difference() {
        let a = side("a", vec![result("read", 4096, &[100e6, 110e6, 90e6])]);
        let b = side("b", vec![result("read", 4096, &[104e6, 96e6, 108e6])]);
        let c = compare(lettered(vec![a, b]));
        let s = &c.rows[0].cells[1].as_ref().expect("cell").significance;
        assert!(!s.is_significant(), "{s:?}");
        assert!(s.cell().starts_with("no (p="), "{}", s.cell());
    }

    #[test]
    fn without_spread_intervals_decide_and_one_run_says_nothing() {
        let mut a = result("read", 4096, &[100e6, 100e6]);
        let mut b = result("read", 4096, &[120e6, 120e6]);
        a.throughput.ci95 = [100e6, 100e6];
        b.throughput.ci95 = [120e6, 120e6];
        assert_eq!(
            significance(&a, &b),
            Significance::Intervals { overlap: false }
        );
        let one = TestResult {
            throughput: Summary {
                mean: 1.0,
                n: 1,
                samples: vec![1.0],
                ..Default::default()
            },
            ..a.clone()
        };
        assert_eq!(significance(&one, &b), Significance::TooFewRuns);
        assert_eq!(Significance::TooFewRuns.cell(), "n/a (1 run)");
    }
}
