//! `scripts/test`'s verdict on its totals (scripts/test-verdict), from made-up tallies: the
//! minimum total, a filtered run said to be partial, a summary mismatch, and the strict run
//! (root) failing on a skip, an #[ignore]d test with no listed reason, or a missing
//! dependency. And scripts/test's refusal of -q, with UPDATE_EXPECT cleared.

use std::process::Command;

const SCRIPTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts");

struct Run {
    ok: bool,
    out: String,
}

impl Run {
    /// Asserts that the verdict passed (`ok`) or failed, and that its output says `text`.
    fn says(&self, ok: bool, text: &str) {
        assert_eq!(self.ok, ok, "{}", self.out);
        assert!(self.out.contains(text), "{}", self.out);
    }
}

/// Runs the verdict over `tally` lines with `listed` ignored tests, a minimum of `min`,
/// and the environment `env`.
fn verdict(tally: &[&str], listed: &[&str], min: u32, env: &[(&str, &str)]) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("totals.tsv");
    let l = dir.path().join("ignored.tsv");
    let m = dir.path().join("minimum");
    std::fs::write(
        &t,
        tally.iter().map(|x| format!("{x}\n")).collect::<String>(),
    )
    .unwrap();
    let mut list = String::from("# source\ttest\treason\n");
    for x in listed {
        list.push_str(x);
        list.push('\n');
    }
    std::fs::write(&l, list).unwrap();
    std::fs::write(&m, format!("{min}\n")).unwrap();
    let mut c = Command::new(format!("{SCRIPTS}/test-verdict"));
    c.args([&t, &l, &m]);
    for v in ["STRICT", "MPI_RAN", "DEPS_MISSING", "ARGS", "STATUS"] {
        c.env_remove(v);
    }
    c.env("MPI_RAN", "1");
    for (k, v) in env {
        c.env(k, v);
    }
    let o = c.output().expect("the verdict runs");
    let out = String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    assert!(o.status.code().is_some_and(|c| c <= 1), "{out}");
    Run {
        ok: o.status.success(),
        out,
    }
}

const PASSED: &str = "crates/x/src/lib.rs\ta\tpassed\t";
const SKIPPED: &str = "crates/x/src/lib.rs\tb\tskipped\tneeds root";
const IGNORED: &str = "crates/x/src/lib.rs\tc\tignored\tneeds a second machine";
const LISTED: &str = "crates/x/src/lib.rs\tc\tneeds a second machine, which CI has not";

#[test]
fn a_full_run_passes_at_its_minimum_and_fails_below_it() {
    let r = verdict(&[PASSED, SKIPPED, IGNORED], &[LISTED], 3, &[]);
    r.says(
        true,
        "tests: 1 passed, 0 failed, 1 skipped, 1 ignored, 0 filtered out",
    );
    let r = verdict(&[PASSED, SKIPPED, IGNORED], &[LISTED], 4, &[]);
    r.says(false, "only 3 tests passed, skipped or were ignored (a failed test counts as none), fewer than the 4 in scripts/test-minimum");
}

#[test]
fn a_filtered_run_is_partial_and_an_unfiltered_one_may_not_filter() {
    let filtered = "crates/x/src/lib.rs\t-\tfiltered\t41";
    let r = verdict(&[PASSED, filtered], &[], 500, &[("ARGS", "1")]);
    r.says(
        true,
        "partial run: 41 filtered out; the minimum of 500 tests",
    );
    let r = verdict(&[PASSED, filtered], &[], 1, &[("ARGS", "0")]);
    r.says(false, "an unfiltered run left 41 tests out");
}

#[test]
fn a_summary_mismatch_fails_the_run() {
    let m = "crates/x/src/lib.rs\t-\tmismatch\tlibtest's summary says 2 passed, 0 failed, 0 ignored, 0 measured; its per-test lines say 0, 0, 0, 0";
    let r = verdict(&[PASSED, m], &[], 0, &[]);
    r.says(
        false,
        "Test binaries whose per-test lines disagree with libtest's summary:",
    );
}

#[test]
fn the_strict_run_fails_on_a_skip_an_unlisted_ignore_or_a_missing_dependency() {
    // Not strict: a skip and an unlisted #[ignore] are counted, reported, tolerated.
    let r = verdict(&[PASSED, SKIPPED, IGNORED], &[], 0, &[]);
    r.says(true, "Tests marked #[ignore] with no reason in scripts/test-ignored.tsv:\n  crates/x/src/lib.rs: c (needs a second machine)");
    let strict = [("STRICT", "1")];
    let r = verdict(&[PASSED, SKIPPED, IGNORED], &[LISTED], 0, &strict);
    r.says(false, "the run is strict (root), so a skip is a failure");
    let r = verdict(&[PASSED, IGNORED], &[], 0, &strict);
    r.says(false, "the run is strict (root), so an #[ignore]d test needs its reason in scripts/test-ignored.tsv");
    let r = verdict(&[PASSED, IGNORED], &[LISTED], 0, &strict);
    assert!(r.ok, "a listed #[ignore] passes the strict run: {}", r.out);
    let r = verdict(&[PASSED], &[], 0, &[("STRICT", "1"), ("DEPS_MISSING", "1")]);
    r.says(false, "test dependencies are missing");
    let r = verdict(&[PASSED], &[], 0, &[("STRICT", "1"), ("MPI_RAN", "0")]);
    assert!(
        !r.ok,
        "the MPI tests not run again fail the strict run: {}",
        r.out
    );
}

#[test]
fn scripts_test_refuses_quiet_and_clears_update_expect() {
    for q in ["-q", "--quiet", "--format=terse", "--list"] {
        let o = Command::new(format!("{SCRIPTS}/test"))
            .arg(q)
            .env("UPDATE_EXPECT", "1")
            .output()
            .expect("scripts/test runs");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{q}: {err}");
        assert!(
            err.contains(&format!("scripts/test: {q} is refused: the totals are counted from libtest's per-test lines")),
            "{err}"
        );
        assert!(
            err.contains("scripts/test: UPDATE_EXPECT is cleared"),
            "{err}"
        );
    }
}
