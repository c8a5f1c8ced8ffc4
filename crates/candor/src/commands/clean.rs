//! `candor clean [TARGET...]`: removes run directories left behind by a killed run. Only
//! directories carrying candor's marker whose owner process is gone are touched.

use crate::exit::{CmdResult, Failure, OK};
use candor_engine::rundir::clean_stale;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Directories to clean (default: the current directory).
    pub targets: Vec<PathBuf>,
}

pub fn run(args: Args) -> CmdResult {
    let targets = if args.targets.is_empty() {
        vec![PathBuf::from(".")]
    } else {
        args.targets
    };
    for t in &targets {
        if !t.is_dir() {
            return Err(Failure::usage(format!(
                "{} is not a directory: give the directory candor ran on",
                t.display()
            )));
        }
    }
    let mut failed = false;
    for t in &targets {
        let rep = clean_stale(t)
            .map_err(|e| Failure::failed(format!("cannot read {}: {e}", t.display())))?;
        for p in &rep.removed {
            println!("removed {}", p.display());
        }
        for p in &rep.in_use {
            println!("left {} (its run is still going)", p.display());
        }
        for p in &rep.not_ours {
            println!("left {} (no candor marker: not candor's)", p.display());
        }
        for e in &rep.errors {
            eprintln!("candor: could not remove {e}");
            failed = true;
        }
        if rep.removed.is_empty() && rep.in_use.is_empty() && rep.errors.is_empty() {
            println!("nothing to clean in {}", t.display());
        }
    }
    Ok(if failed { crate::exit::FAILED } else { OK })
}
