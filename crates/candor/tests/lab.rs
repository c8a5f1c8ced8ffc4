//! `candor lab` driven through the binary: a lab of ext4, xfs and btrfs made, used and
//! removed for real (as root), and the failure paths: a failing mkfs, bad input, not root,
//! a directory the lab did not make.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;

mod common;
use common::{candor_as_nobody, is_root, need_lab, need_root, text};

/// Lab tests attach loop devices, of which the machine has few: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn candor(args: &[&str]) -> Output {
    candor_with_path(args, None)
}

fn candor_with_path(args: &[&str], path: Option<&str>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_candor"));
    cmd.args(args);
    if let Some(p) = path {
        cmd.env("PATH", p);
    }
    cmd.output().expect("run candor")
}

fn mounts_under(dir: &Path) -> Vec<String> {
    let mounts = std::fs::read_to_string("/proc/mounts").expect("read /proc/mounts");
    let d = dir.display().to_string();
    mounts
        .lines()
        .filter(|l| l.split(' ').nth(1).is_some_and(|t| t.starts_with(&d)))
        .map(str::to_string)
        .collect()
}

fn loops_under(dir: &Path) -> Vec<String> {
    let out = Command::new("losetup")
        .arg("-a")
        .output()
        .expect("run losetup -a");
    let d = dir.display().to_string();
    text(&out.stdout)
        .lines()
        .filter(|l| l.contains(&d))
        .map(str::to_string)
        .collect()
}

fn temp_dir() -> tempfile::TempDir {
    tempfile::tempdir().expect("make a temporary directory")
}

/// A temporary directory (removed when the first is dropped) and its canonical path.
fn canonical_temp() -> (tempfile::TempDir, PathBuf) {
    let tmp = temp_dir();
    let dir = std::fs::canonicalize(tmp.path()).expect("canonicalize");
    (tmp, dir)
}

/// `canonical_temp`, its directory with mode 0755 (root's, readable by others).
fn root_owned_temp() -> (tempfile::TempDir, PathBuf) {
    let (tmp, dir) = canonical_temp();
    chmod(&dir, 0o755);
    (tmp, dir)
}

fn chmod(p: impl AsRef<Path>, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// The lab tests' turn with the loop devices (held until dropped); None after a skip when
/// a lab, or one of `programs`, cannot be had here.
fn lab_turn(programs: &[&str]) -> Option<std::sync::MutexGuard<'static, ()>> {
    let serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !need_lab() || !common::need_programs(programs) {
        return None;
    }
    Some(serial)
}

/// Asserts that nothing is mounted or attached under `dir`.
fn assert_nothing_under(dir: &Path) {
    assert!(mounts_under(dir).is_empty(), "{:?}", mounts_under(dir));
    assert!(loops_under(dir).is_empty(), "{:?}", loops_under(dir));
}

/// `candor lab create --fs ext4,xfs,btrfs --size 300m --dir D`, which must succeed.
fn create_three(d: &str) -> Output {
    let out = candor(&[
        "lab",
        "create",
        "--fs",
        "ext4,xfs,btrfs",
        "--size",
        "300m",
        "--dir",
        d,
    ]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    out
}

/// A `mkfs.xfs` running `script`, in `dir/bin`; the PATH that finds it first.
fn path_with_mkfs_xfs(dir: &Path, script: &str) -> String {
    let bin = dir.join("bin");
    std::fs::create_dir(&bin).expect("mkdir bin");
    let fake = bin.join("mkfs.xfs");
    std::fs::write(&fake, script).expect("write the stand-in mkfs.xfs");
    chmod(&fake, 0o755);
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// A `.candor-lab` in `dir` that candor did not make, holding one file, `precious`.
fn foreign_lab(dir: &Path) -> PathBuf {
    let foreign = dir.join(".candor-lab");
    std::fs::create_dir(&foreign).expect("mkdir");
    std::fs::write(foreign.join("precious"), b"not the lab's").expect("write");
    foreign
}

#[test]
fn create_use_and_destroy_ext4_xfs_btrfs() {
    let Some(_serial) = lab_turn(&[]) else {
        return;
    };
    let (_tmp, dir) = canonical_temp();
    let d = dir.display().to_string();
    std::fs::write(dir.join("keep.txt"), b"a file the lab did not make").expect("write keep.txt");

    let out = create_three(&d);
    assert!(
        text(&out.stderr).contains("sparse"),
        "{}",
        text(&out.stderr)
    );
    let paths: Vec<String> = text(&out.stdout).lines().map(str::to_string).collect();
    let lab = dir.join(".candor-lab");
    let expected: Vec<String> = ["ext4", "xfs", "btrfs"]
        .iter()
        .map(|fs| lab.join("mnt").join(fs).display().to_string())
        .collect();
    assert_eq!(paths, expected);

    // Each path is a mount of the named filesystem type, on a loop device, and takes a file.
    let mounts = std::fs::read_to_string("/proc/mounts").expect("read /proc/mounts");
    for (fs, path) in ["ext4", "xfs", "btrfs"].iter().zip(&paths) {
        let line = mounts
            .lines()
            .find(|l| l.split(' ').nth(1) == Some(path.as_str()))
            .unwrap_or_else(|| panic!("{path} is not in /proc/mounts"));
        let fields: Vec<&str> = line.split(' ').collect();
        assert!(fields[0].starts_with("/dev/loop"), "{line}");
        assert_eq!(fields[2], *fs, "{line}");
        // Direct I/O to the backing file, so the loop device behaves like a disk rather
        // than the host's page cache (the temporary directory is on a disk filesystem).
        assert!(
            candor_lab::loop_direct_io(fields[0]),
            "{} does not use direct I/O",
            fields[0]
        );
        let file = Path::new(path).join("hello");
        std::fs::write(&file, format!("written on {fs}")).expect("write in the lab");
        assert_eq!(
            std::fs::read_to_string(&file).expect("read back"),
            format!("written on {fs}")
        );
    }
    assert_eq!(loops_under(&dir).len(), 3, "{:?}", loops_under(&dir));

    // list shows them mounted; --paths prints exactly what create printed.
    let out = candor(&["lab", "list", "--dir", &d]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        text(&out.stdout).matches("mounted").count(),
        3,
        "{}",
        text(&out.stdout)
    );
    let out = candor(&["lab", "list", "--paths", "--dir", &d]);
    assert_eq!(text(&out.stdout).lines().collect::<Vec<_>>(), paths);

    // Creating again is the same lab: nothing new, same paths, files kept.
    let out = create_three(&d);
    assert!(
        text(&out.stderr).contains("already exists"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(text(&out.stdout).lines().collect::<Vec<_>>(), paths);
    assert_eq!(loops_under(&dir).len(), 3);
    assert!(Path::new(&paths[1]).join("hello").exists());

    // As after a reboot: xfs unmounted and its loop device gone. create brings it back
    // with its data, without mkfs.
    let status = Command::new("umount")
        .arg(&paths[1])
        .status()
        .expect("umount");
    assert!(status.success());
    let xfs_img = lab.join("xfs.img").display().to_string();
    let out = Command::new("losetup")
        .args(["-j", &xfs_img])
        .output()
        .expect("losetup -j");
    let device = text(&out.stdout)
        .split(':')
        .next()
        .unwrap_or_default()
        .to_string();
    assert!(device.starts_with("/dev/loop"), "{}", text(&out.stdout));
    let status = Command::new("losetup")
        .args(["-d", &device])
        .status()
        .expect("losetup -d");
    assert!(status.success());
    let out = candor(&["lab", "list", "--dir", &d]);
    assert!(
        text(&out.stdout).contains("no loop device"),
        "{}",
        text(&out.stdout)
    );
    let out = create_three(&d);
    assert!(
        text(&out.stderr).contains("mounted again"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(Path::new(&paths[1]).join("hello")).expect("xfs data kept"),
        "written on xfs"
    );

    let out = candor(&["lab", "destroy", "--dir", &d]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    assert_nothing_under(&dir);
    assert!(!lab.exists(), "{} is still there", lab.display());
    assert!(
        dir.join("keep.txt").exists(),
        "destroy removed a file it did not make"
    );

    // Destroying again has nothing to do and says so.
    let out = candor(&["lab", "destroy", "--dir", &d]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        text(&out.stderr).contains("nothing to do"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_failing_mkfs_leaves_no_loop_device_mount_or_file() {
    let Some(_serial) = lab_turn(&[]) else {
        return;
    };
    let (_tmp, dir) = canonical_temp();
    // A mkfs.xfs that fails, found first on PATH: ext4 is made, then xfs fails, and the
    // whole call is undone.
    let path = path_with_mkfs_xfs(
        &dir,
        "#!/bin/sh\necho 'mkfs.xfs: simulated failure' >&2\nexit 1\n",
    );
    let work = dir.join("work");
    std::fs::create_dir(&work).expect("mkdir work");
    let w = work.display().to_string();

    let out = candor_with_path(
        &[
            "lab", "create", "--fs", "ext4,xfs", "--size", "300m", "--dir", &w,
        ],
        Some(&path),
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr: {err}");
    assert!(
        err.contains("mkfs.xfs") && err.contains("simulated failure"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "one sentence: {err}");
    assert_nothing_under(&work);
    assert!(
        !work.join(".candor-lab").exists(),
        "the lab directory was left behind"
    );
    let out = candor(&["lab", "destroy", "--dir", &w]);
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn bad_names_and_sizes_exit_2_with_one_sentence() {
    let tmp = temp_dir();
    let d = tmp.path().display().to_string();
    for (args, needle) in [
        (vec!["--fs", "ext4,zfs"], "zfs"),
        (vec!["--fs", "ext4,ext4"], "twice"),
        (vec!["--size", "4x"], "not a size"),
        (vec!["--size", "0"], "is zero"),
        (vec!["--fs", "xfs", "--size", "100m"], "too small for xfs"),
    ] {
        let mut full = vec!["lab", "create", "--dir", &d];
        full.extend(args.iter().copied());
        let out = candor(&full);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.starts_with("candor: ") && err.contains(needle),
            "{args:?}: {err}"
        );
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    }
    assert!(!tmp.path().join(".candor-lab").exists());
}

#[test]
fn not_root_exits_2_and_says_so() {
    let tmp = temp_dir();
    let d = tmp.path().display().to_string();
    let args = [
        "lab", "create", "--fs", "ext4", "--size", "64m", "--dir", &d,
    ];
    let out = if is_root() {
        let Some(mut nobody) = candor_as_nobody() else {
            return;
        };
        nobody
            .args(args)
            .output()
            .expect("run candor through setpriv")
    } else {
        candor(&args)
    };
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("needs root"), "{err}");
    assert!(!tmp.path().join(".candor-lab").exists());
}

#[test]
fn list_and_destroy_without_a_lab_do_nothing() {
    let tmp = temp_dir();
    let d = tmp.path().display().to_string();
    let out = candor(&["lab", "list", "--dir", &d]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        text(&out.stderr).contains("no lab"),
        "{}",
        text(&out.stderr)
    );
    let out = candor(&["lab", "list", "--paths", "--dir", &d]);
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty());
    let out = candor(&["lab", "destroy", "--dir", &d]);
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stderr).contains("nothing to do"));
}

#[test]
fn a_lab_directory_candor_did_not_make_is_left_alone() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = temp_dir();
    let d = tmp.path().display().to_string();
    let foreign = foreign_lab(tmp.path());

    let out = candor(&["lab", "destroy", "--dir", &d]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("did not make"),
        "{}",
        text(&out.stderr)
    );
    assert!(foreign.join("precious").exists());
    assert_eq!(std::fs::read_dir(&foreign).unwrap().count(), 1);
}

/// `lab create` checks root before the directory: this half needs root.
#[test]
fn create_leaves_a_lab_directory_candor_did_not_make_alone() {
    let Some(_serial) = lab_turn(&[]) else {
        return;
    };
    let tmp = temp_dir();
    let d = tmp.path().display().to_string();
    let foreign = foreign_lab(tmp.path());
    let out = candor(&[
        "lab", "create", "--fs", "ext4", "--size", "64m", "--dir", &d,
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("did not make"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(
        std::fs::read(foreign.join("precious")).unwrap(),
        b"not the lab's"
    );
    assert_eq!(std::fs::read_dir(&foreign).unwrap().count(), 1);
    assert_nothing_under(tmp.path());
}

#[test]
fn more_than_the_free_space_is_refused() {
    if !need_root("(the free-space check comes after the root check)") {
        return;
    }
    let tmp = temp_dir();
    let d = tmp.path().display().to_string();
    let out = candor(&[
        "lab", "create", "--fs", "ext4,xfs", "--size", "500t", "--dir", &d,
    ]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("free") && err.contains("sparse"), "{err}");
    assert!(!tmp.path().join(".candor-lab").exists());
}

/// Starts `candor lab create --fs ext4,xfs` with a mkfs.xfs that hangs, and kills candor
/// (SIGKILL: no chance to clean up) while mkfs.xfs runs. ext4 is then made and mounted, and
/// xfs has a backing file and a loop device but no filesystem.
fn interrupted_create(dir: &Path) {
    let pidfile = dir.join("mkfs.pid");
    let path = path_with_mkfs_xfs(
        dir,
        &format!(
            "#!/bin/sh\necho $$ > {}\nexec sleep 60\n",
            pidfile.display()
        ),
    );
    let work = dir.join("work");
    std::fs::create_dir(&work).expect("mkdir work");
    let mut child = Command::new(env!("CARGO_BIN_EXE_candor"))
        .args([
            "lab", "create", "--fs", "ext4,xfs", "--size", "300m", "--dir",
        ])
        .arg(&work)
        .env("PATH", path)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start candor lab create");
    let pid = common::poll_while_running(
        &mut child,
        20,
        "mkfs.xfs never started",
        "candor ended before mkfs.xfs",
        || {
            std::fs::read_to_string(&pidfile)
                .ok()
                .and_then(|t| t.trim().parse::<i32>().ok())
        },
    );
    child.kill().expect("kill candor");
    let _ = child.wait();
    // SAFETY: kill has no memory-safety preconditions; pid is the stand-in mkfs we started.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    assert_eq!(mounts_under(&work).len(), 1, "{:?}", mounts_under(&work));
    assert_eq!(loops_under(&work).len(), 2, "{:?}", loops_under(&work));
}

#[test]
fn destroy_clears_an_interrupted_create() {
    let Some(_serial) = lab_turn(&[]) else {
        return;
    };
    let (_tmp, dir) = canonical_temp();
    interrupted_create(&dir);
    let work = dir.join("work");
    let out = candor(&["lab", "destroy", "--dir", &work.display().to_string()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_nothing_under(&work);
    assert!(!work.join(".candor-lab").exists());
}

#[test]
fn create_finishes_an_interrupted_create() {
    let Some(_serial) = lab_turn(&[]) else {
        return;
    };
    let (_tmp, dir) = canonical_temp();
    interrupted_create(&dir);
    let work = dir.join("work");
    let w = work.display().to_string();
    let out = candor(&[
        "lab", "create", "--fs", "ext4,xfs", "--size", "300m", "--dir", &w,
    ]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("already there") && err.contains("made"),
        "{err}"
    );
    let mounts = mounts_under(&work);
    assert_eq!(mounts.len(), 2, "{mounts:?}");
    assert!(mounts.iter().any(|m| m.contains(" xfs ")), "{mounts:?}");
    // The half-made xfs left no second loop device behind.
    assert_eq!(loops_under(&work).len(), 2, "{:?}", loops_under(&work));
    let out = candor(&["lab", "destroy", "--dir", &w]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_nothing_under(&work);
}

#[test]
fn a_missing_mkfs_is_named_before_anything_is_made() {
    let Some(_serial) = lab_turn(&[]) else {
        return;
    };
    let (_tmp, dir) = canonical_temp();
    // A PATH with everything the lab runs except mkfs.btrfs.
    let bin = dir.join("bin");
    std::fs::create_dir(&bin).expect("mkdir bin");
    for p in ["losetup", "mount", "umount", "mkfs.ext4"] {
        let found = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
            .map(|d| d.join(p))
            .find(|c| c.is_file())
            .unwrap_or_else(|| panic!("{p} not found"));
        std::os::unix::fs::symlink(found, bin.join(p)).expect("symlink");
    }
    let work = dir.join("work");
    std::fs::create_dir(&work).expect("mkdir work");
    let out = candor_with_path(
        &[
            "lab",
            "create",
            "--fs",
            "ext4,btrfs",
            "--size",
            "300m",
            "--dir",
        ]
        .into_iter()
        .chain([work.to_str().expect("utf-8 path")])
        .collect::<Vec<_>>(),
        Some(&bin.display().to_string()),
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("mkfs.btrfs is not installed") && err.contains("btrfs-progs"),
        "{err}"
    );
    assert!(!work.join(".candor-lab").exists());
    assert!(loops_under(&work).is_empty());
}

// ---- lab state is trusted only if candor made it ----

/// `setpriv` set to run what follows as nobody (uid and gid 65534, no groups).
fn nobody() -> Command {
    let mut c = Command::new("setpriv");
    c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"]);
    c
}

/// Runs `sh -c SCRIPT` as nobody (uid and gid 65534, no groups).
fn as_nobody(script: &str) {
    let out = nobody()
        .args(["sh", "-c", script])
        .output()
        .expect("run setpriv");
    assert!(
        out.status.success(),
        "as nobody: {script}: {}",
        text(&out.stderr)
    );
}

/// A lab state file listing one formatted ext4 member with these paths.
fn state_json(backing: &Path, mount_point: &Path) -> String {
    format!(
        "{{\"kind\":\"candor-lab\",\"version\":1,\"members\":[{{\"fs\":\"ext4\",\"size\":67108864,\
         \"backing\":\"{}\",\"mount_point\":\"{}\",\"formatted\":true}}]}}\n",
        backing.display(),
        mount_point.display()
    )
}

/// Undoes by hand what is still mounted and attached under its directory when dropped, so
/// a failing test leaves nothing behind.
struct UndoUnder(PathBuf);
impl Drop for UndoUnder {
    fn drop(&mut self) {
        undo_under(&self.0);
    }
}

/// Undoes by hand whatever a wrongly trusted lab mounted and attached under `dir`, so a
/// failing test leaves nothing behind.
fn undo_under(dir: &Path) {
    for m in mounts_under(dir).iter().rev() {
        if let Some(t) = m.split(' ').nth(1) {
            let _ = Command::new("umount").arg(t).status();
        }
    }
    for l in loops_under(dir) {
        if let Some(dev) = l.split(':').next() {
            let _ = Command::new("losetup").args(["-d", dev]).status();
        }
    }
}

#[test]
fn a_lab_planted_by_another_user_is_refused_and_never_mounted() {
    let Some(_serial) = lab_turn(&["setpriv"]) else {
        return;
    };
    let (_top, top_dir) = root_owned_temp();
    // An ext4 image carrying a setuid-root copy of `id`, as made on another machine.
    let src = top_dir.join("src");
    std::fs::create_dir(&src).expect("mkdir src");
    std::fs::copy("/usr/bin/id", src.join("suid-id")).expect("copy id");
    chmod(src.join("suid-id"), 0o4755);
    let image = top_dir.join("evil.img");
    let out = Command::new("mkfs.ext4")
        .args(["-q", "-F", "-d"])
        .arg(&src)
        .arg(&image)
        .arg("64M")
        .output()
        .expect("run mkfs.ext4");
    assert!(out.status.success(), "mkfs.ext4: {}", text(&out.stderr));
    chmod(&image, 0o644);

    for (mode, why) in [
        (0o1777, "owned by uid 65534"),
        (0o0777, "without the sticky bit"),
    ] {
        let w = top_dir.join(format!("shared-{mode:o}"));
        std::fs::create_dir(&w).expect("mkdir");
        chmod(&w, mode);
        let lab = w.join(".candor-lab");
        let backing = lab.join("ext4.img");
        let mnt = lab.join("mnt/ext4");
        let state = w.join("planted.json");
        std::fs::write(&state, state_json(&backing, &mnt)).expect("write state");
        chmod(&state, 0o644);
        as_nobody(&format!(
            "mkdir -p '{mnt}' && cp '{image}' '{backing}' && cp '{state}' '{lab}/lab.json'",
            mnt = mnt.display(),
            image = image.display(),
            backing = backing.display(),
            state = state.display(),
            lab = lab.display()
        ));
        let planted = std::fs::read(&backing).expect("read planted image");
        let d = w.display().to_string();

        let out = candor(&[
            "lab", "create", "--fs", "ext4", "--size", "64m", "--dir", &d,
        ]);
        let err = text(&out.stderr);
        let mounted = mounts_under(&w);
        let euid = if mounted.is_empty() {
            String::new()
        } else {
            let o = nobody()
                .arg(mnt.join("suid-id"))
                .arg("-u")
                .output()
                .expect("run the planted binary");
            text(&o.stdout).trim().to_string()
        };
        undo_under(&w);
        assert!(
            mounted.is_empty(),
            "mode {mode:o}: root mounted nobody's image: {mounted:?}; nobody then ran its setuid binary with euid {euid}; candor said: {err}"
        );
        assert_eq!(out.status.code(), Some(2), "mode {mode:o}: {err}");
        assert!(err.contains(why), "mode {mode:o}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "one sentence: {err}");
        assert!(loops_under(&w).is_empty(), "{:?}", loops_under(&w));

        let out = candor(&["lab", "destroy", "--dir", &d]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "mode {mode:o}: {err}");
        assert!(err.contains(why), "mode {mode:o}: {err}");
        // Nothing changed: the planted things are all still there.
        assert_eq!(
            std::fs::read(&backing).expect("planted image kept"),
            planted
        );
        assert!(mnt.is_dir() && lab.join("lab.json").is_file());
    }
}

#[test]
fn a_lab_state_naming_paths_outside_the_lab_is_refused() {
    let Some(_serial) = lab_turn(&["setpriv"]) else {
        return;
    };
    let (_top, top_dir) = root_owned_temp();
    // Root's things elsewhere: a file and an (empty) directory.
    let victim_file = top_dir.join("victim.txt");
    let victim_dir = top_dir.join("victim-dir");
    std::fs::write(&victim_file, b"root's file").expect("write victim");
    std::fs::create_dir(&victim_dir).expect("mkdir victim");

    // Planted by nobody in a world-writable directory with the sticky bit.
    let w = top_dir.join("shared");
    std::fs::create_dir(&w).expect("mkdir");
    chmod(&w, 0o1777);
    let state = w.join("planted.json");
    std::fs::write(&state, state_json(&victim_file, &victim_dir)).expect("write state");
    as_nobody(&format!(
        "mkdir '{w}/.candor-lab' && cp '{s}' '{w}/.candor-lab/lab.json'",
        w = w.display(),
        s = state.display()
    ));
    // Written by root itself (as if edited by hand): an outside path, and a `..` path.
    let own = top_dir.join("own");
    let dotdot = top_dir.join("dotdot");
    for (d, backing, mnt) in [
        (&own, victim_file.clone(), victim_dir.clone()),
        (
            &dotdot,
            dotdot.join(".candor-lab/../../victim.txt"),
            dotdot.join(".candor-lab/mnt/../../../victim-dir"),
        ),
    ] {
        let lab = d.join(".candor-lab");
        std::fs::create_dir_all(&lab).expect("mkdir");
        chmod(&lab, 0o700);
        std::fs::write(lab.join("lab.json"), state_json(&backing, &mnt)).expect("write");
        chmod(lab.join("lab.json"), 0o600);
    }

    for (d, why) in [
        (&w, "owned by uid 65534"),
        (&own, "not the path the lab makes"),
        (&dotdot, "not the path the lab makes"),
    ] {
        let s = d.display().to_string();
        for args in [
            vec!["lab", "destroy", "--dir", &s],
            vec![
                "lab", "create", "--fs", "ext4", "--size", "64m", "--dir", &s,
            ],
            vec!["lab", "list", "--dir", &s],
        ] {
            let out = candor(&args);
            let err = text(&out.stderr);
            undo_under(&top_dir);
            assert_eq!(
                std::fs::read(&victim_file).ok().as_deref(),
                Some(&b"root's file"[..]),
                "{args:?} removed {}: {err}",
                victim_file.display()
            );
            assert!(
                victim_dir.is_dir(),
                "{args:?} removed {}: {err}",
                victim_dir.display()
            );
            assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
            assert!(err.contains(why), "{args:?}: {err}");
            assert_eq!(err.trim().lines().count(), 1, "one sentence: {err}");
        }
        assert!(d.join(".candor-lab/lab.json").is_file());
    }
}

fn mount_options(target: &Path) -> Vec<String> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").expect("read mountinfo");
    let t = target.display().to_string();
    let line = info
        .lines()
        .find(|l| l.split(' ').nth(4) == Some(t.as_str()))
        .unwrap_or_else(|| panic!("{t} is not mounted"));
    line.split(' ')
        .nth(5)
        .unwrap_or_default()
        .split(',')
        .map(str::to_string)
        .collect()
}

fn mode_of(p: &Path) -> u32 {
    std::fs::symlink_metadata(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .permissions()
        .mode()
        & 0o7777
}

#[test]
fn the_lab_is_private_whatever_the_umask_and_mounted_nosuid_nodev() {
    let Some(_serial) = lab_turn(&[]) else {
        return;
    };
    for umask in ["000", "022"] {
        let (_tmp, dir) = canonical_temp();
        let _undo = UndoUnder(dir.clone());
        let d = dir.display().to_string();
        let out = Command::new("sh")
            .args([
                "-c",
                &format!("umask {umask}; exec \"$0\" lab create --fs ext4 --size 64m --dir \"$1\""),
                env!("CARGO_BIN_EXE_candor"),
                &d,
            ])
            .output()
            .expect("run candor through sh");
        assert_eq!(
            out.status.code(),
            Some(0),
            "umask {umask}: {}",
            text(&out.stderr)
        );
        let lab = dir.join(".candor-lab");
        let mnt = lab.join("mnt/ext4");
        let modes = [
            (lab.clone(), mode_of(&lab)),
            (lab.join("mnt"), mode_of(&lab.join("mnt"))),
            (lab.join("ext4.img"), mode_of(&lab.join("ext4.img"))),
            (lab.join("lab.json"), mode_of(&lab.join("lab.json"))),
        ];
        let opts = mount_options(&mnt);
        // A run on the lab works as before.
        let run = Command::new(env!("CARGO_BIN_EXE_candor"))
            .arg("run")
            .arg(&mnt)
            .args(["--tests", "write,read", "--file-size", "1m", "--quiet"])
            .output()
            .expect("run candor run");
        // clean knows the lab and leaves it.
        let clean = candor(&["clean", &d]);
        let destroy = candor(&["lab", "destroy", "--dir", &d]);
        assert_eq!(
            modes.iter().map(|(_, m)| *m).collect::<Vec<_>>(),
            [0o700, 0o700, 0o600, 0o600],
            "umask {umask}: {:?}",
            modes
                .iter()
                .map(|(p, m)| format!("{} {m:o}", p.display()))
                .collect::<Vec<_>>()
        );
        assert!(
            opts.iter().any(|o| o == "nosuid") && opts.iter().any(|o| o == "nodev"),
            "umask {umask}: the lab's ext4 is mounted {opts:?}"
        );
        assert_eq!(run.status.code(), Some(0), "{}", text(&run.stderr));
        let said = text(&clean.stdout);
        assert_eq!(clean.status.code(), Some(0), "{said}");
        assert!(
            said.contains(&format!("left {}", lab.display()))
                && said.contains("candor lab's directory")
                && said.contains("candor lab destroy"),
            "{said}"
        );
        assert_eq!(destroy.status.code(), Some(0), "{}", text(&destroy.stderr));
        assert!(!lab.exists());
    }
}

/// Runs candor with `args` twice at the same time; both must succeed.
fn twice_at_once(args: &[&str], round: usize) -> (Output, Output) {
    let spawn = || {
        Command::new(env!("CARGO_BIN_EXE_candor"))
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("start candor")
    };
    let a = spawn();
    let b = spawn();
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    assert_eq!(
        a.status.code(),
        Some(0),
        "round {round}: {}",
        text(&a.stderr)
    );
    assert_eq!(
        b.status.code(),
        Some(0),
        "round {round}: {}",
        text(&b.stderr)
    );
    (a, b)
}

#[test]
fn two_lab_commands_wait_for_each_other() {
    let Some(_serial) = lab_turn(&[]) else {
        return;
    };
    let (_tmp, dir) = canonical_temp();
    let _undo = UndoUnder(dir.clone());
    let d = dir.display().to_string();
    let create = [
        "lab", "create", "--fs", "ext4", "--size", "64m", "--dir", &d,
    ];
    for round in 0..3 {
        // Two creates at once: one makes the lab, the other finds it made.
        let (a, b) = twice_at_once(&create, round);
        let (ea, eb) = (text(&a.stderr), text(&b.stderr));
        let made = [&ea, &eb]
            .iter()
            .filter(|e| {
                e.lines()
                    .any(|l| l.starts_with("candor lab: ext4 ") && l.ends_with(" made"))
            })
            .count();
        let there = [&ea, &eb]
            .iter()
            .filter(|e| e.contains("already there"))
            .count();
        assert_eq!((made, there), (1, 1), "round {round}: {ea} / {eb}");
        assert_eq!(a.stdout, b.stdout, "the same mount point printed");
        assert_eq!(mounts_under(&dir).len(), 1, "{:?}", mounts_under(&dir));
        assert_eq!(loops_under(&dir).len(), 1, "{:?}", loops_under(&dir));

        // Two destroys at once: one removes, the other finds nothing to do.
        let destroy = ["lab", "destroy", "--dir", &d];
        let (a, b) = twice_at_once(&destroy, round);
        let (ea, eb) = (text(&a.stderr), text(&b.stderr));
        let removed = [&ea, &eb]
            .iter()
            .filter(|e| e.contains("removed ext4"))
            .count();
        let nothing = [&ea, &eb]
            .iter()
            .filter(|e| e.contains("nothing to do"))
            .count();
        assert_eq!((removed, nothing), (1, 1), "round {round}: {ea} / {eb}");
        assert_nothing_under(&dir);
        assert!(!dir.join(".candor-lab").exists());
    }
}
