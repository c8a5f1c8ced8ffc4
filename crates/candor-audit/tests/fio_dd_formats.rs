//! fio's output formats (normal, terse versions 2 to 5, normal and terse together, json+) and
//! BusyBox's dd (with and without its third status line), from outputs captured on a
//! development machine (tests/data/README.md): every figure is read, none is left over, and
//! the figures are the ones printed.

use candor_audit::claims::{self, dd, fio, Claim, Direction};

fn text(path: &str) -> String {
    let p = format!("{}/tests/data/{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

fn one<'a>(c: &'a [Claim], test: &str, dir: Direction) -> &'a Claim {
    let f: Vec<&Claim> = c
        .iter()
        .filter(|c| c.test == test && c.direction == dir)
        .collect();
    assert_eq!(f.len(), 1, "{test} {dir:?}: {c:?}");
    f[0]
}

/// (file, terse version, job, direction, io KiB, bw KiB/s, IOPS, runtime ms, p50 us, p99 us),
/// the fields as fio printed them.
type Terse = (
    &'static str,
    u32,
    &'static str,
    Direction,
    u64,
    f64,
    f64,
    f64,
    f64,
    f64,
);

const TERSE: &[Terse] = &[
    (
        "fio-terse-v2-randread.txt",
        2,
        "rr",
        Direction::Read,
        146444,
        146151.0,
        36537.0,
        1002.0,
        14.0,
        30.0,
    ),
    (
        "fio-terse-v3-write.txt",
        3,
        "seqw",
        Direction::Write,
        32768,
        180043.0,
        2813.0,
        182.0,
        4.0,
        31.0,
    ),
    (
        "fio-terse-v4-randrw.txt",
        4,
        "mix",
        Direction::Read,
        15904,
        429837.0,
        26864.0,
        37.0,
        15.0,
        27.0,
    ),
    (
        "fio-terse-v4-randrw.txt",
        4,
        "mix",
        Direction::Write,
        16864,
        455783.0,
        28486.0,
        37.0,
        18.0,
        35.0,
    ),
];

#[test]
fn terse_versions_2_to_5_by_field_position() {
    for &(file, ver, job, dir, kib, bw, iops, ms, p50, p99) in TERSE {
        let p = fio::read(&text(&format!("fio/{file}")));
        assert!(p.unread.is_empty(), "{file}: {:?}", p.unread);
        let c = one(&p.claims, job, dir);
        assert_eq!(c.bytes, Some(kib * 1024), "{file}");
        assert_eq!(c.claimed_bps, bw * 1024.0, "{file}");
        assert_eq!(c.iops, Some(iops), "{file}");
        assert_eq!(c.seconds, Some(ms / 1000.0), "{file}");
        assert_eq!(c.latency_ns["p50"], p50 * 1000.0, "{file}");
        assert_eq!(c.latency_ns["p99"], p99 * 1000.0, "{file}");
        assert!(c.basis.contains(&format!("terse version {ver}")), "{file}");
        assert_eq!(c.line, 1, "{file}");
    }
    // Only the directions that moved data: the write job has no read claim.
    let w = fio::parse(&text("fio/fio-terse-v3-write.txt"));
    assert_eq!(w.len(), 1);
    // Version 5, two jobs: one line and one claim each (bandwidth and IOPS statistics add
    // six fields per direction).
    let v5 = fio::read(&text("fio/fio-terse-v5-read-2jobs.txt"));
    assert!(v5.unread.is_empty());
    assert_eq!(v5.claims.len(), 2);
    assert_eq!(v5.claims[0].claimed_bps, 5461333.0 * 1024.0);
    assert_eq!(v5.claims[1].claimed_bps, 6553600.0 * 1024.0);
    assert_eq!(v5.claims[1].line, 2);
    assert!(v5.claims.iter().all(|c| c.bytes == Some(32 << 20)));
}

#[test]
fn normal_and_terse_together_read_the_terse_figures_and_agree_with_the_normal_ones() {
    let t = text("fio/fio-normal-and-terse.txt");
    let p = fio::read(&t);
    assert!(p.unread.is_empty(), "{:?}", p.unread);
    assert_eq!(p.claims.len(), 2);
    let r = one(&p.claims, "rw", Direction::Read);
    let w = one(&p.claims, "rw", Direction::Write);
    assert_eq!(r.claimed_bps, 455529.0 * 1024.0);
    assert_eq!(w.claimed_bps, 508235.0 * 1024.0);
    // The normal part alone: "BW=445MiB/s" and "BW=496MiB/s", rounded by fio.
    let normal: String = t
        .lines()
        .filter(|l| !fio::is_terse(l))
        .map(|l| format!("{l}\n"))
        .collect();
    let n = fio::read(&normal);
    assert!(n.unread.is_empty(), "{:?}", n.unread);
    assert_eq!(n.claims.len(), 2);
    assert_eq!(
        one(&n.claims, "rw", Direction::Read).claimed_bps,
        445.0 * 1048576.0
    );
    assert_eq!(
        one(&n.claims, "rw", Direction::Write).claimed_bps,
        496.0 * 1048576.0
    );
    for (a, b) in [
        (r, one(&n.claims, "rw", Direction::Read)),
        (w, one(&n.claims, "rw", Direction::Write)),
    ] {
        assert!(
            (a.claimed_bps / b.claimed_bps - 1.0).abs() < 0.002,
            "{a:?} {b:?}"
        );
    }
    // Terse output is recognised without the program's name (a wrapper script).
    let argv = vec!["./bench.sh".to_string()];
    assert_eq!(claims::parse(&argv, &t, "").len(), 2);
}

#[test]
fn normal_output_with_group_reporting_and_json_plus() {
    let p = fio::read(&text("fio/fio-normal-group-2jobs.txt"));
    assert!(p.unread.is_empty());
    assert_eq!(p.claims.len(), 1);
    let c = &p.claims[0];
    assert_eq!((c.test.as_str(), c.threads), ("seqr", 2));
    assert_eq!(c.claimed_bps, 2133.0 * 1048576.0);
    assert_eq!(c.bytes, Some(64 << 20));
    assert_eq!(c.seconds, Some(0.030));
    assert_eq!(c.latency_ns["p50"], 49_000.0);
    assert_eq!(c.latency_ns["p99"], 24_249_000.0);
    let j = fio::read(&text("fio/fio-jsonplus-group.json"));
    assert!(j.unread.is_empty());
    assert_eq!(j.claims.len(), 1);
    let c = &j.claims[0];
    assert_eq!(c.direction, Direction::Write);
    assert_eq!(c.bytes, Some(67108864));
    assert_eq!(c.claimed_bps, 3947580235.0);
    assert_eq!(c.iops, Some(3764.705882));
    assert_eq!(c.threads, 2);
    assert!(c.flags.contains(&"direct".into()));
}

/// Every figure line of every fio fixture gives a claim: the normal output's "read:" and
/// "write:" lines, and each direction of a terse line that moved data.
#[test]
fn every_fio_figure_line_is_read() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/fio");
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let t = std::fs::read_to_string(e.path()).unwrap();
        let p = fio::read(&t);
        assert!(p.unread.is_empty(), "{name}: {:?}", p.unread);
        let terse = t.lines().any(fio::is_terse);
        for (i, l) in t.lines().enumerate() {
            let s = l.trim_start();
            let figure = if terse {
                fio::is_terse(l)
            } else {
                (s.starts_with("read: IOPS=")
                    || s.starts_with("write: IOPS=")
                    || s.starts_with("read : io=")
                    || s.starts_with("write: io="))
                    && !t.contains("\"jobs\"")
            };
            if figure {
                assert!(
                    p.claims.iter().any(|c| c.line == i + 1),
                    "{name}: line {} gave no figure",
                    i + 1
                );
            }
        }
        n += 1;
    }
    assert!(n >= 23, "{n}");
}

#[test]
fn a_terse_line_that_does_not_follow_its_version_is_named() {
    let t = text("fio/fio-terse-v3-write.txt");
    // Version 4 has a trim block that version 3 does not: relabelled, the fields no longer fit.
    let bad = t.replacen("3;fio-3.33", "4;fio-3.33", 1);
    let p = fio::read(&bad);
    assert!(p.claims.is_empty());
    assert_eq!(p.unread.len(), 1);
    assert_eq!(p.unread[0].line, 1);
    assert!(
        p.unread[0].why.contains("terse version 4"),
        "{}",
        p.unread[0].why
    );
    // A normal output's direction line without its figures.
    let n = text("fio/fio-normal-group-2jobs.txt")
        .replace("read: IOPS=2133, BW=", "read: IOPS=2133, XX=");
    let p = fio::read(&n);
    assert!(p.claims.is_empty());
    assert_eq!(p.unread.len(), 1);
    assert!(p.unread[0].text.contains("XX="));
}

fn dd_argv(args: &str) -> Vec<String> {
    std::iter::once("busybox")
        .chain(args.split_whitespace())
        .map(str::to_string)
        .collect()
}

/// BusyBox dd with its third status line: "67108864 bytes (64.0MB) copied, 0.146506
/// seconds, 436.8MB/s" (MB = 1024 x 1024 bytes).
#[test]
fn busybox_dd_third_status_line() {
    for (file, bytes, seconds, rate) in [
        ("dd-write-1M.txt", 67108864u64, 0.146506, 436.8 * 1048576.0),
        ("dd-read-4k.txt", 67108864, 0.007350, 8.5 * 1073741824.0),
        ("dd-small.txt", 1536, 0.002847, 526.9 * 1024.0),
        ("dd-direct.txt", 33554432, 0.102905, 311.0 * 1048576.0),
        ("dd-fsync.txt", 33554432, 0.093078, 343.8 * 1048576.0),
        ("dd-3G.txt", 3221225472, 1.988253, 1.5 * 1073741824.0),
        ("dd-zero.txt", 0, 0.000007, 0.0),
        ("dd-full.txt", 0, 0.000032, 0.0),
    ] {
        let t = text(&format!("dd/busybox/{file}"));
        let p = dd::read(&t);
        assert!(p.unread.is_empty(), "{file}: {:?}", p.unread);
        assert_eq!(p.claims.len(), 1, "{file}");
        let c = &p.claims[0];
        assert_eq!(c.bytes, Some(bytes), "{file}");
        assert_eq!(c.seconds, Some(seconds), "{file}");
        assert_eq!(c.claimed_bps, bytes as f64 / seconds, "{file}");
        assert_eq!(c.extra["printed_rate_Bps"], rate, "{file}");
        assert_eq!(c.line, 3 + usize::from(file == "dd-full.txt"), "{file}");
        // The printed rate is the same figure, rounded to four digits.
        if bytes > 0 {
            assert!((c.claimed_bps / rate - 1.0).abs() < 0.01, "{file}");
        }
    }
    let full = dd::parse(&text("dd/busybox/dd-full.txt"));
    assert!(full[0].flags.contains(&"error".into()));
    // Through the dispatcher, with the command line: the record size and the direction.
    let t = text("dd/busybox/dd-write-1M.txt");
    let c = claims::parse(
        &dd_argv("dd if=/dev/zero of=/var/tmp/x bs=1M count=64"),
        "",
        &t,
    );
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].record_size, Some(1 << 20));
    assert_eq!(c[0].direction, Direction::Write);
    // status=noxfer: no summary, no figure, nothing unread.
    let n = dd::read(&text("dd/busybox/dd-noxfer.txt"));
    assert!(n.claims.is_empty() && n.unread.is_empty());
}

/// Debian's BusyBox is built without the third status line: dd prints only its records, so
/// there is no figure to check (the audit shows the phases) and nothing is unread.
#[test]
fn busybox_dd_without_its_third_status_line_claims_nothing() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/dd/busybox-debian");
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let t = std::fs::read_to_string(e.path()).unwrap();
        let p = dd::read(&t);
        assert!(p.claims.is_empty() && p.unread.is_empty(), "{:?}", e.path());
        n += 1;
    }
    assert_eq!(n, 10);
    let t = text("dd/busybox-debian/dd-write-1M.txt");
    assert_eq!(t, "64+0 records in\n64+0 records out\n");
    // A summary line that is not dd's is named.
    let p = dd::read("1+0 records in\n1+0 records out\n512 bytes copied, soon, fast\n");
    assert_eq!(p.unread.len(), 1);
    assert_eq!(p.unread[0].line, 3);
}

/// fio 2.21 (normal, terse, JSON without bw_bytes and with clat in usec) and fio 2.2.10, whose
/// normal output is "read : io=16928KB, bw=83389KB/s, iops=5211, runt=   203msec" (KB = 1024).
#[test]
fn fio_2_releases() {
    let p = fio::read(&text("fio/fio-2.21-normal-randrw.txt"));
    assert!(p.unread.is_empty());
    assert_eq!(p.claims.len(), 2);
    assert_eq!(
        one(&p.claims, "mix", Direction::Read).claimed_bps,
        264.0 * 1048576.0
    );
    assert_eq!(one(&p.claims, "mix", Direction::Write).iops, Some(17200.0));
    let t = fio::read(&text("fio/fio-2.21-terse-v3-randread.txt"));
    assert!(t.unread.is_empty());
    let c = one(&t.claims, "rr", Direction::Read);
    assert_eq!(c.claimed_bps, 144352.0 * 1024.0);
    assert_eq!(c.bytes, Some(32768 * 1024));
    assert_eq!(c.seconds, Some(0.227));
    assert_eq!(c.latency_ns["p50"], 8000.0);
    let j = fio::read(&text("fio/fio-2.21-read.json"));
    let c = one(&j.claims, "r", Direction::Read);
    assert_eq!(c.claimed_bps, 2184533.0 * 1024.0);
    assert_eq!(c.bytes, Some(33554432));
    assert_eq!(c.iops, Some(17066.666667));
    assert_eq!(c.latency_ns["p50"], 54_000.0);
    assert_eq!(c.latency_ns["p99"], 94_000.0);
    assert!(c.printed.contains("2184533 KiB/s"), "{}", c.printed);

    let p = fio::read(&text("fio/fio-2.2.10-normal-randrw.txt"));
    assert!(p.unread.is_empty(), "{:?}", p.unread);
    assert_eq!(p.claims.len(), 2);
    let r = one(&p.claims, "mix", Direction::Read);
    assert_eq!(r.bytes, Some(16928 * 1024));
    assert_eq!(r.claimed_bps, 83389.0 * 1024.0);
    assert_eq!(r.iops, Some(5211.0));
    assert_eq!(r.seconds, Some(0.203));
    assert_eq!(r.latency_ns["p50"], 15_000.0);
    assert_eq!(r.latency_ns["p99"], 1_544_000.0);
    let w = one(&p.claims, "mix", Direction::Write);
    assert_eq!(w.claimed_bps, 78030.0 * 1024.0);
    assert_eq!(w.latency_ns["p99"], 1_704_000.0);
    let g = fio::read(&text("fio/fio-2.2.10-normal-group-2jobs.txt"));
    assert_eq!(g.claims.len(), 1);
    assert_eq!(g.claims[0].threads, 2);
    assert_eq!(g.claims[0].claimed_bps, 6400.0 * 1048576.0);
    assert_eq!(g.claims[0].bytes, Some(65536 * 1024));
    let rr = fio::read(&text("fio/fio-2.2.10-normal-randread-1s.txt"));
    let c = one(&rr.claims, "rr", Direction::Read);
    // bw is io over runt: 173716 KB over 1.001 s.
    assert_eq!(c.claimed_bps, 173542.0 * 1024.0);
    assert!((c.bytes.unwrap() as f64 / c.seconds.unwrap() / c.claimed_bps - 1.0).abs() < 1e-4);
    // The record size is on the command line only: the audit's dispatcher fills it.
    let argv: Vec<String> = ["fio", "--name=rr", "--rw=randread", "--bs=4k"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let c = claims::parse(&argv, &text("fio/fio-2.2.10-normal-randread-1s.txt"), "");
    assert_eq!(c[0].record_size, Some(4096));
}
