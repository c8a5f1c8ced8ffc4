//! `--format excel`: what `iozone -R` prints — the table, then "Excel output is below:" and one
//! block per test ("Writer report", "Re-writer report", ...): a header row of record sizes in kB
//! and one row per file size, figures in kB/s. Old spreadsheets and scripts read it unchanged.

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
    }
    out
}
