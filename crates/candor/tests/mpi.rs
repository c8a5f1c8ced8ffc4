//! `candor run --mpi`, driven through the real launcher: `mpirun -n 4` on a temporary
//! directory, then the saved JSON checked against what IOR's rules say it must hold. The
//! aggregate of every repetition is all ranks' bytes over the earliest start to the latest
//! end; no rank starts a repetition before every rank has ended the one before (the
//! barrier held); the merged histogram is the sum of the ranks' histograms, and each merged
//! percentile lies in the bucket where the concatenated samples put it.
//!
//! Without the `mpi` feature these runs are ignored (`scripts/test` runs this file again
//! with the feature, and counts each test once) and the plain error of `--mpi` is tested
//! instead; without `mpirun` on the PATH they are skipped.

use std::path::Path;
use std::process::{Command, Output};

fn candor() -> Command {
    Command::new(env!("CARGO_BIN_EXE_candor"))
}

fn is_root() -> bool {
    // SAFETY: no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn has_mpirun() -> bool {
    Command::new("mpirun")
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// Runs candor as `ranks` MPI processes.
fn mpirun(ranks: u32, args: &[&str]) -> Output {
    mpirun_env(ranks, args, &[])
}

/// Runs candor as `ranks` MPI processes with `env` added to every rank's environment.
fn mpirun_env(ranks: u32, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new("mpirun");
    c.envs(env.iter().copied());
    if is_root() {
        c.arg("--allow-run-as-root");
    }
    c.args(["--oversubscribe", "-n", &ranks.to_string()])
        .arg(env!("CARGO_BIN_EXE_candor"))
        .args(["run", "--mpi", "--quiet"])
        .args(args);
    // A launcher's variables from an outer job would confuse the inner one.
    for k in ["OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"] {
        c.env_remove(k);
    }
    c.output().expect("mpirun runs")
}

fn without_launcher(args: &[&str]) -> Output {
    let mut c = candor();
    c.args(["run", "--mpi", "--quiet"]).args(args);
    for k in [
        "OMPI_COMM_WORLD_RANK",
        "PMIX_RANK",
        "PMI_RANK",
        "MV2_COMM_WORLD_RANK",
    ] {
        c.env_remove(k);
    }
    c.output().expect("candor runs")
}

/// True when mpirun is here; otherwise skips.
fn need_mpirun() -> bool {
    if has_mpirun() {
        return true;
    }
    candor_testkit::skip("needs mpirun (Debian's openmpi-bin)");
    false
}

/// docs/mpi.md's example for root on one machine, run as written: its `mpirun` line (with
/// its continuation) taken from the page, only the target and the result moved into a
/// temporary directory and `candor` the binary under test.
#[test]
#[cfg_attr(
    not(feature = "mpi"),
    ignore = "needs the mpi feature (scripts/test runs this file again with it)"
)]
fn the_root_example_of_docs_mpi_runs_as_written() {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/mpi.md"))
            .expect("docs/mpi.md reads");
    let start = doc
        .find("mpirun --allow-run-as-root --oversubscribe -n 4 candor run --mpi --tests write,read")
        .expect("docs/mpi.md has the example for root");
    let block = &doc[start..doc[start..].find("```").map(|e| start + e).unwrap()];
    let line = block.replace("\\\n", " ");
    let words: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(
        words[..5],
        [
            "mpirun",
            "--allow-run-as-root",
            "--oversubscribe",
            "-n",
            "4"
        ]
    );
    assert!(
        doc[..start].contains("mkdir -p /tmp/bench\n"),
        "the example makes its target"
    );
    if !need_mpirun() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("bench");
    std::fs::create_dir(&target).unwrap();
    let json = dir.path().join("run.json");
    let bin = env!("CARGO_BIN_EXE_candor");
    let args: Vec<&str> = words[1..]
        .iter()
        .map(|w| match *w {
            "candor" => bin,
            "/tmp/bench" => target.to_str().unwrap(),
            "run.json" => json.to_str().unwrap(),
            w => w,
        })
        .collect();
    let mut c = Command::new("mpirun");
    for k in ["OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"] {
        c.env_remove(k);
    }
    let o = c.args(&args).output().expect("mpirun runs");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let r = candor_model::load_result(&json).expect("rank 0 saved the result");
    assert_eq!(r.mpi.as_ref().map(|m| m.ranks), Some(4));
    let tests: Vec<&str> = r.results.iter().map(|t| t.test.as_str()).collect();
    assert_eq!(tests, ["write", "read"]);
    assert!(r.results.iter().all(|t| t.status.is_ok()
        && t.file_size == 16 << 20
        && t.record_size == 1 << 20
        && t.reps.len() == 3));
}

#[test]
#[cfg(feature = "mpi")]
fn mpi_outside_a_launcher_is_one_sentence_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let out = without_launcher(&[dir.path().to_str().unwrap(), "--file-size", "1m"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("no MPI launcher started this one") && err.contains("mpirun -n"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "one sentence: {err}");
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "nothing was written"
    );
}

#[test]
#[cfg(not(feature = "mpi"))]
fn mpi_without_the_feature_is_one_sentence_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let out = without_launcher(&[dir.path().to_str().unwrap(), "--file-size", "1m"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("built without it") && err.contains("--features mpi"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "one sentence: {err}");
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "nothing was written"
    );
}

fn f64s(v: &serde_json::Value, key: &str) -> Vec<f64> {
    v[key]
        .as_array()
        .unwrap_or_else(|| panic!("{key} is a list"))
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

fn run_ranks(ranks: u32, dir: &Path, extra: &[&str]) -> candor_model::RunDoc {
    run_ranks_env(ranks, dir, extra, &[])
}

fn run_ranks_env(
    ranks: u32,
    dir: &Path,
    extra: &[&str],
    env: &[(&str, &str)],
) -> candor_model::RunDoc {
    let json = dir.join("out.json");
    let target = dir.join("target");
    std::fs::create_dir(&target).unwrap();
    let mut args = vec![
        target.to_str().unwrap(),
        "--tests",
        "write,read,randread",
        "--file-size",
        "8m",
        "--record-size",
        "64k",
        "--repeat",
        "2",
        "-o",
        json.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let out = mpirun_env(ranks, &args, env);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout.matches("Started ").count(),
        1,
        "only rank 0 prints the table: {stdout}"
    );
    assert_eq!(
        std::fs::read_dir(&target).unwrap().count(),
        0,
        "every rank removed its files"
    );
    candor_model::load_result(&json).expect("rank 0 saved the result")
}

#[test]
#[cfg_attr(
    not(feature = "mpi"),
    ignore = "needs the mpi feature (scripts/test runs this file again with it)"
)]
fn four_ranks_aggregate_barrier_and_merged_percentiles() {
    if !need_mpirun() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let doc = run_ranks(4, dir.path(), &[]);
    let mpi = doc.mpi.as_ref().expect("the run records MPI");
    assert_eq!(mpi.ranks, 4);
    assert_eq!(mpi.nodes, 1, "one machine");
    assert_eq!(mpi.ranks_per_node, vec![4]);
    assert_eq!(mpi.rank_nodes, vec![0, 0, 0, 0]);
    assert_eq!(mpi.clock_offsets_ns, vec![0; 4], "one node, one clock");
    assert_eq!(doc.results.len(), 3);

    // Every repetition of every test, in the order they ran: (ranks' starts, ranks' ends).
    let mut spans: Vec<(Vec<f64>, Vec<f64>)> = Vec::new();
    for r in &doc.results {
        assert_eq!(
            r.status,
            candor_model::Status::Ok,
            "{}: {:?}",
            r.test,
            r.error
        );
        let ranks = &ranks_json(r);
        assert_eq!(ranks["ranks"], 4);
        let per = ranks["per_rank"].as_array().unwrap();
        assert_eq!(per.len(), 4);
        let agg = f64s(ranks, "aggregate_bps");
        assert_eq!(agg.len(), 2);
        assert_eq!(r.throughput.samples, agg, "the headline is the aggregate");
        for k in 0..2 {
            let bytes: u64 = per
                .iter()
                .map(|p| p["rep_bytes"][k].as_u64().unwrap())
                .sum();
            assert_eq!(
                bytes,
                4 * (8 << 20),
                "{}: every rank moved its file",
                r.test
            );
            let starts: Vec<f64> = per.iter().map(|p| f64s(p, "started_s")[k]).collect();
            let ends: Vec<f64> = per.iter().map(|p| f64s(p, "ended_s")[k]).collect();
            let first = starts.iter().cloned().fold(f64::INFINITY, f64::min);
            let last = ends.iter().cloned().fold(0.0, f64::max);
            let want = bytes as f64 / (last - first);
            assert!(
                (agg[k] - want).abs() <= want * 1e-9,
                "{} rep {k}: aggregate {} vs {want}",
                r.test,
                agg[k]
            );
            assert_eq!(r.reps[k].bytes, bytes);
            assert!((r.reps[k].seconds - (last - first)).abs() < 1e-9);
            spans.push((starts, ends));
        }

        // Histograms: the merged one is the sum of the ranks' ones.
        let mut summed: std::collections::BTreeMap<u64, u64> = Default::default();
        for p in per {
            for b in p["latency_histogram"]["buckets"].as_array().unwrap() {
                *summed.entry(b[0].as_u64().unwrap()).or_default() += b[1].as_u64().unwrap();
            }
        }
        let merged: Vec<(u64, u64)> = r
            .latency_histogram
            .buckets
            .iter()
            .map(|b| (b[0], b[1]))
            .collect();
        assert_eq!(merged, summed.clone().into_iter().collect::<Vec<_>>());
        let total: u64 = summed.values().sum();
        assert_eq!(r.latency_ns.count, total);
        assert_eq!(total, 4 * 2 * 128, "4 ranks x 2 repetitions x 128 records");
        // Each percentile lies in the bucket where the concatenated samples put it, so it
        // is within the histogram's relative error of the true sample there.
        let bound = r.latency_histogram.relative_error;
        for (q, got) in [
            (0.5, r.latency_ns.p50),
            (0.9, r.latency_ns.p90),
            (0.99, r.latency_ns.p99),
        ] {
            let want_rank = ((q * total as f64).ceil() as u64).max(1);
            let mut seen = 0;
            let mut lo = 0;
            for (&l, &n) in &summed {
                seen += n;
                if seen >= want_rank {
                    lo = l;
                    break;
                }
            }
            let width_bound = (lo as f64 * 2.0 * bound).max(1.0);
            assert!(
                got as f64 >= lo as f64 && got as f64 <= lo as f64 + width_bound,
                "{} p{}: {got} outside the bucket at {lo}",
                r.test,
                q * 100.0
            );
        }
    }

    // The barrier held: every rank ended repetition k before any rank started k + 1.
    spans.sort_by(|a, b| {
        let a0 = a.0.iter().cloned().fold(f64::INFINITY, f64::min);
        let b0 = b.0.iter().cloned().fold(f64::INFINITY, f64::min);
        a0.partial_cmp(&b0).unwrap()
    });
    for w in spans.windows(2) {
        let last_end = w[0].1.iter().cloned().fold(0.0, f64::max);
        let next_start = w[1].0.iter().cloned().fold(f64::INFINITY, f64::min);
        assert!(
            next_start >= last_end,
            "a rank started at {next_start} before another ended at {last_end}"
        );
    }
}

#[test]
#[cfg_attr(
    not(feature = "mpi"),
    ignore = "needs the mpi feature (scripts/test runs this file again with it)"
)]
fn skewed_clocks_are_estimated_and_every_rank_is_put_on_rank_0s_clock() {
    if !need_mpirun() {
        return;
    }
    // On one machine every rank reads the same clock, so the offsets are 0 (the test
    // above). Here rank 1's clock is made to run 5 s ahead and rank 2's 3 s behind, as the
    // job sees them (the exchange and each rank's run start): the estimate must find both,
    // and the merge must put the ranks' repetitions side by side again.
    let (ahead, behind) = (5_000_000_000i64, -3_000_000_000i64);
    let skew = format!("1:{ahead},2:{behind}");
    let dir = tempfile::tempdir().unwrap();
    let doc = run_ranks_env(
        3,
        dir.path(),
        &["--keep-cache"],
        &[("CANDOR_MPI_CLOCK_SKEW_NS", &skew)],
    );
    let mpi = doc.mpi.as_ref().expect("the run records MPI");
    assert_eq!((mpi.ranks, mpi.nodes), (3, 1));
    let (off, bound) = (&mpi.clock_offsets_ns, &mpi.clock_uncertainty_ns);
    assert_eq!((off[0], bound[0]), (0, 0), "rank 0 is the reference");
    for (rank, want) in [(1, ahead), (2, behind)] {
        let error = (off[rank] - want).unsigned_abs();
        eprintln!(
            "rank {rank}: skew {want} ns, estimated {} ns (off by {error}, bound {})",
            off[rank], bound[rank]
        );
        assert!(
            bound[rank] > 0 && bound[rank] < 100_000_000,
            "rank {rank}: a bound of {} ns is no estimate of a round trip on one machine",
            bound[rank]
        );
        assert!(
            error <= bound[rank],
            "rank {rank}: offset {} ns for a skew of {want}: off by {error}, bound {}",
            off[rank],
            bound[rank]
        );
    }
    // The ranks pass a barrier before each repetition, so on rank 0's clock they start
    // together; had the skews stood, rank 1 would start 5 s after rank 0 and rank 2 3 s
    // before it.
    for r in &doc.results {
        assert_eq!(
            r.status,
            candor_model::Status::Ok,
            "{}: {:?}",
            r.test,
            r.error
        );
        let per = ranks_json(r)["per_rank"].as_array().unwrap().clone();
        for k in 0..2 {
            let starts: Vec<f64> = per.iter().map(|p| f64s(p, "started_s")[k]).collect();
            let first = starts.iter().cloned().fold(f64::INFINITY, f64::min);
            let last = starts.iter().cloned().fold(0.0, f64::max);
            assert!(
                last - first < 0.5,
                "{} rep {k}: the ranks started at {starts:?} s",
                r.test
            );
            assert!(
                first >= 0.0 && r.reps[k].seconds < 2.5,
                "{} rep {k}: span {} s from {first} s",
                r.test,
                r.reps[k].seconds
            );
        }
    }
    // A value that cannot be read stops every rank, each with one sentence, before anything
    // runs (exit 2, as for any bad input).
    let target = dir.path().join("bad");
    std::fs::create_dir(&target).unwrap();
    let out = mpirun_env(
        2,
        &[
            target.to_str().unwrap(),
            "--tests",
            "write",
            "--file-size",
            "1m",
        ],
        &[("CANDOR_MPI_CLOCK_SKEW_NS", "1:5s")],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    // Each rank says it; mpirun ends the job at the first rank's exit, so the other's
    // sentence may not get out, and the two may interleave: count sentences, not lines.
    let said = err
        .matches("CANDOR_MPI_CLOCK_SKEW_NS=1:5s: '1:5s' is not RANK:NS")
        .count();
    assert!((1..=2).contains(&said), "one sentence per rank: {err}");
    assert_eq!(
        std::fs::read_dir(&target).unwrap().count(),
        0,
        "nothing written"
    );
}

#[test]
#[cfg_attr(
    not(feature = "mpi"),
    ignore = "needs the mpi feature (scripts/test runs this file again with it)"
)]
fn two_ranks_report_the_spread_and_the_node_cache() {
    if !need_mpirun() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let doc = run_ranks(2, dir.path(), &["--keep-cache"]);
    let mpi = doc.mpi.as_ref().unwrap();
    assert_eq!((mpi.ranks, mpi.nodes), (2, 1));
    for r in &doc.results {
        let ranks = &ranks_json(r);
        let slowest = ranks["slowest_rank"].as_u64().unwrap();
        let fastest = ranks["fastest_rank"].as_u64().unwrap();
        let per = ranks["per_rank"].as_array().unwrap();
        let rate = |k: u64| per[k as usize]["throughput"]["mean"].as_f64().unwrap();
        assert!(rate(slowest) <= rate(fastest));
        assert_eq!(ranks["rank_throughput"]["n"], 4, "2 ranks x 2 repetitions");
        assert_eq!(ranks["per_node"].as_array().unwrap().len(), 1);
    }
}

#[test]
#[cfg_attr(
    not(feature = "mpi"),
    ignore = "needs the mpi feature (scripts/test runs this file again with it)"
)]
fn stonewall_stops_every_rank_when_the_first_finishes() {
    if !need_mpirun() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let doc = run_ranks(4, dir.path(), &["--stonewall"]);
    let full = 8u64 << 20;
    for r in &doc.results {
        assert_eq!(
            r.status,
            candor_model::Status::Ok,
            "{}: {:?}",
            r.test,
            r.error
        );
        let ranks = &ranks_json(r);
        let per = ranks["per_rank"].as_array().unwrap();
        for k in 0..2 {
            let moved: Vec<u64> = per
                .iter()
                .map(|p| p["rep_bytes"][k].as_u64().unwrap())
                .collect();
            assert!(
                moved.contains(&full),
                "{} rep {k}: the first rank to finish moved its whole file: {moved:?}",
                r.test
            );
            assert!(moved.iter().all(|&b| b <= full), "{moved:?}");
            assert_eq!(r.reps[k].bytes, moved.iter().sum::<u64>());
            assert!(!r.reps[k].truncated, "a stonewall is not a --runtime cap");
        }
        for p in per {
            let short = (0..2).any(|k| p["rep_bytes"][k].as_u64().unwrap() < full);
            assert_eq!(
                p["stonewalled"].as_bool().unwrap(),
                short,
                "rank {}: stonewalled exactly when it stopped short",
                p["rank"]
            );
        }
    }
}

#[test]
fn reorder_needs_mpi() {
    let dir = tempfile::tempdir().unwrap();
    let out = candor()
        .args(["run", "--reorder", "--quiet", "--file-size", "1m"])
        .arg(dir.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--reorder") && err.contains("--mpi"), "{err}");
}

#[test]
#[cfg_attr(
    not(feature = "mpi"),
    ignore = "needs the mpi feature (scripts/test runs this file again with it)"
)]
fn reorder_reads_another_rank_files_and_says_where_the_bytes_came_from() {
    if !need_mpirun() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let doc = run_ranks(4, dir.path(), &["--reorder"]);
    assert!(doc.mpi.as_ref().unwrap().reorder);
    for r in &doc.results {
        assert_eq!(
            r.status,
            candor_model::Status::Ok,
            "{}: {:?}",
            r.test,
            r.error
        );
        let ranks = &ranks_json(r);
        for p in ranks["per_rank"].as_array().unwrap() {
            assert_eq!(
                p["rep_bytes"],
                serde_json::json!([8 << 20, 8 << 20]),
                "{}: rank {} read its partner's whole file",
                r.test,
                p["rank"]
            );
        }
        for node in ranks["per_node"].as_array().unwrap() {
            let hit = node["cache_hit_ratio"].as_f64();
            let served = node["served_by_cache"].as_bool().unwrap();
            if r.test.contains("read") && r.intent == candor_model::Intent::Device {
                assert_eq!(served, hit.is_some_and(|h| h > 0.5), "{node}");
            } else {
                assert!(!served);
            }
        }
    }
}

#[test]
#[cfg_attr(
    not(feature = "mpi"),
    ignore = "needs the mpi feature (scripts/test runs this file again with it)"
)]
fn a_rank_that_cannot_start_stops_every_rank_with_its_sentence() {
    if !need_mpirun() {
        return;
    }
    // Two programs in one job (MPMD): rank 0 gets a good target, rank 1 one that is missing
    // on its "node". Every rank must stop before writing anything, and rank 0 says why.
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good");
    std::fs::create_dir(&good).unwrap();
    let missing = dir.path().join("missing");
    let bin = env!("CARGO_BIN_EXE_candor");
    let mut c = Command::new("mpirun");
    if is_root() {
        c.arg("--allow-run-as-root");
    }
    c.args(["--oversubscribe", "-n", "1", bin, "run", "--mpi", "--quiet"])
        .args(["--file-size", "1m"])
        .arg(&good)
        .args([":", "-n", "1", bin, "run", "--mpi", "--quiet"])
        .args(["--file-size", "1m"])
        .arg(&missing);
    for k in ["OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"] {
        c.env_remove(k);
    }
    let out = c.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    // mpirun interleaves the ranks' stderr with its own notices, so count the sentence
    // rather than lines.
    assert_eq!(
        err.matches("does not exist").count(),
        1,
        "one sentence, from rank 0: {err}"
    );
    assert!(err.contains("rank 1 on "), "{err}");
    assert_eq!(
        std::fs::read_dir(&good).unwrap().count(),
        0,
        "nothing was written"
    );
}

#[test]
#[cfg_attr(
    not(feature = "mpi"),
    ignore = "needs the mpi feature (scripts/test runs this file again with it)"
)]
fn shared_file_gives_every_rank_its_segment_of_one_file() {
    if !need_mpirun() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let doc = run_ranks(4, dir.path(), &["--shared-file"]);
    assert!(doc.mpi.as_ref().unwrap().shared_file);
    for r in &doc.results {
        assert_eq!(
            r.status,
            candor_model::Status::Ok,
            "{}: {:?}",
            r.test,
            r.error
        );
        for p in ranks_json(r)["per_rank"].as_array().unwrap() {
            assert_eq!(p["rep_bytes"], serde_json::json!([8 << 20, 8 << 20]));
        }
        // The reads were of data the ranks wrote into their segments: had a segment been
        // a hole, the device would have read nothing for it.
        if r.test == "read" {
            let w = r.witness.as_ref().unwrap();
            assert_eq!(w.app.read_bytes, 4 * 2 * (8 << 20));
        }
    }
}

#[test]
#[cfg_attr(
    not(feature = "mpi"),
    ignore = "needs the mpi feature (scripts/test runs this file again with it)"
)]
fn shared_file_refuses_the_tests_that_cannot_address_a_segment() {
    if !need_mpirun() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = mpirun(
        2,
        &[
            dir.path().to_str().unwrap(),
            "--shared-file",
            "--tests",
            "fwrite",
            "--file-size",
            "1m",
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--shared-file") && err.contains("fwrite"),
        "{err}"
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "{err}");
}

#[test]
#[cfg_attr(
    not(feature = "mpi"),
    ignore = "needs the mpi feature (scripts/test runs this file again with it)"
)]
fn a_bad_output_path_stops_every_rank_with_one_sentence() {
    if !need_mpirun() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("no-such-dir").join("out.json");
    let out = mpirun(
        2,
        &[
            dir.path().to_str().unwrap(),
            "--file-size",
            "1m",
            "-o",
            json.to_str().unwrap(),
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.matches("does not exist").count(), 1, "{err}");
    assert!(err.contains("cannot save to"), "{err}");
}

#[test]
#[cfg_attr(
    not(feature = "mpi"),
    ignore = "needs the mpi feature (scripts/test runs this file again with it)"
)]
fn candor_merge_of_the_ranks_own_results_gives_the_mpi_run_figures() {
    if !need_mpirun() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ranks_dir = dir.path().join("ranks");
    let mpi_doc = run_ranks(
        3,
        dir.path(),
        &["--rank-output", ranks_dir.to_str().unwrap()],
    );
    let merged = dir.path().join("merged.json");
    let out = candor()
        .arg("merge")
        .args((0..3).map(|r| ranks_dir.join(format!("rank-{r}.json"))))
        .arg("-o")
        .arg(&merged)
        .output()
        .expect("candor merge runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc = candor_model::load_result(&merged).expect("the merged result loads");
    assert_eq!(doc.results.len(), mpi_doc.results.len());
    assert_eq!(doc.results.len(), 3);
    let m = doc.mpi.as_ref().expect("the merge says how many ranks");
    assert_eq!(m.ranks, 3);
    for (a, b) in mpi_doc.results.iter().zip(&doc.results) {
        // The same aggregate figures, to the last bit: the same code on the same inputs.
        assert_eq!(a.test, b.test);
        assert_eq!(a.throughput, b.throughput, "{}", a.test);
        assert_eq!(a.iops, b.iops, "{}", a.test);
        assert_eq!(
            a.throughput_with_flush, b.throughput_with_flush,
            "{}",
            a.test
        );
        assert_eq!(a.reps, b.reps, "{}", a.test);
        assert_eq!(a.latency_ns, b.latency_ns, "{}", a.test);
        assert_eq!(a.latency_histogram, b.latency_histogram, "{}", a.test);
        assert_eq!(a.cpu, b.cpu, "{}", a.test);
        let (sa, sb) = (ranks_json(a), ranks_json(b));
        assert_eq!(sa["aggregate_bps"], sb["aggregate_bps"], "{}", a.test);
        assert_eq!(sa["per_rank"], sb["per_rank"], "{}", a.test);
        assert_eq!(
            a.witness.as_ref().map(|w| w.verdict),
            b.witness.as_ref().map(|w| w.verdict),
            "{}",
            a.test
        );
        assert_eq!(
            a.witness.as_ref().map(|w| &w.app),
            b.witness.as_ref().map(|w| &w.app),
            "{}",
            a.test
        );
        // Three ranks' bytes.
        let one: u64 = 8 << 20;
        assert!(b.reps.iter().all(|r| r.bytes == 3 * one), "{}", b.test);
    }
}

/// A block device is benchmarked by one process: over MPI every rank refuses it with that
/// sentence before any rank claims it (a second rank used to find the device busy and say
/// so instead), and nothing is written to it.
#[test]
#[cfg_attr(
    not(feature = "mpi"),
    ignore = "needs the mpi feature (scripts/test runs this file again with it)"
)]
fn ranks_refuse_a_block_device_with_the_plans_sentence() {
    if !need_mpirun() || !candor_testkit::need_root("for loop devices") {
        return;
    }
    let dev = candor_lab::scratch_device(16 << 20).expect("a loop device as root");
    let out = mpirun(
        2,
        &[
            "--allow-device-writes",
            "--tests",
            "write",
            "--file-size",
            "1m",
            &dev.loop_device,
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(
        err.matches("a block device is benchmarked by one candor process")
            .count(),
        1,
        "the plan's sentence, once (rank 0): {err}"
    );
    assert!(!err.contains("busy"), "{err}");
    let data = std::fs::read(&dev.loop_device).expect("read the device");
    assert!(
        data.iter().all(|&b| b == 0),
        "a refused run wrote to the device"
    );
}

/// An ext4 on a loop device made for the test, which nothing but the test uses, or why not.
fn scratch_ext4() -> Option<candor_lab::ScratchFs> {
    if !need_mpirun() {
        return None;
    }
    candor_testkit::need_or(
        candor_lab::scratch("ext4", 256 << 20),
        candor_lab::LabError::is_unsupported,
    )
}

/// `mpirun -n ranks candor run --mpi --witness WITNESS TARGET ARGS`, the result saved.
fn ranks_on(ranks: u32, target: &Path, witness: &str, args: &[&str]) -> candor_model::RunDoc {
    let json = target.with_extension(format!("{ranks}-{witness}.json"));
    let mut all = vec![
        target.to_str().unwrap(),
        "--witness",
        witness,
        "--repeat",
        "1",
        "-o",
        json.to_str().unwrap(),
    ];
    all.extend_from_slice(args);
    let out = mpirun(ranks, &all);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc = candor_model::load_result(&json).expect("rank 0 saved the result");
    let _ = std::fs::remove_file(&json);
    doc
}

/// The merged result's spread, typed.
fn spread(r: &candor_model::TestResult) -> candor_mpi::merge::Spread {
    r.ranks.clone().expect("per-rank figures")
}

/// Ranks of one job on one quiet machine: every rank's traffic is the job's, so no result,
/// merged or per node, says `disturbed`, and the node's own bytes hold every rank's.
#[test]
#[cfg_attr(
    not(feature = "mpi"),
    ignore = "needs the mpi feature (scripts/test runs this file again with it)"
)]
fn quiet_ranks_on_one_node_are_never_disturbed() {
    let Some(fs) = scratch_ext4() else { return };
    let target = fs.path().join("t");
    std::fs::create_dir(&target).unwrap();
    let args = [
        "--tests",
        "write,read,randread",
        "--file-size",
        "8m",
        "--record-size",
        "64k",
    ];
    for (ranks, witness) in [(2, "bpf"), (4, "bpf"), (4, "procfs")] {
        let doc = ranks_on(ranks, &target, witness, &args);
        for r in &doc.results {
            let w = r.witness.as_ref().expect("a witness");
            let s = spread(r);
            eprintln!(
                "{ranks} ranks, {witness}, {}: {} {} per node {:?}",
                r.test, w.source, w.verdict, s.per_node[0].traffic
            );
            assert_eq!(w.source, witness);
            assert!(!w.disturbed, "{ranks} ranks, {}: {}", r.test, w.explanation);
            assert_eq!(w.foreign_device_bytes, 0, "{}", w.explanation);
            assert_eq!(s.per_node.len(), 1);
            let t = s.per_node[0].traffic.clone().expect("the node's split");
            assert_eq!(t.exact, witness == "bpf");
            assert!(!t.disturbed && t.foreign_bytes == 0, "{t:?}");
            let moved = ranks as u64 * (8 << 20);
            // Every rank's bytes, less what the eBPF programs may miss of the completions
            // on a busy machine (docs/bpf.md), and not the ranks' bytes several times.
            let at_least = moved * 9 / 10;
            if r.test == "write" {
                // Every rank's file, and the journal: nothing less, not the ranks many times.
                assert!(t.own_write_bytes >= at_least, "{t:?}");
                assert!(t.own_write_bytes < moved + (moved / 4), "{t:?}");
                let wa = w.write_amplification.unwrap_or(0.0);
                assert!((0.9..1.25).contains(&wa), "amplification {wa}");
            } else {
                // The reads the ranks' witnesses saw served by the page cache (pages the
                // drop before the test could not evict) never reach the device: the node
                // holds every rank's bytes less those.
                let from_device: f64 = s
                    .per_rank
                    .iter()
                    .map(|p| p.bytes as f64 * (1.0 - p.cache_hit_ratio.unwrap_or(0.0)))
                    .sum();
                assert!(
                    t.own_read_bytes as f64 >= from_device * 0.9,
                    "{t:?}: the ranks read {from_device:.0} bytes from the device"
                );
                assert!(
                    from_device >= moved as f64 * 0.5,
                    "uncached files: most reads come from the device ({from_device:.0})"
                );
                assert!(t.own_read_bytes < moved + (moved / 4), "{t:?}");
            }
            // Each rank's own figures: its 8 MiB in 128 records of 64 KiB; a write reaches
            // the device (fsync in the timing) and its amplification is its own file's
            // plus the journal's share (measured 1.0016 to 1.0055), never another rank's
            // bytes (which would make it 2 or more); a read served wholly by the device is
            // judged so.
            assert_eq!(s.per_rank.len(), ranks as usize);
            for p in &s.per_rank {
                let what = format!("{ranks} ranks, {witness}, {}, rank {}", r.test, p.rank);
                assert_eq!(p.status, candor_model::Status::Ok, "{what}: {:?}", p.error);
                assert_eq!((p.bytes, p.ops), (8 << 20, 128), "{what}");
                if r.test == "write" {
                    if witness == "bpf" {
                        assert_eq!(p.verdict, Some(candor_model::Verdict::Device), "{what}");
                    } else {
                        // procfs sees the node's device, not each rank's requests: a rank
                        // whose pages the node wrote back before its own flush is judged
                        // mixed (rank 3 of 4, once in a full run); never cache or memory.
                        assert!(
                            matches!(
                                p.verdict,
                                Some(candor_model::Verdict::Device | candor_model::Verdict::Mixed)
                            ),
                            "{what}: {:?}",
                            p.verdict
                        );
                    }
                    let wa = p.write_amplification.expect("a write's amplification");
                    assert!(
                        (1.0..1.10).contains(&wa),
                        "{what}: amplification {wa}: the other ranks are not its own"
                    );
                } else {
                    assert_eq!(p.write_amplification, None, "{what}");
                    let hit = p.cache_hit_ratio.expect("a read's cache hit ratio");
                    assert!((0.0..=1.0).contains(&hit), "{what}: {hit}");
                    if hit == 0.0 {
                        assert_eq!(p.verdict, Some(candor_model::Verdict::Device), "{what}");
                    } else {
                        assert!(p.verdict.is_some(), "{what}: judged");
                    }
                }
            }
        }
    }
}

/// A process outside the job writing to the same device while the ranks read is foreign:
/// the merged result and the node say `disturbed`, with at least what it wrote in the
/// timed region.
#[test]
#[cfg_attr(
    not(feature = "mpi"),
    ignore = "needs the mpi feature (scripts/test runs this file again with it)"
)]
fn a_foreign_writer_beside_an_mpi_job_is_disturbed() {
    let Some(fs) = scratch_ext4() else { return };
    let target = fs.path().join("t");
    std::fs::create_dir(&target).unwrap();
    let args = [
        "--tests",
        "randread",
        "--direct",
        "--file-size",
        "16m",
        "--record-size",
        "4k",
    ];
    for witness in ["bpf", "procfs"] {
        let stop = std::sync::atomic::AtomicBool::new(false);
        let other = fs.path().join(format!("other-{witness}.dat"));
        let doc = std::thread::scope(|s| {
            let writer = s.spawn(|| {
                use std::os::unix::fs::{FileExt, OpenOptionsExt};
                let file = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .custom_flags(libc::O_DIRECT)
                    .open(&other)
                    .expect("open the other writer's file");
                let layout = std::alloc::Layout::from_size_align(1 << 20, 4096).unwrap();
                // SAFETY: non-zero size; freed below.
                let buf = unsafe { std::alloc::alloc_zeroed(layout) };
                assert!(!buf.is_null());
                // SAFETY: buf holds layout.size() bytes.
                let data = unsafe { std::slice::from_raw_parts(buf, layout.size()) };
                let mut written = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    file.write_all_at(data, written % (32 << 20))
                        .expect("the other writer writes");
                    written += 1 << 20;
                    std::thread::sleep(std::time::Duration::from_millis(2));
                }
                // SAFETY: allocated above with this layout.
                unsafe { std::alloc::dealloc(buf, layout) };
                written
            });
            let doc = ranks_on(2, &target, witness, &args);
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            let written = writer.join().expect("the writer thread");
            assert!(written >= 4 << 20, "the other writer wrote {written} bytes");
            doc
        });
        let r = &doc.results[0];
        let w = r.witness.as_ref().expect("a witness");
        let s = spread(r);
        eprintln!(
            "{witness}: {} {} foreign {} per node {:?}",
            w.source, w.verdict, w.foreign_device_bytes, s.per_node[0].traffic
        );
        assert!(w.disturbed, "{witness}: {}", w.explanation);
        assert!(w.foreign_device_bytes >= 1 << 20, "{}", w.explanation);
        assert!(
            w.explanation.contains("other processes"),
            "{}",
            w.explanation
        );
        let t = s.per_node[0].traffic.clone().expect("the node's split");
        assert!(t.disturbed && t.foreign_bytes >= 1 << 20, "{t:?}");
        // The ranks' own reads are still theirs, whatever the stranger did (less what the
        // eBPF programs may miss of their completions on a busy machine: docs/bpf.md).
        assert!(
            t.own_read_bytes >= 2 * (16 << 20) * 9 / 10,
            "{witness}: {t:?}"
        );
        let _ = std::fs::remove_file(&other);
    }
}

/// A result's per-rank figures as saved in its JSON.
fn ranks_json(r: &candor_model::TestResult) -> serde_json::Value {
    serde_json::to_value(r.ranks.as_ref().expect("per-rank figures")).expect("JSON")
}
