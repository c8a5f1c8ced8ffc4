//! Facts of typical repetitions, for the unit tests of the rules, the explanations and the
//! merging of repetitions.

use candor_model::{
    Access, DiskDelta, Facts, HistogramDump, Intent, OpFacts, Placement, ProcessIo, RequestFacts,
    RequestStat,
};

pub const MIB: u64 = 1 << 20;

/// Tests that make a scratch filesystem take this: the eBPF witness follows this test
/// process and its children, so another test's mkfs running meanwhile would be counted
/// in a test that checks the witness's counts exactly.
pub static SCRATCH: std::sync::Mutex<()> = std::sync::Mutex::new(());

pub fn scratch_lock() -> std::sync::MutexGuard<'static, ()> {
    SCRATCH.lock().unwrap_or_else(|e| e.into_inner())
}
/// This machine's RAM (24 GiB less the kernel's share), as meminfo gives it.
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

pub fn dump(b: &[(u64, u64)]) -> HistogramDump {
    HistogramDump {
        relative_error: 0.25,
        buckets: b.iter().map(|&(l, n)| [l, n]).collect(),
    }
}

/// 65536 random 4 KiB reads of which 30000 waited about 40 us on a request and the
/// rest were page-cache hits of about 2 us; the device's requests took 20-160 us.
pub fn random_read(requests: Option<u64>) -> Facts {
    let mut f = read_facts(256 * MIB, 256 * MIB, 256 * MIB, Intent::Device);
    f.ops = Some(OpFacts {
        count: 65536,
        latency: dump(&[(2048, 35536), (40960, 30000)]),
    });
    f.device_window.read_ios = 34000;
    f.device_window.read_ms = 34000 * 400 / 1000;
    f.requests = requests.map(|n| RequestFacts {
        read: RequestStat {
            count: n,
            bytes: 256 * MIB,
            latency: dump(&[(20480, 10000), (32768, 20000), (163840, 4000)]),
        },
        ..Default::default()
    });
    f.access = Some(Access::Random);
    f
}

/// 16384 O_DIRECT random 4 KiB writes (64 MiB, all on the device inside the timed region),
/// each taking about 40 us; the device's own write requests took 20-160 us.
pub fn direct_write() -> Facts {
    let mut f = write_facts(64 * MIB, 64 * MIB, 64 * MIB, 64 * MIB);
    f.test = "randwrite".into();
    f.direct = true;
    f.access = Some(Access::Random);
    f.threads = 1;
    f.ops = Some(OpFacts {
        count: 16384,
        latency: dump(&[(40960, 16384)]),
    });
    f.requests = Some(RequestFacts {
        write: RequestStat {
            count: 16384,
            bytes: 64 * MIB,
            latency: dump(&[(20480, 4000), (32768, 10000), (163840, 2384)]),
        },
        ..Default::default()
    });
    f
}

/// 16384 buffered 4 KiB writes of 4 us (65.5 ms of copying on one thread), `held` more of
/// 4 ms each held back by writeback, and the runner's flush of `flush` seconds; the timed
/// region is the copying, the held writes and (when `in_timing`) the flush.
pub fn buffered_write(held: u64, flush: f64, in_timing: bool, window: u64) -> Facts {
    let mut f = write_facts(64 * MIB, window, 64 * MIB, 64 * MIB);
    f.access = Some(Access::Sequential);
    f.threads = 1;
    let mut b = vec![(4096, 16384)];
    if held > 0 {
        b.push((4_194_304, held));
    }
    f.ops = Some(OpFacts {
        count: 16384 + held,
        latency: dump(&b),
    });
    f.flush_seconds = flush;
    f.flush_in_timing = in_timing;
    // Middles of the buckets: 4608 ns and 4718592 ns.
    f.timed_seconds = 16384.0 * 4608e-9 + held as f64 * 4718592e-9;
    if in_timing {
        f.timed_seconds += flush;
    }
    f
}
