//! SIGINT, SIGTERM and SIGHUP: the handler only records the signal; I/O loops see it
//! through `stop_requested` (one relaxed load) and the runner unwinds, removes its files and
//! saves what finished. A second signal of the same kind exits at once, after cleanup
//! handlers registered with `on_second_signal` had their chance (none by default).

use std::sync::atomic::{AtomicI32, Ordering};

static SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn handler(sig: libc::c_int) {
    let prev = SIGNAL.swap(sig, Ordering::SeqCst);
    if prev == sig {
        // Second time: the person means it. Restore the default and re-raise.
        // SAFETY: signal and raise are async-signal-safe.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
            libc::raise(sig);
        }
    }
}

/// Installs the handlers (idempotent).
pub fn install() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: installing a handler that only touches an atomic.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = handler as extern "C" fn(libc::c_int) as usize;
            sa.sa_flags = 0; // no SA_RESTART: a blocking call returns EINTR and the loop checks
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// The signal that asked candor to stop, if any.
#[inline(always)]
pub fn stop_requested() -> Option<i32> {
    match SIGNAL.load(Ordering::Relaxed) {
        0 => None,
        s => Some(s),
    }
}

/// For tests and for programmatic stops.
pub fn request_stop(sig: i32) {
    SIGNAL.store(sig, Ordering::SeqCst);
}

pub fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        _ => "a signal",
    }
}
