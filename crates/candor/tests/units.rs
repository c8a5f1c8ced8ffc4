//! `--units decimal|binary`: one rate unit for every text output of a process, the same
//! figure in the main table, the per-device table, an audit's text and `candor report` of
//! that audit; a unit system candor does not know refused in one sentence.

mod common;

use common::{candor, text};
use std::path::Path;

/// The cell of the right-aligned column `name` in `row`, under `header`: the text ending where
/// the header's name ends, back to the gap of two spaces before it.
fn cell(header: &str, row: &str, name: &str) -> String {
    let start = header
        .find(name)
        .unwrap_or_else(|| panic!("no column {name:?} in {header:?}"));
    let end = start + name.len();
    let head: String = row.chars().take(end).collect();
    let head = head.trim_end();
    head.rsplit("  ")
        .next()
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// The row under the first table header holding `column` (a line above a rule of dashes)
/// whose first word is `first`, and that header.
fn row_of<'a>(out: &'a str, column: &str, first: &str) -> (&'a str, &'a str) {
    let lines: Vec<&str> = out.lines().collect();
    let h = (0..lines.len().saturating_sub(1))
        .find(|&i| lines[i].contains(column) && lines[i + 1].starts_with("--"))
        .unwrap_or_else(|| panic!("no header with {column:?} in:\n{out}"));
    let row = lines[h + 1..]
        .iter()
        .find(|l| l.split_whitespace().next() == Some(first))
        .unwrap_or_else(|| panic!("no row {first:?} under {column:?} in:\n{out}"));
    (lines[h], row)
}

fn figure(s: &str) -> f64 {
    s.parse()
        .unwrap_or_else(|_| panic!("{s:?} is not a figure"))
}

/// The two figures agree to the precision the shorter one is printed with.
fn same_rate(decimal: f64, binary: f64, what: &str) {
    let back = binary * 1048576.0 / 1e6;
    assert!(
        (back - decimal).abs() <= decimal * 0.01 + 0.06,
        "{what}: {decimal} MB/s against {binary} MiB/s ({back} MB/s)"
    );
}

fn report(json: &Path, units: &str) -> String {
    let o = candor()
        .args(["report", "--units", units])
        .arg(json)
        .output()
        .expect("candor runs");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    text(&o.stdout)
}

#[test]
fn the_main_and_per_device_tables_print_one_figure_in_the_unit_asked() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let json = dir.path().join("r.json");
    let o = candor()
        .arg("run")
        .args([&a, &b])
        .args(["--tests", "write", "--file-size", "2m", "--quiet"])
        .args(["--units", "binary", "-o"])
        .arg(&json)
        .output()
        .expect("candor runs");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    // The first target's row in its own table, then in the per-device table.
    let (h, r) = row_of(&out, "MiB/s (95% CI)", "write");
    // "405 ± 12" or "405 (160-887)": the mean is its first word.
    let mean = |c: String| c.split_whitespace().next().unwrap_or_default().to_string();
    let main = mean(cell(h, r, "MiB/s (95% CI)"));
    let (h, r) = row_of(&out, "ms/MiB", &a_device(&out));
    let per_device = cell(h, r, "MiB/s");
    assert_eq!(
        main, per_device,
        "the main table and the per-device table:\n{out}"
    );
    assert!(!out.contains("MB/s"), "nothing in decimal units:\n{out}");
    // ms/MiB is the reciprocal of the rate beside it.
    let per = figure(&cell(h, r, "ms/MiB"));
    assert!(
        (per - 1000.0 / figure(&per_device)).abs() < 0.0015,
        "{per} ms/MiB beside {per_device} MiB/s"
    );
    // candor report of the same result: the same figure in the same unit, and in MB/s the
    // same rate.
    let again = report(&json, "binary");
    let (h, r) = row_of(&again, "MiB/s (95% CI)", "write");
    assert_eq!(mean(cell(h, r, "MiB/s (95% CI)")), main);
    let decimal = report(&json, "decimal");
    let (h, r) = row_of(&decimal, "MB/s (95% CI)", "write");
    same_rate(
        figure(&mean(cell(h, r, "MB/s (95% CI)"))),
        figure(&main),
        "run and report",
    );
    assert!(!decimal.contains("MiB/s"), "{decimal}");
}

/// The per-device table's first row starts with the first target's device ("vda" or "loop0
/// on vda"), or "no block device".
fn a_device(out: &str) -> String {
    let lines: Vec<&str> = out.lines().collect();
    let h = lines
        .iter()
        .position(|l| l.contains("ms/MiB") && l.starts_with("device"))
        .expect("a per-device table");
    lines[h + 2]
        .split_whitespace()
        .next()
        .expect("a device")
        .to_string()
}

#[test]
fn an_audit_and_its_report_print_the_same_figure() {
    if !common::need_programs(&["dd"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for units in ["decimal", "binary"] {
        let label = if units == "binary" { "MiB/s" } else { "MB/s" };
        let json = dir.path().join(format!("a-{units}.json"));
        let o = candor()
            .current_dir(dir.path())
            .args(["audit", "--units", units, "-o"])
            .arg(&json)
            .args([
                "--",
                "dd",
                "if=/dev/zero",
                "of=f",
                "bs=1M",
                "count=16",
                "conv=fsync",
            ])
            .output()
            .expect("candor runs");
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        let said = text(&o.stdout) + &text(&o.stderr);
        assert_eq!(
            text(&o.stderr).lines().last(),
            Some(format!("wrote {}", json.display()).as_str()),
            "the audit names its file"
        );
        // "write     16 MiB   1 MiB  178 MiB/s  179 MiB/s  420 MiB/s   1.00  agrees": claimed,
        // observed and in calls.
        let row = said
            .lines()
            .skip_while(|l| !(l.starts_with("test") && l.contains("claimed")))
            .find(|l| l.starts_with("write"))
            .unwrap_or_else(|| panic!("no audit row in:\n{said}"));
        let words: Vec<&str> = row.split_whitespace().collect();
        let at: Vec<usize> = (0..words.len()).filter(|&i| words[i] == label).collect();
        assert_eq!(
            at.len(),
            3,
            "claimed, observed and in calls in {label}: {row}"
        );
        let (claimed, observed) = (words[at[0] - 1], words[at[1] - 1]);
        let shown = report(&json, units);
        let column = |c: &str| format!("{c} {label}");
        let (h, r) = row_of(&shown, &column("claimed"), "dd");
        assert_eq!(cell(h, r, &column("claimed")), claimed, "{shown}");
        assert_eq!(cell(h, r, &column("observed")), observed, "{shown}");
        if units == "binary" {
            let dec = report(&json, "decimal");
            let (h, r) = row_of(&dec, "observed MB/s", "dd");
            same_rate(
                figure(&cell(h, r, "observed MB/s")),
                figure(observed),
                "audit in MiB/s and its report in MB/s",
            );
        }
    }
}

#[test]
fn a_unit_system_candor_does_not_know_is_one_sentence_and_exit_2() {
    for args in [
        &["report", "--units", "si", "r.json"][..],
        &["--units", "kibi", "run", "."],
        &["audit", "--units=", "--", "true"],
    ] {
        let o = candor().args(args).output().expect("candor runs");
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = text(&o.stderr);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.starts_with("candor: --units ")
                && err.contains("--units decimal")
                && err.contains("--units binary"),
            "{err}"
        );
        assert!(o.stdout.is_empty());
    }
}
