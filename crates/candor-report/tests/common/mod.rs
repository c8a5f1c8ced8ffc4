//! Result documents built in code with realistic values, shared by the report tests, and the
//! expected-file helper (`UPDATE_EXPECT=1` rewrites the expected files).

#![allow(dead_code)]

use candor_model::*;
use std::path::PathBuf;

pub fn summary(samples: &[f64]) -> Summary {
    candor_stats::summarize(samples)
}

/// A latency histogram around `p50_ns` with a tail, recorded into candor's own histogram.
pub fn histogram(p50_ns: u64, n: u64) -> (HistogramDump, Latency) {
    let mut h = candor_stats::Histogram::new();
    for i in 0..n {
        // A body spread ±30% around the median and 2% of slow operations up to 20x.
        let f = (i % 61) as f64 / 60.0;
        let v = p50_ns as f64 * (0.7 + 0.6 * f);
        let v = if i % 50 == 7 {
            v * (4.0 + (i % 7) as f64 * 2.5)
        } else {
            v
        };
        h.record(v as u64);
    }
    (h.dump(), h.latency())
}

/// A target on `dev`. A loop device is described as the run describes one: counted on its
/// own, its model naming the backing file and the disk beneath it, and that disk's rotational
/// flag (a virtio disk reports 1).
pub fn target(path: &str, fs: &str, dev: &str, model: &str, rot: bool) -> TargetInfo {
    if dev.starts_with("loop") {
        let mut t = target(path, fs, "vda", model, rot);
        if let Some(d) = t.device.as_mut() {
            d.name = dev.into();
            d.counted = vec![dev.into()];
            d.model =
                format!("loop device backed by /var/lab/.candor-lab/{fs}.img on vda (virtio_blk)");
            d.rotational = true;
            d.size_bytes = 2 << 30;
        }
        t.mount_source = format!("/dev/{dev}");
        return t;
    }
    TargetInfo {
        path: path.into(),
        fs_type: fs.into(),
        mount_point: path.into(),
        mount_source: format!("/dev/{dev}"),
        mount_options: "rw,relatime".into(),
        free_bytes: 3 << 30,
        total_bytes: 4 << 30,
        device: Some(BlockDevice {
            name: dev.into(),
            counted: vec![dev.into()],
            model: model.into(),
            rotational: rot,
            size_bytes: 4 << 30,
            scheduler: "none".into(),
            logical_block_size: 512,
            physical_block_size: 4096,
        }),
    }
}

/// One result with `reps` repetitions around `mb_s` (spread `spread` as a share).
#[allow(clippy::too_many_arguments)]
pub fn result(
    target: &str,
    test: &str,
    file: u64,
    rec: u64,
    threads: u32,
    depth: u32,
    mb_s: f64,
    spread: f64,
    verdict: &str,
) -> TestResult {
    let samples: Vec<f64> = [1.0 - spread, 1.0 + spread * 0.4, 1.0 + spread * 0.6]
        .iter()
        .map(|k| (mb_s * 1e6 * k).round())
        .collect();
    let tp = summary(&samples);
    let iops: Vec<f64> = samples.iter().map(|s| (s / rec as f64).round()).collect();
    let lat_ns = (rec as f64 / (mb_s * 1e6) * 1e9 * depth.max(1) as f64 * threads.max(1) as f64)
        .max(800.0) as u64;
    let (dump, lat) = histogram(lat_ns, 2000);
    let write = is_write_test(test);
    let intent = if ["reread", "freread", "repread", "repreadv"].contains(&test) {
        "cache"
    } else {
        "device"
    };
    let bytes = file * threads.max(1) as u64;
    let secs = bytes as f64 / (mb_s * 1e6);
    let reps: Vec<Repetition> = samples
        .iter()
        .enumerate()
        .map(|(i, s)| Repetition {
            bytes,
            ops: bytes / rec,
            seconds: bytes as f64 / s,
            io_seconds: bytes as f64 / s * if write { 0.8 } else { 1.0 },
            flush_seconds: if write { bytes as f64 / s * 0.2 } else { 0.0 },
            close_seconds: 0.0,
            truncated: false,
            started_s: 2.0 + i as f64 * (secs + 0.5),
            pinned: Vec::new(),
        })
        .collect();
    let dev_share = match verdict {
        "device" => 1.0,
        "cache" => 0.02,
        "mixed" => 0.4,
        _ => 0.0,
    };
    let app = if write {
        AppIo {
            read_bytes: 0,
            write_bytes: bytes,
        }
    } else {
        AppIo {
            read_bytes: bytes,
            write_bytes: 0,
        }
    };
    let dev_bytes = (bytes as f64 * dev_share) as u64;
    let timeline: Vec<TimelinePoint> = (0..=10)
        .map(|i| {
            let t = secs * i as f64 / 10.0;
            let app_bps = mb_s * 1e6;
            let dev_bps = app_bps * dev_share * if write && i < 8 { 0.5 } else { 1.0 };
            TimelinePoint {
                t,
                device_read_bps: if write { 0.0 } else { dev_bps },
                device_write_bps: if write { dev_bps } else { 0.0 },
                app_read_bps: if write { 0.0 } else { app_bps },
                app_write_bps: if write { app_bps } else { 0.0 },
                dirty_bytes: if write {
                    (i as u64 * bytes / 14).min(bytes)
                } else {
                    4096 * 3
                },
            }
        })
        .collect();
    let contradicts =
        intent == "device" && verdict == "cache" || intent == "cache" && verdict == "device";
    let explanation = match (verdict, contradicts) {
        ("device", false) => "The device moved 100% of the bytes the test asked for: this is the device's speed.".to_string(),
        ("cache", true) => "98% of these reads came from the page cache: this is memory speed. Use --direct, or a file larger than 3x RAM (72 GiB here).".to_string(),
        ("cache", false) => "The file was already in the page cache, as this test means: this is memory speed.".to_string(),
        ("mixed", _) => "40% of the bytes reached the device; the rest came from the page cache.".to_string(),
        (v, _) => format!("Verdict {v}."),
    };
    TestResult {
        target: target.into(),
        test: test.into(),
        engine: "psync".into(),
        file_size: file,
        record_size: rec,
        threads,
        iodepth: depth,
        direct: false,
        osync: false,
        fsync_in_timing: write,
        close_in_timing: false,
        intent: intent.parse().expect("an intent"),
        status: candor_model::Status::Ok,
        fadvise: candor_model::Fadvise::None,
        direction: None,
        access: None,
        error: None,
        repetitions: 3,
        throughput_without_flush: write
            .then(|| summary(&samples.iter().map(|s| s * 1.25).collect::<Vec<_>>())),
        throughput_with_flush: write.then(|| tp.clone()),
        throughput: tp,
        iops: summary(&iops),
        latency_ns: lat,
        latency_histogram: dump,
        cpu: Cpu {
            user_s: 0.05 * secs,
            sys_s: 0.4 * secs,
            wall_s: secs,
            cpu_pct: 45.0,
        },
        thread_aggregate: (threads > 1).then(|| ThreadAggregate {
            children_see: mb_s * 1e6 * 1.04,
            parent_sees: mb_s * 1e6,
            min_thread: mb_s * 1e6 / threads as f64 * 0.9,
            max_thread: mb_s * 1e6 / threads as f64 * 1.12,
            avg_thread: mb_s * 1e6 * 1.04 / threads as f64,
            stonewalled: false,
            per_thread_bytes: vec![file; threads as usize],
        }),
        reps,
        witness: Some(Witness {
            source: "procfs".into(),
            verdict: verdict.parse().expect("a verdict"),
            device_share: (verdict == "mixed").then_some(0.4),
            explanation,
            contradicts_intent: contradicts,
            unverified_reason: None,
            app,
            process_io: None,
            device: Some(DeviceIo {
                name: "loop0+vda".into(),
                read_bytes: if write { 0 } else { dev_bytes },
                write_bytes: if write { dev_bytes + dev_bytes / 50 } else { 0 },
                read_ios: if write { 0 } else { dev_bytes / rec.max(4096) },
                write_ios: if write { dev_bytes / rec.max(4096) } else { 0 },
                avg_request_bytes: rec.min(512 * 1024) as f64,
                util: 0.93,
                avg_latency_us: 180.0,
                write_bytes_in_window: dev_bytes / 2,
            }),
            cache_hit_ratio: (!write).then_some(1.0 - dev_share),
            write_amplification: write.then_some(1.02),
            flushed_in_window: write.then_some(0.5),
            disturbed: false,
            foreign_device_bytes: 0,
            precision: Some(0.01),
            memory: None,
            vmstat: Default::default(),
            io_pressure_us: None,
            file_cache: None,
            timeline,
            syscalls: None,
            block: None,
            cache_misses: None,
            operations: None,
            syscalls_check: None,
            traps: Vec::new(),
            extra: Default::default(),
        }),
        efficiency: None,
        verify: None,
        ranks: None,
        extra: Default::default(),
        ramp: None,
        precondition: None,
        steady_state: None,
    }
}

const K: u64 = 1024;
const M: u64 = 1024 * 1024;

fn host() -> Host {
    Host {
        hostname: "bench-1".into(),
        os: "Debian GNU/Linux 12 (bookworm)".into(),
        kernel: "6.1.0-27-amd64".into(),
        cpu_model: "AMD EPYC 7B13".into(),
        cores: 1,
        threads: 2,
        caches: vec![
            CpuCache {
                level: 1,
                kind: "Data".into(),
                size_bytes: 32 * K,
            },
            CpuCache {
                level: 2,
                kind: "Unified".into(),
                size_bytes: 512 * K,
            },
            CpuCache {
                level: 3,
                kind: "Unified".into(),
                size_bytes: 32 * M,
            },
        ],
        ram_bytes: 24 << 30,
    }
}

/// A run on one ext4 target: a size sweep of write/read/reread, a thread sweep of randread,
/// a depth sweep of randread, a read contradicted by the cache, a noisy randwrite, a failure.
pub fn sample_doc() -> RunDoc {
    let mut d = RunDoc::new(
        "run",
        [
            "candor",
            "run",
            "--tests",
            "write,read,reread,randread,randwrite",
            "--file-size",
            "64m,256m",
            "--record-size",
            "4k,64k,1m",
            "--threads",
            "1,2,4",
            "--repeat",
            "3",
            "-o",
            "r.json",
            "/mnt/ext4",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        "2026-11-22T01:00:00Z".into(),
    );
    d.candor_version = "0.1.0".into();
    d.finished_at = Some("2026-11-22T01:04:10Z".into());
    d.complete = true;
    d.host = host();
    d.targets = vec![target("/mnt/ext4", "ext4", "loop0", "", false)];
    let t = "/mnt/ext4";
    for (file, base) in [(64 * M, 1.0), (256 * M, 0.92)] {
        for (rec, f) in [(4 * K, 0.55), (64 * K, 0.9), (M, 1.0)] {
            d.results.push(result(
                t,
                "write",
                file,
                rec,
                1,
                1,
                310.0 * base * f,
                0.02,
                "device",
            ));
            d.results.push(result(
                t,
                "read",
                file,
                rec,
                1,
                1,
                480.0 * base * f,
                0.015,
                "device",
            ));
            d.results.push(result(
                t,
                "reread",
                file,
                rec,
                1,
                1,
                5200.0 * f,
                0.01,
                "cache",
            ));
        }
    }
    for (th, mb) in [(1, 41.0), (2, 79.0), (4, 118.0), (8, 121.0)] {
        d.results.push(result(
            t,
            "randread",
            256 * M,
            4 * K,
            th,
            1,
            mb,
            0.03,
            "device",
        ));
    }
    for (qd, mb) in [(4, 150.0), (16, 420.0), (32, 455.0)] {
        let mut r = result(t, "randread", 256 * M, 4 * K, 1, qd, mb, 0.02, "device");
        // Against a rated 95,000 IOPS.
        r.efficiency = Some(Efficiency {
            basis: "iops".into(),
            ceiling: 95000.0,
            source: "spec".into(),
            share: r.iops.mean / 95000.0,
        });
        d.results.push(r);
    }
    // A read that the cache answered although it meant the device.
    let mut r = result(t, "read", 16 * M, M, 1, 8, 6100.0, 0.01, "cache");
    r.engine = "io_uring".into();
    d.results.push(r);
    // Noisy random writes.
    d.results.push(result(
        t,
        "randwrite",
        256 * M,
        4 * K,
        1,
        1,
        36.0,
        0.3,
        "mixed",
    ));
    // A failed test keeps its place.
    let mut f = result(t, "randwrite", 256 * M, M, 1, 1, 1.0, 0.0, "device");
    f.status = candor_model::Status::Failed;
    f.error = Some("No space left on device (ENOSPC) after 180 MiB".into());
    f.throughput = Summary::default();
    f.throughput_without_flush = None;
    f.throughput_with_flush = None;
    f.iops = Summary::default();
    f.latency_ns = Latency::default();
    f.latency_histogram = HistogramDump::default();
    f.reps.clear();
    f.witness = None;
    d.results.push(f);
    d.warnings = vec!["randwrite 256m/4k varies by 20% between repetitions: use --repeat 5 or more, and a quiet machine.".into()];
    d
}

/// Source document 002's study: sequential and random read and write, three file sizes, three
/// repetitions, on `fs` over one device, as a run of its own.
pub fn study_doc(fs: &str, dev: &str, speed: f64) -> RunDoc {
    let mut d = RunDoc::new(
        "run",
        vec!["candor".into(), "run".into(), format!("/mnt/{fs}")],
        "2026-11-22T02:00:00Z".into(),
    );
    d.candor_version = "0.1.0".into();
    d.complete = true;
    d.host = host();
    let path = format!("/mnt/{fs}");
    d.targets = vec![target(&path, fs, dev, "Flash Disk", false)];
    for file in [M, 50 * M, 150 * M] {
        for (test, mb) in [
            ("read", 124.0),
            ("randread", 88.0),
            ("write", 95.0),
            ("randwrite", 70.0),
        ] {
            d.results.push(result(
                &path,
                test,
                file,
                M,
                1,
                1,
                mb * speed,
                0.03,
                "device",
            ));
        }
    }
    d
}

/// A 4-rank MPI run.
pub fn mpi_doc() -> RunDoc {
    let mut d = study_doc("nfs", "vda", 1.0);
    d.mpi = Some(MpiInfo {
        ranks: 4,
        nodes: 2,
        ranks_per_node: vec![2, 2],
        node_names: vec!["n1".into(), "n2".into()],
        shared_file: false,
        reorder: true,
        library: "Open MPI v4.1.4".into(),
        ..Default::default()
    });
    d.results.truncate(2);
    for (k, r) in d.results.iter_mut().enumerate() {
        let per_rank: Vec<serde_json::Value> = (0..4u32)
            .map(|rank| {
                let slow = if rank == 3 {
                    0.78
                } else {
                    1.0 - 0.02 * rank as f64
                };
                let base = r.throughput.mean / 4.0 * slow;
                let samples = [base * 0.98, base * 1.01, base * 1.01];
                serde_json::json!({
                    "rank": rank,
                    "node": if rank < 2 { "n1" } else { "n2" },
                    "status": "ok",
                    "bytes": r.file_size * 3,
                    "throughput": candor_stats::summarize(&samples),
                })
            })
            .collect();
        let mut notes = vec![
            "2 ranks shared n1: each rank's device counters include its neighbours' traffic"
                .to_string(),
        ];
        if k == 0 {
            notes.push("on n2 the reads were served by the page cache (71% hits), not the filesystem's storage".into());
        }
        r.ranks = candor_model::Spread::from_saved(serde_json::json!({
            "ranks": 4,
            "nodes": 2,
            "slowest_rank": 3,
            "fastest_rank": 0,
            "lagging_ranks": [3],
            "per_rank": per_rank,
            "notes": notes,
        }));
    }
    d
}

pub fn expected_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/expected")
        .join(name)
}

/// Compares `actual` with the expected file; `UPDATE_EXPECT=1` writes it instead.
pub fn expect(name: &str, actual: &str) {
    let p = expected_path(name);
    if std::env::var_os("UPDATE_EXPECT").is_some() {
        if let Some(dir) = p.parent() {
            std::fs::create_dir_all(dir).expect("create tests/expected");
        }
        std::fs::write(&p, actual).expect("write expected file");
        return;
    }
    let want = std::fs::read_to_string(&p).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; run with UPDATE_EXPECT=1 to create it",
            p.display()
        )
    });
    if want != actual {
        let diff_at = want
            .lines()
            .zip(actual.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(want.lines().count().min(actual.lines().count()));
        panic!(
            "{} differs from the rendered output at line {}:\n  expected: {:?}\n  actual:   {:?}\n(run with UPDATE_EXPECT=1 to accept)",
            p.display(),
            diff_at + 1,
            want.lines().nth(diff_at),
            actual.lines().nth(diff_at)
        );
    }
}

/// Source document 002's study as one run over three lab filesystems on one device.
pub fn study_run() -> RunDoc {
    let mut d = study_doc("ext4", "loop0", 1.0);
    d.command_line = [
        "candor",
        "run",
        "--tests",
        "read,randread,write,randwrite",
        "--file-size",
        "1m,50m,150m",
        "--record-size",
        "1m",
        "--repeat",
        "3",
        "/mnt/lab/ext4",
        "/mnt/lab/xfs",
        "/mnt/lab/btrfs",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    d.targets.clear();
    d.results.clear();
    for (fs, dev, speed) in [
        ("ext4", "loop0", 1.0),
        ("xfs", "loop1", 1.02),
        ("btrfs", "loop2", 0.81),
    ] {
        let mut one = study_doc(fs, dev, speed);
        let path = format!("/mnt/lab/{fs}");
        for t in &mut one.targets {
            t.path = path.clone();
            t.mount_point = path.clone();
        }
        for r in &mut one.results {
            r.target = path.clone();
            // btrfs writes more than it is asked to (copy-on-write metadata and checksums),
            // most of all for small random writes.
            if let (Some(w), "btrfs") = (r.witness.as_mut(), fs) {
                w.write_amplification = match r.test.as_str() {
                    "randwrite" => Some(2.94),
                    "write" => Some(1.31),
                    _ => None,
                };
            }
        }
        d.targets.extend(one.targets);
        d.results.extend(one.results);
    }
    d
}

/// A `candor audit` of iozone whose write figure left the fsync out.
pub fn audit_doc() -> RunDoc {
    let mut d = RunDoc::new(
        "audit",
        [
            "candor", "audit", "-o", "a.json", "--", "iozone", "-i0", "-i1", "-s", "64m", "-r",
            "4k",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        "2026-11-22T03:00:00Z".into(),
    );
    d.candor_version = "0.1.0".into();
    d.complete = true;
    d.host = host();
    d.targets = vec![target("/var/tmp", "ext4", "vda", "virtio_blk", true)];
    d.audit = candor_model::audit::AuditDoc::from_saved(serde_json::json!({
        "command": ["iozone", "-i0", "-i1", "-s", "64m", "-r", "4k"],
        "exit_message": null,
        "reconciliation": [
            {"test": "write", "program": "iozone", "direction": "write", "record_size": 4096,
             "file_size": 67108864, "threads": 1, "claimed_Bps": 904761344.0,
             "observed_syscall_Bps": 881000000.0, "observed_wall_Bps": 301000000.0, "ratio": 3.0058,
             "cache_share": null, "verdict": "overstated",
             "explanation": "iozone's timing ends before the fsync: with it, the write took 3.0x longer"},
            {"test": "read", "program": "iozone", "direction": "read", "record_size": 4096,
             "file_size": 67108864, "threads": 1, "claimed_Bps": 3821310000.0,
             "observed_syscall_Bps": 3790000000.0, "observed_wall_Bps": 3750000000.0, "ratio": 1.019,
             "cache_share": 1.0, "verdict": "agrees",
             "explanation": "all of it came from the page cache: memory speed, as iozone read a file it had just written"}
        ]
    }));
    d
}
