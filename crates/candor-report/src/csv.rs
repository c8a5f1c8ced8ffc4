//! `--format csv`: one row per result, with the witness columns, for spreadsheets and scripts.
//! Figures are in base units (bytes, bytes/s, ns, seconds) and written in full precision, so a
//! CSV read back gives the JSON's numbers exactly. Empty cell = not measured.

use candor_model::{RunDoc, TestResult};

/// The columns, in order, each with how it is read from a result.
type Column = (&'static str, fn(&RunDoc, &TestResult) -> String);

fn num(x: f64) -> String {
    if x.is_finite() {
        format!("{x}")
    } else {
        String::new()
    }
}

fn opt<T: ToString>(x: Option<T>) -> String {
    x.map(|v| v.to_string()).unwrap_or_default()
}

fn fs_of(doc: &RunDoc, r: &TestResult) -> String {
    doc.targets
        .iter()
        .find(|t| t.path == r.target)
        .map(|t| t.fs_type.clone())
        .unwrap_or_default()
}

fn dev_of(doc: &RunDoc, r: &TestResult) -> String {
    doc.targets
        .iter()
        .find(|t| t.path == r.target)
        .and_then(|t| t.device.as_ref())
        .map(|d| d.name.clone())
        .unwrap_or_default()
}

pub const COLUMNS: &[Column] = &[
    ("target", |_, r| r.target.clone()),
    ("fs_type", fs_of),
    ("device", dev_of),
    ("test", |_, r| r.test.clone()),
    ("engine", |_, r| r.engine.clone()),
    ("file_size", |_, r| r.file_size.to_string()),
    ("record_size", |_, r| r.record_size.to_string()),
    ("threads", |_, r| r.threads.to_string()),
    ("iodepth", |_, r| r.iodepth.to_string()),
    ("direct", |_, r| r.direct.to_string()),
    ("osync", |_, r| r.osync.to_string()),
    ("fsync_in_timing", |_, r| r.fsync_in_timing.to_string()),
    ("close_in_timing", |_, r| r.close_in_timing.to_string()),
    ("intent", |_, r| r.intent.to_string()),
    ("status", |_, r| r.status.to_string()),
    ("repetitions", |_, r| r.throughput.n.to_string()),
    ("throughput_mean", |_, r| num(r.throughput.mean)),
    ("throughput_stddev", |_, r| num(r.throughput.stddev)),
    ("throughput_min", |_, r| num(r.throughput.min)),
    ("throughput_max", |_, r| num(r.throughput.max)),
    ("throughput_ci95_low", |_, r| num(r.throughput.ci95[0])),
    ("throughput_ci95_high", |_, r| num(r.throughput.ci95[1])),
    ("throughput_cv", |_, r| num(r.throughput.cv)),
    ("throughput_without_flush", |_, r| {
        opt(r.throughput_without_flush.as_ref().map(|s| num(s.mean)))
    }),
    ("iops_mean", |_, r| num(r.iops.mean)),
    ("latency_p50_ns", |_, r| r.latency_ns.p50.to_string()),
    ("latency_p90_ns", |_, r| r.latency_ns.p90.to_string()),
    ("latency_p99_ns", |_, r| r.latency_ns.p99.to_string()),
    ("latency_p999_ns", |_, r| r.latency_ns.p999.to_string()),
    ("latency_max_ns", |_, r| r.latency_ns.max.to_string()),
    ("cpu_user_s", |_, r| num(r.cpu.user_s)),
    ("cpu_sys_s", |_, r| num(r.cpu.sys_s)),
    ("cpu_pct", |_, r| num(r.cpu.cpu_pct)),
    ("witness_source", |_, r| {
        opt(r.witness.as_ref().map(|w| &w.source))
    }),
    ("verdict", |_, r| {
        opt(r.witness.as_ref().map(|w| &w.verdict))
    }),
    ("device_share", |_, r| {
        opt(r.witness.as_ref().and_then(|w| w.device_share).map(num))
    }),
    ("contradicts_intent", |_, r| {
        opt(r.witness.as_ref().map(|w| w.contradicts_intent))
    }),
    ("app_read_bytes", |_, r| {
        opt(r.witness.as_ref().map(|w| w.app.read_bytes))
    }),
    ("app_write_bytes", |_, r| {
        opt(r.witness.as_ref().map(|w| w.app.write_bytes))
    }),
    ("device_name", |_, r| {
        opt(r
            .witness
            .as_ref()
            .and_then(|w| w.device.as_ref())
            .map(|d| &d.name))
    }),
    ("device_read_bytes", |_, r| {
        opt(r
            .witness
            .as_ref()
            .and_then(|w| w.device.as_ref())
            .map(|d| d.read_bytes))
    }),
    ("device_write_bytes", |_, r| {
        opt(r
            .witness
            .as_ref()
            .and_then(|w| w.device.as_ref())
            .map(|d| d.write_bytes))
    }),
    ("device_avg_latency_us", |_, r| {
        opt(r
            .witness
            .as_ref()
            .and_then(|w| w.device.as_ref())
            .map(|d| num(d.avg_latency_us)))
    }),
    ("device_util", |_, r| {
        opt(r
            .witness
            .as_ref()
            .and_then(|w| w.device.as_ref())
            .map(|d| num(d.util)))
    }),
    ("device_throughput", |_, r| {
        opt(crate::view::device_bps(r).map(num))
    }),
    ("cache_hit_ratio", |_, r| {
        opt(r.witness.as_ref().and_then(|w| w.cache_hit_ratio).map(num))
    }),
    ("write_amplification", |_, r| {
        opt(r
            .witness
            .as_ref()
            .and_then(|w| w.write_amplification)
            .map(num))
    }),
    ("flushed_in_window", |_, r| {
        opt(r
            .witness
            .as_ref()
            .and_then(|w| w.flushed_in_window)
            .map(num))
    }),
    ("disturbed", |_, r| {
        opt(r.witness.as_ref().map(|w| w.disturbed))
    }),
    ("foreign_device_bytes", |_, r| {
        opt(r.witness.as_ref().map(|w| w.foreign_device_bytes))
    }),
    ("precision", |_, r| {
        opt(r.witness.as_ref().and_then(|w| w.precision).map(num))
    }),
    ("efficiency", |_, r| {
        opt(r.efficiency.as_ref().map(|e| num(e.share)))
    }),
    ("explanation", |_, r| {
        opt(r.witness.as_ref().map(|w| &w.explanation))
    }),
    ("error", |_, r| opt(r.error.as_ref())),
];

/// Quotes a cell when it holds a comma, a quote or a line break (RFC 4180).
pub fn quote(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

pub fn render(doc: &RunDoc) -> String {
    let mut out = COLUMNS
        .iter()
        .map(|(n, _)| *n)
        .collect::<Vec<_>>()
        .join(",");
    out.push('\n');
    for r in &doc.results {
        let row: Vec<String> = COLUMNS.iter().map(|(_, f)| quote(&f(doc, r))).collect();
        out.push_str(&row.join(","));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_follows_rfc_4180() {
        assert_eq!(quote("plain"), "plain");
        assert_eq!(quote("a, b"), "\"a, b\"");
        assert_eq!(quote("say \"hi\""), "\"say \"\"hi\"\"\"");
    }
}
