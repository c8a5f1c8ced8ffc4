//! `candor compare --fail-if-slower/--fail-if-faster` on real runs: a pair where the second
//! run is really slower (the same reads through candor-faultfs, a FUSE filesystem that passes
//! every read through a user-space process) fails the gate with one line per failing row, and
//! a pair of runs of the same plan on the same directory passes it.

mod common;

use candor_faultfs::{FaultFs, Faults, MountError};
use common::{candor, text};
use std::path::Path;
use std::process::Output;

/// Cached re-reads: no device, no drop of caches; the slowdown is the path the reads take.
const PLAN: &[&str] = &[
    "--tests",
    "write,reread",
    "--keep-cache",
    "--file-size",
    "16m",
    "--record-size",
    "64k",
    "--repeat",
    "5",
    "--witness",
    "procfs",
    "--quiet",
    "--format",
    "csv",
];

fn run(dir: &Path, out: &Path) {
    let o = candor()
        .arg("run")
        .arg(dir)
        .args(PLAN)
        .arg("-o")
        .arg(out)
        .output()
        .expect("candor runs");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
}

fn compare(a: &Path, b: &Path, extra: &[&str]) -> Output {
    candor()
        .arg("compare")
        .arg(a)
        .arg(b)
        .args(extra)
        .output()
        .expect("candor compare runs")
}

fn reread_mean(p: &Path) -> f64 {
    let doc = candor_model::load_result(p).expect("the result loads");
    doc.results
        .iter()
        .find(|r| r.test == "reread")
        .map(|r| r.throughput.mean)
        .expect("a reread result")
}

#[test]
fn a_real_slowdown_fails_the_gate_and_the_same_plan_twice_passes() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let plain = dir.path().join("plain");
    std::fs::create_dir(&plain).expect("mkdir");
    let (base, again, slow) = (
        dir.path().join("base.json"),
        dir.path().join("again.json"),
        dir.path().join("slow.json"),
    );
    run(&plain, &base);
    run(&plain, &again);

    // The no-difference pair: whatever noise says, not 50% apart with significance.
    let o = compare(
        &base,
        &again,
        &["--fail-if-slower", "50", "--fail-if-faster", "100"],
    );
    assert_eq!(
        o.status.code(),
        Some(0),
        "same plan, same directory: {}\n{}",
        text(&o.stdout),
        text(&o.stderr)
    );
    assert!(text(&o.stderr).is_empty(), "{}", text(&o.stderr));

    let backing = dir.path().join("backing");
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&backing).expect("mkdir");
    std::fs::create_dir(&mnt).expect("mkdir");
    let Some(fs) = common::need_or(
        FaultFs::mount(&backing, &mnt, &Faults::new()),
        MountError::is_skip,
    ) else {
        return;
    };
    run(fs.path(), &slow);
    drop(fs);
    let (fast_mean, slow_mean) = (reread_mean(&base), reread_mean(&slow));
    eprintln!(
        "reread: {:.0} MB/s plain, {:.0} MB/s through FUSE",
        fast_mean / 1e6,
        slow_mean / 1e6
    );
    assert!(
        slow_mean < 0.8 * fast_mean,
        "the FUSE path should be the slower one: {slow_mean} vs {fast_mean}"
    );

    let o = compare(&base, &slow, &["--fail-if-slower", "20"]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{}\n{err}", text(&o.stdout));
    let lines: Vec<&str> = err.lines().collect();
    assert!(
        lines.iter().any(
            |l| l.starts_with("slower: reread 16m/64k psync: B (slow.json) is ")
                && l.contains(" of A (base.json), ")
                && l.contains("beyond 20%, significant: yes")
        ),
        "{err}"
    );
    // Every line is a failing row (or a row named as not testable), nothing else.
    assert!(
        lines
            .iter()
            .all(|l| l.starts_with("slower: ") || l.starts_with("not tested: ")),
        "{err}"
    );
    // The table on stdout is the comparison, as without the gate.
    assert!(text(&o.stdout).contains("Side by side"));

    // The same pair the other way round: B is faster, which only --fail-if-faster catches.
    let o = compare(&slow, &base, &["--fail-if-slower", "20"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let o = compare(&slow, &base, &["--fail-if-faster", "25"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("faster: reread 16m/64k psync: B (base.json)"));

    // The CI summary.
    let o = compare(
        &base,
        &slow,
        &["--fail-if-slower", "20", "--format", "github"],
    );
    assert_eq!(o.status.code(), Some(1));
    let md = text(&o.stdout);
    assert!(md.starts_with("## candor compare\n"), "{md}");
    assert!(md.contains("**Failed**: "), "{md}");
    assert!(
        md.contains("| reread 16m/64k psync | B (slow.json) | "),
        "{md}"
    );
    let o = compare(
        &base,
        &again,
        &["--fail-if-slower", "50", "--format", "github"],
    );
    assert_eq!(o.status.code(), Some(0));
    assert!(text(&o.stdout)
        .contains("**Passed**: no test is significantly slower than `A` by more than 50%"));
}

#[test]
fn bad_thresholds_are_refused_in_one_sentence() {
    let sample =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../candor-report/tests/expected/sample.json");
    for (flag, value, want) in [
        (
            "--fail-if-slower",
            "100",
            "candor: --fail-if-slower takes a percentage above 0 and below 100, not \"100\"\n",
        ),
        (
            "--fail-if-faster",
            "ten",
            "candor: --fail-if-faster takes a percentage such as 10 or 2.5, not \"ten\"\n",
        ),
        (
            "--format",
            "gitlab",
            "candor: unknown format \"gitlab\": use one of table, markdown, csv, json, github\n",
        ),
    ] {
        let o = compare(&sample, &sample, &[flag, value]);
        assert_eq!(o.status.code(), Some(2), "{flag} {value}");
        assert_eq!(text(&o.stderr), want);
        assert!(o.stdout.is_empty());
    }
}
