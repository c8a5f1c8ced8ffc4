//! Results of `candor audit` (`RunDoc::audit`): what another benchmark claimed against what the
//! witness observed, per claim, read from the saved audit's `reconciliation` rows as the
//! result model types them.

use crate::grid::{Align, Grid};
use crate::units;
use candor_model::audit::ReconciliationRow;
use candor_model::RunDoc;

/// The audit's claims against their observations, when the document is an audit. A row
/// that does not read as one (a file edited by hand) is left out.
pub fn claims(doc: &RunDoc) -> Option<Vec<ReconciliationRow>> {
    Some(doc.audit.as_ref()?.reconciliation.clone())
}

/// The audited command and how it ended, in one line.
pub fn command_line(doc: &RunDoc) -> Option<String> {
    let a = doc.audit.as_ref()?;
    let mut l = format!("Audited: {}", a.command.join(" "));
    if let Some(m) = &a.exit_message {
        l.push_str(&format!(" ({m})"));
    }
    Some(l)
}

/// Claimed vs observed, one row per claim, with the explanations numbered under it.
pub fn grid(claims: &[ReconciliationRow]) -> (Grid, Vec<String>) {
    let rate = units::rate_label();
    let (claimed, observed, in_calls) = (
        format!("claimed {rate}"),
        format!("observed {rate}"),
        format!("in calls {rate}"),
    );
    let mut g = Grid::new(&[
        ("program", Align::Left),
        ("test", Align::Left),
        ("file", Align::Right),
        ("rec", Align::Right),
        ("thr", Align::Right),
        (&claimed, Align::Right),
        (&observed, Align::Right),
        (&in_calls, Align::Right),
        ("claimed/observed", Align::Right),
        ("cache", Align::Right),
        ("verdict", Align::Left),
        ("note", Align::Left),
    ]);
    let mut notes = Vec::new();
    for c in claims {
        let note = if c.explanation.is_empty() {
            String::new()
        } else {
            notes.push(format!("{} {}: {}", c.program, c.test, c.explanation));
            notes.len().to_string()
        };
        // A metadata figure (operations per second) is shown in its own unit.
        let ops = |x: f64| format!("{x:.0} op/s");
        let (claimed, observed, in_calls) = match c.claimed_ops_per_s {
            Some(o) => (
                ops(o),
                c.observed_ops_per_s.map(ops),
                c.observed_ops_per_s_in_calls.map(ops),
            ),
            None => (
                units::mb_s(c.claimed_bps),
                c.observed_wall_bps.map(units::mb_s),
                c.observed_syscall_bps.map(units::mb_s),
            ),
        };
        g.push(vec![
            c.program.clone(),
            c.test.clone(),
            c.file_size.map(units::size).unwrap_or("-".into()),
            c.record_size.map(units::size).unwrap_or("-".into()),
            c.threads.max(1).to_string(),
            claimed,
            observed.unwrap_or("-".into()),
            in_calls.unwrap_or("-".into()),
            // The ratio the verdict rests on (c: over the time inside the calls).
            c.judged_ratio()
                .map(|(x, calls)| units::ratio(x) + if calls { " c" } else { "" })
                .unwrap_or("-".into()),
            c.cache_share.map(units::pct).unwrap_or_default(),
            c.verdict.clone(),
            note,
        ]);
    }
    (g, notes)
}

/// The audit section of the text reports; empty for a run.
pub fn text(doc: &RunDoc, markdown: bool) -> String {
    let Some(claims) = claims(doc) else {
        return String::new();
    };
    let mut out = String::new();
    if markdown {
        out.push_str("\n## Claimed vs observed\n\n");
    } else {
        out.push_str("\nClaimed vs observed\n");
    }
    if let Some(l) = command_line(doc) {
        out.push_str(&format!("{l}\n"));
        if markdown {
            out.push('\n');
        }
    }
    if claims.is_empty() {
        out.push_str("No figure of the audited program was recognised.\n");
    } else {
        let (g, notes) = grid(&claims);
        out.push_str(&if markdown {
            g.to_markdown()
        } else {
            g.to_text()
        });
        for (i, n) in notes.iter().enumerate() {
            out.push_str(&format!("  [{}] {n}\n", i + 1));
        }
    }
    out.push_str(&account_text(doc, markdown));
    out
}

/// What the audited tree did (the saved `account`) and the figures left unread, as the
/// terminal text of the audit gives them.
fn account_text(doc: &RunDoc, markdown: bool) -> String {
    use candor_model::units::{format_bytes, ByteStyle};
    let Some(audit) = doc.audit.as_ref() else {
        return String::new();
    };
    let b = |v: &serde_json::Value| format_bytes(v.as_u64().unwrap_or(0), ByteStyle::TENTHS);
    let mut lines = Vec::new();
    if let Some(a) = audit.rest.get("account").filter(|a| a.is_object()) {
        for (word, key) in [("read", "read"), ("written", "write")] {
            let t = &a[key];
            let mut l = format!("{word:<8} {}", b(&t["bytes"]));
            if let Some(c) = t["calls"].as_u64() {
                l.push_str(&format!(" in {c} calls"));
            }
            if let Some(s) = t["time_s"]
                .as_f64()
                .filter(|_| t["calls"].as_u64() > Some(0))
            {
                l.push_str(&format!(", {s:.3} s inside the calls"));
            }
            l.push_str(&format!(", {} files", t["files"].as_u64().unwrap_or(0)));
            lines.push(l);
        }
        if let Some(k) = a["kind"].as_str().filter(|k| !k.is_empty()) {
            lines.push(format!("kind     {k}"));
        }
        if let (Some(n), Some(s)) = (a["fsync_count"].as_u64(), a["fsync_time_s"].as_f64()) {
            lines.push(format!("fsync    {n} calls, {s:.3} s"));
        }
        if a["read"]["bytes"].as_u64() > Some(0) {
            lines.push(format!(
                "reads    device {}, page cache {}, holes {}",
                b(&a["read_from_device_bytes"]),
                b(&a["read_from_cache_bytes"]),
                b(&a["read_from_holes_bytes"])
            ));
        }
        if let Some(devs) = a["device_traffic"].as_object() {
            for (name, t) in devs {
                let sum = |k: &[&str]| k.iter().map(|k| t[*k].as_u64().unwrap_or(0)).sum::<u64>();
                let backing: Vec<String> = t["backing"]
                    .as_array()
                    .map(|v| {
                        v.iter()
                            .filter_map(|x| x.as_str().map(str::to_string))
                            .collect()
                    })
                    .unwrap_or_default();
                lines.push(format!(
                    "device   {name}: the tree read {} and wrote {}; {} {}; other processes (foreign) {}",
                    b(&t["own_read_bytes"]),
                    b(&t["own_write_bytes"]),
                    candor_model::audit::kernel_label(&backing),
                    format_bytes(sum(&["kernel_read_bytes", "kernel_write_bytes"]), ByteStyle::TENTHS),
                    format_bytes(sum(&["foreign_read_bytes", "foreign_write_bytes"]), ByteStyle::TENTHS)
                ));
            }
        }
        if let Some(w) = a["write_amplification"].as_f64() {
            lines.push(format!("write amplification {w:.2}"));
        }
        if let Some(s) = a["sentence"].as_str().filter(|s| !s.is_empty()) {
            lines.push(format!("verdict  {s}"));
        }
        let files = a["files"].as_array().cloned().unwrap_or_default();
        for f in files.iter().take(10) {
            lines.push(format!(
                "file     {} read, {} written, {} opens, {} fsyncs: {}{}{}",
                b(&f["read_bytes"]),
                b(&f["write_bytes"]),
                f["opens"].as_u64().unwrap_or(0),
                f["fsyncs"].as_u64().unwrap_or(0),
                if f["kind"] == "raw device" {
                    "raw device "
                } else {
                    ""
                },
                f["path"].as_str().unwrap_or(""),
                match (f["direction"].as_str(), f["read_share"].as_f64()) {
                    (Some("mixed"), Some(r)) => format!(
                        " (mixed: {:.0}% read / {:.0}% write by bytes)",
                        r * 100.0,
                        100.0 - r * 100.0
                    ),
                    _ => String::new(),
                }
            ));
        }
        if files.len() > 10 {
            lines.push(format!("... and {} more", files.len() - 10));
        }
    }
    for u in audit
        .rest
        .get("unread")
        .and_then(|u| u.as_array())
        .cloned()
        .unwrap_or_default()
    {
        lines.push(format!(
            "not checked: line {} of {}'s output ({}): {}",
            u["line"].as_u64().unwrap_or(0),
            u["program"].as_str().unwrap_or(""),
            u["text"].as_str().unwrap_or("").trim(),
            u["why"].as_str().unwrap_or("")
        ));
    }
    if lines.is_empty() {
        return String::new();
    }
    let mut out = if markdown {
        "\n### What the audited program did\n\n".to_string()
    } else {
        "\nWhat the audited program did\n".to_string()
    };
    for l in lines {
        if markdown {
            out.push_str(&format!("- {l}\n"));
        } else {
            out.push_str(&format!("  {l}\n"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use candor_model::audit::AuditDoc;

    #[test]
    fn claims_are_read_from_the_saved_audit() {
        let mut doc = RunDoc::default();
        assert_eq!(claims(&doc), None);
        doc.audit = AuditDoc::from_saved(serde_json::json!({
            "command": ["iozone", "-i0", "-s", "64m"],
            "exit_message": null,
            "reconciliation": [{
                "test": "write", "program": "iozone", "record_size": 4096, "file_size": 67108864,
                "threads": 1, "claimed_Bps": 904761344.0, "observed_wall_Bps": 302000000.0,
                "observed_syscall_Bps": 880000000.0, "ratio": 2.99, "verdict": "overstated",
                "explanation": "the timing left out the fsync"
            }]
        }));
        let c = claims(&doc).unwrap_or_default();
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].verdict, "overstated");
        let t = text(&doc, false);
        assert!(t.contains("Audited: iozone -i0 -s 64m"), "{t}");
        assert!(
            t.contains("905") && t.contains("302") && t.contains("2.99x"),
            "{t}"
        );
        assert!(
            t.contains("[1] iozone write: the timing left out the fsync"),
            "{t}"
        );
    }

    /// A figure that agrees over the time inside the calls, not over the wall time: the
    /// report shows the ratio the verdict rests on, marked, as the audit's own table does.
    #[test]
    fn the_ratio_shown_is_the_one_the_verdict_rests_on() {
        let doc = RunDoc {
            audit: AuditDoc::from_saved(serde_json::json!({
                "command": ["ioping", "-c", "20", "."],
                "reconciliation": [{
                    "test": "requests completed read", "program": "ioping", "threads": 1,
                    "claimed_Bps": 113000000.0, "observed_wall_Bps": 10200000.0,
                    "observed_syscall_Bps": 111000000.0, "ratio": 11.08,
                    "ratio_syscall": 1.018, "verdict": "agrees"
                }]
            })),
            ..Default::default()
        };
        let t = text(&doc, false);
        assert!(t.contains("1.02x c") && !t.contains("11.08"), "{t}");
    }

    #[test]
    fn the_account_and_the_unread_figures_are_in_the_report() {
        let doc = RunDoc {
            audit: AuditDoc::from_saved(serde_json::json!({
                "command": ["fs_mark", "-n", "200"],
                "reconciliation": [],
                "unread": [{"program": "fs_mark", "line": 11, "text": "92 200 4096 312.7 1174",
                            "why": "Files/sec = 312.7: a rate of files"}],
                "account": {
                    "read": {"bytes": 0, "calls": 0, "time_s": 0.0, "files": 0},
                    "write": {"bytes": 819200, "calls": 200, "time_s": 0.01, "files": 200},
                    "fsync_count": 200, "fsync_time_s": 0.5,
                    "device_traffic": {"vda": {"own_read_bytes": 0, "own_write_bytes": 2457600,
                        "kernel_write_bytes": 4096, "foreign_write_bytes": 8192}},
                    "write_amplification": 3.0,
                    "sentence": "device: the device moved the bytes",
                    "files": [{"path": "/d/fsm/ (200 files)", "kind": "files", "opens": 200,
                               "read_bytes": 0, "write_bytes": 819200, "fsyncs": 200}]
                }
            })),
            ..Default::default()
        };
        let t = text(&doc, false);
        assert!(
            t.contains("No figure of the audited program was recognised."),
            "{t}"
        );
        assert!(t.contains("written  800.0 KiB in 200 calls"), "{t}");
        assert!(t.contains("fsync    200 calls, 0.500 s"), "{t}");
        assert!(t.contains("write amplification 3.00"), "{t}");
        assert!(
            t.contains("verdict  device: the device moved the bytes"),
            "{t}"
        );
        assert!(
            t.contains("200 opens, 200 fsyncs: /d/fsm/ (200 files)"),
            "{t}"
        );
        assert!(
            t.contains("not checked: line 11 of fs_mark's output (92 200 4096 312.7 1174): Files/sec = 312.7"),
            "{t}"
        );
        assert!(text(&doc, true).contains("### What the audited program did"));
    }

    #[test]
    fn metadata_figures_are_in_operations_per_second() {
        let doc = RunDoc {
            audit: AuditDoc::from_saved(serde_json::json!({
            "command": ["mdtest", "-n", "1000"],
            "reconciliation": [{
                "test": "file creation", "program": "mdtest", "threads": 2, "claimed_Bps": 0.0,
                "operation": "create", "claimed_ops_per_s": 4934.3, "observed_ops_per_s": 4810.0,
                "observed_calls": 4000, "ratio": 1.03, "verdict": "agrees",
                "explanation": "4000 create operations claimed, 4000 create calls seen"
            }]
            })),
            ..Default::default()
        };
        let t = text(&doc, false);
        assert!(t.contains("4934 op/s") && t.contains("4810 op/s"), "{t}");
        assert!(!t.contains("0.0 MB/s") && !t.contains(" 0 MB/s"), "{t}");
    }
}
