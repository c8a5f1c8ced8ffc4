//! Witness timelines: application against device throughput over each test, and dirty memory.

use super::page::{badge, fig, mbps, secs};
use super::Section;
use super::MAX_TIMELINES;
use crate::svg::{self, esc, AxisKind, LineChart, Series};
use crate::view;
use candor_model::{RunDoc, TestResult};
use candor_procfs::paths::{MEMINFO, SELF_IO};
use std::fmt::Write;

/// A timeline this long shows a course over time; shorter ones are drawn after the others.
pub(super) const MIN_COURSE: usize = 5;

/// A rate of the timeline as steps: each sample is the rate over the interval since the one
/// before it (the first since the test began), so it is drawn flat over that interval rather
/// than as a slope between sampling instants.
pub(super) fn steps(
    tl: &[candor_model::TimelinePoint],
    f: impl Fn(&candor_model::TimelinePoint) -> f64,
) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(tl.len() * 2);
    let mut start = 0.0f64;
    for p in tl {
        let v = f(p);
        out.push((start.min(p.t), v));
        out.push((p.t, v));
        start = p.t;
    }
    out
}

/// A result's two timeline charts (application against device, dirty memory) at a size, and
/// the caption of the first.
fn charts(
    r: &TestResult,
    w: &candor_model::Witness,
    i: usize,
    width: f64,
    height: f64,
) -> (String, String, String) {
    let tl = &w.timeline;
    let mut series = Vec::new();
    let mut add = |name: &str, f: fn(&candor_model::TimelinePoint) -> f64, c: usize, wide: bool| {
        if tl.iter().any(|p| f(p) > 0.0) {
            series.push(Series {
                name: name.into(),
                points: steps(tl, |p| f(p) / crate::units::scale()),
                colour: Some(c),
                wide,
                ..Default::default()
            });
        }
    };
    // Application lines wide and pale underneath, device lines thin on top: where they
    // coincide, both stay visible.
    add("application write", |p| p.app_write_bps, 1, true);
    add("application read", |p| p.app_read_bps, 2, true);
    add("device write", |p| p.device_write_bps, 0, false);
    add("device read", |p| p.device_read_bps, 3, false);
    // I/O that does not pass through read(2)/write(2) (io_uring, mmap) is not counted in
    // the process's io counters, so the timeline has no application rate: the mean rate of the
    // repetition the timeline belongs to (the last one) stands in, dashed and named so.
    let sampled_app = tl
        .iter()
        .any(|p| p.app_read_bps > 0.0 || p.app_write_bps > 0.0);
    let mut caption = "Wide pale lines: what candor asked for; thin lines: what the device did. \
                       Each step is the rate over one sampling interval."
        .to_string();
    let last_rep = r
        .reps
        .last()
        .filter(|p| p.seconds > 0.0 && p.bytes > 0)
        .map(|p| p.bytes as f64 / p.seconds);
    let (app_mean, over) = match last_rep {
        Some(x) => (x, "the last repetition (this timeline's)"),
        None => (r.throughput.mean, "the test"),
    };
    if !sampled_app && app_mean > 0.0 && (w.app.read_bytes > 0 || w.app.write_bytes > 0) {
        let end = tl.last().map_or(0.0, |p| p.t);
        series.insert(
            0,
            Series {
                name: format!("application, mean over {over}"),
                points: vec![
                    (0.0, app_mean / crate::units::scale()),
                    (end, app_mean / crate::units::scale()),
                ],
                dashed: true,
                colour: Some(if w.app.write_bytes > 0 { 1 } else { 2 }),
                ..Default::default()
            },
        );
        caption = format!(
            "The application's own rate was not sampled: {} I/O does not pass through \
             read(2)/write(2), which {SELF_IO} counts. Dashed: its mean over {over}; thin \
             lines: what the device did, each step the rate over one sampling interval.",
            if r.engine.is_empty() {
                "this engine's"
            } else {
                r.engine.as_str()
            }
        );
    }
    let c1 = svg::line_chart(&LineChart {
        id: format!("tl-io-{i}"),
        title: if width < svg::SMALL {
            view::label(r)
        } else {
            format!("{}: application vs device", view::label(r))
        },
        x_label: "time since the test started, s".into(),
        y_label: crate::units::rate_label().into(),
        x_kind: AxisKind::Linear,
        y_kind: AxisKind::Linear,
        x_fmt: secs,
        y_fmt: mbps,
        series,
        width,
        height,
        markers: false,
    });
    let c2 = svg::line_chart(&LineChart {
        id: format!("tl-dirty-{i}"),
        title: if width < svg::SMALL {
            format!("{}: dirty", view::label(r))
        } else {
            format!("{}: dirty memory", view::label(r))
        },
        x_label: "time since the test started, s".into(),
        y_label: "dirty, MiB".into(),
        x_kind: AxisKind::Linear,
        y_kind: AxisKind::Linear,
        x_fmt: secs,
        y_fmt: mbps,
        series: vec![Series {
            name: "dirty".into(),
            points: tl
                .iter()
                .map(|p| (p.t, p.dirty_bytes as f64 / (1u64 << 20) as f64))
                .collect(),
            colour: Some(4),
            ..Default::default()
        }],
        width,
        height,
        markers: false,
    });
    (c1, c2, caption)
}

pub(super) fn timelines(doc: &RunDoc, b: &mut Section) {
    let mut with: Vec<&TestResult> = doc
        .results
        .iter()
        .filter(|r| r.witness.as_ref().is_some_and(|w| w.timeline.len() >= 2))
        .collect();
    if with.is_empty() {
        return;
    }
    // Contradicted verdicts first (they are the ones a reader needs to see), then timelines
    // long enough to show a course over time, disturbed ones first; a test over in one or two
    // samples comes last.
    with.sort_by_key(|r| {
        let w = r.witness.as_ref();
        (
            !w.is_some_and(|w| w.contradicts_intent),
            w.map_or(0, |w| w.timeline.len()) < MIN_COURSE,
            !w.is_some_and(|w| w.disturbed),
        )
    });
    let total = with.len();
    with.truncate(MAX_TIMELINES);
    b.open("timeline", "What the kernel saw over time");
    b.push_str("\
        <p class=\"sub\">Sampled by the witness during each test: what candor's process moved (application) against what reached \
        the block device, and dirty page-cache memory waiting to be written back. A gap between the lines is the page cache at work.</p>");
    // Contradicted verdicts get their charts full size with the witness's explanation; the
    // others are small multiples, one grid per test.
    let (full, small): (Vec<&TestResult>, Vec<&TestResult>) = with
        .iter()
        .partition(|r| r.witness.as_ref().is_some_and(|w| w.contradicts_intent));
    let mut g = 0;
    for r in &full {
        let Some(w) = &r.witness else { continue };
        let (c1, c2, caption) = charts(r, w, g, 620.0, 300.0);
        let body = format!(
            "<p>{}</p><div class=\"charts\">{}{}</div>",
            esc(&w.explanation),
            fig(c1, &caption),
            fig(
                c2,
                &format!(
                    "Dirty: written by applications, not yet on the device ({MEMINFO} Dirty)."
                )
            )
        );
        b.group(
            &format!("g-tl-{g}"),
            &view::label(r),
            &format!(" {}", badge(r)),
            &body,
            true,
        );
        g += 1;
    }
    let mut tests: Vec<&str> = Vec::new();
    for r in &small {
        if !tests.contains(&r.test.as_str()) {
            tests.push(&r.test);
        }
    }
    let key = |c: usize, n: &str, wide: bool| {
        format!(
            "<span style=\"color:{}{}\">&#9644; {n}</span>",
            svg::colour(c),
            if wide { ";opacity:.6" } else { "" }
        )
    };
    for test in tests {
        let rs: Vec<&&TestResult> = small.iter().filter(|r| r.test == test).collect();
        // The legend names the lines the group's charts draw.
        let drawn = |f: fn(&candor_model::TimelinePoint) -> f64| {
            rs.iter().any(|r| {
                r.witness
                    .as_ref()
                    .is_some_and(|w| w.timeline.iter().any(|p| f(p) > 0.0))
            })
        };
        let mut app = Vec::new();
        if drawn(|p| p.app_write_bps) {
            app.push(key(1, "application write", true));
        }
        if drawn(|p| p.app_read_bps) {
            app.push(key(2, "application read", true));
        }
        let mut dev = Vec::new();
        if drawn(|p| p.device_write_bps) {
            dev.push(key(0, "device write", false));
        }
        if drawn(|p| p.device_read_bps) {
            dev.push(key(3, "device read", false));
        }
        let legend = format!(
            "Application vs device, {}: {} (wide, pale: what candor asked for) against {} (thin: what \
             the device did), each step the rate over one sampling interval; each chart on its own \
             scale. Hover over a chart for the witness's explanation, over a line for its figures.",
            crate::units::rate_label(),
            if app.is_empty() {
                "no application rate sampled".to_string()
            } else {
                app.join(" ")
            },
            if dev.is_empty() {
                "no device traffic".to_string()
            } else {
                dev.join(" ")
            }
        );
        let (mut io, mut dirty) = (String::new(), String::new());
        let mut notes = Vec::new();
        for r in &rs {
            let Some(w) = &r.witness else { continue };
            let (c1, c2, caption) = charts(r, w, g, 300.0, 200.0);
            if caption.starts_with("The application's own rate was not sampled") {
                notes.push(caption);
            }
            let _ = write!(
                io,
                "<figure title=\"{}\">{c1}<figcaption>{}</figcaption></figure>",
                esc(&w.explanation),
                badge(r)
            );
            let _ = write!(dirty, "<figure>{c2}</figure>");
            g += 1;
        }
        notes.sort();
        notes.dedup();
        let body = format!(
            "<p class=\"sub\">{legend}{}</p><div class=\"multi\">{io}</div>\
             <details><summary>Dirty memory, one chart per result (MiB; {MEMINFO} Dirty: written, not yet on the device)</summary>\
             <div class=\"multi\">{dirty}</div></details>",
            notes
                .iter()
                .map(|n| format!(" {}", esc(n)))
                .collect::<String>()
        );
        b.group(
            &format!("g-tl-{g}"),
            test,
            &format!(
                " <small class=\"sub\">({})</small>",
                if rs.len() == 1 {
                    "1 result".to_string()
                } else {
                    format!("{} results", rs.len())
                }
            ),
            &body,
            true,
        );
        g += 1;
    }
    if total > with.len() {
        let _ = write!(
            b,
            "<p class=\"sub\">{} more timelines are in the JSON result.</p>",
            total - with.len()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candor_model::TimelinePoint;

    #[test]
    fn timeline_rates_are_flat_over_their_interval() {
        let tl: Vec<TimelinePoint> = [(0.1, 5.0), (0.2, 7.0)]
            .iter()
            .map(|(t, r)| TimelinePoint {
                t: *t,
                device_write_bps: *r,
                ..Default::default()
            })
            .collect();
        assert_eq!(
            steps(&tl, |p| p.device_write_bps),
            vec![(0.0, 5.0), (0.1, 5.0), (0.1, 7.0), (0.2, 7.0)]
        );
    }
}
