//! The recorder's calls (`candor audit --record`) made into a trace: each call the kernel
//! handed over (its number, arguments, result, the paths it named) becomes the line strace
//! would have written for it, and the same builder as for an strace log turns the lines
//! into the trace. The descriptors' files are followed from the opens and dups recorded;
//! one opened before the recording is read from the process's descriptor table while it
//! lives, and a relative path is resolved against its working directory.

use crate::strace::{Builder, Line, Options};
use crate::Trace;
use std::collections::HashMap;

/// A recorded call (the recorder's `RawCall`, without the dependency).
#[derive(Clone, Debug, Default)]
pub struct Recorded {
    pub ts: u64,
    pub dur: u64,
    pub ret: i64,
    pub args: [u64; 6],
    pub extra: u64,
    pub tid: u32,
    pub tgid: u32,
    pub nr: u32,
    pub p1: String,
    pub p2: String,
}

/// The recorder's fork record number.
pub const FORK: u32 = 0xFFFF;
/// The recorder's record of pages of a mapped file faulted in or dirtied: args[0] the
/// file's device, args[1] its inode, args[2] the first page, args[3] the pages, args[4] 1
/// for a write (dirtied through a shared mapping).
pub const MAPPED: u32 = 0xFFFE;
/// The recorder's record of an io_uring request at its completion: args[0] the descriptor
/// its SQE named, args[1] the position (-1: the file's own), args[2] the length (iovecs
/// for the vectored ones), args[3] the opcode, args[4] 1 for a registered file; ret the
/// result; ts, tid and tgid its submission's (the submitting thread's).
pub const URING: u32 = 0xFFFD;

/// Recorded calls kept while the application runs, made into a trace after it ends: the
/// recorder's thread only packs each call (varints, 20 to 30 bytes) and reads each new
/// process's descriptor table once, so it takes little CPU from the application it
/// records; the conversion (paths resolved, strace-like lines built and parsed) comes
/// after. Past `SPOOL_LIMIT` bytes the calls held are converted at once, which bounds the
/// memory a long recording takes.
pub struct Spool {
    buf: Vec<u8>,
    last_ts: u64,
    conv: Converter,
}

/// The packed calls held at most before they are converted (bytes).
const SPOOL_LIMIT: usize = 256 << 20;

impl Spool {
    pub fn new(opts: Options) -> Spool {
        Spool {
            buf: Vec::with_capacity(1 << 20),
            last_ts: 0,
            conv: Converter::new(opts),
        }
    }

    /// `dir` is the directory the recorded command was started in: its relative paths are
    /// resolved against it even when it ends before /proc can say.
    pub fn starts_in(mut self, dir: String) -> Spool {
        self.conv.start_cwd = Some(dir);
        self
    }

    /// Keeps one call; a process seen for the first time has its descriptors read now.
    pub fn push(&mut self, c: &Recorded) {
        use crate::format::{put_varint, zigzag};
        self.conv.seen(c.tgid);
        if c.nr == FORK {
            let child = c.args[0] as u32;
            // A new thread shares its process's descriptors: nothing to copy at its fork.
            // Known while it lives (its Tgid); one gone already is taken for a process, and
            // so is one ending, whose status shows Tgid 0 while it is being reaped (taken
            // for a thread, a short-lived child lost its parent's descriptors, and its
            // calls on them: one `echo` in a few hundred of a shell loop).
            let tgid = candor_procfs::Kernel::system()
                .pid_status(candor_procfs::Pid::Id(child))
                .ok()
                .and_then(|s| s.get("Tgid").and_then(|t| t.trim().parse::<u32>().ok()));
            if tgid.is_some_and(|t| t != 0 && t != child) {
                self.conv.threads.insert(child);
            } else {
                self.conv.seen(child);
            }
        }
        let b = &mut self.buf;
        put_varint(b, zigzag(c.ts.wrapping_sub(self.last_ts) as i64));
        self.last_ts = c.ts;
        put_varint(b, c.dur);
        put_varint(b, zigzag(c.ret));
        for a in c.args {
            put_varint(b, zigzag(a as i64));
        }
        put_varint(b, c.extra);
        put_varint(b, c.tid as u64);
        put_varint(b, c.tgid as u64);
        put_varint(b, c.nr as u64);
        for p in [&c.p1, &c.p2] {
            put_varint(b, p.len() as u64);
            b.extend_from_slice(p.as_bytes());
        }
        if self.buf.len() >= SPOOL_LIMIT {
            self.convert();
        }
    }

    /// Converts the calls held, in order, and empties the spool. A first pass finds, per
    /// process and descriptor, the first call that changed what the descriptor names.
    fn convert(&mut self) {
        let buf = std::mem::take(&mut self.buf);
        let mut r = crate::format::Reader { b: &buf, at: 0 };
        let mut ts = 0u64;
        while r.at < buf.len() {
            let Some(c) = unpack(&mut r, &mut ts) else {
                break;
            };
            if let Some(fd) = changed_fd(&c) {
                let e = self.conv.changed.entry((c.tgid, fd)).or_insert(c.ts);
                *e = (*e).min(c.ts);
            }
        }
        let mut r = crate::format::Reader { b: &buf, at: 0 };
        let mut ts = 0u64;
        while r.at < buf.len() {
            let Some(c) = unpack(&mut r, &mut ts) else {
                break;
            };
            self.conv.add(c);
        }
        self.buf = buf;
        self.buf.clear();
    }

    /// The trace of every call kept.
    pub fn finish(mut self, lost: u64) -> Trace {
        self.convert();
        self.conv.finish(lost)
    }
}

/// The descriptor a call made name another file: the one an open or a dup returned, the
/// one a close closed.
fn changed_fd(c: &Recorded) -> Option<i64> {
    match c.nr {
        2 | 85 | 257 | 437 | 32 | 33 | 292 if c.ret >= 0 => Some(c.ret),
        72 if c.ret >= 0 && (c.args[1] == 0 || c.args[1] == 1030) => Some(c.ret),
        3 => Some(c.args[0] as i32 as i64),
        _ => None,
    }
}

/// One packed call back (`Spool::push`'s layout); None when the bytes end early.
fn unpack(r: &mut crate::format::Reader, ts: &mut u64) -> Option<Recorded> {
    use crate::format::unzigzag;
    let mut v = || r.varint().ok();
    let mut c = Recorded::default();
    *ts = ts.wrapping_add(unzigzag(v()?) as u64);
    c.ts = *ts;
    c.dur = v()?;
    c.ret = unzigzag(v()?);
    for a in c.args.iter_mut() {
        *a = unzigzag(v()?) as u64;
    }
    c.extra = v()?;
    c.tid = v()? as u32;
    c.tgid = v()? as u32;
    c.nr = v()? as u32;
    let mut paths = [String::new(), String::new()];
    for p in paths.iter_mut() {
        let n = r.varint().ok()? as usize;
        let bytes = r.b.get(r.at..r.at.checked_add(n)?)?;
        *p = String::from_utf8_lossy(bytes).into_owned();
        r.at += n;
    }
    let [p1, p2] = paths;
    c.p1 = p1;
    c.p2 = p2;
    Some(c)
}

/// Turns recorded calls into a trace.
pub struct Converter {
    b: Builder,
    /// The files mapped by the recorded mmap calls, by (device, inode) as the kernel names
    /// them in the pages faulted through a mapping.
    mapped: HashMap<(u32, u64), String>,
    /// Each process's descriptors the recorded calls name a file for, per process (a
    /// fork copies its parent's table).
    fds: HashMap<u32, HashMap<i64, String>>,
    /// Each process's descriptor table as read when it was first seen (`Converter::seen`):
    /// the files of descriptors it had before any recorded open.
    first_fds: HashMap<(u32, i64), String>,
    /// When each process's table was read (CLOCK_MONOTONIC ns), and the first recorded
    /// call that changed each (process, descriptor): a reading made after such a change
    /// shows the descriptor as the change left it, not as it was before, so it is not
    /// used for that descriptor (the process runs ahead of the recorder's thread, and a
    /// shell `dup2`s a file onto its standard output and back again in microseconds).
    read_at: HashMap<u32, u64>,
    changed: HashMap<(u32, i64), u64>,
    seen: std::collections::HashSet<u32>,
    /// Working directories as /proc showed them when each process was first seen (read
    /// while it lives; a process that ended before has none there).
    cwd: HashMap<u32, String>,
    /// Working directories the recorded calls establish, which /proc's reading cannot
    /// contradict: the command's own (the directory it was started in, `Spool::starts_in`),
    /// a child's from its parent's at the fork, and each successful chdir or fchdir.
    known_cwd: HashMap<u32, String>,
    /// The directory the command was started in, and the command's process once seen (the
    /// process of the first call converted).
    start_cwd: Option<String>,
    root: Option<u32>,
    /// Forks that made a thread, not a process (`Spool::push` asks /proc).
    threads: std::collections::HashSet<u32>,
    t0: Option<u64>,
    pub calls: u64,
    pub io_uring_enters: u64,
    /// io_uring requests kept as the calls they stand for, and those on registered files
    /// (whose descriptor the trace cannot name), not kept.
    pub uring_kept: u64,
    pub uring_fixed: u64,
}

fn quoted(p: &str) -> String {
    format!("\"{}\"", p.replace('\\', "\\\\").replace('"', "\\\""))
}

/// The flags argument of newfstatat and statx as strace prints the one that matters here.
fn at_empty_path(flags: u64) -> &'static str {
    if flags & 0x1000 != 0 {
        "AT_EMPTY_PATH"
    } else {
        "0"
    }
}

fn open_flags(v: u64) -> String {
    format!("0x{:x}", v as u32)
}

impl Converter {
    pub fn new(opts: Options) -> Converter {
        Converter {
            b: Builder::new(opts),
            mapped: HashMap::new(),
            fds: HashMap::new(),
            first_fds: HashMap::new(),
            read_at: HashMap::new(),
            changed: HashMap::new(),
            seen: Default::default(),
            cwd: HashMap::new(),
            known_cwd: HashMap::new(),
            start_cwd: None,
            root: None,
            threads: Default::default(),
            t0: None,
            calls: 0,
            io_uring_enters: 0,
            uring_kept: 0,
            uring_fixed: 0,
        }
    }

    fn fd_path(&mut self, tgid: u32, fd: i64) -> Option<String> {
        if fd < 0 {
            return None;
        }
        if let Some(p) = self.fds.get(&tgid).and_then(|t| t.get(&fd)) {
            return Some(p.clone());
        }
        if let Some(p) = self.first_fds.get(&(tgid, fd)) {
            let after_a_change = match (self.changed.get(&(tgid, fd)), self.read_at.get(&tgid)) {
                (Some(c), Some(r)) => c <= r,
                _ => false,
            };
            return (!after_a_change).then(|| p.clone());
        }
        if self.seen.contains(&tgid) {
            return None;
        }
        let p = candor_procfs::Kernel::system()
            .pid_fd(candor_procfs::Pid::Id(tgid), u32::try_from(fd).ok()?)
            .ok()?;
        let p = p.to_string_lossy().into_owned();
        self.fds.entry(tgid).or_default().insert(fd, p.clone());
        Some(p)
    }

    fn fd(&mut self, tgid: u32, fd: i64) -> String {
        match self.fd_path(tgid, fd) {
            Some(p) => format!("{fd}<{p}>"),
            None => fd.to_string(),
        }
    }

    fn cwd_of(&mut self, tgid: u32) -> Option<String> {
        if let Some(c) = self.known_cwd.get(&tgid) {
            return Some(c.clone());
        }
        if let Some(c) = self.cwd.get(&tgid) {
            return Some(c.clone());
        }
        let c = candor_procfs::Kernel::system()
            .pid_cwd(candor_procfs::Pid::Id(tgid))
            .ok()?;
        let c = c.to_string_lossy().into_owned();
        self.cwd.insert(tgid, c.clone());
        Some(c)
    }

    fn dirfd(&mut self, tgid: u32, v: u64) -> String {
        let fd = v as i32 as i64;
        if fd == -100 {
            return match self.cwd_of(tgid) {
                Some(c) => format!("AT_FDCWD<{c}>"),
                None => "AT_FDCWD".into(),
            };
        }
        self.fd(tgid, fd)
    }

    /// The absolute path of a path argument.
    fn absolute(&mut self, tgid: u32, dirfd: Option<u64>, p: &str) -> String {
        if p.starts_with('/') {
            return p.to_string();
        }
        let dir = match dirfd.map(|v| v as i32 as i64) {
            None | Some(-100) => self.cwd_of(tgid),
            Some(fd) => self.fd_path(tgid, fd),
        };
        match dir {
            Some(d) => format!("{}/{}", d.trim_end_matches('/'), p),
            None => p.to_string(),
        }
    }

    /// Reads, once per process, its working directory and descriptor table while it lives:
    /// what a call of it names that no recorded call opened is looked up there when the
    /// calls are converted, after the recording.
    pub fn seen(&mut self, tgid: u32) {
        if !self.seen.insert(tgid) {
            return;
        }
        let k = candor_procfs::Kernel::system();
        let pid = candor_procfs::Pid::Id(tgid);
        // The clock of the recorded calls' times.
        self.read_at.insert(tgid, candor_procfs::monotonic_ns());
        if let Ok(c) = k.pid_cwd(pid) {
            self.cwd
                .entry(tgid)
                .or_insert_with(|| c.to_string_lossy().into_owned());
        }
        for (fd, p) in k.pid_fds(pid).unwrap_or_default() {
            self.first_fds
                .insert((tgid, fd as i64), p.to_string_lossy().into_owned());
        }
    }

    pub fn add(&mut self, c: Recorded) {
        let t0 = *self.t0.get_or_insert(c.ts);
        let tg = c.tgid;
        if self.root.is_none() {
            self.root = Some(tg);
            if let Some(d) = self.start_cwd.clone() {
                self.known_cwd.insert(tg, d);
            }
        }
        let a = c.args;
        let num = |v: u64| v.to_string();
        let fdn = a[0] as i32 as i64;
        let mut ret_path = None;
        let (name, args): (&str, Vec<String>) = match c.nr {
            URING => {
                // An io_uring request, kept as the call it stands for, made by the thread
                // that submitted it at its submission (a replay makes it synchronously).
                if a[4] != 0 {
                    self.uring_fixed += 1;
                    return;
                }
                let fd = a[0] as i32 as i64;
                let pos = a[1] as i64;
                let at = (pos >= 0).then(|| num(pos as u64));
                let (name, mut args): (&str, Vec<String>) = match (a[3], &at) {
                    (22 | 4, Some(_)) => {
                        ("pread64", vec![self.fd(tg, fd), "\"\"".into(), num(a[2])])
                    }
                    (22 | 4, None) => ("read", vec![self.fd(tg, fd), "\"\"".into(), num(a[2])]),
                    (23 | 5, Some(_)) => {
                        ("pwrite64", vec![self.fd(tg, fd), "\"\"".into(), num(a[2])])
                    }
                    (23 | 5, None) => ("write", vec![self.fd(tg, fd), "\"\"".into(), num(a[2])]),
                    (1 | 60, Some(_)) => ("preadv", vec![self.fd(tg, fd), "[]".into(), num(a[2])]),
                    (1 | 60, None) => ("readv", vec![self.fd(tg, fd), "[]".into(), num(a[2])]),
                    (2 | 61, Some(_)) => ("pwritev", vec![self.fd(tg, fd), "[]".into(), num(a[2])]),
                    (2 | 61, None) => ("writev", vec![self.fd(tg, fd), "[]".into(), num(a[2])]),
                    (3, _) => ("fsync", vec![self.fd(tg, fd)]),
                    _ => return,
                };
                if let (Some(p), true) = (at, name.starts_with('p')) {
                    args.push(p);
                }
                self.uring_kept += 1;
                (name, args)
            }
            MAPPED => {
                // Pages of a file mapped by a recorded mmap: kept for a file in the traced
                // directories (those of libraries and other files are not calls, and are
                // not counted as calls left out).
                let Some(path) = self.mapped.get(&(a[0] as u32, a[1])).cloned() else {
                    return;
                };
                if !self.b.inside(&path) {
                    return;
                }
                (
                    "mapped",
                    vec![
                        quoted(&path),
                        num(a[2] << 12),
                        num(a[3] << 12),
                        if a[4] != 0 { "write" } else { "read" }.into(),
                    ],
                )
            }
            FORK => {
                // A new process starts with a copy of its parent's descriptors: those the
                // recorded calls say name a file go on naming it in the child (a shell's
                // `exec 3>f` and then `dd ... >&3`: dd writes the file through a descriptor
                // it never opened, and may have ended before its own table could be read).
                // The child's own opens, dups and closes come after this line. A thread
                // shares its process's table, which is keyed by process already.
                let child = a[0] as u32;
                if child != tg && !self.threads.contains(&child) {
                    // And its working directory, which it may change before /proc is read.
                    if let Some(d) = self.cwd_of(tg) {
                        self.known_cwd.insert(child, d);
                    }
                    let inherited = self.fds.get(&tg).cloned().unwrap_or_default();
                    self.fds.insert(child, inherited);
                }
                self.b.line(Line {
                    tid: c.tid,
                    tgid: Some(tg),
                    time_ns: c.ts.saturating_sub(t0),
                    name: "clone".into(),
                    ret: a[0].to_string(),
                    ..Default::default()
                });
                return;
            }
            0 | 1 => (
                if c.nr == 0 { "read" } else { "write" },
                vec![self.fd(tg, fdn), "\"\"".into(), num(a[2])],
            ),
            17 | 18 => (
                if c.nr == 17 { "pread64" } else { "pwrite64" },
                vec![self.fd(tg, fdn), "\"\"".into(), num(a[2]), num(a[3])],
            ),
            19 | 20 => (
                if c.nr == 19 { "readv" } else { "writev" },
                vec![self.fd(tg, fdn), "[]".into(), num(a[2])],
            ),
            295 | 296 | 327 | 328 => (
                if c.nr % 2 == 1 { "preadv" } else { "pwritev" },
                vec![self.fd(tg, fdn), "[]".into(), num(a[2]), num(a[3])],
            ),
            // A descriptor no recorded call opened is not looked up when it is closed: by
            // the time its descriptor table is read the number may name another file.
            3 => match self.fds.get(&tg).and_then(|t| t.get(&fdn)) {
                Some(p) => ("close", vec![format!("{fdn}<{p}>")]),
                None => return,
            },
            5 => (
                "fstat",
                vec![self.fd(tg, fdn), format!("{{st_size={}}}", c.extra)],
            ),
            8 => (
                "lseek",
                vec![
                    self.fd(tg, fdn),
                    (a[1] as i64).to_string(),
                    ["SEEK_SET", "SEEK_CUR", "SEEK_END", "SEEK_DATA", "SEEK_HOLE"]
                        .get(a[2] as usize)
                        .unwrap_or(&"SEEK_SET")
                        .to_string(),
                ],
            ),
            9 => {
                let fd = a[4] as i32 as i64;
                if fd < 0 {
                    return;
                }
                // The recorder put the file's device in args[0] and its inode in extra.
                if c.ret >= 0 && c.extra != 0 {
                    if let Some(p) = self.fd_path(tg, fd) {
                        self.mapped.insert((a[0] as u32, c.extra), p);
                    }
                }
                let mut prot = Vec::new();
                if a[2] & 1 != 0 {
                    prot.push("PROT_READ");
                }
                if a[2] & 2 != 0 {
                    prot.push("PROT_WRITE");
                }
                let share = if a[3] & 1 != 0 {
                    "MAP_SHARED"
                } else {
                    "MAP_PRIVATE"
                };
                (
                    "mmap",
                    vec![
                        "NULL".into(),
                        num(a[1]),
                        prot.join("|"),
                        share.into(),
                        self.fd(tg, fd),
                        num(a[5]),
                    ],
                )
            }
            32 | 33 | 292 | 72 => {
                let name = match c.nr {
                    32 => "dup",
                    33 => "dup2",
                    292 => "dup3",
                    _ => "fcntl",
                };
                let second = match (c.nr, a[1]) {
                    (72, 0) => "F_DUPFD".to_string(),
                    (72, 1030) => "F_DUPFD_CLOEXEC".to_string(),
                    (72, _) => "F_OTHER".to_string(),
                    _ => num(a[1]),
                };
                if c.ret >= 0 && (c.nr != 72 || a[1] == 0 || a[1] == 1030) {
                    match self.fd_path(tg, fdn) {
                        Some(p) => {
                            self.fds.entry(tg).or_default().insert(c.ret, p.clone());
                            ret_path = Some(p);
                        }
                        // A copy of a descriptor the trace does not follow (a pipe, a
                        // terminal): the new one names no file of the trace any more. Kept,
                        // the earlier name made a shell's restoring `dup2(11, 1)` leave fd 1
                        // naming the file it had redirected it to, and the shell's later
                        // calls on its standard output were the file's, in some recordings
                        // of the same script and not in others.
                        None => {
                            if let Some(t) = self.fds.get_mut(&tg) {
                                t.remove(&c.ret);
                            }
                        }
                    }
                }
                (name, vec![self.fd(tg, fdn), second])
            }
            78 | 217 => (
                "getdents64",
                vec![self.fd(tg, fdn), "0x0".into(), num(a[2])],
            ),
            221 => (
                "fadvise64",
                vec![self.fd(tg, fdn), num(a[1]), num(a[2]), num(a[3])],
            ),
            187 => ("readahead", vec![self.fd(tg, fdn), num(a[1]), num(a[2])]),
            162 => ("sync", vec![]),
            306 => ("syncfs", vec![self.fd(tg, fdn)]),
            76 => (
                "truncate",
                vec![quoted(&self.absolute(tg, None, &c.p1)), num(a[1])],
            ),
            74 => ("fsync", vec![self.fd(tg, fdn)]),
            75 => ("fdatasync", vec![self.fd(tg, fdn)]),
            77 => ("ftruncate", vec![self.fd(tg, fdn), num(a[1])]),
            285 => (
                "fallocate",
                vec![self.fd(tg, fdn), num(a[1]), num(a[2]), num(a[3])],
            ),
            277 => (
                "sync_file_range",
                vec![self.fd(tg, fdn), num(a[1]), num(a[2]), num(a[3])],
            ),
            2 | 85 | 257 | 437 => {
                let (dir, flags) = match c.nr {
                    2 => (None, a[1]),
                    85 => (None, 0o1101),
                    // openat2: the flags the recorder read from its struct open_how.
                    437 => (Some(a[0]), c.extra),
                    _ => (Some(a[0]), a[2]),
                };
                let abs = self.absolute(tg, dir, &c.p1);
                if c.ret >= 0 {
                    self.fds.entry(tg).or_default().insert(c.ret, abs.clone());
                    ret_path = Some(abs.clone());
                }
                match c.nr {
                    257 | 437 => (
                        "openat",
                        vec![
                            self.dirfd(tg, a[0]),
                            quoted(&c.p1),
                            open_flags(flags),
                            "0644".into(),
                        ],
                    ),
                    _ => ("open", vec![quoted(&abs), open_flags(flags), "0644".into()]),
                }
            }
            4 | 6 => (
                "stat",
                vec![
                    quoted(&self.absolute(tg, None, &c.p1)),
                    format!("{{st_size={}}}", c.extra),
                ],
            ),
            262 => {
                let empty = at_empty_path(a[3]);
                if c.p1.is_empty() && empty == "AT_EMPTY_PATH" {
                    (
                        "fstat",
                        vec![self.fd(tg, fdn), format!("{{st_size={}}}", c.extra)],
                    )
                } else {
                    (
                        "newfstatat",
                        vec![
                            self.dirfd(tg, a[0]),
                            quoted(&c.p1),
                            format!("{{st_size={}}}", c.extra),
                            empty.into(),
                        ],
                    )
                }
            }
            83 | 84 | 87 => (
                match c.nr {
                    83 => "mkdir",
                    84 => "rmdir",
                    _ => "unlink",
                },
                vec![quoted(&self.absolute(tg, None, &c.p1)), "0755".into()],
            ),
            258 => (
                "mkdirat",
                vec![self.dirfd(tg, a[0]), quoted(&c.p1), "0755".into()],
            ),
            263 => (
                "unlinkat",
                vec![
                    self.dirfd(tg, a[0]),
                    quoted(&c.p1),
                    if a[2] & 0x200 != 0 {
                        "AT_REMOVEDIR".into()
                    } else {
                        "0".into()
                    },
                ],
            ),
            82 => (
                "rename",
                vec![
                    quoted(&self.absolute(tg, None, &c.p1)),
                    quoted(&self.absolute(tg, None, &c.p2)),
                ],
            ),
            86 | 88 => (
                if c.nr == 86 { "link" } else { "symlink" },
                vec![
                    // A symlink's target is kept as written: it is relative to the link.
                    if c.nr == 86 {
                        quoted(&self.absolute(tg, None, &c.p1))
                    } else {
                        quoted(&c.p1)
                    },
                    quoted(&self.absolute(tg, None, &c.p2)),
                ],
            ),
            265 => (
                "linkat",
                vec![
                    self.dirfd(tg, a[0]),
                    quoted(&c.p1),
                    self.dirfd(tg, a[2]),
                    quoted(&c.p2),
                    num(a[4]),
                ],
            ),
            266 => (
                "symlinkat",
                vec![quoted(&c.p1), self.dirfd(tg, a[1]), quoted(&c.p2)],
            ),
            264 | 316 => (
                "renameat",
                vec![
                    self.dirfd(tg, a[0]),
                    quoted(&c.p1),
                    self.dirfd(tg, a[2]),
                    quoted(&c.p2),
                ],
            ),
            426 => {
                self.io_uring_enters += 1;
                return;
            }
            // chdir and fchdir: followed for the paths named after them, not replayed.
            80 | 81 => {
                if c.ret == 0 {
                    let d = if c.nr == 80 {
                        Some(self.absolute(tg, None, &c.p1))
                    } else {
                        self.fd_path(tg, fdn)
                    };
                    if let Some(d) = d {
                        self.known_cwd.insert(tg, d);
                    }
                }
                return;
            }
            40 | 275 | 326 => {
                // Copies inside the kernel, written as strace writes them: an offset
                // handed by pointer is where the copy began (the recorder read the offset
                // the call left behind it, at exit: less the bytes moved), `?` when it
                // could not be read. The log's reader keeps each as its read and write.
                let moved = c.ret.max(0) as u64;
                let at = |ptr: u64, after: u64| match (ptr, after.checked_sub(moved)) {
                    (0, _) => "NULL".to_string(),
                    (_, Some(v)) => format!("[{v}]"),
                    (_, None) => "?".to_string(),
                };
                let fd = |s: &mut Self, v: u64| s.fd(tg, v as i32 as i64);
                match c.nr {
                    40 => (
                        "sendfile",
                        vec![fd(self, a[0]), fd(self, a[1]), at(a[2], c.extra), num(a[3])],
                    ),
                    _ => (
                        if c.nr == 275 {
                            "splice"
                        } else {
                            "copy_file_range"
                        },
                        vec![
                            fd(self, a[0]),
                            at(a[1], c.extra),
                            fd(self, a[2]),
                            at(a[3], a[5]),
                            num(a[4]),
                            "0".into(),
                        ],
                    ),
                }
            }
            332 => {
                // statx(dirfd, path, flags, mask, buf): a stat by its other name.
                let empty = at_empty_path(a[2]);
                (
                    "statx",
                    vec![
                        self.dirfd(tg, a[0]),
                        quoted(&c.p1),
                        empty.into(),
                        "STATX_ALL".into(),
                        format!("{{st_size={}}}", c.extra),
                    ],
                )
            }
            _ => return,
        };
        self.calls += 1;
        let closing = (c.nr == 3 && c.ret == 0).then_some((tg, fdn));
        self.b.line(Line {
            tid: c.tid,
            tgid: Some(tg),
            time_ns: c.ts.saturating_sub(t0),
            name: name.into(),
            args,
            ret: c.ret.to_string(),
            ret_path,
            dur_ns: c.dur,
        });
        if let Some(k) = closing {
            if let Some(t) = self.fds.get_mut(&k.0) {
                t.remove(&k.1);
            }
        }
    }

    /// The trace, saying how complete it is.
    pub fn finish(self, lost: u64) -> Trace {
        let uring = self.io_uring_enters;
        let mut t = self.b.finish();
        t.header.source = "record".into();
        t.header.lost_events = lost;
        t.header.complete &= lost == 0;
        if lost > 0 {
            t.header.notes.push(format!(
                "{lost} calls were lost (the kernel's ring buffer was full): the trace is incomplete"
            ));
        }
        if uring > 0 {
            let fixed = if self.uring_fixed > 0 {
                t.header.complete = false;
                format!(
                    "; {} requests on registered files, whose descriptors the trace cannot name, are not",
                    self.uring_fixed
                )
            } else {
                String::new()
            };
            t.header.notes.push(format!(
                "the application made {uring} io_uring_enter calls: the {} read, write and fsync requests they submitted are in the trace as the calls they stand for, each made by the thread that submitted it, one at a time (the replay does not keep their queue depth){fixed}",
                self.uring_kept
            ));
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Kind;

    /// Calls of this process (so its descriptors and working directory can be read) on a
    /// file under /tmp: an open with its path, writes, a positional write at an offset
    /// past 2^32, an lseek back by a negative amount, a failed call and the close.
    /// One recorded call of process `me` (its only thread).
    fn rec(me: u32, ts: u64, nr: u32, args: [u64; 6], ret: i64, p1: &str) -> Recorded {
        Recorded {
            ts,
            dur: 1_000 + ts % 7,
            ret,
            args,
            extra: 0,
            tid: me,
            tgid: me,
            nr,
            p1: p1.into(),
            p2: String::new(),
        }
    }

    fn calls() -> Vec<Recorded> {
        let me = std::process::id();
        let call = |ts, nr, args, ret, p1: &str| rec(me, ts, nr, args, ret, p1);
        let at_fdcwd = -100i64 as u64;
        vec![
            call(
                5_000,
                257,
                [at_fdcwd, 0, 0o101, 0o644, 0, 0],
                9,
                "/tmp/spool/a.db",
            ),
            call(6_000, 1, [9, 0, 4096, 0, 0, 0], 4096, ""),
            call(7_500, 18, [9, 0, 512, 5 << 32, 0, 0], 512, ""),
            call(7_400, 8, [9, -4096i64 as u64, 1, 0, 0, 0], 0, ""),
            call(9_000, 0, [9, 0, 4096, 0, 0, 0], -9, ""),
            call(9_100, 3, [9, 0, 0, 0, 0, 0], 0, ""),
        ]
    }

    fn opts() -> Options {
        Options {
            dirs: vec!["/tmp/spool".into()],
            keep_paths: true,
        }
    }

    #[test]
    fn a_spooled_recording_makes_the_trace_a_direct_conversion_makes() {
        let mut direct = Converter::new(opts());
        let mut spool = Spool::new(opts());
        for c in calls() {
            spool.push(&c);
            direct.add(c);
        }
        assert!(!spool.buf.is_empty(), "the calls wait in the spool");
        let (a, b) = (direct.finish(0), spool.finish(0));
        assert_eq!(a.call_count(), 6, "every call, the failed read too");
        assert_eq!(crate::format::encode(&a), crate::format::encode(&b));
    }

    /// A statx of the file is a stat with the size the kernel wrote into its buffer, and
    /// with an empty path and AT_EMPTY_PATH an fstat. A copy_file_range from it at the
    /// descriptors' positions is kept as the read of its source (the destination is not
    /// traced); one at an offset handed by pointer is named, not kept, and the trace is not
    /// complete; a copy between two descriptors the trace does not know is left out.
    #[test]
    fn statx_is_a_stat_and_a_kernel_copy_is_a_read_and_a_write_or_named() {
        let mut conv = Converter::new(opts());
        let mut all = calls();
        all.pop(); // the close: the descriptor stays open for the calls below
        let at_fdcwd = -100i64 as u64;
        let mut statx = all[0].clone();
        statx.ts = 10_000;
        statx.nr = 332;
        statx.args = [at_fdcwd, 0, 0, 0x7ff, 0, 0];
        statx.ret = 0;
        statx.extra = 4608;
        let mut fstatx = statx.clone();
        fstatx.ts = 10_500;
        fstatx.args = [9, 0, 0x1000, 0x7ff, 0, 0];
        fstatx.p1 = String::new();
        let mut copy = statx.clone();
        copy.ts = 11_000;
        copy.nr = 326;
        copy.args = [9, 0, 10, 0, 1 << 20, 0];
        copy.ret = 4096;
        copy.p1 = String::new();
        let mut eof = copy.clone();
        eof.ts = 11_500;
        eof.ret = 0;
        // A copy from offset 12288 handed by pointer: the pointer held 16384 at exit.
        let mut by_pointer = copy.clone();
        by_pointer.ts = 12_000;
        by_pointer.args = [9, 0x7ffd_0000_1000, 10, 0, 1 << 20, 0];
        by_pointer.extra = 12288 + 4096;
        // One whose offset could not be read (less than the bytes it moved).
        let mut unread = by_pointer.clone();
        unread.ts = 12_200;
        unread.extra = 0;
        let mut elsewhere = copy.clone();
        elsewhere.ts = 12_500;
        elsewhere.args = [11, 0, 12, 0, 1 << 20, 0];
        for c in all
            .into_iter()
            .chain([statx, fstatx, copy, eof, by_pointer, unread, elsewhere])
        {
            conv.add(c);
        }
        let t = conv.finish(0);
        let calls: Vec<&crate::format::Call> = t.calls.iter().flatten().collect();
        let count = |k: Kind| calls.iter().filter(|c| c.kind() == k).count();
        assert_eq!(count(Kind::Stat), 1, "{calls:?}");
        assert_eq!(count(Kind::Fstat), 1, "{calls:?}");
        // The recorded write and the failed read, and the copy's read of 4096 bytes.
        assert_eq!(count(Kind::Read), 2, "{calls:?}");
        assert!(
            calls
                .iter()
                .any(|c| c.kind() == Kind::Read && c.result == 4096 && c.size == 4096),
            "{calls:?}"
        );
        // The copy by pointer: a pread at the offset it began at.
        assert!(
            calls
                .iter()
                .any(|c| c.kind() == Kind::Pread && c.offset == 12288 && c.result == 4096),
            "{calls:?}"
        );
        assert!(
            !t.header.complete,
            "the copy whose offset was not read is not in it"
        );
        let notes = t.header.notes.join(" | ");
        assert!(
            notes.contains("with 3 copy_file_range calls (8192 bytes): the trace holds each"),
            "{notes}"
        );
        assert!(
            notes.contains("with 1 copy_file_range call (4096 bytes): those copies"),
            "{notes}"
        );
    }

    /// A shell redirecting its standard output (a pipe, which the trace does not follow) to
    /// a traced file for one command and restoring it from its saved copy: after the
    /// restoring dup2, fd 1 no longer names the file, and the shell's later write on it
    /// is not the file's.
    #[test]
    fn a_dup_from_outside_the_trace_ends_what_the_descriptor_named() {
        let mut conv = Converter::new(opts());
        let me = u32::MAX - 9; // not running: /proc knows none of its descriptors
        let call = |ts, nr, args, ret, p1: &str| rec(me, ts, nr, args, ret, p1);
        let at_fdcwd = -100i64 as u64;
        for c in [
            call(
                1_000,
                257,
                [at_fdcwd, 0, 0o101, 0o644, 0, 0],
                3,
                "/tmp/spool/f",
            ),
            call(2_000, 72, [1, 0, 10, 0, 0, 0], 11, ""), // fcntl(1, F_DUPFD, 10)
            call(3_000, 33, [3, 1, 0, 0, 0, 0], 1, ""),   // dup2(3, 1)
            call(4_000, 1, [1, 0, 3, 0, 0, 0], 3, ""),    // write(1, "hi\n", 3)
            call(5_000, 33, [11, 1, 0, 0, 0, 0], 1, ""),  // dup2(11, 1)
            call(6_000, 1, [1, 0, 5, 0, 0, 0], 5, ""),    // write(1, ..., 5): the pipe
        ] {
            conv.add(c);
        }
        let t = conv.finish(0);
        let writes: Vec<i64> = t
            .calls
            .iter()
            .flatten()
            .filter(|c| c.kind() == Kind::Write)
            .map(|c| c.result)
            .collect();
        assert_eq!(writes, [3]);
    }

    /// A child forked after its parent opened a file writes it through the descriptor it
    /// inherited (and through the one it dup2'd from it), without an open of its own and
    /// having ended before its descriptor table could be read: its writes are the file's.
    #[test]
    fn a_forked_child_writes_through_the_descriptors_it_inherited() {
        let mut conv = Converter::new(opts());
        let mut all = calls();
        all.truncate(2); // the open of /tmp/spool/a.db as 9, and a write
        let parent = all[0].tgid;
        // A process id that is not running: its /proc entries cannot be read.
        let child = u32::MAX - 7;
        let mut fork = all[0].clone();
        fork.ts = 6_500;
        fork.nr = FORK;
        fork.args = [child as u64, 0, 0, 0, 0, 0];
        let by_child = |ts: u64, nr: u32, args: [u64; 6], ret: i64| Recorded {
            ts,
            dur: 900,
            ret,
            args,
            tid: child,
            tgid: child,
            nr,
            ..Default::default()
        };
        let dup2 = by_child(6_600, 33, [9, 1, 0, 0, 0, 0], 1);
        let through_9 = by_child(6_700, 1, [9, 0, 4096, 0, 0, 0], 4096);
        let through_1 = by_child(6_800, 1, [1, 0, 8192, 0, 0, 0], 8192);
        let parent_close = Recorded {
            ts: 6_900,
            nr: 3,
            args: [9, 0, 0, 0, 0, 0],
            ..all[0].clone()
        };
        let after_close = by_child(7_000, 1, [9, 0, 512, 0, 0, 0], 512);
        for c in
            all.into_iter()
                .chain([fork, dup2, through_9, through_1, parent_close, after_close])
        {
            conv.add(c);
        }
        let t = conv.finish(0);
        let writes: Vec<(Option<u32>, u64)> = t
            .calls
            .iter()
            .flatten()
            .filter(|c| c.kind() == Kind::Write)
            .map(|c| (c.file, c.size))
            .collect();
        // The parent's write, then the child's three: the parent's close leaves the
        // child's copy of descriptor 9 open.
        assert_eq!(writes.len(), 4, "{writes:?} (parent {parent})");
        assert!(
            writes.iter().all(|(f, _)| f.is_some() && *f == writes[0].0),
            "{writes:?}"
        );
        assert_eq!(
            writes.iter().map(|(_, n)| n).sum::<u64>(),
            4096 + 4096 + 8192 + 512
        );
    }

    /// A process's descriptor table read after it changed a descriptor shows the change,
    /// not what the descriptor named before: the call made before the change is not given
    /// the file the reading shows (it was a shell's standard output, /dev/null, before a
    /// `dup2` put a file there), and the call after the change has the file the recorded
    /// dup names.
    #[test]
    fn a_table_read_after_a_change_is_not_used_for_the_calls_before_it() {
        use std::os::fd::AsRawFd;
        let dir = tempfile::tempdir().expect("a temporary directory");
        let d = dir.path().display().to_string();
        let seen = std::fs::File::create(dir.path().join("seen")).expect("create");
        let x = seen.as_raw_fd() as u64;
        let me = std::process::id();
        let call = |ts: u64, nr: u32, args: [u64; 6], ret: i64, p1: &str| Recorded {
            ts,
            dur: 100,
            ret,
            args,
            tid: me,
            tgid: me,
            nr,
            p1: p1.into(),
            ..Default::default()
        };
        let other = format!("{d}/other");
        let mut spool = Spool::new(Options {
            dirs: vec![d.clone()],
            keep_paths: true,
        });
        for c in [
            call(500, 257, [-100i64 as u64, 0, 0o101, 0, 0, 0], 50, &other),
            call(1_000, 1, [x, 0, 10, 0, 0, 0], 10, ""),
            call(2_000, 33, [50, x, 0, 0, 0, 0], x as i64, ""),
            call(3_000, 1, [x, 0, 20, 0, 0, 0], 20, ""),
        ] {
            spool.push(&c);
        }
        let t = spool.finish(0);
        let writes: Vec<(Option<&str>, u64)> = t
            .calls
            .iter()
            .flatten()
            .filter(|c| c.kind() == Kind::Write)
            .map(|c| {
                let f = c
                    .file
                    .and_then(|id| t.header.files.iter().find(|f| f.id == id));
                (f.and_then(|f| f.path.as_deref()), c.size)
            })
            .collect();
        assert_eq!(writes, [(Some(other.as_str()), 20)]);
        drop(seen);
    }

    #[test]
    fn packed_calls_come_back_exactly() {
        let mut spool = Spool::new(opts());
        let mut c = calls().remove(0);
        c.args = [u64::MAX, 0, 1 << 63, 7, u64::MAX - 1, 3];
        c.ret = i64::MIN;
        c.extra = u64::MAX;
        c.p2 = "/tmp/spool/b".into();
        let mut later = c.clone();
        later.ts = 1;
        for x in [&c, &later] {
            spool.push(x);
        }
        let mut r = crate::format::Reader {
            b: &spool.buf,
            at: 0,
        };
        let mut ts = 0;
        for want in [&c, &later] {
            let got = unpack(&mut r, &mut ts).expect("unpacks");
            assert_eq!(
                (got.ts, got.dur, got.ret, got.args, got.extra, got.tid, got.tgid, got.nr),
                (
                    want.ts, want.dur, want.ret, want.args, want.extra, want.tid, want.tgid,
                    want.nr
                )
            );
            assert_eq!(
                (got.p1.as_str(), got.p2.as_str()),
                (want.p1.as_str(), want.p2.as_str())
            );
        }
        assert_eq!(r.at, spool.buf.len());
        assert!(
            unpack(&mut r, &mut ts).is_none(),
            "nothing after the last call"
        );
    }
}
