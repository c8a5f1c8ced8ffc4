//! The timeline and the memory/file-cache figures on real I/O: a buffered write on a
//! fresh ext4 on a loop device, watched with a short sampling interval. The timeline's
//! rates, integrated over time, must add up to the window's byte counts, and the dirty
//! memory and dirty pages of the file must show the data waiting in the page cache.

use candor_witness::{Config, Mode, Outcome, Witness};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

const MIB: u64 = 1 << 20;

#[test]
fn the_timeline_adds_up_to_the_window_and_dirty_data_shows() {
    let Some(fs) = candor_testkit::need_or(
        candor_lab::scratch("ext4", 512 * MIB),
        candor_lab::LabError::is_unsupported,
    ) else {
        return;
    };
    let file = fs.path().join("f");
    let (w, _) = Witness::new(
        fs.path(),
        Config {
            mode: Mode::Procfs,
            interval: Duration::from_millis(20),
            trace_syscalls: false,
            job: Vec::new(),
        },
    );
    let mut f = std::fs::File::create(&file).expect("create");
    let block = vec![0xa5u8; MIB as usize];
    let mut watch = w.begin(std::slice::from_ref(&file));
    let t0 = Instant::now();
    // Pace the writes so that the timeline has several points.
    for _ in 0..64 {
        f.write_all(&block).expect("write");
        std::thread::sleep(Duration::from_millis(2));
    }
    let seconds = t0.elapsed().as_secs_f64();
    watch.timed_end();
    // SAFETY: fsync on the fd we hold (the runner's untimed flush).
    assert_eq!(unsafe { libc::fsync(f.as_raw_fd()) }, 0);
    let out = watch.finish(&Outcome {
        test: "write".into(),
        intent: candor_model::Intent::Device,
        is_write: true,
        app_write_bytes: 64 * MIB,
        timed_seconds: seconds,
        headline_bps: (64 * MIB) as f64 / seconds,
        ..Default::default()
    });

    let tl = &out.timeline;
    assert!(
        tl.len() >= 4,
        "{} points over {seconds:.3} s at 20 ms",
        tl.len()
    );
    assert!(tl.windows(2).all(|p| p[0].t < p[1].t));
    // Integrate the rates back into bytes: the intervals tile the window exactly.
    let mut prev_t = 0.0;
    let (mut app_w, mut dev_w) = (0.0, 0.0);
    for p in tl {
        let dt = p.t - prev_t;
        app_w += p.app_write_bps * dt;
        dev_w += p.device_write_bps * dt;
        prev_t = p.t;
    }
    let wchar = out.process_io.as_ref().map_or(0, |p| p.wchar) as f64;
    assert!(
        app_w >= 64.0 * MIB as f64 * 0.99 && app_w <= wchar * 1.01,
        "timeline app bytes {app_w}, wchar {wchar}"
    );
    let dev = out.device.as_ref().expect("device");
    let in_window = dev.write_bytes_in_window as f64;
    assert!(
        (dev_w - in_window).abs() <= in_window * 0.01 + 4096.0,
        "timeline device bytes {dev_w}, window {in_window}"
    );
    // The data waited in the page cache when the timer stopped...
    let mem = out.memory.as_ref().expect("memory");
    assert!(
        mem.dirty_peak >= 48 * MIB,
        "dirty peak {} MiB",
        mem.dirty_peak / MIB
    );
    let fc = out.file_cache.as_ref().expect("file cache");
    assert_eq!(fc.file_pages, 64 * MIB / 4096);
    assert_eq!(fc.resident_after, fc.file_pages);
    if fc.method == "cachestat" {
        let dirty = fc.dirty_after.expect("cachestat sees dirty pages");
        assert!(dirty * 10 >= fc.file_pages * 9, "{dirty} dirty pages");
    }
    // ...and reached the device with the flush after it.
    assert!(
        dev.write_bytes >= 64 * MIB,
        "device wrote {} MiB",
        dev.write_bytes / MIB
    );
    assert_eq!(
        out.verdict,
        candor_model::Verdict::Cache,
        "{}",
        out.explanation
    );
}
