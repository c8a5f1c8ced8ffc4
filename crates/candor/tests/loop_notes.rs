//! One story per row on loop devices that go through the host's page cache, as a user
//! runs them: a filesystem on one and the raw device itself. The row's `dev MB/s` is the
//! loop device's own bytes and shows the disk under it beside it; the note states of that
//! disk the share the column shows, says "memory speed" (not "partly") when the disk moved
//! nothing, and asks for no option the run used or would refuse.

mod common;
use candor_model::advice::conflict;
use candor_model::{RunDoc, TestResult};
use candor_report::view;
use common::{need_lab, scratch};
use std::process::Command;

fn losetup_direct_io_off(dev: &str) {
    let o = Command::new("losetup")
        .args(["--direct-io=off", dev])
        .output()
        .expect("losetup runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

fn run(args: &[&str]) -> RunDoc {
    let o = common::candor()
        .arg("run")
        .args(args)
        .args(["--repeat", "1", "--quiet", "--format", "json"])
        .output()
        .expect("candor runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).expect("a JSON document")
}

/// The share of the application's bytes a note says the disk under the loop device
/// (`disk`) moved, from the sentence that leads it.
fn stated_disk_share(note: &str, disk: &str) -> Option<f64> {
    let under = format!("the disk under the loop device ({disk})");
    let lead = &note[..note.find(": ")?];
    let pct_before = |at: usize| -> Option<f64> {
        let head = &lead[..at];
        let end = head.rfind('%')?;
        let start = head[..end]
            .rfind(|c: char| !c.is_ascii_digit())
            .map_or(0, |p| p + 1);
        Some(head[start..end].parse::<f64>().ok()? / 100.0)
    };
    if lead.starts_with("None of the written bytes reached") && lead.contains(&under) {
        return Some(0.0);
    }
    // "X% of the written bytes reached the disk ...", "Y% from the disk ...", "X% of the
    // bytes read came from the disk ...".
    for verb in [
        format!("reached {under}"),
        format!("from {under}"),
        format!("came from {under}"),
    ] {
        if let Some(p) = lead.find(&verb) {
            if !lead[..p].contains(", not ") {
                return pct_before(p);
            }
        }
    }
    // "X% of these reads came from <memory>, not from the disk ...".
    if lead.contains(&format!(", not from {under}")) {
        return pct_before(lead.find(" of these reads")?).map(|m| 1.0 - m);
    }
    None
}

/// Every row's column and note agree, and its advice fits; returns how many notes stated
/// a share of the disk.
fn rows_agree(doc: &RunDoc, loop_dev: &str) -> usize {
    let mut stated = 0;
    for r in &doc.results {
        let w = r.witness.as_ref().expect("a witness");
        let f = w.extra.facts.as_ref().expect("facts");
        let l = f.loop_device.as_ref().expect("the loop device's facts");
        assert_eq!(format!("/dev/{}", l.device), loop_dev);
        assert!(!l.direct_io);
        let disk = l
            .backing_disk
            .clone()
            .expect("the disk under the loop device");
        let e = &w.explanation;
        let cell = view::device_cell(r);
        eprintln!("{} {}: [{cell}] {} {e}", r.test, r.record_size, w.verdict);
        // dev MB/s: the loop device's own bytes, the disk under it beside them.
        let headline = r.throughput.mean;
        let dev = view::device_bps(r).expect("a dev MB/s figure");
        let (name, under) = view::disk_under_bps(r).expect("the disk under it, beside");
        assert_eq!(name, disk);
        assert!(cell.contains(&format!("({disk} ")), "{cell}");
        assert!(
            under <= dev * 1.001,
            "the disk moved at most the loop's bytes"
        );
        let column = under / headline;
        if let Some(share) = stated_disk_share(e, &disk) {
            stated += 1;
            assert!(
                (column - share).abs() <= 0.015 || (share == 0.01 && column < 0.01),
                "{} {}: the column shows {disk} at {:.1}% of the headline, the note says {:.0}%: {e}",
                r.test,
                r.record_size,
                column * 100.0,
                share * 100.0
            );
        }
        if column <= 0.05 {
            assert!(!e.contains("partly memory speed"), "{e}");
            assert_ne!(w.verdict, candor_model::Verdict::Device, "{e}");
        }
        if let Some(why) = conflict(e, &f.in_force()) {
            panic!("{} {}: {why}: {e}", r.test, r.record_size);
        }
    }
    stated
}

fn read_row(doc: &RunDoc) -> &TestResult {
    doc.results
        .iter()
        .find(|r| r.test == "read")
        .expect("a read row")
}

#[test]
fn a_filesystem_on_a_loop_device_without_direct_io() {
    if !need_lab() {
        return;
    }
    let Some(fs) = scratch("ext4", 384 << 20) else {
        return;
    };
    losetup_direct_io_off(&fs.loop_device);
    let dir = fs.path().display().to_string();
    let doc = run(&[
        &dir,
        "--tests",
        "write,read",
        "--file-size",
        "64m",
        "--record-size",
        "1m",
    ]);
    assert_eq!(doc.results.len(), 2);
    assert!(rows_agree(&doc, &fs.loop_device) >= 1);
    // The read of a file the run just wrote through the loop device: its pages are in the
    // host's page cache, and the disk under it reads (nearly) nothing.
    let w = read_row(&doc).witness.as_ref().unwrap();
    assert!(
        w.explanation.contains(
            "came from memory (the page cache, or the host's page cache under the loop device)"
        ),
        "{}",
        w.explanation
    );
    assert!(
        w.explanation
            .ends_with("Give the loop device direct I/O to its file (losetup --direct-io=on; candor lab does)."),
        "{}",
        w.explanation
    );
}

#[test]
fn a_raw_loop_device_without_direct_io() {
    if !need_lab() {
        return;
    }
    let d = candor_lab::scratch_device(256 << 20).expect("a loop device as root");
    losetup_direct_io_off(&d.loop_device);
    // A raw device is read and written with O_DIRECT by default: the page cache above the
    // loop device is bypassed, only the host's can serve.
    let doc = run(&[
        "--allow-device-writes",
        &d.loop_device,
        "--tests",
        "write,read",
        "--file-size",
        "64m",
        "--record-size",
        "1m",
    ]);
    assert_eq!(doc.results.len(), 2);
    rows_agree(&doc, &d.loop_device);
    let r = read_row(&doc);
    assert!(r.direct);
    let w = r.witness.as_ref().unwrap();
    let e = &w.explanation;
    assert!(!e.contains("(the page cache"), "O_DIRECT: {e}");
    if w.verdict == candor_model::Verdict::Cache {
        assert!(
            e.contains("of these reads came from the host's page cache under the loop device, not from the disk under the loop device"),
            "{e}"
        );
    }
    assert!(!e.contains("--direct "), "{e}");
}
