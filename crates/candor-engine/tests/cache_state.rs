//! What is in the page cache when a test's timed region starts. A coordinator's
//! `before_timed` runs just before the release barrier, so it sees exactly the state the
//! timed I/O starts from; it asks the kernel (cachestat(2)) how many of the file's pages are
//! cached and dirty.
//!
//! Tests meant for the device, writes included, start with none of the file cached and
//! nothing dirty (as fio's default invalidate=1 does); with --keep-cache the file's pages
//! stay (fio's invalidate=0).

use candor_engine::engines::EngineKind;
use candor_engine::plan::Point;
use candor_engine::rundir::RunDir;
use candor_engine::runner::{run_coordinated, Coordinator, NoProgress, RunSettings, Target};
use candor_engine::workload::find;
use candor_witness::{Config, Mode, Witness};
use std::path::{Path, PathBuf};
use std::time::Duration;

const FILE: u64 = 8 << 20;

/// The cache state (pages cached, dirty) at every release, and the results.
type Probed = (Vec<(u64, u64)>, Vec<candor_model::TestResult>);

/// One run at a time: the storage test reads this process's I/O counters, which the other
/// tests' runs would add to.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// (pages cached, pages dirty) of a file, or why the kernel cannot say.
fn cachestat(path: &Path) -> Result<(u64, u64), String> {
    #[repr(C)]
    struct Range {
        off: u64,
        len: u64,
    }
    #[repr(C)]
    #[derive(Default)]
    struct Stat {
        cache: u64,
        dirty: u64,
        writeback: u64,
        evicted: u64,
        recently_evicted: u64,
    }
    let f = std::fs::File::open(path).map_err(|e| format!("open {}: {e}", path.display()))?;
    let range = Range { off: 0, len: 0 };
    let mut st = Stat::default();
    // SAFETY: both structs are laid out as the kernel's; the descriptor is open.
    let r = unsafe {
        libc::syscall(
            451,
            std::os::fd::AsRawFd::as_raw_fd(&f),
            &range as *const Range,
            &mut st as *mut Stat,
            0u32,
        )
    };
    if r != 0 {
        return Err(format!(
            "cachestat(2) failed: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok((st.cache, st.dirty))
}

/// Records the cache state of every file in the run directory at each release.
struct Probe {
    dir: PathBuf,
    seen: Vec<Result<(u64, u64), String>>,
}

impl Coordinator for Probe {
    fn before_timed(&mut self) {
        let p = self.dir.join("t0.dat");
        self.seen.push(cachestat(&p));
    }
}

fn settings(keep_cache: bool) -> RunSettings {
    RunSettings {
        direct: false,
        osync: false,
        fsync_in_timing: true,
        close_in_timing: false,
        keep_cache,
        drop_caches: false,
        repeat: 2,
        stride: 17,
        mix_read_pct: 50,
        stonewall: false,
        runtime_ns: None,
        time_based: false,
        cpus: Vec::new(),
        seed: 7,
        meta_files: 10,
        verify: None,
        buffer_pattern: Default::default(),
        fadvise: candor_engine::workload::Hint::Auto,
        ramp_ns: None,
        steady: None,
        precondition: None,
        given: Default::default(),
    }
}

/// The cache state at every release of `tests` (in order, `repeat` each).
fn states(tests: &[&str], keep_cache: bool) -> Option<Vec<(u64, u64)>> {
    run_probed(tests, settings(keep_cache)).map(|(seen, _)| seen)
}

/// Runs `tests` (4 KiB records, psync unless the settings say otherwise) and returns the
/// cache state at every release and the results.
fn run_probed(tests: &[&str], s: RunSettings) -> Option<Probed> {
    run_probed_with(tests, s, 4096, None)
}

fn run_probed_with(
    tests: &[&str],
    s: RunSettings,
    record_size: u64,
    storage: Option<&mut u64>,
) -> Option<Probed> {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let base = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let tmp = tempfile::tempdir_in(&base).unwrap();
    let fs = nix_fs_type(tmp.path());
    if fs == Some(0x0102_1994) {
        // tmpfs: its pages are the storage, nothing can drop them.
        candor_testkit::skip("the test directory is on tmpfs, whose pages cannot be dropped");
        return None;
    }
    let dir = RunDir::create(tmp.path(), "cachestate").unwrap();
    let run_path = dir.path().to_path_buf();
    let (witness, _) = Witness::new(
        tmp.path(),
        Config {
            mode: Mode::Off,
            interval: Duration::from_millis(100),
            trace_syscalls: false,
            job: Vec::new(),
        },
    );
    let mut targets = vec![Target::new(tmp.path().to_path_buf(), dir, witness)];
    let points: Vec<Point> = tests
        .iter()
        .map(|t| {
            let mut p = Point::new(find(t).unwrap(), FILE, record_size, 1, 1, EngineKind::Psync);
            p.settle(&s);
            p
        })
        .collect();
    let mut probe = Probe {
        dir: run_path,
        seen: Vec::new(),
    };
    let mut results = Vec::new();
    let before = storage_read_bytes();
    let stop = run_coordinated(
        &mut targets,
        &points,
        &s,
        &mut NoProgress,
        &mut |r| results.extend(r),
        &mut probe,
    );
    if let Some(s) = storage {
        *s = storage_read_bytes() - before;
    }
    assert!(stop.is_none(), "the run stopped: {stop:?}");
    for r in &results {
        assert_eq!(
            r.status,
            candor_model::Status::Ok,
            "{} failed: {:?}",
            r.test,
            r.error
        );
    }
    let mut out = Vec::new();
    for seen in probe.seen {
        match seen {
            Ok(v) => out.push(v),
            Err(e) if e.contains("(os error 38)") => {
                candor_testkit::skip(format!("this kernel has no cachestat(2): {e}"));
                return None;
            }
            Err(e) => panic!("{e}"),
        }
    }
    Some((out, results))
}

/// Bytes this process made the kernel read from storage (`/proc/self/io` read_bytes).
fn storage_read_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/io")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("read_bytes: "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap()
}

fn nix_fs_type(p: &Path) -> Option<i64> {
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).ok()?;
    // SAFETY: statfs is plain data filled by the kernel; c is a valid path.
    unsafe {
        let mut s: libc::statfs = std::mem::zeroed();
        (libc::statfs(c.as_ptr(), &mut s) == 0).then_some(s.f_type)
    }
}

#[test]
fn writes_meant_for_the_device_start_with_nothing_cached_or_dirty() {
    // rewrite, randwrite and recrewrite overwrite the file the untimed fill just wrote;
    // randread drops it as before.
    let Some(seen) = states(&["rewrite", "randread", "randwrite", "recrewrite"], false) else {
        return;
    };
    assert_eq!(seen.len(), 8, "{seen:?}");
    for (i, (cached, dirty)) in seen.iter().enumerate() {
        assert_eq!(
            (*cached, *dirty),
            (0, 0),
            "release {i}: {cached} pages cached, {dirty} dirty: {seen:?}"
        );
    }
}

#[test]
fn keep_cache_leaves_the_written_file_cached_and_clean() {
    let Some(seen) = states(&["rewrite", "randwrite"], true) else {
        return;
    };
    assert_eq!(seen.len(), 4, "{seen:?}");
    let pages = FILE / 4096;
    for (i, (cached, dirty)) in seen.iter().enumerate() {
        assert_eq!(*dirty, 0, "release {i}: {seen:?}");
        // The file was just written (or rewritten) through the cache: all of it is there,
        // unless the machine evicted some under memory pressure.
        assert!(
            *cached >= pages / 2,
            "release {i}: {cached} of {pages} pages cached: {seen:?}"
        );
    }
}

#[test]
fn every_pass_of_a_time_based_read_meant_for_the_device_reads_the_device() {
    // 8 MiB read in 1 MiB records for 400 ms: dozens of passes. Each must start with the
    // file's pages dropped again, or every pass after the first reads the cache.
    let s = RunSettings {
        repeat: 1,
        runtime_ns: Some(400_000_000),
        time_based: true,
        ..settings(false)
    };
    let mut from_storage = 0;
    let Some((_, results)) = run_probed_with(&["read"], s, 1 << 20, Some(&mut from_storage)) else {
        return;
    };
    let read = results
        .iter()
        .find(|r| r.test == "read")
        .map(|r| r.reps.iter().map(|p| p.bytes).sum::<u64>())
        .unwrap();
    assert!(
        read >= 3 * FILE,
        "only {read} bytes read in 400 ms: too few passes to tell"
    );
    // Readahead may fetch a little more than was read, and a pass cut by the deadline a
    // little less; a cache hit on later passes would leave storage at about one file.
    assert!(
        from_storage as f64 >= 0.9 * read as f64,
        "{read} bytes read, {from_storage} of them from storage"
    );
}
