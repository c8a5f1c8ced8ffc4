//! Facts first, on real filesystems on loop devices: a write whose filesystem compresses
//! its buffers is explained by the fact that decides it (the mount option, or the
//! compression property on the directory), with the change that measures the device.

mod common;
use common::{need_lab, need_programs, run_in, scratch};
use std::path::Path;
use std::process::Command;

fn sh(program: &str, args: &[&str]) {
    let o = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    assert!(
        o.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// The explanation of a 32 MiB write of zero-filled buffers in `dir`, and the facts'
/// filesystem part.
fn zero_write(dir: &Path) -> (String, candor_model::FsFacts) {
    let o = run_in(
        dir,
        &[
            "--tests",
            "write",
            "--file-size",
            "32m",
            "--record-size",
            "1m",
            "--buffer-pattern",
            "zero",
            "--format",
            "json",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let doc: candor_model::RunDoc = serde_json::from_slice(&o.stdout).unwrap();
    let w = doc.results[0].witness.as_ref().expect("a witness");
    let fs = w.extra.facts.as_ref().and_then(|f| f.fs.clone());
    (w.explanation.clone(), fs.expect("the filesystem's facts"))
}

#[test]
fn btrfs_compressing_by_mount_option_is_named_with_its_algorithm() {
    if !need_lab() {
        return;
    }
    for opt in ["compress=zstd", "compress-force=zstd"] {
        let Some(fs) = scratch("btrfs", 512 << 20) else {
            return;
        };
        let mp = fs.path().display().to_string();
        sh("mount", &["-o", &format!("remount,{opt}"), &mp]);
        let (e, facts) = zero_write(fs.path());
        assert!(facts.mount_options.contains(opt), "{}", facts.mount_options);
        let key = opt.split('=').next().unwrap();
        assert!(
            e.contains(&format!(
                "btrfs compresses with zstd (mount option {key}=zstd"
            )),
            "{opt}: {e}"
        );
        assert!(
            e.contains("zero-filled buffers compress to almost nothing"),
            "{opt}: {e}"
        );
        assert!(
            e.contains("Use --buffer-pattern random to measure the device."),
            "{opt}: {e}"
        );
        assert!(!e.contains("inline data"), "a fact decides: {e}");
        assert!(!e.contains("--no-fsync-in-timing"), "{e}");
    }
}

#[test]
fn a_btrfs_compression_property_on_an_uncompressed_mount_is_named() {
    if !need_lab() || !need_programs(&["btrfs"]) {
        return;
    }
    let Some(fs) = scratch("btrfs", 512 << 20) else {
        return;
    };
    let dir = fs.path().join("compressed");
    std::fs::create_dir(&dir).unwrap();
    sh(
        "btrfs",
        &[
            "property",
            "set",
            &dir.display().to_string(),
            "compression",
            "zstd",
        ],
    );
    let (e, facts) = zero_write(&dir);
    assert!(
        !facts.mount_options.contains("compress"),
        "{}",
        facts.mount_options
    );
    assert_eq!(
        facts.dir_compression.as_deref(),
        Some("btrfs property compression=zstd")
    );
    assert!(
        e.contains("btrfs compresses the test's files with zstd (btrfs property compression=zstd)"),
        "{e}"
    );
    assert!(
        e.contains("Use --buffer-pattern random to measure the device."),
        "{e}"
    );
    // The same mount without the property: nothing compresses, and nothing says so.
    let (e, facts) = zero_write(fs.path());
    assert_eq!(facts.dir_compression, None);
    assert!(!e.contains("compresses"), "{e}");
    assert!(!e.contains("--buffer-pattern"), "{e}");
}

#[test]
fn chattr_c_on_btrfs_is_named() {
    if !need_lab() || !need_programs(&["chattr"]) {
        return;
    }
    let Some(fs) = scratch("btrfs", 512 << 20) else {
        return;
    };
    let dir = fs.path().join("c");
    std::fs::create_dir(&dir).unwrap();
    sh("chattr", &["+c", &dir.display().to_string()]);
    let (e, facts) = zero_write(&dir);
    // chattr +c on btrfs sets the compression property too; either names it.
    let d = facts
        .dir_compression
        .expect("the compression set on the directory");
    assert!(
        d == "chattr +c" || d.starts_with("btrfs property compression="),
        "{d}"
    );
    assert!(e.contains("btrfs compresses the test's files"), "{e}");
    assert!(
        e.contains("Use --buffer-pattern random to measure the device."),
        "{e}"
    );
}

/// Unmounts on drop: a mount this test made itself.
struct Mounted(String);

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// Mounts the scratch filesystem again with `opts`.
fn mount_with(fs: &mut candor_lab::ScratchFs, opts: &str) -> Mounted {
    fs.unmount().expect("unmount the scratch filesystem");
    let mp = fs.path().display().to_string();
    let opts = if fs.fs == "ext4" {
        format!("{opts},noinit_itable")
    } else {
        opts.to_string()
    };
    sh("mount", &["-o", &opts, &fs.loop_device, &mp]);
    Mounted(mp)
}

#[test]
fn ext4_data_journal_is_named_for_the_bytes_written_twice() {
    if !need_lab() {
        return;
    }
    let Some(mut fs) = scratch("ext4", 512 << 20) else {
        return;
    };
    let _mounted = mount_with(&mut fs, "data=journal");
    let o = run_in(
        fs.path(),
        &[
            "--tests",
            "write",
            "--file-size",
            "32m",
            "--record-size",
            "1m",
            "--format",
            "json",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let doc: candor_model::RunDoc = serde_json::from_slice(&o.stdout).unwrap();
    let w = doc.results[0].witness.as_ref().expect("a witness");
    let e = &w.explanation;
    assert!(
        e.contains("ext4 journals the data as well as the metadata (mount option data=journal): every byte is written twice"),
        "{e}"
    );
    assert!(!e.contains("(copy-on-write metadata, journal)"), "{e}");
}

#[test]
fn discards_inside_the_timed_region_are_named_on_ext4_and_xfs() {
    if !need_lab() {
        return;
    }
    let mut named = 0;
    for kind in ["ext4", "xfs"] {
        let Some(mut fs) = scratch(kind, 512 << 20) else {
            return;
        };
        let _mounted = mount_with(&mut fs, "discard");
        // Each repetition writes its file afresh: the blocks the one before freed are
        // discarded as the filesystem commits, inside the next one's flush.
        let o = run_in(
            fs.path(),
            &[
                "--tests",
                "write",
                "--file-size",
                "64m",
                "--record-size",
                "1m",
                "--repeat",
                "4",
                "--format",
                "json",
            ],
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let doc: candor_model::RunDoc = serde_json::from_slice(&o.stdout).unwrap();
        let w = doc.results[0].witness.as_ref().expect("a witness");
        let f = w.extra.facts.as_ref().expect("facts");
        let opts = &f.fs.as_ref().expect("the filesystem's facts").mount_options;
        assert!(opts.split(',').any(|o| o == "discard"), "{kind}: {opts}");
        let d = f.device_window.discard_bytes;
        eprintln!(
            "{kind}: {d} bytes discarded in the timed regions: {}",
            w.explanation
        );
        if d >= 1 << 20 {
            named += 1;
            assert!(
                w.explanation.contains(&format!(
                    "inside the timed region: {kind} is mounted with discard, so the blocks that files freed are discarded as it commits, and the figure includes that work. Mount without discard (and trim with fstrim between runs) to measure the writes alone."
                )),
                "{kind}: {}",
                w.explanation
            );
        } else {
            assert!(!w.explanation.contains("discard"), "{}", w.explanation);
        }
    }
    assert!(
        named > 0,
        "neither ext4 nor xfs discarded inside a timed region"
    );
}

/// The only result of a buffered run in `dir` of `tests` on 16 MiB files in 64 KiB records,
/// the flush left out of the timing, with `extra` options.
fn buffered_run(dir: &Path, tests: &str, extra: &[&str]) -> candor_model::RunDoc {
    let mut args = vec![
        "--tests",
        tests,
        "--file-size",
        "16m",
        "--record-size",
        "64k",
        "--repeat",
        "1",
        "--no-fsync-in-timing",
        "--format",
        "json",
    ];
    args.extend(extra);
    let o = run_in(dir, &args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn a_sync_mount_is_named_and_its_writes_are_not_called_the_page_caches() {
    if !need_lab() {
        return;
    }
    for kind in ["ext4", "xfs"] {
        let Some(mut fs) = scratch(kind, 512 << 20) else {
            return;
        };
        let _mounted = mount_with(&mut fs, "sync");
        let doc = buffered_run(fs.path(), "write,randwrite", &[]);
        assert_eq!(doc.results.len(), 2);
        for r in &doc.results {
            let w = r.witness.as_ref().expect("a witness");
            let f = w.extra.facts.as_ref().expect("facts");
            let opts = &f.fs.as_ref().expect("the filesystem's facts").mount_options;
            assert!(opts.split(',').any(|o| o == "sync"), "{kind}: {opts}");
            let e = &w.explanation;
            eprintln!("{kind} {}: {} {e}", r.test, w.verdict);
            assert_eq!(
                w.operations.as_ref().and_then(|o| o.write_mode.as_deref()),
                Some("sync"),
                "{kind} {}: {e}",
                r.test
            );
            assert!(
                e.starts_with(&format!("{kind} is mounted sync: ")),
                "{kind} {}: {e}",
                r.test
            );
            assert!(e.contains("(mount option sync) waited for it"), "{e}");
            // The figure is the device's, written through: no page-cache story, and no
            // remedy for one.
            for no in [
                "page cache",
                "held back",
                "--direct",
                "--no-fsync-in-timing",
            ] {
                assert!(!e.contains(no), "{kind} {}: {no}: {e}", r.test);
            }
            assert_eq!(
                candor_model::advice::conflict(e, &f.in_force()),
                None,
                "{e}"
            );
        }
    }
}

#[test]
fn dax_on_a_loop_device_is_refused_or_turned_off_and_never_named() {
    if !need_lab() {
        return;
    }
    // A loop device cannot give direct access to its memory: ext4 refuses the mount, xfs
    // mounts with dax=never. Either way no DAX story may be told of its figures.
    let Some(mut fs) = scratch("ext4", 256 << 20) else {
        return;
    };
    fs.unmount().expect("unmount the scratch filesystem");
    let mp = fs.path().display().to_string();
    let refused = Command::new("mount")
        .args(["-o", "dax=always", &fs.loop_device, &mp])
        .output()
        .expect("mount runs");
    if refused.status.success() {
        let _ = Command::new("umount").arg(&mp).status();
        panic!("ext4 took dax on {}", fs.loop_device);
    }
    let Some(mut fs) = scratch("xfs", 512 << 20) else {
        return;
    };
    let _mounted = mount_with(&mut fs, "dax=always");
    let doc = buffered_run(fs.path(), "write", &[]);
    let w = doc.results[0].witness.as_ref().expect("a witness");
    let f = w.extra.facts.as_ref().expect("facts");
    let fsf = f.fs.as_ref().expect("the filesystem's facts");
    assert_eq!(fsf.dax(), None, "{}", fsf.mount_options);
    assert!(!w.explanation.contains("dax"), "{}", w.explanation);
    assert_ne!(w.verdict, candor_model::Verdict::Unverified);
}

#[test]
fn a_dirsync_or_wsync_mount_is_named_for_creates() {
    if !need_lab() {
        return;
    }
    for (kind, opt) in [("ext4", "dirsync"), ("xfs", "wsync")] {
        let Some(mut fs) = scratch(kind, 512 << 20) else {
            return;
        };
        let _mounted = mount_with(&mut fs, opt);
        let o = run_in(
            fs.path(),
            &[
                "--tests",
                "create,stat",
                "--files",
                "200",
                "--repeat",
                "1",
                "--format",
                "json",
            ],
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let doc: candor_model::RunDoc = serde_json::from_slice(&o.stdout).unwrap();
        for r in &doc.results {
            let w = r.witness.as_ref().expect("a witness");
            let e = &w.explanation;
            eprintln!("{kind} {}: {} {e}", r.test, w.verdict);
            if r.test == "create" {
                // Each create waited for its journal commit: the device's work is in the
                // figure.
                assert_eq!(w.verdict, candor_model::Verdict::Device, "{kind}: {e}");
                assert!(
                    e.starts_with(&format!(
                        "{kind} is mounted {opt}: each create reached the device before its call returned. The 200 create operations"
                    )),
                    "{e}"
                );
            } else {
                assert!(!e.contains(opt), "{kind} {}: {e}", r.test);
            }
        }
    }
}
