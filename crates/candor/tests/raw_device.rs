//! A raw block device as a target (`--allow-device-writes`), on loop devices made for each
//! test: every refusal leaves the device as it was, and a full run writes exactly its
//! region (from --offset, threads x --file-size) and nothing outside it, with the witness
//! counting that device's bytes. Without root each test says "skipped: <reason>"; as
//! root, a loop device that cannot be made is a failure.

mod common;
use common::{
    candor, digest, have, is_root, one_partition, read_at, refused, run_device, sh, text, MIB,
};
use serde_json::Value;
use std::sync::Mutex;

/// The tests share the machine's loop devices: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn skip_reason() -> Option<String> {
    if !is_root() {
        return Some("needs root for loop devices".into());
    }
    ["losetup", "mkfs.ext4", "mount", "sfdisk", "partx"]
        .iter()
        .find(|p| !have(p))
        .map(|p| format!("{p} is not installed"))
}

/// A bare loop device of `size` bytes (zeroed), or None after saying why it is skipped.
fn device(size: u64) -> Option<candor_lab::ScratchFs> {
    if let Some(why) = skip_reason() {
        common::skip(why);
        return None;
    }
    Some(candor_lab::scratch_device(size).expect("a loop device as root"))
}

/// An ext4 on a loop device, mounted, or None after saying why it is skipped.
fn ext4(size: u64) -> Option<candor_lab::ScratchFs> {
    if let Some(why) = skip_reason() {
        common::skip(why);
        return None;
    }
    Some(candor_lab::scratch("ext4", size).expect("an ext4 on a loop device as root"))
}

#[test]
fn without_the_flag_a_device_is_refused() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(d) = device(64 * MIB) else { return };
    let before = digest(&d.loop_device);
    let o = candor()
        .args(["run", &d.loop_device, "--tests", "0", "--file-size", "4m"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("--allow-device-writes"));
    assert_eq!(digest(&d.loop_device), before);
}

#[test]
fn a_mounted_device_is_refused_even_when_told_to_destroy() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(fs) = ext4(64 * MIB) else { return };
    let keep = fs.path().join("keep.txt");
    std::fs::write(&keep, b"the user's data").unwrap();
    let o = run_device(
        &fs.loop_device,
        &[
            "--destroy-existing-data",
            "--tests",
            "0",
            "--file-size",
            "4m",
        ],
    );
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("is in use") && err.contains("mounted on"),
        "{err}"
    );
    assert_eq!(std::fs::read(&keep).unwrap(), b"the user's data");
}

#[test]
fn a_device_with_a_mounted_partition_is_refused() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(d) = device(96 * MIB) else { return };
    let dev = d.loop_device.clone();
    one_partition(&dev);
    let part = format!("{dev}p1");
    let added = std::process::Command::new("partx")
        .args(["-a", &dev])
        .output()
        .unwrap();
    assert!(
        std::path::Path::new(&part).exists(),
        "partx made no {part}: {}",
        text(&added.stderr)
    );
    let mnt = d.mount_point.join("p1");
    std::fs::create_dir(&mnt).unwrap();
    sh("mkfs.ext4", &["-q", "-F", &part]);
    sh("mount", &[&part, &mnt.display().to_string()]);
    let o = run_device(
        &dev,
        &[
            "--destroy-existing-data",
            "--tests",
            "0",
            "--file-size",
            "4m",
        ],
    );
    let err = text(&o.stderr);
    sh("umount", &[&mnt.display().to_string()]);
    let _ = std::process::Command::new("partx")
        .args(["-d", &dev])
        .output();
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains(&format!("{part} is mounted on")), "{err}");
}

#[test]
fn a_filesystem_is_refused_unless_told_to_destroy_it() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(mut fs) = ext4(64 * MIB) else { return };
    fs.unmount().expect("unmount the scratch ext4");
    let dev = fs.loop_device.clone();
    refused(
        &dev,
        &["--tests", "0", "--file-size", "4m"],
        &["holds an ext2/3/4 filesystem"],
    );
    let o = run_device(
        &dev,
        &[
            "--destroy-existing-data",
            "--tests",
            "0",
            "--file-size",
            "4m",
        ],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    // The superblock at 1 KiB was overwritten by candor's data.
    assert_ne!(read_at(&dev, 1080, 2), [0x53, 0xEF]);
}

#[test]
fn plans_that_do_not_fit_a_device_are_refused() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(d) = device(64 * MIB) else { return };
    let dev = d.loop_device.clone();
    refused(
        &dev,
        &["--tests", "0", "--file-size", "48m", "--threads", "2"],
        &["the plan needs"],
    );
    refused(
        &dev,
        &["--tests", "0", "--file-size", "4m", "--offset", "1000"],
        &["does not start on a logical block"],
    );
    refused(
        &dev,
        &["--tests", "0", "--file-size", "4m", "--offset", "64m"],
        &["beyond the end"],
    );
    refused(
        &dev,
        &["--tests", "create", "--file-size", "4m"],
        &["needs a filesystem"],
    );
    refused(
        &dev,
        &["--tests", "0", "--engine", "mmap", "--file-size", "4m"],
        &["cannot work on a slice"],
    );
    refused(
        &dev,
        &["--tests", "0", "--file-size", "4m", "--verify"],
        &["--verify"],
    );
}

#[test]
fn a_full_run_writes_its_region_and_nothing_else() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(d) = device(64 * MIB) else { return };
    let dev = d.loop_device.clone();
    let o = run_device(
        &dev,
        &[
            "--tests",
            "0,1,2",
            "--file-size",
            "8m",
            "--record-size",
            "64k",
            "--threads",
            "2",
            "--offset",
            "4m",
            "--repeat",
            "1",
            "--format",
            "json",
        ],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let doc: Value = serde_json::from_slice(&o.stdout).expect("JSON on stdout");
    assert_eq!(
        doc["options"]["direct"], true,
        "O_DIRECT by default on a device"
    );
    assert_eq!(doc["options"]["device_offset"], 4 * MIB);
    assert_eq!(doc["targets"][0]["fs_type"], "raw device");
    assert_eq!(doc["targets"][0]["total_bytes"], 64 * MIB);
    let results = doc["results"].as_array().unwrap();
    let tests: Vec<&str> = results
        .iter()
        .map(|r| r["test"].as_str().unwrap())
        .collect();
    assert_eq!(
        tests,
        [
            "write",
            "rewrite",
            "read",
            "reread",
            "randread",
            "randwrite"
        ]
    );
    for r in results {
        assert_eq!(r["status"], "ok", "{}: {}", r["test"], r["error"]);
        assert_eq!(r["direct"], true);
        let per_thread = r["thread_aggregate"]["per_thread_bytes"]
            .as_array()
            .unwrap();
        assert_eq!(per_thread.len(), 2);
        assert!(per_thread.iter().all(|b| b == 8 * MIB), "{}", r["test"]);
    }
    // The witness counts this device: with the eBPF witness, the bytes the write test's
    // requests carried to it are the bytes written (O_DIRECT, no filesystem). Whether
    // eBPF works is the kernel's answer, not candor's: where it does, `auto` must have
    // loaded the eBPF witness.
    let w = &results[0]["witness"];
    let kernel_bpf = candor_testkit::kernel_bpf();
    if kernel_bpf.is_ok() {
        assert_eq!(
            w["source"], "bpf",
            "the kernel loads eBPF here, but the auto witness did not: {w}"
        );
        // diskstats counts every request; the eBPF programs all but the completions the
        // kernel did not hand them, which the witness counts and names (docs/bpf.md): each
        // is one 64 KiB record's request here.
        assert_eq!(w["device"]["write_bytes_in_window"], 16 * MIB, "{w}");
        let unseen = w["extra"]["bpf_completions_unseen"].as_u64().unwrap_or(0);
        assert!(unseen <= 2, "{unseen} completions unseen: {w}");
        assert_eq!(
            w["block"]["write"]["bytes"],
            16 * MIB - unseen * 64 * 1024,
            "{w}"
        );
        assert_eq!(w["verdict"], "device", "{}", w["explanation"]);
    }
    // The region [4 MiB, 20 MiB) holds candor's data; before and after it, zeros.
    let zero = vec![0u8; 4 * MIB as usize];
    assert_eq!(
        read_at(&dev, 0, 4 * MIB as usize),
        zero,
        "before the offset"
    );
    for s in [4 * MIB, 12 * MIB] {
        assert!(
            read_at(&dev, s, MIB as usize).iter().any(|&b| b != 0),
            "thread slice at {s} holds data"
        );
    }
    let after = read_at(&dev, 20 * MIB, 44 * MIB as usize);
    assert!(after.iter().all(|&b| b == 0), "after the region");
    if let Err(why) = kernel_bpf {
        // Everything else was checked; the eBPF block bytes could not be.
        candor_testkit::skip(format!("the eBPF block bytes are not checked: {why}"));
    }
}

#[test]
fn the_default_run_works_on_a_device() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(d) = device(128 * MIB) else { return };
    let o = candor()
        .args([
            "run",
            "--allow-device-writes",
            &d.loop_device,
            "--quiet",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["options"]["default_run"], true);
    let results = doc["results"].as_array().unwrap();
    assert_eq!(results.len(), 8, "the default run's eight points");
    for r in results {
        assert_eq!(r["status"], "ok", "{}: {}", r["test"], r["error"]);
        assert_eq!(r["direct"], true);
        assert_eq!(
            r["file_size"],
            16 * MIB,
            "sized to the device (128 MiB / 8)"
        );
    }
}
