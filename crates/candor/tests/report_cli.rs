//! `candor report` and `candor compare` driven as a user would: formats to stdout, files
//! written, and every bad input answered with one sentence and exit code 2.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const CANDOR: &str = env!("CARGO_BIN_EXE_candor");

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../candor-report/tests/expected")
        .join(name)
}

fn candor(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(CANDOR)
        .args(args)
        .output()
        .expect("candor runs")
}

fn os(s: &str) -> &std::ffi::OsStr {
    std::ffi::OsStr::new(s)
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

#[test]
fn every_format_renders_the_saved_result_as_the_library_does() {
    let json = fixture("sample.json");
    // The sample has queue depths above 1, which iozone's layout cannot hold: --format
    // iozone prints the table and says why.
    for (format, expected) in [
        ("table", "sample.table.txt"),
        ("csv", "sample.csv"),
        ("markdown", "sample.md"),
        ("iozone", "sample.table.txt"),
        ("excel", "sample.excel.txt"),
        ("json", "sample.json"),
    ] {
        let o = candor(&[os("report"), json.as_os_str(), os("--format"), os(format)]);
        assert_eq!(o.status.code(), Some(0), "{format}: {}", stderr(&o));
        let want = std::fs::read_to_string(fixture(expected)).expect("expected file");
        assert_eq!(stdout(&o), want, "candor report --format {format}");
        if format == "iozone" {
            assert_eq!(
                stderr(&o),
                "candor: iozone's layout holds iozone's tests at queue depth 1, and this run has randread 256m/4k qd4, randread 256m/4k qd16, randread 256m/4k qd32 and 1 more: printed as --format table instead\n"
            );
        } else {
            assert_eq!(stderr(&o), "", "{format}");
        }
    }
    // The default is the table.
    let o = candor(&[os("report"), json.as_os_str()]);
    assert!(stdout(&o).contains("MB/s (95% CI)"));
}

#[test]
fn output_files_are_written_whole() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let out = dir.path().join("r.csv");
    let o = candor(&[
        os("report"),
        fixture("sample.json").as_os_str(),
        os("--format"),
        os("csv"),
        os("-o"),
        out.as_os_str(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).is_empty());
    assert_eq!(stderr(&o), format!("wrote {}\n", out.display()));
    let text = std::fs::read_to_string(&out).expect("written");
    assert!(text.starts_with("target,fs_type,device,test"));
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .expect("listable")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name())
        .collect();
    assert_eq!(left.len(), 1, "no temporary file left behind: {left:?}");
}

#[test]
fn the_output_name_chooses_the_format_unless_one_is_given() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let json = fixture("sample.json");
    for (name, starts) in [
        ("r.html", "<!DOCTYPE html>"),
        ("r.csv", "target,fs_type"),
        ("r.md", "# candor results"),
        ("r.txt", "candor 0.1.0 on bench-1"),
        ("r.report", "<!DOCTYPE html>"),
    ] {
        let out = dir.path().join(name);
        let o = candor(&[os("report"), json.as_os_str(), os("-o"), out.as_os_str()]);
        assert_eq!(o.status.code(), Some(0), "{name}: {}", stderr(&o));
        // The file written is named, on stderr; stdout stays empty.
        assert_eq!(stderr(&o), format!("wrote {}\n", out.display()), "{name}");
        assert!(stdout(&o).is_empty(), "{name}");
        let text = std::fs::read_to_string(&out).expect("written");
        assert!(
            text.starts_with(starts),
            "{name}: {}",
            &text[..text.len().min(80)]
        );
    }
    let out = dir.path().join("r.csv");
    // `candor report JSON -o r.csv --format FORMAT`, which succeeds; what it wrote.
    let report_as = |format: &str| {
        let o = candor(&[
            os("report"),
            json.as_os_str(),
            os("-o"),
            out.as_os_str(),
            os("--format"),
            os(format),
        ]);
        assert_eq!(o.status.code(), Some(0));
        let text = std::fs::read_to_string(&out).expect("written");
        (o, text)
    };
    let (_, text) = report_as("markdown");
    assert!(
        text.starts_with("# candor results"),
        "--format wins over the name"
    );
    // --format iozone of a run iozone's layout cannot hold writes the table, and says so.
    let (o, text) = report_as("iozone");
    assert!(text.contains("MB/s (95% CI)"), "{text}");
    assert!(
        stderr(&o).starts_with("candor: iozone's layout holds iozone's tests at queue depth 1"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn bad_inputs_get_one_sentence_and_exit_code_2() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let foreign = dir.path().join("foreign.json");
    std::fs::write(&foreign, r#"{"jobs": []}"#).expect("write");
    let newer = dir.path().join("newer.json");
    std::fs::write(&newer, r#"{"tool": "candor", "schema_version": 999}"#).expect("write");
    let garbage = dir.path().join("garbage.json");
    std::fs::write(&garbage, "not json at all").expect("write");
    let missing = dir.path().join("missing.json");
    let sample = fixture("sample.json");
    let cases: Vec<(Vec<&std::ffi::OsStr>, &str)> = vec![
        (
            vec![os("report"), foreign.as_os_str()],
            "not a candor result",
        ),
        (
            vec![os("report"), newer.as_os_str()],
            "newer than this candor",
        ),
        (vec![os("report"), garbage.as_os_str()], "is not JSON"),
        (vec![os("report"), missing.as_os_str()], "cannot read"),
        (
            vec![os("report"), sample.as_os_str(), os("--format"), os("pdf")],
            "'pdf' is not a format: choose from table, json,",
        ),
        (
            vec![os("compare"), sample.as_os_str()],
            "nothing to compare",
        ),
        (
            vec![os("compare"), sample.as_os_str(), foreign.as_os_str()],
            "not a candor result",
        ),
    ];
    for (args, words) in cases {
        let o = candor(&args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(words), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "one sentence: {err}");
        assert!(!err.contains("panicked"));
    }
}

#[test]
fn compare_matches_tests_and_names_what_it_cannot_match() {
    let o = candor(&[
        os("compare"),
        fixture("study-ext4.json").as_os_str(),
        fixture("study-xfs.json").as_os_str(),
        fixture("sample.json").as_os_str(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("B/A") && out.contains("C/A"), "{out}");
    assert!(out.contains("1.08x"), "xfs was made 8% faster: {out}");
    assert!(out.contains("Not compared"), "{out}");
    assert!(
        out.contains("has no counterpart in A (study-ext4.json)"),
        "sample's tests are named: {out}"
    );
    assert!(out.contains("Per device and filesystem"));
    assert!(out.contains("Read Sequential"));
    let o = candor(&[
        os("compare"),
        fixture("study-ext4.json").as_os_str(),
        fixture("study-xfs.json").as_os_str(),
        os("--format"),
        os("json"),
    ]);
    let v: serde_json::Value =
        serde_json::from_str(&stdout(&o)).expect("compare --format json is JSON");
    assert_eq!(v["rows"].as_array().map(|r| r.len()), Some(12));
}

#[test]
fn compare_names_the_html_page_it_writes() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let html = dir.path().join("cmp.html");
    let o = candor(&[
        os("compare"),
        fixture("study-ext4.json").as_os_str(),
        fixture("study-xfs.json").as_os_str(),
        os("--html"),
        html.as_os_str(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stderr(&o), format!("wrote {}\n", html.display()));
    assert!(std::fs::read_to_string(&html)
        .expect("written")
        .starts_with("<!DOCTYPE html>"));
}

/// Two repetitions 600 and 1400 MB/s apart give a 95% interval of 1000 ± 5082: the tables
/// show the slowest and fastest repetition and the repetitions an interval needs, and the
/// chart's whisker spans what the table shows.
#[test]
fn an_interval_wider_than_the_mean_is_shown_as_min_max_everywhere() {
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("sample.json")).unwrap()).unwrap();
    let noisy = candor_stats::summarize(&[600e6, 1400e6]);
    doc["results"][0]["throughput"] = serde_json::to_value(&noisy).unwrap();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let json = dir.path().join("noisy.json");
    std::fs::write(&json, serde_json::to_vec(&doc).unwrap()).unwrap();
    let sentence = "(600-1400): the slowest and fastest repetition, shown where so few repetitions give a 95% interval wider than the mean; the interval needs 4 repetitions (--repeat 4)";
    for format in ["table", "markdown"] {
        let o = candor(&[os("report"), json.as_os_str(), os("--format"), os(format)]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let out = stdout(&o);
        let row = out
            .lines()
            .find(|l| l.contains("1000"))
            .unwrap_or_else(|| panic!("no row with the mean: {out}"));
        assert!(row.contains("1000 (600-1400)"), "{format}: {row}");
        assert!(!out.contains("1000 ±"), "{format}: {out}");
        assert!(out.contains(sentence), "{format}: {out}");
    }
    let html = dir.path().join("r.html");
    let o = candor(&[os("report"), json.as_os_str(), os("-o"), html.as_os_str()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains(": 1000 (slowest and fastest repetition 600 to 1400)"),
        "the repetitions chart draws min-max"
    );
    assert!(
        !page.contains("1000 (95% CI -"),
        "no interval below zero is drawn"
    );
}
