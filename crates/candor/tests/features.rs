//! User-facing features checked by their effect: each option or subcommand is run on a
//! small file (1-2 MiB) and the test asserts what it changes in the result, the output or
//! the directory, not only that candor exits 0.

use std::path::Path;
use std::process::Output;

mod common;
use common::{candor, entries, run_in, text};

/// A small run (1 MiB files of 64 KiB records unless `extra` has --auto; write and read
/// unless `extra` has --tests) without the witness, saved to `json`.
fn small_run(dir: &Path, json: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "--witness",
        "off",
        "-o",
        json.to_str().expect("a UTF-8 path"),
    ];
    if !extra.contains(&"--auto") {
        args.extend(["--file-size", "1m", "--record-size", "64k"]);
    }
    if !extra.contains(&"--tests") {
        args.extend(["--tests", "write,read"]);
    }
    args.extend(extra);
    let out = run_in(dir, &args);
    assert!(
        out.status.success(),
        "candor run {args:?}: {}",
        text(&out.stderr)
    );
    out
}

fn json_of(path: &Path) -> serde_json::Value {
    let s = std::fs::read_to_string(path).expect("the result file");
    serde_json::from_str(&s).expect("the result is JSON")
}

fn results(doc: &serde_json::Value) -> &Vec<serde_json::Value> {
    doc["results"].as_array().expect("a results array")
}

/// The test's headline throughput in the saved result.
fn throughput(doc: &serde_json::Value, test: &str) -> f64 {
    results(doc)
        .iter()
        .find(|r| r["test"] == test)
        .unwrap_or_else(|| panic!("no {test} result"))["throughput"]["mean"]
        .as_f64()
        .expect("a throughput")
}

#[test]
fn osync_close_in_timing_stride_and_seed_are_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("t");
    std::fs::create_dir(&work).unwrap();
    let json = dir.path().join("r.json");
    small_run(
        &work,
        &json,
        &[
            "--tests",
            "write,strideread",
            "--osync",
            "--close-in-timing",
            "--stride",
            "5",
            "--seed",
            "7",
        ],
    );
    let doc = json_of(&json);
    assert_eq!(doc["options"]["osync"], true);
    assert_eq!(doc["options"]["close_in_timing"], true);
    assert_eq!(doc["options"]["stride"], 5);
    assert_eq!(doc["options"]["seed"], 7);
    assert_eq!(results(&doc).len(), 2);
    for r in results(&doc) {
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(r["osync"], true, "{}", r["test"]);
        assert_eq!(r["close_in_timing"], true, "{}", r["test"]);
        for rep in r["reps"].as_array().unwrap() {
            let close = rep["close_seconds"].as_f64();
            assert!(
                close.is_some_and(|c| c >= 0.0),
                "{}: close timed, close_seconds {}",
                r["test"],
                rep["close_seconds"]
            );
        }
    }
    // Without the options, the defaults are recorded instead.
    let json2 = dir.path().join("d.json");
    small_run(&work, &json2, &["--tests", "write"]);
    let doc = json_of(&json2);
    assert_eq!(doc["options"]["osync"], false);
    assert_eq!(doc["options"]["close_in_timing"], false);
    assert_eq!(doc["options"]["stride"], 17);
    assert_eq!(doc["options"]["seed"], 206229700);
    assert_eq!(results(&doc)[0]["osync"], false);
    assert_eq!(results(&doc)[0]["close_in_timing"], false);
}

#[test]
fn auto_sweep_starts_and_ends_where_asked() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("a.json");
    let work = dir.path().join("t");
    std::fs::create_dir(&work).unwrap();
    small_run(
        &work,
        &json,
        &[
            "--tests",
            "write",
            "--auto",
            "--min-file-size",
            "1m",
            "--max-file-size",
            "2m",
            "--min-record-size",
            "256k",
            "--max-record-size",
            "1m",
        ],
    );
    let doc = json_of(&json);
    let mut got: Vec<(u64, u64)> = results(&doc)
        .iter()
        .map(|r| {
            (
                r["file_size"].as_u64().unwrap(),
                r["record_size"].as_u64().unwrap(),
            )
        })
        .collect();
    got.sort_unstable();
    let (m, k) = (1 << 20, 1 << 10);
    let want = vec![
        (m, 256 * k),
        (m, 512 * k),
        (m, m),
        (2 * m, 256 * k),
        (2 * m, 512 * k),
        (2 * m, m),
    ];
    assert_eq!(got, want);
}

#[test]
fn unknown_preset_is_one_sentence_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let out = candor()
        .arg("run")
        .arg(dir.path())
        .args(["--preset", "nosuch", "--quiet"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("nosuch") && err.contains("iozone"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(out.stdout.is_empty());
    assert!(entries(dir.path()).is_empty(), "nothing left behind");
}

/// Runs one write test printing `format`, saved to JSON too; gives stdout and the JSON.
fn formatted(format: &str) -> (String, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("t");
    std::fs::create_dir(&work).unwrap();
    let json = dir.path().join("r.json");
    let out = small_run(&work, &json, &["--tests", "write", "--format", format]);
    (text(&out.stdout), json_of(&json))
}

#[test]
fn format_json_is_the_saved_result() {
    let (out, doc) = formatted("json");
    let printed: serde_json::Value = serde_json::from_str(&out).expect("stdout is JSON");
    assert_eq!(printed["results"], doc["results"]);
    assert_eq!(printed["options"]["format"], "json");
}

#[test]
fn format_csv_has_one_row_per_test_with_its_figure() {
    let (out, doc) = formatted("csv");
    let mut rows = csv_rows(&out);
    let header = rows.remove(0);
    assert_eq!(rows.len(), 1, "{out}");
    let row = &rows[0];
    assert_eq!(row.len(), header.len(), "{out}");
    let col = |name: &str| {
        let i = header.iter().position(|h| h == name).unwrap();
        row[i].clone()
    };
    assert_eq!(col("test"), "write");
    assert_eq!(col("file_size"), "1048576");
    assert_eq!(col("record_size"), "65536");
    let tp: f64 = col("throughput_mean").parse().unwrap();
    assert_eq!(tp, throughput(&doc, "write"));
}

/// Splits CSV text into rows of fields (quoted fields with commas and doubled quotes).
fn csv_rows(s: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for line in s.lines().filter(|l| !l.is_empty()) {
        let mut fields = Vec::new();
        let mut cur = String::new();
        let mut quoted = false;
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '"' if quoted && chars.peek() == Some(&'"') => {
                    cur.push('"');
                    chars.next();
                }
                '"' => quoted = !quoted,
                ',' if !quoted => fields.push(std::mem::take(&mut cur)),
                c => cur.push(c),
            }
        }
        fields.push(cur);
        rows.push(fields);
    }
    rows
}

#[test]
fn format_markdown_has_a_table_with_the_test() {
    let (out, doc) = formatted("markdown");
    let table: Vec<&str> = out.lines().filter(|l| l.starts_with('|')).collect();
    assert!(table.len() >= 3, "header, rule and a row: {out}");
    let pipes = table[0].matches('|').count();
    assert!(pipes >= 3, "{out}");
    for l in &table[..3] {
        assert_eq!(l.matches('|').count(), pipes, "{l}");
    }
    assert!(table[1].contains("---"), "{out}");
    let row = table
        .iter()
        .find(|l| l.contains("write"))
        .unwrap_or_else(|| panic!("no write row: {out}"));
    // The headline in MB/s (decimal), as the table rounds it.
    let mbs = throughput(&doc, "write") / 1e6;
    let shown = row
        .split('|')
        .map(str::trim)
        .filter_map(|c| c.parse::<f64>().ok())
        .any(|v| (v - mbs).abs() <= (mbs * 0.01).max(1.0));
    assert!(shown, "{mbs} MB/s not in {row}");
}

/// The iozone table: header words, then the row of 1024 kB / 64 kB records with the write
/// figure in kB/s.
fn assert_iozone_table(out: &str, doc: &serde_json::Value) {
    assert!(out.contains("Output is in kBytes/sec"), "{out}");
    assert!(
        out.lines().any(|l| l
            .split_whitespace()
            .take(5)
            .eq(["kB", "reclen", "write", "rewrite", "read"])),
        "{out}"
    );
    let row: Vec<&str> = out
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|w| w.len() >= 3 && w[0] == "1024" && w[1] == "64")
        .unwrap_or_else(|| panic!("no 1024 64 row: {out}"));
    let kbs: f64 = row[2].parse().unwrap();
    let want = throughput(doc, "write") / 1024.0;
    assert!(
        (kbs - want).abs() <= 1.0,
        "{kbs} kB/s, the result says {want}"
    );
}

#[test]
fn format_iozone_and_excel_print_iozones_table() {
    for f in ["iozone", "excel"] {
        let (out, doc) = formatted(f);
        assert_iozone_table(&out, &doc);
    }
}

#[test]
fn format_table_has_the_header_and_the_test_row() {
    let (out, doc) = formatted("table");
    let header = out
        .lines()
        .find(|l| l.starts_with("test "))
        .unwrap_or_else(|| panic!("no header: {out}"));
    for w in ["file", "rec", "MB/s", "IOPS", "verdict"] {
        assert!(header.contains(w), "{header}");
    }
    let row: Vec<&str> = out
        .lines()
        .find(|l| l.starts_with("write "))
        .unwrap_or_else(|| panic!("no write row: {out}"))
        .split_whitespace()
        .collect();
    assert_eq!(&row[..3], ["write", "1m", "64k"]);
    let mbs: f64 = row[5].parse().unwrap();
    let want = throughput(&doc, "write") / 1e6;
    assert!(
        (mbs - want).abs() <= (want * 0.01).max(1.0),
        "{mbs}, the result says {want}"
    );
}

#[test]
fn preset_iozone_prints_iozones_table_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let out = candor()
        .arg("run")
        .arg(dir.path())
        .args([
            "--preset",
            "iozone",
            "--tests",
            "write",
            "--file-size",
            "1m",
            "--record-size",
            "64k",
            "--witness",
            "off",
            "--quiet",
        ])
        .output()
        .unwrap();
    let s = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(s.contains("Output is in kBytes/sec"), "{s}");
    assert!(s.contains("reclen"), "{s}");
    assert!(!s.contains("verdict"), "not candor's table: {s}");
}

#[test]
fn compare_csv_has_a_row_per_side_of_each_test_with_the_ratio() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("t");
    std::fs::create_dir(&work).unwrap();
    let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
    small_run(&work, &a, &[]);
    small_run(&work, &b, &[]);
    let out = candor()
        .arg("compare")
        .args([&a, &b])
        .args(["--format", "csv"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let s = text(&out.stdout);
    let mut rows = csv_rows(&s);
    let header = rows.remove(0);
    let at = |name: &str| header.iter().position(|h| h == name).unwrap();
    let (test, ratio, mean) = (at("test"), at("ratio"), at("throughput_mean"));
    for r in &rows {
        assert_eq!(r.len(), header.len(), "{s}");
    }
    for t in ["write", "read"] {
        let sides: Vec<&Vec<String>> = rows.iter().filter(|r| r[test] == t).collect();
        assert_eq!(sides.len(), 2, "{t}: one row per side: {s}");
        let m: Vec<f64> = sides.iter().map(|r| r[mean].parse().unwrap()).collect();
        assert_eq!(m[0], throughput(&json_of(&a), t));
        assert_eq!(m[1], throughput(&json_of(&b), t));
        // The second side's ratio is its throughput over the first's.
        let r: f64 = sides[1][ratio].parse().expect("a ratio");
        assert!(
            (r - m[1] / m[0]).abs() <= 1e-3 * r,
            "{r} vs {}",
            m[1] / m[0]
        );
    }
}

#[test]
fn doctor_verbose_says_more() {
    let dir = tempfile::tempdir().unwrap();
    let run = |verbose: bool| {
        let mut c = candor();
        c.arg("doctor");
        if verbose {
            c.arg("--verbose");
        }
        let out = c.arg(dir.path()).output().unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    let (short, long) = (run(false), run(true));
    assert!(
        long.lines().count() > short.lines().count(),
        "--verbose:\n{long}\nplain:\n{short}"
    );
}

#[test]
fn report_to_json_writes_the_same_result() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("t");
    std::fs::create_dir(&work).unwrap();
    let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
    small_run(&work, &a, &[]);
    let out = candor()
        .arg("report")
        .arg(&a)
        .arg("-o")
        .arg(&b)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(json_of(&b), json_of(&a));
}

#[test]
fn clean_removes_a_dead_runs_directory_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    // A run directory whose owner has exited: a child of ours, waited for.
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap();
    let stale = dir.path().join(".candor-stale");
    std::fs::create_dir(&stale).unwrap();
    std::fs::write(
        stale.join("CANDOR-RUN"),
        format!("{{\"pid\":{pid},\"boot_id\":\"{}\"}}", boot.trim()),
    )
    .unwrap();
    std::fs::write(stale.join("candor.0.dat"), b"old data").unwrap();
    // Not candor's: a file and a directory without the marker.
    std::fs::write(dir.path().join("mine.txt"), b"keep").unwrap();
    std::fs::create_dir(dir.path().join(".candor-notours")).unwrap();
    let out = candor()
        .arg("clean")
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!stale.exists(), "{}", text(&out.stdout));
    assert!(
        text(&out.stdout).contains(".candor-stale"),
        "{}",
        text(&out.stdout)
    );
    let mut left: Vec<String> = entries(dir.path())
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, [".candor-notours", "mine.txt"]);
    assert_eq!(std::fs::read(dir.path().join("mine.txt")).unwrap(), b"keep");
}

#[test]
fn html_is_written_self_contained_with_the_results() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("t");
    std::fs::create_dir(&work).unwrap();
    let (json, html) = (dir.path().join("a.json"), dir.path().join("r.html"));
    small_run(&work, &json, &["--html", html.to_str().unwrap()]);
    let page = std::fs::read_to_string(&html).expect("the HTML report was written");
    assert!(
        page.trim_start()
            .to_lowercase()
            .starts_with("<!doctype html"),
        "{}",
        &page[..80.min(page.len())]
    );
    assert!(page.trim_end().ends_with("</html>"));
    for t in ["write", "read"] {
        assert!(page.contains(t), "no {t} in the page");
    }
    // Self-contained: nothing fetched from elsewhere.
    for ext in ["<script src", "<link ", "src=\"http", "href=\"http"] {
        assert!(!page.contains(ext), "{ext} in the page");
    }
}

#[test]
fn audit_quiet_keeps_the_commands_output_back() {
    let dir = tempfile::tempdir().unwrap();
    let run = |quiet: bool| {
        let mut c = candor();
        c.args(["audit", "--witness", "procfs"]);
        if quiet {
            c.arg("-q");
        }
        let out = c
            .args(["--", "sh", "-c", "echo output-of-the-command"])
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    assert!(run(false).contains("output-of-the-command"));
    assert!(!run(true).contains("output-of-the-command"));
}

#[test]
fn audit_of_a_command_that_cannot_start_exits_126() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("not-executable.sh");
    std::fs::write(&script, "#!/bin/sh\necho hi\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = candor()
        .args(["audit", "--witness", "procfs", "--"])
        .arg(&script)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(126), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains("could not be started"), "{err}");
    assert!(
        !text(&out.stdout).lines().any(|l| l.trim() == "hi"),
        "the script ran"
    );
}
