//! The regression gate of `candor compare`: `--fail-if-slower PCT` fails a comparison when a
//! side's throughput is more than PCT% below the first side's, `--fail-if-faster PCT` when it
//! is more than PCT% above it (a lower latency per operation than the baseline's: a device
//! test now answered by a cache, an fsync that no longer happens). A row fails only when the
//! difference is beyond PCT **and** significant by the very test the comparison's table
//! shows (`compare::significance`): noise never fails a gate, and neither does a difference
//! too small to matter. A gate that could judge no row fails too (`Outcome::judged_nothing`):
//! a comparison whose sides share no test with the same options proves nothing, unless
//! `--allow-unmatched` says that is expected. What was left out is named row by row, and a
//! gate that passes says what it judged (`Outcome::passed_line`). `--format github` renders
//! the outcome as a Markdown summary for a CI job's page.

use crate::compare::{self, Comparison, Significance};
use crate::grid::{Align, Grid};
use crate::units;

/// The thresholds, in percent; None when that direction is not gated.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Gate {
    pub slower_pct: Option<f64>,
    pub faster_pct: Option<f64>,
    /// `--allow-unmatched`: a gate that could judge no row passes instead of failing.
    pub allow_unmatched: bool,
}

impl Gate {
    /// Whether a threshold was given at all.
    pub fn is_set(&self) -> bool {
        self.slower_pct.is_some() || self.faster_pct.is_some()
    }
}

/// Which way a side's speed moved (not a read/write direction: that is
/// `candor_model::Direction`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Drift {
    Slower,
    Faster,
}

impl Drift {
    fn word(self) -> &'static str {
        match self {
            Drift::Slower => "slower",
            Drift::Faster => "faster",
        }
    }
}

/// One side of one row judged by the gate.
#[derive(Clone, Debug, PartialEq)]
pub struct Finding {
    /// "read 16m/64k psync".
    pub test: String,
    /// "B (new.json)".
    pub side: String,
    /// "A (base.json)".
    pub baseline: String,
    pub ratio: f64,
    pub direction: Drift,
    /// The threshold it crossed, in percent.
    pub pct: f64,
    /// The significance cell as the table shows it ("yes (p<0.001)").
    pub significance: String,
}

impl Finding {
    /// How far it moved, in percent of the baseline (positive).
    pub fn change_pct(&self) -> f64 {
        (self.ratio - 1.0).abs() * 100.0
    }

    /// The failing row in one line: "slower: read 16m/64k psync: B (new.json) is 0.12x of
    /// A (base.json), 88.0% slower, beyond 10%, significant: yes (p<0.001)".
    pub fn line(&self) -> String {
        format!(
            "{}: {}: {} is {} of {}, {:.1}% {}, beyond {}%, significant: {}",
            self.direction.word(),
            self.test,
            self.side,
            units::ratio(self.ratio),
            self.baseline,
            self.change_pct(),
            self.direction.word(),
            fmt_pct(self.pct),
            self.significance
        )
    }
}

/// The largest move of a judged row in one direction, whether or not it crossed a threshold.
#[derive(Clone, Debug, PartialEq)]
pub struct Extreme {
    /// "read 64m/4k psync".
    pub test: String,
    /// "B (new.json)".
    pub side: String,
    pub ratio: f64,
    /// The significance cell as the table shows it ("no (p=0.412)").
    pub significance: String,
}

impl Extreme {
    /// "read 64m/4k psync on B (new.json), 5.0% slower (significant: no (p=0.412))".
    fn phrase(&self, direction: Drift) -> String {
        format!(
            "{} on {}, {:.1}% {} (significant: {})",
            self.test,
            self.side,
            (self.ratio - 1.0).abs() * 100.0,
            direction.word(),
            self.significance
        )
    }
}

/// What the gate found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Outcome {
    /// Rows beyond a threshold and significant: the gate fails.
    pub failures: Vec<Finding>,
    /// Rows beyond a threshold that the test could not call significant because a side has
    /// a single repetition: they do not fail the gate, and are named.
    pub untestable: Vec<Finding>,
    /// Matched tests that failed on a side: no figure to judge, named.
    pub failed_tests: Vec<String>,
    /// Rows with a figure on A and on at least one other side: what the gate judged.
    pub judged_rows: usize,
    /// The sides judged against A, named ("B (new.json)").
    pub judged_sides: Vec<String>,
    /// The baseline, named ("A (base.json)").
    pub baseline: String,
    /// Results that were not compared, each with why (`compare::Unmatched::sentence`, or
    /// "...: not in A (base.json), ..." for a row other sides share without the baseline).
    pub left_out: Vec<String>,
    /// The judged row that fell the most (ratio below 1), and the one that rose the most.
    pub slowest: Option<Extreme>,
    pub fastest: Option<Extreme>,
    /// Whether a threshold was given, and `--allow-unmatched`.
    pub gated: bool,
    pub allow_unmatched: bool,
}

impl Outcome {
    /// No failing row, and something judged (or `--allow-unmatched`, or no gate at all).
    pub fn passed(&self) -> bool {
        self.failures.is_empty() && !(self.gated && self.judged_nothing() && !self.allow_unmatched)
    }

    /// Not one row could be judged: no test ran with the same options on A and another side
    /// (or every such test failed).
    pub fn judged_nothing(&self) -> bool {
        self.judged_rows == 0
    }

    /// Why a gate that judged nothing fails, in one sentence.
    pub fn nothing_judged_sentence(&self) -> String {
        format!(
            "the gate judged nothing: no test ran with the same options on {} and another side, \
             so no row could be found slower or faster; compare runs of one plan, or give \
             --allow-unmatched to let a comparison with nothing to judge pass",
            self.baseline
        )
    }

    /// "; 2 results not compared and 1 not tested, listed above", or "" when nothing was
    /// left out.
    fn left_out_clause(&self) -> String {
        let not_tested = self.untestable.len() + self.failed_tests.len();
        let mut parts = Vec::new();
        if !self.left_out.is_empty() {
            parts.push(format!(
                "{} result{} not compared",
                self.left_out.len(),
                if self.left_out.len() == 1 { "" } else { "s" }
            ));
        }
        if not_tested > 0 {
            parts.push(format!("{not_tested} not tested"));
        }
        if parts.is_empty() {
            String::new()
        } else {
            format!("; {}, listed above", parts.join(" and "))
        }
    }

    /// What a gate that passed judged, in one line: how many rows of which sides, the
    /// thresholds, and the largest move in each direction gated. None when it did not pass.
    pub fn passed_line(&self, gate: &Gate) -> Option<String> {
        if !self.gated || !self.passed() {
            return None;
        }
        if self.judged_nothing() {
            return Some(format!(
                "gate passed with nothing judged (--allow-unmatched): no test ran with the same \
                 options on {} and another side{}",
                self.baseline,
                self.left_out_clause()
            ));
        }
        let mut l = format!(
            "gate passed: {} row{} of {} judged against {}: none is significantly {}",
            self.judged_rows,
            if self.judged_rows == 1 { "" } else { "s" },
            self.judged_sides.join(", "),
            self.baseline,
            asked_plain(gate)
        );
        // "; the largest slowdown: ..." or "; no row is slower" (likewise faster).
        let extreme = |e: &Option<Extreme>, direction, change: &str, none: &str| match e {
            Some(e) => format!("; the largest {change}: {}", e.phrase(direction)),
            None => format!("; no row is {none}"),
        };
        if gate.slower_pct.is_some() {
            l.push_str(&extreme(&self.slowest, Drift::Slower, "slowdown", "slower"));
        }
        if gate.faster_pct.is_some() {
            l.push_str(&extreme(&self.fastest, Drift::Faster, "speed-up", "faster"));
        }
        l.push_str(&self.left_out_clause());
        Some(l)
    }
}

fn fmt_pct(p: f64) -> String {
    if p.fract() == 0.0 {
        format!("{p:.0}")
    } else {
        format!("{p}")
    }
}

/// Reads a threshold: "10", "10%" or "2.5"; above 0, and below 100 for a slowdown (a
/// throughput cannot fall by 100% or more).
pub fn parse_pct(s: &str, direction: Drift) -> Result<f64, String> {
    let t = s.trim().trim_end_matches('%');
    let v: f64 = t.parse().map_err(|_| {
        format!(
            "--fail-if-{} takes a percentage such as 10 or 2.5, not {s:?}",
            direction.word()
        )
    })?;
    let max_ok = direction == Drift::Faster || v < 100.0;
    if !v.is_finite() || v <= 0.0 || !max_ok {
        return Err(format!(
            "--fail-if-{} takes a percentage above 0{}, not {s:?}",
            direction.word(),
            if direction == Drift::Slower {
                " and below 100"
            } else {
                ""
            }
        ));
    }
    Ok(v)
}

/// Judges every side after the first against it.
pub fn judge(c: &Comparison, gate: &Gate) -> Outcome {
    let name = |i: usize| format!("{} ({})", c.sides[i].letter, c.sides[i].source);
    let mut out = Outcome {
        gated: gate.is_set(),
        allow_unmatched: gate.allow_unmatched,
        baseline: if c.sides.is_empty() {
            "A".into()
        } else {
            name(0)
        },
        left_out: c.unmatched.iter().map(|u| u.sentence()).collect(),
        ..Default::default()
    };
    for row in &c.rows {
        let mut judged = false;
        for (i, cell) in row.cells.iter().enumerate().skip(1) {
            // The pair judged: the test, this side and the baseline, as every sentence names them.
            let (test, side, baseline) = (row.key.label(), name(i), name(0));
            let Some(cell) = cell else {
                out.left_out.push(format!(
                    "{test}: not in {side} (only in {})",
                    row.cells
                        .iter()
                        .enumerate()
                        .filter(|(_, c)| c.is_some())
                        .map(|(j, _)| name(j))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
                continue;
            };
            if row.cells[0].is_none() {
                out.left_out.push(format!(
                    "{test} in {side}: not in {baseline}, the side every other is judged against"
                ));
                continue;
            }
            if crate::view::failed(&cell.result)
                || row.cells[0]
                    .as_ref()
                    .is_some_and(|b| crate::view::failed(&b.result))
            {
                if gate.slower_pct.is_some() || gate.faster_pct.is_some() {
                    out.failed_tests.push(format!(
                        "{test}: failed on {side} or on {baseline}, nothing to judge"
                    ));
                }
                continue;
            }
            let Some(ratio) = cell.ratio else { continue };
            judged = true;
            if !out.judged_sides.contains(&side) {
                out.judged_sides.push(side.clone());
            }
            let extreme = || Extreme {
                test: test.clone(),
                side: side.clone(),
                ratio,
                significance: cell.significance.cell(),
            };
            if ratio < 1.0 && out.slowest.as_ref().is_none_or(|e| ratio < e.ratio) {
                out.slowest = Some(extreme());
            }
            if ratio > 1.0 && out.fastest.as_ref().is_none_or(|e| ratio > e.ratio) {
                out.fastest = Some(extreme());
            }
            let crossed = match (gate.slower_pct, gate.faster_pct) {
                (Some(p), _) if ratio < 1.0 - p / 100.0 => Some((Drift::Slower, p)),
                (_, Some(p)) if ratio > 1.0 + p / 100.0 => Some((Drift::Faster, p)),
                _ => None,
            };
            let Some((direction, pct)) = crossed else {
                continue;
            };
            let finding = Finding {
                test,
                side,
                baseline,
                ratio,
                direction,
                pct,
                significance: cell.significance.cell(),
            };
            if cell.significance.is_significant() {
                out.failures.push(finding);
            } else if cell.significance == Significance::TooFewRuns {
                out.untestable.push(finding);
            }
        }
        if judged {
            out.judged_rows += 1;
        }
    }
    out
}

/// "slower by more than 10% or faster by more than 50%".
fn asked_plain(gate: &Gate) -> String {
    asked_than(gate, "")
}

/// What the gate asked, in words: "slower than `A` by more than 10% or faster than `A` by
/// more than 50%".
fn asked(gate: &Gate) -> String {
    asked_than(gate, " than `A`")
}

/// What the gate asked, with `than` after "slower" and "faster".
fn asked_than(gate: &Gate, than: &str) -> String {
    let mut parts = Vec::new();
    if let Some(p) = gate.slower_pct {
        parts.push(format!("slower{than} by more than {}%", fmt_pct(p)));
    }
    if let Some(p) = gate.faster_pct {
        parts.push(format!("faster{than} by more than {}%", fmt_pct(p)));
    }
    parts.join(" or ")
}

/// `--format github`: a Markdown summary for a CI job's page (`$GITHUB_STEP_SUMMARY`): the
/// gate's outcome first, the failing rows as a table, then the whole comparison folded.
pub fn github(c: &Comparison, gate: &Gate) -> String {
    let o = judge(c, gate);
    let gated = gate.slower_pct.is_some() || gate.faster_pct.is_some();
    let mut out = String::from("## candor compare\n\n");
    let sides: Vec<String> = c
        .sides
        .iter()
        .map(|s| {
            format!(
                "`{}` {}",
                s.letter,
                crate::escape::md(&compare::side_name(s))
            )
        })
        .collect();
    out.push_str(&format!("Sides: {}.\n\n", sides.join(", ")));
    if !gated {
        out.push_str(&format!(
            "No gate was set (`--fail-if-slower PCT`, `--fail-if-faster PCT`): {} tests compared.\n\n",
            c.rows.len()
        ));
    } else if o.judged_nothing() {
        out.push_str(&format!(
            "**{}**: nothing was judged: no test ran with the same options on `A` and another side ({} results not compared, listed in the whole comparison below).\n\n",
            if o.passed() {
                "Passed (`--allow-unmatched`)"
            } else {
                "Failed"
            },
            o.left_out.len()
        ));
    } else if o.passed() {
        out.push_str(&format!(
            "**Passed**: no test is significantly {} ({} tests judged, Welch's t-test at {}%).\n\n",
            asked(gate),
            o.judged_rows,
            (compare::ALPHA * 100.0) as u32
        ));
    } else {
        out.push_str(&format!(
            "**Failed**: {} of {} tests {} significantly {} (Welch's t-test at {}%).\n\n",
            o.failures.len(),
            o.judged_rows,
            if o.failures.len() == 1 { "is" } else { "are" },
            asked(gate),
            (compare::ALPHA * 100.0) as u32
        ));
        out.push_str(&findings_grid(&o.failures).to_markdown());
        out.push('\n');
    }
    if !o.untestable.is_empty() {
        out.push_str("Beyond the threshold but not testable (a side has one repetition; run with `--repeat 3` or more):\n\n");
        out.push_str(&findings_grid(&o.untestable).to_markdown());
        out.push('\n');
    }
    for f in &o.failed_tests {
        out.push_str(&format!("- {}\n", crate::escape::md(f)));
    }
    if !o.failed_tests.is_empty() {
        out.push('\n');
    }
    let body = compare::render(c, compare::CompareFormat::Markdown)
        .replacen("# candor compare\n\n", "", 1)
        .replace("## ", "### ");
    out.push_str("<details><summary>The whole comparison</summary>\n\n");
    out.push_str(&body);
    out.push_str("\n</details>\n");
    out
}

fn findings_grid(fs: &[Finding]) -> Grid {
    let mut g = Grid::new(&[
        ("test", Align::Left),
        ("side", Align::Left),
        ("ratio to A", Align::Right),
        ("change", Align::Right),
        ("significant", Align::Left),
    ]);
    for f in fs {
        g.push(vec![
            f.test.clone(),
            f.side.clone(),
            units::ratio(f.ratio),
            format!(
                "{}{:.1}%",
                if f.direction == Drift::Slower {
                    "-"
                } else {
                    "+"
                },
                f.change_pct()
            ),
            f.significance.clone(),
        ]);
    }
    g
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::compare;
    use crate::compare::fixtures::{lettered, side};
    use candor_model::TestResult;

    fn result(samples: &[f64]) -> TestResult {
        TestResult {
            file_size: 1 << 24,
            ..crate::compare::fixtures::result("read", 65536, samples)
        }
    }

    fn comparison(a: &[f64], b: &[f64]) -> Comparison {
        compare(lettered(vec![
            side("base.json", vec![result(a)]),
            side("new.json", vec![result(b)]),
        ]))
    }

    const SLOWER: Gate = Gate {
        slower_pct: Some(10.0),
        faster_pct: None,
        allow_unmatched: false,
    };

    #[test]
    fn a_significant_slowdown_beyond_the_threshold_fails_with_one_line() {
        let c = comparison(&[100e6, 101e6, 99e6], &[50e6, 51e6, 49e6]);
        let o = judge(&c, &SLOWER);
        assert_eq!(o.failures.len(), 1);
        assert_eq!(
            o.failures[0].line(),
            "slower: read 16m/64k psync: B (new.json) is 0.50x of A (base.json), 50.0% slower, beyond 10%, significant: yes (p<0.001)"
        );
        // The same rows going the other way fail only the other gate.
        let c = comparison(&[50e6, 51e6, 49e6], &[100e6, 101e6, 99e6]);
        assert!(judge(&c, &SLOWER).passed());
        let faster = Gate {
            slower_pct: None,
            faster_pct: Some(50.0),
            allow_unmatched: false,
        };
        let o = judge(&c, &faster);
        assert_eq!(o.failures.len(), 1);
        assert_eq!(o.failures[0].direction, Drift::Faster);
    }

    #[test]
    fn significant_but_small_or_large_but_noisy_passes() {
        // 5% slower and significant: within 10%.
        let c = comparison(&[100e6, 100.5e6, 99.5e6], &[95e6, 95.5e6, 94.5e6]);
        let o = judge(&c, &SLOWER);
        assert!(o.passed(), "{o:?}");
        assert!(c.rows[0].cells[1]
            .as_ref()
            .unwrap()
            .significance
            .is_significant());
        // 20% slower on average but noise covers it: not significant.
        let c = comparison(&[100e6, 160e6, 40e6], &[80e6, 130e6, 30e6]);
        let o = judge(&c, &SLOWER);
        assert!(o.passed(), "{o:?}");
        // One repetition: named, not failed.
        let c = comparison(&[100e6], &[10e6]);
        let o = judge(&c, &SLOWER);
        assert!(o.passed());
        assert_eq!(o.untestable.len(), 1);
    }

    #[test]
    fn rows_without_the_baseline_are_left_out_and_a_gate_on_nothing_fails() {
        // B and C share a test that A did not run: nothing can be judged against A.
        let at = |name: &str, rec: u64| {
            side(
                name,
                vec![TestResult {
                    record_size: rec,
                    ..result(&[100e6, 101e6, 99e6])
                }],
            )
        };
        let c = compare(lettered(vec![
            at("a.json", 65536),
            at("b.json", 1 << 20),
            at("c.json", 1 << 20),
        ]));
        let o = judge(&c, &SLOWER);
        assert!(o.judged_nothing() && !o.passed(), "{o:?}");
        assert!(
            o.left_out.contains(
                &"read 16m/1m psync in B (b.json): not in A (a.json), the side every other is judged against".to_string()
            ),
            "{:?}",
            o.left_out
        );
        assert_eq!(o.left_out.len(), 4, "{:?}", o.left_out);
        assert_eq!(o.passed_line(&SLOWER), None);
        let allowed = Gate {
            allow_unmatched: true,
            ..SLOWER
        };
        let o = judge(&c, &allowed);
        assert!(o.passed());
        assert!(o
            .passed_line(&allowed)
            .unwrap()
            .starts_with("gate passed with nothing judged (--allow-unmatched): "));
        // Without a gate nothing fails.
        assert!(judge(&c, &Gate::default()).passed());
    }

    #[test]
    fn a_passing_gate_says_what_it_judged() {
        let c = comparison(&[100e6, 101e6, 99e6], &[97e6, 98e6, 96e6]);
        let o = judge(&c, &SLOWER);
        assert_eq!(
            o.passed_line(&SLOWER).unwrap(),
            "gate passed: 1 row of B (new.json) judged against A (base.json): none is significantly slower by more than 10%; the largest slowdown: read 16m/64k psync on B (new.json), 3.0% slower (significant: yes (p=0.021))"
        );
        let both = Gate {
            faster_pct: Some(5.0),
            ..SLOWER
        };
        assert!(judge(&c, &both)
            .passed_line(&both)
            .unwrap()
            .ends_with("3.0% slower (significant: yes (p=0.021)); no row is faster"));
    }

    #[test]
    fn thresholds_are_read_and_refused_in_one_sentence() {
        assert_eq!(parse_pct("10", Drift::Slower), Ok(10.0));
        assert_eq!(parse_pct("2.5%", Drift::Slower), Ok(2.5));
        assert_eq!(parse_pct("150", Drift::Faster), Ok(150.0));
        assert_eq!(
            parse_pct("100", Drift::Slower),
            Err("--fail-if-slower takes a percentage above 0 and below 100, not \"100\"".into())
        );
        assert!(parse_pct("ten", Drift::Faster)
            .unwrap_err()
            .starts_with("--fail-if-faster takes a percentage such as 10"));
        assert!(parse_pct("-3", Drift::Faster).is_err());
    }

    #[test]
    fn the_github_summary_says_the_outcome_first() {
        let c = comparison(&[100e6, 101e6, 99e6], &[50e6, 51e6, 49e6]);
        let md = github(&c, &SLOWER);
        assert!(
            md.starts_with("## candor compare\n\nSides: `A` /t in base.json, `B` /t in new.json.\n\n**Failed**: 1 of 1 tests is significantly slower than `A` by more than 10%"),
            "{md}"
        );
        assert!(
            md.contains("| read 16m/64k psync | B (new.json) | 0.50x | -50.0% | yes (p\\<0.001) |"),
            "{md}"
        );
        assert!(md.contains("<details>") && md.trim_end().ends_with("</details>"));
        let c = comparison(&[100e6, 101e6, 99e6], &[100e6, 99e6, 101e6]);
        assert!(github(&c, &SLOWER).contains("**Passed**"));
    }
}
