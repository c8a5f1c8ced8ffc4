//! How figures are written for people: throughput in MB/s (10^6 bytes, as disks are rated),
//! sizes in binary units (as candor's options take them), latency in µs, counts with k/M.
//! Every reporter uses these, so one figure is spelled the same everywhere. Sizes are the
//! result model's byte formatter in its table and prose spellings.

use candor_model::units::{format_bytes, trim_zeros, ByteStyle};

/// Bytes per second as MB/s, with as many decimals as make 3-4 significant digits.
pub fn mb_s(bps: f64) -> String {
    decimals(bps / 1e6)
}

/// A number with 0, 1 or 2 decimals depending on its size (1234, 123.4, 12.34, 1.23).
pub fn decimals(x: f64) -> String {
    if !x.is_finite() {
        return "-".to_string();
    }
    if x == 0.0 {
        return "0".to_string();
    }
    let a = x.abs();
    if a >= 100.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
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

/// Mean ± half the 95% confidence interval, in MB/s ("512 ± 12"); the mean alone for one run.
pub fn mb_s_ci(mean: f64, ci95: [f64; 2], n: u32) -> String {
    let m = mean / 1e6;
    if n < 2 {
        return decimals(m);
    }
    let half = ((ci95[1] - ci95[0]) / 2.0 / 1e6).abs();
    format!("{} ± {}", decimals(m), decimals_like(half, m))
}

/// A count or a rate of operations: 950, 12.3k, 1.23M.
pub fn count(x: f64) -> String {
    if !x.is_finite() {
        return "-".to_string();
    }
    let a = x.abs();
    if a >= 1e6 {
        format!("{}M", decimals(x / 1e6))
    } else if a >= 1e4 {
        format!("{}k", decimals(x / 1e3))
    } else {
        format!("{x:.0}")
    }
}

/// Nanoseconds as microseconds: 12.3, 1234; "-" when nothing was timed.
pub fn us(ns: f64) -> String {
    if ns <= 0.0 || !ns.is_finite() {
        return "-".to_string();
    }
    decimals(ns / 1e3)
}

/// A size in binary units, compact: 512, 4k, 64k, 1m, 1.5g (the spelling `--file-size` takes).
pub fn size(bytes: u64) -> String {
    format_bytes(bytes, ByteStyle::OPTION)
}

/// A size for prose: 4 KiB, 64 MiB, 1.5 GiB.
pub fn size_long(bytes: u64) -> String {
    format_bytes(bytes, ByteStyle::PROSE)
}

/// A share as a percentage: 0.934 -> "93%", 0.0042 -> "0.4%".
pub fn pct(share: f64) -> String {
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

/// A ratio: 1.00x, 0.53x, 12.4x.
pub fn ratio(x: f64) -> String {
    if !x.is_finite() {
        return "-".to_string();
    }
    if x >= 10.0 {
        format!("{x:.1}x")
    } else {
        format!("{x:.2}x")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn throughput_is_written_with_sensible_precision() {
        assert_eq!(mb_s(1_234_567_890.0), "1235");
        assert_eq!(mb_s(123_456_789.0), "123");
        assert_eq!(mb_s(12_345_678.0), "12.3");
        assert_eq!(mb_s(1_234_567.0), "1.23");
        assert_eq!(mb_s(0.0), "0");
        assert_eq!(mb_s_ci(500e6, [490e6, 510e6], 3), "500 ± 10");
        assert_eq!(mb_s_ci(50e6, [49e6, 51e6], 3), "50.0 ± 1.0");
        assert_eq!(mb_s_ci(50e6, [50e6, 50e6], 1), "50.0");
    }

    #[test]
    fn sizes_use_the_option_spelling() {
        assert_eq!(size(4096), "4k");
        assert_eq!(size(64 << 20), "64m");
        assert_eq!(size(3 << 29), "1.5g");
        assert_eq!(size(512), "512");
        assert_eq!(size_long(1536 << 20), "1.5 GiB");
        assert_eq!(size_long(4096), "4 KiB");
    }

    #[test]
    fn counts_latency_and_shares() {
        assert_eq!(count(950.0), "950");
        assert_eq!(count(12_345.0), "12.3k");
        assert_eq!(count(1_234_567.0), "1.23M");
        assert_eq!(us(12_345.0), "12.3");
        assert_eq!(us(0.0), "-");
        assert_eq!(pct(0.934), "93%");
        assert_eq!(pct(0.0042), "0.4%");
        assert_eq!(ratio(0.5312), "0.53x");
    }
}
