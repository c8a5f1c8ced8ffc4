//! Steady state, as the SNIA Solid State Storage Performance Test Specification (PTS)
//! defines it, judged on the application's figure and on the device's: the criteria and
//! their parameters as pure functions. The runner feeds them each round's figures; nothing
//! here measures (docs/methodology.md, "Steady state, preconditioning and warm-up").
//!
//! A window of the last `window` rounds is steady on one figure when
//! - its range (max - min) is within `range` of the window's average, and
//! - the least-squares line through it moves by at most `slope` of the average across the
//!   window (|slope per round| x (rounds - 1)).
//!
//! The test is steady when the window is steady on the application's throughput and on the
//! device's, measured by the witness over the same rounds. When the device moved less than
//! `IDLE_SHARE` of what the application did, it was idle: the application's figure alone is
//! judged and the steady state is the page cache's.

use candor_model::{SteadyBasis, SteadyRound, SteadyState, WindowFit, Witness};

/// The defaults: PTS's five-round window, 20% range and 10% slope excursion; rounds of 5 s
/// (PTS's are a minute), at most 25 of them (PTS's limit).
pub const WINDOW: u32 = 5;
pub const RANGE: f64 = 0.20;
pub const SLOPE: f64 = 0.10;
pub const ROUND: &str = "5s";
pub const MAX_ROUNDS: u32 = 25;
/// Below this share of the application's figure the device counts as idle.
pub const IDLE_SHARE: f64 = 0.05;

/// The criteria and the rounds' shape, as `--steady-state` gives them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Criteria {
    pub window: u32,
    /// Largest range, as a share of the window's average.
    pub range: f64,
    /// Largest excursion of the least-squares line across the window, as a share of the
    /// window's average.
    pub slope: f64,
    /// Each round's length: a time-based repetition.
    pub round_ns: u64,
    pub max_rounds: u32,
}

impl Default for Criteria {
    fn default() -> Self {
        Criteria {
            window: WINDOW,
            range: RANGE,
            slope: SLOPE,
            round_ns: 5_000_000_000,
            max_rounds: MAX_ROUNDS,
        }
    }
}

/// `window=5,range=20%,slope=10%,round=5s,max=25`, any of them, in any order; "" is
/// the defaults.
pub fn parse(text: &str) -> Result<Criteria, String> {
    let mut c = Criteria::default();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let Some((key, value)) = part.split_once('=') else {
            return Err(format!(
                "'{part}' is not a parameter: write e.g. --steady-state=window=5,range=20%,slope=10%,round=5s,max=25"
            ));
        };
        let (key, value) = (key.trim(), value.trim());
        match key {
            "window" => c.window = count(key, value, 2)?,
            "max" => c.max_rounds = count(key, value, 1)?,
            "range" => c.range = share(key, value)?,
            "slope" => c.slope = share(key, value)?,
            "round" => {
                c.round_ns = crate::plan::options::parse_duration(value)
                    .map_err(|e| format!("round: {e}"))?
                    .as_nanos() as u64
            }
            _ => {
                return Err(format!(
                "'{key}' is not a steady-state parameter: use window, range, slope, round or max"
            ))
            }
        }
    }
    if c.max_rounds < c.window {
        return Err(format!(
            "max={} rounds can never fill a window of {}: raise max or lower window",
            c.max_rounds, c.window
        ));
    }
    Ok(c)
}

fn count(key: &str, value: &str, min: u32) -> Result<u32, String> {
    match value.parse::<u32>() {
        Ok(v) if (min..=10_000).contains(&v) => Ok(v),
        _ => Err(format!(
            "{key}={value} is not a whole number of rounds from {min} to 10000"
        )),
    }
}

fn share(key: &str, value: &str) -> Result<f64, String> {
    let v: Option<f64> = value.strip_suffix('%').unwrap_or(value).trim().parse().ok();
    match v {
        Some(v) if v > 0.0 && v <= 100.0 => Ok(v / 100.0),
        _ => Err(format!(
            "{key}={value} is not a percentage: write e.g. {key}=20%"
        )),
    }
}

/// The criteria applied to one figure's window (`first_round` is the window's first round,
/// counted from 1). A window whose average is not above zero is never steady (its shares
/// are then 0).
pub fn fit(values: &[f64], first_round: u32, range_limit: f64, slope_limit: f64) -> WindowFit {
    let n = values.len();
    let last_round = first_round + n.saturating_sub(1) as u32;
    if n == 0 {
        return WindowFit {
            first_round,
            last_round: first_round,
            ..Default::default()
        };
    }
    let nf = n as f64;
    let average = values.iter().sum::<f64>() / nf;
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    // Least squares over x = 0..n-1 (rounds relative to the window's first).
    let xm = (nf - 1.0) / 2.0;
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for (i, y) in values.iter().enumerate() {
        let dx = i as f64 - xm;
        sxy += dx * (y - average);
        sxx += dx * dx;
    }
    let slope = if sxx > 0.0 { sxy / sxx } else { 0.0 };
    let intercept = average - slope * xm;
    let range = max - min;
    let slope_excursion = slope.abs() * (nf - 1.0);
    let (range_share, slope_share) = if average > 0.0 {
        (range / average, slope_excursion / average)
    } else {
        (0.0, 0.0)
    };
    WindowFit {
        first_round,
        last_round,
        average,
        min,
        max,
        range,
        range_share,
        slope,
        intercept,
        slope_excursion,
        slope_share,
        steady: average > 0.0 && range_share <= range_limit && slope_share <= slope_limit,
    }
}

/// The judgement of the last window of `rounds`.
#[derive(Clone, Debug, PartialEq)]
pub struct Judgement {
    pub steady: bool,
    pub basis: SteadyBasis,
    pub device_idle: bool,
    pub app: WindowFit,
    pub device: Option<WindowFit>,
}

/// Judges the last `c.window` rounds; None while there are fewer rounds than that.
pub fn judge(rounds: &[SteadyRound], c: &Criteria) -> Option<Judgement> {
    let w = c.window as usize;
    if w == 0 || rounds.len() < w {
        return None;
    }
    let win = &rounds[rounds.len() - w..];
    let first = win[0].round;
    let app_values: Vec<f64> = win.iter().map(|r| r.app_bps).collect();
    let app = fit(&app_values, first, c.range, c.slope);
    let device_values: Option<Vec<f64>> = win.iter().map(|r| r.device_bps).collect();
    let device = device_values.map(|v| fit(&v, first, c.range, c.slope));
    let (basis, device_idle, steady) = match &device {
        None => (SteadyBasis::Application, false, app.steady),
        Some(d) if d.average < IDLE_SHARE * app.average => {
            (SteadyBasis::PageCache, true, app.steady)
        }
        Some(d) => (SteadyBasis::Device, false, app.steady && d.steady),
    };
    Some(Judgement {
        steady,
        basis,
        device_idle,
        app,
        device,
    })
}

/// The device's throughput in the test's direction over `seconds`, from a round's witness:
/// the process's own device bytes when eBPF tells them apart, else every byte the target's
/// device moved (begin to the end of the flush). None when the witness saw no device.
pub fn device_bps(w: &Witness, reads: bool, writes: bool, seconds: f64) -> Option<f64> {
    let facts = w.extra.facts.as_ref()?;
    if !matches!(facts.placement, candor_model::Placement::Device { .. }) || seconds <= 0.0 {
        return None;
    }
    let (r, wr) = match &facts.exact {
        Some(e) => (e.own_read_total, e.own_write_total),
        None => (
            facts.device_total.read_bytes,
            facts.device_total.write_bytes,
        ),
    };
    let bytes = if reads { r } else { 0 } + if writes { wr } else { 0 };
    Some(bytes as f64 / seconds)
}

/// The saved verdict: every round, the judgement of the steady window (or of the last one)
/// and its sentence.
pub fn conclude(rounds: Vec<SteadyRound>, judged: Option<Judgement>, c: &Criteria) -> SteadyState {
    let attained = judged.as_ref().is_some_and(|j| j.steady);
    let round = judged
        .as_ref()
        .filter(|j| j.steady)
        .map(|j| j.app.last_round);
    let mut s = SteadyState {
        attained,
        round,
        rounds_run: rounds.len() as u32,
        window: c.window,
        range_limit: c.range,
        slope_limit: c.slope,
        round_seconds: c.round_ns as f64 / 1e9,
        max_rounds: c.max_rounds,
        basis: judged
            .as_ref()
            .map_or(SteadyBasis::Application, |j| j.basis),
        device_idle: judged.as_ref().is_some_and(|j| j.device_idle),
        app: judged.as_ref().map(|j| j.app.clone()),
        device: judged.as_ref().and_then(|j| j.device.clone()),
        rounds,
        explanation: String::new(),
    };
    s.explanation = explain(&s);
    s
}

/// In the rate unit the reports print throughput in, to a tenth.
fn rate(bps: f64) -> String {
    let u = candor_model::units::rate_units();
    format!("{:.1} {}", bps / u.scale(), u.label())
}

fn pct(share: f64) -> String {
    candor_model::units::percent(share, candor_model::units::PercentStyle::Tenths)
}

/// "412.0 MB/s average, 8.1% range, 2.3% slope excursion".
fn figures(f: &WindowFit) -> String {
    format!(
        "{} average, {} range, {} slope excursion",
        rate(f.average),
        pct(f.range_share),
        pct(f.slope_share)
    )
}

/// The verdict in one sentence.
pub fn explain(s: &SteadyState) -> String {
    let Some(app) = &s.app else {
        return format!(
            "not steady: {} round(s) ran, fewer than the {}-round window",
            s.rounds_run, s.window
        );
    };
    let rounds = format!("rounds {}-{}", app.first_round, app.last_round);
    let limits = format!(
        "limits {} range and {} slope excursion",
        pct(s.range_limit),
        pct(s.slope_limit)
    );
    let device = s.device.as_ref().map(figures);
    if s.attained {
        let round = s.round.unwrap_or(app.last_round);
        match (s.basis, device) {
            (SteadyBasis::Device, Some(d)) => format!(
                "steady at round {round} on the application's figure and the device's: {rounds} had {} (application) and {d} (device), {limits}",
                figures(app)
            ),
            (SteadyBasis::PageCache, _) => format!(
                "steady at round {round} on the application's figure ({rounds}: {}), but the device was idle: this is the page cache's steady state, not the device's",
                figures(app)
            ),
            _ => format!(
                "steady at round {round} on the application's figure alone ({rounds}: {}): the witness gave no device figure to judge",
                figures(app)
            ),
        }
    } else {
        let mut why = format!("the application's figure had {}", figures(app));
        match (s.basis, device) {
            (SteadyBasis::Device, Some(d)) => why.push_str(&format!(", the device's {d}")),
            (SteadyBasis::PageCache, _) => why.push_str(" (the device was idle)"),
            _ => why.push_str(" (no device figure)"),
        }
        format!(
            "not steady after {} round(s), the most allowed: the last window, {rounds}, {why}; {limits}",
            s.rounds_run
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    fn rounds(app: &[f64], device: Option<&[f64]>) -> Vec<SteadyRound> {
        app.iter()
            .enumerate()
            .map(|(i, &a)| SteadyRound {
                round: i as u32 + 1,
                app_bps: a,
                device_bps: device.map(|d| d[i]),
                seconds: 1.0,
                started_s: i as f64,
            })
            .collect()
    }

    #[test]
    fn a_flat_window_with_one_dip_is_steady() {
        // Average 100, range 105 - 95 = 10 (10%). Slope: x - 2 = -2..2 against y - 100 =
        // 0, 5, -5, 0, 0: the products sum to (-1)(5) + (0)(-5) = -5, sum((x-2)^2) = 10, so
        // -0.5 per round, an excursion of 0.5 x 4 = 2 (2%).
        let f = fit(&[100.0, 105.0, 95.0, 100.0, 100.0], 3, 0.2, 0.1);
        assert_eq!((f.first_round, f.last_round), (3, 7));
        assert!(close(f.average, 100.0));
        assert!(close(f.range, 10.0) && close(f.range_share, 0.10));
        assert!(close(f.slope, -0.5), "{}", f.slope);
        assert!(close(f.slope_excursion, 2.0) && close(f.slope_share, 0.02));
        // The line's value at the window's first round: 100 - (-0.5)(2) = 101.
        assert!(close(f.intercept, 101.0));
        assert!(f.steady);
    }

    #[test]
    fn a_rising_window_fails_both_criteria() {
        // 80..120 by 10: average 100, range 40 (40%), slope 10, excursion 40 (40%).
        let f = fit(&[80.0, 90.0, 100.0, 110.0, 120.0], 1, 0.2, 0.1);
        assert!(close(f.range_share, 0.4));
        assert!(close(f.slope, 10.0) && close(f.slope_share, 0.4));
        assert!(!f.steady);
    }

    #[test]
    fn range_and_slope_are_separate_criteria() {
        // A slow climb: 95, 97.5, 100, 102.5, 105. Range 10 (10%) within 20%, but the line
        // moves 2.5 x 4 = 10 (10%): exactly the limit, still steady; at 9% it is not.
        let v = [95.0, 97.5, 100.0, 102.5, 105.0];
        let f = fit(&v, 1, 0.2, 0.1);
        assert!(close(f.range_share, 0.1) && close(f.slope_share, 0.1));
        assert!(f.steady);
        assert!(!fit(&v, 1, 0.2, 0.09).steady, "slope excursion over 9%");
        // A spike without a trend: 100, 100, 130, 100, 100. Average 106, range 30 (28.3%),
        // slope 0 (the spike is in the middle): range alone fails.
        let f = fit(&[100.0, 100.0, 130.0, 100.0, 100.0], 1, 0.2, 0.1);
        assert!(close(f.average, 106.0));
        assert!(close(f.range_share, 30.0 / 106.0));
        assert!(close(f.slope, 0.0));
        assert!(!f.steady);
    }

    #[test]
    fn a_window_at_zero_is_never_steady() {
        let f = fit(&[0.0, 0.0, 0.0], 1, 0.2, 0.1);
        assert!(!f.steady);
        assert_eq!((f.range_share, f.slope_share), (0.0, 0.0));
    }

    #[test]
    fn both_figures_must_settle_unless_the_device_is_idle() {
        let c = Criteria {
            window: 3,
            ..Criteria::default()
        };
        // Too few rounds: no judgement yet.
        assert!(judge(&rounds(&[100.0, 100.0], None), &c).is_none());
        // The application settles, the device does not (writeback catching up: 50, 100, 150).
        let app = [90.0, 100.0, 100.0, 100.0];
        let j = judge(&rounds(&app, Some(&[0.0, 50.0, 100.0, 150.0])), &c).unwrap();
        assert_eq!(j.basis, SteadyBasis::Device);
        assert!(j.app.steady && !j.device.as_ref().unwrap().steady && !j.steady);
        assert_eq!(j.app.first_round, 2, "the window is the last three rounds");
        // Both settle.
        let j = judge(&rounds(&app, Some(&[99.0, 98.0, 101.0, 99.0])), &c).unwrap();
        assert!(j.steady && j.basis == SteadyBasis::Device && !j.device_idle);
        // The device idle (under 5% of the application's figure): the page cache's.
        let j = judge(&rounds(&app, Some(&[0.0, 1.0, 7.0, 0.5])), &c).unwrap();
        assert!(j.steady && j.device_idle);
        assert_eq!(j.basis, SteadyBasis::PageCache);
        // One round without a device figure: the application's figure alone.
        let mut r = rounds(&app, Some(&[99.0, 98.0, 101.0, 99.0]));
        r[3].device_bps = None;
        let j = judge(&r, &c).unwrap();
        assert!(j.steady && j.device.is_none());
        assert_eq!(j.basis, SteadyBasis::Application);
    }

    #[test]
    fn the_verdict_names_the_round_and_the_basis() {
        let c = Criteria {
            window: 3,
            max_rounds: 3,
            ..Criteria::default()
        };
        let r = rounds(&[100.0, 101.0, 99.0], Some(&[100.0, 100.0, 100.0]));
        let s = conclude(r.clone(), judge(&r, &c), &c);
        assert!(s.attained);
        assert_eq!((s.round, s.rounds_run), (Some(3), 3));
        assert!(
            s.explanation
                .starts_with("steady at round 3 on the application's figure and the device's"),
            "{}",
            s.explanation
        );
        let r = rounds(&[50.0, 100.0, 150.0], Some(&[50.0, 100.0, 150.0]));
        let s = conclude(r.clone(), judge(&r, &c), &c);
        assert!(!s.attained && s.round.is_none());
        assert!(
            s.explanation.starts_with("not steady after 3 round(s)"),
            "{}",
            s.explanation
        );
        assert!(s.explanation.contains("100.0% range"), "{}", s.explanation);
        let s = conclude(Vec::new(), None, &c);
        assert!(!s.attained);
        assert!(s.explanation.contains("fewer than the 3-round window"));
    }

    #[test]
    fn parameters_parse_with_defaults_and_refuse_in_one_sentence() {
        assert_eq!(parse("").unwrap(), Criteria::default());
        let c = parse("window=3, range=15%,slope=5,round=250ms,max=9").unwrap();
        assert_eq!(c.window, 3);
        assert!(close(c.range, 0.15) && close(c.slope, 0.05));
        assert_eq!((c.round_ns, c.max_rounds), (250_000_000, 9));
        for (bad, needle) in [
            ("window", "not a parameter"),
            ("speed=3", "not a steady-state parameter"),
            ("window=1", "from 2 to 10000"),
            ("range=0%", "not a percentage"),
            ("slope=abc", "not a percentage"),
            ("round=fast", "round:"),
            ("window=5,max=3", "can never fill a window of 5"),
        ] {
            let e = parse(bad).unwrap_err();
            assert!(e.contains(needle), "{bad}: {e}");
            assert_eq!(e.lines().count(), 1);
        }
    }
}
