//! What each of these options changes, seen from outside candor: the system calls it makes
//! (strace), the bytes it leaves on a device, the lines it prints. `--buffered`,
//! `--buffer-pattern`, `--mix-read-pct`, `--quiet`, the `options` and `ceiling` presets,
//! `--fadvise` and the mmap engine's `madvise`, `doctor --no-load`, `compare --format
//! markdown`.

mod common;

use common::{candor, need_programs, read_at, text, MIB};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A directory on the disk (not tmpfs, where O_DIRECT is refused).
fn scratch() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("candor-flag-effects-")
        .tempdir_in("/var/tmp")
        .expect("a directory under /var/tmp")
}

/// For a run under strace: a scratch directory and, in it, an empty directory `t` to run
/// in; None after a skip when strace is missing.
fn traced_scratch() -> Option<(tempfile::TempDir, PathBuf)> {
    if !need_programs(&["strace"]) {
        return None;
    }
    let dir = scratch();
    let work = dir.path().join("t");
    std::fs::create_dir(&work).unwrap();
    Some((dir, work))
}

fn json_of(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("the result file"))
        .expect("the result is JSON")
}

/// A zeroed loop device of `size` bytes, or None after a skip.
fn device(size: u64) -> Option<candor_lab::ScratchFs> {
    if !need_programs(&["losetup", "strace"]) {
        return None;
    }
    common::need_or(
        candor_lab::scratch_device(size),
        candor_lab::LabError::is_unsupported,
    )
}

/// The opens of `path` in an strace log.
fn opens_of<'a>(trace: &'a str, path: &str) -> Vec<&'a str> {
    let quoted = format!("\"{path}\"");
    trace
        .lines()
        .filter(|l| l.contains("open") && l.contains(&quoted) && !l.contains("= -1"))
        .collect()
}

/// On a block device the tests use O_DIRECT unless `--buffered` is given: the device's
/// data opens carry O_DIRECT without it and never with it, and the results say which.
#[test]
fn buffered_on_a_device_drops_o_direct() {
    let Some(d) = device(16 * MIB) else { return };
    let dev = d.loop_device.clone();
    let dir = scratch();
    for buffered in [false, true] {
        let json = dir.path().join(format!("buffered-{buffered}.json"));
        let mut args = vec![
            "run",
            "--allow-device-writes",
            &dev,
            "--tests",
            "write,read",
            "--file-size",
            "1m",
            "--record-size",
            "64k",
            "--witness",
            "off",
            "--quiet",
            "-o",
            json.to_str().unwrap(),
        ];
        if buffered {
            args.push("--buffered");
        }
        let (out, trace) = common::strace_candor(dir.path(), "open,openat,openat2", &args);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let opens = opens_of(&trace, &dev);
        let direct = opens.iter().filter(|l| l.contains("O_DIRECT")).count();
        if buffered {
            assert_eq!(direct, 0, "--buffered, yet O_DIRECT: {opens:#?}");
            assert!(
                opens
                    .iter()
                    .any(|l| l.contains("O_RDWR") || l.contains("O_WRONLY")),
                "--buffered: the device was not opened to write: {opens:#?}"
            );
        } else {
            assert!(direct >= 2, "no O_DIRECT open for the tests: {opens:#?}");
        }
        let doc = json_of(&json);
        assert_eq!(doc["options"]["direct"], !buffered);
        for r in doc["results"].as_array().unwrap() {
            assert_eq!(r["direct"], !buffered, "{}", r["test"]);
        }
    }
}

/// The bytes a write test leaves on a device are the pattern asked for: `zero`, all
/// zeros; `compressible=50%`, each 4 KiB block's first half zero and its second half
/// random; `random` (the default), no 4 KiB block with more zeros than random bytes hold
/// (16 on average in 4096; 11 to 20 measured).
#[test]
fn buffer_pattern_is_what_the_device_holds() {
    let Some(d) = device(16 * MIB) else { return };
    let dev = d.loop_device.clone();
    let dir = scratch();
    let write = |pattern: &str| {
        let json = dir.path().join("pattern.json");
        let o = candor()
            .args(["run", "--allow-device-writes", &dev])
            .args([
                "--tests",
                "write",
                "--file-size",
                "1m",
                "--record-size",
                "64k",
            ])
            .args(["--witness", "off", "--quiet", "-o"])
            .arg(&json)
            .args(["--buffer-pattern", pattern])
            .output()
            .expect("candor runs");
        assert!(o.status.success(), "{pattern}: {}", text(&o.stderr));
        assert_eq!(json_of(&json)["options"]["buffer_pattern"], pattern);
        let region = read_at(&dev, 0, MIB as usize);
        // Nothing past the 1 MiB region.
        assert!(
            read_at(&dev, MIB, MIB as usize).iter().all(|&b| b == 0),
            "{pattern}: bytes past the region"
        );
        region
    };
    let zeros = |b: &[u8]| b.iter().filter(|&&x| x == 0).count();
    let region = write("random");
    for (i, block) in region.chunks(4096).enumerate() {
        assert!(
            zeros(block) < 64,
            "random: block {i} has {} zeros",
            zeros(block)
        );
    }
    let region = write("compressible=50%");
    for (i, block) in region.chunks(4096).enumerate() {
        assert_eq!(
            zeros(&block[..2048]),
            2048,
            "compressible: block {i}'s first half"
        );
        assert!(
            zeros(&block[2048..]) < 64,
            "compressible: block {i}'s second half has {} zeros",
            zeros(&block[2048..])
        );
    }
    // After random bytes, zeros: the pattern wrote them.
    let region = write("zero");
    assert_eq!(
        zeros(&region),
        MIB as usize,
        "zero: the region is not all zeros"
    );
}

/// `--mix-read-pct` sets randmix's share of reads: of the 1024 4 KiB operations on a
/// 4 MiB file (counted with strace: the file is laid out in 1 MiB writes), 0% gives
/// 1024 writes, 100% 1024 reads, and 25% about 256 reads (the binomial's standard
/// deviation is 13.9; five of them allowed); the result's own counts agree.
#[test]
fn mix_read_pct_sets_the_share_of_reads() {
    let Some((dir, work)) = traced_scratch() else {
        return;
    };
    let calls = |pct: &str| -> (usize, usize) {
        let json = dir.path().join(format!("mix-{pct}.json"));
        let (out, trace) = common::strace_candor(
            &work,
            "pread64,pwrite64",
            &[
                "run",
                ".",
                "--tests",
                "randmix",
                "--file-size",
                "4m",
                "--record-size",
                "4k",
                "--engine",
                "psync",
                "--witness",
                "off",
                "--quiet",
                "--repeat",
                "1",
                "--mix-read-pct",
                pct,
                "-o",
                json.to_str().unwrap(),
            ],
        );
        assert!(out.status.success(), "{pct}: {}", text(&out.stderr));
        let n = |call: &str| {
            trace
                .lines()
                .filter(|l| l.contains(&format!("{call}(")))
                .filter(|l| l.contains(", 4096, ") && l.trim_end().ends_with("= 4096"))
                .count()
        };
        let (reads, writes) = (n("pread64"), n("pwrite64"));
        let doc = json_of(&json);
        let app = &doc["results"][0]["witness"]["app"];
        assert_eq!(doc["options"]["mix_read_pct"], pct.parse::<u64>().unwrap());
        assert_eq!(
            (app["read_bytes"].as_u64(), app["write_bytes"].as_u64()),
            (Some(reads as u64 * 4096), Some(writes as u64 * 4096)),
            "{pct}%: the result's counts"
        );
        (reads, writes)
    };
    assert_eq!(calls("0"), (0, 1024));
    assert_eq!(calls("100"), (1024, 0));
    let (reads, writes) = calls("25");
    assert_eq!(reads + writes, 1024);
    assert!(
        (256 - 70..=256 + 70).contains(&reads),
        "25%: {reads} reads of 1024"
    );
}

/// Without `--quiet`, on a terminal, candor draws a progress bar (█ and ░ with the
/// test's line); with it, none. (The bar is drawn on terminals only: `script` gives
/// candor one.)
#[test]
fn quiet_takes_the_progress_bar_away() {
    if !need_programs(&["script"]) {
        return;
    }
    let dir = scratch();
    let tty = |quiet: bool| -> String {
        let cmd = format!(
            "{} run {} --witness off --file-size 1m --record-size 64k --repeat 1 --tests write{}",
            env!("CARGO_BIN_EXE_candor"),
            dir.path().display(),
            if quiet { " --quiet" } else { "" }
        );
        let o = std::process::Command::new("script")
            .args(["-qec", &cmd, "/dev/null"])
            .output()
            .expect("script runs");
        assert!(o.status.success(), "{}", text(&o.stderr));
        text(&o.stdout)
    };
    let loud = tty(false);
    assert!(
        loud.contains("██████████████████████████████ 1/1")
            && loud.contains("[1/1] write 1M file, 64K records, 1 thread(s), QD 1"),
        "no progress bar:\n{loud}"
    );
    let quiet = tty(true);
    assert!(
        !quiet.contains('█') && !quiet.contains('░') && !quiet.contains("[1/1]"),
        "--quiet, yet a progress bar:\n{quiet}"
    );
    // The table is the same either way.
    assert!(quiet.contains("write") && quiet.contains("1m"), "{quiet}");
}

/// `options` and `ceiling` are chosen by the situation, not by name: `--preset options`
/// and `--preset ceiling` are refused (exit 2, one sentence naming the presets, nothing
/// left in the target). The `options` plan is what a plan option alone gets: iozone's
/// tests 0, 1, 2 (write, rewrite, read, reread, randread, randwrite), in 1 MiB records for
/// the sequential tests and 4 KiB for the random ones, on the default run's file (1 GiB,
/// halved until 8 files fit in the free space) unless given.
#[test]
fn the_options_preset_is_what_plan_options_alone_get() {
    let dir = scratch();
    for name in ["options", "ceiling"] {
        let o = candor()
            .args(["run", "--preset", name, "--witness", "off", "--quiet"])
            .arg(dir.path())
            .output()
            .expect("candor runs");
        assert_eq!(o.status.code(), Some(2), "{name}: {}", text(&o.stderr));
        assert_eq!(
            text(&o.stderr).trim(),
            format!("candor: '{name}' is not a preset: the presets are iozone, unixbench-copy")
        );
        assert!(common::entries(dir.path()).is_empty());
    }
    let plan = |extra: &[&str]| -> Vec<(String, u64, u64)> {
        let json = dir.path().join("options.json");
        let o = candor()
            .arg("run")
            .arg(dir.path())
            .args(["--witness", "off", "--quiet", "-o"])
            .arg(&json)
            .args(extra)
            .output()
            .expect("candor runs");
        assert!(o.status.success(), "{extra:?}: {}", text(&o.stderr));
        let doc = json_of(&json);
        std::fs::remove_file(&json).unwrap();
        assert_eq!(doc["options"]["default_run"], false);
        doc["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r["test"].as_str().unwrap().to_string(),
                    r["file_size"].as_u64().unwrap(),
                    r["record_size"].as_u64().unwrap(),
                )
            })
            .collect()
    };
    let tests = [
        "write",
        "rewrite",
        "read",
        "reread",
        "randread",
        "randwrite",
    ];
    let got = plan(&["--file-size", "4m"]);
    let want: Vec<(String, u64, u64)> = tests
        .iter()
        .map(|t| {
            let record = if t.starts_with("rand") { 4 << 10 } else { MIB };
            (t.to_string(), 4 * MIB, record)
        })
        .collect();
    assert_eq!(got, want, "--file-size 4m alone");
    // The default run's file: 1 GiB, halved until 8 of them fit in what df says is free.
    let df = std::process::Command::new("df")
        .args(["-B1", "--output=avail"])
        .arg(dir.path())
        .output()
        .expect("df runs");
    let free: u64 = text(&df.stdout)
        .lines()
        .nth(1)
        .and_then(|l| l.trim().parse().ok())
        .expect("df's free bytes");
    let mut file = 1u64 << 30;
    while file > 16 * MIB && 8 * file > free {
        file /= 2;
    }
    let got = plan(&["--tests", "write", "--record-size", "256k", "--repeat", "1"]);
    assert_eq!(
        got,
        [("write".to_string(), file, 256 << 10)],
        "--record-size alone"
    );
}

/// `--device-spec auto` measures the first target with the `ceiling` preset before the
/// plan: O_DIRECT through io_uring, rings of 16 entries for the 1 MiB sequential tests
/// and 64 for the 4 KiB random ones (io_uring_setup, seen with strace); the four figures
/// are saved as the measured ceiling.
#[test]
fn the_ceiling_preset_measures_at_depth_16_and_64() {
    if !need_programs(&["strace"]) {
        return;
    }
    let Some(fs) = common::scratch("ext4", 512 * MIB) else {
        return;
    };
    let target = fs.path().join("t");
    std::fs::create_dir(&target).unwrap();
    let json = fs.path().join("ceiling.json");
    let (out, trace) = common::strace_candor(
        &target,
        "io_uring_setup,openat",
        &[
            "run",
            ".",
            "--tests",
            "read",
            "--file-size",
            "1m",
            "--witness",
            "off",
            "--quiet",
            "--device-spec",
            "auto",
            "-o",
            json.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let rings: Vec<u32> = trace
        .lines()
        .filter_map(|l| l.split("io_uring_setup(").nth(1))
        .filter_map(|a| a.split(',').next()?.trim().parse().ok())
        .collect();
    // write and read at depth 16, randread and randwrite at 64, in that order (the plan's
    // own read test runs on psync).
    assert_eq!(rings, [16, 16, 64, 64], "io_uring rings");
    assert!(
        trace
            .lines()
            .any(|l| l.contains("O_DIRECT") && l.contains("openat(")),
        "no O_DIRECT open"
    );
    let doc = json_of(&json);
    let spec = &doc["options"]["device_spec"];
    assert_eq!(spec["source"], "measured", "{spec}");
    for k in ["seq_read", "seq_write", "iops_read", "iops_write"] {
        assert!(spec[k].as_f64().is_some_and(|v| v > 0.0), "{k}: {spec}");
    }
    assert!(common::entries(&target).is_empty());
}

/// `--fadvise auto` (the default) hints each test's files by what the test means:
/// sequential for read, random for randread; `--fadvise sequential` hints both
/// sequential; `none` gives no hint. The mmap engine gives its mapping the same advice
/// (madvise). Seen with strace, in the order the tests run; POSIX_FADV_DONTNEED (the
/// cache drop between tests) left out.
#[test]
fn fadvise_and_madvise_hint_what_the_test_means() {
    let Some((_dir, work)) = traced_scratch() else {
        return;
    };
    let hints = |extra: &[&str]| -> (Vec<String>, Vec<String>) {
        let mut args = vec![
            "run",
            ".",
            "--tests",
            "read,randread",
            "--file-size",
            "4m",
            "--record-size",
            "64k",
            "--witness",
            "off",
            "--quiet",
            "--repeat",
            "1",
        ];
        args.extend(extra);
        let (out, trace) = common::strace_candor(&work, "fadvise64,madvise", &args);
        assert!(out.status.success(), "{extra:?}: {}", text(&out.stderr));
        let fadvise = trace
            .lines()
            .filter(|l| l.contains("fadvise64(") && !l.contains("DONTNEED"))
            .filter_map(|l| l.split("POSIX_FADV_").nth(1)?.split(')').next())
            .map(str::to_string)
            .collect();
        // The mapping's advice: a 4 MiB mapping (the file), not the allocator's.
        let madvise = trace
            .lines()
            .filter(|l| l.contains("madvise(") && l.contains(", 4194304, "))
            .filter_map(|l| l.split("MADV_").nth(1)?.split(')').next())
            .map(str::to_string)
            .collect();
        (fadvise, madvise)
    };
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    assert_eq!(hints(&[]), (s(&["SEQUENTIAL", "RANDOM"]), vec![]));
    assert_eq!(
        hints(&["--fadvise", "auto"]),
        (s(&["SEQUENTIAL", "RANDOM"]), vec![])
    );
    assert_eq!(
        hints(&["--fadvise", "sequential"]),
        (s(&["SEQUENTIAL", "SEQUENTIAL"]), vec![])
    );
    assert_eq!(hints(&["--fadvise", "none"]), (vec![], vec![]));
    assert_eq!(
        hints(&["--engine", "mmap"]),
        (s(&["SEQUENTIAL", "RANDOM"]), s(&["SEQUENTIAL", "RANDOM"]))
    );
    assert_eq!(
        hints(&["--engine", "mmap", "--fadvise", "none"]),
        (vec![], vec![])
    );
}

/// `doctor --no-load` leaves the BPF programs unloaded: no BPF_PROG_LOAD at all (strace),
/// where without it doctor loads them; its line says "not tried (--no-load)".
#[test]
fn doctor_no_load_loads_no_program() {
    if !common::need_bpf() || !need_programs(&["strace"]) {
        return;
    }
    let dir = scratch();
    let loads = |no_load: bool| -> (usize, String) {
        let mut args = vec!["doctor"];
        if no_load {
            args.push("--no-load");
        }
        let target = dir.path().to_str().unwrap().to_string();
        args.push(&target);
        let (out, trace) = common::strace_candor(dir.path(), "bpf", &args);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let n = trace
            .lines()
            .filter(|l| l.contains("bpf(BPF_PROG_LOAD"))
            .count();
        (n, text(&out.stdout))
    };
    let (n, report) = loads(true);
    assert_eq!(n, 0, "--no-load, yet programs were loaded");
    let line = report
        .lines()
        .find(|l| l.trim_start().starts_with("BPF load"))
        .expect("a BPF load line");
    assert!(
        line.trim_end().ends_with("ok    not tried (--no-load)"),
        "{line}"
    );
    let (n, report) = loads(false);
    assert!(n > 0, "doctor without --no-load loaded nothing:\n{report}");
    assert!(
        report.contains("loaded and attached, then detached")
            || report.contains("loaded; not attached"),
        "{report}"
    );
}

/// `compare --format markdown` is Markdown: headings, and a pipe table with one row per
/// test whose cells are the two sides' figures, the ratio of their means as the result
/// files have them; the default format has no pipe table.
#[test]
fn compare_markdown_is_a_table_of_the_figures() {
    let dir = scratch();
    let work = dir.path().join("t");
    std::fs::create_dir(&work).unwrap();
    let side = |name: &str| {
        let json = dir.path().join(name);
        let o = candor()
            .arg("run")
            .arg(&work)
            .args([
                "--tests",
                "write,read",
                "--file-size",
                "1m",
                "--record-size",
                "64k",
            ])
            .args(["--repeat", "3", "--witness", "off", "--quiet", "-o"])
            .arg(&json)
            .output()
            .expect("candor runs");
        assert!(o.status.success(), "{}", text(&o.stderr));
        json
    };
    let (a, b) = (side("a.json"), side("b.json"));
    let compare = |format: Option<&str>| {
        let mut c = candor();
        c.arg("compare");
        if let Some(f) = format {
            c.args(["--format", f]);
        }
        let o = c.arg(&a).arg(&b).output().expect("candor runs");
        assert!(o.status.success(), "{}", text(&o.stderr));
        text(&o.stdout)
    };
    let md = compare(Some("markdown"));
    assert!(md.starts_with("# candor compare\n"), "{md}");
    assert!(md.contains("\n## Sides\n"), "{md}");
    let header = "| test | file | rec | thr | QD | A MB/s | A verdict | B MB/s | B verdict | B/A | significant |";
    let lines: Vec<&str> = md.lines().collect();
    let at = lines
        .iter()
        .position(|l| *l == header)
        .unwrap_or_else(|| panic!("no side-by-side header:\n{md}"));
    assert_eq!(
        lines[at + 1],
        "|---|---:|---:|---:|---:|---:|---|---:|---|---:|---|"
    );
    let mean = |path: &Path, test: &str| -> f64 {
        json_of(path)["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["test"] == test)
            .and_then(|r| r["throughput"]["mean"].as_f64())
            .unwrap()
    };
    for (i, test) in ["write", "read"].into_iter().enumerate() {
        let row = lines[at + 2 + i];
        let cells: Vec<&str> = row.trim_matches('|').split(" | ").map(str::trim).collect();
        assert_eq!(cells.len(), 11, "{row}");
        assert_eq!(cells[..5], [test, "1m", "64k", "1", "1"], "{row}");
        assert_eq!(cells[6], "unverified", "{row}");
        let ratio = mean(&b, test) / mean(&a, test);
        let shown: f64 = cells[9]
            .strip_suffix('x')
            .and_then(|r| r.parse().ok())
            .unwrap_or_else(|| panic!("B/A is not a ratio: {row}"));
        assert!(
            (shown - ratio).abs() <= 0.005 + 1e-9,
            "{test}: the table says {shown}x, the files {ratio}"
        );
        // p=0.123, or p<0.001 (escaped for markdown) when the two sides differ that much:
        // two runs of a 1 MiB file on a busy machine can.
        assert!(
            ["yes (p=", "no (p=", "yes (p\\<0.001)", "no (p\\<0.001)"]
                .iter()
                .any(|p| cells[10].starts_with(p)),
            "{row}"
        );
    }
    let table = compare(None);
    assert!(!table.lines().any(|l| l.starts_with('|')), "{table}");
    assert!(table.contains("Side by side"), "{table}");
}
