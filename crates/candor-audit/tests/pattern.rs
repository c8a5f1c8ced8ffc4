//! `candor audit`'s machinery on a program whose every call is known (candor-pattern:
//! COUNT writes of SIZE bytes, one fsync, close; then COUNT reads of SIZE bytes).

use candor_audit::{audit, Direction, Exit, Options, SourceChoice};

/// True when the eBPF source must load here (root, a build with the programs, a kernel
/// with BTF and tracefs); otherwise skips. Where it is true, an audit that fails is a
/// failure.
/// Root and a kernel that loads eBPF (the kernel's answer, not candor-bpf's probe):
/// the audit's eBPF source must then work.
fn need_bpf() -> bool {
    candor_testkit::need_kernel_bpf("for eBPF")
}

/// How the program is started: under the procfs source each file stays open a few
/// sampling periods before its first and after its last call (CANDOR_PATTERN_HOLD_MS),
/// so every open..close is seen however the machine schedules the sampler; eBPF sees
/// every call and needs no hold.
fn launcher(source: SourceChoice) -> Vec<String> {
    match source {
        SourceChoice::Procfs => vec!["env".into(), "CANDOR_PATTERN_HOLD_MS=40".into()],
        _ => vec![],
    }
}

/// One audit at a time: the procfs source counts every child of this process as part of
/// the audited tree (orphans are re-parented to it), so parallel tests would see each other.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn run(source: SourceChoice, size: u64, count: u64) -> Option<candor_audit::Audit> {
    let _guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = std::env::temp_dir().join(format!(
        "candor-pattern-{}-{:?}",
        std::process::id(),
        source
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("pattern.dat");
    let mut argv = launcher(source);
    argv.extend([
        env!("CARGO_BIN_EXE_candor-pattern").to_string(),
        file.display().to_string(),
        size.to_string(),
        count.to_string(),
    ]);
    let opts = Options {
        source,
        pass_through: false,
        ..Options::default()
    };
    let a = audit(&argv, &opts);
    let _ = std::fs::remove_dir_all(&dir);
    Some(a.unwrap_or_else(|e| panic!("the audit could not run: {}", e.0)))
}

#[test]
fn every_call_of_a_known_pattern_with_ebpf() {
    if !need_bpf() {
        return;
    }
    let (size, count) = (65536u64, 256u64);
    let Some(a) = run(SourceChoice::Bpf, size, count) else {
        return;
    };
    assert_eq!(a.run.exit, Exit::Code(0), "{}", a.run.stderr);
    assert!(a.run.stdout.contains("pattern verified"));
    let on_file: Vec<_> = a
        .run
        .observed
        .phases
        .iter()
        .filter(|p| p.path.ends_with("/pattern.dat"))
        .collect();
    assert_eq!(on_file.len(), 2, "{on_file:#?}");
    let (w, r) = (on_file[0], on_file[1]);
    assert_eq!(w.direction(), Direction::Write);
    assert_eq!(w.write_bytes, size * count);
    assert_eq!(w.write_calls, Some(count));
    assert_eq!(w.fsync_count, Some(1));
    assert_eq!(w.record_sizes, vec![[size, count]]);
    assert_eq!(r.direction(), Direction::Read);
    assert_eq!(r.read_bytes, size * count);
    assert_eq!(r.read_calls, Some(count));
    assert!(
        w.close_s <= r.open_s,
        "the read phase follows the write phase"
    );
    assert!(w.fsync_time_s.unwrap_or(0.0) > 0.0);
    // An unknown program: the generic reader finds its two "N bytes in T s" figures,
    // one per clause of its line, each with the bytes it printed and its direction.
    assert_eq!(a.claims.len(), 2, "{:#?}", a.claims);
    assert!(a
        .claims
        .iter()
        .all(|c| c.basis == "generic" && c.bytes == Some(size * count)));
    assert_eq!(a.claims[0].direction, Direction::Write);
    assert_eq!(a.claims[1].direction, Direction::Read);
    assert_eq!(a.rows.len(), 2);
    assert!(
        a.rows.iter().all(|r| r.verdict != "overstated"),
        "{:#?}",
        a.rows
    );
}

#[test]
fn bytes_of_a_known_pattern_with_procfs() {
    // Large enough that the file stays open for many sampling periods.
    let (size, count) = (1u64 << 20, 192u64);
    let Some(a) = run(SourceChoice::Procfs, size, count) else {
        return;
    };
    assert_eq!(a.run.exit, Exit::Code(0), "{}", a.run.stderr);
    let on_file: Vec<_> = a
        .run
        .observed
        .phases
        .iter()
        .filter(|p| p.path.ends_with("/pattern.dat"))
        .collect();
    assert_eq!(
        on_file.len(),
        2,
        "one write and one read phase: {on_file:#?}"
    );
    let written: u64 = on_file.iter().map(|p| p.write_bytes).sum();
    let read: u64 = on_file.iter().map(|p| p.read_bytes).sum();
    assert_eq!(
        written,
        size * count,
        "stdout bytes are left out of the file's bytes"
    );
    assert_eq!(read, size * count);
    assert_eq!(on_file[0].direction(), Direction::Write);
    assert_eq!(on_file.last().map(|p| p.direction()), Some(Direction::Read));
}

fn iozone_like(source: SourceChoice) -> Option<candor_audit::Audit> {
    let _guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = std::env::temp_dir().join(format!(
        "candor-iozone-like-{}-{:?}",
        std::process::id(),
        source
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let mut argv = launcher(source);
    argv.extend([
        env!("CARGO_BIN_EXE_candor-pattern").to_string(),
        "--iozone-like".to_string(),
        dir.join("iozone.tmp").display().to_string(),
        "131072".to_string(),
        "1024".to_string(),
    ]);
    let opts = Options {
        source,
        pass_through: false,
        ..Options::default()
    };
    let a = audit(&argv, &opts);
    let _ = std::fs::remove_dir_all(&dir);
    Some(a.unwrap_or_else(|e| panic!("the audit could not run: {}", e.0)))
}

#[test]
fn iozone_layout_end_to_end_with_ebpf() {
    if !need_bpf() {
        return;
    }
    let Some(a) = iozone_like(SourceChoice::Bpf) else {
        return;
    };
    assert_eq!(a.run.exit, Exit::Code(0), "{}", a.run.stderr);
    let tests: Vec<&str> = a.rows.iter().map(|r| r.test.as_str()).collect();
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
    for r in &a.rows {
        assert_eq!(r.phases.len(), 1, "{r:#?}");
        assert_eq!(r.observed_bytes, Some(128 << 20), "{r:#?}");
        // The program's timer runs across its calls and the gaps between them, so its rate
        // is not above the rate inside the calls (the same 10% margin as before for the two
        // clocks); it is below it by whatever the gaps took (on a shared 2-CPU machine, a
        // 1 ms preemption in a 7 ms phase is 14%). It agrees with the phase's own time less
        // the flush, which holds the gaps too.
        let rs = r.ratio_syscall.unwrap_or(0.0);
        if r.direction == Direction::Write {
            assert!(rs > 0.0 && rs < 1.10, "{r:#?}");
            let timed = r.wall_s.unwrap_or(0.0) - r.fsync_time_s.unwrap_or(0.0);
            assert!(timed > 0.0, "{r:#?}");
            let rate = r.observed_bytes.unwrap_or(0) as f64 / timed;
            assert!((r.claimed_bps / rate - 1.0).abs() < 0.10, "{r:#?}");
            // The fsync is outside the timer, and the audit says so when it matters.
            assert_eq!(r.fsync_count, Some(1));
            if r.ratio.unwrap_or(0.0) > 1.05 {
                assert!(
                    r.explanation.contains("timer stopped before the fsync"),
                    "{}",
                    r.explanation
                );
            }
        }
    }
    // Random reads cover every record once: the highest offset read is the last record's,
    // 127 MiB, whose power-of-two bucket starts at 64 MiB: half of the 128 MiB file is
    // certainly reached.
    let rand = &a.rows[4];
    assert_eq!(rand.test, "randread");
    assert_eq!(
        rand.offset_reach,
        Some(0.5),
        "random reads cover the file: {rand:#?}"
    );
}

#[test]
fn iozone_layout_end_to_end_with_procfs() {
    let Some(a) = iozone_like(SourceChoice::Procfs) else {
        return;
    };
    assert_eq!(a.run.exit, Exit::Code(0), "{}", a.run.stderr);
    assert_eq!(a.rows.len(), 6);
    let matched = a.rows.iter().filter(|r| !r.phases.is_empty()).count();
    assert_eq!(
        matched, 6,
        "every test has its phase: {:#?}",
        a.run.observed.phases
    );
    // Each test is a reopen of the same file on the same descriptor: the phases are told
    // apart by the open flags and by the position starting over. Where one test ends
    // inside a tick is not known (pread leaves the position alone), so a boundary can move
    // a tick's worth of bytes between neighbours; the totals are kept.
    let total = |d: Direction| -> u64 {
        a.rows
            .iter()
            .filter(|r| r.direction == d)
            .map(|r| r.observed_bytes.unwrap_or(0))
            .sum()
    };
    // Bytes the program wrote to its stdout are taken out; if one tick reads the counters
    // just before candor has read those bytes from the pipe, they can stay with the file.
    assert!(
        total(Direction::Write).abs_diff(3 * (128 << 20)) <= 4096,
        "{}",
        total(Direction::Write)
    );
    let reads = total(Direction::Read) as f64;
    assert!(
        (reads / (3u64 * (128 << 20)) as f64 - 1.0).abs() < 0.02,
        "{reads}"
    );
    // Each test's file stays open 40 ms (8 sampling periods of 5 ms) before its first and
    // after its last call, so every boundary falls in a quiet gap and each row holds its
    // own 128 MiB: exactly, in every measured run. A write row may differ by the
    // program's stdout (its table, under 4 KiB) and a read row by the margin the read
    // total has above, as for the totals.
    for r in &a.rows {
        let b = r.observed_bytes.unwrap_or(0);
        let margin = match r.direction {
            Direction::Write => 4096,
            _ => 3 * (128 << 20) / 50,
        };
        assert!(
            b.abs_diff(128 << 20) <= margin,
            "{}: {b} bytes: {r:#?}",
            r.test
        );
    }
}
