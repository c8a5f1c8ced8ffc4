//! A small program with a known I/O pattern, for testing `candor audit` on something whose
//! every call is known: it writes COUNT records of SIZE bytes to FILE (each record filled
//! with its own index), fsyncs and closes it, then opens it again, reads it back with the
//! same record size and checks every byte. Usage: candor-pattern FILE SIZE COUNT
//!
//! With `--iozone-like FILE FILE_KB RECLEN_KB` it runs the six tests of `iozone -i0 -i1 -i2`
//! the way iozone does (one open..close per test; the write timer stops before the fsync)
//! and prints its figures in iozone's table layout, so the audit's iozone path can be
//! checked end to end where iozone itself is not installed.
//!
//! With CANDOR_PATTERN_HOLD_MS=N in the environment, each file stays open N ms before its
//! first and after its last call, outside the timed part: a sampling witness then sees
//! every open..close, however briefly the I/O itself lasts on a busy machine.

use std::io::{Read, Write};
use std::time::{Duration, Instant};

/// Keeps the file just opened (or about to be closed) open for CANDOR_PATTERN_HOLD_MS.
fn hold() {
    if let Some(ms) = std::env::var("CANDOR_PATTERN_HOLD_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        std::thread::sleep(Duration::from_millis(ms));
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--iozone-like") {
        let (Some(f), Some(Ok(kb)), Some(Ok(rk))) = (
            args.get(2),
            args.get(3).map(|s| s.parse::<usize>()),
            args.get(4).map(|s| s.parse::<usize>()),
        ) else {
            eprintln!("usage: candor-pattern --iozone-like FILE FILE_KB RECLEN_KB");
            std::process::exit(2);
        };
        if rk == 0 || kb < rk {
            eprintln!("candor-pattern: RECLEN_KB must be at least 1 and at most FILE_KB");
            std::process::exit(2);
        }
        if let Err(e) = iozone_like(f, kb, rk) {
            eprintln!("candor-pattern: {e}");
            std::process::exit(1);
        }
        return;
    }
    if args.len() != 4 {
        eprintln!("usage: candor-pattern FILE RECORD_SIZE COUNT");
        std::process::exit(2);
    }
    let (Ok(size), Ok(count)) = (args[2].parse::<usize>(), args[3].parse::<usize>()) else {
        eprintln!("candor-pattern: RECORD_SIZE and COUNT must be whole numbers");
        std::process::exit(2);
    };
    if size == 0 {
        eprintln!("candor-pattern: RECORD_SIZE must be at least 1");
        std::process::exit(2);
    }
    match run(&args[1], size, count) {
        Ok(()) => {}
        Err(e) => {
            eprintln!("candor-pattern: {e}");
            std::process::exit(1);
        }
    }
}

fn run(path: &str, size: usize, count: usize) -> std::io::Result<()> {
    let mut buf = vec![0u8; size];
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)?;
    hold();
    let t = Instant::now();
    for i in 0..count {
        buf.fill((i % 251) as u8);
        f.write_all(&buf)?;
    }
    f.sync_all()?;
    let w = t.elapsed().as_secs_f64();
    hold();
    drop(f);
    let mut f = std::fs::File::open(path)?;
    hold();
    let t = Instant::now();
    for i in 0..count {
        f.read_exact(&mut buf)?;
        if buf.iter().any(|&b| b != (i % 251) as u8) {
            return Err(std::io::Error::other(format!(
                "record {i} does not hold its pattern"
            )));
        }
    }
    let r = t.elapsed().as_secs_f64();
    hold();
    drop(f);
    let bytes = size * count;
    println!("wrote {bytes} bytes in {w:.6} s; read {bytes} bytes in {r:.6} s; pattern verified");
    Ok(())
}

/// Random record indexes covering every record once (a fixed permutation).
fn shuffled(n: usize) -> Vec<usize> {
    let mut v: Vec<usize> = (0..n).collect();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for i in (1..n).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.swap(i, (x % (i as u64 + 1)) as usize);
    }
    v
}

fn iozone_like(path: &str, kb: usize, rk: usize) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    let rs = rk * 1024;
    let n = kb / rk;
    let buf = vec![0xa5u8; rs];
    let mut rbuf = vec![0u8; rs];
    let rate = |secs: f64| ((n * rs) as f64 / 1024.0 / secs.max(1e-9)) as u64;
    let mut results = Vec::new();
    // write and rewrite: the timer stops before the fsync, as iozone's does without -e.
    for _ in 0..2 {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        hold();
        let t = Instant::now();
        for _ in 0..n {
            f.write_all(&buf)?;
        }
        let secs = t.elapsed().as_secs_f64();
        f.sync_all()?;
        hold();
        drop(f);
        results.push(rate(secs));
    }
    // read and reread.
    for _ in 0..2 {
        let mut f = std::fs::File::open(path)?;
        hold();
        let t = Instant::now();
        for _ in 0..n {
            f.read_exact(&mut rbuf)?;
        }
        results.push(rate(t.elapsed().as_secs_f64()));
        hold();
    }
    // random read, random write: every record once, in a shuffled order.
    let order = shuffled(n);
    let f = std::fs::File::open(path)?;
    hold();
    let t = Instant::now();
    for &i in &order {
        f.read_exact_at(&mut rbuf, (i * rs) as u64)?;
    }
    results.push(rate(t.elapsed().as_secs_f64()));
    hold();
    drop(f);
    let f = std::fs::OpenOptions::new().write(true).open(path)?;
    hold();
    let t = Instant::now();
    for &i in &order {
        f.write_all_at(&buf, (i * rs) as u64)?;
    }
    let secs = t.elapsed().as_secs_f64();
    f.sync_all()?;
    hold();
    drop(f);
    results.push(rate(secs));
    println!("\tIozone: Performance Test of File I/O (layout imitated by candor-pattern)");
    println!("\tCommand line used: iozone -i0 -i1 -i2 -s {kb}k -r {rk}k -f {path}");
    println!("\tOutput is in kBytes/sec");
    println!("{:>68}{:>10}", "random", "random");
    println!(
        "{:>16}{:>8}{:>9}{:>9}{:>8}{:>10}{:>8}{:>10}",
        "kB", "reclen", "write", "rewrite", "read", "reread", "read", "write"
    );
    let mut row = format!("{kb:>16}{rk:>8}");
    for r in &results {
        row.push_str(&format!("{r:>9}"));
    }
    println!("{row}");
    println!("\niozone test complete.");
    Ok(())
}
