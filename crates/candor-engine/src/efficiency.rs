//! Device efficiency (`--device-spec`): the share of a device's ceiling a result reached, as
//! source document 003 reported against a rated 510 MB/s and 95,000 IOPS. Ceilings come from a
//! spec the person gives (`seq=510MB/s,iops=95000`, optionally per direction) or are measured
//! first (`auto`). Parsing and applying are pure.

use candor_model::{Efficiency, TestResult};

/// Ceilings per basis and direction; None where not known.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DeviceSpec {
    pub seq_read: Option<f64>,
    pub seq_write: Option<f64>,
    pub iops_read: Option<f64>,
    pub iops_write: Option<f64>,
    /// "spec" or "measured".
    pub source: String,
}

/// Parses a rate: `510MB/s`, `1.2GB/s`, `800MiB/s`, `500000KB/s`, `2e9` (bytes/s).
pub fn parse_rate(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let lower = t.to_ascii_lowercase();
    let body = lower.strip_suffix("/s").unwrap_or(&lower);
    let units: [(&str, f64); 9] = [
        ("kib", 1024.0),
        ("mib", 1048576.0),
        ("gib", 1073741824.0),
        ("kb", 1e3),
        ("mb", 1e6),
        ("gb", 1e9),
        ("tb", 1e12),
        ("b", 1.0),
        ("", 1.0),
    ];
    for (u, m) in units {
        if let Some(num) = body.strip_suffix(u) {
            if let Ok(v) = num.trim().parse::<f64>() {
                if v.is_finite() && v > 0.0 {
                    return Ok(v * m);
                }
            }
            if !u.is_empty() {
                break;
            }
        }
    }
    Err(format!(
        "'{text}' is not a rate: write e.g. 510MB/s, 1.2GB/s or 800MiB/s"
    ))
}

fn parse_count(text: &str) -> Result<f64, String> {
    let t = text.trim().to_ascii_lowercase();
    let (num, m) = if let Some(n) = t.strip_suffix('k') {
        (n, 1e3)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 1e6)
    } else {
        (t.as_str(), 1.0)
    };
    match num.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v * m),
        _ => Err(format!(
            "'{text}' is not an IOPS figure: write e.g. 95000 or 95k"
        )),
    }
}

/// Parses `seq=510MB/s,iops=95000` (keys: seq, seq-read, seq-write, iops, iops-read,
/// iops-write). `auto` is handled by the caller.
pub fn parse_spec(text: &str) -> Result<DeviceSpec, String> {
    let mut s = DeviceSpec {
        source: "spec".into(),
        ..Default::default()
    };
    for part in text.split(',') {
        let (k, v) = part
            .split_once('=')
            .ok_or_else(|| format!("'{part}' in --device-spec is not key=value: write e.g. seq=510MB/s,iops=95000, or auto"))?;
        let key = k.trim().to_ascii_lowercase().replace('_', "-");
        match key.as_str() {
            "seq" => {
                let r = parse_rate(v)?;
                s.seq_read = Some(r);
                s.seq_write = Some(r);
            }
            "seq-read" => s.seq_read = Some(parse_rate(v)?),
            "seq-write" => s.seq_write = Some(parse_rate(v)?),
            "iops" => {
                let r = parse_count(v)?;
                s.iops_read = Some(r);
                s.iops_write = Some(r);
            }
            "iops-read" => s.iops_read = Some(parse_count(v)?),
            "iops-write" => s.iops_write = Some(parse_count(v)?),
            other => return Err(format!("'{other}' is not a --device-spec key: use seq, seq-read, seq-write, iops, iops-read, iops-write")),
        }
    }
    Ok(s)
}

/// Random tests with small records are judged in IOPS; everything else in bytes/s.
fn uses_iops(r: &TestResult) -> bool {
    r.access == Some(candor_model::Access::Random) && r.record_size <= 64 << 10
}

/// The efficiency of one result, when the spec has the ceiling it needs.
pub fn efficiency(r: &TestResult, spec: &DeviceSpec) -> Option<Efficiency> {
    if !r.status.is_ok() {
        return None;
    }
    let write = r.is_write();
    let (basis, ceiling, value) = if uses_iops(r) {
        let c = if write {
            spec.iops_write
        } else {
            spec.iops_read
        }?;
        ("iops", c, r.iops.mean)
    } else {
        let c = if write { spec.seq_write } else { spec.seq_read }?;
        ("seq", c, r.throughput.mean)
    };
    if ceiling <= 0.0 {
        return None;
    }
    Some(Efficiency {
        basis: basis.into(),
        ceiling,
        source: spec.source.clone(),
        share: value / ceiling,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_and_specs_parse() {
        assert_eq!(parse_rate("510MB/s").unwrap(), 510e6);
        assert_eq!(parse_rate("1.5GB/s").unwrap(), 1.5e9);
        assert_eq!(parse_rate("100MiB/s").unwrap(), 100.0 * 1048576.0);
        assert_eq!(parse_rate("2000").unwrap(), 2000.0);
        assert!(parse_rate("fast").is_err());
        assert!(parse_rate("-5MB/s").is_err());
        let s = parse_spec("seq=510MB/s,iops=95000").unwrap();
        assert_eq!(s.seq_read, Some(510e6));
        assert_eq!(s.seq_write, Some(510e6));
        assert_eq!(s.iops_read, Some(95000.0));
        let s = parse_spec("seq-read=1GB/s,iops-write=20k").unwrap();
        assert_eq!(s.seq_write, None);
        assert_eq!(s.iops_write, Some(20000.0));
        assert!(parse_spec("speed=1")
            .unwrap_err()
            .contains("not a --device-spec key"));
        assert!(parse_spec("seq").is_err());
    }

    #[test]
    fn share_is_against_the_right_ceiling() {
        // Source document 003's example: 510 MB/s rated, 95,000 IOPS rated.
        let spec = parse_spec("seq=510MB/s,iops=95000").unwrap();
        let mut r = TestResult {
            test: "read".into(),
            record_size: 1 << 20,
            status: candor_model::Status::Ok,
            ..Default::default()
        };
        r.throughput.mean = 408e6;
        let e = efficiency(&r, &spec).unwrap();
        assert_eq!(e.basis, "seq");
        assert!((e.share - 0.8).abs() < 1e-12);
        let mut q = TestResult {
            test: "randread".into(),
            direction: Some(candor_model::Direction::Read),
            access: Some(candor_model::Access::Random),
            record_size: 4096,
            status: candor_model::Status::Ok,
            ..Default::default()
        };
        q.iops.mean = 47500.0;
        let e = efficiency(&q, &spec).unwrap();
        assert_eq!(e.basis, "iops");
        assert!((e.share - 0.5).abs() < 1e-12);
        q.status = candor_model::Status::Failed;
        assert!(efficiency(&q, &spec).is_none());
        let only_seq = parse_spec("seq-read=1GB/s").unwrap();
        let w = TestResult {
            test: "write".into(),
            direction: Some(candor_model::Direction::Write),
            record_size: 1 << 20,
            status: candor_model::Status::Ok,
            ..Default::default()
        };
        assert!(
            efficiency(&w, &only_seq).is_none(),
            "no write ceiling given"
        );
    }
}
