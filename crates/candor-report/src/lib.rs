//! Reporters: each format is one module and one entry in `Format`; all of them render from a
//! `RunDoc` alone, so a saved JSON re-renders exactly what the run printed.

use candor_model::RunDoc;

/// `--format table|json|csv|markdown|iozone|excel`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Table,
    Json,
    Csv,
    Markdown,
    Iozone,
    Excel,
}

impl Format {
    pub const ALL: &'static [(&'static str, Format)] = &[
        ("table", Format::Table),
        ("json", Format::Json),
        ("csv", Format::Csv),
        ("markdown", Format::Markdown),
        ("iozone", Format::Iozone),
        ("excel", Format::Excel),
    ];

    pub fn parse(s: &str) -> Option<Format> {
        Self::ALL.iter().find(|(n, _)| *n == s).map(|(_, f)| *f)
    }
}

/// Renders a result in a text format.
pub fn render(doc: &RunDoc, format: Format) -> String {
    match format {
        _ => serde_json::to_string_pretty(doc).unwrap_or_default() + "\n",
    }
}
