//! candor: a filesystem and disk benchmark that shows its work.
//!
//! `main` is the whole pipeline in one place: parse the command line, dispatch to one
//! command, turn its outcome into an exit code (0 success, 1 the run failed, 2 bad usage or
//! bad input; 128 + signal when interrupted).

mod cli;
mod commands;
mod efficiency;
mod exit;

use clap::Parser;

fn main() {
    let cli = cli::Cli::parse();
    let code = match commands::dispatch(cli.command) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("candor: {}", e.message);
            e.code
        }
    };
    std::process::exit(code);
}
