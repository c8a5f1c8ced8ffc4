//! Result files made to hurt: figures no run writes, files that never end, files too large
//! or far denser in memory than on disk, strings with terminal controls and markup. Each
//! is answered in one sentence with exit 2, in bounded time and memory, or rendered with
//! the hostile characters made harmless.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const CANDOR: &str = env!("CARGO_BIN_EXE_candor");

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../candor-report/tests/expected")
        .join(name)
}

fn sample() -> Value {
    serde_json::from_str(&std::fs::read_to_string(fixture("sample.json")).unwrap()).unwrap()
}

fn write(dir: &Path, name: &str, v: &Value) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, serde_json::to_string(v).unwrap()).unwrap();
    p
}

/// Runs candor with `args`, killed after `limit`: None when it had to be.
fn within(args: &[&str], limit: Duration) -> Option<Output> {
    let mut child = Command::new(CANDOR)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("candor starts");
    // Drained as they fill, so a long output never blocks the child.
    let drain = |mut r: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut b = Vec::new();
            let _ = r.read_to_end(&mut b);
            b
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return Some(Output {
                status,
                stdout: out.join().unwrap(),
                stderr: err.join().unwrap(),
            });
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Exit 2 with one line on stderr containing each of `words`.
fn refused(o: &Output, words: &[&str]) {
    let e = err(o);
    assert_eq!(o.status.code(), Some(2), "stderr: {e}");
    assert_eq!(e.trim_end().lines().count(), 1, "one sentence: {e}");
    for w in words {
        assert!(e.contains(w), "{w:?} in: {e}");
    }
}

#[test]
fn a_huge_timeline_time_is_refused_in_bounded_time() {
    let dir = tempfile::tempdir().unwrap();
    for t in [1.7e308, 1e300, -1.7e308] {
        let mut v = sample();
        for r in v["results"].as_array_mut().unwrap() {
            if let Some(tl) = r["witness"]["timeline"].as_array_mut() {
                if let Some(last) = tl.last_mut() {
                    last["t"] = json!(t);
                }
            }
        }
        let p = write(dir.path(), "t.json", &v);
        let html = dir.path().join("x.html");
        let o = within(
            &["report", p.to_str().unwrap(), "-o", html.to_str().unwrap()],
            Duration::from_secs(10),
        )
        .expect("candor report finishes within 10 s");
        refused(
            &o,
            &["t.json", "out of range in \"t\"", "give a file written by"],
        );
        assert!(!html.exists(), "nothing written on refusal");
    }
}

#[test]
fn figures_no_run_writes_are_refused_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let text = serde_json::to_string(&sample()).unwrap();
    let key = "\"mean\":";
    let at = text.find(key).unwrap() + key.len();
    let end = at + text[at..].find([',', '}']).unwrap();
    for (figure, words) in [
        ("-1e308", vec!["out of range in \"mean\" (-1e308)"]),
        ("1e999", vec!["out of range in \"mean\" (1e999)"]),
        ("NaN", vec!["is not JSON"]),
        ("Infinity", vec!["is not JSON"]),
        ("-Infinity", vec!["is not JSON"]),
    ] {
        let p = dir.path().join("f.json");
        std::fs::write(&p, format!("{}{figure}{}", &text[..at], &text[end..])).unwrap();
        for args in [vec!["report"], vec!["report", "--format", "markdown"]] {
            let mut a = args.clone();
            a.push(p.to_str().unwrap());
            let o = within(&a, Duration::from_secs(20)).expect("finishes");
            refused(&o, &words);
        }
    }
}

#[test]
fn a_device_or_directory_is_refused_at_once() {
    for (path, what) in [
        ("/dev/zero", "a character device"),
        ("/dev/urandom", "a character device"),
        ("/", "a directory"),
    ] {
        let start = Instant::now();
        let o = within(&["report", path], Duration::from_secs(5))
            .unwrap_or_else(|| panic!("candor report {path} ends at once"));
        refused(
            &o,
            &[
                &format!("{path} is not a regular file ({what})"),
                "candor run -o",
            ],
        );
        assert!(start.elapsed() < Duration::from_secs(5));
        let o = within(&["compare", path, path], Duration::from_secs(5)).expect("ends");
        refused(&o, &["is not a regular file"]);
    }
}

#[test]
fn a_file_over_the_limit_is_refused_and_the_option_raises_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut v = sample();
    let results = v["results"].as_array().unwrap().clone();
    v["results"] = json!(results.iter().cycle().take(28 * 8).collect::<Vec<_>>());
    let p = write(dir.path(), "big.json", &v);
    let len = std::fs::metadata(&p).unwrap().len();
    assert!(len > 1 << 20 && len < 4 << 20, "{len}");
    let html = dir.path().join("big.html");
    let path = p.to_str().unwrap();
    let o = within(
        &[
            "report",
            path,
            "--max-input-size",
            "1m",
            "-o",
            html.to_str().unwrap(),
        ],
        Duration::from_secs(30),
    )
    .unwrap();
    refused(
        &o,
        &[
            "big.json is ",
            "over the limit of 1 MiB on a result file",
            "give --max-input-size with a larger size to read it",
        ],
    );
    assert!(!html.exists());
    let o = within(
        &["compare", path, path, "--max-input-size", "1m"],
        Duration::from_secs(30),
    )
    .unwrap();
    refused(&o, &["over the limit of 1 MiB"]);
    let merged = dir.path().join("m.json");
    let o = within(
        &[
            "merge",
            path,
            path,
            "--max-input-size",
            "1m",
            "-o",
            merged.to_str().unwrap(),
        ],
        Duration::from_secs(30),
    )
    .unwrap();
    refused(&o, &["over the limit of 1 MiB"]);
    assert!(!merged.exists());
    // Raised, the same file reads.
    let o = within(
        &[
            "report",
            path,
            "--max-input-size",
            "4m",
            "-o",
            html.to_str().unwrap(),
        ],
        Duration::from_secs(60),
    )
    .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(html.exists());
    let o = within(
        &["report", path, "--max-input-size", "lots"],
        Duration::from_secs(5),
    )
    .unwrap();
    refused(&o, &["--max-input-size", "'lots' is not a size"]);
}

/// Runs `cmd` (its output to /dev/null) and returns its exit code and the largest resident
/// set of it and its descendants, in bytes (getrusage of this one child, through wait4).
// The child is waited for by wait4, which std does not know of.
#[allow(clippy::zombie_processes)]
fn peak_rss(mut cmd: Command) -> (Option<i32>, u64) {
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("starts");
    let mut status = 0;
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = child.id() as libc::pid_t;
    // SAFETY: waits for our own child, once; `u` and `status` are valid for writing.
    assert_eq!(unsafe { libc::wait4(pid, &mut status, 0, &mut u) }, pid);
    let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    (code, u.ru_maxrss as u64 * 1024)
}

#[test]
fn a_large_result_is_read_in_memory_a_small_multiple_of_its_size() {
    let dir = tempfile::tempdir().unwrap();
    // 48 MiB of repetitions, two bytes each in the file: the densest list the model has.
    let text = serde_json::to_string(&sample()).unwrap();
    let key = "\"samples\":[";
    let at = text.find(key).unwrap() + key.len();
    let p = dir.path().join("dense.json");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&p).unwrap());
    use std::io::Write;
    f.write_all(&text.as_bytes()[..at]).unwrap();
    let zeros = "0,".repeat(1 << 20);
    for _ in 0..24 {
        f.write_all(zeros.as_bytes()).unwrap();
    }
    f.write_all(&text.as_bytes()[at..]).unwrap();
    f.flush().unwrap();
    drop(f);
    let len = std::fs::metadata(&p).unwrap().len();
    for args in [vec!["--format", "table"], vec!["-o"]] {
        let mut a = vec!["report", p.to_str().unwrap()];
        a.extend(args.iter());
        let html = dir.path().join("dense.html");
        if args == ["-o"] {
            a.push(html.to_str().unwrap());
        }
        let mut cmd = Command::new(CANDOR);
        cmd.args(&a);
        let (code, rss) = peak_rss(cmd);
        assert_eq!(code, Some(0), "{a:?}");
        // The model holds 8 bytes per 2 of text here: 4 times the file, and the program.
        assert!(
            rss < 5 * len + (100 << 20),
            "{a:?}: peak resident set {} MiB for a file of {} MiB",
            rss >> 20,
            len >> 20
        );
    }
}

#[test]
fn a_file_cheap_on_disk_and_dear_in_memory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    // Three bytes a test result: 4 MiB of text would be gigabytes of results.
    let p = dir.path().join("dear.json");
    let body = "{},".repeat(1_400_000);
    std::fs::write(
        &p,
        format!("{{\"schema_version\":1,\"tool\":\"candor\",\"kind\":\"run\",\"results\":[{body}{{}}]}}"),
    )
    .unwrap();
    // Bounded, so that a candor without the check fails here rather than take the machine.
    let o = Command::new("sh")
        .args([
            "-c",
            &format!("ulimit -v 4000000; exec {CANDOR} report {}", p.display()),
        ])
        .output()
        .unwrap();
    refused(
        &o,
        &["dear.json would take more than", "give a file written by"],
    );
}

#[test]
fn a_pipe_is_read_up_to_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "s.json", &sample());
    // Process substitution gives candor a pipe.
    let o = Command::new("bash")
        .args([
            "-c",
            &format!("{CANDOR} report <(cat {}) --format csv", p.display()),
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(out(&o).starts_with("target,"), "{}", out(&o));
    let o = Command::new("bash")
        .args([
            "-c",
            &format!(
                "{CANDOR} report <(cat {}) --max-input-size 64k",
                p.display()
            ),
        ])
        .output()
        .unwrap();
    refused(
        &o,
        &[
            "a pipe that gave more bytes than that",
            "over the limit of 64 KiB",
        ],
    );
}

/// No character in `s` acts on a terminal: C0 controls but newline and tab, DEL, C1
/// controls, bidirectional overrides.
fn inert(what: &str, s: &str) {
    if let Some(c) = s.chars().find(|c| {
        (c.is_control() && *c != '\n' && *c != '\t')
            || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    }) {
        panic!("{what}: {c:?} passed through:\n{s}");
    }
}

#[test]
fn strings_from_a_file_are_escaped_in_text_markdown_and_github_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let evil = "\u{1b}]0;owned\u{7}\u{1b}[2J\rX\u{9b}1m";
    let mut v = sample();
    let target = format!("/t{evil}|`x`<script>alert(1)</script>");
    for t in v["targets"].as_array_mut().unwrap() {
        t["path"] = json!(target);
    }
    for r in v["results"].as_array_mut().unwrap() {
        r["target"] = json!(target);
        r["engine"] = json!(format!("psync{evil}"));
        if let Some(w) = r["witness"].as_object_mut() {
            w["explanation"] = json!(format!("note{evil}\n# heading [l](http://x) | cell"));
        }
    }
    v["warnings"] = json!([format!("warn{evil}\n## injected")]);
    v["host"]["hostname"] = json!(format!("host{evil}"));
    let p = write(dir.path(), "evil.json", &v);
    let path = p.to_str().unwrap();
    for format in ["table", "markdown", "csv", "iozone", "excel", "openmetrics"] {
        let o = within(
            &["report", path, "--format", format],
            Duration::from_secs(30),
        )
        .unwrap();
        assert_eq!(o.status.code(), Some(0), "{format}: {}", err(&o));
        let s = out(&o);
        inert(format, &s);
        if format == "table" {
            assert!(s.contains("\\u{1b}]0;owned\\u{7}"), "shown escaped: {s}");
        }
        if format == "openmetrics" {
            // Label values keep to OpenMetrics' own escapes.
            assert!(s.contains("\u{fffd}]0;owned\u{fffd}"), "{s}");
            assert!(!s.contains("\\u{"), "{s}");
        }
    }
    let o = within(
        &["report", path, "--format", "markdown"],
        Duration::from_secs(30),
    )
    .unwrap();
    let md = out(&o);
    // Markup is escaped, or inert inside a code span fenced longer than its backticks.
    for l in md.lines().filter(|l| l.contains("<script>")) {
        assert!(l.starts_with("## Target `` ") && l.ends_with(" ``"), "{l}");
    }
    assert!(
        !md.contains("\n## injected") && !md.contains("\n# heading"),
        "{md}"
    );
    assert!(
        !md.contains("[l](http://x)") && md.contains("\\[l\\](http://x)"),
        "{md}"
    );
    // compare: two copies of the file are two sides.
    let q = write(dir.path(), "evil2.json", &v);
    for format in ["table", "markdown", "github", "csv"] {
        let o = within(
            &["compare", path, q.to_str().unwrap(), "--format", format],
            Duration::from_secs(30),
        )
        .unwrap();
        assert_eq!(o.status.code(), Some(0), "{format}: {}", err(&o));
        let s = out(&o);
        inert(&format!("compare {format}"), &s);
        if format != "csv" && format != "table" {
            assert!(!s.contains("<script>"), "{format}: {s}");
        }
    }
    // HTML: text and attributes escaped.
    let html = dir.path().join("evil.html");
    let o = within(
        &["report", path, "-o", html.to_str().unwrap()],
        Duration::from_secs(30),
    )
    .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        !page.contains("<script>alert(1)"),
        "HTML escapes the file's markup"
    );
    assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
}

#[test]
fn an_audit_of_a_command_printing_a_lot_keeps_bounded_memory_and_reads_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("a.json");
    // 256 MiB of chatter on stderr, then dd's own figures there (its summary comes last).
    let script = "head -c 268435456 /dev/zero | tr '\\0' 'x' >&2; echo >&2; \
                  dd if=/dev/zero of=f bs=1M count=4 conv=fsync";
    let mut cmd = Command::new(CANDOR);
    cmd.current_dir(dir.path())
        .args(["audit", "--quiet", "--witness", "procfs", "-o"])
        .arg(&json)
        .args(["--", "sh", "-c", script]);
    let (code, rss) = peak_rss(cmd);
    assert_eq!(code, Some(0));
    // candor's own, and the largest of the command's processes (tr, head: small).
    assert!(
        rss < 200 << 20,
        "peak resident set {} MiB for 256 MiB of output",
        rss >> 20
    );
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let text = v.to_string();
    assert!(
        // 256 MiB, the newline and dd's three lines.
        text.contains("the command printed 2684355")
            && text.contains(
                " bytes on stderr; the first 16777216 and the last 16777216 were read for its figures"
            ),
        "the audit says how much it read: {}",
        &text[..text.len().min(3000)]
    );
    // dd's figures, printed last, were still read.
    let a = &v["audit"];
    let claims = a["claims"].as_array().expect("claims");
    assert_eq!(claims.len(), 1, "{a}");
    assert_eq!(claims[0]["program"], "dd");
    assert_eq!(claims[0]["bytes"], 4194304);
}

#[test]
fn thousands_of_sizes_render_in_bounded_time_and_size() {
    let dir = tempfile::tempdir().unwrap();
    // 3,000 results at 3,000 file sizes and as many record sizes: half a megabyte of JSON,
    // nine million cells of a file size x record size map.
    let results: Vec<Value> = (0..3000u64)
        .map(|i| {
            json!({"target": "/t", "test": "write", "engine": "psync",
                   "file_size": 4096 * (i + 1), "record_size": 512 * (i + 7), "threads": 1,
                   "throughput": {"mean": 1e6 + i as f64, "n": 1}})
        })
        .collect();
    let v = json!({"tool": "candor", "schema_version": 1, "kind": "run", "results": results});
    let p = write(dir.path(), "sizes.json", &v);
    let html = dir.path().join("sizes.html");
    let start = Instant::now();
    let o = within(
        &["report", p.to_str().unwrap(), "-o", html.to_str().unwrap()],
        Duration::from_secs(30),
    )
    .expect("the HTML report is written within 30 s");
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let len = std::fs::metadata(&html).unwrap().len();
    assert!(
        len < 20 << 20,
        "{len} bytes of HTML in {:?}",
        start.elapsed()
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("3000 file sizes by 3000 record sizes: too many cells to draw"),
        "the map says why it is not drawn"
    );
}

#[test]
fn tens_of_thousands_of_results_render_and_compare_in_bounded_time() {
    let dir = tempfile::tempdir().unwrap();
    // 20,000 results on two targets, none matching another: every grouping, matching and
    // study table that scanned all results per result took minutes.
    let results: Vec<Value> = (0..20_000u64)
        .map(|i| {
            let target = ["/t", "/u"][(i % 2) as usize];
            let test = ["write", "read", "randread"][(i % 3) as usize];
            json!({"target": target, "test": test, "engine": "psync",
                   "file_size": 4096 * (i + 1), "record_size": 512 * (i + 7),
                   "threads": 1 + i % 7, "iodepth": 1 + i % 5,
                   "throughput": {"mean": 1e6 + i as f64, "n": 3, "samples": [1e6, 1e6, 1e6]},
                   "reps": [{"bytes": 1, "seconds": 1.0}]})
        })
        .collect();
    let v = json!({"tool": "candor", "schema_version": 1, "kind": "run",
                   "targets": [{"path": "/t"}, {"path": "/u"}], "results": results});
    let p = write(dir.path(), "many.json", &v);
    let path = p.to_str().unwrap();
    let html = dir.path().join("many.html");
    for args in [
        vec!["report", path, "--format", "table"],
        vec!["report", path, "--format", "markdown"],
        vec!["report", path, "-o", html.to_str().unwrap()],
        vec!["compare", path, path],
    ] {
        let start = Instant::now();
        let o = within(&args, Duration::from_secs(40))
            .unwrap_or_else(|| panic!("{args:?} finishes within 40 s"));
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", err(&o));
        eprintln!("{args:?}: {:?}", start.elapsed());
    }
}

#[test]
fn an_audit_shows_the_commands_file_names_with_their_controls_escaped() {
    let dir = tempfile::tempdir().unwrap();
    // A file whose name clears the screen and rings the bell, held open long enough for
    // /proc sampling to see it.
    let o = Command::new(CANDOR)
        .current_dir(dir.path())
        .args(["audit", "--quiet", "--witness", "procfs", "--"])
        .args([
            "sh",
            "-c",
            "exec 3>\"$(printf 'evil\\033[2J\\007')\"; head -c 4194304 /dev/zero >&3; sleep 0.5",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let e = err(&o);
    assert!(
        e.contains("evil\\u{1b}[2J\\u{7}"),
        "the name shown escaped: {e}"
    );
    inert("candor audit's table", &e);
}
