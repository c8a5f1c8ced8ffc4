//! dd's closing summary, as two dds print it:
//! - GNU coreutils: "67108864 bytes (67 MB, 64 MiB) copied, 0.0493976 s, 1.4 GB/s" (units of
//!   1000, "MiB" of 1024);
//! - BusyBox with its third status line (FEATURE_DD_THIRD_STATUS_LINE, coreutils/dd.c):
//!   "67108864 bytes (64.0MB) copied, 0.146506 seconds, 436.8MB/s", where "MB" is 1024 x
//!   1024 bytes (make_human_readable_str). A BusyBox built without it (Debian's) prints only
//!   the records lines: no figure to check.
//!
//! dd prints its rate rounded, so the claim is bytes over seconds from the same line (what the
//! rate was computed from); the printed rate is kept beside it.

use super::{number_prefix, parse_size, unit_multiplier, Claim, Direction, Parsed};

/// The last summary line of dd's stderr (progress lines, split by carriage returns, are
/// earlier and are skipped). One claim, or none when dd printed no summary.
pub fn parse(text: &str) -> Vec<Claim> {
    read(text).claims
}

/// As [`parse`], with a summary line that could not be read.
pub fn read(text: &str) -> Parsed {
    let mut out = Parsed::default();
    let mut found = None;
    for (idx, line) in text.split('\n').enumerate() {
        // status=progress rewrites one line with '\r'; the summary is on its own line.
        for piece in line.split('\r') {
            if let Some(c) = parse_summary(piece) {
                found = Some((idx + 1, c, piece.trim().to_string()));
            } else if piece.contains(" copied, ")
                && piece.trim_start().starts_with(char::is_numeric)
            {
                out.unread(
                    "dd",
                    idx + 1,
                    piece,
                    "not dd's \"N bytes ... copied, S s, RATE\" summary".into(),
                );
            }
        }
    }
    let Some((line, (bytes, seconds, rate), printed)) = found else {
        return out;
    };
    let records_out = text.lines().rev().find_map(|l| {
        l.trim()
            .strip_suffix(" records out")
            .and_then(parse_records)
    });
    let mut claim = Claim {
        program: "dd".into(),
        test: "dd".into(),
        threads: 1,
        bytes: Some(bytes),
        seconds: Some(seconds),
        claimed_bps: if seconds > 0.0 {
            bytes as f64 / seconds
        } else {
            0.0
        },
        basis: "bytes copied over dd's elapsed time".into(),
        printed,
        line,
        ..Default::default()
    };
    if let Some(r) = rate {
        claim.extra.insert("printed_rate_Bps".into(), r);
    }
    if let Some((full, partial)) = records_out {
        claim.extra.insert("records_out_full".into(), full as f64);
        claim
            .extra
            .insert("records_out_partial".into(), partial as f64);
    }
    if text.contains("dd: error") || text.contains("dd: failed") {
        claim.flags.push("error".into());
    }
    out.claims.push(claim);
    out
}

/// "N+M" of "N+M records out".
fn parse_records(s: &str) -> Option<(u64, u64)> {
    let (a, b) = s.trim().split_once('+')?;
    Some((a.trim().parse().ok()?, b.trim().parse().ok()?))
}

/// (bytes, seconds, printed rate in bytes/s) of one summary line.
fn parse_summary(line: &str) -> Option<(u64, f64, Option<f64>)> {
    let line = line.trim();
    let (head, tail) = line.split_once(" copied, ")?;
    let bytes_txt = head.split_whitespace().next()?;
    if !head[bytes_txt.len()..].trim_start().starts_with("byte") {
        return None;
    }
    let bytes: u64 = bytes_txt.parse().ok()?;
    let mut parts = tail.split(", ");
    let secs_txt = parts.next()?;
    let (seconds, unit) = number_prefix(secs_txt)?;
    // GNU: "0.05 s"; BusyBox: "0.146506 seconds".
    let busybox = match unit.trim() {
        "s" => false,
        "seconds" => true,
        _ => return None,
    };
    if seconds < 0.0 {
        return None;
    }
    let rate = parts.next().and_then(|r| {
        let (v, unit) = number_prefix(r)?;
        let unit = unit.trim();
        if busybox {
            // "436.8MB/s": BusyBox's K, M, G are powers of 1024.
            let m = match unit.strip_suffix("B/s")? {
                "" => 1.0,
                "K" => 1024.0,
                "M" => 1024.0 * 1024.0,
                "G" => 1024.0f64.powi(3),
                "T" => 1024.0f64.powi(4),
                _ => return None,
            };
            return Some(v * m);
        }
        Some(v * unit_multiplier(unit)?)
    });
    Some((bytes, seconds, rate))
}

/// Fills in what only dd's command line says: the block size (record size), the direction
/// (a regular file on one side and /dev/zero or /dev/null on the other), the byte count.
pub fn apply_args(claims: &mut [Claim], argv: &[String]) {
    let mut bs = None;
    let mut ibs = None;
    let mut obs = None;
    let mut input = None;
    let mut output = None;
    let mut direct = false;
    for a in argv.iter().skip(1) {
        let Some((k, v)) = a.split_once('=') else {
            continue;
        };
        match k {
            "bs" => bs = parse_size(v),
            "ibs" => ibs = parse_size(v),
            "obs" => obs = parse_size(v),
            "if" => input = Some(v.to_string()),
            "of" => output = Some(v.to_string()),
            "iflag" | "oflag" => direct |= v.split(',').any(|f| f == "direct"),
            _ => {}
        }
    }
    let pseudo = |p: &Option<String>| match p.as_deref() {
        None => true,
        Some(p) => p.starts_with("/dev/") && !p.starts_with("/dev/shm/"),
    };
    let direction = match (pseudo(&input), pseudo(&output)) {
        (true, false) => Direction::Write,
        (false, true) => Direction::Read,
        (false, false) => Direction::Mixed,
        (true, true) => Direction::Unknown,
    };
    for c in claims.iter_mut() {
        c.direction = direction;
        c.record_size = match direction {
            Direction::Write => obs.or(bs).or(Some(512)),
            Direction::Read => ibs.or(bs).or(Some(512)),
            _ => bs.or(ibs).or(obs).or(Some(512)),
        };
        c.file_size = c.bytes;
        c.filename = match direction {
            Direction::Write => output.clone(),
            Direction::Read => input.clone(),
            _ => output.clone(),
        };
        c.test = match direction {
            Direction::Write => "write".into(),
            Direction::Read => "read".into(),
            _ => "copy".into(),
        };
        if direct {
            c.flags.push("direct".into());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(name: &str) -> String {
        let p = format!("{}/tests/data/dd/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
    }

    #[test]
    fn direct_write_summary() {
        let c = parse(&data("dd-direct-1M.txt"));
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].bytes, Some(67108864));
        assert_eq!(c[0].seconds, Some(0.0493976));
        assert!((c[0].claimed_bps - 67108864.0 / 0.0493976).abs() < 1.0);
        assert_eq!(c[0].extra["printed_rate_Bps"], 1.4e9);
        assert_eq!(c[0].extra["records_out_full"], 64.0);
        assert_eq!(c[0].line, 3);
    }

    #[test]
    fn progress_lines_are_skipped() {
        let c = parse(&data("dd-progress.txt"));
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].bytes, Some(3072000000));
        assert_eq!(c[0].seconds, Some(2.61072));
    }

    #[test]
    fn small_zero_and_failed() {
        let c = parse(&data("dd-small.txt"));
        assert_eq!(c[0].bytes, Some(1536));
        assert_eq!(c[0].extra["printed_rate_Bps"], 10.0e6);
        let z = parse(&data("dd-zero.txt"));
        assert_eq!(z[0].bytes, Some(0));
        assert_eq!(z[0].extra["printed_rate_Bps"], 0.0);
        let f = parse(&data("dd-full.txt"));
        assert_eq!(f[0].bytes, Some(0));
        assert!(f[0].flags.contains(&"error".to_string()));
        assert!(parse(&data("dd-error.txt")).is_empty());
        let g = parse(&data("dd-3G.txt"));
        assert_eq!(g[0].bytes, Some(3221225472));
    }

    #[test]
    fn command_line_gives_direction_and_record_size() {
        let mut c = parse(&data("dd-direct-1M.txt"));
        let argv: Vec<String> = [
            "dd",
            "if=/dev/zero",
            "of=/var/tmp/x",
            "bs=1M",
            "count=64",
            "oflag=direct",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        apply_args(&mut c, &argv);
        assert_eq!(c[0].direction, Direction::Write);
        assert_eq!(c[0].record_size, Some(1 << 20));
        assert_eq!(c[0].test, "write");
        assert_eq!(c[0].filename.as_deref(), Some("/var/tmp/x"));
        assert!(c[0].flags.contains(&"direct".to_string()));
        let mut r = parse(&data("dd-read-4k.txt"));
        let argv: Vec<String> = ["dd", "if=/var/tmp/x", "of=/dev/null", "bs=4k"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        apply_args(&mut r, &argv);
        assert_eq!(r[0].direction, Direction::Read);
        assert_eq!(r[0].record_size, Some(4096));
    }
}
