//! What a benchmark says it measured, read from its own output. Every parser here is a pure
//! function of the text: no I/O, no panics on any input, unknown text gives no claims.

pub mod bonnie;
pub mod dd;
pub mod fio;
pub mod ior;
pub mod iozone;
pub mod mdtest;
pub mod sysbench;
pub mod unixbench;

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Which way the data went in a claimed figure (a word of the saved audit).
pub use candor_model::audit::Direction;

/// One figure a program printed.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct Claim {
    /// "iozone", "fio" or "dd".
    pub program: String,
    /// The test as candor names it ("write", "randread"...) or, for fio, the job name.
    pub test: String,
    pub direction: Direction,
    /// Bytes per file, when the output says.
    pub file_size: Option<u64>,
    /// Bytes per I/O call, when the output (or the command line) says.
    pub record_size: Option<u64>,
    /// Processes or threads behind the figure.
    pub threads: u32,
    /// The claimed throughput, bytes per second.
    pub claimed_bps: f64,
    /// Bytes the program says it moved for this figure.
    pub bytes: Option<u64>,
    /// Seconds the program says it timed.
    pub seconds: Option<f64>,
    pub iops: Option<f64>,
    /// How the program computed the figure ("per test", "children see", "per job"...).
    pub basis: String,
    /// The figure exactly as printed (value and unit), to show next to the conversion.
    pub printed: String,
    /// 1-based line of the output the figure came from (0 when not known, as for JSON).
    pub line: usize,
    /// Completion latency percentiles the program printed, nanoseconds ("p50", "p99"...).
    pub latency_ns: BTreeMap<String, f64>,
    /// Other figures printed beside the headline, in bytes/s or plain numbers
    /// ("parent_sees_Bps", "min_per_process_Bps", "min_xfer_bytes", "cpu_pct", "error"...).
    pub extra: BTreeMap<String, f64>,
    /// Facts read from the output that matter for the reconciliation
    /// ("fsync_in_timing", "close_in_timing", "direct", "stonewalled", "job_error").
    pub flags: Vec<String>,
    /// fio: the file the job used, when the options name it.
    pub filename: Option<String>,
}

/// A line of a program's output that looked like a figure but could not be read: the audit
/// says which and why, and still shows what the program did.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct Unread {
    pub program: String,
    /// 1-based line of the output.
    pub line: usize,
    /// The line as printed (trimmed at the end).
    pub text: String,
    /// Why it could not be read, in one sentence.
    pub why: String,
}

/// What a parser read: the claims and the lines it could not read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Parsed {
    pub claims: Vec<Claim>,
    pub unread: Vec<Unread>,
}

impl Unread {
    pub fn new(program: &str, line: usize, text: &str, why: impl Into<String>) -> Unread {
        Unread {
            program: program.into(),
            line,
            text: text.trim_end().chars().take(200).collect(),
            why: why.into(),
        }
    }
}

impl Parsed {
    /// Drops the figures no program can mean (negative or not finite), each with a line
    /// saying so.
    pub fn sane(mut self) -> Parsed {
        let mut kept = Vec::new();
        for c in std::mem::take(&mut self.claims) {
            let ok = |x: f64| x.is_finite() && x >= 0.0;
            if ok(c.claimed_bps) && c.iops.is_none_or(ok) && c.seconds.is_none_or(ok) {
                kept.push(c);
            } else {
                self.unread.push(Unread::new(
                    &c.program,
                    c.line,
                    &c.printed,
                    "a negative or non-finite figure",
                ));
            }
        }
        self.claims = kept;
        self
    }

    /// Claims from a parser that has no lines it could fail on.
    pub fn of(claims: Vec<Claim>) -> Parsed {
        Parsed {
            claims,
            unread: Vec::new(),
        }
    }

    pub(crate) fn unread(&mut self, program: &str, line: usize, text: &str, why: String) {
        self.unread.push(Unread {
            program: program.into(),
            line,
            text: text.trim_end().into(),
            why,
        });
    }
}

/// Which parser fits a program, from its name (the basename of argv[0]).
pub fn program_of(argv0: &str) -> Option<&'static str> {
    let base = argv0.rsplit('/').next().unwrap_or(argv0);
    if let Some(p) = PROGRAMS
        .iter()
        .find(|(_, is)| is(base))
        .map(|(name, _)| *name)
    {
        return Some(p);
    }
    if base.starts_with("iozone") {
        Some("iozone")
    } else if base.starts_with("fio") {
        Some("fio")
    } else if base == "dd" || base.starts_with("dd.") {
        Some("dd")
    } else {
        None
    }
}

type Recognise = fn(&str) -> bool;
type Sniff = fn(&str, &str) -> bool;
type Read = fn(&[String], &str, &str) -> Parsed;

/// Programs read by the parsers of [`READERS`], recognised by the basename of argv[0].
const PROGRAMS: &[(&str, Recognise)] = &[
    ("sysbench", |b| b == "sysbench"),
    ("bonnie++", |b| b.starts_with("bonnie")),
    ("ior", |b| {
        b == "ior" || b.starts_with("ior.") || b.starts_with("ior-")
    }),
    ("mdtest", |b| b.starts_with("mdtest")),
    ("fstime", |b| b == "fstime"),
    ("unixbench", |b| b == "Run"),
];

/// The same programs recognised by their output, and their parsers (argv, stdout, stderr).
const READERS: &[(&str, Sniff, Read)] = &[
    (
        "sysbench",
        |o, _| sysbench::sniff(o),
        |_, o, e| sysbench::read(if sysbench::sniff(o) { o } else { e }),
    ),
    (
        "bonnie++",
        |o, e| bonnie::sniff(o) || bonnie::sniff(e),
        |_, o, e| bonnie::read(if bonnie::sniff(o) { o } else { e }),
    ),
    ("ior", |o, _| ior::sniff(o), |_, o, _| ior::read(o)),
    ("mdtest", |o, _| mdtest::sniff(o), |_, o, _| mdtest::read(o)),
    ("fstime", unixbench::sniff_fstime, unixbench::read_fstime),
    (
        "unixbench",
        |o, _| unixbench::sniff_run(o),
        |_, o, _| unixbench::read_run(o),
    ),
];

/// Parses the output of a program (stdout then stderr, as captured) into claims. `argv` is
/// the command line (dd's record size and direction are only on it). Unknown programs, and
/// output a parser does not recognise, give no claims.
pub fn parse(argv: &[String], stdout: &str, stderr: &str) -> Vec<Claim> {
    read(argv, stdout, stderr).claims
}

/// As [`parse`], with the lines that looked like figures but could not be read.
pub fn read(argv: &[String], stdout: &str, stderr: &str) -> Parsed {
    let argv0 = argv.first().map(String::as_str).unwrap_or("");
    let program = program_of(argv0).or_else(|| sniff(stdout, stderr));
    if let Some((_, _, read)) = READERS.iter().find(|(name, _, _)| Some(*name) == program) {
        return read(argv, stdout, stderr);
    }
    match program {
        Some("iozone") => iozone::read(stdout),
        Some("fio") => {
            let mut p = fio::read(stdout);
            if p.claims.is_empty() && p.unread.is_empty() {
                p = fio::read(stderr);
            }
            fio::apply_args(&mut p.claims, argv);
            p
        }
        Some("dd") => {
            let mut p = dd::read(stderr);
            if p.claims.is_empty() && p.unread.is_empty() {
                p = dd::read(stdout);
            }
            dd::apply_args(&mut p.claims, argv);
            p
        }
        // No parser knows the program: the generic reader finds its headline figures.
        _ => crate::generic::read(argv0.rsplit('/').next().unwrap_or(argv0), stdout, stderr),
    }
}

/// Recognises a program by its output when its name does not say (a wrapper script).
fn sniff(stdout: &str, stderr: &str) -> Option<&'static str> {
    if let Some((name, _, _)) = READERS.iter().find(|(_, is, _)| is(stdout, stderr)) {
        return Some(name);
    }
    if stdout.contains("Iozone: Performance Test of File I/O") {
        Some("iozone")
    } else if stdout.contains("\"fio version\"")
        || stdout.contains("\nRun status group ")
        || stdout.lines().any(fio::is_terse)
    {
        Some("fio")
    } else if stderr.contains(" records out") {
        Some("dd")
    } else {
        None
    }
}

/// The lines of `lines` (1-based numbers) that hold a digit, are inside a part of the output
/// where the parser reads figures (`in_figures`), and that the parser did not read
/// (`read`): each becomes an [`Unread`] saying so.
pub(crate) fn figures_left(
    program: &str,
    lines: &[&str],
    in_figures: &dyn Fn(usize) -> bool,
    read: &std::collections::BTreeSet<usize>,
) -> Vec<Unread> {
    lines
        .iter()
        .enumerate()
        .map(|(i, l)| (i + 1, *l))
        .filter(|(n, l)| {
            in_figures(*n) && !read.contains(n) && l.chars().any(|c| c.is_ascii_digit())
        })
        .map(|(n, l)| {
            Unread::new(
                program,
                n,
                l,
                format!("a line with figures in {program}'s results that candor does not know"),
            )
        })
        .collect()
}

/// Splits a number from its unit suffix: "4267MiB/s" -> (4267.0, "MiB/s"). None when the
/// text does not start with a number.
pub fn number_prefix(s: &str) -> Option<(f64, &str)> {
    let s = s.trim_start();
    let end = s
        .char_indices()
        .find(|&(i, c)| {
            !(c.is_ascii_digit() || c == '.' || ((c == '-' || c == '+') && i == 0))
                && !(c == 'e' && s[i + 1..].starts_with(|d: char| d.is_ascii_digit() || d == '-'))
                && !((c == '-' || c == '+') && i > 0 && s[..i].ends_with('e'))
        })
        .map(|(i, _)| i)
        .unwrap_or(s.len());
    let v: f64 = s[..end].parse().ok()?;
    if !v.is_finite() {
        return None;
    }
    Some((v, &s[end..]))
}

/// Bytes in one unit of a size or rate as fio and dd print them ("KiB", "MB", "kB", "B").
pub fn unit_multiplier(unit: &str) -> Option<f64> {
    let u = unit.trim();
    let u = u.strip_suffix("/s").unwrap_or(u);
    Some(match u {
        "B" | "" => 1.0,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        "TiB" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        "PiB" => 1024.0f64.powi(5),
        "kB" | "KB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "TB" => 1e12,
        "PB" => 1e15,
        _ => return None,
    })
}

/// A size as fio options and dd operands write it: "64m", "128k", "1M", "4096", "1MiB".
/// fio and dd both read k/m/g as powers of 1024 (dd's "kB"/"MB" are powers of 1000).
pub fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (v, unit) = number_prefix(s)?;
    if v < 0.0 {
        return None;
    }
    let m: f64 = match unit.trim() {
        "" | "b" | "B" | "c" => 1.0,
        "w" => 2.0,
        "k" | "K" | "KiB" | "kib" | "Ki" => 1024.0,
        "m" | "M" | "MiB" | "mib" | "Mi" => 1024.0 * 1024.0,
        "g" | "G" | "GiB" | "gib" | "Gi" => 1024.0f64.powi(3),
        "t" | "T" | "TiB" | "tib" | "Ti" => 1024.0f64.powi(4),
        "kB" | "KB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "TB" => 1e12,
        _ => return None,
    };
    let b = v * m;
    if !(0.0..1.8e19).contains(&b) {
        return None;
    }
    Some(b.round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_units() {
        assert_eq!(number_prefix("4267MiB/s"), Some((4267.0, "MiB/s")));
        assert_eq!(number_prefix("5.5517e-05 s"), Some((5.5517e-05, " s")));
        assert_eq!(number_prefix("x"), None);
        assert_eq!(number_prefix(""), None);
        assert_eq!(unit_multiplier("GB/s"), Some(1e9));
        assert_eq!(unit_multiplier("KiB/s"), Some(1024.0));
        assert_eq!(unit_multiplier("furlongs"), None);
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("64m"), Some(64 << 20));
        assert_eq!(parse_size("128k"), Some(128 << 10));
        assert_eq!(parse_size("4096"), Some(4096));
        assert_eq!(parse_size("1MB"), Some(1_000_000));
        assert_eq!(parse_size("1MiB"), Some(1 << 20));
        assert_eq!(parse_size("-1"), None);
        assert_eq!(parse_size("1q"), None);
    }

    #[test]
    fn programs_by_name() {
        assert_eq!(program_of("/usr/bin/fio"), Some("fio"));
        assert_eq!(program_of("dd"), Some("dd"));
        assert_eq!(program_of("./iozone"), Some("iozone"));
        assert_eq!(program_of("ddrescue"), None);
        assert_eq!(program_of("sh"), None);
    }
}
