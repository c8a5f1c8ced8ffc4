//! The HTML report in a real browser: `candor report` renders a saved result, headless
//! Chromium loads it (no network, no scripts), the DOM it builds must hold the contents list,
//! every section folded under its heading, the verdicts and the summary before any chart, and
//! every chart with something drawn in it; the console must stay silent; the screenshot, kept in
//! the target directory as an artifact, is decoded and must show a page of sane size with
//! something on it. Skipped, with a message, where Chromium is not installed.

mod png;

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

/// What a page must have besides its charts: a report (`candor report`, `candor run --html`)
/// has the contents list and the folds; `candor compare`'s page is one table and its charts.
#[derive(PartialEq)]
enum Page {
    Report,
    Compare,
}

fn check_in_browser(chromium: &Path, html: &Path, expected: &[&str], shot: &str, kind: Page) {
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
    if kind == Page::Report {
        check_navigation(&dom);
    }
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
    check_screenshot(&png, 1400, 5000);
    println!("screenshot: {}", png.display());
}

/// The values of an attribute in markup (`href="#`, `id="`), up to the closing quote.
fn values<'a>(dom: &'a str, prefix: &str) -> Vec<&'a str> {
    dom.match_indices(prefix)
        .map(|(i, _)| {
            let rest = &dom[i + prefix.len()..];
            &rest[..rest.find('"').unwrap_or(0)]
        })
        .collect()
}

/// The DOM the browser built: a contents list linking every section to a heading that is there,
/// each section a fold (`<details>`) opened by its heading, and the verdicts (or, for a page
/// without results, the first section) before any chart.
fn check_navigation(dom: &str) {
    let nav_at = dom.find("<nav class=\"toc\"").expect("a contents list");
    let nav = &dom[nav_at
        ..dom[nav_at..]
            .find("</nav>")
            .map(|e| nav_at + e)
            .expect("</nav>")];
    let links = values(nav, "href=\"#");
    let ids = values(dom, " id=\"");
    let sections = values(dom, "<summary><h2 id=\"");
    assert!(!sections.is_empty(), "folded sections");
    assert_eq!(
        values(dom, "<h2 id=\"").len(),
        sections.len(),
        "every section heading opens a fold"
    );
    assert_eq!(
        dom.matches("<details class=\"sec\" open=\"\"><summary><h2")
            .count(),
        sections.len(),
        "every section is an open fold"
    );
    for s in &sections {
        assert!(links.contains(s), "the contents link section {s}");
    }
    for l in &links {
        assert!(
            ids.contains(l),
            "the contents' link #{l} leads to a heading"
        );
    }
    let first_chart = dom.find("<svg").unwrap_or(dom.len());
    assert!(nav_at < first_chart);
    let first = dom.find("<summary><h2 id=\"").expect("a section");
    assert!(first < first_chart, "a section before any chart");
    if let Some(v) = dom.find("<h2 id=\"verdicts\"") {
        assert_eq!(v, first + "<summary>".len(), "the verdicts come first");
        let summary = dom.find("<h2 id=\"summary\"").expect("the summary");
        assert!(
            v < summary && summary < first_chart,
            "verdicts, summary, then charts"
        );
    }
}

/// The screenshot is a PNG of the window's size with a page drawn in it: its first screen
/// (title, contents, verdicts, summary) well inked and in many colours (anti-aliased text,
/// badges, charts), and ink on the page as a whole.
fn check_screenshot(png: &Path, width: u32, height: u32) {
    if let Some(problem) = screenshot_problem(png, width, height) {
        panic!("{problem}: {}", png.display());
    }
}

/// What is wrong with a screenshot, if anything.
fn screenshot_problem(png: &Path, width: u32, height: u32) -> Option<String> {
    let bytes = std::fs::read(png).expect("the screenshot was written");
    let img = png::decode(&bytes).expect("the screenshot is a PNG");
    if (img.width, img.height) != (width, height) {
        return Some(format!(
            "{}x{} instead of the window's {width}x{height}",
            img.width, img.height
        ));
    }
    let ink = |px: &[[u8; 3]]| {
        px.iter().filter(|p| **p != [255, 255, 255]).count() as f64 / px.len().max(1) as f64
    };
    let top = &img.rgb[..(width as usize * 1000).min(img.rgb.len())];
    let mut colours: Vec<[u8; 3]> = top.to_vec();
    colours.sort_unstable();
    colours.dedup();
    let (top_ink, all_ink) = (ink(top), ink(&img.rgb));
    println!(
        "{}: {width}x{height}, first screen {:.1}% inked in {} colours, the page {:.1}%",
        png.display(),
        100.0 * top_ink,
        colours.len(),
        100.0 * all_ink
    );
    if top_ink <= 0.05 {
        Some(format!(
            "the first screen is nearly blank ({:.2}% inked)",
            100.0 * top_ink
        ))
    } else if colours.len() <= 200 {
        Some(format!("{} colours on the first screen", colours.len()))
    } else if all_ink <= 0.01 {
        Some(format!(
            "the page is nearly blank ({:.2}% inked)",
            100.0 * all_ink
        ))
    } else {
        None
    }
}

#[test]
fn the_html_report_renders_in_a_browser_with_every_chart() {
    let Some(chromium) = chromium() else {
        candor_testkit::skip("chromium is not installed");
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
        Page::Report,
    );
}

#[test]
fn an_mpi_report_shows_its_ranks() {
    let Some(chromium) = chromium() else {
        candor_testkit::skip("chromium is not installed");
        return;
    };
    let dir = tempfile::tempdir().expect("a temporary directory");
    let html = dir.path().join("mpi.html");
    render(&fixture("mpi.json"), &html);
    check_in_browser(
        &chromium,
        &html,
        &["ranks-", "lat-hist-"],
        "report-mpi.png",
        Page::Report,
    );
}

#[test]
fn a_run_over_several_targets_compares_them_in_its_report() {
    let Some(chromium) = chromium() else {
        candor_testkit::skip("chromium is not installed");
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
        Page::Report,
    );
}

#[test]
fn an_audit_report_shows_claimed_against_observed() {
    let Some(chromium) = chromium() else {
        candor_testkit::skip("chromium is not installed");
        return;
    };
    let dir = tempfile::tempdir().expect("a temporary directory");
    let html = dir.path().join("audit.html");
    render(&fixture("audit.json"), &html);
    let text = std::fs::read_to_string(&html).expect("written");
    assert!(text.contains("Claimed vs observed") && text.contains("overstated"));
    check_in_browser(
        &chromium,
        &html,
        &["audit-"],
        "report-audit.png",
        Page::Report,
    );
}

#[test]
fn the_compare_page_renders_in_a_browser() {
    let Some(chromium) = chromium() else {
        candor_testkit::skip("chromium is not installed");
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
    check_in_browser(&chromium, &html, &["cmp-"], "compare.png", Page::Compare);
}

#[test]
fn a_real_thread_sweep_is_one_grid_of_small_charts_per_test() {
    let Some(chromium) = chromium() else {
        candor_testkit::skip("chromium is not installed");
        return;
    };
    let dir = tempfile::tempdir().expect("a temporary directory");
    let target = dir.path().join("t");
    std::fs::create_dir(&target).expect("a target directory");
    let html = dir.path().join("sweep.html");
    let o = Command::new(CANDOR)
        .args([
            "run",
            "--tests",
            "write,read",
            "--file-size",
            "64k,256k",
            "--record-size",
            "4k,64k",
            "--threads",
            "1,2",
            "--repeat",
            "2",
            "-q",
            "--format",
            "json",
            "--html",
        ])
        .arg(&html)
        .arg(&target)
        .output()
        .expect("candor runs");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let text = std::fs::read_to_string(&html).expect("the report was written");
    // Two tests, each at four size points and two thread counts: one group of charts per test
    // in each section, not one per size point.
    assert_eq!(text.matches("<h3 id=\"g-scaling-").count(), 2);
    assert_eq!(text.matches("<svg id=\"scale-tp-").count(), 8);
    assert_eq!(text.matches("<h3 id=\"g-sizes-").count(), 2);
    assert_eq!(text.matches("<svg id=\"heat-").count(), 4);
    assert!(
        text.matches("class=\"hv\"><title>").count() >= 16,
        "values on hover"
    );
    check_in_browser(
        &chromium,
        &html,
        &[
            "heat-",
            "size-",
            "scale-tp-",
            "scale-lat-",
            "lat-pct-",
            "reps-",
        ],
        "report-sweep.png",
        Page::Report,
    );
}

#[test]
fn a_blank_page_fails_the_screenshot_check() {
    let Some(chromium) = chromium() else {
        candor_testkit::skip("chromium is not installed");
        return;
    };
    let dir = tempfile::tempdir().expect("a temporary directory");
    let page = dir.path().join("blank.html");
    std::fs::write(&page, "<!DOCTYPE html><html><body><p>.</p></body></html>").expect("written");
    let png = dir.path().join("blank.png");
    let o = browse(
        &chromium,
        &page,
        &[
            &format!("--screenshot={}", png.display()),
            "--window-size=1400,5000",
        ],
    );
    assert!(o.status.success());
    let problem = screenshot_problem(&png, 1400, 5000);
    assert!(
        problem
            .as_deref()
            .is_some_and(|p| p.contains("nearly blank")),
        "a blank page is not taken for a report: {problem:?}"
    );
}
