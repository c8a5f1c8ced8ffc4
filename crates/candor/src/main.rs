//! candor: a filesystem and disk benchmark that shows its work.
//!
//! `main` is the whole pipeline in one place: parse the command line, dispatch to one
//! command, turn its outcome into an exit code (0 success, 1 the run failed, 2 bad usage or
//! bad input; 128 + signal when interrupted).

mod cli;
mod commands;
mod exit;
mod output;
mod paths;
mod progress;

use clap::Parser;

fn main() {
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => refuse(e),
    };
    candor_model::units::set_rate_units(cli.units);
    let code = match commands::dispatch(cli.command) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("candor: {}", e.message);
            e.code
        }
    };
    std::process::exit(code);
}

/// A value one of candor's own parsers refused is said as candor says every refusal, in
/// one sentence; everything else (help, version, clap's own usage errors) as clap says it.
fn refuse(e: clap::Error) -> ! {
    let refusal = std::error::Error::source(&e).and_then(|s| s.downcast_ref::<exit::Refusal>());
    if let Some(r) = refusal {
        eprintln!("candor: {r}");
        std::process::exit(exit::USAGE);
    }
    e.exit()
}
