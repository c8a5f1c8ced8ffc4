//! `candor merge`: results of one plan run by one candor per node (here two processes on one
//! machine, started together as a launcher would) merged into one result, and results that
//! cannot be merged refused in one sentence. The equality with an MPI run of the same plan is
//! in `mpi.rs` (it needs the mpi feature).

mod common;

use common::{candor, text};
use std::path::{Path, PathBuf};

/// Long enough (about a second of timed I/O per run here) that two runs started at once
/// overlap whatever each one's set-up takes: a run's span starts at its clock record.
const PLAN: &[&str] = &[
    "--tests",
    "write,read",
    "--file-size",
    "64m",
    "--record-size",
    "64k",
    "--repeat",
    "3",
    "--quiet",
    "--format",
    "csv",
];

/// `candor run ROOT/nodeI PLAN EXTRA -o ROOT/rI.json`, its directory made; the command and
/// the result's path.
fn node_run(root: &Path, i: usize, extra: &[&str]) -> (std::process::Command, PathBuf) {
    let dir = root.join(format!("node{i}"));
    std::fs::create_dir(&dir).expect("mkdir");
    let out = root.join(format!("r{i}.json"));
    let mut cmd = candor();
    cmd.arg("run")
        .arg(&dir)
        .args(PLAN)
        .args(extra)
        .arg("-o")
        .arg(&out);
    (cmd, out)
}

/// Starts one run per directory at once and waits for them: the results' paths.
fn runs_together(root: &Path, n: usize, extra: &[&[&str]]) -> Vec<PathBuf> {
    let mut children = Vec::new();
    let mut outs = Vec::new();
    for i in 0..n {
        let (mut cmd, out) = node_run(root, i, extra.get(i).copied().unwrap_or(&[]));
        let child = cmd
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("candor runs");
        children.push(child);
        outs.push(out);
    }
    for c in children {
        let o = c.wait_with_output().expect("candor finishes");
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    }
    outs
}

fn merge(files: &[&Path], out: &Path) -> std::process::Output {
    merge_with(files, out, &[])
}

fn merge_with(files: &[&Path], out: &Path, extra: &[&str]) -> std::process::Output {
    candor()
        .arg("merge")
        .args(files)
        .arg("-o")
        .arg(out)
        .args(extra)
        .output()
        .expect("candor merge runs")
}

/// Runs the plan once per directory, each run after the previous one ended.
fn runs_in_turn(root: &Path, n: usize) -> Vec<PathBuf> {
    (0..n)
        .map(|i| {
            let (mut cmd, out) = node_run(root, i, &[]);
            let o = cmd.output().expect("candor runs");
            assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
            out
        })
        .collect()
}

#[test]
fn two_runs_of_one_plan_merge_into_their_aggregate() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let files = runs_together(dir.path(), 2, &[]);
    let out = dir.path().join("all.json");
    let o = merge(&[&files[0], &files[1]], &out);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let parts: Vec<_> = files
        .iter()
        .map(|f| candor_model::load_result(f).expect("a part loads"))
        .collect();
    for p in &parts {
        let c = p.clock.as_ref().expect("every run records its clock");
        assert!(c.monotonic_ns > 0 && c.realtime_ns > 1_600_000_000 * 1_000_000_000);
    }
    let all = candor_model::load_result(&out).expect("the merged result loads");
    let m = all.mpi.as_ref().expect("ranks are named");
    assert_eq!((m.ranks, m.nodes), (2, 1), "two runs on one machine");
    assert!(m.library.contains("monotonic"), "{}", m.library);
    assert_eq!(all.results.len(), 2);
    for (k, r) in all.results.iter().enumerate() {
        assert_eq!(r.reps.len(), 3);
        for (i, rep) in r.reps.iter().enumerate() {
            // Both runs' bytes, over the span from the earliest start to the latest end.
            let a = &parts[0].results[k].reps[i];
            let b = &parts[1].results[k].reps[i];
            assert_eq!(rep.bytes, a.bytes + b.bytes);
            assert_eq!(rep.ops, a.ops + b.ops);
            let t0 = |p: &candor_model::RunDoc| p.clock.as_ref().unwrap().monotonic_ns as f64 / 1e9;
            let start_a = t0(&parts[0]) + a.started_s;
            let start_b = t0(&parts[1]) + b.started_s;
            let span = (start_a + a.seconds).max(start_b + b.seconds) - start_a.min(start_b);
            assert!(
                (rep.seconds - span).abs() < 1e-6,
                "{}: {} vs {span}",
                r.test,
                rep.seconds
            );
            assert!(
                (r.throughput.samples[i] - rep.bytes as f64 / rep.seconds).abs()
                    < 1e-6 * r.throughput.samples[i]
            );
        }
        assert_eq!(
            r.latency_ns.count,
            parts[0].results[k].latency_ns.count + parts[1].results[k].latency_ns.count
        );
    }
    // What the aggregate is, said in one sentence, and the file written.
    let err = text(&o.stderr);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert!(
        lines[0].starts_with(
            "merged 2 runs that ran at the same time: each test's aggregate is the bytes of both \
             runs over the span from the earliest start to the latest end of each repetition, on \
             one machine's monotonic clock; both were running during "
        ) && lines[0].ends_with("% of those spans"),
        "{err}"
    );
    assert_eq!(lines[1], format!("wrote {}", out.display()));
    assert!(
        !all.warnings
            .iter()
            .any(|w| w.contains("did not run at the same time")),
        "{:?}",
        all.warnings
    );
    // The merged result renders like any other, with the spread between the runs.
    let o = candor().arg("report").arg(&out).output().expect("report");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("rank"), "{}", text(&o.stdout));
}

#[test]
fn what_cannot_be_merged_is_refused_in_one_sentence() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let files = runs_together(dir.path(), 2, &[&[], &["--stride", "5"]]);
    let out = dir.path().join("all.json");
    let o = merge(&[&files[0], &files[1]], &out);
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("candor: ")
            && err.contains("r1.json ran another plan than ")
            && err
                .contains("(option stride is 17 there and 5 here): merge only results of one plan"),
        "{err}"
    );
    assert!(!out.exists(), "nothing written");
    // One file is not a merge; a result without a clock record cannot be placed.
    let o = merge(&[&files[0]], &out);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        text(&o.stderr),
        "candor: nothing to merge: give the result files of two or more nodes\n"
    );
    let old =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../candor-report/tests/expected/sample.json");
    let o = merge(&[&files[0], &old], &out);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("has no clock record"),
        "{}",
        text(&o.stderr)
    );
    assert!(!out.exists());
}

#[test]
fn runs_that_did_not_run_together_are_refused_or_merged_with_what_the_aggregate_means() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let files = runs_in_turn(dir.path(), 3);
    let refs: Vec<&Path> = files.iter().map(|f| f.as_path()).collect();
    let out = dir.path().join("all.json");
    let o = merge(&refs, &out);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("candor: these runs did not run at the same time (")
            && err.contains(&format!("{} ran 0.000-", files[0].display()))
            && err.contains(&format!(", {} ran ", files[2].display()))
            && err.contains(
                " s on one machine's monotonic clock): their aggregate would be all their bytes \
                 over the whole span, gaps included, lower than any of them did alone; run them \
                 together, or give --allow-disjoint to merge them anyway\n"
            ),
        "{err}"
    );
    assert!(!out.exists(), "nothing written");

    let o = merge_with(&refs, &out, &["--allow-disjoint"]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert!(
        lines[0].starts_with(
            "merged 3 runs that did not run at the same time (--allow-disjoint): each test's \
             aggregate is the bytes of all 3 runs over the span from the earliest start to the \
             latest end of each repetition, gaps between the runs included, so it is not what \
             they do together; each run's own figure is kept under ranks (sum_of_rank_bps adds \
             them up) ("
        ),
        "{err}"
    );
    assert_eq!(lines[1], format!("wrote {}", out.display()));
    let all = candor_model::load_result(&out).expect("the merged result loads");
    assert!(
        all.warnings.iter().any(|w| w.starts_with(
            "These 3 runs did not run at the same time (merged with --allow-disjoint): "
        )),
        "{:?}",
        all.warnings
    );
    // What that means: the aggregate is below every run's own figure.
    let parts: Vec<_> = files
        .iter()
        .map(|f| candor_model::load_result(f).expect("a part loads"))
        .collect();
    for (k, r) in all.results.iter().enumerate() {
        for p in &parts {
            assert!(
                r.throughput.mean < p.results[k].throughput.mean,
                "{}: {} vs {}",
                r.test,
                r.throughput.mean,
                p.results[k].throughput.mean
            );
        }
    }
}
