//! Each call of the log decoded into the trace's call (its kind, descriptor, file, offset,
//! size and flags), and what it shows of its file's existence and size at the start.

use super::builder::{normalize, Builder};
use super::flags::{
    parse_flags, sfr_flags, IOV_MAX, O_APPEND, O_CREAT, O_DIRECTORY, O_EXCL, O_TRUNC, O_WRONLY,
};
use super::syntax::{fd_arg, num, st_size, string_arg};
use super::Line;
use crate::format::{Call, Kind};

impl Builder {
    /// Adds one call of the log to the trace (a call on a file outside the traced
    /// directories is counted, not kept; one the trace has no kind for is left out).
    pub fn line(&mut self, l: Line) {
        let start_ns = self.since_start(l.time_ns);
        let ret: i64 = l.ret.parse().unwrap_or(0);
        if let Some(tg) = l.tgid {
            self.process.insert(l.tid, tg);
        }
        let process = *self.process.entry(l.tid).or_insert(l.tid);
        let a = |i: usize| l.args.get(i).map(String::as_str).unwrap_or("");
        // A path argument `p` relative to the directory descriptor argument `d` (the *at
        // calls).
        let at = |d: usize, p: usize| {
            Self::resolve(
                fd_arg(a(d)).1.as_deref(),
                &string_arg(a(p)).unwrap_or_default(),
            )
        };
        let mut c = Call {
            start_ns,
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
                        self.forked(process, child);
                    }
                }
                return;
            }
            "dup" | "dup2" | "dup3" | "fcntl" => {
                if name == "fcntl" && !a(1).starts_with("F_DUPFD") {
                    return;
                }
                let Some((fd, id, _)) = self.on_fd(process, fd_arg(a(0))) else {
                    // A copy of a descriptor outside the trace: the new one no longer names
                    // the file (or the description) it may have named before.
                    if ret >= 0 {
                        self.closed(process, ret);
                        self.opened.remove(&(process, ret));
                    }
                    return;
                };
                c.kind = Some(Kind::Dup);
                c.fd = fd as i32;
                c.file = Some(id);
                if ret >= 0 {
                    c.result = ret;
                    self.opened.insert((process, ret));
                    self.duped(process, fd, ret);
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
                let Some(id) = self.traced(&path) else {
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
                    self.opened_at(process, ret, flags);
                    self.opened.insert((process, ret));
                }
            }
            "read" | "write" | "pread64" | "pwrite64" | "readv" | "writev" | "preadv"
            | "pwritev" | "preadv2" | "pwritev2" => {
                let Some((fd, id, path)) = self.on_fd(process, fd_arg(a(0))) else {
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
                let (cur, oflags) = self.position(process, fd);
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
                        self.set_position(process, fd, offset + ret as u64);
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
                let Some((fd, id, path)) = self.on_fd(process, fd_arg(a(0))) else {
                    return;
                };
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
                        if let Some(v) = st_size(a(1)) {
                            s.saw_size(v);
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
                                s.saw_size(size);
                            }
                            self.set_position(process, fd, ret as u64);
                        }
                    }
                    "close" => {
                        self.closed(process, fd);
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
                    let Some((_, id, _)) = self.on_fd(process, (dirfd, dir)) else {
                        return;
                    };
                    c.kind = Some(Kind::Fstat);
                    c.fd = dirfd as i32;
                    c.file = Some(id);
                } else {
                    let path = Self::resolve(dir.as_deref(), &p);
                    let Some(id) = self.traced(&path) else {
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
                        if let Some(v) = l.args.iter().find_map(|x| st_size(x)) {
                            s.saw_size(v);
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
                let (from, to) = if name != "rename" {
                    (at(0, 1), at(2, 3))
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
                self.carried(&from, &to, ret);
                c.kind = Some(Kind::Rename);
                c.file = Some(f);
                c.file2 = Some(g);
            }
            "getdents64" | "getdents" | "fadvise64" | "readahead" | "syncfs" => {
                // getdents64(fd, dirp, count), fadvise64(fd, offset, len, advice),
                // readahead(fd, offset, count), syncfs(fd).
                let Some((fd, id, path)) = self.on_fd(process, fd_arg(a(0))) else {
                    return;
                };
                c.fd = fd as i32;
                c.file = Some(id);
                match name {
                    "getdents64" | "getdents" => {
                        c.kind = Some(Kind::Getdents);
                        c.size = num(a(2));
                        if ret >= 0 {
                            c.result = ret;
                        }
                        self.state(&path).expect("known").dir = true;
                    }
                    "fadvise64" => {
                        c.kind = Some(Kind::Fadvise);
                        c.offset = num(a(1));
                        c.size = num(a(2));
                        c.flags = fadvise_advice(a(3));
                    }
                    "readahead" => {
                        c.kind = Some(Kind::Readahead);
                        c.offset = num(a(1));
                        c.size = num(a(2));
                    }
                    _ => {
                        // A flush of the traced files' filesystem: no file of its own.
                        c.kind = Some(Kind::Syncfs);
                        c.file = None;
                    }
                }
            }
            "sync" => c.kind = Some(Kind::Syncfs),
            "truncate" => {
                let Some(p) = string_arg(a(0)) else { return };
                let Some(id) = self.traced(&p) else {
                    return;
                };
                let length = num(a(1));
                let s = self.state(&p).expect("known");
                if s.existed.is_none() {
                    s.existed = Some(ret >= 0);
                }
                if ret >= 0 {
                    s.written = true;
                    s.size_now = length;
                }
                c.kind = Some(Kind::Truncate);
                c.file = Some(id);
                c.offset = length;
            }
            "mapped" => {
                // The recorder's own line (no system call): pages of a mapped file faulted
                // in or dirtied, `mapped("/w/f", offset, length, read|write)`.
                let Some(p) = string_arg(a(0)) else { return };
                let Some(id) = self.traced(&p) else {
                    return;
                };
                c.kind = Some(Kind::Mapped);
                c.file = Some(id);
                c.offset = num(a(1));
                c.size = num(a(2));
                c.flags = u32::from(a(3).trim() == "write");
                let s = self.state(&p).expect("known");
                if !s.written {
                    // Faulted-in pages hold the file's bytes: it had them at the start.
                    s.saw_size(c.offset + c.size);
                    if s.existed.is_none() {
                        s.existed = Some(true);
                    }
                }
            }
            "copy_file_range" | "sendfile" | "splice" => {
                // A copy inside the kernel, kept as the read of its source and the write of
                // its destination it stands for (each end in a traced directory; a pipe's
                // never is): at the descriptor's position when its offset is NULL, else a
                // pread or pwrite at the offset it was handed (`[8192]`, or sendfile's
                // `[20480] => [24576]`: the first number). One whose offset cannot be read
                // is counted and named, not kept.
                let (src, src_at, dst, dst_at) = match name {
                    "sendfile" => (a(1), a(2), a(0), "NULL"),
                    _ => (a(0), a(1), a(2), a(3)),
                };
                let ends: Vec<(String, Result<Option<u64>, ()>, bool)> =
                    [(src, src_at, true), (dst, dst_at, false)]
                        .into_iter()
                        .filter(|(fd, _, _)| {
                            fd_arg(fd).1.is_some_and(|p| self.inside(&normalize(&p)))
                        })
                        .map(|(fd, at, read)| (fd.to_string(), copy_offset(at), read))
                        .collect();
                if ends.is_empty() {
                    return;
                }
                let moved = ret.max(0) as u64;
                let readable = ends.iter().all(|(_, at, _)| at.is_ok());
                let e = if readable {
                    self.copies_kept.entry(name.to_string()).or_default()
                } else {
                    self.copies.entry(name.to_string()).or_default()
                };
                e.0 += 1;
                e.1 += moved;
                if !readable || ret <= 0 {
                    return;
                }
                let half = l.dur_ns / 2;
                for (fd, at, read) in ends {
                    let at = at.unwrap_or_default();
                    let mut args = vec![fd, "\"\"".into(), ret.to_string()];
                    let name = match (read, at) {
                        (true, None) => "read",
                        (false, None) => "write",
                        (true, Some(o)) => {
                            args.push(o.to_string());
                            "pread64"
                        }
                        (false, Some(o)) => {
                            args.push(o.to_string());
                            "pwrite64"
                        }
                    };
                    let (time_ns, dur_ns) = if read {
                        (l.time_ns, half)
                    } else {
                        (l.time_ns + half, l.dur_ns - half)
                    };
                    self.line(super::Line {
                        tid: l.tid,
                        tgid: l.tgid,
                        time_ns,
                        name: name.into(),
                        args,
                        ret: l.ret.clone(),
                        ret_path: None,
                        dur_ns,
                    });
                }
                return;
            }
            "link" | "linkat" | "symlink" | "symlinkat" => {
                // link(old, new), linkat(olddirfd, old, newdirfd, new, flags),
                // symlink(target, new), symlinkat(target, newdirfd, new).
                let (old, new) = match name {
                    "link" | "symlink" => (
                        string_arg(a(0)).unwrap_or_default(),
                        string_arg(a(1)).unwrap_or_default(),
                    ),
                    "linkat" => (at(0, 1), at(2, 3)),
                    _ => (string_arg(a(0)).unwrap_or_default(), at(1, 2)),
                };
                let Some(made) = self.traced(&new) else {
                    return;
                };
                if name.starts_with("sym") {
                    // What it points to, as a path: a relative target is relative to the
                    // link's own directory. Outside the traced directories it is no file
                    // of the trace, and the replay points the link at nothing.
                    let target = match new.rsplit_once('/') {
                        Some((d, _)) if !old.starts_with('/') => Self::resolve(Some(d), &old),
                        _ => old,
                    };
                    c.kind = Some(Kind::Symlink);
                    c.file = Some(made);
                    c.file2 = self.file(&target);
                } else {
                    let Some(from) = self.traced(&old) else {
                        return;
                    };
                    self.carried(&old, &new, ret);
                    c.kind = Some(Kind::Link);
                    c.file = Some(from);
                    c.file2 = Some(made);
                }
                let st = self.state(&new).expect("known");
                if st.existed.is_none() {
                    st.existed = Some(ret < 0);
                }
            }
            "mmap" => {
                let Some((fd, id, _)) = self.on_fd(process, fd_arg(a(4))) else {
                    return;
                };
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
        self.push(l.tid, c);
    }
}

/// A copy's offset argument: None for NULL (the descriptor's position), the offset it was
/// handed (`[8192]`, `[20480] => [24576]`), or Err when it is neither.
fn copy_offset(arg: &str) -> Result<Option<u64>, ()> {
    let arg = arg.trim();
    if arg == "NULL" || arg == "0" {
        return Ok(None);
    }
    let inner = arg.strip_prefix('[').ok_or(())?;
    let end = inner.find(']').ok_or(())?;
    inner[..end].trim().parse().map(Some).map_err(|_| ())
}

/// posix_fadvise's advice, by name (`POSIX_FADV_DONTNEED`) or number.
fn fadvise_advice(arg: &str) -> u32 {
    const NAMES: [&str; 6] = [
        "POSIX_FADV_NORMAL",
        "POSIX_FADV_RANDOM",
        "POSIX_FADV_SEQUENTIAL",
        "POSIX_FADV_WILLNEED",
        "POSIX_FADV_DONTNEED",
        "POSIX_FADV_NOREUSE",
    ];
    let arg = arg.trim();
    match NAMES.iter().position(|n| *n == arg) {
        Some(i) => i as u32,
        None => num(arg) as u32,
    }
}
