//! `candor-faultfs` mounted for real through the test helper: data passes through, EIO
//! fires at the configured offsets and only there, ENOSPC after the byte budget, a file
//! vanishes after its close, and dropping the helper unmounts.

use candor_faultfs::{FaultFs, Faults, MountError};
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

struct Dirs {
    _tmp: tempfile::TempDir,
    backing: PathBuf,
    mnt: PathBuf,
}

fn dirs() -> Dirs {
    let tmp = tempfile::tempdir().expect("temporary directory");
    let backing = tmp.path().join("backing");
    let mnt = tmp.path().join("mnt");
    std::fs::create_dir(&backing).expect("mkdir backing");
    std::fs::create_dir(&mnt).expect("mkdir mnt");
    Dirs {
        _tmp: tmp,
        backing,
        mnt,
    }
}

/// Mounts; None after a skip when this machine cannot mount FUSE (a mount that fails
/// where it can is a failure).
fn mount(d: &Dirs, faults: &Faults) -> Option<FaultFs> {
    // The binary of this package is built for its integration tests.
    let bin = Path::new(env!("CARGO_BIN_EXE_candor-faultfs"));
    candor_testkit::need_or(
        FaultFs::mount_with(bin, &d.backing, &d.mnt, faults),
        MountError::is_skip,
    )
}

/// The running kernel's (major, minor) version.
fn kernel_version() -> (u32, u32) {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").expect("osrelease");
    let mut parts = release
        .trim()
        .split(|c: char| !c.is_ascii_digit())
        .map(|p| p.parse::<u32>().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
}

fn mounted(p: &Path) -> bool {
    let mounts = std::fs::read_to_string("/proc/mounts").expect("read /proc/mounts");
    let p = p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    mounts
        .lines()
        .any(|l| l.split(' ').nth(1) == Some(p.to_string_lossy().as_ref()))
}

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 % 251) as u8).collect()
}

#[test]
fn passes_data_through_and_unmounts_on_drop() {
    let d = dirs();
    let Some(fs) = mount(&d, &Faults::new()) else {
        return;
    };
    assert!(mounted(fs.path()));
    let data = pattern(300_000);
    std::fs::create_dir(fs.path().join("sub")).expect("mkdir through the mount");
    std::fs::write(fs.path().join("sub/file"), &data).expect("write through the mount");
    assert_eq!(
        std::fs::read(fs.path().join("sub/file")).expect("read back"),
        data
    );
    // The bytes are in the backing directory.
    assert_eq!(
        std::fs::read(d.backing.join("sub/file")).expect("backing"),
        data
    );
    let names: Vec<String> = std::fs::read_dir(fs.path().join("sub"))
        .expect("readdir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec!["file".to_string()]);
    std::fs::rename(fs.path().join("sub/file"), fs.path().join("sub/moved")).expect("rename");
    assert_eq!(
        std::fs::read(fs.path().join("sub/moved")).expect("read moved"),
        data
    );
    let f = OpenOptions::new()
        .write(true)
        .open(fs.path().join("sub/moved"))
        .expect("open");
    f.set_len(10).expect("truncate");
    drop(f);
    assert_eq!(
        std::fs::metadata(fs.path().join("sub/moved"))
            .expect("stat")
            .len(),
        10
    );
    // A symbolic link is made in the backing directory and read back through the mount.
    std::os::unix::fs::symlink("moved", fs.path().join("sub/link")).expect("symlink");
    assert_eq!(
        std::fs::read_link(d.backing.join("sub/link")).expect("backing link"),
        Path::new("moved")
    );
    assert_eq!(
        std::fs::read_link(fs.path().join("sub/link")).expect("readlink"),
        Path::new("moved")
    );
    assert_eq!(
        std::fs::read(fs.path().join("sub/link")).expect("read through the link"),
        data[..10]
    );
    std::fs::remove_file(fs.path().join("sub/link")).expect("unlink the link");
    std::fs::remove_file(fs.path().join("sub/moved")).expect("unlink");
    // rmdir of a missing entry is the kernel's error, passed back.
    assert_eq!(
        std::fs::remove_dir(fs.path().join("sub/none"))
            .expect_err("rmdir of nothing")
            .raw_os_error(),
        Some(libc::ENOENT)
    );
    std::fs::remove_dir(fs.path().join("sub")).expect("rmdir");
    assert!(
        !d.backing.join("sub").exists(),
        "rmdir reached the backing directory"
    );
    assert_eq!(fs.faults_injected(), 0);
    let mnt = fs.path().to_path_buf();
    drop(fs);
    assert!(!mounted(&mnt), "still mounted after drop");
}

#[test]
fn reads_touching_the_offset_fail_with_eio() {
    let d = dirs();
    let data = pattern(64 * 1024);
    std::fs::write(d.backing.join("victim"), &data).expect("seed the backing file");
    let Some(fs) = mount(&d, &Faults::new().eio_read(20_000..20_001)) else {
        return;
    };
    let path = fs.path().join("victim");

    // Reading the whole file fails, with EIO as the kernel's error.
    let err = std::fs::read(&path).expect_err("the read should fail");
    assert_eq!(err.raw_os_error(), Some(libc::EIO), "{err}");

    // Reads that do not touch byte 20000 succeed, every time (no cache hides the fault).
    let f = File::open(&path).expect("open");
    let mut buf = vec![0u8; 4096];
    f.read_exact_at(&mut buf, 0).expect("read before the fault");
    assert_eq!(buf, data[..4096]);
    f.read_exact_at(&mut buf, 20_001)
        .expect("read after the fault");
    assert_eq!(buf, data[20_001..24_097]);
    for _ in 0..2 {
        let e = f
            .read_exact_at(&mut buf, 19_000)
            .expect_err("overlapping read");
        assert_eq!(e.raw_os_error(), Some(libc::EIO));
    }
    // Writes are not affected by a read fault.
    let mut w = OpenOptions::new()
        .write(true)
        .open(&path)
        .expect("open for write");
    w.seek(SeekFrom::Start(20_000)).expect("seek");
    w.write_all(b"x").expect("write at the read fault's offset");
    assert!(fs.faults_injected() >= 3, "log: {}", fs.log());
}

#[test]
fn writes_touching_the_offset_fail_with_eio_only_for_chosen_files() {
    let d = dirs();
    let faults = Faults::new().eio_write(8192..8193).only("target");
    let Some(fs) = mount(&d, &faults) else { return };
    let err = std::fs::write(fs.path().join("target.dat"), pattern(16_384))
        .expect_err("the write should fail");
    assert_eq!(err.raw_os_error(), Some(libc::EIO), "{err}");
    std::fs::write(fs.path().join("other.dat"), pattern(16_384)).expect("other files are fine");
    let mut f = File::create(fs.path().join("target.2")).expect("create");
    f.write_all(&pattern(8192)).expect("bytes before the fault");
    let e = f.write_all(b"boom").expect_err("write at the offset");
    assert_eq!(e.raw_os_error(), Some(libc::EIO));
}

#[test]
fn writes_fail_with_enospc_after_the_budget() {
    let d = dirs();
    let Some(fs) = mount(&d, &Faults::new().enospc_after(100_000)) else {
        return;
    };
    std::fs::write(fs.path().join("a"), pattern(60_000)).expect("within the budget");
    let mut f = File::create(fs.path().join("b")).expect("create b");
    let err = f.write_all(&pattern(60_000)).expect_err("past the budget");
    assert_eq!(err.raw_os_error(), Some(libc::ENOSPC), "{err}");
    drop(f);
    // Exactly the budget reached the backing directory: 60000 + 40000.
    let b = std::fs::metadata(d.backing.join("b"))
        .expect("stat b")
        .len();
    assert_eq!(b, 40_000);
    let e = std::fs::write(fs.path().join("c"), b"more").expect_err("still full");
    assert_eq!(e.raw_os_error(), Some(libc::ENOSPC));
}

#[test]
fn a_file_vanishes_after_its_close() {
    let d = dirs();
    let Some(fs) = mount(&d, &Faults::new().vanish("ghost")) else {
        return;
    };
    let path = fs.path().join("ghost.1");
    let mut f = File::create(&path).expect("create");
    f.write_all(b"now you see me").expect("write");
    drop(f);
    let e = File::open(&path).expect_err("gone after close");
    assert_eq!(e.raw_os_error(), Some(libc::ENOENT));
    assert!(!d.backing.join("ghost.1").exists());
    std::fs::write(fs.path().join("stays"), b"kept").expect("other file");
    let mut s = String::new();
    File::open(fs.path().join("stays"))
        .expect("other file stays")
        .read_to_string(&mut s)
        .expect("read");
    assert_eq!(s, "kept");
}

/// A 4 KiB-aligned buffer for O_DIRECT.
struct Aligned {
    ptr: *mut u8,
    layout: std::alloc::Layout,
}

impl Aligned {
    fn new(len: usize) -> Aligned {
        let layout = std::alloc::Layout::from_size_align(len, 4096).expect("layout");
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        assert!(!ptr.is_null(), "allocation failed");
        Aligned { ptr, layout }
    }
    fn as_mut(&mut self) -> &mut [u8] {
        // SAFETY: ptr points to layout.size() initialised bytes owned by self.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.layout.size()) }
    }
}

impl Drop for Aligned {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) }
    }
}

#[test]
fn o_direct_reads_pass_and_fail_at_the_offset() {
    use std::os::unix::fs::OpenOptionsExt;
    let d = dirs();
    let data = pattern(64 * 1024);
    std::fs::write(d.backing.join("direct"), &data).expect("seed");
    let Some(fs) = mount(&d, &Faults::new().eio_read(32_768..32_769)) else {
        return;
    };
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(fs.path().join("direct"))
        .expect("O_DIRECT open through the mount");
    let mut buf = Aligned::new(4096);
    f.read_exact_at(buf.as_mut(), 4096)
        .expect("aligned O_DIRECT read");
    assert_eq!(buf.as_mut(), &data[4096..8192]);
    let e = f
        .read_exact_at(buf.as_mut(), 32_768)
        .expect_err("O_DIRECT read at the fault");
    assert_eq!(e.raw_os_error(), Some(libc::EIO));
}

#[test]
fn shared_mmap_works_through_the_mount() {
    use std::os::unix::io::AsRawFd;
    let d = dirs();
    std::fs::write(d.backing.join("mapped"), pattern(8192)).expect("seed");
    let Some(fs) = mount(&d, &Faults::new()) else {
        return;
    };
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .open(fs.path().join("mapped"))
        .expect("open");
    // SAFETY: a fresh shared mapping of 4096 bytes of an open file of 8192 bytes.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            f.as_raw_fd(),
            0,
        )
    };
    if p == libc::MAP_FAILED {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::ENODEV) && kernel_version() < (6, 6) {
            candor_testkit::skip("this kernel cannot map direct-I/O FUSE files (before 6.6)");
            return;
        }
        panic!("mmap: {e}");
    }
    // SAFETY: p maps 4096 readable and writable bytes until munmap below.
    unsafe {
        let bytes = std::slice::from_raw_parts_mut(p as *mut u8, 4096);
        assert_eq!(&bytes[..16], &pattern(16)[..]);
        bytes[..5].copy_from_slice(b"hello");
        assert_eq!(libc::msync(p, 4096, libc::MS_SYNC), 0);
        libc::munmap(p, 4096);
    }
    drop(f);
    let back = std::fs::read(d.backing.join("mapped")).expect("backing");
    assert_eq!(&back[..5], b"hello");
}

#[test]
fn bad_arguments_exit_2() {
    let bin = env!("CARGO_BIN_EXE_candor-faultfs");
    let out = std::process::Command::new(bin)
        .args(["/nonexistent", "/nonexistent2", "--eio-read", "8-4"])
        .output()
        .expect("run candor-faultfs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("empty"));
}

#[test]
fn sigterm_unmounts() {
    let bin = env!("CARGO_BIN_EXE_candor-faultfs");
    if !candor_testkit::need_path(Path::new("/dev/fuse"), "no FUSE on this machine") {
        return;
    }
    let d = dirs();
    let mut child = std::process::Command::new(bin)
        .arg(&d.backing)
        .arg(&d.mnt)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start candor-faultfs");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !mounted(&d.mnt) {
        if let Ok(Some(status)) = child.try_wait() {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = e.read_to_string(&mut err);
            }
            // Without root the mount goes through fusermount3, which this machine may not
            // allow; as root a mount that fails is a failure.
            let refused = ["fusermount", "Permission denied", "Operation not permitted"];
            if !candor_testkit::is_root() && refused.iter().any(|m| err.contains(m)) {
                candor_testkit::skip(format!("cannot mount FUSE without root here: {err}"));
                return;
            }
            panic!("candor-faultfs could not mount ({status}): {err}");
        }
        assert!(std::time::Instant::now() < deadline, "no mount within 10 s");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // SAFETY: kill has no memory-safety preconditions; the pid is our child's.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().expect("wait");
    assert!(status.success(), "{status}");
    assert!(!mounted(&d.mnt), "still mounted after SIGTERM");
}
