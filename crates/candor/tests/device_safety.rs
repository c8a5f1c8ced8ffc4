//! What candor refuses to overwrite on a raw block device (`--allow-device-writes`), on
//! loop devices made for each test: a signature of any format libblkid knows (a minix
//! filesystem, a swap area), a device another loop device uses as its backing file (an
//! offset loop, which leaves sysfs' `holders/` empty). (Holders in sysfs, device-mapper
//! and md, are read by `candor-engine`'s `device::tests::holders_of_the_device_and_of_its_
//! partitions_are_named` on a sysfs tree of its own: kernels without device-mapper, as
//! lightweight virtual machines often are, cannot make one here.)
//! Each refusal is exit 2, one sentence naming what was found, and the device (and what
//! lives on it) unchanged; a blank device is still written, with exactly the bytes
//! candor's plan says. Without root each test says "skipped: <reason>"; as root, a loop
//! device that cannot be made is a failure.

mod common;
use common::{need_programs, need_root, one_partition, refused, run_device, sh, text, MIB};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::process::Command;
use std::sync::Mutex;

/// The tests share the machine's loop devices: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// A bare loop device of `size` bytes (zeroed), or None after a skip (not root, or a
/// program in `programs` missing).
fn device(size: u64, programs: &[&str]) -> Option<candor_lab::ScratchFs> {
    if !need_root("for loop devices") || !need_programs(&[&["losetup"], programs].concat()) {
        return None;
    }
    Some(candor_lab::scratch_device(size).expect("a loop device as root"))
}

/// A loop device attached by the test itself; detached when dropped.
struct Loop(String);

impl Loop {
    fn attach(args: &[&str]) -> Loop {
        let mut all = vec!["-f", "--show"];
        all.extend_from_slice(args);
        Loop(sh("losetup", &all).trim().to_string())
    }

    fn name(&self) -> &str {
        self.0.trim_start_matches("/dev/")
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = Command::new("losetup").args(["-d", &self.0]).status();
    }
}

/// A mount made by the test; unmounted when dropped.
struct Mounted(std::path::PathBuf);

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_minix_filesystem_is_refused_even_with_allow_device_writes() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(d) = device(16 * MIB, &["mkfs.minix"]) else {
        return;
    };
    sh("mkfs.minix", &[&d.loop_device]);
    let err = refused(
        &d.loop_device,
        &["--tests", "0", "--file-size", "1m"],
        &["holds a minix filesystem", "libblkid", "wipefs"],
    );
    assert!(err.contains(&d.loop_device), "names the device: {err}");
}

#[test]
fn an_inactive_swap_area_is_refused_and_an_active_one_even_when_told_to_destroy() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(d) = device(16 * MIB, &["mkswap", "swapon", "swapoff"]) else {
        return;
    };
    sh("mkswap", &[&d.loop_device]);
    refused(
        &d.loop_device,
        &["--tests", "0", "--file-size", "1m"],
        &["swap"],
    );
    let on = Command::new("swapon")
        .arg(&d.loop_device)
        .output()
        .expect("swapon runs");
    if !on.status.success() {
        // A container may refuse swapon: the inactive refusal above is still checked.
        common::skip(format!(
            "swapon {} is refused here: {}",
            d.loop_device,
            text(&on.stderr).trim()
        ));
        return;
    }
    struct SwapOff<'a>(&'a str);
    impl Drop for SwapOff<'_> {
        fn drop(&mut self) {
            let _ = Command::new("swapoff").arg(self.0).status();
        }
    }
    let _off = SwapOff(&d.loop_device);
    refused(
        &d.loop_device,
        &[
            "--destroy-existing-data",
            "--tests",
            "0",
            "--file-size",
            "1m",
        ],
        &["an active swap area"],
    );
}

#[test]
fn an_offset_loop_on_the_device_is_refused_and_its_filesystem_stays_clean() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(a) = device(64 * MIB, &["mkfs.ext4", "e2fsck", "mount", "umount"]) else {
        return;
    };
    let b = Loop::attach(&["-o", "1048576", &a.loop_device]);
    sh("mkfs.ext4", &["-q", "-F", &b.0]);
    let mnt = tempfile::tempdir().expect("a mount point");
    sh("mount", &[&b.0, &mnt.path().display().to_string()]);
    let m = Mounted(mnt.path().to_path_buf());
    std::fs::write(mnt.path().join("keep.txt"), vec![7u8; 4 << 20]).unwrap();
    sh("sync", &[]);
    // holders/ says nothing of an offset loop: the case candor must still see.
    let holders = Path::new("/sys/class/block")
        .join(a.loop_device.trim_start_matches("/dev/"))
        .join("holders");
    assert_eq!(
        std::fs::read_dir(&holders).map(|r| r.count()).unwrap_or(0),
        0,
        "the kernel lists no holder of {}",
        a.loop_device
    );
    let err = refused(
        &a.loop_device,
        &[
            "--destroy-existing-data",
            "--tests",
            "0",
            "--file-size",
            "4m",
        ],
        &[b.name(), "backing file", "1048576", &a.loop_device],
    );
    assert!(err.contains("is in use"), "{err}");
    drop(m);
    // e2fsck -fn: exit 0 when the filesystem is clean, and no change made.
    let fsck = Command::new("e2fsck")
        .args(["-f", "-n", &b.0])
        .output()
        .expect("e2fsck runs");
    assert_eq!(
        fsck.status.code(),
        Some(0),
        "the ext4 on the offset loop is damaged: {}{}",
        text(&fsck.stdout),
        text(&fsck.stderr)
    );
}

#[test]
fn a_loop_on_a_partition_of_the_device_is_refused() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(d) = device(64 * MIB, &["sfdisk", "partx"]) else {
        return;
    };
    let dev = d.loop_device.clone();
    one_partition(&dev);
    struct Parts(String);
    impl Drop for Parts {
        fn drop(&mut self) {
            let _ = Command::new("partx").args(["-d", &self.0]).output();
        }
    }
    sh("partx", &["-a", &dev]);
    let _parts = Parts(dev.clone());
    let part = format!("{dev}p1");
    assert!(Path::new(&part).exists(), "partx made no {part}");
    let on_part = Loop::attach(&[&part]);
    // The partition table is a signature too: told to destroy it, the loop on the
    // partition is what refuses the device.
    refused(
        &dev,
        &[
            "--destroy-existing-data",
            "--tests",
            "0",
            "--file-size",
            "4m",
        ],
        &[
            "is in use",
            &format!("{} uses {part} as its backing file", on_part.name()),
        ],
    );
}

#[test]
fn a_blank_device_is_written_with_exactly_the_plans_bytes() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(d) = device(16 * MIB, &[]) else {
        return;
    };
    // Blank of any signature, but not zero: candor's zero buffers are then told apart from
    // what was there.
    {
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(&d.loop_device)
            .expect("open the device to fill it");
        f.write_all_at(&vec![0x5a; (16 * MIB) as usize], 0)
            .expect("fill the device");
        f.sync_all().expect("sync the device");
    }
    let o = run_device(
        &d.loop_device,
        &[
            "--tests",
            "0",
            "--file-size",
            "4m",
            "--record-size",
            "64k",
            "--offset",
            "4m",
            "--buffer-pattern",
            "zero",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let f = std::fs::File::open(&d.loop_device).expect("open the device");
    let mut all = vec![0u8; (16 * MIB) as usize];
    f.read_exact_at(&mut all, 0).expect("read the device");
    let region = (4 * MIB) as usize..(8 * MIB) as usize;
    assert!(
        all[region.clone()].iter().all(|&b| b == 0),
        "candor's region holds its zero buffers"
    );
    assert!(
        all[..region.start].iter().all(|&b| b == 0x5a)
            && all[region.end..].iter().all(|&b| b == 0x5a),
        "nothing outside the region changed"
    );
}

/// An exclusive open (`O_EXCL` on a block device: what mount, mkfs and another candor
/// take) of the device made while candor's run is writing it, or after it has opened the
/// device for its plan.
fn exclusive_open(dev: &str) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_EXCL)
        .open(dev)
}

/// docs/methodology.md: candor claims the device with `O_EXCL` before it writes and holds
/// the claim for the whole run, so a mount, an mkfs or a second candor cannot take the
/// device in the middle of it. While a run works on the device (seen by its run of
/// `--time-based` writes, 3 s), every exclusive open the test tries is refused with EBUSY;
/// once the run has ended, the same open succeeds.
#[test]
fn the_exclusive_claim_is_held_for_the_whole_run() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(d) = device(64 * MIB, &[]) else {
        return;
    };
    drop(exclusive_open(&d.loop_device).expect("nothing holds the blank device before the run"));
    let mut child = common::candor()
        .args(["run", "--allow-device-writes", &d.loop_device, "--quiet"])
        .args([
            "--tests",
            "write",
            "--file-size",
            "16m",
            "--record-size",
            "64k",
            "--time-based",
            "--runtime",
            "3s",
            "--repeat",
            "1",
            "--witness",
            "off",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("candor starts");
    // Wait for candor to hold the device: the first exclusive open that fails.
    let start = std::time::Instant::now();
    loop {
        match exclusive_open(&d.loop_device) {
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => break,
            Err(e) => panic!("an exclusive open failed otherwise than busy: {e}"),
            Ok(f) => drop(f),
        }
        assert!(
            child.try_wait().expect("poll candor").is_none(),
            "the run ended before the device was ever seen claimed"
        );
        assert!(
            start.elapsed() < std::time::Duration::from_secs(20),
            "candor never claimed the device"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    // From then on, every try while candor runs is refused.
    let mut refused_tries = 0;
    while child.try_wait().expect("poll candor").is_none() {
        match exclusive_open(&d.loop_device) {
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => refused_tries += 1,
            Err(e) => panic!("an exclusive open failed otherwise than busy: {e}"),
            Ok(_) => {
                // The run releases the device as it ends: only then may an open succeed,
                // so candor must be gone (its report written) within a second of it.
                let released = std::time::Instant::now();
                while child.try_wait().expect("poll candor").is_none() {
                    assert!(
                        released.elapsed() < std::time::Duration::from_secs(1),
                        "the device was free while the run went on ({refused_tries} refusals before)"
                    );
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                break;
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("candor ends");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        refused_tries >= 50,
        "only {refused_tries} exclusive opens were tried while the run held the device (3 s at one per 20 ms)"
    );
    drop(exclusive_open(&d.loop_device).expect("the claim is released when the run ends"));
}
