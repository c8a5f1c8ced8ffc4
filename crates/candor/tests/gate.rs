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
    // One line says what the gate judged.
    let err = text(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(
            "gate passed: 2 rows of B (again.json) judged against A (base.json): none is \
             significantly slower by more than 50% or faster by more than 100%; "
        ) && (err.contains("the largest slowdown: ") || err.contains("no row is slower"))
            && (err.contains("the largest speed-up: ") || err.contains("no row is faster")),
        "{err}"
    );

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
            "candor: 'gitlab' is not a format: choose from table, markdown, csv, json, github\n",
        ),
    ] {
        let o = compare(&sample, &sample, &[flag, value]);
        assert_eq!(o.status.code(), Some(2), "{flag} {value}");
        assert_eq!(text(&o.stderr), want);
        assert!(o.stdout.is_empty());
    }
}

/// The shipped sample result with `edit` applied to each of its results (index, result),
/// saved as `name` in `dir`: two files whose rows match or not, as a test needs.
fn variant(
    dir: &Path,
    name: &str,
    edit: impl Fn(usize, &mut serde_json::Value),
) -> std::path::PathBuf {
    let sample =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../candor-report/tests/expected/sample.json");
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(sample).expect("the sample reads"))
            .expect("the sample is JSON");
    for (i, r) in doc["results"]
        .as_array_mut()
        .expect("results")
        .iter_mut()
        .enumerate()
    {
        edit(i, r);
    }
    let p = dir.join(name);
    std::fs::write(&p, serde_json::to_string(&doc).expect("serializes")).expect("write");
    p
}

/// Multiplies a result's throughput (every sample, the mean, its bounds) by `f`.
fn scale(r: &mut serde_json::Value, f: f64) {
    let t = &mut r["throughput"];
    for k in ["mean", "min", "max", "stddev"] {
        t[k] = (t[k].as_f64().expect(k) * f).into();
    }
    for k in ["samples", "ci95"] {
        for v in t[k].as_array_mut().expect(k) {
            *v = (v.as_f64().expect(k) * f).into();
        }
    }
}

#[test]
fn a_gate_that_judged_nothing_fails_and_names_what_it_left_out() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let a = variant(dir.path(), "a.json", |_, _| {});
    // Every test of B ran with --direct: no row has the same options on both sides.
    let b = variant(dir.path(), "b.json", |_, r| r["direct"] = true.into());
    for gate in [
        &["--fail-if-slower", "10"][..],
        &["--fail-if-faster", "50"],
        &["--fail-if-slower", "10", "--format", "json"],
    ] {
        let o = compare(&a, &b, gate);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{gate:?}: {err}");
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(
            lines.last().copied(),
            Some(
                "candor: the gate judged nothing: no test ran with the same options on A (a.json) \
                 and another side, so no row could be found slower or faster; compare runs of one \
                 plan, or give --allow-unmatched to let a comparison with nothing to judge pass"
            ),
            "{err}"
        );
        // Every row left out is named, with why.
        assert!(
            lines.contains(
                &"not compared: write 64m/4k psync in A (a.json) has no counterpart in B (b.json) \
                  (closest there: write 64m/4k psync direct; differs in buffered vs --direct)"
            ),
            "{err}"
        );
        assert!(
            lines.contains(
                &"not compared: write 64m/4k psync direct in B (b.json) has no counterpart in A (a.json) \
                  (closest there: write 64m/4k psync; differs in --direct vs buffered)"
            ),
            "{err}"
        );
        assert_eq!(
            lines
                .iter()
                .filter(|l| l.starts_with("not compared: "))
                .count(),
            56,
            "28 results on each side, none matched: {err}"
        );
        assert_eq!(lines.len(), 57, "{err}");
    }

    // The old behaviour, asked for: it passes, and says it judged nothing.
    let o = compare(&a, &b, &["--fail-if-slower", "10", "--allow-unmatched"]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert_eq!(
        err.lines().last(),
        Some(
            "gate passed with nothing judged (--allow-unmatched): no test ran with the same \
             options on A (a.json) and another side; 56 results not compared, listed above"
        ),
        "{err}"
    );

    // The CI summary fails too.
    let o = compare(&a, &b, &["--fail-if-slower", "10", "--format", "github"]);
    assert_eq!(o.status.code(), Some(1));
    let md = text(&o.stdout);
    assert!(
        md.contains(
            "**Failed**: nothing was judged: no test ran with the same options on `A` and another \
             side (56 results not compared, listed in the whole comparison below).\n"
        ),
        "{md}"
    );

    // --allow-unmatched means nothing without a gate.
    let o = compare(&a, &b, &["--allow-unmatched"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        text(&o.stderr),
        "candor: --allow-unmatched applies to a gate: give --fail-if-slower or --fail-if-faster with it\n"
    );
    assert!(o.stdout.is_empty());
}

#[test]
fn a_gate_judges_the_rows_it_can_names_the_others_and_says_what_it_judged() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let a = variant(dir.path(), "a.json", |_, _| {});
    // B: the first test ran with --direct (no counterpart), the second 5% slower; the rest
    // the same figures.
    let b = variant(dir.path(), "b.json", |i, r| match i {
        0 => r["direct"] = true.into(),
        1 => scale(r, 0.95),
        _ => {}
    });
    let o = compare(&a, &b, &["--fail-if-slower", "10"]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    // 28 results: one unmatched on each side, the failed randwrite not judged, 26 judged.
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.starts_with("not compared: "))
            .count(),
        2,
        "{err}"
    );
    assert!(
        lines.contains(&"not tested: randwrite 256m/1m psync: failed on B (b.json) or on A (a.json), nothing to judge"),
        "{err}"
    );
    let last = lines.last().copied().unwrap_or_default();
    assert!(
        last.starts_with(
            "gate passed: 26 rows of B (b.json) judged against A (a.json): none is significantly \
             slower by more than 10%; the largest slowdown: read 64m/4k psync on B (b.json), 5.0% slower (significant: "
        ) && last.ends_with("; 2 results not compared and 1 not tested, listed above"),
        "{err}"
    );
    assert_eq!(lines.len(), 4, "{err}");

    // Both directions asked: both extremes said.
    let o = compare(
        &b,
        &a,
        &["--fail-if-slower", "10", "--fail-if-faster", "10"],
    );
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let last = err.lines().last().unwrap_or_default();
    assert!(
        last.contains("none is significantly slower by more than 10% or faster by more than 10%; no row is slower; the largest speed-up: read 64m/4k psync on B (a.json), 5.3% faster (significant: "),
        "{err}"
    );
}
