//! Byte counts and rates written for people: one formatter, in the few spellings candor
//! prints. Each spelling is a `ByteStyle`; every crate that writes a size names one of them,
//! so a size reads the same wherever the same kind of text shows it. Rates (bytes per
//! second) are written in one unit chosen once per process (`--units`): MB/s (10^6 bytes,
//! as disks are rated) by default, MiB/s when binary units are asked for; every table,
//! report and audit sentence writes them through [`rate`], so one figure reads the same
//! everywhere.

use std::sync::atomic::{AtomicBool, Ordering};

/// How a byte count is spelled: its units, the space before them, the decimals.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ByteStyle {
    /// Bytes, then binary units from KiB to TiB.
    units: [&'static str; 5],
    /// Between the number and the unit.
    sep: &'static str,
    decimals: Decimals,
    /// An exact multiple of its unit is written whole ("4k", never "4.00k").
    exact_whole: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Decimals {
    /// Always this many.
    Fixed(usize),
    /// Up to this many, trailing zeros dropped.
    Trimmed(usize),
    /// One below 10, none from 10.
    OneBelowTen,
}

/// The binary units of prose and sentences, after bytes.
const IEC: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];

impl ByteStyle {
    /// As the size options take them, for table cells: `512`, `4k`, `1.5m`, `1.25g`.
    pub const OPTION: ByteStyle =
        ByteStyle::new(["", "k", "m", "g", "t"], "", Decimals::Trimmed(2), true);
    /// Short labels in candor's messages: `512B`, `4K`, `1.5M`, `64M`.
    pub const LABEL: ByteStyle =
        ByteStyle::new(["B", "K", "M", "G", "T"], "", Decimals::Fixed(1), true);
    /// For prose: `512 B`, `4 KiB`, `1.5 GiB`.
    pub const PROSE: ByteStyle = ByteStyle::new(IEC, " ", Decimals::Trimmed(1), false);
    /// The audit's sentences, always to a tenth: `512 B`, `4.0 KiB`, `1.5 GiB`.
    pub const TENTHS: ByteStyle = ByteStyle::new(IEC, " ", Decimals::Fixed(1), false);
    /// The witness's explanations: `512 bytes`, `4.0 KiB`, `12 MiB`.
    pub const WITNESS: ByteStyle = ByteStyle::new(
        ["bytes", "KiB", "MiB", "GiB", "TiB"],
        " ",
        Decimals::OneBelowTen,
        false,
    );

    const fn new(
        units: [&'static str; 5],
        sep: &'static str,
        decimals: Decimals,
        exact_whole: bool,
    ) -> ByteStyle {
        ByteStyle {
            units,
            sep,
            decimals,
            exact_whole,
        }
    }
}

/// `n` bytes in the largest binary unit it reaches (up to TiB), spelled as `style` says.
pub fn format_bytes(n: u64, style: ByteStyle) -> String {
    let mut unit = 0;
    let mut scale: u64 = 1;
    while unit + 1 < style.units.len() && n / scale >= 1024 {
        scale *= 1024;
        unit += 1;
    }
    let name = style.units[unit];
    let sep = style.sep;
    if unit == 0 {
        return format!("{n}{sep}{name}");
    }
    if style.exact_whole && n.is_multiple_of(scale) {
        return format!("{}{sep}{name}", n / scale);
    }
    let v = n as f64 / scale as f64;
    let num = match style.decimals {
        Decimals::Fixed(d) => format!("{v:.d$}"),
        Decimals::Trimmed(d) => trim_zeros(format!("{v:.d$}")),
        Decimals::OneBelowTen if v < 10.0 => format!("{v:.1}"),
        Decimals::OneBelowTen => format!("{v:.0}"),
    };
    format!("{num}{sep}{name}")
}

/// Drops the trailing zeros of a decimal number, and its point if nothing follows it:
/// `1.50` -> `1.5`, `2.00` -> `2`, `10` stays `10`.
pub fn trim_zeros(s: String) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// A size as people type it: `4k`, `64K`, `1m`, `1.5g`, `300MiB`, `512` (bytes). Units are
/// binary (k = 1024), as in iozone and fio's `bs`. Zero is refused: nothing is zero bytes
/// long. The error is one sentence about `text`, for the caller to put after its option.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let bad = || {
        format!(
            "'{text}' is not a size: write a number with an optional unit b, k, m, g or t (binary), e.g. 4k or 1g"
        )
    };
    if t.is_empty() {
        return Err(bad());
    }
    let lower = t.to_ascii_lowercase();
    let lower = lower
        .strip_suffix("ib")
        .map(|s| s.to_string())
        .unwrap_or(lower);
    let (num, mult): (&str, u64) = match lower.chars().last() {
        Some('b') => (&lower[..lower.len() - 1], 1),
        Some('k') => (&lower[..lower.len() - 1], 1 << 10),
        Some('m') => (&lower[..lower.len() - 1], 1 << 20),
        Some('g') => (&lower[..lower.len() - 1], 1 << 30),
        Some('t') => (&lower[..lower.len() - 1], 1 << 40),
        Some(c) if c.is_ascii_digit() || c == '.' => (&lower[..], 1),
        _ => return Err(bad()),
    };
    let num = num.trim();
    if num.is_empty() || !num.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return Err(bad());
    }
    let value = if num.contains('.') {
        let f: f64 = num.parse().map_err(|_| bad())?;
        let v = f * mult as f64;
        if !v.is_finite() || v >= u64::MAX as f64 {
            return Err(format!("'{text}' is too large"));
        }
        v.round() as u64
    } else {
        let n: u64 = num.parse().map_err(|_| format!("'{text}' is too large"))?;
        n.checked_mul(mult)
            .ok_or_else(|| format!("'{text}' is too large"))?
    };
    if value == 0 {
        return Err(format!("'{text}' is zero: sizes must be at least one byte"));
    }
    Ok(value)
}

/// How a share (0.934 of something) is written as a percentage: the one percentage
/// formatter, its style chosen by what the text is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PercentStyle {
    /// Whole, with one decimal below 10%: "93%", "0.4%"; "-" for no number (tables, notes).
    Adaptive,
    /// One decimal: "8.1%" (criteria such as the steady state's range and slope).
    Tenths,
    /// Whole, never rounding a part to 0% or less than all to 100%: "1%", "99%"
    /// (sentences that tell a part from none and from all).
    WholeInside,
}

/// `share` as a percentage in `style`.
pub fn percent(share: f64, style: PercentStyle) -> String {
    match style {
        PercentStyle::Adaptive => {
            if !share.is_finite() {
                return "-".to_string();
            }
            let p = share * 100.0;
            if p != 0.0 && p.abs() < 10.0 {
                format!("{}%", trim_zeros(format!("{p:.1}")))
            } else {
                format!("{p:.0}%")
            }
        }
        PercentStyle::Tenths => format!("{:.1}%", 100.0 * share),
        PercentStyle::WholeInside => {
            let p = (share * 100.0).round();
            let p = if share > 0.0 && p < 1.0 {
                1.0
            } else if share < 1.0 && p > 99.0 {
                99.0
            } else {
                p
            };
            format!("{p:.0}%")
        }
    }
}

/// The unit rates are written in: decimal (MB/s, 10^6 bytes per second) or binary (MiB/s,
/// 2^20 bytes per second).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RateUnits {
    Decimal,
    Binary,
}

impl RateUnits {
    /// `decimal` or `binary`, as `--units` takes them.
    pub fn parse(s: &str) -> Result<RateUnits, String> {
        match s {
            "decimal" => Ok(RateUnits::Decimal),
            "binary" => Ok(RateUnits::Binary),
            other => Err(format!(
                "--units {other:?} is not a unit system: write --units decimal (MB/s, the default) or --units binary (MiB/s)"
            )),
        }
    }

    /// Bytes in one unit: 10^6 or 2^20.
    pub fn scale(self) -> f64 {
        match self {
            RateUnits::Decimal => 1e6,
            RateUnits::Binary => 1048576.0,
        }
    }

    /// The unit of bytes: "MB" or "MiB".
    pub fn unit(self) -> &'static str {
        match self {
            RateUnits::Decimal => "MB",
            RateUnits::Binary => "MiB",
        }
    }

    /// The unit of rates: "MB/s" or "MiB/s".
    pub fn label(self) -> &'static str {
        match self {
            RateUnits::Decimal => "MB/s",
            RateUnits::Binary => "MiB/s",
        }
    }

    /// What the unit is, for a report's footer: "MB/s (10^6 bytes per second)".
    pub fn meaning(self) -> &'static str {
        match self {
            RateUnits::Decimal => "MB/s (10^6 bytes per second)",
            RateUnits::Binary => "MiB/s (2^20 bytes per second)",
        }
    }
}

/// Whether this process writes rates in binary units; decimal until `set_rate_units` says
/// otherwise.
static BINARY: AtomicBool = AtomicBool::new(false);

/// Chooses the unit every rate this process writes is in (`--units`, once, before anything
/// is printed).
pub fn set_rate_units(u: RateUnits) {
    BINARY.store(u == RateUnits::Binary, Ordering::Relaxed);
}

/// The unit rates are written in.
pub fn rate_units() -> RateUnits {
    if BINARY.load(Ordering::Relaxed) {
        RateUnits::Binary
    } else {
        RateUnits::Decimal
    }
}

/// The rate unit's label: "MB/s" or "MiB/s".
pub fn rate_label() -> &'static str {
    rate_units().label()
}

/// Bytes per second in the chosen unit, as a number.
pub fn in_rate_units(bps: f64) -> f64 {
    bps / rate_units().scale()
}

/// Bytes per second in the chosen unit, 3-4 significant digits, no unit: "1235", "12.3".
/// The one spelling of a rate in every table.
pub fn rate(bps: f64) -> String {
    decimals(in_rate_units(bps))
}

/// A rate with its unit, for sentences: "1235 MB/s"; below one unit, in thousandths of it
/// ("kB/s" or "KiB/s") so a trickle does not read as zero.
pub fn rate_text(bps: f64) -> String {
    let u = rate_units();
    let x = bps / u.scale();
    if x.is_finite() && x != 0.0 && x.abs() < 1.0 {
        let (k, unit) = match u {
            RateUnits::Decimal => (1e3, "kB/s"),
            RateUnits::Binary => (1024.0, "KiB/s"),
        };
        return format!("{} {unit}", decimals(bps / k));
    }
    format!("{} {}", decimals(x), u.label())
}

/// A number with 0, 1 or 2 decimals depending on its size (1234, 123.4, 12.34, 1.23).
pub fn decimals(x: f64) -> String {
    if !x.is_finite() {
        return "-".to_string();
    }
    if x == 0.0 {
        return "0".to_string();
    }
    decimals_like(x, x)
}

/// The same number of decimals `decimals(reference)` would use, applied to `x`.
pub fn decimals_like(x: f64, reference: f64) -> String {
    let a = reference.abs();
    if !x.is_finite() {
        "-".to_string()
    } else if a >= 100.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_in_either_unit_system() {
        // The process-wide choice is left at its default here (tests share the process);
        // the unit's own figures are checked directly.
        assert_eq!(rate_units(), RateUnits::Decimal);
        assert_eq!(rate(900e6), "900");
        assert_eq!(rate_text(900e6), "900 MB/s");
        assert_eq!(rate_text(512.0), "0.51 kB/s");
        assert_eq!(rate_text(0.0), "0 MB/s");
        assert_eq!(decimals(900e6 / RateUnits::Binary.scale()), "858");
        assert_eq!(RateUnits::parse("binary"), Ok(RateUnits::Binary));
        assert_eq!(RateUnits::Binary.label(), "MiB/s");
        assert!(RateUnits::parse("si")
            .unwrap_err()
            .contains("--units binary"));
    }

    fn all(n: u64) -> [String; 5] {
        [
            ByteStyle::OPTION,
            ByteStyle::LABEL,
            ByteStyle::PROSE,
            ByteStyle::TENTHS,
            ByteStyle::WITNESS,
        ]
        .map(|s| format_bytes(n, s))
    }

    #[test]
    fn each_style_spells_sizes_its_way() {
        assert_eq!(all(512), ["512", "512B", "512 B", "512 B", "512 bytes"]);
        assert_eq!(all(4096), ["4k", "4K", "4 KiB", "4.0 KiB", "4.0 KiB"]);
        assert_eq!(
            all(1536 << 20),
            ["1.5g", "1.5G", "1.5 GiB", "1.5 GiB", "1.5 GiB"]
        );
        assert_eq!(
            all(12 << 20),
            ["12m", "12M", "12 MiB", "12.0 MiB", "12 MiB"]
        );
        // 1.25 MiB plus a byte: two decimals, one, one trimmed.
        assert_eq!(
            all((5 << 18) + 1),
            ["1.25m", "1.3M", "1.3 MiB", "1.3 MiB", "1.3 MiB"]
        );
        assert_eq!(all(0), ["0", "0B", "0 B", "0 B", "0 bytes"]);
        // Beyond TiB the unit stays TiB.
        assert_eq!(format_bytes(2048 << 40, ByteStyle::PROSE), "2048 TiB");
        assert_eq!(format_bytes(u64::MAX, ByteStyle::OPTION), "16777216t");
    }

    #[test]
    fn trims_only_decimals() {
        assert_eq!(trim_zeros("1.50".into()), "1.5");
        assert_eq!(trim_zeros("2.00".into()), "2");
        assert_eq!(trim_zeros("100".into()), "100");
    }

    #[test]
    fn percentages_in_each_style() {
        use super::{percent, PercentStyle::*};
        assert_eq!(percent(0.934, Adaptive), "93%");
        assert_eq!(percent(0.0042, Adaptive), "0.4%");
        assert_eq!(percent(0.05, Adaptive), "5%");
        assert_eq!(percent(0.0, Adaptive), "0%");
        assert_eq!(percent(f64::NAN, Adaptive), "-");
        assert_eq!(percent(0.081, Tenths), "8.1%");
        assert_eq!(percent(1.0, Tenths), "100.0%");
        assert_eq!(percent(0.001, WholeInside), "1%");
        assert_eq!(percent(0.999, WholeInside), "99%");
        assert_eq!(percent(0.0, WholeInside), "0%");
        assert_eq!(percent(1.0, WholeInside), "100%");
        assert_eq!(percent(0.456, WholeInside), "46%");
    }
}
