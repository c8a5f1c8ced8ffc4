//! The page around the sections: the style sheet, the document frame (with a policy that lets
//! the page fetch nothing), figures with captions, folds, the title line, the host section
//! (host, targets, command line), verdict badges and the axis label formats every chart uses.

use crate::svg::esc;
use crate::table;
use crate::units;
use crate::view;
use candor_model::{RunDoc, TestResult};
use std::fmt::Write;

pub(super) const CSS: &str = r#"
:root{--fg:#1b1f24;--muted:#57606a;--line:#d0d7de;--bg:#fff;--soft:#f6f8fa}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:var(--fg);background:var(--bg);margin:0;padding:20px 24px;max-width:1680px}
h1{font-size:24px;margin:0 0 4px}h2{font-size:19px;margin:32px 0 8px;padding-bottom:4px;border-bottom:1px solid var(--line)}
h3{font-size:15px;margin:20px 0 6px}
.sub{color:var(--muted);margin:0 0 12px}
code,.mono{font-family:ui-monospace,"DejaVu Sans Mono",Menlo,monospace;font-size:12.5px}
.cmd{background:var(--soft);border:1px solid var(--line);border-radius:6px;padding:8px 10px;overflow-x:auto;white-space:pre-wrap;word-break:break-all}
dl.host{display:grid;grid-template-columns:max-content 1fr;gap:2px 16px;margin:8px 0}
dl.host dt{color:var(--muted)}dl.host dd{margin:0}
table.res{border-collapse:collapse;margin:8px 0;font-size:13px}
table.res th,table.res td{padding:4px 6px;border-bottom:1px solid var(--line);text-align:right;vertical-align:top}
table.res th{background:var(--soft);font-weight:600}table.res td:not(.l):not(.expl){white-space:nowrap}
table.res td.l,table.res th.l{text-align:left}table.res td.nw{white-space:nowrap}
table.res tr.flag td{background:#fff4e5}
table.res td.expl{color:var(--muted);min-width:200px;max-width:460px;text-align:left;font-size:12px}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-size:12px;font-weight:600;color:#fff;white-space:nowrap}
.b-device{background:#0072B2}.b-cache{background:#E69F00;color:#1b1f24}.b-mixed{background:#56B4E9;color:#1b1f24}
.b-memory{background:#CC79A7}.b-unverified,.b-none{background:#8c959f}.b-failed{background:#D55E00}
.badge.bad{outline:2px solid #D55E00;outline-offset:1px}
.notes{margin:6px 0 0;padding-left:22px}.notes li{margin:2px 0}
.k-Contradiction,.k-Failed{color:#a33f00}.k-Disturbed,.k-Noisy{color:#7a5a00}
.warn{background:#fff8c5;border:1px solid #d4a72c;border-radius:6px;padding:8px 12px;margin:8px 0}
.charts{display:flex;flex-wrap:wrap;gap:18px;align-items:flex-start}
.charts>figure{flex:1 1 440px;max-width:max-content;min-width:0}.charts>figure>svg{display:block;width:100%;height:auto}.charts>figure>figcaption{contain:inline-size}
figure{margin:0;background:#fff;border:1px solid var(--line);border-radius:8px;padding:6px}
figcaption{color:var(--muted);font-size:12px;max-width:640px;padding:2px 6px 4px}
svg.chart text{font-family:system-ui,"DejaVu Sans",sans-serif}
svg .ttl{font-size:14px;font-weight:600;fill:#1b1f24}
svg .tk{font-size:11px;fill:#57606a}svg .al{font-size:12px;fill:#1b1f24}svg .lg{font-size:12px;fill:#1b1f24}
svg .grid{stroke:#eaeef2;stroke-width:1}svg .axis{stroke:#8c959f;stroke-width:1}
svg .cell{font-size:11px;fill:#1b1f24}svg .cell.inv{fill:#fff}svg .empty{fill:#f6f8fa}
.sig-yes{font-weight:600}.sig-no{color:var(--muted)}
footer{margin-top:40px;color:var(--muted);font-size:12px}
.wide{overflow-x:auto}
.cards{display:flex;flex-wrap:wrap;gap:10px 14px;align-items:flex-start}
.cards>details.grp{border:1px solid var(--line);border-radius:8px;padding:0 10px 6px}.cards>details.grp>summary{margin:8px 0 4px}
table.heat{border-collapse:collapse;font-size:11.5px;margin:4px 0}
table.heat th{font-weight:500;color:var(--muted);padding:1px 4px;text-align:right}
table.heat td{padding:1px 4px;text-align:right;min-width:40px;border:1px solid #fff}table.heat td a{color:inherit;text-decoration:none}
table.heat td.inv{color:#fff}table.heat td.bad{outline:2px solid #D55E00;outline-offset:-2px}
table.heat td.failed{background:#D55E00;color:#fff}table.heat td.none{background:var(--soft)}
details.rows>summary{cursor:pointer;margin:10px 0;color:#0969da}
.layout{display:grid;grid-template-columns:170px minmax(0,1fr);gap:20px;align-items:start}
nav.toc{position:sticky;top:0;max-height:100vh;overflow:auto;font-size:13px;padding:12px 12px 12px 0;border-right:1px solid var(--line)}
nav.toc ol{list-style:none;margin:4px 0 0;padding:0}nav.toc ol ol{padding-left:12px;margin:2px 0 6px;font-size:12px}
nav.toc li{margin:3px 0}nav.toc a{color:var(--fg);text-decoration:none}nav.toc ol ol a{color:var(--muted)}nav.toc a:hover{text-decoration:underline}
@media (max-width:1000px){.layout{display:block}nav.toc{position:static;max-height:none;border:0}}
details.sec>summary{cursor:pointer;margin:32px 0 8px;padding-bottom:4px;border-bottom:1px solid var(--line);font-size:19px}
details.sec>summary>h2{display:inline;margin:0;padding:0;border:0}
details.grp>summary{cursor:pointer;margin:20px 0 6px;font-size:15px}details.grp>summary>h3{display:inline;margin:0}
summary:hover{color:#0969da}
.multi{display:flex;flex-wrap:wrap;gap:8px;align-items:flex-start}.multi figure{padding:2px}.multi figcaption{max-width:280px;font-size:11.5px}
svg .ttl.s{font-size:12px}svg .hv{fill:#1b1f24;fill-opacity:0}svg .hv:hover{fill-opacity:.3}
tr:target td{background:#ddf4ff}
.vcount{display:flex;flex-wrap:wrap;gap:6px;align-items:center;margin:6px 0}
ul.attn{margin:6px 0;padding-left:20px}ul.attn li{margin:3px 0}.ok{color:#1a7f37;font-weight:600}
"#;

/// The page may fetch nothing: no script, no connection, no image or font from anywhere; only
/// its own inline style.
const POLICY: &str = "default-src 'none'; style-src 'unsafe-inline'";

pub(super) fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{POLICY}\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{}</title><style>{CSS}</style></head><body>\n{body}\n</body></html>\n",
        esc(title)
    )
}

pub(super) fn fig(svg: String, caption: &str) -> String {
    format!(
        "<figure>{svg}<figcaption>{}</figcaption></figure>",
        esc(caption)
    )
}

pub(super) fn mbps(x: f64) -> String {
    tick(x)
}

/// A tick label without trailing zeros: 0, 0.5, 10, 250.
pub(super) fn tick(x: f64) -> String {
    let a = x.abs();
    let s = if a > 0.0 && a < 1.0 {
        // Enough decimals for two significant digits.
        let d = (-a.log10()).ceil() as usize + 1;
        format!("{x:.d$}")
    } else {
        units::decimals(x)
    };
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

pub(super) fn lat_us(x: f64) -> String {
    if x >= 1e6 {
        format!("{}M", tick(x / 1e6))
    } else if x >= 1000.0 {
        format!("{}k", tick(x / 1000.0))
    } else {
        tick(x)
    }
}

pub(super) fn size_kib(x: f64) -> String {
    units::size((x * 1024.0).round() as u64)
}

pub(super) fn plain(x: f64) -> String {
    format!("{}", x.round() as u64)
}

pub(super) fn secs(x: f64) -> String {
    tick(x)
}

/// `1 - 10^-v` as a percentile label: 0 -> 0%, 1 -> 90%, 2 -> 99%, 3 -> 99.9%.
pub(super) fn nines(v: f64) -> String {
    let p = 100.0 * (1.0 - 10f64.powf(-v));
    let s = format!("{p:.2}");
    format!("{}%", s.trim_end_matches('0').trim_end_matches('.'))
}

/// The page's title line: candor, the host, the version and the dates, and a banner when the
/// run did not finish.
pub(super) fn title(doc: &RunDoc, b: &mut String) {
    let h = &doc.host;
    let _ = write!(
        b,
        "<h1>candor report{}</h1><p class=\"sub\">candor {} · started {}{}</p>",
        if h.hostname.is_empty() {
            String::new()
        } else {
            format!(" — {}", esc(&h.hostname))
        },
        esc(&doc.candor_version),
        esc(&doc.started_at),
        doc.finished_at
            .as_ref()
            .map(|f| format!(" · finished {}", esc(f)))
            .unwrap_or_default()
    );
    if !doc.complete {
        let _ = write!(
            b,
            "<div class=\"warn\"><b>Incomplete run:</b> {}. The results below are those measured before it stopped.</div>",
            esc(doc.stop_reason.as_deref().unwrap_or("the run did not finish"))
        );
    }
}

/// The run's section: host (CPU, caches, memory, OS, kernel), targets, MPI and the command line.
pub(super) fn host(doc: &RunDoc, s: &mut super::Section) {
    let h = &doc.host;
    s.open("run", "Host, targets and command");
    let mut b = String::new();
    b.push_str("<dl class=\"host\">");
    let mut row = |k: &str, v: String| {
        if !v.trim().is_empty() {
            let _ = write!(b, "<dt>{}</dt><dd>{}</dd>", esc(k), esc(&v));
        }
    };
    row(
        "CPU",
        if h.cpu_model.is_empty() {
            String::new()
        } else {
            format!("{} ({})", h.cpu_model, table::cores(h.cores, h.threads))
        },
    );
    row(
        "Caches",
        h.caches
            .iter()
            .map(|c| format!("L{} {} {}", c.level, c.kind, units::size_long(c.size_bytes)))
            .collect::<Vec<_>>()
            .join(", "),
    );
    row(
        "Memory",
        if h.ram_bytes > 0 {
            units::size_long(h.ram_bytes)
        } else {
            String::new()
        },
    );
    row("OS", h.os.clone());
    row("Kernel", h.kernel.clone());
    for t in &doc.targets {
        row("Target", format!("{}: {}", t.path, view::target_line(t)));
    }
    if let Some(m) = &doc.mpi {
        row(
            "MPI",
            format!(
                "{} on {} ({}), {}",
                table::plural(m.ranks, "rank"),
                table::plural(m.nodes, "node"),
                m.node_names.join(", "),
                if m.shared_file {
                    "one shared file"
                } else {
                    "one file per rank"
                }
            ),
        );
    }
    b.push_str("</dl>");
    if !doc.command_line.is_empty() {
        let _ = write!(
            b,
            "<div class=\"cmd mono\">{}</div>",
            esc(&doc.command_line.join(" "))
        );
    }
    s.push_str(&b);
}

pub(super) fn badge(r: &TestResult) -> String {
    if view::failed(r) {
        return "<span class=\"badge b-failed\">failed</span>".into();
    }
    match &r.witness {
        None => "<span class=\"badge b-none\">no witness</span>".into(),
        Some(w) => {
            let class = w.verdict.as_str();
            format!(
                "<span class=\"badge b-{class}{}\" title=\"{}\">{}</span>",
                if w.contradicts_intent { " bad" } else { "" },
                esc(&w.explanation),
                esc(&view::verdict_cell(r))
            )
        }
    }
}

/// A set's name for a chart title: without the target's path (the heading above the charts
/// carries it), so the title fits.
pub(super) fn short_title(name: &str) -> &str {
    name.split(" on ").next().unwrap_or(name)
}

/// The results that did not fail and that `keep` keeps, grouped under a name: the test,
/// what `detail` adds, the engine, O_DIRECT, and the target when the run has several; in
/// the order the results came.
pub(super) fn named_sets(
    doc: &RunDoc,
    keep: impl Fn(&TestResult) -> bool,
    detail: impl Fn(&TestResult) -> String,
) -> Vec<(String, Vec<&TestResult>)> {
    let several = view::groups(doc).len() > 1;
    let mut sets: Vec<(String, Vec<&TestResult>)> = Vec::new();
    for r in doc.results.iter().filter(|r| !view::failed(r) && keep(r)) {
        let mut name = r.test.clone();
        name.push_str(&detail(r));
        if !r.engine.is_empty() {
            name.push_str(&format!(", {}", r.engine));
        }
        if r.direct {
            name.push_str(", O_DIRECT");
        }
        if several {
            name.push_str(&format!(" on {}", r.target));
        }
        match sets.iter_mut().find(|(n, _)| *n == name) {
            Some((_, v)) => v.push(r),
            None => sets.push((name, vec![r])),
        }
    }
    sets
}
