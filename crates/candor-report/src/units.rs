//! How figures are written for people: throughput in the one rate unit chosen for the process
//! (MB/s, 10^6 bytes as disks are rated, unless `--units binary` asks for MiB/s), sizes in
//! binary units (as candor's options take them), latency in µs, counts with k/M. Every
//! reporter uses these, so one figure is spelled the same everywhere. Rates and sizes are
//! the result model's formatters.

pub use candor_model::units::{
    decimals, decimals_like, in_rate_units, rate, rate_label, rate_text, rate_units, RateUnits,
};
use candor_model::units::{format_bytes, ByteStyle};
use candor_model::Summary;

/// Bytes per second in the chosen rate unit (MB/s unless `--units binary`), with as many
/// decimals as make 3-4 significant digits.
pub fn mb_s(bps: f64) -> String {
    rate(bps)
}

/// Bytes in one unit of the chosen rate unit (10^6 or 2^20): a chart's throughput is bytes
/// per second over this.
pub fn scale() -> f64 {
    rate_units().scale()
}

/// Mean ± half the 95% confidence interval, in the rate unit ("512 ± 12"); the mean alone for one
/// run; the mean and the slowest and fastest repetition ("1000 (600-1400)") when so few
/// repetitions give an interval wider than the mean (see [`interval_needs`]).
pub fn mb_s_ci(t: &Summary) -> String {
    let m = in_rate_units(t.mean);
    if t.n < 2 {
        return decimals(m);
    }
    if interval_needs(t).is_some() {
        return format!(
            "{} ({}-{})",
            decimals(m),
            decimals_like(in_rate_units(t.min), m),
            decimals_like(in_rate_units(t.max), m)
        );
    }
    let half = in_rate_units((t.ci95[1] - t.ci95[0]) / 2.0).abs();
    format!("{} ± {}", decimals(m), decimals_like(half, m))
}

/// The most repetitions [`interval_needs`] names: beyond it the spread is the finding.
const MOST_REPETITIONS: u32 = 1000;

/// When the 95% interval of `t`'s repetitions is at least as wide as the mean (its low end
/// at or below zero, which no throughput is): the number of repetitions at which an
/// interval with the same spread (the same coefficient of variation) would be narrower
/// than the mean, that is the smallest n with t(0.975, n-1) x CV / sqrt(n) < 1. None when
/// the interval means something, or there is a single repetition.
pub fn interval_needs(t: &Summary) -> Option<u32> {
    let half = (t.ci95[1] - t.ci95[0]) / 2.0;
    let meaningless = t.n >= 2 && t.mean > 0.0 && half >= t.mean;
    if !meaningless {
        return None;
    }
    let cv = t.stddev / t.mean;
    let narrow = |n: u32| {
        candor_stats::student_t_quantile(0.95, (n - 1) as f64) * cv / (n as f64).sqrt() < 1.0
    };
    let after = t.n.saturating_add(1);
    Some(
        (after..=MOST_REPETITIONS)
            .find(|&n| narrow(n))
            .unwrap_or(MOST_REPETITIONS.max(after)),
    )
}

/// The low and high ends a chart draws for `t`, as the tables show it: the 95% interval,
/// the slowest and fastest repetition where the interval is wider than the mean, the mean
/// for one repetition.
pub fn shown_interval(t: &Summary) -> (f64, f64) {
    if t.n < 2 {
        (t.mean, t.mean)
    } else if interval_needs(t).is_some() {
        (t.min, t.max)
    } else {
        (t.ci95[0], t.ci95[1])
    }
}

/// The sentence under a table that shows a min-max instead of an interval: what the
/// parentheses are and the repetitions the widest of those intervals needs; None when every
/// interval is shown.
pub fn range_sentence<'a>(summaries: impl IntoIterator<Item = &'a Summary>) -> Option<String> {
    let mut first = None;
    let mut most = 0;
    for t in summaries {
        if let Some(n) = interval_needs(t) {
            first.get_or_insert(t);
            most = most.max(n);
        }
    }
    let t = first?;
    let m = in_rate_units(t.mean);
    Some(format!(
        "({}-{}): the slowest and fastest repetition, shown where so few repetitions give a 95% interval wider than the mean; the interval needs {most} repetitions (--repeat {most})",
        decimals_like(in_rate_units(t.min), m),
        decimals_like(in_rate_units(t.max), m)
    ))
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
    candor_model::units::percent(share, candor_model::units::PercentStyle::Adaptive)
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
        let sum = candor_stats::summarize;
        assert_eq!(mb_s_ci(&sum(&[490e6, 500e6, 510e6])), "500 ± 25");
        assert_eq!(mb_s_ci(&sum(&[49e6, 50e6, 51e6])), "50.0 ± 2.5");
        assert_eq!(mb_s_ci(&sum(&[50e6])), "50.0");
    }

    #[test]
    fn an_interval_wider_than_the_mean_gives_way_to_min_max() {
        // Two repetitions 600 and 1400 MB/s: the 95% interval, 1000 ± 5082, says nothing.
        let two = candor_stats::summarize(&[600e6, 1400e6]);
        assert!(two.ci95[0] < 0.0, "{:?}", two.ci95);
        assert_eq!(mb_s_ci(&two), "1000 (600-1400)");
        // With this spread (CV 57%) the interval is narrower than the mean from 4
        // repetitions: t(0.975, 3) x 0.566 / sqrt(4) = 0.90.
        assert_eq!(interval_needs(&two), Some(4));
        assert_eq!(shown_interval(&two), (600e6, 1400e6));
        let three = candor_stats::summarize(&[490e6, 500e6, 510e6]);
        assert_eq!(interval_needs(&three), None);
        assert_eq!(shown_interval(&three), (three.ci95[0], three.ci95[1]));
        assert_eq!(interval_needs(&candor_stats::summarize(&[5e6])), None);
        assert_eq!(
            range_sentence([&two, &three]).as_deref(),
            Some("(600-1400): the slowest and fastest repetition, shown where so few repetitions give a 95% interval wider than the mean; the interval needs 4 repetitions (--repeat 4)")
        );
        assert_eq!(range_sentence([&three]), None);
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
