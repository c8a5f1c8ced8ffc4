//! `--format excel`: what `iozone -R` prints — the table, then "Excel output is below:" and one
//! block per test ("Writer report", "Re-writer report", ...): a header row of record sizes in kB
//! and one row per file size, figures in kB/s; multi-thread results follow in iozone's
//! throughput report ("Throughput report Y-axis is type of test X-axis is number of
//! processes"). Old spreadsheets and scripts read it unchanged.

use crate::iozone;
use crate::view;
use candor_model::{RunDoc, TestResult};

/// iozone's block titles, in its order.
pub const REPORTS: &[(&str, &str)] = &[
    ("write", "Writer report"),
    ("rewrite", "Re-writer report"),
    ("read", "Reader report"),
    ("reread", "Re-Reader report"),
    ("randread", "Random read report"),
    ("randwrite", "Random write report"),
    ("bkwdread", "Backward read report"),
    ("recrewrite", "Record rewrite report"),
    ("strideread", "Stride read report"),
    ("fwrite", "Fwrite report"),
    ("frewrite", "Re-Fwrite report"),
    ("fread", "Fread report"),
    ("freread", "Re-Fread report"),
    ("pwrite", "Pwrite report"),
    ("repwrite", "Re-Pwrite report"),
    ("pread", "Pread report"),
    ("repread", "Re-Pread report"),
    ("pwritev", "Pwritev report"),
    ("repwritev", "Re-Pwritev report"),
    ("preadv", "Preadv report"),
    ("repreadv", "Re-Preadv report"),
];

/// The record sizes (kB) of the header row. iozone's sweep prints every power of two up to
/// 16 MiB even when larger records did not run; candor does the same for sweeps (record sizes
/// doubling from one to the next) and otherwise lists the record sizes that ran.
pub fn header_records(results: &[&TestResult]) -> Vec<u64> {
    let mut recs: Vec<u64> = results.iter().map(|r| r.record_size / 1024).collect();
    recs.sort();
    recs.dedup();
    let sweep =
        recs.iter().all(|r| r.is_power_of_two()) && recs.windows(2).all(|w| w[1] == w[0] * 2);
    match (recs.first(), recs.last()) {
        (Some(&lo), Some(&hi)) if sweep && recs.len() > 1 => {
            let mut v = Vec::new();
            let mut x = lo;
            while x <= hi.max(16384) {
                v.push(x);
                x *= 2;
            }
            v
        }
        _ => recs,
    }
}

/// One "... report" block: title, header, one row per file size. A record size that did not
/// run at a file size is left out at the end of a row (as iozone does) and written 0 within it.
pub fn block(title: &str, test: &str, results: &[&TestResult]) -> Option<String> {
    let shown = iozone::table_results(results);
    let mine: Vec<&TestResult> = shown.iter().copied().filter(|r| r.test == test).collect();
    if mine.is_empty() {
        return None;
    }
    let header = header_records(&shown);
    let mut s = format!("\"{title}\"\n        ");
    s.push_str(
        &header
            .iter()
            .map(|r| format!("\"{r}\""))
            .collect::<Vec<_>>()
            .join("  "),
    );
    s.push('\n');
    let mut files: Vec<u64> = mine.iter().map(|r| r.file_size).collect();
    files.sort();
    files.dedup();
    for f in files {
        let vals: Vec<Option<u64>> = header
            .iter()
            .map(|rec| {
                mine.iter()
                    .find(|r| r.file_size == f && r.record_size / 1024 == *rec)
                    .map(|r| iozone::kbps(r.throughput.mean))
            })
            .collect();
        let last = vals.iter().rposition(|v| v.is_some()).unwrap_or(0);
        s.push_str(&format!("\"{}\"  ", f / 1024));
        for v in &vals[..=last] {
            s.push_str(&format!(" {} ", v.unwrap_or(0)));
        }
        s.push('\n');
    }
    Some(s)
}

/// iozone's names of the tests in its throughput report, padded as it pads them.
fn throughput_name(test: &str) -> String {
    let name = match test {
        "write" => "Initial write",
        "rewrite" => "Rewrite",
        "read" => "Read",
        "reread" => "Re-read",
        "bkwdread" => "Reverse Read",
        "strideread" => "Stride read",
        "randread" => "Random read",
        "randmix" => "Mixed workload",
        "randwrite" => "Random write",
        "pwrite" => "Pwrite",
        "pread" => "Pread",
        "fwrite" => "Fwrite",
        "fread" => "Fread",
        other => other,
    };
    format!("{name:>15}")
}

/// iozone's throughput report (`-R` with `-t`): per record size, one row per test with the
/// aggregate ("children see") kB/s at each thread count, in the order the counts ran.
pub fn throughput_report(results: &[&TestResult]) -> Option<String> {
    let multi: Vec<&TestResult> = results
        .iter()
        .copied()
        .filter(|r| r.threads > 1 && r.iodepth <= 1 && !view::failed(r))
        .collect();
    if multi.is_empty() {
        return None;
    }
    let mut recs: Vec<u64> = multi.iter().map(|r| r.record_size).collect();
    recs.sort();
    recs.dedup();
    let mut out = String::from(
        "\n\"Throughput report Y-axis is type of test X-axis is number of processes\"\n",
    );
    for rec in recs {
        out.push_str(&format!(
            "\"Record size = {} kBytes \"\n\"Output is in kBytes/sec\"\n\n",
            rec / 1024
        ));
        let mut tests: Vec<&str> = Vec::new();
        for r in multi.iter().filter(|r| r.record_size == rec) {
            if !tests.contains(&r.test.as_str()) {
                tests.push(&r.test);
            }
        }
        for t in tests {
            let mut rs: Vec<&&TestResult> = multi
                .iter()
                .filter(|r| r.record_size == rec && r.test == t)
                .collect();
            rs.sort_by_key(|r| r.threads);
            out.push_str(&format!("\"{}\" ", throughput_name(t)));
            for r in rs {
                let children = r
                    .thread_aggregate
                    .as_ref()
                    .map(|a| a.children_see)
                    .filter(|c| *c > 0.0)
                    .unwrap_or(r.throughput.mean);
                out.push_str(&format!(" {:.2} ", children / 1024.0));
            }
            out.push_str("\n\n");
        }
    }
    Some(out)
}

pub fn render(doc: &RunDoc) -> String {
    let mut out = iozone::render(doc);
    out.push_str("Excel output is below:\n");
    let groups = view::groups(doc);
    let several = groups.len() > 1;
    for g in groups {
        if several {
            out.push_str(&format!("\n\"Target {}\"\n", g.path));
        }
        for (test, title) in REPORTS {
            if let Some(b) = block(title, test, &g.results) {
                out.push('\n');
                out.push_str(&b);
            }
        }
        if let Some(t) = throughput_report(&g.results) {
            out.push_str(&t);
        }
    }
    out
}
