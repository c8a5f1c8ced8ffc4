//! `--format openmetrics` read back by real parsers: the Prometheus Python client's
//! OpenMetrics parser and its Prometheus text-format parser (the format node_exporter's
//! textfile collector reads) must both accept candor's text, and every figure they read must
//! be the saved result's, exactly. `scripts/setup --test` installs the client (PyPI).

mod common;

use candor_model::RunDoc;
use common::{candor, is_root, text};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

/// Parses `text` with both parsers; the families as JSON: {"openmetrics": [...], "prometheus": [...]}.
const PARSE: &str = r#"
import json, sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families as om
from prometheus_client.parser import text_string_to_metric_families as prom
text = sys.stdin.read()
out = {}
for name, parse in (("openmetrics", om), ("prometheus", prom)):
    out[name] = [
        {"name": f.name, "type": f.type,
         "samples": [{"name": s.name, "labels": s.labels, "value": s.value} for s in f.samples]}
        for f in parse(text)
    ]
print(json.dumps(out))
"#;

/// Whether the parser can run here; as root (where setup installs it) its absence is a failure.
fn parser_ready() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import prometheus_client"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            !is_root(),
            "python3 cannot import prometheus_client: `scripts/setup --test` installs it (python3 -m pip install prometheus-client)"
        );
        candor_testkit::skip(
            "the Python package prometheus-client is not installed (python3 -m pip install prometheus-client)",
        );
    }
    ok
}

fn parse(om_text: &str) -> serde_json::Value {
    let mut child = Command::new("python3")
        .args(["-c", PARSE])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(om_text.as_bytes())
        .expect("write to the parser");
    let o = child.wait_with_output().expect("the parser finishes");
    assert!(
        o.status.success(),
        "the parsers refused candor's text: {}\n{om_text}",
        text(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).expect("the parser's JSON")
}

/// The samples of one family, as the parser read them.
fn samples<'a>(families: &'a serde_json::Value, name: &str) -> Vec<&'a serde_json::Value> {
    families
        .as_array()
        .expect("families")
        .iter()
        .filter(|f| f["name"] == name)
        .flat_map(|f| f["samples"].as_array().expect("samples").iter())
        .collect()
}

fn value_of(families: &serde_json::Value, sample: &str, labels: &[(&str, String)]) -> Option<f64> {
    let family = sample
        .strip_suffix("_sum")
        .or_else(|| sample.strip_suffix("_count"))
        .unwrap_or(sample);
    samples(families, family)
        .into_iter()
        .filter(|s| s["name"] == sample)
        .find(|s| labels.iter().all(|(k, v)| s["labels"][*k] == v.as_str()))
        .and_then(|s| s["value"].as_f64())
}

/// Every result's figures, read back by both parsers, equal the saved ones.
fn check(doc: &RunDoc, om_text: &str) {
    assert!(om_text.ends_with("# EOF\n"));
    let parsed = parse(om_text);
    for dialect in ["openmetrics", "prometheus"] {
        let fams = &parsed[dialect];
        let types: Vec<(&str, &str)> = fams
            .as_array()
            .expect("families")
            .iter()
            .map(|f| {
                (
                    f["name"].as_str().unwrap_or(""),
                    f["type"].as_str().unwrap_or(""),
                )
            })
            .collect();
        assert!(
            types.contains(&("candor_latency_seconds", "summary")),
            "{dialect}: {types:?}"
        );
        assert!(types.contains(&("candor_throughput_bytes_per_second", "gauge")));
        assert_eq!(
            value_of(fams, "candor_run_complete", &[]),
            Some(if doc.complete { 1.0 } else { 0.0 })
        );
        let mut checked = 0;
        for r in &doc.results {
            let id = vec![
                ("target", r.target.clone()),
                ("test", r.test.clone()),
                ("file_size_bytes", r.file_size.to_string()),
                ("record_size_bytes", r.record_size.to_string()),
                ("threads", r.threads.max(1).to_string()),
                ("iodepth", r.iodepth.max(1).to_string()),
                ("engine", r.engine.clone()),
                ("direct", r.direct.to_string()),
            ];
            let verdict = r
                .witness
                .as_ref()
                .map(|w| w.verdict.to_string())
                .unwrap_or_else(|| "none".into());
            let mut with_verdict = id.clone();
            with_verdict.push(("verdict", verdict));
            let ok = r.status.is_ok();
            assert_eq!(
                value_of(fams, "candor_result_ok", &with_verdict),
                Some(if ok { 1.0 } else { 0.0 }),
                "{dialect} {}",
                r.test
            );
            if !ok {
                continue;
            }
            let v = |name: &str| value_of(fams, name, &with_verdict);
            assert_eq!(
                v("candor_throughput_bytes_per_second"),
                Some(r.throughput.mean)
            );
            assert_eq!(v("candor_operations_per_second"), Some(r.iops.mean));
            assert_eq!(v("candor_repetitions"), Some(r.throughput.n as f64));
            assert_eq!(
                v("candor_write_amplification_ratio"),
                r.witness.as_ref().and_then(|w| w.write_amplification)
            );
            for (q, want) in [
                ("0.5", r.latency_ns.p50),
                ("0.9", r.latency_ns.p90),
                ("0.99", r.latency_ns.p99),
                ("0.999", r.latency_ns.p999),
            ] {
                let mut l = with_verdict.clone();
                l.push(("quantile", q.to_string()));
                let got = value_of(fams, "candor_latency_seconds", &l).expect("a quantile");
                assert!(
                    (got * 1e9 - want as f64).abs() <= 1e-6 * want as f64,
                    "{dialect} {} q{q}: {got} s vs {want} ns",
                    r.test
                );
            }
            assert_eq!(
                v("candor_latency_seconds_count"),
                Some(r.latency_ns.count as f64)
            );
            checked += 1;
        }
        assert!(checked > 0, "no result was checked");
    }
}

#[test]
fn a_saved_result_is_read_back_exactly_by_both_parsers() {
    if !parser_ready() {
        return;
    }
    let sample =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../candor-report/tests/expected/sample.json");
    let doc = candor_model::load_result(&sample).expect("the sample loads");
    let o = candor()
        .args(["report", "--format", "openmetrics"])
        .arg(&sample)
        .output()
        .expect("candor runs");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    check(&doc, &text(&o.stdout));
    // -o FILE.prom chooses the format.
    let dir = tempfile::tempdir().expect("a temporary directory");
    let prom = dir.path().join("candor.prom");
    let o = candor()
        .arg("report")
        .arg(&sample)
        .arg("-o")
        .arg(&prom)
        .output()
        .expect("candor runs");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(
        std::fs::read_to_string(&prom).expect("the file"),
        text(&{
            candor()
                .args(["report", "--format", "openmetrics"])
                .arg(&sample)
                .output()
                .expect("candor runs")
                .stdout
        })
    );
}

#[test]
fn a_run_prints_what_its_saved_result_says() {
    if !parser_ready() {
        return;
    }
    let dir = tempfile::tempdir().expect("a temporary directory");
    let target = dir.path().join("t");
    std::fs::create_dir(&target).expect("mkdir");
    let json = dir.path().join("r.json");
    let o = candor()
        .arg("run")
        .arg(&target)
        .args([
            "--tests",
            "write,read,randread",
            "--file-size",
            "4m",
            "--record-size",
            "64k",
            "--repeat",
            "2",
            "--quiet",
            "--format",
            "openmetrics",
            "-o",
        ])
        .arg(&json)
        .output()
        .expect("candor runs");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let doc = candor_model::load_result(&json).expect("the result loads");
    assert_eq!(doc.results.len(), 3);
    check(&doc, &text(&o.stdout));
}
