//! The clock every timestamp comes from: CLOCK_MONOTONIC through the vDSO (about 20 ns a
//! read here, never a system call, immune to wall-clock steps). A calibrated TSC would be
//! a little cheaper, but on a VM whose TSC may be emulated or migrate between hosts its
//! reliability cannot be checked from inside, and a wrong clock is worse than a slow one.

#[inline(always)]
pub fn now_ns() -> u64 {
    candor_procfs::monotonic_ns()
}

/// The run clock record of the instant `t0_ns` (a reading of `now_ns`): that instant on
/// CLOCK_REALTIME too, and this boot's id.
pub fn run_clock(t0_ns: u64) -> candor_model::RunClock {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    let mono = now_ns();
    // SAFETY: ts is a valid timespec; CLOCK_REALTIME always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    let real = ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64;
    candor_model::RunClock {
        monotonic_ns: t0_ns,
        realtime_ns: real.saturating_sub(mono.saturating_sub(t0_ns)),
        boot_id: crate::rundir::boot_id(),
    }
}

/// CPU seconds (user, system) used by the whole process so far, all threads.
pub fn process_cpu() -> (f64, f64) {
    // SAFETY: rusage is plain data, filled by the kernel.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (tv(ru.ru_utime), tv(ru.ru_stime))
}
