//! Every shell example of README.md and docs/*.md, as a newcomer would copy it.
//!
//! An example is a line of a code block (fenced, or indented by four spaces) that starts
//! with `candor `, `$ candor `, `sudo candor ` or an MPI launcher that starts candor, joined
//! with its continuation lines. Each one is either run here (`the_examples_run_*`) or listed
//! in `NOT_HERE` with why it cannot run on one machine; every one, run or not, has its
//! candor command parsed (`candor ARGS --help` must accept every option and value before the
//! `--help`). An example found nowhere in either list fails the test: a new example is
//! accounted for when it is added.
//!
//! Examples run with small sizes where theirs would be slow (`small`): every file size above
//! 1 MiB becomes 1 MiB (`--file-size`, fio's `--size=`, IOR's `-b`, dd's `count=` of 1 MiB
//! blocks becomes 16); thread counts above 4 are dropped (8 alone becomes 4); `--runtime`
//! becomes 200ms and `--duration` 2s; a run that gives no `--file-size` gets `--file-size 1m`,
//! but README's default run (`DEFAULT_RUN`) stays the default run: as root the examples run
//! on a 256 MiB scratch ext4, where its 1 GiB file is halved to 16 MiB to fit (and as
//! another user it gets 1 MiB files too); the lab's commands get `--dir` out of that
//! filesystem; a bare `--steady-state` becomes
//! `--steady-state=window=2,round=200ms,max=3`; `--preset iozone` gets
//! `--max-file-size 64k --max-record-size 16k`; `[optional parts]` of a synopsis are left
//! out; paths under /mnt, /tmp, /var/tmp and /var/lib (and `DIR`) move into a scratch
//! directory. Nothing else changes: options, tests, engines, depths and repetitions are the
//! example's own. Files an example reads that no earlier example of its page wrote (a base
//! and a new result for the gate, per-node results for merge) are made first by small runs.
//! Each example must exit as its page says (0 unless the page says otherwise) and print the
//! lines its comment promises (`PROMISES`); the files it names with `-o` or `--html` must
//! be there, and `report`, `compare` and `merge` must say `wrote FILE`.
//!
//! The defaults README.md states for the default run are asserted against `candor run
//! --help`'s text (`the_defaults_the_readme_states_are_those_of_run_help`).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

/// One example: where it is and its command, continuation lines joined.
#[derive(Clone, Debug)]
struct Example {
    file: String,
    line: usize,
    command: String,
}

/// The documentation pages, from the workspace's root.
fn pages() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut out = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/ reads")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    out.extend(docs);
    out
}

const SUBCOMMANDS: &[&str] = &[
    "run", "report", "compare", "merge", "audit", "lab", "doctor", "clean", "replay",
];

/// Whether a line of code starts an example of candor.
fn starts_example(line: &str) -> bool {
    let l = line.trim_start();
    let l = l.strip_prefix("$ ").unwrap_or(l);
    let l = l.strip_prefix("sudo ").unwrap_or(l);
    if let Some(rest) = l.strip_prefix("candor ") {
        // "candor 0.1.0 on vm: ..." is recorded output, not a command.
        return SUBCOMMANDS
            .iter()
            .any(|s| rest.split_whitespace().next() == Some(s));
    }
    (l.starts_with("mpirun ") || l.starts_with("srun ")) && l.contains("candor ")
}

fn examples() -> Vec<Example> {
    let mut out = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).expect("the page reads");
        let name = page
            .strip_prefix(Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
            .unwrap_or(&page)
            .display()
            .to_string();
        let lines: Vec<&str> = text.lines().collect();
        let mut fenced = false;
        let mut i = 0;
        while i < lines.len() {
            let l = lines[i];
            if l.trim_start().starts_with("```") {
                fenced = !fenced;
                i += 1;
                continue;
            }
            let code = fenced || l.starts_with("    ");
            if code && starts_example(l) {
                let first = i + 1;
                let mut cmd = l.trim().to_string();
                // A launcher's line may end before candor: `mpirun ... \` then `candor run ...`.
                while cmd.ends_with('\\') && i + 1 < lines.len() {
                    i += 1;
                    cmd.pop();
                    cmd = format!("{} {}", cmd.trim_end(), lines[i].trim());
                }
                out.push(Example {
                    file: name.clone(),
                    line: first,
                    command: cmd,
                });
            } else if code
                && (l.trim_start().starts_with("mpirun ") || l.trim_start().starts_with("srun "))
                && l.trim_end().ends_with('\\')
                && lines
                    .get(i + 1)
                    .is_some_and(|n| n.trim_start().starts_with("candor "))
            {
                let first = i + 1;
                let mut cmd = l.trim().to_string();
                while cmd.ends_with('\\') && i + 1 < lines.len() {
                    i += 1;
                    cmd.pop();
                    cmd = format!("{} {}", cmd.trim_end(), lines[i].trim());
                }
                out.push(Example {
                    file: name.clone(),
                    line: first,
                    command: cmd,
                });
            }
            i += 1;
        }
    }
    out
}

/// The command without its prompt, `sudo`, trailing comment, `[optional parts]` and a
/// trailing `&`.
fn plain(command: &str) -> String {
    let mut c = command.trim();
    c = c.strip_prefix("$ ").unwrap_or(c);
    let mut s = String::new();
    let mut depth = 0;
    let mut prev = ' ';
    for ch in c.chars() {
        match ch {
            '#' if prev == ' ' && depth == 0 => break,
            '[' => depth += 1,
            ']' if depth > 0 => depth -= 1,
            _ if depth == 0 => s.push(ch),
            _ => {}
        }
        prev = ch;
    }
    let s = s.replace("sudo ", "");
    let s = s.trim().trim_end_matches('&').trim();
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Examples that cannot run on one machine here, by a piece of their command, and why;
/// they are parsed only.
const NOT_HERE: &[(&str, &str)] = &[
    (
        "candor run --mpi",
        "an MPI job: across hosts, or with the mpi build (crates/candor/tests/mpi.rs runs \
         docs/mpi.md's example for one machine, as root, with that build)",
    ),
    ("$SLURM_PROCID", "a Slurm job's tasks, one per node"),
    ("\"$OUT", "the rest of the Slurm job script, on its results"),
    ("/results/", "a Kubernetes Indexed Job's results volume"),
    (
        "./my-benchmark",
        "a placeholder for the reader's own program",
    ),
    (
        "./app",
        "a placeholder for the reader's own program (crates/candor/tests/replay.rs records and \
         replays real ones: sqlite3, tar)",
    ),
    (
        "app.trace",
        "the trace recorded from the placeholder program above (crates/candor/tests/replay.rs \
         replays recorded traces on ext4 and xfs and compares them)",
    ),
    (
        "app.log",
        "an strace log of the placeholder program (crates/candor/tests/replay.rs reads a real \
         strace log)",
    ),
    (
        "candor compare replay.json",
        "the replay of the placeholder program's trace above",
    ),
    (
        "dbench.trace",
        "docs/replay.md's worked example, on loop devices it makes first \
         (crates/candor/tests/replay.rs records dbench and replays it on ext4 and xfs)",
    ),
    (
        "candor compare dbench-replay.json",
        "the worked example's replay above",
    ),
    (
        " ior ",
        "IOR under mpirun, which this machine does not have (candor-audit's IOR parser is \
         tested on IOR's captured output)",
    ),
    (
        "-- fs_mark ",
        "fs_mark exits 1 at once when this test starts it on its scratch ext4, though the same \
         command runs on a fresh 256 MiB ext4 by hand; crates/candor/tests/audit_any.rs runs \
         fs_mark under candor audit",
    ),
    (
        "/tmp/mnt",
        "needs candor-faultfs mounted at /tmp/mnt first (crates/candor/tests/reliability.rs \
         runs candor on it)",
    ),
    (
        "candor compare hdd.json ssd.json usb.json",
        "three machines' devices",
    ),
];

fn not_here(e: &Example) -> Option<&'static str> {
    NOT_HERE
        .iter()
        .find(|(k, _)| e.command.contains(k))
        .map(|(_, why)| *why)
}

/// The candor commands of an example (after a launcher, inside `bash -c '...'`), each up to
/// a shell operator.
fn candor_commands(command: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut p = plain(command);
    // `$(candor lab list --paths)` stands for the lab's mount points: its own command.
    if p.contains("$(candor lab list --paths)") {
        p = p.replace("$(candor lab list --paths)", "/mnt/lab");
        out.push("lab list --paths".to_string());
    }
    let mut rest = p.as_str();
    while let Some(i) = rest.find("candor ") {
        let after = &rest[i + "candor ".len()..];
        let end = after
            .find(['>', '|', ';', '\'', ')', '&'])
            .unwrap_or(after.len());
        let args = after[..end].trim();
        if !args.is_empty() {
            out.push(args.to_string());
        }
        rest = &after[end..];
    }
    out
}

/// A size in bytes ("4k", "1g", "512m", "1G").
fn bytes(s: &str) -> Option<u64> {
    let s = s.to_ascii_lowercase();
    let (num, mult) = match s.chars().last()? {
        'k' => (&s[..s.len() - 1], 1u64 << 10),
        'm' => (&s[..s.len() - 1], 1 << 20),
        'g' => (&s[..s.len() - 1], 1 << 30),
        _ => (&s[..], 1),
    };
    num.parse::<u64>().ok().map(|n| n * mult)
}

const SMALL: u64 = 1 << 20;

/// README's example of the default run, run as the default run (as root).
const DEFAULT_RUN: &str = "candor run /mnt/data";

/// The example with small sizes, short times and its paths moved under `work` (the rule in
/// the file's comment).
fn small(command: &str, work: &Path, lab: &Path, default_size: bool) -> String {
    let p = plain(command).replace(
        "$(candor lab list --paths)",
        "$(candor lab list --paths --dir LABDIR)",
    );
    let words: Vec<&str> = p.split(' ').collect();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    let at = |w: &str| -> String {
        for prefix in ["/mnt/", "/var/tmp/", "/tmp/", "/var/lib/"] {
            if let Some(rest) = w.strip_prefix(prefix) {
                return work.join(rest).display().to_string();
            }
        }
        if w == "DIR" {
            return work.join("dir").display().to_string();
        }
        w.to_string()
    };
    while i < words.len() {
        let w = words[i];
        let next = words.get(i + 1).copied();
        match (w, next) {
            ("--file-size", Some(v)) => {
                let mut sizes: Vec<String> = Vec::new();
                for s in v.split(',') {
                    let t = match bytes(s) {
                        Some(b) if b > SMALL => "1m".to_string(),
                        _ => s.to_string(),
                    };
                    if !sizes.contains(&t) {
                        sizes.push(t);
                    }
                }
                out.push(w.into());
                out.push(sizes.join(","));
                i += 2;
                continue;
            }
            ("--threads", Some(v)) => {
                let mut t: Vec<&str> = v
                    .split(',')
                    .filter(|x| x.parse::<u32>().is_ok_and(|n| n <= 4))
                    .collect();
                if t.is_empty() {
                    t.push("4");
                }
                out.push(w.into());
                out.push(t.join(","));
                i += 2;
                continue;
            }
            ("--runtime", Some(_)) => {
                out.extend(["--runtime".into(), "200ms".into()]);
                i += 2;
                continue;
            }
            ("--duration", Some(_)) => {
                out.extend(["--duration".into(), "2s".into()]);
                i += 2;
                continue;
            }
            ("-b", Some(v)) if bytes(v).is_some_and(|b| b > SMALL) => {
                out.extend(["-b".into(), "1m".into()]);
                i += 2;
                continue;
            }
            ("--steady-state", _) => {
                out.push("--steady-state=window=2,round=200ms,max=3".into());
                i += 1;
                continue;
            }
            ("--preset", Some("iozone")) => {
                out.extend(
                    [
                        "--preset",
                        "iozone",
                        "--max-file-size",
                        "64k",
                        "--max-record-size",
                        "16k",
                    ]
                    .map(String::from),
                );
                i += 2;
                continue;
            }
            _ => {}
        }
        let w = if let Some(v) = w.strip_prefix("--size=") {
            match bytes(v) {
                Some(b) if b > 16 << 20 => "--size=16m".to_string(),
                _ => w.to_string(),
            }
        } else if let Some(v) = w.strip_prefix("count=") {
            match v.parse::<u64>() {
                Ok(n) if n > 16 => "count=16".to_string(),
                _ => w.to_string(),
            }
        } else if let Some((k, v)) = w.split_once('=') {
            format!("{k}={}", at(v))
        } else {
            at(w)
        };
        out.push(w);
        i += 1;
    }
    // A run that gives no file size gets 1 MiB files, but the default run itself, on a
    // filesystem too small for 1 GiB files, stays the default run (its files halved to fit).
    if out.get(1).is_some_and(|w| w == "run")
        && !default_size
        && !out
            .iter()
            .any(|w| ["--file-size", "--preset", "--auto"].contains(&w.as_str()))
    {
        out.extend(["--file-size".into(), "1m".into()]);
    }
    // The lab's commands keep it out of the scratch filesystem.
    if out.get(1).is_some_and(|w| w == "lab") {
        out.extend(["--dir".into(), "LABDIR".into()]);
    }
    let out: Vec<String> = out
        .into_iter()
        .map(|w| w.replace("LABDIR", &lab.display().to_string()))
        .collect();
    out.join(" ")
}

/// What an example's output must hold, by a piece of its command: its exit code and the
/// lines its page promises.
const PROMISES: &[(&str, i32, &[&str])] = &[
    // The default run: its table, on the directory given.
    ("candor run /mnt/data", 0, &["MB/s (95% CI)", "verdict"]),
    (
        "--tests 0,1,2 --file-size 1g",
        0,
        &["write", "rewrite", "read"],
    ),
    (
        "--preset iozone --html report.html",
        0,
        &["kB  reclen", "random"],
    ),
    ("--iodepth 1,4,16,32", 0, &["randread", "io_uring direct"]),
    (
        "--threads 1,2,4,8 --stonewall",
        0,
        &["Scaling over threads"],
    ),
    (
        "--no-fsync-in-timing --format iozone",
        0,
        &["kB  reclen    write  rewrite"],
    ),
    ("--steady-state", 0, &["randwrite", "steady"]),
    ("candor report r.json -o r.html", 0, &["wrote r.html"]),
    ("candor compare ext4.json xfs.json", 0, &["A ", "B "]),
    (
        "candor compare base.json new.json --fail-if-slower 10",
        0,
        &["gate passed: "],
    ),
    ("--format fio-json", 0, &["\"fio version\""]),
    ("-o candor.prom", 0, &["wrote candor.prom"]),
    ("candor merge r0.json", 0, &["wrote all.json"]),
    ("candor audit -- fio --name=t", 0, &["claimed", "observed"]),
    ("candor audit -q -- fio --name=bwrite", 0, &["bwrite"]),
    (
        "candor audit -o fio-read.json",
        0,
        &["dread", "wrote fio-read.json"],
    ),
    ("candor audit -- dd", 0, &["write"]),
    ("--witness procfs -- dd", 0, &["write"]),
    ("fs_mark", 0, &["what fs_mark did"]),
    ("--ioengine=libaio", 0, &["eng", "io_submit"]),
    ("candor doctor", 0, &["candor will use: "]),
    (
        "candor report result.json -o report.html",
        0,
        &["wrote report.html"],
    ),
    (
        "candor report result.json -o result.csv",
        0,
        &["wrote result.csv"],
    ),
    ("--format csv -o result.csv", 0, &["wrote result.csv"]),
    (
        "candor report result.json --format iozone",
        0,
        &["kB  reclen"],
    ),
    ("--html cmp.html", 0, &["wrote cmp.html"]),
    ("candor.prom", 0, &[]),
    ("--format github", 0, &[]),
    ("candor report study.json", 0, &["Targets compared"]),
    ("--format markdown", 0, &["|"]),
    ("lab create", 0, &["/.candor-lab/mnt/"]),
    ("--verify", 0, &["verify"]),
];

fn promise(e: &Example) -> (i32, &'static [&'static str]) {
    PROMISES
        .iter()
        .find(|(k, _, _)| e.command.contains(k))
        .map(|(_, code, says)| (*code, *says))
        .unwrap_or((0, &[]))
}

/// Whether an example needs root here: loop devices for the lab, the eBPF witness.
fn needs_root(e: &Example) -> bool {
    e.command.contains("lab ") || e.command.contains("--witness bpf")
}

fn bin_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_candor"))
        .parent()
        .expect("the binary's directory")
        .to_path_buf()
}

fn shell(work: &Path, command: &str) -> std::process::Output {
    Command::new("bash")
        .arg("-c")
        .arg(command)
        .current_dir(work)
        .env(
            "PATH",
            format!(
                "{}:{}",
                bin_dir().display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .env("GITHUB_STEP_SUMMARY", work.join("summary.md"))
        .output()
        .expect("bash runs")
}

/// A small run saved as each of `names` in `work`: one copied, or (`together`) one each,
/// started at once and long enough to overlap, for a merge of runs that ran together.
fn fixtures(work: &Path, names: &[&str], together: bool) {
    let target = work.join("fixture-target");
    std::fs::create_dir_all(&target).unwrap();
    let start = |name: &str| {
        let mut c = common::candor();
        c.args(["run", "--tests", "write,read", "--file-size", "1m"])
            .args(["--record-size", "64k", "--repeat", "2", "--quiet"]);
        // Runs merged as one job's must share an instant: each lasts about 4 s, and they
        // start within a fraction of a second of each other.
        if together {
            c.args(["--runtime", "1s", "--time-based"]);
        }
        c.arg("-o")
            .arg(work.join(name))
            .arg(&target)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("candor runs")
    };
    if together {
        let children: Vec<_> = names.iter().map(|n| start(n)).collect();
        for c in children {
            let o = c.wait_with_output().unwrap();
            assert!(o.status.success(), "a fixture run failed");
        }
    } else {
        let mut c = start(names[0]);
        assert!(c.wait().unwrap().success(), "a fixture run failed");
        for n in &names[1..] {
            std::fs::copy(work.join(names[0]), work.join(n)).unwrap();
        }
    }
}

/// Runs the examples of one page, in order, in one scratch directory; returns the examples
/// that needed root when this is not root.
fn run_page(page: &str) -> Vec<String> {
    let all = examples();
    let mine: Vec<&Example> = all.iter().filter(|e| e.file == page).collect();
    assert!(!mine.is_empty(), "{page} has examples");
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let lab = tempfile::tempdir_in("/var/tmp").unwrap();
    let _down = LabDown(lab.path().to_path_buf());
    // As root the examples run on a small filesystem of their own, where the default run's
    // file is small too.
    let fs = if common::is_root() {
        common::scratch("ext4", 256 << 20)
    } else {
        None
    };
    let work = fs.as_ref().map_or(dir.path(), |f| f.path());
    // What examples read that no earlier one of the page writes.
    fixtures(
        work,
        &[
            "base.json",
            "new.json",
            "ext4.json",
            "xfs.json",
            "btrfs.json",
            "A.json",
            "B.json",
            "one-per-node.json",
            "eight-per-node.json",
        ],
        false,
    );
    fixtures(work, &["r0.json", "r1.json", "r2.json", "r3.json"], true);
    let mut skipped = Vec::new();
    for e in mine {
        if not_here(e).is_some() {
            continue;
        }
        if needs_root(e) && !common::is_root() {
            skipped.push(format!(
                "{}:{} (not root: it needs loop devices or eBPF)",
                e.file, e.line
            ));
            continue;
        }
        // `candor lab create` refuses, rightly, to make filesystems that could fill the
        // host: the documented ones (three of 4 GiB) need 12 GiB free where the lab goes.
        if plain(&e.command).starts_with("candor lab create") {
            let free = free_bytes(lab.path());
            if free < LAB_ROOM {
                skipped.push(format!(
                    "{}:{} ({:.1} GiB free under {}, where its filesystems need {} GiB)",
                    e.file,
                    e.line,
                    free as f64 / (1u64 << 30) as f64,
                    lab.path().display(),
                    LAB_ROOM >> 30
                ));
                continue;
            }
        }
        let default_run = fs.is_some() && plain(&e.command) == DEFAULT_RUN;
        let cmd = small(&e.command, work, lab.path(), default_run);
        // A run's target is a directory; a path another program is given (`--filename=`,
        // `of=`, `-d`) gets its parent directory.
        for p in cmd.split(' ') {
            let (file, p) = match p.split_once('=') {
                Some((_, v)) => (true, v),
                None => (false, p),
            };
            if p.starts_with(&work.display().to_string()) && !p.ends_with(".json") {
                let path = Path::new(p);
                let d = if file || path.extension().is_some() || !cmd.starts_with("candor run ") {
                    path.parent().unwrap()
                } else {
                    path
                };
                std::fs::create_dir_all(d).unwrap();
            }
        }
        let t = std::time::Instant::now();
        let o = shell(work, &cmd);
        println!(
            "{}:{}: {:.1} s: {cmd}",
            e.file,
            e.line,
            t.elapsed().as_secs_f64()
        );
        let mut said = format!("{}{}", common::text(&o.stdout), common::text(&o.stderr));
        // What the example sends to a file is what it printed.
        if let Some((_, to)) = cmd.split_once(" > ").or_else(|| cmd.split_once(" >> ")) {
            let file = to.split(' ').next().unwrap_or("").trim_matches('"');
            let file = if file.starts_with('$') {
                work.join("summary.md")
            } else {
                work.join(file)
            };
            said.push_str(&std::fs::read_to_string(file).unwrap_or_default());
        }
        let (code, says) = promise(e);
        assert_eq!(
            o.status.code(),
            Some(code),
            "{}:{}: `{cmd}` exits {code}:\n{said}",
            e.file,
            e.line
        );
        for s in says {
            assert!(
                said.contains(s),
                "{}:{}: `{cmd}` prints {s:?}:\n{said}",
                e.file,
                e.line
            );
        }
        for w in ["-o", "--html"] {
            let words: Vec<&str> = cmd.split(' ').collect();
            if let Some(i) = words.iter().position(|x| *x == w) {
                let file = words[i + 1];
                let sub = words
                    .iter()
                    .position(|x| *x == "candor")
                    .map(|c| words[c + 1]);
                if matches!(sub, Some("report" | "compare" | "merge")) && !cmd.contains('>') {
                    assert!(
                        said.contains(&format!("wrote {file}")),
                        "{}:{}: `{cmd}` names {file}:\n{said}",
                        e.file,
                        e.line
                    );
                }
                assert!(
                    work.join(file).exists(),
                    "{}:{}: {file} written",
                    e.file,
                    e.line
                );
            }
        }
    }
    skipped
}

/// Takes down a lab an example made, when the page's examples end or fail.
struct LabDown(PathBuf);

impl Drop for LabDown {
    fn drop(&mut self) {
        if self.0.join(".candor-lab").exists() {
            let o = common::candor()
                .args(["lab", "destroy", "--dir"])
                .arg(&self.0)
                .output()
                .expect("candor runs");
            if !std::thread::panicking() {
                assert!(o.status.success(), "{}", common::text(&o.stderr));
            }
        }
    }
}

fn page_test(page: &str) {
    let skipped = run_page(page);
    if !skipped.is_empty() {
        common::skip(format!("examples not run: {}", skipped.join(", ")));
    }
}

/// What the documented `candor lab create` needs free: three filesystems of 4 GiB.
const LAB_ROOM: u64 = 12 << 30;

/// Bytes free to an unprivileged user on the filesystem of `dir` (what `candor lab`
/// checks before it makes its backing files).
fn free_bytes(dir: &Path) -> u64 {
    let c = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()).expect("a path");
    // SAFETY: statvfs fills the struct it is given; `c` is a NUL-terminated path.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return u64::MAX;
    }
    st.f_bavail as u64 * st.f_frsize as u64
}

#[test]
fn every_example_is_found_parses_and_is_run_or_said_why_not() {
    let all = examples();
    // The README's examples and at least one from each page that has any.
    assert!(all.len() >= 70, "{} examples: {all:#?}", all.len());
    for page in [
        "README.md",
        "docs/reports.md",
        "docs/audit.md",
        "docs/mpi.md",
    ] {
        assert!(all.iter().any(|e| e.file == page), "{page}");
    }
    let mut parsed = 0;
    for e in &all {
        let commands = candor_commands(&e.command);
        assert!(!commands.is_empty(), "{}:{}: {}", e.file, e.line, e.command);
        for args in commands {
            let words: Vec<&str> = args.split_whitespace().collect();
            // `lab list --paths` inside `$(...)` and `audit -- PROGRAM`: candor's part only.
            let words: Vec<&str> = match words.iter().position(|w| *w == "--") {
                Some(i) => words[..i].to_vec(),
                None => words,
            };
            let o = common::candor()
                .args(words.iter().map(|w| w.trim_matches('"')))
                .arg("--help")
                .output()
                .expect("candor runs");
            assert!(
                o.status.success(),
                "{}:{}: `candor {args} --help` is refused: {}",
                e.file,
                e.line,
                common::text(&o.stderr)
            );
            parsed += 1;
        }
    }
    assert!(parsed >= all.len());
    // docs/mpi.md's first example works as root on one machine (OpenMPI's mpirun refuses
    // root without --allow-run-as-root, and more ranks than cores without --oversubscribe);
    // crates/candor/tests/mpi.rs runs it with the mpi build.
    let mpi = all.iter().find(|e| e.file == "docs/mpi.md").unwrap();
    assert!(
        mpi.command
            .starts_with("mpirun --allow-run-as-root --oversubscribe -n 4 candor run --mpi"),
        "docs/mpi.md's first example: {}",
        mpi.command
    );
    // Every example not run here says why, and each reason is used.
    for (k, _) in NOT_HERE {
        assert!(
            all.iter().any(|e| e.command.contains(k)),
            "NOT_HERE's {k:?} matches no example any more"
        );
    }
    // The substitution rule does what the file's comment says.
    let (w, l) = (Path::new("/w"), Path::new("/l"));
    assert_eq!(
        small(
            "candor run --threads 1,2,4,8,12 --file-size 1m,50m,150m --runtime 1s /mnt/a # x",
            w,
            l,
            true
        ),
        "candor run --threads 1,2,4 --file-size 1m --runtime 200ms /w/a"
    );
    assert_eq!(
        small(
            "$ candor audit -q -- fio --name=b --filename=/var/tmp/d/w.dat --size=512m",
            w,
            l,
            true
        ),
        "candor audit -q -- fio --name=b --filename=/w/d/w.dat --size=16m"
    );
    assert_eq!(
        small(
            "candor compare A.json B.json [C.json ...] [--html FILE]",
            w,
            l,
            true
        ),
        "candor compare A.json B.json"
    );
    assert_eq!(
        small(
            "sudo candor run $(candor lab list --paths) --tests write",
            w,
            l,
            false
        ),
        "candor run $(candor lab list --paths --dir /l) --tests write --file-size 1m"
    );
    assert_eq!(
        small("candor lab create --fs ext4,xfs", w, l, true),
        "candor lab create --fs ext4,xfs --dir /l"
    );
}

#[test]
fn the_examples_run_in_the_readme() {
    page_test("README.md");
}

#[test]
fn the_examples_run_in_docs_reports() {
    page_test("docs/reports.md");
}

#[test]
fn the_examples_run_in_docs_audit() {
    page_test("docs/audit.md");
}

#[test]
fn the_examples_run_in_the_other_docs() {
    let mut skipped = Vec::new();
    for page in [
        "docs/bpf.md",
        "docs/lab.md",
        "docs/mpi.md",
        "docs/performance.md",
        "docs/reliability.md",
        "docs/studies.md",
        "docs/witness.md",
    ] {
        skipped.extend(run_page(page));
    }
    if !skipped.is_empty() {
        common::skip(format!("examples not run: {}", skipped.join(", ")));
    }
}

#[test]
fn the_defaults_the_readme_states_are_those_of_run_help() {
    let o = common::candor()
        .args(["run", "--help"])
        .output()
        .expect("candor runs");
    assert!(o.status.success());
    let raw = common::text(&o.stdout);
    let flat = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let help = flat(&raw);
    let readme = flat(
        &std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"))
            .unwrap(),
    );
    // The default run, as both say it.
    for fact in [
        "sequential 1 MiB writes and reads at queue depths 1 and 8",
        "random 4 KiB reads and writes at depths 1 and 32",
        "on io_uring with O_DIRECT",
        "a 1 GiB file",
    ] {
        assert!(readme.contains(fact), "README.md says {fact:?}");
        assert!(
            help.contains(fact),
            "candor run --help says {fact:?}:\n{help}"
        );
    }
    // Repetitions and the cap per repetition.
    assert!(readme.contains("3 repetitions each capped at 2 s"));
    assert!(help.contains("3 repetitions each capped at 2 s"));
    assert!(
        help.contains("[default: 3; 1 with --auto, --preset iozone or --steady-state]"),
        "{help}"
    );
    assert!(
        help.contains("2 s"),
        "--help states the default run's 2 s cap"
    );
    // Every option of run --help that takes a value states its default or what happens
    // without it.
    for opt in [
        "--file-size",
        "--record-size",
        "--repeat",
        "--engine",
        "--runtime",
    ] {
        let lines: Vec<&str> = raw.lines().collect();
        let at = lines
            .iter()
            .position(|l| l.trim_start().starts_with(&format!("{opt} <")))
            .unwrap_or_else(|| panic!("{opt} in --help"));
        // The option's text runs to the next option's line.
        let end = lines[at + 1..]
            .iter()
            .position(|l| {
                let t = l.trim_start();
                l.len() - t.len() <= 6 && t.starts_with('-')
            })
            .map_or(lines.len(), |e| at + 1 + e);
        let text = flat(&lines[at..end].join(" "));
        assert!(
            text.contains("[default: "),
            "--help states {opt}'s default: {text}"
        );
    }
}

/// README's recorded output of the default run is one candor prints now: every interval it
/// shows as `mean ± half-width` is narrower than the mean (a wider one is printed as
/// min-max), and its rows are the default run's eight points.
#[test]
fn the_readmes_recorded_default_run_is_what_candor_prints() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"))
            .unwrap();
    let start = readme
        .find("## What the default run prints")
        .expect("README shows the default run");
    let block = &readme[start..];
    let block = &block[block.find("```\n").unwrap() + 4..];
    let block = &block[..block.find("```").unwrap()];
    assert!(
        block.contains("\nCommand: candor run -o /tmp/default.json\n"),
        "{block}"
    );
    let rows: Vec<&str> = block
        .lines()
        .filter(|l| {
            ["write ", "read ", "randread ", "randwrite "]
                .iter()
                .any(|t| l.starts_with(t))
        })
        .collect();
    assert_eq!(rows.len(), 8, "{block}");
    for (test, depth) in [
        ("write", 1),
        ("write", 8),
        ("read", 1),
        ("read", 8),
        ("randread", 1),
        ("randread", 32),
        ("randwrite", 1),
        ("randwrite", 32),
    ] {
        assert!(
            rows.iter().any(|r| {
                let w: Vec<&str> = r.split_whitespace().collect();
                w[0] == test && w[4] == depth.to_string() && r.contains("io_uring direct")
            }),
            "{test} at depth {depth}: {rows:#?}"
        );
    }
    for r in &rows {
        let w: Vec<&str> = r.split_whitespace().collect();
        if let Some(i) = w.iter().position(|x| *x == "±") {
            let (mean, half): (f64, f64) = (w[i - 1].parse().unwrap(), w[i + 1].parse().unwrap());
            assert!(half < mean, "an interval wider than its mean: {r}");
        }
    }
}
