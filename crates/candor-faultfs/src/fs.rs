//! The pass-through filesystem: every operation is done on the backing directory, except
//! where [`Faults`] says to fail. File data goes through the filesystem on every read and
//! write (direct I/O) unless `cached` is set, so a fault at an offset fires every time.
//! Entries and attributes are never cached by the kernel, so a vanished file is gone at once.

use crate::faults::{Config, Fault, Faults};
use fuser::{
    consts, FileAttr, FileType, Filesystem, KernelConfig, MountOption, ReplyAttr, ReplyCreate,
    ReplyData, ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, Request,
    TimeOrNow, FUSE_ROOT_ID,
};
use std::collections::HashMap;
use std::ffi::{CString, OsStr};
use std::fs::{File, Metadata, OpenOptions};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const TTL: Duration = Duration::ZERO;

struct Handle {
    file: File,
    /// Path relative to the backing directory when opened.
    rel: PathBuf,
}

pub struct PassThrough {
    backing: PathBuf,
    faults: Faults,
    /// inode number -> path relative to the backing directory ("" for the root).
    paths: HashMap<u64, PathBuf>,
    inodes: HashMap<PathBuf, u64>,
    next_ino: u64,
    handles: HashMap<u64, Handle>,
    next_fh: u64,
    written: u64,
    closes: HashMap<PathBuf, u32>,
    uid: u32,
    /// When the filesystem was mounted (`--slow-down` grows from here).
    mounted: std::time::Instant,
}

fn errno_of(e: &std::io::Error) -> i32 {
    e.raw_os_error().unwrap_or(libc::EIO)
}

fn kind_of(meta: &Metadata) -> FileType {
    let ft = meta.file_type();
    if ft.is_dir() {
        FileType::Directory
    } else if ft.is_symlink() {
        FileType::Symlink
    } else {
        use std::os::unix::fs::FileTypeExt;
        if ft.is_block_device() {
            FileType::BlockDevice
        } else if ft.is_char_device() {
            FileType::CharDevice
        } else if ft.is_fifo() {
            FileType::NamedPipe
        } else if ft.is_socket() {
            FileType::Socket
        } else {
            FileType::RegularFile
        }
    }
}

fn time(secs: i64, nsecs: i64) -> SystemTime {
    if secs >= 0 {
        UNIX_EPOCH + Duration::new(secs as u64, nsecs.clamp(0, 999_999_999) as u32)
    } else {
        UNIX_EPOCH
    }
}

fn attr_of(ino: u64, meta: &Metadata) -> FileAttr {
    FileAttr {
        ino,
        size: meta.size(),
        blocks: meta.blocks(),
        atime: time(meta.atime(), meta.atime_nsec()),
        mtime: time(meta.mtime(), meta.mtime_nsec()),
        ctime: time(meta.ctime(), meta.ctime_nsec()),
        crtime: UNIX_EPOCH,
        kind: kind_of(meta),
        perm: (meta.mode() & 0o7777) as u16,
        nlink: meta.nlink() as u32,
        uid: meta.uid(),
        gid: meta.gid(),
        rdev: meta.rdev() as u32,
        blksize: meta.blksize() as u32,
        flags: 0,
    }
}

fn reply_entry(reply: ReplyEntry, attr: Result<FileAttr, i32>) {
    match attr {
        Ok(attr) => reply.entry(&TTL, &attr, 0),
        Err(e) => reply.error(e),
    }
}

fn to_system_time(t: TimeOrNow) -> SystemTime {
    match t {
        TimeOrNow::SpecificTime(t) => t,
        TimeOrNow::Now => SystemTime::now(),
    }
}

impl PassThrough {
    pub fn new(backing: PathBuf, faults: Faults) -> Self {
        let mut paths = HashMap::new();
        let mut inodes = HashMap::new();
        paths.insert(FUSE_ROOT_ID, PathBuf::new());
        inodes.insert(PathBuf::new(), FUSE_ROOT_ID);
        PassThrough {
            backing,
            faults,
            paths,
            inodes,
            next_ino: FUSE_ROOT_ID + 1,
            handles: HashMap::new(),
            next_fh: 1,
            written: 0,
            closes: HashMap::new(),
            // SAFETY: geteuid has no preconditions.
            uid: unsafe { libc::geteuid() },
            mounted: std::time::Instant::now(),
        }
    }

    /// `--delay` and `--slow-down`: a read or write waits as a slow device would.
    fn pace(&self) {
        let d = self.faults.delay(self.mounted.elapsed());
        if !d.is_zero() {
            std::thread::sleep(d);
        }
    }

    fn rel(&self, ino: u64) -> Option<PathBuf> {
        self.paths.get(&ino).cloned()
    }

    fn full(&self, rel: &Path) -> PathBuf {
        self.backing.join(rel)
    }

    fn child(&self, parent: u64, name: &OsStr) -> Option<PathBuf> {
        self.paths.get(&parent).map(|p| p.join(name))
    }

    fn ino_for(&mut self, rel: &Path) -> u64 {
        if let Some(&ino) = self.inodes.get(rel) {
            return ino;
        }
        let ino = self.next_ino;
        self.next_ino += 1;
        self.inodes.insert(rel.to_path_buf(), ino);
        self.paths.insert(ino, rel.to_path_buf());
        ino
    }

    fn forget_path(&mut self, rel: &Path) {
        if let Some(ino) = self.inodes.remove(rel) {
            self.paths.remove(&ino);
        }
    }

    fn entry(&mut self, rel: &Path) -> Result<FileAttr, i32> {
        let meta = std::fs::symlink_metadata(self.full(rel)).map_err(|e| errno_of(&e))?;
        let ino = self.ino_for(rel);
        Ok(attr_of(ino, &meta))
    }

    /// Files made as root on behalf of another user belong to that user, as on a real
    /// filesystem.
    fn give_to(&self, req: &Request<'_>, full: &Path) {
        if self.uid == 0 && (req.uid() != 0 || req.gid() != 0) {
            let _ = std::os::unix::fs::lchown(full, Some(req.uid()), Some(req.gid()));
        }
    }

    /// Makes the entry `name` of `parent` with `make` (mkdir, symlink, create) on behalf of
    /// `req`, gives it to its maker and looks it up: its path, what `make` returned, and its
    /// attributes; or the errno to reply with.
    fn make_entry<T>(
        &mut self,
        req: &Request<'_>,
        parent: u64,
        name: &OsStr,
        make: impl FnOnce(&Path) -> std::io::Result<T>,
    ) -> Result<(PathBuf, T, FileAttr), i32> {
        let rel = self.child(parent, name).ok_or(libc::ENOENT)?;
        let full = self.full(&rel);
        let made = make(&full).map_err(|e| errno_of(&e))?;
        self.give_to(req, &full);
        let attr = self.entry(&rel)?;
        Ok((rel, made, attr))
    }

    /// Removes the entry `name` of `parent` with `remove` (unlink, rmdir), and its inode
    /// number with it.
    fn remove_entry(
        &mut self,
        parent: u64,
        name: &OsStr,
        reply: ReplyEmpty,
        remove: fn(&Path) -> std::io::Result<()>,
    ) {
        let Some(rel) = self.child(parent, name) else {
            return reply.error(libc::ENOENT);
        };
        match remove(&self.full(&rel)) {
            Ok(()) => {
                self.forget_path(&rel);
                reply.ok()
            }
            Err(e) => reply.error(errno_of(&e)),
        }
    }

    fn add_handle(&mut self, file: File, rel: PathBuf) -> u64 {
        let fh = self.next_fh;
        self.next_fh += 1;
        self.handles.insert(fh, Handle { file, rel });
        fh
    }

    fn open_flags(&self) -> u32 {
        if self.faults.cached {
            0
        } else {
            consts::FOPEN_DIRECT_IO
        }
    }

    fn log(&self, what: &str, rel: &Path, offset: u64, len: u64, fault: Fault) {
        eprintln!(
            "candor-faultfs: {fault} on {what} of {} at offset {offset}, {len} bytes",
            rel.display()
        );
    }
}

/// Opens with the caller's flags, less those the pass-through handles itself.
fn open_backing(full: &Path, flags: i32, create_mode: Option<u32>) -> std::io::Result<File> {
    let acc = flags & libc::O_ACCMODE;
    let mut o = OpenOptions::new();
    o.read(acc == libc::O_RDONLY || acc == libc::O_RDWR);
    o.write(acc == libc::O_WRONLY || acc == libc::O_RDWR);
    // O_APPEND is applied by the kernel through offsets; O_DIRECT on the backing file
    // would need aligned buffers we do not control.
    let keep = flags & !(libc::O_ACCMODE | libc::O_APPEND | libc::O_DIRECT | libc::O_CREAT);
    o.custom_flags(keep);
    if let Some(mode) = create_mode {
        o.create(true).mode(mode);
        if flags & libc::O_EXCL != 0 {
            o.create_new(true);
        }
    }
    o.open(full)
}

impl Filesystem for PassThrough {
    fn init(&mut self, _req: &Request<'_>, config: &mut KernelConfig) -> Result<(), i32> {
        // Shared mmap of direct-I/O files (kernel 6.6 and later); without it such an mmap
        // fails with ENODEV and only --cached mounts can be mapped.
        const FUSE_DIRECT_IO_ALLOW_MMAP: u64 = 1 << 36;
        let _ = config.add_capabilities(FUSE_DIRECT_IO_ALLOW_MMAP);
        Ok(())
    }

    fn lookup(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEntry) {
        let Some(rel) = self.child(parent, name) else {
            return reply.error(libc::ENOENT);
        };
        reply_entry(reply, self.entry(&rel))
    }

    fn getattr(&mut self, _req: &Request<'_>, ino: u64, fh: Option<u64>, reply: ReplyAttr) {
        let meta = match fh.and_then(|fh| self.handles.get(&fh)) {
            Some(h) => h.file.metadata(),
            None => match self.rel(ino) {
                Some(rel) => std::fs::symlink_metadata(self.full(&rel)),
                None => return reply.error(libc::ENOENT),
            },
        };
        match meta {
            Ok(m) => reply.attr(&TTL, &attr_of(ino, &m)),
            Err(e) => reply.error(errno_of(&e)),
        }
    }

    fn setattr(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        fh: Option<u64>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<u32>,
        reply: ReplyAttr,
    ) {
        let Some(rel) = self.rel(ino) else {
            return reply.error(libc::ENOENT);
        };
        let full = self.full(&rel);
        let result = (|| -> std::io::Result<()> {
            if let Some(mode) = mode {
                std::fs::set_permissions(&full, std::fs::Permissions::from_mode(mode & 0o7777))?;
            }
            if uid.is_some() || gid.is_some() {
                std::os::unix::fs::lchown(&full, uid, gid)?;
            }
            if let Some(size) = size {
                match fh.and_then(|fh| self.handles.get(&fh)) {
                    Some(h) => h.file.set_len(size)?,
                    None => OpenOptions::new().write(true).open(&full)?.set_len(size)?,
                }
            }
            if atime.is_some() || mtime.is_some() {
                let f = File::open(&full)?;
                let mut times = std::fs::FileTimes::new();
                if let Some(a) = atime {
                    times = times.set_accessed(to_system_time(a));
                }
                if let Some(m) = mtime {
                    times = times.set_modified(to_system_time(m));
                }
                f.set_times(times)?;
            }
            Ok(())
        })();
        if let Err(e) = result {
            return reply.error(errno_of(&e));
        }
        match std::fs::symlink_metadata(&full) {
            Ok(m) => reply.attr(&TTL, &attr_of(ino, &m)),
            Err(e) => reply.error(errno_of(&e)),
        }
    }

    fn readlink(&mut self, _req: &Request<'_>, ino: u64, reply: ReplyData) {
        let Some(rel) = self.rel(ino) else {
            return reply.error(libc::ENOENT);
        };
        match std::fs::read_link(self.full(&rel)) {
            Ok(t) => reply.data(t.as_os_str().as_bytes()),
            Err(e) => reply.error(errno_of(&e)),
        }
    }

    fn mkdir(
        &mut self,
        req: &Request<'_>,
        parent: u64,
        name: &OsStr,
        mode: u32,
        umask: u32,
        reply: ReplyEntry,
    ) {
        use std::os::unix::fs::DirBuilderExt;
        let made = self.make_entry(req, parent, name, |full| {
            std::fs::DirBuilder::new()
                .mode(mode & !umask & 0o7777)
                .create(full)
        });
        reply_entry(reply, made.map(|(_, _, attr)| attr))
    }

    fn unlink(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEmpty) {
        self.remove_entry(parent, name, reply, |p| std::fs::remove_file(p))
    }

    fn rmdir(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEmpty) {
        self.remove_entry(parent, name, reply, |p| std::fs::remove_dir(p))
    }

    fn symlink(
        &mut self,
        req: &Request<'_>,
        parent: u64,
        link_name: &OsStr,
        target: &Path,
        reply: ReplyEntry,
    ) {
        let made = self.make_entry(req, parent, link_name, |full| {
            std::os::unix::fs::symlink(target, full)
        });
        reply_entry(reply, made.map(|(_, _, attr)| attr))
    }

    fn rename(
        &mut self,
        _req: &Request<'_>,
        parent: u64,
        name: &OsStr,
        newparent: u64,
        newname: &OsStr,
        flags: u32,
        reply: ReplyEmpty,
    ) {
        if flags != 0 {
            return reply.error(libc::EINVAL);
        }
        let (Some(from), Some(to)) = (self.child(parent, name), self.child(newparent, newname))
        else {
            return reply.error(libc::ENOENT);
        };
        if let Err(e) = std::fs::rename(self.full(&from), self.full(&to)) {
            return reply.error(errno_of(&e));
        }
        // Move the inode numbers of `from` and everything under it.
        self.forget_path(&to);
        let moved: Vec<(PathBuf, u64)> = self
            .inodes
            .iter()
            .filter(|(p, _)| p.starts_with(&from))
            .map(|(p, i)| (p.clone(), *i))
            .collect();
        for (old, ino) in moved {
            let Ok(tail) = old.strip_prefix(&from) else {
                continue;
            };
            let new = if tail.as_os_str().is_empty() {
                to.clone()
            } else {
                to.join(tail)
            };
            self.inodes.remove(&old);
            self.inodes.insert(new.clone(), ino);
            self.paths.insert(ino, new);
        }
        reply.ok()
    }

    fn open(&mut self, _req: &Request<'_>, ino: u64, flags: i32, reply: ReplyOpen) {
        let Some(rel) = self.rel(ino) else {
            return reply.error(libc::ENOENT);
        };
        match open_backing(&self.full(&rel), flags, None) {
            Ok(file) => {
                let fh = self.add_handle(file, rel);
                reply.opened(fh, self.open_flags())
            }
            Err(e) => reply.error(errno_of(&e)),
        }
    }

    fn create(
        &mut self,
        req: &Request<'_>,
        parent: u64,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let made = self.make_entry(req, parent, name, |full| {
            open_backing(full, flags, Some(mode & !umask & 0o7777))
        });
        let (rel, file, attr) = match made {
            Ok(m) => m,
            Err(e) => return reply.error(e),
        };
        let fh = self.add_handle(file, rel);
        reply.created(&TTL, &attr, 0, fh, self.open_flags())
    }

    fn read(
        &mut self,
        _req: &Request<'_>,
        _ino: u64,
        fh: u64,
        offset: i64,
        size: u32,
        _flags: i32,
        _lock_owner: Option<u64>,
        reply: ReplyData,
    ) {
        let Some(h) = self.handles.get(&fh) else {
            return reply.error(libc::EBADF);
        };
        let offset = offset.max(0) as u64;
        let rel = h.rel.to_string_lossy();
        if let Some(fault) = self.faults.read_fault(&rel, offset, u64::from(size)) {
            self.log("read", &h.rel, offset, u64::from(size), fault);
            return reply.error(fault.errno());
        }
        self.pace();
        let mut buf = vec![0u8; size as usize];
        let mut done = 0usize;
        while done < buf.len() {
            match h.file.read_at(&mut buf[done..], offset + done as u64) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return reply.error(errno_of(&e)),
            }
        }
        reply.data(&buf[..done])
    }

    fn write(
        &mut self,
        _req: &Request<'_>,
        _ino: u64,
        fh: u64,
        offset: i64,
        data: &[u8],
        _write_flags: u32,
        _flags: i32,
        _lock_owner: Option<u64>,
        reply: ReplyWrite,
    ) {
        let Some(h) = self.handles.get(&fh) else {
            return reply.error(libc::EBADF);
        };
        let offset = offset.max(0) as u64;
        let rel = h.rel.to_string_lossy();
        let len = data.len() as u64;
        let admit = match self.faults.write_admit(&rel, offset, len, self.written) {
            Ok(n) => n as usize,
            Err(fault) => {
                self.log("write", &h.rel, offset, len, fault);
                return reply.error(fault.errno());
            }
        };
        if admit < data.len() {
            self.log(
                "write",
                &h.rel,
                offset + admit as u64,
                len - admit as u64,
                Fault::Enospc,
            );
        }
        self.pace();
        match h.file.write_all_at(&data[..admit], offset) {
            Ok(()) => {
                self.written += admit as u64;
                reply.written(admit as u32)
            }
            Err(e) => reply.error(errno_of(&e)),
        }
    }

    /// A close(2) of a descriptor: the kernel sends FLUSH before close returns (RELEASE
    /// follows later, in the background), so a file vanishes here, where the closing
    /// program cannot yet have tried to open it again.
    fn flush(
        &mut self,
        _req: &Request<'_>,
        _ino: u64,
        fh: u64,
        _lock_owner: u64,
        reply: ReplyEmpty,
    ) {
        if let Some(rel) = self.handles.get(&fh).map(|h| h.rel.clone()) {
            let closes = self.closes.entry(rel.clone()).or_insert(0);
            *closes += 1;
            let closes = *closes;
            if self.faults.vanishes(&rel.to_string_lossy(), closes) {
                eprintln!(
                    "candor-faultfs: {} vanished after {closes} close(s)",
                    rel.display()
                );
                let _ = std::fs::remove_file(self.full(&rel));
                self.closes.remove(&rel);
                self.forget_path(&rel);
            }
        }
        reply.ok()
    }

    fn release(
        &mut self,
        _req: &Request<'_>,
        _ino: u64,
        fh: u64,
        _flags: i32,
        _lock_owner: Option<u64>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        self.handles.remove(&fh);
        reply.ok()
    }

    fn fsync(&mut self, _req: &Request<'_>, _ino: u64, fh: u64, datasync: bool, reply: ReplyEmpty) {
        let Some(h) = self.handles.get(&fh) else {
            return reply.error(libc::EBADF);
        };
        let r = if datasync {
            h.file.sync_data()
        } else {
            h.file.sync_all()
        };
        match r {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(errno_of(&e)),
        }
    }

    fn opendir(&mut self, _req: &Request<'_>, ino: u64, _flags: i32, reply: ReplyOpen) {
        match self.rel(ino) {
            Some(_) => reply.opened(0, 0),
            None => reply.error(libc::ENOENT),
        }
    }

    fn readdir(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _fh: u64,
        offset: i64,
        mut reply: ReplyDirectory,
    ) {
        let Some(rel) = self.rel(ino) else {
            return reply.error(libc::ENOENT);
        };
        let iter = match std::fs::read_dir(self.full(&rel)) {
            Ok(i) => i,
            Err(e) => return reply.error(errno_of(&e)),
        };
        let parent_ino = rel
            .parent()
            .and_then(|p| self.inodes.get(p).copied())
            .unwrap_or(FUSE_ROOT_ID);
        let mut entries: Vec<(u64, FileType, std::ffi::OsString)> = vec![
            (ino, FileType::Directory, ".".into()),
            (parent_ino, FileType::Directory, "..".into()),
        ];
        for e in iter.flatten() {
            let child = rel.join(e.file_name());
            let kind = match e.metadata() {
                Ok(m) => kind_of(&m),
                Err(_) => continue,
            };
            let child_ino = self.ino_for(&child);
            entries.push((child_ino, kind, e.file_name()));
        }
        for (i, (ino, kind, name)) in entries.into_iter().enumerate().skip(offset.max(0) as usize) {
            if reply.add(ino, (i + 1) as i64, kind, &name) {
                break;
            }
        }
        reply.ok()
    }

    fn releasedir(
        &mut self,
        _req: &Request<'_>,
        _ino: u64,
        _fh: u64,
        _flags: i32,
        reply: ReplyEmpty,
    ) {
        reply.ok()
    }

    fn statfs(&mut self, _req: &Request<'_>, _ino: u64, reply: ReplyStatfs) {
        let Ok(c) = CString::new(self.backing.as_os_str().as_bytes()) else {
            return reply.error(libc::EINVAL);
        };
        // SAFETY: statvfs is plain old data; zeroed is a valid value to be overwritten.
        let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
        // SAFETY: c is a valid NUL-terminated path and st a valid out pointer.
        if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
            return reply.error(errno_of(&std::io::Error::last_os_error()));
        }
        reply.statfs(
            st.f_blocks,
            st.f_bfree,
            st.f_bavail,
            st.f_files,
            st.f_ffree,
            st.f_bsize as u32,
            st.f_namemax as u32,
            st.f_frsize as u32,
        )
    }

    fn access(&mut self, _req: &Request<'_>, ino: u64, _mask: i32, reply: ReplyEmpty) {
        // The kernel checks permissions itself (default_permissions).
        match self.rel(ino) {
            Some(_) => reply.ok(),
            None => reply.error(libc::ENOENT),
        }
    }

    fn fallocate(
        &mut self,
        _req: &Request<'_>,
        _ino: u64,
        fh: u64,
        offset: i64,
        length: i64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        let Some(h) = self.handles.get(&fh) else {
            return reply.error(libc::EBADF);
        };
        use std::os::unix::io::AsRawFd;
        // SAFETY: the descriptor is valid while the handle lives.
        let r = unsafe { libc::fallocate(h.file.as_raw_fd(), mode, offset, length) };
        if r == 0 {
            reply.ok()
        } else {
            reply.error(errno_of(&std::io::Error::last_os_error()))
        }
    }
}

/// Mounts the filesystem and serves it until it is unmounted (`fusermount3 -u`, `umount`)
/// or the process gets SIGINT, SIGTERM or SIGHUP, which unmount it first.
pub fn serve(config: &Config) -> std::io::Result<()> {
    let backing = std::fs::canonicalize(&config.backing)?;
    if !backing.is_dir() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{} is not a directory", backing.display()),
        ));
    }
    let mut options = vec![
        MountOption::FSName("candor-faultfs".into()),
        MountOption::Subtype("candor-faultfs".into()),
        MountOption::DefaultPermissions,
    ];
    if config.allow_other {
        options.push(MountOption::AllowOther);
    }
    // Block the stop signals in every thread, so this thread can wait for them and unmount.
    // SAFETY: the sigset is initialised by sigemptyset before use.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    unsafe {
        libc::sigemptyset(&mut set);
        for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            libc::sigaddset(&mut set, s);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
    let session = fuser::spawn_mount2(
        PassThrough::new(backing, config.faults.clone()),
        &config.mountpoint,
        &options,
    )?;
    let tick = libc::timespec {
        tv_sec: 0,
        tv_nsec: 100_000_000,
    };
    loop {
        if session.guard.is_finished() {
            // Unmounted from outside.
            return session
                .guard
                .join()
                .unwrap_or_else(|_| Err(std::io::Error::other("the session thread panicked")));
        }
        // SAFETY: set and tick are valid; a null info pointer is allowed.
        let sig = unsafe { libc::sigtimedwait(&set, std::ptr::null_mut(), &tick) };
        if sig > 0 {
            drop(session); // unmounts
            return Ok(());
        }
    }
}
