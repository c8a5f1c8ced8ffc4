//! Reporters: each format is one module and one entry in `Format`; all of them render from a
//! `RunDoc` alone, so a saved JSON re-renders exactly what the run printed.
//!
//! Shared pieces: `units` (how figures are written for people), `grid` (aligned text and
//! Markdown tables), `view` (the figures every reporter derives from a result the same way:
//! device throughput, flags, grouping by target, scaling series). `compare` matches results of
//! several runs; `html` draws the self-contained HTML report.

pub mod audit;
pub mod compare;
mod csv;
mod excel;
pub mod grid;
pub mod html;
mod iozone;
mod json;
mod markdown;
pub mod study;
mod svg;
mod table;
pub mod units;
pub mod view;

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

    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, f)| *f == self)
            .map(|(n, _)| *n)
            .unwrap_or("table")
    }

    /// The names, for error messages ("table, json, csv, ...").
    pub fn names() -> String {
        Self::ALL
            .iter()
            .map(|(n, _)| *n)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Renders a result in a text format.
pub fn render(doc: &RunDoc, format: Format) -> String {
    match format {
        Format::Table => table::render(doc),
        Format::Json => json::render(doc),
        Format::Csv => csv::render(doc),
        Format::Markdown => markdown::render(doc),
        Format::Iozone => iozone::render(doc),
        Format::Excel => excel::render(doc),
    }
}

/// Renders the self-contained HTML report (inline CSS and SVG, nothing fetched).
pub fn render_html(doc: &RunDoc) -> String {
    html::render(doc)
}
