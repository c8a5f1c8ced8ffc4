//! Figures every reporter derives from a result in the same way: the device's throughput next
//! to the headline, the verdict cell, the notes printed under a table (contradicted intent,
//! disturbance, failures, noisy repetitions), grouping by target, and scaling series over
//! thread count or queue depth with the point where scaling stops.

use crate::units;
use candor_model::{BlockDevice, Intent, RunDoc, TargetInfo, TestResult, Verdict};

/// Coefficient of variation above which repetitions are called noisy.
pub const NOISY_CV: f64 = 0.10;

/// A step of a sweep must gain at least this share to count as still scaling.
pub const SCALING_GAIN: f64 = 0.10;

/// The run's warnings as a report lists them: those about one result's noisy repetitions are
/// already a numbered note beside that result, so they become one summary line (recognised by
/// the words every such warning carries, "coefficient of variation").
pub fn warnings(doc: &RunDoc) -> Vec<String> {
    let noisy = |w: &String| w.contains("coefficient of variation");
    let n = doc.warnings.iter().filter(|w| noisy(w)).count();
    let mut out: Vec<String> = doc.warnings.iter().filter(|w| !noisy(w)).cloned().collect();
    match n {
        0 => {}
        1 => out.extend(doc.warnings.iter().filter(|w| noisy(w)).cloned()),
        n => out.push(format!(
            "{n} results vary by more than {} between repetitions (see their notes): use more --repeat, \
             a longer --runtime or a quieter machine.",
            units::pct(NOISY_CV)
        )),
    }
    out
}

/// The figures of an MPI result's ranks (`ranks.rs`).
pub use crate::ranks::{rank_rates, rank_spread, RankRate};
/// Which way a test moves data (for choosing the device counter that matches it).
pub use candor_model::Direction;

pub fn direction(r: &TestResult) -> Direction {
    r.direction()
}

/// Throughput as the device saw it, scaled to the headline: headline x device bytes / app
/// bytes in the test's direction. None without a witness, device counters or app bytes.
pub fn device_bps(r: &TestResult) -> Option<f64> {
    let w = r.witness.as_ref()?;
    let d = w.device.as_ref()?;
    let (dev, app) = match direction(r) {
        Direction::Read => (d.read_bytes, w.app.read_bytes),
        // Writes count only what reached the device inside the timed region: the rest came
        // with the flush after it, and the figure did not wait for it.
        Direction::Write => (d.write_bytes_in_window, w.app.write_bytes),
        Direction::Mixed | Direction::Unknown => (
            d.read_bytes + d.write_bytes_in_window,
            w.app.read_bytes + w.app.write_bytes,
        ),
    };
    if app == 0 {
        return None;
    }
    Some(r.throughput.mean * dev as f64 / app as f64)
}

/// Throughput as the disk under a loop device that goes through the host's page cache saw
/// it (its name and the figure, scaled like `device_bps`): the row's `dev MB/s` is the loop
/// device's own, and the witness's shares are of this disk's. None for any other device.
pub fn disk_under_bps(r: &TestResult) -> Option<(String, f64)> {
    let w = r.witness.as_ref()?;
    let l = w.extra.facts.as_ref()?.loop_device.as_ref()?;
    if l.direct_io {
        return None;
    }
    let b = l.backing_window?;
    let d = w.device.as_ref()?;
    // The disk's counters hold every process's traffic: at most the loop device's bytes.
    let (disk, app) = match direction(r) {
        Direction::Read => (b.read_bytes.min(d.read_bytes), w.app.read_bytes),
        Direction::Write => (
            b.write_bytes.min(d.write_bytes_in_window),
            w.app.write_bytes,
        ),
        Direction::Mixed | Direction::Unknown => (
            b.read_bytes.min(d.read_bytes) + b.write_bytes.min(d.write_bytes_in_window),
            w.app.read_bytes + w.app.write_bytes,
        ),
    };
    if app == 0 {
        return None;
    }
    let name = l.backing_disk.clone().unwrap_or_else(|| "disk".into());
    Some((name, r.throughput.mean * disk as f64 / app as f64))
}

/// The `dev MB/s` cell: the device's figure, and beside it the disk under a loop device
/// that goes through the host's page cache ("5595 (vda 56)").
pub fn device_cell(r: &TestResult) -> String {
    let Some(dev) = device_bps(r) else {
        return "-".into();
    };
    match disk_under_bps(r) {
        Some((name, b)) => format!("{} ({name} {})", units::mb_s(dev), units::mb_s(b)),
        None => units::mb_s(dev),
    }
}

/// The verdict as a short cell: "device", "mixed 40%", "cache (meant)", "cache [!]".
pub fn verdict_cell(r: &TestResult) -> String {
    let Some(w) = r.witness.as_ref() else {
        return "-".to_string();
    };
    let mut v = w.verdict.to_string();
    if w.verdict == Verdict::Mixed {
        if let Some(s) = w.device_share {
            v = format!("mixed {}", units::pct(s));
        }
    }
    if w.contradicts_intent {
        v.push_str(" [!]");
    } else if r.intent == Intent::Cache && w.verdict == Verdict::Cache {
        v.push_str(" (meant)");
    }
    if w.disturbed {
        v.push_str(", disturbed");
    }
    v
}

/// A size cell: "-" for tests that have none (metadata operations).
pub fn size_cell(bytes: u64) -> String {
    if bytes == 0 {
        "-".to_string()
    } else {
        units::size(bytes)
    }
}

/// The throughput cell: mean ± CI, or "-" for a test that moves no bytes (metadata
/// operations, whose figure is operations per second).
pub fn throughput_cell(r: &TestResult) -> String {
    if r.throughput.mean == 0.0 && r.throughput.max == 0.0 && r.iops.mean > 0.0 {
        return "-".to_string();
    }
    units::mb_s_ci(&r.throughput)
}

/// How the test did its I/O: "psync", "io_uring direct", "sync osync".
pub fn io_cell(r: &TestResult) -> String {
    let mut s = if r.engine.is_empty() {
        "-".to_string()
    } else {
        r.engine.clone()
    };
    if r.direct {
        s.push_str(" direct");
    }
    if r.osync {
        s.push_str(" osync");
    }
    s
}

/// True when any result did its I/O in another way than buffered psync (the plain way): then
/// tables say how, so an O_DIRECT or io_uring figure is not read as a buffered one.
pub fn show_io(results: &[&TestResult]) -> bool {
    results.iter().any(|r| {
        let plain_engine = r.engine.is_empty() || r.engine == "psync";
        !plain_engine || r.direct || r.osync
    })
}

/// True when the result is not ok.
pub fn failed(r: &TestResult) -> bool {
    !r.status.is_ok()
}

/// "write 64m/1m", plus threads and depth when they are not 1: "randread 1g/4k x4 qd32".
pub fn label(r: &TestResult) -> String {
    if r.file_size == 0 && r.record_size == 0 {
        // Metadata tests have no file or record size.
        format!("{}{}", r.test, counts(r.threads, r.iodepth))
    } else {
        format!(
            "{} {}{}",
            r.test,
            sizes(r.file_size, r.record_size),
            counts(r.threads, r.iodepth)
        )
    }
}

/// "1g/4k": a point's file and record size, as every label writes them.
pub fn sizes(file_size: u64, record_size: u64) -> String {
    format!("{}/{}", units::size(file_size), units::size(record_size))
}

/// " x4 qd32": a point's threads and depth, as every label writes them, each only when it
/// is above 1.
pub fn counts(threads: u32, iodepth: u32) -> String {
    let mut s = String::new();
    if threads > 1 {
        s.push_str(&format!(" x{threads}"));
    }
    if iodepth > 1 {
        s.push_str(&format!(" qd{iodepth}"));
    }
    s
}

/// What a note is about, so HTML can colour it and text can order it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoteKind {
    Failed,
    Contradiction,
    Disturbed,
    Unverified,
    Noisy,
    Ranks,
    /// A copy or metadata test's system calls against the kernel's count.
    Syscalls,
}

/// A sentence printed under a table, numbered; the row carries the number.
#[derive(Clone, Debug, PartialEq)]
pub struct Note {
    pub number: usize,
    pub kind: NoteKind,
    pub about: String,
    pub text: String,
    /// The figure that makes the note, for a note folded with others of its kind ("9.3 MiB").
    pub short: String,
}

/// Above this many notes of one routine kind (disturbed, noisy) under one table, they are
/// folded into one note that lists the results, so the notes that need reading stay visible.
pub const FOLD_NOTES: usize = 5;

/// A folded note names at most this many results.
pub const FOLD_LIST: usize = 12;

/// The notes of one result (not yet numbered: `number` is 0).
pub fn result_notes(r: &TestResult) -> Vec<Note> {
    let mut out = Vec::new();
    let mut add = |kind, text: String, short: String| {
        out.push(Note {
            number: 0,
            kind,
            about: label(r),
            text,
            short,
        })
    };
    if failed(r) {
        add(
            NoteKind::Failed,
            format!(
                "failed: {}",
                r.error
                    .clone()
                    .unwrap_or_else(|| "no reason recorded".into())
            ),
            String::new(),
        );
    }
    if let Some(w) = &r.witness {
        if w.contradicts_intent {
            let text = if w.explanation.is_empty() {
                format!(
                    "the witness says {} although the test meant to measure the {}.",
                    w.verdict, r.intent
                )
            } else {
                w.explanation.clone()
            };
            add(NoteKind::Contradiction, text, String::new());
        }
        if w.disturbed {
            add(
                NoteKind::Disturbed,
                format!(
                    "disturbed: {} moved on the device that candor did not cause (another process); \
                     rerun on a quiet machine or a lab filesystem (candor lab create).",
                    units::size_long(w.foreign_device_bytes)
                ),
                units::size_long(w.foreign_device_bytes),
            );
        }
        // A mismatch is the test's `not verified` note; a match, or a check that could not be
        // made, is said in its own.
        if let Some(c) = w
            .syscalls_check
            .as_ref()
            .filter(|c| c.verdict != "mismatch")
        {
            add(NoteKind::Syscalls, c.sentence.clone(), String::new());
        }
        if w.verdict == Verdict::Unverified {
            let why = w
                .unverified_reason
                .clone()
                .unwrap_or_else(|| w.explanation.clone());
            add(
                NoteKind::Unverified,
                format!("not verified: {why}"),
                String::new(),
            );
        }
    }
    // A steady-state window is judged by its own criteria (range and slope, said under the
    // table), and --repeat does not apply to it.
    if r.throughput.n >= 2 && r.throughput.cv > NOISY_CV && r.steady_state.is_none() {
        add(
            NoteKind::Noisy,
            format!(
                "repetitions vary by {} (CV > {}): {}.",
                units::pct(r.throughput.cv),
                units::pct(NOISY_CV),
                noisy_remedy(r)
            ),
            units::pct(r.throughput.cv),
        );
    }
    if let Some(s) = rank_spread(r) {
        add(NoteKind::Ranks, s, String::new());
    }
    out
}

/// What to do about noisy repetitions, from the table of suggestions: more of them only
/// when fewer than five ran (and never under --steady-state, which refuses --repeat).
fn noisy_remedy(r: &TestResult) -> &'static str {
    use candor_model::advice::{Given, InForce, Suggestion};
    let force = InForce {
        given: Given {
            steady_state: r.steady_state.is_some(),
            repeat: r.throughput.n,
            ..Given::default()
        },
        ..InForce::default()
    };
    if Suggestion::MoreRepetitions.fits(&force) {
        "use --repeat 5 or more, and a machine with nothing else running"
    } else {
        "use a machine with nothing else running"
    }
}

/// Notes of a list of results, numbered from `first`; returns the notes and, per result, the
/// numbers that belong to it ("1,2"). Routine notes (disturbed, noisy) are folded into one per
/// kind when there are more than `FOLD_NOTES` of them.
pub fn number_notes(results: &[&TestResult], first: usize) -> (Vec<Note>, Vec<String>) {
    let per: Vec<Vec<Note>> = results.iter().map(|r| result_notes(r)).collect();
    // The folded noisy note asks for more repetitions only when a result it folds ran
    // fewer than the suggestion asks for (candor_model::advice).
    let more_repetitions = results.iter().zip(&per).any(|(r, n)| {
        n.iter().any(|n| n.kind == NoteKind::Noisy) && noisy_remedy(r).contains("--repeat")
    });
    let kinds: Vec<NoteKind> = per.iter().flatten().map(|n| n.kind).collect();
    let count = |k: NoteKind| kinds.iter().filter(|x| **x == k).count();
    let folded: Vec<NoteKind> = [NoteKind::Disturbed, NoteKind::Noisy]
        .into_iter()
        .filter(|k| count(*k) > FOLD_NOTES)
        .collect();
    let mut notes: Vec<Note> = Vec::new();
    let mut refs = Vec::new();
    let mut n = first;
    // How many results each folded note names so far, by kind.
    let mut listed = [1usize; 8];
    for mine in per {
        let mut nums = Vec::new();
        for mut note in mine {
            if folded.contains(&note.kind) {
                match notes.iter_mut().find(|o| o.kind == note.kind) {
                    Some(o) => {
                        listed[note.kind as usize] += 1;
                        if listed[note.kind as usize] <= FOLD_LIST {
                            o.text
                                .push_str(&format!(", {} ({})", note.about, note.short));
                        }
                        nums.push(o.number.to_string());
                    }
                    None => {
                        let lead = match note.kind {
                            NoteKind::Disturbed => "disturbed: the device moved data that candor did not cause (another process) during",
                            _ => "repetitions vary by more than 10% (CV) in",
                        };
                        note.number = n;
                        nums.push(n.to_string());
                        n += 1;
                        note.text = format!("{lead} {} ({})", note.about, note.short);
                        notes.push(note);
                    }
                }
                continue;
            }
            note.number = n;
            nums.push(n.to_string());
            n += 1;
            notes.push(note);
        }
        refs.push(nums.join(","));
    }
    for note in notes.iter_mut().filter(|o| folded.contains(&o.kind)) {
        let k = count(note.kind);
        note.about = format!("{k} results");
        if k > FOLD_LIST {
            note.text.push_str(&format!(
                " and {} more (their rows carry this note's number)",
                k - FOLD_LIST
            ));
        }
        let noisy_fix = if more_repetitions {
            ". Use --repeat 5 or more, and a machine with nothing else running."
        } else {
            ". Use a machine with nothing else running."
        };
        note.text.push_str(match note.kind {
            NoteKind::Disturbed => {
                ". Rerun on a quiet machine or a lab filesystem (candor lab create)."
            }
            _ => noisy_fix,
        });
    }
    (notes, refs)
}

/// Results of one target, with what the run recorded about it.
pub struct Group<'a> {
    pub path: String,
    pub info: Option<&'a TargetInfo>,
    pub results: Vec<&'a TestResult>,
}

/// Results grouped by target, in the order of `doc.targets`, then any target only the
/// results name.
pub fn groups(doc: &RunDoc) -> Vec<Group<'_>> {
    let mut out: Vec<Group> = doc
        .targets
        .iter()
        .map(|t| Group {
            path: t.path.clone(),
            info: Some(t),
            results: Vec::new(),
        })
        .collect();
    for r in &doc.results {
        match out.iter_mut().find(|g| g.path == r.target) {
            Some(g) => g.results.push(r),
            None => out.push(Group {
                path: r.target.clone(),
                info: None,
                results: vec![r],
            }),
        }
    }
    out.retain(|g| !g.results.is_empty() || g.info.is_some());
    out
}

/// What a loop device sits on, read back from its description ("loop device backed by FILE on
/// DISK (MODEL)"): the backing file and, when the run found it, the disk and its model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoopBacking {
    pub file: String,
    pub disk: Option<(String, String)>,
}

/// The backing of a loop device; None for any other device.
pub fn loop_backing(d: &BlockDevice) -> Option<LoopBacking> {
    if !d.name.starts_with("loop") {
        return None;
    }
    // A description written without the backing file (an older or hand-made result) leaves
    // only the name to go by.
    let rest = d.model.strip_prefix("loop device backed by ").unwrap_or("");
    // The file's path may itself contain " on "; the disk part is the last one.
    let disk = rest.rfind(" on ").and_then(|i| {
        let tail = &rest[i + 4..];
        let (name, model) = match tail.split_once(" (") {
            Some((n, m)) => (n, m.strip_suffix(')').unwrap_or(m)),
            None => (tail, ""),
        };
        (!name.is_empty() && !name.contains(' ')).then(|| (i, name.to_string(), model.to_string()))
    });
    Some(match disk {
        Some((i, name, model)) => LoopBacking {
            file: rest[..i].to_string(),
            disk: Some((name, model)),
        },
        None => LoopBacking {
            file: rest.to_string(),
            disk: None,
        },
    })
}

/// The disk a device's figures come from: the disk beneath a loop (when known), dm or md
/// device, or the device itself. Filesystems made side by side on one disk share it.
pub fn underlying_disk(d: &BlockDevice) -> String {
    if let Some(b) = loop_backing(d) {
        return b.disk.map(|(n, _)| n).unwrap_or_else(|| d.name.clone());
    }
    let beneath: Vec<&str> = d
        .counted
        .iter()
        .filter(|c| **c != d.name)
        .map(|c| c.as_str())
        .collect();
    if beneath.is_empty() {
        d.name.clone()
    } else {
        beneath.join("+")
    }
}

/// "rotational" or "SSD": what the kernel reports. Loop devices report their own flag (1 on
/// most kernels), so for them only the backing disk's flag, when the run found the disk, says
/// anything about the hardware.
fn kind(rotational: bool) -> &'static str {
    if rotational {
        "rotational"
    } else {
        "SSD"
    }
}

/// The device in words, without its size and scheduler: "QEMU HARDDISK, SSD", "loop device
/// backed by /lab/ext4.img on vda (virtio_blk, rotational)", "loop device backed by /x.img".
pub fn device_description(d: &BlockDevice) -> String {
    if let Some(b) = loop_backing(d) {
        let mut s = "loop device".to_string();
        if !b.file.is_empty() {
            s.push_str(&format!(" backed by {}", b.file));
        }
        if let Some((disk, model)) = b.disk {
            if model.is_empty() {
                s.push_str(&format!(" on {disk} ({})", kind(d.rotational)));
            } else {
                s.push_str(&format!(" on {disk} ({model}, {})", kind(d.rotational)));
            }
        }
        return s;
    }
    if d.model.is_empty() {
        kind(d.rotational).to_string()
    } else {
        format!("{}, {}", d.model, kind(d.rotational))
    }
}

/// "ext4 (rw,relatime) on vda: QEMU HARDDISK, SSD, 64 GiB, mq-deadline".
pub fn target_line(t: &TargetInfo) -> String {
    let mut s = if t.fs_type.is_empty() {
        "unknown filesystem".to_string()
    } else {
        t.fs_type.clone()
    };
    if !t.mount_options.is_empty() {
        s.push_str(&format!(" ({})", t.mount_options));
    }
    match &t.device {
        Some(d) => {
            s.push_str(&format!(" on {}", d.name));
            let counted: Vec<&String> = d.counted.iter().filter(|c| **c != d.name).collect();
            if !counted.is_empty() {
                s.push_str(&format!(
                    " (counted on {})",
                    counted
                        .iter()
                        .map(|c| c.as_str())
                        .collect::<Vec<_>>()
                        .join("+")
                ));
            }
            let mut parts = vec![device_description(d)];
            if d.size_bytes > 0 {
                parts.push(units::size_long(d.size_bytes));
            }
            if !d.scheduler.is_empty() {
                parts.push(format!("scheduler {}", d.scheduler));
            }
            s.push_str(&format!(": {}", parts.join(", ")));
        }
        None => s.push_str(", no block device"),
    }
    s
}

/// What a sweep varies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Axis {
    Threads,
    Depth,
}

impl Axis {
    pub fn name(self) -> &'static str {
        match self {
            Axis::Threads => "threads",
            Axis::Depth => "queue depth",
        }
    }

    /// A point on the axis in words: "1 thread", "4 threads", "QD 16".
    pub fn point(self, n: u32) -> String {
        match self {
            Axis::Threads if n == 1 => "1 thread".to_string(),
            Axis::Threads => format!("{n} threads"),
            Axis::Depth => format!("QD {n}"),
        }
    }

    pub fn value(self, r: &TestResult) -> u32 {
        match self {
            Axis::Threads => r.threads,
            Axis::Depth => r.iodepth,
        }
    }
}

/// Results that differ only along one axis, sorted along it.
pub struct Series<'a> {
    pub axis: Axis,
    pub title: String,
    pub points: Vec<&'a TestResult>,
}

/// Every sweep among the results: results equal in everything but the axis, with at least two
/// distinct values along it.
pub fn series<'a>(results: &[&'a TestResult], axis: Axis) -> Vec<Series<'a>> {
    let key = |r: &TestResult| {
        let (t, d) = match axis {
            Axis::Threads => (0, r.iodepth),
            Axis::Depth => (r.threads, 0),
        };
        (
            r.target.clone(),
            r.test.clone(),
            r.engine.clone(),
            r.file_size,
            r.record_size,
            t,
            d,
            r.direct,
            r.osync,
        )
    };
    // In the order the keys first came, found through an index (a result with tens of
    // thousands of results is grouped in one pass, not one scan per result).
    let mut out: Vec<(_, Vec<&'a TestResult>)> = Vec::new();
    let mut index: std::collections::BTreeMap<_, usize> = std::collections::BTreeMap::new();
    for r in results.iter().copied().filter(|r| !failed(r)) {
        let k = key(r);
        match index.get(&k) {
            Some(&i) => {
                let (_, v): &mut (_, Vec<&'a TestResult>) = &mut out[i];
                v.push(r)
            }
            None => {
                index.insert(k.clone(), out.len());
                out.push((k, vec![r]));
            }
        }
    }
    out.into_iter()
        .filter_map(|(_, mut v)| {
            v.sort_by_key(|r| axis.value(r));
            v.dedup_by_key(|r| axis.value(r));
            if v.len() < 2 {
                return None;
            }
            let r = v[0];
            let mut title = format!("{} {}", r.test, sizes(r.file_size, r.record_size));
            if !r.engine.is_empty() {
                title.push_str(&format!(" {}", r.engine));
            }
            // The axis's own figure is left out: it varies along the series.
            title.push_str(&match axis {
                Axis::Threads => counts(1, r.iodepth),
                Axis::Depth => counts(r.threads, 1),
            });
            if r.direct {
                title.push_str(" direct");
            }
            Some(Series {
                axis,
                title,
                points: v,
            })
        })
        .collect()
}

/// Where a sweep stops scaling: the index of the last point reached while every step gained at
/// least `SCALING_GAIN`, or None when every step gained (still scaling at the largest point).
pub fn scaling_stop(values: &[f64]) -> Option<usize> {
    for i in 1..values.len() {
        if values[i - 1] <= 0.0 || values[i] < values[i - 1] * (1.0 + SCALING_GAIN) {
            return Some(i - 1);
        }
    }
    None
}

/// One sentence on how a sweep scaled.
pub fn scaling_sentence(s: &Series) -> String {
    let values: Vec<f64> = s.points.iter().map(|r| r.throughput.mean).collect();
    let first = values[0];
    let at = |i: usize| s.axis.point(s.axis.value(s.points[i]).max(1));
    match scaling_stop(&values) {
        None => format!(
            "{}: still scaling at {} ({} of {}), the largest tried.",
            s.title,
            at(values.len() - 1),
            units::ratio(values[values.len() - 1] / first),
            at(0)
        ),
        Some(0) => format!(
            "{}: does not scale: {} gains less than {} over {}.",
            s.title,
            at(1),
            units::pct(SCALING_GAIN),
            at(0)
        ),
        Some(i) => format!(
            "{}: scales up to {} ({} of {}); beyond that each step gains less than {}.",
            s.title,
            at(i),
            units::ratio(values[i] / first),
            at(0),
            units::pct(SCALING_GAIN)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_noisy_note_asks_for_repetitions_only_when_fewer_than_five_ran() {
        let mut r = TestResult {
            test: "read".into(),
            ..Default::default()
        };
        r.throughput.n = 3;
        r.throughput.cv = 0.2;
        let text = |r: &TestResult| {
            result_notes(r)
                .into_iter()
                .find(|n| n.kind == NoteKind::Noisy)
                .expect("a noisy note")
                .text
        };
        assert!(
            text(&r)
                .ends_with(": use --repeat 5 or more, and a machine with nothing else running."),
            "{}",
            text(&r)
        );
        // Five ran already: more of them is not the remedy the note can give.
        r.throughput.n = 5;
        assert!(
            text(&r).ends_with(": use a machine with nothing else running."),
            "{}",
            text(&r)
        );
        // Folded into one note, the same.
        let many: Vec<TestResult> = (0..FOLD_NOTES + 2).map(|_| r.clone()).collect();
        let refs: Vec<&TestResult> = many.iter().collect();
        let (notes, _) = number_notes(&refs, 1);
        assert_eq!(notes.len(), 1);
        assert!(
            notes[0]
                .text
                .ends_with(". Use a machine with nothing else running."),
            "{}",
            notes[0].text
        );
    }

    #[test]
    fn scaling_stops_where_a_step_gains_too_little() {
        assert_eq!(scaling_stop(&[100.0, 190.0, 350.0, 360.0, 365.0]), Some(2));
        assert_eq!(scaling_stop(&[100.0, 105.0]), Some(0));
        assert_eq!(scaling_stop(&[100.0, 200.0, 400.0]), None);
    }

    #[test]
    fn a_loop_device_is_named_by_its_backing_not_its_rotational_flag() {
        let d = BlockDevice {
            name: "loop2".into(),
            counted: vec!["loop2".into()],
            model: "loop device backed by /tmp/a on b/btrfs.img on vda (virtio_blk)".into(),
            rotational: true,
            ..Default::default()
        };
        let b = loop_backing(&d).expect("a loop device");
        assert_eq!(b.file, "/tmp/a on b/btrfs.img");
        assert_eq!(b.disk, Some(("vda".into(), "virtio_blk".into())));
        assert_eq!(underlying_disk(&d), "vda");
        assert_eq!(
            device_description(&d),
            "loop device backed by /tmp/a on b/btrfs.img on vda (virtio_blk, rotational)"
        );
        // Without the backing in its description: still a loop device, nothing more.
        let bare = BlockDevice {
            model: String::new(),
            ..d.clone()
        };
        assert_eq!(device_description(&bare), "loop device");
        assert_eq!(underlying_disk(&bare), "loop2");
        let disk = BlockDevice {
            name: "sda".into(),
            model: "ST4000".into(),
            rotational: true,
            ..Default::default()
        };
        assert_eq!(loop_backing(&disk), None);
        assert_eq!(device_description(&disk), "ST4000, rotational");
    }

    #[test]
    fn device_throughput_follows_the_device_share() {
        let mut r = TestResult {
            test: "read".into(),
            ..Default::default()
        };
        r.throughput.mean = 1000e6;
        assert_eq!(device_bps(&r), None);
        let mut w = candor_model::Witness::default();
        w.app.read_bytes = 100;
        w.device = Some(candor_model::DeviceIo {
            read_bytes: 25,
            write_bytes: 999,
            ..Default::default()
        });
        r.witness = Some(w);
        assert_eq!(device_bps(&r), Some(250e6));
    }

    #[test]
    fn a_loop_device_through_the_host_cache_shows_the_disk_under_it() {
        let mut r = TestResult {
            test: "write".into(),
            ..Default::default()
        };
        r.throughput.mean = 5595e6;
        let mut w = candor_model::Witness::default();
        w.app.write_bytes = 100 << 20;
        w.device = Some(candor_model::DeviceIo {
            write_bytes: 100 << 20,
            write_bytes_in_window: 100 << 20,
            ..Default::default()
        });
        w.extra.facts = Some(candor_model::Facts {
            loop_device: Some(candor_model::LoopFacts {
                device: "loop0".into(),
                backing_disk: Some("vda".into()),
                backing_window: Some(candor_model::DiskDelta {
                    write_bytes: 1 << 20,
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        });
        r.witness = Some(w);
        assert_eq!(device_cell(&r), "5595 (vda 56.0)");
        // With direct I/O the loop device's requests are the disk's: one figure.
        if let Some(l) = r
            .witness
            .as_mut()
            .and_then(|w| w.extra.facts.as_mut())
            .and_then(|f| f.loop_device.as_mut())
        {
            l.direct_io = true;
        }
        assert_eq!(device_cell(&r), "5595");
    }

    #[test]
    fn ranks_are_read_in_either_shape() {
        let r = TestResult {
            ranks: candor_model::Spread::from_saved(serde_json::json!([
                {"rank": 0, "throughput": {"mean": 2e8}},
                {"rank": 1, "bytes": 1e8, "seconds": 1.0},
            ])),
            ..Default::default()
        };
        let means: Vec<(u64, f64)> = rank_rates(&r)
            .unwrap_or_default()
            .iter()
            .map(|x| (x.rank, x.mean))
            .collect();
        assert_eq!(means, vec![(0, 2e8), (1, 1e8)]);
        let s = rank_spread(&r).unwrap_or_default();
        assert!(s.contains("slowest rank 1 at 100 MB/s"), "{s}");
        // The shape an MPI run saves: an object with per_rank, lagging ranks and notes.
        let r = TestResult {
            ranks: candor_model::Spread::from_saved(serde_json::json!({
                "ranks": 2,
                "per_rank": [
                    {"rank": 0, "node": "n1", "throughput": {"mean": 3e8, "ci95": [2.9e8, 3.1e8], "samples": [2.9e8, 3.1e8]}},
                    {"rank": 1, "node": "n2", "throughput": {"mean": 2e8}},
                ],
                "lagging_ranks": [1],
                "notes": ["on n2 the reads were served by the page cache"],
            })),
            ..Default::default()
        };
        let s = rank_spread(&r).unwrap_or_default();
        assert_eq!(
            s,
            "2 ranks: slowest rank 1 (n2) at 200 MB/s, fastest rank 0 (n1) at 300 MB/s; \
             lagging (below 90% of the median rank): 1. On n2 the reads were served by the page cache."
        );
    }

    #[test]
    fn many_routine_notes_fold_into_one_and_the_rest_stay() {
        let mk = |test: &str, disturbed: bool, contradicts: bool| TestResult {
            test: test.into(),
            file_size: 1 << 20,
            record_size: 4096,
            witness: Some(candor_model::Witness {
                verdict: candor_model::Verdict::Device,
                disturbed,
                foreign_device_bytes: 2 << 20,
                contradicts_intent: contradicts,
                explanation: "explained".into(),
                ..Default::default()
            }),
            ..Default::default()
        };
        let rs: Vec<TestResult> = (0..7)
            .map(|i| mk(if i == 3 { "read" } else { "write" }, true, i == 3))
            .collect();
        let refs: Vec<&TestResult> = rs.iter().collect();
        let (notes, nums) = number_notes(&refs, 1);
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert_eq!(notes[0].kind, NoteKind::Disturbed);
        assert_eq!(notes[0].about, "7 results");
        assert!(
            notes[0].text.contains("write 1m/4k (2 MiB)"),
            "{}",
            notes[0].text
        );
        assert_eq!(notes[1].kind, NoteKind::Contradiction);
        assert_eq!(nums[0], "1");
        assert_eq!(nums[3], "2,1");
        // Few of them: one note each.
        let (notes, _) = number_notes(&refs[..3], 1);
        assert_eq!(notes.len(), 3);
    }
}
