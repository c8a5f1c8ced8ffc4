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

/// Turns recorded calls into a trace as they arrive.
pub struct Converter {
    b: Builder,
    fds: HashMap<(u32, i64), String>,
    cwd: HashMap<u32, String>,
    t0: Option<u64>,
    pub calls: u64,
    pub io_uring_enters: u64,
}

fn quoted(p: &str) -> String {
    format!("\"{}\"", p.replace('\\', "\\\\").replace('"', "\\\""))
}

fn open_flags(v: u64) -> String {
    format!("0x{:x}", v as u32)
}

impl Converter {
    pub fn new(opts: Options) -> Converter {
        Converter {
            b: Builder::new(opts),
            fds: HashMap::new(),
            cwd: HashMap::new(),
            t0: None,
            calls: 0,
            io_uring_enters: 0,
        }
    }

    fn fd_path(&mut self, tgid: u32, fd: i64) -> Option<String> {
        if fd < 0 {
            return None;
        }
        if let Some(p) = self.fds.get(&(tgid, fd)) {
            return Some(p.clone());
        }
        let p = candor_procfs::Kernel::system()
            .pid_fd(candor_procfs::Pid::Id(tgid), u32::try_from(fd).ok()?)
            .ok()?;
        let p = p.to_string_lossy().into_owned();
        self.fds.insert((tgid, fd), p.clone());
        Some(p)
    }

    fn fd(&mut self, tgid: u32, fd: i64) -> String {
        match self.fd_path(tgid, fd) {
            Some(p) => format!("{fd}<{p}>"),
            None => fd.to_string(),
        }
    }

    fn cwd_of(&mut self, tgid: u32) -> Option<String> {
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

    pub fn add(&mut self, c: Recorded) {
        let t0 = *self.t0.get_or_insert(c.ts);
        let tg = c.tgid;
        let a = c.args;
        let num = |v: u64| v.to_string();
        let fdn = a[0] as i32 as i64;
        let mut ret_path = None;
        let (name, args): (&str, Vec<String>) = match c.nr {
            FORK => {
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
            3 => match self.fds.get(&(tg, fdn)) {
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
                    if let Some(p) = self.fd_path(tg, fdn) {
                        self.fds.insert((tg, c.ret), p.clone());
                        ret_path = Some(p);
                    }
                }
                (name, vec![self.fd(tg, fdn), second])
            }
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
            2 | 85 | 257 => {
                let (dir, flags) = match c.nr {
                    2 => (None, a[1]),
                    85 => (None, 0o1101),
                    _ => (Some(a[0]), a[2]),
                };
                let abs = self.absolute(tg, dir, &c.p1);
                if c.ret >= 0 {
                    self.fds.insert((tg, c.ret), abs.clone());
                    ret_path = Some(abs.clone());
                }
                match c.nr {
                    257 => (
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
                let empty = if a[3] & 0x1000 != 0 {
                    "AT_EMPTY_PATH"
                } else {
                    "0"
                };
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
            self.fds.remove(&k);
        }
    }

    /// The trace, saying how complete it is.
    pub fn finish(self, lost: u64) -> Trace {
        let uring = self.io_uring_enters;
        let mut t = self.b.finish();
        t.header.source = "record".into();
        t.header.lost_events = lost;
        t.header.complete = lost == 0;
        if lost > 0 {
            t.header.notes.push(format!(
                "{lost} calls were lost (the kernel's ring buffer was full): the trace is incomplete"
            ));
        }
        if uring > 0 {
            t.header.notes.push(format!(
                "the application made {uring} io_uring_enter calls: the I/O they submitted is not in the trace"
            ));
        }
        t
    }
}
