//! Steady state, preconditioning and warm-up in the text formats: the table's cell (steady
//! at which round, or not) and, under the table, each such test's rounds, its verdict and
//! what preconditioning and the warm-up did. The HTML draws the same rounds
//! (`html/steady.rs`).

use crate::grid::{Align, Grid};
use crate::units;
use crate::view;
use candor_model::{SteadyState, TestResult};

/// The table's cell: "round 7", "no (25)", or "" without `--steady-state`.
pub fn cell(r: &TestResult) -> String {
    match &r.steady_state {
        Some(s) if s.attained => format!("round {}", s.round.unwrap_or(s.rounds_run)),
        Some(s) => format!("no ({})", s.rounds_run),
        None => String::new(),
    }
}

/// The criteria in a few words: "window 5, range ≤ 20%, slope ≤ 10%, rounds of 5 s, at most 25".
pub fn criteria(s: &SteadyState) -> String {
    format!(
        "window {}, range ≤ {}, slope ≤ {}, rounds of {} s, at most {}",
        s.window,
        units::pct(s.range_limit),
        units::pct(s.slope_limit),
        candor_model::units::trim_zeros(format!("{:.3}", s.round_seconds)),
        s.max_rounds
    )
}

/// Each round's figures, the rounds of the judged window marked.
pub fn rounds_grid(s: &SteadyState) -> Grid {
    let (app, dev) = (
        format!("app {}", units::rate_label()),
        format!("dev {}", units::rate_label()),
    );
    let mut g = Grid::new(&[
        ("round", Align::Right),
        (&app, Align::Right),
        (&dev, Align::Right),
        ("window", Align::Left),
    ]);
    let (lo, hi) = s
        .app
        .as_ref()
        .map_or((0, 0), |w| (w.first_round, w.last_round));
    for r in &s.rounds {
        g.push(vec![
            r.round.to_string(),
            units::mb_s(r.app_bps),
            r.device_bps.map_or("-".into(), units::mb_s),
            if (lo..=hi).contains(&r.round) {
                "*".into()
            } else {
                String::new()
            },
        ]);
    }
    g
}

/// Under the table: every result's rounds and verdict, its preconditioning and warm-up.
pub fn text(results: &[&TestResult]) -> String {
    let mut out = String::new();
    for r in results {
        let mut lines = Vec::new();
        if let Some(p) = &r.precondition {
            lines.push(format!("  preconditioning: {}\n", p.explanation));
        }
        if let Some(w) = &r.ramp {
            lines.push(format!(
                "  warm-up (not measured): {} s, {} operations, {}\n",
                units::decimals(w.seconds),
                units::count(w.ops as f64),
                units::size_long(w.bytes)
            ));
        }
        let steady = r.steady_state.as_ref();
        if lines.is_empty() && steady.is_none() {
            continue;
        }
        out.push_str(&format!("\n{}", view::label(r)));
        match steady {
            Some(s) => {
                out.push_str(&format!(": rounds ({})\n", criteria(s)));
                out.push_str(&indent(&rounds_grid(s).to_text()));
                lines.push(format!("  {}\n", s.explanation));
            }
            None => out.push('\n'),
        }
        lines.iter().for_each(|l| out.push_str(l));
    }
    out
}

/// The same in Markdown: a section per result with its rounds' table.
pub fn markdown(results: &[&TestResult]) -> String {
    let mut out = String::new();
    for r in results {
        let mut lines = Vec::new();
        if let Some(p) = &r.precondition {
            lines.push(format!("Preconditioning: {}.", p.explanation));
        }
        if let Some(w) = &r.ramp {
            lines.push(format!(
                "Warm-up (not measured): {} s, {} operations.",
                units::decimals(w.seconds),
                units::count(w.ops as f64)
            ));
        }
        if lines.is_empty() && r.steady_state.is_none() {
            continue;
        }
        out.push_str(&format!("\n### {}\n\n", view::label(r)));
        if let Some(s) = &r.steady_state {
            out.push_str(&format!(
                "Rounds ({}); * marks the window judged.\n\n",
                criteria(s)
            ));
            out.push_str(&rounds_grid(s).to_markdown());
            lines.push(format!("Verdict: {}.", s.explanation));
            out.push('\n');
        }
        for l in lines {
            out.push_str(&format!("{l}\n"));
        }
    }
    out
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("  {l}\n")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use candor_model::{SteadyRound, WindowFit};

    #[test]
    fn rounds_are_listed_with_the_window_marked_and_the_verdict() {
        let s = SteadyState {
            attained: true,
            round: Some(3),
            rounds_run: 3,
            window: 2,
            range_limit: 0.2,
            slope_limit: 0.1,
            round_seconds: 1.0,
            max_rounds: 9,
            app: Some(WindowFit {
                first_round: 2,
                last_round: 3,
                ..Default::default()
            }),
            rounds: (1..=3)
                .map(|i| SteadyRound {
                    round: i,
                    app_bps: 1e8 * i as f64,
                    device_bps: (i > 1).then_some(2e8),
                    ..Default::default()
                })
                .collect(),
            explanation: "steady at round 3 (test)".into(),
            ..Default::default()
        };
        let r = TestResult {
            test: "randwrite".into(),
            file_size: 1 << 20,
            record_size: 4096,
            threads: 1,
            steady_state: Some(s),
            ..Default::default()
        };
        assert_eq!(cell(&r), "round 3");
        let t = text(&[&r]);
        // Its window is judged by the steady-state criteria: no note on its repetitions' spread.
        let mut noisy = r.clone();
        noisy.throughput = candor_stats::summarize(&[1e8, 2e8, 3e8]);
        assert!(crate::view::number_notes(&[&noisy], 1).0.is_empty());
        noisy.steady_state = None;
        assert_eq!(crate::view::number_notes(&[&noisy], 1).0.len(), 1);
        assert!(t.contains("randwrite 1m/4k: rounds (window 2, range ≤ 20%, slope ≤ 10%, rounds of 1 s, at most 9)"), "{t}");
        let rows: Vec<&str> = t
            .lines()
            .filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
            .collect();
        assert_eq!(rows.len(), 3, "{t}");
        assert!(
            rows[0].contains("100") && rows[0].trim_end().ends_with('-'),
            "{}",
            rows[0]
        );
        assert!(rows[1].trim_end().ends_with('*') && rows[2].trim_end().ends_with('*'));
        assert!(t.contains("  steady at round 3 (test)"));
        let mut r = r;
        r.steady_state.as_mut().unwrap().attained = false;
        assert_eq!(cell(&r), "no (3)");
        r.steady_state = None;
        assert_eq!(text(&[&r]), "");
    }
}
