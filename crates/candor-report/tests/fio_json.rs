//! `--format fio-json` against fio's own JSON: a real `fio --output-format=json+` output
//! (fio 3.33, captured: `expected/fio-3.33-jsonplus.json`, jobs write, read and randread with
//! psync) is the reference. Its bins, read into candor's histogram, give back fio's own
//! percentiles by candor's computation, and candor's document has fio's keys, field for
//! field, with fio's JSON types.

mod common;

use candor_model::HistogramDump;
use candor_report::{fio, render, Format};
use serde_json::Value;
use std::path::Path;

fn fio_doc() -> Value {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/expected/fio-3.33-jsonplus.json");
    serde_json::from_str(&std::fs::read_to_string(p).expect("the fixture")).expect("fio's JSON")
}

/// A bin's value as fio names it back to candor's bucket: below 128 it is the bucket, above
/// it the midpoint of a bucket 2^(msb-6) wide.
fn lower_bound(val: u64) -> u64 {
    if val < 128 {
        return val;
    }
    let width = 1u64 << (63 - val.leading_zeros() - 6);
    val - width / 2
}

#[test]
fn fio_bins_give_fio_percentiles_through_candor_histogram() {
    let doc = fio_doc();
    let mut checked = 0;
    for job in doc["jobs"].as_array().expect("jobs") {
        for dir in ["read", "write"] {
            let clat = &job[dir]["clat_ns"];
            let Some(b) = clat["bins"].as_object() else {
                continue;
            };
            let dump = HistogramDump {
                relative_error: 1.0 / 128.0,
                buckets: b
                    .iter()
                    .map(|(k, n)| {
                        [
                            lower_bound(k.parse().expect("a bin")),
                            n.as_u64().expect("a count"),
                        ]
                    })
                    .collect(),
            };
            // candor's bins of that histogram are fio's bins.
            let ours = fio::bins(&dump);
            let theirs: Vec<(u64, u64)> = {
                let mut v: Vec<(u64, u64)> = b
                    .iter()
                    .map(|(k, n)| (k.parse().expect("a bin"), n.as_u64().expect("a count")))
                    .collect();
                v.sort_unstable();
                v
            };
            assert_eq!(ours, theirs, "{} {dir}", job["jobname"]);
            // And fio's percentiles, every one.
            let want: Vec<(String, u64)> = clat["percentile"]
                .as_object()
                .expect("percentiles")
                .iter()
                .map(|(k, x)| (k.clone(), x.as_u64().expect("a value")))
                .collect();
            let got: Vec<(String, u64)> = fio::percentiles(&ours)
                .into_iter()
                .map(|(p, x)| (format!("{p:.6}"), x))
                .collect();
            let mut want_sorted = want.clone();
            want_sorted.sort_by(|a, b| {
                a.0.parse::<f64>()
                    .unwrap()
                    .total_cmp(&b.0.parse::<f64>().unwrap())
            });
            assert_eq!(got, want_sorted, "{} {dir}", job["jobname"]);
            checked += 1;
        }
    }
    assert_eq!(checked, 3, "write, read and randread have bins");
}

/// Every key of `fio` is in `ours` with the same JSON type, except those named.
fn same_keys(path: &str, fio: &Value, ours: &Value, left_out: &[&str]) {
    let (Some(f), Some(o)) = (fio.as_object(), ours.as_object()) else {
        panic!("{path}: both should be objects");
    };
    for (k, fv) in f {
        if left_out.contains(&k.as_str()) {
            assert!(!o.contains_key(k), "{path}.{k} is said to be left out");
            continue;
        }
        let ov = o
            .get(k)
            .unwrap_or_else(|| panic!("{path}: fio has {k:?}, candor has not"));
        let kind = |v: &Value| match v {
            Value::Null => "null",
            Value::Bool(_) => "bool",
            Value::Number(n) if n.is_f64() => "float",
            Value::Number(_) => "integer",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        };
        // fio writes floats such as 0.000000 that read back as floats; candor may write a
        // whole float as an integer only where fio's is an integer too.
        let (fk, ok) = (kind(fv), kind(ov));
        let compatible = fk == ok || (fk == "float" && ok == "integer");
        assert!(compatible, "{path}.{k}: fio {fk}, candor {ok}");
    }
}

#[test]
fn candor_document_has_fio_keys_field_for_field() {
    let fio_doc = fio_doc();
    let ours: Value = serde_json::from_str(&render(&common::sample_doc(), Format::FioJson))
        .expect("fio-json is JSON");
    // Not measured by candor: written by neither side as zeros (docs/reports.md).
    same_keys("top", &fio_doc, &ours, &["disk_util"]);
    assert!(ours["fio version"].as_str().unwrap().starts_with("candor-"));
    let jobs = ours["jobs"].as_array().expect("jobs");
    assert!(!jobs.is_empty());
    let fio_read = &fio_doc["jobs"][1];
    let fio_write = &fio_doc["jobs"][0];
    let left_out = [
        "ctx",
        "majf",
        "minf",
        "iodepth_level",
        "iodepth_submit",
        "iodepth_complete",
        "latency_depth",
        "latency_target",
        "latency_percentile",
        "latency_window",
    ];
    let mut failed = 0;
    for job in jobs {
        same_keys("job", fio_read, job, &left_out);
        for dir in ["read", "write", "trim"] {
            same_keys(dir, &fio_read[dir], &job[dir], &[]);
            for lat in ["slat_ns", "lat_ns"] {
                same_keys(lat, &fio_read[dir][lat], &job[dir][lat], &[]);
            }
        }
        same_keys("sync", &fio_write["sync"], &job["sync"], &[]);
        same_keys(
            "latency_us",
            &fio_read["latency_us"],
            &job["latency_us"],
            &[],
        );
        same_keys(
            "latency_ms",
            &fio_read["latency_ms"],
            &job["latency_ms"],
            &[],
        );
        if job["error"] != 0 {
            // A failed test keeps its job, with the error and nothing measured.
            assert_eq!(job["candor"]["status"], "failed");
            assert!(job["candor"]["error"].is_string());
            assert_eq!(job["read"]["io_bytes"], 0);
            assert_eq!(job["write"]["io_bytes"], 0);
            failed += 1;
            continue;
        }
        // The direction the test moved has fio's json+ clat_ns; the other has fio's empty one.
        let test = job["candor"]["test"].as_str().expect("the test");
        let (moved, idle) = if candor_model::is_write_test(test) {
            ("write", "read")
        } else {
            ("read", "write")
        };
        let fio_moved = if moved == "write" {
            fio_write
        } else {
            fio_read
        };
        same_keys(
            "clat_ns",
            &fio_moved[moved]["clat_ns"],
            &job[moved]["clat_ns"],
            &[],
        );
        same_keys(
            "percentile",
            &fio_moved[moved]["clat_ns"]["percentile"],
            &job[moved]["clat_ns"]["percentile"],
            &[],
        );
        assert_eq!(job[idle]["clat_ns"]["N"], 0);
        assert!(job[idle]["clat_ns"].get("bins").is_none());
        // candor's verdict and witness ride along.
        assert!(job["candor"]["verdict"].is_string(), "{}", job["candor"]);
        assert!(job["candor"]["witness"].is_object());
    }
    assert_eq!(failed, 1, "the sample's failed randwrite");
}

#[test]
fn figures_are_the_result_figures() {
    let doc = common::sample_doc();
    let ours: Value =
        serde_json::from_str(&render(&doc, Format::FioJson)).expect("fio-json is JSON");
    let jobs = ours["jobs"].as_array().expect("jobs");
    let records: Vec<_> = doc.results.iter().filter(|r| r.record_size > 0).collect();
    assert_eq!(jobs.len(), records.len());
    for (job, r) in jobs.iter().zip(records) {
        if !r.status.is_ok() {
            assert_eq!(job["error"], 1);
            continue;
        }
        let dir = if r.is_write() { "write" } else { "read" };
        let d = &job[dir];
        let bytes: u64 = r.reps.iter().map(|x| x.bytes).sum();
        assert_eq!(d["io_bytes"], bytes);
        assert_eq!(d["bw_bytes"], r.throughput.mean.round() as u64);
        assert_eq!(d["bw"], (r.throughput.mean / 1024.0).round() as u64);
        assert_eq!(d["iops"].as_f64(), Some(r.iops.mean));
        assert_eq!(d["total_ios"], r.reps.iter().map(|x| x.ops).sum::<u64>());
        assert_eq!(d["clat_ns"]["N"], r.latency_ns.count);
        assert_eq!(d["clat_ns"]["min"], r.latency_ns.min);
        assert_eq!(d["clat_ns"]["max"], r.latency_ns.max);
        let bins: u64 = d["clat_ns"]["bins"]
            .as_object()
            .expect("bins")
            .values()
            .map(|n| n.as_u64().unwrap())
            .sum();
        assert_eq!(bins, r.latency_ns.count, "every operation is in a bin");
        let shares: f64 = ["latency_ns", "latency_us", "latency_ms"]
            .iter()
            .flat_map(|k| job[*k].as_object().unwrap().values())
            .map(|x| x.as_f64().unwrap())
            .sum();
        assert!((shares - 100.0).abs() < 1e-6, "{shares}");
    }
}
