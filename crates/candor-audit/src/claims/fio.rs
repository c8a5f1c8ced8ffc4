//! fio's results, from `--output-format=json` (also when error lines come before or after the
//! JSON object, as they do with `2>&1`) or from the normal text output. One claim per job
//! and direction that moved data.

use super::{number_prefix, parse_size, unit_multiplier, Claim, Direction, Parsed};
use serde_json::Value;

/// JSON when the text holds fio's JSON object (`json` or `json+`), the terse lines when there
/// are any (`terse`, also beside `normal`), the normal text output otherwise.
pub fn parse(text: &str) -> Vec<Claim> {
    read(text).claims
}

/// As [`parse`], with the lines that looked like figures but could not be read.
pub fn read(text: &str) -> Parsed {
    if let Some(v) = find_json(text) {
        return Parsed::of(parse_json(&v));
    }
    let mut out = Parsed::default();
    if text.lines().any(|l| terse_version(l).is_some()) {
        parse_terse(text, &mut out);
    } else {
        parse_text(text, &mut out);
    }
    out
}

/// The JSON object fio printed, found among whatever else is in the text: from the first
/// line that is exactly "{" to the matching closing brace.
fn find_json(text: &str) -> Option<Value> {
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        if line.trim_end() == "{" {
            let rest = &text[offset..];
            let mut stream = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
            if let Some(Ok(v)) = stream.next() {
                if v.get("jobs").is_some() {
                    return Some(v);
                }
            }
        }
        offset += line.len();
    }
    None
}

fn opt<'a>(job: &'a Value, global: Option<&'a Value>, key: &str) -> Option<&'a str> {
    job.get("job options")
        .and_then(|o| o.get(key))
        .or_else(|| global.and_then(|g| g.get(key)))
        .and_then(Value::as_str)
}

/// fio's block size option for a direction: "bs", "rw" style "4k,64k" (read,write) or
/// "bs=<read>,<write>".
fn block_size(bs: &str, dir: Direction) -> Option<u64> {
    let mut parts = bs.split(',');
    let first = parts.next()?;
    let second = parts.next().filter(|s| !s.is_empty());
    match dir {
        Direction::Write => parse_size(second.unwrap_or(first)),
        _ => parse_size(first),
    }
}

fn parse_json(v: &Value) -> Vec<Claim> {
    let mut claims = Vec::new();
    let global = v.get("global options");
    let Some(jobs) = v.get("jobs").and_then(Value::as_array) else {
        return claims;
    };
    for job in jobs {
        let name = job
            .get("jobname")
            .and_then(Value::as_str)
            .unwrap_or("job")
            .to_string();
        let error = job.get("error").and_then(Value::as_f64).unwrap_or(0.0);
        let numjobs = opt(job, global, "numjobs")
            .and_then(|n| n.parse().ok())
            .unwrap_or(1u32);
        let direct = opt(job, global, "direct")
            .map(|d| d != "0")
            .unwrap_or(false);
        let end_fsync = opt(job, global, "end_fsync")
            .map(|d| d != "0")
            .unwrap_or(false);
        let fsync_on_close = opt(job, global, "fsync_on_close")
            .map(|d| d != "0")
            .unwrap_or(false);
        let size = opt(job, global, "size").and_then(parse_size);
        let filename = opt(job, global, "filename").map(str::to_string);
        let bs = opt(job, global, "bs").or_else(|| opt(job, global, "blocksize"));
        let random = opt(job, global, "rw")
            .or_else(|| opt(job, global, "readwrite"))
            .is_some_and(|rw| rw.starts_with("rand"));
        for (key, dir) in [
            ("read", Direction::Read),
            ("write", Direction::Write),
            ("trim", Direction::Unknown),
        ] {
            let Some(d) = job.get(key) else {
                continue;
            };
            let io_bytes = d.get("io_bytes").and_then(Value::as_u64).unwrap_or(0);
            if io_bytes == 0 || dir == Direction::Unknown {
                continue;
            }
            // fio 3 prints bw_bytes; fio 2 only "bw", in KiB/s.
            let bw = d
                .get("bw_bytes")
                .and_then(Value::as_f64)
                .or_else(|| Some(d.get("bw")?.as_f64()? * 1024.0))
                .unwrap_or(0.0);
            let runtime_ms = d.get("runtime").and_then(Value::as_f64);
            let mut c = Claim {
                program: "fio".into(),
                test: name.clone(),
                direction: dir,
                file_size: size,
                record_size: bs.and_then(|b| block_size(b, dir)).or(Some(4096)),
                threads: numjobs,
                claimed_bps: bw,
                bytes: Some(io_bytes),
                seconds: runtime_ms.map(|ms| ms / 1000.0),
                iops: d.get("iops").and_then(Value::as_f64),
                basis: "io_bytes over the job's runtime (fio bw_bytes)".into(),
                printed: match d.get("bw_bytes") {
                    Some(b) => format!("bw_bytes {b}"),
                    None => format!("bw {} KiB/s", d.get("bw").unwrap_or(&Value::Null)),
                },
                line: 0,
                filename: filename.clone(),
                ..Default::default()
            };
            // fio 3: clat_ns in nanoseconds; fio 2: clat in microseconds.
            let percentiles = match d.get("clat_ns") {
                Some(c) => c.get("percentile").map(|p| (p, 1.0)),
                None => d
                    .get("clat")
                    .and_then(|c| c.get("percentile"))
                    .map(|p| (p, 1e3)),
            };
            if let Some((p, scale)) = percentiles.and_then(|(p, s)| Some((p.as_object()?, s))) {
                for (k, val) in p {
                    let Some(x) = val.as_f64().map(|x| x * scale) else {
                        continue;
                    };
                    let label = match k.as_str() {
                        "50.000000" => "p50",
                        "90.000000" => "p90",
                        "99.000000" => "p99",
                        "99.900000" => "p999",
                        _ => continue,
                    };
                    c.latency_ns.insert(label.into(), x);
                }
            }
            if error != 0.0 {
                c.extra.insert("job_error".into(), error);
                c.flags.push("job_error".into());
            }
            if direct {
                c.flags.push("direct".into());
            }
            if random {
                c.flags.push("random".into());
            }
            if end_fsync || fsync_on_close {
                c.flags.push("fsync_in_timing".into());
            }
            claims.push(c);
        }
    }
    claims
}

/// The normal text output: a "name: (g=0): rw=..., bs=(R) ..." line per job at the start,
/// then per job "name: (groupid=0, jobs=1): err= 0: pid=..." and its "read: IOPS=...,
/// BW=...(bytes/msec)" lines.
fn parse_text(text: &str, out: &mut Parsed) {
    let mut claims = Vec::new();
    // Block sizes per job name from the start lines.
    let mut bs_of: Vec<(String, Option<u64>, Option<u64>)> = Vec::new();
    let mut current: Option<(String, u32, f64)> = None;
    for (n, line) in text.lines().enumerate() {
        if let Some((name, rest)) = line.split_once(": (g=") {
            let r = field(rest, "bs=(R) ").and_then(|s| parse_size(s.split('-').next()?));
            let w = field(rest, "(W) ").and_then(|s| parse_size(s.split('-').next()?));
            bs_of.push((name.to_string(), r, w));
            continue;
        }
        if let Some((name, rest)) = line.split_once(": (groupid=") {
            let jobs = field(rest, "jobs=")
                .and_then(|s| s.trim_end_matches([')', ':']).parse().ok())
                .unwrap_or(1);
            let err = rest
                .split("err=")
                .nth(1)
                .map(str::trim_start)
                .and_then(|s| number_prefix(s).map(|(v, _)| v))
                .unwrap_or(0.0);
            current = Some((name.to_string(), jobs, err));
            continue;
        }
        let t = line.trim_start();
        // fio 3 (and 2.20 on): "read: IOPS=..."; fio 2 before: "read : io=..." with the
        // direction padded to five characters ("read ", "write", "mixed").
        let Some((word, rest)) = t.split_once(':') else {
            continue;
        };
        let dir = match word.trim_end() {
            "read" => Direction::Read,
            "write" => Direction::Write,
            "mixed" => Direction::Mixed,
            _ => continue,
        };
        let rest = rest.trim_start();
        if !(rest.starts_with("IOPS=") || rest.starts_with("io=")) {
            continue;
        }
        let Some((name, jobs, err)) = current.clone() else {
            continue;
        };
        let parsed = if rest.starts_with("io=") {
            parse_dir_line_v2(rest, dir)
        } else {
            parse_dir_line(rest, dir)
        };
        let Some(c) = parsed else {
            out.unread(
                "fio",
                n + 1,
                line,
                "no IOPS= and BW= (fio 3) or io=, bw=, iops=, runt= (fio 2) figures where fio prints them".into(),
            );
            continue;
        };
        let bs = bs_of
            .iter()
            .find(|(n, _, _)| *n == name)
            .and_then(|(_, r, w)| match dir {
                Direction::Write => *w,
                _ => *r,
            });
        let mut c = Claim {
            test: name,
            threads: jobs,
            record_size: bs,
            line: n + 1,
            ..c
        };
        if err != 0.0 {
            c.extra.insert("job_error".into(), err);
            c.flags.push("job_error".into());
        }
        claims.push(c);
    }
    // Percentiles: attach the clat percentiles block that follows each direction line.
    attach_text_percentiles(text, &mut claims);
    out.claims.extend(claims);
}

/// fio's terse output (`--output-format=terse`, `--terse-version=2|3|4|5`; fio's stat.c,
/// `show_thread_status_terse_all`): one line per job, fields split by ';'. The head is
/// "2;name;groupid;error" (version 2) or "V;fio-X;name;groupid;error"; then one block per
/// direction (read, write, and trim in versions 2, 4 and 5): io KiB, bandwidth KiB/s, IOPS,
/// runtime ms, submission latency (min, max, mean, stdev, usec), completion latency (same),
/// 20 "P%=usec" percentiles, total latency (4), bandwidth min, max, share of the group,
/// mean, stdev; version 5 adds the bandwidth samples and IOPS min, max, mean, stdev, samples.
/// Then CPU (usr%, sys%, ctx, majf, minf), 7 I/O depths, 10 usec and 12 msec latency buckets,
/// the disks (version 3 and later) and, optionally, error counts and the description.
const TERSE_DIR_FIELDS: usize = 41;
const TERSE_V5_EXTRA: usize = 6;

/// Whether a line is one of fio's terse lines.
pub fn is_terse(line: &str) -> bool {
    terse_version(line).is_some_and(|v| v > 2 || line.split(';').count() > 100)
}

/// The terse version of a line, when it is one fio prints.
fn terse_version(line: &str) -> Option<u32> {
    let mut f = line.split(';');
    let v: u32 = f.next()?.parse().ok()?;
    match v {
        2 => Some(2),
        3..=5 if f.next()?.starts_with("fio-") => Some(v),
        _ => None,
    }
}

/// Whether `f[at..]` starts like the block after the directions: "usr%;sys%;ctx;majf;minf"
/// then 7 I/O depth shares.
fn terse_tail_at(f: &[&str], at: usize) -> bool {
    let pct = |s: &str| {
        s.strip_suffix('%')
            .is_some_and(|x| x.parse::<f64>().is_ok())
    };
    let int = |s: &str| s.parse::<u64>().is_ok();
    f.len() >= at + 12
        && pct(f[at])
        && pct(f[at + 1])
        && f[at + 2..at + 5].iter().all(|s| int(s))
        && f[at + 5..at + 12].iter().all(|s| pct(s))
}

fn parse_terse(text: &str, out: &mut Parsed) {
    for (n, line) in text.lines().enumerate() {
        let Some(ver) = terse_version(line) else {
            continue;
        };
        let f: Vec<&str> = line.split(';').collect();
        let head = if ver == 2 { 4 } else { 5 };
        let per = TERSE_DIR_FIELDS + if ver == 5 { TERSE_V5_EXTRA } else { 0 };
        // Directions: read, write (and trim); one "mixed" block with unified_rw_reporting.
        let usual = if ver == 3 { 2 } else { 3 };
        let Some(ndirs) = [usual, 1, usual + 1]
            .into_iter()
            .find(|&d| terse_tail_at(&f, head + d * per))
        else {
            out.unread(
                "fio",
                n + 1,
                line,
                format!(
                    "its {} fields do not follow fio's terse version {ver} layout",
                    f.len()
                ),
            );
            continue;
        };
        let name = f[head - 3].to_string();
        let error: f64 = f[head - 1].parse().unwrap_or(0.0);
        let mut bad = None;
        let mut claims = Vec::new();
        for d in 0..ndirs {
            let b = &f[head + d * per..head + (d + 1) * per];
            let dir = match (ndirs, d) {
                (1, _) | (4, 3) => Direction::Mixed,
                (_, 0) => Direction::Read,
                (_, 1) => Direction::Write,
                _ => continue, // trim
            };
            let num = |i: usize| {
                b[i].parse::<f64>()
                    .ok()
                    .filter(|v| v.is_finite() && *v >= 0.0)
            };
            let (Some(kib), Some(bw), Some(iops), Some(runtime)) = (num(0), num(1), num(2), num(3))
            else {
                bad = Some(format!(
                    "the {} block does not start with four numbers",
                    dir.as_str()
                ));
                break;
            };
            if kib == 0.0 {
                continue;
            }
            let mut c = Claim {
                program: "fio".into(),
                test: name.clone(),
                direction: dir,
                threads: 1,
                claimed_bps: bw * 1024.0,
                bytes: Some(kib as u64 * 1024),
                seconds: Some(runtime / 1000.0),
                iops: Some(iops),
                basis: format!("io over the job's runtime (fio terse version {ver}, whole KiB/s)"),
                printed: format!("{} KiB/s", b[1]),
                line: n + 1,
                ..Default::default()
            };
            // Completion latency percentiles, "50.000000%=36" in usec.
            for p in &b[12..32] {
                let Some((pct, v)) = p.split_once("%=") else {
                    continue;
                };
                let label = match pct {
                    "50.000000" => "p50",
                    "90.000000" => "p90",
                    "99.000000" => "p99",
                    "99.900000" => "p999",
                    _ => continue,
                };
                if let Ok(v) = v.parse::<f64>() {
                    c.latency_ns.insert(label.into(), v * 1e3);
                }
            }
            if error != 0.0 {
                c.extra.insert("job_error".into(), error);
                c.flags.push("job_error".into());
            }
            claims.push(c);
        }
        match bad {
            Some(why) => out.unread("fio", n + 1, line, why),
            None => out.claims.extend(claims),
        }
    }
}

/// The word after `key` in `s`, up to a comma or space.
fn field<'a>(s: &'a str, key: &str) -> Option<&'a str> {
    let start = s.find(key)? + key.len();
    let rest = &s[start..];
    let end = rest.find([',', ' ']).unwrap_or(rest.len());
    Some(&rest[..end])
}

/// "IOPS=68.3k, BW=4267MiB/s (4474MB/s)(64.0MiB/15msec); 0 zone resets"
fn parse_dir_line(rest: &str, dir: Direction) -> Option<Claim> {
    let iops_txt = field(rest, "IOPS=")?;
    let (iops, suffix) = number_prefix(iops_txt)?;
    let iops = iops
        * match suffix {
            "k" => 1e3,
            "M" => 1e6,
            _ => 1.0,
        };
    let bw_start = rest.find("BW=")? + 3;
    let bw_txt = &rest[bw_start..];
    let (bw, unit) = number_prefix(bw_txt)?;
    let unit_end = unit.find([' ', '(']).unwrap_or(unit.len());
    let bw = bw * unit_multiplier(&unit[..unit_end])?;
    // "(64.0MiB/15msec)": the amount and the time the rate came from.
    let (bytes, seconds) = match rest.rfind(")(") {
        Some(p) => {
            let inner = rest[p + 2..].split(')').next().unwrap_or("");
            match inner.split_once('/') {
                Some((amount, time)) => {
                    let b = number_prefix(amount).and_then(|(v, u)| Some(v * unit_multiplier(u)?));
                    let s = number_prefix(time).and_then(|(v, u)| match u {
                        "msec" => Some(v / 1e3),
                        "usec" => Some(v / 1e6),
                        "nsec" => Some(v / 1e9),
                        "sec" | "s" => Some(v),
                        _ => None,
                    });
                    (b.map(|b| b.round() as u64), s)
                }
                None => (None, None),
            }
        }
        None => (None, None),
    };
    Some(Claim {
        program: "fio".into(),
        direction: dir,
        claimed_bps: bw,
        bytes,
        seconds,
        iops: Some(iops),
        basis: "fio BW (rounded to 3-4 digits in text output)".into(),
        printed: format!("BW={}", &bw_txt[..bw_txt.find(' ').unwrap_or(bw_txt.len())]),
        threads: 1,
        ..Default::default()
    })
}

/// fio 2 before 2.20 (stat.c `show_ddir_status`): "io=65536KB, bw=4369.1KB/s, iops=1092,
/// runt=   15msec". Sizes are in units of kb_base, 1024 unless the job set 1000: "KB" and "MB"
/// are then 1024 and 1024 x 1024 bytes. IOPS take "K" and "M" of 1000.
fn parse_dir_line_v2(rest: &str, dir: Direction) -> Option<Claim> {
    let size = |txt: &str| -> Option<f64> {
        let (v, unit) = number_prefix(txt)?;
        let u = unit.trim().strip_suffix("/s").unwrap_or(unit.trim());
        let m = match u {
            "B" | "" => 1.0,
            "KB" => 1024.0,
            "MB" => 1024.0 * 1024.0,
            "GB" => 1024.0f64.powi(3),
            "TB" => 1024.0f64.powi(4),
            _ => return None,
        };
        Some(v * m)
    };
    let io_txt = field(rest, "io=")?;
    let bw_txt = field(rest, "bw=")?;
    let (iops, suffix) = number_prefix(field(rest, "iops=")?)?;
    let iops = iops
        * match suffix {
            "" => 1.0,
            "K" | "k" => 1e3,
            "M" => 1e6,
            _ => return None,
        };
    let runt = rest.split("runt=").nth(1)?.trim_start();
    let (ms, unit) = number_prefix(runt)?;
    if unit.trim() != "msec" {
        return None;
    }
    Some(Claim {
        program: "fio".into(),
        direction: dir,
        claimed_bps: size(bw_txt)?,
        bytes: Some(size(io_txt)?.round() as u64),
        seconds: Some(ms / 1e3),
        iops: Some(iops),
        basis: "fio 2 bw (rounded to 5 digits in text output; KB = 1024 bytes)".into(),
        printed: format!("bw={bw_txt}"),
        threads: 1,
        ..Default::default()
    })
}

fn attach_text_percentiles(text: &str, claims: &mut [Claim]) {
    let lines: Vec<&str> = text.lines().collect();
    for c in claims.iter_mut() {
        let Some(start) = c.line.checked_sub(1) else {
            continue;
        };
        let mut scale = None;
        for l in lines.iter().skip(start + 1) {
            let t = l.trim_start();
            if t.starts_with("read:") || t.starts_with("write:") || l.contains(": (groupid=") {
                break;
            }
            if let Some(u) = t.strip_prefix("clat percentiles (") {
                scale = match u.split(')').next() {
                    Some("nsec") => Some(1.0),
                    Some("usec") => Some(1e3),
                    Some("msec") => Some(1e6),
                    _ => None,
                };
                continue;
            }
            let Some(scale) = scale else { continue };
            let Some(body) = t.strip_prefix('|') else {
                if !t.is_empty() {
                    break;
                }
                continue;
            };
            for item in body.split("],") {
                let Some((p, v)) = item.split_once("th=[") else {
                    continue;
                };
                let Some((v, _)) = number_prefix(v.trim().trim_end_matches(']')) else {
                    continue;
                };
                let label = match p.trim() {
                    "50.00" => "p50",
                    "90.00" => "p90",
                    "99.00" => "p99",
                    "99.90" => "p999",
                    _ => continue,
                };
                c.latency_ns.insert(label.into(), v * scale);
            }
        }
    }
}

/// Fills in what fio's command line says and its output may not (the text output does
/// not repeat the options): file name, size, block size, O_DIRECT, a flush inside the
/// timing. Options before the first `--name` are global; later ones belong to that job.
pub fn apply_args(claims: &mut [Claim], argv: &[String]) {
    let mut global: Vec<(String, String)> = Vec::new();
    let mut jobs: Vec<(String, Vec<(String, String)>)> = Vec::new();
    for a in argv.iter().skip(1) {
        let Some(opt) = a.strip_prefix("--") else {
            continue;
        };
        let (k, v) = opt.split_once('=').unwrap_or((opt, "1"));
        if k == "name" {
            jobs.push((v.to_string(), Vec::new()));
        } else if let Some((_, o)) = jobs.last_mut() {
            o.push((k.to_string(), v.to_string()));
        } else {
            global.push((k.to_string(), v.to_string()));
        }
    }
    for c in claims.iter_mut() {
        let job = jobs
            .iter()
            .find(|(n, _)| *n == c.test)
            .map(|(_, o)| o.as_slice())
            .unwrap_or(&[]);
        let get = |k: &str| {
            job.iter()
                .rev()
                .chain(global.iter().rev())
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.as_str())
        };
        let on = |k: &str| get(k).is_some_and(|v| v != "0");
        if c.filename.is_none() {
            c.filename = get("filename").map(str::to_string);
        }
        if c.file_size.is_none() {
            c.file_size = get("size").and_then(parse_size);
        }
        if c.record_size.is_none() {
            c.record_size = get("bs")
                .or_else(|| get("blocksize"))
                .and_then(|b| block_size(b, c.direction));
        }
        let mut flag = |f: &str| {
            if !c.flags.iter().any(|x| x == f) {
                c.flags.push(f.to_string());
            }
        };
        if on("direct") {
            flag("direct");
        }
        if get("rw")
            .or_else(|| get("readwrite"))
            .is_some_and(|rw| rw.starts_with("rand"))
        {
            flag("random");
        }
        if on("end_fsync") || on("fsync_on_close") {
            flag("fsync_in_timing");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(name: &str) -> String {
        let p = format!("{}/tests/data/fio/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
    }

    #[test]
    fn json_direct_read() {
        let c = parse(&data("fio-direct-read.json"));
        assert_eq!(c.len(), 1);
        let c = &c[0];
        assert_eq!(c.test, "dread");
        assert_eq!(c.direction, Direction::Read);
        assert_eq!(c.bytes, Some(67108864));
        assert_eq!(c.claimed_bps, 1677721600.0);
        assert_eq!(c.seconds, Some(0.040));
        assert_eq!(c.record_size, Some(128 << 10));
        assert_eq!(c.file_size, Some(64 << 20));
        assert_eq!(c.filename.as_deref(), Some("/var/tmp/capt.dat"));
        assert!(c.flags.contains(&"direct".to_string()));
        assert!(c.latency_ns.contains_key("p99"));
    }

    #[test]
    fn json_among_error_lines() {
        let text = data("fio-json-with-errors.txt");
        let c = parse(&text);
        assert_eq!(c.len(), 1, "the failed job moved no data");
        assert_eq!(c[0].test, "ok");
        assert_eq!(c[0].bytes, Some(16 << 20));
        // Error lines after the JSON too.
        let mut after = text.clone();
        after.push_str(
            "fio: pid=0, err=5/file:io_u.c:1889, func=io_u error, error=Input/output error\n",
        );
        assert_eq!(parse(&after), c);
        // No JSON at all (the engine did not load): no claims, no panic.
        assert!(parse(&data("fio-json-badengine.txt")).is_empty());
    }

    #[test]
    fn json_group_reporting() {
        let c = parse(&data("fio-group-reporting.json"));
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].threads, 2);
        assert_eq!(c[0].bytes, Some(64 << 20));
        assert_eq!(c[0].direction, Direction::Write);
    }

    #[test]
    fn text_buffered_write() {
        let c = parse(&data("fio-buffered-write.txt"));
        assert_eq!(c.len(), 1);
        let c = &c[0];
        assert_eq!(c.test, "bwrite");
        assert_eq!(c.direction, Direction::Write);
        assert_eq!(c.claimed_bps, 4267.0 * 1024.0 * 1024.0);
        assert_eq!(c.bytes, Some(64 << 20));
        assert_eq!(c.seconds, Some(0.015));
        assert_eq!(c.iops, Some(68300.0));
        assert_eq!(c.record_size, Some(64 << 10));
        assert_eq!(c.latency_ns["p50"], 12480.0);
        assert_eq!(c.latency_ns["p99"], 27520.0);
        assert_eq!(c.line, 6);
    }

    #[test]
    fn command_line_fills_what_text_output_leaves_out() {
        let mut c = parse(&data("fio-buffered-write.txt"));
        let argv: Vec<String> = [
            "fio",
            "--direct=0",
            "--name=bwrite",
            "--filename=/var/tmp/x",
            "--size=64m",
            "--end_fsync=1",
            "--name=other",
            "--direct=1",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        apply_args(&mut c, &argv);
        assert_eq!(c[0].filename.as_deref(), Some("/var/tmp/x"));
        assert_eq!(c[0].file_size, Some(64 << 20));
        assert!(c[0].flags.contains(&"fsync_in_timing".to_string()));
        assert!(
            !c[0].flags.contains(&"direct".to_string()),
            "--direct=1 belongs to the other job"
        );
    }

    #[test]
    fn text_two_jobs_and_mixed() {
        let c = parse(&data("fio-randread-2jobs.txt"));
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].claimed_bps, 311.0 * 1048576.0);
        assert_eq!(c[1].claimed_bps, 308.0 * 1048576.0);
        assert_eq!(c[1].latency_ns["p50"], 91000.0);
        assert_eq!(c[0].record_size, Some(4096));
        let m = parse(&data("fio-randrw.txt"));
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].direction, Direction::Read);
        assert_eq!(m[1].direction, Direction::Write);
    }
}
