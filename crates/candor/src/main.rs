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

/// glibc's malloc reads two kernel files the first time it needs them, from inside
/// whichever thread it is serving: /sys/devices/system/cpu/online when a thread first needs
/// a ninth arena (to set its limit on arenas), and /proc/sys/vm/overcommit_memory when it
/// first gives the top of a thread's heap back to the kernel. In a replay of many threads
/// that is inside the region whose system calls the kernel counts, which then holds an
/// open, a read and a close no trace made (a recording of 29 threads replayed as "3 openat
/// calls for the runner's 2", one of 400 processes as "2 openat calls for the runner's
/// 1"). Setting the limit on arenas at start (glibc's own default, eight per CPU), and a
/// trim threshold larger than a thread's heap can grow (64 MiB), means malloc reads
/// neither. candor's large buffers are mapped, not taken from the heaps, and still go back
/// to the kernel when freed.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn settle_malloc() {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let arenas = i32::try_from(cpus.saturating_mul(8)).unwrap_or(i32::MAX);
    // SAFETY: mallopt with integer parameters, before any other thread exists.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, arenas);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 256 << 20);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn settle_malloc() {}

fn main() {
    settle_malloc();
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
