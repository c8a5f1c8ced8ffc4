//! The explanation: one plain sentence saying where a figure's bytes came from and what
//! the figure therefore is, the remedy when that is not what the test meant, and a note
//! when the device was disturbed (docs/witness.md, "Explanations").

use crate::rules::{Attribution, Judgement};
use candor_model::units::{format_bytes, ByteStyle};
use candor_model::{Facts, Intent, Operations, Verdict};

/// A share as a whole percentage that never rounds a part to 0% or 100%.
pub(crate) fn pct(x: f64) -> String {
    candor_model::units::percent(x, candor_model::units::PercentStyle::WholeInside)
}

#[cfg(test)]
use candor_model::advice::three_ram;

pub(crate) fn explain(f: &Facts, j: &Judgement, a: &Attribution, share: f64, dev: &str) -> String {
    // A loop device that goes through the host's page cache: the shares are of what the
    // disk under it moved (rules.rs), while the row's device counters are the loop device's
    // own. The sentences name that disk, so the two never read as one figure.
    let under_loop = f
        .loop_device
        .as_ref()
        .filter(|l| {
            crate::traps::loop_through_memory(l)
                && !crate::traps::loop_in_memory(l)
                && l.backing_window.is_some()
        })
        .map(|l| {
            format!(
                "the disk under the loop device ({})",
                l.backing_disk.as_deref().unwrap_or("its file's disk")
            )
        });
    // "the device (vda)", or "the disk under the loop device (vda)".
    let named = format!("the device ({dev})");
    let name = dev;
    let dev = under_loop.as_deref().unwrap_or(&named);
    let the_device = under_loop.as_deref().unwrap_or("the device");
    let reads = f.app_read > 0 && f.app_write == 0;
    let writes = f.app_write > 0 && f.app_read == 0;
    // What served the reads that did not come from the device: under a loop device through
    // the host's page cache, that cache too (alone for O_DIRECT reads, which bypass the
    // page cache above the loop device).
    let memory = match (under_loop.is_some(), f.direct) {
        (true, true) => "the host's page cache under the loop device",
        (true, false) => "memory (the page cache, or the host's page cache under the loop device)",
        (false, _) => "the page cache",
    };
    let hit = j.cache_hit_ratio.unwrap_or(0.0);
    let flushed = j.flushed_in_window.unwrap_or(0.0);
    use candor_model::advice::{remedy, Suggestion as S};
    let force = f.in_force();
    let fix = |alternatives: &[S]| remedy(alternatives, &force, f.ram_bytes);
    let device_fix = [S::Direct, S::LargeFile];
    let flush_fix = [S::IncludeFlush, S::Direct];
    let ops = j.operations.as_ref();
    let waited = ops.and_then(|o| o.waited_share);
    let by_ops = if writes {
        ops.and_then(|o| write_sentence(f, j, o, dev))
    } else if !reads {
        ops.and_then(|o| mixed_sentence(f, j, o, dev))
    } else {
        None
    };
    let mut s = match (j.verdict, reads, writes) {
        _ if by_ops.is_some() => by_ops.unwrap_or_default(),
        (Verdict::Device, true, _) if ops.is_some_and(|o| o.pipelined) => format!(
            "{} of the bytes read came from {dev}, in requests of {} on average, and {} of the reads found their data already in memory: readahead kept the device busy ahead of them, so this is the device's sequential throughput, not the time of single reads.",
            pct(1.0 - hit),
            format_bytes(ops.map_or(0.0, |o| o.request_bytes) as u64, ByteStyle::WITNESS),
            pct(ops.and_then(|o| o.memory_share).unwrap_or(0.0))
        ),
        (Verdict::Device, true, _) if waited.is_some() => format!(
            "{} of the bytes read came from {dev} and {} of the reads waited for it: this is the device's figure.",
            pct(1.0 - hit),
            pct(waited.unwrap_or(0.0))
        ),
        (Verdict::Device, true, _) => format!(
            "{} of the bytes read came from {dev}: this is the device's figure.",
            pct(1.0 - hit)
        ),
        (Verdict::Mixed, true, _) if j.mixed_by_operations => {
            let o = ops.cloned().unwrap_or_default();
            format!(
                "{} of the bytes read came from {dev}, but only {} of the {} reads waited for it ({} requests of {} on average): the other {} found their data already in memory, read in around an earlier request, so the figure is not the device's rate for single reads.",
                pct(1.0 - hit),
                pct(o.waited_share.unwrap_or(0.0)),
                o.ops,
                o.requests,
                format_bytes(o.request_bytes as u64, ByteStyle::WITNESS),
                pct(o.memory_share.unwrap_or(0.0))
            )
        }
        (Verdict::Device, _, true) => {
            let mut s = format!(
                "{} of the written bytes reached {dev} inside the timed region: this is the device's figure",
                pct(flushed)
            );
            if let Some(wa) = j.write_amplification.filter(|w| *w >= 1.1 && !j.disturbed) {
                s.push_str(&format!(", and the device wrote {wa:.2}x the application's bytes"));
            }
            s.push('.');
            s
        }
        (Verdict::Device, _, _) => format!(
            "{} of the bytes read and written moved to or from {dev} inside the timed region: this is the device's figure.",
            pct(share)
        ),
        // A loop device over a file in memory: its trap says where the bytes went.
        (Verdict::Cache, true, _) if loop_memory(f) => format!(
            "The bytes read came from the loop device ({name}), whose file is in memory: none came from storage, so this is memory speed."
        ),
        (Verdict::Cache, _, true) if loop_memory(f) => format!(
            "The written bytes reached the loop device ({name}), whose file is in memory: none reached storage, so this is memory speed."
        ),
        (Verdict::Cache, true, _) if under_loop.is_some() => format!(
            "{} of these reads came from {memory}, not from {the_device}: this is memory speed.",
            pct(hit)
        ),
        (Verdict::Cache, true, _) => {
            format!("{} of these reads came from the page cache: this is memory speed.", pct(hit))
        }
        (Verdict::Cache, _, true) if write_in_window(f, j) == 0 => format!("None of the written bytes reached {the_device} inside the timed region: {}, so this is memory speed.", absorbed(under_loop.is_some(), "them")),
        (Verdict::Cache, _, true) => format!(
            "Only {} of the written bytes reached {the_device} inside the timed region: {}, so this is memory speed.",
            pct(flushed),
            absorbed(under_loop.is_some(), "the rest")
        ),
        (Verdict::Cache, _, _) if share == 0.0 => format!(
            "None of the bytes read and written reached {the_device} inside the timed region: this is memory speed."
        ),
        (Verdict::Cache, _, _) => format!(
            "Only {} of the bytes read and written reached {the_device} inside the timed region: this is memory speed.",
            pct(share)
        ),
        (_, true, _) => format!(
            "{} of these reads came from {memory} and {} from {dev}: the figure mixes memory and device speed.",
            pct(hit),
            pct(1.0 - hit)
        ),
        (_, _, true) => format!(
            "{} of the written bytes reached {dev} inside the timed region and the rest waited in the page cache: the figure mixes memory and device speed.",
            pct(flushed)
        ),
        _ => format!(
            "{} of the bytes read and written moved to or from {dev} inside the timed region: the figure mixes memory and device speed.",
            pct(share)
        ),
    };
    // A loop device with direct I/O behaves like a disk: its trap stays in the JSON, and
    // the sentence already names the device.
    let loop_direct = f.loop_device.as_ref().is_some_and(|l| l.direct_io);
    for t in &j.traps {
        if t.kind == candor_model::TrapKind::LoopDevice && loop_direct {
            continue;
        }
        s.push(' ');
        s.push_str(&t.sentence);
    }
    // Discards the filesystem made inside the timed region: the mount option is the fact.
    if let Some(d) = crate::traps::discarded(f) {
        s.push(' ');
        s.push_str(&d);
        if let Some(fix) = fix(&[S::MountWithoutDiscard]) {
            s.push(' ');
            s.push_str(&fix);
        }
    }
    // Compressible buffers the filesystem compressed (the stored-fewer trap names it): the
    // figure is the compression's, whatever the verdict, and the remedy is the buffers.
    let compressed = crate::traps::compression_explains(f).is_some()
        && j.traps
            .iter()
            .any(|t| t.kind == candor_model::TrapKind::StoredFewer);
    if compressed {
        if let Some(fix) = fix(&[S::RandomBuffers]) {
            s.push(' ');
            s.push_str(&fix);
        }
    } else if j.contradicts_intent {
        let both = f.app_read > 0 && f.app_write > 0;
        // The alternatives for each case; only those that fit the options in force are
        // said (candor_model::advice).
        let alternatives: &[S] = match (f.intent, f.is_write || writes) {
            (Intent::Cache, _) => &[S::CacheSmallFile],
            // A mix whose writes stayed in the page cache: the flush; one whose reads did not
            // wait: a file the cache cannot hold, or O_DIRECT.
            (_, true) if both && !f.direct && mix_writes_stayed(f, j) => &flush_fix,
            (_, true) if both => &device_fix,
            _ if loop_cached(f, a) && loop_memory(f) => &[S::LoopOnDisk],
            // Writes that reached the loop device but not the disk under its file.
            (_, true)
                if !reads
                    && loop_cached(f, a)
                    && (f.direct || f.writes_through() || f.flush_in_timing) =>
            {
                &[S::LoopDirectIo]
            }
            // O_DIRECT and O_SYNC writes that did not wait: the cause is named above.
            (_, true) if !reads && (f.direct || f.writes_through()) => &[],
            (_, true) if !reads => &flush_fix,
            _ if j.mixed_by_operations => &[S::FadviseRandom, S::Direct],
            _ if loop_cached(f, a) => &[S::LoopDirectIo],
            _ if j.verdict == Verdict::Device => &[],
            _ => &device_fix,
        };
        if let Some(fix) = fix(alternatives) {
            s.push(' ');
            s.push_str(&fix);
        }
    }
    if let Some(fact) = written_through(f, j) {
        s = format!("{fact} {s}");
    }
    if j.disturbed {
        let what = if a.unseen_read > 0 {
            format!(
                "traffic of other processes ({} of it reads that no process the witness could see accounts for: one that began and ended between its samples, or a kernel thread)",
                format_bytes(a.unseen_read, ByteStyle::WITNESS)
            )
        } else if a.exact || f.others_io.is_some() {
            "traffic of other processes".to_string()
        } else {
            "traffic that candor's own I/O does not explain (another process, or filesystem metadata beyond the allowance)".to_string()
        };
        s.push_str(&format!(
            " The device also carried {} of {what}: rerun when the device is idle.",
            format_bytes(j.foreign_device_bytes, ByteStyle::WITNESS)
        ));
    }
    s
}

/// What made writes wait for their own request besides O_DIRECT: O_SYNC, or the mount
/// option `sync`.
pub(crate) fn sync_flag(f: &Facts) -> &'static str {
    if f.osync {
        "O_SYNC"
    } else {
        "mount option sync"
    }
}

/// A filesystem mounted `sync` that wrote the test's writes through: the fact, said before
/// the figures. That every write reached the device is said only of a row whose verdict
/// and operations show it; otherwise the mount's rule alone.
fn written_through(f: &Facts, j: &Judgement) -> Option<String> {
    if f.osync || f.app_write == 0 || !f.writes_through() {
        return None;
    }
    let fs = f.fs.as_ref()?;
    let opt = fs.writes_through()?;
    let waited = j
        .operations
        .as_ref()
        .and_then(|o| o.writes.as_deref().or(Some(o)))
        .and_then(|o| o.waited_share)
        .unwrap_or(0.0);
    let memory = j
        .traps
        .iter()
        .any(|t| t.kind == candor_model::TrapKind::FasterThanDevice);
    Some(
        if j.verdict == Verdict::Device
            && waited >= crate::rules::DEVICE_SHARE_MIN
            && !memory
            && f.app_read == 0
        {
            format!(
                "{} is mounted {opt}: every write reached the device before write() returned.",
                fs.fs_type
            )
        } else {
            format!(
                "{} is mounted {opt}: each write is written through to the device before write() returns.",
                fs.fs_type
            )
        },
    )
}

/// What took the written bytes that did not reach the device: the page cache, and under a
/// loop device that goes through the host's page cache, that cache too.
fn absorbed(under_loop: bool, what: &str) -> String {
    if under_loop {
        format!("the page cache and the host's page cache under the loop device absorbed {what}")
    } else {
        format!("the page cache absorbed {what}")
    }
}

fn us(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0} us")
    } else {
        format!("{x:.1} us")
    }
}

/// The sentence of a write test whose operations were reconciled (docs/witness.md,
/// "Operations": what waiting on the device means for each kind of write).
fn write_sentence(f: &Facts, j: &Judgement, o: &Operations, dev: &str) -> Option<String> {
    let flushed = pct(j.flushed_in_window.unwrap_or(0.0));
    let reached = format!("{flushed} of the written bytes reached {dev} inside the timed region");
    let waited = o.waited_share.unwrap_or(0.0);
    let held = |t: f64| {
        format!(
            "{} of the writes were held back until writeback caught up, {} of the timed region",
            pct(waited),
            pct(t)
        )
    };
    let s = match (o.write_mode.as_deref()?, j.verdict) {
        (mode @ ("direct" | "sync"), Verdict::Device) => {
            let flag = if mode == "direct" { "O_DIRECT" } else { sync_flag(f) };
            let mut s = format!(
                "{reached} and {} of the {} writes ({flag}) waited for it",
                pct(waited),
                o.ops
            );
            // Completed at memory speed: the trap below says by what.
            if j
                .traps
                .iter()
                .any(|t| t.kind == candor_model::TrapKind::FasterThanDevice)
            {
                s.push_str(", but at memory speed: this is not a storage device's figure");
            } else {
                s.push_str(": this is the device's figure");
            }
            if let Some(wa) = j.write_amplification.filter(|w| *w >= 1.1 && !j.disturbed) {
                s.push_str(&format!(", and the device wrote {wa:.2}x the application's bytes"));
            }
            s.push('.');
            s
        }
        (mode @ ("direct" | "sync"), Verdict::Mixed) if j.mixed_by_operations => {
            let flag = if mode == "direct" { "O_DIRECT" } else { sync_flag(f) };
            let cause = if f.loop_device.as_ref().is_some_and(|l| !l.direct_io) {
                "a loop device whose file is in the host's page cache completed them"
            } else {
                "something above the device completed them (a filesystem that takes these writes through its page cache, or a volatile write cache in front of the device)"
            };
            let quick = o
                .waited_above_us
                .map(|b| format!(" in less than {}", us(b)))
                .unwrap_or_default();
            format!(
                "{reached}, but only {} of the {} writes ({flag}) waited for it ({} requests of {} on average): the other {} returned{quick}, faster than its requests: {cause}, so the figure is not the device's rate for single writes.",
                pct(waited),
                o.ops,
                o.requests,
                format_bytes(o.request_bytes as u64, ByteStyle::WITNESS),
                pct(1.0 - waited)
            )
        }
        ("buffered", v) if f.flush_in_timing => {
            let t = o.waited_time_share?;
            let flush = o.flush_share.unwrap_or(0.0);
            let mut parts = vec![format!("{} in the flush", pct(flush))];
            if waited > 0.0 {
                parts.push(format!(
                    "{} in the {} of the writes that writeback held back",
                    pct((t - flush).max(0.0)),
                    pct(waited)
                ));
            }
            let tail = match v {
                Verdict::Device => "this is the device's figure, with the copying in it",
                Verdict::Cache => "this is memory speed",
                _ => "the figure mixes memory and device speed",
            };
            format!(
                "{reached}, and the timed region spent {} of its time waiting for the device ({}) and the rest copying into the page cache: {tail}.",
                pct(t),
                parts.join(", ")
            )
        }
        ("buffered", Verdict::Cache) if j.mixed_by_operations => format!(
            "No write waited for {dev}: the page cache took them all at memory speed, so this is memory speed, although the kernel's flushers wrote {flushed} of the bytes to the device meanwhile."
        ),
        ("buffered", Verdict::Mixed) => format!(
            "{reached} and {}: the figure mixes memory and device speed.",
            held(o.waited_time_share.unwrap_or(0.0))
        ),
        ("buffered", Verdict::Device) => format!(
            "{reached} and {}: this is the device's figure.",
            held(o.waited_time_share.unwrap_or(0.0))
        ),
        _ => return None,
    };
    Some(s)
}

/// The sentence of a test that reads and writes, each direction reconciled apart; its
/// writes said as writes of their kind are judged (O_DIRECT and O_SYNC by the writes that
/// waited, buffered by their bytes and the time they spent waiting for the device).
fn mixed_sentence(f: &Facts, j: &Judgement, o: &Operations, dev: &str) -> Option<String> {
    let (r, w) = (o.reads.as_deref()?, o.writes.as_deref()?);
    let rw = crate::rules::reads_waited(j, r)?;
    let ww = crate::rules::writes_reached(f, j, w)?;
    let flushed = j.flushed_in_window.unwrap_or(0.0);
    let held = w.waited_share.unwrap_or(0.0);
    let t = w.waited_time_share.unwrap_or(0.0);
    let writes = match w.write_mode.as_deref() {
        Some("direct") | Some("sync") => format!("{} waited for it", pct(ww)),
        _ if f.flush_in_timing => {
            let mut parts = vec![format!("{} in the flush", pct(w.flush_share.unwrap_or(0.0)))];
            if held > 0.0 {
                parts.push(format!("{} held back by writeback", pct(held)));
            }
            format!(
                "{} of their bytes reached it inside the timed region, and they spent {} of their time waiting for it ({}) and the rest copying into the page cache",
                pct(flushed),
                pct(t),
                parts.join(", ")
            )
        }
        _ if ww == 0.0 => {
            let mut s =
                "none waited for it: the page cache took them at memory speed".to_string();
            if flushed > 0.0 {
                s.push_str(&format!(
                    ", although the kernel's flushers wrote {} of their bytes to the device meanwhile",
                    pct(flushed)
                ));
            }
            s
        }
        _ => format!(
            "{} were held back until writeback caught up, {} of their time, and {} of their bytes reached it inside the timed region",
            pct(held),
            pct(t),
            pct(flushed)
        ),
    };
    let tail = match j.verdict {
        Verdict::Device => "this is the device's figure",
        Verdict::Cache => "this is memory speed",
        _ => "the figure mixes memory and device speed",
    };
    Some(format!(
        "Of the {} reads, {} waited for {dev} and {} were served from memory; of the {} writes, {writes}: {tail}.",
        r.ops,
        pct(rw),
        pct(1.0 - rw),
        w.ops,
    ))
}

/// A mix whose writes did not reach the device as writes of their kind do.
fn mix_writes_stayed(f: &Facts, j: &Judgement) -> bool {
    j.operations
        .as_ref()
        .and_then(|o| o.writes.as_deref())
        .and_then(|w| crate::rules::writes_reached(f, j, w))
        .unwrap_or(j.flushed_in_window.unwrap_or(0.0))
        < crate::rules::DEVICE_SHARE_MIN
}

/// The loop device's file lies in memory (tmpfs).
fn loop_memory(f: &Facts) -> bool {
    f.loop_device
        .as_ref()
        .is_some_and(crate::traps::loop_in_memory)
}

/// The loop device's traffic was partly the host's page cache (its trap says so).
fn loop_cached(f: &Facts, a: &Attribution) -> bool {
    crate::traps::loop_disk_share(f, a.own_read, a.own_write_window)
        .is_some_and(|s| s < crate::rules::DEVICE_SHARE_MIN)
}

fn write_in_window(f: &Facts, j: &Judgement) -> u64 {
    (j.flushed_in_window.unwrap_or(0.0) * f.app_write as f64).round() as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::RAM;

    use crate::rules::judge;
    use crate::testkit::{buffered_write, direct_write, random_read, read_facts, write_facts, MIB};
    use candor_model::advice::{conflict, Given};
    use candor_model::Fadvise;

    /// Facts of every kind of outcome the rules give a remedy for.
    fn outcomes() -> Vec<(&'static str, Facts)> {
        let mut cpu_bound = buffered_write(0, 0.05, true, 16 * MIB);
        cpu_bound.cpu_seconds = Some(cpu_bound.timed_seconds);
        cpu_bound.device_window.io_ticks_ms = 0;
        let mut copy = write_facts(64 * MIB, 0, 64 * MIB, 64 * MIB);
        copy.test = "copy".into();
        copy.app_read = 64 * MIB;
        copy.calls = Some(Default::default());
        vec![
            ("cached read", read_facts(64 * MIB, 0, 0, Intent::Device)),
            (
                "half-cached read",
                read_facts(64 * MIB, 32 * MIB, 32 * MIB, Intent::Device),
            ),
            ("cache test on the device", {
                read_facts(64 * MIB, 64 * MIB, 64 * MIB, Intent::Cache)
            }),
            (
                "cached writes",
                write_facts(64 * MIB, 0, 64 * MIB, 64 * MIB),
            ),
            (
                "half-flushed writes",
                write_facts(64 * MIB, 32 * MIB, 64 * MIB, 64 * MIB),
            ),
            ("read-around random reads", random_read(Some(100))),
            ("direct writes", direct_write()),
            (
                "writes with the flush",
                buffered_write(0, 0.05, true, 64 * MIB),
            ),
            ("writes held back", buffered_write(200, 0.0, false, MIB)),
            ("cpu-bound writes with the flush (iozone)", cpu_bound),
            ("copy (unixbench-copy)", copy),
        ]
    }

    /// Every combination of the options the advice depends on that candor accepts.
    fn option_sets(f: &Facts) -> Vec<Facts> {
        let mut out = Vec::new();
        for bits in 0u32..(1 << 8) {
            let b = |i: u32| bits & (1 << i) != 0;
            let mut g = f.clone();
            g.direct = f.direct || b(0);
            g.flush_in_timing = f.is_write && (f.flush_in_timing || b(1));
            g.fadvise = if b(2) { Fadvise::Random } else { f.fadvise };
            g.given = Some(Given {
                no_fsync_in_timing: f.is_write && !g.flush_in_timing && b(3),
                preset: b(4).then(|| "iozone".into()),
                steady_state: b(5),
                direct_accepted: b(6),
                file_size_accepted: b(7),
                fadvise_accepted: b(6),
                buffer_pattern: "random".into(),
                repeat: 1,
            });
            out.push(g);
        }
        out
    }

    #[test]
    fn no_explanation_suggests_what_the_options_refute() {
        let mut advised = 0;
        for (what, base) in outcomes() {
            for f in option_sets(&base) {
                let j = judge(&f);
                if let Some(why) = conflict(&j.explanation, &f.in_force()) {
                    panic!("{what}: {why}: {}\n{:?}", j.explanation, f.given);
                }
                advised += usize::from(
                    j.explanation.contains("--direct")
                        || j.explanation.contains("--no-fsync-in-timing"),
                );
            }
        }
        assert!(
            advised > 100,
            "the remedies were hardly ever given: {advised}"
        );
    }

    #[test]
    fn the_flush_is_never_asked_for_when_it_was_timed_or_a_preset_left_it_out() {
        // iozone's sweep times the flush; a CPU-bound write is the device's work done too
        // fast to be the device's: the advice is O_DIRECT, never a flag nobody gave.
        let (_, mut f) = outcomes().swap_remove(9);
        f.given = Some(Given {
            preset: Some("iozone".into()),
            direct_accepted: true,
            fadvise_accepted: true,
            file_size_accepted: true,
            ..Given::default()
        });
        let j = judge(&f);
        assert!(j.contradicts_intent, "{}", j.explanation);
        assert!(
            !j.explanation.contains("--no-fsync-in-timing"),
            "{}",
            j.explanation
        );
        // UnixBench's copy: the preset leaves the flush out and copy takes no O_DIRECT, so
        // nothing candor accepts would change the figure: no remedy at all.
        let (_, mut f) = outcomes().swap_remove(10);
        f.given = Some(Given {
            preset: Some("unixbench-copy".into()),
            ..Given::default()
        });
        let j = judge(&f);
        assert!(j.contradicts_intent, "{}", j.explanation);
        assert!(
            !j.explanation.contains("--no-fsync-in-timing") && !j.explanation.contains("--direct"),
            "{}",
            j.explanation
        );
    }

    /// A row as a report shows it: the headline, `dev MB/s` and the note, from the facts.
    fn row(f: &Facts) -> (f64, Option<f64>, candor_model::Witness) {
        let mut w = candor_model::Witness::default();
        crate::facts::apply(f, &mut w);
        let r = candor_model::TestResult {
            test: f.test.clone(),
            throughput: candor_model::Summary {
                mean: f.headline_bps,
                ..Default::default()
            },
            witness: Some(w.clone()),
            ..Default::default()
        };
        (f.headline_bps, candor_report::view::device_bps(&r), w)
    }

    /// The share a note states of the bytes that reached (or came from) the device it names
    /// in parentheses: ("loop0", 0.01) from "Only 1% of the written bytes reached the device
    /// (loop0)".
    fn stated_share(note: &str) -> Option<(String, f64)> {
        for (i, _) in note.match_indices("% of ") {
            let start = note[..i]
                .rfind(|c: char| !c.is_ascii_digit())
                .map_or(0, |p| p + 1);
            let pct: f64 = note[start..i].parse().ok()?;
            let rest = &note[i..];
            let sentence_end = rest.find(": ").unwrap_or(rest.len());
            let clause = &rest[..sentence_end];
            for verb in ["reached the device (", "came from the device ("] {
                if let Some(p) = clause.find(verb) {
                    let after = &clause[p + verb.len()..];
                    let name = after[..after.find(')')?].to_string();
                    return Some((name, pct / 100.0));
                }
            }
            // "the device" unnamed is the target's (the testkit's loop0).
            if clause.contains("reached the device inside") {
                return Some(("loop0".into(), pct / 100.0));
            }
        }
        None
    }

    #[test]
    fn no_note_states_a_share_its_row_refutes() {
        // Every outcome, plain and on a loop device that goes through the host's page cache
        // (the disk under it moving 1% of the bytes): a note that says what share reached
        // "the device (X)" must agree with the row's dev MB/s when X is the device the column
        // counts, within the rounding of whole percentages.
        let mut checked = 0;
        for (what, base) in outcomes() {
            for looped in [false, true] {
                let mut f = base.clone();
                if looped {
                    f.loop_device = Some(candor_model::LoopFacts {
                        device: "loop0".into(),
                        backing_file: "/var/tmp/fs.img".into(),
                        direct_io: false,
                        backing_disk: Some("vda".into()),
                        backing_fs: Some("ext4".into()),
                        backing_window: Some(candor_model::DiskDelta {
                            read_bytes: f.app_read / 100,
                            write_bytes: f.app_write / 100,
                            ..Default::default()
                        }),
                        ..Default::default()
                    });
                }
                let (headline, dev_bps, w) = row(&f);
                let (Some(dev_bps), Some((name, share))) = (dev_bps, stated_share(&w.explanation))
                else {
                    continue;
                };
                let column = dev_bps / headline;
                if name == "loop0" {
                    checked += 1;
                    assert!(
                        (column - share).abs() <= 0.011 || (share == 0.01 && column < 0.01),
                        "{what} (loop: {looped}): the row shows {:.0}% of the headline on loop0, the note says {:.0}%: {}",
                        column * 100.0,
                        share * 100.0,
                        w.explanation
                    );
                }
            }
        }
        assert!(checked > 3, "too few notes checked: {checked}");
    }

    #[test]
    fn a_note_never_says_the_thread_waited_for_the_device_and_was_on_the_cpu_all_along() {
        // iozone's write with the flush timed: the runner measured 40% of the timed region
        // in the flush, waiting for the device; the CPU accounting says 100% on the CPU. A
        // thread waiting 40% of the time was not on the CPU 100% of it: the note tells the
        // one the operations measured, not both.
        for (what, f) in outcomes() {
            let j = judge(&f);
            let waited = j
                .operations
                .as_ref()
                .and_then(|o| o.waited_time_share)
                .unwrap_or(0.0);
            if waited > 0.1 {
                assert!(
                    !j.traps
                        .iter()
                        .any(|t| t.kind == candor_model::TrapKind::CpuBound),
                    "{what}: {}",
                    j.explanation
                );
            }
        }
    }

    #[test]
    fn a_loop_device_through_the_host_cache_names_the_disk_under_it() {
        // The loop device moved every byte (its dev MB/s is the headline), the disk under it
        // 1%: the note says whose 1% it is.
        let mut f = write_facts(64 * MIB, 64 * MIB, 64 * MIB, 64 * MIB);
        f.loop_device = Some(candor_model::LoopFacts {
            device: "loop0".into(),
            backing_file: "/var/tmp/fs.img".into(),
            direct_io: false,
            backing_disk: Some("vda".into()),
            backing_fs: Some("ext4".into()),
            backing_window: Some(candor_model::DiskDelta {
                write_bytes: 640 << 10,
                ..Default::default()
            }),
            ..Default::default()
        });
        let (headline, dev_bps, w) = row(&f);
        assert_eq!(dev_bps, Some(headline), "the loop device's own bytes");
        assert!(
            w.explanation.starts_with(
                "Only 1% of the written bytes reached the disk under the loop device (vda) inside the timed region:"
            ),
            "{}",
            w.explanation
        );
    }

    #[test]
    fn a_loop_device_whose_disk_moved_nothing_is_memory_speed_not_partly() {
        // O_DIRECT reads of a raw loop device whose file is in the host's page cache: the
        // disk under it read nothing. The page cache above the loop device was bypassed,
        // and the loop device's speed is wholly memory's.
        let mut f = read_facts(64 * MIB, 64 * MIB, 64 * MIB, Intent::Device);
        f.direct = true;
        f.loop_device = Some(candor_model::LoopFacts {
            device: "loop3".into(),
            backing_file: "/var/tmp/raw.img".into(),
            direct_io: false,
            backing_disk: Some("vda".into()),
            backing_fs: Some("ext4".into()),
            backing_window: Some(candor_model::DiskDelta::default()),
            ..Default::default()
        });
        let (headline, dev_bps, w) = row(&f);
        assert_eq!(dev_bps, Some(headline), "the loop device's own bytes");
        let e = &w.explanation;
        assert!(
            e.starts_with("100% of these reads came from the host's page cache under the loop device, not from the disk under the loop device (vda): this is memory speed."),
            "{e}"
        );
        assert!(
            e.contains("the disk under its file moved 0 bytes, the rest was the host's page cache, so its \"device\" speed is memory speed."),
            "{e}"
        );
        assert!(!e.contains("partly"), "{e}");
        // Buffered, with the disk moving a tenth: both caches can have served them, and the
        // loop device's speed is partly memory's.
        f.direct = false;
        f.loop_device.as_mut().unwrap().backing_window = Some(candor_model::DiskDelta {
            read_bytes: 6 * MIB,
            ..Default::default()
        });
        let (_, _, w) = row(&f);
        assert!(
            w.explanation
                .contains("(the page cache, or the host's page cache under the loop device)"),
            "{}",
            w.explanation
        );
        assert!(
            w.explanation
                .contains("so its \"device\" speed is partly memory speed."),
            "{}",
            w.explanation
        );
    }

    #[test]
    fn a_copy_that_reached_the_device_with_nothing_says_none_not_0_percent() {
        let (_, f) = outcomes().swap_remove(10);
        let j = judge(&f);
        assert_eq!(j.verdict, Verdict::Cache);
        assert!(
            j.explanation.starts_with(
                "None of the bytes read and written reached the device inside the timed region: this is memory speed."
            ),
            "{}",
            j.explanation
        );
        assert!(!j.explanation.contains(" 0%"), "{}", j.explanation);
    }

    /// The share a note's leading sentence states of what `whose` moved ("the device
    /// (loop0)", "the disk under the loop device (vda)"): "X% of the written bytes reached
    /// it", "X% of the bytes read came from it", "... and Y% from it", "X% of these reads
    /// came from <memory>, not from it", "None of ... reached it".
    fn stated_of(note: &str, whose: &str) -> Option<f64> {
        let lead = &note[..note.find(": ").unwrap_or(note.len())];
        let pct_before = |at: usize| -> Option<f64> {
            let head = &lead[..at];
            let end = head.rfind('%')?;
            let start = head[..end]
                .rfind(|c: char| !c.is_ascii_digit())
                .map_or(0, |p| p + 1);
            Some(head[start..end].parse::<f64>().ok()? / 100.0)
        };
        let at = |verb: &str| {
            lead.find(verb).filter(|p| {
                lead[p + verb.len()..].starts_with([' ', ':', ',', '.'])
                    || lead[p + verb.len()..].is_empty()
            })
        };
        if lead.starts_with("None of the") && at(&format!("reached {whose}")).is_some() {
            return Some(0.0);
        }
        if let Some(p) = at(&format!(", not from {whose}")) {
            let _ = p;
            return pct_before(lead.find(" of these reads")?).map(|m| 1.0 - m);
        }
        for verb in [format!("reached {whose}"), format!("from {whose}")] {
            if let Some(p) = at(&verb) {
                return pct_before(p);
            }
        }
        None
    }

    /// Facts of one generated outcome.
    #[allow(clippy::too_many_arguments)]
    fn generated(
        kind: u8,
        mib: u64,
        device_pct: u64,
        looped: Option<(u64, bool)>,
        cache_intent: bool,
        options: u8,
    ) -> Facts {
        let app = mib * MIB;
        let part = app * device_pct / 100;
        let mut f = match kind {
            0 => read_facts(
                app,
                part,
                part,
                if cache_intent {
                    Intent::Cache
                } else {
                    Intent::Device
                },
            ),
            1 => write_facts(app, part, app, app),
            2 => {
                let mut f = write_facts(app, part, app, app);
                f.flush_in_timing = true;
                f
            }
            3 => direct_write(),
            4 => buffered_write(
                u64::from(options % 4) * 50,
                0.05,
                options & 4 != 0,
                64 * MIB * device_pct / 100,
            ),
            _ => random_read(Some(100)),
        };
        let b = |i: u8| options & (1 << i) != 0;
        f.given = Some(Given {
            no_fsync_in_timing: f.is_write && !f.flush_in_timing && b(0),
            preset: b(1).then(|| "iozone".into()),
            steady_state: b(2),
            direct_accepted: b(3),
            file_size_accepted: b(4),
            fadvise_accepted: b(5),
            buffer_pattern: if b(6) { "random" } else { "zero" }.into(),
            repeat: if b(2) { 1 } else { 3 },
        });
        if let Some((disk_pct, direct_io)) = looped {
            f.loop_device = Some(candor_model::LoopFacts {
                device: "loop0".into(),
                backing_file: "/var/tmp/fs.img".into(),
                direct_io,
                backing_disk: Some("vda".into()),
                backing_fs: Some("ext4".into()),
                backing_window: Some(candor_model::DiskDelta {
                    read_bytes: f.device_window.read_bytes * disk_pct / 100,
                    write_bytes: f.device_window.write_bytes * disk_pct / 100,
                    ..Default::default()
                }),
                ..Default::default()
            });
        }
        f
    }

    /// A stated share agrees with a column's when they differ by no more than the rounding
    /// of whole percentages that never round a part to 0% or 100%.
    fn agrees(stated: f64, column: f64) -> bool {
        (column - stated).abs() <= 0.011
            // The device wrote more than it was given (journal, metadata): all of it.
            || (stated == 1.0 && column >= 1.0)
            || (stated == 0.01 && column > 0.0 && column < 0.01)
            || (stated == 0.99 && column > 0.99 && column < 1.0)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]

        /// One story per row: over generated outcomes (reads and writes of every kind, any
        /// share on the device, plain or on a loop device with or without direct I/O, any
        /// options), no note states a share its row's columns refute (`dev MB/s`, and the
        /// disk under a loop device shown beside it), no note's conclusion disagrees with
        /// its verdict, and no advice conflicts with the options given.
        #[test]
        fn no_note_states_a_share_its_row_refutes_over_generated_outcomes(
            kind in 0u8..6,
            mib in 1u64..=256,
            device_pct in 0u64..=100,
            looped in proptest::option::of((0u64..=100, proptest::bool::ANY)),
            cache_intent in proptest::bool::ANY,
            options in 0u8..128,
        ) {
            let f = generated(kind, mib, device_pct, looped, cache_intent, options);
            let (headline, dev_bps, w) = row(&f);
            let e = &w.explanation;
            proptest::prop_assert_eq!(conflict(e, &f.in_force()), None, "{}", e);
            let r = candor_model::TestResult {
                test: f.test.clone(),
                throughput: candor_model::Summary { mean: headline, ..Default::default() },
                witness: Some(w.clone()),
                ..Default::default()
            };
            let through_host = f.loop_device.as_ref().is_some_and(|l| !l.direct_io);
            if let Some(dev) = dev_bps.filter(|_| headline > 0.0) {
                for whose in ["the device (loop0)", "the device"] {
                    if through_host && whose == "the device" {
                        continue;
                    }
                    if let Some(s) = stated_of(e, whose) {
                        proptest::prop_assert!(
                            agrees(s, dev / headline),
                            "dev MB/s is {:.1}% of the headline, the note says {:.0}%: {}",
                            dev / headline * 100.0, s * 100.0, e
                        );
                        break;
                    }
                }
            }
            if let Some((name, under)) = candor_report::view::disk_under_bps(&r) {
                proptest::prop_assert_eq!(&name, "vda");
                if let Some(s) = stated_of(e, "the disk under the loop device (vda)") {
                    proptest::prop_assert!(
                        agrees(s, under / headline),
                        "the cell shows vda at {:.1}% of the headline, the note says {:.0}%: {}",
                        under / headline * 100.0, s * 100.0, e
                    );
                }
                // The loop device's trap speaks of the bytes the loop device moved.
                if dev_bps.is_some_and(|d| d > 0.0 && under / d <= 0.05) {
                    proptest::prop_assert!(!e.contains("partly memory speed"), "{}", e);
                }
            }
            let v = w.verdict;
            if e.contains("this is the device's figure") {
                proptest::prop_assert_eq!(v, Verdict::Device, "{}", e);
            }
            if e.contains("this is memory speed") {
                proptest::prop_assert!(matches!(v, Verdict::Cache | Verdict::Memory), "{:?}: {}", v, e);
            }
            if e.contains("mixes memory and device speed") {
                proptest::prop_assert_eq!(v, Verdict::Mixed, "{}", e);
            }
        }
    }

    #[test]
    fn stated_shares_are_read_from_the_lead() {
        let d = "the disk under the loop device (vda)";
        assert_eq!(
            stated_of("Only 1% of the written bytes reached the disk under the loop device (vda) inside the timed region: x", d).map(|x| (x * 100.0).round()),
            Some(1.0)
        );
        assert_eq!(
            stated_of("99% of these reads came from memory (the page cache, or the host's page cache under the loop device), not from the disk under the loop device (vda): x", d).map(|x| (x * 100.0).round()),
            Some(1.0)
        );
        assert_eq!(
            stated_of("91% of these reads came from the page cache and 9% from the disk under the loop device (vda): x", d).map(|x| (x * 100.0).round()),
            Some(9.0)
        );
        assert_eq!(
            stated_of("None of the written bytes reached the disk under the loop device (vda) inside the timed region: x", d).map(|x| (x * 100.0).round()),
            Some(0.0)
        );
        assert_eq!(
            stated_of(
                "100% of the bytes read came from the device (loop0): x",
                "the device (loop0)"
            )
            .map(|x| (x * 100.0).round()),
            Some(100.0)
        );
        assert_eq!(
            stated_of("Only 3% of the bytes read and written reached the device inside the timed region: x", "the device").map(|x| (x * 100.0).round()),
            Some(3.0)
        );
        assert_eq!(
            stated_of(
                "No write waited for the device (loop0): x",
                "the device (loop0)"
            )
            .map(|x| (x * 100.0).round()),
            None
        );
    }

    #[test]
    fn units() {
        assert_eq!(pct(0.004), "1%");
        assert_eq!(pct(0.996), "99%");
        assert_eq!(three_ram(RAM), "72 GiB");
    }
}
