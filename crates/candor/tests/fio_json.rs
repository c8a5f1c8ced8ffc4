//! `--format fio-json` read by fio's own tool: Debian's fio package ships
//! `fio_jsonplus_clat2csv`, which turns json+ latency bins into CSV and checks the CSV back
//! against the JSON (`--validate`). A real run's fio-json must go through both, and the CSV
//! must hold every timed operation of the run.

mod common;

use common::{candor, have, is_root, text};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The tool, and a python3 that can run it (it imports `six`); None (skipped) when fio's
/// package is not installed and we are not root; as root, where `scripts/setup --test`
/// installs it, its absence fails.
fn clat2csv() -> Option<(PathBuf, PathBuf)> {
    let tool = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("fio_jsonplus_clat2csv"))
            .find(|p| p.is_file())
    });
    let Some(tool) = tool else {
        assert!(
            !is_root(),
            "fio_jsonplus_clat2csv is missing: `scripts/setup --test` installs Debian's fio package"
        );
        candor_testkit::skip("fio_jsonplus_clat2csv is not installed (Debian's fio package)");
        return None;
    };
    let pythons = ["python3", "/usr/bin/python3"];
    let python = pythons.iter().find(|p| {
        Command::new(p)
            .args(["-c", "import six, json, argparse"])
            .output()
            .is_ok_and(|o| o.status.success())
    });
    match python {
        Some(p) => Some((PathBuf::from(p), tool)),
        None => {
            assert!(
                !is_root() || !have("fio"),
                "no python3 here can import six, which fio_jsonplus_clat2csv needs (Debian's python3-six)"
            );
            candor_testkit::skip("no python3 with six for fio_jsonplus_clat2csv");
            None
        }
    }
}

fn run_tool(python: &Path, tool: &Path, args: &[&Path], dir: &Path) -> String {
    let o = Command::new(python)
        .arg(tool)
        .args(args)
        .current_dir(dir)
        .output()
        .expect("fio_jsonplus_clat2csv runs");
    assert!(
        o.status.success(),
        "fio_jsonplus_clat2csv refused candor's fio-json: {}{}",
        text(&o.stdout),
        text(&o.stderr)
    );
    text(&o.stdout)
}

#[test]
fn fio_own_tool_reads_a_real_run() {
    let Some((python, tool)) = clat2csv() else {
        return;
    };
    let dir = tempfile::tempdir().expect("a temporary directory");
    let target = dir.path().join("t");
    std::fs::create_dir(&target).expect("mkdir");
    let saved = dir.path().join("r.json");
    let o = candor()
        .arg("run")
        .arg(&target)
        .args([
            "--tests",
            "write,read,randread",
            "--file-size",
            "4m",
            "--record-size",
            "16k",
            "--repeat",
            "2",
            "--quiet",
            "--format",
            "fio-json",
            "-o",
        ])
        .arg(&saved)
        .output()
        .expect("candor runs");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let printed = text(&o.stdout);
    // The saved result re-renders what the run printed.
    let again = candor()
        .args(["report", "--format", "fio-json"])
        .arg(&saved)
        .output()
        .expect("candor report runs");
    assert_eq!(text(&again.stdout), printed);
    let doc = candor_model::load_result(&saved).expect("the result loads");
    assert_eq!(doc.results.len(), 3);

    let fio_json = dir.path().join("candor-fio.json");
    std::fs::write(&fio_json, &printed).expect("write");
    let csv = dir.path().join("clat.csv");
    let said = run_tool(&python, &tool, &[&fio_json, &csv], dir.path());
    assert_eq!(said.lines().count(), 3, "one CSV per job: {said}");
    let said = run_tool(
        &python,
        &tool,
        &[&fio_json, &csv, Path::new("--validate")],
        dir.path(),
    );
    assert_eq!(
        said.lines().filter(|l| l.ends_with(" validated")).count(),
        3,
        "{said}"
    );
    for (i, r) in doc.results.iter().enumerate() {
        let file = dir.path().join(format!("clat_job{i}.csv"));
        let body = std::fs::read_to_string(&file).expect("the job's CSV");
        let mut lines = body.lines();
        let header: Vec<String> = lines
            .next()
            .expect("a header")
            .split(',')
            .map(|c| c.trim().to_string())
            .collect();
        let dir_name = if r.is_write() { "write" } else { "read" };
        let col = header
            .iter()
            .position(|c| *c == format!("{dir_name}_clat_ns_count"))
            .expect("the count column");
        let mut total = 0u64;
        let mut last_ns = 0u64;
        for l in lines.filter(|l| !l.trim().is_empty()) {
            let cells: Vec<&str> = l.split(',').map(|c| c.trim()).collect();
            let ns: u64 = cells[0].parse().expect("ns");
            assert!(ns >= last_ns, "ascending latencies");
            last_ns = ns;
            if let Ok(n) = cells[col].parse::<u64>() {
                total += n;
            }
        }
        assert_eq!(
            total, r.latency_ns.count,
            "{}: every timed operation is in fio's CSV",
            r.test
        );
        assert_eq!(total, 2 * 256, "{}: 4 MiB of 16 KiB records, twice", r.test);
    }
}
