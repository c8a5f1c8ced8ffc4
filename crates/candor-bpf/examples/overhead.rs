//! Measures what the tracer costs a traced process: 4 KiB random preads from a file in
//! the page cache, with the tracer attached (following this process) and without, in
//! interleaved rounds; prints each round and the medians.
//!
//!     sudo target/release/examples/overhead [ROUNDS] [SECONDS_PER_ROUND] [DIR]
//!
//! Environment: CANDOR_BPF_PHASES=0 loads the tracer as `candor run` does (no per-file
//! phases); CANDOR_BPF_SYSCALLS=off leaves the syscall programs out (`candor run` without
//! --trace-syscalls), =empty attaches do-nothing programs in their place (the kernel's own
//! cost of any syscall tracing); CANDOR_BPF_STATS=1 adds the kernel's run time per program.
//!
//! Defaults: 21 rounds, 0.5 s per round, the system temporary directory. Besides IOPS
//! (wall clock) it prints CPU nanoseconds per read (the thread's CPU clock), which other
//! processes on the machine disturb less.

use candor_bpf::{TraceOptions, Tracer};
use std::os::unix::fs::FileExt;
use std::time::{Duration, Instant};

const FILE_SIZE: u64 = 256 << 20;
const RECORD: usize = 4096;

fn main() {
    if let Err(e) = run() {
        eprintln!("overhead: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(21);
    let secs: f64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(0.5);
    let dir = args
        .next()
        .map(std::path::PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    // CANDOR_BPF_PHASES=0: measure the tracer as `candor run` loads it (no phases).
    let phases = std::env::var("CANDOR_BPF_PHASES")
        .map(|v| v != "0")
        .unwrap_or(true);
    let syscalls = std::env::var("CANDOR_BPF_SYSCALLS").unwrap_or_else(|_| "full".into());
    if !matches!(syscalls.as_str(), "full" | "empty" | "off") {
        return Err(format!(
            "CANDOR_BPF_SYSCALLS={syscalls}: use full, empty or off"
        ));
    }
    println!("tracer with phases: {phases}, syscall programs: {syscalls}");
    let path = dir.join(format!("candor-overhead-{}", std::process::id()));
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)
        .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
    let _cleanup = Remove(path.clone());
    let block = vec![0x5au8; 1 << 20];
    for i in 0..FILE_SIZE >> 20 {
        file.write_all_at(&block, i << 20)
            .map_err(|e| format!("write: {e}"))?;
    }
    let mut buf = vec![0u8; RECORD];
    // Warm: every page in the cache before the first round.
    for i in 0..FILE_SIZE / RECORD as u64 {
        file.read_exact_at(&mut buf, i * RECORD as u64)
            .map_err(|e| format!("read: {e}"))?;
    }
    let mut off_iops = Vec::new();
    let mut on_iops = Vec::new();
    let mut off_cpu = Vec::new();
    let mut on_cpu = Vec::new();
    let mut traced_ops = 0u64;
    let mut counted = 0u64;
    println!("round  tracer  IOPS      CPU ns/read");
    for r in 0..rounds {
        // Alternate which goes first so drift hurts both alike.
        let order = if r % 2 == 0 {
            [false, true]
        } else {
            [true, false]
        };
        for on in order {
            let tracer = if on {
                Some(Tracer::load(&options(phases, &syscalls)).map_err(|e| e.to_string())?)
            } else {
                None
            };
            let before = match &tracer {
                Some(t) => Some(t.snapshot().map_err(|e| e.to_string())?),
                None => None,
            };
            let cpu0 = thread_cpu_ns();
            let (ops, iops) =
                random_reads(&file, &mut buf, Duration::from_secs_f64(secs), r as u64)?;
            let cpu = (thread_cpu_ns() - cpu0) as f64 / ops as f64;
            if let (Some(t), Some(b)) = (&tracer, before) {
                let d = t.snapshot().map_err(|e| e.to_string())?.delta(&b);
                traced_ops += ops;
                counted += d.syscall("pread64").0;
            }
            println!(
                "{r:>5}  {:<6}  {iops:<8.0}  {cpu:.0}",
                if on { "on" } else { "off" }
            );
            if on {
                on_iops.push(iops);
                on_cpu.push(cpu);
            } else {
                off_iops.push(iops);
                off_cpu.push(cpu);
            }
        }
    }
    let (off, on) = (median(&mut off_iops), median(&mut on_iops));
    println!(
        "median IOPS: off {off:.0}, on {on:.0}; cost {:.1}% ({:.0} ns per call)",
        (1.0 - on / off) * 100.0,
        1e9 / on - 1e9 / off
    );
    let (off_c, on_c) = (median(&mut off_cpu), median(&mut on_cpu));
    println!(
        "median CPU per read: off {off_c:.0} ns, on {on_c:.0} ns; cost {:.1}% ({:.0} ns per call)",
        (on_c / off_c - 1.0) * 100.0,
        on_c - off_c
    );
    {
        // What one snapshot costs the caller (with this run's maps populated).
        let t = Tracer::load(&options(phases, &syscalls)).map_err(|e| e.to_string())?;
        random_reads(&file, &mut buf, Duration::from_millis(100), 7)?;
        let n = 200;
        let start = Instant::now();
        for _ in 0..n {
            t.snapshot().map_err(|e| e.to_string())?;
        }
        println!(
            "one snapshot: {:.0} us",
            start.elapsed().as_secs_f64() * 1e6 / n as f64
        );
    }
    if std::env::var_os("CANDOR_BPF_STATS").is_some() {
        // Per-program run time, measured by the kernel in one more traced round.
        let _stats = aya::sys::enable_stats(aya::sys::Stats::RunTime).map_err(|e| e.to_string())?;
        let t = Tracer::load(&options(phases, &syscalls)).map_err(|e| e.to_string())?;
        random_reads(&file, &mut buf, Duration::from_secs_f64(secs), 99)?;
        for p in aya::programs::loaded_programs().filter_map(Result::ok) {
            let name = p.name_as_str().unwrap_or("").to_string();
            if name.starts_with("candor_") && p.run_count() > 0 {
                println!(
                    "{name:<24} runs {:>10}  {:.0} ns/run",
                    p.run_count(),
                    p.run_time().as_nanos() as f64 / p.run_count() as f64
                );
            }
        }
        drop(t);
    }
    println!("preads issued while traced: {traced_ops}, counted by the tracer: {counted}");
    Ok(())
}

/// Random 4 KiB preads for `dur`; returns (operations, IOPS).
fn random_reads(
    file: &std::fs::File,
    buf: &mut [u8],
    dur: Duration,
    seed: u64,
) -> Result<(u64, f64), String> {
    let blocks = FILE_SIZE / RECORD as u64;
    let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ seed;
    let start = Instant::now();
    let mut ops = 0u64;
    loop {
        for _ in 0..256 {
            // xorshift64: cheap and good enough to spread offsets.
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let off = (x % blocks) * RECORD as u64;
            file.read_exact_at(buf, off)
                .map_err(|e| format!("read: {e}"))?;
            ops += 1;
        }
        let el = start.elapsed();
        if el >= dur {
            return Ok((ops, ops as f64 / el.as_secs_f64()));
        }
    }
}

fn options(phases: bool, syscalls: &str) -> TraceOptions {
    let mut o = TraceOptions::this_process();
    if !phases {
        o = o.without_phases();
    }
    match syscalls {
        "off" => o.without_syscalls(),
        "empty" => TraceOptions {
            empty_syscall_programs: true,
            ..o
        },
        _ => o,
    }
}

fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec to write into.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() {
        0.0
    } else {
        v[v.len() / 2]
    }
}

struct Remove(std::path::PathBuf);

impl Drop for Remove {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
