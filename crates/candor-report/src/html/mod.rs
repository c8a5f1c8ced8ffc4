//! The self-contained HTML report: one file, inline CSS and hand-drawn SVG, nothing fetched, no
//! scripts. Sections: header (host, command line, version, dates), summary table per target
//! with verdict badges and explanations, throughput over file size x record size (heatmap and one
//! line per file size), scaling over threads and queue depth (throughput with CI, latency),
//! latency distributions (histogram and percentile curve), witness timelines (application vs
//! device throughput, dirty memory) and repetitions (mean with 95% CI and every run).
//! `compare_page` renders `candor compare` the same way.
//!
//! One file per section; `render` puts them in order.

mod compare;
mod latency;
mod page;
mod repetitions;
mod scaling;
mod summary;
mod surfaces;
mod timelines;

pub use compare::compare_page;

use crate::svg::esc;
use candor_model::RunDoc;
use page::{header, page};
use std::fmt::Write;

/// At most this many curves share one chart, and this many timelines are drawn.
const MAX_CURVES: usize = 6;
const MAX_TIMELINES: usize = 12;

/// Renders a run.
pub fn render(doc: &RunDoc) -> String {
    let mut b = String::new();
    header(doc, &mut b);
    summary::audit(doc, &mut b);
    summary::summary(doc, &mut b);
    compare::targets_compared(doc, &mut b);
    surfaces::surfaces(doc, &mut b);
    scaling::scaling(doc, &mut b);
    scaling::ranks(doc, &mut b);
    latency::latency(doc, &mut b);
    timelines::timelines(doc, &mut b);
    repetitions::repetitions(doc, &mut b);
    let _ = write!(
        b,
        "<footer>Rendered by candor {} from the saved result. Throughput in MB/s (10<sup>6</sup> bytes/s); \
         sizes in binary units; latency per operation in µs; intervals are 95% confidence intervals of the mean.</footer>",
        esc(env!("CARGO_PKG_VERSION"))
    );
    let title = match doc.host.hostname.as_str() {
        "" => "candor report".to_string(),
        h => format!("candor report: {h}"),
    };
    page(&title, &b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use candor_model::{HistogramDump, TestResult, TimelinePoint, Witness};

    fn doc() -> RunDoc {
        let mut d = RunDoc::new(
            "run",
            vec!["candor".into(), "run".into()],
            "2026-01-01T00:00:00Z".into(),
        );
        for (i, (file, rec)) in [
            (1u64 << 20, 4096u64),
            (1 << 20, 65536),
            (4 << 20, 4096),
            (4 << 20, 65536),
        ]
        .iter()
        .enumerate()
        {
            let mut h = candor_stats::Histogram::new();
            (1..500u64).for_each(|v| h.record(v * 100));
            d.results.push(TestResult {
                target: "/t".into(),
                test: "write".into(),
                file_size: *file,
                record_size: *rec,
                threads: 1,
                iodepth: 1,
                status: candor_model::Status::Ok,
                throughput: candor_stats::summarize(&[1e8 + i as f64, 1.1e8, 0.9e8]),
                latency_histogram: h.dump(),
                witness: Some(Witness {
                    verdict: candor_model::Verdict::Device,
                    timeline: (0..5)
                        .map(|k| TimelinePoint {
                            t: k as f64 * 0.1,
                            app_write_bps: 1e8,
                            device_write_bps: 5e7,
                            dirty_bytes: k * 1000,
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                }),
                ..Default::default()
            });
        }
        d
    }

    #[test]
    fn a_run_gets_every_section_with_unique_chart_ids_and_no_bad_numbers() {
        let html = render(&doc());
        for id in ["summary", "sizes", "latency", "timeline", "reps"] {
            assert!(html.contains(&format!("<h2 id=\"{id}\"")), "section {id}");
        }
        let ids: Vec<&str> = html
            .match_indices("<svg id=\"")
            .map(|(i, _)| {
                let rest = &html[i + 9..];
                &rest[..rest.find('"').unwrap_or(0)]
            })
            .collect();
        let mut unique = ids.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(ids.len(), unique.len(), "chart ids are unique: {ids:?}");
        assert!(ids.len() >= 7, "{ids:?}");
        assert!(
            !html.contains("NaN") && !html.contains("inf\""),
            "no NaN or infinity in the markup"
        );
        assert!(!html.contains("<script"));
    }

    #[test]
    fn an_empty_or_odd_result_still_renders() {
        let mut d = RunDoc::default();
        assert!(render(&d).contains("No results were recorded."));
        d.results.push(TestResult {
            test: "read".into(),
            status: candor_model::Status::Failed,
            error: Some("boom".into()),
            latency_histogram: HistogramDump::default(),
            ..Default::default()
        });
        let html = render(&d);
        assert!(html.contains("boom") && html.contains("b-failed"));
        assert!(!html.contains("NaN"));
    }
}
