//! iozone's three ways of printing results:
//! - the table of single-stream tests (`-i`, `-a`): fixed-width columns where a test that did
//!   not run is blank space and a wide value can touch its neighbour, so columns are found by
//!   position, never by splitting on spaces;
//! - the `-R` "Excel" section: one block per test, rows of file size, columns of record size;
//! - throughput mode (`-t`): "Children see throughput for N initial writers = X kB/sec" and
//!   the figures after it.
//!
//! iozone's "kB" is 1024 bytes.

use super::{number_prefix, Claim, Direction};

const KIB: f64 = 1024.0;

/// The table's test columns, in iozone's order, with candor's names.
const COLUMNS: &[(&str, &str, Direction)] = &[
    ("write", "write", Direction::Write),
    ("rewrite", "rewrite", Direction::Write),
    ("read", "read", Direction::Read),
    ("reread", "reread", Direction::Read),
    ("random read", "randread", Direction::Read),
    ("random write", "randwrite", Direction::Write),
    ("bkwd read", "bkwdread", Direction::Read),
    ("record rewrite", "recrewrite", Direction::Write),
    ("stride read", "strideread", Direction::Read),
    ("fwrite", "fwrite", Direction::Write),
    ("frewrite", "frewrite", Direction::Write),
    ("fread", "fread", Direction::Read),
    ("freread", "freread", Direction::Read),
    ("pwrite", "pwrite", Direction::Write),
    ("repwrite", "repwrite", Direction::Write),
    ("pread", "pread", Direction::Read),
    ("repread", "repread", Direction::Read),
    ("pwritev", "pwritev", Direction::Write),
    ("repwritev", "repwritev", Direction::Write),
    ("preadv", "preadv", Direction::Read),
    ("repreadv", "repreadv", Direction::Read),
];

/// Where each column's value ends in iozone 3.4xx's table (one past the last digit), in the
/// order of `COLUMNS` after "kB" (16) and "reclen" (24). Measured on real output: the values
/// sit one place right of some header words, so the header alone is not enough.
const VALUE_ENDS: &[usize] = &[
    33, 42, 51, 60, 69, 78, 87, 97, 107, 116, 125, 134, 143, 152, 161, 169, 178, 187, 196, 205, 214,
];

/// Excel section titles and the test they hold.
const EXCEL: &[(&str, &str, Direction)] = &[
    ("Writer report", "write", Direction::Write),
    ("Re-writer report", "rewrite", Direction::Write),
    ("Reader report", "read", Direction::Read),
    ("Re-Reader report", "reread", Direction::Read),
    ("Random read report", "randread", Direction::Read),
    ("Random write report", "randwrite", Direction::Write),
    ("Backward read report", "bkwdread", Direction::Read),
    ("Record rewrite report", "recrewrite", Direction::Write),
    ("Stride read report", "strideread", Direction::Read),
    ("Fwrite report", "fwrite", Direction::Write),
    ("Re-Fwrite report", "frewrite", Direction::Write),
    ("Fread report", "fread", Direction::Read),
    ("Re-Fread report", "freread", Direction::Read),
    ("Pwrite report", "pwrite", Direction::Write),
    ("Re-Pwrite report", "repwrite", Direction::Write),
    ("Pread report", "pread", Direction::Read),
    ("Re-Pread report", "repread", Direction::Read),
];

/// All claims in an iozone output: the table (or, when there is none, the Excel section) and
/// throughput-mode figures. Settings printed in the preamble ("Include fsync in write
/// timing", "O_DIRECT feature enabled") are attached to every claim as flags.
pub fn parse(text: &str) -> Vec<Claim> {
    let lines: Vec<&str> = text.lines().collect();
    let flags = preamble_flags(&lines);
    let ops = text.contains("Output is in operations per second")
        || text.contains("OPS Mode. Output is in operations per second");
    let mut claims = parse_table(&lines, ops);
    if claims.is_empty() {
        claims = parse_excel(&lines, ops);
    }
    claims.extend(parse_throughput(&lines));
    let files = test_files(&lines);
    for c in &mut claims {
        if c.filename.is_none() {
            c.filename = files.clone();
        }
        for f in &flags {
            if !c.flags.contains(f) {
                c.flags.push(f.clone());
            }
        }
    }
    claims
}

/// The files iozone works on, from "Command line used:": `-f FILE` (single stream) or the
/// names after `-F` (throughput mode), joined by ':'. Without them iozone uses
/// "iozone.tmp" in its working directory (single stream) or "iozone.DUMMY.N" (throughput).
fn test_files(lines: &[&str]) -> Option<String> {
    let cmd = lines
        .iter()
        .find_map(|l| l.trim().strip_prefix("Command line used:"))?;
    let words: Vec<&str> = cmd.split_whitespace().collect();
    let mut files = Vec::new();
    let mut i = 0;
    while i < words.len() {
        match words[i] {
            "-f" => {
                if let Some(f) = words.get(i + 1) {
                    files.push(f.to_string());
                }
                i += 1;
            }
            "-F" => {
                while let Some(f) = words.get(i + 1).filter(|w| !w.starts_with('-')) {
                    files.push(f.to_string());
                    i += 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    if files.is_empty() {
        let throughput = cmd.split_whitespace().any(|w| w == "-t");
        files.push(
            if throughput {
                "iozone.DUMMY.*"
            } else {
                "iozone.tmp"
            }
            .to_string(),
        );
    }
    Some(files.join(":"))
}

fn preamble_flags(lines: &[&str]) -> Vec<String> {
    let mut flags = Vec::new();
    for l in lines {
        let t = l.trim();
        let f = match t {
            "Include fsync in write timing" => "fsync_in_timing",
            "Include close in write timing" => "close_in_timing",
            "O_DIRECT feature enabled" => "direct",
            "SYNC Mode." => "osync",
            _ if t.starts_with("Stonewall disabled") => "stonewall_disabled",
            _ if t.starts_with("Command line used:") => break,
            _ => continue,
        };
        flags.push(f.to_string());
    }
    flags
}

/// The header's test names, joined with the "random", "bkwd"... word above them.
fn table_columns(upper: &str, header: &str) -> Vec<(usize, String)> {
    let words = |s: &str| -> Vec<(usize, String)> {
        let mut out = Vec::new();
        let mut start = None;
        for (i, c) in s.char_indices().chain(std::iter::once((s.len(), ' '))) {
            match (c.is_whitespace(), start) {
                (false, None) => start = Some(i),
                (true, Some(st)) => {
                    out.push((i, s[st..i].to_string()));
                    start = None;
                }
                _ => {}
            }
        }
        out
    };
    let above = words(upper);
    words(header)
        .into_iter()
        .map(|(end, w)| match above.iter().find(|(e, _)| *e == end) {
            Some((_, a)) => (end, format!("{a} {w}")),
            None => (end, w),
        })
        .collect()
}

fn parse_table(lines: &[&str], ops: bool) -> Vec<Claim> {
    let mut claims = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i];
        let t = l.trim_start();
        if !(t.starts_with("kB") && t.contains("reclen")) {
            i += 1;
            continue;
        }
        let upper = if i > 0 { lines[i - 1] } else { "" };
        let cols = table_columns(upper, l);
        // Map the header to known tests; the value end of each comes from the fixed layout
        // when the header is the one iozone prints, else from the header word itself.
        let mut tests: Vec<(usize, &'static str, Direction)> = Vec::new();
        let mut next_known = 0;
        for (end, name) in cols.iter().skip(2) {
            let Some(k) = COLUMNS.iter().position(|(n, _, _)| n == name) else {
                continue;
            };
            let value_end =
                if k == next_known && k < VALUE_ENDS.len() && VALUE_ENDS[k].abs_diff(*end) <= 1 {
                    VALUE_ENDS[k]
                } else {
                    *end
                };
            next_known = k + 1;
            tests.push((value_end, COLUMNS[k].1, COLUMNS[k].2));
        }
        let mut j = i + 1;
        while j < lines.len() {
            let row = lines[j];
            let Some(parsed) = parse_row(row, &tests) else {
                break;
            };
            let (kb, reclen, values) = parsed;
            for (test, dir, v, printed) in values {
                let rs = reclen * 1024;
                let bps = if ops { v * rs as f64 } else { v * KIB };
                claims.push(Claim {
                    program: "iozone".into(),
                    test: test.into(),
                    direction: dir,
                    file_size: Some(kb * 1024),
                    record_size: Some(rs),
                    threads: 1,
                    claimed_bps: bps,
                    iops: if ops {
                        Some(v)
                    } else {
                        Some(bps / rs.max(1) as f64)
                    },
                    basis: "per test (iozone table)".into(),
                    printed: if ops {
                        format!("{printed} ops/s")
                    } else {
                        format!("{printed} kB/s")
                    },
                    line: j + 1,
                    ..Default::default()
                });
            }
            j += 1;
        }
        i = j;
    }
    claims
}

type Row = (u64, u64, Vec<(&'static str, Direction, f64, String)>);

/// One row of the table: file size in kB, record size in kB, then the values by position.
fn parse_row(row: &str, tests: &[(usize, &'static str, Direction)]) -> Option<Row> {
    if !row.is_ascii() {
        return None;
    }
    let mut it = row.split_whitespace();
    let kb: u64 = it.next()?.parse().ok()?;
    let reclen: u64 = it.next()?.parse().ok()?;
    // Tokens with their spans; a token may hold several touching values.
    let mut tokens = Vec::new();
    let bytes = row.as_bytes();
    let mut k = 0;
    while k < bytes.len() {
        if bytes[k].is_ascii_whitespace() {
            k += 1;
            continue;
        }
        let s = k;
        while k < bytes.len() && !bytes[k].is_ascii_whitespace() {
            k += 1;
        }
        tokens.push((s, k));
    }
    let mut values = Vec::new();
    for &(s, e) in tokens.iter().skip(2) {
        // The columns whose value ends inside this token, left to right.
        let inside: Vec<&(usize, &'static str, Direction)> = tests
            .iter()
            .filter(|(end, _, _)| *end > s && *end <= e + 1)
            .collect();
        if inside.is_empty() {
            continue;
        }
        let mut from = s;
        for (n, (end, test, dir)) in inside.iter().enumerate() {
            let to = if n + 1 == inside.len() {
                e
            } else {
                (*end).min(e)
            };
            if to <= from {
                continue;
            }
            let txt = &row[from..to];
            if let Ok(v) = txt.parse::<f64>() {
                if v.is_finite() {
                    values.push((*test, *dir, v, txt.to_string()));
                }
            }
            from = to;
        }
    }
    Some((kb, reclen, values))
}

fn parse_excel(lines: &[&str], ops: bool) -> Vec<Claim> {
    let mut claims = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let title = lines[i].trim().trim_matches('"');
        let Some(&(_, test, dir)) = EXCEL.iter().find(|(t, _, _)| *t == title) else {
            i += 1;
            continue;
        };
        let Some(header) = lines.get(i + 1) else {
            break;
        };
        let reclens: Vec<u64> = header
            .split_whitespace()
            .filter_map(|w| w.trim_matches('"').parse().ok())
            .collect();
        let mut j = i + 2;
        while let Some(row) = lines.get(j) {
            let mut it = row.split_whitespace();
            let Some(kb) = it
                .next()
                .and_then(|w| w.strip_prefix('"')?.strip_suffix('"')?.parse::<u64>().ok())
            else {
                break;
            };
            for (n, w) in it.enumerate() {
                let (Some(&rk), Ok(v)) = (reclens.get(n), w.parse::<f64>()) else {
                    continue;
                };
                if !v.is_finite() {
                    continue;
                }
                let rs = rk * 1024;
                let bps = if ops { v * rs as f64 } else { v * KIB };
                claims.push(Claim {
                    program: "iozone".into(),
                    test: test.into(),
                    direction: dir,
                    file_size: Some(kb * 1024),
                    record_size: Some(rs),
                    threads: 1,
                    claimed_bps: bps,
                    iops: Some(bps / rs.max(1) as f64),
                    basis: "per test (iozone -R report)".into(),
                    printed: w.to_string(),
                    line: j + 1,
                    ..Default::default()
                });
            }
            j += 1;
        }
        i = j;
    }
    claims
}

/// The test named in "... throughput for  2 initial writers".
fn throughput_test(what: &str) -> Option<(&'static str, Direction)> {
    let w = what.trim().to_ascii_lowercase();
    Some(match w.as_str() {
        "initial writers" => ("write", Direction::Write),
        "rewriters" => ("rewrite", Direction::Write),
        "readers" => ("read", Direction::Read),
        "re-readers" => ("reread", Direction::Read),
        "reverse readers" => ("bkwdread", Direction::Read),
        "stride readers" => ("strideread", Direction::Read),
        "random readers" => ("randread", Direction::Read),
        "mixed workload" => ("randmix", Direction::Mixed),
        "random writers" => ("randwrite", Direction::Write),
        "pwrite writers" => ("pwrite", Direction::Write),
        "pread readers" => ("pread", Direction::Read),
        "fwriters" => ("fwrite", Direction::Write),
        "freaders" => ("fread", Direction::Read),
        "record rewriters" => ("recrewrite", Direction::Write),
        _ => return None,
    })
}

/// "<label> = 123.45 kB/sec" -> 123.45 (in the printed unit).
fn value_after_eq(line: &str) -> Option<(f64, String)> {
    let (_, v) = line.split_once('=')?;
    let (x, unit) = number_prefix(v)?;
    Some((x, unit.trim().to_string()))
}

fn parse_throughput(lines: &[&str]) -> Vec<Claim> {
    let mut file_size = None;
    let mut record_size = None;
    let mut claims: Vec<Claim> = Vec::new();
    for (n, l) in lines.iter().enumerate() {
        let t = l.trim();
        if let Some(rest) = t.strip_prefix("Each process writes a ") {
            // "Each process writes a 32768 kByte file in 1024 kByte records"
            let mut w = rest.split_whitespace();
            file_size = w
                .next()
                .and_then(|x| x.parse::<u64>().ok())
                .map(|k| k * 1024);
            let mut w = rest.split(" in ").nth(1).unwrap_or("").split_whitespace();
            record_size = w
                .next()
                .and_then(|x| x.parse::<u64>().ok())
                .map(|k| k * 1024);
            continue;
        }
        if let Some(rest) = t.strip_prefix("Children see throughput for") {
            let Some((label, _)) = rest.split_once('=') else {
                continue;
            };
            let label = label.trim();
            let (threads_txt, what) = label.split_once(char::is_whitespace).unwrap_or((label, ""));
            let Some((test, dir)) = throughput_test(what) else {
                continue;
            };
            let Some((v, unit)) = value_after_eq(t) else {
                continue;
            };
            let scale = if unit.starts_with("ops") { 1.0 } else { KIB };
            let threads = threads_txt.parse().unwrap_or(1);
            claims.push(Claim {
                program: "iozone".into(),
                test: test.into(),
                direction: dir,
                file_size,
                record_size,
                threads,
                claimed_bps: v * scale,
                basis: "children see (sum of per-process rates)".into(),
                printed: format!("{v:.2} {unit}"),
                line: n + 1,
                ..Default::default()
            });
            continue;
        }
        let Some(last) = claims.last_mut() else {
            continue;
        };
        let key = if t.starts_with("Parent sees throughput for") {
            "parent_sees_Bps"
        } else if t.starts_with("Min throughput per process") {
            "min_per_process_Bps"
        } else if t.starts_with("Max throughput per process") {
            "max_per_process_Bps"
        } else if t.starts_with("Avg throughput per process") {
            "avg_per_process_Bps"
        } else if t.starts_with("Min xfer") {
            "min_xfer_bytes"
        } else if t
            .to_ascii_lowercase()
            .starts_with("cpu utilization: wall time")
        {
            // "CPU Utilization: Wall time 0.008 CPU time 0.014 CPU utilization 176.32 %"
            let w: Vec<&str> = t.split_whitespace().collect();
            let after = |k: &str| -> Option<f64> {
                let p = w.windows(2).position(|p| p[0] == k && p[1] == "time")?;
                w.get(p + 2)?.parse().ok()
            };
            if let Some(x) = after("Wall") {
                last.extra.insert("wall_s".into(), x);
            }
            if let Some(x) = after("CPU") {
                last.extra.insert("cpu_s".into(), x);
            }
            if let Some(p) = w.iter().rposition(|x| *x == "%") {
                if let Some(x) = p.checked_sub(1).and_then(|q| w[q].parse::<f64>().ok()) {
                    last.extra.insert("cpu_pct".into(), x);
                }
            }
            continue;
        } else {
            continue;
        };
        if let Some((v, _)) = value_after_eq(t) {
            last.extra.insert(key.into(), v * KIB);
        }
        if key == "min_xfer_bytes" {
            if let (Some(fs), Some(&x)) = (last.file_size, last.extra.get(key)) {
                if x < fs as f64 {
                    last.flags.push("stonewalled".into());
                }
            }
        }
    }
    claims
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(name: &str) -> String {
        let p = format!("{}/tests/data/iozone/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
    }

    fn get<'a>(c: &'a [Claim], test: &str, fs_kb: u64, rs_kb: u64) -> &'a Claim {
        c.iter()
            .find(|c| {
                c.test == test
                    && c.file_size == Some(fs_kb * 1024)
                    && c.record_size == Some(rs_kb * 1024)
            })
            .unwrap_or_else(|| panic!("no claim {test} {fs_kb} {rs_kb}"))
    }

    #[test]
    fn table_with_blank_columns() {
        let c = parse(&data("table-i0-i1-i2.txt"));
        assert_eq!(c.len(), 12, "six tests x two record sizes");
        assert_eq!(c[0].filename.as_deref(), Some("/var/tmp/ioz.8xwQ/t.tmp"));
        assert_eq!(get(&c, "write", 65536, 4).claimed_bps, 883556.0 * 1024.0);
        assert_eq!(
            get(&c, "randwrite", 65536, 1024).claimed_bps,
            10618045.0 * 1024.0
        );
        assert_eq!(
            get(&c, "reread", 65536, 1024).claimed_bps,
            14147956.0 * 1024.0
        );
        assert!(c.iter().all(|c| c.test != "bkwdread"));
        let order: Vec<&str> = c.iter().take(6).map(|c| c.test.as_str()).collect();
        assert_eq!(
            order,
            [
                "write",
                "rewrite",
                "read",
                "reread",
                "randread",
                "randwrite"
            ]
        );
    }

    #[test]
    fn values_that_touch_are_split_by_position() {
        let c = parse(&data("table-all-tests-E.txt"));
        assert_eq!(c.len(), 17);
        assert_eq!(get(&c, "pwrite", 16384, 64).claimed_bps, 7363217.0 * 1024.0);
        assert_eq!(
            get(&c, "repwrite", 16384, 64).claimed_bps,
            6196634.0 * 1024.0
        );
        assert_eq!(get(&c, "pread", 16384, 64).claimed_bps, 10376187.0 * 1024.0);
        assert_eq!(
            get(&c, "repread", 16384, 64).claimed_bps,
            10700958.0 * 1024.0
        );
        assert_eq!(
            get(&c, "recrewrite", 16384, 64).claimed_bps,
            27812578.0 * 1024.0
        );
        assert_eq!(
            get(&c, "strideread", 16384, 64).claimed_bps,
            10429731.0 * 1024.0
        );
        assert_eq!(
            get(&c, "freread", 16384, 64).claimed_bps,
            10272267.0 * 1024.0
        );
    }

    #[test]
    fn preamble_settings_become_flags() {
        let c = parse(&data("table-fsync-close-e-c.txt"));
        assert_eq!(c.len(), 4);
        assert!(c[0].flags.contains(&"fsync_in_timing".to_string()));
        assert!(c[0].flags.contains(&"close_in_timing".to_string()));
        let d = parse(&data("table-odirect-I.txt"));
        assert_eq!(d.len(), 6);
        assert!(d.iter().all(|c| c.flags == ["direct"]));
        assert_eq!(
            get(&d, "randread", 32768, 16).claimed_bps,
            236385.0 * 1024.0
        );
    }

    #[test]
    fn auto_mode_table_wins_over_excel() {
        let text = data("auto-excel-R.txt");
        let c = parse(&text);
        // 1m..8m files: 9 + 10 + 11 + 12 rows of record sizes, 13 tests each.
        assert_eq!(c.len(), (9 + 10 + 11 + 12) * 13);
        assert_eq!(get(&c, "write", 2048, 2048).claimed_bps, 306960.0 * 1024.0);
        assert_eq!(
            get(&c, "freread", 8192, 8192).claimed_bps,
            17207351.0 * 1024.0
        );
        // The Excel section alone gives the same figures.
        let lines: Vec<&str> = text.lines().collect();
        let e = parse_excel(&lines, false);
        assert_eq!(e.len(), c.len());
        for x in &e {
            let t = get(
                &c,
                &x.test,
                x.file_size.unwrap() / 1024,
                x.record_size.unwrap() / 1024,
            );
            assert_eq!(t.claimed_bps, x.claimed_bps, "{} {:?}", x.test, x.file_size);
        }
    }

    #[test]
    fn throughput_mode() {
        let c = parse(&data("throughput-t2.txt"));
        assert_eq!(c.len(), 4);
        let w = &c[0];
        assert_eq!(w.test, "write");
        assert_eq!(w.threads, 2);
        assert_eq!(w.file_size, Some(32 << 20));
        assert_eq!(w.record_size, Some(1 << 20));
        assert_eq!(w.claimed_bps, 9565591.0 * 1024.0);
        assert_eq!(w.extra["parent_sees_Bps"], 1740413.14 * 1024.0);
        assert_eq!(w.extra["min_xfer_bytes"], 25600.0 * 1024.0);
        assert_eq!(w.extra["cpu_pct"], 176.32);
        assert!(w.flags.contains(&"stonewalled".to_string()));
        assert_eq!(
            w.filename.as_deref(),
            Some("/var/tmp/ioz.8xwQ/a.tmp:/var/tmp/ioz.8xwQ/b.tmp")
        );
        let names: Vec<&str> = c.iter().map(|c| c.test.as_str()).collect();
        assert_eq!(names, ["write", "rewrite", "read", "reread"]);
        assert_eq!(c[3].claimed_bps, 21381013.0 * 1024.0);
        assert_eq!(c[3].extra["max_per_process_Bps"], 11994178.0 * 1024.0);
    }
}
