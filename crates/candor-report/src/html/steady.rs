//! Steady state, preconditioning and warm-up: for each test run with `--steady-state`, its
//! rounds as PTS's report pages draw them (every round's application and device throughput,
//! the judged window shaded, each figure's window average, ± range band and least-squares
//! line), the verdict's sentence and the rounds' table; for each test preconditioned or
//! warmed up, what that did.

use super::page::mbps;
use super::Section;
use crate::steady::{criteria, rounds_grid};
use crate::svg::{self, esc, RoundsFigure, RoundsWindow};
use crate::view;
use candor_model::{RunDoc, SteadyState, TestResult, WindowFit};
use std::fmt::Write;

pub(super) fn steady(doc: &RunDoc, b: &mut Section) {
    let shown: Vec<&TestResult> = doc
        .results
        .iter()
        .filter(|r| r.steady_state.is_some() || r.precondition.is_some() || r.ramp.is_some())
        .collect();
    if shown.is_empty() {
        return;
    }
    b.open("steady", "Steady state, preconditioning and warm-up");
    b.push_str(
        "<p class=\"sub\">Each round's throughput, as the application saw it (wide, pale) and as the device moved it (the witness; thin, on top). \
         Shaded: the window judged; per figure, its average (dashed), the band of ± the range limit around it \
         and its least-squares line (solid). Steady: the window's range and the line's excursion within their limits \
         on both figures (docs/methodology.md).</p>",
    );
    let several = doc.targets.len() > 1;
    for (i, r) in shown.iter().enumerate() {
        let mut body = String::new();
        if let Some(s) = &r.steady_state {
            let _ = write!(body, "<p>{}</p>", esc(&s.explanation));
            body.push_str(&chart(&format!("steady-{i}"), r, s));
            let _ = write!(
                body,
                "<details><summary>Rounds ({})</summary><pre class=\"mono\">{}</pre></details>",
                esc(&criteria(s)),
                esc(&rounds_grid(s).to_text())
            );
        }
        if let Some(p) = &r.precondition {
            let _ = write!(body, "<p>Preconditioning: {}.</p>", esc(&p.explanation));
        }
        if let Some(w) = &r.ramp {
            let _ = write!(
                body,
                "<p>Warm-up, not measured: {:.2} s ({} asked), {} operations.</p>",
                w.seconds, w.asked_seconds, w.ops
            );
        }
        let extra = if several {
            format!(" <small class=\"sub\">on {}</small>", esc(&r.target))
        } else {
            String::new()
        };
        b.group(
            &format!("g-steady-{i}"),
            &view::label(r),
            &extra,
            &body,
            true,
        );
    }
}

fn window(f: &WindowFit, band: f64) -> RoundsWindow {
    RoundsWindow {
        first: f.first_round as f64,
        last: f.last_round as f64,
        average: f.average / crate::units::scale(),
        band,
        intercept: f.intercept / crate::units::scale(),
        slope: f.slope / crate::units::scale(),
    }
}

/// The rounds of one test: the application's figure and, when the witness gave one, the
/// device's.
fn chart(id: &str, r: &TestResult, s: &SteadyState) -> String {
    let mut figures = vec![RoundsFigure {
        name: "application".into(),
        points: s
            .rounds
            .iter()
            .map(|x| (x.round as f64, x.app_bps / crate::units::scale()))
            .collect(),
        window: s.app.as_ref().map(|f| window(f, s.range_limit)),
        colour: 0,
        wide: true,
    }];
    let device: Vec<(f64, f64)> = s
        .rounds
        .iter()
        .filter_map(|x| {
            x.device_bps
                .map(|d| (x.round as f64, d / crate::units::scale()))
        })
        .collect();
    if !device.is_empty() {
        figures.push(RoundsFigure {
            name: if s.device_idle {
                "device (idle)".into()
            } else {
                "device".into()
            },
            points: device,
            window: s.device.as_ref().map(|f| window(f, s.range_limit)),
            colour: 3,
            wide: false,
        });
    }
    let c = svg::rounds_chart(
        id,
        &format!("{}: rounds", view::label(r)),
        &format!("throughput, {}", crate::units::rate_label()),
        mbps,
        &figures,
        620.0,
    );
    format!("<figure>{c}</figure>")
}

#[cfg(test)]
mod tests {
    use super::*;
    use candor_model::SteadyRound;

    #[test]
    fn rounds_are_drawn_with_the_window_band_and_line() {
        let mut d = RunDoc::default();
        let fit = |avg: f64| WindowFit {
            first_round: 2,
            last_round: 4,
            average: avg,
            intercept: avg * 1.02,
            slope: -avg * 0.01,
            steady: true,
            ..Default::default()
        };
        d.results.push(TestResult {
            test: "randwrite".into(),
            file_size: 1 << 20,
            record_size: 4096,
            threads: 1,
            steady_state: Some(SteadyState {
                attained: true,
                round: Some(4),
                rounds_run: 4,
                window: 3,
                range_limit: 0.2,
                slope_limit: 0.1,
                round_seconds: 1.0,
                max_rounds: 10,
                app: Some(fit(1e8)),
                device: Some(fit(1.1e8)),
                rounds: (1..=4)
                    .map(|i| SteadyRound {
                        round: i,
                        app_bps: 1e8,
                        device_bps: Some(1.1e8),
                        seconds: 1.0,
                        started_s: i as f64,
                    })
                    .collect(),
                explanation: "steady at round 4 (a test)".into(),
                ..Default::default()
            }),
            ..Default::default()
        });
        let mut s = super::super::Section::default();
        steady(&d, &mut s);
        let b = s.to_html();
        assert!(b.starts_with("<h2 id=\"steady\">"));
        assert!(b.contains("steady at round 4 (a test)"));
        assert!(b.contains("<svg id=\"steady-0\""));
        // The window, two bands, two averages, two lines, eight round markers.
        assert!(b.contains("measurement window: rounds 2-4"));
        assert_eq!(b.matches("average ± 20%").count(), 2, "{b}");
        assert_eq!(b.matches("least-squares line, ").count(), 2);
        assert_eq!(b.matches("<circle").count(), 8);
        assert!(!b.contains("NaN") && !b.contains("inf"));
        // Nothing to show: nothing written.
        let mut s = super::super::Section::default();
        steady(&RunDoc::default(), &mut s);
        assert!(s.heading.is_none() && s.to_html().is_empty());
    }
}
