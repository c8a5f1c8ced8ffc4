//! `candor lab`: make, list and remove filesystems on loop devices for comparisons
//! (`create`, `list`, `destroy`). The work is in the `candor-lab` crate; this module owns
//! the options, the wording and the exit codes.
//!
//! Exit codes: 0 done (also when the lab already exists, or there is nothing to destroy);
//! 1 a step failed at run time (mkfs, mount, a busy mount point...); 2 bad input (unknown
//! filesystem, bad or too small size, not enough free space, a directory the lab did not
//! make or cannot trust: another user's, writable by others, a state naming paths the lab
//! does not make) or not root.

use crate::exit::{CmdResult, Failure, OK};
use candor_lab::{CreateRequest, LabError, Outcome};
use candor_model::units::{format_bytes, ByteStyle};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
#[command(
    about = "Make or remove filesystems on loop devices for comparisons (root)",
    long_about = "Make filesystems on loop devices, backed by sparse files in DIR/.candor-lab/ \
and mounted under DIR/.candor-lab/mnt/<fs>, to compare filesystems without spare disks. \
create and destroy need root; both can be run again safely. destroy removes only what create made.",
    after_help = "Example:\n  sudo candor lab create --fs ext4,xfs,btrfs --size 4g\n  \
sudo candor run $(candor lab list --paths)\n  sudo candor lab destroy\n\n\
Exit codes: 0 done (also: already there, nothing to destroy), 1 a step failed, \
2 bad input or not root."
)]
pub struct Args {
    #[command(subcommand)]
    pub action: Action,
}

#[derive(clap::Subcommand, Debug)]
pub enum Action {
    /// Make and mount the filesystems; prints their mount points, one per line.
    Create {
        /// Filesystems to make, comma separated: ext4, xfs, btrfs.
        #[arg(long, value_name = "LIST", default_value = "ext4,xfs,btrfs")]
        fs: String,
        /// Size of each filesystem (binary units: 4g = 4 GiB). xfs needs at least 300m.
        #[arg(long, value_name = "SIZE", default_value = "4g")]
        size: String,
        /// Directory whose filesystem holds the backing files (default: the current one).
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// Show the lab's filesystems and whether they are mounted.
    List {
        /// Directory holding the lab (default: the current one).
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
        /// Print only the mount points, one per line (for `candor run $(...)`).
        #[arg(long)]
        paths: bool,
    },
    /// Unmount the filesystems, detach the loop devices, delete the backing files.
    Destroy {
        /// Directory holding the lab (default: the current one).
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
}

pub fn run(args: Args) -> CmdResult {
    match args.action {
        Action::Create { fs, size, dir } => create(&fs, &size, dir),
        Action::List { dir, paths } => list(dir, paths),
        Action::Destroy { dir } => destroy(dir),
    }
}

fn failure(e: LabError) -> Failure {
    match e {
        LabError::Usage(m) | LabError::NeedsRoot(m) => Failure::usage(m),
        LabError::Unsupported(m) | LabError::Failed(m) => Failure::failed(m),
        LabError::Command { what, detail } => Failure::failed(format!("{what} failed: {detail}")),
        LabError::Io(e) => Failure::failed(format!("the lab could not go on: {e}")),
    }
}

fn dir_or_current(dir: Option<PathBuf>) -> Result<PathBuf, Failure> {
    match dir {
        Some(d) => Ok(d),
        None => std::env::current_dir().map_err(|e| {
            Failure::usage(format!(
                "the current directory cannot be used ({e}); pass --dir"
            ))
        }),
    }
}

fn create(fs: &str, size: &str, dir: Option<PathBuf>) -> CmdResult {
    let filesystems = candor_lab::parse_fs_list(fs).map_err(Failure::usage)?;
    let size = candor_lab::parse_size(size).map_err(Failure::usage)?;
    let dir = dir_or_current(dir)?;
    let report = candor_lab::create(&CreateRequest {
        dir,
        filesystems,
        size,
    })
    .map_err(failure)?;

    for m in &report.members {
        let what = match m.outcome {
            Outcome::Created => "made",
            Outcome::Existed => "already there",
            Outcome::Remounted => "mounted again",
        };
        eprintln!(
            "candor lab: {:<5} {:>8}  {:<11} {}",
            m.member.fs.name(),
            format_bytes(m.member.size, ByteStyle::PROSE),
            m.loop_device,
            what
        );
        if m.outcome != Outcome::Created && m.member.size != size {
            eprintln!(
                "candor lab: {} was made with {}, not {}; destroy the lab to change its size",
                m.member.fs,
                format_bytes(m.member.size, ByteStyle::PROSE),
                format_bytes(size, ByteStyle::PROSE)
            );
        }
    }
    if report.new_bytes() > 0 {
        eprintln!(
            "candor lab: the backing files in {} are sparse: they take space only as the filesystems fill (up to {}; {} was free)",
            report.root.display(),
            format_bytes(report.new_bytes(), ByteStyle::PROSE),
            format_bytes(report.free_before, ByteStyle::PROSE)
        );
    } else if report.members.iter().all(|m| m.outcome == Outcome::Existed) {
        eprintln!(
            "candor lab: the lab in {} already exists; nothing was made",
            report.root.display()
        );
    } else {
        eprintln!(
            "candor lab: the lab in {} already existed; what was not mounted is mounted again",
            report.root.display()
        );
    }
    for m in &report.members {
        println!("{}", m.member.mount_point.display());
    }
    Ok(OK)
}

fn list(dir: Option<PathBuf>, paths: bool) -> CmdResult {
    let dir = dir_or_current(dir)?;
    let Some(members) = candor_lab::list(&dir).map_err(failure)? else {
        if !paths {
            eprintln!("candor lab: no lab in {}", dir.display());
        }
        return Ok(OK);
    };
    if !paths {
        println!(
            "{:<5} {:>8}  {:<11} {:<20} MOUNT POINT",
            "FS", "SIZE", "LOOP", "STATE"
        );
    }
    for v in &members {
        if paths {
            if matches!(v.status, candor_lab::MemberStatus::Mounted { .. }) {
                println!("{}", v.member.mount_point.display());
            }
            continue;
        }
        println!(
            "{:<5} {:>8}  {:<11} {:<20} {}",
            v.member.fs.name(),
            format_bytes(v.member.size, ByteStyle::PROSE),
            v.loop_device().unwrap_or("-"),
            v.status.to_string(),
            v.member.mount_point.display()
        );
    }
    Ok(OK)
}

fn destroy(dir: Option<PathBuf>) -> CmdResult {
    let dir = dir_or_current(dir)?;
    let report = candor_lab::destroy(&dir).map_err(failure)?;
    if report.nothing_to_do() {
        eprintln!("candor lab: no lab in {}; nothing to do", dir.display());
        return Ok(OK);
    }
    for m in &report.removed {
        eprintln!("candor lab: removed {} ({})", m.fs, m.mount_point.display());
    }
    for p in &report.left {
        eprintln!(
            "candor lab: left {} in place: it holds files the lab did not make",
            p.display()
        );
    }
    Ok(OK)
}
