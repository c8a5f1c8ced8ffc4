//! A small program with a known I/O pattern, for testing `candor audit` on something whose
//! every call is known: it writes COUNT records of SIZE bytes to FILE (each record filled
//! with its own index), fsyncs and closes it, then opens it again, reads it back with the
//! same record size and checks every byte. Usage: candor-pattern FILE SIZE COUNT

use std::io::{Read, Write};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
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
    let t = Instant::now();
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)?;
    for i in 0..count {
        buf.fill((i % 251) as u8);
        f.write_all(&buf)?;
    }
    f.sync_all()?;
    drop(f);
    let w = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let mut f = std::fs::File::open(path)?;
    for i in 0..count {
        f.read_exact(&mut buf)?;
        if buf.iter().any(|&b| b != (i % 251) as u8) {
            return Err(std::io::Error::other(format!(
                "record {i} does not hold its pattern"
            )));
        }
    }
    drop(f);
    let r = t.elapsed().as_secs_f64();
    let bytes = size * count;
    println!("wrote {bytes} bytes in {w:.6} s; read {bytes} bytes in {r:.6} s; pattern verified");
    Ok(())
}
