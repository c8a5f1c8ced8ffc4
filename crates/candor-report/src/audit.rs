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
    let rows = doc.audit.as_ref()?.get("reconciliation")?.as_array()?;
    Some(
        rows.iter()
            .filter_map(|r| serde_json::from_value::<ReconciliationRow>(r.clone()).ok())
            .collect(),
    )
}

/// The audited command and how it ended, in one line.
pub fn command_line(doc: &RunDoc) -> Option<String> {
    let a = doc.audit.as_ref()?;
    let cmd: Vec<&str> = a
        .get("command")
        .and_then(|c| c.as_array())
        .map(|c| c.iter().filter_map(|x| x.as_str()).collect())
        .unwrap_or_default();
    let mut l = format!("Audited: {}", cmd.join(" "));
    if let Some(m) = a.get("exit_message").and_then(|m| m.as_str()) {
        l.push_str(&format!(" ({m})"));
    }
    Some(l)
}

/// Claimed vs observed, one row per claim, with the explanations numbered under it.
pub fn grid(claims: &[ReconciliationRow]) -> (Grid, Vec<String>) {
    let mut g = Grid::new(&[
        ("program", Align::Left),
        ("test", Align::Left),
        ("file", Align::Right),
        ("rec", Align::Right),
        ("thr", Align::Right),
        ("claimed MB/s", Align::Right),
        ("observed MB/s", Align::Right),
        ("in calls MB/s", Align::Right),
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
            c.ratio.map(units::ratio).unwrap_or("-".into()),
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
        return out;
    }
    let (g, notes) = grid(&claims);
    out.push_str(&if markdown {
        g.to_markdown()
    } else {
        g.to_text()
    });
    for (i, n) in notes.iter().enumerate() {
        out.push_str(&format!("  [{}] {n}\n", i + 1));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claims_are_read_from_the_saved_audit() {
        let mut doc = RunDoc::default();
        assert_eq!(claims(&doc), None);
        doc.audit = Some(serde_json::json!({
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

    #[test]
    fn metadata_figures_are_in_operations_per_second() {
        let doc = RunDoc {
            audit: Some(serde_json::json!({
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
