//! Option combinations, fuzzed through the real binary (bounded: a few dozen runs of tiny
//! plans in `cargo test`): sizes, test lists, durations, counts, engines, formats and
//! switches drawn from good and bad values, in any combination. candor never panics, exits
//! 0, 1 or 2, says in one line why when it refuses, and leaves nothing in the target.
//! docs/reliability.md lists the inputs tried and their outcomes.

use proptest::prelude::*;
use std::process::Command;

fn pick(v: &'static [&'static str]) -> impl Strategy<Value = &'static str> {
    prop::sample::select(v)
}

fn option() -> impl Strategy<Value = Vec<&'static str>> {
    prop_oneof![
        pick(&[
            "write",
            "read",
            "randread,randwrite",
            "0,1",
            "13",
            "wrte",
            "",
            ",",
            "copy",
            "stat",
            "recrewrite,randmix",
            "fwrite,mmapread",
            "é",
        ])
        .prop_map(|v| vec!["--tests", v]),
        pick(&[
            "4k",
            "64k",
            "1m",
            "0",
            "-1k",
            "abc",
            "1t",
            "1.5k",
            "99999999999999999999",
            "4k,8k"
        ])
        .prop_map(|v| vec!["--file-size", v]),
        pick(&["512", "4k", "64k", "2m", "0", "1g", "3", "x", "64"])
            .prop_map(|v| vec!["--record-size", v]),
        pick(&["1", "2", "0", "-3", "4097", "a", "1,2"]).prop_map(|v| vec!["--threads", v]),
        pick(&["1", "4", "0", "99999", "b"]).prop_map(|v| vec!["--iodepth", v]),
        pick(&["psync", "sync", "vector", "stdio", "mmap", "io_uring", "null", "aio", ""])
            .prop_map(|v| vec!["--engine", v]),
        pick(&["10ms", "1s", "0s", "-1s", "fast", "1e400", "nan", "inf", "5"])
            .prop_map(|v| vec!["--runtime", v]),
        pick(&["1s", "0", "soon", "500ms"]).prop_map(|v| vec!["--duration", v]),
        pick(&[
            "--steady-state=window=2,max=2,round=50ms",
            "--steady-state=window=3,max=2",
            "--steady-state=range=0%",
            "--steady-state=round=soon",
            "--steady-state=bogus"
        ])
        .prop_map(|v| vec![v]),
        pick(&["50ms", "0", "soon"]).prop_map(|v| vec!["--ramp", v]),
        pick(&["--precondition=1", "--precondition=0", "--precondition=x"]).prop_map(|v| vec![v]),
        pick(&["1", "2", "0", "-1", "many"]).prop_map(|v| vec!["--repeat", v]),
        pick(&["0", "50", "100", "101", "-5"]).prop_map(|v| vec!["--mix-read-pct", v]),
        pick(&["0", "1", "17", "x"]).prop_map(|v| vec!["--stride", v]),
        pick(&["table", "json", "csv", "markdown", "iozone", "excel", "xml"])
            .prop_map(|v| vec!["--format", v]),
        pick(&[
            "random",
            "zero",
            "compressible=50%",
            "compressible=200%",
            "ones"
        ])
        .prop_map(|v| vec!["--buffer-pattern", v]),
        pick(&["auto", "procfs", "off", "bpf", "psychic"]).prop_map(|v| vec!["--witness", v]),
        pick(&["0", "0-1", "7-3", "999", "x"]).prop_map(|v| vec!["--cpus", v]),
        pick(&["seq=100MB/s", "iops=0", "garbage"]).prop_map(|v| vec!["--device-spec", v]),
        pick(&[
            "--verify",
            "--direct",
            "--osync",
            "--time-based",
            "--stonewall",
            "--keep-cache",
            "--no-fsync-in-timing",
            "--close-in-timing",
            "--auto",
            "--bogus-flag",
        ])
        .prop_map(|v| vec![v]),
    ]
}

/// What this host can do, asked of the kernel: eBPF (root and a program that loads and
/// attaches), O_DIRECT in a temporary directory, io_uring_setup(2).
struct Host {
    bpf: bool,
    direct: bool,
    io_uring: bool,
}

fn host() -> Host {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = tempfile::tempdir().unwrap();
    let probe = dir.path().join("probe");
    std::fs::write(&probe, [0u8; 4096]).unwrap();
    let direct = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(&probe)
        .is_ok();
    // struct io_uring_params is 120 bytes; zeroed asks for the defaults.
    let mut params = [0u8; 120];
    // SAFETY: params is a zeroed io_uring_params the kernel fills in.
    let fd = unsafe { libc::syscall(libc::SYS_io_uring_setup, 1u32, params.as_mut_ptr()) };
    let io_uring = fd >= 0;
    if io_uring {
        // SAFETY: the kernel just returned this descriptor.
        unsafe { libc::close(fd as i32) };
    }
    Host {
        bpf: candor_testkit::is_root() && candor_testkit::kernel_bpf().is_ok(),
        direct,
        io_uring,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn any_option_combination_exits_cleanly(opts in proptest::collection::vec(option(), 1..6)) {
        let dir = tempfile::tempdir().unwrap();
        let mut args: Vec<&str> = vec!["run", dir.path().to_str().unwrap(), "--quiet"];
        // Keep runs tiny unless the combination chooses sizes itself.
        let flat: Vec<&str> = opts.iter().flatten().copied().collect();
        if !flat.contains(&"--file-size") && !flat.contains(&"--auto") {
            args.extend(["--file-size", "64k"]);
        }
        if flat.contains(&"--auto") {
            args.extend(["--max-file-size", "128k", "--max-record-size", "64k"]);
        }
        if !flat.contains(&"--tests") {
            args.extend(["--tests", "write,read"]);
        }
        args.extend(&flat);
        let o = Command::new(env!("CARGO_BIN_EXE_candor")).args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        prop_assert!(!err.contains("panicked"), "{:?}: {}", args, err);
        let code = o.status.code();
        eprintln!("{:?} -> {:?}: {}", &args[3..], code, err.trim().lines().last().unwrap_or(""));
        prop_assert!(matches!(code, Some(0) | Some(1) | Some(2)), "{:?}: {:?} {}", args, code, err);
        // Exit 1 is a failure at run time: for plans this small, only a capability this
        // host lacks (asked of the kernel here, not of candor) can cause one, and candor
        // says which in its one line.
        if code == Some(1) {
            let host = host();
            let wants = |flag: &str, value: &str| {
                flat.windows(2).any(|w| w[0] == flag && w[1] == value)
            };
            let excuse = (wants("--witness", "bpf") && !host.bpf)
                || (flat.contains(&"--direct") && !host.direct)
                || (wants("--engine", "io_uring") && !host.io_uring);
            let last = err.trim().lines().last().unwrap_or("");
            prop_assert!(
                excuse && last.starts_with("candor: "),
                "{:?}: exit 1 on a host with eBPF {}, O_DIRECT {}, io_uring {}: {}",
                args, host.bpf, host.direct, host.io_uring, err
            );
        }
        if code == Some(2) {
            let last = err.trim().lines().last().unwrap_or("");
            prop_assert!(!last.is_empty(), "{:?}: a refusal says why", args);
            // candor's own refusals are one "candor: ..." line; clap's usage errors end
            // with its hint line.
            prop_assert!(
                last.starts_with("candor: ") || err.contains("Usage:") || err.contains("--help"),
                "{:?}: {}", args, err
            );
        }
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().filter_map(|e| e.ok()).map(|e| e.path()).collect();
        prop_assert!(left.is_empty(), "{:?} left {:?}", args, left);
    }
}
