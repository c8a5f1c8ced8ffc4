//! Advice that fits, through the real binary: no explanation, note or warning asks for an
//! option the run already used or one candor refuses with the options given
//! (candor_model::advice).

mod common;
use candor_model::advice::conflict;
use candor_model::RunDoc;
use common::{entries, run_in};
use std::path::Path;

fn scratch_dir() -> tempfile::TempDir {
    tempfile::tempdir_in("/var/tmp")
        .or_else(|_| tempfile::tempdir())
        .unwrap()
}

/// Runs candor in `dir` with `args` and the JSON document on stdout.
fn run_doc(dir: &Path, args: &[&str]) -> RunDoc {
    let mut all = args.to_vec();
    all.extend(["--format", "json"]);
    let o = run_in(dir, &all);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).expect("a JSON document")
}

/// Every result's explanation against the options its facts hold; returns them.
fn explanations_fit(doc: &RunDoc) -> Vec<String> {
    let mut out = Vec::new();
    for r in &doc.results {
        let w = r.witness.as_ref().expect("a witness");
        let f = w.extra.facts.as_ref().expect("the facts are kept");
        let given = f
            .given
            .as_ref()
            .expect("the run's options are kept in the facts");
        if !given.steady_state {
            assert_eq!(given.repeat, r.reps.len() as u32, "{}", r.test);
        }
        if let Some(why) = conflict(&w.explanation, &f.in_force()) {
            panic!("{} {}: {why}: {}", r.test, r.record_size, w.explanation);
        }
        out.push(w.explanation.clone());
    }
    out
}

#[test]
fn the_iozone_preset_is_never_told_to_leave_out_a_flag_it_was_not_given() {
    let dir = scratch_dir();
    let out = tempfile::tempdir().unwrap();
    let html = out.path().join("r.html");
    let html_arg = html.display().to_string();
    // iozone's sweep, cut down to two file sizes and the write tests: the flush is timed,
    // nobody gave --no-fsync-in-timing.
    let doc = run_doc(
        dir.path(),
        &[
            "--preset",
            "iozone",
            "--tests",
            "write,rewrite,randwrite,recrewrite",
            "--file-size",
            "1m,8m",
            "--record-size",
            "4k,64k",
            "--html",
            &html_arg,
        ],
    );
    assert!(!doc.results.is_empty());
    for e in explanations_fit(&doc) {
        assert!(!e.contains("--no-fsync-in-timing"), "{e}");
    }
    // The report the user reads says the same: no flag nobody gave.
    let page = std::fs::read_to_string(&html).expect("the HTML report");
    assert!(page.contains("recrewrite"), "the rows are in the report");
    assert!(!page.contains("--no-fsync-in-timing"), "{html_arg}");
    // One story per row: a note that says the timed region waited for the device does not
    // also call the figure memory speed, nor say the thread was on the CPU all along.
    for r in &doc.results {
        let w = r.witness.as_ref().unwrap();
        let waited = w
            .operations
            .as_ref()
            .and_then(|o| o.waited_time_share)
            .unwrap_or(0.0);
        let e = &w.explanation;
        if waited > 0.05 {
            assert!(!e.contains("this is memory speed"), "{e}");
            assert_ne!(w.verdict, candor_model::Verdict::Cache, "{e}");
        }
        if waited > 0.1 {
            assert!(!e.contains("on the CPU"), "{e}");
        }
    }
    for r in &doc.results {
        let f = r.witness.as_ref().unwrap().extra.facts.as_ref().unwrap();
        let g = f.given.as_ref().unwrap();
        assert_eq!(g.preset.as_deref(), Some("iozone"));
        assert!(!g.no_fsync_in_timing);
        assert!(
            f.flush_in_timing,
            "{}: iozone's writes time the flush",
            r.test
        );
    }
    assert!(entries(dir.path()).is_empty(), "nothing left behind");
}

#[test]
fn unixbench_copy_is_not_told_to_time_a_flush_its_preset_leaves_out_or_to_use_direct() {
    let dir = scratch_dir();
    let doc = run_doc(
        dir.path(),
        &["--preset", "unixbench-copy", "--runtime", "500ms"],
    );
    assert_eq!(doc.results.len(), 3);
    for e in explanations_fit(&doc) {
        // The figures are the page cache's, as the preset means them to be; nothing candor
        // accepts with the preset changes that, so no remedy is given.
        assert!(
            !e.contains("--no-fsync-in-timing") && !e.contains("--direct"),
            "{e}"
        );
        // A share is never said as 0%: none is none.
        assert!(!e.contains(" 0% "), "{e}");
    }
    for r in &doc.results {
        let g = r
            .witness
            .as_ref()
            .unwrap()
            .extra
            .facts
            .as_ref()
            .unwrap()
            .given
            .clone()
            .unwrap();
        assert_eq!(g.preset.as_deref(), Some("unixbench-copy"));
        assert!(!g.direct_accepted, "copy takes no O_DIRECT");
    }
}

#[test]
fn the_flag_given_is_the_one_the_advice_names() {
    let dir = scratch_dir();
    // --no-fsync-in-timing given: buffered writes of a small file are the page cache's, and
    // the advice names the flag that made them so.
    let doc = run_doc(
        dir.path(),
        &[
            "--tests",
            "write",
            "--file-size",
            "8m",
            "--record-size",
            "64k",
            "--no-fsync-in-timing",
        ],
    );
    let e = explanations_fit(&doc);
    let r = &doc.results[0];
    let w = r.witness.as_ref().unwrap();
    if w.verdict == candor_model::Verdict::Cache {
        assert!(
            e[0].contains(
                "Include the flush in the timing (leave out --no-fsync-in-timing) or use --direct."
            ),
            "{}",
            e[0]
        );
    }
    assert!(
        w.extra
            .facts
            .as_ref()
            .unwrap()
            .given
            .as_ref()
            .unwrap()
            .no_fsync_in_timing
    );
}

#[test]
fn a_steady_state_round_that_cannot_cover_its_file_asks_for_longer_rounds() {
    let dir = scratch_dir();
    // Rounds of 50 ms over a 512 MiB file read from the device: none covers it.
    let doc = run_doc(
        dir.path(),
        &[
            "--tests",
            "read",
            "--file-size",
            "512m",
            "--record-size",
            "4k",
            "--steady-state=round=50ms,max=3,window=2",
        ],
    );
    explanations_fit(&doc);
    let cut: Vec<&String> = doc
        .warnings
        .iter()
        .filter(|w| w.contains("of the file; the figure covers only that part"))
        .collect();
    assert!(!cut.is_empty(), "{:?}", doc.warnings);
    for w in &doc.warnings {
        assert!(
            !w.contains("--runtime"),
            "--steady-state refuses --runtime: {w}"
        );
    }
    assert!(
        cut[0].ends_with("give longer rounds (--steady-state=round=...) to cover the whole file"),
        "{}",
        cut[0]
    );
}
