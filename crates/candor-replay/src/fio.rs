//! fio's iolog (version 2 and 3) read as a trace, and a trace written as version 3.
//! An iolog names files and, per line, one action: `add`, `open`, `close`, `read`, `write`
//! (offset and length), `sync`, `datasync`, `trim`, `wait`; version 3 puts the time in
//! milliseconds first. It has no threads: fio replays it as one job, and so does a trace
//! made from one.

use crate::format::{Call, FileEntry, Header, Kind, ThreadEntry, Trace};
use crate::strace::{O_CREAT, O_RDWR};
use std::collections::HashMap;
use std::fmt::Write;

/// Reads an iolog; the error is one sentence.
pub fn parse(text: &str) -> Result<Trace, String> {
    let mut lines = text.lines();
    let version = match lines.next().map(str::trim) {
        Some("fio version 2 iolog") => 2,
        Some("fio version 3 iolog") => 3,
        _ => return Err(
            "it is not a fio iolog of version 2 or 3 (its first line is not `fio version N iolog`)"
                .into(),
        ),
    };
    let mut ids: HashMap<String, u32> = HashMap::new();
    let mut sizes: HashMap<u32, u64> = HashMap::new();
    let mut fds: HashMap<u32, i32> = HashMap::new();
    let mut calls = Vec::new();
    let mut next_fd = 3;
    for (n, line) in lines.enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let mut w: Vec<&str> = line.split_whitespace().collect();
        let mut t_ms = 0u64;
        if version == 3 {
            t_ms = w
                .first()
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| format!("line {} of the iolog has no time first", n + 2))?;
            w.remove(0);
        }
        if w.len() < 2 {
            return Err(format!(
                "line {} of the iolog is not `FILE ACTION ...`",
                n + 2
            ));
        }
        let (name, action) = (w[0], w[1]);
        let next = ids.len() as u32 + 1;
        let id = *ids.entry(name.to_string()).or_insert(next);
        let fd = *fds.entry(id).or_insert_with(|| {
            next_fd += 1;
            next_fd - 1
        });
        let arg = |i: usize| -> Result<u64, String> {
            w.get(i)
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| format!("line {} of the iolog lacks a number after {action}", n + 2))
        };
        let mut c = Call {
            fd,
            file: Some(id),
            start_ns: t_ms * 1_000_000,
            ..Call::new(Kind::Fstat)
        };
        c.kind = Some(match action {
            "add" => continue,
            "open" => {
                c.flags = O_RDWR | O_CREAT;
                c.result = fd as i64;
                Kind::Open
            }
            "close" => Kind::Close,
            "read" | "write" => {
                c.offset = arg(2)?;
                c.size = arg(3)?;
                c.result = c.size as i64;
                let s = sizes.entry(id).or_default();
                *s = (*s).max(c.offset + c.size);
                if action == "read" {
                    Kind::Pread
                } else {
                    Kind::Pwrite
                }
            }
            "sync" => Kind::Fsync,
            "datasync" => Kind::Fdatasync,
            "trim" | "wait" => continue,
            other => {
                return Err(format!(
                    "line {} of the iolog has an action fio does not write: {other}",
                    n + 2
                ))
            }
        });
        calls.push(c);
    }
    let mut files: Vec<FileEntry> = ids
        .iter()
        .map(|(name, &id)| FileEntry {
            id,
            dir: false,
            size: Some(sizes.get(&id).copied().unwrap_or(0)),
            path: Some(name.clone()),
            ..Default::default()
        })
        .collect();
    files.sort_by_key(|f| f.id);
    Ok(Trace {
        header: Header {
            source: "fio-iolog".into(),
            complete: true,
            notes: vec![format!(
                "read from a fio iolog of version {version}: one thread, positional reads and writes"
            )],
            files,
            threads: vec![ThreadEntry {
                tid: 1,
                process: 1,
                parent: None,
                comm: "fio".into(),
            }],
            ..Default::default()
        },
        calls: vec![calls],
    })
}

/// The trace as fio iolog version 3: every thread's reads, writes, syncs, opens and
/// closes in the order they began; the other calls have no iolog action and are left out
/// (their count is returned).
pub fn write(t: &Trace) -> (String, u64) {
    let name = |id: u32| -> String {
        t.header
            .files
            .iter()
            .find(|f| f.id == id)
            .and_then(|f| f.path.clone())
            .unwrap_or_else(|| format!("file{id}"))
    };
    let mut all: Vec<&Call> = t.calls.iter().flatten().collect();
    all.sort_by_key(|c| c.start_ns);
    let mut out = String::from("fio version 3 iolog\n");
    let mut left = 0;
    // fio has files, not descriptors: a file opens at its first descriptor and closes at
    // its last.
    let mut open: HashMap<u32, u32> = HashMap::new();
    for f in t.header.files.iter().filter(|f| !f.dir) {
        let _ = writeln!(out, "0 {} add", name(f.id));
    }
    for c in all {
        let Some(id) = c.file else {
            left += 1;
            continue;
        };
        let ms = c.start_ns / 1_000_000;
        let n = open.entry(id).or_default();
        let action = match c.kind() {
            k if k.is_read() => "read",
            k if k.is_write() => "write",
            Kind::Open | Kind::Dup if c.result >= 0 => {
                *n += 1;
                if *n > 1 {
                    continue;
                }
                "open"
            }
            Kind::Close if c.result >= 0 => {
                *n = n.saturating_sub(1);
                if *n > 0 {
                    continue;
                }
                "close"
            }
            Kind::Fsync => "sync",
            Kind::Fdatasync => "datasync",
            _ => {
                left += 1;
                continue;
            }
        };
        if c.kind().is_data() {
            let _ = writeln!(out, "{ms} {} {action} {} {}", name(id), c.offset, c.size);
        } else {
            let _ = writeln!(out, "{ms} {} {action}", name(id));
        }
    }
    (out, left)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_iolog_round_trips() {
        let log = "fio version 3 iolog\n0 /d/f add\n0 /d/f open\n1 /d/f write 0 4096\n2 /d/f read 4096 512\n3 /d/f sync\n4 /d/f close\n";
        let t = parse(log).expect("parses");
        let kinds: Vec<&str> = t.calls[0].iter().map(|c| c.kind().name()).collect();
        assert_eq!(kinds, ["open", "pwrite", "pread", "fsync", "close"]);
        assert_eq!(t.header.files[0].size, Some(4608));
        let (text, left) = write(&t);
        assert_eq!(left, 0);
        assert_eq!(text, log);
        assert!(parse("fio version 1 iolog\n")
            .unwrap_err()
            .contains("not a fio iolog"));
    }
}
