//! The eBPF source: exact attribution of block requests, syscalls and page-cache misses to
//! candor's own processes, from candor-bpf's tracer. One tracer serves the whole process
//! (every target); each repetition's [`Probe`] takes a snapshot at its start, at the end of
//! the timed region and at the end, and hands the deltas to the facts (`facts.exact`) and
//! to the witness (`syscalls`, `block`, `cache_misses`, `foreign_device_bytes`, `extra`).

use crate::host::Placement;
use crate::source::{Probe, Source};
use candor_bpf::{DevId, Direction, Owner, Snapshot, TraceOptions, Tracer};
use candor_model::{CallCount, Exact, Facts, RequestFacts, RequestStat};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

/// The name of the witness's sampling thread, whose /proc reads are not the test's calls.
const SAMPLER_THREAD: &str = "candor-witness";

type Shared = Arc<Mutex<Tracer>>;

/// The process-wide tracer, loaded on first use (following candor itself, without
/// per-file phases, which `candor run` does not need and which cost per call). The
/// syscall programs are attached only when `syscalls` (`--trace-syscalls`) is asked for
/// by the first caller; one run asks the same for every target.
fn shared(syscalls: bool) -> Result<Shared, String> {
    static TRACER: OnceLock<Result<Shared, String>> = OnceLock::new();
    TRACER
        .get_or_init(|| {
            let mut opts = TraceOptions {
                quiet_thread_name: Some(SAMPLER_THREAD.into()),
                cache_inserts_on_demand: true,
                dirtying_suspendable: true,
                ..TraceOptions::this_process().without_phases()
            };
            if !syscalls {
                opts = opts.without_syscalls();
            }
            Tracer::load(&opts)
                .map(|t| Arc::new(Mutex::new(t)))
                .map_err(|e| e.to_string())
        })
        .clone()
}

/// Opens the eBPF source for a target, or says in one line why it cannot. `job`: the other
/// processes of the same job on this machine (`Config::job`), whose requests are the job's.
pub fn open(
    target: &Path,
    placement: Option<&Placement>,
    syscalls: bool,
    job: &[u32],
) -> Result<Box<dyn Source>, String> {
    let tracer = shared(syscalls)?;
    let syscalls = {
        let mut t = tracer
            .lock()
            .map_err(|_| "the tracer's lock was poisoned".to_string())?;
        for &pid in job {
            t.add_job_pid(pid).map_err(|e| e.to_string())?;
        }
        t.traces_syscalls()
    };
    Ok(Box::new(Bpf {
        tracer,
        syscalls,
        job: !job.is_empty(),
        devices: devices_for(target, placement),
    }))
}

/// The block devices whose requests count for a target: the whole disk under it when the
/// block layer sees requests there (loop, virtio, SCSI, NVMe); for a bio-based device
/// (device-mapper, md) the disks below, where its requests are issued. The device comes
/// from the placement first: btrfs gives its files an anonymous device number that
/// sysfs does not know, and the mount's source names the device instead. An
/// empty list would mean every device of the machine (`Snapshot::block_sum`), so a
/// target whose device cannot be found gets none of them.
fn devices_for(target: &Path, placement: Option<&Placement>) -> Vec<DevId> {
    let named = placement
        .and_then(|p| p.device.as_ref())
        .and_then(|d| DevId::from_name(&d.name))
        .map(DevId::whole_disk);
    let Some(disk) = named.or_else(|| DevId::disk_under(target)) else {
        return Vec::new();
    };
    let request_based = candor_procfs::Kernel::system()
        .block(disk.major, disk.minor)
        .has("mq");
    if request_based {
        return vec![disk];
    }
    let below: Vec<DevId> = placement
        .and_then(|p| p.device.as_ref())
        .map(|d| {
            d.counted
                .iter()
                .filter_map(|n| DevId::from_name(n))
                .collect()
        })
        .unwrap_or_default();
    if below.is_empty() {
        vec![disk]
    } else {
        below
    }
}

struct Bpf {
    tracer: Shared,
    /// Whether the tracer has its syscall programs attached.
    syscalls: bool,
    /// Other processes of the job share the machine: their dirtied inodes are marked by
    /// the dirtying program only.
    job: bool,
    devices: Vec<DevId>,
}

fn snapshot(t: &Shared) -> Result<Snapshot, String> {
    let t = t
        .lock()
        .map_err(|_| "the tracer's lock was poisoned".to_string())?;
    t.snapshot().map_err(|e| e.to_string())
}

impl Bpf {
    /// Asks the tracer for a program attached on demand (`count` with `true`): Ok(true)
    /// once it is, and the probe must let it go.
    fn ask(
        &self,
        count: fn(&mut Tracer, bool) -> Result<(), candor_bpf::TraceError>,
    ) -> Result<bool, String> {
        let mut t = self
            .tracer
            .lock()
            .map_err(|_| "the tracer's lock was poisoned".to_string())?;
        count(&mut t, true)
            .map(|()| true)
            .map_err(|e| e.to_string())
    }

    /// Marks every one of `files` as written by candor; false when there are none or one
    /// could not be marked (it does not exist yet, or its filesystem's keys cannot be told).
    fn mark_all(&self, files: &[PathBuf]) -> bool {
        let Ok(mut t) = self.tracer.lock() else {
            return false;
        };
        !files.is_empty() && files.iter().all(|f| t.mark_written(f).unwrap_or(false))
    }
}

impl Source for Bpf {
    fn name(&self) -> &'static str {
        "bpf"
    }

    fn counts_calls_by_attaching(&self) -> bool {
        !self.syscalls
    }

    fn start(&self, files: &[PathBuf], calls: bool, reads: bool) -> Box<dyn Probe> {
        // A test that may read gets the page-insertion program for this repetition; one
        // that only writes leaves it off (a page added per buffered write).
        let inserting = reads.then(|| self.ask(Tracer::count_cache_inserts));
        // The inodes the test dirties must be marked for their writeback to be candor's: a
        // test that only writes files that exist marks them itself and suspends the
        // dirtying program (which runs on every page a write dirties, with the page's
        // mapping locked) for its repetition; any other test needs it, even while another
        // target's repetition suspends it. Outside repetitions it stays attached, so pages
        // dirtied then (a layout, another rank's writes) keep their marks.
        let (dirtying, suspending) = if !reads && !self.job && self.mark_all(files) {
            (None, Some(self.ask(Tracer::suspend_dirtying)))
        } else {
            (Some(self.ask(Tracer::count_dirtying)), None)
        };
        // A test counted by its calls gets the syscall programs for this repetition, before
        // its first snapshot; a run traced with --trace-syscalls has them already.
        let counting = calls.then(|| {
            let mut t = self
                .tracer
                .lock()
                .map_err(|_| "the tracer's lock was poisoned".to_string())?;
            if t.traces_syscalls() {
                return Ok(false);
            }
            t.count_syscalls(true)
                .map(|()| true)
                .map_err(|e| e.to_string())
        });
        Box::new(BpfProbe {
            tracer: self.tracer.clone(),
            syscalls: self.syscalls,
            counting,
            inserting,
            dirtying,
            suspending,
            devices: self.devices.clone(),
            begin: snapshot(&self.tracer),
            sampled: None,
            window: None,
            last: None,
        })
    }
}

struct BpfProbe {
    tracer: Shared,
    syscalls: bool,
    /// A test counted by its calls: whether this probe attached the syscall programs
    /// (and must let them go), or why they could not be; None for the other tests.
    counting: Option<Result<bool, String>>,
    /// A test that may read: whether this probe asked for the page-insertion program (and
    /// must let it go), or why it could not; None for a test that only writes.
    inserting: Option<Result<bool, String>>,
    /// Whether this probe needs the dirtying program kept attached (and must let it go),
    /// or why it could not be; None for a test that only writes files it marked itself.
    dirtying: Option<Result<bool, String>>,
    /// Such a test: whether it suspended the dirtying program (and must end that).
    suspending: Option<Result<bool, String>>,
    devices: Vec<DevId>,
    begin: Result<Snapshot, String>,
    /// The count at the end of the sample of operations (`Probe::calls_end`), when the
    /// calls were counted for a sample only.
    sampled: Option<Result<Snapshot, String>>,
    window: Option<Result<Snapshot, String>>,
    last: Option<Result<Snapshot, String>>,
}

impl BpfProbe {
    /// Lets the syscall programs go if this probe attached them.
    fn release(&mut self) {
        if let Some(Ok(true)) = self.counting {
            self.counting = Some(Ok(false));
            if let Ok(mut t) = self.tracer.lock() {
                let _ = t.count_syscalls(false);
            }
        }
    }

    /// Lets the page-insertion and dirtying programs go if this probe asked for them.
    fn release_inserting(&mut self) {
        if let Some(Ok(true)) = self.inserting {
            self.inserting = Some(Ok(false));
            if let Ok(mut t) = self.tracer.lock() {
                let _ = t.count_cache_inserts(false);
            }
        }
        if let Some(Ok(true)) = self.dirtying {
            self.dirtying = Some(Ok(false));
            if let Ok(mut t) = self.tracer.lock() {
                let _ = t.count_dirtying(false);
            }
        }
        if let Some(Ok(true)) = self.suspending {
            self.suspending = Some(Ok(false));
            if let Ok(mut t) = self.tracer.lock() {
                let _ = t.suspend_dirtying(false);
            }
        }
    }
}

impl Drop for BpfProbe {
    fn drop(&mut self) {
        self.release();
        self.release_inserting();
    }
}

/// The calls of candor's threads the kernel counted, per kind (the programs' names).
fn counted_calls(s: &Snapshot) -> std::collections::BTreeMap<String, CallCount> {
    s.syscalls
        .iter()
        .filter(|(name, _)| name.as_str() != "page_fault")
        .map(|(name, c)| {
            (
                name.clone(),
                CallCount {
                    calls: Some(c.count),
                    bytes: Some(c.bytes),
                    errors: c.errors,
                },
            )
        })
        .collect()
}

impl Probe for BpfProbe {
    fn calls_end(&mut self) {
        // Only a probe that attached the counting program reads it here (with
        // --trace-syscalls the full programs run all along, and count the whole region).
        // The calls alone: no per-file totals, two bpf() calls per file.
        if let Some(Ok(true)) = self.counting {
            if self.sampled.is_none() {
                self.sampled = Some(
                    self.tracer
                        .lock()
                        .map_err(|_| "the tracer's lock was poisoned".to_string())
                        .and_then(|t| t.snapshot_without_files().map_err(|e| e.to_string())),
                );
            }
        }
    }

    fn calls_release(&mut self) {
        if self.sampled.is_some() {
            self.release();
        }
    }

    fn timed_end(&mut self) {
        self.window = Some(snapshot(&self.tracer));
    }

    fn before_last(&mut self) {
        self.last = Some(snapshot(&self.tracer));
        self.release();
        self.release_inserting();
    }

    fn finish(&mut self, facts: &mut Facts, w: &mut candor_model::Witness) {
        let last = self.last.take().unwrap_or_else(|| snapshot(&self.tracer));
        self.release();
        self.release_inserting();
        // The test's calls over the timed region, when they were counted.
        if let Some(c) = facts.calls.as_mut() {
            let end = self.sampled.as_ref().or(self.window.as_ref());
            let window = match (&self.begin, end) {
                (Ok(b), Some(Ok(e))) => Ok(e.delta(b)),
                (Err(e), _) | (_, Some(Err(e))) => Err(e.clone()),
                (Ok(_), None) => Err("the end of the timed region was not marked".into()),
            };
            match (&self.counting, window) {
                (Some(Ok(_)), Ok(d)) => {
                    c.counted = Some(counted_calls(&d));
                    c.counted_by = Some("ebpf".into());
                    c.not_counted = None;
                }
                (Some(Err(why)), _) => {
                    c.not_counted =
                        Some(format!("the syscall programs could not be attached: {why}"));
                }
                (None, _) => {
                    c.not_counted = Some("the runner did not ask the witness to count them".into());
                }
                (_, Err(why)) => c.not_counted = Some(why),
            }
        }
        let (begin, last) = match (&self.begin, last) {
            (Ok(b), Ok(l)) => (b, l),
            (Err(e), _) => return no_exact(w, e),
            (_, Err(e)) => return no_exact(w, &e),
        };
        let total = last.delta(begin);
        let window = match &self.window {
            Some(Ok(s)) => s.delta(begin),
            _ => total.clone(),
        };
        let d = &self.devices;
        candor_bpf::model::fill_witness(&total, d, w);
        if let Some(Err(why)) = &self.dirtying {
            w.extra.insert(
                "bpf_dirtying".into(),
                serde_json::json!(format!(
                    "the dirtying program could not be attached: {why}; writeback of the \
                     test's files may count as other processes'"
                )),
            );
        }
        let counted_inserts = matches!(self.inserting, Some(Ok(_)));
        if !counted_inserts {
            w.cache_misses = None;
            let why = match &self.inserting {
                Some(Err(why)) => {
                    format!("the page-insertion program could not be attached: {why}")
                }
                _ => INSERTS_OFF.to_string(),
            };
            w.extra
                .insert("bpf_cache_inserts".into(), serde_json::json!(why));
        }
        if d.is_empty() {
            // No block device under the target (tmpfs, FUSE): sums over no device would be
            // every device's, so there is nothing to attribute and no block figure to show.
            w.block = None;
            w.foreign_device_bytes = 0;
            for k in BLOCK_EXTRAS {
                w.extra.remove(k);
            }
        } else {
            facts.exact = Some(exact(&window, &total, d));
            facts.requests = Some(requests(&window, d));
            facts.cache_inserts = counted_inserts.then_some(window.cache_misses);
            facts.writeback_window = Some(
                window
                    .block_sum(d, Direction::Write, |o| o == Owner::Writeback)
                    .bytes,
            );
        }
        let unseen = newly_unseen(&self.tracer, d);
        if unseen > 0 {
            w.extra
                .insert("bpf_completions_unseen".into(), serde_json::json!(unseen));
        }
        if !self.syscalls {
            w.syscalls = None;
            let why = if matches!(self.counting, Some(Ok(_))) {
                SYSCALLS_CHECKED
            } else {
                SYSCALLS_OFF
            };
            w.extra
                .insert("bpf_syscalls".into(), serde_json::json!(why));
        }
    }
}

/// Block completions on `devices` that the kernel did not hand to the tracer's program
/// since the previous call (the tracer counts them since it was loaded; see
/// `Tracer::unseen_completions`). The block figures of the repetition can be short by
/// that many requests.
fn newly_unseen(tracer: &Shared, devices: &[DevId]) -> u64 {
    static REPORTED: Mutex<std::collections::BTreeMap<DevId, u64>> =
        Mutex::new(std::collections::BTreeMap::new());
    let Ok(now) = tracer
        .lock()
        .map_err(|_| ())
        .and_then(|t| t.unseen_completions().map_err(|_| ()))
    else {
        return 0;
    };
    let Ok(mut reported) = REPORTED.lock() else {
        return 0;
    };
    let mut new = 0;
    for (dev, n) in now {
        if !devices.contains(&dev) {
            continue;
        }
        let before = reported.entry(dev).or_insert(0);
        new += n.saturating_sub(*before);
        *before = (*before).max(n);
    }
    new
}

/// The extras `fill_witness` derives from the block programs.
const BLOCK_EXTRAS: [&str; 5] = [
    "bpf_writeback_bytes",
    "bpf_kernel_thread_bytes",
    "bpf_job_bytes",
    "bpf_avg_queue_depth",
    "bpf_avg_queue_us",
];

/// Why a bpf witness block has no `syscalls` (the default of `candor run`).
const SYSCALLS_OFF: &str = "not traced: tracing every system call costs about 0.2 us per call \
     (a fifth of a cached 4 KiB read); add --trace-syscalls for per-call counts, bytes and latency";

/// Why a test that only writes has no `cache_misses`.
const INSERTS_OFF: &str = "not counted for a test that only writes: nearly every buffered \
     write adds a page to the cache, and counting them cost each write up to 80 ns (docs/bpf.md)";

/// Why a copy or metadata test's witness block has no `syscalls` though its calls were
/// traced: only their kinds in the timed region are kept, in `syscalls_check`.
const SYSCALLS_CHECKED: &str = "traced for this test's own calls only, during its repetitions: \
     their counts per kind in the timed region are in syscalls_check (and extra.facts.calls); \
     add --trace-syscalls for per-call bytes, time and latency";

/// The procfs figures stand; the witness says why the exact ones are missing.
fn no_exact(w: &mut candor_model::Witness, why: &str) {
    w.extra.insert("bpf_error".into(), serde_json::json!(why));
}

/// The test's own requests in the timed region, per direction, with their service times
/// (the same owners as [`exact`]).
fn requests(window: &Snapshot, devices: &[DevId]) -> RequestFacts {
    let stat = |dir, kernel_only: bool| {
        let c = window.block_sum(devices, dir, |o| {
            o == Owner::Kernel || (!kernel_only && o.is_own())
        });
        RequestStat {
            count: c.completions,
            bytes: c.bytes,
            latency: c.latency.to_dump(),
        }
    };
    RequestFacts {
        read: stat(Direction::Read, false),
        write: stat(Direction::Write, false),
        kernel_read: stat(Direction::Read, true),
        kernel_write: stat(Direction::Write, true),
    }
}

/// The exact own/job/foreign split of one repetition. Requests of kernel threads outside
/// any inode's writeback (journal commits, btrfs transaction commits, filesystem
/// housekeeping) count as the test's: they are the filesystem's work (its amplification),
/// not another process's; they are also kept apart (`kernel_*`, and
/// `extra.bpf_kernel_thread_bytes`) so that side-by-side ranks count them once. The other
/// processes of the job (other MPI ranks here) are `job_bytes`, never foreign.
fn exact(window: &Snapshot, total: &Snapshot, devices: &[DevId]) -> Exact {
    let own = |s: &Snapshot, dir| {
        s.block_sum(devices, dir, |o| o.is_own() || o == Owner::Kernel)
            .bytes
    };
    let kernel = |s: &Snapshot, dir| s.block_sum(devices, dir, |o| o == Owner::Kernel).bytes;
    Exact {
        own_read_window: own(window, Direction::Read),
        own_read_total: own(total, Direction::Read),
        own_write_window: own(window, Direction::Write),
        own_write_total: own(total, Direction::Write),
        foreign_bytes: total.foreign_bytes(devices),
        kernel_read_window: kernel(window, Direction::Read),
        kernel_read_total: kernel(total, Direction::Read),
        kernel_write_window: kernel(window, Direction::Write),
        kernel_write_total: kernel(total, Direction::Write),
        job_bytes: total.job_bytes(devices),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candor_bpf::raw::{BlkKey, BlkStat, RawSnapshot};

    fn snap(own: u64, writeback: u64, foreign: u64) -> Snapshot {
        let dev = (7 << 20) | 3;
        let stat = |bytes| BlkStat {
            completions: 1,
            bytes,
            ..Default::default()
        };
        let key = |owner| BlkKey {
            dev,
            dir: 1,
            owner,
            pad: 0,
        };
        Snapshot::decode(&RawSnapshot {
            blk: vec![
                (key(1), stat(own)),
                (key(2), stat(writeback)),
                (key(0), stat(foreign)),
                (key(3), stat(1 << 20)),
                (key(4), stat(2 << 20)),
                // Another device: not this target's.
                (
                    BlkKey {
                        dev: 254 << 20,
                        dir: 0,
                        owner: 1,
                        pad: 0,
                    },
                    stat(1 << 30),
                ),
            ],
            ..Default::default()
        })
    }

    #[test]
    fn exact_split_counts_writeback_and_journal_as_own_and_ignores_other_devices() {
        let dev = [DevId { major: 7, minor: 3 }];
        let begin = Snapshot::decode(&RawSnapshot::default());
        let window = snap(4 << 20, 0, 1 << 20).delta(&begin);
        let total = snap(4 << 20, 12 << 20, 3 << 20).delta(&begin);
        let e = exact(&window, &total, &dev);
        // 1 MiB of journal in each reading counts as the filesystem's work for the test.
        assert_eq!(e.own_write_window, 5 << 20);
        assert_eq!(e.own_write_total, 17 << 20);
        assert_eq!(e.own_read_total, 0);
        assert_eq!(e.foreign_bytes, 3 << 20);
        assert_eq!(
            (e.kernel_write_window, e.kernel_write_total),
            (1 << 20, 1 << 20)
        );
        // Another rank of the job (owner 4): its 2 MiB are neither own nor foreign.
        assert_eq!(e.job_bytes, 2 << 20);
    }

    /// btrfs gives its files an anonymous device number: the requests to count are the
    /// loop device's under it, never every device of the machine (an empty list), which
    /// once made every other process's traffic on the host disk count as foreign.
    #[test]
    fn btrfs_targets_count_their_own_device() {
        let _one = crate::testkit::scratch_lock();
        let Some(fs) = candor_testkit::need_or(
            candor_lab::scratch("btrfs", 128 << 20),
            candor_lab::LabError::is_unsupported,
        ) else {
            return;
        };
        assert_eq!(
            DevId::disk_under(fs.path()),
            None,
            "btrfs's st_dev is anonymous"
        );
        let name = fs.loop_device.trim_start_matches("/dev/");
        let place = crate::host::place(fs.path());
        assert_eq!(
            devices_for(fs.path(), place.as_ref()),
            vec![DevId::from_name(name).expect("the loop device is in sysfs")]
        );
    }

    /// Set in the process that runs [`bpf_witness_sees_a_direct_write_exactly`] alone.
    const ALONE: &str = "CANDOR_WITNESS_TEST_ALONE";

    /// As root, on a loop-device ext4 nothing else uses: a 16 MiB O_DIRECT write seen by
    /// the BPF witness, exactly. The witness counts the system calls of its whole process,
    /// and the other tests of this binary run in it too: the test runs itself again in a
    /// process of its own (this binary, this test alone) and checks there.
    #[test]
    fn bpf_witness_sees_a_direct_write_exactly() {
        if std::env::var_os(ALONE).is_none() {
            let _one = crate::testkit::scratch_lock();
            // The kernel's answer, not candor-bpf's probe: where it loads eBPF, the
            // witness must.
            if !candor_testkit::need_kernel_bpf("for eBPF and a loop device") {
                return;
            }
            let name = candor_testkit::test_name();
            let out = std::process::Command::new(std::env::current_exe().unwrap())
                .args([&name, "--exact", "--test-threads=1", "--nocapture"])
                .env(ALONE, "1")
                .output()
                .expect("the test binary runs");
            let text = String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{text}");
            assert!(text.contains("1 passed"), "{text}");
            return;
        }
        let fs = candor_lab::scratch("ext4", 128 << 20).expect("a scratch ext4");
        let config = crate::Config {
            mode: crate::Mode::Bpf,
            interval: std::time::Duration::from_millis(10),
            trace_syscalls: true,
            job: Vec::new(),
        };
        let (w, note) = crate::Witness::new(fs.path(), config);
        assert!(note.is_none(), "root, yet: {note:?}");
        assert_eq!(w.source_name(), "bpf");
        let path = fs.path().join("direct.dat");
        let file = {
            use std::os::unix::fs::OpenOptionsExt;
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .custom_flags(libc::O_DIRECT)
                .open(&path)
                .expect("open O_DIRECT")
        };
        let layout = std::alloc::Layout::from_size_align(1 << 20, 4096).expect("layout");
        // SAFETY: non-zero size; freed below.
        let buf = unsafe { std::alloc::alloc_zeroed(layout) };
        assert!(!buf.is_null());
        // SAFETY: buf holds layout.size() bytes.
        let data = unsafe { std::slice::from_raw_parts(buf, layout.size()) };
        let mut watch = w.begin(std::slice::from_ref(&path));
        let t0 = std::time::Instant::now();
        for i in 0..16u64 {
            use std::os::unix::fs::FileExt;
            file.write_all_at(data, i << 20).expect("pwrite O_DIRECT");
        }
        let secs = t0.elapsed().as_secs_f64();
        watch.timed_end();
        let out = watch.finish(&crate::Outcome {
            test: "write".into(),
            intent: candor_model::Intent::Device,
            is_write: true,
            direct: true,
            app_write_bytes: 16 << 20,
            timed_seconds: secs,
            headline_bps: (16 << 20) as f64 / secs,
            ..Default::default()
        });
        // SAFETY: allocated above with this layout.
        unsafe { std::alloc::dealloc(buf, layout) };
        assert_eq!(out.source, "bpf");
        let sys = out.syscalls.clone().unwrap_or_default();
        assert_eq!(
            sys.get("pwrite64").map(|s| (s.count, s.bytes)),
            Some((16, 16 << 20))
        );
        let blk = out.block.clone().unwrap_or_default();
        assert_eq!(blk.get("write").map(|b| b.bytes), Some(16 << 20), "{blk:?}");
        // The rest of the device's traffic is the journal's, which is foreign.
        assert!(
            out.foreign_device_bytes < 1 << 20,
            "{}",
            out.foreign_device_bytes
        );
        let mut shown = out.clone();
        shown.timeline.clear();
        eprintln!(
            "{}",
            serde_json::to_string_pretty(&shown).unwrap_or_default()
        );
    }
}
