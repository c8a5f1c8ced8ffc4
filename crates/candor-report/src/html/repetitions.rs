//! Repetitions: each test's mean with its 95% confidence interval and every repetition.

use super::page::{fig, mbps};
use super::Section;
use crate::svg::{self, IntervalRow};
use crate::view;
use candor_model::RunDoc;
use std::fmt::Write;

pub(super) fn repetitions(doc: &RunDoc, b: &mut Section) {
    let groups = view::groups(doc);
    let several = groups.len() > 1;
    let mut any = false;
    for (gi, g) in groups.iter().enumerate() {
        // One chart per test, each with its own scale: a cached reread at 5 GB/s would flatten
        // a random write at 30 MB/s beside it.
        let mut tests: Vec<&str> = Vec::new();
        for r in &g.results {
            if !tests.contains(&r.test.as_str()) {
                tests.push(&r.test);
            }
        }
        let mut charts = String::new();
        for (ti, test) in tests.iter().enumerate() {
            let rows: Vec<IntervalRow> = g
                .results
                .iter()
                .filter(|r| r.test == *test && r.throughput.n >= 2 && !view::failed(r))
                .map(|r| IntervalRow {
                    label: view::label(r),
                    mean: r.throughput.mean / crate::units::scale(),
                    lo: crate::units::shown_interval(&r.throughput).0 / crate::units::scale(),
                    hi: crate::units::shown_interval(&r.throughput).1 / crate::units::scale(),
                    range: crate::units::interval_needs(&r.throughput).is_some(),
                    samples: r
                        .throughput
                        .samples
                        .iter()
                        .map(|s| s / crate::units::scale())
                        .collect(),
                    flagged: r.throughput.cv > view::NOISY_CV
                        || r.witness.as_ref().is_some_and(|w| w.contradicts_intent),
                    colour: None,
                })
                .collect();
            for (ci, chunk) in rows.chunks(30).enumerate() {
                let title = if several {
                    format!("{test} on {}", g.path)
                } else {
                    test.to_string()
                };
                let c = svg::interval_chart(
                    &format!("reps-{gi}-{ti}-{ci}"),
                    &format!("{title}: mean and 95% CI"),
                    &format!("throughput, {}", crate::units::rate_label()),
                    chunk,
                    mbps,
                    620.0,
                );
                charts.push_str(&fig(
                    c,
                    "Each dot is one repetition (in the JSON: throughput.samples). Where so few repetitions give a 95% interval wider than the mean, the whisker spans the slowest and fastest repetition, as the tables show.",
                ));
            }
        }
        if charts.is_empty() {
            continue;
        }
        if !any {
            b.open("reps", "Repetitions");
            b.push_str("<p class=\"sub\">Bar: mean throughput; whiskers: 95% confidence interval of the mean; \
                dots: each repetition. Orange-red bars are flagged (noisy, or not measuring what the test meant).</p>");
            any = true;
        }
        let _ = write!(b, "<div class=\"charts\">{charts}</div>");
    }
}
