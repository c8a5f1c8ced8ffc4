//! iozone's three ways of printing results:
//! - the table of single-stream tests (`-i`, `-a`): every test function prints its figures
//!   with its own printf width (`%8ld`, `%9lld`, ` %10ld`...), right-aligned, and a test
//!   left out prints a blank of another width (`test_output[]`); a figure wider than its
//!   width pushes the rest of the row right and touches its neighbours. The widths changed
//!   between releases ([`LAYOUTS`], read from iozone's source). A row is read as a sequence
//!   of such fields: every way of reading it is tried, the one with the fewest overflowing
//!   figures (then the nearest to the header's words) is kept, and a row that has no reading,
//!   or two that differ, is reported as unread;
//! - the `-R` "Excel" section: one block per test, rows of file size, columns of record size;
//! - throughput mode (`-t`): "Children see throughput for N initial writers = X kB/sec" and
//!   the figures after it.
//!
//! iozone's "kB" (older releases: "KB", "Kbytes") is 1024 bytes.

use super::{number_prefix, Claim, Direction, Parsed};

const KIB: f64 = 1024.0;
const PROGRAM: &str = "iozone";

/// The table's test columns in iozone's order: the header's word (the last word when the
/// header stacks two), candor's name, the direction.
type Col = (&'static str, &'static str, Direction);

/// iozone's test functions in the order it runs them (`func[]`), each with the columns it
/// prints. The mixed workload (`-i8`) prints no column.
const GROUPS: [&[Col]; 13] = [
    &[
        ("write", "write", Direction::Write),
        ("rewrite", "rewrite", Direction::Write),
    ],
    &[
        ("read", "read", Direction::Read),
        ("reread", "reread", Direction::Read),
    ],
    &[
        ("read", "randread", Direction::Read),
        ("write", "randwrite", Direction::Write),
    ],
    &[("read", "bkwdread", Direction::Read)],
    &[("rewrite", "recrewrite", Direction::Write)],
    &[("read", "strideread", Direction::Read)],
    &[
        ("fwrite", "fwrite", Direction::Write),
        ("frewrite", "frewrite", Direction::Write),
    ],
    &[
        ("fread", "fread", Direction::Read),
        ("freread", "freread", Direction::Read),
    ],
    &[],
    &[
        ("pwrite", "pwrite", Direction::Write),
        ("repwrite", "repwrite", Direction::Write),
    ],
    &[
        ("pread", "pread", Direction::Read),
        ("repread", "repread", Direction::Read),
    ],
    &[
        ("pwritev", "pwritev", Direction::Write),
        ("repwritev", "repwritev", Direction::Write),
    ],
    &[
        ("preadv", "preadv", Direction::Read),
        ("repreadv", "repreadv", Direction::Read),
    ],
];

/// One release range's table layout, from iozone's source: for every group of `GROUPS`, the
/// (spaces always printed before, printf width) of each figure, in the 64-bit Linux build
/// (`%lld`); and the width of the blank printed instead of a test that was left out.
struct Layout {
    /// Releases 3.N printing it, by N (both ends seen in iozone's source).
    revisions: (u32, u32),
    fields: [&'static [(usize, usize)]; 13],
    blanks: &'static [usize],
}

/// 3.308 to 3.427: `%8lld` and `%9lld` mixed, " %8lld" for record rewrite and stride read.
const FIELDS_8: [&[(usize, usize)]; 13] = [
    &[(0, 8), (0, 8)],
    &[(0, 9), (0, 9)],
    &[(0, 8), (0, 8)],
    &[(0, 8)],
    &[(1, 8)],
    &[(1, 8)],
    &[(0, 9), (0, 9)],
    &[(0, 8), (0, 9)],
    &[],
    &[(0, 8), (0, 9)],
    &[(0, 8), (0, 9)],
    &[(0, 9), (0, 10)],
    &[(0, 10), (0, 9)],
];
/// 3.428 to 3.489: `%9lld` nearly everywhere.
const FIELDS_9: [&[(usize, usize)]; 13] = [
    &[(0, 9), (0, 9)],
    &[(0, 9), (0, 9)],
    &[(0, 9), (0, 9)],
    &[(0, 9)],
    &[(1, 9)],
    &[(1, 9)],
    &[(0, 9), (0, 9)],
    &[(0, 9), (0, 9)],
    &[],
    &[(0, 9), (0, 9)],
    &[(0, 8), (0, 9)],
    &[(0, 9), (0, 10)],
    &[(0, 10), (0, 9)],
];
/// 3.506 and later: `%10ld` everywhere, " %10ld" for record rewrite and stride read.
const FIELDS_10: [&[(usize, usize)]; 13] = [
    &[(0, 10), (0, 10)],
    &[(0, 10), (0, 10)],
    &[(0, 10), (0, 10)],
    &[(0, 10)],
    &[(1, 10)],
    &[(1, 10)],
    &[(0, 10), (0, 10)],
    &[(0, 10), (0, 10)],
    &[],
    &[(0, 10), (0, 10)],
    &[(0, 10), (0, 10)],
    &[(0, 10), (0, 10)],
    &[(0, 10), (0, 10)],
];
/// `test_output[]` up to 3.433 and from 3.434 on.
const BLANKS_OLD: &[usize] = &[16, 18, 16, 8, 8, 8, 18, 16, 0, 17, 19, 19, 19];
const BLANKS_NEW: &[usize] = &[18, 18, 18, 9, 10, 10, 18, 17, 0, 18, 18, 18, 18];

const LAYOUTS: &[Layout] = &[
    Layout {
        revisions: (308, 427),
        fields: FIELDS_8,
        blanks: BLANKS_OLD,
    },
    Layout {
        revisions: (428, 433),
        fields: FIELDS_9,
        blanks: BLANKS_OLD,
    },
    Layout {
        revisions: (434, 489),
        fields: FIELDS_9,
        blanks: BLANKS_NEW,
    },
    Layout {
        revisions: (506, 508),
        fields: FIELDS_10,
        blanks: BLANKS_NEW,
    },
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
    ("Pwritev report", "pwritev", Direction::Write),
    ("Re-Pwritev report", "repwritev", Direction::Write),
    ("Preadv report", "preadv", Direction::Read),
    ("Re-Preadv report", "repreadv", Direction::Read),
];

/// All claims in an iozone output: the table (or, when there is none, the Excel section) and
/// throughput-mode figures. Settings printed in the preamble ("Include fsync in write
/// timing", "O_DIRECT feature enabled") are attached to every claim as flags.
pub fn parse(text: &str) -> Vec<Claim> {
    read(text).claims
}

/// As [`parse`], with the lines that looked like figures but could not be read.
pub fn read(text: &str) -> Parsed {
    let lines: Vec<&str> = text.lines().collect();
    let flags = preamble_flags(&lines);
    let ops = text.contains("Output is in operations per second");
    let mut out = Parsed::default();
    parse_table(&lines, ops, revision(&lines), &mut out);
    if out.claims.is_empty() && out.unread.is_empty() {
        parse_excel(&lines, ops, &mut out);
    }
    parse_throughput(&lines, &mut out);
    let files = test_files(&lines);
    for c in &mut out.claims {
        if c.filename.is_none() {
            c.filename = files.clone();
        }
        for f in &flags {
            if !c.flags.contains(f) {
                c.flags.push(f.clone());
            }
        }
    }
    out
}

/// N of "Version $Revision: 3.N $".
fn revision(lines: &[&str]) -> Option<u32> {
    let l = lines.iter().find(|l| l.contains("$Revision:"))?;
    let v = l.split("$Revision:").nth(1)?.trim();
    let v = v.strip_prefix("3.")?;
    v.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
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

/// The words of a line with the position one past their end.
fn words(s: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in s.char_indices().chain(std::iter::once((s.len(), ' '))) {
        match (c.is_whitespace(), start) {
            (false, None) => start = Some(i),
            (true, Some(st)) => {
                out.push((i, &s[st..i]));
                start = None;
            }
            _ => {}
        }
    }
    out
}

/// The table header: "kB  reclen  write  rewrite ..." (any case, any spacing). Gives the
/// number of test columns it names (a prefix of the columns of `GROUPS`, in order) and the
/// end of each word, or why it is not a header iozone prints.
fn header(l: &str) -> Option<Result<(usize, Vec<usize>), String>> {
    let w = words(l);
    let lower: Vec<String> = w.iter().map(|(_, x)| x.to_ascii_lowercase()).collect();
    if lower.len() < 2 || lower[0] != "kb" || lower[1] != "reclen" {
        return None;
    }
    let names: Vec<&str> = GROUPS.iter().flat_map(|g| g.iter().map(|c| c.0)).collect();
    let tests = &lower[2..];
    if tests.len() > names.len() || tests.iter().zip(&names).any(|(a, b)| a != b) {
        return Some(Err(format!(
            "the table header names columns iozone does not print in this order ({})",
            tests.join(" ")
        )));
    }
    Some(Ok((tests.len(), w[2..].iter().map(|(e, _)| *e).collect())))
}

/// One figure of a row: its column (index into the flattened `GROUPS`) and its span.
type Cell = (usize, usize, usize);

/// A layout as the row reader uses it: fields per group, blanks per group.
type Widths = (Vec<Vec<(usize, usize)>>, Vec<usize>);

/// A row read: file size in kB, record size in kB, its figures; or why it could not be.
type RowRead = Result<(u64, u64, Vec<Cell>), String>;

/// A way of reading a row: its cells, how many characters overflowed their widths, how far
/// the figures end from the header's words.
struct Reading {
    cells: Vec<Cell>,
    overflow: usize,
    drift: usize,
}

/// The widths derived from the header alone (for a release whose layout is not known):
/// each column ends where its header word ends.
fn header_layout(ends: &[usize], first: usize) -> Widths {
    let mut fields = Vec::new();
    let mut blanks = Vec::new();
    let mut col = 0;
    let mut at = first;
    for g in GROUPS.iter() {
        let mut f = Vec::new();
        let mut total = 0;
        for _ in g.iter() {
            let end = ends.get(col).copied().unwrap_or(at + 10);
            let w = end.saturating_sub(at).max(1);
            f.push((0, w));
            total += w;
            at = end.max(at + 1);
            col += 1;
        }
        fields.push(f);
        blanks.push(total);
    }
    (fields, blanks)
}

/// Every reading of one row under one layout.
struct RowReader<'a> {
    row: &'a [u8],
    widths: &'a Widths,
    /// Test columns the header names.
    ncols: usize,
    ends: &'a [usize],
    out: Vec<Reading>,
    /// States (byte, group, field) from which no reading was found, and the steps taken: a
    /// long run of digits can be cut many ways, and each state is explored once.
    dead: std::collections::HashSet<(usize, usize, usize)>,
    steps: usize,
}

const MAX_READINGS: usize = 512;
const MAX_STEPS: usize = 200_000;

impl RowReader<'_> {
    fn blank(&self, from: usize, to: usize) -> bool {
        to <= self.row.len() && self.row[from..to].iter().all(|&b| b == b' ')
    }

    fn field(&self, col: usize) -> (usize, usize) {
        let mut c = col;
        for f in &self.widths.0 {
            if c < f.len() {
                return f[c];
            }
            c -= f.len();
        }
        (0, 1)
    }

    /// Reads groups from `g` (whose first column is `col`) on, starting at byte `p`.
    fn groups(&mut self, p: usize, g: usize, col: usize, acc: &mut Vec<Cell>) {
        if self.out.len() >= MAX_READINGS {
            return;
        }
        if self.row[p..].iter().all(|b| b.is_ascii_whitespace()) {
            let overflow = acc
                .iter()
                .map(|&(c, s, e)| (e - s).saturating_sub(self.field(c).1))
                .sum();
            let drift = acc
                .iter()
                .map(|&(c, _, e)| self.ends.get(c).map_or(0, |h| h.abs_diff(e)))
                .sum();
            self.out.push(Reading {
                cells: acc.clone(),
                overflow,
                drift,
            });
            return;
        }
        if g >= GROUPS.len() || col + GROUPS[g].len() > self.ncols {
            return;
        }
        let n = GROUPS[g].len();
        if n == 0 {
            return self.groups(p, g + 1, col, acc);
        }
        // The test was left out: iozone printed its blank instead.
        if let Some(&b) = self.widths.1.get(g) {
            if self.blank(p, p + b) {
                self.groups(p + b, g + 1, col + n, acc);
            }
        }
        self.cells(p, g, 0, col, acc);
    }

    /// Reads field `k` of group `g` at byte `p`.
    fn cells(&mut self, p: usize, g: usize, k: usize, col: usize, acc: &mut Vec<Cell>) {
        self.steps += 1;
        if self.steps > MAX_STEPS || self.dead.contains(&(p, g, k)) {
            return;
        }
        let before = self.out.len();
        self.cells_from(p, g, k, col, acc);
        if self.out.len() == before {
            self.dead.insert((p, g, k));
        }
    }

    fn cells_from(&mut self, p: usize, g: usize, k: usize, col: usize, acc: &mut Vec<Cell>) {
        if k == GROUPS[g].len() {
            return self.groups(p, g + 1, col + k, acc);
        }
        let Some(&(lead, w)) = self.widths.0.get(g).and_then(|f| f.get(k)) else {
            return;
        };
        if !self.blank(p, p + lead) {
            return;
        }
        let row = self.row;
        let r = p + lead;
        let digits_at = |s: usize| {
            row[s.min(row.len())..]
                .iter()
                .take_while(|b| b.is_ascii_digit())
                .count()
        };
        let mut spans = Vec::new();
        let digits = digits_at(r);
        if digits == 0 {
            // Right-aligned: spaces, then digits up to the width.
            let spaces = row[r.min(row.len())..]
                .iter()
                .take_while(|&&b| b == b' ')
                .count();
            if spaces < w && digits_at(r + spaces) >= w - spaces {
                spans.push((r + spaces, r + w));
            }
        } else {
            // Starts with a digit: the figure fills its width or overflows it.
            for d in w..=digits {
                spans.push((r, r + d));
            }
        }
        for (s, e) in spans {
            // No leading zeros but for "0" itself.
            if row[s] == b'0' && e - s > 1 {
                continue;
            }
            acc.push((col + k, s, e));
            self.cells(e, g, k + 1, col, acc);
            acc.pop();
        }
    }
}

/// A row's one reading under a layout (file size in kB, record size in kB, cells), or why
/// there is none.
fn read_row(row: &str, widths: &Widths, ncols: usize, ends: &[usize]) -> RowRead {
    if !row.is_ascii() {
        return Err("the row holds characters iozone does not print".into());
    }
    // "%16lld%8lld": the file size and the record size, right-aligned; a record size can
    // touch the first figure, so both are read by position.
    let sized = |from: usize, to: usize| -> Option<u64> {
        let f = row.get(from..to)?;
        let t = f.trim_start_matches(' ');
        (!t.is_empty() && t.len() < f.len()).then_some(())?;
        t.parse().ok()
    };
    let (kb, rec, start) = match (sized(0, 16), sized(16, 24)) {
        (Some(kb), Some(rec)) => (kb, rec, 24),
        _ => {
            let w = words(row);
            match (
                w.first().and_then(|(_, x)| x.parse::<u64>().ok()),
                w.get(1).and_then(|(_, x)| x.parse::<u64>().ok()),
            ) {
                (Some(kb), Some(rec)) => (kb, rec, w[1].0),
                _ => return Err("the row does not start with a file size and a record size".into()),
            }
        }
    };
    let mut r = RowReader {
        row: row.as_bytes(),
        widths,
        ncols,
        ends,
        out: Vec::new(),
        dead: Default::default(),
        steps: 0,
    };
    r.groups(start, 0, 0, &mut Vec::new());
    if r.steps > MAX_STEPS {
        return Err("its figures run together too long to be split into columns".into());
    }
    let mut readings = r.out;
    if readings.is_empty() {
        return Err(
            "its figures do not fit the columns iozone prints (neither by their widths nor by the blanks of tests left out)"
                .into(),
        );
    }
    readings.sort_by_key(|x| (x.overflow, x.drift));
    let best = &readings[0];
    let tied = readings
        .iter()
        .skip(1)
        .take_while(|x| (x.overflow, x.drift) == (best.overflow, best.drift))
        .any(|x| x.cells != best.cells);
    if tied {
        return Err(
            "figures run into each other in a way that splits into columns more than one way"
                .into(),
        );
    }
    Ok((kb, rec, best.cells.clone()))
}

/// The layouts to try for a release: its own first, then the others by how near their
/// releases are.
fn layouts_for(rev: Option<u32>) -> Vec<&'static Layout> {
    let mut v: Vec<&Layout> = LAYOUTS.iter().collect();
    let dist = |l: &Layout| match rev {
        Some(r) if r < l.revisions.0 => l.revisions.0 - r,
        Some(r) if r > l.revisions.1 => r - l.revisions.1,
        _ => 0,
    };
    v.sort_by_key(|l| dist(l));
    v
}

fn parse_table(lines: &[&str], ops: bool, rev: Option<u32>, out: &mut Parsed) {
    let cols: Vec<Col> = GROUPS.iter().flat_map(|g| g.iter().copied()).collect();
    let mut i = 0;
    while i < lines.len() {
        let Some(h) = header(lines[i]) else {
            i += 1;
            continue;
        };
        let (ncols, ends) = match h {
            Ok(x) => x,
            Err(why) => {
                out.unread(PROGRAM, i + 1, lines[i], why);
                i += 1;
                continue;
            }
        };
        // The rows: every line up to the end of the table that starts with a number.
        let mut rows = Vec::new();
        let mut j = i + 1;
        while j < lines.len() {
            let t = lines[j].trim();
            if t.starts_with("iozone test complete")
                || t.starts_with("Excel output is below")
                || header(lines[j]).is_some()
            {
                break;
            }
            if t.starts_with(|c: char| c.is_ascii_digit()) {
                rows.push(j);
            }
            j += 1;
        }
        let reclen_end = lines[i]
            .to_ascii_lowercase()
            .find("reclen")
            .map_or(24, |p| p + 6);
        let mut candidates: Vec<Widths> = layouts_for(rev)
            .into_iter()
            .map(|l| {
                (
                    l.fields.iter().map(|f| f.to_vec()).collect(),
                    l.blanks.to_vec(),
                )
            })
            .collect();
        candidates.push(header_layout(&ends, reclen_end));
        // The first layout under which every row has one reading; failing that, the
        // release's own, row by row.
        let read_all = |c: &Widths| -> Vec<RowRead> {
            rows.iter()
                .map(|&r| read_row(lines[r], c, ncols, &ends))
                .collect()
        };
        let results = candidates
            .iter()
            .map(read_all)
            .find(|r| r.iter().all(Result::is_ok))
            .unwrap_or_else(|| read_all(&candidates[0]));
        for (&r, res) in rows.iter().zip(results) {
            let (kb, reclen, cells) = match res {
                Ok(x) => x,
                Err(why) => {
                    out.unread(PROGRAM, r + 1, lines[r], why);
                    continue;
                }
            };
            for (col, s, e) in cells {
                let (_, test, dir) = cols[col];
                let printed = &lines[r][s..e];
                let Ok(v) = printed.parse::<f64>() else {
                    continue;
                };
                let rs = reclen * 1024;
                let bps = if ops { v * rs as f64 } else { v * KIB };
                out.claims.push(Claim {
                    program: PROGRAM.into(),
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
                    line: r + 1,
                    ..Default::default()
                });
            }
        }
        i = j;
    }
}

fn parse_excel(lines: &[&str], ops: bool, out: &mut Parsed) {
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
            let values: Vec<&str> = it.collect();
            if values.len() > reclens.len() {
                out.unread(
                    PROGRAM,
                    j + 1,
                    row,
                    format!(
                        "{} figures under {} record sizes",
                        values.len(),
                        reclens.len()
                    ),
                );
                j += 1;
                continue;
            }
            if let Some(bad) = values
                .iter()
                .find(|w| !w.parse::<f64>().is_ok_and(|v| v.is_finite() && v >= 0.0))
            {
                out.unread(PROGRAM, j + 1, row, format!("\"{bad}\" is not a figure"));
                j += 1;
                continue;
            }
            for (w, &rk) in values.iter().zip(&reclens) {
                let Ok(v) = w.parse::<f64>() else {
                    continue;
                };
                let rs = rk * 1024;
                let bps = if ops { v * rs as f64 } else { v * KIB };
                out.claims.push(Claim {
                    program: PROGRAM.into(),
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

fn parse_throughput(lines: &[&str], out: &mut Parsed) {
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
                out.unread(PROGRAM, n + 1, l, "no \"=\" before the figure".into());
                continue;
            };
            let label = label.trim();
            let (threads_txt, what) = label.split_once(char::is_whitespace).unwrap_or((label, ""));
            let Some((test, dir)) = throughput_test(what) else {
                out.unread(
                    PROGRAM,
                    n + 1,
                    l,
                    format!("\"{}\" is not a test iozone names", what.trim()),
                );
                continue;
            };
            let (Some((v, unit)), Ok(threads)) = (value_after_eq(t), threads_txt.parse::<u32>())
            else {
                out.unread(
                    PROGRAM,
                    n + 1,
                    l,
                    "no process count or no figure after \"=\"".into(),
                );
                continue;
            };
            let scale = if unit.starts_with("ops") { 1.0 } else { KIB };
            claims.push(Claim {
                program: PROGRAM.into(),
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
        let Some((v, unit)) = value_after_eq(t) else {
            out.unread(PROGRAM, n + 1, l, "no figure after \"=\"".into());
            continue;
        };
        if unit.starts_with("ops") {
            // In operations per second (-O): the figure as printed.
            last.extra.insert(key.replace("_Bps", "_ops"), v);
        } else {
            last.extra.insert(key.into(), v * KIB);
        }
        if key == "min_xfer_bytes" && !unit.starts_with("ops") {
            if let (Some(fs), Some(&x)) = (last.file_size, last.extra.get(key)) {
                if x < fs as f64 {
                    last.flags.push("stonewalled".into());
                }
            }
        }
    }
    out.claims.extend(claims);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(name: &str) -> String {
        let p = format!(
            "{}/tests/data/iozone/3.487/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
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
        let mut e = Parsed::default();
        parse_excel(&lines, false, &mut e);
        let e = e.claims;
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
