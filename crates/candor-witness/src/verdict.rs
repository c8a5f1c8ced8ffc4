//! From what the sources measured to what the person reads: the derived figures (cache hit
//! ratio, write amplification, share flushed inside the timed region, foreign device
//! traffic, precision), the verdict, and its explanation in one plain sentence.
//!
//! Everything here is pure. A repetition's measurements are kept as plain [`Facts`]
//! (stored in `witness.extra["facts"]`), so [`combine`] sums the facts of all repetitions
//! and judges the sum with the very same rules. The thresholds are the constants below;
//! docs/witness.md gives the reasons for each.

use candor_model::{DeviceIo, ProcessIo, Witness};
use serde::{Deserialize, Serialize};

/// A figure is the device's when at least this share of its bytes moved to or from the
/// device inside the timed region.
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

/// Where the target's bytes can go.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Placement {
    /// A block device; `name` as shown ("vda", "loop0", "sda+sdb").
    Device { name: String },
    /// A filesystem that lives in memory (tmpfs...).
    Memory { fs_type: String },
    /// The witness cannot see the storage (FUSE, network, a failed sample): why.
    Unobservable { reason: String },
}

impl Default for Placement {
    fn default() -> Self {
        Placement::Unobservable {
            reason: "nothing was observed".into(),
        }
    }
}

/// Growth of the /proc/diskstats counters of the counted devices over an interval.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq)]
#[serde(default)]
pub struct DiskDelta {
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub read_ios: u64,
    pub write_ios: u64,
    pub read_ms: u64,
    pub write_ms: u64,
    pub io_ticks_ms: u64,
}

/// Growth of candor's /proc/self/io over an interval.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq)]
#[serde(default)]
pub struct OwnIo {
    /// Bytes returned by read-like calls (cache hits included), the witness's own reads of
    /// /proc removed by the caller.
    pub rchar: u64,
    pub wchar: u64,
    /// Block-layer reads submitted by the process (misses, readahead, O_DIRECT).
    pub read_bytes: u64,
    /// Bytes dirtied (buffered) or written directly.
    pub write_bytes: u64,
    pub cancelled_write_bytes: u64,
}

/// Device bytes attributed exactly (eBPF): no allowance needed.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq)]
#[serde(default)]
pub struct Exact {
    pub own_read_window: u64,
    pub own_read_total: u64,
    pub own_write_window: u64,
    pub own_write_total: u64,
    pub foreign_bytes: u64,
}

/// Everything measured about one repetition (or the sum of several), as plain numbers.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct Facts {
    pub test: String,
    /// "device" or "cache" (what the test meant to measure); anything else judges no intent.
    pub intent: String,
    pub is_write: bool,
    pub direct: bool,
    pub app_read: u64,
    pub app_write: u64,
    /// The runner's timed seconds and headline throughput.
    pub timed_seconds: f64,
    pub headline_bps: f64,
    pub ram_bytes: u64,
    pub placement: Placement,
    /// begin -> timed_end.
    pub device_window: DiskDelta,
    /// begin -> finish (after the runner's flush).
    pub device_total: DiskDelta,
    pub own_window: Option<OwnIo>,
    pub own_total: Option<OwnIo>,
    pub exact: Option<Exact>,
    /// Block-layer [read, write] bytes of every other process over begin -> finish; None
    /// when other processes' counters cannot be read (not root).
    pub others_io: Option<[u64; 2]>,
    /// The device is candor's alone (a `candor lab` loop device): all its traffic is the
    /// test's.
    pub exclusive: bool,
    /// Seconds between the witness's samples: begin -> timed_end and begin -> finish.
    pub window_seconds: f64,
    pub total_seconds: f64,
    /// How many repetitions these facts sum.
    pub repetitions: u32,
}

impl DiskDelta {
    fn add(&mut self, o: &DiskDelta) {
        self.read_bytes += o.read_bytes;
        self.write_bytes += o.write_bytes;
        self.read_ios += o.read_ios;
        self.write_ios += o.write_ios;
        self.read_ms += o.read_ms;
        self.write_ms += o.write_ms;
        self.io_ticks_ms += o.io_ticks_ms;
    }
}

impl OwnIo {
    fn add(&mut self, o: &OwnIo) {
        self.rchar += o.rchar;
        self.wchar += o.wchar;
        self.read_bytes += o.read_bytes;
        self.write_bytes += o.write_bytes;
        self.cancelled_write_bytes += o.cancelled_write_bytes;
    }
}

fn add_opt<T: Copy>(a: &mut Option<T>, b: &Option<T>, f: impl Fn(&mut T, &T)) {
    match (a.as_mut(), b) {
        (Some(x), Some(y)) => f(x, y),
        // A repetition without the counter makes the sum unknown.
        _ => *a = None,
    }
}

impl Facts {
    /// Adds another repetition of the same test.
    pub fn add(&mut self, o: &Facts) {
        self.app_read += o.app_read;
        self.app_write += o.app_write;
        // The combined headline is bytes over time, like any throughput.
        let bytes = self.headline_bps * self.timed_seconds + o.headline_bps * o.timed_seconds;
        self.timed_seconds += o.timed_seconds;
        self.headline_bps = if self.timed_seconds > 0.0 {
            bytes / self.timed_seconds
        } else {
            0.0
        };
        self.device_window.add(&o.device_window);
        self.device_total.add(&o.device_total);
        add_opt(&mut self.own_window, &o.own_window, OwnIo::add);
        add_opt(&mut self.own_total, &o.own_total, OwnIo::add);
        add_opt(&mut self.others_io, &o.others_io, |a, b| {
            a[0] += b[0];
            a[1] += b[1];
        });
        add_opt(&mut self.exact, &o.exact, |a, b| {
            a.own_read_window += b.own_read_window;
            a.own_read_total += b.own_read_total;
            a.own_write_window += b.own_write_window;
            a.own_write_total += b.own_write_total;
            a.foreign_bytes += b.foreign_bytes;
        });
        self.window_seconds += o.window_seconds;
        self.total_seconds += o.total_seconds;
        self.repetitions += o.repetitions.max(1);
        self.exclusive &= o.exclusive;
        if let Placement::Unobservable { .. } = o.placement {
            self.placement = o.placement.clone();
        }
    }
}

/// The device bytes that belong to the test, and those that do not.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Attribution {
    pub own_read: u64,
    pub own_write_window: u64,
    pub own_write_total: u64,
    pub foreign_read: u64,
    pub foreign_write: u64,
    /// True when eBPF attributed the bytes; false when the allowance estimated them.
    pub exact: bool,
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

/// Splits the device traffic into the test's own and foreign. With eBPF the split is exact.
/// Otherwise, when every other process's /proc/<pid>/io is readable (root), device traffic
/// beyond candor's own is foreign only up to what the other processes moved (the rest is
/// the filesystem working for the test); when it is not, the device's bytes beyond what
/// /proc/self/io explains plus the allowance are foreign. With no /proc/self/io at all,
/// everything is taken as the test's own (and nothing can be said about foreign traffic).
pub fn attribute(f: &Facts) -> Attribution {
    if let Some(e) = f.exact {
        return Attribution {
            own_read: e.own_read_total,
            own_write_window: e.own_write_window,
            own_write_total: e.own_write_total,
            foreign_read: 0,
            foreign_write: e.foreign_bytes,
            exact: true,
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
    let (foreign_read, foreign_write) = match f.others_io {
        _ if f.exclusive => (0, 0),
        // Other processes' counters are visible: device traffic beyond candor's own can be
        // foreign only up to what the others moved; the rest is the filesystem's own work
        // for the test (journal, metadata, copy-on-write), which amplification must count.
        Some([others_read, others_write]) => (
            dev.read_bytes
                .saturating_sub(own.read_bytes)
                .min(quiet_or(others_read)),
            dev.write_bytes
                .saturating_sub(explained_write)
                .min(quiet_or(others_write)),
        ),
        None => {
            let read_allow =
                READ_ALLOWANCE_BYTES + (own.read_bytes as f64 * READ_ALLOWANCE_SHARE) as u64;
            let write_allow =
                WRITE_ALLOWANCE_BYTES + (explained_write as f64 * WRITE_ALLOWANCE_SHARE) as u64;
            (
                dev.read_bytes.saturating_sub(own.read_bytes + read_allow),
                dev.write_bytes
                    .saturating_sub(explained_write + write_allow),
            )
        }
    };
    // Reads the process submitted may have gone to other devices (the binary paging in):
    // the test's own device reads are at most what the device did.
    let own_read = if f.others_io.is_some() || f.exclusive {
        dev.read_bytes - foreign_read
    } else {
        own.read_bytes.min(dev.read_bytes)
    };
    // Without the others' counters, foreign writes cannot be told apart from the allowance:
    // the test's own writes are then only what the process itself wrote (a lower bound).
    let own_write_total = if f.others_io.is_some() || f.exclusive {
        dev.write_bytes - foreign_write
    } else if foreign_write > 0 {
        explained_write.min(dev.write_bytes)
    } else {
        dev.write_bytes
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
        exact: false,
    }
}

/// The figures and the judgement of a set of facts.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Judgement {
    pub verdict: &'static str,
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
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        (a as f64 / b as f64).clamp(0.0, 1.0)
    }
}

/// Judges a set of facts: the figures, the verdict and the sentence that explains it.
pub fn judge(f: &Facts) -> Judgement {
    let intent = f.intent.as_str();
    let mut j = Judgement::default();
    let device_name = match &f.placement {
        Placement::Unobservable { reason } => {
            j.verdict = "unverified";
            j.unverified_reason = Some(reason.clone());
            j.explanation = format!("The witness could not observe this test: {reason}.");
            return j;
        }
        Placement::Memory { fs_type } => {
            j.verdict = "memory";
            j.contradicts_intent = intent == "device";
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
    let app_total = f.app_read + f.app_write;
    if app_total == 0 {
        j.verdict = "unverified";
        let reason = "the test reported no bytes moved".to_string();
        j.explanation = format!("The witness could not judge this test: {reason}.");
        j.unverified_reason = Some(reason);
        return j;
    }
    let a = attribute(f);
    let read_from_device = a.own_read.min(f.app_read);
    let write_in_window = a.own_write_window.min(f.app_write);
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
        "device"
    } else if share <= CACHE_SHARE_MAX {
        "cache"
    } else {
        j.device_share = Some(share);
        "mixed"
    };
    j.contradicts_intent = match intent {
        "device" => j.verdict != "device",
        "cache" => j.verdict != "cache",
        _ => false,
    };
    j.precision = precision(f, &a, j.verdict);
    j.explanation = explain(f, &j, &a, share, &device_name);
    j
}

/// |headline - witness| / headline, the witness's throughput being the bytes it saw move in
/// the timed region over its own clock: device bytes when the device did the work, the
/// process's rchar/wchar otherwise.
fn precision(f: &Facts, a: &Attribution, verdict: &str) -> Option<f64> {
    if f.headline_bps <= 0.0 || f.window_seconds <= 0.0 {
        return None;
    }
    let bytes = if verdict == "device" {
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

/// "72 GiB", "512 MiB", "4.0 KiB": binary units, as candor's size options.
pub fn human_bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["bytes", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut i = 0;
    while v >= 1024.0 && i < UNITS.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{b} bytes")
    } else if v < 10.0 {
        format!("{v:.1} {}", UNITS[i])
    } else {
        format!("{v:.0} {}", UNITS[i])
    }
}

/// A share as a whole percentage that never rounds a part to 0% or 100%.
fn pct(x: f64) -> String {
    let p = (x * 100.0).round();
    let p = if x > 0.0 && p < 1.0 {
        1.0
    } else if x < 1.0 && p > 99.0 {
        99.0
    } else {
        p
    };
    format!("{p:.0}%")
}

/// The "file larger than 3x RAM" size, RAM rounded up to a whole GiB first.
fn three_ram(ram: u64) -> String {
    let gib = ram.div_ceil(1 << 30).max(1);
    format!("{} GiB", 3 * gib)
}

fn explain(f: &Facts, j: &Judgement, a: &Attribution, share: f64, dev: &str) -> String {
    let reads = f.app_read > 0 && f.app_write == 0;
    let writes = f.app_write > 0 && f.app_read == 0;
    let hit = j.cache_hit_ratio.unwrap_or(0.0);
    let flushed = j.flushed_in_window.unwrap_or(0.0);
    let device_fix = format!(
        "Use --direct, or a file larger than 3x RAM ({} here).",
        three_ram(f.ram_bytes)
    );
    let flush_fix =
        "Include the flush in the timing (leave out --no-fsync-in-timing) or use --direct.";
    let cache_fix =
        "To measure the page cache, use a file well under the free memory and read it once before.";
    let mut s = match (j.verdict, reads, writes) {
        ("device", true, _) => format!(
            "{} of the bytes read came from the device ({dev}): this is the device's figure.",
            pct(1.0 - hit)
        ),
        ("device", _, true) => {
            let mut s = format!(
                "{} of the written bytes reached the device ({dev}) inside the timed region: this is the device's figure",
                pct(flushed)
            );
            if let Some(wa) = j.write_amplification.filter(|w| *w >= 1.1 && !j.disturbed) {
                s.push_str(&format!(", and the device wrote {wa:.2}x the application's bytes"));
            }
            s.push('.');
            s
        }
        ("device", _, _) => format!(
            "{} of the bytes read and written moved to or from the device ({dev}) inside the timed region: this is the device's figure.",
            pct(share)
        ),
        ("cache", true, _) => {
            format!("{} of these reads came from the page cache: this is memory speed.", pct(hit))
        }
        ("cache", _, true) if write_in_window(f, j) == 0 => "None of the written bytes reached the device inside the timed region: the page cache absorbed them, so this is memory speed.".to_string(),
        ("cache", _, true) => format!(
            "Only {} of the written bytes reached the device inside the timed region: the page cache absorbed the rest, so this is memory speed.",
            pct(flushed)
        ),
        ("cache", _, _) => format!(
            "Only {} of the bytes read and written reached the device inside the timed region: this is memory speed.",
            pct(share)
        ),
        (_, true, _) => format!(
            "{} of these reads came from the page cache and {} from the device ({dev}): the figure mixes memory and device speed.",
            pct(hit),
            pct(1.0 - hit)
        ),
        (_, _, true) => format!(
            "{} of the written bytes reached the device ({dev}) inside the timed region and the rest waited in the page cache: the figure mixes memory and device speed.",
            pct(flushed)
        ),
        _ => format!(
            "{} of the bytes read and written moved to or from the device ({dev}) inside the timed region: the figure mixes memory and device speed.",
            pct(share)
        ),
    };
    if j.contradicts_intent {
        s.push(' ');
        match (f.intent.as_str(), f.is_write || writes) {
            ("cache", _) => s.push_str(cache_fix),
            (_, true) if !reads => s.push_str(flush_fix),
            _ => s.push_str(&device_fix),
        }
    }
    if j.disturbed {
        let what = if a.exact || f.others_io.is_some() {
            "traffic of other processes".to_string()
        } else {
            "traffic that candor's own I/O does not explain (another process, or filesystem metadata beyond the allowance)".to_string()
        };
        s.push_str(&format!(
            " The device also carried {} of {what}: rerun when the device is idle.",
            human_bytes(j.foreign_device_bytes)
        ));
    }
    s
}

fn write_in_window(f: &Facts, j: &Judgement) -> u64 {
    (j.flushed_in_window.unwrap_or(0.0) * f.app_write as f64).round() as u64
}

/// The `device` block of the witness from a total delta (begin -> finish).
pub fn device_io(f: &Facts) -> Option<DeviceIo> {
    let Placement::Device { name } = &f.placement else {
        return None;
    };
    let d = &f.device_total;
    let ios = d.read_ios + d.write_ios;
    let bytes = d.read_bytes + d.write_bytes;
    Some(DeviceIo {
        name: name.clone(),
        read_bytes: d.read_bytes,
        write_bytes: d.write_bytes,
        read_ios: d.read_ios,
        write_ios: d.write_ios,
        avg_request_bytes: if ios > 0 {
            bytes as f64 / ios as f64
        } else {
            0.0
        },
        util: if f.total_seconds > 0.0 {
            (d.io_ticks_ms as f64 / 1000.0 / f.total_seconds).clamp(0.0, 1.0)
        } else {
            0.0
        },
        avg_latency_us: if ios > 0 {
            (d.read_ms + d.write_ms) as f64 * 1000.0 / ios as f64
        } else {
            0.0
        },
        write_bytes_in_window: f.device_window.write_bytes,
    })
}

/// Writes the figures and the judgement of `facts` into a witness, and keeps the facts in
/// `extra["facts"]` so that [`combine`] can sum repetitions.
pub fn apply(facts: &Facts, w: &mut Witness) {
    let j = judge(facts);
    w.verdict = j.verdict.to_string();
    w.device_share = j.device_share;
    w.explanation = j.explanation;
    w.contradicts_intent = j.contradicts_intent;
    w.unverified_reason = j.unverified_reason;
    w.app.read_bytes = facts.app_read;
    w.app.write_bytes = facts.app_write;
    w.process_io = facts.own_total.map(|o| ProcessIo {
        rchar: o.rchar,
        wchar: o.wchar,
        read_bytes: o.read_bytes,
        write_bytes: o.write_bytes,
        cancelled_write_bytes: o.cancelled_write_bytes,
    });
    w.device = device_io(facts);
    w.cache_hit_ratio = j.cache_hit_ratio;
    w.write_amplification = j.write_amplification;
    w.flushed_in_window = j.flushed_in_window;
    w.disturbed = j.disturbed;
    w.foreign_device_bytes = j.foreign_device_bytes;
    w.precision = j.precision;
    if let Ok(v) = serde_json::to_value(facts) {
        w.extra.insert("facts".into(), v);
    }
}

/// The facts a witness carries, if it came from [`apply`].
pub fn facts_of(w: &Witness) -> Option<Facts> {
    serde_json::from_value(w.extra.get("facts")?.clone()).ok()
}

/// Merges the witnesses of a test's repetitions: byte counts are summed and the figures and
/// verdict recomputed from the sums; memory is taken from the first and last repetitions,
/// counters are summed, and the timeline is the last repetition's.
pub fn combine(reps: Vec<Witness>) -> Option<Witness> {
    let mut it = reps.into_iter();
    let first = it.next()?;
    let mut facts = facts_of(&first);
    if let Some(f) = facts.as_mut() {
        f.repetitions = f.repetitions.max(1);
    }
    let mut out = first;
    let mut last = None;
    for w in it {
        match (facts.as_mut(), facts_of(&w)) {
            (Some(f), Some(g)) => f.add(&g),
            _ => facts = None,
        }
        merge_observations(&mut out, &w);
        last = Some(w);
    }
    match (facts, last) {
        (Some(f), _) => apply(&f, &mut out),
        // Repetitions without facts (witness off, or a source that keeps none): the last
        // repetition's judgement stands rather than an invented one.
        (None, Some(w)) => {
            out.verdict = w.verdict;
            out.device_share = w.device_share;
            out.explanation = w.explanation;
            out.contradicts_intent = w.contradicts_intent;
            out.unverified_reason = w.unverified_reason;
        }
        (None, None) => {}
    }
    Some(out)
}

/// Adds the buckets of `b` to `a` (both in the saved [lower bound, count] form).
fn merge_dump(a: &mut candor_model::HistogramDump, b: &candor_model::HistogramDump) {
    let mut m: std::collections::BTreeMap<u64, u64> =
        a.buckets.iter().map(|x| (x[0], x[1])).collect();
    for x in &b.buckets {
        *m.entry(x[0]).or_insert(0) += x[1];
    }
    a.buckets = m.into_iter().map(|(k, v)| [k, v]).collect();
    a.relative_error = a.relative_error.max(b.relative_error);
}

/// The q-quantile of a saved histogram in microseconds: the middle of its bucket.
fn dump_quantile_us(d: &candor_model::HistogramDump, q: f64) -> f64 {
    let total: u64 = d.buckets.iter().map(|x| x[1]).sum();
    if total == 0 {
        return 0.0;
    }
    let rank = ((q * total as f64).ceil() as u64).max(1);
    let mut seen = 0;
    for x in &d.buckets {
        seen += x[1];
        if seen >= rank {
            return x[0] as f64 * (1.0 + d.relative_error / 2.0) / 1000.0;
        }
    }
    0.0
}

/// The eBPF figures of several repetitions, summed (they are counts over each repetition).
fn merge_bpf(out: &mut Witness, w: &Witness) {
    if let (Some(a), Some(b)) = (out.syscalls.as_mut(), w.syscalls.as_ref()) {
        for (name, s) in b {
            let t = a.entry(name.clone()).or_default();
            t.count += s.count;
            t.bytes += s.bytes;
            t.time_ns += s.time_ns;
            merge_dump(&mut t.latency, &s.latency);
        }
    }
    if let (Some(a), Some(b)) = (out.block.as_mut(), w.block.as_ref()) {
        for (dir, s) in b {
            let t = a.entry(dir.clone()).or_default();
            t.completions += s.completions;
            t.bytes += s.bytes;
            merge_dump(&mut t.size_histogram, &s.size_histogram);
            merge_dump(&mut t.latency, &s.latency);
            t.p50_us = dump_quantile_us(&t.latency, 0.5);
            t.p99_us = dump_quantile_us(&t.latency, 0.99);
        }
    }
    out.cache_misses = match (out.cache_misses, w.cache_misses) {
        (Some(a), Some(b)) => Some(a + b),
        _ => None,
    };
}

fn merge_observations(out: &mut Witness, w: &Witness) {
    merge_bpf(out, w);
    if let (Some(m), Some(n)) = (out.memory.as_mut(), w.memory.as_ref()) {
        m.dirty_after = n.dirty_after;
        m.dirty_peak = m.dirty_peak.max(n.dirty_peak);
        m.writeback_after = n.writeback_after;
        m.cached_after = n.cached_after;
    } else if out.memory.is_none() {
        out.memory = w.memory.clone();
    }
    for (k, v) in &w.vmstat {
        *out.vmstat.entry(k.clone()).or_insert(0) += v;
    }
    out.io_pressure_us = match (out.io_pressure_us, w.io_pressure_us) {
        (Some(a), Some(b)) => Some([a[0] + b[0], a[1] + b[1]]),
        _ => None,
    };
    if let (Some(a), Some(b)) = (out.file_cache.as_mut(), w.file_cache.as_ref()) {
        a.resident_after = b.resident_after;
        a.dirty_after = b.dirty_after;
        a.file_pages = a.file_pages.max(b.file_pages);
    } else if out.file_cache.is_none() {
        out.file_cache = w.file_cache.clone();
    }
    if !w.timeline.is_empty() {
        out.timeline = w.timeline.clone();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;
    const RAM: u64 = 24730032 * 1024;

    fn dev() -> Placement {
        Placement::Device {
            name: "loop0".into(),
        }
    }

    fn read_facts(app: u64, own_read: u64, dev_read: u64, intent: &str) -> Facts {
        Facts {
            test: "read".into(),
            intent: intent.into(),
            app_read: app,
            timed_seconds: 1.0,
            headline_bps: app as f64,
            ram_bytes: RAM,
            placement: dev(),
            device_window: DiskDelta {
                read_bytes: dev_read,
                read_ios: dev_read / (128 << 10),
                read_ms: 100,
                io_ticks_ms: 500,
                ..Default::default()
            },
            device_total: DiskDelta {
                read_bytes: dev_read,
                read_ios: dev_read / (128 << 10),
                read_ms: 100,
                io_ticks_ms: 500,
                ..Default::default()
            },
            own_window: Some(OwnIo {
                rchar: app,
                read_bytes: own_read,
                ..Default::default()
            }),
            own_total: Some(OwnIo {
                rchar: app,
                read_bytes: own_read,
                ..Default::default()
            }),
            window_seconds: 1.0,
            total_seconds: 1.0,
            repetitions: 1,
            ..Default::default()
        }
    }

    fn write_facts(app: u64, window: u64, total: u64, own_write: u64) -> Facts {
        Facts {
            test: "write".into(),
            intent: "device".into(),
            is_write: true,
            app_write: app,
            timed_seconds: 1.0,
            headline_bps: app as f64,
            ram_bytes: RAM,
            placement: dev(),
            device_window: DiskDelta {
                write_bytes: window,
                ..Default::default()
            },
            device_total: DiskDelta {
                write_bytes: total,
                write_ios: total / MIB,
                write_ms: 40,
                io_ticks_ms: 200,
                ..Default::default()
            },
            own_window: Some(OwnIo {
                wchar: app,
                write_bytes: own_write,
                ..Default::default()
            }),
            own_total: Some(OwnIo {
                wchar: app,
                write_bytes: own_write,
                ..Default::default()
            }),
            window_seconds: 1.0,
            total_seconds: 1.5,
            repetitions: 1,
            ..Default::default()
        }
    }

    #[test]
    fn cold_read_is_the_device() {
        let j = judge(&read_facts(64 * MIB, 64 * MIB, 64 * MIB + 8192, "device"));
        assert_eq!(j.verdict, "device");
        assert_eq!(j.cache_hit_ratio, Some(0.0));
        assert!(!j.contradicts_intent && !j.disturbed);
        assert!(j
            .explanation
            .starts_with("100% of the bytes read came from the device (loop0)"));
        assert!(j.precision.expect("precision") < 0.01);
    }

    #[test]
    fn cached_read_meant_for_the_device_says_so_and_suggests() {
        let j = judge(&read_facts(100 * MIB, 6 * MIB, 6 * MIB, "device"));
        assert_eq!(j.verdict, "mixed");
        assert_eq!(j.device_share.map(|s| (s * 100.0).round()), Some(6.0));
        let j = judge(&read_facts(100 * MIB, 2 * MIB, 2 * MIB, "device"));
        assert_eq!(j.verdict, "cache");
        assert!(j.contradicts_intent);
        assert_eq!(
            j.explanation,
            "98% of these reads came from the page cache: this is memory speed. \
             Use --direct, or a file larger than 3x RAM (72 GiB here)."
        );
    }

    #[test]
    fn reread_is_the_cache_as_intended() {
        let j = judge(&read_facts(16 * MIB, 0, 0, "cache"));
        assert_eq!(j.verdict, "cache");
        assert_eq!(j.cache_hit_ratio, Some(1.0));
        assert!(!j.contradicts_intent);
        // Meant for the cache but served by the device: the remedy is a smaller file.
        let j = judge(&read_facts(16 * MIB, 16 * MIB, 16 * MIB, "cache"));
        assert!(j.contradicts_intent);
        assert!(j.explanation.contains("free memory"), "{}", j.explanation);
    }

    #[test]
    fn readahead_beyond_the_app_bytes_caps_at_zero_hits() {
        let j = judge(&read_facts(4 * MIB, 6 * MIB, 6 * MIB, "device"));
        assert_eq!(j.cache_hit_ratio, Some(0.0));
        assert_eq!(j.verdict, "device");
    }

    #[test]
    fn buffered_write_without_flush_is_absorbed() {
        // Nothing reached the device while the timer ran; the runner's fsync wrote it after.
        let j = judge(&write_facts(32 * MIB, 0, 32 * MIB + 300 * 1024, 32 * MIB));
        assert_eq!(j.verdict, "cache");
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
        assert_eq!(j.verdict, "device");
        assert_eq!(j.flushed_in_window, Some(1.0));
        assert!(!j.contradicts_intent);
        let j = judge(&write_facts(32 * MIB, 12 * MIB, 33 * MIB, 32 * MIB));
        assert_eq!(j.verdict, "mixed");
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
        let j = judge(&read_facts(16 * MIB, 16 * MIB, 64 * MIB, "device"));
        assert!(j.disturbed);
        assert_eq!(j.verdict, "device");
    }

    #[test]
    fn bpf_figures_of_repetitions_add_up() {
        let rep = |n: u64| {
            let mut w = Witness::default();
            let mut sc = std::collections::BTreeMap::new();
            sc.insert(
                "pwrite64".to_string(),
                candor_model::SyscallStat {
                    count: n,
                    bytes: n * 4096,
                    time_ns: n * 1000,
                    latency: candor_model::HistogramDump {
                        relative_error: 0.25,
                        buckets: vec![[1000, n]],
                    },
                },
            );
            w.syscalls = Some(sc);
            let mut bl = std::collections::BTreeMap::new();
            bl.insert(
                "write".to_string(),
                candor_model::BlockStat {
                    completions: n,
                    bytes: n * 4096,
                    latency: candor_model::HistogramDump {
                        relative_error: 0.25,
                        buckets: vec![[100_000 * n, n]],
                    },
                    ..Default::default()
                },
            );
            w.block = Some(bl);
            w.cache_misses = Some(n);
            w
        };
        let c = combine(vec![rep(10), rep(30)]).unwrap();
        let s = &c.syscalls.as_ref().unwrap()["pwrite64"];
        assert_eq!((s.count, s.bytes, s.time_ns), (40, 40 * 4096, 40_000));
        assert_eq!(s.latency.buckets, vec![[1000, 40]]);
        let b = &c.block.as_ref().unwrap()["write"];
        assert_eq!((b.completions, b.bytes), (40, 40 * 4096));
        // 30 of the 40 completions took 3 ms: the median is in that bucket.
        assert!((b.p50_us - 3000.0 * 1.125).abs() < 1e-6, "{}", b.p50_us);
        assert_eq!(c.cache_misses, Some(40));
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
        f.exact = Some(Exact {
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
        let mut f = read_facts(MIB, 0, 0, "device");
        f.placement = Placement::Memory {
            fs_type: "tmpfs".into(),
        };
        let j = judge(&f);
        assert_eq!(j.verdict, "memory");
        assert!(j.contradicts_intent);
        assert!(j
            .explanation
            .starts_with("There is no block device under this target (tmpfs)"));
        assert!(j.precision.expect("precision from rchar") < 0.01);
        f.placement = Placement::Unobservable {
            reason: "fuse has no block device the witness can read".into(),
        };
        let j = judge(&f);
        assert_eq!(j.verdict, "unverified");
        assert!(!j.contradicts_intent);
        assert!(j.unverified_reason.is_some());
        let j = judge(&read_facts(0, 0, 0, "device"));
        assert_eq!(j.verdict, "unverified");
    }

    #[test]
    fn without_proc_self_io_everything_is_own() {
        let mut f = read_facts(16 * MIB, 0, 64 * MIB, "device");
        f.own_total = None;
        f.own_window = None;
        let j = judge(&f);
        assert!(!j.disturbed);
        assert_eq!(j.verdict, "device");
    }

    #[test]
    fn combine_sums_and_rejudges() {
        let mut a = Witness::default();
        apply(&write_facts(32 * MIB, 32 * MIB, 32 * MIB, 32 * MIB), &mut a);
        let mut b = Witness::default();
        apply(&write_facts(32 * MIB, 0, 32 * MIB, 32 * MIB), &mut b);
        assert_eq!(a.verdict, "device");
        assert_eq!(b.verdict, "cache");
        let c = combine(vec![a, b]).expect("combined");
        assert_eq!(c.verdict, "mixed");
        assert_eq!(c.app.write_bytes, 64 * MIB);
        assert_eq!(c.flushed_in_window, Some(0.5));
        assert_eq!(c.device_share, Some(0.5));
        let dev = c.device.clone().expect("device");
        assert_eq!(dev.write_bytes, 64 * MIB);
        assert_eq!(dev.write_bytes_in_window, 32 * MIB);
        assert_eq!(facts_of(&c).expect("facts").repetitions, 2);
        assert!(combine(vec![]).is_none());
    }

    #[test]
    fn device_block_and_units() {
        let f = write_facts(32 * MIB, 32 * MIB, 32 * MIB, 32 * MIB);
        let d = device_io(&f).expect("device");
        assert_eq!(d.avg_request_bytes, MIB as f64);
        assert!((d.util - 0.2 / 1.5).abs() < 1e-9);
        assert!((d.avg_latency_us - 40_000.0 / 32.0).abs() < 1e-9);
        assert_eq!(human_bytes(72 << 30), "72 GiB");
        assert_eq!(human_bytes(3 << 19), "1.5 MiB");
        assert_eq!(human_bytes(10), "10 bytes");
        assert_eq!(pct(0.004), "1%");
        assert_eq!(pct(0.996), "99%");
        assert_eq!(three_ram(RAM), "72 GiB");
    }

    #[test]
    fn a_mix_of_reads_and_writes_is_judged_on_all_its_bytes() {
        // randmix: 8 MiB read from the device, 8 MiB written and absorbed by the cache.
        let mut f = read_facts(8 * MIB, 8 * MIB, 8 * MIB, "device");
        f.test = "randmix".into();
        f.is_write = true;
        f.app_write = 8 * MIB;
        f.device_total.write_bytes = 8 * MIB;
        if let Some(o) = f.own_total.as_mut() {
            o.write_bytes = 8 * MIB;
        }
        let j = judge(&f);
        assert_eq!(j.verdict, "mixed");
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
}
