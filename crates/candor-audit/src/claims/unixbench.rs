//! UnixBench's file tests: `fstime` itself and the `Run` report.
//!
//! **fstime** (src/fstime.c) prints, for each test it runs, "Write done: %ld in %.4f, score
//! %ld" (and "Read done", "Copy done") on stdout and "COUNT|%ld|0|KBps" then "TIME|%.1f" on
//! stderr. The count is in 256-byte units (COUNTSIZE) and the score is KiB per second:
//! `counted / ((end - start) * 4)`, truncated. A copy test (`-c`, the default) first writes
//! for 2 seconds and reads for 2 seconds to make the file, so it prints three results; only
//! the last is the copy. Its buffer is `-b` (default 1024 bytes) and its file `-m` blocks of
//! 1 KiB (default 2000); both files stay open through every test and the sync() and sleeps
//! between them, and nothing is flushed while a test is timed.
//!
//! **Run** prints one line per test (`logResults`: "%-40s %12.1f %-5s (%.1f s, %d samples)",
//! e.g. "File Copy 1024 bufsize 2000 maxblocks" with its KBps), then the index table
//! (`logIndexCat`: "%-40s %12.1f %12.1f %8.1f" baseline, result, index) and the index score.
//! A name longer than 40 characters pushes its value to the next column, and a report copied
//! through a word processor can have the value on the line below the name: both are read.
//! Only the file tests ("File Copy", "File Read", "File Write") are claims; the other
//! tests' lines are recognised and left out (they are not about files).

use super::{figures_left, number_prefix, Claim, Direction, Parsed, Unread};
use std::collections::BTreeSet;

/// Whether an output is fstime's.
pub fn sniff_fstime(stdout: &str, stderr: &str) -> bool {
    let done = |t: &str| {
        t.lines().any(|l| {
            (l.starts_with("Copy done: ")
                || l.starts_with("Write done: ")
                || l.starts_with("Read done: "))
                && l.contains(", score ")
        })
    };
    done(stdout) || (done(stderr) && stderr.contains("COUNT|"))
}

/// Whether an output is UnixBench's Run report.
pub fn sniff_run(stdout: &str) -> bool {
    stdout.contains("BYTE UNIX Benchmarks") || stdout.contains("Benchmark Run: ")
}

/// fstime's -b and -m (buffer bytes, 1 KiB blocks), with its defaults.
fn fstime_args(argv: &[String]) -> (u64, u64, Option<char>) {
    let (mut b, mut m, mut t) = (1024, 2000, None);
    let mut it = argv.iter().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "-b" => b = it.next().and_then(|v| v.parse().ok()).unwrap_or(b),
            "-m" => m = it.next().and_then(|v| v.parse().ok()).unwrap_or(m),
            "-c" => t = Some('c'),
            "-r" => t = Some('r'),
            "-w" => t = Some('w'),
            _ => {}
        }
    }
    (b, m, t)
}

/// The bytes of fstime's file: `max_blocks * 1024 / bufsize` buffers.
fn file_bytes(bufsize: u64, max_blocks: u64) -> u64 {
    (max_blocks * 1024 / bufsize.max(1)) * bufsize
}

/// The claim of one of fstime's file tests ("write", "read" or "copy") with `bufsize`-byte
/// buffers on a file of `max_blocks` KiB, as `program` printed it: `kib_per_s` KiB/s.
fn file_test_claim(
    program: &str,
    test: &str,
    bufsize: u64,
    max_blocks: u64,
    kib_per_s: f64,
) -> Claim {
    Claim {
        program: program.into(),
        test: format!("{test} {bufsize}"),
        // The copy's bytes are the bytes it wrote to the second file.
        direction: if test == "read" {
            Direction::Read
        } else {
            Direction::Write
        },
        file_size: Some(file_bytes(bufsize, max_blocks)),
        record_size: Some(bufsize),
        threads: 1,
        claimed_bps: kib_per_s * 1024.0,
        filename: Some(
            if test == "copy" {
                "dummy1-*"
            } else {
                "dummy0-*"
            }
            .into(),
        ),
        ..Default::default()
    }
}

/// Reads fstime's stdout ("X done") and stderr (COUNT/TIME), with its command line for the
/// buffer and file sizes.
pub fn read_fstime(argv: &[String], stdout: &str, stderr: &str) -> Parsed {
    let (bufsize, max_blocks, _) = fstime_args(argv);
    let mut claims = Vec::new();
    let mut unread = Vec::new();
    let out: Vec<&str> = stdout.lines().collect();
    let err: Vec<&str> = stderr.lines().collect();
    let mut used_out: BTreeSet<usize> = BTreeSet::new();
    let mut used_err: BTreeSet<usize> = BTreeSet::new();
    // COUNT|score|0|KBps and TIME|seconds, in order.
    let mut counts: Vec<(f64, usize)> = Vec::new();
    let mut times: Vec<(f64, usize)> = Vec::new();
    for (i, l) in err.iter().enumerate() {
        let f: Vec<&str> = l.trim().split('|').collect();
        let (list, v) = match f.as_slice() {
            ["COUNT", v, _, unit] if *unit == "KBps" => (&mut counts, v),
            ["TIME", v] => (&mut times, v),
            _ => continue,
        };
        if let Ok(v) = v.parse() {
            list.push((v, i + 1));
            used_err.insert(i + 1);
        }
    }
    let mut k = 0;
    for (i, l) in out.iter().enumerate() {
        let n = i + 1;
        let l = l.trim();
        let Some((what, rest)) = l.split_once(" done: ") else {
            continue;
        };
        let test = match what {
            "Write" => "write",
            "Read" => "read",
            "Copy" => "copy",
            _ => continue,
        };
        // "%ld in %.4f, score %ld"
        let parsed = rest.split_once(" in ").and_then(|(c, r)| {
            let counted: u64 = c.trim().parse().ok()?;
            let (secs, r) = r.split_once(", score ")?;
            let secs: f64 = secs.trim().parse().ok()?;
            let score: f64 = r.trim().parse().ok()?;
            Some((counted, secs, score))
        });
        let Some((counted, secs, score)) = parsed else {
            unread.push(Unread::new(
                "fstime",
                n,
                l,
                "a result line whose count, seconds or score could not be read",
            ));
            used_out.insert(n);
            continue;
        };
        used_out.insert(n);
        let bytes = counted * 256;
        let mut c = Claim {
            bytes: Some(bytes),
            seconds: Some(secs),
            basis: "fstime's score: 256-byte units counted over its timer, in KiB/s".into(),
            printed: l.to_string(),
            line: n,
            ..file_test_claim("fstime", test, bufsize, max_blocks, score)
        };
        c.extra.insert("counted_256B".into(), counted as f64);
        if secs > 0.0 {
            c.extra
                .insert("bytes_over_seconds_Bps".into(), bytes as f64 / secs);
        }
        if test == "copy" {
            c.flags
                .push("copy: reads the first file, writes the second".into());
        }
        // stderr's COUNT and TIME of this test, kept, and named when they differ from
        // stdout's score and seconds by more than the printing's rounding.
        let stderr_figures = [
            (
                counts.get(k),
                "stderr_count_KBps",
                "COUNT",
                score,
                0.5,
                format!("the score {score}"),
            ),
            (
                times.get(k),
                "stderr_time_s",
                "TIME",
                secs,
                0.051,
                format!("the {secs} s"),
            ),
        ];
        for (figure, key, name, stdout_figure, rounding, stdout_words) in stderr_figures {
            let Some((v, ln)) = figure else {
                continue;
            };
            c.extra.insert(key.into(), *v);
            if (*v - stdout_figure).abs() > rounding {
                unread.push(Unread::new(
                    "fstime",
                    *ln,
                    err[*ln - 1],
                    format!("stderr's {name} {v} differs from {stdout_words} on stdout line {n}"),
                ));
            }
        }
        k += 1;
        claims.push(c);
    }
    if claims.is_empty() && !counts.is_empty() {
        // Only stderr was captured: the COUNT/TIME pairs are the figures.
        let (_, _, t) = fstime_args(argv);
        let names: Vec<&str> = match (t, counts.len()) {
            (Some('c') | None, 3) => vec!["write", "read", "copy"],
            (Some('r'), 2) => vec!["write", "read"],
            (Some('w'), 1) => vec!["write"],
            _ => vec![],
        };
        for (j, (v, ln)) in counts.iter().enumerate() {
            let Some(test) = names.get(j) else {
                unread.push(Unread::new(
                    "fstime",
                    *ln,
                    err[*ln - 1],
                    "a COUNT whose test cannot be told without fstime's stdout and options",
                ));
                continue;
            };
            claims.push(Claim {
                seconds: times.get(j).map(|t| t.0),
                basis: "fstime's COUNT in KiB/s".into(),
                printed: err[*ln - 1].to_string(),
                line: *ln,
                ..file_test_claim("fstime", test, bufsize, max_blocks, *v)
            });
        }
    }
    unread.extend(figures_left("fstime", &out, &|_| true, &used_out));
    unread.extend(
        figures_left("fstime", &err, &|_| true, &used_err)
            .into_iter()
            .filter(|u| !u.text.starts_with("fstime:")),
    );
    Parsed { claims, unread }.sane()
}

/// A file test's name in the Run report: (test, buffer bytes, max blocks).
fn file_test(name: &str) -> Option<(&'static str, u64, u64)> {
    let rest = name.trim().strip_prefix("File ")?;
    let (what, rest) = rest.split_once(' ')?;
    let test = match what {
        "Copy" => "copy",
        "Read" => "read",
        "Write" => "write",
        _ => return None,
    };
    let mut w = rest.split_whitespace();
    let b: u64 = w.next()?.parse().ok()?;
    if w.next()? != "bufsize" {
        return None;
    }
    let m: u64 = w.next()?.parse().ok()?;
    if w.next()? != "maxblocks" {
        return None;
    }
    Some((test, b, m))
}

/// "1048009.0 KBps (30.0 s, 1 samples)": value, unit, seconds, samples.
fn result_tail(s: &str) -> Option<(f64, String, f64, u32)> {
    let (v, rest) = number_prefix(s.trim())?;
    let rest = rest.trim();
    let (unit, rest) = rest.split_once(' ')?;
    let inner = rest.trim().strip_prefix('(')?.strip_suffix(')')?;
    let (t, samples) = inner.split_once(", ")?;
    let t: f64 = t.trim().strip_suffix(" s")?.trim().parse().ok()?;
    let samples: u32 = samples
        .trim()
        .strip_suffix(" samples")?
        .trim()
        .parse()
        .ok()?;
    Some((v, unit.to_string(), t, samples))
}

/// Reads UnixBench's Run report (its stdout, or the results file it writes).
pub fn read_run(text: &str) -> Parsed {
    let lines: Vec<&str> = text.lines().collect();
    let mut used: BTreeSet<usize> = BTreeSet::new();
    let mut unread = Vec::new();
    let mut claims: Vec<Claim> = Vec::new();
    let mut from = usize::MAX;
    let mut index_rows: Vec<(String, f64, f64, f64, usize)> = Vec::new();
    let mut pending: Option<(String, usize)> = None;
    let mut version = String::new();
    let mut in_index = false;
    for (i, raw) in lines.iter().enumerate() {
        let n = i + 1;
        let l = raw.trim_end();
        if let Some(v) = l
            .trim()
            .strip_prefix("BYTE UNIX Benchmarks (Version ")
            .and_then(|v| v.strip_suffix(')'))
        {
            version = v.to_string();
        }
        if l.starts_with("Benchmark Run: ") {
            from = from.min(n);
            used.insert(n);
            in_index = false;
            continue;
        }
        if n < from {
            continue;
        }
        if l.contains(" in system; running ") || l.trim().starts_with("========") {
            used.insert(n);
            continue;
        }
        if l.contains("BASELINE") && l.contains("RESULT") && l.contains("INDEX") {
            in_index = true;
            used.insert(n);
            continue;
        }
        if l.contains("Index Score") {
            used.insert(n);
            in_index = false;
            continue;
        }
        let t = l.trim();
        if t.is_empty() {
            continue;
        }
        // A result: name in 40 columns, then the value, unit, time and samples. The name
        // may be on the line above (a report copied through a word processor).
        if t.ends_with("samples)") {
            let (name, tail) = split_result(t);
            let (name, name_line) = match (name.is_empty(), pending.take()) {
                (true, Some((p, pl))) => (p, pl),
                _ => (name, n),
            };
            match result_tail(tail) {
                Some((v, unit, secs, samples)) => {
                    used.insert(n);
                    used.insert(name_line);
                    if let Some((test, b, m)) = file_test(&name) {
                        let mut c = Claim {
                            seconds: Some(secs),
                            basis:
                                "the Run report's score (fstime's KiB/s, averaged over the samples)"
                                    .into(),
                            printed: t.to_string(),
                            line: n,
                            flags: vec!["phases_in_order".into()],
                            ..file_test_claim("unixbench", test, b, m, v)
                        };
                        c.extra.insert("samples".into(), samples as f64);
                        if !version.is_empty() {
                            c.flags.push(format!("version {version}"));
                        }
                        if unit != "KBps" {
                            unread.push(Unread::new(
                                "unixbench",
                                n,
                                t,
                                format!("a file test in {unit}, not KBps"),
                            ));
                        } else {
                            claims.push(c);
                        }
                    }
                }
                None => {
                    used.insert(n);
                    unread.push(Unread::new(
                        "unixbench",
                        n,
                        t,
                        "a result line whose value, unit, time or samples could not be read",
                    ));
                }
            }
            continue;
        }
        if in_index {
            // "%-40s %12.1f %12.1f %8.1f": name, baseline, result, index ("---" when none).
            let words: Vec<&str> = t.split_whitespace().collect();
            if words.len() >= 4 {
                let nums: Vec<Option<f64>> = words[words.len() - 3..]
                    .iter()
                    .map(|w| w.parse().ok())
                    .collect();
                if let [b, Some(r), x] = nums.as_slice() {
                    let name = words[..words.len() - 3].join(" ");
                    index_rows.push((name, b.unwrap_or(0.0), *r, x.unwrap_or(0.0), n));
                    used.insert(n);
                    continue;
                }
            }
        }
        // A name alone on its line (its figures on the next).
        if !t.chars().any(|c| c.is_ascii_digit()) || file_test(t).is_some() {
            pending = Some((t.to_string(), n));
        }
    }
    // The index table's file rows carry the same results.
    for (name, baseline, result, index, n) in index_rows {
        if let Some((test, b, _)) = file_test(&name) {
            let key = format!("{test} {b}");
            match claims.iter_mut().find(|c| c.test == key) {
                Some(c) => {
                    c.extra.insert("index_baseline_KBps".into(), baseline);
                    c.extra.insert("index".into(), index);
                    if (c.claimed_bps / 1024.0 - result).abs() > 0.05 {
                        unread.push(Unread::new(
                            "unixbench",
                            n,
                            lines[n - 1],
                            format!(
                                "the index table's result {result} differs from the test's {}",
                                c.claimed_bps / 1024.0
                            ),
                        ));
                    }
                }
                None => unread.push(Unread::new(
                    "unixbench",
                    n,
                    lines[n - 1],
                    "an index row of a file test with no result line",
                )),
            }
        }
    }
    unread.extend(figures_left("unixbench", &lines, &|n| n > from, &used));
    Parsed { claims, unread }.sane()
}

/// Splits a result line into its name and "value unit (t s, n samples)": the value and the
/// unit are the two words before the last '('.
fn split_result(t: &str) -> (String, &str) {
    let Some(open) = t.rfind('(') else {
        return (String::new(), t);
    };
    let head = t[..open].trim_end();
    let mut cut = head.len();
    for _ in 0..2 {
        cut = head[..cut]
            .trim_end()
            .rfind(' ')
            .map(|i| i + 1)
            .unwrap_or(0);
    }
    (head[..cut].trim().to_string(), &t[cut..])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(name: &str) -> String {
        let p = format!("{}/tests/data/unixbench/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
    }

    fn argv(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn run_report_as_the_source_document_printed_it() {
        // The three File Copy lines of a report as source document 004 shows them (one
        // name with its figures on the next line, as pasted).
        let text = "Benchmark Run: dom abr 23 2017 18:41:55 - 18:50:55\n\
1 CPU in system; running 1 parallel copy of tests\n\
File Copy 1024 bufsize 2000 maxblocks 1048009.0 KBps (30.0 s, 1 samples)\n\
File Copy 256 bufsize 500 maxblocks\n\
                                            319012.0 KBps (30.0 s, 1 samples)\n\
File Copy 4096 bufsize 8000 maxblocks 2491342.0 KBps (30.0 s, 1 samples)\n";
        let r = read_run(text);
        assert!(r.unread.is_empty(), "{:?}", r.unread);
        let t: Vec<(&str, f64)> = r
            .claims
            .iter()
            .map(|c| (c.test.as_str(), c.claimed_bps / 1024.0))
            .collect();
        assert_eq!(
            t,
            [
                ("copy 1024", 1048009.0),
                ("copy 256", 319012.0),
                ("copy 4096", 2491342.0)
            ]
        );
        assert_eq!(r.claims[1].file_size, Some(500 * 1024));
        assert_eq!(r.claims[2].file_size, Some(8000 * 1024));
        assert_eq!(r.claims[0].seconds, Some(30.0));
        assert_eq!(r.claims[0].extra["samples"], 1.0);
    }

    fn fstime(name: &str, args: &str) -> Parsed {
        let r = read_fstime(
            &argv(args),
            &data(&format!("{name}.stdout")),
            &data(&format!("{name}.stderr")),
        );
        assert!(r.unread.is_empty(), "{name}: {:?}", r.unread);
        r
    }

    #[test]
    fn fstime_copy_prints_write_read_and_copy() {
        let r = fstime(
            "fstime-c-b256-m500-t5",
            "fstime -c -t 5 -d /var/tmp/capture/ubtmp -b 256 -m 500",
        );
        let t: Vec<(&str, f64, Option<f64>)> = r
            .claims
            .iter()
            .map(|c| (c.test.as_str(), c.claimed_bps / 1024.0, c.seconds))
            .collect();
        assert_eq!(
            t,
            [
                ("write 256", 1480482.0, Some(2.0)),
                ("read 256", 2003284.0, Some(2.0)),
                ("copy 256", 633044.0, Some(5.0))
            ]
        );
        let c = &r.claims[2];
        assert_eq!(c.bytes, Some(12660919 * 256));
        assert_eq!(c.extra["counted_256B"], 12660919.0);
        assert_eq!(c.extra["stderr_count_KBps"], 633044.0);
        assert_eq!(c.extra["stderr_time_s"], 5.0);
        assert_eq!(c.record_size, Some(256));
        assert_eq!(c.file_size, Some(512_000));
        assert_eq!(c.filename.as_deref(), Some("dummy1-*"));
        assert_eq!(r.claims[0].filename.as_deref(), Some("dummy0-*"));
        assert_eq!(r.claims[1].direction, Direction::Read);
        let r = fstime(
            "fstime-c-b1024-m2000-t30",
            "fstime -c -t 30 -d /var/tmp/capture/ubtmp -b 1024 -m 2000",
        );
        assert_eq!(r.claims.len(), 3);
        assert_eq!(r.claims[2].file_size, Some(2_048_000));
        assert_eq!(r.claims[2].seconds, Some(30.0));
        assert!(r.claims[2].claimed_bps > 0.0);
    }

    #[test]
    fn fstime_read_and_write_tests() {
        let r = fstime(
            "fstime-r-b4096-m8000-t5",
            "fstime -r -t 5 -d /var/tmp/capture/ubtmp -b 4096 -m 8000",
        );
        let t: Vec<(&str, f64)> = r
            .claims
            .iter()
            .map(|c| (c.test.as_str(), c.claimed_bps / 1024.0))
            .collect();
        assert_eq!(t, [("write 4096", 18839831.0), ("read 4096", 23002759.0)]);
        assert_eq!(r.claims[1].bytes, Some(460057664 * 256));
        assert_eq!(r.claims[1].file_size, Some(8_192_000));
        let r = fstime(
            "fstime-w-b1024-m2000-t5",
            "fstime -w -t 5 -d /var/tmp/capture/ubtmp -b 1024 -m 2000",
        );
        assert_eq!(r.claims.len(), 1);
        assert_eq!(r.claims[0].claimed_bps, 5915258.0 * 1024.0);
        assert_eq!(r.claims[0].seconds, Some(5.0003));
        assert_eq!(r.claims[0].extra["stderr_time_s"], 5.0);
    }

    #[test]
    fn fstime_stderr_alone() {
        let r = read_fstime(
            &argv("fstime -c -b 256 -m 500"),
            "",
            &data("fstime-c-b256-m500-t5.stderr"),
        );
        assert!(r.unread.is_empty(), "{:?}", r.unread);
        let t: Vec<&str> = r.claims.iter().map(|c| c.test.as_str()).collect();
        assert_eq!(t, ["write 256", "read 256", "copy 256"]);
        assert_eq!(r.claims[2].claimed_bps, 633044.0 * 1024.0);
    }

    /// stderr's COUNT and TIME are kept with stdout's figures, and each one that differs
    /// from stdout's beyond the printing's rounding is named on its own line.
    #[test]
    fn fstime_stderr_that_differs_from_stdout_is_named() {
        let stdout = "Write done: 118312000 in 5.0003, score 5915258\n";
        let r = read_fstime(
            &argv("fstime -w -b 1024 -m 2000"),
            stdout,
            "COUNT|5915000|0|KBps\nTIME|5.1\n",
        );
        assert_eq!(r.claims.len(), 1);
        assert_eq!(r.claims[0].extra["stderr_count_KBps"], 5915000.0);
        assert_eq!(r.claims[0].extra["stderr_time_s"], 5.1);
        let why: Vec<(usize, &str)> = r.unread.iter().map(|u| (u.line, u.why.as_str())).collect();
        assert_eq!(
            why,
            [
                (
                    1,
                    "stderr's COUNT 5915000 differs from the score 5915258 on stdout line 1"
                ),
                (
                    2,
                    "stderr's TIME 5.1 differs from the 5.0003 s on stdout line 1"
                ),
            ]
        );
        // Within the rounding: kept, nothing named.
        let r = read_fstime(
            &argv("fstime -w -b 1024 -m 2000"),
            stdout,
            "COUNT|5915258|0|KBps\nTIME|5.0\n",
        );
        assert!(r.unread.is_empty(), "{:?}", r.unread);
        assert_eq!(r.claims[0].extra["stderr_time_s"], 5.0);
    }

    #[test]
    fn run_report_of_release_6() {
        for f in ["run-i1-c1-fs.stdout.txt", "run-results-file.txt"] {
            let r = read_run(&data(f));
            assert!(r.unread.is_empty(), "{f}: {:?}", r.unread);
            let t: Vec<(&str, f64)> = r
                .claims
                .iter()
                .map(|c| (c.test.as_str(), c.claimed_bps / 1024.0))
                .collect();
            assert_eq!(
                t,
                [
                    ("copy 1024", 2394949.0),
                    ("copy 256", 446472.0),
                    ("copy 4096", 4600246.0)
                ],
                "{f}"
            );
            let c = &r.claims[0];
            assert_eq!(c.extra["index_baseline_KBps"], 3960.0);
            assert_eq!(c.extra["index"], 6047.9);
            assert_eq!(r.claims[1].extra["index"], 2697.7);
            assert_eq!(r.claims[2].extra["index_baseline_KBps"], 5800.0);
            assert_eq!(c.seconds, Some(30.0));
            assert!(
                c.flags.contains(&"version 6.0.0".to_string()),
                "{:?}",
                c.flags
            );
        }
    }

    #[test]
    fn fstime_alone_prints_nothing_claimable_when_arguments_are_wrong() {
        let r = read_fstime(
            &argv("fstime -b 7"),
            "",
            "fstime: buffer size must be in range 256-1048576\n",
        );
        assert!(r.claims.is_empty());
        assert!(r.unread.is_empty(), "{:?}", r.unread);
    }

    #[test]
    fn sizes_of_fstime() {
        assert_eq!(file_bytes(1024, 2000), 2000 * 1024);
        assert_eq!(file_bytes(256, 500), 500 * 1024);
        assert_eq!(file_bytes(4096, 8000), 8000 * 1024);
        assert_eq!(
            fstime_args(&argv("fstime -c -t 30 -d /tmp -b 256 -m 500")),
            (256, 500, Some('c'))
        );
        assert_eq!(fstime_args(&argv("fstime")), (1024, 2000, None));
    }
}
