//! The command line: one subcommand per capability. Each subcommand's options live beside
//! its code in `commands/`.

use crate::commands;
use candor_model::units::RateUnits;
use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    name = "candor",
    version,
    about = "A filesystem and disk benchmark that shows its work",
    long_about = "candor runs the classic filesystem and disk workloads and, for every figure it \
prints, shows what the kernel saw: bytes that reached the device, reads served by the page cache, \
device latency, write amplification and disturbance by other processes, with a verdict in plain words.",
    after_help = "Exit codes: 0 success, 1 the run failed (I/O error, ENOSPC...), 2 bad usage or bad input, \
128+N interrupted by signal N (130 SIGINT, 143 SIGTERM, 129 SIGHUP); `candor compare` exits 1 when \
its --fail-if-slower/--fail-if-faster gate fails."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// How rates are written in every table, report and audit: decimal (MB/s, 10^6 bytes
    /// per second, as disks are rated) or binary (MiB/s, 2^20 bytes per second). The saved
    /// JSON keeps bytes per second either way. [default: decimal]
    #[arg(
        long,
        global = true,
        value_name = "decimal|binary",
        default_value = "decimal",
        hide_default_value = true,
        help_heading = "Output",
        value_parser = crate::exit::refusing(RateUnits::parse)
    )]
    pub units: RateUnits,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Benchmark one or more directories (default: the current directory).
    #[command(long_about = commands::run::LONG_ABOUT, after_long_help = commands::run::EXAMPLES)]
    Run(Box<commands::run::Args>),
    /// Run another benchmark (iozone, fio, dd...) under the witness and check what it claims.
    Audit(commands::audit::Args),
    /// Replay a recorded application's file I/O as a witnessed benchmark.
    #[command(long_about = commands::replay::LONG_ABOUT, after_long_help = commands::replay::EXAMPLES)]
    Replay(Box<commands::replay::Args>),
    /// Render a saved result as HTML or another format.
    Report(commands::report::Args),
    /// Compare saved results side by side, with statistical significance.
    Compare(commands::compare::Args),
    /// Merge the results of one plan run on several nodes (one candor per node) into one.
    Merge(commands::merge::Args),
    /// Make or remove filesystems on loop devices for comparisons (root).
    Lab(commands::lab::Args),
    /// Say what this machine supports and what candor will use.
    Doctor(commands::doctor::Args),
    /// Remove run directories left behind by a killed run.
    Clean(commands::clean::Args),
}
