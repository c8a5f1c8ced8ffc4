//! `--format iozone`: iozone's own output layout, so scripts written for iozone read candor's
//! results: the table (kB, reclen, then kB/s per test in iozone's column order and widths,
//! blank where a test did not run) for single-thread results, and iozone's throughput-mode
//! blocks ("Children see throughput ...") for multi-thread results. One table per target.
//! iozone's units: kB = 1024 bytes, kB/s = 1024 bytes per second.

use crate::view;
use candor_model::{RunDoc, TestResult};

/// One column of iozone's table: the test, its two header words, the header width and the
/// width of a figure (a test that did not run is as many spaces).
pub struct Col {
    pub test: &'static str,
    pub head1: &'static str,
    pub head2: &'static str,
    pub head_w: usize,
    pub data_w: usize,
}

const fn col(
    test: &'static str,
    head1: &'static str,
    head2: &'static str,
    head_w: usize,
    data_w: usize,
) -> Col {
    Col {
        test,
        head1,
        head2,
        head_w,
        data_w,
    }
}

/// iozone's columns in its order, with the widths its table really has (measured on iozone
/// 3.487 output; the header is not always as wide as the figures under it).
pub const COLUMNS: &[Col] = &[
    col("write", "", "write", 9, 9),
    col("rewrite", "", "rewrite", 9, 9),
    col("read", "", "read", 8, 9),
    col("reread", "", "reread", 10, 9),
    col("randread", "random", "read", 8, 9),
    col("randwrite", "random", "write", 10, 9),
    col("bkwdread", "bkwd", "read", 9, 9),
    col("recrewrite", "record", "rewrite", 10, 10),
    col("strideread", "stride", "read", 10, 10),
    col("fwrite", "", "fwrite", 9, 9),
    col("frewrite", "", "frewrite", 9, 9),
    col("fread", "", "fread", 9, 9),
    col("freread", "", "freread", 9, 9),
    // iozone prints these only when -i9/-i10 ran.
    col("pwrite", "", "pwrite", 8, 9),
    col("repwrite", "", "repwrite", 9, 9),
    col("pread", "", "pread", 8, 8),
    col("repread", "", "repread", 10, 9),
    // -i11/-i12, in the same manner.
    col("pwritev", "", "pwritev", 9, 9),
    col("repwritev", "", "repwritev", 10, 10),
    col("preadv", "", "preadv", 9, 9),
    col("repreadv", "", "repreadv", 10, 10),
];

/// How many columns are printed: iozone's 13 always, then the groups that ran.
fn columns_for(results: &[&TestResult]) -> usize {
    let ran = |names: &[&str]| results.iter().any(|r| names.contains(&r.test.as_str()));
    if ran(&["pwritev", "repwritev", "preadv", "repreadv"]) {
        21
    } else if ran(&["pwrite", "repwrite", "pread", "repread"]) {
        17
    } else {
        13
    }
}

/// True for results iozone's table can hold: one thread, no queue, one of its tests.
fn fits(r: &TestResult) -> bool {
    r.threads <= 1 && r.iodepth <= 1 && !view::failed(r) && COLUMNS.iter().any(|c| c.test == r.test)
}

/// True for results iozone's output can hold at all: its tests at queue depth 1, in its
/// table (one thread) or its throughput mode (several, where the mixed workload is too).
fn iozones(r: &TestResult) -> bool {
    r.iodepth <= 1
        && (COLUMNS.iter().any(|c| c.test == r.test) || (r.threads > 1 && r.test == "randmix"))
}

/// Why `--format iozone` cannot show these results, in one sentence naming the first of
/// them; None when iozone's layout holds every result that did not fail.
pub fn not_iozones(doc: &RunDoc) -> Option<String> {
    let unfit: Vec<String> = doc
        .results
        .iter()
        .filter(|r| !view::failed(r) && !iozones(r))
        .map(view::label)
        .collect();
    let (shown, more) = unfit.split_at(unfit.len().min(3));
    let mut list = shown.join(", ");
    if !more.is_empty() {
        list.push_str(&format!(" and {} more", more.len()));
    }
    (!unfit.is_empty()).then(|| {
        format!(
            "iozone's layout holds iozone's tests at queue depth 1, and this run has {list}: printed as --format table instead"
        )
    })
}

/// The results that go into the table: of several results for one cell (other engines,
/// O_DIRECT...), the first; the others are named under the table.
pub fn table_results<'a>(results: &[&'a TestResult]) -> Vec<&'a TestResult> {
    let mut out: Vec<&TestResult> = Vec::new();
    for r in results.iter().copied().filter(|r| fits(r)) {
        if !out.iter().any(|o| {
            o.test == r.test && o.file_size == r.file_size && o.record_size == r.record_size
        }) {
            out.push(r);
        }
    }
    out
}

/// kB/s as iozone prints it (integer, 1024-byte kB).
pub fn kbps(bps: f64) -> u64 {
    (bps / 1024.0).round().max(0.0) as u64
}

/// The table's two header lines and its rows, exactly as iozone lays them out.
pub fn table(results: &[&TestResult]) -> String {
    let results = table_results(results);
    let n = columns_for(&results);
    let cols = &COLUMNS[..n];
    let mut h1 = format!("{:>16}{:>8}", "", "");
    let mut h2 = format!("{:>16}{:>8}", "kB", "reclen");
    for c in cols {
        h1.push_str(&format!("{:>w$}", c.head1, w = c.head_w));
        h2.push_str(&format!("{:>w$}", c.head2, w = c.head_w));
    }
    let mut out = format!("{h1}\n{h2}\n");
    let mut keys: Vec<(u64, u64)> = results
        .iter()
        .map(|r| (r.file_size, r.record_size))
        .collect();
    keys.sort();
    keys.dedup();
    for (file, rec) in keys {
        let mut line = format!("{:>16}{:>8}", file / 1024, rec / 1024);
        for c in cols {
            let hit = results
                .iter()
                .find(|r| r.test == c.test && r.file_size == file && r.record_size == rec);
            match hit {
                Some(r) => line.push_str(&format!("{:>w$}", kbps(r.throughput.mean), w = c.data_w)),
                None => line.push_str(&" ".repeat(c.data_w)),
            }
        }
        // iozone's blank run at the end of a row is one space shorter than its columns.
        if line.ends_with(' ') {
            line.pop();
        }
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// iozone's words for a test in throughput mode, with the tabs it puts after them.
fn throughput_label(test: &str, threads: u32) -> String {
    let (word, tabs) = match test {
        "write" => ("initial writers", "\t"),
        "rewrite" => ("rewriters", "\t"),
        "read" => ("readers", "\t\t"),
        "reread" => ("re-readers", "\t"),
        "randread" => ("random readers", "\t"),
        "randwrite" => ("random writers", "\t"),
        "bkwdread" => ("reverse readers", "\t"),
        "recrewrite" => ("record rewriters", "\t"),
        "strideread" => ("stride readers", "\t"),
        "randmix" => ("mixed workload", "\t"),
        "fwrite" => ("fwriters", "\t"),
        "frewrite" => ("re-fwriters", "\t"),
        "fread" => ("freaders", "\t"),
        "freread" => ("re-freaders", "\t"),
        "pwrite" => ("pwrite writers", "\t"),
        "repwrite" => ("re-pwrite writers", "\t"),
        "pread" => ("pread readers", "\t"),
        "repread" => ("re-pread readers", "\t"),
        other => (other, "\t"),
    };
    if test == "reread" {
        format!("{threads} {word} {tabs}")
    } else {
        format!("{threads:>2} {word} {tabs}")
    }
}

/// One throughput-mode block for a multi-thread result.
pub fn throughput_block(r: &TestResult) -> String {
    let a = r.thread_aggregate.clone().unwrap_or_default();
    let pick = |x: f64| if x > 0.0 { x } else { r.throughput.mean };
    let label = throughput_label(&r.test, r.threads);
    let min_xfer = a
        .per_thread_bytes
        .iter()
        .copied()
        .min()
        .unwrap_or(r.file_size);
    let per = r.throughput.mean / r.threads.max(1) as f64;
    let or_per = |x: f64| if x > 0.0 { x } else { per };
    // Each rate line as iozone writes it: its words, the figure in kB/s, and the space iozone
    // leaves after the minimum's unit.
    let rates = [
        (
            format!("Children see throughput for {label}"),
            pick(a.children_see),
            "",
        ),
        (
            format!("Parent sees throughput for {label}"),
            pick(a.parent_sees),
            "",
        ),
        (
            "Min throughput per process \t\t\t".to_string(),
            or_per(a.min_thread),
            " ",
        ),
        (
            "Max throughput per process \t\t\t".to_string(),
            or_per(a.max_thread),
            "",
        ),
        (
            "Avg throughput per process \t\t\t".to_string(),
            or_per(a.avg_thread),
            "",
        ),
    ];
    let mut s = String::new();
    for (words, bps, after) in rates {
        s.push_str(&format!("\t{words}= {:.2} kB/sec{after}\n", bps / 1024.0));
    }
    s.push_str(&format!(
        "\tMin xfer \t\t\t\t\t= {:>10.2} kB\n",
        min_xfer as f64 / 1024.0
    ));
    if r.cpu.wall_s > 0.0 {
        s.push_str(&format!(
            "\tCPU utilization: Wall time {:>8.3}    CPU time {:>8.3}    CPU utilization {:>6.2} %\n",
            r.cpu.wall_s,
            r.cpu.user_s + r.cpu.sys_s,
            r.cpu.cpu_pct
        ));
    }
    s.push_str("\n\n");
    s
}

/// The preamble iozone prints before its table, in candor's words.
fn preamble(doc: &RunDoc, target: &str, fs: &str) -> String {
    let mut s = format!(
        "\tIozone-compatible output of candor {}\n",
        doc.candor_version
    );
    if !doc.command_line.is_empty() {
        s.push_str(&format!(
            "\tCommand line used: {}\n",
            doc.command_line.join(" ")
        ));
    }
    s.push_str("\tOutput is in kBytes/sec\n");
    if fs.is_empty() {
        s.push_str(&format!("\tTarget {target}\n"));
    } else {
        s.push_str(&format!("\tTarget {target} ({fs})\n"));
    }
    s
}

pub fn render(doc: &RunDoc) -> String {
    let mut out = String::new();
    for g in view::groups(doc) {
        let fs = g.info.map(|t| t.fs_type.as_str()).unwrap_or("");
        out.push_str(&preamble(doc, &g.path, fs));
        if g.results.iter().any(|r| fits(r)) {
            out.push_str(&table(&g.results));
        }
        let multi: Vec<&&TestResult> = g
            .results
            .iter()
            .filter(|r| r.threads > 1 && !view::failed(r))
            .collect();
        if !multi.is_empty() {
            out.push('\n');
            let mut last = None;
            for r in multi {
                let head = (r.threads, r.file_size, r.record_size);
                if last != Some(head) {
                    out.push_str(&format!(
                        "\tThroughput test with {} processes\n\tEach process writes a {} kByte file in {} kByte records\n\n",
                        r.threads,
                        r.file_size / 1024,
                        r.record_size / 1024
                    ));
                    last = Some(head);
                }
                out.push_str(&throughput_block(r));
            }
        }
        let shown = table_results(&g.results);
        let left: Vec<String> = g
            .results
            .iter()
            .filter(|r| r.threads <= 1 && !view::failed(r))
            .filter(|r| !shown.iter().any(|s| std::ptr::eq(*s, **r)))
            .map(|r| view::label(r))
            .collect();
        if !left.is_empty() {
            out.push_str(&format!(
                "\n\tNot in iozone's layout (see --format table): {}\n",
                left.join(", ")
            ));
        }
        let failed: Vec<String> = g
            .results
            .iter()
            .filter(|r| view::failed(r))
            .map(|r| view::label(r))
            .collect();
        if !failed.is_empty() {
            out.push_str(&format!("\n\tFailed: {}\n", failed.join(", ")));
        }
        out.push_str("\niozone test complete.\n");
    }
    out
}
