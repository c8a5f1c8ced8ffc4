//! `--format fio-json`: the result in fio's JSON layout (`--output-format=json+`), so fio's
//! own tools (`fio_jsonplus_clat2csv`) and what reads fio's JSON (fio-plot, dashboards) read
//! candor's results. One fio job per result, as fio's `group_reporting` gives one job per
//! group: `read`/`write`/`trim` with `io_bytes`, `bw_bytes`, `bw` (KiB/s), `iops`, `runtime`
//! (ms), `clat_ns` with fio's `percentile` map and json+'s `bins`. candor's latency histogram
//! has fio's bucket layout (exact below 128 ns, then 64 buckets per power of two), so the bins
//! are fio's bins: the key is the bucket's value as fio names it (its midpoint), and the
//! percentiles are computed as fio computes them from those bins. What is candor's and not
//! fio's (the test, the verdict, the witness) is under `candor`, at the top and in each job.
//!
//! What differs from fio, documented in docs/reports.md: the figures are over every
//! repetition (`io_bytes`, `runtime` and `total_ios` add them up; `bw_bytes` and `iops` are
//! candor's headline, the mean over repetitions; `bw_min`...`bw_samples` and `iops_min`...
//! describe the repetitions, where fio samples intervals); fields candor does not measure
//! (`ctx`, `majf`, `minf`, the depth distributions, `disk_util`) are left out rather than
//! written as zeros; a mixed test's latency is not split by direction, so it is in
//! `candor.latency_ns` only.

use crate::view::{self, Direction};
use candor_model::{HistogramDump, RunDoc, TestResult};
use serde_json::Value;

/// fio's default `percentile_list`.
const PERCENTILES: [f64; 17] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];

/// An ordered JSON value: fio's key order is kept (serde_json's maps sort their keys).
enum J {
    V(Value),
    O(Vec<(String, J)>),
    A(Vec<J>),
}

fn v(x: impl Into<Value>) -> J {
    J::V(x.into())
}

fn obj(pairs: Vec<(&str, J)>) -> J {
    J::O(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

/// The members of an object (each with its key) or the items of an array, one a line,
/// between `brackets`.
fn write_items<'a>(
    brackets: (char, char),
    items: impl ExactSizeIterator<Item = (Option<&'a str>, &'a J)>,
    indent: usize,
    out: &mut String,
) {
    let pad = |n: usize| "  ".repeat(n);
    out.push(brackets.0);
    out.push('\n');
    let n = items.len();
    for (i, (k, x)) in items.enumerate() {
        out.push_str(&pad(indent + 1));
        if let Some(k) = k {
            out.push_str(&Value::from(k).to_string());
            out.push_str(" : ");
        }
        write(x, indent + 1, out);
        if i + 1 < n {
            out.push(',');
        }
        out.push('\n');
    }
    out.push_str(&pad(indent));
    out.push(brackets.1);
}

/// Writes `j` as fio does: two spaces per level, `"key" : value`.
fn write(j: &J, indent: usize, out: &mut String) {
    match j {
        J::V(Value::Object(m)) => {
            // A plain serde value (candor's own structures) keeps its sorted keys.
            let pairs: Vec<(String, J)> = m
                .iter()
                .map(|(k, x)| (k.clone(), J::V(x.clone())))
                .collect();
            write(&J::O(pairs), indent, out);
        }
        J::V(Value::Array(a)) => {
            let items: Vec<J> = a.iter().map(|x| J::V(x.clone())).collect();
            write(&J::A(items), indent, out);
        }
        J::V(x) => out.push_str(&x.to_string()),
        J::O(pairs) if pairs.is_empty() => out.push_str("{}"),
        J::O(pairs) => {
            let items = pairs.iter().map(|(k, x)| (Some(k.as_str()), x));
            write_items(('{', '}'), items, indent, out);
        }
        J::A(items) if items.is_empty() => out.push_str("[]"),
        J::A(items) => write_items(('[', ']'), items.iter().map(|x| (None, x)), indent, out),
    }
}

/// Width of the bucket whose lower bound is `lo` (fio's and candor's layout).
fn bucket_width(lo: u64) -> u64 {
    if lo < 128 {
        1
    } else {
        1u64 << (63 - lo.leading_zeros() - 6)
    }
}

/// The bins as fio's json+ names them: (fio's value of the bucket, count), ascending. fio's
/// `plat_idx_to_val` is the bucket's lower bound below 128 ns and its midpoint above.
pub fn bins(h: &HistogramDump) -> Vec<(u64, u64)> {
    let mut b: Vec<(u64, u64)> = h
        .buckets
        .iter()
        .filter(|x| x[1] > 0)
        .map(|x| (x[0] + bucket_width(x[0]) / 2, x[1]))
        .collect();
    b.sort_unstable();
    b
}

/// fio's `calc_clat_percentiles` over the bins: each percentile is the value of the first
/// bin whose running count reaches that share of all samples.
pub fn percentiles(bins: &[(u64, u64)]) -> Vec<(f64, u64)> {
    let total: u64 = bins.iter().map(|b| b.1).sum();
    let mut out = Vec::with_capacity(PERCENTILES.len());
    if total == 0 {
        return out;
    }
    let mut j = 0;
    let mut sum = 0u64;
    for &(val, n) in bins {
        sum += n;
        while j < PERCENTILES.len() && sum as f64 >= PERCENTILES[j] / 100.0 * total as f64 {
            out.push((PERCENTILES[j], val));
            j += 1;
        }
        if j == PERCENTILES.len() {
            break;
        }
    }
    out
}

/// fio's coarse latency distribution (`latency_ns`, `latency_us`, `latency_ms`): the share of
/// operations in each range, keyed by the range's upper end, each bin counted at its value.
fn coarse(bins: &[(u64, u64)]) -> (J, J, J) {
    const EDGES: [u64; 10] = [2, 4, 10, 20, 50, 100, 250, 500, 750, 1000];
    let total: u64 = bins.iter().map(|b| b.1).sum();
    let mut ns = [0u64; 10];
    let mut us = [0u64; 10];
    let mut ms = [0u64; 12];
    let slot = |x: u64| EDGES.iter().position(|&e| x < e).unwrap_or(9);
    for &(val, n) in bins {
        if val < 1000 {
            ns[slot(val)] += n;
        } else if val < 1_000_000 {
            us[slot(val / 1000)] += n;
        } else {
            let m = val / 1_000_000;
            let i = if m >= 2000 {
                11
            } else if m >= 1000 {
                10
            } else {
                slot(m)
            };
            ms[i] += n;
        }
    }
    let pct = |n: u64| {
        if total == 0 {
            0.0
        } else {
            n as f64 * 100.0 / total as f64
        }
    };
    let map = |counts: &[u64], keys: &[&str]| {
        J::O(
            keys.iter()
                .zip(counts)
                .map(|(k, &n)| (k.to_string(), v(pct(n))))
                .collect(),
        )
    };
    let keys: Vec<String> = EDGES.iter().map(|e| e.to_string()).collect();
    let keys: Vec<&str> = keys.iter().map(|s| s.as_str()).collect();
    let mut ms_keys = keys.clone();
    ms_keys.extend(["2000", ">=2000"]);
    (map(&ns, &keys), map(&us, &keys), map(&ms, &ms_keys))
}

/// `{min, max, mean, stddev, N}` (and, for `clat_ns`, `percentile` and `bins`). The standard
/// deviation is the histogram's (each sample at its bin's value): candor keeps no other.
fn lat_object(r: Option<&TestResult>, with_bins: bool) -> J {
    let Some(r) = r.filter(|r| r.latency_ns.count > 0) else {
        return obj(vec![
            ("min", v(0)),
            ("max", v(0)),
            ("mean", v(0.0)),
            ("stddev", v(0.0)),
            ("N", v(0)),
        ]);
    };
    let l = &r.latency_ns;
    let b = bins(&r.latency_histogram);
    let n: u64 = b.iter().map(|x| x.1).sum();
    let var = if n > 1 {
        b.iter()
            .map(|&(x, c)| c as f64 * (x as f64 - l.mean).powi(2))
            .sum::<f64>()
            / (n - 1) as f64
    } else {
        0.0
    };
    let mut o = vec![
        ("min", v(l.min)),
        ("max", v(l.max)),
        ("mean", v(l.mean)),
        ("stddev", v(var.sqrt())),
        ("N", v(l.count)),
    ];
    if with_bins {
        o.push((
            "percentile",
            J::O(
                percentiles(&b)
                    .into_iter()
                    .map(|(p, x)| (format!("{p:.6}"), v(x)))
                    .collect(),
            ),
        ));
        o.push((
            "bins",
            J::O(b.iter().map(|&(x, c)| (x.to_string(), v(c))).collect()),
        ));
    }
    obj(o)
}

/// One direction of a job: `share` of the result's bytes and operations moved this way, and
/// its latency when the result is all this way (`timed`).
fn direction(r: &TestResult, share: f64, timed: bool) -> J {
    let ok = !view::failed(r) && share > 0.0;
    let f = if ok { share } else { 0.0 };
    let bytes = (r.reps.iter().map(|x| x.bytes).sum::<u64>() as f64 * f).round() as u64;
    let ios = (r.reps.iter().map(|x| x.ops).sum::<u64>() as f64 * f).round() as u64;
    let runtime_ms = if ok {
        (r.reps.iter().map(|x| x.seconds).sum::<f64>() * 1000.0).round() as u64
    } else {
        0
    };
    let t = &r.throughput;
    let i = &r.iops;
    let kib = |x: f64| (x * f / 1024.0).round() as u64;
    let lat = if ok && timed { Some(r) } else { None };
    obj(vec![
        ("io_bytes", v(bytes)),
        ("io_kbytes", v(bytes / 1024)),
        ("bw_bytes", v((t.mean * f).round() as u64)),
        ("bw", v(kib(t.mean))),
        ("iops", v(i.mean * f)),
        ("runtime", v(runtime_ms)),
        ("total_ios", v(ios)),
        ("short_ios", v(0)),
        ("drop_ios", v(0)),
        ("slat_ns", lat_object(None, false)),
        ("clat_ns", lat_object(lat, lat.is_some())),
        ("lat_ns", lat_object(lat, false)),
        ("bw_min", v(kib(t.min))),
        ("bw_max", v(kib(t.max))),
        ("bw_agg", v(if ok { 100.0 } else { 0.0 })),
        ("bw_mean", v(t.mean * f / 1024.0)),
        ("bw_dev", v(t.stddev * f / 1024.0)),
        ("bw_samples", v(if ok { t.n } else { 0 })),
        ("iops_min", v((i.min * f).round() as u64)),
        ("iops_max", v((i.max * f).round() as u64)),
        ("iops_mean", v(i.mean * f)),
        ("iops_stddev", v(i.stddev * f)),
        ("iops_samples", v(if ok { i.n } else { 0 })),
    ])
}

/// fio's `rw` for a candor test: its direction and access.
fn rw(r: &TestResult) -> &'static str {
    let random = r.access == Some(candor_model::Access::Random)
        || (r.access.is_none() && r.test.starts_with("rand"));
    match (random, r.direction()) {
        (true, Direction::Read) => "randread",
        (true, Direction::Write) => "randwrite",
        (true, _) => "randrw",
        (false, d) if d.writes() => "write",
        _ => "read",
    }
}

/// fio's `ioengine` for a candor engine (candor's name where fio has none).
fn ioengine(engine: &str) -> String {
    match engine {
        "vector" => "pvsync".into(),
        e => e.to_string(),
    }
}

/// The share of a result's bytes that were reads: 1 or 0, and for a mixed test what the
/// witness counted (else the plan's read percentage).
fn read_share(doc: &RunDoc, r: &TestResult) -> f64 {
    match view::direction(r) {
        Direction::Read => 1.0,
        Direction::Write => 0.0,
        Direction::Mixed | Direction::Unknown => {
            if let Some(w) = &r.witness {
                let (rd, wr) = (w.app.read_bytes, w.app.write_bytes);
                if rd + wr > 0 {
                    return rd as f64 / (rd + wr) as f64;
                }
            }
            doc.options.run().map_or(50.0, |o| o.mix_read_pct as f64) / 100.0
        }
    }
}

fn job(doc: &RunDoc, r: &TestResult, groupid: usize) -> J {
    let reads = read_share(doc, r);
    let mixed = view::direction(r) == Direction::Mixed;
    let mut options = vec![
        ("name", v(view::label(r))),
        ("rw", v(rw(r))),
        ("bs", v(r.record_size.to_string())),
        ("size", v(r.file_size.to_string())),
        ("ioengine", v(ioengine(&r.engine))),
        ("numjobs", v(r.threads.max(1).to_string())),
        ("iodepth", v(r.iodepth.max(1).to_string())),
        ("direct", v(if r.direct { "1" } else { "0" })),
    ];
    if r.osync {
        options.push(("sync", v("1")));
    }
    if r.is_write() && r.fsync_in_timing {
        options.push(("end_fsync", v("1")));
    }
    if mixed {
        options.push(("rwmixread", v(format!("{:.0}", reads * 100.0))));
    }
    let wall: f64 = r.reps.iter().map(|x| x.seconds).sum();
    let flushes: Vec<f64> = r
        .reps
        .iter()
        .filter(|x| x.flush_seconds > 0.0)
        .map(|x| x.flush_seconds * 1e9)
        .collect();
    let sync = {
        let n = flushes.len();
        let mean = if n > 0 {
            flushes.iter().sum::<f64>() / n as f64
        } else {
            0.0
        };
        let sd = if n > 1 {
            (flushes.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
        } else {
            0.0
        };
        obj(vec![
            ("total_ios", v(n)),
            (
                "lat_ns",
                obj(vec![
                    (
                        "min",
                        v(if n == 0 {
                            0
                        } else {
                            flushes.iter().cloned().fold(f64::INFINITY, f64::min) as u64
                        }),
                    ),
                    ("max", v(flushes.iter().cloned().fold(0.0, f64::max) as u64)),
                    ("mean", v(mean)),
                    ("stddev", v(sd)),
                    ("N", v(n)),
                ]),
            ),
        ])
    };
    let cpu_pct = |s: f64| {
        if r.cpu.wall_s > 0.0 {
            s / r.cpu.wall_s * 100.0
        } else {
            0.0
        }
    };
    let timed = !view::failed(r) && !mixed;
    let b = if timed {
        bins(&r.latency_histogram)
    } else {
        Vec::new()
    };
    let (lns, lus, lms) = coarse(&b);
    let w = r.witness.as_ref();
    let candor = obj(vec![
        ("test", v(r.test.clone())),
        ("target", v(r.target.clone())),
        ("engine", v(r.engine.clone())),
        ("intent", v(r.intent.to_string())),
        ("status", v(r.status.as_str())),
        ("error", v(r.error.clone())),
        ("repetitions", v(r.throughput.n)),
        (
            "throughput",
            v(serde_json::to_value(&r.throughput).unwrap_or_default()),
        ),
        (
            "latency_ns",
            v(serde_json::to_value(&r.latency_ns).unwrap_or_default()),
        ),
        ("verdict", v(w.map(|w| w.verdict.to_string()))),
        ("explanation", v(w.map(|w| w.explanation.clone()))),
        (
            "witness",
            v(serde_json::to_value(&r.witness).unwrap_or_default()),
        ),
    ]);
    obj(vec![
        ("jobname", v(view::label(r))),
        ("groupid", v(groupid)),
        ("error", v(if view::failed(r) { 1 } else { 0 })),
        ("eta", v(0)),
        ("elapsed", v(wall.ceil() as u64)),
        ("job options", obj(options)),
        ("read", direction(r, reads, !mixed)),
        ("write", direction(r, 1.0 - reads, !mixed)),
        ("trim", direction(r, 0.0, false)),
        ("sync", sync),
        ("job_runtime", v((wall * 1000.0).round() as u64)),
        ("usr_cpu", v(cpu_pct(r.cpu.user_s))),
        ("sys_cpu", v(cpu_pct(r.cpu.sys_s))),
        ("latency_ns", lns),
        ("latency_us", lus),
        ("latency_ms", lms),
        ("candor", candor),
    ])
}

/// Seconds since the epoch of an RFC 3339 UTC time as candor writes it
/// (`2024-05-01T12:34:56Z`); None for anything else.
fn epoch(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[10] != b'T' {
        return None;
    }
    let n = |r: std::ops::Range<usize>| s.get(r)?.parse::<i64>().ok();
    let (y, m, d) = (n(0..4)?, n(5..7)?, n(8..10)?);
    let (hh, mm, ss) = (n(11..13)?, n(14..16)?, n(17..19)?);
    // Days from 1970-01-01 of a civil date (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86400 + hh * 3600 + mm * 60 + ss)
}

/// fio's `time`, as ctime(3) writes it ("Tue Nov 24 00:33:08 2026"), in UTC.
fn ctime(secs: i64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let iso = candor_model::rfc3339(secs);
    let month = iso[5..7].parse::<usize>().unwrap_or(1).clamp(1, 12);
    format!(
        "{} {} {:>2} {} {}",
        DAYS[secs.div_euclid(86400).rem_euclid(7) as usize],
        MONTHS[month - 1],
        iso[8..10].trim_start_matches('0'),
        &iso[11..19],
        &iso[0..4]
    )
}

pub fn render(doc: &RunDoc) -> String {
    let secs = epoch(&doc.started_at).unwrap_or(0);
    let (fits, left_out): (Vec<&TestResult>, Vec<&TestResult>) = doc
        .results
        .iter()
        .partition(|r| r.record_size > 0 && r.file_size > 0 && r.test != "copy");
    let dirs: Vec<String> = doc.targets.iter().map(|t| t.path.clone()).collect();
    let jobs: Vec<J> = fits
        .iter()
        .enumerate()
        .map(|(i, r)| job(doc, r, i))
        .collect();
    let candor = obj(vec![
        ("candor_version", v(doc.candor_version.clone())),
        ("command_line", v(doc.command_line.clone())),
        ("started_at", v(doc.started_at.clone())),
        ("finished_at", v(doc.finished_at.clone())),
        ("complete", v(doc.complete)),
        ("stop_reason", v(doc.stop_reason.clone())),
        (
            "host",
            v(serde_json::to_value(&doc.host).unwrap_or_default()),
        ),
        (
            "targets",
            v(serde_json::to_value(&doc.targets).unwrap_or_default()),
        ),
        (
            "not_in_fio_layout",
            v(left_out
                .iter()
                .map(|r| {
                    format!(
                        "{} on {}: not records on a file, which is all fio's layout holds",
                        view::label(r),
                        r.target
                    )
                })
                .collect::<Vec<_>>()),
        ),
        ("warnings", v(doc.warnings.clone())),
    ]);
    let top = obj(vec![
        ("fio version", v(format!("candor-{}", doc.candor_version))),
        ("timestamp", v(secs)),
        ("timestamp_ms", v(secs * 1000)),
        ("time", v(ctime(secs))),
        (
            "global options",
            obj(vec![("directory", v(dirs.join(":")))]),
        ),
        ("jobs", J::A(jobs)),
        ("candor", candor),
    ]);
    let mut out = String::new();
    write(&top, 0, &mut out);
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fio_bucket_values_are_midpoints_above_128_ns() {
        let h = HistogramDump {
            relative_error: 0.0078,
            buckets: vec![[100, 2], [2144, 1], [2048, 3]],
        };
        // 100 is exact; 2048.. is 32 wide (midpoint 2064); 2144 -> 2160 (fio's own bin
        // values in the captured json+ output: 2160, 2320, 2352...).
        assert_eq!(bins(&h), vec![(100, 2), (2064, 3), (2160, 1)]);
    }

    #[test]
    fn dates_read_back_and_ctime() {
        assert_eq!(epoch("1970-01-01T00:00:00Z"), Some(0));
        let t = epoch("2026-11-24T00:33:08Z").unwrap();
        assert_eq!(candor_model::rfc3339(t), "2026-11-24T00:33:08Z");
        assert_eq!(ctime(t), "Tue Nov 24 00:33:08 2026");
        assert_eq!(
            ctime(epoch("2024-03-05T01:02:03Z").unwrap()),
            "Tue Mar  5 01:02:03 2024"
        );
        assert_eq!(epoch("yesterday"), None);
    }
}
