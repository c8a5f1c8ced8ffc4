//! How much of the test's files sits in the page cache, and how much of it is dirty:
//! cachestat(2) (Linux 6.5+, syscall 451 on x86_64 and arm64) and, where the kernel lacks
//! it, mincore(2) on a read-only mapping (residency only; it cannot see dirtiness).

use std::os::fd::AsRawFd;
use std::path::PathBuf;

/// Page residency of a set of files, summed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Residency {
    pub pages: u64,
    pub resident: u64,
    /// None when only mincore answered.
    pub dirty: Option<u64>,
    /// "cachestat" or "mincore"; empty when nothing could be asked.
    pub method: &'static str,
}

const SYS_CACHESTAT: libc::c_long = 451;

#[repr(C)]
struct CachestatRange {
    off: u64,
    len: u64,
}

#[repr(C)]
#[derive(Default)]
struct Cachestat {
    nr_cache: u64,
    nr_dirty: u64,
    nr_writeback: u64,
    nr_evicted: u64,
    nr_recently_evicted: u64,
}

fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as u64
    } else {
        4096
    }
}

/// cachestat(2) on a whole file: (resident pages, dirty or under-writeback pages); the error
/// is the kernel's (ENOSYS before Linux 6.5, EOPNOTSUPP on some filesystems).
pub fn cachestat(f: &std::fs::File) -> std::io::Result<(u64, u64)> {
    let range = CachestatRange { off: 0, len: 0 }; // len 0 = to the end of the file
    let mut cs = Cachestat::default();
    // SAFETY: the fd is open for the call's duration; range and cs are valid for the kernel
    // to read and write; flags must be 0.
    let r = unsafe {
        libc::syscall(
            SYS_CACHESTAT,
            f.as_raw_fd(),
            &range as *const CachestatRange,
            &mut cs as *mut Cachestat,
            0u32,
        )
    };
    if r == 0 {
        Ok((cs.nr_cache, cs.nr_dirty + cs.nr_writeback))
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// mincore on a shared read-only mapping of the file: resident pages.
fn mincore(f: &std::fs::File, len: u64) -> Option<u64> {
    if len == 0 {
        return Some(0);
    }
    let len = usize::try_from(len).ok()?;
    // SAFETY: mapping a file we hold open, read-only; unmapped before returning.
    let addr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            f.as_raw_fd(),
            0,
        )
    };
    if addr == libc::MAP_FAILED {
        return None;
    }
    let pages = len.div_ceil(page_size() as usize);
    let mut vec = vec![0u8; pages];
    // SAFETY: vec has one byte per page of the mapping.
    let r = unsafe { libc::mincore(addr, len, vec.as_mut_ptr()) };
    // SAFETY: addr/len are the mapping made above.
    unsafe { libc::munmap(addr, len) };
    (r == 0).then(|| vec.iter().filter(|b| **b & 1 == 1).count() as u64)
}

/// Residency of every file that exists; files that cannot be opened are left out.
pub fn residency(files: &[PathBuf]) -> Residency {
    let ps = page_size();
    let mut r = Residency::default();
    for path in files {
        let Ok(f) = std::fs::File::open(path) else {
            continue;
        };
        let Ok(len) = f.metadata().map(|m| m.len()) else {
            continue;
        };
        r.pages += len.div_ceil(ps);
        if r.method != "mincore" {
            if let Ok((cached, dirty)) = cachestat(&f) {
                r.method = "cachestat";
                r.resident += cached;
                r.dirty = Some(r.dirty.unwrap_or(0) + dirty);
                continue;
            }
        }
        if let Some(res) = mincore(&f, len) {
            r.method = "mincore";
            r.resident += res;
            r.dirty = None;
        }
    }
    r
}

/// The mincore path alone (so that tests exercise the fallback on kernels with cachestat).
pub fn residency_mincore(path: &std::path::Path) -> Option<u64> {
    let f = std::fs::File::open(path).ok()?;
    let len = f.metadata().ok()?.len();
    mincore(&f, len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_freshly_written_file_is_resident_and_dirty() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let mut f = std::fs::File::create(&p).unwrap();
        f.write_all(&vec![7u8; 256 * 1024]).unwrap();
        drop(f);
        let r = residency(std::slice::from_ref(&p));
        assert_eq!(r.pages, 256 * 1024 / page_size());
        if r.method == "cachestat" {
            assert_eq!(r.resident, r.pages);
            // tmp may be tmpfs (never dirty in the writeback sense) or a disk fs.
            assert!(r.dirty.is_some());
        } else {
            eprintln!("cachestat missing here; mincore answered");
        }
        assert_eq!(residency_mincore(&p), Some(r.pages));
        // A missing file is left out rather than failing the sample.
        let none = residency(&[dir.path().join("missing")]);
        assert_eq!(none.pages, 0);
    }
}
