//! Reads of unallocated ranges: a sparse file's holes (and unwritten extents, which
//! SEEK_DATA reports as holes on the filesystems that track them) are read as zeros the
//! filesystem makes up, with neither the device nor the page cache holding any data. Without
//! this, a read of a hole looks like a read the page cache served (the device read nothing).
//!
//! At the end of the audit each read phase's file is asked (lseek SEEK_DATA / SEEK_HOLE,
//! which reads no data) how much of it is allocated.

use crate::phase::{Observed, Phase};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};

/// The sentence that names what a hole is.
pub const HOLE_WORDS: &str = "zeros made up by the filesystem, not the page cache or the device";

/// Bytes of `file` (open) in allocated data ranges, and its size. None when the
/// filesystem does not answer SEEK_DATA.
fn allocated(file: &std::fs::File, size: u64) -> Option<u64> {
    use std::os::fd::AsRawFd;
    let fd = file.as_raw_fd();
    let mut data = 0u64;
    let mut pos: i64 = 0;
    while (pos as u64) < size {
        // SAFETY: lseek on a descriptor this function borrows; no memory is passed.
        let start = unsafe { libc::lseek(fd, pos, libc::SEEK_DATA) };
        if start < 0 {
            let e = std::io::Error::last_os_error().raw_os_error();
            // ENXIO: no data at or after pos (the rest is a hole).
            return if e == Some(libc::ENXIO) {
                Some(data)
            } else {
                None
            };
        }
        // SAFETY: as above.
        let end = unsafe { libc::lseek(fd, start, libc::SEEK_HOLE) };
        if end < 0 {
            return None;
        }
        let end = (end as u64).min(size);
        data += end.saturating_sub(start as u64);
        if end as i64 <= start {
            break;
        }
        pos = end as i64;
    }
    Some(data)
}

/// (allocated bytes, size) of the regular file at `path` when it is still the file
/// (`dev`, `inode`) the phase read. Opened without following a FIFO's blocking open or a
/// device: read-only, non-blocking, and checked to be that regular file before anything
/// else.
pub fn extent_of(path: &str, dev: Option<u64>, inode: Option<u64>) -> Option<(u64, u64)> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(path)
        .ok()?;
    let md = file.metadata().ok()?;
    if !md.file_type().is_file()
        || inode.is_some_and(|i| i != md.ino())
        || dev.is_some_and(|d| d != md.dev())
    {
        return None;
    }
    Some((allocated(&file, md.len())?, md.len()))
}

/// The hole bytes of a phase's reads, from the file's allocation at the end of the audit:
/// every read byte when the file has no data at all; its holes' share of the reads when the
/// phase read the file through at least once (reads spread over the whole file); otherwise
/// not known (None).
pub fn hole_reads(p: &Phase, allocated: u64, size: u64) -> Option<u64> {
    if p.read_bytes == 0 || size == 0 || allocated >= size {
        return Some(0).filter(|_| p.read_bytes > 0);
    }
    if allocated == 0 {
        return Some(p.read_bytes);
    }
    if p.read_bytes >= size {
        let holes = size - allocated;
        return Some((p.read_bytes as u128 * holes as u128 / size as u128) as u64);
    }
    None
}

/// Sets `hole_read_bytes` on every read phase of a regular file, and notes the holes found.
pub fn find(o: &mut Observed) {
    let mut seen = std::collections::BTreeMap::new();
    let mut total = 0u64;
    for p in o.phases.iter_mut() {
        if p.read_bytes == 0 || p.block_device {
            continue;
        }
        let key = (p.path.clone(), p.dev, p.inode);
        let ext = *seen
            .entry(key)
            .or_insert_with(|| extent_of(&p.path, p.dev, p.inode));
        if let Some((allocated, size)) = ext {
            p.hole_read_bytes = hole_reads(p, allocated, size);
            total += p.hole_read_bytes.unwrap_or(0);
        }
    }
    if total > 0 {
        o.notes.push(format!(
            "{} of the reads fell in holes of sparse files (unallocated at the end of the audit, by SEEK_DATA/SEEK_HOLE): {HOLE_WORDS}",
            candor_model::units::format_bytes(total, candor_model::units::ByteStyle::TENTHS)
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn phase(read: u64) -> Phase {
        Phase {
            read_bytes: read,
            ..Default::default()
        }
    }

    #[test]
    fn shares_of_the_reads() {
        assert_eq!(hole_reads(&phase(64 << 20), 0, 64 << 20), Some(64 << 20));
        assert_eq!(hole_reads(&phase(64 << 20), 64 << 20, 64 << 20), Some(0));
        // Half allocated, read through twice: half of the reads were holes.
        assert_eq!(
            hole_reads(&phase(128 << 20), 32 << 20, 64 << 20),
            Some(64 << 20)
        );
        // Read in part: where the reads fell is not known.
        assert_eq!(hole_reads(&phase(1 << 20), 32 << 20, 64 << 20), None);
    }

    #[test]
    fn a_sparse_file_is_measured_and_a_fifo_is_not_opened_blocking() {
        let dir = std::env::temp_dir().join(format!("candor-holes-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("sparse");
        let f = std::fs::File::create(&path).unwrap();
        f.set_len(8 << 20).unwrap();
        let (alloc, size) = extent_of(path.to_str().unwrap(), None, None).unwrap();
        assert_eq!((alloc, size), (0, 8 << 20));
        let mut f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.write_all(&[1u8; 65536]).unwrap();
        f.sync_all().unwrap();
        let (alloc, _) = extent_of(path.to_str().unwrap(), None, None).unwrap();
        assert!((65536..8 << 20).contains(&alloc), "{alloc}");
        let fifo = dir.join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert_eq!(extent_of(fifo.to_str().unwrap(), None, None), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
