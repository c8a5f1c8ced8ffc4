//! A live audit of iozone's default write test, on every iozone binary this machine has:
//! `CANDOR_IOZONE` (paths separated by ':'), else `iozone` on the PATH. iozone is not in
//! Debian's packages, so without one the test says "skipped"; the same reconciliation runs
//! on every release from captured audits in tests/iozone_releases.rs.

use candor_audit::{audit, Exit, Options, SourceChoice};
use std::path::PathBuf;

fn binaries() -> Vec<PathBuf> {
    if let Some(list) = std::env::var_os("CANDOR_IOZONE") {
        return std::env::split_paths(&list)
            .filter(|p| !p.as_os_str().is_empty())
            .collect();
    }
    std::env::var_os("PATH")
        .map(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join("iozone"))
                .filter(|f| f.is_file())
                .take(1)
                .collect()
        })
        .unwrap_or_default()
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

#[test]
#[ignore = "needs an iozone binary, which no Debian package provides: CANDOR_IOZONE=/path/to/iozone cargo test -p candor-audit --test iozone_live -- --ignored"]
fn live_audit_of_the_default_write_test_names_the_flush_left_out() {
    let bins = binaries();
    if bins.is_empty() {
        candor_testkit::skip(
            "no iozone binary (not in Debian's packages; set CANDOR_IOZONE=/path/to/iozone)",
        );
        return;
    }
    if !is_root() {
        candor_testkit::skip("needs root for eBPF (the fsync's time is seen by eBPF only)");
        return;
    }
    for bin in bins {
        assert!(
            bin.is_file(),
            "CANDOR_IOZONE names {}, which is not a file",
            bin.display()
        );
        // On the disk (not /tmp, which may be tmpfs: no flush to leave out there).
        let dir = PathBuf::from(format!(
            "/var/tmp/candor-iozone-live-{}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let argv: Vec<String> = [
            bin.display().to_string(),
            "-i0".into(),
            "-s".into(),
            "128m".into(),
            "-r".into(),
            "1m".into(),
            "-f".into(),
            dir.join("t.tmp").display().to_string(),
        ]
        .into();
        let opts = Options {
            source: SourceChoice::Bpf,
            pass_through: false,
            ..Options::default()
        };
        let a = audit(&argv, &opts);
        let _ = std::fs::remove_dir_all(&dir);
        let a = match a {
            Ok(a) => a,
            Err(e) => panic!("eBPF did not load as root: {}", e.0),
        };
        assert_eq!(
            a.run.exit,
            Exit::Code(0),
            "{}: {}",
            bin.display(),
            a.run.stderr
        );
        assert!(a.unread.is_empty(), "{:?}", a.unread);
        let w = a
            .rows
            .iter()
            .find(|r| r.test == "write")
            .unwrap_or_else(|| panic!("{}: no write row: {:?}", bin.display(), a.claims));
        assert!(
            w.explanation.contains("the timer stopped before the fsync"),
            "{}: {}",
            bin.display(),
            w.explanation
        );
        eprintln!("{}: write: {}", bin.display(), w.explanation);
    }
}
