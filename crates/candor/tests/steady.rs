//! `--steady-state`, `--precondition` and `--ramp` through the real binary. The steady and
//! unsteady cases run on candor-faultfs, whose reads sleep as a slow device would: at a
//! fixed pace (steady, whatever else the machine does) or slower with every second (a load
//! that keeps changing), and both side by side, each target stopping at its own steady
//! round. Each verdict is checked against the rounds' own figures. The
//! preconditioning case runs as root on an ext4 on a loop device, where the witness sees
//! the device; tmpfs is refused.

mod common;
use candor_faultfs::{FaultFs, Faults, MountError};
use common::{entries, run_in, text};
use serde_json::Value;
use std::path::Path;
use std::process::Output;
use std::sync::Mutex;

/// The cases judged on time run one at a time, each alone among them.
static SERIAL: Mutex<()> = Mutex::new(());

fn doc(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status.code(),
        text(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON on stdout")
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("{v} is not a number"))
}

/// Mounts candor-faultfs with these faults over a fresh backing directory, or says why not.
fn faultfs(faults: &Faults) -> Option<(tempfile::TempDir, FaultFs)> {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let backing = dir.path().join("backing");
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&backing).expect("backing directory");
    std::fs::create_dir(&mnt).expect("mount point");
    let fs = common::need_or(FaultFs::mount(&backing, &mnt, faults), MountError::is_skip)?;
    Some((dir, fs))
}

/// The average, range share and least-squares slope excursion share of a window,
/// recomputed here from the figures the result lists.
fn window_figures(values: &[f64]) -> (f64, f64, f64) {
    let n = values.len() as f64;
    let avg = values.iter().sum::<f64>() / n;
    let max = values.iter().copied().fold(f64::MIN, f64::max);
    let min = values.iter().copied().fold(f64::MAX, f64::min);
    let xm = (n - 1.0) / 2.0;
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for (i, y) in values.iter().enumerate() {
        sxy += (i as f64 - xm) * (y - avg);
        sxx += (i as f64 - xm).powi(2);
    }
    let slope = sxy / sxx;
    (avg, (max - min) / avg, slope.abs() * (n - 1.0) / avg)
}

fn app_figures(rounds: &[Value]) -> Vec<f64> {
    rounds.iter().map(|r| f(&r["app_bps"])).collect()
}

const RANDREAD: &[&str] = &[
    "--tests",
    "randread",
    "--file-size",
    "1m",
    "--record-size",
    "64k",
    "--format",
    "json",
];

#[test]
fn a_device_at_a_fixed_pace_is_found_steady_from_its_rounds() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // Every read sleeps 10 ms: 64 KiB / 10 ms, about 6.5 MB/s, round after round (a late
    // wake-up on a busy machine is small beside 10 ms).
    let Some((_dir, fs)) = faultfs(&Faults::new().delay_us(10_000)) else {
        return;
    };
    let mut args = RANDREAD.to_vec();
    args.push("--steady-state=round=400ms,max=25");
    let d = doc(&run_in(fs.path(), &args));
    let r = &d["results"][0];
    assert_eq!(r["status"], "ok");
    let s = &r["steady_state"];
    eprintln!("{}", s["explanation"]);
    assert_eq!(s["attained"], true, "{s}");
    assert_eq!(d["options"]["steady_state"]["window"], 5);
    let rounds = s["rounds"].as_array().unwrap();
    let reached = s["round"].as_u64().unwrap() as usize;
    assert_eq!(reached, rounds.len(), "the rounds stop at the steady one");
    assert_eq!(s["rounds_run"].as_u64().unwrap() as usize, reached);
    assert!(reached >= 5);
    for (i, x) in rounds.iter().enumerate() {
        assert_eq!(x["round"].as_u64().unwrap() as usize, i + 1);
        let secs = f(&x["seconds"]);
        assert!((0.35..2.0).contains(&secs), "round {}: {secs} s", i + 1);
        // A FUSE filesystem has no device: the verdict rests on the application's figure.
        assert!(x["device_bps"].is_null());
    }
    assert_eq!(s["basis"], "application");
    // The steady window is the last five rounds, and it does meet the criteria.
    let window = app_figures(&rounds[reached - 5..]);
    let (avg, range, slope) = window_figures(&window);
    assert!(range <= 0.2 && slope <= 0.1, "range {range}, slope {slope}");
    assert!((f(&s["app"]["average"]) - avg).abs() < 1e-6 * avg);
    assert!((f(&s["app"]["range_share"]) - range).abs() < 1e-9);
    assert!((f(&s["app"]["slope_share"]) - slope).abs() < 1e-9);
    assert_eq!(
        s["app"]["first_round"].as_u64().unwrap() as usize,
        reached - 4
    );
    // At most 6.5 MB/s, and not far below: the pace the filesystem set.
    assert!((3e6..6.6e6).contains(&avg), "{avg} B/s");
    // The result's figures are the window's: five repetitions, the same mean.
    assert_eq!(r["repetitions"], 5);
    assert!((f(&r["throughput"]["mean"]) - avg).abs() < 1e-6 * avg);
    // The latency histogram is the window's too: the rounds before it are left out.
    let ops: u64 = r["reps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["ops"].as_u64().unwrap())
        .sum();
    assert_eq!(r["latency_ns"]["count"].as_u64().unwrap(), ops);
}

#[test]
fn a_device_that_keeps_slowing_is_not_steady_within_three_rounds() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // Every read sleeps 2 ms, tripled every second since the mount: each 300 ms round is
    // about 1.4 times slower than the one before, whenever the run starts.
    let Some((_dir, fs)) = faultfs(&Faults::new().delay_us(2000).slow_down_pct(200)) else {
        return;
    };
    let json = fs.path().parent().unwrap().join("r.json");
    let html = fs.path().parent().unwrap().join("r.html");
    let mut args = RANDREAD[..RANDREAD.len() - 2].to_vec();
    args.extend(["--steady-state=window=3,max=3,round=300ms", "-o"]);
    args.push(json.to_str().unwrap());
    args.push("--html");
    args.push(html.to_str().unwrap());
    args.extend(["--format", "table"]);
    let out = run_in(fs.path(), &args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let table = text(&out.stdout);
    let d: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let s = &d["results"][0]["steady_state"];
    eprintln!("{}", s["explanation"]);
    assert_eq!(s["attained"], false);
    assert!(s["round"].is_null());
    assert_eq!(s["rounds_run"], 3);
    let rounds = app_figures(s["rounds"].as_array().unwrap());
    assert_eq!(rounds.len(), 3);
    assert!(
        rounds[0] > rounds[1] && rounds[1] > rounds[2],
        "each round slower: {rounds:?}"
    );
    let (_, range, slope) = window_figures(&rounds);
    assert!(range > 0.2 || slope > 0.1, "range {range}, slope {slope}");
    assert!((f(&s["app"]["range_share"]) - range).abs() < 1e-9);
    assert!(s["explanation"]
        .as_str()
        .unwrap()
        .starts_with("not steady after 3 round(s)"));
    // The run's warnings say it, with the remedy.
    assert!(
        d["warnings"].as_array().unwrap().iter().any(|w| w
            .as_str()
            .unwrap()
            .contains("not steady after 3 round(s) of 0.3 s")),
        "{}",
        d["warnings"]
    );
    // The table says it, with the rounds and the verdict under it.
    assert!(table.contains("steady"), "{table}");
    assert!(table.contains("no (3)"), "{table}");
    assert!(table.contains("not steady after 3 round(s)"), "{table}");
    assert_eq!(
        table
            .lines()
            .filter(|l| l.trim_end().ends_with('*'))
            .count(),
        3,
        "the three rounds of the window are listed: {table}"
    );
    // The HTML draws the rounds: three markers, the window, its band and line.
    let page = std::fs::read_to_string(&html).unwrap();
    let at = page
        .find("<svg id=\"steady-0\"")
        .expect("the steady-state chart");
    let chart = &page[at..at + page[at..].find("</svg>").unwrap()];
    assert_eq!(chart.matches("<circle").count(), 3, "{chart}");
    assert!(chart.contains("measurement window: rounds 1-3"));
    assert!(chart.contains("average ± 20%") && chart.contains("least-squares line, "));
    assert!(
        page.contains("href=\"#steady\""),
        "the contents list the section"
    );
}

#[test]
fn the_warm_up_is_recorded_and_left_out_of_the_figures() {
    let dir = tempfile::tempdir().unwrap();
    let d = doc(&run_in(
        dir.path(),
        &[
            "--tests",
            "randread",
            "--file-size",
            "1m",
            "--record-size",
            "4k",
            "--keep-cache",
            "--runtime",
            "200ms",
            "--time-based",
            "--ramp",
            "600ms",
            "--repeat",
            "1",
            "--witness",
            "off",
            "--format",
            "json",
        ],
    ));
    assert_eq!(d["options"]["ramp_s"], 0.6);
    let r = &d["results"][0];
    let ramp = &r["ramp"];
    assert_eq!(ramp["asked_seconds"], 0.6);
    assert!(f(&ramp["seconds"]) >= 0.55, "{ramp}");
    assert!(
        ramp["ops"].as_u64().unwrap() > 256,
        "a cached warm-up goes round the file: {ramp}"
    );
    let rep = &r["reps"][0];
    let secs = f(&rep["seconds"]);
    assert!(
        (0.15..0.5).contains(&secs),
        "the measured 200 ms only: {secs} s"
    );
    let ops = rep["ops"].as_u64().unwrap();
    assert_eq!(
        r["latency_ns"]["count"].as_u64().unwrap(),
        ops,
        "the warm-up's operations are not timed"
    );
    assert!(
        (f(&r["throughput"]["mean"]) - rep["bytes"].as_u64().unwrap() as f64 / secs).abs() < 1.0
    );
}

/// A refused plan: exit 2, one sentence containing `needle`, nothing left in `dir`.
fn refused(dir: &Path, extra: &[&str], needle: &str) {
    let mut args = vec!["--file-size", "64k", "--record-size", "4k"];
    if !extra.contains(&"--tests") {
        args.extend(["--tests", "write"]);
    }
    args.extend(extra.iter().copied());
    let out = run_in(dir, &args);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{extra:?}: {err}");
    assert!(err.contains(needle), "{extra:?}: {err}");
    assert_eq!(err.trim().lines().count(), 1, "one sentence: {err}");
    assert!(entries(dir).is_empty(), "{extra:?} left files behind");
}

#[test]
fn bad_steady_state_parameters_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["--steady-state=window=5,max=3"],
            "can never fill a window of 5",
        ),
        (vec!["--steady-state", "--repeat", "3"], "drop --repeat"),
        (
            vec!["--steady-state=speed=2"],
            "not a steady-state parameter",
        ),
        (vec!["--ramp", "soon"], "--ramp"),
        (vec!["--precondition=x"], "number of sequential passes"),
        (
            vec!["--steady-state", "--tests", "create"],
            "create is not one",
        ),
    ];
    for (extra, needle) in cases {
        refused(tmp.path(), &extra, needle);
    }
}

#[test]
fn preconditioning_on_tmpfs_is_refused() {
    let shm = Path::new("/dev/shm");
    if !candor_testkit::need_path(shm, "no tmpfs at /dev/shm") {
        return;
    }
    let tmp = tempfile::tempdir_in(shm).unwrap();
    refused(
        tmp.path(),
        &["--precondition"],
        "tmpfs with no block device",
    );
}

#[test]
fn preconditioning_reaches_the_device_and_rounds_carry_the_devices_figure() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(fs) = common::scratch("ext4", 128 << 20) else {
        return;
    };
    let d = doc(&run_in(
        fs.path(),
        &[
            "--tests",
            "randwrite",
            "--file-size",
            "8m",
            "--record-size",
            "64k",
            "--direct",
            "--precondition",
            "--steady-state=window=2,max=2,round=300ms",
            "--witness",
            "procfs",
            "--format",
            "json",
        ],
    ));
    assert_eq!(d["options"]["precondition_passes"], 2);
    let r = &d["results"][0];
    assert_eq!(r["status"], "ok");
    let p = &r["precondition"];
    eprintln!("{}", p["explanation"]);
    assert_eq!(p["passes"], 2);
    assert_eq!(p["sequential_bytes"], 16u64 << 20);
    assert_eq!(p["random_bytes"], 8u64 << 20);
    assert_eq!(p["random_block"], 65536);
    let share = f(&p["device_share"]);
    assert!(
        share >= 0.9,
        "the device took {share} of the preconditioning: {p}"
    );
    assert_eq!(p["reached_device"], true);
    assert!(p["device_write_bytes"].as_u64().unwrap() >= (24u64 << 20) * 9 / 10);
    // O_DIRECT writes: the device writes what the application does, round by round.
    let s = &r["steady_state"];
    for x in s["rounds"].as_array().unwrap() {
        let (app, dev) = (f(&x["app_bps"]), f(&x["device_bps"]));
        assert!(
            app > 0.0 && dev >= 0.8 * app,
            "round {}: app {app}, device {dev}",
            x["round"]
        );
    }
    assert_ne!(s["basis"], "application", "{s}");
    assert_eq!(s["device_idle"], false);
    assert!(s["device"]["average"].as_f64().unwrap() > 0.0);
}

#[test]
fn each_target_stops_at_its_own_steady_round() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some((_a, steady)) = faultfs(&Faults::new().delay_us(10_000)) else {
        return;
    };
    let Some((_b, slowing)) = faultfs(&Faults::new().delay_us(2000).slow_down_pct(200)) else {
        return;
    };
    let out = common::candor()
        .arg("run")
        .arg(steady.path())
        .arg(slowing.path())
        .args(RANDREAD)
        .args(["--steady-state=window=3,max=6,round=300ms", "--quiet"])
        .output()
        .expect("candor runs");
    let d = doc(&out);
    let results = d["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    let of = |p: &Path| {
        let want = std::fs::canonicalize(p).unwrap();
        results
            .iter()
            .find(|r| Path::new(r["target"].as_str().unwrap()) == want)
            .unwrap_or_else(|| panic!("no result for {}", p.display()))["steady_state"]
            .clone()
    };
    let (a, b) = (of(steady.path()), of(slowing.path()));
    eprintln!("{}\n{}", a["explanation"], b["explanation"]);
    assert_eq!(a["attained"], true, "{a}");
    assert_eq!(a["rounds_run"], a["round"], "the steady target stops there");
    assert_eq!(b["attained"], false, "{b}");
    assert_eq!(b["rounds_run"], 6, "the other runs every round allowed");
    assert!(a["rounds_run"].as_u64().unwrap() <= 6);
}
