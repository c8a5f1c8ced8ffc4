//! `candor merge r0.json r1.json ... -o all.json`: the results of one plan, run by one
//! candor per node under any launcher (Slurm, a Kubernetes Indexed Job, pdsh), merged into
//! one result by the MPI merge itself (`candor_mpi::merge::merge`): each file is a rank,
//! its machine a node; a repetition's aggregate is every file's bytes over the span from the
//! earliest start to the latest end, latency histograms add up, the spread between ranks is
//! kept. Times are put on one line by each file's clock record: the monotonic clock when
//! every file comes from one boot of one machine (exact, as MPI ranks on one node), else the
//! machines' wall clocks (as close as their NTP keeps them). Files of different plans are
//! refused in one sentence, and so are runs that did not run at the same time (no instant
//! when every run was running, on that clock), whose aggregate would count the gaps between
//! them — unless `--allow-disjoint`, which merges them and says so in the result. What the
//! aggregate means is said in one line every time.

use crate::exit::{CmdResult, Failure, OK};
use crate::output::save_atomic;
use candor_model::{MpiInfo, RunDoc, TestResult};
use candor_mpi::merge::{merge, RankPart};
use candor_report::compare::Key;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
#[command(
    after_help = "Exit codes: 0 merged and saved; 1 the merged result could not be written; 2 bad \
input (not a candor result, results of different plans, a run without its clock record, fewer \
than two files, runs that did not run at the same time without --allow-disjoint)."
)]
pub struct Args {
    /// Results of the same plan, one per node (or process), written by `candor run -o`.
    #[arg(value_name = "RESULT.json", required = true, num_args = 1..)]
    pub results: Vec<PathBuf>,
    /// Where to save the merged result.
    #[arg(short = 'o', long = "output", value_name = "FILE", required = true)]
    pub output: PathBuf,
    /// Merge runs that did not run at the same time (one after another): each aggregate then
    /// counts the gaps between them, and the merged result says so.
    #[arg(long)]
    pub allow_disjoint: bool,
    /// Read result files of at most SIZE (e.g. 512m, 2g): a larger file is refused unread.
    #[arg(long, value_name = "SIZE", default_value = "256m", value_parser = crate::exit::refusing(crate::commands::report::parse_max_input))]
    pub max_input_size: u64,
}

/// The name a sentence gives a file.
fn name(p: &std::path::Path) -> String {
    p.display().to_string()
}

/// Options that may differ between the runs of one plan.
const PER_RUN: &[&str] = &["format"];

/// Why `b` is not a run of `a`'s plan, if it is not.
fn other_plan(a: &RunDoc, b: &RunDoc) -> Option<String> {
    // Every option as saved, the unknown ones too, by the name the file gives it.
    let (ao, bo) = (a.options.entries(), b.options.entries());
    for (k, v) in &ao {
        if PER_RUN.contains(&k.as_str()) {
            continue;
        }
        let w = bo.get(k).unwrap_or(&serde_json::Value::Null);
        if v != w {
            return Some(format!("option {k} is {v} there and {w} here"));
        }
    }
    if let Some(k) = bo
        .keys()
        .find(|k| !PER_RUN.contains(&k.as_str()) && !ao.contains_key(*k))
    {
        return Some(format!("option {k} is set here only"));
    }
    if a.targets.len() != b.targets.len() {
        return Some(format!(
            "{} target(s) there, {} here",
            a.targets.len(),
            b.targets.len()
        ));
    }
    if a.results.len() != b.results.len() {
        return Some(format!(
            "{} result(s) there, {} here",
            a.results.len(),
            b.results.len()
        ));
    }
    for (x, y) in a.results.iter().zip(&b.results) {
        let (kx, ky) = (Key::of(x), Key::of(y));
        if kx != ky {
            return Some(format!("{} there where {} here", kx.label(), ky.label()));
        }
    }
    None
}

pub fn run(args: Args) -> CmdResult {
    if args.results.len() < 2 {
        return Err(Failure::usage(
            "nothing to merge: give the result files of two or more nodes",
        ));
    }
    crate::paths::check_output_file("-o", &args.output, "merged result")?;
    let mut docs = Vec::new();
    for p in &args.results {
        let doc = candor_model::load_result_within(p, args.max_input_size)
            .map_err(|e| Failure::usage(e.to_string()))?;
        if doc.mpi.is_some() {
            return Err(Failure::usage(format!(
                "{} is already the merged result of an MPI run: merge the ranks' own results (candor run --mpi --rank-output DIR)",
                name(p)
            )));
        }
        if doc.kind != "run" {
            return Err(Failure::usage(format!(
                "{} is a result of candor {}, not of candor run: only runs merge",
                name(p),
                doc.kind
            )));
        }
        if doc.options.run().is_some_and(|o| o.duration.is_some()) {
            return Err(Failure::usage(format!(
                "{} is a --duration soak, whose tests come from different rounds: merge runs without --duration",
                name(p)
            )));
        }
        if doc.clock.is_none() {
            return Err(Failure::usage(format!(
                "{} has no clock record (it was written by an older candor), so its repetitions cannot be put on the others' time line: run it again with this candor",
                name(p)
            )));
        }
        docs.push(doc);
    }
    for (p, d) in args.results.iter().zip(&docs).skip(1) {
        if let Some(why) = other_plan(&docs[0], d) {
            return Err(Failure::usage(format!(
                "{} ran another plan than {} ({why}): merge only results of one plan",
                name(p),
                name(&args.results[0])
            )));
        }
    }
    let names: Vec<String> = args.results.iter().map(|p| name(p)).collect();
    let time = timing(&docs, &names);
    if time.disjoint.is_some() && !args.allow_disjoint {
        return Err(Failure::usage(time.refusal()));
    }
    let mut merged = merge_docs(docs);
    if let Some(w) = time.warning() {
        merged.warnings.insert(0, w);
    }
    let text = serde_json::to_string_pretty(&merged)
        .map_err(|e| Failure::failed(format!("cannot serialize the merged result: {e}")))?;
    save_atomic(&args.output, &(text + "\n")).map_err(|e| {
        Failure::failed(format!(
            "cannot write {}: {e}; choose a writable path with -o",
            args.output.display()
        ))
    })?;
    eprintln!("{}", time.meaning());
    eprintln!("wrote {}", args.output.display());
    Ok(OK)
}

/// When the runs ran, on the clock the merge puts them on.
struct Timing {
    runs: usize,
    /// Which clock ("one machine's monotonic clock").
    clock: &'static str,
    /// When no instant had every run running: each run's span, "r0.json ran 0.0-1.9 s, ...",
    /// in seconds from the earliest run's start.
    disjoint: Option<String>,
    /// Of the merged repetitions' spans (earliest start to latest end), the share during
    /// which every run was in that repetition; None without a repetition to measure.
    together: Option<f64>,
}

impl Timing {
    fn refusal(&self) -> String {
        format!(
            "these runs did not run at the same time ({} on {}): their aggregate would be all \
             their bytes over the whole span, gaps included, lower than any of them did alone; \
             run them together, or give --allow-disjoint to merge them anyway",
            self.disjoint.as_deref().unwrap_or_default(),
            self.clock
        )
    }

    /// The sentence saved in the merged result's warnings when the runs did not overlap.
    fn warning(&self) -> Option<String> {
        let spans = self.disjoint.as_ref()?;
        Some(format!(
            "These {} runs did not run at the same time (merged with --allow-disjoint): {spans} \
             on {}. Each test's aggregate is all their bytes over the span from the earliest \
             start to the latest end of each repetition, gaps included, so it is lower than \
             what they would do together; each run's own figure is kept under ranks \
             (sum_of_rank_bps adds them up).",
            self.runs, self.clock
        ))
    }

    /// What the aggregate means, in one line.
    fn meaning(&self) -> String {
        let n = self.runs;
        let all = if n == 2 {
            "both".to_string()
        } else {
            format!("all {n}")
        };
        match &self.disjoint {
            Some(spans) => format!(
                "merged {n} runs that did not run at the same time (--allow-disjoint): each \
                 test's aggregate is the bytes of {all} runs over the span from the earliest \
                 start to the latest end of each repetition, gaps between the runs included, so \
                 it is not what they do together; each run's own figure is kept under ranks \
                 (sum_of_rank_bps adds them up) ({spans} on {})",
                self.clock
            ),
            None => {
                let mut l = format!(
                    "merged {n} runs that ran at the same time: each test's aggregate is the \
                     bytes of {all} runs over the span from the earliest start to the latest \
                     end of each repetition, on {}",
                    self.clock
                );
                if let Some(t) = self.together {
                    l.push_str(&format!(
                        "; {all} were running during {:.0}% of those spans",
                        t * 100.0
                    ));
                }
                l
            }
        }
    }
}

/// Places every run and every repetition on the merge's clock: whether the runs overlapped
/// at all (each from its clock's start to its last timed repetition's end), and for how much
/// of the merged repetitions' spans every run was in it.
fn timing(docs: &[RunDoc], names: &[String]) -> Timing {
    let (t0s, clock) = origins(docs);
    let base = t0s.iter().copied().min().unwrap_or(0);
    let t0: Vec<f64> = t0s.iter().map(|t| (t - base) as f64 / 1e9).collect();
    let reps = |d: &RunDoc| {
        d.results
            .iter()
            .flat_map(|r| r.reps.iter())
            .map(|p| (p.started_s, p.started_s + p.seconds))
            .collect::<Vec<_>>()
    };
    // Each run's span; a run without a timed repetition has none and decides nothing.
    let spans: Vec<Option<(f64, f64)>> = docs
        .iter()
        .zip(&t0)
        .map(|(d, t)| {
            let ends = reps(d);
            let end = ends.iter().map(|e| e.1).fold(f64::NAN, f64::max);
            end.is_finite().then_some((*t, t + end))
        })
        .collect();
    let known: Vec<(f64, f64)> = spans.iter().flatten().copied().collect();
    let latest_start = known.iter().map(|s| s.0).fold(f64::NEG_INFINITY, f64::max);
    let earliest_end = known.iter().map(|s| s.1).fold(f64::INFINITY, f64::min);
    // Milliseconds where the whole is short enough for them to matter.
    let digits = if known.iter().all(|s| s.1 < 10.0) {
        3
    } else {
        1
    };
    let disjoint = (known.len() >= 2 && latest_start >= earliest_end).then(|| {
        names
            .iter()
            .zip(&spans)
            .filter_map(|(n, s)| s.map(|(a, b)| format!("{n} ran {a:.digits$}-{b:.digits$} s")))
            .collect::<Vec<_>>()
            .join(", ")
    });
    let (mut common, mut whole) = (0.0, 0.0);
    for i in 0..docs[0].results.len() {
        for j in 0..docs[0].results[i].reps.len() {
            let Some(ivs) = docs
                .iter()
                .zip(&t0)
                .map(|(d, t)| {
                    let p = d.results.get(i)?.reps.get(j)?;
                    Some((t + p.started_s, t + p.started_s + p.seconds))
                })
                .collect::<Option<Vec<_>>>()
            else {
                continue;
            };
            let first = ivs.iter().map(|v| v.0).fold(f64::INFINITY, f64::min);
            let last = ivs.iter().map(|v| v.1).fold(f64::NEG_INFINITY, f64::max);
            let late = ivs.iter().map(|v| v.0).fold(f64::NEG_INFINITY, f64::max);
            let early = ivs.iter().map(|v| v.1).fold(f64::INFINITY, f64::min);
            whole += last - first;
            common += (early - late).max(0.0);
        }
    }
    Timing {
        runs: docs.len(),
        clock,
        disjoint,
        together: (whole > 0.0).then(|| common / whole),
    }
}

/// One clock for every file: the monotonic one when all share a boot, else the wall clock.
fn origins(docs: &[RunDoc]) -> (Vec<u64>, &'static str) {
    let clocks: Vec<_> = docs.iter().filter_map(|d| d.clock.as_ref()).collect();
    let one_boot =
        !clocks[0].boot_id.is_empty() && clocks.iter().all(|c| c.boot_id == clocks[0].boot_id);
    if one_boot {
        (
            clocks.iter().map(|c| c.monotonic_ns).collect(),
            "one machine's monotonic clock",
        )
    } else {
        (
            clocks.iter().map(|c| c.realtime_ns).collect(),
            "the machines' wall clocks (as close as their time synchronisation keeps them)",
        )
    }
}

/// Merges files already checked to be of one plan: file i is rank i, its host its node.
pub fn merge_docs(docs: Vec<RunDoc>) -> RunDoc {
    let (t0s, clock) = origins(&docs);
    let mut node_names: Vec<String> = Vec::new();
    let rank_nodes: Vec<u32> = docs
        .iter()
        .map(|d| {
            let h = &d.host.hostname;
            match node_names.iter().position(|n| n == h) {
                Some(i) => i as u32,
                None => {
                    node_names.push(h.clone());
                    (node_names.len() - 1) as u32
                }
            }
        })
        .collect();
    let n = docs[0].results.len();
    let results: Vec<TestResult> = (0..n)
        .map(|i| {
            let parts: Vec<RankPart> = docs
                .iter()
                .enumerate()
                .map(|(rank, d)| RankPart {
                    rank: rank as u32,
                    node: rank_nodes[rank],
                    t0_ns: t0s[rank],
                    offset_ns: 0,
                    result: d.results[i].clone(),
                })
                .collect();
            merge(&parts, &node_names)
        })
        .collect();
    let mut per_node = vec![0u32; node_names.len()];
    for &r in &rank_nodes {
        per_node[r as usize] += 1;
    }
    let mut out = docs[0].clone();
    out.started_at = docs
        .iter()
        .map(|d| d.started_at.clone())
        .min()
        .unwrap_or_default();
    out.finished_at = docs.iter().filter_map(|d| d.finished_at.clone()).max();
    out.complete = docs.iter().all(|d| d.complete);
    out.stop_reason = docs.iter().find_map(|d| d.stop_reason.clone());
    out.mpi = Some(MpiInfo {
        ranks: docs.len() as u32,
        nodes: node_names.len() as u32,
        ranks_per_node: per_node,
        node_names,
        shared_file: false,
        reorder: false,
        library: format!(
            "{} of {} runs, times on {clock}",
            candor_model::MERGE_LIBRARY,
            docs.len()
        ),
        rank_nodes,
        clock_offsets_ns: vec![0; docs.len()],
        clock_uncertainty_ns: Vec::new(),
    });
    let mut warnings: Vec<String> = Vec::new();
    for d in &docs {
        for w in &d.warnings {
            if !warnings.contains(w) {
                warnings.push(w.clone());
            }
        }
    }
    for r in &results {
        for w in super::run::rank_warnings(r) {
            if !warnings.contains(&w) {
                warnings.push(w);
            }
        }
    }
    out.warnings = warnings;
    out.results = results;
    out
}
