//! `candor compare`: the same tests of several runs side by side. A side is one target of one
//! result file (a file with three targets gives three sides). Results are matched on
//! everything that changes what is measured (test, sizes, threads, depth, engine, O_DIRECT,
//! O_SYNC, flush and close in the timing); each figure gets its ratio to the first side and
//! whether the difference is statistically significant (Welch's t-test on the repetitions, or
//! confidence intervals that do not overlap when the test cannot run). Results that have no
//! counterpart are named, with the option that differs from the closest one.
//!
//! This module matches the sides' results; `significance` judges each difference, `render`
//! writes the comparison out.

mod render;
mod significance;

pub use render::{
    amplification_cell, range_sentence, render, render_gated, side_grid, side_line, side_name,
    study_devices, study_grid, CompareFormat,
};
pub use significance::{significance, Significance, ALPHA};

use crate::units;
use crate::view;
use candor_model::{RunDoc, TargetInfo, TestResult};

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

#[cfg(test)]
mod tests {
    use super::fixtures::{lettered, result, side};
    use super::*;

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

/// Results and sides as the tests of a comparison (here and in `gate`) make them.
#[cfg(test)]
pub(crate) mod fixtures {
    use super::*;

    /// A result of `test` on a 64 MiB file in records of `rec`, with these repetitions.
    pub(crate) fn result(test: &str, rec: u64, samples: &[f64]) -> TestResult {
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

    /// A side of these results, from the file `name`, not yet lettered.
    pub(crate) fn side(name: &str, results: Vec<TestResult>) -> Side {
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

    /// The sides lettered A, B, C... as `sides` letters them.
    pub(crate) fn lettered(mut v: Vec<Side>) -> Vec<Side> {
        for (i, s) in v.iter_mut().enumerate() {
            s.letter = letter(i);
        }
        v
    }
}
