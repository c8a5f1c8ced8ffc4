//! The replay against the recording: a call whose outcome differs, in words, and the calls
//! the kernel should count for a trace, as the eBPF witness names them.

use crate::format::{Call, Kind, Trace};
use crate::strace::O_CREAT;
use candor_model::CallCount;
use std::collections::BTreeMap;

/// An errno's name, as the sentences say it.
fn errno_name(e: i32) -> String {
    let name = match e {
        libc::ENOENT => "ENOENT",
        libc::EBADF => "EBADF",
        libc::EEXIST => "EEXIST",
        libc::EINVAL => "EINVAL",
        libc::EISDIR => "EISDIR",
        libc::ENOTDIR => "ENOTDIR",
        libc::ENOSPC => "ENOSPC",
        libc::EIO => "EIO",
        libc::ENOTEMPTY => "ENOTEMPTY",
        libc::EACCES => "EACCES",
        libc::EPERM => "EPERM",
        libc::ELOOP => "ELOOP",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        _ => return format!("errno {e}"),
    };
    name.to_string()
}

/// The difference between a call's replayed and recorded outcome, in words.
pub(super) fn compare(c: &Call, got: i64) -> Option<String> {
    let want = c.result;
    match (want < 0, got < 0) {
        (false, true) => Some(format!(
            "failed with {} where the recording's succeeded",
            errno_name(-got as i32)
        )),
        (true, false) => Some(format!(
            "succeeded where the recording's failed with {}",
            errno_name(-want as i32)
        )),
        (false, false) if c.kind().is_data() && got != want => Some(format!(
            "returned {got} bytes where the recording's returned {want}"
        )),
        _ => None,
    }
}

/// The calls the kernel should count for a replay of `t`, per kind as the eBPF witness
/// names them, with the bytes of reads and writes. Calls of kinds it does not count
/// (sync_file_range, ftruncate, fallocate, fstat, mmap, dup, link, symlink, fadvise,
/// readahead, syncfs, truncate, mapped pages) are not in it; getdents64 is counted without its bytes (the
/// replay's directories hold other names).
pub fn expected(t: &Trace) -> BTreeMap<String, CallCount> {
    let mut out: BTreeMap<String, CallCount> = BTreeMap::new();
    let mut add = |name: &str, bytes: Option<u64>| {
        let e = out.entry(name.to_string()).or_insert(CallCount {
            calls: Some(0),
            bytes: bytes.map(|_| 0),
            errors: 0,
        });
        e.calls = e.calls.map(|n| n + 1);
        if let (Some(a), Some(b)) = (e.bytes.as_mut(), bytes) {
            *a += b;
        }
    };
    for c in t.calls.iter().flatten() {
        let bytes = c.kind().is_data().then(|| c.result.max(0) as u64);
        let Some(name) = counted_as(c.kind()) else {
            continue;
        };
        if c.kind() == Kind::Open && c.flags & O_CREAT != 0 {
            // counted as a create as well as an openat
            add("create", None);
        }
        add(name, bytes);
    }
    out
}

/// The name the eBPF witness counts a call of this kind under: the system call's (its
/// kind's name but for openat, pread64 and pwrite64); None for a kind it does not count.
fn counted_as(kind: Kind) -> Option<&'static str> {
    match kind {
        Kind::Open => Some("openat"),
        Kind::Pread => Some("pread64"),
        Kind::Pwrite => Some("pwrite64"),
        Kind::Read
        | Kind::Write
        | Kind::Readv
        | Kind::Writev
        | Kind::Preadv
        | Kind::Pwritev
        | Kind::Fsync
        | Kind::Fdatasync
        | Kind::Lseek
        | Kind::Close
        | Kind::Unlink
        | Kind::Rename
        | Kind::Mkdir
        | Kind::Rmdir
        | Kind::Stat
        | Kind::Getdents => Some(kind.name()),
        Kind::SyncFileRange
        | Kind::Ftruncate
        | Kind::Fallocate
        | Kind::Fstat
        | Kind::Mmap
        | Kind::Dup
        | Kind::Link
        | Kind::Symlink
        | Kind::Fadvise
        | Kind::Readahead
        | Kind::Syncfs
        | Kind::Truncate
        | Kind::Mapped => None,
    }
}
