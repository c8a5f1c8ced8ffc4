//! fio as an outside referee: `bench/cross-check` on a reduced matrix (one cell of each kind
//! of bound: a buffered random read meant for the device, a cached sequential read, an
//! O_DIRECT io_uring random write, a cached mmap read), small files and short runs, with the
//! binary under test and its witness, and fio under `candor audit`. It fails when a cell's
//! figure differs from fio's by more than 10% without a cause named by the two witnesses
//! (docs/witness.md, "fio as a referee"), or when a run fails. Needs root (the eBPF witness), fio and python3; says
//! why it is skipped without them.
//!
//! The binary under test is a debug build: at memory speed it is slower than fio, which the
//! referee names as candor's own cost (status `cost`), not as an unexplained difference.

mod common;
use common::{have, is_root, text};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

fn script() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/cross-check")
}

fn skip_reason() -> Option<&'static str> {
    if !is_root() {
        return Some("the cross-check needs root (the eBPF witness, dropping caches)");
    }
    if !have("fio") {
        return Some("fio is not installed (apt-get install fio)");
    }
    if !have("python3") {
        return Some("python3 is not installed");
    }
    None
}

#[test]
fn the_judge_names_causes_and_flags_what_has_none() {
    if !have("python3") {
        candor_testkit::skip("python3 is not installed");
        return;
    }
    let o = Command::new("python3")
        .arg(script())
        .arg("--self-check")
        .output()
        .expect("python3 runs");
    let out = text(&o.stdout);
    println!("{out}");
    assert!(o.status.success(), "{out}{}", text(&o.stderr));
    // Every constructed case, the unexplained ones included, judged as built.
    assert!(out.contains("unexplained (want unexplained)"), "{out}");
    assert!(out.contains("explained (want explained)"), "{out}");
    // The causes named from fio's own witness (its run under `candor audit`): fio reading
    // memory where candor read the device, and the device's time per operation moving
    // between the two tools' runs.
    assert!(out.contains("explained (want explained): state: "), "{out}");
    assert!(
        out.contains("explained (want explained): device: "),
        "{out}"
    );
    assert!(!out.contains("FAIL"), "{out}");
}

#[test]
fn a_reduced_matrix_has_no_unexplained_cell() {
    if let Some(why) = skip_reason() {
        candor_testkit::skip(why);
        return;
    }
    // On the disk, not in the system's temporary directory (which may be tmpfs).
    let dir = tempfile::Builder::new()
        .prefix("candor-cross-check-")
        .tempdir_in("/var/tmp")
        .expect("a directory under /var/tmp");
    let json = dir.path().join("cross-check.json");
    // One run of the referee over `cells` (the reduced matrix when None): exit code, stdout,
    // stderr.
    let referee = |cells: Option<&str>, pairs: &str, json: &std::path::Path| {
        let mut c = Command::new("python3");
        c.arg(script());
        match cells {
            Some(list) => c.args(["--cells", list]),
            None => c.arg("--quick"),
        };
        let o = c
            .args(["--pairs", pairs, "--runtime", "1", "--file-size", "64m"])
            .args(["--witness", "auto"])
            .arg("--dir")
            .arg(dir.path())
            .arg("--candor")
            .arg(env!("CARGO_BIN_EXE_candor"))
            .arg("--json")
            .arg(json)
            .output()
            .expect("python3 runs");
        let out = text(&o.stdout);
        println!("{out}");
        (o.status.code(), out, text(&o.stderr))
    };
    let (code, out, err) = referee(None, "3", &json);
    assert_ne!(code, Some(1), "a run failed:\n{err}");
    assert_ne!(code, Some(2), "bad usage:\n{err}");
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("the JSON is saved"))
            .expect("the JSON parses");
    let rows = doc["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 4, "every cell of the reduced matrix: {out}");
    let mut unexplained = Vec::new();
    for r in rows {
        let cell = r["cell"].as_str().unwrap_or("?");
        assert!(r["error"].is_null(), "{cell}: {}", r["error"]);
        // Three pairs: each tool's three figures (positive), each pair's ratio candor/fio,
        // and the medians of the three, as the row's own figures give them.
        let figures = |k: &str| -> Vec<f64> {
            r[k].as_array()
                .unwrap_or_else(|| panic!("{cell}: no {k}"))
                .iter()
                .map(|v| v.as_f64().unwrap_or(f64::NAN))
                .collect()
        };
        let (cand, fio, ratios) = (figures("candor"), figures("fio"), figures("ratios"));
        assert_eq!(
            (cand.len(), fio.len(), ratios.len()),
            (3, 3, 3),
            "{cell}: three pairs"
        );
        assert!(
            cand.iter().chain(&fio).all(|v| *v > 0.0),
            "{cell}: {cand:?} {fio:?}"
        );
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * b.abs();
        for i in 0..3 {
            assert!(
                close(ratios[i], cand[i] / fio[i]),
                "{cell}: pair {i}: ratio {} for {} / {}",
                ratios[i],
                cand[i],
                fio[i]
            );
        }
        let median = |v: &[f64]| {
            let mut v = v.to_vec();
            v.sort_by(f64::total_cmp);
            v[1]
        };
        for (k, of) in [
            ("candor_median", &cand),
            ("fio_median", &fio),
            ("ratio_median", &ratios),
        ] {
            let v = r[k].as_f64().unwrap_or(f64::NAN);
            assert!(
                close(v, median(of)),
                "{cell}: {k} = {v}, the median of {of:?}"
            );
        }
        let verdict = r["verdict"].as_str().unwrap_or("");
        assert!(
            ["device", "cache", "mixed", "memory"].contains(&verdict),
            "{cell}: candor's witness gave no verdict ({verdict})"
        );
        assert!(
            !r["explanation"].as_str().unwrap_or("").is_empty(),
            "{cell}: no explanation"
        );
        let status = r["status"].as_str().unwrap_or("");
        let ratio = r["ratio_median"].as_f64().unwrap_or(0.0);
        if (ratio - 1.0).abs() > 0.10 {
            assert_ne!(status, "agrees", "{cell}: {ratio} is not within 10%");
            if status != "spread" {
                assert!(
                    !r["cause"].as_str().unwrap_or("").is_empty(),
                    "{cell}: {status} without a cause"
                );
            }
        }
        if status == "unexplained" {
            unexplained.push(cell.to_string());
        }
    }
    // A virtual disk's latency moves from one minute to the next (its host caches the
    // image): a cell found unexplained is measured again with more pairs, and fails only
    // if it stays unexplained. A real cause in candor stays.
    if !unexplained.is_empty() {
        let again = dir.path().join("again.json");
        let (code2, out2, err2) = referee(Some(&unexplained.join(",")), "5", &again);
        assert_ne!(code2, Some(2), "bad usage:\n{err2}");
        let doc2: Value =
            serde_json::from_str(&std::fs::read_to_string(&again).expect("the JSON is saved"))
                .expect("the JSON parses");
        let still: Vec<String> = doc2["rows"]
            .as_array()
            .expect("rows")
            .iter()
            .filter(|r| r["status"] == "unexplained")
            .map(|r| format!("{}: {}", r["cell"], r["cause"]))
            .collect();
        assert!(
            still.is_empty(),
            "cells differing from fio by more than 10% with no cause named, twice:\n{}\n{out}\n{out2}",
            still.join("\n")
        );
    } else {
        assert_eq!(code, Some(0), "{err}");
    }
    // fio ran under `candor audit`: every pair has what both witnesses saw.
    for r in rows {
        for side in ["candor_seen", "fio_seen"] {
            let seen = r[side].as_array().map(Vec::as_slice).unwrap_or(&[]);
            assert_eq!(seen.len(), 3, "{}: {side}: {r}", r["cell"]);
            assert!(
                seen.iter().all(|x| x["op_s"].as_f64().unwrap_or(0.0) > 0.0),
                "{r}"
            );
        }
    }
    // The cached cells are read from memory by both tools: candor's witness says so, and
    // fio's (its own device traffic carried almost none of what it read); the uncached
    // random reads came from the device on both sides.
    let cached = rows
        .iter()
        .find(|r| r["cell"] == "read/psync/cached/1m/qd1/1t")
        .expect("the cached read");
    assert_eq!(cached["verdict"], "cache", "{cached}");
    let share = |r: &Value, k: &str| r[k].as_f64().unwrap_or(f64::NAN);
    assert!(share(cached, "fio_device_share_read") <= 0.1, "{cached}");
    let uncached = rows
        .iter()
        .find(|r| r["cell"] == "randread/psync/uncached/4k/qd1/1t")
        .expect("the uncached random read");
    for k in ["candor_device_share_read", "fio_device_share_read"] {
        assert!(share(uncached, k) >= 0.9, "{k}: {uncached}");
    }
    let direct = rows
        .iter()
        .find(|r| r["cell"] == "randwrite/io_uring/direct/4k/qd1/1t")
        .expect("the O_DIRECT write");
    assert!(
        direct["verdict"] == "device" || direct["verdict"] == "mixed",
        "{direct}"
    );
}
