//! iozone's outputs as five releases print them (3.326, 3.430, 3.487, 3.489, 3.508; captured on a
//! development machine, see tests/data/iozone/README.md): every figure of every fixture is
//! read, none is left over, and the figures are the ones printed.

use candor_audit::claims::{iozone, Claim, Parsed};
use std::path::PathBuf;

const RELEASES: &[&str] = &["3.326", "3.430", "3.487", "3.489", "3.508"];

fn dir(rel: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/iozone")).join(rel)
}

fn text(rel: &str, name: &str) -> String {
    let p = dir(rel).join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn fixtures(rel: &str) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir(rel))
        .unwrap_or_else(|e| panic!("{rel}: {e}"))
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".txt"))
        .collect();
    v.sort();
    v
}

fn claim<'a>(c: &'a [Claim], test: &str, fs_kb: u64, rs_kb: u64) -> &'a Claim {
    let found: Vec<&Claim> = c
        .iter()
        .filter(|c| {
            c.test == test
                && c.file_size == Some(fs_kb * 1024)
                && c.record_size == Some(rs_kb * 1024)
        })
        .collect();
    assert_eq!(found.len(), 1, "{test} {fs_kb} kB {rs_kb} kB: {found:?}");
    found[0]
}

/// Asserts a figure as printed and as converted (iozone's kB is 1024 bytes).
fn figure(c: &[Claim], test: &str, fs_kb: u64, rs_kb: u64, printed: &str) {
    let x = claim(c, test, fs_kb, rs_kb);
    assert_eq!(
        x.printed,
        format!("{printed} kB/s"),
        "{test} {fs_kb} {rs_kb}"
    );
    let v: f64 = printed.parse().unwrap();
    assert_eq!(x.claimed_bps, v * 1024.0, "{test} {fs_kb} {rs_kb}");
}

/// The lines that carry figures, found without the parser: the rows under a table header
/// ("kB reclen", any case) up to "iozone test complete", and throughput mode's "Children
/// see" lines.
fn figure_lines(text: &str) -> Vec<usize> {
    let mut out = Vec::new();
    let mut in_table = false;
    for (i, l) in text.lines().enumerate() {
        let t = l.trim();
        let lower = t.to_ascii_lowercase();
        if lower.starts_with("kb") && lower.contains("reclen") {
            in_table = true;
        } else if t.starts_with("iozone test complete") {
            in_table = false;
        } else if (in_table && t.starts_with(|c: char| c.is_ascii_digit()))
            || t.starts_with("Children see throughput")
        {
            out.push(i + 1);
        }
    }
    out
}

fn read(rel: &str, name: &str) -> Parsed {
    iozone::read(&text(rel, name))
}

#[test]
fn every_figure_line_of_every_release_is_read() {
    let mut files = 0;
    for rel in RELEASES {
        let names = fixtures(rel);
        assert!(names.len() >= 6, "{rel}: {names:?}");
        for name in names {
            let t = text(rel, &name);
            let p = iozone::read(&t);
            assert!(p.unread.is_empty(), "{rel}/{name}: {:?}", p.unread);
            for line in figure_lines(&t) {
                assert!(
                    p.claims.iter().any(|c| c.line == line),
                    "{rel}/{name}: line {line} gave no figure"
                );
            }
            // Every claim of a table row is one of the row's printed figures.
            for c in &p.claims {
                let l = t.lines().nth(c.line - 1).unwrap();
                let printed = c.printed.split_whitespace().next().unwrap();
                if c.basis.contains("table") {
                    assert!(l.contains(printed), "{rel}/{name}: {c:?}");
                }
            }
            files += 1;
        }
    }
    assert!(files >= 45, "{files}");
}

/// The table and the `-R` section print the same figures: reading the table (where figures
/// touch) must give exactly what the Excel section (figures apart) gives, on every release.
#[test]
fn table_and_excel_section_agree_on_every_release() {
    for rel in RELEASES {
        let t = text(rel, "auto-excel-R.txt");
        let table = iozone::read(&t);
        let excel_only = &t[t.find("Excel output is below").expect("an Excel section")..];
        let excel = iozone::read(excel_only);
        assert!(table.unread.is_empty() && excel.unread.is_empty(), "{rel}");
        // 1 to 8 MB files: 9 + 10 + 11 + 12 record sizes, 13 tests each.
        assert_eq!(table.claims.len(), 42 * 13, "{rel}");
        assert_eq!(excel.claims.len(), 42 * 13, "{rel}");
        assert!(table.claims.iter().all(|c| c.basis.contains("table")));
        assert!(excel.claims.iter().all(|c| c.basis.contains("-R")));
        for x in &excel.claims {
            let c = claim(
                &table.claims,
                &x.test,
                x.file_size.unwrap() / 1024,
                x.record_size.unwrap() / 1024,
            );
            assert_eq!(c.claimed_bps, x.claimed_bps, "{rel} {x:?}");
        }
    }
}

#[test]
fn release_3_326_figures_that_touch_are_split_by_printf_widths() {
    let p = read("3.326", "table-i0-i1-i2.txt");
    assert_eq!(p.claims.len(), 12);
    // "927613527026168 37006609 401586131494892323464145"
    figure(&p.claims, "write", 65536, 1024, "9276135");
    figure(&p.claims, "rewrite", 65536, 1024, "27026168");
    figure(&p.claims, "read", 65536, 1024, "37006609");
    figure(&p.claims, "reread", 65536, 1024, "40158613");
    figure(&p.claims, "randread", 65536, 1024, "14948923");
    figure(&p.claims, "randwrite", 65536, 1024, "23464145");
    figure(&p.claims, "write", 65536, 4, "3266025");
    figure(&p.claims, "randwrite", 65536, 4, "3096280");
    // The record size touches the first figure: "      641130662619142951 ..."
    let a = read("3.326", "table-all-tests.txt");
    assert_eq!(a.claims.len(), 13);
    for (test, v) in [
        ("write", "11306626"),
        ("rewrite", "19142951"),
        ("read", "28803467"),
        ("reread", "31802709"),
        ("randread", "32311121"),
        ("randwrite", "21389241"),
        ("bkwdread", "25557620"),
        ("recrewrite", "64476552"),
        ("strideread", "26170815"),
        ("fwrite", "11002499"),
        ("frewrite", "16769823"),
        ("fread", "29096160"),
        ("freread", "27121052"),
    ] {
        figure(&a.claims, test, 16384, 64, v);
    }
    // Tests left out print blanks narrower than their figures (test_output[]).
    let g = read("3.326", "table-gaps-i0-i2-i5-i7.txt");
    assert_eq!(g.claims.len(), 14);
    for (test, v64, v2048) in [
        ("write", "11472738", "6706429"),
        ("rewrite", "25807169", "42661555"),
        ("randread", "25884936", "40356616"),
        ("randwrite", "26381805", "32372005"),
        ("strideread", "27767625", "48743934"),
        ("fread", "34277375", "42555879"),
        ("freread", "38012645", "51024046"),
    ] {
        figure(&g.claims, test, 16384, 64, v64);
        figure(&g.claims, test, 16384, 2048, v2048);
    }
    let w = read("3.326", "table-write-i0.txt");
    assert_eq!(w.claims.len(), 2);
    figure(&w.claims, "write", 65536, 1024, "6849548");
    figure(&w.claims, "rewrite", 65536, 1024, "27559982");
    // A build without pread: iozone says so and prints no table.
    let e = read("3.326", "table-all-tests-E.txt");
    assert!(e.claims.is_empty() && e.unread.is_empty());
    assert!(text("3.326", "table-all-tests-E.txt").contains("Pread tests not available"));
}

#[test]
fn release_3_430_figures() {
    let p = read("3.430", "table-all-tests-E.txt");
    assert_eq!(p.claims.len(), 17);
    figure(&p.claims, "write", 16384, 64, "1127828");
    figure(&p.claims, "recrewrite", 16384, 64, "63288926");
    figure(&p.claims, "freread", 16384, 64, "32571471");
    // "20844260 2158406733788614 33788614"
    figure(&p.claims, "pwrite", 16384, 64, "20844260");
    figure(&p.claims, "repwrite", 16384, 64, "21584067");
    figure(&p.claims, "pread", 16384, 64, "33788614");
    figure(&p.claims, "repread", 16384, 64, "33788614");
    let g = read("3.430", "table-gaps-i0-i2-i5-i7.txt");
    assert_eq!(g.claims.len(), 14);
    figure(&g.claims, "randread", 16384, 64, "29521139");
    figure(&g.claims, "strideread", 16384, 2048, "51832238");
    figure(&g.claims, "freread", 16384, 2048, "45126884");
    assert!(g
        .claims
        .iter()
        .all(|c| c.test != "read" && c.test != "fwrite"));
    let i = read("3.430", "table-i0-i1-i2.txt");
    assert_eq!(i.claims.len(), 12);
    figure(&i.claims, "write", 65536, 1024, "11233350");
    figure(&i.claims, "reread", 65536, 1024, "40960492");
    let w = read("3.430", "table-write-i0.txt");
    assert_eq!(w.claims.len(), 2);
    figure(&w.claims, "write", 65536, 1024, "9923818");
}

#[test]
fn release_3_487_figures() {
    let p = read("3.487", "table-all-tests-E.txt");
    assert_eq!(p.claims.len(), 17);
    // "7363217  619663410376187 10700958"
    figure(&p.claims, "pwrite", 16384, 64, "7363217");
    figure(&p.claims, "repwrite", 16384, 64, "6196634");
    figure(&p.claims, "pread", 16384, 64, "10376187");
    figure(&p.claims, "repread", 16384, 64, "10700958");
    figure(&p.claims, "recrewrite", 16384, 64, "27812578");
    let i = read("3.487", "table-i0-i1-i2.txt");
    assert_eq!(i.claims.len(), 12);
    figure(&i.claims, "write", 65536, 4, "883556");
    figure(&i.claims, "randwrite", 65536, 1024, "10618045");
}

#[test]
fn release_3_489_figures() {
    let p = read("3.489", "table-all-tests-E.txt");
    assert_eq!(p.claims.len(), 17);
    figure(&p.claims, "write", 16384, 64, "8388806");
    figure(&p.claims, "recrewrite", 16384, 64, "63996193");
    // "19005301 3156895328839731 31685400"
    figure(&p.claims, "pwrite", 16384, 64, "19005301");
    figure(&p.claims, "repwrite", 16384, 64, "31568953");
    figure(&p.claims, "pread", 16384, 64, "28839731");
    figure(&p.claims, "repread", 16384, 64, "31685400");
    // The new blanks (test_output[] of 3.434 on) with %9lld figures.
    let g = read("3.489", "table-gaps-i0-i2-i5-i7.txt");
    assert_eq!(g.claims.len(), 14);
    figure(&g.claims, "randwrite", 16384, 64, "28200638");
    figure(&g.claims, "strideread", 16384, 64, "27902922");
    figure(&g.claims, "fread", 16384, 2048, "37679165");
    figure(&g.claims, "freread", 16384, 2048, "42874489");
    let w = read("3.489", "table-write-i0.txt");
    assert_eq!(w.claims.len(), 2);
    figure(&w.claims, "rewrite", 65536, 1024, "8434475");
}

#[test]
fn release_3_508_figures() {
    let g = read("3.508", "table-gaps-i0-i2-i5-i7.txt");
    assert_eq!(g.claims.len(), 14);
    figure(&g.claims, "write", 16384, 64, "8184002");
    figure(&g.claims, "randread", 16384, 64, "26170815");
    figure(&g.claims, "strideread", 16384, 2048, "36576148");
    figure(&g.claims, "freread", 16384, 2048, "41178836");
    let w = read("3.508", "table-write-i0.txt");
    assert_eq!(w.claims.len(), 2);
    figure(&w.claims, "write", 65536, 1024, "2216296");
    let p = read("3.508", "table-all-tests-E.txt");
    assert_eq!(p.claims.len(), 17);
    figure(&p.claims, "write", 16384, 64, "10421823");
    figure(&p.claims, "recrewrite", 16384, 64, "64537104");
    figure(&p.claims, "strideread", 16384, 64, "38632368");
    figure(&p.claims, "repread", 16384, 64, "39005139");
    let i = read("3.508", "table-i0-i1-i2.txt");
    assert_eq!(i.claims.len(), 12);
    figure(&i.claims, "rewrite", 65536, 4, "2523510");
    figure(&i.claims, "randwrite", 65536, 1024, "24937199");
    let f = read("3.508", "table-fsync-close-e-c.txt");
    assert_eq!(f.claims.len(), 4);
    figure(&f.claims, "read", 32768, 64, "28947889");
    assert!(f
        .claims
        .iter()
        .all(|c| c.flags.contains(&"fsync_in_timing".into())
            && c.flags.contains(&"close_in_timing".into())));
}

#[test]
fn o_direct_ops_and_flags_on_every_release() {
    for (rel, write, randwrite) in [
        ("3.326", "914103", "533967"),
        ("3.430", "1091211", "1109131"),
        ("3.487", "210192", "262055"),
        ("3.489", "292039", "511713"),
        ("3.508", "942694", "999027"),
    ] {
        let d = read(rel, "table-odirect-I.txt");
        assert_eq!(d.claims.len(), 6, "{rel}");
        assert!(d.claims.iter().all(|c| c.flags == ["direct"]), "{rel}");
        figure(&d.claims, "write", 32768, 16, write);
        figure(&d.claims, "randwrite", 32768, 16, randwrite);
        let f = read(rel, "table-fsync-close-e-c.txt");
        assert_eq!(f.claims.len(), 4, "{rel}");
        assert!(
            f.claims[0].flags.contains(&"fsync_in_timing".into()),
            "{rel}"
        );
    }
    for (rel, write, randwrite) in [
        ("3.326", 165476.0, 299776.0),
        ("3.430", 16916.0, 302905.0),
        ("3.489", 125748.0, 270068.0),
        ("3.508", 161202.0, 584570.0),
    ] {
        let o = read(rel, "table-ops-O.txt");
        assert_eq!(o.claims.len(), 6, "{rel}");
        let w = claim(&o.claims, "write", 16384, 64);
        assert_eq!(w.iops, Some(write), "{rel}");
        assert_eq!(w.claimed_bps, write * 65536.0, "{rel}");
        assert!(w.printed.ends_with("ops/s"));
        assert_eq!(
            claim(&o.claims, "randwrite", 16384, 64).iops,
            Some(randwrite)
        );
    }
}

#[test]
fn throughput_mode_on_every_release() {
    for (rel, unit, children, parent, rereaders) in [
        ("3.326", "KB/sec", 9917801.00, 624342.79, 50148734.00),
        ("3.430", "kB/sec", 14182160.00, 959252.88, f64::NAN),
        ("3.487", "kB/sec", 9565591.00, 1740413.14, 21381013.00),
        ("3.489", "kB/sec", 8100938.50, 483609.95, f64::NAN),
        ("3.508", "kB/sec", 10141740.50, 1484461.72, f64::NAN),
    ] {
        let t = text(rel, "throughput-t2.txt");
        let p = iozone::read(&t);
        assert!(p.unread.is_empty(), "{rel}: {:?}", p.unread);
        let names: Vec<&str> = p.claims.iter().map(|c| c.test.as_str()).collect();
        assert_eq!(names, ["write", "rewrite", "read", "reread"], "{rel}");
        let w = &p.claims[0];
        assert_eq!(w.threads, 2, "{rel}");
        assert_eq!(w.file_size, Some(32 << 20), "{rel}");
        assert_eq!(w.record_size, Some(1 << 20), "{rel}");
        assert_eq!(w.claimed_bps, children * 1024.0, "{rel}");
        assert_eq!(w.extra["parent_sees_Bps"], parent * 1024.0, "{rel}");
        assert!(w.printed.ends_with(unit), "{rel}: {}", w.printed);
        for c in &p.claims {
            for k in [
                "parent_sees_Bps",
                "min_per_process_Bps",
                "max_per_process_Bps",
                "avg_per_process_Bps",
                "min_xfer_bytes",
                "cpu_pct",
            ] {
                assert!(c.extra.contains_key(k), "{rel} {}: no {k}", c.test);
            }
        }
        if !rereaders.is_nan() {
            assert_eq!(p.claims[3].claimed_bps, rereaders * 1024.0, "{rel}");
        }
    }
    // 3.326 printed a per-process minimum of 0: the writers were stonewalled.
    let p = read("3.326", "throughput-t2.txt");
    assert_eq!(p.claims[0].extra["min_xfer_bytes"], 0.0);
    assert!(p.claims[0].flags.contains(&"stonewalled".into()));
}

#[test]
fn a_line_that_cannot_be_read_is_named_with_its_reason() {
    let t = text("3.430", "table-i0-i1-i2.txt");
    // A row whose figures fit no column layout, and a "Children see" line for a test
    // iozone does not name.
    let bad = t.replace(" 11233350 28871286", " 11233350 2887128x")
        + "\tChildren see throughput for  2 sideways writers \t= 1.00 kB/sec\n";
    let p = iozone::read(&bad);
    assert_eq!(p.unread.len(), 2, "{:?}", p.unread);
    let row = t.lines().position(|l| l.contains("11233350")).unwrap() + 1;
    assert_eq!(p.unread[0].line, row);
    assert!(
        p.unread[0].why.contains("do not fit"),
        "{}",
        p.unread[0].why
    );
    assert!(p.unread[1].why.contains("sideways writers"));
    // The other row is still read.
    assert_eq!(p.claims.len(), 6);
    // A header whose words are not iozone's order is reported, not guessed.
    let h = t.replace("reread", "rereed");
    let p = iozone::read(&h);
    assert!(p.claims.is_empty());
    assert_eq!(p.unread.len(), 1);
    assert!(p.unread[0].why.contains("header"));
}

/// What `candor audit -o A.json -- iozone -i0 -s 256m -r 1m -f t.tmp` saw on each release
/// (eBPF: every write and fsync of the file), kept beside iozone's output of the same run:
/// reconciled again here, the default write test names the flush iozone left out of its
/// timing (iozone fsyncs after it stops the timer unless -e).
#[test]
fn the_default_write_test_names_the_flush_left_out_on_every_release() {
    for rel in ["3.326", "3.430", "3.489", "3.508"] {
        let t = text(rel, "audit-write-i0.txt");
        let saved: serde_json::Value =
            serde_json::from_str(&text(rel, "audit-write-i0.phases.json")).unwrap();
        let phases: Vec<candor_audit::Phase> =
            serde_json::from_value(saved["phases"].clone()).unwrap();
        assert_eq!(saved["source"], "bpf", "{rel}");
        let p = iozone::read(&t);
        assert!(p.unread.is_empty(), "{rel}: {:?}", p.unread);
        let names: Vec<&str> = p.claims.iter().map(|c| c.test.as_str()).collect();
        assert_eq!(names, ["write", "rewrite"], "{rel}");
        assert!(p
            .claims
            .iter()
            .all(|c| !c.flags.contains(&"fsync_in_timing".into())));
        let cwd = saved["cwd"].as_str().unwrap();
        let rows = candor_audit::reconcile(&p.claims, &phases, cwd, &|_, _, _| None);
        for (r, ph) in rows.iter().zip(&phases) {
            let fsync = ph.fsync_time_s.unwrap();
            assert!(fsync > 0.05, "{rel}: {fsync}");
            assert_eq!(r.verdict, "overstated", "{rel} {}", r.test);
            assert!(
                r.explanation.contains(&format!(
                    "the timer stopped before the fsync: {fsync:.2} s of flush were left out"
                )),
                "{rel} {}: {}",
                r.test,
                r.explanation
            );
            // Inside the write calls the figure holds; over open..close it does not.
            assert!(r.ratio.unwrap() > 1.5, "{rel}: {:?}", r.ratio);
        }
    }
}
