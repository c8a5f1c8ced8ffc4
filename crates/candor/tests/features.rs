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

/// One thread's repetition: its headline span is its I/O, then its flush, then (with
/// --close-in-timing) its close, each measured in whole nanoseconds.
fn span_parts(rep: &serde_json::Value) -> (f64, f64, f64, f64) {
    let f = |k: &str| rep[k].as_f64().unwrap_or_else(|| panic!("{k} in {rep}"));
    (
        f("seconds"),
        f("io_seconds"),
        f("flush_seconds"),
        f("close_seconds"),
    )
}

#[test]
fn close_in_timing_puts_the_close_in_the_headline_span() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("t");
    std::fs::create_dir(&work).unwrap();
    for (closed, extra) in [(true, &["--close-in-timing"][..]), (false, &[][..])] {
        let json = dir.path().join(format!("c{closed}.json"));
        small_run(
            &work,
            &json,
            &[&["--tests", "write", "--repeat", "3"], extra].concat(),
        );
        let doc = json_of(&json);
        for rep in results(&doc)[0]["reps"].as_array().unwrap() {
            let (secs, io, flush, close) = span_parts(rep);
            assert!(flush > 0.0, "the write's flush is timed by default: {rep}");
            if closed {
                assert!(close > 0.0, "the close was timed: {rep}");
                assert!((secs - (io + flush + close)).abs() < 1e-9, "{rep}");
            } else {
                assert_eq!(close, 0.0, "no close timed without the option: {rep}");
                assert!((secs - (io + flush)).abs() < 1e-9, "{rep}");
            }
        }
    }
}

/// The offsets of the 4 KiB reads candor made, in order, as strace saw them.
fn pread_offsets(work: &Path, extra: &[&str]) -> Vec<u64> {
    let trace = work.join("..").join("strace.txt");
    let out = std::process::Command::new("strace")
        .args([
            "-f",
            "-qq",
            "-e",
            "trace=pread64",
            "-e",
            "signal=none",
            "-o",
        ])
        .arg(&trace)
        .arg(env!("CARGO_BIN_EXE_candor"))
        .arg("run")
        .arg(work)
        .args([
            "--tests",
            "strideread",
            "--engine",
            "psync",
            "--file-size",
            "64k",
            "--record-size",
            "4k",
            "--witness",
            "off",
            "--repeat",
            "1",
            "--quiet",
        ])
        .args(extra)
        .output()
        .expect("strace runs");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let t = std::fs::read_to_string(&trace).expect("strace's output");
    // "PID pread64(FD, "..."..., 4096, OFFSET) = 4096"
    t.lines()
        .filter(|l| l.contains("pread64(") && l.ends_with(") = 4096"))
        .filter_map(|l| {
            let args = l.rsplit_once(") = ")?.0;
            let mut f = args.rsplit(", ");
            let off = f.next()?.parse().ok()?;
            (f.next()? == "4096").then_some(off)
        })
        .collect()
}

/// --stride decides the order strideread reads its records in: 16 records of 4 KiB with a
/// stride of 5 are read 0, 5, 10, 15, 4, ... (each once); the default stride, 17, is one
/// record at a time over 16 records.
#[test]
fn stride_decides_the_order_of_the_reads() {
    if !common::need_programs(&["strace"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("t");
    std::fs::create_dir(&work).unwrap();
    let want: Vec<u64> = [0, 5, 10, 15, 4, 9, 14, 3, 8, 13, 2, 7, 12, 1, 6, 11]
        .iter()
        .map(|r| r * 4096)
        .collect();
    assert_eq!(pread_offsets(&work, &["--stride", "5"]), want);
    let seq: Vec<u64> = (0..16).map(|r| r * 4096).collect();
    assert_eq!(pread_offsets(&work, &[]), seq);
    assert!(entries(&work).is_empty());
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
    // The headline in MB/s (decimal), as the table rounds it (the cell's first figure:
    // three repetitions add their interval after it).
    let mbs = throughput(&doc, "write") / 1e6;
    let shown = row
        .split('|')
        .filter_map(|c| c.split_whitespace().next())
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

/// A plan iozone's layout cannot hold (here a metadata test beside write) is printed as the
/// table, with one sentence on stderr saying why; nothing of it is left out.
#[test]
fn format_iozone_of_a_plan_that_is_not_iozones_prints_the_table() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("t");
    std::fs::create_dir(&work).unwrap();
    let json = dir.path().join("r.json");
    let out = small_run(
        &work,
        &json,
        &[
            "--tests",
            "write,create",
            "--files",
            "20",
            "--format",
            "iozone",
        ],
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(!stdout.contains("kBytes/sec"), "{stdout}");
    assert!(stdout.contains("MB/s (95% CI)"), "{stdout}");
    assert!(
        stdout.lines().any(|l| l.starts_with("create ")),
        "every result is in the table: {stdout}"
    );
    let said: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("iozone's layout"))
        .collect();
    assert_eq!(
        said,
        ["candor: iozone's layout holds iozone's tests at queue depth 1, and this run has create: printed as --format table instead"],
        "{stderr}"
    );
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
    // --verbose adds one line per tracepoint present ("  name  ok  present"), as many as
    // the plain summary line counts ("N of M present..."), or none when tracefs could
    // not be read; the other lines are the same.
    let present = short
        .lines()
        .find(|l| l.trim_start().starts_with("tracepoints"))
        .expect("a tracepoints line")
        .split_whitespace()
        .nth(2)
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or(0);
    // (The names are padded to the longest, which --verbose makes longer.)
    let words = |t: &str| -> Vec<String> {
        t.lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect()
    };
    let (short_w, long_w) = (words(&short), words(&long));
    let added: Vec<&String> = long_w.iter().filter(|l| !short_w.contains(l)).collect();
    assert_eq!(added.len(), present, "--verbose:\n{long}\nplain:\n{short}");
    assert!(
        added
            .iter()
            .all(|l| l.split(' ').count() == 3 && l.contains(':') && l.ends_with(" ok present")),
        "{added:?}"
    );
    assert_eq!(
        long.lines().count(),
        short.lines().count() + present,
        "--verbose:\n{long}\nplain:\n{short}"
    );
    if candor_testkit::is_root() && candor_testkit::kernel_bpf().is_ok() {
        assert!(present > 0, "{short}");
    }
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
    // A run directory whose owner has exited: a candor run killed mid-test.
    let stale = common::dead_run(dir.path());
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
        text(&out.stdout).contains(&format!(
            "removed {} (dead run of pid",
            std::path::Path::new(".")
                .join(stale.file_name().unwrap())
                .display()
        )),
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
    // The results table has one row per result, in order: the test, its file and record
    // sizes, 1 thread at depth 1, and its mean throughput in MB/s as the result file has
    // it, to the digits printed (half a unit of the last one).
    let doc = json_of(&json);
    let results = doc["results"].as_array().expect("results");
    assert_eq!(page.matches("<tr id=\"r").count(), results.len(), "{page}");
    for (i, r) in results.iter().enumerate() {
        let start = page
            .find(&format!("<tr id=\"r{i}\">"))
            .unwrap_or_else(|| panic!("no row r{i}"));
        let row = &page[start..start + page[start..].find("</tr>").expect("the row ends")];
        let cells: Vec<&str> = row
            .split("<td")
            .skip(1)
            .map(|c| {
                let c = &c[c.find('>').expect("a cell") + 1..];
                &c[..c.find("</td>").expect("the cell ends")]
            })
            .collect();
        let test = r["test"].as_str().expect("a test name");
        assert_eq!(cells[..5], [test, "1m", "64k", "1", "1"], "{row}");
        let mbs = r["throughput"]["mean"].as_f64().expect("a mean") / 1e6;
        // The cell is the mean, then its interval or (when the interval is wider than the
        // mean) the range of the repetitions: the mean is its first figure.
        let mean = cells[5].split_whitespace().next().expect("a figure");
        let shown: f64 = mean.parse().expect("MB/s is a number");
        let decimals = mean.split_once('.').map_or(0, |(_, d)| d.len()) as i32;
        assert!(
            (shown - mbs).abs() <= 0.5 * 10f64.powi(-decimals) + 1e-9,
            "{test}: the page says {} MB/s, the result {mbs}",
            cells[5]
        );
    }
    assert_eq!(
        results
            .iter()
            .map(|r| r["test"].as_str())
            .collect::<Vec<_>>(),
        [Some("write"), Some("read")]
    );
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

const MIB: u64 = 1 << 20;

/// A block device's bytes at `off`, read past the page cache (`candor` wrote them with
/// O_DIRECT; whatever the cache held before is dropped first).
fn device_bytes(dev: &str, off: u64, len: usize) -> Vec<u8> {
    use std::os::unix::fs::FileExt;
    use std::os::unix::io::AsRawFd;
    let f = std::fs::File::open(dev).expect("open the device to read it");
    // SAFETY: a valid descriptor; advice only.
    unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    let mut b = vec![0u8; len];
    f.read_exact_at(&mut b, off).expect("read the device");
    b
}

/// Overwrites `len` bytes of a device at `off` with zeros, durably.
fn zero_device(dev: &str, off: u64, len: usize) {
    use std::os::unix::fs::FileExt;
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(dev)
        .expect("open the device to zero it");
    f.write_all_at(&vec![0u8; len], off)
        .expect("zero the device");
    f.sync_all().expect("sync the device");
}

/// The bytes a write test with `--seed seed` leaves in its file. The run's files are
/// removed after a run on a directory, so the test writes to a raw loop device instead
/// (`--allow-device-writes`), where "the file" is the device's first `--file-size` bytes
/// and nothing is removed; the buffers are filled by the same engines either way. The
/// region is zeroed before each run, so what is read back is what that run wrote.
fn written_with_seed(dev: &str, seed: u64) -> Vec<u8> {
    let len = 4 * MIB as usize;
    zero_device(dev, 0, len);
    let out = candor()
        .args(["run", "--allow-device-writes", dev, "--quiet"])
        .args([
            "--tests",
            "write",
            "--file-size",
            "4m",
            "--record-size",
            "64k",
        ])
        .args(["--witness", "off", "--seed", &seed.to_string()])
        .output()
        .expect("candor runs");
    assert!(out.status.success(), "--seed {seed}: {}", text(&out.stderr));
    device_bytes(dev, 0, len)
}

#[test]
fn seed_decides_the_data_written() {
    if !common::need_root("for a loop device") {
        return;
    }
    let Some(d) = common::need_or(
        candor_lab::scratch_device(16 * MIB),
        candor_lab::LabError::is_unsupported,
    ) else {
        return;
    };
    let dev = d.loop_device.clone();
    let a = written_with_seed(&dev, 7);
    let zeros = a.iter().filter(|&&b| b == 0).count();
    assert!(
        zeros < a.len() / 100,
        "the write test wrote its data: {zeros} zero bytes of {}",
        a.len()
    );
    assert!(
        a == written_with_seed(&dev, 7),
        "the same seed, the same bytes"
    );
    // Another seed, and seeds that differ only in their lowest bit.
    assert!(
        a != written_with_seed(&dev, 8),
        "seeds 7 and 8 wrote the same bytes"
    );
    let two = written_with_seed(&dev, 2);
    assert!(
        two != written_with_seed(&dev, 3),
        "seeds 2 and 3 wrote the same bytes"
    );
    // Nothing past the file was touched.
    assert!(device_bytes(&dev, 4 * MIB, MIB as usize)
        .iter()
        .all(|&b| b == 0));
}

/// How many of a file's pages are in the page cache, and of how many (mincore).
fn resident(path: &Path) -> (usize, usize) {
    use std::os::unix::io::AsRawFd;
    let f = std::fs::File::open(path).expect("open the file");
    let len = f.metadata().unwrap().len() as usize;
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
    let pages = len.div_ceil(page);
    let mut vec = vec![0u8; pages];
    // SAFETY: a shared read-only mapping of an open file of `len` bytes, looked at by
    // mincore (which reads no page in) and unmapped before return.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            f.as_raw_fd(),
            0,
        );
        assert_ne!(p, libc::MAP_FAILED, "mmap {}", path.display());
        assert_eq!(libc::mincore(p, len, vec.as_mut_ptr()), 0, "mincore");
        libc::munmap(p, len);
    }
    (vec.iter().filter(|&&v| v & 1 == 1).count(), pages)
}

#[test]
fn drop_caches_drops_every_clean_page_and_needs_root() {
    if !common::need_root("to write /proc/sys/vm/drop_caches") {
        return;
    }
    let Some(fs) = common::scratch("ext4", 64 * MIB) else {
        return;
    };
    // A file of the user's beside the run: written, synced, read, so all of it is cached
    // and clean. candor never touches it; only dropping every cache drops its pages.
    let theirs = fs.path().join("theirs.dat");
    std::fs::write(&theirs, vec![0x5au8; 4 * MIB as usize]).unwrap();
    std::fs::File::open(&theirs).unwrap().sync_all().unwrap();
    let _ = std::fs::read(&theirs).unwrap();
    let (cached, pages) = resident(&theirs);
    assert_eq!(cached, pages, "the user's file is cached before the runs");
    let json = fs.path().join("r.json");
    let run = |extra: &[&str]| {
        let mut args = vec!["--tests", "write,read", "--file-size", "1m"];
        args.extend(["--record-size", "64k", "--witness", "off"]);
        args.extend(["-o", json.to_str().unwrap()]);
        args.extend(extra);
        let out = run_in(fs.path(), &args);
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        json_of(&json)
    };
    // Without the option candor drops only its own files' pages.
    let doc = run(&[]);
    assert_eq!(doc["options"]["drop_caches"], false);
    assert_eq!(
        resident(&theirs),
        (pages, pages),
        "a run without --drop-caches left the user's file cached"
    );
    let doc = run(&["--drop-caches"]);
    assert_eq!(doc["options"]["drop_caches"], true);
    let (left, _) = resident(&theirs);
    assert!(
        left <= pages / 100,
        "--drop-caches left {left} of the user's {pages} pages cached"
    );
    assert_eq!(
        std::fs::read(&theirs).unwrap(),
        vec![0x5au8; 4 * MIB as usize]
    );

    // Without root it is refused, not silently skipped.
    let Some(mut nobody) = common::candor_as_nobody() else {
        return;
    };
    let open = tempfile::tempdir().unwrap();
    std::fs::set_permissions(
        open.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .unwrap();
    let out = nobody
        .arg("run")
        .arg(open.path())
        .args([
            "--tests",
            "read",
            "--file-size",
            "64k",
            "--drop-caches",
            "--quiet",
        ])
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--drop-caches") && err.contains("run as root"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "one sentence: {err}");
    assert!(entries(open.path()).is_empty(), "nothing left behind");
}

/// The times of a witness timeline's samples, seconds from the start of the timed region.
fn sample_times(r: &serde_json::Value) -> Vec<f64> {
    r["witness"]["timeline"]
        .as_array()
        .expect("a timeline")
        .iter()
        .map(|p| p["t"].as_f64().expect("a sample time"))
        .collect()
}

#[test]
fn witness_interval_sets_the_timelines_sample_spacing() {
    let dir = tempfile::tempdir().unwrap();
    // 600 ms of cached random reads, sampled every 20 ms and every 100 ms.
    let timeline = |interval: &str| {
        let out = run_in(
            dir.path(),
            &[
                "--tests",
                "randread",
                "--file-size",
                "4m",
                "--record-size",
                "4k",
                "--engine",
                "psync",
                "--keep-cache",
                "--runtime",
                "600ms",
                "--time-based",
                "--witness",
                "procfs",
                "--witness-interval",
                interval,
                "--format",
                "json",
            ],
        );
        assert!(out.status.success(), "{}", text(&out.stderr));
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        sample_times(&doc["results"][0])
    };
    for (interval, secs) in [("20ms", 0.020), ("100ms", 0.100)] {
        let t = timeline(interval);
        // A sample every interval from the start of the timed region, and one more at its
        // end: the first never comes before one interval, and on average they are one
        // interval apart (a busy machine delays some and leaves out others, never more
        // often than asked).
        assert!(t.len() >= 4, "{interval}: {t:?}");
        assert!(
            t[0] >= secs * 0.95,
            "{interval}: first sample at {} s",
            t[0]
        );
        let sampled = &t[..t.len() - 1];
        let mean = (sampled[sampled.len() - 1] - sampled[0]) / (sampled.len() - 1) as f64;
        assert!(
            mean >= secs * 0.9 && mean <= secs * 2.0,
            "{interval}: samples {mean} s apart on average: {t:?}"
        );
    }
    // A bad value: exit 2, one sentence naming the option, nothing left behind.
    let out = run_in(
        dir.path(),
        &[
            "--tests",
            "read",
            "--file-size",
            "64k",
            "--witness-interval",
            "0",
        ],
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--witness-interval"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one sentence: {err}");
    assert!(entries(dir.path()).is_empty(), "left behind");
}

#[test]
fn audit_interval_sets_how_often_the_command_is_sampled() {
    // The audit samples /proc every interval, and the command's exit wakes it at once
    // (a pidfd): a 300 ms command is seen to end when it did, whatever the period, and the
    // audit says which period it sampled at. (How many readings each period makes is
    // counted with strace in tests/audit_signals.rs.)
    let dir = tempfile::tempdir().unwrap();
    let wall_as = |interval: &str, ms: &str| {
        let json = dir.path().join(format!("a{interval}.json"));
        let out = candor()
            .args([
                "audit",
                "--witness",
                "procfs",
                "--interval",
                interval,
                "-q",
                "-o",
            ])
            .arg(&json)
            .args(["--", "sleep", "0.3"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        let doc = json_of(&json);
        let notes = doc["audit"]["notes"].to_string();
        assert!(
            notes.contains(&format!("sampling /proc every {ms} ms")),
            "{notes}"
        );
        doc["audit"]["wall_s"]
            .as_f64()
            .expect("the audit's wall time")
    };
    let wall = |interval: &str| wall_as(interval, interval);
    let fine = wall("5");
    assert!(
        (0.3..0.8).contains(&fine),
        "every 5 ms: seen to end at {fine} s"
    );
    let coarse = wall("1000");
    assert!(
        (0.3..0.8).contains(&coarse),
        "every 1000 ms: seen to end at {coarse} s, not at the next sample (1 s)"
    );
    // A time with its unit is the same period as the bare milliseconds.
    let coarse_unit = wall_as("1s", "1000");
    assert!(
        (0.3..0.8).contains(&coarse_unit),
        "every 1s: seen to end at {coarse_unit} s, not at the next sample (1 s)"
    );
    for bad in ["0", "x", "10001", "0.5ms", "11s", "-3"] {
        let out = candor()
            .args(["audit", "--interval", bad, "--", "true"])
            .output()
            .unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "--interval {bad}: {err}");
        assert!(err.contains("--interval"), "--interval {bad}: {err}");
    }
}

#[test]
fn the_default_run_on_a_directory_runs_its_documented_plan() {
    // The README's first command, `candor run` in a directory, with nothing but where to
    // save the result. On a small filesystem the default plan scales down (its file is
    // halved until eight times it fits, 16 MiB at least), so it ends in seconds.
    if !common::need_root("for a loop-device filesystem") {
        return;
    }
    let Some(fs) = common::scratch("ext4", 160 * MIB) else {
        return;
    };
    let before = entries(fs.path());
    let json = std::env::temp_dir().join(format!("candor-default-{}.json", std::process::id()));
    let out = candor()
        .args(["run", "--quiet", "-o"])
        .arg(&json)
        .current_dir(fs.path())
        .output()
        .expect("candor runs");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc = json_of(&json);
    let _ = std::fs::remove_file(&json);
    assert_eq!(doc["options"]["default_run"], true);
    assert_eq!(doc["options"]["repeat"], 3);
    assert_eq!(doc["options"]["runtime_s"], 2.0);
    let got: Vec<(String, u64, u64)> = results(&doc)
        .iter()
        .map(|r| {
            (
                r["test"].as_str().unwrap().to_string(),
                r["record_size"].as_u64().unwrap(),
                r["iodepth"].as_u64().unwrap(),
            )
        })
        .collect();
    let want: Vec<(String, u64, u64)> = [
        ("write", MIB, 1),
        ("write", MIB, 8),
        ("read", MIB, 1),
        ("read", MIB, 8),
        ("randread", 4096, 1),
        ("randread", 4096, 32),
        ("randwrite", 4096, 1),
        ("randwrite", 4096, 32),
    ]
    .iter()
    .map(|&(t, r, q)| (t.to_string(), r, q))
    .collect();
    assert_eq!(got, want, "the default run's eight points");
    // About 140 MiB free: 1 GiB halved until eight files fit would be 16 MiB.
    for r in results(&doc) {
        let what = format!("{} qd{}", r["test"], r["iodepth"]);
        assert_eq!(r["status"], "ok", "{what}: {}", r["error"]);
        assert_eq!(r["engine"], "io_uring", "{what}");
        assert_eq!(r["direct"], true, "{what}: ext4 takes O_DIRECT");
        assert_eq!(r["threads"], 1, "{what}");
        assert_eq!(r["file_size"], 16 * MIB, "{what}: sized to the filesystem");
        let reps = r["reps"].as_array().unwrap();
        assert_eq!(reps.len(), 3, "{what}: 3 repetitions");
        for rep in reps {
            let io = rep["io_seconds"].as_f64().unwrap();
            assert!(io > 0.0 && io < 2.5, "{what}: capped at 2 s, ran {io} s");
        }
        assert!(
            r["witness"].is_object(),
            "{what}: every figure has its witness"
        );
    }
    assert_eq!(entries(fs.path()), before, "nothing left behind");
}
