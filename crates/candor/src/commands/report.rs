//! `candor report`: re-renders a saved result — the HTML report with `-o FILE` (or the text
//! format the file's name asks for), or any text format
//! (`--format table|json|csv|markdown|iozone|excel|openmetrics|fio-json`) to stdout or to `-o FILE`.
//! Everything comes from the JSON; nothing is measured again.

use crate::exit::{refusing, CmdResult, Failure, OK};
use crate::output::save_atomic;
use candor_report::Format;
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// A result file written by `candor run -o FILE.json`.
    #[arg(value_name = "RESULT.json")]
    pub result: PathBuf,
    /// Write the report to FILE: the --format given, else the format its name asks for
    /// (.csv, .md, .json, .txt, .prom), else the HTML report.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// table, json, csv, markdown, iozone, excel, openmetrics or fio-json (default: table on
    /// stdout, HTML with -o); for a trace (`candor audit --record`), fio-iolog.
    #[arg(long, value_name = "FORMAT", value_parser = refusing(parse_format))]
    pub format: Option<Asked>,
    /// Read result files of at most SIZE (e.g. 512m, 2g): a larger file is refused unread.
    #[arg(long, value_name = "SIZE", default_value = "256m", value_parser = refusing(crate::commands::report::parse_max_input))]
    pub max_input_size: u64,
}

/// `--max-input-size`: a size as the size options take it (`256m`, `1g`).
pub fn parse_max_input(s: &str) -> Result<u64, String> {
    candor_engine::size::parse_size(s).map_err(|e| format!("--max-input-size: {e}"))
}

/// A result's format, or a trace's.
#[derive(Clone, Copy, Debug)]
pub enum Asked {
    Doc(Format),
    FioIolog,
}

fn parse_format(name: &str) -> Result<Asked, String> {
    if name == "fio-iolog" {
        return Ok(Asked::FioIolog);
    }
    Format::from_arg(name)
        .map(Asked::Doc)
        .map_err(|e| format!("{e} (or fio-iolog for a trace)"))
}

pub fn run(args: Args) -> CmdResult {
    let format = match (args.format, super::replay::is_trace(&args.result)) {
        (Some(Asked::FioIolog), true) => return trace_as_fio(&args),
        (Some(Asked::FioIolog), false) => {
            return Err(Failure::usage(format!(
                "{} is not a trace: --format fio-iolog writes a trace of `candor audit --record` as a fio iolog",
                args.result.display()
            )))
        }
        (_, true) => {
            return Err(Failure::usage(format!(
                "{} is a trace, not a result: replay it with `candor replay {0}`, or write it as a fio iolog with --format fio-iolog",
                args.result.display()
            )))
        }
        (Some(Asked::Doc(f)), false) => Some(f),
        (None, false) => None,
    };
    let doc = candor_model::load_result_within(&args.result, args.max_input_size)
        .map_err(|e| Failure::usage(e.to_string()))?;
    let text = |asked: Format| {
        let (f, why) = candor_report::printed_format(&doc, asked);
        if let Some(why) = why {
            eprintln!("candor: {why}");
        }
        candor_report::render(&doc, f)
    };
    match (&args.output, format) {
        (Some(path), None) => match format_of(path) {
            Some(f) => write_file(path, &text(f))?,
            None => write_file(path, &candor_report::render_html(&doc))?,
        },
        (Some(path), Some(f)) => write_file(path, &text(f))?,
        (None, f) => to_stdout(&text(f.unwrap_or(Format::Table)))?,
    }
    Ok(OK)
}

/// A trace written out as fio iolog version 3.
fn trace_as_fio(args: &Args) -> CmdResult {
    let (text, left) = super::replay::fio_iolog(&args.result)?;
    if left > 0 {
        eprintln!("candor: {left} calls have no fio iolog action (stat, rename, ftruncate...) and were left out");
    }
    match &args.output {
        Some(p) => write_file(p, &text)?,
        None => to_stdout(&text)?,
    }
    Ok(OK)
}

/// The text format a file name asks for (`r.csv`, `r.md`, `r.json`, `r.txt`, `r.prom`); None
/// for HTML (`.html` and anything else).
fn format_of(path: &Path) -> Option<Format> {
    let ext = path.extension()?.to_string_lossy().to_ascii_lowercase();
    match ext.as_str() {
        "csv" => Some(Format::Csv),
        "md" | "markdown" => Some(Format::Markdown),
        "json" => Some(Format::Json),
        "txt" => Some(Format::Table),
        "prom" => Some(Format::OpenMetrics),
        _ => None,
    }
}

/// Writes `text` to `path` atomically, so a reader never sees half a report, and names the
/// file written on stderr ("wrote r.html").
pub fn write_file(path: &Path, text: &str) -> Result<(), Failure> {
    save_atomic(path, text).map_err(|e| {
        Failure::failed(format!(
            "cannot write {}: {e}; choose a writable path with -o",
            path.display()
        ))
    })?;
    eprintln!("wrote {}", path.display());
    Ok(())
}

/// Prints to stdout; a closed pipe (`| head`) is not an error.
pub fn to_stdout(text: &str) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(Failure::failed(format!("cannot write to stdout: {e}"))),
    }
}
