//! Byte counts written for people: one formatter, in the few spellings candor prints. Each
//! spelling is a `ByteStyle`; every crate that writes a size names one of them, so a size
//! reads the same wherever the same kind of text shows it.

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

impl ByteStyle {
    /// As the size options take them, for table cells: `512`, `4k`, `1.5m`, `1.25g`.
    pub const OPTION: ByteStyle = ByteStyle {
        units: ["", "k", "m", "g", "t"],
        sep: "",
        decimals: Decimals::Trimmed(2),
        exact_whole: true,
    };
    /// Short labels in candor's messages: `512B`, `4K`, `1.5M`, `64M`.
    pub const LABEL: ByteStyle = ByteStyle {
        units: ["B", "K", "M", "G", "T"],
        sep: "",
        decimals: Decimals::Fixed(1),
        exact_whole: true,
    };
    /// For prose: `512 B`, `4 KiB`, `1.5 GiB`.
    pub const PROSE: ByteStyle = ByteStyle {
        units: ["B", "KiB", "MiB", "GiB", "TiB"],
        sep: " ",
        decimals: Decimals::Trimmed(1),
        exact_whole: false,
    };
    /// The audit's sentences, always to a tenth: `512 B`, `4.0 KiB`, `1.5 GiB`.
    pub const TENTHS: ByteStyle = ByteStyle {
        units: ["B", "KiB", "MiB", "GiB", "TiB"],
        sep: " ",
        decimals: Decimals::Fixed(1),
        exact_whole: false,
    };
    /// The witness's explanations: `512 bytes`, `4.0 KiB`, `12 MiB`.
    pub const WITNESS: ByteStyle = ByteStyle {
        units: ["bytes", "KiB", "MiB", "GiB", "TiB"],
        sep: " ",
        decimals: Decimals::OneBelowTen,
        exact_whole: false,
    };
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
