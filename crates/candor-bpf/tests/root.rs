//! Tests against the real kernel, as root. Each one is skipped (candor-testkit) when the
//! host cannot trace (not root, a build without clang...); as root with the programs
//! built, a tracer that does not load is a failure.

use candor_bpf::{DevId, Direction, Owner, TraceOptions, Tracer, Unavailable};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::process::Command;
use std::sync::Mutex;

/// One tracer at a time: tests in this file share the kernel's tracepoints and the
/// caches, and a parallel test's I/O would be on another device but its syscalls are ours.
static SERIAL: Mutex<()> = Mutex::new(());

/// The tracer, where the kernel loads eBPF (asked of the kernel, not of candor-bpf's
/// own probe); there, a tracer that does not load, or a build without its programs, is
/// a failure.
fn tracer(opts: &TraceOptions) -> Option<Tracer> {
    if !candor_testkit::need_kernel_bpf("to load the tracer") {
        return None;
    }
    match Tracer::load(opts) {
        Ok(t) => Some(t),
        Err(e @ Unavailable::NotBuilt(_)) => {
            panic!("the kernel loads eBPF here, but candor-bpf has no programs to load: {e}")
        }
        Err(e) => panic!("the kernel loads eBPF here, but the tracer did not load: {e}"),
    }
}

fn scratch() -> Option<candor_lab::ScratchFs> {
    scratch_of("ext4")
}

/// A scratch filesystem of `kind` on a loop device (512 MiB: mkfs.xfs wants 300 MB).
fn scratch_of(kind: &str) -> Option<candor_lab::ScratchFs> {
    let size = if kind == "ext4" { 256 << 20 } else { 512 << 20 };
    candor_testkit::need_or(
        candor_lab::scratch(kind, size),
        candor_lab::LabError::is_unsupported,
    )
}

fn loop_dev(s: &candor_lab::ScratchFs) -> DevId {
    let name = s.loop_device.trim_start_matches("/dev/");
    DevId::from_name(name).unwrap_or_else(|| panic!("no sysfs entry for {name}"))
}

fn drop_caches() {
    let _ = Command::new("sync").status();
    let _ = std::fs::write("/proc/sys/vm/drop_caches", "3");
}

/// A traced child process writes 4096 x 4 KiB records: the tracer must count exactly 4096 write syscalls for it.
#[test]
fn child_writing_4096_records_counts_4096_writes() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(mut t) = tracer(&TraceOptions::default()) else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("candor-bpf-w-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("data");
    // dd writes with one write(2) per block; the child starts stopped so the tracer can
    // follow it before its first syscall.
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "kill -STOP $$; exec dd if=/dev/zero of={} bs=4096 count=4096 status=none",
            file.display()
        ))
        .spawn()
        .expect("spawn sh");
    let pid = child.id();
    wait_stopped(pid);
    let before = t.snapshot().expect("snapshot");
    t.add_pid(pid).expect("add pid");
    // SAFETY: plain kill on our own child.
    unsafe { libc::kill(pid as i32, libc::SIGCONT) };
    let status = child.wait().expect("wait");
    assert!(status.success());
    let d = t.snapshot().expect("snapshot").delta(&before);
    let (writes, bytes) = d.syscall("write");
    assert_eq!(writes, 4096, "write syscalls");
    assert_eq!(bytes, 16 << 20, "write bytes");
    assert_eq!(d.syscalls["write"].latency.total(), 4096);
    // The per-file table agrees with the syscall table for the data file.
    use std::os::unix::fs::MetadataExt;
    let md = std::fs::metadata(&file).expect("stat");
    let id = candor_bpf::FileId {
        dev: DevId::from_st_dev(md.dev()),
        inode: md.ino(),
    };
    let f = d.files.get(&id).copied().unwrap_or_default();
    assert_eq!(f.write_calls, 4096);
    assert_eq!(f.write_bytes, 16 << 20);
    // And its phase: one open..close of the file with 4096 writes of 4 KiB.
    let phases = t.drain_phases().expect("phases");
    // dd opens its output and dup2()s it onto fd 1: the writes are in fd 1's phase.
    let p = phases
        .iter()
        .filter(|p| p.inode == md.ino())
        .max_by_key(|p| p.write_calls)
        .unwrap_or_else(|| panic!("no phase for the data file in {phases:?}"));
    assert!(p.closed);
    assert_eq!(p.write_calls, 4096);
    assert_eq!(p.write_bytes, 16 << 20);
    assert_eq!(p.path.as_deref(), Some(file.to_str().unwrap_or("")));
    assert_eq!(p.record_sizes.to_dump().buckets, vec![[4096, 4096]]);
    // Sequential offsets 0, 4096, ..., 16 MiB - 4096: one at 0, then 2^(k-12) records in
    // each [2^k, 2^(k+1)) for k = 12..23.
    let mut expect = vec![(0, 0, 1)];
    for k in 12..24 {
        expect.push((1u64 << k, (1u64 << (k + 1)) - 1, 1u64 << (k - 12)));
    }
    assert_eq!(p.offsets.rows(), expect);
    eprintln!(
        "writes={writes} bytes={bytes} time_ns={} phase wall={} us io={} us",
        d.syscalls["write"].time_ns,
        p.wall_ns() / 1000,
        p.io_ns / 1000
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn wait_stopped(pid: u32) {
    for _ in 0..500 {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // state is the field after the ")" of the command name
        if let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r.trim_start()) {
            if rest.starts_with('T') {
                return;
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    panic!("child {pid} never stopped");
}

/// A page-aligned buffer for O_DIRECT.
struct Aligned {
    ptr: *mut u8,
    layout: std::alloc::Layout,
}

impl Aligned {
    fn new(len: usize) -> Aligned {
        let layout = std::alloc::Layout::from_size_align(len, 4096).expect("layout");
        // SAFETY: layout has a non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        assert!(!ptr.is_null(), "allocation failed");
        Aligned { ptr, layout }
    }
    fn as_mut(&mut self) -> &mut [u8] {
        // SAFETY: ptr is a live allocation of layout.size() bytes owned by self.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.layout.size()) }
    }
}

impl Drop for Aligned {
    fn drop(&mut self) {
        // SAFETY: allocated with this layout in new().
        unsafe { std::alloc::dealloc(self.ptr, self.layout) };
    }
}

fn write_file(path: &Path, mib: usize) {
    let mut f = std::fs::File::create(path).expect("create");
    let block = vec![0x5au8; 1 << 20];
    for _ in 0..mib {
        std::io::Write::write_all(&mut f, &block).expect("write");
    }
    f.sync_all().expect("fsync");
}

/// sync(1) -f on `path`, from a process outside any traced set: the flusher writes the
/// file's dirty pages back.
fn sync_file(path: &Path) {
    let ok = Command::new("sync")
        .arg("-f")
        .arg(path)
        .status()
        .expect("sync")
        .success();
    assert!(ok, "sync -f {}", path.display());
}

/// Bytes written back to `dev` for the set's inodes in the window `d`.
fn writeback_bytes(d: &candor_bpf::Snapshot, dev: DevId) -> u64 {
    d.block_sum(&[dev], Direction::Write, |o| o == Owner::Writeback)
        .bytes
}

/// Sectors read and written on a device, from /proc/diskstats.
/// Block requests on `dev` whose completion the witness's own check says it did not see.
fn unseen_on(t: &Tracer, dev: DevId) -> u64 {
    t.unseen_completions()
        .expect("unseen completions")
        .iter()
        .filter(|(d, _)| *d == dev)
        .map(|(_, n)| *n)
        .sum()
}

fn diskstats(name: &str) -> (u64, u64) {
    let text = std::fs::read_to_string("/proc/diskstats").expect("diskstats");
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() > 9 && f[2] == name {
            let n = |i: usize| f[i].parse::<u64>().unwrap_or(0);
            return (n(5) * 512, n(9) * 512);
        }
    }
    panic!("{name} not in /proc/diskstats");
}

/// An O_DIRECT read of a 16 MiB file: the block requests the tracer attributes to the
/// reader on the loop device add up to exactly the bytes read. While it runs, the
/// cumulative BPF figure is checked against /proc/diskstats (read, snapshot, read: the
/// BPF value must lie between the two reads).
#[test]
fn direct_read_block_bytes_match_and_agree_with_diskstats() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(fs) = scratch() else { return };
    let dev = loop_dev(&fs);
    let name = fs.loop_device.trim_start_matches("/dev/").to_string();
    let file = fs.path().join("direct.dat");
    write_file(&file, 16);
    drop_caches();
    // Open (and so read the inode) before the measured part.
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(&file)
        .expect("open O_DIRECT");
    let Some(t) = tracer(&TraceOptions::this_process()) else {
        return;
    };
    let (disk0, _) = diskstats(&name);
    let s0 = t.snapshot().expect("snapshot");
    assert_eq!(s0.own_bytes(&[dev], Direction::Read), 0);

    // Between passes the reader waits for one check, so the cross-check runs at least
    // once per pass boundary (7 times) whatever the scheduling; others run while it reads.
    let (between, paused) = std::sync::mpsc::channel::<()>();
    let (resume, go_on) = std::sync::mpsc::channel::<()>();
    let reader = std::thread::spawn(move || {
        use std::os::unix::fs::FileExt;
        let mut buf = Aligned::new(1 << 20);
        let mut total = 0u64;
        for pass in 0..8u64 {
            for i in 0..16u64 {
                let n = f.read_at(buf.as_mut(), i << 20).expect("pread O_DIRECT");
                total += n as u64;
            }
            if pass == 0 {
                // One pass alone is what the exact check below measures.
                assert_eq!(total, 16 << 20);
            }
            if pass < 7 {
                between.send(()).expect("the checker listens");
                go_on.recv().expect("the checker answers");
            }
        }
        total
    });
    let mut checks = 0;
    let mut lagging = 0;
    let mut between_passes = 0;
    while !reader.is_finished() {
        let pause = paused.try_recv().is_ok();
        let (lo, _) = diskstats(&name);
        // diskstats counts every request: compare with every owner's.
        let bpf_now = || {
            t.snapshot()
                .expect("snapshot")
                .block_sum(&[dev], Direction::Read, |_| true)
                .bytes
        };
        let mut bpf = bpf_now();
        let (mut hi, _) = diskstats(&name);
        // A completion the kernel has accounted may still be in its program on the other
        // CPU for a moment: read the programs' counts again, a few times over 10 ms,
        // before the lower bound is judged.
        for _ in 0..5 {
            if bpf >= lo - disk0 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
            bpf = bpf_now();
            hi = diskstats(&name).0;
        }
        assert!(bpf <= hi - disk0, "bpf {bpf} <= diskstats {}", hi - disk0);
        if bpf < lo - disk0 {
            // Under CPU contention the kernel now and then does not hand a completion to
            // the program (docs/bpf.md): it is counted when its request is used again,
            // which at a pass boundary is only after this check. Such a lag must be
            // named by the witness's own check, and be no more than those requests hold
            // (1 MiB each at most here).
            let unseen = unseen_on(&t, dev);
            assert!(
                unseen > 0 && lo - disk0 - bpf <= unseen << 20,
                "diskstats {} <= bpf {bpf} (+ {unseen} completions the witness says it did not see)",
                lo - disk0
            );
            lagging += 1;
        }
        checks += 1;
        if pause {
            between_passes += 1;
            resume.send(()).expect("the reader waits");
        }
    }
    let total = reader.join().expect("reader thread");
    assert_eq!(between_passes, 7, "one cross-check at each pass boundary");
    assert!(checks >= 7, "{checks} live cross-checks with diskstats");
    eprintln!("{checks} live cross-checks, {lagging} behind diskstats by completions the witness named unseen");
    let d = t.snapshot().expect("snapshot").delta(&s0);
    let own = d.block_sum(&[dev], Direction::Read, Owner::is_own);
    // A completion the kernel did not hand to the program (docs/bpf.md) is counted when its
    // request is used again, without a latency; one still unseen at the end can only be
    // missing if the witness's own check names it (1 MiB a request at most here). Any
    // other shortfall is a failure.
    let unseen = unseen_on(&t, dev);
    assert!(
        own.bytes <= total && total - own.bytes <= unseen << 20,
        "device read bytes {} vs {total} read with O_DIRECT ({unseen} completions named unseen)",
        own.bytes
    );
    assert_eq!(d.syscall("pread64"), (128, total));
    assert!(
        own.completions + unseen >= 128,
        "completions {}",
        own.completions
    );
    assert!(
        own.latency.total() <= own.completions
            && own.completions - own.latency.total() <= d.completions_recovered,
        "every completion has its latency but those counted at their request's next use: {} of {} ({} recovered)",
        own.latency.total(),
        own.completions,
        d.completions_recovered
    );
    // The loop device keeps I/O statistics (iostats 1, the default), so the kernel stamps
    // each request when it makes it: every issue has its queue time, and 1 MiB reads
    // do not wait a second in the queue.
    let iostats =
        std::fs::read_to_string(format!("/sys/block/{name}/queue/iostats")).unwrap_or_default();
    if iostats.trim() == "1" {
        assert!(
            own.queued == own.issues && own.issues >= 128,
            "queue time for every issue: {} of {}",
            own.queued,
            own.issues
        );
        assert!(
            own.queue_ns > 0 && own.queue_ns / own.queued < 1_000_000_000,
            "queue time {} ns over {} issues",
            own.queue_ns,
            own.queued
        );
    }
    eprintln!(
        "direct read: foreign {} kernel threads {}",
        d.foreign_bytes(&[dev]),
        d.kernel_bytes(&[dev])
    );
    assert_eq!(d.foreign_bytes(&[dev]), 0);
    let (disk1, _) = diskstats(&name);
    let all = d.block_sum(&[dev], Direction::Read, |_| true).bytes;
    assert!(
        all <= disk1 - disk0 && disk1 - disk0 - all <= unseen << 20,
        "diskstats agrees at the end: {} against {all} ({unseen} completions named unseen)",
        disk1 - disk0
    );
    eprintln!(
        "direct read: {} bytes, {} completions, p50 {:?} ns, {checks} in-flight cross-checks",
        own.bytes,
        own.completions,
        own.latency.quantile(0.5)
    );
}

/// A tracked dd and a foreign dd write with O_DIRECT to the same device at the same time:
/// the foreign one's bytes are foreign, and the tracked bytes are the tracked dd's only.
#[test]
fn concurrent_foreign_dd_is_foreign() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(fs) = scratch() else { return };
    let dev = loop_dev(&fs);
    let Some(mut t) = tracer(&TraceOptions::default()) else {
        return;
    };
    let dd = |name: &str, stop_first: bool| {
        Command::new("sh")
            .arg("-c")
            .arg(format!(
                "{}exec dd if=/dev/zero of={} bs=1M count=32 oflag=direct status=none",
                if stop_first { "kill -STOP $$; " } else { "" },
                fs.path().join(name).display()
            ))
            .spawn()
            .expect("spawn dd")
    };
    let mut own = dd("own.dat", true);
    wait_stopped(own.id());
    let s0 = t.snapshot().expect("snapshot");
    t.add_pid(own.id()).expect("add pid");
    let mut foreign = dd("foreign.dat", false);
    // SAFETY: plain kill on our own child.
    unsafe { libc::kill(own.id() as i32, libc::SIGCONT) };
    assert!(own.wait().expect("wait").success());
    assert!(foreign.wait().expect("wait").success());
    let d = t.snapshot().expect("snapshot").delta(&s0);
    let own_w = d
        .block_sum(&[dev], Direction::Write, |o| o == Owner::Tracked)
        .bytes;
    let foreign_b = d.foreign_bytes(&[dev]);
    let kernel = d.kernel_bytes(&[dev]);
    eprintln!("own {own_w} foreign {foreign_b} kernel threads {kernel}");
    assert_eq!(own_w, 32 << 20, "tracked dd's device bytes");
    // The other dd's writes are foreign, exactly; journal commits (jbd2, a kernel thread)
    // are kept apart; beyond its writes the other dd only read a little metadata.
    let foreign_w = d
        .block_sum(&[dev], Direction::Write, |o| o == Owner::Foreign)
        .bytes;
    assert_eq!(foreign_w, 32 << 20, "foreign write bytes");
    assert!(
        foreign_b - foreign_w < 64 << 10,
        "foreign bytes {foreign_b}"
    );
}

/// A tracked process writes 32 MiB through the page cache and exits without fsync; the
/// writeback that `sync` then makes the kernel's flusher do is attributed to it through
/// the inode it dirtied.
#[test]
fn buffered_writeback_is_attributed_through_the_inode() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(fs) = scratch() else { return };
    let dev = loop_dev(&fs);
    let Some(mut t) = tracer(&TraceOptions::default()) else {
        return;
    };
    let file = fs.path().join("buffered.dat");
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "kill -STOP $$; exec dd if=/dev/zero of={} bs=1M count=32 status=none",
            file.display()
        ))
        .spawn()
        .expect("spawn dd");
    wait_stopped(child.id());
    let s0 = t.snapshot().expect("snapshot");
    t.add_pid(child.id()).expect("add pid");
    // SAFETY: plain kill on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGCONT) };
    assert!(child.wait().expect("wait").success());
    let mid = t.snapshot().expect("snapshot").delta(&s0);
    let mid_w = mid.own_bytes(&[dev], Direction::Write);
    // sync(1) is not tracked: the flusher kworker writes the data back.
    sync_file(&file);
    let d = t.snapshot().expect("snapshot").delta(&s0);
    let wb = writeback_bytes(&d, dev);
    let own = d.own_bytes(&[dev], Direction::Write);
    eprintln!(
        "before sync {mid_w}, writeback {wb}, own {own}, foreign {}",
        d.foreign_bytes(&[dev])
    );
    assert!(own >= 32 << 20, "own write bytes {own}");
    assert!(own <= (32 << 20) + (1 << 20), "own write bytes {own}");
    // docs/bpf.md: the flusher's writes of the 32 MiB the tracked dd dirtied are
    // attributed through the inode, every byte of them (33554432 in each measured run).
    assert_eq!(wb, 32 << 20, "bytes attributed through writeback");
    assert!(
        d.cache_misses >= (32 << 20) / 4096,
        "cache misses {}",
        d.cache_misses
    );
}

/// A thread that names itself like the witness's sampler is left out of the syscall
/// figures; its sibling is counted call by call.
#[test]
fn a_quiet_thread_is_left_out_of_syscall_counts() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let opts = TraceOptions {
        quiet_thread_name: Some("candor-quiet".into()),
        ..TraceOptions::this_process()
    };
    let Some(t) = tracer(&opts) else {
        return;
    };
    let file = std::env::temp_dir().join(format!("candor-bpf-q-{}", std::process::id()));
    std::fs::write(&file, vec![1u8; 4096]).expect("write");
    let s0 = t.snapshot().expect("snapshot");
    let spawn = |name: &str, n: usize| {
        let f = std::fs::File::open(&file).expect("open");
        std::thread::Builder::new()
            .name(name.to_string())
            .spawn(move || {
                use std::os::unix::fs::FileExt;
                let mut b = [0u8; 512];
                for i in 0..n {
                    f.read_at(&mut b, (i % 8) as u64 * 512).expect("pread");
                }
            })
            .expect("spawn")
    };
    let quiet = spawn("candor-quiet", 100);
    let counted = spawn("candor-counted", 50);
    quiet.join().expect("join");
    counted.join().expect("join");
    let d = t.snapshot().expect("snapshot").delta(&s0);
    assert_eq!(d.syscall("pread64"), (50, 50 * 512));
    let _ = std::fs::remove_file(&file);
}

/// A traced child creates, renames, stats and removes 100 files in a directory it makes and
/// removes: the metadata slots count exactly those calls.
#[test]
fn metadata_calls_are_counted_one_by_one() {
    use std::ffi::CString;
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(mut t) = tracer(&TraceOptions::default()) else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("candor-bpf-md-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let c = |p: &Path| CString::new(p.to_str().unwrap_or("")).expect("no NUL in the path");
    let d = c(&dir);
    let names: Vec<(CString, CString)> = (0..100)
        .map(|i| (c(&dir.join(format!("a{i}"))), c(&dir.join(format!("b{i}")))))
        .collect();
    // SAFETY: the child only makes async-signal-safe calls on strings made before the fork,
    // then _exit()s.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork");
    if pid == 0 {
        // SAFETY: see above.
        unsafe {
            libc::raise(libc::SIGSTOP);
            let mut ok = libc::mkdir(d.as_ptr(), 0o700) == 0;
            let mut st: libc::stat = std::mem::zeroed();
            for (a, b) in &names {
                let fd = libc::open(a.as_ptr(), libc::O_CREAT | libc::O_WRONLY, 0o600);
                ok &= fd >= 0 && libc::close(fd) == 0;
                ok &= libc::rename(a.as_ptr(), b.as_ptr()) == 0;
                ok &= libc::stat(b.as_ptr(), &mut st) == 0;
                ok &= libc::unlink(b.as_ptr()) == 0;
            }
            ok &= libc::rmdir(d.as_ptr()) == 0;
            libc::_exit(if ok { 0 } else { 1 });
        }
    }
    wait_stopped(pid as u32);
    let before = t.snapshot().expect("snapshot");
    t.add_pid(pid as u32).expect("add pid");
    // SAFETY: plain kill and waitpid on our own child.
    let status = unsafe {
        libc::kill(pid, libc::SIGCONT);
        let mut s = 0;
        libc::waitpid(pid, &mut s, 0);
        s
    };
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
    let delta = t.snapshot().expect("snapshot").delta(&before);
    let count = |name: &str| delta.syscall(name).0;
    assert_eq!(count("mkdir"), 1);
    assert_eq!(count("create"), 100);
    assert_eq!(count("openat"), 100);
    assert_eq!(count("rename"), 100);
    assert_eq!(count("stat"), 100);
    assert_eq!(count("unlink"), 100);
    assert_eq!(count("rmdir"), 1);
    // Metadata calls make no file phase: the 100 phases are the creates' open..close.
    let phases = t.drain_phases().expect("phases");
    let ours: Vec<_> = phases
        .iter()
        .filter(|p| {
            p.path
                .as_deref()
                .is_some_and(|x| x.starts_with(dir.to_str().unwrap_or("-")))
        })
        .collect();
    assert_eq!(ours.len(), 100, "{ours:?}");
    assert!(ours
        .iter()
        .all(|p| p.closed && p.read_bytes + p.write_bytes == 0));
}

/// A tracer loaded without its syscall programs counts nothing per call until a caller asks
/// (`count_syscalls(true)`), and nothing again once the last caller lets its counting
/// program go; while attached, the kinds a copy or a listing uses are counted with their
/// bytes, an open with O_CREAT is a create too, and an unlinkat that removes a directory
/// counts as an rmdir.
#[test]
fn syscall_programs_attach_on_demand() {
    use std::ffi::CString;
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(mut t) = tracer(
        &TraceOptions::this_process()
            .without_syscalls()
            .without_phases(),
    ) else {
        return;
    };
    assert!(!t.counts_syscalls());
    let dir = std::env::temp_dir().join(format!("candor-bpf-od-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let src = dir.join("src");
    std::fs::write(&src, vec![7u8; 64 << 10]).expect("write");
    let stats = |n: usize| {
        for _ in 0..n {
            std::fs::metadata(&src).expect("stat");
        }
    };
    let s0 = t.snapshot().expect("snapshot");
    stats(100);
    let s1 = t.snapshot().expect("snapshot");
    assert_eq!(s1.delta(&s0).syscall("stat").0, 0, "not attached yet");
    // Two callers: the programs stay until both let go.
    t.count_syscalls(true).expect("attach");
    t.count_syscalls(true).expect("attach again");
    assert!(t.counts_syscalls() && !t.traces_syscalls());
    stats(100);
    t.count_syscalls(false).expect("one lets go");
    stats(10);
    // copy_file_range, sendfile and splice of the whole file, a listing, an rmdir by
    // unlinkat: each counted with the bytes it returned.
    let src_c = CString::new(src.to_str().unwrap_or("")).expect("path");
    let sub = dir.join("sub");
    std::fs::create_dir(&sub).expect("mkdir");
    let sub_c = CString::new(sub.to_str().unwrap_or("")).expect("path");
    // SAFETY: descriptors opened and closed here; buffers outlive the calls.
    let listed = unsafe {
        let fi = libc::open(src_c.as_ptr(), libc::O_RDONLY);
        let out = dir.join("dst");
        let out_c = CString::new(out.to_str().unwrap_or("")).expect("path");
        let fo = libc::open(out_c.as_ptr(), libc::O_WRONLY | libc::O_CREAT, 0o600);
        assert!(fi >= 0 && fo >= 0);
        let mut off: libc::loff_t = 0;
        assert_eq!(
            libc::copy_file_range(fi, &mut off, fo, std::ptr::null_mut(), 64 << 10, 0),
            64 << 10
        );
        let mut off2: libc::off_t = 0;
        assert_eq!(libc::sendfile(fo, fi, &mut off2, 64 << 10), 64 << 10);
        let mut p = [0i32; 2];
        assert_eq!(libc::pipe(p.as_mut_ptr()), 0);
        let mut off3: libc::loff_t = 0;
        assert_eq!(
            libc::splice(fi, &mut off3, p[1], std::ptr::null_mut(), 4096, 0),
            4096
        );
        let d = libc::open(
            CString::new(dir.to_str().unwrap_or(""))
                .expect("path")
                .as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY,
        );
        let mut buf = [0u8; 4096];
        let mut listed = 0u64;
        loop {
            let n = libc::syscall(libc::SYS_getdents64, d, buf.as_mut_ptr(), buf.len());
            assert!(n >= 0);
            if n == 0 {
                break;
            }
            listed += n as u64;
        }
        assert_eq!(
            libc::unlinkat(libc::AT_FDCWD, sub_c.as_ptr(), libc::AT_REMOVEDIR),
            0
        );
        for fd in [fi, fo, p[0], p[1], d] {
            libc::close(fd);
        }
        listed
    };
    let s2 = t.snapshot().expect("snapshot");
    let d = s2.delta(&s1);
    assert_eq!(d.syscall("stat").0, 110, "attached for 110 stats");
    assert_eq!(d.syscall("copy_file_range"), (1, 64 << 10));
    assert_eq!(d.syscall("sendfile"), (1, 64 << 10));
    assert_eq!(d.syscall("splice"), (1, 4096));
    assert_eq!(d.syscall("getdents64"), (2, listed));
    assert_eq!(d.syscall("rmdir").0, 1);
    assert_eq!(
        d.syscall("unlink").0,
        0,
        "an rmdir by unlinkat is not an unlink"
    );
    t.count_syscalls(false).expect("the last lets go");
    assert!(!t.counts_syscalls());
    stats(100);
    let s3 = t.snapshot().expect("snapshot");
    assert_eq!(s3.delta(&s2).syscall("stat").0, 0, "detached");
    // Attached again, counted again.
    t.count_syscalls(true).expect("attach");
    stats(5);
    t.count_syscalls(false).expect("detach");
    assert_eq!(
        t.snapshot().expect("snapshot").delta(&s3).syscall("stat").0,
        5
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Reads `path` through the page cache after dropping its pages (POSIX_FADV_DONTNEED on a
/// synced file): every page comes in again.
fn read_uncached(path: &Path) {
    use std::os::fd::AsRawFd;
    let f = std::fs::File::open(path).expect("open");
    // SAFETY: fadvise on a descriptor this function owns.
    unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    std::io::Read::read_to_end(&mut &f, &mut Vec::new()).expect("read");
}

/// With `cache_inserts_on_demand`, pages coming into the cache are counted only while a
/// caller asks; and a process that leaves the set stops being counted at once, though
/// the program remembers per CPU whom it last found in the set (the memo is dropped when
/// user space changes the set), and is counted again once it is back.
#[test]
fn cache_inserts_are_counted_on_demand_and_follow_the_set() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(mut t) = tracer(&TraceOptions {
        cache_inserts_on_demand: true,
        ..TraceOptions::this_process()
            .without_syscalls()
            .without_phases()
    }) else {
        return;
    };
    let Some(fs) = scratch() else {
        return;
    };
    let file = fs.path().join("pages.dat");
    write_file(&file, 4);
    let pages = (4u64 << 20) / 4096;
    let inserts = |t: &Tracer, f: &dyn Fn()| {
        let s0 = t.snapshot().expect("snapshot");
        f();
        t.snapshot().expect("snapshot").delta(&s0).cache_misses
    };
    assert!(!t.counts_cache_inserts());
    assert_eq!(
        inserts(&t, &|| read_uncached(&file)),
        0,
        "not asked for yet"
    );
    t.count_cache_inserts(true).expect("attach");
    t.count_cache_inserts(true).expect("attach again");
    assert!(t.counts_cache_inserts());
    let n = inserts(&t, &|| read_uncached(&file));
    assert!(
        (pages..pages + 64).contains(&n),
        "asked: {n} pages, file {pages}"
    );
    // Out of the set: the same reads count nothing, on whichever CPU they run.
    let me = std::process::id();
    t.remove_pid(me).expect("remove");
    for _ in 0..3 {
        assert_eq!(inserts(&t, &|| read_uncached(&file)), 0, "out of the set");
    }
    t.add_pid(me).expect("add");
    let n = inserts(&t, &|| read_uncached(&file));
    assert!((pages..pages + 64).contains(&n), "back in the set: {n}");
    // One caller lets go: still attached; the second: detached.
    t.count_cache_inserts(false).expect("one lets go");
    assert!(t.counts_cache_inserts());
    t.count_cache_inserts(false).expect("the other lets go");
    assert!(!t.counts_cache_inserts());
    assert_eq!(inserts(&t, &|| read_uncached(&file)), 0, "let go");
}

/// A file marked from user space (`mark_written`) is the set's when the flusher writes it
/// back, though no process of the set dirtied it and the dirtying program is not attached;
/// a file beside it, dirtied by the same process and not marked, is not. This checks the
/// key user space computes (the superblock's device from mountinfo, the inode number)
/// against the one the block programs look up, on ext4, xfs and btrfs (whose files' st_dev
/// is their subvolume's, not the superblock's).
#[test]
fn a_file_marked_from_user_space_has_its_writeback_counted() {
    for kind in ["ext4", "xfs", "btrfs"] {
        marked_file_writeback(kind);
    }
}

fn marked_file_writeback(kind: &str) {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(mut t) = tracer(&TraceOptions {
        seed_pids: Vec::new(),
        dirtying_suspendable: true,
        ..TraceOptions::this_process()
            .without_syscalls()
            .without_phases()
    }) else {
        return;
    };
    let Some(fs) = scratch_of(kind) else {
        return;
    };
    let dev = loop_dev(&fs);
    let (marked, other) = (fs.path().join("marked.dat"), fs.path().join("other.dat"));
    write_file(&marked, 8);
    write_file(&other, 8);
    // Attached from the start; suspended, detached.
    assert!(t.counts_dirtying());
    t.suspend_dirtying(true).expect("suspend");
    assert!(!t.counts_dirtying());
    assert!(
        t.mark_written(&marked).expect("mark"),
        "{kind}'s key is told"
    );
    assert!(!t.mark_written(&fs.path().join("missing")).expect("mark"));
    let s0 = t.snapshot().expect("snapshot");
    // Nobody of the set writes: a dd outside it dirties both files, sync(1) (outside it too)
    // has the flusher write them back.
    for f in [&marked, &other] {
        let ok = Command::new("dd")
            .args([
                "if=/dev/zero",
                "bs=1M",
                "count=8",
                "conv=notrunc",
                "status=none",
            ])
            .arg(format!("of={}", f.display()))
            .status()
            .expect("dd")
            .success();
        assert!(ok);
        sync_file(f);
    }
    let d = t.snapshot().expect("snapshot").delta(&s0);
    let wb = writeback_bytes(&d, dev);
    eprintln!(
        "{kind}: writeback {wb}, foreign {}",
        d.foreign_bytes(&[dev])
    );
    assert!(wb >= 8 << 20, "{kind}: the marked file's writeback: {wb}");
    assert!(
        wb < 16 << 20,
        "{kind}: the unmarked file's counted too: {wb}"
    );
    // A caller that needs it has it back though the suspension stands; when it lets go
    // the program is detached again, and attached once the suspension ends.
    t.count_dirtying(true).expect("need");
    assert!(t.counts_dirtying());
    t.count_dirtying(false).expect("let go");
    assert!(!t.counts_dirtying());
    t.suspend_dirtying(false).expect("resume");
    assert!(t.counts_dirtying());
}
