//! A comparison written out: `candor compare`'s formats (table, Markdown, CSV, JSON, and the
//! gate's summary for a CI page), and the pieces the HTML page and the gate take from it (the
//! side's line, the side-by-side grid, the study table).

use super::{Comparison, Side, Significance, ALPHA};
use crate::grid::{Align, Grid};
use crate::study::{self, StudySide};
use crate::units;
use crate::view;
use candor_model::TestResult;

/// Output formats of `candor compare`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompareFormat {
    Table,
    Markdown,
    Csv,
    Json,
    /// A Markdown summary for a CI job's page, the gate's outcome first (`gate::github`).
    Github,
}

impl CompareFormat {
    pub const ALL: &'static [(&'static str, CompareFormat)] = &[
        ("table", CompareFormat::Table),
        ("markdown", CompareFormat::Markdown),
        ("csv", CompareFormat::Csv),
        ("json", CompareFormat::Json),
        ("github", CompareFormat::Github),
    ];

    /// The names, for messages ("table, markdown, csv, json, github").
    pub fn names() -> String {
        Self::ALL
            .iter()
            .map(|(n, _)| *n)
            .collect::<Vec<_>>()
            .join(", ")
    }

    pub fn parse(s: &str) -> Option<CompareFormat> {
        Self::ALL.iter().find(|(n, _)| *n == s).map(|(_, f)| *f)
    }

    /// `candor compare --format NAME`: the format, or the sentence every `--format` gives.
    pub fn from_arg(name: &str) -> Result<CompareFormat, String> {
        Self::parse(name).ok_or_else(|| crate::not_a_format(name, &Self::names()))
    }
}

pub fn render(c: &Comparison, format: CompareFormat) -> String {
    render_gated(c, format, &crate::gate::Gate::default())
}

/// `render`, with the gate's thresholds for the formats that report its outcome.
pub fn render_gated(c: &Comparison, format: CompareFormat, gate: &crate::gate::Gate) -> String {
    let out = match format {
        CompareFormat::Github => crate::gate::github(c, gate),
        CompareFormat::Table => text(c, false),
        CompareFormat::Markdown => text(c, true),
        CompareFormat::Csv => csv(c),
        CompareFormat::Json => return json(c),
    };
    // No control character from a file acts on the terminal (`escape::terminal`).
    crate::escape::terminal(&out).into_owned()
}

/// The side in one line, each thing said once: "A  /mnt/lab/ext4 in run.json: ext4
/// (rw,relatime) on loop0: loop device backed by ...", or without " in FILE" for the targets
/// of the run being reported.
pub fn side_line(s: &Side) -> String {
    let mut l = format!("{}  {}", s.letter, side_name(s));
    if let Some(t) = &s.target {
        l.push_str(&format!(": {}", view::target_line(t)));
    }
    if let Some(n) = s.mpi_ranks {
        l.push_str(&format!(", MPI {n} ranks"));
    }
    l
}

/// "/mnt/lab/ext4 in run.json", "/mnt/lab/ext4" (this run), or the file alone when the
/// target's path is unknown.
pub fn side_name(s: &Side) -> String {
    match (s.path.is_empty(), s.file.as_str()) {
        (true, _) => s.source.clone(),
        (false, "this run" | "") => s.path.clone(),
        (false, f) => format!("{} in {f}", s.path),
    }
}

/// True when any side's result in any row has a measured write amplification.
fn any_amplification(c: &Comparison) -> bool {
    c.rows
        .iter()
        .flat_map(|r| r.cells.iter().flatten())
        .any(|cell| {
            cell.result
                .witness
                .as_ref()
                .is_some_and(|w| w.write_amplification.is_some())
        })
}

/// A result's write amplification as a cell ("2.95x"), empty when not measured.
pub fn amplification_cell(r: &TestResult) -> String {
    r.witness
        .as_ref()
        .and_then(|w| w.write_amplification)
        .map(units::ratio)
        .unwrap_or_default()
}

/// The side-by-side grid: per side its MB/s with CI, its write amplification (when any result
/// has one), the witness's verdict and, after the first side, ratio and significance.
pub fn side_grid(c: &Comparison) -> Grid {
    let wa = any_amplification(c);
    let mut cols: Vec<(String, Align)> = vec![
        ("test".into(), Align::Left),
        ("file".into(), Align::Right),
        ("rec".into(), Align::Right),
        ("thr".into(), Align::Right),
        ("QD".into(), Align::Right),
    ];
    for (i, s) in c.sides.iter().enumerate() {
        cols.push((
            format!("{} {}", s.letter, units::rate_label()),
            Align::Right,
        ));
        if wa {
            cols.push((format!("{} WA", s.letter), Align::Right));
        }
        cols.push((format!("{} verdict", s.letter), Align::Left));
        if i > 0 {
            cols.push((format!("{}/A", s.letter), Align::Right));
            cols.push(("significant".into(), Align::Left));
        }
    }
    let refs: Vec<(&str, Align)> = cols.iter().map(|(h, a)| (h.as_str(), *a)).collect();
    let mut g = Grid::new(&refs);
    for row in &c.rows {
        let k = &row.key;
        let mut cells = vec![
            k.test.clone(),
            units::size(k.file_size),
            units::size(k.record_size),
            k.threads.to_string(),
            k.iodepth.to_string(),
        ];
        for (i, cell) in row.cells.iter().enumerate() {
            match cell {
                Some(cell) => {
                    let r = &cell.result;
                    let failed = view::failed(r);
                    cells.push(if failed {
                        "failed".to_string()
                    } else {
                        units::mb_s_ci(&r.throughput)
                    });
                    if wa {
                        cells.push(amplification_cell(r));
                    }
                    cells.push(if failed {
                        "-".into()
                    } else {
                        view::verdict_cell(r)
                    });
                    if i > 0 {
                        cells.push(cell.ratio.map(units::ratio).unwrap_or("-".into()));
                        cells.push(cell.significance.cell());
                    }
                }
                None => {
                    cells.push("-".into());
                    if wa {
                        cells.push(String::new());
                    }
                    cells.push(String::new());
                    if i > 0 {
                        cells.push(String::new());
                        cells.push(String::new());
                    }
                }
            }
        }
        g.push(cells);
    }
    g
}

/// The sides as the study table takes them; a filesystem on two sides is told apart by the
/// sides' letters.
fn study_sides(c: &Comparison) -> Vec<StudySide<'_>> {
    c.sides
        .iter()
        .map(|s| {
            let fs = study::filesystem(s.target.as_ref(), &s.letter);
            let same_fs = c
                .sides
                .iter()
                .filter(|o| {
                    o.target.as_ref().map(|t| &t.fs_type) == s.target.as_ref().map(|t| &t.fs_type)
                })
                .count();
            StudySide {
                device: s.target.as_ref().and_then(|t| t.device.as_ref()),
                filesystem: if same_fs > 1 {
                    format!("{fs} ({})", s.letter)
                } else {
                    fs
                },
                results: s.results.iter().filter(|r| !view::failed(r)).collect(),
            }
        })
        .collect()
}

/// The study table over all sides (per device, filesystem and file size); `blank_repeats` as
/// in `study::grid`.
pub fn study_grid(c: &Comparison, blank_repeats: bool) -> Grid {
    study::grid(&study_sides(c), blank_repeats)
}

/// The devices of the study table, each named once: (name, what it is).
pub fn study_devices(c: &Comparison) -> Vec<(String, String)> {
    study::device_lines(&study_sides(c))
}

fn text(c: &Comparison, markdown: bool) -> String {
    let mut out = String::new();
    let h = if markdown { "## " } else { "" };
    if markdown {
        out.push_str("# candor compare\n\n");
    }
    let grid = |g: &Grid| {
        if markdown {
            g.to_markdown()
        } else {
            g.to_text()
        }
    };
    out.push_str(&format!("{h}Sides\n"));
    if markdown {
        out.push('\n');
    }
    let hosts_differ = c.sides.iter().any(|s| s.host != c.sides[0].host);
    for s in &c.sides {
        let mut line = side_line(s);
        if hosts_differ && !s.host.is_empty() {
            line.push_str(&format!(" (host {})", s.host));
        }
        if markdown {
            out.push_str(&format!("- {}\n", crate::escape::md(&line)));
        } else {
            out.push_str(&format!("  {line}\n"));
        }
    }
    out.push('\n');
    if c.rows.is_empty() {
        out.push_str("No test ran with the same options on two sides: nothing to compare.\n");
    } else {
        out.push_str(&format!(
            "{h}Side by side (throughput; ratio to A; Welch's t-test at {}%)\n",
            (ALPHA * 100.0) as u32
        ));
        if markdown {
            out.push('\n');
        }
        out.push_str(&grid(&side_grid(c)));
        if let Some(s) = range_sentence(c) {
            out.push_str(&if markdown {
                format!("\n{s}\n")
            } else {
                format!("  {s}\n")
            });
        }
    }
    if !c.unmatched.is_empty() {
        out.push_str(&format!("\n{h}Not compared\n"));
        if markdown {
            out.push('\n');
        }
        for u in &c.unmatched {
            if markdown {
                out.push_str(&format!("- {}.\n", crate::escape::md(&u.sentence())));
            } else {
                out.push_str(&format!("  {}.\n", u.sentence()));
            }
        }
    }
    out.push_str(&format!("\n{h}Per device and filesystem\n"));
    if markdown {
        out.push('\n');
    }
    out.push_str(&format!("{}\n", study::legend()));
    if markdown {
        out.push('\n');
    }
    let devices = study_devices(c);
    if !devices.is_empty() {
        out.push_str("Devices:\n");
        if markdown {
            out.push('\n');
        }
        for (n, what) in &devices {
            if markdown {
                out.push_str(&format!(
                    "- {}: {}\n",
                    crate::escape::code(n),
                    crate::escape::md(what)
                ));
            } else {
                out.push_str(&format!("  {n}: {what}\n"));
            }
        }
        out.push('\n');
    }
    out.push_str(&grid(&study_grid(c, !markdown)));
    out
}

/// What a min-max in the side-by-side grid is, when one is shown (`units::range_sentence`).
pub fn range_sentence(c: &Comparison) -> Option<String> {
    units::range_sentence(
        c.rows
            .iter()
            .flat_map(|r| r.cells.iter().flatten())
            .filter(|cell| !view::failed(&cell.result))
            .map(|cell| &cell.result.throughput),
    )
}

fn csv(c: &Comparison) -> String {
    let mut out = String::from(
        "test,file_size,record_size,threads,iodepth,engine,direct,side,source,fs_type,throughput_mean,throughput_ci95_low,throughput_ci95_high,n,ratio,p_value,significant,verdict,write_amplification\n",
    );
    for row in &c.rows {
        for (side, cell) in c.sides.iter().zip(&row.cells) {
            let Some(cell) = cell else { continue };
            let r = &cell.result;
            let (p, sig) = match &cell.significance {
                Significance::Baseline => (String::new(), String::new()),
                Significance::Welch { p, significant } => (format!("{p}"), significant.to_string()),
                Significance::Intervals { overlap } => (String::new(), (!overlap).to_string()),
                Significance::TooFewRuns => (String::new(), String::new()),
            };
            let fields = [
                row.key.test.clone(),
                row.key.file_size.to_string(),
                row.key.record_size.to_string(),
                row.key.threads.to_string(),
                row.key.iodepth.to_string(),
                row.key.engine.clone(),
                row.key.direct.to_string(),
                side.letter.clone(),
                side.source.clone(),
                side.target
                    .as_ref()
                    .map(|t| t.fs_type.clone())
                    .unwrap_or_default(),
                format!("{}", r.throughput.mean),
                format!("{}", r.throughput.ci95[0]),
                format!("{}", r.throughput.ci95[1]),
                r.throughput.n.to_string(),
                cell.ratio.map(|x| format!("{x}")).unwrap_or_default(),
                p,
                sig,
                r.witness
                    .as_ref()
                    .map(|w| w.verdict.to_string())
                    .unwrap_or_default(),
                r.witness
                    .as_ref()
                    .and_then(|w| w.write_amplification)
                    .map(|x| format!("{x}"))
                    .unwrap_or_default(),
            ];
            let q: Vec<String> = fields.iter().map(|f| crate::csv::quote(f)).collect();
            out.push_str(&q.join(","));
            out.push('\n');
        }
    }
    out
}

fn json(c: &Comparison) -> String {
    use serde_json::json;
    let sides: Vec<_> = c
        .sides
        .iter()
        .map(|s| {
            json!({
                "side": s.letter,
                "source": s.source,
                "file": s.file,
                "path": s.path,
                "target": s.target,
                "mpi_ranks": s.mpi_ranks,
            })
        })
        .collect();
    let rows: Vec<_> = c
        .rows
        .iter()
        .map(|row| {
            let cells: Vec<_> = row
                .cells
                .iter()
                .zip(&c.sides)
                .map(|(cell, s)| match cell {
                    None => json!({"side": s.letter, "present": false}),
                    Some(cell) => {
                        let (p, sig) = match &cell.significance {
                            Significance::Welch { p, significant } => {
                                (Some(*p), Some(*significant))
                            }
                            Significance::Intervals { overlap } => (None, Some(!overlap)),
                            _ => (None, None),
                        };
                        json!({
                            "side": s.letter,
                            "present": true,
                            "throughput": cell.result.throughput,
                            "verdict": cell.result.witness.as_ref().map(|w| &w.verdict),
                            "write_amplification": cell.result.witness.as_ref().and_then(|w| w.write_amplification),
                            "ratio": cell.ratio,
                            "p_value": p,
                            "significant": sig,
                            "method": match &cell.significance {
                                Significance::Baseline => "baseline",
                                Significance::Welch { .. } => "welch",
                                Significance::Intervals { .. } => "ci95",
                                Significance::TooFewRuns => "too few runs",
                            },
                        })
                    }
                })
                .collect();
            json!({
                "test": row.key.test,
                "file_size": row.key.file_size,
                "record_size": row.key.record_size,
                "threads": row.key.threads,
                "iodepth": row.key.iodepth,
                "engine": row.key.engine,
                "direct": row.key.direct,
                "osync": row.key.osync,
                "fsync_in_timing": row.key.fsync_in_timing,
                "close_in_timing": row.key.close_in_timing,
                "sides": cells,
            })
        })
        .collect();
    let unmatched: Vec<String> = c.unmatched.iter().map(|u| u.sentence()).collect();
    let v = json!({"sides": sides, "rows": rows, "not_compared": unmatched});
    serde_json::to_string_pretty(&v).unwrap_or_default() + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::compare;
    use crate::compare::fixtures::{lettered, result, side};

    #[test]
    fn two_noisy_repetitions_show_min_max_and_the_repetitions_an_interval_needs() {
        let a = side("a.json", vec![result("read", 4096, &[600e6, 1400e6])]);
        let b = side("b.json", vec![result("read", 4096, &[900e6, 1100e6])]);
        let c = compare(lettered(vec![a, b]));
        let text = render(&c, CompareFormat::Table);
        assert!(text.contains("1000 (600-1400)"), "{text}");
        assert!(!text.contains("1000 ±"), "{text}");
        assert!(
            text.contains("the interval needs 4 repetitions (--repeat 4)"),
            "{text}"
        );
        // The chart draws what the table shows: the whisker spans min to max.
        let html = crate::html::compare_page(&c);
        assert!(
            html.contains(
                "A · read 64m/4k psync: 1000 (slowest and fastest repetition 600 to 1400)"
            ),
            "{html}"
        );
    }
}
