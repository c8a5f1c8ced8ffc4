//! Reporters: each format is one module and one entry in `FORMATS`; all of them render from a
//! `RunDoc` alone, so a saved JSON re-renders exactly what the run printed.
//!
//! Shared pieces: `units` (how figures are written for people), `grid` (aligned text and
//! Markdown tables), `view` (the figures every reporter derives from a result the same way:
//! device throughput, flags, grouping by target, scaling series). `compare` matches results of
//! several runs and `gate` judges them for CI; `html` draws the self-contained HTML report.

pub mod audit;
pub mod compare;
mod csv;
pub mod escape;
mod excel;
pub mod fio;
pub mod gate;
pub mod grid;
pub mod html;
mod iozone;
mod json;
mod markdown;
mod openmetrics;
mod ranks;
pub mod steady;
pub mod study;
pub mod svg;
mod table;
pub mod units;
pub mod view;

use candor_model::RunDoc;

/// `--format table|json|csv|markdown|iozone|excel|openmetrics|fio-json`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Table,
    Json,
    Csv,
    Markdown,
    Iozone,
    Excel,
    OpenMetrics,
    FioJson,
}

/// A text format: its name, and the function that renders a result in it.
pub struct FormatEntry {
    pub name: &'static str,
    pub format: Format,
    pub render: fn(&RunDoc) -> String,
}

/// The format table: adding a format is one module and one entry here.
pub const FORMATS: &[FormatEntry] = &[
    FormatEntry {
        name: "table",
        format: Format::Table,
        render: table::render,
    },
    FormatEntry {
        name: "json",
        format: Format::Json,
        render: json::render,
    },
    FormatEntry {
        name: "csv",
        format: Format::Csv,
        render: csv::render,
    },
    FormatEntry {
        name: "markdown",
        format: Format::Markdown,
        render: markdown::render,
    },
    FormatEntry {
        name: "iozone",
        format: Format::Iozone,
        render: iozone::render,
    },
    FormatEntry {
        name: "excel",
        format: Format::Excel,
        render: excel::render,
    },
    FormatEntry {
        name: "openmetrics",
        format: Format::OpenMetrics,
        render: openmetrics::render,
    },
    FormatEntry {
        name: "fio-json",
        format: Format::FioJson,
        render: fio::render,
    },
];

impl Format {
    fn entry(self) -> &'static FormatEntry {
        FORMATS
            .iter()
            .find(|e| e.format == self)
            .unwrap_or(&FORMATS[0])
    }

    pub fn parse(s: &str) -> Option<Format> {
        FORMATS.iter().find(|e| e.name == s).map(|e| e.format)
    }

    /// `--format NAME` as every command takes it: the format, or the sentence that says
    /// which names there are.
    pub fn from_arg(name: &str) -> Result<Format, String> {
        Format::parse(name).ok_or_else(|| not_a_format(name, &Format::names()))
    }

    pub fn name(self) -> &'static str {
        self.entry().name
    }

    /// The names, for error messages ("table, json, csv, ...").
    pub fn names() -> String {
        FORMATS
            .iter()
            .map(|e| e.name)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The one sentence for a `--format` name that is none of `names`.
pub fn not_a_format(name: &str, names: &str) -> String {
    format!("'{name}' is not a format: choose from {names}")
}

/// Renders a result in a text format. Text meant for a terminal carries no control
/// character from the file (`escape::terminal`); JSON escapes its own.
pub fn render(doc: &RunDoc, format: Format) -> String {
    let out = (format.entry().render)(doc);
    match format {
        Format::Json | Format::FioJson => out,
        _ => escape::terminal(&out).into_owned(),
    }
}

/// `render`, written to `out`; the JSON is written as it is serialized.
pub fn write_to(doc: &RunDoc, format: Format, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    match format {
        Format::Json => json::write(doc, out),
        f => out.write_all(render(doc, f).as_bytes()),
    }
}

/// The format a result is printed in when `asked` is asked, and the sentence saying why
/// when it is another: `--format iozone` of results iozone's layout cannot hold (queue
/// depths above 1, tests iozone does not have) prints the table, which holds them all,
/// rather than a sparse iozone table and a list of what did not fit.
pub fn printed_format(doc: &RunDoc, asked: Format) -> (Format, Option<String>) {
    match asked {
        Format::Iozone => match iozone::not_iozones(doc) {
            Some(why) => (Format::Table, Some(why)),
            None => (asked, None),
        },
        f => (f, None),
    }
}

/// Renders the self-contained HTML report (inline CSS and SVG, nothing fetched).
pub fn render_html(doc: &RunDoc) -> String {
    html::render(doc)
}
