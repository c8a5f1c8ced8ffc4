//! How a test of candor says that it cannot run here.
//!
//! A test needs things this machine may lack: root, a program, a kernel feature. When one
//! is missing the test calls [`skip`] with the reason and returns without asserting
//! anything; [`skip`] prints one line, `skipped: <test>: <reason>`, which `scripts/test`
//! counts as a skipped test (not a passed one) and lists with its reason.
//!
//! Only a missing capability is a skip. When the capability is there and candor, or the
//! test's own set-up, fails, the test panics: [`need`] turns a [`Missing`] into a skip and
//! every other error into a panic.
//!
//! Where every capability is expected (`scripts/test` as root with every test dependency
//! installed sets [`REQUIRE_ALL`]), a skip is itself a failure: [`skip`] panics with the
//! reason instead of printing it.

use std::cell::Cell;
use std::fmt::Display;
use std::path::Path;

/// The variable that makes every skip a failure (`scripts/test` sets it to 1 when root
/// and every dependency of the tests are present).
pub const REQUIRE_ALL: &str = "CANDOR_TEST_REQUIRE_ALL";

thread_local! {
    static SKIPPED: Cell<bool> = const { Cell::new(false) };
}

/// The test running on this thread, as libtest names it (libtest runs each test on a
/// thread of that name).
pub fn test_name() -> String {
    std::thread::current()
        .name()
        .unwrap_or("<unnamed thread>")
        .to_string()
}

/// Whether a skip is a failure here (see [`REQUIRE_ALL`]).
pub fn skips_are_failures() -> bool {
    std::env::var_os(REQUIRE_ALL).is_some_and(|v| !v.is_empty() && v != "0")
}

/// Says that this test cannot run here because `reason` is missing; the caller returns
/// right after, without asserting anything. Prints `skipped: <test>: <reason>` (once per
/// test: a second skip in the same test is a mistake of the test and panics). Where every
/// capability is expected ([`REQUIRE_ALL`]) it panics with the reason instead.
pub fn skip(reason: impl Display) {
    let name = test_name();
    let reason = reason.to_string();
    assert!(
        !reason.contains('\n'),
        "a skip's reason is one line: {reason:?}"
    );
    if skips_are_failures() {
        panic!(
            "{name} would be skipped ({reason}), but {REQUIRE_ALL} says every capability \
             the tests need is present here: a skip here is a failure"
        );
    }
    if SKIPPED.with(|s| s.replace(true)) {
        panic!("{name} skipped twice (the second time: {reason}): a test skips once, then returns");
    }
    eprintln!("skipped: {name}: {reason}");
}

/// What a set-up step found: the capability is missing (a skip), or it is there and the
/// step failed (a failure).
#[derive(Debug)]
pub enum Unavailable {
    /// This machine lacks what the test needs: the test is skipped with this reason.
    Missing(String),
    /// The capability is there and the set-up failed: the test fails with this reason.
    Failed(String),
}

pub use Unavailable::{Failed, Missing};

/// `Ok(v)` gives `Some(v)`; [`Missing`] is a [`skip`] and gives `None` (the caller
/// returns); [`Failed`] panics.
pub fn need<T>(r: Result<T, Unavailable>) -> Option<T> {
    match r {
        Ok(v) => Some(v),
        Err(Missing(why)) => {
            skip(why);
            None
        }
        Err(Failed(why)) => panic!("{why}"),
    }
}

/// [`need`] for a set-up whose own error type tells a missing capability
/// (`is_missing(&e)`, a skip) from a failure (a panic with the error).
pub fn need_or<T, E: Display>(r: Result<T, E>, is_missing: impl FnOnce(&E) -> bool) -> Option<T> {
    need(r.map_err(|e| {
        if is_missing(&e) {
            Missing(e.to_string())
        } else {
            Failed(e.to_string())
        }
    }))
}

/// Whether this process runs as root.
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Whether `program` is on the PATH.
pub fn have(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|d| d.join(program).is_file()))
}

/// True when running as root; otherwise skips (saying what root is `for_what`) and
/// returns false.
pub fn need_root(for_what: &str) -> bool {
    if is_root() {
        return true;
    }
    skip(format!("needs root {for_what}"));
    false
}

/// True when every program is on the PATH; otherwise skips naming the first one missing
/// and returns false.
pub fn need_programs(programs: &[&str]) -> bool {
    match programs.iter().find(|p| !have(p)) {
        None => true,
        Some(p) => {
            skip(format!("{p} is not installed"));
            false
        }
    }
}

/// True when `path` exists; otherwise skips (with `reason`) and returns false.
pub fn need_path(path: &Path, reason: &str) -> bool {
    if path.exists() {
        return true;
    }
    skip(format!("{reason} ({} does not exist)", path.display()));
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_test_name_is_the_thread_name_libtest_gives() {
        assert_eq!(
            test_name(),
            "tests::the_test_name_is_the_thread_name_libtest_gives"
        );
    }

    #[test]
    fn need_passes_values_through() {
        assert_eq!(need::<u8>(Ok(3)), Some(3));
    }

    #[test]
    #[should_panic(expected = "the loop device did not attach")]
    fn a_failed_set_up_is_a_failure_not_a_skip() {
        let _ = need::<()>(Err(Failed("the loop device did not attach".into())));
    }

    /// Set in the copies of this test binary that [`a_skip_is_counted_once_or_fails`]
    /// starts: the test then skips (twice when asked) instead of starting copies.
    const PROBE: &str = "CANDOR_TESTKIT_PROBE";

    /// A skip, seen from outside as `scripts/test` sees it: one `skipped:` line naming the
    /// test and the test passes; a second skip in the same test fails it; with
    /// [`REQUIRE_ALL`] the skip itself fails the test. Each case runs this test again in a
    /// process of its own, so the variables stay out of the other tests' way.
    #[test]
    fn a_skip_is_counted_once_or_fails() {
        const NAME: &str = "tests::a_skip_is_counted_once_or_fails";
        if let Some(probe) = std::env::var_os(PROBE) {
            assert!(need::<()>(Err(Missing("no such device here".into()))).is_none());
            if probe == "twice" {
                skip("and no other either");
            }
            return;
        }
        let probe = |probe: &str, require_all: bool| {
            let mut c = std::process::Command::new(std::env::current_exe().unwrap());
            c.args(["--exact", NAME, "--nocapture", "--test-threads=1"])
                .env(PROBE, probe)
                .env_remove(REQUIRE_ALL);
            if require_all {
                c.env(REQUIRE_ALL, "1");
            }
            let out = c.output().expect("the test binary runs again");
            let err = String::from_utf8_lossy(&out.stderr).into_owned();
            let skips: Vec<String> = err
                .lines()
                .filter(|l| l.starts_with("skipped: "))
                .map(str::to_string)
                .collect();
            (out.status.success(), skips, err)
        };
        let (ok, skips, err) = probe("once", false);
        assert!(ok, "{err}");
        assert_eq!(skips, [format!("skipped: {NAME}: no such device here")]);

        let (ok, skips, err) = probe("twice", false);
        assert!(!ok, "a second skip in one test fails it: {err}");
        assert_eq!(skips.len(), 1, "{err}");
        assert!(err.contains("skipped twice"), "{err}");

        let (ok, skips, err) = probe("once", true);
        assert!(!ok, "with {REQUIRE_ALL} a skip fails: {err}");
        assert!(skips.is_empty(), "{err}");
        assert!(err.contains("a skip here is a failure"), "{err}");
    }

    #[test]
    fn have_finds_a_program_every_machine_has_and_not_a_made_up_one() {
        assert!(have("sh"));
        assert!(!have("candor-testkit-no-such-program"));
    }
}
