//! `--format markdown`: the terminal table's content as Markdown (for issues, wikis, READMEs):
//! a header list, one table per target with its notes, scaling tables and warnings.

use crate::escape::{code, md};
use crate::table;
use crate::view::{self, Axis};
use candor_model::RunDoc;

pub fn render(doc: &RunDoc) -> String {
    let mut out = String::from("# candor results\n\n");
    for l in table::header_lines(doc) {
        out.push_str(&format!("- {}\n", md(&l)));
    }
    out.push_str(&crate::audit::text(doc, true));
    let mut next = 1;
    for g in view::groups(doc) {
        out.push_str(&format!("\n## Target {}\n\n", code(&g.path)));
        if let Some(t) = g.info {
            out.push_str(&format!("{}\n\n", md(&view::target_line(t))));
        }
        if g.results.is_empty() {
            out.push_str("No results.\n");
            continue;
        }
        let (grid, notes) = table::results_grid(&g.results, next);
        next += notes.len();
        out.push_str(&grid.to_markdown());
        if let Some(s) = table::range_sentence(&g.results) {
            out.push_str(&format!("\n{s}\n"));
        }
        if !notes.is_empty() {
            out.push('\n');
            for n in &notes {
                out.push_str(&format!(
                    "{}. **{}**: {}\n",
                    n.number,
                    md(&n.about),
                    md(&n.text)
                ));
            }
        }
        out.push_str(&crate::steady::markdown(&g.results));
        for axis in [Axis::Threads, Axis::Depth] {
            for s in view::series(&g.results, axis) {
                out.push_str(&format!(
                    "\n### Scaling over {}: {}\n\n",
                    axis.name(),
                    s.title
                ));
                out.push_str(&table::scaling_grid(&s).to_markdown());
                out.push_str(&format!("\n{}\n", view::scaling_sentence(&s)));
            }
        }
    }
    out.push_str(&table::targets_compared(doc, true));
    let warnings = view::warnings(doc);
    if !warnings.is_empty() {
        out.push_str("\n## Warnings\n\n");
        for w in &warnings {
            out.push_str(&format!("- {}\n", md(w)));
        }
    }
    out
}
