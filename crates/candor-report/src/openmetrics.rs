//! `--format openmetrics`: the figures as OpenMetrics text, for Prometheus through
//! node_exporter's textfile collector (`candor report r.json --format openmetrics >
//! /var/lib/node_exporter/textfile/candor.prom`). Only gauges and summaries, no timestamps
//! and no `info` type, so the text is valid OpenMetrics and valid Prometheus text format
//! 0.0.4 at once (the textfile collector reads the latter, and refuses timestamps).
//!
//! Every result is one series per family, labelled with where it sits in the plan and with
//! the witness's verdict: throughput, operations per second, latency quantiles (a summary
//! with `_sum` and `_count`), and the witness's device throughput, cache hit ratio and write
//! amplification when it measured them. Failed results have `candor_result_ok 0` and no
//! figures.

use crate::view;
use candor_model::{RunDoc, TestResult};
use std::collections::BTreeSet;
use std::fmt::Write;

/// A family: name, type, help, and how a result's value(s) are read.
struct Family {
    name: &'static str,
    kind: &'static str,
    help: &'static str,
    value: fn(&TestResult) -> Option<f64>,
}

/// The gauges, in the order they are written (the latency summary follows them).
const GAUGES: &[Family] = &[
    Family {
        name: "candor_result_ok",
        kind: "gauge",
        help: "1 when the test ran to the end, 0 when it failed (its figures are then absent).",
        value: |r| Some(if view::failed(r) { 0.0 } else { 1.0 }),
    },
    Family {
        name: "candor_throughput_bytes_per_second",
        kind: "gauge",
        help: "Headline throughput, mean over the repetitions, bytes per second.",
        value: |r| ok(r).map(|r| r.throughput.mean),
    },
    Family {
        name: "candor_throughput_ci95_low_bytes_per_second",
        kind: "gauge",
        help: "Lower bound of the 95% confidence interval of the mean throughput.",
        value: |r| ok(r).map(|r| r.throughput.ci95[0]),
    },
    Family {
        name: "candor_throughput_ci95_high_bytes_per_second",
        kind: "gauge",
        help: "Upper bound of the 95% confidence interval of the mean throughput.",
        value: |r| ok(r).map(|r| r.throughput.ci95[1]),
    },
    Family {
        name: "candor_repetitions",
        kind: "gauge",
        help: "Repetitions the throughput is averaged over.",
        value: |r| ok(r).map(|r| r.throughput.n as f64),
    },
    Family {
        name: "candor_operations_per_second",
        kind: "gauge",
        help: "Operations (records) per second, mean over the repetitions.",
        value: |r| ok(r).map(|r| r.iops.mean),
    },
    Family {
        name: "candor_device_throughput_bytes_per_second",
        kind: "gauge",
        help: "The headline scaled by what the device moved in the test's direction (the witness's device bytes over the application's).",
        value: |r| ok(r).and_then(view::device_bps),
    },
    Family {
        name: "candor_cache_hit_ratio",
        kind: "gauge",
        help: "Reads: share of the bytes that did not come from the device, as the witness saw it.",
        value: |r| ok(r).and_then(|r| r.witness.as_ref()?.cache_hit_ratio),
    },
    Family {
        name: "candor_write_amplification_ratio",
        kind: "gauge",
        help: "Writes: device bytes written per byte written, as the witness saw it.",
        value: |r| ok(r).and_then(|r| r.witness.as_ref()?.write_amplification),
    },
];

/// A latency quantile's label value and the saved figure it reads.
type Quantile = (&'static str, fn(&TestResult) -> u64);

/// The latency quantiles written.
const QUANTILES: &[Quantile] = &[
    ("0.5", |r| r.latency_ns.p50),
    ("0.9", |r| r.latency_ns.p90),
    ("0.99", |r| r.latency_ns.p99),
    ("0.999", |r| r.latency_ns.p999),
];

fn ok(r: &TestResult) -> Option<&TestResult> {
    (!view::failed(r)).then_some(r)
}

/// A label value with OpenMetrics' three escapes; a character that would act on a terminal
/// (`escape::acts`) becomes U+FFFD, which OpenMetrics takes as it is.
fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            c if c != '\n' && crate::escape::acts(c) => o.push('\u{fffd}'),
            '\\' => o.push_str("\\\\"),
            '"' => o.push_str("\\\""),
            '\n' => o.push_str("\\n"),
            c => o.push(c),
        }
    }
    o
}

/// A sample value: integers without a fraction, others in Rust's shortest exact form.
fn number(x: f64) -> String {
    if x.is_nan() {
        "NaN".into()
    } else if x.is_infinite() {
        if x > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        format!("{x}")
    }
}

/// The labels of a result: where it sits in the plan, and the witness's verdict.
fn labels(doc: &RunDoc, r: &TestResult) -> String {
    let target = doc.targets.iter().find(|t| t.path == r.target);
    let pairs: [(&str, String); 15] = [
        ("target", r.target.clone()),
        (
            "fs_type",
            target.map(|t| t.fs_type.clone()).unwrap_or_default(),
        ),
        (
            "device",
            target
                .and_then(|t| t.device.as_ref())
                .map(|d| d.name.clone())
                .unwrap_or_default(),
        ),
        ("test", r.test.clone()),
        ("engine", r.engine.clone()),
        ("file_size_bytes", r.file_size.to_string()),
        ("record_size_bytes", r.record_size.to_string()),
        ("threads", r.threads.max(1).to_string()),
        ("iodepth", r.iodepth.max(1).to_string()),
        ("direct", r.direct.to_string()),
        ("osync", r.osync.to_string()),
        ("fsync_in_timing", r.fsync_in_timing.to_string()),
        ("close_in_timing", r.close_in_timing.to_string()),
        ("intent", r.intent.to_string()),
        (
            "verdict",
            r.witness
                .as_ref()
                .map(|w| w.verdict.to_string())
                .unwrap_or_else(|| "none".into()),
        ),
    ];
    pairs
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
        .collect::<Vec<_>>()
        .join(",")
}

pub fn render(doc: &RunDoc) -> String {
    let mut out = String::new();
    // The run itself.
    let _ = writeln!(
        out,
        "# TYPE candor_run_complete gauge\n# HELP candor_run_complete 1 when the run finished every test of its plan, 0 when it stopped early."
    );
    let _ = writeln!(
        out,
        "candor_run_complete{{candor_version=\"{}\",host=\"{}\",kernel=\"{}\",kind=\"{}\"}} {}",
        escape(&doc.candor_version),
        escape(&doc.host.hostname),
        escape(&doc.host.kernel),
        escape(&doc.kind),
        if doc.complete { 1 } else { 0 }
    );
    // A series is written once: two results with the same labels (which a plan does not
    // make) would be one series twice, which a scraper refuses.
    let mut seen = BTreeSet::new();
    let results: Vec<(String, &TestResult)> = doc
        .results
        .iter()
        .map(|r| (labels(doc, r), r))
        .filter(|(l, _)| seen.insert(l.clone()))
        .collect();
    for f in GAUGES {
        let samples: Vec<(&String, f64)> = results
            .iter()
            .filter_map(|(l, r)| (f.value)(r).map(|v| (l, v)))
            .collect();
        if samples.is_empty() {
            continue;
        }
        let _ = writeln!(
            out,
            "# TYPE {} {}\n# HELP {} {}",
            f.name, f.kind, f.name, f.help
        );
        for (l, v) in samples {
            let _ = writeln!(out, "{}{{{l}}} {}", f.name, number(v));
        }
    }
    let timed: Vec<&(String, &TestResult)> = results
        .iter()
        .filter(|(_, r)| !view::failed(r) && r.latency_ns.count > 0)
        .collect();
    if !timed.is_empty() {
        let name = "candor_latency_seconds";
        let _ = writeln!(
            out,
            "# TYPE {name} summary\n# HELP {name} Latency of one operation (record) over every repetition, seconds; quantiles from candor's histogram."
        );
        for (l, r) in timed {
            for (q, get) in QUANTILES {
                let _ = writeln!(
                    out,
                    "{name}{{{l},quantile=\"{q}\"}} {}",
                    number(get(r) as f64 / 1e9)
                );
            }
            let sum = r.latency_ns.mean * r.latency_ns.count as f64 / 1e9;
            let _ = writeln!(out, "{name}_sum{{{l}}} {}", number(sum));
            let _ = writeln!(out, "{name}_count{{{l}}} {}", r.latency_ns.count);
        }
    }
    out.push_str("# EOF\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_in_a_label_become_the_replacement_character() {
        assert_eq!(
            escape("a\u{1b}[2J\u{7}\rb\n\"\\"),
            "a\u{fffd}[2J\u{fffd}\u{fffd}b\\n\\\"\\\\"
        );
    }

    #[test]
    fn label_values_are_escaped_and_numbers_exact() {
        assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
        assert_eq!(number(123456789012.0), "123456789012");
        assert_eq!(number(0.5), "0.5");
        assert_eq!(number(f64::INFINITY), "+Inf");
    }

    #[test]
    fn a_failed_result_has_only_its_status_and_the_text_ends_with_eof() {
        let mut doc = RunDoc::default();
        doc.results.push(TestResult {
            target: "/t".into(),
            test: "read".into(),
            status: candor_model::Status::Failed,
            error: Some("pread: Input/output error".into()),
            ..Default::default()
        });
        let t = render(&doc);
        assert!(t.ends_with("\n# EOF\n"), "{t}");
        assert!(t.contains("candor_result_ok{target=\"/t\""), "{t}");
        assert!(t.contains(",verdict=\"none\"} 0\n"), "{t}");
        assert!(!t.contains("candor_throughput_bytes_per_second"), "{t}");
        assert!(!t.contains("candor_latency_seconds"), "{t}");
    }
}
