//! Metadata tests (create, stat, open, readdir, unlink, mkdir, rmdir) move no file data, so
//! bytes cannot judge them: they are reconciled by their operations. The filesystem's count
//! of its inodes in use (statfs) says whether the operations that add or remove inodes
//! happened (N creates: N more inodes in use), and the device's bytes attributed to the test
//! (journal, inode tables, directory blocks) say where they were served: inside the timed
//! region, after it, or not at all. docs/witness.md, "Metadata tests", gives the rules.

use crate::explain::pct;
use crate::rules::{attribute, ratio, Judgement, CACHE_SHARE_MAX, DEVICE_SHARE_MIN};
use candor_model::units::{format_bytes, ByteStyle};
use candor_model::{Facts, MetaFacts, Verdict};

fn bytes(n: u64) -> String {
    format_bytes(n, ByteStyle::WITNESS)
}

/// What the inode count says of the operations, as a clause ("" when they add none).
fn counted(m: &MetaFacts, ops: u64) -> String {
    if m.inodes_per_op == 0 {
        return String::new();
    }
    let want = m.inodes_per_op * ops as i64;
    let more = if want >= 0 { "more" } else { "fewer" };
    match m.inodes_used {
        Some(x) if x == want => format!(
            " (the filesystem counted {} {more} inodes in use, one per {})",
            x.unsigned_abs(),
            m.op
        ),
        Some(x) => format!(
            " (the filesystem counted {x:+} inodes in use where the test's {ops} make {want:+}: another process changed files on it meanwhile)"
        ),
        None => " (this filesystem does not count its inodes, so the kernel's count cannot confirm them)".into(),
    }
}

/// Judges a metadata test on a block device.
pub fn judge(f: &Facts, m: &MetaFacts, device: &str) -> Judgement {
    let mut j = Judgement::default();
    let a = attribute(f);
    let ops = f.ops.as_ref().map_or(0, |o| o.count);
    let what = format!("The {ops} {} operations{}", m.op, counted(m, ops));
    if m.inodes_per_op != 0 {
        // They change the filesystem: the journal and metadata they cause is the device's
        // work for them, inside the timed region or after it.
        let (window, total) = (a.own_write_window, a.own_write_total);
        let share = ratio(window, total);
        j.verdict = if total == 0 || share <= CACHE_SHARE_MAX {
            Verdict::Cache
        } else if share >= DEVICE_SHARE_MIN {
            Verdict::Device
        } else {
            j.device_share = Some(share);
            Verdict::Mixed
        };
        j.flushed_in_window = Some(share);
        j.explanation = match j.verdict {
            Verdict::Device => format!(
                "{what} made the device ({device}) write {} of journal and metadata, {} of it inside the timed region: the figure includes the device's work.",
                bytes(total),
                pct(share)
            ),
            Verdict::Mixed => format!(
                "{what} made the device ({device}) write {} of journal and metadata, only {} of it inside the timed region: the figure mixes memory and device speed.",
                bytes(total),
                pct(share)
            ),
            _ if total == 0 => format!(
                "{what} wrote nothing to the device ({device}) by the time the witness looked: the changes waited in memory, so this is the speed of the filesystem's in-memory metadata, not of the device."
            ),
            _ => format!(
                "{what} changed the filesystem in memory: none of the {} of journal and metadata they made the device ({device}) write reached it inside the timed region, so this is the speed of the filesystem's in-memory metadata, not of the device.",
                bytes(total)
            ),
        };
        j.contradicts_intent = !j.verdict.fits(f.intent);
        // A mount that writes directory changes through (sync, dirsync, xfs's wsync): the
        // fact, said before the figures; that each reached the device only when they show it.
        if let Some((fs, opt)) = f.fs.as_ref().and_then(|fs| Some((fs, fs.dirs_through()?))) {
            let fact = if j.verdict == Verdict::Device {
                format!("each {} reached the device before its call returned", m.op)
            } else {
                format!(
                    "each {} is written through to the device before its call returns",
                    m.op
                )
            };
            j.explanation = format!("{} is mounted {opt}: {fact}. {}", fs.fs_type, j.explanation);
        }
    } else {
        // Lookups of a tree made before the timed region: the kernel's inode and dentry
        // caches answer them unless the device had to be read.
        let read = f.device_window.read_bytes.min(a.own_read);
        if read == 0 {
            j.verdict = Verdict::Cache;
            j.explanation = format!(
                "{what} were answered from the kernel's inode and dentry caches: no request reached the device ({device}), so this is memory speed."
            );
        } else {
            // Each operation that waited needed at least one request: an upper bound.
            let requests = f
                .requests
                .as_ref()
                .map_or(f.device_window.read_ios, |r| r.read.count);
            let share = ratio(requests, ops.max(1));
            j.verdict = Verdict::Mixed;
            j.device_share = Some(share);
            j.explanation = format!(
                "{what} read {} of inode tables and directory blocks from the device ({device}) in {requests} requests: at most {} of them waited for it, the rest were answered from the kernel's caches.",
                bytes(read),
                pct(share)
            );
        }
    }
    j.foreign_device_bytes = a.foreign_read + a.foreign_write;
    j.disturbed = j.foreign_device_bytes > 0;
    if j.disturbed {
        j.explanation.push_str(&format!(
            " The device also carried {} of traffic of other processes: rerun when the device is idle.",
            bytes(j.foreign_device_bytes)
        ));
    }
    j
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules;
    use crate::testkit::*;
    use candor_model::{Intent, OpFacts, Placement};

    fn meta(op: &str, per: i64, used: Option<i64>, window: u64, total: u64) -> Facts {
        let mut f = write_facts(0, window, total, 0);
        f.test = op.into();
        f.app_write = 0;
        f.headline_bps = 0.0;
        f.intent = if per == 0 {
            Intent::Cache
        } else {
            Intent::Device
        };
        f.others_io = Some([0, 0]);
        f.ops = Some(OpFacts {
            count: 1000,
            ..Default::default()
        });
        f.meta = Some(MetaFacts {
            op: op.into(),
            inodes_per_op: per,
            inodes_used: used,
        });
        f
    }

    #[test]
    fn a_dirsync_mount_is_named_for_operations_that_change_directories() {
        for opt in ["dirsync", "sync", "wsync"] {
            let mut f = meta("create", 1, Some(1000), 4 * MIB, 4 * MIB);
            f.fs = Some(candor_model::FsFacts {
                fs_type: "ext4".into(),
                mount_options: format!("rw,relatime,{opt}"),
                dir_compression: None,
            });
            let j = rules::judge(&f);
            assert_eq!(j.verdict, Verdict::Device, "{}", j.explanation);
            assert!(
                j.explanation.starts_with(&format!(
                    "ext4 is mounted {opt}: each create reached the device before its call returned. The 1000 create operations"
                )),
                "{}",
                j.explanation
            );
            // Not all of it inside the timed region: the mount's rule alone.
            let mut g = f.clone();
            g.device_window.write_bytes = MIB;
            g.own_window.as_mut().unwrap().write_bytes = MIB;
            let j = rules::judge(&g);
            assert!(
                j.explanation.starts_with(&format!(
                    "ext4 is mounted {opt}: each create is written through to the device before its call returns."
                )),
                "{}",
                j.explanation
            );
            // Lookups change no directory: nothing to say of the mount.
            let mut l = meta("stat", 0, None, 0, 0);
            l.fs = f.fs.clone();
            assert!(!rules::judge(&l).explanation.contains("mounted"));
        }
    }

    #[test]
    fn creates_are_counted_by_the_filesystem_and_judged_by_their_journal() {
        // Nothing reached the device in the timed region; 4 MiB of journal after it.
        let j = rules::judge(&meta("create", 1, Some(1000), 0, 4 * MIB));
        assert_eq!(j.verdict, Verdict::Cache, "{}", j.explanation);
        assert!(j
            .explanation
            .contains("counted 1000 more inodes in use, one per create"));
        assert!(
            j.explanation.contains("in-memory metadata"),
            "{}",
            j.explanation
        );
        assert!(j.contradicts_intent && !j.disturbed);
        // All of it inside: the device's work is in the figure.
        let j = rules::judge(&meta("unlink", -1, Some(-1000), 4 * MIB, 4 * MIB));
        assert_eq!(j.verdict, Verdict::Device, "{}", j.explanation);
        assert!(
            j.explanation.contains("1000 fewer inodes"),
            "{}",
            j.explanation
        );
        // Half of it: mixed, by that share.
        let j = rules::judge(&meta("mkdir", 1, Some(1000), 2 * MIB, 4 * MIB));
        assert_eq!(j.verdict, Verdict::Mixed);
        assert_eq!(j.device_share, Some(0.5));
        // The count disagrees: someone else changed the filesystem.
        let j = rules::judge(&meta("create", 1, Some(1003), 0, MIB));
        assert!(
            j.explanation.contains("another process"),
            "{}",
            j.explanation
        );
        let j = rules::judge(&meta("create", 1, None, 0, MIB));
        assert!(j.explanation.contains("does not count its inodes"));
    }

    /// The kernel's count of the calls decides whether the operation count stands: the
    /// same facts are judged by their journal when it agrees, and are `unverified`, the
    /// difference named, when it does not (a runner claiming 1000 unlinks of which the
    /// kernel saw 998).
    #[test]
    fn unlinks_the_kernel_did_not_see_make_the_result_unverified() {
        use candor_model::{CallCount, CallFacts};
        let n = |c: u64| CallCount {
            calls: Some(c),
            bytes: None,
            errors: 0,
        };
        let mut f = meta("unlink", -1, Some(-1000), 4 * MIB, 4 * MIB);
        let calls = |counted: u64| CallFacts {
            expected: [("unlink".to_string(), n(1000))].into(),
            counted: Some([("unlink".to_string(), n(counted))].into()),
            ..Default::default()
        };
        f.calls = Some(calls(1000));
        let j = rules::judge(&f);
        assert_eq!(j.verdict, Verdict::Device, "{}", j.explanation);
        let c = j.syscalls_check.expect("checked");
        assert_eq!(c.verdict, "match");
        assert_eq!(c.kinds["unlink"].counted, Some(1000));
        f.calls = Some(calls(998));
        let j = rules::judge(&f);
        assert_eq!(j.verdict, Verdict::Unverified, "{}", j.explanation);
        let why = j.unverified_reason.unwrap_or_default();
        assert!(
            why.contains("998 unlink calls for the runner's 1000"),
            "{why}"
        );
        assert!(j.explanation.starts_with(&why), "{}", j.explanation);
        assert!(!j.contradicts_intent);
    }

    #[test]
    fn lookups_are_the_caches_unless_the_device_was_read() {
        let f = meta("stat", 0, Some(0), 0, 0);
        let j = rules::judge(&f);
        assert_eq!(j.verdict, Verdict::Cache, "{}", j.explanation);
        assert!(j.explanation.contains("inode and dentry caches"));
        assert!(!j.contradicts_intent);
        let mut f = meta("stat", 0, Some(0), 0, 0);
        f.device_window.read_bytes = MIB;
        f.device_window.read_ios = 100;
        f.device_total.read_bytes = MIB;
        f.own_total.as_mut().unwrap().read_bytes = MIB;
        let j = rules::judge(&f);
        assert_eq!(j.verdict, Verdict::Mixed, "{}", j.explanation);
        assert_eq!(j.device_share, Some(0.1));
        // tmpfs: memory, as any test there.
        let mut f = meta("create", 1, Some(1000), 0, 0);
        f.placement = Placement::Memory {
            fs_type: "tmpfs".into(),
        };
        assert_eq!(rules::judge(&f).verdict, Verdict::Memory);
    }
}
