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

/// `render`, written to `out` as it is serialized: a large result is never held as one
/// string beside the document (a sweep's JSON grows by doubling to twice its size).
pub fn write(doc: &RunDoc, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, doc)?;
    out.write_all(b"\n")
}
