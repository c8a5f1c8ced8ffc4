//! The trace being built from calls in order: the files by path, with what the calls show
//! of their existence and size at the start; the descriptors of each process, and those it
//! had before the trace began; the threads and their processes; and, at the end, each
//! file tied to its directory and the trace made of it all.

use super::flags::{O_DIRECTORY, O_RDWR};
use super::Options;
use crate::format::{Call, FileEntry, Header, Inherited, ThreadEntry, Trace};
use candor_procfs::paths::{PROC_DIR, SYS_DIR};
use std::collections::{BTreeMap, HashMap};

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

/// What the parser knows of a file while it reads.
#[derive(Default, Clone)]
pub(super) struct FileState {
    pub(super) id: u32,
    pub(super) path: String,
    pub(super) dir: bool,
    /// Evidence of its existence and size at the start; None: first seen being created.
    pub(super) existed: Option<bool>,
    pub(super) size_seen: u64,
    pub(super) written: bool,
    /// Its size now, as the calls so far made it (for O_APPEND offsets).
    pub(super) size_now: u64,
}

impl FileState {
    /// A size the calls show it had (at least) before anything wrote it.
    pub(super) fn saw_size(&mut self, size: u64) {
        self.size_seen = self.size_seen.max(size);
        self.size_now = self.size_now.max(size);
    }
}

/// Builds a trace from calls in order: files by path, descriptors per process, the
/// files' sizes at the start as far as the calls show them.
pub struct Builder {
    opts: Options,
    pub(super) files: BTreeMap<String, FileState>,
    next_id: u32,
    threads: Vec<ThreadEntry>,
    calls: Vec<Vec<Call>>,
    index: HashMap<u32, usize>,
    pub(super) process: HashMap<u32, u32>,
    pub(super) parent: HashMap<u32, u32>,
    /// Each (process, fd)'s open file description: the position and the open flags are
    /// the description's, shared by its dups and by the children that inherit it (a shell's
    /// `exec 3>f` then two commands writing `>&3`: the second writes after the first).
    desc_of: HashMap<u32, HashMap<i64, u64>>,
    /// Each description's position and open flags.
    descs: HashMap<u64, (u64, u32)>,
    next_desc: u64,
    t0: Option<u64>,
    last_t: u64,
    day: u64,
    pub(super) outside: u64,
    /// Descriptors opened in the trace, per process.
    pub(super) opened: std::collections::HashSet<(u32, i64)>,
    inherited: Vec<Inherited>,
    /// Copies made inside the kernel with an end in a traced directory, per call name
    /// (calls, bytes moved): kept as their reads and writes, and those whose offsets
    /// could not be read (not kept).
    pub(super) copies_kept: BTreeMap<String, (u64, u64)>,
    pub(super) copies: BTreeMap<String, (u64, u64)>,
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
            desc_of: HashMap::new(),
            descs: HashMap::new(),
            next_desc: 0,
            t0: None,
            last_t: 0,
            day: 0,
            outside: 0,
            opened: Default::default(),
            inherited: Vec::new(),
            copies_kept: BTreeMap::new(),
            copies: BTreeMap::new(),
        }
    }

    /// The description `fd` names in `process`: its own, else (a descriptor it has had
    /// since before its fork was seen) its nearest parent's.
    fn desc(&self, process: u32, fd: i64) -> Option<u64> {
        let mut p = Some(process);
        let mut hops = 0;
        while let Some(pp) = p {
            if let Some(d) = self.desc_of.get(&pp).and_then(|t| t.get(&fd)) {
                return Some(*d);
            }
            hops += 1;
            p = if hops < 64 {
                self.parent.get(&pp).copied()
            } else {
                None
            };
        }
        None
    }

    /// `fd`'s position and open flags in `process` ((0, 0) when the trace never opened it).
    pub(super) fn position(&self, process: u32, fd: i64) -> (u64, u32) {
        self.desc(process, fd)
            .and_then(|d| self.descs.get(&d).copied())
            .unwrap_or((0, 0))
    }

    /// Moves `fd`'s position (its description's, seen by every descriptor sharing it).
    pub(super) fn set_position(&mut self, process: u32, fd: i64, at: u64) {
        match self.desc(process, fd) {
            Some(d) => {
                let e = self.descs.entry(d).or_insert((0, 0));
                e.0 = at;
            }
            None => {
                let d = self.new_desc(at, 0);
                self.desc_of.entry(process).or_default().insert(fd, d);
            }
        }
    }

    fn new_desc(&mut self, at: u64, flags: u32) -> u64 {
        self.next_desc += 1;
        self.descs.insert(self.next_desc, (at, flags));
        self.next_desc
    }

    /// An open: `fd` names a new description, at 0 with `flags`.
    pub(super) fn opened_at(&mut self, process: u32, fd: i64, flags: u32) {
        let d = self.new_desc(0, flags);
        self.desc_of.entry(process).or_default().insert(fd, d);
    }

    /// A dup: `to` names `from`'s description.
    pub(super) fn duped(&mut self, process: u32, from: i64, to: i64) {
        let d = match self.desc(process, from) {
            Some(d) => d,
            None => self.new_desc(0, 0),
        };
        self.desc_of.entry(process).or_default().insert(to, d);
    }

    /// A close: `fd` no longer names its description in `process` (others may).
    pub(super) fn closed(&mut self, process: u32, fd: i64) {
        if let Some(t) = self.desc_of.get_mut(&process) {
            t.remove(&fd);
        }
    }

    /// A fork: the child's descriptors name its parent's descriptions, as they are now.
    pub(super) fn forked(&mut self, parent: u32, child: u32) {
        let copies = self.desc_of.get(&parent).cloned().unwrap_or_default();
        self.desc_of.insert(child, copies);
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

    /// Whether a path is one of the files the trace keeps (a pipe, socket or anonymous
    /// inode never is).
    pub(crate) fn inside(&self, path: &str) -> bool {
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

    /// The id of a file the trace keeps, given one when first seen; None outside the
    /// traced directories.
    pub(super) fn file(&mut self, path: &str) -> Option<u32> {
        let normal = normalize(path);
        let path = normal.as_str();
        if !self.inside(path) {
            return None;
        }
        if let Some(f) = self.files.get(path) {
            return Some(f.id);
        }
        Some(self.add(path).id)
    }

    /// A file not seen before, given the next id.
    fn add(&mut self, path: &str) -> &mut FileState {
        let id = self.next_id;
        self.next_id += 1;
        self.files.entry(path.to_string()).or_insert(FileState {
            id,
            path: path.to_string(),
            ..Default::default()
        })
    }

    /// A rename or a link from `from` (a file the trace keeps) to `to`, which returned
    /// `ret`: `from` existed if it succeeded; then `to` is the same file under a new name,
    /// made by the call (its size is `from`'s now).
    pub(super) fn carried(&mut self, from: &str, to: &str, ret: i64) {
        let Some(sf) = self.state(from) else { return };
        if sf.existed.is_none() {
            sf.existed = Some(ret >= 0);
        }
        let was = sf.clone();
        if ret < 0 {
            return;
        }
        if let Some(st) = self.state(to) {
            if st.existed.is_none() {
                st.existed = Some(false);
            }
            st.dir = was.dir;
            st.written = true;
            st.size_now = was.size_now;
        }
    }

    /// What is known of a file, by path.
    pub(super) fn state(&mut self, path: &str) -> Option<&mut FileState> {
        self.files.get_mut(&normalize(path))
    }

    /// A thread's index in the trace, added when first seen.
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

    /// A call's time as nanoseconds since the trace's first call (`-tt` times wrap at
    /// midnight).
    pub(super) fn since_start(&mut self, time_ns: u64) -> u64 {
        let mut t = time_ns + self.day;
        if t + 3_600_000_000_000 < self.last_t {
            self.day += 86_400_000_000_000;
            t += 86_400_000_000_000;
        }
        self.last_t = t;
        t - *self.t0.get_or_insert(t)
    }

    /// A file the trace keeps, by path; a path outside the traced directories is counted
    /// as a call left out.
    pub(super) fn traced(&mut self, path: &str) -> Option<u32> {
        let id = self.file(path);
        if id.is_none() {
            self.outside += 1;
        }
        id
    }

    /// The descriptor and file of a call on a descriptor (`3</w/a.db>` as `fd_arg` reads
    /// it), noted as inherited when no open in the trace made it; None when strace showed
    /// no path or the file is outside the traced directories (counted).
    pub(super) fn on_fd(
        &mut self,
        process: u32,
        (fd, path): (i64, Option<String>),
    ) -> Option<(i64, u32, String)> {
        let path = path?;
        let id = self.traced(&path)?;
        self.note_fd(process, fd, id, &path);
        Some((fd, id, path))
    }

    /// A decoded call, added to its thread's calls.
    pub(super) fn push(&mut self, tid: u32, c: Call) {
        let i = self.thread(tid);
        self.calls[i].push(c);
    }

    /// A path argument resolved against its directory descriptor's path when relative.
    pub(super) fn resolve(dir: Option<&str>, path: &str) -> String {
        if path.starts_with('/') {
            return path.to_string();
        }
        match dir {
            Some(d) if !d.is_empty() => format!("{}/{}", d.trim_end_matches('/'), path),
            _ => path.to_string(),
        }
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
                    let made = self.add(&up);
                    made.dir = true;
                    made.existed = Some(true);
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
        let calls = |m: &BTreeMap<String, (u64, u64)>| {
            m.iter()
                .map(|(name, (n, b))| {
                    format!(
                        "{n} {name} call{} ({b} bytes)",
                        if *n == 1 { "" } else { "s" }
                    )
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        if !self.copies_kept.is_empty() {
            notes.push(format!(
                "the application copied between files inside the kernel with {}: the trace holds each as the read of its source and the write of its destination (those in the traced directories; at the offsets the call was handed, or at the descriptors' positions), so a replay moves the same bytes through its own buffer",
                calls(&self.copies_kept)
            ));
        }
        // Bytes the application moved that no replay of this trace moves.
        let missing: u64 = self.copies.values().map(|(_, b)| b).sum();
        if !self.copies.is_empty() {
            notes.push(format!(
                "the application copied between files inside the kernel with {}: those copies (whose offsets could not be read) are not in the trace, so a replay does not make them",
                calls(&self.copies)
            ));
        }
        Trace {
            header: Header {
                source: "strace".into(),
                complete: missing == 0,
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
