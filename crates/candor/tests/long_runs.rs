//! A run says how long it will take before it starts, says how far it has got while it goes
//! on (on stderr every ten seconds when stderr is not a terminal), and names every file it
//! wrote at the end.

mod common;

use common::{candor, text};

#[test]
fn the_estimate_comes_first_and_every_file_written_is_named_last() {
    let dir = tempfile::tempdir().unwrap();
    let (json, html) = (dir.path().join("r.json"), dir.path().join("r.html"));
    let o = candor()
        .arg("run")
        .arg(dir.path())
        .args([
            "--tests",
            "write,read",
            "--file-size",
            "4m",
            "--repeat",
            "2",
        ])
        .arg("-o")
        .arg(&json)
        .arg("--html")
        .arg(&html)
        .output()
        .expect("candor runs");
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    let at = |prefix: &str| {
        lines
            .iter()
            .position(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no line {prefix:?} in:\n{err}"))
    };
    // Before the first test: the plan's size and its length at an assumed speed.
    let estimate = at("candor: estimate: 2 tests x 2 repetitions, about ");
    assert!(
        lines[estimate].contains("at an assumed 200 MB/s")
            && lines[estimate].ends_with("measured again after the first test"),
        "{}",
        lines[estimate]
    );
    // After the first test, the estimate from the time it took.
    let refined = at("candor: the first test took ");
    assert!(estimate < refined, "{err}");
    assert!(
        lines[refined].contains(": the run should take about ")
            && lines[refined].contains(" a repetition besides its I/O"),
        "{}",
        lines[refined]
    );
    // The files, named last, in the order written.
    let n = lines.len();
    assert_eq!(
        lines[n - 2..],
        [
            format!("wrote {}", json.display()),
            format!("wrote {}", html.display())
        ],
        "{err}"
    );
    assert!(json.is_file() && html.is_file());
    // --quiet: the files are still named, and nothing else about the run's pace is said.
    let o = candor()
        .arg("run")
        .arg(dir.path())
        .args(["--tests", "write", "--file-size", "1m", "--quiet", "-o"])
        .arg(&json)
        .output()
        .expect("candor runs");
    let err = text(&o.stderr);
    assert!(
        !err.contains("estimate") && !err.contains("progress"),
        "{err}"
    );
    assert_eq!(
        err.lines().last(),
        Some(format!("wrote {}", json.display()).as_str())
    );
}

#[test]
fn off_a_terminal_the_progress_is_said_at_most_every_ten_seconds() {
    let dir = tempfile::tempdir().unwrap();
    let t0 = std::time::Instant::now();
    // 12 repetitions lasting 1 s each: a run of about 12.5 s.
    let o = candor()
        .arg("run")
        .arg(dir.path())
        .args([
            "--tests",
            "write",
            "--file-size",
            "1m",
            "--record-size",
            "4k",
        ])
        .args(["--runtime", "1s", "--time-based", "--repeat", "12"])
        .output()
        .expect("candor runs");
    let took = t0.elapsed().as_secs_f64();
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains(
            "candor: estimate: 1 test x 12 repetitions, about 13s (each repetition lasting 1s, --time-based)"
        ),
        "{err}"
    );
    let progress: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("candor: progress: "))
        .collect();
    assert!(
        !progress.is_empty() && progress.len() as f64 <= took / 10.0,
        "{took:.1} s, {} progress lines:\n{err}",
        progress.len()
    );
    // "candor: progress: test 1 of 1, repetition 10 of 12, 10s elapsed, about 3s left"
    let words: Vec<&str> = progress[0].split_whitespace().collect();
    assert_eq!(words[2..6], ["test", "1", "of", "1,"], "{}", progress[0]);
    assert_eq!(words[6], "repetition");
    let rep: u32 = words[7].parse().expect("a repetition number");
    assert!((8..=12).contains(&rep), "{}", progress[0]);
    assert_eq!(words[8..10], ["of", "12,"]);
    assert!(words[10] == "10s" || words[10] == "11s", "{}", progress[0]);
    assert_eq!(words[11..13], ["elapsed,", "about"]);
    let left: u32 = words[13]
        .trim_end_matches('s')
        .parse()
        .expect("seconds left");
    assert!(left <= 5, "{}", progress[0]);
    assert_eq!(words[14], "left");
}
