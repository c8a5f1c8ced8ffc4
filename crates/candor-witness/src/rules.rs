//! The rules: which of the device's bytes are the test's own (attribution), and from the
//! facts the derived figures (cache hit ratio, write amplification, share flushed inside
//! the timed region, foreign traffic, precision) and the verdict. Everything here is pure;
//! the thresholds are the constants below and docs/witness.md gives the reason for each.

use crate::explain::explain;
use crate::{operations, traps};
use candor_model::{Access, Facts, Intent, Operations, Placement, Trap, TrapKind, Verdict};

/// A figure is the device's when at least this share of its bytes moved to or from the
/// device inside the timed region (and, for reads meant for the device, of its operations
/// waited on it).
pub const DEVICE_SHARE_MIN: f64 = 0.95;
/// A figure is the cache's (memory speed) when at most this share of its bytes did.
pub const CACHE_SHARE_MAX: f64 = 0.05;
/// Device reads candor's counters do not explain but the filesystem may have caused
/// (inode tables, extent trees, directory blocks): a fixed part plus a share of the reads.
pub const READ_ALLOWANCE_BYTES: u64 = 1 << 20;
pub const READ_ALLOWANCE_SHARE: f64 = 0.10;
/// The same for writes (journal, metadata, allocation maps): a fixed part plus a share of
/// the bytes candor wrote. Write amplification beyond 1 + this share is reported as foreign.
pub const WRITE_ALLOWANCE_BYTES: u64 = 2 << 20;
pub const WRITE_ALLOWANCE_SHARE: f64 = 0.50;

/// The device bytes that belong to the test, and those that do not.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Attribution {
    pub own_read: u64,
    pub own_write_window: u64,
    pub own_write_total: u64,
    pub foreign_read: u64,
    pub foreign_write: u64,
    /// The device bytes of the other processes of the same job on this machine (the other
    /// MPI ranks here): neither the test's own figures nor foreign.
    pub job_read: u64,
    pub job_write: u64,
    /// True when eBPF attributed the bytes; false when the allowance estimated them.
    pub exact: bool,
    /// Of `foreign_read`, the reads no visible process accounts for (root, procfs): one
    /// that began and ended between the witness's samples, or a kernel thread.
    pub unseen_read: u64,
}

/// Other processes moving at most this much during a test are taken as quiet: daemons'
/// occasional log lines should not make a run "disturbed".
pub const OTHERS_QUIET_BYTES: u64 = 256 << 10;

fn quiet_or(bytes: u64) -> u64 {
    if bytes <= OTHERS_QUIET_BYTES {
        0
    } else {
        bytes
    }
}

/// Splits the device traffic into the test's own, the job's (the other processes of the
/// same job on this machine: MPI ranks beside this one) and foreign. With eBPF the split is
/// exact. Otherwise the device's bytes beyond candor's own io counters (procfs) are the
/// job's first, up to what the job's other processes moved by their io counters; then, when
/// every other process's io counters are readable (root), foreign only up to what the
/// processes outside the job moved (the rest is the filesystem working for the job); when
/// it is not, whatever lies beyond the allowance is foreign. With no io counters at all,
/// everything is taken as the test's own (and nothing can be said about foreign traffic).
pub fn attribute(f: &Facts) -> Attribution {
    if let Some(e) = f.exact {
        return Attribution {
            own_read: e.own_read_total,
            own_write_window: e.own_write_window,
            own_write_total: e.own_write_total,
            foreign_read: 0,
            foreign_write: e.foreign_bytes,
            job_read: 0,
            job_write: e.job_bytes,
            exact: true,
            unseen_read: 0,
        };
    }
    let dev = &f.device_total;
    let Some(own) = f.own_total else {
        return Attribution {
            own_read: dev.read_bytes,
            own_write_window: f.device_window.write_bytes,
            own_write_total: dev.write_bytes,
            ..Default::default()
        };
    };
    let explained_write = own.write_bytes.saturating_sub(own.cancelled_write_bytes);
    let [job_read, job_write] = f.job_io.unwrap_or([0, 0]);
    let job_read = job_read.min(dev.read_bytes.saturating_sub(own.read_bytes));
    let job_write = job_write.min(dev.write_bytes.saturating_sub(explained_write));
    let mut unseen_read = 0;
    let (foreign_read, foreign_write) = match f.others_io {
        _ if f.exclusive => (0, 0),
        // Other processes' counters are visible: device traffic beyond the job's can be
        // foreign only up to what the others moved; the rest is the filesystem's own work
        // for the job (journal, metadata, copy-on-write), which amplification must count.
        // Others' counters hold what they moved on every device, so a busy machine would
        // make the journal's few KiB for the job foreign: at most the quiet amount beyond
        // the job's own is the filesystem's too.
        // Reads are the exception: the filesystem reads for the test in the test's own
        // context (its io counters count them), so reads beyond the test's, the job's and
        // the read allowance that no visible process accounts for are another's too (one
        // that began and ended between the samples, a kernel thread), as without root. Were
        // they the test's, a cached read test beside them would be judged partly the
        // device's (a 3 x 64 MiB reread whose own read_bytes were 0 was "mixed 88%" with
        // 22 MiB of such reads on the device).
        Some([others_read, others_write]) => {
            let excess_read = dev.read_bytes.saturating_sub(own.read_bytes + job_read);
            let read_allow = READ_ALLOWANCE_BYTES
                + ((own.read_bytes + job_read) as f64 * READ_ALLOWANCE_SHARE) as u64;
            unseen_read = excess_read
                .saturating_sub(others_read)
                .saturating_sub(read_allow);
            let foreign_read = quiet_or(excess_read.min(others_read) + unseen_read);
            if foreign_read == 0 {
                unseen_read = 0;
            }
            (
                foreign_read,
                quiet_or(
                    dev.write_bytes
                        .saturating_sub(explained_write + job_write)
                        .min(others_write),
                ),
            )
        }
        None => {
            let read_allow = READ_ALLOWANCE_BYTES
                + ((own.read_bytes + job_read) as f64 * READ_ALLOWANCE_SHARE) as u64;
            let write_allow = WRITE_ALLOWANCE_BYTES
                + ((explained_write + job_write) as f64 * WRITE_ALLOWANCE_SHARE) as u64;
            (
                dev.read_bytes
                    .saturating_sub(own.read_bytes + job_read + read_allow),
                dev.write_bytes
                    .saturating_sub(explained_write + job_write + write_allow),
            )
        }
    };
    // Reads the process submitted may have gone to other devices (the binary paging in):
    // the test's own device reads are at most what the device did.
    let own_read = if f.others_io.is_some() || f.exclusive {
        dev.read_bytes - foreign_read - job_read
    } else {
        own.read_bytes.min(dev.read_bytes)
    };
    // Without the others' counters, foreign writes cannot be told apart from the allowance:
    // the test's own writes are then only what the process itself wrote (a lower bound).
    let own_write_total = if f.others_io.is_some() || f.exclusive {
        dev.write_bytes - foreign_write - job_write
    } else if foreign_write > 0 {
        explained_write.min(dev.write_bytes)
    } else {
        dev.write_bytes - job_write
    };
    // Where the foreign writes fell in time is unknown: assume they were spread evenly.
    let own_write_window = if dev.write_bytes > 0 {
        (f.device_window.write_bytes as f64 * own_write_total as f64 / dev.write_bytes as f64)
            as u64
    } else {
        0
    };
    Attribution {
        own_read,
        own_write_window,
        own_write_total,
        foreign_read,
        foreign_write,
        job_read,
        job_write,
        exact: false,
        unseen_read,
    }
}

/// The figures and the judgement of a set of facts.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Judgement {
    pub verdict: Verdict,
    /// Share of the application's bytes the device moved in the timed region.
    pub device_share: Option<f64>,
    pub cache_hit_ratio: Option<f64>,
    pub write_amplification: Option<f64>,
    pub flushed_in_window: Option<f64>,
    pub foreign_device_bytes: u64,
    pub disturbed: bool,
    pub precision: Option<f64>,
    pub explanation: String,
    pub contradicts_intent: bool,
    pub unverified_reason: Option<String>,
    /// The operations against the device's requests.
    pub operations: Option<Operations>,
    /// Every byte came from the device but not every operation waited on it: the verdict
    /// is `mixed` by the operations, `device_share` is the share that waited.
    pub mixed_by_operations: bool,
    pub traps: Vec<Trap>,
    /// Copy and metadata tests: their system calls against the kernel's count.
    pub syscalls_check: Option<candor_model::CallCheck>,
}

pub(crate) fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        (a as f64 / b as f64).clamp(0.0, 1.0)
    }
}

/// Judges a set of facts: the figures, the verdict and the sentence that explains it. A
/// copy or metadata test whose system calls the kernel counted otherwise than the runner
/// made them is `unverified`, whatever its bytes say (`calls`).
pub fn judge(f: &Facts) -> Judgement {
    let mut j = judge_figures(f);
    j.syscalls_check = f.calls.as_ref().and_then(crate::calls::check);
    if let Some(c) = j
        .syscalls_check
        .as_ref()
        .filter(|c| c.verdict == "mismatch")
    {
        j.verdict = Verdict::Unverified;
        j.device_share = None;
        j.contradicts_intent = false;
        j.unverified_reason = Some(c.sentence.clone());
        j.explanation = format!("{} {}", c.sentence, j.explanation);
    }
    j
}

fn judge_figures(f: &Facts) -> Judgement {
    let mut j = Judgement::default();
    let device_name = match &f.placement {
        Placement::Unobservable { reason } => {
            j.verdict = Verdict::Unverified;
            j.unverified_reason = Some(reason.clone());
            j.explanation = format!("The witness could not observe this test: {reason}.");
            return j;
        }
        Placement::Memory { fs_type } => {
            j.verdict = Verdict::Memory;
            // Memory is what a cache test meant; a device test finds no device.
            j.contradicts_intent = f.intent == Intent::Device;
            j.precision = precision(f, &Attribution::default(), j.verdict);
            j.explanation = format!(
                "There is no block device under this target ({fs_type}): every figure is memory speed."
            );
            if j.contradicts_intent {
                j.explanation
                    .push_str(" To measure storage, point candor at a directory on a disk.");
            }
            return j;
        }
        Placement::Device { name } => name.clone(),
    };
    // Metadata tests move no file data: judged by their operations.
    if let Some(m) = f.meta.as_ref() {
        return crate::metadata::judge(f, m, &device_name);
    }
    // DAX (metadata tests above: their journal is still block I/O): the files' reads and
    // writes go to the device's memory directly, past the page cache and the block layer,
    // whose counts are all the witness has of the device.
    if let Some((fs, dax)) = f.fs.as_ref().and_then(|fs| Some((fs, fs.dax()?))) {
        j.verdict = Verdict::Unverified;
        j.unverified_reason = Some(format!(
            "{} is mounted {dax}: the block layer does not see its files' reads and writes",
            fs.fs_type
        ));
        j.explanation = format!(
            "{} is mounted {dax}: its files' reads and writes go straight to the device's memory, without the page cache and without block requests, so the witness's block-layer counts cannot see them; the figure is the device's own.",
            fs.fs_type
        );
        return j;
    }
    let app_total = f.app_read + f.app_write;
    if app_total == 0 {
        j.verdict = Verdict::Unverified;
        let reason = "the test reported no bytes moved".to_string();
        j.explanation = format!("The witness could not judge this test: {reason}.");
        j.unverified_reason = Some(reason);
        return j;
    }
    let a = attribute(f);
    let mut read_from_device = a.own_read.min(f.app_read);
    let mut write_in_window = a.own_write_window.min(f.app_write);
    // A filesystem that stores fewer or more bytes than it was given: the share of its
    // writes inside the timed region stands for the bytes it was given (the application's,
    // or those it dirtied when it wrote pages again while still dirty).
    if let Some(r) = traps::stored_ratio(f, &a) {
        if !(traps::STORED_FEWER_MAX..=traps::STORED_MORE_MIN).contains(&r) {
            let share = ratio(a.own_write_window, a.own_write_total);
            write_in_window = (share * traps::given_bytes(f) as f64).round() as u64;
        }
    }
    // A loop device without direct I/O, or over a file in memory: only what the disk under
    // its file moved came from storage; the rest was the host's page cache (a file in
    // memory has no disk: all of it).
    if let Some(b) = f
        .loop_device
        .as_ref()
        .filter(|l| traps::loop_through_memory(l))
        .and_then(|l| l.backing_window)
    {
        read_from_device = read_from_device.min(b.read_bytes);
        write_in_window = write_in_window.min(b.write_bytes);
    }
    if f.app_read > 0 {
        j.cache_hit_ratio = Some(1.0 - ratio(read_from_device, f.app_read));
    }
    if f.app_write > 0 {
        j.flushed_in_window = Some(ratio(write_in_window, f.app_write));
        j.write_amplification = Some(a.own_write_total as f64 / f.app_write as f64);
    }
    j.foreign_device_bytes = a.foreign_read + a.foreign_write;
    j.disturbed = j.foreign_device_bytes > 0;
    let share = (read_from_device + write_in_window) as f64 / app_total as f64;
    j.verdict = if share >= DEVICE_SHARE_MIN {
        Verdict::Device
    } else if share <= CACHE_SHARE_MAX {
        Verdict::Cache
    } else {
        j.device_share = Some(share);
        Verdict::Mixed
    };
    j.operations = operations::reconcile(f);
    judge_operations(f, &mut j);
    j.traps = traps::find(f, &a, j.verdict, j.operations.as_ref());
    j.contradicts_intent = !j.verdict.fits(f.intent)
        || (f.intent == Intent::Device
            && j.traps.iter().any(|t| {
                matches!(
                    t.kind,
                    TrapKind::FasterThanDevice | TrapKind::FasterThanSpec | TrapKind::CpuBound
                )
            }));
    j.precision = precision(f, &a, j.verdict);
    j.explanation = explain(f, &j, &a, share, &device_name);
    j
}

/// The verdict from the operations as well as the bytes (docs/witness.md, "Operations").
fn judge_operations(f: &Facts, j: &mut Judgement) {
    if f.intent != Intent::Device {
        return;
    }
    match (f.app_read > 0, f.app_write > 0) {
        (true, false) => judge_reads(f, j),
        (false, true) => judge_writes(f, j),
        (true, true) => judge_mixed(f, j),
        (false, false) => {}
    }
}

/// Reads meant for the device whose every byte came from it are the device's only when
/// their operations waited on it. A sequential read's operations find their data in memory
/// because readahead kept the device busy ahead of them: that is still the device's
/// throughput (`pipelined`). Any other pattern whose operations were mostly served from
/// memory (pages read around an earlier request) is `mixed`, by the share that waited.
fn judge_reads(f: &Facts, j: &mut Judgement) {
    if j.verdict != Verdict::Device {
        return;
    }
    let (Some(o), Some(access)) = (j.operations.as_mut(), f.access) else {
        return;
    };
    let Some(waited) = o.waited_share.filter(|w| *w < DEVICE_SHARE_MIN) else {
        return;
    };
    if access == Access::Sequential {
        o.pipelined = true;
    } else {
        j.verdict = Verdict::Mixed;
        j.device_share = Some(waited);
        j.mixed_by_operations = true;
    }
}

/// Writes. O_DIRECT and O_SYNC writes each wait for their own request: the figure is the
/// device's only when they did (a write that returned faster than the device's requests
/// was completed by something above it). Buffered writes whose timing includes the flush
/// keep the verdict of their bytes (the device's work is inside the figure; the sentence
/// names the share of the time spent waiting for it). Buffered writes without the flush
/// are memory's unless writeback held them back: no write held back is `cache`, whatever
/// the flushers wrote meanwhile; writes held back make a `cache` verdict `mixed`. With the
/// flush timed, a `cache` verdict whose timed region waited for the device more than 5% of
/// the time is `mixed` by that share.
fn judge_writes(f: &Facts, j: &mut Judgement) {
    let Some(o) = j.operations.as_ref() else {
        return;
    };
    match o.write_mode.as_deref() {
        Some("direct") | Some("sync") => {
            if j.verdict != Verdict::Device {
                return;
            }
            if let Some(w) = o.waited_share.filter(|w| *w < DEVICE_SHARE_MIN) {
                j.verdict = Verdict::Mixed;
                j.device_share = Some(w);
                j.mixed_by_operations = true;
            }
        }
        Some("buffered") if !f.flush_in_timing => {
            let Some(t) = o.waited_time_share else {
                return;
            };
            if t <= CACHE_SHARE_MAX && j.verdict != Verdict::Cache {
                j.verdict = Verdict::Cache;
                j.device_share = None;
                j.mixed_by_operations = true;
            } else if t > CACHE_SHARE_MAX && j.verdict == Verdict::Cache {
                j.verdict = Verdict::Mixed;
                j.device_share = Some(t);
                j.mixed_by_operations = true;
            }
        }
        // With the flush timed the bytes decide, but a figure whose timed region waited
        // for the device more than 5% of the time (a flush of pages rewritten in memory,
        // iozone's record rewrite) is not memory speed: `mixed` by that share.
        Some("buffered") => {
            let Some(t) = o.waited_time_share else {
                return;
            };
            if j.verdict == Verdict::Cache && t > CACHE_SHARE_MAX {
                j.verdict = Verdict::Mixed;
                j.device_share = Some(t);
                j.mixed_by_operations = true;
            }
        }
        _ => {}
    }
}

/// The share of a mixed test's writes that did the device's work: O_DIRECT and O_SYNC
/// writes by their operations that waited; buffered ones as a test of buffered writes is
/// judged (docs/witness.md, "Writes"): with the flush in the timing by their bytes written
/// inside the timed region; without it, none when writeback held none of them back (≤ 5%
/// of their time), whatever the flushers wrote meanwhile, else their bytes written inside
/// the timed region, or the share of their time held back when hardly any bytes were.
pub(crate) fn writes_reached(f: &Facts, j: &Judgement, w: &Operations) -> Option<f64> {
    let flushed = j.flushed_in_window;
    match w.write_mode.as_deref() {
        Some("direct") | Some("sync") => w.waited_share,
        _ if f.flush_in_timing => flushed,
        _ => {
            let (Some(t), Some(b)) = (w.waited_time_share, flushed) else {
                return flushed;
            };
            Some(if t <= CACHE_SHARE_MAX {
                0.0
            } else if b <= CACHE_SHARE_MAX {
                t
            } else {
                b
            })
        }
    }
}

/// The share of a mixed test's reads that did the device's work: those that waited on it,
/// at most the share of their bytes the device supplied.
pub(crate) fn reads_waited(j: &Judgement, r: &Operations) -> Option<f64> {
    let from_device = 1.0 - j.cache_hit_ratio.unwrap_or(0.0);
    r.waited_share.map(|w| w.min(from_device))
}

/// A test that reads and writes (randmix), meant for the device, is judged by its
/// operations: each direction's share that did the device's work (its reads that waited on
/// the device, its writes that reached it as writes of their kind do), weighted by their
/// operations, is `device` at 95% or more, `cache` at 5% or less, `mixed` between.
fn judge_mixed(f: &Facts, j: &mut Judgement) {
    let Some(o) = j.operations.as_ref() else {
        return;
    };
    let (Some(r), Some(w)) = (o.reads.as_deref(), o.writes.as_deref()) else {
        return;
    };
    let (Some(rw), Some(ww)) = (reads_waited(j, r), writes_reached(f, j, w)) else {
        return;
    };
    let n = (r.ops + w.ops).max(1) as f64;
    let share = (r.ops as f64 * rw + w.ops as f64 * ww) / n;
    let (verdict, device_share) = if share >= DEVICE_SHARE_MIN {
        (Verdict::Device, None)
    } else if share <= CACHE_SHARE_MAX {
        (Verdict::Cache, None)
    } else {
        (Verdict::Mixed, Some(share))
    };
    if verdict != j.verdict || verdict == Verdict::Mixed {
        j.mixed_by_operations = true;
    }
    j.verdict = verdict;
    j.device_share = device_share;
}

/// |headline - witness| / headline, the witness's throughput being the bytes it saw move in
/// the timed region over its own clock: device bytes when the device did the work, the
/// process's rchar/wchar otherwise.
fn precision(f: &Facts, a: &Attribution, verdict: Verdict) -> Option<f64> {
    if f.headline_bps <= 0.0 || f.window_seconds <= 0.0 {
        return None;
    }
    let bytes = if verdict == Verdict::Device {
        let read_window = f.device_window.read_bytes.min(a.own_read);
        (if f.app_read > 0 { read_window } else { 0 })
            + (if f.app_write > 0 {
                a.own_write_window
            } else {
                0
            })
    } else {
        let own = f.own_window?;
        (if f.app_read > 0 { own.rchar } else { 0 }) + (if f.app_write > 0 { own.wchar } else { 0 })
    };
    if bytes == 0 {
        return None;
    }
    let witness_bps = bytes as f64 / f.window_seconds;
    Some((f.headline_bps - witness_bps).abs() / f.headline_bps)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::*;
    use candor_model::{Ceiling, DiskDelta, Fadvise, LoopFacts};

    #[test]
    fn cold_read_is_the_device() {
        let j = judge(&read_facts(
            64 * MIB,
            64 * MIB,
            64 * MIB + 8192,
            Intent::Device,
        ));
        assert_eq!(j.verdict, Verdict::Device);
        assert_eq!(j.cache_hit_ratio, Some(0.0));
        assert!(!j.contradicts_intent && !j.disturbed);
        assert!(j
            .explanation
            .starts_with("100% of the bytes read came from the device (loop0)"));
        assert!(j.precision.expect("precision") < 0.01);
    }

    #[test]
    fn cached_read_meant_for_the_device_says_so_and_suggests() {
        let j = judge(&read_facts(100 * MIB, 6 * MIB, 6 * MIB, Intent::Device));
        assert_eq!(j.verdict, Verdict::Mixed);
        assert_eq!(j.device_share.map(|s| (s * 100.0).round()), Some(6.0));
        let j = judge(&read_facts(100 * MIB, 2 * MIB, 2 * MIB, Intent::Device));
        assert_eq!(j.verdict, Verdict::Cache);
        assert!(j.contradicts_intent);
        assert_eq!(
            j.explanation,
            "98% of these reads came from the page cache: this is memory speed. \
             Use --direct, or a file larger than 3x RAM (72 GiB here)."
        );
    }

    #[test]
    fn reread_is_the_cache_as_intended() {
        let j = judge(&read_facts(16 * MIB, 0, 0, Intent::Cache));
        assert_eq!(j.verdict, Verdict::Cache);
        assert_eq!(j.cache_hit_ratio, Some(1.0));
        assert!(!j.contradicts_intent);
        // Meant for the cache but served by the device: the remedy is a smaller file.
        let j = judge(&read_facts(16 * MIB, 16 * MIB, 16 * MIB, Intent::Cache));
        assert!(j.contradicts_intent);
        assert!(j.explanation.contains("free memory"), "{}", j.explanation);
    }

    #[test]
    fn readahead_beyond_the_app_bytes_caps_at_zero_hits() {
        let j = judge(&read_facts(4 * MIB, 6 * MIB, 6 * MIB, Intent::Device));
        assert_eq!(j.cache_hit_ratio, Some(0.0));
        assert_eq!(j.verdict, Verdict::Device);
    }

    #[test]
    fn buffered_write_without_flush_is_absorbed() {
        // Nothing reached the device while the timer ran; the runner's fsync wrote it after.
        let j = judge(&write_facts(32 * MIB, 0, 32 * MIB + 300 * 1024, 32 * MIB));
        assert_eq!(j.verdict, Verdict::Cache);
        assert_eq!(j.flushed_in_window, Some(0.0));
        assert!(j.contradicts_intent);
        assert!(
            j.explanation.starts_with("None of the written bytes"),
            "{}",
            j.explanation
        );
        assert!(j.explanation.ends_with("or use --direct."));
        let wa = j.write_amplification.expect("wa");
        assert!((1.0..1.02).contains(&wa), "{wa}");
        assert!(!j.disturbed);
    }

    #[test]
    fn write_with_flush_in_timing_is_the_device() {
        let j = judge(&write_facts(32 * MIB, 33 * MIB, 33 * MIB, 32 * MIB));
        assert_eq!(j.verdict, Verdict::Device);
        assert_eq!(j.flushed_in_window, Some(1.0));
        assert!(!j.contradicts_intent);
        let j = judge(&write_facts(32 * MIB, 12 * MIB, 33 * MIB, 32 * MIB));
        assert_eq!(j.verdict, Verdict::Mixed);
        assert!(j.explanation.contains("rest waited in the page cache"));
    }

    #[test]
    fn foreign_writes_beyond_the_allowance_disturb() {
        // 16 MiB written by candor, 80 MiB more by someone else.
        let j = judge(&write_facts(16 * MIB, 96 * MIB, 96 * MIB, 16 * MIB));
        assert!(j.disturbed);
        let allowance = WRITE_ALLOWANCE_BYTES + 8 * MIB;
        assert_eq!(j.foreign_device_bytes, 96 * MIB - 16 * MIB - allowance);
        assert!(j.explanation.contains("rerun when the device is idle"));
        assert_eq!(
            j.write_amplification,
            Some(1.0),
            "a lower bound when disturbed"
        );
        // Journal traffic inside the allowance is the test's own.
        let j = judge(&write_facts(16 * MIB, 17 * MIB, 17 * MIB, 16 * MIB));
        assert!(!j.disturbed);
        assert_eq!(j.foreign_device_bytes, 0);
        // Foreign reads during a read test.
        let j = judge(&read_facts(16 * MIB, 16 * MIB, 64 * MIB, Intent::Device));
        assert!(j.disturbed);
        assert_eq!(j.verdict, Verdict::Device);
    }

    /// As root (every other process's counters visible), device reads that neither the
    /// test, the job nor any visible process made are not the test's: a cached read test is
    /// still the cache's, and disturbed. Within the read allowance they stay the test's.
    #[test]
    fn reads_no_visible_process_made_are_not_the_tests() {
        // 3 x 64 MiB reread from the cache (own read_bytes 0) while the device read 150 MiB:
        // 128 MiB by processes the witness saw, 22 MiB by none.
        let mut f = read_facts(192 * MIB, 0, 150 * MIB, Intent::Cache);
        f.others_io = Some([128 * MIB, 0]);
        let a = attribute(&f);
        let allow = READ_ALLOWANCE_BYTES;
        assert_eq!(a.unseen_read, 22 * MIB - allow);
        assert_eq!(a.foreign_read, 150 * MIB - allow);
        assert_eq!(a.own_read, allow);
        let j = judge(&f);
        assert_eq!(j.verdict, Verdict::Cache, "{}", j.explanation);
        assert!(j.cache_hit_ratio.unwrap() > 0.99);
        assert!(j.disturbed);
        assert!(
            j.explanation.contains("no process the witness could see"),
            "{}",
            j.explanation
        );
        // A device read test: its own 64 MiB, others' 8 MiB, and 512 KiB no one made (within
        // the allowance: the filesystem's, the test's).
        let mut f = read_facts(64 * MIB, 64 * MIB, 72 * MIB + (512 << 10), Intent::Device);
        f.others_io = Some([8 * MIB, 0]);
        let a = attribute(&f);
        assert_eq!((a.unseen_read, a.foreign_read), (0, 8 * MIB));
        assert_eq!(a.own_read, 64 * MIB + (512 << 10));
        // Nothing beyond the test's own: quiet, whatever the others moved elsewhere.
        let mut f = read_facts(64 * MIB, 64 * MIB, 64 * MIB, Intent::Device);
        f.others_io = Some([500 * MIB, 0]);
        let j = judge(&f);
        assert!(!j.disturbed, "{}", j.explanation);
        assert_eq!(attribute(&f).unseen_read, 0);
    }

    #[test]
    fn the_other_ranks_of_the_job_are_neither_own_nor_foreign() {
        // Four ranks on one machine wrote 16 MiB each; the device wrote their 64 MiB and
        // 1 MiB of journal. This rank's io counters explain its 16 MiB, the other
        // ranks' theirs 48, and nothing else moved a byte.
        let mut f = write_facts(16 * MIB, 65 * MIB, 65 * MIB, 16 * MIB);
        f.job_io = Some([0, 48 * MIB]);
        f.others_io = Some([0, 0]);
        let j = judge(&f);
        assert!(!j.disturbed, "{}", j.explanation);
        assert_eq!(j.foreign_device_bytes, 0);
        let a = attribute(&f);
        assert_eq!((a.job_write, a.own_write_total), (48 * MIB, 17 * MIB));
        assert_eq!(j.write_amplification, Some(17.0 / 16.0));
        // Without root (the others hidden, the job's counters readable): the same.
        f.others_io = None;
        let j = judge(&f);
        assert!(!j.disturbed, "{}", j.explanation);
        assert_eq!(j.write_amplification, Some(17.0 / 16.0));
        // The journal's 1 MiB beside a busy machine (others wrote 30 MiB elsewhere) is
        // foreign by the bound; 200 KiB of it is within the quiet amount.
        let mut g = f.clone();
        g.others_io = Some([0, 30 * MIB]);
        assert_eq!(judge(&g).foreign_device_bytes, MIB);
        g.device_total.write_bytes = 64 * MIB + (200 << 10);
        g.device_window.write_bytes = g.device_total.write_bytes;
        assert!(!judge(&g).disturbed);
        // Counted as other processes' (as before the job was known): disturbed.
        f.job_io = None;
        f.others_io = Some([0, 48 * MIB]);
        assert!(judge(&f).disturbed);
        // A stranger beside the job is still foreign: it wrote 30 MiB more.
        let mut f = write_facts(16 * MIB, 95 * MIB, 95 * MIB, 16 * MIB);
        f.job_io = Some([0, 48 * MIB]);
        f.others_io = Some([0, 30 * MIB]);
        let j = judge(&f);
        assert!(j.disturbed);
        assert_eq!(j.foreign_device_bytes, 30 * MIB);
        // eBPF: the job's bytes are kept apart from the foreign ones.
        let mut f = write_facts(16 * MIB, 65 * MIB, 65 * MIB, 16 * MIB);
        f.exact = Some(candor_model::Exact {
            own_read_window: 0,
            own_read_total: 0,
            own_write_window: 17 * MIB,
            own_write_total: 17 * MIB,
            foreign_bytes: 0,
            kernel_write_window: MIB,
            kernel_write_total: MIB,
            job_bytes: 48 * MIB,
            ..Default::default()
        });
        let j = judge(&f);
        assert!(!j.disturbed);
        assert_eq!(attribute(&f).job_write, 48 * MIB);
    }

    #[test]
    fn others_counters_tell_amplification_from_foreign_traffic() {
        // A copy-on-write filesystem writes 5x what candor wrote, and nobody else moved a
        // byte: all of it is the test's, and the amplification says so.
        let mut f = write_facts(16 * MIB, 80 * MIB, 80 * MIB, 16 * MIB);
        f.others_io = Some([0, 100 << 10]);
        let j = judge(&f);
        assert!(!j.disturbed);
        assert_eq!(j.foreign_device_bytes, 0);
        assert_eq!(j.write_amplification, Some(5.0));
        // Another process wrote 100 MiB while the device carried 80 MiB beyond candor's:
        // all 80 can be foreign.
        f.others_io = Some([0, 100 * MIB]);
        let j = judge(&f);
        assert!(j.disturbed);
        assert_eq!(j.foreign_device_bytes, 64 * MIB);
        assert!(j.explanation.contains("traffic of other processes"));
        // On a lab device nothing is foreign, whatever other processes did elsewhere.
        f.exclusive = true;
        let j = judge(&f);
        assert!(!j.disturbed);
        assert_eq!(j.write_amplification, Some(5.0));
        f.exclusive = false;
        // Another process wrote 20 MiB: at most 20 of the 64 extra are foreign.
        f.others_io = Some([0, 20 * MIB]);
        let j = judge(&f);
        assert!(j.disturbed);
        assert_eq!(j.foreign_device_bytes, 20 * MIB);
        assert_eq!(j.write_amplification, Some(60.0 / 16.0));
    }

    #[test]
    fn exact_attribution_needs_no_allowance() {
        let mut f = write_facts(16 * MIB, 96 * MIB, 96 * MIB, 16 * MIB);
        f.exact = Some(candor_model::Exact {
            own_write_window: 16 * MIB,
            own_write_total: 16 * MIB,
            foreign_bytes: 80 * MIB,
            ..Default::default()
        });
        let j = judge(&f);
        assert_eq!(j.foreign_device_bytes, 80 * MIB);
        assert_eq!(j.write_amplification, Some(1.0));
        assert!(j.explanation.contains("traffic of other processes"));
    }

    #[test]
    fn memory_and_unobservable_targets() {
        let mut f = read_facts(MIB, 0, 0, Intent::Device);
        f.placement = Placement::Memory {
            fs_type: "tmpfs".into(),
        };
        let j = judge(&f);
        assert_eq!(j.verdict, Verdict::Memory);
        assert!(j.contradicts_intent);
        assert!(j
            .explanation
            .starts_with("There is no block device under this target (tmpfs)"));
        assert!(j.precision.expect("precision from rchar") < 0.01);
        f.placement = Placement::Unobservable {
            reason: "fuse has no block device the witness can read".into(),
        };
        let j = judge(&f);
        assert_eq!(j.verdict, Verdict::Unverified);
        assert!(!j.contradicts_intent);
        assert!(j.unverified_reason.is_some());
        let j = judge(&read_facts(0, 0, 0, Intent::Device));
        assert_eq!(j.verdict, Verdict::Unverified);
    }

    #[test]
    fn without_proc_self_io_everything_is_own() {
        let mut f = read_facts(16 * MIB, 0, 64 * MIB, Intent::Device);
        f.own_total = None;
        f.own_window = None;
        let j = judge(&f);
        assert!(!j.disturbed);
        assert_eq!(j.verdict, Verdict::Device);
    }

    #[test]
    fn a_mix_of_reads_and_writes_is_judged_on_all_its_bytes() {
        // randmix: 8 MiB read from the device, 8 MiB written and absorbed by the cache.
        let mut f = read_facts(8 * MIB, 8 * MIB, 8 * MIB, Intent::Device);
        f.test = "randmix".into();
        f.is_write = true;
        f.app_write = 8 * MIB;
        f.device_total.write_bytes = 8 * MIB;
        if let Some(o) = f.own_total.as_mut() {
            o.write_bytes = 8 * MIB;
        }
        let j = judge(&f);
        assert_eq!(j.verdict, Verdict::Mixed);
        assert_eq!(j.device_share, Some(0.5));
        assert_eq!(j.cache_hit_ratio, Some(0.0));
        assert_eq!(j.flushed_in_window, Some(0.0));
        assert!(
            j.explanation
                .starts_with("50% of the bytes read and written"),
            "{}",
            j.explanation
        );
        assert!(
            j.explanation.ends_with("or use --direct."),
            "{}",
            j.explanation
        );
    }

    #[test]
    fn random_reads_read_around_are_mixed_by_their_operations() {
        // Every byte from the device, but 30000 of 65536 reads waited for it.
        let j = judge(&random_read(Some(34000)));
        assert_eq!(j.verdict, Verdict::Mixed);
        assert!(j.mixed_by_operations && j.contradicts_intent);
        assert_eq!(j.cache_hit_ratio, Some(0.0));
        assert_eq!(j.device_share, Some(30000.0 / 65536.0));
        assert_eq!(
            j.explanation,
            "100% of the bytes read came from the device (loop0), but only 46% of the 65536 \
             reads waited for it (34000 requests of 7.7 KiB on average): the other 54% found \
             their data already in memory, read in around an earlier request, so the figure is \
             not the device's rate for single reads. Tell the kernel the access is random \
             (--fadvise random, what fio does by default) or use --direct."
        );
        let mut f = random_read(Some(34000));
        f.fadvise = Fadvise::Random;
        assert!(judge(&f)
            .explanation
            .ends_with("single reads. Use --direct."));
        // Without eBPF, at most one waiting read per request: 34000 of 65536.
        let j = judge(&random_read(None));
        assert_eq!(j.verdict, Verdict::Mixed);
        assert_eq!(j.device_share, Some(34000.0 / 65536.0));
    }

    #[test]
    fn reads_that_each_waited_are_the_device() {
        let mut f = random_read(Some(65536));
        if let Some(o) = f.ops.as_mut() {
            o.latency = dump(&[(1024, 100), (40960, 65436)]);
        }
        let j = judge(&f);
        assert_eq!(j.verdict, Verdict::Device);
        assert!(!j.contradicts_intent);
        assert_eq!(
            j.explanation,
            "100% of the bytes read came from the device (loop0) and 99% of the reads waited \
             for it: this is the device's figure."
        );
        let o = j.operations.expect("operations");
        assert_eq!(o.waited_share, Some(65436.0 / 65536.0));
        assert!(!o.pipelined);
    }

    #[test]
    fn sequential_reads_pipelined_by_readahead_are_the_device() {
        let mut f = random_read(Some(64));
        f.access = Some(Access::Sequential);
        if let Some(r) = f.requests.as_mut() {
            r.read.latency = dump(&[(2_097_152, 64)]);
        }
        if let Some(o) = f.ops.as_mut() {
            o.latency = dump(&[(1024, 65000), (2_097_152, 536)]);
        }
        let j = judge(&f);
        assert_eq!(j.verdict, Verdict::Device);
        assert!(!j.contradicts_intent);
        let o = j.operations.clone().expect("operations");
        assert!(o.pipelined);
        assert_eq!(o.request_bytes, (4 * MIB) as f64);
        assert!(
            j.explanation.starts_with(
                "100% of the bytes read came from the device (loop0), in requests of 4.0 MiB on \
                 average, and 99% of the reads found their data already in memory: readahead"
            ),
            "{}",
            j.explanation
        );
    }

    #[test]
    fn a_loop_device_over_a_cached_file_is_memory() {
        let mut f = read_facts(64 * MIB, 64 * MIB, 64 * MIB, Intent::Device);
        f.loop_device = Some(LoopFacts {
            device: "loop3".into(),
            backing_file: "/tmp/x/backing.img".into(),
            direct_io: false,
            backing_disk: Some("vda".into()),
            backing_window: Some(DiskDelta {
                read_bytes: MIB,
                ..Default::default()
            }),
            backing_pages: 32768,
            backing_resident: Some(32768),
            ..Default::default()
        });
        let j = judge(&f);
        assert_eq!(j.verdict, Verdict::Cache);
        assert_eq!(j.cache_hit_ratio, Some(63.0 / 64.0));
        assert_eq!(j.traps.len(), 1);
        assert_eq!(j.traps[0].kind, TrapKind::LoopDevice);
        assert_eq!(j.traps[0].value, Some(1.0));
        assert!(
            j.traps[0].sentence.starts_with(
                "The target's device loop3 is a loop device over the file /tmp/x/backing.img \
                 (on vda), 100% of it in the host's page cache when the test began and does not \
                 use direct I/O: of the 64 MiB it moved in the timed region, the disk under its \
                 file moved 1.0 MiB"
            ),
            "{}",
            j.traps[0].sentence
        );
        // With direct I/O its reads are the disk's.
        if let Some(l) = f.loop_device.as_mut() {
            l.direct_io = true;
        }
        let j = judge(&f);
        assert_eq!(j.verdict, Verdict::Device);
        assert!(j.traps[0].sentence.ends_with("as a disk's own would."));
    }

    #[test]
    fn memory_speed_requests_cpu_bound_and_spec() {
        // Requests of 3 us: memory answered.
        let mut f = random_read(Some(65536));
        if let Some(r) = f.requests.as_mut() {
            r.read.latency = dump(&[(3072, 65536)]);
        }
        if let Some(o) = f.ops.as_mut() {
            o.latency = dump(&[(4096, 65536)]);
        }
        let j = judge(&f);
        assert_eq!(j.verdict, Verdict::Device);
        assert!(j.contradicts_intent);
        assert_eq!(j.traps[0].kind, TrapKind::FasterThanDevice);
        assert_eq!(j.traps[0].value, Some(3.456));
        // A thread on the CPU 97% of the time while the device idled 60% of it.
        let mut f = read_facts(64 * MIB, 64 * MIB, 64 * MIB, Intent::Device);
        f.cpu_seconds = Some(0.97);
        f.threads = 1;
        f.device_window.io_ticks_ms = 400;
        let j = judge(&f);
        assert_eq!(j.traps.len(), 1);
        assert_eq!(j.traps[0].kind, TrapKind::CpuBound);
        assert!(j.contradicts_intent);
        assert!(j.traps[0].sentence.starts_with(
            "candor's thread was on the CPU 97% of the time while the device was idle 60% of it"
        ));
        // 64 MiB/s sequential reads against a ceiling of 50 MiB/s.
        let mut f = read_facts(64 * MIB, 64 * MIB, 64 * MIB, Intent::Device);
        f.access = Some(Access::Sequential);
        f.ceiling = Some(Ceiling {
            read_bps: Some((50 * MIB) as f64),
            ..Default::default()
        });
        let j = judge(&f);
        assert_eq!(j.traps[0].kind, TrapKind::FasterThanSpec);
        assert_eq!(j.traps[0].value, Some(1.28));
        assert!(j.contradicts_intent);
        f.ceiling = Some(Ceiling {
            read_bps: Some((60 * MIB) as f64),
            ..Default::default()
        });
        assert!(judge(&f).traps.is_empty(), "within 10% of the ceiling");
    }

    #[test]
    fn writeback_of_earlier_pages_inside_a_read() {
        let mut f = read_facts(64 * MIB, 64 * MIB, 64 * MIB, Intent::Device);
        f.writeback_window = Some(8 * MIB);
        let j = judge(&f);
        assert_eq!(j.traps[0].kind, TrapKind::EarlierWriteback);
        assert!(!j.contradicts_intent);
        assert!(j.traps[0].sentence.starts_with(
            "The device also wrote 8.0 MiB of pages candor dirtied in an earlier test"
        ));
        f.writeback_window = Some(64 << 10);
        assert!(judge(&f).traps.is_empty());
        // procfs: the device's writes, up to what was dirty when the test began.
        let mut f = read_facts(64 * MIB, 64 * MIB, 64 * MIB, Intent::Device);
        f.device_window.write_bytes = 6 * MIB;
        f.dirty_at_begin = Some(4 * MIB);
        let j = judge(&f);
        assert_eq!(j.traps[0].value, Some((4 * MIB) as f64));
    }

    #[test]
    fn a_filesystem_that_stores_fewer_or_more_bytes() {
        // 64 MiB of compressible data stored in 10 MiB, all inside the timed region.
        let j = judge(&write_facts(64 * MIB, 10 * MIB, 10 * MIB, 64 * MIB));
        assert_eq!(j.verdict, Verdict::Device);
        assert_eq!(j.flushed_in_window, Some(1.0));
        assert_eq!(j.traps[0].kind, TrapKind::StoredFewer);
        assert!(!j.explanation.contains("waited in the page cache"));
        assert!(
            j.explanation.contains("stored 16% of the bytes"),
            "{}",
            j.explanation
        );
        // Without the flush in the timing, half of what it stored was written in the window.
        let j = judge(&write_facts(64 * MIB, 5 * MIB, 10 * MIB, 64 * MIB));
        assert_eq!(j.verdict, Verdict::Mixed);
        assert_eq!(j.flushed_in_window, Some(0.5));
        // Copy-on-write: 16 MiB given, 80 MiB written, 8 MiB of it (metadata) in the window.
        let mut f = write_facts(16 * MIB, 8 * MIB, 80 * MIB, 16 * MIB);
        f.exclusive = true;
        let j = judge(&f);
        assert_eq!(j.traps[0].kind, TrapKind::StoredMore);
        // 8 of the 80 MiB, rounded to a whole byte of the 16 MiB given.
        let flushed = j.flushed_in_window.expect("flushed");
        assert!((flushed - 0.1).abs() < 1e-6, "{flushed}");
        assert_eq!(j.verdict, Verdict::Mixed);
        // An ordinary filesystem: no trap.
        assert!(judge(&write_facts(32 * MIB, 33 * MIB, 33 * MIB, 32 * MIB))
            .traps
            .is_empty());
    }
}

#[cfg(test)]
mod write_and_mix_tests {
    use super::*;
    use crate::testkit::*;
    use candor_model::{OpFacts, RequestStat};

    #[test]
    fn direct_writes_that_each_waited_are_the_device() {
        let j = judge(&direct_write());
        assert_eq!(j.verdict, Verdict::Device);
        let o = j.operations.clone().expect("operations");
        assert_eq!(o.direction, "write");
        assert_eq!(o.write_mode.as_deref(), Some("direct"));
        assert_eq!(o.waited_share, Some(1.0));
        assert_eq!(o.waited_time_share, None);
        assert!(
            j.explanation.starts_with(
                "100% of the written bytes reached the device (loop0) inside the timed region \
                 and 100% of the 16384 writes (O_DIRECT) waited for it: this is the device's \
                 figure."
            ),
            "{}",
            j.explanation
        );
    }

    #[test]
    fn direct_writes_faster_than_the_requests_did_not_wait() {
        // 12384 of the writes returned in about 2 us: they did not wait for the requests.
        let mut f = direct_write();
        f.ops = Some(OpFacts {
            count: 16384,
            latency: dump(&[(2048, 12384), (40960, 4000)]),
        });
        let j = judge(&f);
        assert_eq!(j.verdict, Verdict::Mixed);
        assert_eq!(j.device_share, Some(4000.0 / 16384.0));
        assert!(j.contradicts_intent);
        assert!(
            j.explanation.starts_with(
                "100% of the written bytes reached the device (loop0) inside the timed region, \
                 but only 24% of the 16384 writes (O_DIRECT) waited for it (16384 requests of \
                 4.0 KiB on average): the other 76% returned in less than 11.5 us, faster than \
                 its requests: something above the device completed them"
            ),
            "{}",
            j.explanation
        );
        assert!(!j.explanation.contains("--no-fsync"), "{}", j.explanation);
        // A loop device over a cached file is named as the cause.
        f.loop_device = Some(candor_model::LoopFacts {
            device: "loop0".into(),
            direct_io: false,
            ..Default::default()
        });
        let j = judge(&f);
        assert!(
            j.explanation
                .contains("a loop device whose file is in the host's page cache completed them"),
            "{}",
            j.explanation
        );
        // O_SYNC writes are judged the same way.
        let mut f = direct_write();
        f.direct = false;
        f.osync = true;
        let j = judge(&f);
        assert_eq!(j.operations.and_then(|o| o.write_mode), Some("sync".into()));
        assert!(j.explanation.contains("(O_SYNC) waited for it"));
    }

    #[test]
    fn direct_writes_completed_at_memory_speed_are_a_trap() {
        // eBPF: the write requests completed in 3.5 us at the median, the writes in 4.5.
        let mut f = direct_write();
        if let Some(r) = f.requests.as_mut() {
            r.write.latency = dump(&[(3072, 16384)]);
        }
        f.ops = Some(OpFacts {
            count: 16384,
            latency: dump(&[(4096, 16384)]),
        });
        let j = judge(&f);
        // Every write waited for its request, but the requests were memory's.
        assert_eq!(j.verdict, Verdict::Device);
        let t = j
            .traps
            .iter()
            .find(|t| t.kind == TrapKind::FasterThanDevice)
            .expect("the trap");
        assert_eq!(t.value, Some(3.456));
        assert!(j.contradicts_intent);
        assert_eq!(
            j.explanation,
            "100% of the written bytes reached the device (loop0) inside the timed region and \
             100% of the 16384 writes (O_DIRECT) waited for it, but at memory speed: this is not \
             a storage device's figure. The device's write requests took 3.5 us at the median, \
             faster than any storage device completes a write, even into its own write cache: \
             memory took them (a RAM disk, a loop device over a cached file, or the host's \
             cache under a virtual disk), so the figure is memory's, not storage's."
        );
        // procfs: no requests to time, but each O_SYNC write lasts at least its request.
        f.requests = None;
        f.direct = false;
        f.osync = true;
        let j = judge(&f);
        let t = j
            .traps
            .iter()
            .find(|t| t.kind == TrapKind::FasterThanDevice)
            .expect("the trap from the writes' own latency");
        assert_eq!(t.value, Some(4.608));
        assert!(t.sentence.starts_with(
            "The O_SYNC writes, each waiting for a request of its own, took 4.6 us at the median"
        ));
        assert!(j.contradicts_intent);
        // Requests of 20 us and more: a device.
        let j = judge(&direct_write());
        assert!(j.traps.is_empty(), "{:?}", j.traps);
        assert!(!j.contradicts_intent);
        // Buffered writes are copies into the page cache: never this trap.
        let mut f = buffered_write(0, 0.3, true, 64 * MIB);
        f.requests = Some(candor_model::RequestFacts {
            write: RequestStat {
                count: 100,
                bytes: 64 * MIB,
                latency: dump(&[(3072, 100)]),
            },
            ..Default::default()
        });
        assert!(judge(&f)
            .traps
            .iter()
            .all(|t| t.kind != TrapKind::FasterThanDevice));
    }

    #[test]
    fn direct_writes_beyond_the_spec_contradict_the_device() {
        // 16384 O_DIRECT writes in 0.5 s: 32768 IOPS against a ceiling of 10000.
        let mut f = direct_write();
        f.timed_seconds = 0.5;
        f.ceiling = Some(candor_model::Ceiling {
            write_iops: Some(10_000.0),
            ..Default::default()
        });
        let j = judge(&f);
        assert_eq!(j.traps[0].kind, TrapKind::FasterThanSpec);
        assert!((j.traps[0].value.unwrap_or(0.0) - 3.2768).abs() < 1e-9);
        assert!(j.contradicts_intent);
        assert!(
            j.explanation
                .contains("32768 IOPS, is 3.3x the ceiling given with --device-spec"),
            "{}",
            j.explanation
        );
    }

    #[test]
    fn a_loop_device_over_a_file_in_memory_is_memory_whatever_its_requests_took() {
        // O_DIRECT writes on a loop device over a file on tmpfs: its requests took 13 us
        // (the loop device's worker), the writes 55 us; no disk moved a byte.
        let mut f = direct_write();
        f.loop_device = Some(candor_model::LoopFacts {
            device: "loop1".into(),
            backing_file: "/dev/shm/x.img".into(),
            direct_io: false,
            backing_fs: Some("tmpfs".into()),
            backing_window: Some(candor_model::DiskDelta::default()),
            backing_pages: 65536,
            backing_resident: Some(65536),
            ..Default::default()
        });
        if let Some(r) = f.requests.as_mut() {
            r.write.latency = dump(&[(12288, 16384)]);
        }
        f.ops = Some(OpFacts {
            count: 16384,
            latency: dump(&[(53248, 16384)]),
        });
        let j = judge(&f);
        assert_eq!(j.verdict, Verdict::Cache, "{}", j.explanation);
        assert_eq!(j.flushed_in_window, Some(0.0));
        assert!(j.contradicts_intent);
        assert!(
            j.explanation.starts_with(
                "The written bytes reached the loop device (loop0), whose file is in memory: \
                 none reached storage, so this is memory speed. The target's device loop1 is"
            ),
            "{}",
            j.explanation
        );
        let t = &j.traps[0];
        assert_eq!(t.kind, TrapKind::LoopDevice);
        assert!(
            t.sentence.contains(
                "which lies on tmpfs: its storage is memory, so every byte it moved was \
                 memory's, whatever its requests took (its write requests took 13.8 us at the \
                 median: the loop device's own work, not a disk's)."
            ),
            "{}",
            t.sentence
        );
        assert!(
            j.explanation.ends_with(
                "Put the loop device's file on a disk and give it direct I/O (losetup \
                 --direct-io=on; candor lab does)."
            ),
            "{}",
            j.explanation
        );
        // With direct I/O to its file it is memory all the same.
        if let Some(l) = f.loop_device.as_mut() {
            l.direct_io = true;
        }
        assert_eq!(judge(&f).verdict, Verdict::Cache);
        // Reads too.
        let mut f = read_facts(64 * MIB, 64 * MIB, 64 * MIB, Intent::Device);
        f.loop_device = Some(candor_model::LoopFacts {
            device: "loop1".into(),
            backing_file: "/dev/shm/x.img".into(),
            backing_fs: Some("tmpfs".into()),
            backing_window: Some(candor_model::DiskDelta::default()),
            ..Default::default()
        });
        let j = judge(&f);
        assert_eq!(j.verdict, Verdict::Cache);
        assert_eq!(j.cache_hit_ratio, Some(1.0));
    }

    #[test]
    fn buffered_writes_with_the_flush_in_the_timing_name_the_time_waiting() {
        // 64 MiB copied in 75.5 ms, then flushed in 0.3 s: all of it on the device.
        let f = buffered_write(0, 0.3, true, 64 * MIB);
        let j = judge(&f);
        assert_eq!(j.verdict, Verdict::Device);
        let o = j.operations.clone().expect("operations");
        assert_eq!(o.write_mode.as_deref(), Some("buffered"));
        assert_eq!(o.basis, "throttle");
        assert_eq!(o.waited_share, Some(0.0));
        let t = 0.3 / f.timed_seconds;
        assert_eq!(o.flush_share, Some(t));
        assert_eq!(o.waited_time_share, Some(t));
        assert!((o.waited_above_us.unwrap_or(0.0) - 1004.096).abs() < 1e-9);
        assert_eq!(
            j.explanation,
            "100% of the written bytes reached the device (loop0) inside the timed region, and \
             the timed region spent 80% of its time waiting for the device (80% in the flush) and \
             the rest copying into the page cache: this is the device's figure, with the \
             copying in it."
        );
        // Writes held back by writeback count as waiting too.
        let f = buffered_write(100, 0.3, true, 64 * MIB);
        let j = judge(&f);
        let o = j.operations.clone().expect("operations");
        assert_eq!(o.waited_share, Some(100.0 / 16484.0));
        let held = 100.0 * 4718592e-9;
        let t = (0.3 + held) / f.timed_seconds;
        assert!((o.waited_time_share.unwrap_or(0.0) - t).abs() < 1e-12);
        assert!(
            j.explanation.contains(
                "(35% in the flush, 56% in the 1% of the writes that writeback held back)"
            ),
            "{}",
            j.explanation
        );
    }

    #[test]
    fn a_flush_that_took_most_of_the_time_is_not_called_memory_speed() {
        // iozone's record rewrite: the same 4 KiB rewritten 256 times (1 MiB written, one
        // page dirtied), then the flush, timed, 0.5 s of it: hardly a byte reached the
        // device, yet waiting for it was most of the timed region.
        let mut f = buffered_write(0, 0.5, true, 8 << 10);
        f.test = "recrewrite".into();
        f.app_write = MIB;
        f.headline_bps = MIB as f64 / f.timed_seconds;
        f.device_total.write_bytes = 8 << 10;
        for p in [f.own_window.as_mut(), f.own_total.as_mut()]
            .into_iter()
            .flatten()
        {
            p.wchar = MIB;
            p.write_bytes = 4096;
        }
        let j = judge(&f);
        let t = j.operations.as_ref().and_then(|o| o.waited_time_share);
        assert!(t.is_some_and(|t| t > 0.8), "{t:?}");
        assert_eq!(j.verdict, Verdict::Mixed, "{}", j.explanation);
        assert_eq!(j.device_share, t);
        assert!(
            !j.explanation.contains("this is memory speed"),
            "{}",
            j.explanation
        );
        assert!(
            j.explanation.contains(
                "of its time waiting for the device (87% in the flush) and the rest copying into the page cache: the figure mixes memory and device speed."
            ),
            "{}",
            j.explanation
        );
    }

    #[test]
    fn buffered_writes_without_the_flush_are_memory_unless_held_back() {
        // Nothing held back: memory, even when the flushers wrote half of it meanwhile.
        let j = judge(&buffered_write(0, 0.3, false, 32 * MIB));
        assert_eq!(j.verdict, Verdict::Cache);
        assert_eq!(j.device_share, None);
        assert!(j.contradicts_intent);
        assert!(
            j.explanation.starts_with(
                "No write waited for the device (loop0): the page cache took them all at \
                 memory speed, so this is memory speed, although the kernel's flushers wrote \
                 50% of the bytes to the device meanwhile."
            ),
            "{}",
            j.explanation
        );
        assert!(j.explanation.ends_with("or use --direct."));
        // Nothing on the device and nothing held back: the bytes' sentence stands.
        let j = judge(&buffered_write(0, 0.3, false, 0));
        assert_eq!(j.verdict, Verdict::Cache);
        assert!(j.explanation.starts_with("None of the written bytes"));
        // 100 writes held back 4.7 ms each, 86% of the timed region, while the device
        // wrote another process's pages: mixed by the time held back.
        let mut f = buffered_write(100, 0.3, false, 0);
        f.device_window.write_bytes = 64 * MIB;
        f.exact = Some(candor_model::Exact {
            own_write_total: 64 * MIB,
            foreign_bytes: 64 * MIB,
            ..Default::default()
        });
        let j = judge(&f);
        assert_eq!(j.verdict, Verdict::Mixed);
        let t = 100.0 * 4718592e-9 / f.timed_seconds;
        assert!((j.device_share.unwrap_or(0.0) - t).abs() < 1e-12);
        assert!(
            j.explanation.contains(
                "1% of the writes were held back until writeback caught up, 86% of the timed \
                 region: the figure mixes memory and device speed."
            ),
            "{}",
            j.explanation
        );
    }

    #[test]
    fn slow_buffered_writes_without_writeback_were_not_held_back() {
        // The same 100 slow writes with nothing written to the device meanwhile: the CPU
        // or a page fault slowed them, not writeback. Memory.
        let j = judge(&buffered_write(100, 0.3, false, 0));
        assert_eq!(j.verdict, Verdict::Cache);
        let o = j.operations.expect("operations");
        assert_eq!(o.waited_share, Some(0.0));
        assert_eq!(o.waited_time_share, Some(0.0));
    }

    /// randmix: 8192 reads and 8192 writes of 4 KiB, each direction's operations apart.
    fn mix(read_lat: &[(u64, u64)], direct: bool) -> Facts {
        let mut f = direct_write();
        f.test = "randmix".into();
        f.direct = direct;
        f.app_read = 32 * MIB;
        f.app_write = 32 * MIB;
        f.device_window.read_bytes = 32 * MIB;
        f.device_window.write_bytes = 32 * MIB;
        f.device_total.read_bytes = 32 * MIB;
        f.device_total.write_bytes = 32 * MIB;
        for io in [f.own_window.as_mut(), f.own_total.as_mut()]
            .into_iter()
            .flatten()
        {
            io.read_bytes = 32 * MIB;
            io.write_bytes = 32 * MIB;
            io.rchar = 32 * MIB;
        }
        let reads = OpFacts {
            count: 8192,
            latency: dump(read_lat),
        };
        let writes = OpFacts {
            count: 8192,
            latency: dump(&[(40960, 8192)]),
        };
        let mut all = reads.clone();
        all.add(&writes);
        f.ops = Some(all);
        f.read_ops = Some(reads);
        f.write_ops = Some(writes);
        f.requests = Some(candor_model::RequestFacts {
            read: RequestStat {
                count: 8192,
                bytes: 32 * MIB,
                latency: dump(&[(32768, 8192)]),
            },
            write: RequestStat {
                count: 8192,
                bytes: 32 * MIB,
                latency: dump(&[(32768, 8192)]),
            },
            ..Default::default()
        });
        f
    }

    #[test]
    fn a_mix_is_judged_per_direction() {
        let j = judge(&mix(&[(40960, 8192)], true));
        assert_eq!(j.verdict, Verdict::Device);
        let o = j.operations.clone().expect("operations");
        assert_eq!(o.direction, "both");
        assert_eq!(o.ops, 16384);
        let (r, w) = (o.reads.expect("reads"), o.writes.expect("writes"));
        assert_eq!((r.direction.as_str(), r.ops), ("read", 8192));
        assert_eq!((w.direction.as_str(), w.ops), ("write", 8192));
        assert_eq!(r.waited_share, Some(1.0));
        assert_eq!(w.waited_share, Some(1.0));
        assert_eq!(w.write_mode.as_deref(), Some("direct"));
        assert_eq!(r.write_mode, None);
        assert_eq!(
            j.explanation,
            "Of the 8192 reads, 100% waited for the device (loop0) and 0% were served from \
             memory; of the 8192 writes, 100% waited for it: this is the device's figure."
        );
        // Three quarters of the reads found their data in memory: mixed, by the share of
        // all operations that did the device's work.
        let j = judge(&mix(&[(2048, 6144), (40960, 2048)], true));
        assert_eq!(j.verdict, Verdict::Mixed);
        assert_eq!(j.device_share, Some((2048.0 + 8192.0) / 16384.0));
        assert!(j.contradicts_intent);
        assert!(
            j.explanation.starts_with(
                "Of the 8192 reads, 25% waited for the device (loop0) and 75% were served \
                 from memory; of the 8192 writes, 100% waited for it: the figure mixes memory \
                 and device speed. Use a file larger than 3x RAM"
            ),
            "{}",
            j.explanation
        );
        // Buffered writes, not flushed in the timing: the flushers wrote a quarter of their
        // bytes meanwhile, but no write was held back: none waited.
        let mut f = mix(&[(40960, 8192)], false);
        f.device_window.write_bytes = 8 * MIB;
        f.write_ops = Some(OpFacts {
            count: 8192,
            latency: dump(&[(4096, 8192)]),
        });
        let j = judge(&f);
        assert_eq!(j.verdict, Verdict::Mixed);
        assert_eq!(j.device_share, Some(0.5));
        assert!(
            j.explanation.contains(
                "of the 8192 writes, none waited for it: the page cache took them at memory \
                 speed, although the kernel's flushers wrote 25% of their bytes to the device \
                 meanwhile: the figure mixes memory and device speed."
            ),
            "{}",
            j.explanation
        );
        assert!(j.explanation.ends_with("or use --direct."));
    }

    /// randmix of buffered writes whose reads all waited on the device (8192 of each, 4 KiB):
    /// the writes copied in 4.6 us, `held` of them held back 4.7 ms by writeback, the flush
    /// of `flush` s in the timing or not, `window` bytes of theirs written in the timed region.
    fn buffered_mix(held: u64, flush: f64, in_timing: bool, window: u64) -> Facts {
        let mut f = mix(&[(40960, 8192)], false);
        f.device_window.write_bytes = window;
        f.exact = Some(candor_model::Exact {
            own_read_window: 32 * MIB,
            own_read_total: 32 * MIB,
            own_write_window: window,
            own_write_total: 32 * MIB,
            ..Default::default()
        });
        let mut b = vec![(4096, 8192 - held)];
        if held > 0 {
            b.push((4_194_304, held));
        }
        let writes = OpFacts {
            count: 8192,
            latency: dump(&b),
        };
        let mut all = f.read_ops.clone().expect("reads");
        all.add(&writes);
        f.ops = Some(all);
        f.write_ops = Some(writes);
        f.flush_seconds = flush;
        f.flush_in_timing = in_timing;
        f
    }

    #[test]
    fn a_buffered_mix_writes_are_judged_by_their_operations() {
        // Every byte written in the timed region by another process's syncs, none of the
        // writes held back: the bytes said device, the writes were memory's.
        let j = judge(&buffered_mix(0, 0.0, false, 32 * MIB));
        assert_eq!(j.flushed_in_window, Some(1.0));
        assert_eq!(j.verdict, Verdict::Mixed);
        assert_eq!(j.device_share, Some(0.5));
        assert!(j.contradicts_intent);
        let w = j
            .operations
            .as_ref()
            .and_then(|o| o.writes.clone())
            .expect("writes");
        assert_eq!(
            (w.waited_share, w.waited_time_share),
            (Some(0.0), Some(0.0))
        );
        assert!(
            j.explanation.starts_with(
                "Of the 8192 reads, 100% waited for the device (loop0) and 0% were served from \
                 memory; of the 8192 writes, none waited for it: the page cache took them at \
                 memory speed, although the kernel's flushers wrote 100% of their bytes to the \
                 device meanwhile: the figure mixes memory and device speed. Include the flush"
            ),
            "{}",
            j.explanation
        );
        // Half of the writes held back 4.7 ms each: nearly all of their time waited for the
        // device, and their bytes reached it: the device's figure.
        let j = judge(&buffered_mix(4096, 0.0, false, 32 * MIB));
        let w = j
            .operations
            .as_ref()
            .and_then(|o| o.writes.clone())
            .expect("writes");
        assert_eq!(w.waited_share, Some(0.5));
        let t = 4096.0 * 4718592.0 / (4096.0 * 4718592.0 + 4096.0 * 4608.0);
        assert!((w.waited_time_share.unwrap_or(0.0) - t).abs() < 1e-12);
        assert_eq!(j.verdict, Verdict::Device, "{}", j.explanation);
        assert!(
            j.explanation.contains(
                "of the 8192 writes, 50% were held back until writeback caught up, 99% of \
                 their time, and 100% of their bytes reached it inside the timed region: this \
                 is the device's figure."
            ),
            "{}",
            j.explanation
        );
        // Held back but their bytes not written in the window (another process's pages were):
        // the writes count by the share of their time held back.
        let mut f = buffered_mix(4096, 0.0, false, 0);
        f.device_window.write_bytes = 32 * MIB;
        let j = judge(&f);
        assert_eq!(j.verdict, Verdict::Device, "{}", j.explanation);
        // With the flush in the timing: their bytes, and the time they waited is named.
        // 8192 writes of 4.6 us (37.7 ms) and a flush of 0.1 s: 73% of their time.
        let j = judge(&buffered_mix(0, 0.1, true, 32 * MIB));
        assert_eq!(j.verdict, Verdict::Device, "{}", j.explanation);
        let w = j
            .operations
            .as_ref()
            .and_then(|o| o.writes.clone())
            .expect("writes");
        let t = 0.1 / (8192.0 * 4608e-9 + 0.1);
        assert!((w.waited_time_share.unwrap_or(0.0) - t).abs() < 1e-12);
        assert_eq!(w.flush_share, w.waited_time_share);
        assert!(
            j.explanation.contains(
                "of the 8192 writes, 100% of their bytes reached it inside the timed region, \
                 and they spent 73% of their time waiting for it (73% in the flush) and the \
                 rest copying into the page cache: this is the device's figure."
            ),
            "{}",
            j.explanation
        );
        // Reads served from memory and writes that never waited: memory speed, although the
        // bytes alone said mixed.
        let mut f = buffered_mix(0, 0.0, false, 16 * MIB);
        f.read_ops = Some(OpFacts {
            count: 8192,
            latency: dump(&[(2048, 8192)]),
        });
        if let Some(e) = f.exact.as_mut() {
            e.own_read_window = 0;
            e.own_read_total = 0;
        }
        let j = judge(&f);
        assert_eq!(j.verdict, Verdict::Cache, "{}", j.explanation);
        assert_eq!(j.device_share, None);
        assert!(
            j.explanation.contains("this is memory speed."),
            "{}",
            j.explanation
        );
    }
}
