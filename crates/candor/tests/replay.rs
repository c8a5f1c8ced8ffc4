//! `candor replay`: traces read, refused when damaged or newer, replayed with the calls
//! of each kind the trace holds (checked by the eBPF witness as root on loop ext4 and
//! xfs), a trace with one call edited caught with the call named, and nothing written
//! outside the run directory whatever paths the trace names. Without root, eBPF, strace or
//! sqlite3 the cases that need them are counted skips.

mod common;
use common::{candor, need_bpf, need_programs, text};
use serde_json::Value;
use std::path::Path;
use std::process::Output;
use std::sync::Mutex;

/// The eBPF cases share loop devices and the tracer: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// Two threads of one process: a database file read, written and synced, a log appended,
/// renamed and removed. Paths under /data, which the replay never touches.
const LOG: &str = r#"100 10:00:00.000000 openat(AT_FDCWD</data>, "db", O_RDWR|O_CREAT, 0644) = 3</data/db> <0.000010>
100 10:00:00.000100 pread64(3</data/db>, "\0\0"..., 4096, 0) = 4096 <0.000010>
100 10:00:00.000200 pwrite64(3</data/db>, "\1\1"..., 4096, 8192) = 4096 <0.000010>
100 10:00:00.000300 fdatasync(3</data/db>) = 0 <0.000500>
100 10:00:00.000900 clone(child_stack=NULL, flags=CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD) = 101 <0.000020>
101 10:00:00.001000 pread64(3</data/db>, "\0\0"..., 4096, 4096) = 4096 <0.000010>
101 10:00:00.001100 openat(AT_FDCWD</data>, "log", O_WRONLY|O_CREAT|O_APPEND, 0644) = 4</data/log> <0.000010>
101 10:00:00.001200 write(4</data/log>, "x"..., 100) = 100 <0.000010>
101 10:00:00.001300 close(4</data/log>) = 0 <0.000010>
100 10:00:00.001400 rename("/data/log", "/data/log.1") = 0 <0.000010>
100 10:00:00.001500 stat("/data/log.1", {st_mode=S_IFREG|0644, st_size=100, ...}) = 0 <0.000010>
100 10:00:00.001600 unlink("/data/log.1") = 0 <0.000010>
100 10:00:00.001700 close(3</data/db>) = 0 <0.000010>
"#;

fn replay(args: &[&str]) -> Output {
    candor()
        .arg("replay")
        .args(args)
        .arg("--quiet")
        .output()
        .expect("candor runs")
}

fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "no JSON on stdout ({e}): {}\n{}",
            text(&o.stdout),
            text(&o.stderr)
        )
    })
}

/// Saves LOG (or `log`) as a trace in `dir`, replaying it once on `target` as it does.
fn save_trace(dir: &Path, log: &str, target: &Path) -> std::path::PathBuf {
    let (o, t) = replay_strace_log(dir, "app", log, "1", target);
    assert!(o.status.success(), "{}", text(&o.stderr));
    t
}

/// Replays `log`, an strace log of files under /data written to `dir` as NAME.log, on
/// `target` (`--repeat` times, the witness off, as JSON), saving its trace as NAME.trace
/// in `dir`: what the command did, and the trace's path.
fn replay_strace_log(
    dir: &Path,
    name: &str,
    log: &str,
    repeat: &str,
    target: &Path,
) -> (Output, std::path::PathBuf) {
    let l = dir.join(format!("{name}.log"));
    std::fs::write(&l, log).expect("write the log");
    let t = dir.join(format!("{name}.trace"));
    let o = replay(&[
        "--from-strace",
        l.to_str().unwrap(),
        "--traced-dir",
        "/data",
        "--save-trace",
        t.to_str().unwrap(),
        "--witness",
        "off",
        "--repeat",
        repeat,
        "--format",
        "json",
        target.to_str().unwrap(),
    ]);
    (o, t)
}

/// The trace reads back as the log's calls (its fio iolog says so line by line), and a
/// damaged or newer file is refused with exit 2 in one sentence, nothing written.
#[test]
fn a_trace_round_trips_and_a_damaged_or_newer_one_is_refused() {
    let d = tempfile::tempdir().expect("a temporary directory");
    let target = d.path().join("target");
    std::fs::create_dir(&target).expect("mkdir");
    let t = save_trace(d.path(), LOG, &target);
    let o = candor()
        .args(["report", t.to_str().unwrap(), "--format", "fio-iolog"])
        .output()
        .expect("candor runs");
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(
        text(&o.stdout),
        "fio version 3 iolog\n0 file1 add\n0 file2 add\n0 file3 add\n0 file1 open\n\
         0 file1 read 0 4096\n0 file1 write 8192 4096\n0 file1 datasync\n\
         1 file1 read 4096 4096\n1 file2 open\n\
         1 file2 write 0 100\n1 file2 close\n1 file1 close\n"
    );
    assert!(
        text(&o.stderr).contains("3 calls have no fio iolog action"),
        "{}",
        text(&o.stderr)
    );
    let bytes = std::fs::read(&t).expect("read the trace");
    // No link in it: written in format 1, which older candors read.
    assert_eq!(bytes[8..10], [1, 0]);
    let cases: [(Vec<u8>, &str); 3] = [
        (
            {
                let mut b = bytes.clone();
                let n = b.len();
                b[n - 7] ^= 0x40;
                b
            },
            "is damaged (its checksum does not match its contents): record it again",
        ),
        (
            bytes[..bytes.len() - 10].to_vec(),
            "was cut short or appended to",
        ),
        (
            {
                let mut b = bytes.clone();
                b[8] = 9;
                b
            },
            "was written by a newer candor (trace format 9; this candor reads format 2 and older): update candor to replay it",
        ),
    ];
    for (b, says) in cases {
        let bad = d.path().join("bad.trace");
        std::fs::write(&bad, &b).expect("write");
        let o = replay(&[bad.to_str().unwrap(), target.to_str().unwrap()]);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(says), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(common::entries(&target).is_empty(), "left behind");
    }
    let o = candor()
        .args(["report", t.to_str().unwrap()])
        .output()
        .expect("candor runs");
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("is a trace, not a result"));
}

/// strace of dd copying three 4 KiB blocks is exactly its calls: the opens, the dup2s onto
/// stdin and stdout, three reads and three writes of 4 KiB at 0, 4096 and 8192, the closes.
#[test]
fn an_strace_log_of_a_small_program_is_its_calls() {
    if !need_programs(&["strace", "dd"]) {
        return;
    }
    let d = tempfile::tempdir().expect("a temporary directory");
    let data = d.path().join("data");
    std::fs::create_dir(&data).expect("mkdir");
    std::fs::write(data.join("in"), vec![7u8; 12288]).expect("write");
    let log = d.path().join("dd.log");
    let st = std::process::Command::new("strace")
        .args(["-f", "-tt", "-T", "-y", "-o"])
        .arg(&log)
        .arg("dd")
        .arg(format!("if={}", data.join("in").display()))
        .arg(format!("of={}", data.join("out").display()))
        .args(["bs=4096", "count=3"])
        .output()
        .expect("strace runs");
    assert!(st.status.success(), "{}", text(&st.stderr));
    let trace = d.path().join("dd.trace");
    let target = d.path().join("target");
    std::fs::create_dir(&target).expect("mkdir");
    let o = replay(&[
        "--from-strace",
        log.to_str().unwrap(),
        "--traced-dir",
        data.to_str().unwrap(),
        "--keep-paths",
        "--save-trace",
        trace.to_str().unwrap(),
        "--witness",
        "off",
        "--repeat",
        "1",
        "--format",
        "json",
        target.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let doc = json(&o);
    let calls = &doc["results"][0]["extra"]["replay"]["calls"];
    let n = |k: &str| calls[k]["calls"].as_u64().unwrap_or(0);
    assert_eq!(
        (n("open"), n("dup"), n("read"), n("write"), n("close")),
        (2, 2, 3, 3, 4),
        "{calls}"
    );
    assert_eq!(calls["read"]["bytes"], 12288);
    assert_eq!(calls["write"]["bytes"], 12288);
    assert_eq!(doc["results"][0]["extra"]["replay"]["diverged_calls"], 0);
    let o = candor()
        .args(["report", trace.to_str().unwrap(), "--format", "fio-iolog"])
        .output()
        .expect("candor runs");
    let iolog: Vec<String> = text(&o.stdout)
        .lines()
        .skip(1)
        .map(|l| l.split_once(' ').map_or(l, |x| x.1).to_string())
        .collect();
    let (i, out) = (data.join("in"), data.join("out"));
    let (i, out) = (i.display(), out.display());
    let want: Vec<String> = [
        format!("{i} add"),
        format!("{out} add"),
        format!("{i} open"),
        format!("{out} open"),
        format!("{i} read 0 4096"),
        format!("{out} write 0 4096"),
        format!("{i} read 4096 4096"),
        format!("{out} write 4096 4096"),
        format!("{i} read 8192 4096"),
        format!("{out} write 8192 4096"),
        format!("{i} close"),
        format!("{out} close"),
    ]
    .into();
    assert_eq!(iolog, want);
}

/// Replays the strace log `l` (its files under /data) on `target` with `--witness` and
/// `--repeat` as given, the result as JSON.
fn replay_log(l: &Path, witness: &str, repeat: &str, timing: &str, target: &Path) -> Output {
    replay(&[
        "--from-strace",
        l.to_str().unwrap(),
        "--traced-dir",
        "/data",
        "--witness",
        witness,
        "--repeat",
        repeat,
        "--timing",
        timing,
        "--format",
        "json",
        target.to_str().unwrap(),
    ])
}

/// A temporary directory with an empty `target` in it, and LOG with one call edited: the
/// pwrite the recording saw return 4096 bytes returns 100.
fn with_one_call_edited() -> (tempfile::TempDir, std::path::PathBuf, String) {
    let d = tempfile::tempdir().expect("a temporary directory");
    let target = d.path().join("target");
    std::fs::create_dir(&target).expect("mkdir");
    let edited = LOG.replace(
        "pwrite64(3</data/db>, \"\\1\\1\"..., 4096, 8192) = 4096",
        "pwrite64(3</data/db>, \"\\1\\1\"..., 4096, 8192) = 100",
    );
    assert_ne!(edited, LOG);
    (d, target, edited)
}

/// One call edited (a write the recording saw cut short at 100 bytes) is named by the
/// replay, and with eBPF the witness's count of write bytes differs: `unverified`.
#[test]
fn a_trace_with_one_call_edited_fails_the_fidelity_check() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (d, target, edited) = with_one_call_edited();
    let l = d.path().join("edited.log");
    std::fs::write(&l, &edited).expect("write");
    let bpf = common::is_root() && candor_testkit::kernel_bpf().is_ok();
    let o = replay_log(&l, if bpf { "bpf" } else { "procfs" }, "1", "fast", &target);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let r = &json(&o)["results"][0];
    assert_eq!(
        r["extra"]["replay"]["divergence"],
        format!(
            "The replay on {} diverged from the trace in 1 calls per repetition: call 3 of thread 1 (pwrite) returned 4096 bytes where the recording's returned 100.",
            std::fs::canonicalize(&target).unwrap().display()
        )
    );
    if !bpf {
        candor_testkit::skip("the eBPF half needs root and eBPF");
        return;
    }
    let c = &r["witness"]["syscalls_check"];
    assert_eq!(c["verdict"], "mismatch", "{c}");
    assert!(
        c["sentence"]
            .as_str()
            .unwrap_or("")
            .contains("pwrite64 calls returning 4.0 KiB for the runner's 100 bytes"),
        "{c}"
    );
    assert_eq!(r["witness"]["verdict"], "unverified");
}

/// With eBPF the counting program slows every system call of the machine while it is
/// attached, so the calls are counted once. With `--timing fast` (the default) that is on a
/// counting pass of its own, before the timed repetitions, none of which is counted; with
/// recorded gaps (`--timing scale=X`) it is the first repetition. Either way the check says
/// so, counts one replay's calls exactly, and still catches a trace with one call edited;
/// every repetition is replayed and timed all the same.
#[test]
fn the_calls_are_counted_once_and_still_judged() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !need_bpf() {
        return;
    }
    let (d, target, edited) = with_one_call_edited();
    for timing in ["fast", "scale=0.5"] {
        for (log, verdict) in [(LOG, "match"), (edited.as_str(), "mismatch")] {
            let l = d.path().join("app.log");
            std::fs::write(&l, log).expect("write");
            let o = replay_log(&l, "bpf", "3", timing, &target);
            assert!(o.status.success(), "{}", text(&o.stderr));
            let r = &json(&o)["results"][0];
            assert_eq!(r["reps"].as_array().map(Vec::len), Some(3), "{r}");
            let c = &r["witness"]["syscalls_check"];
            assert_eq!(c["verdict"], verdict, "{timing}: {c}");
            if verdict == "mismatch" {
                assert_eq!(r["witness"]["verdict"], "unverified", "{timing}");
            }
            assert_eq!(c["kinds"]["pread64"]["expected"], 2, "one replay's: {c}");
            assert_eq!(c["kinds"]["pread64"]["counted"], 2, "{c}");
            let sentence = c["sentence"].as_str().unwrap_or("");
            // LOG's 13 calls without the thread's start (clone) are the replay's 12
            // operations.
            let pass = &r["extra"]["replay"]["counting_pass"];
            if timing == "fast" {
                assert_eq!(
                    c["sample"],
                    serde_json::json!({"ops": 12, "of": 36, "repetitions": 3, "counting_pass": true}),
                    "{c}"
                );
                assert!(
                    sentence.contains("on a counting pass of its own, made before the 3 timed repetitions (which make the same calls"),
                    "{sentence}"
                );
                assert_eq!(pass["calls"], 12, "{r}");
            } else {
                assert_eq!(
                    c["sample"],
                    serde_json::json!({"ops": 12, "of": 36, "repetitions": 3}),
                    "{c}"
                );
                assert!(
                    sentence.contains("in a sample of 12 of its 36 operations (the first of 3 repetitions, which make the same calls"),
                    "{sentence}"
                );
                assert!(pass.is_null(), "{r}");
            }
        }
    }
}

/// A trace naming /etc/passwd, ../ and a device writes nothing outside its run directory:
/// the files are its ids in the run directory, which is gone at the end.
#[test]
fn a_trace_naming_system_files_writes_only_in_the_run_directory() {
    let d = tempfile::tempdir().expect("a temporary directory");
    let target = d.path().join("target");
    std::fs::create_dir(&target).expect("mkdir");
    let passwd = std::fs::metadata("/etc/passwd").expect("stat /etc/passwd");
    let log = r#"7 10:00:00.000000 openat(AT_FDCWD</>, "/etc/passwd", O_WRONLY|O_TRUNC) = 3</etc/passwd> <0.000010>
7 10:00:00.000100 write(3</etc/passwd>, "root::0:0"..., 4096) = 4096 <0.000010>
7 10:00:00.000200 close(3</etc/passwd>) = 0 <0.000010>
7 10:00:00.000300 openat(AT_FDCWD</>, "../../escaped", O_WRONLY|O_CREAT, 0644) = 3</escaped> <0.000010>
7 10:00:00.000400 write(3</escaped>, "x"..., 4096) = 4096 <0.000010>
7 10:00:00.000500 close(3</escaped>) = 0 <0.000010>
7 10:00:00.000600 openat(AT_FDCWD</>, "/dev/null", O_WRONLY) = 3</dev/null> <0.000010>
7 10:00:00.000700 write(3</dev/null>, "x"..., 4096) = 4096 <0.000010>
7 10:00:00.000800 rename("/etc/passwd", "/etc/passwd.old") = 0 <0.000010>
7 10:00:00.000900 unlink("/dev/null") = 0 <0.000010>
"#;
    let l = d.path().join("evil.log");
    std::fs::write(&l, log).expect("write");
    let o = replay(&[
        "--from-strace",
        l.to_str().unwrap(),
        "--traced-dir",
        "/",
        "--keep-paths",
        "--witness",
        "off",
        "--repeat",
        "1",
        "--format",
        "json",
        target.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let calls = &json(&o)["results"][0]["extra"]["replay"]["calls"];
    // The calls were made, on the run directory's files.
    assert_eq!(calls["write"]["bytes"], 3 * 4096, "{calls}");
    assert_eq!(calls["rename"]["calls"], 1);
    let after = std::fs::metadata("/etc/passwd").expect("stat /etc/passwd");
    assert_eq!(
        (after.len(), after.modified().ok()),
        (passwd.len(), passwd.modified().ok())
    );
    assert!(!Path::new("/etc/passwd.old").exists());
    assert!(Path::new("/dev/null").exists());
    assert!(!d.path().join("escaped").exists() && !Path::new("/escaped").exists());
    assert!(common::entries(&target).is_empty(), "left in the target");
    let mut names: Vec<String> = common::entries(d.path())
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["evil.log", "target"]);
}

/// Symbolic links a trace makes lead only inside the run directory: one to /etc, one
/// climbing out with `..`, one moved by a rename to another depth. Opens through them fail
/// (named as divergences) or reach the run directory's own files; /etc/passwd and the
/// directory around the target are untouched. A hard link and a link within the traced
/// directory replay as they were recorded; the trace is written in format 2.
#[test]
fn links_in_a_trace_lead_only_inside_the_run_directory() {
    let d = tempfile::tempdir().expect("a temporary directory");
    let target = d.path().join("target");
    std::fs::create_dir(&target).expect("mkdir");
    let passwd = std::fs::metadata("/etc/passwd").expect("stat /etc/passwd");
    let log = r#"7 10:00:00.000000 symlink("/etc", "/data/e") = 0 <0.000010>
7 10:00:00.000100 openat(AT_FDCWD</data>, "e/passwd", O_WRONLY|O_TRUNC) = 3 <0.000010>
7 10:00:00.000200 write(3</data/e/passwd>, "root::0:0"..., 4096) = 4096 <0.000010>
7 10:00:00.000300 close(3</data/e/passwd>) = 0 <0.000010>
7 10:00:00.000400 symlink("../../../../../etc/passwd", "/data/p") = 0 <0.000010>
7 10:00:00.000500 openat(AT_FDCWD</data>, "p", O_WRONLY|O_TRUNC) = 3 <0.000010>
7 10:00:00.000600 close(3</data/p>) = 0 <0.000010>
7 10:00:00.000700 mkdir("/data/sub", 0755) = 0 <0.000010>
7 10:00:00.000800 openat(AT_FDCWD</data>, "sub/db", O_WRONLY|O_CREAT, 0644) = 3</data/sub/db> <0.000010>
7 10:00:00.000900 write(3</data/sub/db>, "x"..., 4096) = 4096 <0.000010>
7 10:00:00.001000 close(3</data/sub/db>) = 0 <0.000010>
7 10:00:00.001100 symlink("db", "/data/sub/l") = 0 <0.000010>
7 10:00:00.001200 rename("/data/sub/l", "/data/l") = 0 <0.000010>
7 10:00:00.001300 openat(AT_FDCWD</data>, "l", O_RDONLY) = 3 <0.000010>
7 10:00:00.001400 read(3</data/l>, "x"..., 8192) = 4096 <0.000010>
7 10:00:00.001500 close(3</data/l>) = 0 <0.000010>
7 10:00:00.001600 link("/data/sub/db", "/data/hard") = 0 <0.000010>
7 10:00:00.001700 unlink("/data/sub/db") = 0 <0.000010>
7 10:00:00.001800 openat(AT_FDCWD</data>, "hard", O_RDONLY) = 3</data/hard> <0.000010>
7 10:00:00.001900 read(3</data/hard>, "x"..., 8192) = 4096 <0.000010>
7 10:00:00.002000 close(3</data/hard>) = 0 <0.000010>
"#;
    let (o, t) = replay_strace_log(d.path(), "links", log, "2", &target);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let r = &json(&o)["results"][0]["extra"]["replay"];
    let calls = &r["calls"];
    assert_eq!(calls["symlink"]["calls"], 3, "{calls}");
    assert_eq!(calls["symlink"]["errors"], 0, "{calls}");
    assert_eq!(calls["link"]["calls"], 1, "{calls}");
    assert_eq!(calls["link"]["errors"], 0, "{calls}");
    // Through the renamed link and the hard link: the file written at sub/db, both times.
    assert_eq!(calls["read"]["bytes"], 8192, "{calls}");
    // e/passwd existed when the log began (it was opened without O_CREAT), so it was laid
    // out in the run directory, and its write went there. The open through the link that
    // climbed out fails (ENOENT: the link points at nothing), and its close is not made,
    // at once rather than after waiting for another thread to open the descriptor.
    assert_eq!(calls["write"]["bytes"], 8192, "{calls}");
    let err = text(&o.stderr);
    assert_eq!(r["diverged_calls"], 2, "{r}\n{err}");
    assert!(
        err.contains("(open) failed with ENOENT where the recording's succeeded"),
        "{err}"
    );
    let reps = json(&o)["results"][0]["reps"].clone();
    for rep in reps.as_array().expect("reps") {
        assert!(rep["seconds"].as_f64().expect("seconds") < 1.0, "{rep}");
    }
    let after = std::fs::metadata("/etc/passwd").expect("stat /etc/passwd");
    assert_eq!(
        (after.len(), after.modified().ok()),
        (passwd.len(), passwd.modified().ok())
    );
    assert!(common::entries(&target).is_empty(), "left in the target");
    let mut names: Vec<String> = common::entries(d.path())
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["links.log", "links.trace", "target"]);
    let bytes = std::fs::read(&t).expect("read the trace");
    assert_eq!(bytes[8..10], [2, 0], "a trace with links is format 2");
}

/// A sqlite3 transaction loop, traced with strace on ext4, replayed on a loop ext4 and a
/// loop xfs: the kernel counts the trace's calls of every kind and their bytes, exactly,
/// on both; `candor compare` puts the two side by side.
#[test]
fn a_sqlite_loop_replays_its_calls_exactly_on_ext4_and_xfs() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !need_bpf() || !need_programs(&["strace", "sqlite3", "mkfs.xfs"]) {
        return;
    }
    let Some(src) = common::scratch("ext4", 64 << 20) else {
        return;
    };
    let data = src.path().join("app");
    std::fs::create_dir(&data).expect("mkdir");
    let mut sql = String::from("create table t(a, b);\n");
    for i in 0..20 {
        sql.push_str(&format!("begin; insert into t values({i}, 'x'); commit;\n"));
    }
    let d = tempfile::tempdir().expect("a temporary directory");
    let log = d.path().join("sqlite.log");
    let mut child = std::process::Command::new("strace")
        .args(["-f", "-tt", "-T", "-y", "-o"])
        .arg(&log)
        .arg("sqlite3")
        .arg(data.join("t.db"))
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("strace runs");
    use std::io::Write;
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(sql.as_bytes())
        .expect("feed sqlite3");
    assert!(child.wait().expect("wait").success());
    let Some(ext4) = common::scratch("ext4", 64 << 20) else {
        return;
    };
    let Some(xfs) = common::scratch("xfs", 320 << 20) else {
        return;
    };
    let trace = d.path().join("sqlite.trace");
    let mut results = Vec::new();
    for (i, fs) in [&ext4, &xfs].iter().enumerate() {
        let out = d.path().join(format!("r{i}.json"));
        let mut args = vec![
            "--from-strace",
            log.to_str().unwrap(),
            "--traced-dir",
            data.to_str().unwrap(),
            "--witness",
            "bpf",
            "--repeat",
            "3",
            "-o",
            out.to_str().unwrap(),
            "--format",
            "json",
            fs.path().to_str().unwrap(),
        ];
        if i == 0 {
            args.extend(["--save-trace", trace.to_str().unwrap()]);
        }
        let o = replay(&args);
        assert!(o.status.success(), "{}", text(&o.stderr));
        let r = json(&o)["results"][0].clone();
        let c = &r["witness"]["syscalls_check"];
        assert_eq!(c["verdict"], "match", "{}: {c}", fs.path().display());
        for kind in ["pwrite64", "fdatasync", "openat", "close", "unlink"] {
            let k = &c["kinds"][kind];
            assert!(k["expected"].as_u64().unwrap_or(0) > 0, "{kind}: {c}");
            assert_eq!(k["expected"], k["counted"], "{kind}: {c}");
        }
        assert_eq!(r["extra"]["replay"]["diverged_calls"], 0);
        assert!(common::entries(fs.path()).iter().all(|p| !p
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with(".candor-")));
        results.push(out);
    }
    let o = candor()
        .arg("compare")
        .args(&results)
        .output()
        .expect("candor runs");
    assert!(o.status.success(), "{}", text(&o.stderr));
    let t = text(&o.stdout);
    assert!(t.contains("replay"), "{t}");
    // The trace saved on the way replays as well, on the same filesystem.
    let o = replay_once(&trace, ext4.path());
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(
        json(&o)["results"][0]["witness"]["syscalls_check"]["verdict"],
        "match"
    );
}

/// One repetition of `trace` on `fs` with the eBPF witness, as JSON.
fn replay_once(trace: &Path, fs: &Path) -> Output {
    replay(&[
        trace.to_str().unwrap(),
        "--witness",
        "bpf",
        "--repeat",
        "1",
        "--format",
        "json",
        fs.to_str().unwrap(),
    ])
}

/// `candor audit --record` of `cmd` (files under `dir` kept) into `trace`.
fn record(trace: &Path, dir: &Path, cmd: &[&str], stdin: Option<&Path>) {
    let mut c = candor();
    c.args(["audit", "--quiet", "--record"])
        .arg(trace)
        .arg("--record-dir")
        .arg(dir)
        .arg("--")
        .args(cmd);
    if let Some(s) = stdin {
        c.stdin(std::fs::File::open(s).expect("open stdin"));
    }
    let o = c.output().expect("candor runs");
    assert!(o.status.success(), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(err.contains("candor: recorded "), "{err}");
    assert!(!err.contains("lost"), "{err}");
}

/// `candor audit --record TRACE --record-dir . -- CMD` run in `dir` (relative paths are
/// the command's own), which must succeed.
fn record_in(dir: &Path, trace: &Path, cmd: &[&str]) {
    let o = candor()
        .current_dir(dir)
        .args(["audit", "--quiet", "--record"])
        .arg(trace)
        .args(["--record-dir", ".", "--"])
        .args(cmd)
        .output()
        .expect("candor runs");
    assert!(o.status.success(), "{}", text(&o.stderr));
}

/// A Python script recorded in a scratch ext4 made for it (`candor audit --record`, the
/// files it makes there kept): the directory holding the trace, and the trace. None, a
/// counted skip, without eBPF, python3 or loop devices.
fn record_python(script: &str) -> Option<(tempfile::TempDir, std::path::PathBuf)> {
    if !need_bpf() || !need_programs(&["python3"]) {
        return None;
    }
    let src = common::scratch("ext4", 64 << 20)?;
    let d = tempfile::tempdir().expect("a temporary directory");
    let trace = d.path().join("script.trace");
    record_in(src.path(), &trace, &["python3", "-c", script]);
    Some((d, trace))
}

/// The trace as fio iolog v3 (`candor report TRACE --format fio-iolog`).
fn iolog(trace: &Path) -> String {
    let o = candor()
        .args(["report", "--format", "fio-iolog"])
        .arg(trace)
        .output()
        .expect("candor runs");
    assert!(o.status.success(), "{}", text(&o.stderr));
    text(&o.stdout)
}

/// A recording is made by the audit's eBPF tracer: `--record` with `--witness procfs` is
/// refused in one sentence (exit 2) before anything runs, and no trace is left.
#[test]
fn a_recording_with_the_procfs_witness_is_refused() {
    let d = tempfile::tempdir().expect("a temporary directory");
    let trace = d.path().join("t.trace");
    let marker = d.path().join("ran");
    let o = candor()
        .args(["audit", "--quiet", "--witness", "procfs", "--record"])
        .arg(&trace)
        .args(["--", "touch"])
        .arg(&marker)
        .output()
        .expect("candor runs");
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert_eq!(
        text(&o.stderr).trim(),
        "candor: --record records with the eBPF tracer: leave out --witness procfs"
    );
    assert!(
        !trace.exists() && !marker.exists(),
        "nothing ran, nothing written"
    );
}

/// Replays `trace` once on `fs` with the eBPF witness: every kind the trace holds is
/// counted by the kernel exactly, and no call diverged.
fn replays_exactly(trace: &Path, fs: &Path, kinds: &[&str]) -> Value {
    replays_exactly_saying(trace, fs, kinds).0
}

/// `replays_exactly`, with what the replay said on stderr.
fn replays_exactly_saying(trace: &Path, fs: &Path, kinds: &[&str]) -> (Value, String) {
    let o = replay_once(trace, fs);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let r = json(&o)["results"][0].clone();
    let c = &r["witness"]["syscalls_check"];
    assert_eq!(c["verdict"], "match", "{}: {c}", fs.display());
    for kind in kinds {
        let k = &c["kinds"][kind];
        assert!(k["expected"].as_u64().unwrap_or(0) > 0, "{kind}: {c}");
        assert_eq!(k["expected"], k["counted"], "{kind}: {c}");
    }
    assert_eq!(r["extra"]["replay"]["diverged_calls"], 0, "{r}");
    assert_eq!(r["extra"]["replay"]["recorded"]["complete"], true);
    (r, text(&o.stderr))
}

/// A sqlite3 transaction loop and a tar of a small tree, recorded in the kernel, replay
/// with the same calls of every kind on a loop ext4 and a loop xfs.
#[test]
fn recorded_sqlite_and_tar_replay_exactly_on_ext4_and_xfs() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !need_bpf() || !need_programs(&["sqlite3", "tar", "mkfs.xfs"]) {
        return;
    }
    let Some(src) = common::scratch("ext4", 64 << 20) else {
        return;
    };
    let d = tempfile::tempdir().expect("a temporary directory");
    let sql = d.path().join("loop.sql");
    let mut s = String::from("create table t(a, b);\n");
    for i in 0..20 {
        s.push_str(&format!("begin; insert into t values({i}, 'x'); commit;\n"));
    }
    std::fs::write(&sql, s).expect("write");
    let db = src.path().join("t.db");
    let sqlite_trace = d.path().join("sqlite.trace");
    record(
        &sqlite_trace,
        src.path(),
        &["sqlite3", db.to_str().unwrap()],
        Some(&sql),
    );
    let tree = src.path().join("tree");
    for i in 0..10 {
        let sub = tree.join(format!("d{}", i % 3));
        std::fs::create_dir_all(&sub).expect("mkdir");
        std::fs::write(sub.join(format!("f{i}")), vec![b'a'; 1000 * (i + 1)]).expect("write");
    }
    let tar_trace = d.path().join("tar.trace");
    let archive = src.path().join("tree.tar");
    record(
        &tar_trace,
        src.path(),
        &[
            "tar",
            "-cf",
            archive.to_str().unwrap(),
            "-C",
            src.path().to_str().unwrap(),
            "tree",
        ],
        None,
    );
    let Some(ext4) = common::scratch("ext4", 64 << 20) else {
        return;
    };
    let Some(xfs) = common::scratch("xfs", 320 << 20) else {
        return;
    };
    for fs in [&ext4, &xfs] {
        replays_exactly(
            &sqlite_trace,
            fs.path(),
            &["pwrite64", "fdatasync", "openat", "close", "unlink"],
        );
        let r = replays_exactly(&tar_trace, fs.path(), &["read", "write", "openat", "close"]);
        // tar read the tree's 55,000 bytes and wrote its archive.
        let calls = &r["extra"]["replay"]["calls"];
        assert_eq!(calls["read"]["bytes"], 55_000, "{calls}");
        assert!(
            calls["write"]["bytes"].as_u64().unwrap_or(0) >= 55_000,
            "{calls}"
        );
    }
}

/// coreutils' `cp` copies with copy_file_range and `stat` asks with statx. The copy,
/// which the kernel makes between the two descriptors at their positions, is kept as the
/// read of the source and the write of the destination it stands for, said in the trace's
/// notes and the replay's warnings, and replays exactly, byte for byte; the stat is
/// recorded and replays as one.
#[test]
fn a_kernel_copy_replays_as_its_read_and_write_and_a_statx_is_recorded() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !need_bpf() || !need_programs(&["cp", "stat"]) {
        return;
    }
    let Some(src) = common::scratch("ext4", 64 << 20) else {
        return;
    };
    let d = tempfile::tempdir().expect("a temporary directory");
    let from = src.path().join("from");
    std::fs::write(&from, vec![b'c'; 1_000_000]).expect("write");
    let to = src.path().join("to");
    let cp_trace = d.path().join("cp.trace");
    let o = candor()
        .args(["audit", "--quiet", "--record"])
        .arg(&cp_trace)
        .arg("--record-dir")
        .arg(src.path())
        .arg("--")
        .arg("cp")
        .arg(&from)
        .arg(&to)
        .output()
        .expect("candor runs");
    assert!(o.status.success(), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(
        err.contains("copy_file_range call")
            && err.contains("(1000000 bytes): the trace holds each"),
        "the recorder says how it kept the copy: {err}"
    );
    let Some(ext4) = common::scratch("ext4", 64 << 20) else {
        return;
    };
    let (r, err) = replays_exactly_saying(&cp_trace, ext4.path(), &["read", "write", "openat"]);
    assert!(
        err.contains("the trace: the application copied between files inside the kernel"),
        "the replay says what the trace holds: {err}"
    );
    let calls = &r["extra"]["replay"]["calls"];
    assert_eq!(calls["read"]["bytes"], 1_000_000, "{calls}");
    assert_eq!(calls["write"]["bytes"], 1_000_000, "{calls}");
    assert!(
        r["extra"]["replay"]["recorded"]["notes"]
            .to_string()
            .contains("copy_file_range"),
        "{r}"
    );
    let stat_trace = d.path().join("stat.trace");
    record(
        &stat_trace,
        src.path(),
        &["stat", from.to_str().unwrap(), to.to_str().unwrap()],
        None,
    );
    let (r, _) = replays_exactly_saying(&stat_trace, ext4.path(), &["stat"]);
    assert!(
        r["extra"]["replay"]["calls"]["stat"]["calls"]
            .as_u64()
            .unwrap_or(0)
            >= 2,
        "both files' statx: {}",
        r["extra"]["replay"]["calls"]
    );
}

/// A fio iolog whose two writes are 400 ms apart: `--timing original` keeps the gap,
/// `scale=0.25` a quarter of it, `fast` none.
#[test]
fn timing_modes_keep_scale_or_drop_the_recorded_gaps() {
    let d = tempfile::tempdir().expect("a temporary directory");
    let target = d.path().join("target");
    std::fs::create_dir(&target).expect("mkdir");
    let log = d.path().join("two.iolog");
    std::fs::write(
        &log,
        "fio version 3 iolog\n0 /x/f add\n0 /x/f open\n0 /x/f write 0 4096\n400 /x/f write 4096 4096\n400 /x/f close\n",
    )
    .expect("write");
    let seconds = |timing: &str| -> f64 {
        let o = replay(&[
            "--from-fio-iolog",
            log.to_str().unwrap(),
            "--timing",
            timing,
            "--witness",
            "off",
            "--repeat",
            "1",
            "--format",
            "json",
            target.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{timing}: {}", text(&o.stderr));
        let r = &json(&o)["results"][0];
        assert_eq!(r["extra"]["replay"]["calls"]["pwrite"]["bytes"], 8192);
        r["reps"][0]["seconds"].as_f64().expect("seconds")
    };
    let original = seconds("original");
    assert!((0.4..1.5).contains(&original), "original: {original}");
    let quarter = seconds("scale=0.25");
    assert!((0.1..0.35).contains(&quarter), "scale=0.25: {quarter}");
    let fast = seconds("fast");
    assert!(fast < 0.1, "fast: {fast}");
}

/// SIGINT in the middle of a replay (a 20 s recorded gap with --timing original) stops it
/// at once: exit 130, and its run directory is gone.
#[test]
fn an_interrupted_replay_leaves_nothing_behind() {
    let d = tempfile::tempdir().expect("a temporary directory");
    let target = d.path().join("target");
    std::fs::create_dir(&target).expect("mkdir");
    let log = d.path().join("slow.iolog");
    std::fs::write(
        &log,
        "fio version 3 iolog\n0 /x/f add\n0 /x/f open\n0 /x/f write 0 4096\n20000 /x/f write 4096 4096\n20000 /x/f close\n",
    )
    .expect("write");
    let t0 = std::time::Instant::now();
    let child = candor()
        .args(["replay", "--from-fio-iolog"])
        .arg(&log)
        .args(["--timing", "original", "--witness", "off", "--quiet"])
        .arg(&target)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("candor runs");
    // The run directory appears once the replay has begun.
    while common::entries(&target).is_empty() {
        assert!(t0.elapsed().as_secs() < 10, "no run directory");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    // SAFETY: signalling the child this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let o = child.wait_with_output().expect("wait");
    assert_eq!(o.status.code(), Some(130), "{}", text(&o.stderr));
    assert!(t0.elapsed().as_secs() < 10, "{:?}", t0.elapsed());
    assert!(common::entries(&target).is_empty(), "left behind");
}

/// `--precondition` as `run` has it: the trace's laid-out files written sequentially and
/// overwritten at random before the first repetition, what reached the device in the
/// result, and the replay still exact; refused in one sentence (exit 2, nothing left) on
/// tmpfs, with --sparse, out of range, and for a trace that starts with no files.
#[test]
fn precondition_writes_the_laid_out_files_before_the_first_repetition() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !need_bpf() {
        return;
    }
    let Some(ext4) = common::scratch("ext4", 64 << 20) else {
        return;
    };
    let d = tempfile::tempdir().expect("a temporary directory");
    let l = d.path().join("app.log");
    std::fs::write(&l, LOG).expect("write the log");
    let base = [
        "--from-strace",
        l.to_str().unwrap(),
        "--traced-dir",
        "/data",
        "--format",
        "json",
    ];
    let with = |extra: &[&str], target: &Path| {
        let mut a = base.to_vec();
        a.extend_from_slice(extra);
        a.push(target.to_str().unwrap());
        replay(&a)
    };
    let o = with(
        &["--precondition=1", "--repeat", "2", "--witness", "bpf"],
        ext4.path(),
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let r = &json(&o)["results"][0];
    // The log's db was read at 0 before anything wrote it: 4 KiB at the start.
    let p = &r["precondition"];
    assert_eq!(p["passes"], 1, "{p}");
    assert_eq!(p["sequential_bytes"], 4096, "{p}");
    assert_eq!(p["random_bytes"], 4096, "{p}");
    assert_eq!(p["random_block"], 4096, "{p}");
    assert_eq!(p["reached_device"], true, "{p}");
    assert_eq!(json(&o)["options"]["precondition_passes"], 1);
    assert_eq!(r["repetitions"], 2);
    assert_eq!(r["witness"]["syscalls_check"]["verdict"], "match", "{r}");
    assert_eq!(r["extra"]["replay"]["diverged_calls"], 0, "{r}");

    let refused = |extra: &[&str], target: &Path, words: &str| {
        let o = with(extra, target);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {}", text(&o.stderr));
        let e = text(&o.stderr);
        assert!(e.contains(words), "{extra:?}: {e}");
        assert_eq!(e.trim().lines().count(), 1, "{e}");
        assert!(
            common::entries(target).iter().all(|p| !p
                .file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(".candor-")),
            "{extra:?} left a run directory"
        );
    };
    refused(
        &["--precondition", "--sparse"],
        ext4.path(),
        "--precondition writes the trace's files in full, which --sparse would lay out as holes: drop one of them",
    );
    refused(
        &["--precondition=0"],
        ext4.path(),
        "--precondition=0 is out of range: give 1 to 100 sequential passes",
    );
    if candor_testkit::need_path(Path::new("/dev/shm"), "no tmpfs at /dev/shm") {
        let shm = tempfile::tempdir_in("/dev/shm").expect("a directory on tmpfs");
        refused(
            &["--precondition"],
            shm.path(),
            "with no block device under it: drop --precondition or give a directory on a disk's filesystem",
        );
    }
    // A log whose program made every file it used.
    let made = "100 10:00:00.000000 openat(AT_FDCWD</data>, \"new\", O_WRONLY|O_CREAT|O_EXCL, 0644) = 3</data/new> <0.000010>\n100 10:00:00.000100 write(3</data/new>, \"x\"..., 100) = 100 <0.000010>\n";
    std::fs::write(&l, made).expect("write the log");
    refused(
        &["--precondition"],
        ext4.path(),
        "--precondition writes the files the trace starts with, and this trace starts with none (its program made every file it used): drop --precondition",
    );
}

/// readv and writev (and their positional forms) are replayed as vectors of as many iovecs
/// as the recording's calls had, the bytes shared out among them: strace watching the
/// replay sees the same calls with the same counts.
#[test]
fn vector_calls_replay_with_their_number_of_iovecs() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !need_programs(&["strace"]) {
        return;
    }
    let log = r#"100 10:00:00.000000 openat(AT_FDCWD</data>, "v", O_RDWR|O_CREAT, 0644) = 3</data/v> <0.000010>
100 10:00:00.000100 writev(3</data/v>, [{iov_base="ab", iov_len=2}, {iov_base="cd", iov_len=2}, {iov_base="e", iov_len=1}], 3) = 5 <0.000010>
100 10:00:00.000200 pwritev(3</data/v>, [{iov_base="abcd", iov_len=4}, {iov_base="efgh", iov_len=4}], 2, 5) = 8 <0.000010>
100 10:00:00.000300 lseek(3</data/v>, 0, SEEK_SET) = 0 <0.000010>
100 10:00:00.000400 readv(3</data/v>, [{iov_base="ab", iov_len=2}, {iov_base="cde", iov_len=3}], 2) = 5 <0.000010>
100 10:00:00.000500 preadv(3</data/v>, [{iov_base="a", iov_len=1}, {iov_base="b", iov_len=1}, {iov_base="c", iov_len=1}, {iov_base="d", iov_len=5}], 4, 5) = 8 <0.000010>
100 10:00:00.000600 close(3</data/v>) = 0 <0.000010>
"#;
    let d = tempfile::tempdir().expect("a temporary directory");
    let target = d.path().join("target");
    std::fs::create_dir(&target).expect("mkdir");
    let l = d.path().join("v.log");
    std::fs::write(&l, log).expect("write the log");
    let seen = d.path().join("seen.log");
    let o = std::process::Command::new("strace")
        .args(["-f", "-qq", "-e", "trace=readv,writev,preadv,pwritev", "-o"])
        .arg(&seen)
        .arg(env!("CARGO_BIN_EXE_candor"))
        .args(["replay", "--quiet", "--from-strace"])
        .arg(&l)
        .args([
            "--traced-dir",
            "/data",
            "--witness",
            "off",
            "--repeat",
            "1",
            "--format",
            "json",
        ])
        .arg(&target)
        .output()
        .expect("strace runs");
    assert!(o.status.success(), "{}", text(&o.stderr));
    let r = &json(&o)["results"][0];
    assert_eq!(r["extra"]["replay"]["diverged_calls"], 0, "{r}");
    let seen = std::fs::read_to_string(&seen).expect("strace's log");
    // Each call as "name iovec-lengths count = result", from strace's lines.
    let mut calls: Vec<String> = seen
        .lines()
        .filter(|l| l.contains("iov_len="))
        .map(|l| {
            let name = l
                .split_whitespace()
                .nth(1)
                .and_then(|w| w.split('(').next())
                .unwrap_or("");
            let lens: Vec<&str> = l
                .split("iov_len=")
                .skip(1)
                .map(|s| s.split(['}', ',']).next().unwrap_or(""))
                .collect();
            let tail = l.rsplit("], ").next().unwrap_or("");
            format!("{name} {} {}", lens.join(","), tail.replace(')', ""))
        })
        .collect();
    calls.retain(|c| !c.is_empty());
    assert_eq!(
        calls,
        [
            "writev 2,2,1 3 = 5",
            "pwritev 4,4 2, 5 = 8",
            "readv 3,2 2 = 5",
            "preadv 2,2,2,2 4, 5 = 8",
        ],
        "{seen}"
    );
}

/// dbench (one client, one second), recorded in the kernel, replays on the filesystem it
/// was recorded on (ext4) and on xfs with every counted kind's calls and bytes exact and
/// every call's outcome the recording's (its rmdir of a directory still holding files
/// fails with ENOTEMPTY, as dbench's did, in the directories laid out as recorded).
#[test]
fn recorded_dbench_replays_exactly_on_ext4_and_xfs() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !need_bpf() || !need_programs(&["dbench", "mkfs.xfs"]) {
        return;
    }
    let load = Path::new("/usr/share/dbench/client.txt");
    if !candor_testkit::need_path(load, "dbench's load file is not installed") {
        return;
    }
    let Some(ext4) = common::scratch("ext4", 256 << 20) else {
        return;
    };
    let src = ext4.path().join("dbench");
    std::fs::create_dir(&src).expect("mkdir");
    let d = tempfile::tempdir().expect("a temporary directory");
    let trace = d.path().join("dbench.trace");
    record(
        &trace,
        &src,
        &[
            "dbench",
            "-c",
            load.to_str().unwrap(),
            "-t",
            "1",
            "-D",
            src.to_str().unwrap(),
            "1",
        ],
        None,
    );
    let Some(xfs) = common::scratch("xfs", 320 << 20) else {
        return;
    };
    for fs in [ext4.path(), xfs.path()] {
        let kinds = [
            "openat", "create", "close", "pread64", "pwrite64", "fsync", "stat", "unlink",
            "rename", "mkdir",
        ];
        let (r, e) = replays_exactly_saying(&trace, fs, &kinds);
        let c = &r["witness"]["syscalls_check"];
        for kind in ["pread64", "pwrite64"] {
            let k = &c["kinds"][kind];
            assert!(k["expected_bytes"].as_u64().unwrap_or(0) > 0, "{kind}: {c}");
            assert_eq!(k["expected_bytes"], k["counted_bytes"], "{kind}: {c}");
        }
        let rp = &r["extra"]["replay"];
        assert_eq!(rp["recorded"]["complete"], true, "{rp}");
        assert_eq!(rp["diverged_calls"], 0, "{}: {rp}", fs.display());
        // dbench's own figure while it was recorded is kept and said beside the replay's.
        let own = &rp["recorded"]["figure"];
        assert_eq!(own["program"], "dbench", "{rp}");
        let printed = own["printed"].as_str().unwrap_or("");
        assert!(printed.contains("MB/sec"), "{own}");
        assert!(
            e.contains(&format!(
                "; dbench's own figure then: {printed}); the replay "
            )),
            "{e}"
        );
    }
}

/// The files are laid out in the directories the trace puts them in: an rmdir of a
/// directory with a file in it fails with ENOTEMPTY as the recording's did, and succeeds
/// once the file is gone; a file of a directory that existed before the trace began (never
/// named by a call) is laid out inside it.
#[test]
fn files_are_laid_out_in_their_directories() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let log = r#"100 10:00:00.000000 mkdir("/data/d", 0755) = 0 <0.000010>
100 10:00:00.000100 openat(AT_FDCWD</data>, "/data/d/f", O_WRONLY|O_CREAT|O_EXCL, 0644) = 3</data/d/f> <0.000010>
100 10:00:00.000200 write(3</data/d/f>, "x"..., 100) = 100 <0.000010>
100 10:00:00.000300 close(3</data/d/f>) = 0 <0.000010>
100 10:00:00.000400 rmdir("/data/d") = -1 ENOTEMPTY (Directory not empty) <0.000010>
100 10:00:00.000500 unlink("/data/d/f") = 0 <0.000010>
100 10:00:00.000600 rmdir("/data/d") = 0 <0.000010>
100 10:00:00.000700 openat(AT_FDCWD</data>, "/data/old/g", O_RDONLY) = 3</data/old/g> <0.000010>
100 10:00:00.000800 read(3</data/old/g>, "x"..., 4096) = 4096 <0.000010>
100 10:00:00.000900 close(3</data/old/g>) = 0 <0.000010>
100 10:00:00.001000 rmdir("/data/old") = -1 ENOTEMPTY (Directory not empty) <0.000010>
"#;
    let d = tempfile::tempdir().expect("a temporary directory");
    let target = d.path().join("target");
    std::fs::create_dir(&target).expect("mkdir");
    let l = d.path().join("dirs.log");
    std::fs::write(&l, log).expect("write the log");
    let o = replay(&[
        "--from-strace",
        l.to_str().unwrap(),
        "--traced-dir",
        "/data",
        "--witness",
        "off",
        "--repeat",
        "1",
        "--format",
        "json",
        target.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let r = &json(&o)["results"][0];
    let rp = &r["extra"]["replay"];
    assert_eq!(rp["diverged_calls"], 0, "{rp}");
    assert_eq!(rp["calls"]["rmdir"]["calls"], 3, "{rp}");
    assert_eq!(rp["calls"]["rmdir"]["errors"], 2, "{rp}");
    assert_eq!(rp["calls"]["read"]["bytes"], 4096, "{rp}");
    assert!(common::entries(&target).is_empty());
}

/// A shell script whose short-lived children write and read through descriptors they
/// inherited, with relative paths. Every recording of it (five in a row: a child can end
/// before the recorder reads its /proc entries, which made some recordings hold one call)
/// holds the same writes, dd's after the shell's 3 bytes as the kernel put them (one open
/// file description shared by the shell and dd), and its replay moves the same bytes,
/// counted by the kernel.
#[test]
fn a_shell_script_is_recorded_the_same_every_time_through_inherited_descriptors() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !need_bpf() || !need_programs(&["sh", "dd", "head"]) {
        return;
    }
    let Some(src) = common::scratch("ext4", 64 << 20) else {
        return;
    };
    std::fs::write(src.path().join("in"), vec![b'i'; 100_000]).expect("write the input");
    let script = "exec 3>f; echo hi >&3; dd if=/dev/zero bs=4k count=10 status=none >&3; \
                  { head -c 5000 >/dev/null; dd bs=1000 count=7 status=none of=/dev/null; } < in; \
                  { echo a; echo b; } > log; exec 3>&-";
    let d = tempfile::tempdir().expect("a temporary directory");
    let mut logs = Vec::new();
    let mut last = None;
    for i in 0..5 {
        let trace = d.path().join(format!("sh{i}.trace"));
        record_in(src.path(), &trace, &["sh", "-c", script]);
        // "TIME FILE write OFFSET LENGTH": the writes without their times.
        let writes: Vec<(String, u64, u64)> = iolog(&trace)
            .lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                if f.len() != 5 || f[2] != "write" {
                    return None;
                }
                Some((f[1].to_string(), f[3].parse().ok()?, f[4].parse().ok()?))
            })
            .collect();
        let total: u64 = writes.iter().map(|w| w.2).sum();
        assert_eq!(total, 3 + 40960 + 4, "recording {i}: {writes:?}");
        let dd: Vec<u64> = writes.iter().filter(|w| w.2 == 4096).map(|w| w.1).collect();
        assert_eq!(
            dd,
            (0..10).map(|k| 3 + 4096 * k).collect::<Vec<u64>>(),
            "recording {i}: dd writes after the shell's 3 bytes"
        );
        logs.push(writes);
        last = Some(trace);
    }
    assert!(logs.windows(2).all(|w| w[0] == w[1]), "{logs:?}");
    let Some(ext4) = common::scratch("ext4", 64 << 20) else {
        return;
    };
    let trace = last.expect("five recordings");
    let r = replays_exactly(&trace, ext4.path(), &["write", "openat"]);
    assert_eq!(
        r["extra"]["replay"]["calls"]["write"]["bytes"],
        3 + 40960 + 4,
        "{r}"
    );
}

/// Many threads at once (each process's own, 32 of them writing their own files): the
/// kernel counts exactly the trace's calls for the runner. glibc's malloc reads
/// /sys/devices/system/cpu/online from the thread that first needs a ninth arena, which
/// had put an open, a read and a close no trace made into the count of a replay with
/// many threads.
#[test]
fn a_replay_of_many_threads_is_counted_exactly() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !need_bpf() {
        return;
    }
    let Some(fs) = common::scratch("ext4", 64 << 20) else {
        return;
    };
    let mut log = String::new();
    for k in 0..32u32 {
        let tid = 7000 + k;
        let f = format!("/data/t{k}");
        let us = |n: u32| format!("10:00:00.{:06}", 100 + k + 40 * n);
        log.push_str(&format!(
            "{tid} {} openat(AT_FDCWD</data>, \"t{k}\", O_WRONLY|O_CREAT|O_TRUNC, 0644) = 3<{f}> <0.000010>\n",
            us(0)
        ));
        for n in 1..=4 {
            log.push_str(&format!(
                "{tid} {} write(3<{f}>, \"\"..., 4096) = 4096 <0.000010>\n",
                us(n)
            ));
        }
        log.push_str(&format!("{tid} {} close(3<{f}>) = 0 <0.000010>\n", us(5)));
    }
    let d = tempfile::tempdir().expect("a temporary directory");
    let t = save_trace(d.path(), &log, fs.path());
    for _ in 0..3 {
        let r = replays_exactly(&t, fs.path(), &["openat", "write", "close"]);
        assert_eq!(r["extra"]["replay"]["threads"], 32, "{r}");
    }
}

/// A file opened with openat2 (its flags in a struct the call points to) is recorded as
/// the open it is, with its flags, so the writes through it are the file's and replay
/// exactly.
#[test]
fn a_file_opened_with_openat2_is_recorded_and_replayed() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // openat2(AT_FDCWD, "o2", {O_WRONLY|O_CREAT|O_APPEND, 0o644, 0}, 24), then two writes.
    let script = r#"
import ctypes, os, struct
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
how = ctypes.create_string_buffer(struct.pack("QQQ", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644, 0))
fd = libc.syscall(437, -100, b"o2", how, 24)
if fd < 0:
    raise SystemExit("openat2: errno %d" % ctypes.get_errno())
os.write(fd, b"a" * 4096)
os.write(fd, b"b" * 1000)
os.close(fd)
"#;
    let Some((_dir, trace)) = record_python(script) else {
        return;
    };
    let iolog = iolog(&trace);
    assert!(
        iolog.contains(" open")
            && iolog.contains(" write 0 4096")
            && iolog.contains(" write 4096 1000"),
        "{iolog}"
    );
    let Some(ext4) = common::scratch("ext4", 64 << 20) else {
        return;
    };
    let r = replays_exactly(&trace, ext4.path(), &["openat", "write"]);
    assert_eq!(r["extra"]["replay"]["calls"]["write"]["bytes"], 5096, "{r}");
}

/// A shell loop that starts 400 processes, each writing a line through the descriptor it
/// inherited: its replay (401 processes) is counted exactly by the kernel. glibc's malloc
/// reads /proc/sys/vm/overcommit_memory the first time it gives a thread's heap back, which
/// had put an open, a read and a close no trace made into the count ("2 openat calls for
/// the runner's 1").
#[test]
fn a_replay_of_hundreds_of_processes_is_counted_exactly() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !need_bpf() || !need_programs(&["sh", "seq"]) {
        return;
    }
    let Some(src) = common::scratch("ext4", 64 << 20) else {
        return;
    };
    let d = tempfile::tempdir().expect("a temporary directory");
    let trace = d.path().join("loop.trace");
    record_in(
        src.path(),
        &trace,
        &[
            "sh",
            "-c",
            "exec 3>f; for i in $(seq 400); do /bin/echo $i >&3; done",
        ],
    );
    let Some(ext4) = common::scratch("ext4", 64 << 20) else {
        return;
    };
    let r = replays_exactly(&trace, ext4.path(), &["openat", "write", "close"]);
    assert_eq!(r["extra"]["replay"]["processes"], 401, "{r}");
    // "1\n" to "400\n": 18 + 270 + 1204 bytes.
    assert_eq!(r["extra"]["replay"]["calls"]["write"]["bytes"], 1492, "{r}");
}

/// A maildir-style delivery (write in tmp/, fsync, link() into new/, unlink the tmp name),
/// then symbolic links opened for reading and appending: recorded in the kernel, the links
/// are in the trace (format 2), and the replay makes the same calls, counted exactly by
/// the kernel on a loop ext4 and a loop xfs, every link and read through them succeeding.
#[test]
fn a_maildir_delivery_by_link_is_recorded_and_replayed_exactly() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let script = r#"
import os
os.mkdir("tmp"); os.mkdir("new")
for i in range(3):
    fd = os.open(f"tmp/m{i}", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, b"m" * 4096)
    os.fsync(fd)
    os.close(fd)
    os.link(f"tmp/m{i}", f"new/m{i}")
    os.unlink(f"tmp/m{i}")
os.symlink("new/m1", "latest")
fd = os.open("latest", os.O_RDONLY)
assert len(os.read(fd, 8192)) == 4096
os.close(fd)
os.symlink("m2", "new/alias")
fd = os.open("new/alias", os.O_WRONLY | os.O_APPEND)
os.write(fd, b"a" * 100)
os.close(fd)
"#;
    let Some((d, trace)) = record_python(script) else {
        return;
    };
    let bytes = std::fs::read(&trace).expect("read the trace");
    assert_eq!(bytes[8..10], [2, 0], "a trace with links is format 2");
    for fs in ["ext4", "xfs"] {
        let Some(target) = common::scratch(fs, 320 << 20) else {
            return;
        };
        let r = replays_exactly(
            &trace,
            target.path(),
            &["openat", "write", "read", "fsync", "unlink", "mkdir"],
        );
        let calls = &r["extra"]["replay"]["calls"];
        assert_eq!(calls["link"]["calls"], 3, "{fs}: {calls}");
        assert_eq!(calls["symlink"]["calls"], 2, "{fs}: {calls}");
        assert_eq!(calls["link"]["errors"], 0, "{fs}: {calls}");
        assert_eq!(calls["symlink"]["errors"], 0, "{fs}: {calls}");
        assert_eq!(calls["write"]["bytes"], 3 * 4096 + 100, "{fs}: {calls}");
        assert_eq!(calls["read"]["bytes"], 4096, "{fs}: {calls}");
    }
    // git stores its objects by link() (and tries a symlink in `git init`): a first commit
    // of five files, recorded and replayed exactly.
    if !need_programs(&["git", "sh"]) {
        return;
    }
    let Some(repo) = common::scratch("ext4", 64 << 20) else {
        return;
    };
    for i in 0..5u8 {
        std::fs::write(repo.path().join(format!("f{i}")), vec![b'a' + i; 20_000]).expect("write");
    }
    let git = d.path().join("git.trace");
    record_in(
        repo.path(),
        &git,
        &[
            "sh",
            "-c",
            "git init -q . && git add . && git -c user.email=a@b -c user.name=a commit -qm one",
        ],
    );
    let Some(ext4) = common::scratch("ext4", 64 << 20) else {
        return;
    };
    let r = replays_exactly(&git, ext4.path(), &["openat", "write", "rename", "unlink"]);
    let calls = &r["extra"]["replay"]["calls"];
    assert!(calls["link"]["calls"].as_u64().unwrap_or(0) >= 5, "{calls}");
    assert_eq!(calls["link"]["errors"], 0, "{calls}");
}

/// Copies the kernel makes at offsets handed by pointer (copy_file_range with both
/// offsets, sendfile with its source's, splice from a file at an offset into a pipe and
/// from the pipe into a file at an offset) are kept as the reads and writes they stand
/// for, at those offsets: the trace is complete, and its replay makes them as pread64
/// and pwrite64, counted exactly by the kernel.
#[test]
fn copies_at_offsets_handed_by_pointer_replay_as_positional_reads_and_writes() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let script = r#"
import os
src = os.open("src", os.O_RDWR | os.O_CREAT, 0o644)
os.write(src, b"s" * 65536)
dst = os.open("dst", os.O_RDWR | os.O_CREAT, 0o644)
assert os.copy_file_range(src, dst, 4096, 8192, 16384) == 4096
assert os.sendfile(dst, src, 20480, 4096) == 4096
r, w = os.pipe()
assert os.splice(src, w, 1000, offset_src=30000) == 1000
assert os.splice(r, dst, 1000, offset_dst=50000) == 1000
os.close(src)
os.close(dst)
"#;
    let Some((_dir, trace)) = record_python(script) else {
        return;
    };
    // The lines, found by their offsets (the files' numbers follow the order they came in).
    let iolog = iolog(&trace);
    for line in [
        " write 0 65536",
        " read 8192 4096",
        " write 16384 4096",
        " read 20480 4096",
        " write 0 4096",
        " read 30000 1000",
        " write 50000 1000",
    ] {
        assert!(iolog.contains(line), "{line}: {iolog}");
    }
    let Some(ext4) = common::scratch("ext4", 64 << 20) else {
        return;
    };
    let r = replays_exactly(&trace, ext4.path(), &["pread64", "pwrite64", "write"]);
    let calls = &r["extra"]["replay"]["calls"];
    assert_eq!(calls["pread"]["bytes"], 4096 + 4096 + 1000, "{calls}");
    assert_eq!(calls["pwrite"]["bytes"], 4096 + 1000, "{calls}");
    assert!(
        !r["extra"]["replay"]["recorded"]["notes"]
            .to_string()
            .contains("not in the trace"),
        "{r}"
    );
}

/// A directory listed (getdents64), a file's cache advice and readahead, a flush of the
/// filesystem (syncfs and sync) and a truncate by path: recorded in the kernel (trace
/// format 2) and made again by the replay, the directory reads counted by the kernel as
/// the trace's, every call succeeding.
#[test]
fn directory_reads_hints_flushes_and_truncates_are_recorded_and_replayed() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let script = r#"
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
os.mkdir("d")
for i in range(20):
    with open(f"d/f{i}", "wb") as f:
        f.write(b"x" * 4096)
assert len(os.listdir("d")) == 20
fd = os.open("d/f1", os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
assert libc.readahead(fd, ctypes.c_longlong(0), ctypes.c_size_t(4096)) == 0
assert libc.syncfs(fd) == 0
os.close(fd)
os.sync()
os.truncate("d/f2", 100)
"#;
    let Some((_dir, trace)) = record_python(script) else {
        return;
    };
    let bytes = std::fs::read(&trace).expect("read the trace");
    assert_eq!(bytes[8..10], [2, 0], "format 2 holds these calls");
    let Some(ext4) = common::scratch("ext4", 64 << 20) else {
        return;
    };
    let r = replays_exactly(&trace, ext4.path(), &["getdents64", "openat", "write"]);
    let calls = &r["extra"]["replay"]["calls"];
    for (kind, n) in [
        ("fadvise", 1),
        ("readahead", 1),
        ("syncfs", 2),
        ("truncate", 1),
    ] {
        assert_eq!(calls[kind]["calls"], n, "{kind}: {calls}");
        assert_eq!(calls[kind]["errors"], 0, "{kind}: {calls}");
    }
    assert!(
        calls["getdents64"]["calls"].as_u64().unwrap_or(0) >= 2,
        "{calls}"
    );
}

/// Pages of a mapped file: read faults (four 256 KiB apart, the file's cache dropped
/// first, so each reads from the device) and a store through the shared mapping are
/// recorded from the kernel's page cache tracepoints (`mapped` calls, format 2), and the
/// replay faults the same pages in through its own mapping of the file, every one
/// succeeding.
#[test]
fn pages_faulted_through_a_mapping_are_recorded_and_replayed() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let script = r#"
import mmap, os
fd = os.open("big", os.O_RDWR | os.O_CREAT, 0o644)
os.write(fd, b"m" * (1 << 20))
os.fsync(fd)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
m = mmap.mmap(fd, 1 << 20, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
total = sum(m[off] for off in range(0, 1 << 20, 64 * 4096))
assert total == 4 * ord("m")
m[8192] = 0x41
m.close()
os.close(fd)
"#;
    let Some((_dir, trace)) = record_python(script) else {
        return;
    };
    let bytes = std::fs::read(&trace).expect("read the trace");
    assert_eq!(bytes[8..10], [2, 0], "format 2 holds mapped pages");
    let Some(ext4) = common::scratch("ext4", 64 << 20) else {
        return;
    };
    let r = replays_exactly(&trace, ext4.path(), &["openat", "write"]);
    let calls = &r["extra"]["replay"]["calls"];
    // Four read faults at least (the kernel may map more around each), and the store.
    assert!(
        calls["mapped"]["calls"].as_u64().unwrap_or(0) >= 5,
        "{calls}"
    );
    assert_eq!(calls["mapped"]["errors"], 0, "{calls}");
    assert_eq!(calls["mmap"]["errors"], 0, "{calls}");
}

/// fio with io_uring at depth 8: its 256 requests (random reads and writes of 4 KiB over
/// 1 MiB) never pass through a read or write call; the recorder keeps each as the pread
/// or pwrite it asked for, at its offset, from the io_uring tracepoints, and the replay
/// makes them, counted exactly by the kernel (one at a time: the trace says so).
#[test]
fn io_uring_requests_are_recorded_and_replayed_as_their_calls() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !need_bpf() || !need_programs(&["fio"]) {
        return;
    }
    let Some(src) = common::scratch("ext4", 64 << 20) else {
        return;
    };
    let d = tempfile::tempdir().expect("a temporary directory");
    let trace = d.path().join("uring.trace");
    record_in(
        src.path(),
        &trace,
        &[
            "fio",
            "--name=u",
            "--ioengine=io_uring",
            "--rw=randrw",
            "--bs=4k",
            "--size=1m",
            "--iodepth=8",
            "--filename=f",
            "--output=/dev/null",
        ],
    );
    let Some(ext4) = common::scratch("ext4", 64 << 20) else {
        return;
    };
    let (r, err) = replays_exactly_saying(&trace, ext4.path(), &["pread64", "pwrite64"]);
    let calls = &r["extra"]["replay"]["calls"];
    let n = |k: &str| calls[k]["calls"].as_u64().unwrap_or(0);
    assert_eq!(n("pread") + n("pwrite"), 256, "{calls}");
    assert_eq!(
        calls["pread"]["bytes"].as_u64().unwrap_or(0)
            + calls["pwrite"]["bytes"].as_u64().unwrap_or(0),
        1 << 20,
        "{calls}"
    );
    assert!(
        err.contains("the 256 read, write and fsync requests they submitted are in the trace"),
        "{err}"
    );
}
