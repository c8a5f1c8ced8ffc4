//! An `strace -f -tt -T -y` log read as a trace. Every line of a traced thread is
//! `[PID] HH:MM:SS.micro call(args) = result <seconds>` (or split in two by
//! `<unfinished ...>` / `<... call resumed>`); `-y` names each descriptor's file
//! (`3</data/x.db>`), which is how a call on a descriptor is tied to a file. Files outside
//! the traced directories (libraries, /proc, pipes, sockets) are left out and counted.
//!
//! - [`syntax`]: one call's text taken apart (arguments, descriptors, strings, times).
//! - [`flags`]: the flag words, read from their names.
//! - [`builder`]: the files, descriptors and threads the calls name, made into a trace.
//! - [`decode`]: each call made into the trace's call.

mod builder;
mod decode;
mod flags;
mod syntax;

pub use builder::{normalize, Builder};
pub use flags::{
    IOV_MAX, O_ACCMODE, O_APPEND, O_CLOEXEC, O_CREAT, O_DIRECT, O_DIRECTORY, O_DSYNC, O_EXCL,
    O_NOATIME, O_NOFOLLOW, O_NONBLOCK, O_RDWR, O_SYNC, O_TRUNC, O_WRONLY,
};
pub use syntax::errno_of;

use crate::format::Trace;
use std::collections::HashMap;
use syntax::{close_paren, split_args, tail, time_of};

/// What to keep of the log.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// The traced directories: files under them are kept (default: every file outside the
    /// system's directories).
    pub dirs: Vec<String>,
    /// Keep the files' paths in the trace's header.
    pub keep_paths: bool,
}

/// One call as strace writes it (or two lines joined), or as the recorder rebuilds it.
#[derive(Clone, Debug, Default)]
pub struct Line {
    pub tid: u32,
    /// The thread's process, when known (the recorder knows it; strace says it by clone).
    pub tgid: Option<u32>,
    pub time_ns: u64,
    pub name: String,
    pub args: Vec<String>,
    /// The return value as written, without its annotation.
    pub ret: String,
    /// The `<path>` of a returned descriptor.
    pub ret_path: Option<String>,
    pub dur_ns: u64,
}

/// Reads a whole log. The error is one sentence.
pub fn parse(text: &str, opts: &Options) -> Result<Trace, String> {
    let mut b = Builder::new(opts.clone());
    let mut pending: HashMap<u32, (u64, String, String)> = HashMap::new();
    let mut timed = 0usize;
    let mut first_pid = None;
    for (n, raw) in text.lines().enumerate() {
        let mut s = raw.trim_start();
        let mut tid = None;
        if let Some(r) = s.strip_prefix("[pid") {
            let (p, r) = r.trim_start().split_once(']').unwrap_or(("", r));
            tid = p.trim().parse().ok();
            s = r.trim_start();
        } else if let Some((p, r)) = s.split_once(' ') {
            if p.bytes().all(|c| c.is_ascii_digit()) && !p.is_empty() {
                tid = p.parse().ok();
                s = r.trim_start();
            }
        }
        let Some((stamp, rest)) = s.split_once(' ') else {
            continue;
        };
        let Some(t) = time_of(stamp) else {
            continue;
        };
        timed += 1;
        let tid = tid.unwrap_or(*first_pid.get_or_insert(1));
        first_pid.get_or_insert(tid);
        let rest = rest.trim_start();
        if rest.starts_with("+++") || rest.starts_with("---") {
            continue;
        }
        let (start, name, text) = if let Some(r) = rest.strip_prefix("<... ") {
            // "<... read resumed>, 4096) = 4096 <0.1>"
            let Some((what, after)) = r.split_once('>') else {
                continue;
            };
            let name = what.trim_end_matches(" resumed").trim().to_string();
            let Some((t0, n0, first)) = pending.remove(&tid) else {
                continue;
            };
            if n0 != name {
                continue;
            }
            (t0, name, format!("{first}{after}"))
        } else {
            let Some(p) = rest.find('(') else {
                continue;
            };
            let name = rest[..p].to_string();
            if !name.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_') {
                continue;
            }
            if let Some(first) = rest.strip_suffix("<unfinished ...>") {
                pending.insert(tid, (t, name, first[p + 1..].to_string()));
                continue;
            }
            (t, name.clone(), rest[p + 1..].to_string())
        };
        let Some(close) = close_paren(&text, 0) else {
            continue;
        };
        let args = split_args(&text[..close]);
        let Some((ret, ret_path, dur)) = tail(&text[close + 1..]) else {
            continue;
        };
        let _ = n;
        b.line(Line {
            tid,
            tgid: None,
            time_ns: start * 1000,
            name,
            args,
            ret,
            ret_path,
            dur_ns: dur * 1000,
        });
    }
    if timed == 0 {
        return Err(
            "it is not an strace log with times: record it with `strace -f -tt -T -y -o LOG CMD`"
                .into(),
        );
    }
    Ok(b.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Kind;

    const LOG: &str = r#"4000 10:00:00.000100 openat(AT_FDCWD</w>, "d/a.db", O_RDWR|O_CREAT|O_CLOEXEC, 0644) = 3</w/d/a.db> <0.000020>
4000 10:00:00.000200 pread64(3</w/d/a.db>, "SQLite format 3\0\20\0"..., 100, 0) = 100 <0.000005>
4000 10:00:00.000300 write(3</w/d/a.db>, "abc\"d"..., 4096 <unfinished ...>
4001 10:00:00.000310 read(5</etc/passwd>, "", 10) = 0 <0.000001>
4000 10:00:00.000400 <... write resumed>) = 4096 <0.000050>
4000 10:00:00.000500 fdatasync(3</w/d/a.db>) = 0 <0.000900>
4000 10:00:00.001500 unlink("/w/d/a.db-journal") = -1 ENOENT (No such file or directory) <0.000004>
4000 10:00:00.001600 close(3</w/d/a.db>) = 0 <0.000002>
4000 10:00:00.001700 +++ exited with 0 +++
"#;

    #[test]
    fn a_log_becomes_its_calls() {
        let t = parse(
            LOG,
            &Options {
                dirs: vec!["/w".into()],
                keep_paths: true,
            },
        )
        .expect("parses");
        let kinds: Vec<&str> = t.calls[0].iter().map(|c| c.kind().name()).collect();
        assert_eq!(
            kinds,
            ["open", "pread", "write", "fdatasync", "unlink", "close"]
        );
        let w = &t.calls[0][2];
        assert_eq!((w.offset, w.size, w.result), (0, 4096, 4096));
        assert_eq!((w.start_ns, w.dur_ns), (200_000, 50_000));
        assert_eq!(t.calls[0][4].result, -2);
        assert_eq!(t.header.outside_calls, 1);
        let db = &t.header.files[0];
        assert_eq!(db.path.as_deref(), Some("/w/d/a.db"));
        // Read 100 bytes before writing: it existed with at least 100.
        assert_eq!(db.size, Some(100));
        assert_eq!(t.header.files[1].size, None);
    }

    /// A shell's descriptors: the children it forks write and read through the open file
    /// descriptions they inherit (and dup), sharing their positions with the shell, as the
    /// kernel does: each write lands after the one before, whoever made it, even after the
    /// shell reused the descriptor's number, and the second child's read starts where the
    /// first's ended (so the file had at least 20 bytes).
    #[test]
    fn forked_children_share_the_positions_of_the_descriptions_they_inherit() {
        const SHELL: &str = r#"5000 10:00:00.000100 openat(AT_FDCWD</w>, "f", O_WRONLY|O_CREAT|O_TRUNC, 0666) = 3</w/f> <0.000010>
5000 10:00:00.000150 openat(AT_FDCWD</w>, "in", O_RDONLY) = 4</w/in> <0.000010>
5000 10:00:00.000200 write(3</w/f>, "hi\n", 3) = 3 <0.000005>
5000 10:00:00.000300 clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|SIGCHLD, child_tidptr=0x7f00) = 5001 <0.000050>
5001 10:00:00.000400 dup2(3</w/f>, 1) = 1</w/f> <0.000002>
5001 10:00:00.000500 write(1</w/f>, ""..., 4096) = 4096 <0.000010>
5001 10:00:00.000600 write(3</w/f>, ""..., 100) = 100 <0.000010>
5001 10:00:00.000650 read(4</w/in>, ""..., 10) = 10 <0.000010>
5000 10:00:00.000700 write(3</w/f>, "x", 1) = 1 <0.000003>
5000 10:00:00.000750 clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|SIGCHLD, child_tidptr=0x7f00) = 5002 <0.000050>
5002 10:00:00.000760 read(4</w/in>, ""..., 10) = 10 <0.000010>
5000 10:00:00.000800 close(3</w/f>) = 0 <0.000002>
5000 10:00:00.000810 openat(AT_FDCWD</w>, "g", O_WRONLY|O_CREAT|O_TRUNC, 0666) = 3</w/g> <0.000010>
5000 10:00:00.000820 write(3</w/g>, ""..., 50) = 50 <0.000003>
5001 10:00:00.000900 write(3</w/f>, ""..., 10) = 10 <0.000010>
"#;
        let t = parse(
            SHELL,
            &Options {
                dirs: vec!["/w".into()],
                keep_paths: true,
            },
        )
        .expect("parses");
        let offsets = |kind: &str| -> Vec<(u64, u64)> {
            let mut v: Vec<(u64, u64, u64)> = t
                .calls
                .iter()
                .flatten()
                .filter(|c| c.kind().name() == kind)
                .map(|c| (c.start_ns, c.offset, c.size))
                .collect();
            v.sort();
            v.into_iter().map(|(_, o, n)| (o, n)).collect()
        };
        // The child's descriptor 3 still names f's description after the shell closed its
        // own and opened g as 3.
        assert_eq!(
            offsets("write"),
            [
                (0, 3),
                (3, 4096),
                (4099, 100),
                (4199, 1),
                (0, 50),
                (4200, 10)
            ]
        );
        assert_eq!(offsets("read"), [(0, 10), (10, 10)]);
        let input = t
            .header
            .files
            .iter()
            .find(|f| f.path.as_deref() == Some("/w/in"))
            .expect("the input file");
        assert_eq!(input.size, Some(20));
    }

    /// link, linkat, symlink and symlinkat: each names the files it joins; a symbolic
    /// link's relative target is relative to the link's own directory, and a target
    /// outside the traced directories is no file of the trace.
    #[test]
    fn links_name_the_files_they_join() {
        const LINKS: &str = r#"6000 10:00:00.000100 link("/w/tmp/m", "/w/new/m") = 0 <0.000010>
6000 10:00:00.000200 linkat(AT_FDCWD</w>, "new/m", 3</w/cur>, "m2", 0) = 0 <0.000010>
6000 10:00:00.000300 symlink("m", "/w/new/l") = 0 <0.000010>
6000 10:00:00.000400 symlinkat("/etc/passwd", AT_FDCWD</w>, "p") = 0 <0.000010>
6000 10:00:00.000500 symlink("/w/tmp/m", "/elsewhere/l") = 0 <0.000010>
"#;
        let t = parse(
            LINKS,
            &Options {
                dirs: vec!["/w".into()],
                keep_paths: true,
            },
        )
        .expect("parses");
        let path = |id: Option<u32>| {
            id.and_then(|i| t.header.files.iter().find(|f| f.id == i))
                .and_then(|f| f.path.clone())
        };
        let got: Vec<(&str, Option<String>, Option<String>)> = t.calls[0]
            .iter()
            .map(|c| (c.kind().name(), path(c.file), path(c.file2)))
            .collect();
        let some = |s: &str| Some(s.to_string());
        assert_eq!(
            got,
            [
                ("link", some("/w/tmp/m"), some("/w/new/m")),
                ("link", some("/w/new/m"), some("/w/cur/m2")),
                ("symlink", some("/w/new/l"), some("/w/new/m")),
                ("symlink", some("/w/p"), None),
            ]
        );
        // The link made outside the traced directories is a call left out.
        assert_eq!(t.header.outside_calls, 1);
        let m = t
            .header
            .files
            .iter()
            .find(|f| f.path.as_deref() == Some("/w/tmp/m"));
        assert_eq!(
            m.map(|f| f.size.is_some()),
            Some(true),
            "it existed: linked"
        );
    }

    /// Copies inside the kernel, as strace writes them, are the reads and writes they
    /// stand for: cp's copy_file_range at the descriptors' positions, one at offsets
    /// handed by pointer, sendfile's `[20480] => [24576]`, splice through a pipe (whose
    /// end is no file of the trace); one whose offset is not a number is named, not kept,
    /// and the trace is then not complete.
    #[test]
    fn kernel_copies_in_a_log_are_their_reads_and_writes() {
        const COPIES: &str = r#"7000 10:00:00.000100 openat(AT_FDCWD</w>, "a", O_RDONLY) = 3</w/a> <0.000010>
7000 10:00:00.000200 openat(AT_FDCWD</w>, "b", O_WRONLY|O_CREAT, 0644) = 4</w/b> <0.000010>
7000 10:00:00.000300 copy_file_range(3</w/a>, NULL, 4</w/b>, NULL, 9223372035781033984, 0) = 100000 <0.000368>
7000 10:00:00.000400 copy_file_range(3</w/a>, [8192], 4</w/b>, [16384], 4096, 0) = 4096 <0.000064>
7000 10:00:00.000500 sendfile(4</w/b>, 3</w/a>, [20480] => [24576], 4096) = 4096 <0.000039>
7000 10:00:00.000600 splice(3</w/a>, [30000], 6<pipe:[30342]>, NULL, 1000, 0) = 1000 <0.000031>
7000 10:00:00.000700 splice(5<pipe:[30342]>, NULL, 4</w/b>, [50000], 1000, 0) = 1000 <0.000066>
7000 10:00:00.000800 copy_file_range(3</w/a>, 0x7ffd0000, 4</w/b>, NULL, 10, 0) = 10 <0.000010>
"#;
        let t = parse(
            COPIES,
            &Options {
                dirs: vec!["/w".into()],
                keep_paths: true,
            },
        )
        .expect("parses");
        let got: Vec<(&str, u64, i64)> = t.calls[0]
            .iter()
            .filter(|c| c.kind().is_data())
            .map(|c| (c.kind().name(), c.offset, c.result))
            .collect();
        assert_eq!(
            got,
            [
                ("read", 0, 100000),
                ("write", 0, 100000),
                ("pread", 8192, 4096),
                ("pwrite", 16384, 4096),
                ("pread", 20480, 4096),
                ("write", 100000, 4096),
                ("pread", 30000, 1000),
                ("pwrite", 50000, 1000),
            ]
        );
        assert!(!t.header.complete);
        let notes = t.header.notes.join(" | ");
        assert!(
            notes.contains("with 2 copy_file_range calls (104096 bytes), 1 sendfile call (4096 bytes), 2 splice calls (2000 bytes): the trace holds each"),
            "{notes}"
        );
        assert!(
            notes.contains("with 1 copy_file_range call (10 bytes): those copies"),
            "{notes}"
        );
        // The pipe's ends are not counted as calls left out.
        assert_eq!(t.header.outside_calls, 0, "{notes}");
    }

    /// Directory reads, advice, readahead, flushes and truncate by path are in the trace
    /// (format 2): getdents64 on the directory's descriptor, which is then a directory;
    /// posix_fadvise with its advice by name; sync and syncfs as one flush; truncate
    /// giving the file its new size.
    #[test]
    fn directory_reads_hints_flushes_and_truncates_are_kept() {
        const MORE: &str = r#"8000 10:00:00.000100 openat(AT_FDCWD</w>, "d", O_RDONLY|O_DIRECTORY) = 3</w/d> <0.000010>
8000 10:00:00.000200 getdents64(3</w/d>, 0x55d0 /* 4 entries */, 32768) = 112 <0.000020>
8000 10:00:00.000300 getdents64(3</w/d>, 0x55d0 /* 0 entries */, 32768) = 0 <0.000002>
8000 10:00:00.000400 openat(AT_FDCWD</w>, "f", O_RDONLY) = 4</w/f> <0.000010>
8000 10:00:00.000500 fadvise64(4</w/f>, 0, 0, POSIX_FADV_DONTNEED) = 0 <0.000010>
8000 10:00:00.000600 readahead(4</w/f>, 4096, 65536) = 0 <0.000010>
8000 10:00:00.000700 syncfs(4</w/f>) = 0 <0.000100>
8000 10:00:00.000800 sync() = 0 <0.000100>
8000 10:00:00.000900 truncate("/w/f", 8192) = 0 <0.000010>
8000 10:00:00.001000 syncfs(5</etc/passwd>) = 0 <0.000100>
"#;
        let t = parse(
            MORE,
            &Options {
                dirs: vec!["/w".into()],
                keep_paths: true,
            },
        )
        .expect("parses");
        let got: Vec<(&str, u64, u64, u32, i64)> = t.calls[0]
            .iter()
            .filter(|c| c.kind() != Kind::Open)
            .map(|c| (c.kind().name(), c.offset, c.size, c.flags, c.result))
            .collect();
        assert_eq!(
            got,
            [
                ("getdents64", 0, 32768, 0, 112),
                ("getdents64", 0, 32768, 0, 0),
                ("fadvise", 0, 0, 4, 0),
                ("readahead", 4096, 65536, 0, 0),
                ("syncfs", 0, 0, 0, 0),
                ("syncfs", 0, 0, 0, 0),
                ("truncate", 8192, 0, 0, 0),
            ]
        );
        let dir = t
            .header
            .files
            .iter()
            .find(|f| f.path.as_deref() == Some("/w/d"));
        assert_eq!(dir.map(|f| f.dir), Some(true));
        // The syncfs of a file outside the traced directories is a call left out.
        assert_eq!(t.header.outside_calls, 1);
        assert_eq!(crate::format::encode(&t)[8..10], [2, 0]);
    }
}
