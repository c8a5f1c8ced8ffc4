//! The verdicts at a glance, first on the page: per target, how many results the witness found
//! on the device, in the cache, mixed, in memory or unverified, and how many failed; then each
//! result that needs a look (its verdict contradicts what its test meant, or it failed), linked
//! to its row of the summary table, and how many were disturbed, noisy or unverified.

use super::page::badge;
use super::summary::{by_test, row_id, test_group_id, LARGE};
use super::Section;
use crate::svg::esc;
use crate::view::{self, NOISY_CV};
use candor_model::{RunDoc, TestResult, Verdict};
use std::fmt::Write;

/// At most this many results are listed one by one under a target; the rest are counted.
const MAX_LISTED: usize = 12;

/// The kind a result is counted under, and its badge class: the verdict, "failed" or "no
/// witness".
pub(super) fn kind(r: &TestResult) -> (&'static str, &'static str) {
    if view::failed(r) {
        return ("failed", "failed");
    }
    match &r.witness {
        None => ("no witness", "none"),
        Some(w) => match w.verdict {
            Verdict::Device => ("device", "device"),
            Verdict::Cache => ("cache", "cache"),
            Verdict::Mixed => ("mixed", "mixed"),
            Verdict::Memory => ("memory", "memory"),
            Verdict::Unverified => ("unverified", "unverified"),
        },
    }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

pub(super) fn verdicts(doc: &RunDoc, b: &mut Section) {
    let groups = view::groups(doc);
    if groups.iter().all(|g| g.results.is_empty()) {
        return;
    }
    b.open("verdicts", "Verdicts");
    b.push_str(
        "<p class=\"sub\">What the witness says each result measured: \
         the device, the page cache, both (mixed), memory (a filesystem in RAM), or nothing it could \
         verify. The list names every result whose verdict contradicts what its test meant to \
         measure, and every failure; each links to its row of the summary.</p>",
    );
    for (gi, g) in groups
        .iter()
        .enumerate()
        .filter(|(_, g)| !g.results.is_empty())
    {
        let mut counts: Vec<(&str, &str, usize)> = Vec::new();
        for r in &g.results {
            let (name, class) = kind(r);
            match counts.iter_mut().find(|(n, _, _)| *n == name) {
                Some(c) => c.2 += 1,
                None => counts.push((name, class, 1)),
            }
        }
        let _ = write!(
            b,
            "<div class=\"vcount\"><b><code>{}</code></b>: {}",
            esc(&g.path),
            plural(g.results.len(), "result", "results")
        );
        for (name, class, n) in &counts {
            let _ = write!(
                b,
                " <span class=\"badge b-{class}\" title=\"{}\">{name} {n}</span>",
                esc(&plural(*n, "result", "results"))
            );
        }
        b.push_str("</div>");
        let attention: Vec<&TestResult> = g
            .results
            .iter()
            .copied()
            .filter(|r| view::failed(r) || r.witness.as_ref().is_some_and(|w| w.contradicts_intent))
            .collect();
        let count = |f: &dyn Fn(&TestResult) -> bool| g.results.iter().filter(|r| f(r)).count();
        let disturbed = count(&|r| r.witness.as_ref().is_some_and(|w| w.disturbed));
        let noisy = count(&|r| r.throughput.n >= 2 && r.throughput.cv > NOISY_CV);
        let unverified = count(&|r| {
            !view::failed(r)
                && r.witness
                    .as_ref()
                    .is_some_and(|w| w.verdict == Verdict::Unverified)
        });
        if attention.is_empty() {
            b.push_str("<p class=\"ok\">Every result measured what its test meant to measure.</p>");
        } else if attention.len() > MAX_LISTED && g.results.len() > LARGE {
            // Too many to list one by one: how many per test, each linked to its group.
            let _ = write!(
                b,
                "<p>{} need a look (a verdict that contradicts what the test meant, or a failure); by test:",
                plural(attention.len(), "result", "results")
            );
            let mut links = Vec::new();
            for (ti, (test, rs)) in by_test(&g.results).iter().enumerate() {
                let n = rs
                    .iter()
                    .filter(|r| attention.iter().any(|a| std::ptr::eq(*a, **r)))
                    .count();
                if n > 0 {
                    links.push(format!(
                        " <a href=\"#{}\">{}</a> {n} of {}",
                        test_group_id(gi, ti),
                        esc(test),
                        rs.len()
                    ));
                }
            }
            b.push_str(&links.join(","));
            b.push_str(
                ". Their cells are outlined in the maps of the summary, and its notes say why.</p>",
            );
        } else {
            b.push_str("<ul class=\"attn\">");
            for r in attention.iter().take(MAX_LISTED) {
                let why = if view::failed(r) {
                    r.error
                        .clone()
                        .unwrap_or_else(|| "no reason recorded".into())
                } else {
                    r.witness
                        .as_ref()
                        .map(|w| w.explanation.clone())
                        .unwrap_or_default()
                };
                let _ = write!(
                    b,
                    "<li><a href=\"#{}\">{}</a> {} {}</li>",
                    row_id(doc, r),
                    esc(&view::label(r)),
                    badge(r),
                    esc(&why)
                );
            }
            if attention.len() > MAX_LISTED {
                let _ = write!(
                    b,
                    "<li>{} more: their rows of the summary are highlighted.</li>",
                    attention.len() - MAX_LISTED
                );
            }
            b.push_str("</ul>");
        }
        let mut also = Vec::new();
        if disturbed > 0 {
            also.push(format!(
                "{} disturbed by another process's traffic on the device",
                plural(disturbed, "result", "results")
            ));
        }
        if noisy > 0 {
            also.push(format!(
                "{} with repetitions that vary by more than {}",
                plural(noisy, "result", "results"),
                crate::units::pct(NOISY_CV)
            ));
        }
        if unverified > 0 {
            also.push(format!(
                "{} not verified",
                plural(unverified, "result", "results")
            ));
        }
        if !also.is_empty() {
            let _ = write!(
                b,
                "<p class=\"sub\">Also: {}; the notes under the summary say which.</p>",
                esc(&also.join("; "))
            );
        }
    }
}
