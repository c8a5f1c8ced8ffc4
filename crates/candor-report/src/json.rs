//! `--format json`: the result exactly as saved, so `candor report --format json` of a file
//! written by an older candor gives it back with today's field set (defaults filled in).

use candor_model::RunDoc;

pub fn render(doc: &RunDoc) -> String {
    // Serializing plain data with string keys cannot fail; keep a readable fallback anyway.
    match serde_json::to_string_pretty(doc) {
        Ok(s) => s + "\n",
        Err(e) => format!("{{\"error\": \"cannot serialize the result: {e}\"}}\n"),
    }
}
