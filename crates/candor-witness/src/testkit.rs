//! Facts of typical repetitions, for the unit tests of the rules, the explanations and the
//! merging of repetitions.

use candor_model::{DiskDelta, Facts, Intent, Placement, ProcessIo};

pub const MIB: u64 = 1 << 20;
/// This machine's RAM (24 GiB less the kernel's share), as /proc/meminfo gives it.
pub const RAM: u64 = 24730032 * 1024;

pub fn dev() -> Placement {
    Placement::Device {
        name: "loop0".into(),
    }
}

pub fn read_facts(app: u64, own_read: u64, dev_read: u64, intent: Intent) -> Facts {
    Facts {
        test: "read".into(),
        intent,
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
        own_window: Some(ProcessIo {
            rchar: app,
            read_bytes: own_read,
            ..Default::default()
        }),
        own_total: Some(ProcessIo {
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

pub fn write_facts(app: u64, window: u64, total: u64, own_write: u64) -> Facts {
    Facts {
        test: "write".into(),
        intent: Intent::Device,
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
        own_window: Some(ProcessIo {
            wchar: app,
            write_bytes: own_write,
            ..Default::default()
        }),
        own_total: Some(ProcessIo {
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
