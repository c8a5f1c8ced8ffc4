//! IOR's results, as its src/ior-output.c prints them in each summary format:
//!
//! - **default** (text): the "Options:" block (`access`, `tasks`, `nodes`, `xfersize`,
//!   `blocksize`, `segments`, `aggregate filesize`, `ordering inter file`, `test filename`),
//!   then one row per access and repetition under the header
//!   `access bw(MiB/s) IOPS Latency(s) block(KiB) xfer(KiB) open(s) wr/rd(s) close(s) total(s) iter`
//!   (`PrintReducedResult`: `%-10s` then `PPDouble` columns; "remove" rows have dashes), IOR
//!   3.3's "Max Write:"/"Max Read:" lines (`PrintShortSummary`), and "Summary of all tests:",
//!   whose header names its columns (`PrintLongSummaryHeader`).
//! - **JSON** (`-O summaryFormat=JSON`): `tests[].Parameters`, `tests[].Options`,
//!   `tests[].Results` (IOR 3.3: one array per repetition; 4.x: one flat array) and `summary[]`.
//! - **CSV** (`-O summaryFormat=CSV`): `access,bw(MiB/s),IOPS,Latency,block(KiB),xfer(KiB),
//!   open(s),wr/rd(s),close(s),total(s),numTasks,iter` and one line per access.
//!
//! bw is the aggregate bytes (block x segments x tasks) over `total(s)`, the time from the
//! first task's open to the last task's close: one claim per access and repetition. The
//! summary's max/min/mean are checked against those rows (a difference is a diagnostic).
//! What matters for the reconciliation is kept in the flags: `file_per_process`, `reorder`
//! (`-C`: a task reads back another task's file), `reorder_random` (`-Z`), `fsync_in_timing`
//! (`-e`), `direct` (`--posix.odirect`/`-B`), and `nodes N`.

use super::{figures_left, number_prefix, Claim, Direction, Parsed, Unread};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

const MIB: f64 = 1024.0 * 1024.0;
const P: &str = "ior";

/// Whether an output is IOR's.
pub fn sniff(text: &str) -> bool {
    text.contains(": MPI Coordinated Test of Parallel I/O")
        || (text.contains("\"tests\"") && text.contains("\"testFileName\""))
        || text
            .lines()
            .any(|l| l.starts_with("access,bw(MiB/s),IOPS,Latency"))
}

/// What the options say about the run (from the text, the JSON or the command line).
#[derive(Default, Clone, Debug)]
struct Setup {
    version: String,
    tasks: Option<u32>,
    nodes: Option<u32>,
    block: Option<u64>,
    xfer: Option<u64>,
    segments: Option<u64>,
    aggregate: Option<u64>,
    filename: Option<String>,
    file_per_process: Option<bool>,
    reorder: Option<bool>,
    reorder_random: bool,
    fsync: bool,
    fsync_per_write: bool,
    direct: bool,
}

impl Setup {
    /// The command line's flags, for what the options block leaves out (-e, -Y, O_DIRECT).
    fn command_line(&mut self, cmd: &str) {
        let words: Vec<&str> = cmd.split_whitespace().collect();
        for (i, w) in words.iter().enumerate() {
            if w.starts_with("--") {
                if *w == "--posix.odirect" {
                    self.direct = true;
                }
                continue;
            }
            if let Some(letters) = w.strip_prefix('-') {
                // Flags only: an option with a value takes the next word.
                if letters.len() == 1 || letters.chars().all(|c| "CeFYZBcwrRWkKgvxuEz".contains(c))
                {
                    for c in letters.chars() {
                        match c {
                            'e' => self.fsync = true,
                            'Y' => self.fsync_per_write = true,
                            'C' => self.reorder = Some(true),
                            'Z' => self.reorder_random = true,
                            'F' => self.file_per_process = Some(true),
                            'B' => self.direct = true,
                            _ => {}
                        }
                    }
                }
                if *w == "-o" {
                    if let Some(f) = words.get(i + 1) {
                        self.filename.get_or_insert_with(|| f.to_string());
                    }
                }
            }
        }
    }
}

/// "256 MiB", "1 MiB", "512 MiB" as IOR prints sizes in its options (HumanReadable).
fn size_words(s: &str) -> Option<u64> {
    let (v, unit) = number_prefix(s.trim())?;
    let m = match unit.trim() {
        "bytes" | "B" | "" => 1.0,
        "KiB" => 1024.0,
        "MiB" => MIB,
        "GiB" => MIB * 1024.0,
        "TiB" => MIB * MIB,
        _ => return None,
    };
    Some((v * m).round() as u64)
}

/// One row of the results: an access and a repetition.
#[derive(Clone, Debug, Default)]
struct Row {
    access: String,
    bw_mib: f64,
    iops: Option<f64>,
    latency_s: Option<f64>,
    block_kib: Option<f64>,
    xfer_kib: Option<f64>,
    open_s: Option<f64>,
    wrrd_s: Option<f64>,
    close_s: Option<f64>,
    total_s: Option<f64>,
    tasks: Option<u32>,
    iter: usize,
    line: usize,
    printed: String,
}

impl Row {
    /// A result row's figures, each found by its column's name through `col` (`latency`
    /// names the latency column: "Latency" in the CSV, "Latency(s)" in the text table);
    /// None without a bandwidth.
    fn figures(col: impl Fn(&str) -> Option<f64>, latency: &str) -> Option<Row> {
        Some(Row {
            bw_mib: col("bw(MiB/s)")?,
            iops: col("IOPS"),
            latency_s: col(latency),
            block_kib: col("block(KiB)"),
            xfer_kib: col("xfer(KiB)"),
            open_s: col("open(s)"),
            wrrd_s: col("wr/rd(s)"),
            close_s: col("close(s)"),
            total_s: col("total(s)"),
            ..Default::default()
        })
    }
}

/// The figure in the column `name` of a row split into `cells` under `header`.
fn column(header: &[String], cells: &[&str], name: &str) -> Option<f64> {
    let i = header.iter().position(|x| x == name)?;
    cells.get(i)?.trim().parse().ok()
}

/// The summary of one access: max/min/mean/stddev of bw (MiB/s) and the mean time.
#[derive(Clone, Debug, Default)]
struct Summary {
    access: String,
    max: f64,
    min: f64,
    mean: f64,
    sd: f64,
    mean_s: Option<f64>,
    line: usize,
}

/// Reads an IOR output in any of its three summary formats.
pub fn read(text: &str) -> Parsed {
    let lines: Vec<&str> = text.lines().collect();
    if let Some(at) = lines.iter().position(|l| l.trim_start().starts_with('{')) {
        let rest: String = lines[at..].join("\n");
        let mut it = serde_json::Deserializer::from_str(&rest).into_iter::<Value>();
        if let Some(Ok(v)) = it.next() {
            if v.get("tests").is_some() {
                return from_json(&v, at + 1).sane();
            }
        }
    }
    from_text(&lines).sane()
}

fn num(v: &Value) -> Option<f64> {
    v.as_f64()
        .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
}

fn from_json(v: &Value, first_line: usize) -> Parsed {
    let mut s = Setup {
        version: v["Version"].as_str().unwrap_or("").to_string(),
        ..Default::default()
    };
    if let Some(cmd) = v["Command line"].as_str() {
        s.command_line(cmd);
    }
    let mut rows = Vec::new();
    let mut unread = Vec::new();
    let empty = Vec::new();
    for t in v["tests"].as_array().unwrap_or(&empty) {
        let p = &t["Parameters"];
        let o = &t["Options"];
        s.filename = p["testFileName"]
            .as_str()
            .map(str::to_string)
            .or(s.filename.clone());
        s.file_per_process = num(&p["filePerProc"]).map(|x| x != 0.0);
        s.reorder = num(&p["reorderTasks"]).map(|x| x != 0.0);
        s.reorder_random |= num(&p["reorderTasksRandom"]).is_some_and(|x| x != 0.0);
        s.fsync |= num(&p["fsync"]).is_some_and(|x| x != 0.0);
        s.fsync_per_write |= num(&p["fsyncperwrite"]).is_some_and(|x| x != 0.0);
        s.direct |= num(&p["useO_DIRECT"]).is_some_and(|x| x != 0.0);
        s.nodes = num(&p["nodes"]).or(num(&o["nodes"])).map(|x| x as u32);
        s.tasks = num(&o["tasks"]).map(|x| x as u32);
        s.block = num(&p["blockSize"]).map(|x| x as u64);
        s.xfer = num(&p["transferSize"]).map(|x| x as u64);
        s.segments = num(&p["segmentCount"]).map(|x| x as u64);
        s.aggregate = o["aggregate filesize"].as_str().and_then(size_words);
        // 3.3: one array per repetition; 4.x: one flat array.
        let mut flat: Vec<&Value> = Vec::new();
        for r in t["Results"].as_array().unwrap_or(&empty) {
            match r.as_array() {
                Some(a) => flat.extend(a.iter()),
                None => flat.push(r),
            }
        }
        let mut iters: BTreeMap<String, usize> = BTreeMap::new();
        for r in flat {
            let access = r["access"].as_str().unwrap_or("").to_string();
            if access == "remove" {
                continue;
            }
            let Some(bw) = num(&r["bwMiB"]) else {
                unread.push(Unread::new(P, 0, &r.to_string(), "a result without bwMiB"));
                continue;
            };
            let k = iters.entry(access.clone()).or_insert(0);
            rows.push(Row {
                access: access.clone(),
                bw_mib: bw,
                iops: num(&r["iops"]),
                latency_s: num(&r["latency"]),
                block_kib: num(&r["blockKiB"]),
                xfer_kib: num(&r["xferKiB"]),
                open_s: num(&r["openTime"]),
                wrrd_s: num(&r["wrRdTime"]),
                close_s: num(&r["closeTime"]),
                total_s: num(&r["totalTime"]),
                tasks: s.tasks,
                iter: *k,
                line: 0,
                printed: format!("\"bwMiB\": {bw}"),
            });
            *k += 1;
        }
    }
    let mut sums = Vec::new();
    for x in v["summary"].as_array().unwrap_or(&empty) {
        if let (Some(op), Some(max), Some(min), Some(mean), Some(sd)) = (
            x["operation"].as_str(),
            num(&x["bwMaxMIB"]),
            num(&x["bwMinMIB"]),
            num(&x["bwMeanMIB"]),
            num(&x["bwStdMIB"]),
        ) {
            sums.push(Summary {
                access: op.to_string(),
                max,
                min,
                mean,
                sd,
                mean_s: num(&x["MeanTime"]),
                line: 0,
            });
            if s.tasks.is_none() {
                s.tasks = num(&x["numTasks"]).map(|t| t as u32);
            }
        }
    }
    let _ = first_line;
    let mut r = claims_of(&s, &rows, &sums);
    r.unread.splice(0..0, unread);
    r
}

/// Splits a text row of the results table on whitespace and reads it by the header's column
/// names (the values never contain spaces; the header's names locate them).
fn from_text(lines: &[&str]) -> Parsed {
    let mut s = Setup::default();
    let mut used: BTreeSet<usize> = BTreeSet::new();
    let mut rows = Vec::new();
    let mut sums = Vec::new();
    let mut unread = Vec::new();
    let mut header: Option<Vec<String>> = None;
    let mut summary_header: Option<Vec<String>> = None;
    let mut csv_header: Option<Vec<String>> = None;
    let mut results_from = usize::MAX;
    let mut max_lines: Vec<(String, f64, usize)> = Vec::new();
    let mut iters: BTreeMap<String, usize> = BTreeMap::new();
    for (i, raw) in lines.iter().enumerate() {
        let n = i + 1;
        let l = raw.trim_end();
        if let Some((v, _)) = l.split_once(": MPI Coordinated Test of Parallel I/O") {
            s.version = v.trim_start_matches("IOR-").to_string();
            used.insert(n);
            continue;
        }
        if let Some((k, v)) = l.split_once(" : ").filter(|_| header.is_none()) {
            let v = v.trim();
            match k.trim() {
                "Command line" => s.command_line(v),
                "tasks" => s.tasks = v.parse().ok(),
                "nodes" => s.nodes = v.parse().ok(),
                "xfersize" => s.xfer = size_words(v),
                "blocksize" => s.block = size_words(v),
                "segments" => s.segments = v.parse().ok(),
                "aggregate filesize" => s.aggregate = size_words(v),
                "test filename" => s.filename = Some(v.to_string()),
                "access" => s.file_per_process = Some(v == "file-per-process"),
                "ordering inter file" => {
                    s.reorder = Some(v != "no tasks offsets");
                    s.reorder_random |= v.contains("random");
                }
                _ => {}
            }
            continue;
        }
        let words: Vec<&str> = l.split_whitespace().collect();
        if words.first() == Some(&"access") && words.contains(&"bw(MiB/s)") {
            header = Some(words.iter().map(|w| w.to_string()).collect());
            results_from = results_from.min(n);
            used.insert(n);
            continue;
        }
        if l.starts_with("access,bw(MiB/s)") {
            csv_header = Some(l.split(',').map(str::to_string).collect());
            results_from = results_from.min(n);
            used.insert(n);
            continue;
        }
        if words.first() == Some(&"Operation") && words.contains(&"Max(MiB)") {
            summary_header = Some(words.iter().map(|w| w.to_string()).collect());
            used.insert(n);
            continue;
        }
        if words.first().is_some_and(|w| w.starts_with("------")) {
            used.insert(n);
            continue;
        }
        if let Some(rest) = l
            .strip_prefix("Max Write:")
            .map(|r| ("write", r))
            .or_else(|| l.strip_prefix("Max Read:").map(|r| ("read", r)))
        {
            match number_prefix(rest.1.trim()) {
                Some((v, u)) if u.trim_start().starts_with("MiB/sec") => {
                    max_lines.push((rest.0.to_string(), v, n));
                    used.insert(n);
                }
                _ => unread.push(Unread::new(P, n, l, "a Max line without MiB/sec")),
            }
            continue;
        }
        let access = words.first().copied().unwrap_or("");
        if let (Some(h), Some(sh)) = (&header, &summary_header) {
            // Summary rows: "write 8243.19 1623.98 4933.59 3309.60 ...".
            let _ = h;
            if (access == "write" || access == "read") && words.len() >= 10 {
                let col = |name: &str| column(sh, &words, name);
                match (
                    col("Max(MiB)"),
                    col("Min(MiB)"),
                    col("Mean(MiB)"),
                    col("StdDev"),
                ) {
                    (Some(max), Some(min), Some(mean), Some(sd)) => {
                        sums.push(Summary {
                            access: access.to_string(),
                            max,
                            min,
                            mean,
                            sd,
                            mean_s: col("Mean(s)"),
                            line: n,
                        });
                        if s.tasks.is_none() {
                            s.tasks = col("#Tasks").map(|t| t as u32);
                        }
                        used.insert(n);
                    }
                    _ => unread.push(Unread::new(
                        P,
                        n,
                        l,
                        "a summary row whose Max, Min, Mean or StdDev could not be read",
                    )),
                }
                continue;
            }
        }
        if let Some(ch) = &csv_header {
            let cells: Vec<&str> = l.split(',').collect();
            if (access.starts_with("write,") || access.starts_with("read,")) && cells.len() >= 3 {
                let col = |name: &str| column(ch, &cells, name);
                match Row::figures(col, "Latency") {
                    Some(figures) => {
                        let a = cells[0].to_string();
                        let k = iters.entry(a.clone()).or_insert(0);
                        rows.push(Row {
                            access: a,
                            tasks: col("numTasks").map(|t| t as u32),
                            iter: *k,
                            line: n,
                            printed: cells.get(1).unwrap_or(&"").to_string(),
                            ..figures
                        });
                        *k += 1;
                        used.insert(n);
                    }
                    None => unread.push(Unread::new(
                        P,
                        n,
                        l,
                        "a CSV row whose bw(MiB/s) is not a number",
                    )),
                }
                continue;
            }
        }
        if let Some(h) = &header {
            if access == "remove" {
                used.insert(n);
                continue;
            }
            if access == "write" || access == "read" {
                let col = |name: &str| column(h, &words, name);
                if words.len() != h.len() {
                    used.insert(n);
                    unread.push(Unread::new(
                        P,
                        n,
                        l,
                        format!(
                            "a result row with {} values under a header of {} columns",
                            words.len(),
                            h.len()
                        ),
                    ));
                    continue;
                }
                match Row::figures(col, "Latency(s)") {
                    Some(figures) => {
                        let k = iters.entry(access.to_string()).or_insert(0);
                        let iter = col("iter").map(|x| x as usize).unwrap_or(*k);
                        rows.push(Row {
                            access: access.to_string(),
                            tasks: None,
                            iter,
                            line: n,
                            printed: words.get(1).unwrap_or(&"").to_string(),
                            ..figures
                        });
                        *k += 1;
                        used.insert(n);
                    }
                    None => unread.push(Unread::new(
                        P,
                        n,
                        l,
                        "a result row whose bw(MiB/s) is not a number",
                    )),
                }
            }
        }
    }
    // Open MPI's boxed messages (between two lines of dashes) are not IOR's.
    let mut boxed = vec![false; lines.len() + 1];
    let mut inside = false;
    for (i, l) in lines.iter().enumerate() {
        let rule = l.len() >= 40 && l.chars().all(|c| c == '-');
        if rule {
            inside = !inside;
        }
        boxed[i + 1] = inside || rule;
    }
    let in_results = |n: usize| {
        n >= results_from
            && !boxed[n]
            && !lines[n - 1].starts_with("Finished")
            && !lines[n - 1].starts_with("ERROR")
            && !lines[n - 1].starts_with('[')
            && !lines[n - 1].contains("MPI_ABORT")
    };
    unread.extend(figures_left(P, lines, &in_results, &used));
    let mut r = claims_of(&s, &rows, &sums);
    // IOR 3.3's "Max Write/Read" lines against the rows.
    for (access, v, n) in max_lines {
        let best = rows
            .iter()
            .filter(|x| x.access == access)
            .map(|x| x.bw_mib)
            .fold(f64::NAN, f64::max);
        if !((best - v).abs() <= 0.01 * v.max(1.0) || best.is_nan() && rows.is_empty()) {
            r.unread.push(Unread::new(
                P,
                n,
                lines[n - 1],
                format!("the Max {access} line says {v} MiB/s, the rows' best is {best}"),
            ));
        }
        for c in r.claims.iter_mut().filter(|c| c.test.starts_with(&access)) {
            c.extra.insert("summary_max_Bps".into(), v * MIB);
        }
    }
    r.unread.splice(0..0, unread);
    r
}

/// The claims from the rows, with the summary checked against them.
fn claims_of(s: &Setup, rows: &[Row], sums: &[Summary]) -> Parsed {
    let mut claims = Vec::new();
    let mut unread = Vec::new();
    let reps = rows
        .iter()
        .map(|r| r.iter)
        .max()
        .map(|m| m + 1)
        .unwrap_or(1);
    for r in rows {
        let direction = match r.access.as_str() {
            "write" => Direction::Write,
            "read" => Direction::Read,
            _ => continue,
        };
        let tasks = r.tasks.or(s.tasks).unwrap_or(1).max(1);
        let block = r.block_kib.map(|k| (k * 1024.0).round() as u64).or(s.block);
        let per_task = block.map(|b| b * s.segments.unwrap_or(1));
        let aggregate = s.aggregate.or(per_task.map(|p| p * tasks as u64));
        let mut c = Claim {
            program: P.into(),
            test: if reps > 1 {
                format!("{} #{}", r.access, r.iter)
            } else {
                r.access.clone()
            },
            direction,
            file_size: per_task,
            record_size: r.xfer_kib.map(|k| (k * 1024.0).round() as u64).or(s.xfer),
            threads: tasks,
            claimed_bps: r.bw_mib * MIB,
            bytes: aggregate,
            seconds: r.total_s,
            iops: r.iops,
            basis: "aggregate bytes over the time from the first open to the last close".into(),
            printed: r.printed.clone(),
            line: r.line,
            filename: s.filename.as_ref().map(|f| format!("{f}*")),
            flags: vec!["phases_in_order".into()],
            ..Default::default()
        };
        for (k, v) in [
            ("latency_s", r.latency_s),
            ("open_s", r.open_s),
            ("wrrd_s", r.wrrd_s),
            ("close_s", r.close_s),
        ] {
            if let Some(v) = v {
                c.extra.insert(k.into(), v);
            }
        }
        if let Some(sum) = sums.iter().find(|x| x.access == r.access) {
            c.extra.insert("summary_max_Bps".into(), sum.max * MIB);
            c.extra.insert("summary_min_Bps".into(), sum.min * MIB);
            c.extra.insert("summary_mean_Bps".into(), sum.mean * MIB);
            c.extra.insert("summary_stddev_Bps".into(), sum.sd * MIB);
            if let Some(m) = sum.mean_s {
                c.extra.insert("summary_mean_s".into(), m);
            }
        }
        if s.file_per_process == Some(true) {
            c.flags.push("file_per_process".into());
        }
        if s.reorder == Some(true) {
            c.flags.push("reorder".into());
        }
        if s.reorder_random {
            c.flags.push("reorder_random".into());
        }
        if direction == Direction::Write && (s.fsync || s.fsync_per_write) {
            c.flags.push("fsync_in_timing".into());
        }
        if s.direct {
            c.flags.push("direct".into());
        }
        if let Some(n) = s.nodes {
            c.flags.push(format!("nodes {n}"));
        }
        if !s.version.is_empty() {
            c.flags.push(format!("version {}", s.version));
        }
        claims.push(c);
    }
    // The summary against the rows (what IOR computed from the same numbers).
    for sum in sums {
        let v: Vec<f64> = rows
            .iter()
            .filter(|r| r.access == sum.access)
            .map(|r| r.bw_mib)
            .collect();
        if v.is_empty() {
            continue;
        }
        let max = v.iter().copied().fold(f64::MIN, f64::max);
        let min = v.iter().copied().fold(f64::MAX, f64::min);
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        // The rows print 4 or 5 significant digits, the summary two decimals.
        let near = |a: f64, b: f64| (a - b).abs() <= 5e-4 * b.abs().max(1.0) + 0.01;
        if !(near(max, sum.max) && near(min, sum.min) && near(mean, sum.mean)) {
            unread.push(Unread::new(
                P,
                sum.line,
                &format!("{} {} {} {}", sum.access, sum.max, sum.min, sum.mean),
                format!(
                    "the summary's max/min/mean ({}/{}/{}) are not those of the {} rows ({max:.2}/{min:.2}/{mean:.2})",
                    sum.max, sum.min, sum.mean, sum.access
                ),
            ));
        }
    }
    Parsed { claims, unread }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(name: &str) -> String {
        let p = format!("{}/tests/data/ior/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
    }

    fn one(name: &str) -> Parsed {
        let r = read(&data(name));
        assert!(r.unread.is_empty(), "{name}: {:?}", r.unread);
        r
    }

    fn has(c: &Claim, f: &str) -> bool {
        c.flags.iter().any(|x| x == f)
    }

    #[test]
    fn text_two_repetitions_without_reorder() {
        let r = one("4.1.0dev-np2-F-noC.txt");
        let t: Vec<(&str, f64)> = r
            .claims
            .iter()
            .map(|c| (c.test.as_str(), c.claimed_bps / MIB))
            .collect();
        assert_eq!(
            t,
            [
                ("write #0", 1623.98),
                ("read #0", 34630.0),
                ("write #1", 8243.0),
                ("read #1", 46943.0)
            ]
        );
        let w = &r.claims[0];
        assert_eq!(w.iops, Some(1624.16));
        assert_eq!(w.seconds, Some(0.315274));
        assert_eq!(w.extra["latency_s"], 0.001231);
        assert_eq!(w.extra["open_s"], 0.000052);
        assert_eq!(w.extra["wrrd_s"], 0.315240);
        assert_eq!(w.extra["close_s"], 0.228322);
        assert_eq!(w.file_size, Some(256 << 20));
        assert_eq!(w.record_size, Some(1 << 20));
        assert_eq!(w.bytes, Some(512 << 20));
        assert_eq!(w.threads, 2);
        assert_eq!(w.line, 34);
        assert_eq!(w.filename.as_deref(), Some("/var/tmp/capture/ior/ior.dat*"));
        assert_eq!(w.extra["summary_max_Bps"], 8243.19 * MIB);
        assert_eq!(w.extra["summary_min_Bps"], 1623.98 * MIB);
        assert_eq!(w.extra["summary_mean_Bps"], 4933.59 * MIB);
        assert_eq!(w.extra["summary_stddev_Bps"], 3309.60 * MIB);
        assert_eq!(w.extra["summary_mean_s"], 0.18869);
        let rd = &r.claims[3];
        assert_eq!(rd.iops, Some(47024.0));
        assert_eq!(rd.seconds, Some(0.010907));
        assert_eq!(rd.extra["summary_mean_Bps"], 40786.37 * MIB);
        assert!(has(rd, "file_per_process") && has(rd, "nodes 1"));
        assert!(!has(rd, "reorder"));
        assert!(!has(w, "fsync_in_timing"));
        assert!(has(w, "version 4.1.0+dev"));
    }

    #[test]
    fn text_with_reorder() {
        let r = one("4.1.0dev-np2-F-C.txt");
        assert_eq!(r.claims.len(), 4);
        assert!(r.claims.iter().all(|c| has(c, "reorder")));
        assert_eq!(r.claims[1].claimed_bps, 11328.0 * MIB);
        assert_eq!(r.claims[2].claimed_bps, 3837.0 * MIB);
        assert_eq!(r.claims[3].extra["summary_max_Bps"], 21371.61 * MIB);
    }

    #[test]
    fn json_in_three_releases() {
        for (f, w, rd, reorder) in [
            ("4.1.0dev-np2-F-C.json.txt", 11691.1215, 47028.9654, true),
            ("4.1.0dev-np2-F-noC.json.txt", 0.0, 0.0, false),
            ("4.0.0-np2-F-C.json.txt", 0.0, 0.0, true),
            ("3.3.0-np2-F-C.json.txt", 9434.3334, 19257.3139, true),
        ] {
            let r = one(f);
            assert_eq!(r.claims.len(), 2, "{f}");
            let (a, b) = (&r.claims[0], &r.claims[1]);
            assert_eq!((a.test.as_str(), b.test.as_str()), ("write", "read"));
            if w > 0.0 {
                assert_eq!(a.claimed_bps, w * MIB, "{f}");
                assert_eq!(b.claimed_bps, rd * MIB, "{f}");
            }
            assert_eq!(has(a, "reorder"), reorder, "{f}");
            assert!(has(a, "file_per_process"), "{f}");
            assert_eq!(a.threads, 2, "{f}");
            assert_eq!(a.file_size, Some(256 << 20), "{f}");
            assert_eq!(a.bytes, Some(512 << 20), "{f}");
            assert_eq!(a.record_size, Some(1 << 20), "{f}");
            assert_eq!(a.extra["summary_max_Bps"], a.claimed_bps, "{f}");
            assert!(a.seconds.is_some_and(|s| s > 0.0), "{f}");
            assert!(a.iops.is_some_and(|s| s > 0.0), "{f}");
        }
        let r = one("4.1.0dev-np2-F-C.json.txt");
        let a = &r.claims[0];
        assert_eq!(a.iops, Some(11703.4184));
        assert_eq!(a.seconds, Some(0.0438));
        assert_eq!(a.extra["close_s"], 0.0165);
        assert_eq!(a.extra["summary_mean_s"], 0.0438);
        assert!(has(a, "version 4.1.0+dev") && has(a, "nodes 1"));
    }

    #[test]
    fn csv_summary_shared_file_with_fsync() {
        let r = one("4.1.0dev-np2-shared-e-C.csv.txt");
        assert_eq!(r.claims.len(), 2);
        let w = &r.claims[0];
        assert_eq!(w.claimed_bps, 1616.1829 * MIB);
        assert_eq!(w.iops, Some(404.1832));
        assert_eq!(w.threads, 2);
        assert_eq!(w.record_size, Some(4 << 20));
        assert_eq!(w.file_size, Some(128 << 20));
        assert_eq!(w.seconds, Some(0.1584));
        assert_eq!(r.claims[1].claimed_bps, 67992.77 * MIB);
    }

    #[test]
    fn older_releases_text() {
        let r = one("3.3.0-np2-F-noC.txt");
        assert_eq!(r.claims.len(), 4);
        assert_eq!(r.claims[0].claimed_bps, 12095.0 * MIB);
        assert_eq!(r.claims[3].claimed_bps, 4977.0 * MIB);
        assert!(has(&r.claims[0], "version 3.3.0"));
        let r = one("4.0.0-np2-F-noC.txt");
        assert_eq!(r.claims.len(), 4);
        assert_eq!(r.claims[3].claimed_bps, 46562.0 * MIB);
    }

    #[test]
    fn one_task_with_fsync_and_odirect() {
        let r = one("4.1.0dev-np1-e.txt");
        assert_eq!(r.claims.len(), 2);
        assert_eq!(r.claims[0].threads, 1);
        assert!(has(&r.claims[0], "fsync_in_timing"));
        assert!(!has(&r.claims[0], "file_per_process"));
        assert_eq!(r.claims[0].claimed_bps, 1599.10 * MIB);
        let d = one("4.1.0dev-np2-F-odirect.txt");
        assert!(d.claims.iter().all(|c| has(c, "direct")));
        assert_eq!(d.claims[1].claimed_bps, 1521.36 * MIB);
        assert_eq!(d.claims[1].file_size, Some(64 << 20));
    }

    #[test]
    fn a_failed_run_has_no_figures_and_no_unread_noise() {
        let r = one("4.1.0dev-bad-path.txt");
        assert!(r.claims.is_empty());
    }

    #[test]
    fn a_row_that_does_not_fit_the_header_is_named() {
        let t = data("4.1.0dev-np2-F-noC.txt")
            .replace("read      34630      34650  ", "read      34630 34650  ");
        let r = read(&t);
        assert!(r.unread.is_empty(), "still eleven values: {:?}", r.unread);
        let t = data("4.1.0dev-np2-F-noC.txt").replace("34650      0.000058", "34650");
        let r = read(&t);
        assert_eq!(r.unread.len(), 2, "{:?}", r.unread);
        assert_eq!(r.unread[0].line, 35);
        assert!(r.unread[0].why.contains("10 values under a header of 11"));
        // The summary no longer matches the rows: said too.
        assert!(r.unread[1].why.contains("summary"));
        assert_eq!(r.claims.len(), 3);
    }
}
