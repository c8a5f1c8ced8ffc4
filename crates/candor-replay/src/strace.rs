//! An `strace -f -tt -T -y` log read as a trace. Every line of a traced thread is
//! `[PID] HH:MM:SS.micro call(args) = result <seconds>` (or split in two by
//! `<unfinished ...>` / `<... call resumed>`); `-y` names each descriptor's file
//! (`3</data/x.db>`), which is how a call on a descriptor is tied to a file. Files outside
//! the traced directories (libraries, /proc, pipes, sockets) are left out and counted.

use crate::format::{Call, FileEntry, Header, Inherited, Kind, ThreadEntry, Trace};
use std::collections::{BTreeMap, HashMap};

/// x86_64 open flags the parser reads from their names.
pub const O_ACCMODE: u32 = 0o3;
pub const O_WRONLY: u32 = 0o1;
pub const O_RDWR: u32 = 0o2;
pub const O_CREAT: u32 = 0o100;
pub const O_EXCL: u32 = 0o200;
pub const O_TRUNC: u32 = 0o1000;
pub const O_APPEND: u32 = 0o2000;
pub const O_NONBLOCK: u32 = 0o4000;
pub const O_DSYNC: u32 = 0o10000;
/// The most iovecs a readv or writev takes (Linux's UIO_MAXIOV).
pub const IOV_MAX: u32 = 1024;
pub const O_DIRECT: u32 = 0o40000;
pub const O_DIRECTORY: u32 = 0o200000;
pub const O_NOFOLLOW: u32 = 0o400000;
pub const O_CLOEXEC: u32 = 0o2000000;
pub const O_SYNC: u32 = 0o4010000;
pub const O_NOATIME: u32 = 0o1000000;

fn flag_value(name: &str) -> u32 {
    match name {
        "O_RDONLY" => 0,
        "O_WRONLY" => O_WRONLY,
        "O_RDWR" => O_RDWR,
        "O_CREAT" => O_CREAT,
        "O_EXCL" => O_EXCL,
        "O_TRUNC" => O_TRUNC,
        "O_APPEND" => O_APPEND,
        "O_NONBLOCK" => O_NONBLOCK,
        "O_DSYNC" => O_DSYNC,
        "O_DIRECT" => O_DIRECT,
        "O_DIRECTORY" => O_DIRECTORY,
        "O_NOFOLLOW" => O_NOFOLLOW,
        "O_CLOEXEC" => O_CLOEXEC,
        "O_SYNC" => O_SYNC,
        "O_NOATIME" => O_NOATIME,
        "O_LARGEFILE" => 0,
        _ => 0,
    }
}

fn parse_flags(s: &str) -> u32 {
    s.split('|')
        .map(|f| {
            let f = f.trim();
            if let Some(h) = f.strip_prefix("0x") {
                u32::from_str_radix(h, 16).unwrap_or(0)
            } else if f.starts_with('0') && f.len() > 1 {
                u32::from_str_radix(f, 8).unwrap_or(0)
            } else {
                f.parse().unwrap_or_else(|_| flag_value(f))
            }
        })
        .fold(0, |a, b| a | b)
}

use candor_procfs::paths::{PROC_DIR, SYS_DIR};

/// Directories whose files are the system's, not the application's (when no traced
/// directory is named).
const SYSTEM: [&str; 13] = [
    "/usr/", "/lib/", "/lib64/", "/lib32/", "/etc/", PROC_DIR, SYS_DIR, "/dev/", "/run/", "/bin/",
    "/sbin/", "/snap/", "/boot/",
];

/// A path with its `.` and `..` components and repeated slashes resolved as text (a
/// relative path keeps the `..` it begins with).
pub fn normalize(path: &str) -> String {
    let abs = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for p in path.split('/') {
        match p {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|l| *l != "..") {
                    parts.pop();
                } else if !abs {
                    parts.push("..");
                }
            }
            _ => parts.push(p),
        }
    }
    let body = parts.join("/");
    if abs {
        format!("/{body}")
    } else {
        body
    }
}

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

/// Splits `args` at its top-level commas, respecting quotes, brackets and `N<path>`.
fn split_args(s: &str) -> Vec<String> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            b'<' if i > 0
                && (b[i - 1].is_ascii_digit() || b.get(i - 8..i) == Some(b"AT_FDCWD")) =>
            {
                // A descriptor's path: to the matching '>' (the last one before a
                // top-level separator).
                let mut j = i + 1;
                let mut end = None;
                while j < b.len() {
                    if b[j] == b'>' {
                        end = Some(j);
                        if matches!(
                            b.get(j + 1),
                            None | Some(b',') | Some(b')') | Some(b' ') | Some(b']') | Some(b'}')
                        ) {
                            break;
                        }
                    }
                    j += 1;
                }
                i = end.unwrap_or(j);
            }
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            b',' if depth == 0 => {
                out.push(s[start..i].trim().to_string());
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    let last = s[start..].trim();
    if !last.is_empty() || !out.is_empty() {
        out.push(last.to_string());
    }
    out
}

/// The index of the `)` closing the call's arguments that begin at `from`.
fn close_paren(s: &str, from: usize) -> Option<usize> {
    let b = s.as_bytes();
    let mut depth = 0i32;
    let mut i = from;
    while i < b.len() {
        match b[i] {
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            b'<' if i > 0 && b[i - 1].is_ascii_digit() => {
                let mut j = i + 1;
                let mut end = None;
                while j < b.len() {
                    if b[j] == b'>' {
                        end = Some(j);
                        if matches!(b.get(j + 1), None | Some(b',') | Some(b')') | Some(b' ')) {
                            break;
                        }
                    }
                    j += 1;
                }
                i = end.unwrap_or(j);
            }
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => {
                if depth == 0 {
                    return Some(i);
                }
                depth -= 1;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// `3</data/x.db>` as (3, Some("/data/x.db")); `AT_FDCWD` as (-100, its path if shown).
fn fd_arg(s: &str) -> (i64, Option<String>) {
    let (num, path) = match s.find('<') {
        Some(p) if s.ends_with('>') => (&s[..p], Some(s[p + 1..s.len() - 1].to_string())),
        _ => (s, None),
    };
    let n = if num.trim() == "AT_FDCWD" {
        -100
    } else {
        num.trim().parse().unwrap_or(-1)
    };
    let path = path.map(|p| p.strip_suffix(" (deleted)").unwrap_or(&p).to_string());
    (n, path)
}

/// A quoted string argument, unescaped as far as paths need.
fn string_arg(s: &str) -> Option<String> {
    let s = s.trim();
    let inner = s.strip_prefix('"')?;
    let end = inner.rfind('"')?;
    let mut out = String::new();
    let mut chars = inner[..end].chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some(o) => out.push(o),
                None => {}
            }
        } else {
            out.push(c);
        }
    }
    Some(out)
}

fn num(s: &str) -> u64 {
    let s = s.trim();
    if let Some(h) = s.strip_prefix("0x") {
        return u64::from_str_radix(h, 16).unwrap_or(0);
    }
    s.parse().unwrap_or(0)
}

/// `HH:MM:SS.micro` as microseconds of the day.
fn time_of(s: &str) -> Option<u64> {
    let (hms, frac) = s.split_once('.')?;
    let mut it = hms.split(':');
    let h: u64 = it.next()?.parse().ok()?;
    let m: u64 = it.next()?.parse().ok()?;
    let sec: u64 = it.next()?.parse().ok()?;
    if it.next().is_some() || frac.len() != 6 {
        return None;
    }
    let us: u64 = frac.parse().ok()?;
    Some(((h * 60 + m) * 60 + sec) * 1_000_000 + us)
}

/// The return value and duration after `) = `: "4096 <0.000010>".
fn tail(rest: &str) -> Option<(String, Option<String>, u64)> {
    let rest = rest.trim();
    let rest = rest.strip_prefix('=')?.trim();
    let (body, dur) = match rest.rfind(" <") {
        Some(p) if rest.ends_with('>') => {
            let d: f64 = rest[p + 2..rest.len() - 1].parse().ok()?;
            (&rest[..p], (d * 1e6).round() as u64)
        }
        _ => (rest, 0),
    };
    // "-1 ENOENT (No such file or directory)" keeps its errno name.
    let body = body.trim();
    if let Some(e) = body.strip_prefix("-1 ") {
        let name = e.split_whitespace().next().unwrap_or("EIO");
        return Some((format!("-{}", errno_of(name)), None, dur));
    }
    let (v, path) = fd_arg(body.split_whitespace().next().unwrap_or(body));
    let ret = if body.starts_with('?') {
        "?".to_string()
    } else if body.starts_with("0x") {
        num(body.split_whitespace().next().unwrap_or("0")).to_string()
    } else {
        v.to_string()
    };
    Some((ret, path, dur))
}

pub fn errno_of(name: &str) -> i64 {
    match name {
        "EPERM" => 1,
        "ENOENT" => 2,
        "EINTR" => 4,
        "EIO" => 5,
        "EBADF" => 9,
        "EAGAIN" => 11,
        "ENOMEM" => 12,
        "EACCES" => 13,
        "EEXIST" => 17,
        "EXDEV" => 18,
        "ENOTDIR" => 20,
        "EISDIR" => 21,
        "EINVAL" => 22,
        "ENOSPC" => 28,
        "ESPIPE" => 29,
        "EROFS" => 30,
        "ENOTEMPTY" => 39,
        "ELOOP" => 40,
        "EOPNOTSUPP" => 95,
        _ => 5,
    }
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

/// What the parser knows of a file while it reads.
#[derive(Default, Clone)]
struct FileState {
    id: u32,
    path: String,
    dir: bool,
    /// Evidence of its existence and size at the start; None: first seen being created.
    existed: Option<bool>,
    size_seen: u64,
    written: bool,
    /// Its size now, as the calls so far made it (for O_APPEND offsets).
    size_now: u64,
}

/// Builds a trace from calls in order: files by path, descriptors per process, the
/// files' sizes at the start as far as the calls show them.
pub struct Builder {
    opts: Options,
    files: BTreeMap<String, FileState>,
    next_id: u32,
    threads: Vec<ThreadEntry>,
    calls: Vec<Vec<Call>>,
    index: HashMap<u32, usize>,
    process: HashMap<u32, u32>,
    parent: HashMap<u32, u32>,
    /// Each (process, fd)'s position and open flags.
    pos: HashMap<(u32, i64), (u64, u32)>,
    t0: Option<u64>,
    last_t: u64,
    day: u64,
    outside: u64,
    /// Descriptors opened in the trace, per process.
    opened: std::collections::HashSet<(u32, i64)>,
    inherited: Vec<Inherited>,
}

impl Builder {
    pub fn new(opts: Options) -> Builder {
        Builder {
            opts,
            files: BTreeMap::new(),
            next_id: 1,
            threads: Vec::new(),
            calls: Vec::new(),
            index: HashMap::new(),
            process: HashMap::new(),
            parent: HashMap::new(),
            pos: HashMap::new(),
            t0: None,
            last_t: 0,
            day: 0,
            outside: 0,
            opened: Default::default(),
            inherited: Vec::new(),
        }
    }

    /// A call on a descriptor: one no open in the trace made (in this process or a parent)
    /// was there before the trace began.
    fn note_fd(&mut self, process: u32, fd: i64, file: u32, path: &str) {
        let mut p = Some(process);
        let mut hops = 0;
        while let Some(pp) = p {
            if self.opened.contains(&(pp, fd)) {
                return;
            }
            hops += 1;
            p = if hops < 64 {
                self.parent.get(&pp).copied()
            } else {
                None
            };
        }
        self.opened.insert((process, fd));
        let dir = self.files.get(&normalize(path)).is_some_and(|f| f.dir);
        if let Some(s) = self.state(path) {
            if s.existed.is_none() {
                s.existed = Some(true);
            }
        }
        self.inherited.push(Inherited {
            process,
            fd: fd as i32,
            file,
            flags: if dir { O_DIRECTORY } else { O_RDWR },
        });
    }

    fn inside(&self, path: &str) -> bool {
        if path.is_empty() || path.contains(":[") || path.starts_with("anon_inode:") {
            return false;
        }
        if self.opts.dirs.is_empty() {
            return !SYSTEM
                .iter()
                .any(|s| path.starts_with(s) || path == &s[..s.len() - 1]);
        }
        self.opts
            .dirs
            .iter()
            .any(|d| path == d || path.starts_with(&format!("{}/", d.trim_end_matches('/'))))
    }

    fn file(&mut self, path: &str) -> Option<u32> {
        let normal = normalize(path);
        let path = normal.as_str();
        if !self.inside(path) {
            return None;
        }
        if let Some(f) = self.files.get(path) {
            return Some(f.id);
        }
        let id = self.next_id;
        self.next_id += 1;
        self.files.insert(
            path.to_string(),
            FileState {
                id,
                path: path.to_string(),
                ..Default::default()
            },
        );
        Some(id)
    }

    fn state(&mut self, path: &str) -> Option<&mut FileState> {
        self.files.get_mut(&normalize(path))
    }

    fn thread(&mut self, tid: u32) -> usize {
        if let Some(&i) = self.index.get(&tid) {
            return i;
        }
        let process = *self.process.entry(tid).or_insert(tid);
        let parent = self.parent.get(&tid).copied().filter(|p| *p != process);
        self.threads.push(ThreadEntry {
            tid,
            process,
            parent,
            comm: String::new(),
        });
        self.calls.push(Vec::new());
        self.index.insert(tid, self.threads.len() - 1);
        self.threads.len() - 1
    }

    /// A path argument resolved against its directory descriptor's path when relative.
    fn resolve(dir: Option<&str>, path: &str) -> String {
        if path.starts_with('/') {
            return path.to_string();
        }
        match dir {
            Some(d) if !d.is_empty() => format!("{}/{}", d.trim_end_matches('/'), path),
            _ => path.to_string(),
        }
    }

    pub fn line(&mut self, l: Line) {
        // -tt times wrap at midnight.
        let mut t = l.time_ns + self.day;
        if t + 3_600_000_000_000 < self.last_t {
            self.day += 86_400_000_000_000;
            t += 86_400_000_000_000;
        }
        self.last_t = t;
        let t0 = *self.t0.get_or_insert(t);
        let ret: i64 = l.ret.parse().unwrap_or(0);
        if let Some(tg) = l.tgid {
            self.process.insert(l.tid, tg);
        }
        let process = *self.process.entry(l.tid).or_insert(l.tid);
        let a = |i: usize| l.args.get(i).map(String::as_str).unwrap_or("");
        let mut c = Call {
            start_ns: t - t0,
            dur_ns: l.dur_ns,
            result: if ret < 0 { ret } else { 0 },
            fd: -1,
            ..Default::default()
        };
        let name = l.name.as_str();
        match name {
            "clone" | "clone3" | "fork" | "vfork" => {
                if ret > 0 {
                    let child = ret as u32;
                    let all = l.args.join(",");
                    if all.contains("CLONE_THREAD") {
                        self.process.insert(child, process);
                    } else {
                        self.process.insert(child, child);
                        self.parent.insert(child, process);
                    }
                }
                return;
            }
            "dup" | "dup2" | "dup3" | "fcntl" => {
                if name == "fcntl" && !a(1).starts_with("F_DUPFD") {
                    return;
                }
                let (fd, path) = fd_arg(a(0));
                let Some(path) = path else { return };
                let Some(id) = self.file(&path) else {
                    self.outside += 1;
                    return;
                };
                self.note_fd(process, fd, id, &path);
                c.kind = Some(Kind::Dup);
                c.fd = fd as i32;
                c.file = Some(id);
                if ret >= 0 {
                    c.result = ret;
                    self.opened.insert((process, ret));
                    let p = self.pos.get(&(process, fd)).copied().unwrap_or((0, 0));
                    self.pos.insert((process, ret), p);
                }
            }
            "open" | "openat" | "creat" => {
                let (dir, pi, fi) = match name {
                    "openat" => (fd_arg(a(0)).1, 1, 2),
                    _ => (None, 0, 1),
                };
                let Some(p) = string_arg(a(pi)) else { return };
                let path = l
                    .ret_path
                    .clone()
                    .unwrap_or_else(|| Self::resolve(dir.as_deref(), &p));
                let flags = if name == "creat" {
                    O_CREAT | O_WRONLY | O_TRUNC
                } else {
                    parse_flags(a(fi))
                };
                let Some(id) = self.file(&path) else {
                    self.outside += 1;
                    return;
                };
                let st = self.state(&path).expect("just made");
                if flags & O_DIRECTORY != 0 {
                    st.dir = true;
                }
                if st.existed.is_none() {
                    st.existed = Some(if ret >= 0 {
                        flags & O_CREAT == 0
                            || (flags & O_EXCL == 0 && flags & O_TRUNC == 0 && st.size_seen > 0)
                    } else {
                        false
                    });
                    // An open that may create and finds the file: decided by what is read.
                    if ret >= 0 && flags & O_CREAT != 0 && flags & O_EXCL == 0 {
                        st.existed = None;
                    }
                }
                if ret >= 0 && flags & O_TRUNC != 0 {
                    if st.existed.is_none() {
                        st.existed = Some(false);
                    }
                    st.written = true;
                    st.size_now = 0;
                }
                c.kind = Some(Kind::Open);
                c.file = Some(id);
                c.flags = flags;
                if ret >= 0 {
                    c.fd = ret as i32;
                    c.result = ret;
                    self.pos.insert((process, ret), (0, flags));
                    self.opened.insert((process, ret));
                }
            }
            "read" | "write" | "pread64" | "pwrite64" | "readv" | "writev" | "preadv"
            | "pwritev" | "preadv2" | "pwritev2" => {
                let (fd, path) = fd_arg(a(0));
                let Some(path) = path else { return };
                let Some(id) = self.file(&path) else {
                    self.outside += 1;
                    return;
                };
                let kind = match name {
                    "read" => Kind::Read,
                    "write" => Kind::Write,
                    "pread64" => Kind::Pread,
                    "pwrite64" => Kind::Pwrite,
                    "readv" => Kind::Readv,
                    "writev" => Kind::Writev,
                    "preadv" | "preadv2" => Kind::Preadv,
                    _ => Kind::Pwritev,
                };
                self.note_fd(process, fd, id, &path);
                let vector = matches!(
                    kind,
                    Kind::Readv | Kind::Writev | Kind::Preadv | Kind::Pwritev
                );
                let size = if vector {
                    let all = a(1);
                    let lens: u64 = all
                        .split("iov_len=")
                        .skip(1)
                        .map(|s| num(s.split(['}', ',']).next().unwrap_or("0")))
                        .sum();
                    if lens == 0 && ret > 0 {
                        ret as u64
                    } else {
                        lens
                    }
                } else {
                    num(a(2))
                };
                let positional = matches!(
                    kind,
                    Kind::Pread | Kind::Pwrite | Kind::Preadv | Kind::Pwritev
                );
                let key = (process, fd);
                let (cur, oflags) = self.pos.get(&key).copied().unwrap_or((0, 0));
                let st = self
                    .files
                    .get(&normalize(&path))
                    .cloned()
                    .unwrap_or_default();
                let offset = if positional {
                    num(a(3))
                } else if kind.is_write() && oflags & O_APPEND != 0 {
                    st.size_now
                } else {
                    cur
                };
                if ret >= 0 {
                    c.result = ret;
                    if !positional {
                        self.pos.insert(key, (offset + ret as u64, oflags));
                    }
                    let s = self.state(&path).expect("known");
                    let end = offset + ret as u64;
                    if kind.is_read() && !s.written {
                        s.size_seen = s.size_seen.max(end);
                        if ret > 0 && s.existed.is_none() {
                            s.existed = Some(true);
                        }
                    }
                    if kind.is_write() && ret > 0 {
                        if s.existed.is_none() {
                            s.existed = Some(false);
                        }
                        s.written = true;
                    }
                    if kind.is_read() || kind.is_write() {
                        s.size_now = s.size_now.max(end).max(s.size_seen);
                    }
                }
                c.kind = Some(kind);
                c.fd = fd as i32;
                c.file = Some(id);
                c.offset = offset;
                c.size = size;
                if vector {
                    // The number of iovecs (the call's third argument).
                    c.flags = (num(a(2)) as u32).clamp(1, IOV_MAX);
                }
            }
            "fsync" | "fdatasync" | "close" | "fstat" | "ftruncate" | "fallocate"
            | "sync_file_range" | "lseek" => {
                let (fd, path) = fd_arg(a(0));
                let Some(path) = path else { return };
                let Some(id) = self.file(&path) else {
                    self.outside += 1;
                    return;
                };
                self.note_fd(process, fd, id, &path);
                c.fd = fd as i32;
                c.file = Some(id);
                c.kind = Some(match name {
                    "fsync" => Kind::Fsync,
                    "fdatasync" => Kind::Fdatasync,
                    "close" => Kind::Close,
                    "fstat" => Kind::Fstat,
                    "ftruncate" => Kind::Ftruncate,
                    "fallocate" => Kind::Fallocate,
                    "sync_file_range" => Kind::SyncFileRange,
                    _ => Kind::Lseek,
                });
                let s = self.state(&path).expect("known");
                match name {
                    "fstat" if ret == 0 && !s.written => {
                        if let Some(p) = a(1).find("st_size=") {
                            let v = num(a(1)[p + 8..].split([',', '}']).next().unwrap_or("0"));
                            s.size_seen = s.size_seen.max(v);
                            s.size_now = s.size_now.max(v);
                            if s.existed.is_none() {
                                s.existed = Some(v > 0);
                            }
                        }
                    }
                    "ftruncate" => {
                        c.offset = num(a(1));
                        if ret == 0 {
                            s.written = true;
                            s.size_now = c.offset;
                            if s.existed.is_none() {
                                s.existed = Some(false);
                            }
                        }
                    }
                    "fallocate" => {
                        c.flags = parse_flags(a(1));
                        c.offset = num(a(2));
                        c.size = num(a(3));
                    }
                    "sync_file_range" => {
                        c.offset = num(a(1));
                        c.size = num(a(2));
                        c.flags = sfr_flags(a(3));
                    }
                    "lseek" => {
                        c.flags = match a(2) {
                            "SEEK_CUR" => 1,
                            "SEEK_END" => 2,
                            "SEEK_DATA" => 3,
                            "SEEK_HOLE" => 4,
                            _ => 0,
                        };
                        c.offset = a(1).trim().parse::<i64>().unwrap_or(0) as u64;
                        if ret >= 0 {
                            c.result = ret;
                            if c.flags == 2 && !s.written {
                                let size = (ret - c.offset as i64).max(0) as u64;
                                s.size_seen = s.size_seen.max(size);
                                s.size_now = s.size_now.max(size);
                            }
                            let key = (process, fd);
                            let of = self.pos.get(&key).map_or(0, |p| p.1);
                            self.pos.insert(key, (ret as u64, of));
                        }
                    }
                    "close" => {
                        self.pos.remove(&(process, fd));
                        self.opened.remove(&(process, fd));
                    }
                    _ => {}
                }
            }
            "unlink" | "unlinkat" | "rmdir" | "mkdir" | "mkdirat" | "stat" | "lstat"
            | "newfstatat" | "statx" => {
                let at = matches!(name, "unlinkat" | "mkdirat" | "newfstatat" | "statx");
                let (dirfd, dir) = if at { fd_arg(a(0)) } else { (-100, None) };
                let pi = usize::from(at);
                let Some(p) = string_arg(a(pi)) else { return };
                let flags_arg = match name {
                    "unlinkat" => a(2),
                    "newfstatat" => a(3),
                    "statx" => a(2),
                    _ => "",
                };
                if p.is_empty() && flags_arg.contains("AT_EMPTY_PATH") {
                    // fstat by another name.
                    let Some(path) = dir else { return };
                    let Some(id) = self.file(&path) else {
                        self.outside += 1;
                        return;
                    };
                    self.note_fd(process, dirfd, id, &path);
                    c.kind = Some(Kind::Fstat);
                    c.fd = dirfd as i32;
                    c.file = Some(id);
                } else {
                    let path = Self::resolve(dir.as_deref(), &p);
                    let Some(id) = self.file(&path) else {
                        self.outside += 1;
                        return;
                    };
                    let kind = match name {
                        "unlink" => Kind::Unlink,
                        "unlinkat" if flags_arg.contains("AT_REMOVEDIR") => Kind::Rmdir,
                        "unlinkat" => Kind::Unlink,
                        "rmdir" => Kind::Rmdir,
                        "mkdir" | "mkdirat" => Kind::Mkdir,
                        _ => Kind::Stat,
                    };
                    let s = self.state(&path).expect("known");
                    if matches!(kind, Kind::Rmdir | Kind::Mkdir) {
                        s.dir = true;
                    }
                    if s.existed.is_none() {
                        s.existed = Some(match kind {
                            Kind::Mkdir => ret < 0,
                            _ => ret >= 0,
                        });
                    }
                    if kind == Kind::Stat && ret == 0 && !s.written {
                        if let Some(q) = l
                            .args
                            .iter()
                            .find_map(|x| x.find("st_size=").map(|q| (x, q)))
                        {
                            let v = num(q.0[q.1 + 8..].split([',', '}']).next().unwrap_or("0"));
                            s.size_seen = s.size_seen.max(v);
                            s.size_now = s.size_now.max(v);
                        }
                        if l.args.iter().any(|x| x.contains("S_IFDIR")) {
                            s.dir = true;
                        }
                    }
                    c.kind = Some(kind);
                    c.file = Some(id);
                }
            }
            "rename" | "renameat" | "renameat2" => {
                let at = name != "rename";
                let (from, to) = if at {
                    (
                        Self::resolve(
                            fd_arg(a(0)).1.as_deref(),
                            &string_arg(a(1)).unwrap_or_default(),
                        ),
                        Self::resolve(
                            fd_arg(a(2)).1.as_deref(),
                            &string_arg(a(3)).unwrap_or_default(),
                        ),
                    )
                } else {
                    (
                        string_arg(a(0)).unwrap_or_default(),
                        string_arg(a(1)).unwrap_or_default(),
                    )
                };
                let (Some(f), Some(g)) = (self.file(&from), self.file(&to)) else {
                    self.outside += 1;
                    return;
                };
                let sf = self.state(&from).expect("known");
                if sf.existed.is_none() {
                    sf.existed = Some(ret >= 0);
                }
                let moved = sf.clone();
                if ret >= 0 {
                    let st = self.state(&to).expect("known");
                    if st.existed.is_none() {
                        st.existed = Some(false);
                    }
                    st.dir = moved.dir;
                    st.written = true;
                    st.size_now = moved.size_now;
                }
                c.kind = Some(Kind::Rename);
                c.file = Some(f);
                c.file2 = Some(g);
            }
            "mmap" => {
                let (fd, path) = fd_arg(a(4));
                let Some(path) = path else { return };
                let Some(id) = self.file(&path) else {
                    self.outside += 1;
                    return;
                };
                self.note_fd(process, fd, id, &path);
                c.kind = Some(Kind::Mmap);
                c.fd = fd as i32;
                c.file = Some(id);
                c.size = num(a(1));
                c.offset = num(a(5));
                let prot = a(2);
                let mut f = 0u32;
                if prot.contains("PROT_READ") {
                    f |= 1;
                }
                if prot.contains("PROT_WRITE") {
                    f |= 2;
                }
                if a(3).contains("MAP_SHARED") {
                    f |= 0x100;
                }
                c.flags = f;
                c.result = if ret < 0 { ret } else { 0 };
            }
            _ => return,
        }
        let i = self.thread(l.tid);
        self.calls[i].push(c);
    }

    /// Ties every file to the directory it is in: a path that another's is inside is a
    /// directory; with traced directories given, the directories between them and a file
    /// that no call named are added, as existing at the start (nothing in the trace made
    /// them). Returns each file's directory.
    fn directories(&mut self) -> HashMap<u32, u32> {
        let paths: Vec<String> = self.files.keys().cloned().collect();
        let roots: Vec<String> = self
            .opts
            .dirs
            .iter()
            .map(|d| normalize(d).trim_end_matches('/').to_string())
            .collect();
        let mut parents = HashMap::new();
        for p in paths {
            let mut child = p;
            while let Some(cut) = child.rfind('/').filter(|&c| c > 0) {
                let up = child[..cut].to_string();
                if roots.contains(&up) || !self.inside(&up) {
                    break;
                }
                if !self.files.contains_key(&up) {
                    if roots.is_empty() {
                        break;
                    }
                    let id = self.next_id;
                    self.next_id += 1;
                    self.files.insert(
                        up.clone(),
                        FileState {
                            id,
                            path: up.clone(),
                            dir: true,
                            existed: Some(true),
                            ..Default::default()
                        },
                    );
                }
                let Some(child_id) = self.files.get(&child).map(|c| c.id) else {
                    break;
                };
                let Some(u) = self.files.get_mut(&up) else {
                    break;
                };
                u.dir = true;
                let parent = u.id;
                if parents.insert(child_id, parent).is_some() {
                    break;
                }
                child = up;
            }
        }
        parents
    }

    pub fn finish(mut self) -> Trace {
        let parents = self.directories();
        let mut files: Vec<FileEntry> = self
            .files
            .values()
            .map(|f| FileEntry {
                id: f.id,
                parent: parents.get(&f.id).copied(),
                dir: f.dir,
                size: match f.existed {
                    Some(false) => None,
                    _ if f.dir => Some(0),
                    Some(true) => Some(f.size_seen),
                    None if f.size_seen > 0 => Some(f.size_seen),
                    None => None,
                },
                path: self.opts.keep_paths.then(|| f.path.clone()),
            })
            .collect();
        files.sort_by_key(|f| f.id);
        let mut notes = Vec::new();
        if self.outside > 0 {
            notes.push(format!(
                "{} calls on files outside the traced directories were left out",
                self.outside
            ));
        }
        Trace {
            header: Header {
                source: "strace".into(),
                complete: true,
                outside_calls: self.outside,
                dirs: if self.opts.keep_paths {
                    self.opts.dirs.clone()
                } else {
                    Vec::new()
                },
                notes,
                files,
                threads: self.threads,
                inherited: self.inherited,
                ..Default::default()
            },
            calls: self.calls,
        }
    }
}

fn sfr_flags(s: &str) -> u32 {
    let mut f = 0;
    if s.contains("SYNC_FILE_RANGE_WAIT_BEFORE") {
        f |= 1;
    }
    if s.contains("SYNC_FILE_RANGE_WRITE") {
        f |= 2;
    }
    if s.contains("SYNC_FILE_RANGE_WAIT_AFTER") {
        f |= 4;
    }
    f | (num(s) as u32 & 7)
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
