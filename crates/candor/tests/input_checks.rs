//! `candor run`'s inputs refused before anything runs: sizes whose arithmetic would wrap
//! (a file size near 2^64, threads x file size; a record above candor's 1G), a target
//! filesystem with no free space at all, output paths that cannot be written or would
//! replace something that is not a regular file (`-o`, `--html`, `--rank-output`), and
//! pseudo-filesystems (`/proc`, `/sys`...) as targets. Each is exit 2, one sentence naming
//! the option or target, and nothing left behind: no `.candor-*` directory in the target,
//! no output file. `candor audit -o` and `candor merge -o` refuse the same outputs.

mod common;
use common::{candor, need_programs, need_root, text};
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// `candor run DIR ARGS --quiet`, timed.
fn run(dir: &Path, args: &[&str]) -> (Output, Duration) {
    let t = Instant::now();
    let o = candor()
        .arg("run")
        .arg(dir)
        .args(args)
        .arg("--quiet")
        .output()
        .expect("candor runs");
    (o, t.elapsed())
}

/// What candor left in `dir` (its run directories are `.candor-*`).
fn left_in(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .expect("read the target")
        .map(|e| {
            e.expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect()
}

/// A refusal before anything ran: exit 2 at once, one line `candor: ...` containing each
/// of `says`, nothing new in `dir`.
fn refused(dir: &Path, args: &[&str], says: &[&str]) -> String {
    let before = left_in(dir);
    let (o, took) = run(dir, args);
    let err = one_sentence(&o, &format!("{args:?}"), says);
    assert!(
        took < Duration::from_secs(20),
        "{args:?}: refused only after {took:?}"
    );
    assert_eq!(left_in(dir), before, "{args:?}: something was left behind");
    err
}

#[test]
fn a_file_size_near_2_64_is_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    refused(
        dir.path(),
        &["--tests", "0", "--file-size", "18085043209506831862"],
        &["--file-size", "18085043209506831862"],
    );
    // The largest size that parses.
    refused(
        dir.path(),
        &["--tests", "0", "--file-size", "18446744073709551615"],
        &["--file-size"],
    );
}

#[test]
fn threads_times_file_size_beyond_2_64_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    refused(
        dir.path(),
        &["--tests", "0", "--file-size", "1000000t", "--threads", "64"],
        &["--file-size", "--threads"],
    );
    // The sweep's largest file, by the same rule.
    refused(
        dir.path(),
        &[
            "--tests",
            "0",
            "--auto",
            "--max-file-size",
            "18085043209506831862",
        ],
        &["--max-file-size"],
    );
}

#[test]
fn a_record_above_1g_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    refused(
        dir.path(),
        &["--tests", "0", "--file-size", "8g", "--record-size", "4g"],
        &["--record-size 4G"],
    );
}

/// A usage refusal's output: exit 2 and one line `candor: ...` containing each of `says`
/// (`what` names the command in the messages). Returns the line.
fn one_sentence(o: &Output, what: &str, says: &[&str]) -> String {
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{what}: {err}");
    assert_eq!(err.trim().lines().count(), 1, "{what}: one sentence: {err}");
    assert!(err.starts_with("candor: "), "{what}: {err}");
    for s in says {
        assert!(err.contains(s), "{what}: expected \"{s}\" in: {err}");
    }
    err
}

/// `refused` for a run of nothing (`--tests 0 --file-size 64k`) writing its output `opt`
/// to `path`.
fn output_refused(dir: &Path, opt: &str, path: &str, says: &[&str]) -> String {
    refused(
        dir,
        &["--tests", "0", "--file-size", "64k", opt, path],
        says,
    )
}

#[test]
fn an_html_report_in_a_missing_directory_is_refused_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let err = output_refused(
        dir.path(),
        "--html",
        "/nonexistent/dir/x.html",
        &["--html", "/nonexistent/dir"],
    );
    assert!(err.contains("does not exist"), "{err}");
    assert!(!Path::new("/nonexistent").exists());
}

#[test]
fn an_output_that_is_a_directory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let shown = out.path().display().to_string();
    for opt in ["--html", "-o"] {
        output_refused(dir.path(), opt, &shown, &[opt, "is a directory"]);
    }
    assert!(left_in(out.path()).is_empty());
}

#[test]
fn an_output_that_is_a_pipe_or_a_link_is_not_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let fifo = out.path().join("pipe");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: c is a valid path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
    let link = out.path().join("link");
    std::os::unix::fs::symlink("/dev/null", &link).unwrap();
    for (opt, path, kind) in [
        ("-o", &fifo, "a pipe"),
        ("--html", &link, "a symbolic link"),
    ] {
        output_refused(dir.path(), opt, &path.display().to_string(), &[opt, kind]);
    }
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
}

/// `candor audit -o` and `candor merge -o` naming a pipe are refused before anything runs
/// and leave it a pipe: their save renames a new file over the path, which (as root, with
/// `-o /dev/null`) once replaced the null device with a file.
#[test]
fn audit_and_merge_outputs_that_are_not_files_are_not_replaced() {
    use std::os::unix::fs::FileTypeExt;
    let out = tempfile::tempdir().unwrap();
    let fifo = out.path().join("pipe");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: c is a valid path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
    let marker = out.path().join("ran");
    let runs = [
        vec![
            "audit".to_string(),
            "-o".into(),
            fifo.display().to_string(),
            "--".into(),
            "touch".into(),
            marker.display().to_string(),
        ],
        vec![
            "merge".to_string(),
            "a.json".into(),
            "b.json".into(),
            "-o".into(),
            fifo.display().to_string(),
        ],
    ];
    for args in runs {
        let o = candor().args(&args).output().expect("candor runs");
        one_sentence(&o, &format!("{args:?}"), &["-o", "a pipe"]);
        assert!(
            std::fs::symlink_metadata(&fifo)
                .unwrap()
                .file_type()
                .is_fifo(),
            "{args:?}: the pipe was replaced"
        );
    }
    assert!(!marker.exists(), "the audited command ran");
    assert_eq!(left_in(out.path()), vec!["pipe".to_string()]);
}

/// A tmpfs mounted for the test; unmounted when dropped.
struct Tmpfs(tempfile::TempDir);

impl Tmpfs {
    fn mount(options: &str) -> Tmpfs {
        let d = tempfile::tempdir().expect("a mount point");
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", options, "candor-test"])
            .arg(d.path())
            .status()
            .expect("mount runs");
        assert!(ok.success(), "mount -t tmpfs -o {options}");
        Tmpfs(d)
    }

    fn path(&self) -> &Path {
        self.0.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0.path()).status();
    }
}

#[test]
fn outputs_on_a_read_only_filesystem_are_refused_before_the_run() {
    if !need_root("to mount a read-only tmpfs") || !need_programs(&["mount", "umount"]) {
        return;
    }
    let ro = Tmpfs::mount("ro,size=1m");
    let dir = tempfile::tempdir().unwrap();
    for opt in ["-o", "--html"] {
        let file = ro.path().join("result.out").display().to_string();
        output_refused(dir.path(), opt, &file, &[opt, "read-only"]);
    }
    // An output on /proc cannot be made either.
    output_refused(dir.path(), "-o", "/proc/candor.json", &["-o", "/proc"]);
}

#[test]
fn a_rank_output_that_cannot_be_made_is_refused_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, b"x").unwrap();
    let rank_dir = file.join("ranks").display().to_string();
    // Checked before MPI starts, so also where candor is built without it and no launcher
    // is around.
    let mut c = candor();
    c.args([
        "run",
        "--mpi",
        "--quiet",
        "--tests",
        "0",
        "--file-size",
        "64k",
    ])
    .args(["--rank-output", &rank_dir])
    .arg(dir.path());
    for k in ["OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"] {
        c.env_remove(k);
    }
    let o = c.output().expect("candor runs");
    let err = one_sentence(
        &o,
        "--rank-output",
        &["(--rank-output)", "is not a directory"],
    );
    assert_eq!(left_in(dir.path()), vec!["a-file".to_string()], "{err}");
}

#[test]
fn pseudo_filesystems_are_refused_as_targets() {
    for (target, fs) in [("/proc", "proc"), ("/sys", "sysfs"), ("/proc/self", "proc")] {
        let (o, _) = run(Path::new(target), &["--tests", "0", "--file-size", "64k"]);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{target}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{target}: {err}");
        assert!(
            err.contains(target) && err.contains(fs) && err.contains("pseudo-filesystem"),
            "{target}: {err}"
        );
    }
}

#[test]
fn a_full_filesystem_is_refused_and_not_written_until_enospc() {
    if !need_root("to mount a small tmpfs") || !need_programs(&["mount", "umount"]) {
        return;
    }
    let fs = Tmpfs::mount("size=1m");
    // Every block taken: statvfs says 0 bytes free.
    let filler = fs.path().join("filler");
    let mut f = std::fs::File::create(&filler).unwrap();
    let chunk = vec![1u8; 64 << 10];
    loop {
        use std::io::Write;
        if f.write_all(&chunk).is_err() {
            break;
        }
    }
    drop(f);
    let err = refused(
        fs.path(),
        &["--tests", "0", "--file-size", "64k"],
        &["has 0 B free"],
    );
    assert!(err.contains(&fs.path().display().to_string()), "{err}");
}
