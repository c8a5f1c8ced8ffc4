//! SIGINT, SIGTERM and SIGHUP in the middle of a run with the eBPF witness: the programs
//! candor attached are gone once it has exited. The test reads the program ids from the
//! running candor's descriptors (/proc/PID/fdinfo: "prog_id:"), interrupts it, then asks the
//! kernel for each id (bpf(BPF_PROG_GET_FD_BY_ID)): every one must be unknown.

mod common;
use common::{entries, need_bpf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const SYS_BPF: libc::c_long = 321;
const BPF_PROG_GET_FD_BY_ID: libc::c_long = 13;

/// Whether the kernel still has program `id` (it hands out a descriptor for it).
fn prog_alive(id: u32) -> bool {
    // union bpf_attr for BPF_PROG_GET_FD_BY_ID: prog_id, next_id, open_flags.
    let mut attr = [0u32; 4];
    attr[0] = id;
    // SAFETY: attr is valid for the size given; a returned descriptor is closed at once.
    let fd = unsafe {
        libc::syscall(
            SYS_BPF,
            BPF_PROG_GET_FD_BY_ID,
            attr.as_mut_ptr(),
            std::mem::size_of_val(&attr),
        )
    };
    if fd >= 0 {
        unsafe { libc::close(fd as i32) };
        return true;
    }
    false
}

/// Program ids held by process `pid` through its descriptors.
fn prog_ids(pid: u32) -> Vec<u32> {
    let mut ids = Vec::new();
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fdinfo")) else {
        return ids;
    };
    for e in dir.flatten() {
        if let Ok(t) = std::fs::read_to_string(e.path()) {
            for l in t.lines() {
                if let Some(v) = l.strip_prefix("prog_id:") {
                    if let Ok(id) = v.trim().parse::<u32>() {
                        if !ids.contains(&id) {
                            ids.push(id);
                        }
                    }
                }
            }
        }
    }
    ids
}

#[test]
fn signals_leave_no_ebpf_program_behind() {
    if !need_bpf() {
        return;
    }
    for (sig, code) in [
        (libc::SIGINT, 130),
        (libc::SIGTERM, 143),
        (libc::SIGHUP, 129),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_candor"))
            .args([
                "run",
                dir.path().to_str().unwrap(),
                "--quiet",
                "--witness",
                "bpf",
                "--tests",
                "randread",
                "--file-size",
                "32m",
                "--record-size",
                "4k",
                "--repeat",
                "200",
                "--format",
                "json",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        // Wait until the witness has attached and a test is running.
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut ids = Vec::new();
        while Instant::now() < deadline {
            ids = prog_ids(pid);
            let busy = entries(dir.path())
                .iter()
                .any(|d| std::fs::read_dir(d).map(|r| r.count() > 1).unwrap_or(false));
            if !ids.is_empty() && busy {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        if ids.is_empty() {
            // SAFETY: kill has no memory preconditions; pid is our child, not yet reaped.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            let o = child.wait_with_output().unwrap();
            let err = String::from_utf8_lossy(&o.stderr);
            panic!(
                "as root, candor's eBPF witness attached no program within 30 s: {}",
                err.trim()
            );
        }
        assert!(
            ids.iter().all(|&id| prog_alive(id)),
            "the programs are loaded while candor runs"
        );
        // The witness is attached and a test file exists: candor is mid-run.
        unsafe { libc::kill(pid as i32, sig) };
        let o = child.wait_with_output().unwrap();
        assert_eq!(
            o.status.code(),
            Some(code),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        // The kernel frees a program once its last reference is gone (after an RCU grace
        // period): give it a moment.
        let gone_by = Instant::now() + Duration::from_secs(5);
        while ids.iter().any(|&id| prog_alive(id)) && Instant::now() < gone_by {
            std::thread::sleep(Duration::from_millis(50));
        }
        let left: Vec<u32> = ids.iter().copied().filter(|&id| prog_alive(id)).collect();
        assert!(
            left.is_empty(),
            "eBPF programs {left:?} outlived candor after signal {sig}"
        );
        assert!(
            entries(dir.path()).is_empty(),
            "files left after signal {sig}"
        );
    }
}
