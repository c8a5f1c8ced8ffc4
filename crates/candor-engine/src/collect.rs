//! What becomes of each point's results as they arrive: their efficiency against the
//! device's ceiling, the warnings they raise, and with `--duration` the merge of a round
//! into the rounds before it.

use crate::efficiency::{efficiency, DeviceSpec};
use candor_model::units::{format_bytes, ByteStyle};
use candor_model::{Repetition, TestResult};
use serde_json::Value;

/// The results of a run so far.
pub struct Collector {
    /// The default run: its runtime cap is said once in the plan's notes, not per result.
    default_run: bool,
    /// `--duration`: each test keeps its latest round.
    soak: bool,
    ceiling: Option<DeviceSpec>,
}

impl Collector {
    pub fn new(default_run: bool, soak: bool, ceiling: Option<DeviceSpec>) -> Collector {
        Collector {
            default_run,
            soak,
            ceiling,
        }
    }

    /// Takes one point's results into `results` (the document's: they are kept once, not
    /// copied after every point); returns the warnings about them, with those `more` adds
    /// for each result (about MPI ranks, say), in result order.
    pub fn add(
        &mut self,
        results: &mut Vec<TestResult>,
        mut rs: Vec<TestResult>,
        more: &dyn Fn(&TestResult) -> Vec<String>,
    ) -> Vec<String> {
        if let Some(spec) = &self.ceiling {
            for r in rs.iter_mut() {
                r.efficiency = efficiency(r, spec);
            }
        }
        let warnings = rs
            .iter()
            .flat_map(|r| {
                result_warnings(r, self.default_run)
                    .into_iter()
                    .chain(more(r))
            })
            .collect();
        if self.soak {
            soak_merge(results, rs);
        } else {
            results.extend(rs);
        }
        warnings
    }
}

/// Typed warnings about one result, each worded with its remedy.
fn result_warnings(r: &TestResult, default_run: bool) -> Vec<String> {
    let mut out = Vec::new();
    let label = format!(
        "{} ({} file, {} records, {} thread(s), QD {})",
        r.test,
        format_bytes(r.file_size, ByteStyle::LABEL),
        format_bytes(r.record_size, ByteStyle::LABEL),
        r.threads,
        r.iodepth
    );
    // Unsteady repetitions (CV > 10%) are flagged by the reporters from the data itself.
    let truncated: Vec<&Repetition> = r.reps.iter().filter(|x| x.truncated).collect();
    if !truncated.is_empty() && !default_run {
        let want = (r.file_size / r.record_size.max(1)) * r.threads as u64;
        let done = truncated.iter().map(|x| x.ops).min().unwrap_or(0);
        use candor_model::advice::{clause, Given, InForce, Suggestion as S};
        // --steady-state refuses --runtime: its rounds have their own length.
        let steady = r.steady_state.is_some();
        let force = InForce {
            given: Given {
                steady_state: steady,
                ..Given::default()
            },
            ..InForce::default()
        };
        let (what, unit) = if steady {
            ("the round's length", "round(s)")
        } else {
            ("--runtime", "repetition(s)")
        };
        let fix = clause(&[S::RaiseRuntime, S::LongerRounds], &force, 0)
            .map(|f| format!(": {f}"))
            .unwrap_or_default();
        out.push(format!(
            "{label}: {what} ended {} of {} {unit} after {:.0}% of the file; the figure covers only that part{fix}",
            truncated.len(),
            r.reps.len(),
            // Rounded down: a cut repetition never reads as 100% of the file.
            (100.0 * done as f64 / want.max(1) as f64).floor()
        ));
    }
    if let Some(st) = r.steady_state.as_ref().filter(|st| !st.attained) {
        out.push(format!(
            "{label}: not steady after {} round(s) of {} s; its figures are the last window's: allow more rounds or longer ones (--steady-state=max=...,round=...)",
            st.rounds_run, st.round_seconds
        ));
    }
    if let Some(p) = r.precondition.as_ref().filter(|p| !p.reached_device) {
        out.push(format!("{label}: {}", p.explanation));
    }
    out
}

/// `--duration`: each test keeps its latest round's result, and every round's mean
/// throughput in `extra.rounds_throughput` (so memory does not grow with the rounds).
fn soak_merge(results: &mut Vec<TestResult>, new: Vec<TestResult>) {
    for mut r in new {
        let same = results.iter().position(|o| {
            o.target == r.target
                && o.test == r.test
                && o.file_size == r.file_size
                && o.record_size == r.record_size
                && o.threads == r.threads
                && o.iodepth == r.iodepth
        });
        // Whether this round failed, before an earlier round's failure is carried into it.
        let failed_now = !r.status.is_ok();
        let mut rounds: Vec<Value> = Vec::new();
        let mut failed_rounds = 0u64;
        if let Some(i) = same {
            let old = results.remove(i);
            if let Some(Value::Array(a)) = old.extra.get("rounds_throughput") {
                rounds = a.clone();
            }
            failed_rounds = old
                .extra
                .get("failed_rounds")
                .and_then(|v| v.as_u64())
                .unwrap_or(0);
            if !old.status.is_ok() && r.status.is_ok() {
                // A failure in an earlier round stays visible.
                r.status = old.status;
                r.error = old.error;
            }
        }
        if failed_now {
            failed_rounds += 1;
        }
        rounds.push(r.throughput.mean.into());
        r.extra
            .insert("rounds_throughput".into(), Value::Array(rounds));
        r.extra.insert("failed_rounds".into(), failed_rounds.into());
        match same {
            Some(i) => results.insert(i, r),
            None => results.push(r),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candor_model::Status;

    fn result(test: &str, mean: f64, status: Status) -> TestResult {
        let mut r = TestResult {
            test: test.into(),
            file_size: 1 << 20,
            record_size: 4096,
            threads: 1,
            iodepth: 1,
            status,
            ..Default::default()
        };
        r.throughput.mean = mean;
        r
    }

    #[test]
    fn soak_keeps_the_last_round_and_every_rounds_throughput() {
        let mut c = Collector::new(false, true, None);
        let mut results = Vec::new();
        let none = |_: &TestResult| Vec::new();
        c.add(&mut results, vec![result("write", 1.0, Status::Ok)], &none);
        c.add(
            &mut results,
            vec![result("write", 2.0, Status::Failed)],
            &none,
        );
        c.add(&mut results, vec![result("write", 3.0, Status::Ok)], &none);
        assert_eq!(results.len(), 1);
        let r = &results[0];
        assert_eq!(r.throughput.mean, 3.0);
        assert_eq!(
            r.status,
            Status::Failed,
            "an earlier round's failure stays visible"
        );
        assert_eq!(
            r.extra["rounds_throughput"],
            serde_json::json!([1.0, 2.0, 3.0])
        );
        assert_eq!(
            r.extra["failed_rounds"],
            serde_json::json!(1),
            "only the round that failed counts"
        );
    }

    #[test]
    fn a_cut_repetition_is_said_unless_the_default_run_said_it() {
        let mut r = result("read", 1.0, Status::Ok);
        r.reps = vec![Repetition {
            truncated: true,
            ops: 128,
            ..Default::default()
        }];
        let w = result_warnings(&r, false);
        assert_eq!(w.len(), 1);
        assert!(w[0].contains("after 50% of the file"), "{}", w[0]);
        assert!(result_warnings(&r, true).is_empty());
    }

    #[test]
    fn a_cut_steady_state_round_asks_for_longer_rounds_not_runtime() {
        // --steady-state refuses --runtime: its rounds have their own length.
        let mut r = result("read", 1.0, Status::Ok);
        r.reps = vec![Repetition {
            truncated: true,
            ops: 128,
            ..Default::default()
        }];
        r.steady_state = Some(candor_model::SteadyState {
            attained: true,
            rounds_run: 5,
            round_seconds: 0.5,
            ..Default::default()
        });
        let w = result_warnings(&r, false);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(!w[0].contains("--runtime"), "{}", w[0]);
        assert!(
            w[0].ends_with(
                "the round's length ended 1 of 1 round(s) after 50% of the file; the figure covers only that part: give longer rounds (--steady-state=round=...) to cover the whole file"
            ),
            "{}",
            w[0]
        );
        // Without --steady-state: --runtime, as before.
        r.steady_state = None;
        let w = result_warnings(&r, false);
        assert!(
            w[0].ends_with("raise --runtime to cover the whole file"),
            "{}",
            w[0]
        );
    }

    #[test]
    fn an_unsteady_test_and_a_preconditioning_the_device_missed_are_said() {
        let mut r = result("randwrite", 1.0, Status::Ok);
        r.steady_state = Some(candor_model::SteadyState {
            attained: false,
            rounds_run: 3,
            round_seconds: 0.5,
            ..Default::default()
        });
        r.precondition = Some(candor_model::Precondition {
            reached_device: false,
            explanation: "preconditioning wrote 3 MiB but the device took only 1 MiB (33%)".into(),
            ..Default::default()
        });
        let w = result_warnings(&r, false);
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(
            w[0].contains("not steady after 3 round(s) of 0.5 s"),
            "{}",
            w[0]
        );
        assert!(
            w[1].ends_with("the device took only 1 MiB (33%)"),
            "{}",
            w[1]
        );
        r.steady_state.as_mut().unwrap().attained = true;
        r.precondition.as_mut().unwrap().reached_device = true;
        assert!(result_warnings(&r, false).is_empty());
    }

    #[test]
    fn efficiency_and_extra_warnings_are_applied_in_order() {
        let spec = crate::efficiency::parse_spec("seq=2B/s").unwrap();
        let mut c = Collector::new(false, false, Some(spec));
        let mut results = Vec::new();
        let w = c.add(
            &mut results,
            vec![
                result("write", 1.0, Status::Ok),
                result("read", 1.0, Status::Ok),
            ],
            &|r| vec![format!("about {}", r.test)],
        );
        assert_eq!(w, ["about write", "about read"]);
        assert!((results[0].efficiency.as_ref().unwrap().share - 0.5).abs() < 1e-12);
    }
}
