//! `candor compare`: the same tests of several runs side by side. A side is one target of one
//! result file (a file with three targets gives three sides). Results are matched on
//! everything that changes what is measured (test, sizes, threads, depth, engine, O_DIRECT,
//! O_SYNC, flush and close in the timing); each figure gets its ratio to the first side and
//! whether the difference is statistically significant (Welch's t-test on the repetitions, or
//! confidence intervals that do not overlap when the test cannot run). Results that have no
//! counterpart are named, with the option that differs from the closest one.

use crate::grid::{Align, Grid};
use crate::study::{self, StudySide};
use crate::units;
use crate::view;
use candor_model::{RunDoc, TargetInfo, TestResult};

/// Significance level of the Welch test.
pub const ALPHA: f64 = 0.05;

/// One side of a comparison.
#[derive(Clone, Debug)]
pub struct Side {
    /// Short name used in column headers: "A", "B", ...
    pub letter: String,
    /// Where it came from, as other sentences name it: "ext4.json" or "run.json /mnt/xfs".
    pub source: String,
    /// The result file ("ext4.json"), or "this run" for the targets of the run being reported.
    pub file: String,
    /// The target directory.
    pub path: String,
    pub target: Option<TargetInfo>,
    /// The machine the side ran on (named in the side's line when sides differ in it).
    pub host: String,
    pub mpi_ranks: Option<u32>,
    pub results: Vec<TestResult>,
}

/// The options that must be equal for two results to be compared.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Key {
    pub test: String,
    pub file_size: u64,
    pub record_size: u64,
    pub threads: u32,
    pub iodepth: u32,
    pub engine: String,
    pub direct: bool,
    pub osync: bool,
    pub fsync_in_timing: bool,
    pub close_in_timing: bool,
}

impl Key {
    pub fn of(r: &TestResult) -> Key {
        Key {
            test: r.test.clone(),
            file_size: r.file_size,
            record_size: r.record_size,
            threads: r.threads.max(1),
            iodepth: r.iodepth.max(1),
            engine: r.engine.clone(),
            direct: r.direct,
            osync: r.osync,
            fsync_in_timing: r.fsync_in_timing,
            close_in_timing: r.close_in_timing,
        }
    }

    /// The fields that differ from another key, named as the options are.
    pub fn differences(&self, o: &Key) -> Vec<String> {
        let mut d = Vec::new();
        let mut f = |cond: bool, s: String| {
            if cond {
                d.push(s)
            }
        };
        f(
            self.test != o.test,
            format!("test {} vs {}", self.test, o.test),
        );
        f(
            self.file_size != o.file_size,
            format!(
                "file size {} vs {}",
                units::size(self.file_size),
                units::size(o.file_size)
            ),
        );
        f(
            self.record_size != o.record_size,
            format!(
                "record size {} vs {}",
                units::size(self.record_size),
                units::size(o.record_size)
            ),
        );
        f(
            self.threads != o.threads,
            format!("threads {} vs {}", self.threads, o.threads),
        );
        f(
            self.iodepth != o.iodepth,
            format!("iodepth {} vs {}", self.iodepth, o.iodepth),
        );
        f(
            self.engine != o.engine,
            format!("engine {} vs {}", self.engine, o.engine),
        );
        // A flag is named as the option that sets it: "buffered vs --direct".
        let flag = |a: bool, b: bool, off: &str, on: &str| {
            let w = |x: bool| if x { on } else { off };
            format!("{} vs {}", w(a), w(b))
        };
        f(
            self.direct != o.direct,
            flag(self.direct, o.direct, "buffered", "--direct"),
        );
        f(
            self.osync != o.osync,
            flag(self.osync, o.osync, "without --osync", "--osync"),
        );
        f(
            self.fsync_in_timing != o.fsync_in_timing,
            flag(
                self.fsync_in_timing,
                o.fsync_in_timing,
                "--no-fsync-in-timing",
                "fsync in the timing",
            ),
        );
        f(
            self.close_in_timing != o.close_in_timing,
            flag(
                self.close_in_timing,
                o.close_in_timing,
                "close outside the timing",
                "--close-in-timing",
            ),
        );
        d
    }

    /// "randread 64m/4k x1 qd32 psync direct".
    pub fn label(&self) -> String {
        let mut s = format!(
            "{} {}{}",
            self.test,
            view::sizes(self.file_size, self.record_size),
            view::counts(self.threads, self.iodepth)
        );
        if !self.engine.is_empty() {
            s.push_str(&format!(" {}", self.engine));
        }
        if self.direct {
            s.push_str(" direct");
        }
        if self.osync {
            s.push_str(" osync");
        }
        s
    }
}

/// Whether a side's figure differs from the first side's beyond chance.
#[derive(Clone, Debug, PartialEq)]
pub enum Significance {
    /// The first side itself.
    Baseline,
    /// Welch's t-test on the repetitions.
    Welch { p: f64, significant: bool },
    /// Confidence intervals compared (the t-test needs spread on at least one side).
    Intervals { overlap: bool },
    /// Fewer than two repetitions on a side: nothing can be said.
    TooFewRuns,
}

impl Significance {
    pub fn is_significant(&self) -> bool {
        matches!(
            self,
            Significance::Welch {
                significant: true,
                ..
            } | Significance::Intervals { overlap: false }
        )
    }

    /// "yes (p=0.002)", "no (p=0.41)", "yes (CIs apart)", "n/a (1 run)".
    pub fn cell(&self) -> String {
        match self {
            Significance::Baseline => String::new(),
            Significance::Welch { p, significant } => format!(
                "{} ({})",
                if *significant { "yes" } else { "no" },
                fmt_p(*p)
            ),
            Significance::Intervals { overlap: false } => "yes (CIs apart)".into(),
            Significance::Intervals { overlap: true } => "no (CIs overlap)".into(),
            Significance::TooFewRuns => "n/a (1 run)".into(),
        }
    }
}

/// "p<0.001", "p=0.023".
fn fmt_p(p: f64) -> String {
    if p < 0.001 {
        "p<0.001".into()
    } else {
        format!("p={p:.3}")
    }
}

/// Decides the significance of `b` against the baseline `a`.
pub fn significance(a: &TestResult, b: &TestResult) -> Significance {
    let (sa, sb) = (&a.throughput, &b.throughput);
    if sa.n < 2 || sb.n < 2 || sa.samples.len() < 2 || sb.samples.len() < 2 {
        return Significance::TooFewRuns;
    }
    match candor_stats::welch_t_test(&sa.samples, &sb.samples) {
        Some(w) if w.p.is_finite() => Significance::Welch {
            p: w.p,
            significant: w.p < ALPHA,
        },
        _ => Significance::Intervals {
            overlap: sa.ci95[0] <= sb.ci95[1] && sb.ci95[0] <= sa.ci95[1],
        },
    }
}

/// One side's figure in a row.
#[derive(Clone, Debug)]
pub struct Cell {
    pub result: TestResult,
    /// This side's mean over the first side's; None for the first side or when it has no figure.
    pub ratio: Option<f64>,
    pub significance: Significance,
}

/// One matched test: a cell per side (None where that side lacks it).
#[derive(Clone, Debug)]
pub struct Row {
    pub key: Key,
    pub cells: Vec<Option<Cell>>,
}

/// A result that has no counterpart on another side, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Unmatched {
    pub side: String,
    pub key: Key,
    pub missing_on: String,
    /// The closest result there and what differs from it, when there is one of the same test.
    pub closest: Option<(Key, Vec<String>)>,
}

impl Unmatched {
    pub fn sentence(&self) -> String {
        let mut s = format!(
            "{} in {} has no counterpart in {}",
            self.key.label(),
            self.side,
            self.missing_on
        );
        match &self.closest {
            Some((k, d)) => s.push_str(&format!(
                " (closest there: {}; differs in {})",
                k.label(),
                d.join(", ")
            )),
            None => s.push_str(&format!(" (no {} there at all)", self.key.test)),
        }
        s
    }
}

/// A whole comparison.
#[derive(Clone, Debug)]
pub struct Comparison {
    pub sides: Vec<Side>,
    pub rows: Vec<Row>,
    pub unmatched: Vec<Unmatched>,
}

/// Splits loaded files into sides: one per target of each file, lettered A, B, C...
pub fn sides<D: std::borrow::Borrow<RunDoc>>(files: &[(String, D)]) -> Vec<Side> {
    let mut out = Vec::new();
    for (name, doc) in files {
        let doc: &RunDoc = doc.borrow();
        let groups = view::groups(doc);
        let several = groups.len() > 1;
        for g in groups {
            if g.results.is_empty() {
                continue;
            }
            out.push(Side {
                letter: String::new(),
                source: match (several, name.as_str()) {
                    (true, "this run") => g.path.clone(),
                    (true, _) => format!("{name} {}", g.path),
                    (false, _) => name.clone(),
                },
                file: name.clone(),
                path: g.path.clone(),
                target: g.info.cloned(),
                host: doc.host.hostname.clone(),
                mpi_ranks: doc.mpi.as_ref().map(|m| m.ranks),
                results: g.results.into_iter().cloned().collect(),
            });
        }
    }
    for (i, s) in out.iter_mut().enumerate() {
        s.letter = letter(i);
    }
    out
}

fn letter(i: usize) -> String {
    let a = b'A' + (i % 26) as u8;
    if i < 26 {
        (a as char).to_string()
    } else {
        format!("{}{}", a as char, i / 26)
    }
}

/// Matches the sides' results. Rows follow the first side's order, then keys only later sides
/// have. Failed results take part (their cell says so) but have no ratio.
/// How many results found on one side only get the closest result of the other side named.
const MAX_CLOSEST: usize = 50;

pub fn compare(sides: Vec<Side>) -> Comparison {
    // Every key in the order it first came, and each side's first result at each key, found
    // through indexes: sides of tens of thousands of results compare in one pass.
    let mut keys: Vec<Key> = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    let mut first: Vec<std::collections::BTreeMap<Key, usize>> = Vec::new();
    for s in &sides {
        let mut at = std::collections::BTreeMap::new();
        for (i, r) in s.results.iter().enumerate() {
            let k = Key::of(r);
            if seen.insert(k.clone()) {
                keys.push(k.clone());
            }
            at.entry(k).or_insert(i);
        }
        first.push(at);
    }
    let find = |si: usize, k: &Key| first[si].get(k).map(|&i| sides[si].results[i].clone());
    let mut rows = Vec::new();
    let mut unmatched = Vec::new();
    for k in &keys {
        let found: Vec<Option<TestResult>> = (0..sides.len()).map(|si| find(si, k)).collect();
        let present = found.iter().filter(|f| f.is_some()).count();
        if present < 2 {
            // A result on one side only: name it against every other side.
            if let Some(i) = found.iter().position(|f| f.is_some()) {
                for (j, other) in sides.iter().enumerate() {
                    if j == i {
                        continue;
                    }
                    // The closest result is looked for among the first MAX_CLOSEST unmatched
                    // ones: each look is a pass over the other side.
                    let closest = (unmatched.len() < MAX_CLOSEST)
                        .then(|| {
                            other
                                .results
                                .iter()
                                .filter(|r| r.test == k.test)
                                .map(|r| {
                                    let ok = Key::of(r);
                                    let d = k.differences(&ok);
                                    (d.len(), ok, d)
                                })
                                .min_by_key(|(n, ok, _)| (*n, ok.clone()))
                                .map(|(_, ok, d)| (ok, d))
                        })
                        .flatten();
                    unmatched.push(Unmatched {
                        side: format!("{} ({})", sides[i].letter, sides[i].source),
                        key: k.clone(),
                        missing_on: format!("{} ({})", other.letter, other.source),
                        closest,
                    });
                }
            }
            continue;
        }
        let base = found.first().cloned().flatten();
        let cells = found
            .into_iter()
            .enumerate()
            .map(|(i, f)| {
                f.map(|r| {
                    let (ratio, significance) = match (&base, i) {
                        (_, 0) => (None, Significance::Baseline),
                        (Some(b), _) if !view::failed(b) && !view::failed(&r) => (
                            (b.throughput.mean > 0.0)
                                .then(|| r.throughput.mean / b.throughput.mean),
                            significance(b, &r),
                        ),
                        _ => (None, Significance::TooFewRuns),
                    };
                    Cell {
                        result: r,
                        ratio,
                        significance,
                    }
                })
            })
            .collect();
        rows.push(Row {
            key: k.clone(),
            cells,
        });
    }
    Comparison {
        sides,
        rows,
        unmatched,
    }
}

/// Output formats of `candor compare`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompareFormat {
    Table,
    Markdown,
    Csv,
    Json,
    /// A Markdown summary for a CI job's page, the gate's outcome first (`gate::github`).
    Github,
}

impl CompareFormat {
    pub const ALL: &'static [(&'static str, CompareFormat)] = &[
        ("table", CompareFormat::Table),
        ("markdown", CompareFormat::Markdown),
        ("csv", CompareFormat::Csv),
        ("json", CompareFormat::Json),
        ("github", CompareFormat::Github),
    ];

    /// The names, for messages ("table, markdown, csv, json, github").
    pub fn names() -> String {
        Self::ALL
            .iter()
            .map(|(n, _)| *n)
            .collect::<Vec<_>>()
            .join(", ")
    }

    pub fn parse(s: &str) -> Option<CompareFormat> {
        Self::ALL.iter().find(|(n, _)| *n == s).map(|(_, f)| *f)
    }

    /// `candor compare --format NAME`: the format, or the sentence every `--format` gives.
    pub fn from_arg(name: &str) -> Result<CompareFormat, String> {
        Self::parse(name).ok_or_else(|| crate::not_a_format(name, &Self::names()))
    }
}

pub fn render(c: &Comparison, format: CompareFormat) -> String {
    render_gated(c, format, &crate::gate::Gate::default())
}

/// `render`, with the gate's thresholds for the formats that report its outcome.
pub fn render_gated(c: &Comparison, format: CompareFormat, gate: &crate::gate::Gate) -> String {
    let out = match format {
        CompareFormat::Github => crate::gate::github(c, gate),
        CompareFormat::Table => text(c, false),
        CompareFormat::Markdown => text(c, true),
        CompareFormat::Csv => csv(c),
        CompareFormat::Json => return json(c),
    };
    // No control character from a file acts on the terminal (`escape::terminal`).
    crate::escape::terminal(&out).into_owned()
}

/// The side in one line, each thing said once: "A  /mnt/lab/ext4 in run.json: ext4
/// (rw,relatime) on loop0: loop device backed by ...", or without " in FILE" for the targets
/// of the run being reported.
pub fn side_line(s: &Side) -> String {
    let mut l = format!("{}  {}", s.letter, side_name(s));
    if let Some(t) = &s.target {
        l.push_str(&format!(": {}", view::target_line(t)));
    }
    if let Some(n) = s.mpi_ranks {
        l.push_str(&format!(", MPI {n} ranks"));
    }
    l
}

/// "/mnt/lab/ext4 in run.json", "/mnt/lab/ext4" (this run), or the file alone when the
/// target's path is unknown.
pub fn side_name(s: &Side) -> String {
    match (s.path.is_empty(), s.file.as_str()) {
        (true, _) => s.source.clone(),
        (false, "this run" | "") => s.path.clone(),
        (false, f) => format!("{} in {f}", s.path),
    }
}

/// True when any side's result in any row has a measured write amplification.
fn any_amplification(c: &Comparison) -> bool {
    c.rows
        .iter()
        .flat_map(|r| r.cells.iter().flatten())
        .any(|cell| {
            cell.result
                .witness
                .as_ref()
                .is_some_and(|w| w.write_amplification.is_some())
        })
}

/// A result's write amplification as a cell ("2.95x"), empty when not measured.
pub fn amplification_cell(r: &TestResult) -> String {
    r.witness
        .as_ref()
        .and_then(|w| w.write_amplification)
        .map(units::ratio)
        .unwrap_or_default()
}

/// The side-by-side grid: per side its MB/s with CI, its write amplification (when any result
/// has one), the witness's verdict and, after the first side, ratio and significance.
pub fn side_grid(c: &Comparison) -> Grid {
    let wa = any_amplification(c);
    let mut cols: Vec<(String, Align)> = vec![
        ("test".into(), Align::Left),
        ("file".into(), Align::Right),
        ("rec".into(), Align::Right),
        ("thr".into(), Align::Right),
        ("QD".into(), Align::Right),
    ];
    for (i, s) in c.sides.iter().enumerate() {
        cols.push((
            format!("{} {}", s.letter, units::rate_label()),
            Align::Right,
        ));
        if wa {
            cols.push((format!("{} WA", s.letter), Align::Right));
        }
        cols.push((format!("{} verdict", s.letter), Align::Left));
        if i > 0 {
            cols.push((format!("{}/A", s.letter), Align::Right));
            cols.push(("significant".into(), Align::Left));
        }
    }
    let refs: Vec<(&str, Align)> = cols.iter().map(|(h, a)| (h.as_str(), *a)).collect();
    let mut g = Grid::new(&refs);
    for row in &c.rows {
        let k = &row.key;
        let mut cells = vec![
            k.test.clone(),
            units::size(k.file_size),
            units::size(k.record_size),
            k.threads.to_string(),
            k.iodepth.to_string(),
        ];
        for (i, cell) in row.cells.iter().enumerate() {
            match cell {
                Some(cell) => {
                    let r = &cell.result;
                    let failed = view::failed(r);
                    cells.push(if failed {
                        "failed".to_string()
                    } else {
                        units::mb_s_ci(&r.throughput)
                    });
                    if wa {
                        cells.push(amplification_cell(r));
                    }
                    cells.push(if failed {
                        "-".into()
                    } else {
                        view::verdict_cell(r)
                    });
                    if i > 0 {
                        cells.push(cell.ratio.map(units::ratio).unwrap_or("-".into()));
                        cells.push(cell.significance.cell());
                    }
                }
                None => {
                    cells.push("-".into());
                    if wa {
                        cells.push(String::new());
                    }
                    cells.push(String::new());
                    if i > 0 {
                        cells.push(String::new());
                        cells.push(String::new());
                    }
                }
            }
        }
        g.push(cells);
    }
    g
}

/// The sides as the study table takes them; a filesystem on two sides is told apart by the
/// sides' letters.
fn study_sides(c: &Comparison) -> Vec<StudySide<'_>> {
    c.sides
        .iter()
        .map(|s| {
            let fs = study::filesystem(s.target.as_ref(), &s.letter);
            let same_fs = c
                .sides
                .iter()
                .filter(|o| {
                    o.target.as_ref().map(|t| &t.fs_type) == s.target.as_ref().map(|t| &t.fs_type)
                })
                .count();
            StudySide {
                device: s.target.as_ref().and_then(|t| t.device.as_ref()),
                filesystem: if same_fs > 1 {
                    format!("{fs} ({})", s.letter)
                } else {
                    fs
                },
                results: s.results.iter().filter(|r| !view::failed(r)).collect(),
            }
        })
        .collect()
}

/// The study table over all sides (per device, filesystem and file size); `blank_repeats` as
/// in `study::grid`.
pub fn study_grid(c: &Comparison, blank_repeats: bool) -> Grid {
    study::grid(&study_sides(c), blank_repeats)
}

/// The devices of the study table, each named once: (name, what it is).
pub fn study_devices(c: &Comparison) -> Vec<(String, String)> {
    study::device_lines(&study_sides(c))
}

fn text(c: &Comparison, markdown: bool) -> String {
    let mut out = String::new();
    let h = if markdown { "## " } else { "" };
    if markdown {
        out.push_str("# candor compare\n\n");
    }
    let grid = |g: &Grid| {
        if markdown {
            g.to_markdown()
        } else {
            g.to_text()
        }
    };
    out.push_str(&format!("{h}Sides\n"));
    if markdown {
        out.push('\n');
    }
    let hosts_differ = c.sides.iter().any(|s| s.host != c.sides[0].host);
    for s in &c.sides {
        let mut line = side_line(s);
        if hosts_differ && !s.host.is_empty() {
            line.push_str(&format!(" (host {})", s.host));
        }
        if markdown {
            out.push_str(&format!("- {}\n", crate::escape::md(&line)));
        } else {
            out.push_str(&format!("  {line}\n"));
        }
    }
    out.push('\n');
    if c.rows.is_empty() {
        out.push_str("No test ran with the same options on two sides: nothing to compare.\n");
    } else {
        out.push_str(&format!(
            "{h}Side by side (throughput; ratio to A; Welch's t-test at {}%)\n",
            (ALPHA * 100.0) as u32
        ));
        if markdown {
            out.push('\n');
        }
        out.push_str(&grid(&side_grid(c)));
        if let Some(s) = range_sentence(c) {
            out.push_str(&if markdown {
                format!("\n{s}\n")
            } else {
                format!("  {s}\n")
            });
        }
    }
    if !c.unmatched.is_empty() {
        out.push_str(&format!("\n{h}Not compared\n"));
        if markdown {
            out.push('\n');
        }
        for u in &c.unmatched {
            if markdown {
                out.push_str(&format!("- {}.\n", crate::escape::md(&u.sentence())));
            } else {
                out.push_str(&format!("  {}.\n", u.sentence()));
            }
        }
    }
    out.push_str(&format!("\n{h}Per device and filesystem\n"));
    if markdown {
        out.push('\n');
    }
    out.push_str(&format!("{}\n", study::legend()));
    if markdown {
        out.push('\n');
    }
    let devices = study_devices(c);
    if !devices.is_empty() {
        out.push_str("Devices:\n");
        if markdown {
            out.push('\n');
        }
        for (n, what) in &devices {
            if markdown {
                out.push_str(&format!(
                    "- {}: {}\n",
                    crate::escape::code(n),
                    crate::escape::md(what)
                ));
            } else {
                out.push_str(&format!("  {n}: {what}\n"));
            }
        }
        out.push('\n');
    }
    out.push_str(&grid(&study_grid(c, !markdown)));
    out
}

/// What a min-max in the side-by-side grid is, when one is shown (`units::range_sentence`).
pub fn range_sentence(c: &Comparison) -> Option<String> {
    units::range_sentence(
        c.rows
            .iter()
            .flat_map(|r| r.cells.iter().flatten())
            .filter(|cell| !view::failed(&cell.result))
            .map(|cell| &cell.result.throughput),
    )
}

fn csv(c: &Comparison) -> String {
    let mut out = String::from(
        "test,file_size,record_size,threads,iodepth,engine,direct,side,source,fs_type,throughput_mean,throughput_ci95_low,throughput_ci95_high,n,ratio,p_value,significant,verdict,write_amplification\n",
    );
    for row in &c.rows {
        for (side, cell) in c.sides.iter().zip(&row.cells) {
            let Some(cell) = cell else { continue };
            let r = &cell.result;
            let (p, sig) = match &cell.significance {
                Significance::Baseline => (String::new(), String::new()),
                Significance::Welch { p, significant } => (format!("{p}"), significant.to_string()),
                Significance::Intervals { overlap } => (String::new(), (!overlap).to_string()),
                Significance::TooFewRuns => (String::new(), String::new()),
            };
            let fields = [
                row.key.test.clone(),
                row.key.file_size.to_string(),
                row.key.record_size.to_string(),
                row.key.threads.to_string(),
                row.key.iodepth.to_string(),
                row.key.engine.clone(),
                row.key.direct.to_string(),
                side.letter.clone(),
                side.source.clone(),
                side.target
                    .as_ref()
                    .map(|t| t.fs_type.clone())
                    .unwrap_or_default(),
                format!("{}", r.throughput.mean),
                format!("{}", r.throughput.ci95[0]),
                format!("{}", r.throughput.ci95[1]),
                r.throughput.n.to_string(),
                cell.ratio.map(|x| format!("{x}")).unwrap_or_default(),
                p,
                sig,
                r.witness
                    .as_ref()
                    .map(|w| w.verdict.to_string())
                    .unwrap_or_default(),
                r.witness
                    .as_ref()
                    .and_then(|w| w.write_amplification)
                    .map(|x| format!("{x}"))
                    .unwrap_or_default(),
            ];
            let q: Vec<String> = fields.iter().map(|f| crate::csv::quote(f)).collect();
            out.push_str(&q.join(","));
            out.push('\n');
        }
    }
    out
}

fn json(c: &Comparison) -> String {
    use serde_json::json;
    let sides: Vec<_> = c
        .sides
        .iter()
        .map(|s| {
            json!({
                "side": s.letter,
                "source": s.source,
                "file": s.file,
                "path": s.path,
                "target": s.target,
                "mpi_ranks": s.mpi_ranks,
            })
        })
        .collect();
    let rows: Vec<_> = c
        .rows
        .iter()
        .map(|row| {
            let cells: Vec<_> = row
                .cells
                .iter()
                .zip(&c.sides)
                .map(|(cell, s)| match cell {
                    None => json!({"side": s.letter, "present": false}),
                    Some(cell) => {
                        let (p, sig) = match &cell.significance {
                            Significance::Welch { p, significant } => {
                                (Some(*p), Some(*significant))
                            }
                            Significance::Intervals { overlap } => (None, Some(!overlap)),
                            _ => (None, None),
                        };
                        json!({
                            "side": s.letter,
                            "present": true,
                            "throughput": cell.result.throughput,
                            "verdict": cell.result.witness.as_ref().map(|w| &w.verdict),
                            "write_amplification": cell.result.witness.as_ref().and_then(|w| w.write_amplification),
                            "ratio": cell.ratio,
                            "p_value": p,
                            "significant": sig,
                            "method": match &cell.significance {
                                Significance::Baseline => "baseline",
                                Significance::Welch { .. } => "welch",
                                Significance::Intervals { .. } => "ci95",
                                Significance::TooFewRuns => "too few runs",
                            },
                        })
                    }
                })
                .collect();
            json!({
                "test": row.key.test,
                "file_size": row.key.file_size,
                "record_size": row.key.record_size,
                "threads": row.key.threads,
                "iodepth": row.key.iodepth,
                "engine": row.key.engine,
                "direct": row.key.direct,
                "osync": row.key.osync,
                "fsync_in_timing": row.key.fsync_in_timing,
                "close_in_timing": row.key.close_in_timing,
                "sides": cells,
            })
        })
        .collect();
    let unmatched: Vec<String> = c.unmatched.iter().map(|u| u.sentence()).collect();
    let v = json!({"sides": sides, "rows": rows, "not_compared": unmatched});
    serde_json::to_string_pretty(&v).unwrap_or_default() + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;
    use candor_model::Summary;

    fn result(test: &str, rec: u64, samples: &[f64]) -> TestResult {
        TestResult {
            target: "/t".into(),
            test: test.into(),
            engine: "psync".into(),
            file_size: 1 << 26,
            record_size: rec,
            threads: 1,
            iodepth: 1,
            status: candor_model::Status::Ok,
            throughput: candor_stats::summarize(samples),
            ..Default::default()
        }
    }

    fn side(name: &str, results: Vec<TestResult>) -> Side {
        Side {
            letter: String::new(),
            source: name.into(),
            file: name.into(),
            path: "/t".into(),
            target: None,
            host: String::new(),
            mpi_ranks: None,
            results,
        }
    }

    fn lettered(mut v: Vec<Side>) -> Vec<Side> {
        for (i, s) in v.iter_mut().enumerate() {
            s.letter = letter(i);
        }
        v
    }

    #[test]
    fn same_tests_are_matched_with_ratio_and_welch() {
        let a = side("a.json", vec![result("read", 4096, &[100e6, 102e6, 98e6])]);
        let b = side("b.json", vec![result("read", 4096, &[200e6, 205e6, 195e6])]);
        let c = compare(lettered(vec![a, b]));
        assert_eq!(c.rows.len(), 1);
        assert!(c.unmatched.is_empty());
        let cell = c.rows[0].cells[1].as_ref().expect("B has the test");
        assert!((cell.ratio.unwrap_or(0.0) - 2.0).abs() < 1e-9);
        match cell.significance {
            Significance::Welch { p, significant } => assert!(significant && p < 0.001, "{p}"),
            ref s => panic!("expected Welch, got {s:?}"),
        }
        assert_eq!(
            c.rows[0].cells[0].as_ref().map(|c| &c.significance),
            Some(&Significance::Baseline)
        );
    }

    #[test]
    fn noise_is_not_called_a_difference() {
        let a = side("a", vec![result("read", 4096, &[100e6, 110e6, 90e6])]);
        let b = side("b", vec![result("read", 4096, &[104e6, 96e6, 108e6])]);
        let c = compare(lettered(vec![a, b]));
        let s = &c.rows[0].cells[1].as_ref().expect("cell").significance;
        assert!(!s.is_significant(), "{s:?}");
        assert!(s.cell().starts_with("no (p="), "{}", s.cell());
    }

    #[test]
    fn without_spread_intervals_decide_and_one_run_says_nothing() {
        let mut a = result("read", 4096, &[100e6, 100e6]);
        let mut b = result("read", 4096, &[120e6, 120e6]);
        a.throughput.ci95 = [100e6, 100e6];
        b.throughput.ci95 = [120e6, 120e6];
        assert_eq!(
            significance(&a, &b),
            Significance::Intervals { overlap: false }
        );
        let one = TestResult {
            throughput: Summary {
                mean: 1.0,
                n: 1,
                samples: vec![1.0],
                ..Default::default()
            },
            ..a.clone()
        };
        assert_eq!(significance(&one, &b), Significance::TooFewRuns);
        assert_eq!(Significance::TooFewRuns.cell(), "n/a (1 run)");
    }

    #[test]
    fn two_noisy_repetitions_show_min_max_and_the_repetitions_an_interval_needs() {
        let a = side("a.json", vec![result("read", 4096, &[600e6, 1400e6])]);
        let b = side("b.json", vec![result("read", 4096, &[900e6, 1100e6])]);
        let c = compare(lettered(vec![a, b]));
        let text = render(&c, CompareFormat::Table);
        assert!(text.contains("1000 (600-1400)"), "{text}");
        assert!(!text.contains("1000 ±"), "{text}");
        assert!(
            text.contains("the interval needs 4 repetitions (--repeat 4)"),
            "{text}"
        );
        // The chart draws what the table shows: the whisker spans min to max.
        let html = crate::html::compare_page(&c);
        assert!(
            html.contains(
                "A · read 64m/4k psync: 1000 (slowest and fastest repetition 600 to 1400)"
            ),
            "{html}"
        );
    }

    #[test]
    fn results_without_a_counterpart_are_named_with_what_differs() {
        let a = side(
            "a.json",
            vec![
                result("read", 4096, &[1e8, 1e8]),
                result("write", 4096, &[1e8, 1e8]),
            ],
        );
        let b = side("b.json", vec![result("read", 8192, &[1e8, 1e8])]);
        let c = compare(lettered(vec![a, b]));
        assert!(c.rows.is_empty(), "nothing is matched by approximation");
        let read = c
            .unmatched
            .iter()
            .find(|u| u.key.test == "read" && u.side.starts_with('A'))
            .expect("A's read is named");
        assert_eq!(
            read.sentence(),
            "read 64m/4k psync in A (a.json) has no counterpart in B (b.json) (closest there: read 64m/8k psync; differs in record size 4k vs 8k)"
        );
        let write = c
            .unmatched
            .iter()
            .find(|u| u.key.test == "write")
            .expect("write is named");
        assert!(
            write.sentence().ends_with("(no write there at all)"),
            "{}",
            write.sentence()
        );
    }

    #[test]
    fn a_file_with_several_targets_gives_one_side_per_target() {
        let mut doc = RunDoc::default();
        for t in ["/a", "/b"] {
            let mut r = result("read", 4096, &[1e8, 1e8]);
            r.target = t.into();
            doc.results.push(r);
        }
        let sides = sides(&[("run.json".to_string(), doc)]);
        assert_eq!(sides.len(), 2);
        assert_eq!(sides[0].letter, "A");
        assert_eq!(sides[1].source, "run.json /b");
        // Each side is said once: its path and the file it came from.
        assert_eq!(side_line(&sides[1]), "B  /b in run.json");
        let mine = super::sides(&[("this run".to_string(), doc_of(&sides))]);
        assert_eq!(side_line(&mine[0]), "A  /a");
    }

    fn doc_of(sides: &[Side]) -> RunDoc {
        RunDoc {
            results: sides.iter().flat_map(|s| s.results.clone()).collect(),
            ..Default::default()
        }
    }
}
