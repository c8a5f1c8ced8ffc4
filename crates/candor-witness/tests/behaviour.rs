//! The witness on real I/O: each test does its I/O with std and libc on a fresh ext4 on a
//! loop device (so no other process's traffic reaches the counted device, except the one a
//! test starts on purpose) and checks the verdict and figures the witness gives.
//!
//! /proc/self/io counts the whole process, so the tests take a lock and run one at a time.

use candor_model::{Intent, Verdict};
use candor_witness::{Config, Mode, Outcome, Witness};
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

const MIB: u64 = 1 << 20;
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn config() -> Config {
    Config {
        mode: Mode::Procfs,
        interval: Duration::from_millis(100),
        trace_syscalls: false,
        job: Vec::new(),
    }
}

/// A scratch ext4 on a loop device; None after a skip when this machine cannot make one.
fn ext4() -> Option<candor_lab::ScratchFs> {
    candor_testkit::need_or(
        candor_lab::scratch("ext4", 512 * MIB),
        candor_lab::LabError::is_unsupported,
    )
}

/// Writes `size` bytes of non-zero data and makes them durable.
fn make_file(path: &Path, size: u64) {
    let mut f = File::create(path).expect("create");
    let block = vec![0x5au8; MIB as usize];
    for _ in 0..size / MIB {
        f.write_all(&block).expect("write");
    }
    f.sync_all().expect("fsync");
}

/// What the runner does before a test meant for the device: write back, then drop the pages.
fn drop_cache(path: &Path) {
    let f = File::open(path).expect("open");
    // SAFETY: plain syscalls on an fd we hold open.
    unsafe {
        assert_eq!(libc::fdatasync(f.as_raw_fd()), 0);
        assert_eq!(
            libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED),
            0
        );
        libc::syncfs(f.as_raw_fd());
    }
}

fn read_all(path: &Path) -> u64 {
    let mut f = File::open(path).expect("open");
    let mut buf = vec![0u8; MIB as usize];
    let mut n = 0u64;
    loop {
        let r = f.read(&mut buf).expect("read");
        if r == 0 {
            return n;
        }
        n += r as u64;
    }
}

/// A 4 KiB-aligned buffer for O_DIRECT.
struct Aligned {
    ptr: *mut u8,
    layout: std::alloc::Layout,
}

impl Aligned {
    fn new(len: usize) -> Aligned {
        let layout = std::alloc::Layout::from_size_align(len, 4096).expect("layout");
        // SAFETY: non-zero size layout.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        assert!(!ptr.is_null());
        Aligned { ptr, layout }
    }
    fn as_mut(&mut self) -> &mut [u8] {
        // SAFETY: ptr is valid for layout.size() bytes, owned by self.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.layout.size()) }
    }
}

impl Drop for Aligned {
    fn drop(&mut self) {
        // SAFETY: allocated with this layout in new().
        unsafe { std::alloc::dealloc(self.ptr, self.layout) }
    }
}

fn direct_write(path: &Path, size: u64) -> u64 {
    let mut f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
        .expect("open O_DIRECT");
    let mut buf = Aligned::new(MIB as usize);
    buf.as_mut().fill(0xa5);
    for _ in 0..size / MIB {
        f.write_all(buf.as_mut()).expect("direct write");
    }
    f.sync_data().expect("fdatasync");
    size
}

fn direct_read(path: &Path) -> u64 {
    let mut f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
        .expect("open O_DIRECT");
    let mut buf = Aligned::new(MIB as usize);
    let mut n = 0;
    loop {
        let r = f.read(buf.as_mut()).expect("direct read");
        if r == 0 {
            return n;
        }
        n += r as u64;
    }
}

struct Timed {
    witness: candor_model::Witness,
    seconds: f64,
}

/// begin -> `io` (timed) -> timed_end -> `after` (untimed, the runner's flush) -> finish.
fn observe(
    target: &Path,
    files: &[PathBuf],
    mut outcome: Outcome,
    io: impl FnOnce() -> (u64, u64),
    after: impl FnOnce(),
) -> Timed {
    let (w, note) = Witness::new(target, config());
    assert_eq!(note, None, "procfs needs no fallback");
    let mut watch = w.begin(files);
    let t0 = Instant::now();
    let (read, written) = io();
    let seconds = t0.elapsed().as_secs_f64();
    watch.timed_end();
    after();
    outcome.app_read_bytes = read;
    outcome.app_write_bytes = written;
    outcome.timed_seconds = seconds;
    outcome.headline_bps = (read + written) as f64 / seconds;
    let witness = watch.finish(&outcome);
    eprintln!(
        "{}: {} — {} (precision {:?} over {:.1} ms)",
        outcome.test,
        witness.verdict,
        witness.explanation,
        witness.precision,
        seconds * 1000.0
    );
    Timed { witness, seconds }
}

fn outcome(test: &str, intent: Intent, is_write: bool, direct: bool) -> Outcome {
    Outcome {
        test: test.into(),
        intent,
        is_write,
        direct,
        ..Default::default()
    }
}

fn lock() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

#[test]
fn buffered_read_after_dropping_the_cache_is_the_device() {
    let _g = lock();
    let Some(fs) = ext4() else { return };
    let file = fs.path().join("cold");
    make_file(&file, 64 * MIB);
    drop_cache(&file);
    let t = observe(
        fs.path(),
        std::slice::from_ref(&file),
        outcome("read", Intent::Device, false, false),
        || (read_all(&file), 0),
        || {},
    );
    let w = &t.witness;
    assert_eq!(w.source, "procfs");
    assert_eq!(w.verdict, Verdict::Device, "{}", w.explanation);
    let hit = w.cache_hit_ratio.expect("hit ratio");
    assert!(hit <= 0.05, "hit ratio {hit}");
    assert!(!w.contradicts_intent);
    let dev = w.device.as_ref().expect("device block");
    assert!(dev.read_bytes >= 64 * MIB, "device read {}", dev.read_bytes);
    assert!(!w.disturbed, "{}", w.explanation);
    let fc = w.file_cache.as_ref().expect("file cache");
    assert!(fc.resident_before * 10 < fc.file_pages, "{fc:?}");
    assert!(t.seconds > 0.0);
}

#[test]
fn reread_of_a_small_file_is_the_cache() {
    let _g = lock();
    let Some(fs) = ext4() else { return };
    let file = fs.path().join("warm");
    make_file(&file, 16 * MIB);
    drop_cache(&file);
    assert_eq!(read_all(&file), 16 * MIB);
    let t = observe(
        fs.path(),
        std::slice::from_ref(&file),
        outcome("reread", Intent::Cache, false, false),
        || (read_all(&file), 0),
        || {},
    );
    let w = &t.witness;
    assert_eq!(w.verdict, Verdict::Cache, "{}", w.explanation);
    let hit = w.cache_hit_ratio.expect("hit ratio");
    assert!(hit >= 0.9, "hit ratio {hit}");
    assert!(!w.contradicts_intent);
    // The same reread, judged as if it had been meant for the device, says so.
    let t = observe(
        fs.path(),
        std::slice::from_ref(&file),
        outcome("read", Intent::Device, false, false),
        || (read_all(&file), 0),
        || {},
    );
    assert!(t.witness.contradicts_intent);
    assert!(
        t.witness.explanation.contains("Use --direct"),
        "{}",
        t.witness.explanation
    );
}

#[test]
fn direct_write_and_read_are_the_device_byte_for_byte() {
    let _g = lock();
    let Some(fs) = ext4() else { return };
    let file = fs.path().join("direct");
    let t = observe(
        fs.path(),
        std::slice::from_ref(&file),
        outcome("write", Intent::Device, true, true),
        || (0, direct_write(&file, 32 * MIB)),
        || {},
    );
    let w = &t.witness;
    assert_eq!(w.verdict, Verdict::Device, "{}", w.explanation);
    let dev = w.device.as_ref().expect("device block");
    let app = w.app.write_bytes as f64;
    let off = (dev.write_bytes as f64 - app).abs() / app;
    assert!(
        off <= 0.02,
        "device wrote {} for {} app bytes",
        dev.write_bytes,
        app
    );
    assert!(w.flushed_in_window.expect("flushed") >= 0.98);

    drop_cache(&file);
    let t = observe(
        fs.path(),
        std::slice::from_ref(&file),
        outcome("read", Intent::Device, false, true),
        || (direct_read(&file), 0),
        || {},
    );
    let w = &t.witness;
    assert_eq!(w.verdict, Verdict::Device, "{}", w.explanation);
    let dev = w.device.as_ref().expect("device block");
    let app = w.app.read_bytes as f64;
    let off = (dev.read_bytes as f64 - app).abs() / app;
    assert!(
        off <= 0.02,
        "device read {} for {} app bytes",
        dev.read_bytes,
        app
    );
    assert!(w.cache_hit_ratio.expect("hit") <= 0.02);
}

fn buffered_write(path: &Path, size: u64, fsync: bool) -> u64 {
    let mut f = File::create(path).expect("create");
    let block = vec![0x3cu8; MIB as usize];
    for _ in 0..size / MIB {
        f.write_all(&block).expect("write");
    }
    if fsync {
        f.sync_all().expect("fsync");
    }
    size
}

fn fsync_path(path: &Path) {
    File::open(path).and_then(|f| f.sync_all()).expect("fsync");
}

#[test]
fn buffered_write_is_absorbed_unless_the_fsync_is_timed() {
    let _g = lock();
    let Some(fs) = ext4() else { return };
    let file = fs.path().join("absorbed");
    let t = observe(
        fs.path(),
        std::slice::from_ref(&file),
        outcome("write", Intent::Device, true, false),
        || (0, buffered_write(&file, 32 * MIB, false)),
        || fsync_path(&file),
    );
    let w = &t.witness;
    assert_eq!(w.verdict, Verdict::Cache, "{}", w.explanation);
    let flushed = w.flushed_in_window.expect("flushed");
    assert!(flushed <= 0.05, "flushed in window {flushed}");
    assert!(w.contradicts_intent);
    // The runner's flush after the timer put the data on the device.
    let wa = w.write_amplification.expect("write amplification");
    assert!((0.98..1.5).contains(&wa), "write amplification {wa}");
    let mem = w.memory.as_ref().expect("memory");
    assert!(mem.dirty_peak >= 16 * MIB, "dirty peak {}", mem.dirty_peak);

    let file = fs.path().join("flushed");
    let t = observe(
        fs.path(),
        std::slice::from_ref(&file),
        outcome("write", Intent::Device, true, false),
        || (0, buffered_write(&file, 32 * MIB, true)),
        || {},
    );
    let w = &t.witness;
    assert_eq!(w.verdict, Verdict::Device, "{}", w.explanation);
    assert!(w.flushed_in_window.expect("flushed") >= 0.95);
    assert!(!w.contradicts_intent);
}

#[test]
fn a_target_on_tmpfs_is_memory() {
    let _g = lock();
    let shm = Path::new("/dev/shm");
    if !candor_testkit::need_path(shm, "no tmpfs at /dev/shm") {
        return;
    }
    let dir = tempfile::tempdir_in(shm).expect("tempdir in /dev/shm");
    let file = dir.path().join("f");
    let t = observe(
        dir.path(),
        std::slice::from_ref(&file),
        outcome("write", Intent::Device, true, false),
        || (0, buffered_write(&file, 8 * MIB, true)),
        || {},
    );
    let w = &t.witness;
    assert_eq!(w.verdict, Verdict::Memory, "{}", w.explanation);
    assert!(w.contradicts_intent);
    assert!(w.device.is_none());
    assert!(w.explanation.contains("tmpfs"), "{}", w.explanation);
    assert!(
        w.precision.is_some(),
        "memory figures are checked against wchar"
    );
}

#[test]
fn another_process_writing_the_device_disturbs_the_test() {
    let _g = lock();
    let Some(fs) = ext4() else { return };
    let ours = fs.path().join("ours");
    let theirs = fs.path().join("theirs");
    let (w, _) = Witness::new(fs.path(), config());
    let mut watch = w.begin(std::slice::from_ref(&ours));
    // The stranger must not descend from this process: candor's children are its own
    // traffic. A shell starts a subshell in the background and exits; the subshell, now
    // nobody's child here, runs dd, reaps it (dd's counters join the subshell's) and then
    // becomes `sleep` under the same pid, which keeps those counters readable until the
    // witness has judged.
    let sh = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "(dd if=/dev/zero of='{}' bs=1M count=96 oflag=direct status=none; exec sleep 60) >/dev/null 2>&1 & echo $!",
            theirs.display()
        ))
        .output();
    let sh = sh.expect("sh runs");
    assert!(sh.status.success(), "sh and dd: {sh:?}");
    let stranger: i32 = String::from_utf8_lossy(&sh.stdout)
        .trim()
        .parse()
        .expect("the subshell's pid");
    let t0 = Instant::now();
    let written = direct_write(&ours, 16 * MIB);
    // dd is done when its 96 MiB have joined the subshell's counters.
    let io = format!("/proc/{stranger}/io");
    let deadline = Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let done = candor_procfs::read_pid_io(&io).is_some_and(|x| x.write_bytes >= 96 * MIB);
        if done {
            break;
        }
        assert!(Instant::now() < deadline, "dd did not finish in 60 s");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let seconds = t0.elapsed().as_secs_f64();
    watch.timed_end();
    let mut o = outcome("write", Intent::Device, true, true);
    o.app_write_bytes = written;
    o.timed_seconds = seconds;
    o.headline_bps = written as f64 / seconds;
    let w = watch.finish(&o);
    // SAFETY: ends the subshell this test started, by its pid.
    unsafe { libc::kill(stranger, libc::SIGKILL) };
    eprintln!("disturbed: {}", w.explanation);
    assert!(w.disturbed, "{}", w.explanation);
    // 96 MiB from dd, less the allowance (2 MiB + half of candor's 16 MiB).
    assert!(
        w.foreign_device_bytes >= 80 * MIB,
        "foreign {}",
        w.foreign_device_bytes
    );
    assert!(w.explanation.contains("rerun when the device is idle"));
}

#[test]
fn repetitions_combine_into_one_judgement() {
    let _g = lock();
    let Some(fs) = ext4() else { return };
    let file = fs.path().join("reps");
    make_file(&file, 16 * MIB);
    let mut reps = Vec::new();
    for _ in 0..3 {
        drop_cache(&file);
        let t = observe(
            fs.path(),
            std::slice::from_ref(&file),
            outcome("read", Intent::Device, false, false),
            || (read_all(&file), 0),
            || {},
        );
        reps.push(t.witness);
    }
    let c = candor_witness::combine(reps).expect("combined");
    assert_eq!(c.verdict, Verdict::Device, "{}", c.explanation);
    assert_eq!(c.app.read_bytes, 48 * MIB);
    assert!(c.device.as_ref().expect("device").read_bytes >= 48 * MIB);
}

#[test]
fn half_cached_read_is_mixed_with_its_share() {
    let _g = lock();
    let Some(fs) = ext4() else { return };
    let file = fs.path().join("half");
    make_file(&file, 64 * MIB);
    drop_cache(&file);
    // Bring the first half into the page cache.
    let mut f = File::open(&file).expect("open");
    let mut buf = vec![0u8; MIB as usize];
    for _ in 0..32 {
        f.read_exact(&mut buf).expect("read");
    }
    drop(f);
    let t = observe(
        fs.path(),
        std::slice::from_ref(&file),
        outcome("read", Intent::Device, false, false),
        || (read_all(&file), 0),
        || {},
    );
    let w = &t.witness;
    assert_eq!(w.verdict, Verdict::Mixed, "{}", w.explanation);
    let share = w.device_share.expect("share");
    assert!((0.4..0.6).contains(&share), "device share {share}");
    assert!(w.contradicts_intent);
    assert!(
        w.explanation.contains("mixes memory and device speed"),
        "{}",
        w.explanation
    );
}
