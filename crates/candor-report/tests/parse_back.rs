//! Parse-back tests: the CSV and iozone outputs are read back and must give the JSON's
//! figures. The iozone reader is first checked against real iozone 3.487 outputs (kept in
//! crates/candor-audit/tests/data/iozone/3.487), so the layout candor writes is the layout iozone's
//! readers expect.

mod common;

use candor_model::{RunDoc, TestResult};
use candor_report::{render, Format};
use std::collections::BTreeMap;

/// Splits one CSV line (RFC 4180 quoting).
fn csv_fields(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out
}

fn csv_rows(text: &str) -> Vec<BTreeMap<String, String>> {
    let mut lines = text.lines();
    let header = csv_fields(lines.next().expect("a header line"));
    lines
        .map(|l| {
            let f = csv_fields(l);
            assert_eq!(
                f.len(),
                header.len(),
                "row has as many fields as the header: {l}"
            );
            header.iter().cloned().zip(f).collect()
        })
        .collect()
}

fn f(row: &BTreeMap<String, String>, k: &str) -> f64 {
    row[k]
        .parse()
        .unwrap_or_else(|_| panic!("{k} = {:?} is a number", row[k]))
}

#[test]
fn csv_reads_back_to_the_json_figures() {
    let doc = common::sample_doc();
    let rows = csv_rows(&render(&doc, Format::Csv));
    assert_eq!(rows.len(), doc.results.len());
    for (row, r) in rows.iter().zip(&doc.results) {
        assert_eq!(row["test"], r.test);
        assert_eq!(row["target"], r.target);
        assert_eq!(row["fs_type"], "ext4");
        assert_eq!(f(row, "file_size") as u64, r.file_size);
        assert_eq!(f(row, "record_size") as u64, r.record_size);
        assert_eq!(f(row, "threads") as u32, r.threads);
        assert_eq!(f(row, "iodepth") as u32, r.iodepth);
        // Full precision: the exact f64 comes back.
        assert_eq!(f(row, "throughput_mean"), r.throughput.mean);
        assert_eq!(f(row, "throughput_stddev"), r.throughput.stddev);
        assert_eq!(f(row, "throughput_ci95_low"), r.throughput.ci95[0]);
        assert_eq!(f(row, "iops_mean"), r.iops.mean);
        assert_eq!(f(row, "latency_p99_ns") as u64, r.latency_ns.p99);
        match &r.witness {
            Some(w) => {
                assert_eq!(row["verdict"], w.verdict.as_str());
                assert_eq!(row["explanation"], w.explanation);
                assert_eq!(row["contradicts_intent"], w.contradicts_intent.to_string());
                let d = w.device.as_ref().expect("device counters");
                assert_eq!(f(row, "device_read_bytes") as u64, d.read_bytes);
                assert_eq!(f(row, "device_write_bytes") as u64, d.write_bytes);
                // A figure the witness has is there exactly; one it has not is empty.
                match w.cache_hit_ratio {
                    Some(c) => assert_eq!(f(row, "cache_hit_ratio"), c),
                    None => assert_eq!(row["cache_hit_ratio"], "", "{}", r.test),
                }
                match w.write_amplification {
                    Some(a) => assert_eq!(f(row, "write_amplification"), a),
                    None => assert_eq!(row["write_amplification"], "", "{}", r.test),
                }
            }
            None => {
                assert_eq!(row["verdict"], "");
                assert_eq!(row["status"], "failed");
                assert!(row["error"].contains("ENOSPC"));
            }
        }
    }
}

/// iozone's table, read by column position as a careful script does: (kB, reclen) -> test ->
/// kB/s. Column ends are those of iozone's figures.
fn iozone_table(text: &str) -> BTreeMap<(u64, u64), BTreeMap<String, u64>> {
    const COLS: &[(&str, usize)] = &[
        ("write", 9),
        ("rewrite", 9),
        ("read", 9),
        ("reread", 9),
        ("randread", 9),
        ("randwrite", 9),
        ("bkwdread", 9),
        ("recrewrite", 10),
        ("strideread", 10),
        ("fwrite", 9),
        ("frewrite", 9),
        ("fread", 9),
        ("freread", 9),
        ("pwrite", 9),
        ("repwrite", 9),
        ("pread", 8),
        ("repread", 9),
        ("pwritev", 9),
        ("repwritev", 10),
        ("preadv", 9),
        ("repreadv", 10),
    ];
    let mut out = BTreeMap::new();
    let mut in_table = false;
    for line in text.lines() {
        if line.trim_start().starts_with("kB  reclen") {
            in_table = true;
            continue;
        }
        if !in_table {
            continue;
        }
        if line.trim().is_empty() {
            in_table = false;
            continue;
        }
        let chars: Vec<char> = line.chars().collect();
        let cell = |a: usize, b: usize| -> String {
            chars[a.min(chars.len())..b.min(chars.len())]
                .iter()
                .collect::<String>()
                .trim()
                .to_string()
        };
        let kb: u64 = cell(0, 16).parse().expect("kB");
        let rec: u64 = cell(16, 24).parse().expect("reclen");
        let mut at = 24;
        let mut row = BTreeMap::new();
        for (name, w) in COLS {
            let c = cell(at, at + w);
            if !c.is_empty() {
                row.insert(name.to_string(), c.parse().expect("a kB/s figure"));
            }
            at += w;
        }
        out.insert((kb, rec), row);
    }
    out
}

/// Real iozone 3.487 outputs, kept in the repository with the audit's tests.
fn iozone_outputs() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../candor-audit/tests/data/iozone/3.487")
}

#[test]
fn the_iozone_reader_reads_real_iozone_output() {
    let dir = iozone_outputs();
    let e = std::fs::read_to_string(dir.join("table-all-tests-E.txt"))
        .expect("the iozone outputs kept in candor-audit/tests/data/iozone");
    let t = iozone_table(&e);
    let row = &t[&(16384, 64)];
    assert_eq!(row["write"], 4080776);
    assert_eq!(row["strideread"], 10429731);
    // Figures that run into each other are told apart by position.
    assert_eq!(row["repwrite"], 6196634);
    assert_eq!(row["pread"], 10376187);
    assert_eq!(row["repread"], 10700958);
    let i = std::fs::read_to_string(dir.join("table-i0-i1-i2.txt")).expect("fixture");
    let t = iozone_table(&i);
    assert_eq!(t[&(65536, 1024)]["randwrite"], 10618045);
    assert!(!t[&(65536, 4)].contains_key("bkwdread"));
}

fn one(test: &str, file: u64, rec: u64, kbps: f64) -> TestResult {
    let mut r = common::result("/t", test, file, rec, 1, 1, 1.0, 0.0, "device");
    r.throughput.mean = kbps * 1024.0;
    r
}

#[test]
fn candor_reproduces_iozones_table_byte_for_byte() {
    let dir = iozone_outputs();
    for name in [
        "table-i0-i1-i2.txt",
        "table-all-tests-E.txt",
        "auto-excel-R.txt",
        "table-fsync-close-e-c.txt",
    ] {
        let text = std::fs::read_to_string(dir.join(name))
            .expect("the iozone outputs kept in candor-audit/tests/data/iozone");
        // Rebuild the results from iozone's own table, render them, compare the table lines.
        let parsed = iozone_table(&text);
        let mut doc = RunDoc::new("run", vec![], String::new());
        for ((kb, rec), row) in &parsed {
            for (test, v) in row {
                doc.results
                    .push(one(test, kb * 1024, rec * 1024, *v as f64));
            }
        }
        let ours = render(&doc, Format::Iozone);
        let table_of = |t: &str| -> Vec<String> {
            let lines: Vec<&str> = t.lines().collect();
            let start = lines
                .iter()
                .position(|l| l.trim_start().starts_with("kB  reclen"))
                .expect("a table")
                - 1;
            lines[start..]
                .iter()
                .take_while(|l| !l.trim().is_empty() || l.len() > 100)
                .map(|l| l.to_string())
                .collect()
        };
        assert_eq!(table_of(&ours), table_of(&text), "{name}");
    }
}

#[test]
fn excel_blocks_match_iozone_minus_r() {
    let path = iozone_outputs().join("auto-excel-R.txt");
    let text = std::fs::read_to_string(path)
        .expect("the iozone outputs kept in candor-audit/tests/data/iozone");
    let mut doc = RunDoc::new("run", vec![], String::new());
    for ((kb, rec), row) in &iozone_table(&text) {
        for (test, v) in row {
            doc.results
                .push(one(test, kb * 1024, rec * 1024, *v as f64));
        }
    }
    let ours = render(&doc, Format::Excel);
    let excel = |t: &str| {
        t[t.find("Excel output is below:").expect("excel section")..]
            .trim_end()
            .to_string()
    };
    assert_eq!(excel(&ours), excel(&text));
}

#[test]
fn iozone_output_reads_back_to_the_json_figures() {
    let doc = common::sample_doc();
    let t = iozone_table(&render(&doc, Format::Iozone));
    let mut checked = 0;
    for r in &doc.results {
        if r.threads > 1 || r.iodepth > 1 || !r.status.is_ok() {
            continue;
        }
        let kbps = t[&(r.file_size / 1024, r.record_size / 1024)][&r.test];
        assert_eq!(
            kbps,
            (r.throughput.mean / 1024.0).round() as u64,
            "{}",
            r.test
        );
        checked += 1;
    }
    assert!(checked >= 20, "checked {checked}");
}
