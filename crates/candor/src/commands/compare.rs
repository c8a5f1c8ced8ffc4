//! `candor compare`: saved results side by side. Each target of each file is a side; the same
//! tests are matched, with the ratio to the first side and whether each difference is
//! statistically significant; tests that cannot be matched are named. `--html FILE` writes the
//! comparison as a self-contained HTML page.

use crate::commands::report::{to_stdout, write_file};
use crate::exit::{refusing, CmdResult, Failure, OK};
use candor_report::compare::{self, CompareFormat};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Result files written by `candor run -o` (a file with several targets gives one side per target).
    #[arg(value_name = "RESULT.json", required = true, num_args = 1..)]
    pub results: Vec<PathBuf>,
    /// Also write the comparison as an HTML page to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// table, markdown, csv or json (default: table).
    #[arg(long, value_name = "FORMAT", default_value = "table", value_parser = refusing(parse_format))]
    pub format: CompareFormat,
}

fn parse_format(name: &str) -> Result<CompareFormat, String> {
    CompareFormat::parse(name)
        .ok_or_else(|| format!("unknown format {name:?}: use one of table, markdown, csv, json"))
}

pub fn run(args: Args) -> CmdResult {
    let format = args.format;
    let mut files = Vec::new();
    for p in &args.results {
        let doc = candor_model::load_result(p).map_err(|e| Failure::usage(e.to_string()))?;
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_else(|| p.display().to_string());
        files.push((name, doc));
    }
    let sides = compare::sides(&files);
    if sides.len() < 2 {
        return Err(Failure::usage(
            "nothing to compare: give two or more result files, or one file with several targets",
        ));
    }
    let c = compare::compare(sides);
    if let Some(path) = &args.html {
        write_file(path, &candor_report::html::compare_page(&c))?;
    }
    to_stdout(&compare::render(&c, format))?;
    Ok(OK)
}
