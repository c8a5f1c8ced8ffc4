//! The trace: what an application asked of its files, call by call, per thread, never the
//! data; and its file format (docs/replay.md, "The trace format").
//!
//! A trace file is `MAGIC`, the format version (u16, little-endian), two reserved bytes,
//! the body's length (u64) and the body's CRC-32 (u32), then the body: the header as one
//! JSON text (its length first, as a varint) and, per thread in header order, its number of
//! calls and the calls. A call is a kind byte and varints: the descriptor, the file ids,
//! flags, offset (as the difference from where the thread's previous call on that
//! descriptor ended), size, result (as the difference from the size for reads and writes),
//! start (as the difference from the thread's previous call) and duration, in nanoseconds.
//! A sequential read of a cached file takes 9 to 12 bytes.

use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// The first bytes of every trace file.
pub const MAGIC: &[u8; 8] = b"CANDORTR";
/// The newest format this candor writes and reads. A trace is written in the oldest format
/// that holds its calls (`Kind::since`), so a trace without links stays readable by a candor
/// that reads format 1.
pub const VERSION: u16 = 2;
/// A trace's calls and files at most (a bound on what a damaged length can make us allocate).
const MAX_ITEMS: u64 = 1 << 32;

/// What a call did.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Open,
    Read,
    Write,
    Pread,
    Pwrite,
    Readv,
    Writev,
    Preadv,
    Pwritev,
    Fsync,
    Fdatasync,
    SyncFileRange,
    Ftruncate,
    Fallocate,
    Lseek,
    Close,
    Unlink,
    Rename,
    Mkdir,
    Rmdir,
    Stat,
    Fstat,
    Mmap,
    /// dup, dup2, dup3, fcntl(F_DUPFD): `fd` is the old descriptor, `result` the new.
    Dup,
    /// link, linkat: `file` is the existing file, `file2` its new name. Format 2.
    Link,
    /// symlink, symlinkat: `file` is the link made, `file2` what it points to when that is
    /// a file of the trace (none: a file outside the traced directories). Format 2.
    Symlink,
    /// getdents64 (and getdents): a directory read through its descriptor; `size` the
    /// buffer's, `result` the bytes of entries returned. Format 2.
    Getdents,
    /// posix_fadvise (fadvise64): `offset`, `size` (the length), `flags` the advice.
    /// Format 2.
    Fadvise,
    /// readahead: `offset`, `size`. Format 2.
    Readahead,
    /// sync and syncfs: a flush of the filesystem (`fd` the descriptor syncfs named, -1
    /// for sync). Format 2.
    Syncfs,
    /// truncate by path: `file`, `offset` the new length. Format 2.
    Truncate,
    /// Pages of a mapped file faulted in, or dirtied through a shared mapping (`flags` 1):
    /// `file`, `offset` and `size` in bytes, whole pages. Recorded from the kernel's page
    /// cache tracepoints, not a system call. Format 2.
    Mapped,
}

impl Kind {
    pub const ALL: [Kind; 32] = [
        Kind::Open,
        Kind::Read,
        Kind::Write,
        Kind::Pread,
        Kind::Pwrite,
        Kind::Readv,
        Kind::Writev,
        Kind::Preadv,
        Kind::Pwritev,
        Kind::Fsync,
        Kind::Fdatasync,
        Kind::SyncFileRange,
        Kind::Ftruncate,
        Kind::Fallocate,
        Kind::Lseek,
        Kind::Close,
        Kind::Unlink,
        Kind::Rename,
        Kind::Mkdir,
        Kind::Rmdir,
        Kind::Stat,
        Kind::Fstat,
        Kind::Mmap,
        Kind::Dup,
        Kind::Link,
        Kind::Symlink,
        Kind::Getdents,
        Kind::Fadvise,
        Kind::Readahead,
        Kind::Syncfs,
        Kind::Truncate,
        Kind::Mapped,
    ];

    pub fn code(self) -> u8 {
        Kind::ALL.iter().position(|k| *k == self).unwrap_or(0) as u8
    }

    pub fn from_code(c: u8) -> Option<Kind> {
        Kind::ALL.get(c as usize).copied()
    }

    /// The name used in results and docs ("pread", "sync_file_range").
    pub fn name(self) -> &'static str {
        match self {
            Kind::Open => "open",
            Kind::Read => "read",
            Kind::Write => "write",
            Kind::Pread => "pread",
            Kind::Pwrite => "pwrite",
            Kind::Readv => "readv",
            Kind::Writev => "writev",
            Kind::Preadv => "preadv",
            Kind::Pwritev => "pwritev",
            Kind::Fsync => "fsync",
            Kind::Fdatasync => "fdatasync",
            Kind::SyncFileRange => "sync_file_range",
            Kind::Ftruncate => "ftruncate",
            Kind::Fallocate => "fallocate",
            Kind::Lseek => "lseek",
            Kind::Close => "close",
            Kind::Unlink => "unlink",
            Kind::Rename => "rename",
            Kind::Mkdir => "mkdir",
            Kind::Rmdir => "rmdir",
            Kind::Stat => "stat",
            Kind::Fstat => "fstat",
            Kind::Mmap => "mmap",
            Kind::Dup => "dup",
            Kind::Link => "link",
            Kind::Symlink => "symlink",
            Kind::Getdents => "getdents64",
            Kind::Fadvise => "fadvise",
            Kind::Readahead => "readahead",
            Kind::Syncfs => "syncfs",
            Kind::Truncate => "truncate",
            Kind::Mapped => "mapped",
        }
    }

    /// The first trace format that holds calls of this kind.
    pub fn since(self) -> u16 {
        match self {
            Kind::Link
            | Kind::Symlink
            | Kind::Getdents
            | Kind::Fadvise
            | Kind::Readahead
            | Kind::Syncfs
            | Kind::Truncate
            | Kind::Mapped => 2,
            _ => 1,
        }
    }

    pub fn is_read(self) -> bool {
        matches!(self, Kind::Read | Kind::Pread | Kind::Readv | Kind::Preadv)
    }

    pub fn is_write(self) -> bool {
        matches!(
            self,
            Kind::Write | Kind::Pwrite | Kind::Writev | Kind::Pwritev
        )
    }

    /// Reads and writes: their result is a byte count.
    pub fn is_data(self) -> bool {
        self.is_read() || self.is_write()
    }

    /// Calls on a descriptor (the others name files by path).
    pub fn on_fd(self) -> bool {
        !matches!(
            self,
            Kind::Open
                | Kind::Unlink
                | Kind::Rename
                | Kind::Mkdir
                | Kind::Rmdir
                | Kind::Stat
                | Kind::Link
                | Kind::Symlink
                | Kind::Syncfs
                | Kind::Truncate
                | Kind::Mapped
        )
    }

    /// Calls whose position matters and is kept per descriptor.
    fn positioned(self) -> bool {
        self.is_data() || matches!(self, Kind::Lseek | Kind::Mmap)
    }
}

/// One call of one thread.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(default)]
pub struct Call {
    pub kind: Option<Kind>,
    /// The descriptor in the recorded process: the one a call on a descriptor used, the one
    /// an open returned; -1 for none.
    pub fd: i32,
    /// The file (header id) the call is about; for rename, its source.
    pub file: Option<u32>,
    /// rename: the destination.
    pub file2: Option<u32>,
    /// open: the O_* flags (x86_64 values); lseek: whence; fallocate: mode;
    /// sync_file_range: its flags; mmap: PROT_* in the low byte, MAP_* above; readv,
    /// writev, preadv, pwritev: the number of iovecs.
    pub flags: u32,
    /// Where the call began in the file (reads, writes, lseek's target, mmap's offset,
    /// ftruncate's length, fallocate's and sync_file_range's start).
    pub offset: u64,
    /// Bytes asked for (reads, writes, fallocate's and sync_file_range's length, mmap's).
    pub size: u64,
    /// What the call returned: bytes for reads and writes, the descriptor for open, the new
    /// position for lseek, 0 otherwise; -errno when it failed.
    pub result: i64,
    /// When the call began, nanoseconds since the trace's start, and how long it took.
    pub start_ns: u64,
    pub dur_ns: u64,
}

impl Call {
    pub fn kind(&self) -> Kind {
        self.kind.unwrap_or(Kind::Fstat)
    }

    pub fn new(kind: Kind) -> Call {
        Call {
            kind: Some(kind),
            fd: -1,
            ..Default::default()
        }
    }
}

/// A file (or directory) the trace names.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(default)]
pub struct FileEntry {
    pub id: u32,
    /// The directory (a file id) it is in, when the trace names that directory or it lies
    /// between the traced directories and a file; none: at the top of a traced directory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<u32>,
    pub dir: bool,
    /// Its size when the trace began; None: it did not exist then.
    pub size: Option<u64>,
    /// Its path, only when recorded with `--keep-paths` (never used as a path by replay).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

/// A thread of the traced processes.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(default)]
pub struct ThreadEntry {
    /// The thread and its process as numbered in the recording.
    pub tid: u32,
    pub process: u32,
    /// The process it was forked from, whose descriptors it inherited.
    pub parent: Option<u32>,
    pub comm: String,
}

/// A descriptor a process had before the trace began (a redirected stdin, one inherited
/// from a process not traced): the replay opens it before its measured region.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(default)]
pub struct Inherited {
    pub process: u32,
    pub fd: i32,
    pub file: u32,
    /// The O_* flags to open it with.
    pub flags: u32,
}

/// What the trace says about itself and the files it names.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct Header {
    /// Where the calls came from: "record", "strace" or "fio-iolog".
    pub source: String,
    pub command: Vec<String>,
    pub host: String,
    pub kernel: String,
    /// The filesystem the traced directories lay on.
    pub fs: String,
    /// The traced directories (paths kept only with --keep-paths).
    pub dirs: Vec<String>,
    pub started_at: String,
    /// Whether every call was recorded; false names why in `notes`.
    pub complete: bool,
    /// Calls the kernel could not hand over (ring buffer full).
    pub lost_events: u64,
    /// Calls seen on files outside the traced directories, left out.
    pub outside_calls: u64,
    pub notes: Vec<String>,
    /// The application's own figure while it was recorded, if it was measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recorded_figure: Option<serde_json::Value>,
    pub files: Vec<FileEntry>,
    pub threads: Vec<ThreadEntry>,
    /// Descriptors open before the trace began.
    pub inherited: Vec<Inherited>,
}

/// A whole trace: the header and each thread's calls (`calls[i]` is `header.threads[i]`'s).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Trace {
    pub header: Header,
    pub calls: Vec<Vec<Call>>,
}

impl Trace {
    pub fn call_count(&self) -> usize {
        self.calls.iter().map(Vec::len).sum()
    }

    /// The span from the first call's start to the last call's end, in nanoseconds.
    pub fn span_ns(&self) -> u64 {
        let all = self.calls.iter().flatten();
        let first = all.clone().map(|c| c.start_ns).min().unwrap_or(0);
        let last = all.map(|c| c.start_ns + c.dur_ns).max().unwrap_or(0);
        last.saturating_sub(first)
    }

    /// Checks what replay relies on: every call names files the header lists, in a
    /// directory or a file as the call needs. The error is one sentence.
    pub fn check(&self) -> Result<(), String> {
        if self.calls.len() != self.header.threads.len() {
            return Err(format!(
                "the trace lists {} threads but holds the calls of {}: it is damaged",
                self.header.threads.len(),
                self.calls.len()
            ));
        }
        let ids: HashMap<u32, bool> = self.header.files.iter().map(|f| (f.id, f.dir)).collect();
        if ids.len() != self.header.files.len() {
            return Err("the trace lists one file id twice: it is damaged".into());
        }
        if let Some(i) = self
            .header
            .inherited
            .iter()
            .find(|i| !ids.contains_key(&i.file))
        {
            return Err(format!(
                "an inherited descriptor names file id {}, which the trace's header does not list: the trace is damaged",
                i.file
            ));
        }
        for (t, calls) in self.calls.iter().enumerate() {
            for (i, c) in calls.iter().enumerate() {
                if c.kind.is_none() {
                    return Err(format!(
                        "call {} of thread {} has no kind: the trace is damaged",
                        i + 1,
                        t + 1
                    ));
                }
                for id in [c.file, c.file2].into_iter().flatten() {
                    if !ids.contains_key(&id) {
                        return Err(format!(
                            "call {} of thread {} ({}) names file id {id}, which the trace's header does not list: the trace is damaged",
                            i + 1,
                            t + 1,
                            c.kind().name()
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

// ---- encoding ----

pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

pub(crate) fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

pub(crate) fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// CRC-32 (IEEE), bitwise with a table built once.
pub fn crc32(data: &[u8]) -> u32 {
    static TABLE: std::sync::OnceLock<[u32; 256]> = std::sync::OnceLock::new();
    let t = TABLE.get_or_init(|| {
        let mut t = [0u32; 256];
        for (i, e) in t.iter_mut().enumerate() {
            let mut c = i as u32;
            for _ in 0..8 {
                c = if c & 1 != 0 {
                    0xEDB8_8320 ^ (c >> 1)
                } else {
                    c >> 1
                };
            }
            *e = c;
        }
        t
    });
    let mut c = !0u32;
    for &b in data {
        c = t[((c ^ b as u32) & 0xff) as usize] ^ (c >> 8);
    }
    !c
}

/// Flag bits of a call's first byte beside its kind (low 5 bits).
const HAS_FILE: u8 = 0x20;
const HAS_FILE2: u8 = 0x40;
const HAS_FLAGS: u8 = 0x80;

/// The default result of a call, from which the stored result is a difference.
fn default_result(c: &Call) -> i64 {
    if c.kind().is_data() {
        c.size as i64
    } else if c.kind() == Kind::Lseek {
        c.offset as i64
    } else if c.kind() == Kind::Open {
        c.fd as i64
    } else {
        0
    }
}

/// Per thread: where each descriptor's previous call ended, and the previous start.
#[derive(Default)]
struct Cursor {
    ends: HashMap<i32, u64>,
    last_start: u64,
}

impl Cursor {
    fn expected_offset(&self, c: &Call) -> u64 {
        if c.kind().positioned() {
            self.ends.get(&c.fd).copied().unwrap_or(0)
        } else {
            0
        }
    }

    fn advance(&mut self, c: &Call) {
        if c.kind().positioned() {
            let moved = if c.kind().is_data() {
                c.result.max(0) as u64
            } else {
                0
            };
            self.ends.insert(c.fd, c.offset.wrapping_add(moved));
        }
        self.last_start = c.start_ns;
    }
}

fn encode_call(out: &mut Vec<u8>, cur: &mut Cursor, c: &Call) {
    let mut first = c.kind().code();
    if c.file.is_some() {
        first |= HAS_FILE;
    }
    if c.file2.is_some() {
        first |= HAS_FILE2;
    }
    if c.flags != 0 {
        first |= HAS_FLAGS;
    }
    out.push(first);
    put_varint(out, zigzag(c.fd as i64));
    if let Some(f) = c.file {
        put_varint(out, f as u64);
    }
    if let Some(f) = c.file2 {
        put_varint(out, f as u64);
    }
    if c.flags != 0 {
        put_varint(out, c.flags as u64);
    }
    let off = c.offset.wrapping_sub(cur.expected_offset(c)) as i64;
    put_varint(out, zigzag(off));
    put_varint(out, c.size);
    put_varint(out, zigzag(c.result.wrapping_sub(default_result(c))));
    put_varint(out, zigzag(c.start_ns.wrapping_sub(cur.last_start) as i64));
    put_varint(out, c.dur_ns);
    cur.advance(c);
}

/// The trace as its file's bytes.
pub fn encode(t: &Trace) -> Vec<u8> {
    let mut body = Vec::new();
    let header = serde_json::to_vec(&t.header).unwrap_or_default();
    put_varint(&mut body, header.len() as u64);
    body.extend_from_slice(&header);
    for calls in &t.calls {
        put_varint(&mut body, calls.len() as u64);
        let mut cur = Cursor::default();
        for c in calls {
            encode_call(&mut body, &mut cur, c);
        }
    }
    let version = t
        .calls
        .iter()
        .flatten()
        .map(|c| c.kind().since())
        .max()
        .unwrap_or(1);
    let mut out = Vec::with_capacity(body.len() + 24);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&version.to_le_bytes());
    out.extend_from_slice(&[0, 0]);
    out.extend_from_slice(&(body.len() as u64).to_le_bytes());
    out.extend_from_slice(&crc32(&body).to_le_bytes());
    out.extend_from_slice(&body);
    out
}

/// Why a file could not be read as a trace: one sentence (without the file's name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused(pub String);

pub(crate) struct Reader<'a> {
    pub(crate) b: &'a [u8],
    pub(crate) at: usize,
}

const DAMAGED: &str = "is damaged (its calls do not decode): record it again";

impl Reader<'_> {
    pub(crate) fn varint(&mut self) -> Result<u64, Refused> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let Some(&b) = self.b.get(self.at) else {
                return Err(Refused(DAMAGED.into()));
            };
            self.at += 1;
            v |= ((b & 0x7f) as u64) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(Refused(DAMAGED.into()))
    }

    fn byte(&mut self) -> Result<u8, Refused> {
        let b = *self.b.get(self.at).ok_or_else(|| Refused(DAMAGED.into()))?;
        self.at += 1;
        Ok(b)
    }

    fn u32(&mut self) -> Result<u32, Refused> {
        u32::try_from(self.varint()?).map_err(|_| Refused(DAMAGED.into()))
    }
}

fn decode_call(r: &mut Reader, cur: &mut Cursor) -> Result<Call, Refused> {
    let first = r.byte()?;
    let kind = Kind::from_code(first & 0x1f).ok_or_else(|| Refused(DAMAGED.into()))?;
    let mut c = Call::new(kind);
    c.fd = i32::try_from(unzigzag(r.varint()?)).map_err(|_| Refused(DAMAGED.into()))?;
    if first & HAS_FILE != 0 {
        c.file = Some(r.u32()?);
    }
    if first & HAS_FILE2 != 0 {
        c.file2 = Some(r.u32()?);
    }
    if first & HAS_FLAGS != 0 {
        c.flags = r.u32()?;
    }
    c.offset = cur
        .expected_offset(&c)
        .wrapping_add(unzigzag(r.varint()?) as u64);
    c.size = r.varint()?;
    c.result = default_result(&c).wrapping_add(unzigzag(r.varint()?));
    c.start_ns = cur.last_start.wrapping_add(unzigzag(r.varint()?) as u64);
    c.dur_ns = r.varint()?;
    cur.advance(&c);
    Ok(c)
}

/// Reads a trace file's bytes; refuses anything that is not a whole trace this candor reads.
pub fn decode(bytes: &[u8]) -> Result<Trace, Refused> {
    if bytes.len() < 8 || &bytes[..8] != MAGIC {
        return Err(Refused(
            "is not a candor trace (it does not begin with CANDORTR)".into(),
        ));
    }
    if bytes.len() < 24 {
        return Err(Refused(
            "is damaged (it ends inside its first bytes): record it again".into(),
        ));
    }
    let version = u16::from_le_bytes([bytes[8], bytes[9]]);
    if version > VERSION {
        return Err(Refused(format!(
            "was written by a newer candor (trace format {version}; this candor reads format {VERSION} and older): update candor to replay it"
        )));
    }
    if version == 0 {
        return Err(Refused(
            "is damaged (its format version is 0): record it again".into(),
        ));
    }
    let len = u64::from_le_bytes(bytes[12..20].try_into().unwrap_or_default());
    let crc = u32::from_le_bytes(bytes[20..24].try_into().unwrap_or_default());
    let body = &bytes[24..];
    if body.len() as u64 != len {
        return Err(Refused(format!(
            "is damaged ({} bytes of its {len} are there: it was cut short or appended to): record it again",
            body.len()
        )));
    }
    if crc32(body) != crc {
        return Err(Refused(
            "is damaged (its checksum does not match its contents): record it again".into(),
        ));
    }
    let mut r = Reader { b: body, at: 0 };
    let hlen = r.varint()? as usize;
    let htext = body
        .get(r.at..r.at.saturating_add(hlen))
        .ok_or_else(|| Refused(DAMAGED.into()))?;
    r.at += hlen;
    let header: Header = serde_json::from_slice(htext)
        .map_err(|e| Refused(format!("is damaged (its header does not parse: {e})")))?;
    let mut calls = Vec::with_capacity(header.threads.len().min(1 << 16));
    for _ in 0..header.threads.len() {
        let n = r.varint()?;
        if n > MAX_ITEMS || n > (body.len() - r.at) as u64 {
            return Err(Refused(DAMAGED.into()));
        }
        let mut cur = Cursor::default();
        let mut v = Vec::with_capacity(n as usize);
        for _ in 0..n {
            let c = decode_call(&mut r, &mut cur)?;
            // A kind its format does not have: not a trace any candor wrote.
            if c.kind().since() > version {
                return Err(Refused(DAMAGED.into()));
            }
            v.push(c);
        }
        calls.push(v);
    }
    if r.at != body.len() {
        return Err(Refused(DAMAGED.into()));
    }
    let t = Trace { header, calls };
    t.check()
        .map_err(|e| Refused(format!("is not usable: {e}")))?;
    Ok(t)
}

/// Reads a trace from a file; the error names the file in one sentence.
pub fn read(path: &std::path::Path) -> Result<Trace, String> {
    let bytes = std::fs::read(path)
        .map_err(|e| format!("cannot read the trace {}: {e}", path.display()))?;
    decode(&bytes).map_err(|r| format!("{} {}", path.display(), r.0))
}

/// Writes a trace to a file (whole, or not at all: through a temporary file renamed).
pub fn write(path: &std::path::Path, t: &Trace) -> std::io::Result<u64> {
    let bytes = encode(t);
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        name.unwrap_or_else(|| "trace".into()),
        std::process::id()
    ));
    std::fs::write(&tmp, &bytes)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })?;
    Ok(bytes.len() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn sample() -> Trace {
        let mut calls = Vec::new();
        let mut open = Call::new(Kind::Open);
        open.file = Some(1);
        open.fd = 3;
        open.result = 3;
        open.flags = 0o102; // O_RDWR|O_CREAT
        calls.push(open);
        for i in 0..100u64 {
            let mut c = Call::new(if i % 2 == 0 { Kind::Pwrite } else { Kind::Read });
            c.fd = 3;
            c.file = Some(1);
            c.offset = i * 4096;
            c.size = 4096;
            c.result = 4096;
            c.start_ns = 1000 + i * 7000;
            c.dur_ns = 2500;
            calls.push(c);
        }
        let mut bad = Call::new(Kind::Read);
        bad.fd = 9;
        bad.result = -9;
        bad.start_ns = 900_000;
        calls.push(bad);
        let mut mv = Call::new(Kind::Rename);
        mv.file = Some(1);
        mv.file2 = Some(2);
        mv.start_ns = 900_100;
        calls.push(mv);
        Trace {
            header: Header {
                source: "test".into(),
                complete: true,
                files: vec![
                    FileEntry {
                        id: 1,
                        parent: None,
                        dir: false,
                        size: Some(8192),
                        path: None,
                    },
                    FileEntry {
                        id: 2,
                        parent: Some(1),
                        dir: false,
                        size: None,
                        path: None,
                    },
                ],
                threads: vec![ThreadEntry {
                    tid: 10,
                    process: 10,
                    parent: None,
                    comm: "x".into(),
                }],
                ..Default::default()
            },
            calls: vec![calls],
        }
    }

    #[test]
    fn a_trace_reads_back_exactly() {
        let t = sample();
        let b = encode(&t);
        assert_eq!(decode(&b).expect("decodes"), t);
        // The calls are compact: well under 16 bytes each.
        let header = serde_json::to_vec(&t.header).unwrap().len();
        let per_call = (b.len() - header - 26) as f64 / t.call_count() as f64;
        assert!(per_call < 12.0, "{per_call} bytes per call");
    }

    #[test]
    fn a_damaged_or_newer_trace_is_refused_in_one_sentence() {
        let b = encode(&sample());
        let mut flipped = b.clone();
        let n = flipped.len();
        flipped[n - 5] ^= 0x10;
        let e = decode(&flipped).unwrap_err().0;
        assert!(e.contains("checksum does not match"), "{e}");
        let e = decode(&b[..b.len() - 3]).unwrap_err().0;
        assert!(e.contains("was cut short"), "{e}");
        let mut newer = b.clone();
        newer[8] = 3;
        let e = decode(&newer).unwrap_err().0;
        assert!(e.contains("newer candor (trace format 3"), "{e}");
        let e = decode(b"hello world, this is text").unwrap_err().0;
        assert!(e.contains("not a candor trace"), "{e}");
    }

    /// A trace is written in the oldest format that holds its calls: 1 without links, 2
    /// with one; both read back, and a format-1 file holding a link (a kind format 1 does
    /// not have) is refused as damaged.
    #[test]
    fn links_need_format_2_and_only_traces_with_links_use_it() {
        let plain = sample();
        assert_eq!(encode(&plain)[8..10], [1, 0]);
        let mut linked = sample();
        for (kind, to) in [(Kind::Link, Some(2)), (Kind::Symlink, None)] {
            let mut c = Call::new(kind);
            c.file = Some(1);
            c.file2 = to;
            c.start_ns = 900_200;
            linked.calls[0].push(c);
        }
        let b = encode(&linked);
        assert_eq!(b[8..10], [2, 0]);
        assert_eq!(decode(&b).expect("decodes"), linked);
        let mut old = b.clone();
        old[8] = 1;
        // The checksum covers the body only: the version alone changed.
        let e = decode(&old).unwrap_err().0;
        assert!(e.contains("damaged"), "{e}");
        for k in Kind::ALL {
            assert_eq!(Kind::from_code(k.code()), Some(k));
        }
    }

    #[test]
    fn varints_and_zigzag_round_trip() {
        for v in [0i64, 1, -1, 63, -64, 1 << 40, i64::MIN, i64::MAX] {
            assert_eq!(unzigzag(zigzag(v)), v);
        }
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    }
}
