//! The generic claims reader: for a program no parser knows, the headline figures any tool
//! prints (a number with a rate or latency unit: MB/s, MiB/s, GB/sec, KB/s, IOPS, ops/s,
//! files/sec, transactions/sec, µs/ms latency, "N bytes (...) copied, T s, R MB/s", "N MB in
//! T seconds"). A throughput becomes a [`Claim`] checked against the bytes the tree moved in
//! the matching direction; every other figure is listed as unread with the reason. Nothing
//! is made up: each figure is a number and unit printed on the line named.

use crate::claims::{number_prefix, unit_multiplier, Claim, Direction, Parsed, Unread};
use crate::phase::Phase;
use crate::reconcile::Row;
use candor_model::units::{format_bytes, ByteStyle};

/// What one number with a unit is.
#[derive(Clone, Debug, PartialEq)]
enum Kind {
    /// Bytes per second.
    Rate(f64),
    /// Bytes.
    Size(f64),
    /// Seconds.
    Time(f64),
    /// I/O operations per second.
    Iops(f64),
    /// Other things per second ("files/sec", "ops/s", "transactions/sec").
    PerSecond(f64, String),
}

#[derive(Clone, Debug)]
struct Figure {
    kind: Kind,
    printed: String,
}

/// A scale word printed between a number and its unit ("19.9 k iops").
fn scale(word: &str) -> Option<f64> {
    match word {
        "k" | "K" => Some(1e3),
        "M" => Some(1e6),
        "G" => Some(1e9),
        _ => None,
    }
}

/// Bytes of a size unit ("MB", "KiB", "bytes"...), case as printed, with "kB"/"KB" = 1000.
fn size_unit(u: &str) -> Option<f64> {
    match u {
        "bytes" | "byte" | "B" => Some(1.0),
        "kB" | "KB" | "kb" => Some(1e3),
        _ => unit_multiplier(u).filter(|_| !u.is_empty() && u != "B"),
    }
}

fn time_unit(u: &str) -> Option<f64> {
    Some(match u {
        "s" | "sec" | "secs" | "second" | "seconds" => 1.0,
        "ms" | "msec" | "msecs" => 1e-3,
        "us" | "µs" | "usec" | "usecs" => 1e-6,
        "ns" | "nsec" => 1e-9,
        _ => return None,
    })
}

/// A unit written after a number: a rate, a size, a time, IOPS or a count per second.
fn classify(v: f64, unit: &str) -> Option<Kind> {
    let u = unit.trim_end_matches([',', '.', ';', ':']);
    for per in ["/sec", "/s", "/second", "ps"] {
        if let Some(base) = u.strip_suffix(per) {
            if let Some(m) = size_unit(base).filter(|_| base != "bytes" || per != "ps") {
                return Some(Kind::Rate(v * m));
            }
            if per != "ps" && !base.is_empty() && base.chars().all(|c| c.is_alphabetic()) {
                let what = base.to_lowercase();
                if what == "io" || what == "ios" {
                    return Some(Kind::Iops(v));
                }
                return Some(Kind::PerSecond(v, what));
            }
        }
    }
    if u.eq_ignore_ascii_case("iops") {
        return Some(Kind::Iops(v));
    }
    if u == "tps" {
        return Some(Kind::PerSecond(v, "transactions".into()));
    }
    if let Some(m) = size_unit(u) {
        return Some(Kind::Size(v * m));
    }
    time_unit(u).map(|m| Kind::Time(v * m))
}

/// The numbers with units on one line, in order.
fn figures(line: &str) -> Vec<Figure> {
    let cleaned: String = line
        .chars()
        .map(|c| if ",;=()[]<>".contains(c) { ' ' } else { c })
        .collect();
    let toks: Vec<&str> = cleaned.split_whitespace().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let Some((v, rest)) = number_prefix(toks[i]) else {
            i += 1;
            continue;
        };
        if rest.is_empty() {
            let (mult, at) = match toks.get(i + 1).and_then(|w| scale(w)) {
                Some(m) => (m, i + 2),
                None => (1.0, i + 1),
            };
            if let Some(kind) = toks.get(at).and_then(|u| classify(v * mult, u)) {
                out.push(Figure {
                    kind,
                    printed: toks[i..=at].join(" "),
                });
                i = at + 1;
                continue;
            }
        } else if let Some(kind) = classify(v, rest) {
            out.push(Figure {
                kind,
                printed: toks[i].to_string(),
            });
        }
        i += 1;
    }
    out
}

/// The figures of a line that can be a result: a rate, IOPS, a count per second, a latency,
/// or bytes over a time ("128 MB in 0.30 seconds"). A line with only a size or a time
/// ("0 sec", "4 KiB") has none.
fn result_figures(line: &str) -> Vec<Figure> {
    let figs = figures(line);
    let lower = line.to_lowercase();
    let has = |f: &dyn Fn(&Kind) -> bool| figs.iter().any(|x| f(&x.kind));
    let rate = has(&|k| matches!(k, Kind::Rate(_) | Kind::Iops(_) | Kind::PerSecond(..)));
    let time = has(&|k| matches!(k, Kind::Time(_)));
    let size = has(&|k| matches!(k, Kind::Size(_)));
    let latency = time && (lower.contains("lat") || lower.contains("min/avg/max"));
    let total = size && time && (lower.contains(" in ") || lower.contains("copied"));
    if rate || latency || total {
        figs
    } else {
        Vec::new()
    }
}

/// Which way a line's figure goes, from its words.
fn direction_of(line: &str) -> Direction {
    let l = line.to_lowercase();
    let read = l.contains("read") || l.contains("<<<");
    let write = l.contains("writ") || l.contains("wrote") || l.contains(">>>");
    match (read, write) {
        (true, false) => Direction::Read,
        (false, true) => Direction::Write,
        _ => Direction::Unknown,
    }
}

/// The line with every number and every word but units and directions replaced: lines of
/// one shape printed again and again are progress ("... 252.75 MB/sec  warmup 1 sec" then
/// "... execute 2 sec"), not results; "read: 100 MB/s" and "write: 90 MB/s" keep two shapes.
fn shape(line: &str) -> String {
    line.split_whitespace()
        .map(|t| {
            let l = t.to_lowercase();
            if t.starts_with(|c: char| c.is_ascii_digit()) {
                "#".to_string()
            } else if l.contains("read")
                || l.contains("writ")
                || l.contains("wrote")
                || l.contains('/')
            {
                l
            } else if classify(1.0, t).is_some() || scale(t).is_some() {
                t.to_string()
            } else {
                "w".to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Words of a line with their column span.
fn spans(line: &str) -> Vec<(usize, usize, &str)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in line
        .char_indices()
        .chain(std::iter::once((line.len(), ' ')))
    {
        match (c.is_whitespace(), start) {
            (false, None) => start = Some(i),
            (true, Some(s)) => {
                out.push((s, i, &line[s..i]));
                start = None;
            }
            _ => {}
        }
    }
    out
}

/// Columns of a table whose header names a rate ("Files/sec", "MB/s", "IOPS") and whose next
/// line is all numbers: (column name, value), the value being the number under the name
/// (overlapping its columns, the nearest end first).
fn table_figures(header: &str, row: &str) -> Vec<(String, f64)> {
    let h = spans(header);
    let r = spans(row);
    if h.len() < 2 || r.len() < 2 || r.iter().any(|(_, _, w)| w.parse::<f64>().is_err()) {
        return Vec::new();
    }
    h.iter()
        .filter(|(_, _, name)| {
            let n = name.to_lowercase();
            n.contains("/s") || n == "iops" || n == "tps"
        })
        .filter_map(|&(hs, he, name)| {
            let (_, _, w) = r
                .iter()
                .filter(|(rs, re, _)| *rs < he && *re > hs)
                .min_by_key(|(_, re, _)| re.abs_diff(he))?;
            Some((name.to_string(), w.parse::<f64>().ok()?))
        })
        .collect()
}

/// Reads the figures of a program no parser knows: stdout, then stderr.
pub fn read(program: &str, stdout: &str, stderr: &str) -> Parsed {
    let mut p = Parsed::default();
    for (stream, text) in [("stdout", stdout), ("stderr", stderr)] {
        read_stream(program, stream, text, &mut p);
    }
    p.sane()
}

fn read_stream(program: &str, stream: &str, text: &str, p: &mut Parsed) {
    let lines: Vec<&str> = text.lines().collect();
    let mut shapes = std::collections::BTreeMap::<String, usize>::new();
    for l in &lines {
        if !result_figures(l).is_empty() {
            *shapes.entry(shape(l)).or_default() += 1;
        }
    }
    let mut progress_named = std::collections::BTreeSet::new();
    for (i, line) in lines.iter().enumerate() {
        let n = i + 1;
        let unread = |why: String| Unread::new(program, n, line, format!("{why} ({stream})"));
        // A table: a header naming a rate, its row below.
        if let Some(next) = lines.get(i + 1) {
            for (col, v) in table_figures(line, next) {
                p.unread.push(Unread::new(
                    program,
                    n + 1,
                    next,
                    format!(
                        "{col} = {v}: {} ({stream})",
                        per_second_reason(&col.to_lowercase())
                    ),
                ));
            }
        }
        let figs = result_figures(line);
        if figs.is_empty() {
            continue;
        }
        let sh = shape(line);
        let times = shapes.get(&sh).copied().unwrap_or(0);
        if times >= 2 {
            // Progress printed while the program ran: the last one is named, once.
            let last = lines.iter().rposition(|l| shape(l) == sh) == Some(i);
            if last && progress_named.insert(sh) {
                p.unread.push(unread(format!(
                    "a running figure printed {times} times while the program ran (this is the last): not a result"
                )));
            }
            continue;
        }
        // Each clause of a line on its own ("wrote N bytes in T s; read N bytes in T s").
        for clause in line.split(';') {
            let figs = result_figures(clause);
            if figs.is_empty() {
                continue;
            }
            let line = clause;
            let lower = line.to_lowercase();
            let rate = figs.iter().find_map(|f| match f.kind {
                Kind::Rate(b) => Some((b, f)),
                _ => None,
            });
            let size = figs.iter().find_map(|f| match f.kind {
                Kind::Size(b) => Some(b),
                _ => None,
            });
            let time = figs.iter().find_map(|f| match f.kind {
                Kind::Time(s) => Some(s),
                _ => None,
            });
            let latency = lower.contains("lat") || lower.contains("min/avg/max");
            let iops = figs.iter().find_map(|f| match f.kind {
                Kind::Iops(v) => Some((v, f)),
                _ => None,
            });
            // "128 MB in 0.30 seconds", "... copied, 0.0195 s": a total over a time (a size and
            // a time on a line of single requests are not).
            let total = lower.contains(" in ") || lower.contains("copied");
            let bytes_in_time = match (size, time) {
                (Some(b), Some(t)) if total && !latency && t > 0.0 && b > 0.0 => Some((b, t)),
                _ => None,
            };
            if let Some((bps, f)) = rate {
                let mut c = Claim {
                    program: program.into(),
                    test: named(test_name(line, f), direction_of(line)),
                    direction: direction_of(line),
                    claimed_bps: bps,
                    basis: "generic".into(),
                    printed: f.printed.clone(),
                    line: n,
                    threads: 1,
                    ..Default::default()
                };
                if let Some((b, t)) = bytes_in_time {
                    c.bytes = Some(b.round() as u64);
                    c.seconds = Some(t);
                }
                c.iops = iops.map(|(v, _)| v);
                if lower.contains("mean") && !lower.contains(" 1 instance") {
                    c.flags.push("mean_of_processes".into());
                }
                p.claims.push(c);
            } else if let Some((b, t)) = bytes_in_time {
                p.claims.push(Claim {
                    program: program.into(),
                    test: named(test_name(line, &figs[0]), direction_of(line)),
                    direction: direction_of(line),
                    claimed_bps: b / t,
                    bytes: Some(b.round() as u64),
                    seconds: Some(t),
                    basis: "generic".into(),
                    printed: figs
                        .iter()
                        .map(|f| f.printed.as_str())
                        .collect::<Vec<_>>()
                        .join(" in "),
                    line: n,
                    threads: 1,
                    ..Default::default()
                });
            } else if latency && figs.iter().any(|f| matches!(f.kind, Kind::Time(_))) {
                p.unread.push(unread(
                    "a latency figure: the audit does not time the program's single requests (the time inside its I/O calls is in the account)".into(),
                ));
            } else if let Some((_, f)) = iops {
                p.unread.push(unread(format!(
                    "{} without the bytes behind it: the account gives the calls the kernel saw",
                    f.printed
                )));
            } else if let Some(Figure {
                kind: Kind::PerSecond(_, what),
                ..
            }) = figs.iter().find(|f| matches!(f.kind, Kind::PerSecond(..)))
            {
                p.unread.push(unread(per_second_reason(what).to_string()));
            }
        }
    }
}

/// Adds to each unread rate of files what the tree did: the files it wrote in the
/// directory where it wrote most of them, and the span from their first open to their last
/// close.
pub fn annotate(unread: &mut [Unread], phases: &[Phase]) {
    let dir_of = |p: &str| {
        let p = p.trim_end_matches('/');
        p[..p.rfind('/').unwrap_or(0)]
            .trim_end_matches('/')
            .to_string()
    };
    let mut per_dir = std::collections::BTreeMap::<String, std::collections::BTreeSet<_>>::new();
    for p in phases.iter().filter(|p| p.write_bytes > 0) {
        per_dir
            .entry(dir_of(&p.path))
            .or_default()
            .insert((p.dev, p.inode, p.path.clone()));
    }
    let Some((dir, files)) = per_dir.iter().max_by_key(|(_, f)| f.len()) else {
        return;
    };
    let mine: Vec<&Phase> = phases
        .iter()
        .filter(|p| p.write_bytes > 0 && dir_of(&p.path) == *dir)
        .collect();
    let open = mine.iter().map(|p| p.open_s).fold(f64::MAX, f64::min);
    let close = mine.iter().map(|p| p.close_s).fold(0.0, f64::max);
    let span = close - open;
    for u in unread.iter_mut() {
        if u.why.contains("a rate of files") && span > 0.0 {
            u.why.push_str(&format!(
                "; the tree wrote {} files in {dir}/ over {span:.3} s from the first open to the last close: {:.1} files/s (the program's own timer may leave out its setup)",
                files.len(),
                files.len() as f64 / span
            ));
        }
    }
}

/// Why a count per second is not checked.
fn per_second_reason(what: &str) -> &'static str {
    if what.contains("file") {
        "a rate of files: the account gives the files the tree wrote and their fsyncs, not the program's timing of them"
    } else if what.contains("bogo") || what.contains("op") {
        "a rate of the program's own operations: no count the kernel keeps says what one of them is"
    } else if what.contains("trans") || what == "tps" {
        "a rate of transactions: what one transaction does in I/O is the program's own"
    } else {
        "a count per second of something the kernel does not count"
    }
}

/// The name with the figure's direction when it does not say it.
fn named(name: String, d: Direction) -> String {
    let dir = match d {
        Direction::Read => "read",
        Direction::Write => "write",
        _ => return name,
    };
    if name.to_lowercase().contains(dir) {
        name
    } else {
        format!("{name} {dir}")
    }
}

/// A name for a figure: the last words before the first number on its line (the words
/// after it when none come before).
fn test_name(line: &str, _f: &Figure) -> String {
    let toks: Vec<&str> = line.split_whitespace().collect();
    let first_num = toks
        .iter()
        .position(|t| t.starts_with(|c: char| c.is_ascii_digit()))
        .unwrap_or(toks.len());
    let wordy = |t: &&&str| {
        t.chars().any(|c| c.is_alphabetic())
            && !t.contains('/')
            && !t.starts_with('[')
            && !t.ends_with("metrc:")
    };
    let clean = |t: &str| {
        t.trim_matches(|c: char| !c.is_alphanumeric() && c != '_')
            .to_string()
    };
    let before: Vec<String> = toks[..first_num]
        .iter()
        .filter(wordy)
        .map(|t| clean(t))
        .filter(|t| !t.is_empty())
        .collect();
    let words: Vec<String> = if before.is_empty() {
        toks[first_num..]
            .iter()
            .filter(wordy)
            .take(2)
            .map(|t| clean(t))
            .collect()
    } else {
        before[before.len().saturating_sub(3)..].to_vec()
    };
    if words.is_empty() {
        "figure".into()
    } else {
        words.join(" ")
    }
}

/// The claimed rate with a decimal unit read as the binary one ("MB/s" as MiB/s), as some
/// tools print it (hdparm's "MB" is 1048576 bytes); None when the unit is not decimal.
fn binary_reading(c: &Claim) -> Option<f64> {
    let (v, unit) = number_prefix(&c.printed)?;
    let u = unit.trim();
    let base = u.split('/').next()?;
    let m = match base {
        "kB" | "KB" => 1024.0,
        "MB" => 1048576.0,
        "GB" => 1073741824.0,
        "TB" => 1099511627776.0,
        _ => return None,
    };
    Some(v * m)
}

/// The bytes the tree moved through files in `dir` (both directions for Unknown), over the
/// span from the first open to the last close of the phases that moved them, and per
/// process over the time inside their calls.
fn observed(phases: &[Phase], dir: Direction) -> (u64, f64, Option<f64>, Vec<usize>) {
    let bytes_of = |p: &Phase| match dir {
        Direction::Read => p.read_bytes,
        Direction::Write => p.write_bytes,
        _ => p.bytes(),
    };
    let time_of = |p: &Phase| match dir {
        Direction::Read => p.read_time_s,
        Direction::Write => p.write_time_s,
        _ => p.io_time_s(),
    };
    let sel: Vec<usize> = (0..phases.len())
        .filter(|&i| bytes_of(&phases[i]) > 0)
        .collect();
    let bytes: u64 = sel.iter().map(|&i| bytes_of(&phases[i])).sum();
    let open = sel
        .iter()
        .map(|&i| phases[i].open_s)
        .fold(f64::MAX, f64::min);
    let close = sel.iter().map(|&i| phases[i].close_s).fold(0.0, f64::max);
    let span = (close - open).max(0.0);
    // Processes side by side add their rates.
    let mut per_pid = std::collections::BTreeMap::<u32, (u64, Option<f64>)>::new();
    for &i in &sel {
        let e = per_pid.entry(phases[i].pid).or_insert((0, Some(0.0)));
        e.0 += bytes_of(&phases[i]);
        e.1 = match (e.1, time_of(&phases[i])) {
            (Some(a), Some(b)) => Some(a + b),
            _ => None,
        };
    }
    let in_calls: Option<f64> = per_pid
        .values()
        .map(|(b, t)| t.filter(|t| *t > 0.0).map(|t| *b as f64 / t))
        .sum();
    (bytes, span, in_calls, sel)
}

/// When the calls of the figure's direction (on the phases `sel`) all moved one size and
/// the figure counts whole calls fewer than they made (ioping prints "19 requests
/// completed ... 76 KiB read" after 20 reads of 4 KiB: its first is a warm-up it leaves
/// out), the sentence saying so.
fn requests_left_out(
    phases: &[Phase],
    sel: &[usize],
    dir: Direction,
    claimed: u64,
    moved: u64,
) -> Option<String> {
    let (word, calls) = match dir {
        Direction::Read => (
            "reads",
            sel.iter()
                .map(|&i| phases[i].read_calls)
                .sum::<Option<u64>>()?,
        ),
        Direction::Write => (
            "writes",
            sel.iter()
                .map(|&i| phases[i].write_calls)
                .sum::<Option<u64>>()?,
        ),
        _ => return None,
    };
    if calls < 2 || claimed == 0 || claimed >= moved || !moved.is_multiple_of(calls) {
        return None;
    }
    let size = moved / calls;
    // Every call of that direction moved `size` bytes: no call of another size.
    let one_size = sel.iter().all(|&i| {
        let (b, n) = match dir {
            Direction::Read => (phases[i].read_bytes, phases[i].read_calls.unwrap_or(0)),
            _ => (phases[i].write_bytes, phases[i].write_calls.unwrap_or(0)),
        };
        b == n * size
            && phases[i]
                .record_sizes
                .iter()
                .all(|[s, _]| *s == size || *s == 0)
    });
    if !one_size || !(moved - claimed).is_multiple_of(size) {
        return None;
    }
    let out = (moved - claimed) / size;
    if out == 0 || out * 2 > calls {
        return None;
    }
    Some(format!(
        "the figure counts {} of the {calls} {word} of {} the tree made: {out} request{} left out of the figure (a warm-up, as the program may say beside it), whose bytes and time are in what was observed",
        calls - out,
        format_bytes(size, ByteStyle::TENTHS),
        if out == 1 { "" } else { "s" }
    ))
}

/// Reconciles the generic reader's throughputs with what the tree moved.
pub fn reconcile(
    claims: &[Claim],
    phases: &[Phase],
    channels_used: bool,
    every_call: bool,
) -> Vec<Row> {
    claims
        .iter()
        .filter(|c| c.basis == "generic")
        .map(|c| {
            let (bytes, span, in_calls, sel) = observed(phases, c.direction);
            let words = match c.direction {
                Direction::Read => "read",
                Direction::Write => "written",
                _ => "read and written",
            };
            let mut r = Row {
                test: c.test.clone(),
                program: c.program.clone(),
                direction: c.direction,
                threads: c.threads,
                claimed_bps: c.claimed_bps,
                claimed_bytes: c.bytes,
                claimed_seconds: c.seconds,
                observed_bytes: Some(bytes),
                wall_s: Some(span),
                phases: sel,
                verdict: "unverified".into(),
                ..Default::default()
            };
            if bytes == 0 || span <= 0.0 {
                r.explanation = format!(
                    "{} printed {} on line {}; {} {words} through a file{}",
                    c.program,
                    c.printed,
                    c.line,
                    if every_call {
                        "no read or write call of the tree moved bytes"
                    } else {
                        "no file was seen open while bytes moved (a file open for less than one sampling period of /proc is not seen)"
                    },
                    if channels_used {
                        " (it used a channel the audit does not count per file: see the notes)"
                    } else {
                        ""
                    }
                );
                return r;
            }
            let wall = bytes as f64 / span;
            r.observed_wall_bps = Some(wall);
            r.observed_syscall_bps = in_calls;
            r.ratio = Some(c.claimed_bps / wall);
            r.ratio_syscall = in_calls.filter(|x| *x > 0.0).map(|x| c.claimed_bps / x);
            let within = |x: Option<f64>| x.is_some_and(|x| (x - 1.0).abs() <= 0.05);
            let assumed = format!(
                "assumed: the figure is the bytes {words} through files over the {span:.3} s from the first open to the last close of the files that moved them ({}); {} has no parser, so which files and which part of the run it timed is not known",
                format_bytes(bytes, ByteStyle::TENTHS),
                c.program
            );
            let mut why = Vec::new();
            if let Some(cb) = c.bytes {
                if cb as f64 > bytes as f64 * 1.05 && !channels_used {
                    r.verdict = "overstated".into();
                    why.push(format!(
                        "{} counted {} but the tree's calls moved only {} {words} through files",
                        c.program,
                        format_bytes(cb, ByteStyle::TENTHS),
                        format_bytes(bytes, ByteStyle::TENTHS)
                    ));
                }
            }
            // A figure that counts whole requests fewer than the calls made (ioping leaves
            // its first, warm-up request out of its summary): said, with the count.
            let left_out = c
                .bytes
                .and_then(|cb| requests_left_out(phases, &r.phases, c.direction, cb, bytes));
            if let Some(l) = &left_out {
                why.push(l.clone());
            }
            let binary = binary_reading(c);
            let within_bin = |o: Option<f64>| {
                binary
                    .zip(o.filter(|o| *o > 0.0))
                    .is_some_and(|(b, o)| (b / o - 1.0).abs() <= 0.05)
            };
            if r.verdict != "overstated" {
                if within(r.ratio) {
                    r.verdict = "agrees".into();
                    why.push("the figure agrees with the bytes over that span within 5%".into());
                } else if within(r.ratio_syscall) {
                    r.verdict = "agrees".into();
                    why.push("the figure agrees within 5% with the bytes over the time inside the I/O calls: the program timed its calls, not the wall time".into());
                } else if within_bin(Some(wall)) || within_bin(in_calls) {
                    r.verdict = "agrees".into();
                    why.push(format!(
                        "the figure agrees within 5% with the bytes over {} when its {} is read as {} bytes, as some tools print it",
                        if within_bin(Some(wall)) {
                            "that span"
                        } else {
                            "the time inside the I/O calls (the program timed its calls)"
                        },
                        c.printed.split_whitespace().last().unwrap_or("unit"),
                        binary.map(|b| b / number_prefix(&c.printed).map(|x| x.0).unwrap_or(1.0)).unwrap_or(0.0)
                    ));
                } else if left_out.is_some() {
                    why.push(format!(
                        "observed {} over that span ({}), both with the time of the request{} left out, which the figure does not have (a first request is often the slowest: nothing is cached yet)",
                        crate::report::human_rate(wall),
                        match in_calls {
                            Some(x) => format!("{} inside the calls", crate::report::human_rate(x)),
                            None => "the time inside the calls was not seen".into(),
                        },
                        if c.bytes.is_some_and(|cb| bytes - cb > cb / 2) { "s" } else { "" }
                    ));
                } else {
                    why.push(format!(
                        "observed {} over that span ({}); the figure may cover part of the run (a warm-up left out, one of several tests) or count bytes the calls did not move",
                        crate::report::human_rate(wall),
                        match in_calls {
                            Some(x) => format!("{} inside the calls", crate::report::human_rate(x)),
                            None => "the time inside the calls was not seen".into(),
                        }
                    ));
                }
            }
            if c.flags.iter().any(|f| f == "mean_of_processes") {
                why.push("the program printed a mean over its processes".into());
            }
            why.push(assumed);
            r.explanation = format!("printed {} (line {}): {}", c.printed, c.line, why.join("; "));
            r
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const DBENCH: &str = "   2     20420   252.75 MB/sec  warmup   1 sec  latency 63.663 ms
   2     43528   252.57 MB/sec  execute   1 sec  latency 74.938 ms
 WriteX         11806     0.017    20.080

Throughput 252.566 MB/sec  2 clients  2 procs  max_latency=74.938 ms
";

    #[test]
    fn dbench_headline_is_a_claim_and_progress_is_named_once() {
        let p = read("dbench", DBENCH, "");
        assert_eq!(p.claims.len(), 1, "{p:?}");
        let c = &p.claims[0];
        assert_eq!(c.claimed_bps, 252.566e6);
        assert_eq!(c.printed, "252.566 MB/sec");
        assert_eq!(c.line, 5);
        assert_eq!(c.test, "Throughput");
        assert_eq!(c.direction, Direction::Unknown);
        assert_eq!(p.unread.len(), 1, "{:?}", p.unread);
        assert_eq!(p.unread[0].line, 2);
        assert!(p.unread[0].why.contains("printed 2 times"));
    }

    #[test]
    fn ioping_fs_mark_stress_ng_hdparm_dd() {
        let io = "4 KiB <<< io (ext4 /dev/vda 252.0 GiB): request=1 time=49.9 us (warmup)
4 KiB <<< io (ext4 /dev/vda 252.0 GiB): request=2 time=48.6 us

--- io (ext4 /dev/vda 252.0 GiB) ioping statistics ---
9 requests completed in 451.9 us, 36 KiB read, 19.9 k iops, 77.8 MiB/s
generated 10 requests in 573.4 us, 40 KiB, 17.4 k iops, 68.1 MiB/s
min/avg/max/mdev = 48.4 us / 50.2 us / 54.3 us / 2.08 us
";
        let p = read("ioping", io, "");
        assert_eq!(p.claims.len(), 2, "{p:?}");
        assert_eq!(p.claims[0].direction, Direction::Read);
        assert_eq!(p.claims[0].bytes, Some(36 * 1024));
        assert_eq!(p.claims[0].iops, Some(19900.0));
        assert_eq!(p.claims[0].claimed_bps, 77.8 * 1048576.0);
        assert_eq!(p.claims[1].bytes, Some(40 * 1024));
        assert!(p
            .unread
            .iter()
            .any(|u| u.line == 7 && u.why.contains("latency")));
        let fsm = "FSUse%        Count         Size    Files/sec     App Overhead\n    92          200         4096        312.7             1174\n";
        let p = read("fs_mark", fsm, "");
        assert!(p.claims.is_empty());
        assert_eq!(p.unread.len(), 1, "{:?}", p.unread);
        assert!(p.unread[0]
            .why
            .starts_with("Files/sec = 312.7: a rate of files"));
        let sng = "stress-ng: metrc: [23593] hdd                13626.44 MB/sec read rate (geometic mean of 1 instances)\nstress-ng: metrc: [23593] hdd                 4023.29 MB/sec write rate (geometic mean of 1 instances)\nstress-ng: metrc: [23593] hdd       67584      3.02      0.88      0.78     22350.31       40584.95\n";
        let p = read("stress-ng", "", sng);
        assert_eq!(p.claims.len(), 2);
        assert_eq!(p.claims[0].claimed_bps, 13626.44e6);
        assert_eq!(p.claims[0].direction, Direction::Read);
        assert_eq!(p.claims[1].direction, Direction::Write);
        let hd = " Timing O_DIRECT disk reads: 128 MB in  0.30 seconds = 426.67 MB/sec\n";
        let p = read("hdparm", hd, "");
        assert_eq!(p.claims[0].bytes, Some(128_000_000));
        assert_eq!(p.claims[0].seconds, Some(0.30));
        assert_eq!(p.claims[0].claimed_bps, 426.67e6);
        let dd = "67108864 bytes (67 MB, 64 MiB) copied, 0.0195 s, 3.4 GB/s\n";
        let p = read("sh", "", dd);
        assert_eq!(p.claims[0].bytes, Some(67108864));
        assert_eq!(p.claims[0].seconds, Some(0.0195));
        assert_eq!(p.claims[0].claimed_bps, 3.4e9);
        assert_eq!(p.claims[0].printed, "3.4 GB/s");
    }

    #[test]
    fn a_request_left_out_of_the_figure_is_said() {
        // ioping on a loop device: 19 requests of its 20 reads of 4 KiB counted, and the
        // first, slowest, left out: its summary is 1.55 times the rate inside all 20.
        let io = "19 requests completed in 3.6 ms, 76 KiB read, 5.20 k iops, 20.2 MiB/s\n";
        let p = read("ioping", io, "");
        let ph = Phase {
            pid: 1,
            path: "/m/io".into(),
            open_s: 0.0,
            close_s: 0.05,
            read_bytes: 20 * 4096,
            write_bytes: 1 << 20,
            read_calls: Some(20),
            write_calls: Some(256),
            read_time_s: Some(20.0 * 4096.0 / (13.0 * 1048576.0)),
            write_time_s: Some(0.001),
            record_sizes: vec![[4096, 276]],
            ..Default::default()
        };
        let rows = reconcile(&p.claims, &[ph], false, true);
        assert_eq!(rows[0].verdict, "unverified");
        let why = &rows[0].explanation;
        assert!(
            why.contains("the figure counts 19 of the 20 reads of 4.0 KiB the tree made: 1 request left out of the figure"),
            "{why}"
        );
        assert!(
            why.contains("both with the time of the request left out"),
            "{why}"
        );
        assert!(!why.contains("may cover part of the run"), "{why}");
        // Calls of two sizes: nothing is said of requests.
        let mixed = Phase {
            record_sizes: vec![[4096, 19], [8192, 1]],
            read_bytes: 19 * 4096 + 8192,
            read_calls: Some(20),
            ..Default::default()
        };
        assert_eq!(
            requests_left_out(&[mixed], &[0], Direction::Read, 76 * 1024, 19 * 4096 + 8192),
            None
        );
    }

    #[test]
    fn bytes_in_seconds_and_units_of_every_kind() {
        let p = read("t", "wrote 1048576 bytes in 0.5 seconds\n", "");
        assert_eq!(p.claims.len(), 1, "{p:?}");
        assert_eq!(p.claims[0].bytes, Some(1048576));
        assert_eq!(p.claims[0].claimed_bps, 2097152.0);
        assert_eq!(p.claims[0].direction, Direction::Write);
        for (text, bps) in [
            ("rate 12 kB/s", 12e3),
            ("rate 12 KB/s", 12e3),
            ("rate 1.5 GB/sec", 1.5e9),
            ("rate 3 MiB/s", 3.0 * 1048576.0),
        ] {
            let p = read("t", text, "");
            assert_eq!(p.claims.len(), 1, "{text}");
            assert_eq!(p.claims[0].claimed_bps, bps, "{text}");
        }
        for (text, word) in [
            ("1200 IOPS", "IOPS"),
            ("done: 350 ops/s", "own operations"),
            ("52 transactions/sec", "transactions"),
            ("avg latency 120 µs", "latency"),
            ("read latency 1.2 ms", "latency"),
        ] {
            let p = read("t", text, "");
            assert!(p.claims.is_empty(), "{text}: {p:?}");
            assert_eq!(p.unread.len(), 1, "{text}: {p:?}");
            assert!(p.unread[0].why.contains(word), "{text}: {:?}", p.unread);
        }
        // A negative figure is not a claim.
        let p = read("t", "rate -5 MB/s\n", "");
        assert!(p.claims.is_empty(), "{p:?}");
    }

    #[test]
    fn nothing_is_made_up() {
        let p = read("x", "version 3.2.1\nsize 4096\n10 files\nok\n", "");
        assert!(p.claims.is_empty() && p.unread.is_empty(), "{p:?}");
    }
}
