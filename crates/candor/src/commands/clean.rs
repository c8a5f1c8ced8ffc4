//! `candor clean [TARGET...]`: removes run directories left behind by a killed run. Only
//! directories whose marker proves them candor's (owner, modes, exact layout, the
//! directory's own inode) and whose owner process is gone are touched; nothing on another
//! mount inside them is. One line per `.candor-*` entry says what became of it and why.

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
        for c in &rep.entries {
            let what = if c.verdict.removed() {
                "removed"
            } else {
                "left"
            };
            if c.verdict.is_error() {
                eprintln!("candor: left {}: {}", c.path.display(), c.verdict);
                failed = true;
            } else {
                println!("{what} {} ({})", c.path.display(), c.verdict);
            }
        }
        if rep.entries.is_empty() {
            println!("nothing to clean in {}", t.display());
        }
    }
    Ok(if failed { crate::exit::FAILED } else { OK })
}
