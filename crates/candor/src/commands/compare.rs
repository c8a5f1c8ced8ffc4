//! `candor compare`: saved results side by side. Each target of each file is a side; the same
//! tests are matched, with the ratio to the first side and whether each difference is
//! statistically significant; tests that cannot be matched are named. `--html FILE` writes the
//! comparison as a self-contained HTML page. `--fail-if-slower PCT` / `--fail-if-faster PCT`
//! make it a regression gate: exit 1, with one line per failing row on stderr, when a side
//! differs from the first beyond PCT and significantly, or when no row could be judged at all
//! (unless `--allow-unmatched`); the rows left out are named, and a gate that passes says in
//! one line what it judged.

use crate::commands::report::{to_stdout, write_file};
use crate::exit::{refusing, CmdResult, Failure, FAILED, OK};
use candor_report::compare::{self, CompareFormat};
use candor_report::gate::{self, Drift, Gate};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
#[command(
    after_help = "Exit codes: 0 compared (and no gate failed); 1 a gate failed (--fail-if-slower, \
--fail-if-faster: one line per failing row on stderr), a gate judged nothing (no test with the \
same options on the first side and another; --allow-unmatched lets that pass) or a file could \
not be written; 2 bad usage or a file that is not a candor result."
)]
pub struct Args {
    /// Result files written by `candor run -o` (a file with several targets gives one side per target).
    #[arg(value_name = "RESULT.json", required = true, num_args = 1..)]
    pub results: Vec<PathBuf>,
    /// Also write the comparison as an HTML page to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// table, markdown, csv, json or github (a Markdown summary for a CI job's page; default: table).
    #[arg(long, value_name = "FORMAT", default_value = "table", value_parser = refusing(CompareFormat::from_arg))]
    pub format: CompareFormat,
    /// Exit 1 when a side's throughput is more than PCT% below the first side's and the
    /// difference is significant (the test the table shows).
    #[arg(long, value_name = "PCT", value_parser = refusing(|s: &str| gate::parse_pct(s, Drift::Slower)))]
    pub fail_if_slower: Option<f64>,
    /// Exit 1 when a side's throughput is more than PCT% above the first side's (its time
    /// per operation that much shorter) and the difference is significant.
    #[arg(long, value_name = "PCT", value_parser = refusing(|s: &str| gate::parse_pct(s, Drift::Faster)))]
    pub fail_if_faster: Option<f64>,
    /// Let a gate pass that could judge no row (no test ran with the same options on the
    /// first side and another); without it such a gate fails. Rows left out are named either way.
    #[arg(long)]
    pub allow_unmatched: bool,
    /// Read result files of at most SIZE (e.g. 512m, 2g): a larger file is refused unread.
    #[arg(long, value_name = "SIZE", default_value = "256m", value_parser = refusing(crate::commands::report::parse_max_input))]
    pub max_input_size: u64,
}

pub fn run(args: Args) -> CmdResult {
    let format = args.format;
    let mut files = Vec::new();
    for p in &args.results {
        let doc = candor_model::load_result_within(p, args.max_input_size)
            .map_err(|e| Failure::usage(e.to_string()))?;
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
    if args.allow_unmatched && args.fail_if_slower.is_none() && args.fail_if_faster.is_none() {
        return Err(Failure::usage(
            "--allow-unmatched applies to a gate: give --fail-if-slower or --fail-if-faster with it",
        ));
    }
    if let Some(path) = &args.html {
        write_file(path, &candor_report::html::compare_page(&c))?;
    }
    let g = Gate {
        slower_pct: args.fail_if_slower,
        faster_pct: args.fail_if_faster,
        allow_unmatched: args.allow_unmatched,
    };
    to_stdout(&compare::render_gated(&c, format, &g))?;
    if !g.is_set() {
        return Ok(OK);
    }
    let outcome = gate::judge(&c, &g);
    for l in &outcome.left_out {
        eprintln!("not compared: {l}");
    }
    for f in &outcome.untestable {
        eprintln!(
            "not tested: {} (a side has one repetition: run with --repeat 3 or more)",
            f.line()
                .replace(&format!(", significant: {}", f.significance), "")
        );
    }
    for f in &outcome.failed_tests {
        eprintln!("not tested: {f}");
    }
    for f in &outcome.failures {
        eprintln!("{}", f.line());
    }
    if outcome.judged_nothing() && !g.allow_unmatched {
        return Err(Failure::failed(outcome.nothing_judged_sentence()));
    }
    if let Some(l) = outcome.passed_line(&g) {
        eprintln!("{l}");
    }
    Ok(if outcome.passed() { OK } else { FAILED })
}
