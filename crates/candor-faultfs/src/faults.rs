//! Which faults to inject, as plain data: the command-line flags of `candor-faultfs`, their
//! parsing, and the pure decisions taken on each read and write. No I/O here.

use std::fmt;
use std::ops::Range;

/// The faults a mount injects. Build with the methods, e.g.
/// `Faults::new().eio_read(4096..8192).enospc_after(1 << 20)`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Faults {
    /// Reads overlapping any of these byte ranges of a file fail with EIO.
    pub eio_read: Vec<Range<u64>>,
    /// Writes overlapping any of these byte ranges of a file fail with EIO.
    pub eio_write: Vec<Range<u64>>,
    /// Writes fail with ENOSPC once this many bytes have been written through the mount
    /// (all files together); the write that crosses the limit is cut short at it.
    pub enospc_after: Option<u64>,
    /// Files whose path (relative to the mount) contains one of these strings are deleted
    /// from the backing directory when closed for the `vanish_after_closes`-th time, as if
    /// another process had removed them. `*` matches every file.
    pub vanish: Vec<String>,
    /// How many closes a vanishing file survives (at least 1).
    pub vanish_after_closes: u32,
    /// When not empty, EIO faults apply only to files whose relative path contains one of
    /// these strings.
    pub only: Vec<String>,
    /// Let the kernel cache file data (no direct I/O). Faults then fire only when the
    /// kernel asks the filesystem, not on every read; needed for mmap.
    pub cached: bool,
    /// Every read and write sleeps this many microseconds: a slow device at a fixed pace.
    pub delay_us: u64,
    /// The delay grows by this many percent every second since the mount, compounding: a
    /// device that keeps slowing down (a load that keeps changing), by the same ratio from one
    /// second to the next however late a test starts.
    pub slow_down_pct: u64,
}

impl Faults {
    pub fn new() -> Self {
        Faults {
            vanish_after_closes: 1,
            ..Default::default()
        }
    }
    pub fn eio_read(mut self, range: Range<u64>) -> Self {
        self.eio_read.push(range);
        self
    }
    pub fn eio_write(mut self, range: Range<u64>) -> Self {
        self.eio_write.push(range);
        self
    }
    pub fn enospc_after(mut self, bytes: u64) -> Self {
        self.enospc_after = Some(bytes);
        self
    }
    pub fn vanish(mut self, pattern: &str) -> Self {
        self.vanish.push(pattern.to_string());
        self
    }
    pub fn vanish_after_closes(mut self, closes: u32) -> Self {
        self.vanish_after_closes = closes.max(1);
        self
    }
    pub fn only(mut self, pattern: &str) -> Self {
        self.only.push(pattern.to_string());
        self
    }
    pub fn cached(mut self, cached: bool) -> Self {
        self.cached = cached;
        self
    }
    pub fn delay_us(mut self, us: u64) -> Self {
        self.delay_us = us;
        self
    }
    pub fn slow_down_pct(mut self, pct: u64) -> Self {
        self.slow_down_pct = pct;
        self
    }

    /// How long a read or write made `since_mount` after the mount sleeps (at most a minute).
    pub fn delay(&self, since_mount: std::time::Duration) -> std::time::Duration {
        let growth = (1.0 + self.slow_down_pct as f64 / 100.0).powf(since_mount.as_secs_f64());
        std::time::Duration::from_secs_f64((self.delay_us as f64 * growth / 1e6).min(60.0))
    }

    /// The flags that make `candor-faultfs` inject these faults.
    pub fn to_args(&self) -> Vec<String> {
        let mut a = Vec::new();
        let range = |r: &Range<u64>| format!("{}+{}", r.start, r.end.saturating_sub(r.start));
        for r in &self.eio_read {
            a.extend(["--eio-read".to_string(), range(r)]);
        }
        for r in &self.eio_write {
            a.extend(["--eio-write".to_string(), range(r)]);
        }
        if let Some(n) = self.enospc_after {
            a.extend(["--enospc-after".to_string(), n.to_string()]);
        }
        for p in &self.vanish {
            a.extend(["--vanish".to_string(), p.clone()]);
        }
        if self.vanish_after_closes > 1 {
            a.extend([
                "--vanish-after-closes".to_string(),
                self.vanish_after_closes.to_string(),
            ]);
        }
        for p in &self.only {
            a.extend(["--only".to_string(), p.clone()]);
        }
        if self.cached {
            a.push("--cached".to_string());
        }
        if self.delay_us > 0 {
            a.extend(["--delay".to_string(), self.delay_us.to_string()]);
        }
        if self.slow_down_pct > 0 {
            a.extend(["--slow-down".to_string(), self.slow_down_pct.to_string()]);
        }
        a
    }

    fn applies_to(&self, path: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|p| path.contains(p.as_str()))
    }

    /// The error for a read of `len` bytes at `offset` of `path`, if one is configured.
    pub fn read_fault(&self, path: &str, offset: u64, len: u64) -> Option<Fault> {
        if self.applies_to(path) && overlaps_any(&self.eio_read, offset, len) {
            return Some(Fault::Eio);
        }
        None
    }

    /// How much of a write of `len` bytes at `offset` of `path` may go through, given
    /// `written` bytes so far: `Ok(len)` for all of it, `Ok(n < len)` for a short write that
    /// stops at the ENOSPC limit, `Err` for a fault.
    pub fn write_admit(
        &self,
        path: &str,
        offset: u64,
        len: u64,
        written: u64,
    ) -> Result<u64, Fault> {
        if self.applies_to(path) && overlaps_any(&self.eio_write, offset, len) {
            return Err(Fault::Eio);
        }
        if let Some(limit) = self.enospc_after {
            let room = limit.saturating_sub(written);
            if room == 0 && len > 0 {
                return Err(Fault::Enospc);
            }
            return Ok(len.min(room));
        }
        Ok(len)
    }

    /// Whether `path` vanishes after its `closes`-th close.
    pub fn vanishes(&self, path: &str, closes: u32) -> bool {
        closes >= self.vanish_after_closes.max(1)
            && self
                .vanish
                .iter()
                .any(|p| p == "*" || path.contains(p.as_str()))
    }
}

/// An injected error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    Eio,
    Enospc,
}

impl Fault {
    pub fn errno(self) -> i32 {
        match self {
            Fault::Eio => libc::EIO,
            Fault::Enospc => libc::ENOSPC,
        }
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Fault::Eio => "EIO",
            Fault::Enospc => "ENOSPC",
        })
    }
}

fn overlaps_any(ranges: &[Range<u64>], offset: u64, len: u64) -> bool {
    let end = offset.saturating_add(len.max(1));
    ranges.iter().any(|r| r.start < end && offset < r.end)
}

/// Parses `4096`, `4k`, `1m`, `2g` (binary units).
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("{text:?} is not a byte count such as 4096 or 4k"))?;
    let shift = match unit.to_ascii_lowercase().as_str() {
        "" => 0,
        "k" => 10,
        "m" => 20,
        "g" => 30,
        _ => return Err(format!("{text:?} has an unknown unit; use k, m or g")),
    };
    n.checked_mul(1 << shift)
        .ok_or_else(|| format!("{text:?} is too large"))
}

/// Parses a byte range: `OFFSET` (one byte), `OFFSET+LEN` or `START-END` (END excluded).
pub fn parse_range(text: &str) -> Result<Range<u64>, String> {
    let r = if let Some((a, b)) = text.split_once('+') {
        let start = parse_bytes(a)?;
        let len = parse_bytes(b)?;
        start..start.saturating_add(len)
    } else if let Some((a, b)) = text.split_once('-') {
        parse_bytes(a)?..parse_bytes(b)?
    } else {
        let start = parse_bytes(text)?;
        start..start.saturating_add(1)
    };
    if r.start >= r.end {
        return Err(format!("the range {text:?} is empty"));
    }
    Ok(r)
}

/// A count of microseconds.
fn micros(flag: &str, v: &str) -> Result<u64, String> {
    v.parse::<u64>()
        .ok()
        .filter(|n| *n <= 10_000_000)
        .ok_or_else(|| format!("{flag} {v:?} is not a count of microseconds up to 10000000"))
}

/// The whole command line of `candor-faultfs`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub backing: std::path::PathBuf,
    pub mountpoint: std::path::PathBuf,
    pub faults: Faults,
    pub allow_other: bool,
}

pub const USAGE: &str = "usage: candor-faultfs BACKING_DIR MOUNTPOINT [--eio-read RANGE]... [--eio-write RANGE]... \
[--eio RANGE]... [--enospc-after BYTES] [--vanish PATTERN]... [--vanish-after-closes N] [--only PATTERN]... \
[--cached] [--delay US] [--slow-down PCT] [--allow-other]\n  RANGE is OFFSET, OFFSET+LEN or START-END (bytes; k, m, g units)";

/// Parses the arguments after the program name.
pub fn parse_args(args: &[String]) -> Result<Config, String> {
    let mut faults = Faults::new();
    let mut positional = Vec::new();
    let mut allow_other = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |flag: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{flag} needs a value"))
        };
        match a.as_str() {
            "--eio-read" => faults.eio_read.push(parse_range(&value(a)?)?),
            "--eio-write" => faults.eio_write.push(parse_range(&value(a)?)?),
            "--eio" => {
                let r = parse_range(&value(a)?)?;
                faults.eio_read.push(r.clone());
                faults.eio_write.push(r);
            }
            "--enospc-after" => faults.enospc_after = Some(parse_bytes(&value(a)?)?),
            "--vanish" => faults.vanish.push(value(a)?),
            "--vanish-after-closes" => {
                let v = value(a)?;
                faults.vanish_after_closes =
                    v.parse::<u32>().ok().filter(|n| *n > 0).ok_or_else(|| {
                        format!("--vanish-after-closes {v:?} is not a count above 0")
                    })?;
            }
            "--only" => faults.only.push(value(a)?),
            "--cached" => faults.cached = true,
            "--delay" => faults.delay_us = micros(a, &value(a)?)?,
            "--slow-down" => {
                let v = value(a)?;
                faults.slow_down_pct =
                    v.parse::<u64>()
                        .ok()
                        .filter(|n| *n <= 10_000)
                        .ok_or_else(|| {
                            format!("--slow-down {v:?} is not a percentage from 0 to 10000")
                        })?;
            }
            "--allow-other" => allow_other = true,
            s if s.starts_with("--") => return Err(format!("unknown option {s}")),
            _ => positional.push(a.clone()),
        }
    }
    let [backing, mountpoint] = positional.as_slice() else {
        return Err("give a backing directory and a mount point".into());
    };
    Ok(Config {
        backing: backing.into(),
        mountpoint: mountpoint.into(),
        faults,
        allow_other,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_are_fixed_or_grow_by_a_share_each_second() {
        use std::time::Duration;
        // 100 us, tripled every second: 300 us after one, 900 after two.
        let f = Faults::new().delay_us(100).slow_down_pct(200);
        let us = |t: f64| f.delay(Duration::from_secs_f64(t)).as_secs_f64() * 1e6;
        assert!((us(0.0) - 100.0).abs() < 0.01);
        assert!((us(1.0) - 300.0).abs() < 0.01);
        assert!((us(2.0) - 900.0).abs() < 0.01);
        assert!((us(2.5) / us(2.0) - 3f64.sqrt()).abs() < 1e-6);
        assert_eq!(Faults::new().delay(Duration::from_secs(9)), Duration::ZERO);
        let args: Vec<String> = ["/b", "/m"]
            .iter()
            .map(|s| s.to_string())
            .chain(f.to_args())
            .collect();
        assert_eq!(parse_args(&args).unwrap().faults, f);
        let bad: Vec<String> = ["/b", "/m", "--delay", "x"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert!(parse_args(&bad).unwrap_err().contains("microseconds"));
    }

    #[test]
    fn ranges() {
        assert_eq!(parse_range("4096").unwrap(), 4096..4097);
        assert_eq!(parse_range("4k+4k").unwrap(), 4096..8192);
        assert_eq!(parse_range("1m-2m").unwrap(), (1 << 20)..(2 << 20));
        assert!(parse_range("8-4").is_err());
        assert!(parse_range("x").is_err());
        assert!(parse_range("4q").is_err());
    }

    #[test]
    fn args_round_trip() {
        let f = Faults::new()
            .eio_read(100..200)
            .eio_write(4096..8192)
            .enospc_after(1 << 20)
            .vanish("data")
            .vanish_after_closes(2)
            .only("bench")
            .cached(true);
        let mut args = vec!["/b".to_string(), "/m".to_string()];
        args.extend(f.to_args());
        let c = parse_args(&args).unwrap();
        assert_eq!(c.faults, f);
        assert_eq!(c.backing, std::path::PathBuf::from("/b"));
        assert!(!c.allow_other);
        assert!(parse_args(&["/b".into()]).is_err());
        assert!(parse_args(&["/b".into(), "/m".into(), "--bogus".into()]).is_err());
        assert!(parse_args(&["/b".into(), "/m".into(), "--eio".into()]).is_err());
    }

    #[test]
    fn eio_hits_only_overlapping_io() {
        let f = Faults::new().eio_read(4096..4097);
        assert_eq!(f.read_fault("a", 0, 4096), None);
        assert_eq!(f.read_fault("a", 0, 4097), Some(Fault::Eio));
        assert_eq!(f.read_fault("a", 4096, 1), Some(Fault::Eio));
        assert_eq!(f.read_fault("a", 4097, 100), None);
        let f = f.only("target");
        assert_eq!(f.read_fault("other", 4096, 1), None);
        assert_eq!(f.read_fault("dir/target.1", 4096, 1), Some(Fault::Eio));
    }

    #[test]
    fn enospc_cuts_the_crossing_write_short() {
        let f = Faults::new().enospc_after(10_000);
        assert_eq!(f.write_admit("a", 0, 4096, 0), Ok(4096));
        assert_eq!(f.write_admit("a", 8192, 4096, 8192), Ok(1808));
        assert_eq!(f.write_admit("a", 10_000, 4096, 10_000), Err(Fault::Enospc));
        let f = Faults::new().eio_write(0..1);
        assert_eq!(f.write_admit("a", 0, 10, 0), Err(Fault::Eio));
        assert_eq!(f.write_admit("a", 1, 10, 0), Ok(10));
    }

    #[test]
    fn vanishing() {
        let f = Faults::new().vanish("victim").vanish_after_closes(2);
        assert!(!f.vanishes("victim", 1));
        assert!(f.vanishes("d/victim", 2));
        assert!(!f.vanishes("other", 5));
        assert!(Faults::new().vanish("*").vanishes("anything", 1));
        assert!(!Faults::new().vanishes("anything", 1));
    }
}
