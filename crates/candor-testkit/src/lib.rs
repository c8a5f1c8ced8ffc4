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

/// Whether the kernel loads and attaches an eBPF program here, asked of the kernel itself
/// and not of candor (whose own checks are what the tests examine): a two-instruction
/// program (`r0 = 0; exit`) of type BPF_PROG_TYPE_TRACEPOINT loaded with bpf(2), then
/// attached with perf_event_open(2) and PERF_EVENT_IOC_SET_BPF to the tracepoint
/// `syscalls/sys_enter_getpid` (or `raw_syscalls/sys_enter`) read from tracefs, which is
/// mounted at /sys/kernel/tracing when it is mounted nowhere. `Err` says what the kernel
/// refused, in one line.
pub fn kernel_bpf() -> Result<(), String> {
    use std::os::fd::{FromRawFd, OwnedFd};
    let tracefs = tracefs()?;
    let id_file = [
        "events/syscalls/sys_enter_getpid/id",
        "events/raw_syscalls/sys_enter/id",
    ]
    .iter()
    .map(|f| tracefs.join(f))
    .find(|p| p.exists())
    .ok_or_else(|| format!("no syscall tracepoint under {}", tracefs.display()))?;
    let id: u64 = std::fs::read_to_string(&id_file)
        .map_err(|e| format!("cannot read {}: {e}", id_file.display()))?
        .trim()
        .parse()
        .map_err(|e| format!("{} is not a number: {e}", id_file.display()))?;

    // struct bpf_insn: code, dst_reg:4|src_reg:4, off, imm.
    // r0 = 0 (BPF_ALU64 | BPF_MOV | BPF_K); exit (BPF_JMP | BPF_EXIT).
    let insns: [u64; 2] = [0xb7, 0x95];
    let license = c"GPL";
    // union bpf_attr for BPF_PROG_LOAD: prog_type, insn_cnt, insns, license; the rest zero.
    let mut attr = [0u8; 128];
    const BPF_PROG_TYPE_TRACEPOINT: u32 = 5;
    attr[0..4].copy_from_slice(&BPF_PROG_TYPE_TRACEPOINT.to_ne_bytes());
    attr[4..8].copy_from_slice(&2u32.to_ne_bytes());
    attr[8..16].copy_from_slice(&(insns.as_ptr() as u64).to_ne_bytes());
    attr[16..24].copy_from_slice(&(license.as_ptr() as u64).to_ne_bytes());
    const BPF_PROG_LOAD: libc::c_long = 5;
    // SAFETY: attr is a zeroed bpf_attr of the size passed, pointing at live buffers.
    let prog = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            BPF_PROG_LOAD,
            attr.as_ptr(),
            attr.len() as libc::c_uint,
        )
    };
    if prog < 0 {
        return Err(format!(
            "the kernel refused to load a trivial eBPF program: {}",
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: the kernel just returned this descriptor to us.
    let prog = unsafe { OwnedFd::from_raw_fd(prog as i32) };

    // struct perf_event_attr (PERF_ATTR_SIZE_VER5, 112 bytes): type, size, config,
    // sample_period; wakeup_events at 48.
    let mut pattr = [0u8; 112];
    const PERF_TYPE_TRACEPOINT: u32 = 2;
    pattr[0..4].copy_from_slice(&PERF_TYPE_TRACEPOINT.to_ne_bytes());
    pattr[4..8].copy_from_slice(&112u32.to_ne_bytes());
    pattr[8..16].copy_from_slice(&id.to_ne_bytes());
    pattr[16..24].copy_from_slice(&1u64.to_ne_bytes());
    pattr[48..52].copy_from_slice(&1u32.to_ne_bytes());
    const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 8;
    // SAFETY: pattr is a zeroed perf_event_attr of the size it declares.
    let event = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            pattr.as_ptr(),
            -1 as libc::pid_t,
            0 as libc::c_int,
            -1 as libc::c_int,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if event < 0 {
        return Err(format!(
            "perf_event_open on the tracepoint {} failed: {}",
            id_file.display(),
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: the kernel just returned this descriptor to us.
    let event = unsafe { OwnedFd::from_raw_fd(event as i32) };
    use std::os::fd::AsRawFd;
    const PERF_EVENT_IOC_SET_BPF: libc::c_ulong = 0x4004_2408;
    // SAFETY: both descriptors are open; the argument is the program's descriptor.
    if unsafe {
        libc::ioctl(
            event.as_raw_fd(),
            PERF_EVENT_IOC_SET_BPF as _,
            prog.as_raw_fd(),
        )
    } != 0
    {
        return Err(format!(
            "the kernel refused to attach an eBPF program to a tracepoint: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// tracefs's mount point; mounted at /sys/kernel/tracing when mounted nowhere (root).
fn tracefs() -> Result<std::path::PathBuf, String> {
    let found = || {
        ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]
            .into_iter()
            .map(std::path::PathBuf::from)
            .find(|p| p.join("events").is_dir())
    };
    if let Some(p) = found() {
        return Ok(p);
    }
    let fstype = c"tracefs";
    // SAFETY: NUL-terminated strings; data may be null.
    let rc = unsafe {
        libc::mount(
            fstype.as_ptr(),
            c"/sys/kernel/tracing".as_ptr(),
            fstype.as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if rc != 0 {
        return Err(format!(
            "tracefs is not mounted and mounting it at /sys/kernel/tracing failed: {}",
            std::io::Error::last_os_error()
        ));
    }
    found().ok_or_else(|| "tracefs mounted at /sys/kernel/tracing has no events/".to_string())
}

/// True when root and the kernel loads and attaches eBPF programs ([`kernel_bpf`]);
/// otherwise skips saying which is missing and returns false. The answer is the
/// kernel's: a test that goes on and finds candor's eBPF witness unavailable fails.
pub fn need_kernel_bpf(for_what: &str) -> bool {
    if !need_root(for_what) {
        return false;
    }
    match kernel_bpf() {
        Ok(()) => true,
        Err(why) => {
            skip(why);
            false
        }
    }
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

    /// As root, the probe's answer is the kernel's; without root the kernel refuses the
    /// load (EPERM) and the probe says so.
    #[test]
    fn the_kernel_probe_answers_in_one_line() {
        match kernel_bpf() {
            Ok(()) => assert!(is_root(), "a process without root loaded eBPF"),
            Err(why) => {
                assert!(!why.contains('\n'), "{why}");
                if is_root() {
                    eprintln!("eBPF refused as root: {why}");
                }
            }
        }
    }

    #[test]
    fn have_finds_a_program_every_machine_has_and_not_a_made_up_one() {
        assert!(have("sh"));
        assert!(!have("candor-testkit-no-such-program"));
    }
}
