//! The HTML report in a real browser: `candor report` renders a saved result, headless
//! Chromium loads it (no network, no scripts), the DOM it builds must hold every chart with
//! something drawn in it, the console must stay silent, and a screenshot is kept in the target
//! directory as an artifact. Skipped, with a message, where Chromium is not installed.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const CANDOR: &str = env!("CARGO_BIN_EXE_candor");

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../candor-report/tests/expected")
        .join(name)
}

fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for name in ["chromium", "chromium-browser", "google-chrome"] {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// Runs headless Chromium on `page` with extra arguments, in a profile of its own.
fn browse(chromium: &Path, page: &Path, extra: &[&str]) -> Output {
    let profile = tempfile::tempdir().expect("a profile directory");
    let mut cmd = Command::new("timeout");
    cmd.arg("180")
        .arg(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(extra)
        .arg(format!("file://{}", page.display()));
    cmd.output().expect("chromium runs")
}

/// The `<svg ...>...</svg>` elements of a document with the given id prefix.
fn charts<'a>(dom: &'a str, prefix: &str) -> Vec<&'a str> {
    let open = format!("<svg id=\"{prefix}");
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(i) = dom[at..].find(&open) {
        let start = at + i;
        let end = dom[start..]
            .find("</svg>")
            .map(|e| start + e + 6)
            .unwrap_or(dom.len());
        out.push(&dom[start..end]);
        at = end;
    }
    out
}

fn drawn(svg: &str) -> bool {
    ["<polyline", "<rect", "<circle", "<path"]
        .iter()
        .any(|m| svg.contains(m))
}

fn render(json: &Path, out: &Path) {
    let o = Command::new(CANDOR)
        .args(["report"])
        .arg(json)
        .arg("-o")
        .arg(out)
        .output()
        .expect("candor runs");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

fn check_in_browser(chromium: &Path, html: &Path, expected: &[&str], shot: &str) {
    let text = std::fs::read_to_string(html).expect("the report was written");
    assert!(!text.contains("<script"), "the report has no scripts");
    for attr in ["src=\"http", "href=\"http", "url(http", "@import"] {
        assert!(!text.contains(attr), "the report fetches nothing ({attr})");
    }
    let o = browse(chromium, html, &["--dump-dom"]);
    assert!(
        o.status.success(),
        "chromium --dump-dom: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let dom = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        !stderr.contains("CONSOLE"),
        "the console stays silent:\n{stderr}"
    );
    assert!(dom.contains("</body>"), "the page loaded");
    for prefix in expected {
        let found = charts(&dom, prefix);
        assert!(!found.is_empty(), "a chart {prefix}* is in the DOM");
        for c in found {
            assert!(
                drawn(c),
                "chart {prefix}* has something drawn: {}",
                &c[..c.len().min(200)]
            );
        }
    }
    // Every chart in the file made it into the DOM.
    assert_eq!(
        charts(&dom, "").len(),
        text.matches("<svg id=\"").count(),
        "all charts are in the DOM"
    );
    let png = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(shot);
    let _ = std::fs::remove_file(&png);
    let o = browse(
        chromium,
        html,
        &[
            &format!("--screenshot={}", png.display()),
            "--window-size=1400,5000",
        ],
    );
    assert!(
        o.status.success(),
        "chromium --screenshot: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let size = std::fs::metadata(&png).map(|m| m.len()).unwrap_or(0);
    assert!(
        size > 20_000,
        "a screenshot with content ({size} bytes) at {}",
        png.display()
    );
    println!("screenshot: {}", png.display());
}

#[test]
fn the_html_report_renders_in_a_browser_with_every_chart() {
    let Some(chromium) = chromium() else {
        println!("skipped: chromium not installed");
        return;
    };
    let dir = tempfile::tempdir().expect("a temporary directory");
    let html = dir.path().join("report.html");
    render(&fixture("sample.json"), &html);
    check_in_browser(
        &chromium,
        &html,
        &[
            "heat-",
            "size-",
            "scale-tp-",
            "scale-lat-",
            "lat-hist-",
            "lat-pct-",
            "tl-io-",
            "tl-dirty-",
            "reps-",
        ],
        "report.png",
    );
}

#[test]
fn an_mpi_report_shows_its_ranks() {
    let Some(chromium) = chromium() else {
        println!("skipped: chromium not installed");
        return;
    };
    let dir = tempfile::tempdir().expect("a temporary directory");
    let html = dir.path().join("mpi.html");
    render(&fixture("mpi.json"), &html);
    check_in_browser(&chromium, &html, &["ranks-", "lat-hist-"], "report-mpi.png");
}

#[test]
fn a_run_over_several_targets_compares_them_in_its_report() {
    let Some(chromium) = chromium() else {
        println!("skipped: chromium not installed");
        return;
    };
    let dir = tempfile::tempdir().expect("a temporary directory");
    let html = dir.path().join("study.html");
    render(&fixture("study-run.json"), &html);
    let text = std::fs::read_to_string(&html).expect("written");
    assert!(text.contains("Targets compared"));
    assert!(text.contains("Per device and filesystem"));
    check_in_browser(
        &chromium,
        &html,
        &["cmp-", "heat-", "lat-pct-", "reps-"],
        "report-study.png",
    );
}

#[test]
fn an_audit_report_shows_claimed_against_observed() {
    let Some(chromium) = chromium() else {
        println!("skipped: chromium not installed");
        return;
    };
    let dir = tempfile::tempdir().expect("a temporary directory");
    let html = dir.path().join("audit.html");
    render(&fixture("audit.json"), &html);
    let text = std::fs::read_to_string(&html).expect("written");
    assert!(text.contains("Claimed vs observed") && text.contains("overstated"));
    check_in_browser(&chromium, &html, &["audit-"], "report-audit.png");
}

#[test]
fn the_compare_page_renders_in_a_browser() {
    let Some(chromium) = chromium() else {
        println!("skipped: chromium not installed");
        return;
    };
    let dir = tempfile::tempdir().expect("a temporary directory");
    let html = dir.path().join("compare.html");
    let o = Command::new(CANDOR)
        .arg("compare")
        .arg(fixture("study-ext4.json"))
        .arg(fixture("study-xfs.json"))
        .arg("--html")
        .arg(&html)
        .output()
        .expect("candor runs");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    check_in_browser(&chromium, &html, &["cmp-"], "compare.png");
}
