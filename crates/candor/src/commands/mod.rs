//! One module per subcommand; `dispatch` is the only place that knows them all.

pub mod audit;
pub mod clean;
pub mod compare;
pub mod doctor;
pub mod lab;
pub mod merge;
pub mod replay;
pub mod report;
pub mod run;

use crate::cli::Command;
use crate::exit::CmdResult;

pub fn dispatch(command: Command) -> CmdResult {
    match command {
        Command::Run(a) => run::run(*a),
        Command::Audit(a) => audit::run(a),
        Command::Replay(a) => replay::run(*a),
        Command::Report(a) => report::run(a),
        Command::Compare(a) => compare::run(a),
        Command::Lab(a) => lab::run(a),
        Command::Merge(a) => merge::run(a),
        Command::Doctor(a) => doctor::run(a),
        Command::Clean(a) => clean::run(a),
    }
}
