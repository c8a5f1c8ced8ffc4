//! bonnie++'s results: the CSV line it prints at the end of every run (format 1.98), with
//! the field positions its own reader `bon_csv2txt` uses (bonnie++ 2.00's `-x` header names
//! 48 fields, but its lines carry the seek processes and the size's second part besides,
//! so the header's names do not line up with the values; the reader's positions do):
//!
//! | fields | what |
//! |---|---|
//! | 0..4 | format version, bonnie++ version, machine name, concurrency, seed |
//! | 5..8 | file size, its second part, chunk size, seek processes |
//! | 9..20 | K/sec and %CPU of putc, block write, rewrite, getc, block read; seeks/sec and %CPU |
//! | 21..25 | number of files (x1024), max size, min size, directories, file chunk size |
//! | 26..37 | /sec and %CPU of sequential create, stat (read), delete; random create, stat, delete |
//! | 38..43 | worst latency of the six I/O tests |
//! | 44..49 | worst latency of the six file tests |
//!
//! `+++++` in a rate field means the test ended too soon (under half a second) for bonnie++
//! to give a figure: no claim, a diagnostic says so. The text table above the CSV line
//! (`%19s %5s %3s ...`, rates with k/m/g suffixes as `convSpd` writes them) repeats the same
//! figures: each is read and compared with the CSV, and a difference is a diagnostic.

use super::{figures_left, number_prefix, parse_size, Claim, Direction, Parsed, Unread};
use std::collections::BTreeSet;

/// Whether an output is bonnie++'s.
pub fn sniff(text: &str) -> bool {
    text.lines().any(|l| {
        l.starts_with("1.98,")
            || l.starts_with("format_version,bonnie_version")
            || (l.starts_with("Version ") && l.contains("------Sequential Output------"))
    })
}

/// (name, direction, record-size source) of the I/O tests, at fields 9 + 2i (rate) and
/// 10 + 2i (%CPU); latency at 38 + i.
const IO_TESTS: [(&str, Direction); 6] = [
    ("putc", Direction::Write),
    ("write", Direction::Write),
    ("rewrite", Direction::Write),
    ("getc", Direction::Read),
    ("read", Direction::Read),
    ("seeks", Direction::Read),
];

/// The file tests, at fields 26 + 2i and 27 + 2i; latency at 44 + i.
const FILE_TESTS: [(&str, &str); 6] = [
    ("seq_create", "create"),
    ("seq_stat", "stat"),
    ("seq_delete", "delete"),
    ("ran_create", "create"),
    ("ran_stat", "stat"),
    ("ran_delete", "delete"),
];

/// A latency as bonnie++ prints it: "4812us", "170ms", "2s".
/// A CSV rate field as a number, or why not in `unread`: `+++++` (bonnie++'s mark of a test
/// too short for its timer) or anything else that is not a number.
fn rate_of(
    rate: &str,
    field: usize,
    name: &str,
    line: usize,
    unread: &mut Vec<Unread>,
) -> Option<f64> {
    let why = if rate.starts_with('+') {
        format!("bonnie++ printed no {name} figure: the test took under half a second, too short for its timer")
    } else {
        match rate.parse::<f64>() {
            Ok(v) => return Some(v),
            Err(_) => format!("field {field} ({name}) is not a number"),
        }
    };
    unread.push(Unread::new(
        "bonnie++",
        line,
        &format!("{name}: {rate}"),
        why,
    ));
    None
}

fn latency_ns(s: &str) -> Option<f64> {
    let (v, unit) = number_prefix(s)?;
    let m = match unit.trim() {
        "ns" => 1.0,
        "us" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => return None,
    };
    Some(v * m)
}

/// A rate of the text table as `convSpd` writes it: "5792k", "638m", "1.6g" (K/sec), or a
/// plain number for the file tests and seeks.
fn text_rate(s: &str) -> Option<f64> {
    let (v, unit) = number_prefix(s)?;
    Some(match unit {
        "k" => v,
        "m" => v * 1024.0,
        "g" => v * 1024.0 * 1024.0,
        "" => v,
        _ => return None,
    })
}

/// The fields of a fixed-width row: `first` characters of description, then `n` pairs of
/// " %5s %3s". None when the line is shorter than its first field.
fn cells(line: &str, first: usize, widths: &[usize]) -> Vec<String> {
    let chars: Vec<char> = line.chars().collect();
    let mut out = Vec::new();
    let mut at = first;
    for w in widths {
        let from = (at + 1).min(chars.len());
        let to = (at + 1 + w).min(chars.len());
        out.push(
            chars[from..to]
                .iter()
                .collect::<String>()
                .trim()
                .to_string(),
        );
        at += 1 + w;
    }
    out
}

struct CsvRun {
    line: usize,
    fields: Vec<String>,
}

/// Reads a bonnie++ output (text table, CSV line or both; several with `-x`).
pub fn read(text: &str) -> Parsed {
    let lines: Vec<&str> = text.lines().collect();
    let mut used: BTreeSet<usize> = BTreeSet::new();
    let mut unread = Vec::new();
    let mut runs: Vec<CsvRun> = Vec::new();
    // Text rows: (line, I/O or file, values).
    let mut text_rows: Vec<(usize, bool, Vec<String>)> = Vec::new();
    let mut section: Option<bool> = None;
    let mut figures_from = usize::MAX;
    for (i, l) in lines.iter().enumerate() {
        let n = i + 1;
        if l.starts_with("format_version,") {
            used.insert(n);
            continue;
        }
        if let Some(rest) = l.strip_prefix("1.98,") {
            let mut fields = vec!["1.98".to_string()];
            fields.extend(rest.trim_end().split(',').map(str::to_string));
            if fields.len() < 21 {
                unread.push(Unread::new(
                    "bonnie++",
                    n,
                    l,
                    format!(
                        "a CSV line with {} fields, fewer than the 21 of the I/O tests",
                        fields.len()
                    ),
                ));
            } else {
                runs.push(CsvRun { line: n, fields });
            }
            used.insert(n);
            figures_from = figures_from.min(n);
            continue;
        }
        if l.starts_with("Version ") && l.contains("------Sequential Output------") {
            section = Some(true);
            figures_from = figures_from.min(n);
            used.insert(n);
            continue;
        }
        if l.starts_with("Version ") && l.contains("------Sequential Create------") {
            section = Some(false);
            used.insert(n);
            continue;
        }
        let trimmed = l.trim_start();
        if trimmed.starts_with("-Per Chr-")
            || trimmed.starts_with("-Create--")
            || trimmed.starts_with("Name:Size")
            || trimmed.starts_with("files")
            || (section == Some(false) && trimmed.contains("-Create--"))
        {
            continue;
        }
        if let Some(is_io) = section {
            if l.starts_with("Latency") {
                let v = cells(l, 17, &[9; 6]);
                text_rows.push((n, is_io, v.into_iter().map(|x| format!("L{x}")).collect()));
                used.insert(n);
            } else if l.chars().count() > 20 && !l.trim().is_empty() {
                let v = cells(l, 19, &[5, 3, 5, 3, 5, 3, 5, 3, 5, 3, 5, 3]);
                text_rows.push((n, is_io, v));
                used.insert(n);
            }
        }
    }
    unread.extend(figures_left(
        "bonnie++",
        &lines,
        &|n| n >= figures_from,
        &used,
    ));
    let mut claims = Vec::new();
    for (k, run) in runs.iter().enumerate() {
        let f = |i: usize| run.fields.get(i).map(String::as_str).unwrap_or("");
        let file_size = parse_size(f(5));
        let chunk = f(7).parse::<u64>().ok();
        let seekers = f(8).parse::<u32>().ok();
        let version = f(1).to_string();
        let suffix = if runs.len() > 1 {
            format!(" #{}", k + 1)
        } else {
            String::new()
        };
        for (t, (name, dir)) in IO_TESTS.iter().enumerate() {
            let rate = f(9 + 2 * t);
            let cpu = f(10 + 2 * t);
            if rate.is_empty() {
                continue;
            }
            let Some(v) = rate_of(rate, 9 + 2 * t, name, run.line, &mut unread) else {
                continue;
            };
            let seeks = *name == "seeks";
            let record = match *name {
                "putc" | "getc" => Some(1),
                _ => chunk,
            };
            let mut c = Claim {
                program: "bonnie++".into(),
                test: format!("{name}{suffix}"),
                direction: *dir,
                file_size,
                record_size: record,
                threads: if seeks { seekers.unwrap_or(1) } else { 1 },
                claimed_bps: if seeks {
                    v * chunk.unwrap_or(8192) as f64
                } else {
                    v * 1024.0
                },
                iops: seeks.then_some(v),
                basis: if seeks {
                    "random seeks per second (each reads a chunk) times the chunk size".into()
                } else {
                    "K/sec over bonnie++'s timer for the test".into()
                },
                printed: rate.to_string(),
                line: run.line,
                filename: Some("Bonnie.*".into()),
                flags: vec![format!("version {version}"), "phases_in_order".to_string()],
                ..Default::default()
            };
            if *name == "rewrite" {
                c.flags.push("reads each chunk before rewriting it".into());
            }
            if seeks {
                c.flags.push("random".into());
            }
            if let Ok(p) = cpu.parse::<f64>() {
                c.extra.insert("cpu_pct".into(), p);
            }
            if let Some(l) = latency_ns(f(38 + t)) {
                c.latency_ns.insert("max".into(), l);
            }
            claims.push(c);
        }
        let files = f(21).parse::<u64>().ok();
        for (t, (name, op)) in FILE_TESTS.iter().enumerate() {
            let rate = f(26 + 2 * t);
            if rate.is_empty() {
                continue;
            }
            let Some(v) = rate_of(rate, 26 + 2 * t, name, run.line, &mut unread) else {
                continue;
            };
            let mut c = Claim {
                program: "bonnie++".into(),
                test: format!("{name}{suffix}"),
                direction: Direction::Unknown,
                threads: 1,
                iops: Some(v),
                basis: format!("{op}s per second over bonnie++'s timer"),
                printed: rate.to_string(),
                line: run.line,
                flags: vec![
                    format!("version {version}"),
                    "metadata".into(),
                    format!("operation {op}"),
                ],
                ..Default::default()
            };
            if let Some(n) = files {
                c.extra.insert("files".into(), (n * 1024) as f64);
            }
            if let Ok(p) = f(27 + 2 * t).parse::<f64>() {
                c.extra.insert("cpu_pct".into(), p);
            }
            if let Some(l) = latency_ns(f(44 + t)) {
                c.latency_ns.insert("max".into(), l);
            }
            claims.push(c);
        }
    }
    // The text table against the CSV: the k-th I/O row (and its latency row) of the table
    // goes with the k-th CSV line.
    let mut io_k = 0;
    let mut file_k = 0;
    for (n, is_io, vals) in &text_rows {
        let is_latency = vals.first().is_some_and(|v| v.starts_with('L'));
        let k = if *is_io { io_k } else { file_k };
        let Some(run) = runs.get(k) else {
            unread.push(Unread::new(
                "bonnie++",
                *n,
                lines[*n - 1],
                "a row of bonnie++'s table without a CSV line to check it against",
            ));
            continue;
        };
        let f = |i: usize| run.fields.get(i).map(String::as_str).unwrap_or("");
        for (j, cell) in vals.iter().enumerate() {
            let (csv_i, what) = match (is_latency, *is_io) {
                (true, true) => (38 + j, "latency"),
                (true, false) => (44 + j, "latency"),
                (false, true) => (9 + j, if j % 2 == 0 { "rate" } else { "cpu" }),
                (false, false) => (26 + j, if j % 2 == 0 { "rate" } else { "cpu" }),
            };
            let cell = cell.trim_start_matches('L');
            let csv = f(csv_i);
            let agrees = if cell.is_empty() || cell.starts_with('+') {
                cell == csv || (cell.is_empty() && csv.is_empty())
            } else if what == "latency" {
                cell == csv
            } else {
                match (text_rate(cell), csv.parse::<f64>()) {
                    (Some(t), Ok(c)) if what == "rate" => {
                        // convSpd keeps 2 or 3 significant digits.
                        (t - c).abs() <= 0.06 * c.max(1.0) || (t - c).abs() < 1.0
                    }
                    (Some(t), Ok(c)) => (t - c).abs() < 0.5,
                    _ => false,
                }
            };
            if !agrees {
                unread.push(Unread::new(
                    "bonnie++",
                    *n,
                    lines[*n - 1],
                    format!(
                        "the text table says {cell:?} where the CSV line (line {}) says {csv:?}: the CSV figure is used",
                        run.line
                    ),
                ));
            }
        }
        if is_latency {
            if *is_io {
                io_k += 1;
            } else {
                file_k += 1;
            }
        }
    }
    Parsed { claims, unread }.sane()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(name: &str) -> String {
        let p = format!("{}/tests/data/bonnie/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
    }

    fn too_fast(r: &Parsed) -> usize {
        r.unread
            .iter()
            .filter(|u| u.why.contains("under half a second"))
            .count()
    }

    fn others(r: &Parsed) -> Vec<&Unread> {
        r.unread
            .iter()
            .filter(|u| !u.why.contains("under half a second"))
            .collect()
    }

    #[test]
    fn four_gigabytes_block_tests_and_files() {
        let r = read(&data("s4G-n4-f.txt"));
        let names: Vec<&str> = r.claims.iter().map(|c| c.test.as_str()).collect();
        assert_eq!(names, ["write", "rewrite", "seeks", "seq_create"]);
        let w = &r.claims[0];
        assert_eq!(w.claimed_bps, 653772.0 * 1024.0);
        assert_eq!(w.file_size, Some(4 << 30));
        assert_eq!(w.record_size, Some(8192));
        assert_eq!(w.extra["cpu_pct"], 42.0);
        assert_eq!(w.latency_ns["max"], 170e6);
        assert_eq!(w.direction, Direction::Write);
        let rw = &r.claims[1];
        assert_eq!(rw.claimed_bps, 1705424.0 * 1024.0);
        assert_eq!(rw.latency_ns["max"], 32027e3);
        let s = &r.claims[2];
        assert_eq!(s.iops, Some(5871.0));
        assert_eq!(s.threads, 5);
        assert_eq!(s.claimed_bps, 5871.0 * 8192.0);
        assert_eq!(s.extra["cpu_pct"], 19.0);
        assert_eq!(s.latency_ns["max"], 13798e3);
        let c = &r.claims[3];
        assert_eq!(c.iops, Some(6923.0));
        assert_eq!(c.extra["files"], 4096.0);
        assert_eq!(c.extra["cpu_pct"], 79.0);
        assert_eq!(c.latency_ns["max"], 4042e3);
        assert!(c.flags.contains(&"metadata".to_string()));
        // Block read and five file tests were too fast for a figure.
        assert_eq!(too_fast(&r), 6);
        // bonnie++'s own text table prints 4096 creates/s where its CSV says 6923.
        let o = others(&r);
        assert_eq!(o.len(), 1, "{o:?}");
        assert_eq!(o[0].line, 20);
        assert!(o[0].why.contains("\"4096\"") && o[0].why.contains("\"6923\""));
    }

    #[test]
    fn per_character_tests_and_metadata() {
        let r = read(&data("s512M-n1.txt"));
        assert_eq!(r.claims.len(), 1);
        let c = &r.claims[0];
        assert_eq!(c.test, "putc");
        assert_eq!(c.claimed_bps, 3880.0 * 1024.0);
        assert_eq!(c.record_size, Some(1));
        assert_eq!(c.extra["cpu_pct"], 62.0);
        assert_eq!(c.latency_ns["max"], 9447e3);
        assert_eq!(too_fast(&r), 5 + 6);
        assert!(others(&r).is_empty(), "{:?}", others(&r));
        let q = read(&data("quiet-s512M.txt"));
        assert_eq!(q.claims.len(), 1);
        assert_eq!(q.claims[0].claimed_bps, 5792.0 * 1024.0);
        assert_eq!(q.claims[0].extra["cpu_pct"], 93.0);
        assert!(others(&q).is_empty(), "{:?}", others(&q));
    }

    #[test]
    fn several_runs_with_x() {
        let r = read(&data("x2-n2-f.txt"));
        let names: Vec<&str> = r.claims.iter().map(|c| c.test.as_str()).collect();
        assert_eq!(
            names,
            [
                "write #1",
                "seq_delete #1",
                "seq_delete #2",
                "ran_delete #2"
            ]
        );
        assert_eq!(r.claims[0].claimed_bps, 934761.0 * 1024.0);
        assert_eq!(r.claims[0].extra["cpu_pct"], 20.0);
        assert_eq!(r.claims[1].iops, Some(322.0));
        assert_eq!(r.claims[1].extra["files"], 2048.0);
        assert_eq!(r.claims[2].iops, Some(401.0));
        assert_eq!(r.claims[3].iops, Some(513.0));
        assert_eq!(r.claims[3].latency_ns["max"], 16011e3);
        assert!(others(&r).is_empty(), "{:?}", others(&r));
    }

    #[test]
    fn fsync_mode_all_too_fast() {
        let r = read(&data("sync-b-f-s256M.txt"));
        assert!(r.claims.is_empty());
        assert_eq!(too_fast(&r), 4);
        assert!(others(&r).is_empty(), "{:?}", others(&r));
    }

    #[test]
    fn broken_csv_is_named() {
        let r = read("1.98,2.00a,x,1\n");
        assert_eq!(r.unread.len(), 1);
        assert!(r.unread[0].why.contains("fewer than"));
        assert!(r.claims.is_empty());
    }
}
