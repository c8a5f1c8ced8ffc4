//! iozone's table of single-stream tests (`-i`, `-a`): every test function prints its figures
//! with its own printf width (`%8ld`, `%9lld`, ` %10ld`...), right-aligned, and a test left
//! out prints a blank of another width (`test_output[]`); a figure wider than its width
//! pushes the rest of the row right and touches its neighbours. The widths changed between
//! releases ([`FIELDS`] holds each figure's width in every layout, [`LAYOUTS`] the releases
//! of each, both read from iozone's source). A row is read as a sequence of such fields:
//! every way of reading it is tried, the one with the fewest overflowing figures (then the
//! nearest to the header's words) is kept, and a row that has no reading, or two that
//! differ, is reported as unread.

use super::{per_test, Claim, Direction, Parsed, PROGRAM};

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

/// How iozone prints each figure of `GROUPS`, from its source, in the 64-bit Linux build
/// (`%lld`): the spaces always printed before it, then its printf width in each of the
/// three layouts ([`Layout::widths`]): 3.308 to 3.427, `%8lld` and `%9lld` mixed
/// (" %8lld" for record rewrite and stride read); 3.428 to 3.489, `%9lld` nearly
/// everywhere; 3.506 and later, `%10ld` everywhere (" %10ld" for record rewrite and stride
/// read).
const FIELDS: [&[(usize, [usize; 3])]; 13] = [
    &[(0, [8, 9, 10]), (0, [8, 9, 10])],
    &[(0, [9, 9, 10]), (0, [9, 9, 10])],
    &[(0, [8, 9, 10]), (0, [8, 9, 10])],
    &[(0, [8, 9, 10])],
    &[(1, [8, 9, 10])],
    &[(1, [8, 9, 10])],
    &[(0, [9, 9, 10]), (0, [9, 9, 10])],
    &[(0, [8, 9, 10]), (0, [9, 9, 10])],
    &[],
    &[(0, [8, 9, 10]), (0, [9, 9, 10])],
    &[(0, [8, 8, 10]), (0, [9, 9, 10])],
    &[(0, [9, 9, 10]), (0, [10, 10, 10])],
    &[(0, [10, 10, 10]), (0, [9, 9, 10])],
];

/// One release range's table layout, from iozone's source: which of the widths of `FIELDS`
/// it prints, and the width of the blank printed instead of each group's test when it was
/// left out.
struct Layout {
    /// Releases 3.N printing it, by N (both ends seen in iozone's source).
    revisions: (u32, u32),
    /// The index of its widths in `FIELDS`.
    widths: usize,
    blanks: &'static [usize],
}

/// `test_output[]` up to 3.433 and from 3.434 on.
const BLANKS_OLD: &[usize] = &[16, 18, 16, 8, 8, 8, 18, 16, 0, 17, 19, 19, 19];
const BLANKS_NEW: &[usize] = &[18, 18, 18, 9, 10, 10, 18, 17, 0, 18, 18, 18, 18];

const LAYOUTS: &[Layout] = &[
    Layout::new((308, 427), 0, BLANKS_OLD),
    Layout::new((428, 433), 1, BLANKS_OLD),
    Layout::new((434, 489), 1, BLANKS_NEW),
    Layout::new((506, 508), 2, BLANKS_NEW),
];

impl Layout {
    const fn new(revisions: (u32, u32), widths: usize, blanks: &'static [usize]) -> Layout {
        Layout {
            revisions,
            widths,
            blanks,
        }
    }

    /// The layout as the row reader uses it.
    fn fields(&self) -> Widths {
        let fields = FIELDS
            .iter()
            .map(|g| g.iter().map(|&(lead, w)| (lead, w[self.widths])).collect())
            .collect();
        (fields, self.blanks.to_vec())
    }
}

/// N of "Version $Revision: 3.N $".
fn revision(lines: &[&str]) -> Option<u32> {
    let l = lines.iter().find(|l| l.contains("$Revision:"))?;
    let v = l.split("$Revision:").nth(1)?.trim();
    let v = v.strip_prefix("3.")?;
    v.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
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

/// The claims of every table in the output (one a test, file size and record size), and the
/// rows that could not be read.
pub(super) fn parse_table(lines: &[&str], ops: bool, out: &mut Parsed) {
    let rev = revision(lines);
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
        let mut candidates: Vec<Widths> =
            layouts_for(rev).into_iter().map(Layout::fields).collect();
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
                let claim = per_test(test, dir, kb, reclen, v, ops);
                out.claims.push(Claim {
                    // With -O, the figure as printed.
                    iops: if ops { Some(v) } else { claim.iops },
                    basis: "per test (iozone table)".into(),
                    printed: if ops {
                        format!("{printed} ops/s")
                    } else {
                        format!("{printed} kB/s")
                    },
                    line: r + 1,
                    ..claim
                });
            }
        }
        i = j;
    }
}
