//! The trace's files as they were when it began, made in the repetition's directory: each
//! named by its id (`n7`), inside the directory the header places it in, written or left
//! as holes at its recorded size.

use super::last_error;
use crate::format::{FileEntry, Trace};
use std::collections::HashMap;
use std::ffi::CString;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

/// The name of a trace's file in the run directory.
pub fn name_of(id: u32) -> CString {
    CString::new(format!("n{id}")).expect("no NUL in a number")
}

/// Each file's path in the repetition's directory: `n7` at the top, `n3/n7` inside the
/// directory `n3`, as the header places it. A file that existed at the start is never put
/// in a directory that did not (it is at the top instead), nor is any file in a chain of
/// directories that loops or runs deeper than 64.
pub fn paths(t: &Trace) -> HashMap<u32, String> {
    let by_id: HashMap<u32, &FileEntry> = t.header.files.iter().map(|f| (f.id, f)).collect();
    let parent = |f: &FileEntry| {
        f.parent
            .and_then(|p| by_id.get(&p))
            .filter(|p| p.dir && (f.size.is_none() || p.size.is_some()))
            .copied()
    };
    t.header
        .files
        .iter()
        .map(|f| {
            let mut chain = vec![f.id];
            let mut at = parent(f);
            while let Some(p) = at {
                if chain.contains(&p.id) || chain.len() > 64 {
                    chain.truncate(1);
                    break;
                }
                chain.push(p.id);
                at = parent(p);
            }
            let path: Vec<String> = chain.iter().rev().map(|id| format!("n{id}")).collect();
            (f.id, path.join("/"))
        })
        .collect()
}

/// `paths` as the C strings the calls take.
pub(super) fn c_paths(t: &Trace) -> HashMap<u32, CString> {
    paths(t)
        .into_iter()
        .map(|(id, p)| (id, CString::new(p).expect("no NUL in ids")))
        .collect()
}

/// What the layout made.
#[derive(Debug, Default, Clone, Copy)]
pub struct Layout {
    pub files: u64,
    pub dirs: u64,
    pub bytes: u64,
}

/// Makes the trace's files as they were when it began: directories, and files of their
/// sizes, written (a fixed non-zero pattern) or, with `sparse`, holes; each file's data is
/// flushed, and unless `keep_cache` its cached pages are dropped so the replay's first
/// reads go to the device as the recording's did.
pub fn lay_out(
    t: &Trace,
    dir: BorrowedFd,
    sparse: bool,
    keep_cache: bool,
) -> std::io::Result<Layout> {
    let mut l = Layout::default();
    let chunk = vec![0xA5u8; 1 << 20];
    let names = c_paths(t);
    // Directories first, each after the one it is in; then the files.
    let mut order: Vec<&FileEntry> = t.header.files.iter().collect();
    let depth = |id: u32| {
        names
            .get(&id)
            .map_or(0, |n| n.as_bytes().iter().filter(|&&b| b == b'/').count())
    };
    order.sort_by_key(|f| (!f.dir, depth(f.id), f.id));
    for f in order {
        let Some(size) = f.size else { continue };
        let name = names.get(&f.id).cloned().unwrap_or_else(|| name_of(f.id));
        if f.dir {
            // SAFETY: dir is a valid descriptor and name a NUL-terminated name.
            if unsafe { libc::mkdirat(dir.as_raw_fd(), name.as_ptr(), 0o700) } != 0 {
                return Err(last_error());
            }
            l.dirs += 1;
            continue;
        }
        // SAFETY: as above; the flags make a new regular file or fail.
        let fd = unsafe {
            libc::openat(
                dir.as_raw_fd(),
                name.as_ptr(),
                libc::O_CREAT | libc::O_EXCL | libc::O_WRONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                0o600,
            )
        };
        if fd < 0 {
            return Err(last_error());
        }
        // SAFETY: fd was just opened and is owned here.
        let file = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) });
        if sparse {
            file.set_len(size)?;
        } else {
            use std::io::Write;
            let mut w = &file;
            let mut left = size;
            while left > 0 {
                let n = left.min(chunk.len() as u64) as usize;
                w.write_all(&chunk[..n])?;
                left -= n as u64;
            }
        }
        file.sync_all()?;
        if !keep_cache {
            // SAFETY: a valid descriptor; advice only.
            unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        }
        l.files += 1;
        l.bytes += size;
    }
    Ok(l)
}
