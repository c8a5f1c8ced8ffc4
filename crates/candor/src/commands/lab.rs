//! `candor lab` (being built).

use crate::exit::{CmdResult, Failure};

#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn run(_args: Args) -> CmdResult {
    Err(Failure::usage("candor lab is not built yet"))
}
