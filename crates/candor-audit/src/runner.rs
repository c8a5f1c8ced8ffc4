//! Runs the audited command: its stdout and stderr pass through unchanged and are also
//! captured; a phase source and the device counters are sampled while its process tree
//! runs; its exit (code or signal) is reported as it happened.

use crate::disk::{device_name, DiskTimeline};
use crate::phase::{Observed, PhaseSource, ProcessRecord};
use candor_model::units::{format_bytes, ByteStyle};
use candor_procfs::{Kernel, Pid};
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How the command ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    Signal(i32),
    /// The command could not be started: not found.
    NotFound,
    /// The command could not be started for another reason (permission...).
    NotStarted(String),
}

impl Exit {
    /// The exit code candor passes on: the command's own; 128+N for a signal; 127 when
    /// not found and 126 when it could not be run, as shells do.
    pub fn code(&self) -> i32 {
        match self {
            Exit::Code(c) => *c,
            Exit::Signal(s) => 128 + s,
            Exit::NotFound => 127,
            Exit::NotStarted(_) => 126,
        }
    }
}

/// Everything the run produced.
pub struct Outcome {
    pub argv: Vec<String>,
    pub cwd: String,
    pub exit: Exit,
    pub stdout: String,
    pub stderr: String,
    pub observed: Observed,
    pub disks: DiskTimeline,
    /// Seconds from start to the end of what was observed: the last process of the tree
    /// (or the command's exit with `stop_at_exit`).
    pub wall_s: f64,
    /// Devices under the files the tree touched and under the working directory.
    pub devices: Vec<String>,
}

/// What is kept of one output stream for its figures: the first `KEEP_HEAD` bytes and the
/// last `KEEP_TAIL` (tools print their figures as they go, or in a summary at the end), and
/// the count of all of it. The whole stream is passed through all the same; what lies
/// between is counted, not kept, so a command that prints gigabytes costs candor
/// at most `KEEP_HEAD + 2 * KEEP_TAIL` bytes of memory per stream. iozone -a prints some 30
/// KiB, fio's JSON with latency bins a few MiB.
#[derive(Default)]
pub struct Kept {
    head: Vec<u8>,
    tail: Vec<u8>,
    /// Every byte the stream carried.
    pub total: u64,
}

pub const KEEP_HEAD: usize = 16 << 20;
pub const KEEP_TAIL: usize = 16 << 20;

impl Kept {
    fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        if self.head.len() < KEEP_HEAD {
            let n = bytes.len().min(KEEP_HEAD - self.head.len());
            self.head.extend_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
        }
        self.tail.extend_from_slice(bytes);
        if self.tail.len() > 2 * KEEP_TAIL {
            let cut = self.tail.len() - KEEP_TAIL;
            self.tail.drain(..cut);
        }
    }

    /// Bytes read for the figures (the rest was passed through and counted only).
    pub fn read_bytes(&self) -> u64 {
        (self.head.len() + self.tail.len().min(KEEP_TAIL)) as u64
    }

    /// The text the parsers read: all of it, or the first and last parts in whole lines.
    pub fn text(&self) -> String {
        let tail = &self.tail[self.tail.len().saturating_sub(KEEP_TAIL)..];
        if self.total == (self.head.len() + tail.len()) as u64 {
            let mut all = self.head.clone();
            all.extend_from_slice(tail);
            return String::from_utf8_lossy(&all).into_owned();
        }
        let head = match self.head.iter().rposition(|b| *b == b'\n') {
            Some(i) => &self.head[..=i],
            None => &self.head[..],
        };
        let tail = match tail.iter().position(|b| *b == b'\n') {
            Some(i) => &tail[i + 1..],
            None => tail,
        };
        let mut text = String::from_utf8_lossy(head).into_owned();
        text.push_str(&String::from_utf8_lossy(tail));
        text
    }

    /// The sentence an audit's notes carry when part of the stream was not read.
    pub fn note(&self, stream: &str) -> Option<String> {
        (self.read_bytes() < self.total).then(|| {
            format!(
                "the command printed {} bytes on {stream}; the first {} and the last {} were read for its figures (what lies between was passed through, not read)",
                self.total,
                self.head.len(),
                self.tail.len().min(KEEP_TAIL)
            )
        })
    }
}

/// Capture of one output stream, passed through to `sink` as it comes. `drain` is held
/// from a read out of the pipe to the count's update, so the sampler (which holds it while
/// it adds the count and what the pipes still hold) never sees bytes in neither.
fn pump<R: Read + std::os::fd::AsRawFd + Send + 'static>(
    mut from: R,
    mut sink: impl Write + Send + 'static,
    buf: Arc<Mutex<Kept>>,
    count: Arc<AtomicU64>,
    drain: Arc<Mutex<()>>,
    open: Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        // The pipe is closed when `from` drops, at the end of this thread; `open` goes
        // false first, so the sampler never asks a closed (or reused) descriptor.
        let _closing = Closing(open);
        let mut chunk = [0u8; 16 * 1024];
        loop {
            // Wait for data (or the end) without the lock; the read then does not block.
            let mut pfd = libc::pollfd {
                fd: from.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd.
            if unsafe { libc::poll(&mut pfd, 1, -1) } < 0 {
                if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                break;
            }
            let got = {
                let _held = drain.lock();
                let got = from.read(&mut chunk);
                if let Ok(n) = got {
                    count.fetch_add(n as u64, Ordering::SeqCst);
                }
                got
            };
            match got {
                Ok(0) => break,
                Ok(n) => {
                    let _ = sink.write_all(&chunk[..n]);
                    let _ = sink.flush();
                    if let Ok(mut b) = buf.lock() {
                        b.push(&chunk[..n]);
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
    })
}

struct Closing(Arc<std::sync::atomic::AtomicBool>);

impl Drop for Closing {
    fn drop(&mut self) {
        self.0.store(false, Ordering::SeqCst);
    }
}

/// What the kernel says about a child that ended (without reaping it): Some(exit) once
/// it is a zombie.
pub(crate) fn peek_exit(pid: u32) -> Option<Exit> {
    // SAFETY: siginfo_t is plain data; waitid fills it.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    let r = unsafe {
        libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        )
    };
    if r != 0 {
        return Some(Exit::NotStarted(format!(
            "waiting for the command failed: {}",
            std::io::Error::last_os_error()
        )));
    }
    // SAFETY: the fields are valid after a successful waitid.
    let (spid, status) = unsafe { (info.si_pid(), info.si_status()) };
    if spid == 0 {
        return None;
    }
    Some(match info.si_code {
        libc::CLD_EXITED => Exit::Code(status),
        _ => Exit::Signal(status),
    })
}

/// Waits until `fd` is readable (a pidfd: its process has exited) or `timeout` has passed;
/// a signal caught meanwhile ends it early (one reading more, no harm).
fn wait_readable(fd: i32, timeout: Duration) {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
    // SAFETY: one pollfd that lives across the call.
    unsafe { libc::poll(&mut p, 1, ms) };
}

/// The command's pid while it runs, for the signal handler.
static CHILD: AtomicI32 = AtomicI32::new(0);
/// The command has exited and the audit waits for the processes it left running.
static WAITING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
/// SIGINT while waiting for them: stop waiting.
static STOP_WAITING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
/// SIGTERM or SIGHUP while waiting for them: passed on to them.
static FORWARD: AtomicI32 = AtomicI32::new(0);
/// A SIGTERM or SIGHUP that came before the command started (sent on once it has).
static PENDING: AtomicI32 = AtomicI32::new(0);

/// SIGTERM and SIGHUP sent to candor go on to the command, and candor stays to report what
/// it saw; SIGINT from the terminal already reaches the whole foreground group, so candor
/// only waits for the command to end. (Handlers, unlike ignored signals, are reset for the
/// command when it starts, so it keeps its own default behaviour.)
extern "C" fn on_signal(sig: libc::c_int) {
    if WAITING.load(Ordering::SeqCst) {
        if sig == libc::SIGINT {
            STOP_WAITING.store(true, Ordering::SeqCst);
        } else {
            FORWARD.store(sig, Ordering::SeqCst);
        }
        return;
    }
    if sig == libc::SIGINT {
        return;
    }
    let pid = CHILD.load(Ordering::SeqCst);
    if pid > 0 {
        // SAFETY: kill is async-signal-safe.
        unsafe { libc::kill(pid, sig) };
    } else {
        PENDING.store(sig, Ordering::SeqCst);
    }
}

/// Installs the handlers (see `on_signal`); called as early as possible.
pub fn catch_signals() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: installs a handler that only reads an atomic and calls kill.
        unsafe { libc::signal(sig, on_signal as *const () as libc::sighandler_t) };
    }
}

fn reap(pid: u32) {
    let mut status = 0;
    // SAFETY: plain waitpid on our own child.
    unsafe { libc::waitpid(pid as libc::pid_t, &mut status, 0) };
}

/// Reaps `pid` if it is an ended child of this process (an orphan of the tree that came
/// to candor as subreaper); anything else is left alone.
fn reap_if_ended(pid: u32) {
    let mut status = 0;
    // SAFETY: waitpid on one pid, without blocking; ECHILD when it is not our child.
    unsafe { libc::waitpid(pid as libc::pid_t, &mut status, libc::WNOHANG) };
}

/// A process of the tree still running: (pid, parent, command name).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Running {
    pub pid: u32,
    pub ppid: u32,
    pub comm: String,
}

/// The processes descended from `me` that still run (zombies are not running), `root`
/// left out. With candor as child subreaper every orphan of the tree is re-parented to
/// candor, so the tree is whatever descends from it.
pub fn live_descendants(me: u32, root: u32) -> Vec<Running> {
    let kernel = Kernel::system();
    let Ok(pids) = kernel.pids() else {
        return Vec::new();
    };
    // pid -> (ppid, comm, zombie)
    let mut all: std::collections::HashMap<u32, (u32, String, bool)> = Default::default();
    for pid in pids {
        let Ok(stat) = kernel.pid_stat(Pid::Id(pid)) else {
            continue;
        };
        let exited = stat.exited();
        all.insert(pid, (stat.ppid, stat.comm, exited));
    }
    let descends = |mut pid: u32| {
        for _ in 0..4096 {
            match all.get(&pid) {
                Some((ppid, _, _)) if *ppid == me => return true,
                Some((ppid, _, _)) if *ppid > 1 => pid = *ppid,
                _ => return false,
            }
        }
        false
    };
    let mut out: Vec<Running> = all
        .iter()
        .filter(|(pid, (_, _, zombie))| **pid != root && **pid != me && !*zombie)
        .filter(|(pid, _)| descends(**pid))
        .map(|(pid, (ppid, comm, _))| Running {
            pid: *pid,
            ppid: *ppid,
            comm: comm.clone(),
        })
        .collect();
    out.sort_by_key(|r| r.pid);
    out
}

/// Sends `sig` to the processes of `live` that still descend from `me`: each is first
/// held by a pidfd, then the tree is read again, so a pid that ended and was reused by an
/// unrelated process in between is never signalled.
fn signal_tree(me: u32, root: u32, live: &[Running], sig: i32) {
    let held: Vec<(u32, i32)> = live
        .iter()
        .map(|r| {
            // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
            let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, r.pid as libc::pid_t, 0) };
            (r.pid, fd as i32)
        })
        .collect();
    let now = live_descendants(me, root);
    for (p, fd) in held {
        if !now.iter().any(|r| r.pid == p) {
            if fd >= 0 {
                // SAFETY: closing the descriptor opened above.
                unsafe { libc::close(fd) };
            }
            continue;
        }
        if fd < 0 {
            // A kernel without pidfds (before 5.3): the pid, just checked again.
            // SAFETY: signalling a process of the audited tree.
            unsafe { libc::kill(p as libc::pid_t, sig) };
            continue;
        }
        // SAFETY: the descriptor refers to that very process; no siginfo is passed. Then
        // the descriptor opened above is closed.
        unsafe {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                fd,
                sig,
                std::ptr::null::<libc::siginfo_t>(),
                0,
            );
            libc::close(fd);
        }
    }
}

/// "pid 123 (dd), pid 124 (sh)".
fn name_all(procs: &[Running]) -> String {
    procs
        .iter()
        .map(|r| format!("pid {} ({})", r.pid, r.comm))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The record of a process cut off at `at`, with its counters read then.
fn cut_record(r: &Running, at: f64) -> ProcessRecord {
    ProcessRecord {
        pid: r.pid,
        ppid: r.ppid,
        comm: r.comm.clone(),
        first_seen_s: at,
        exit_s: None,
        io: Kernel::system().pid_io(Pid::Id(r.pid)).unwrap_or_default(),
    }
}

/// What was cut off when the audit stopped with processes still running.
fn cut_sentence(cut: &[ProcessRecord], at: f64, why: &str) -> String {
    let each: Vec<String> = cut
        .iter()
        .map(|p| {
            format!(
                "pid {} ({}), which had read {} and written {} by then",
                p.pid,
                p.comm,
                format_bytes(p.io.rchar, ByteStyle::TENTHS),
                format_bytes(p.io.wchar, ByteStyle::TENTHS)
            )
        })
        .collect();
    let n = cut.len();
    format!(
        "{why} at {at:.3} s, while {n} process{} of its tree {} still running: {}; what {} did from then on is not in this audit",
        if n == 1 { "" } else { "es" },
        if n == 1 { "was" } else { "were" },
        each.join("; "),
        if n == 1 { "it" } else { "they" }
    )
}

/// Runs `argv` under `source`, sampling every `interval`. `pass_through` false keeps the
/// command's output off candor's own stdout/stderr (it is still captured).
///
/// When the command exits while processes it started still run, the audit goes on until
/// they end too (they are part of what was measured), unless `stop_at_exit`: then it
/// stops at once and names them (`Observed::still_running`).
pub fn run(
    argv: &[String],
    source: &mut dyn PhaseSource,
    interval: Duration,
    pass_through: bool,
    stop_at_exit: bool,
) -> Outcome {
    let cwd = std::env::current_dir()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| ".".into());
    let mut disks = DiskTimeline::default();
    let t0 = Instant::now();
    let mut out = Outcome {
        argv: argv.to_vec(),
        cwd: cwd.clone(),
        exit: Exit::NotFound,
        stdout: String::new(),
        stderr: String::new(),
        observed: Observed::default(),
        disks: DiskTimeline::default(),
        wall_s: 0.0,
        devices: Vec::new(),
    };
    let Some((prog, args)) = argv.split_first() else {
        out.exit = Exit::NotStarted("no command given".into());
        return out;
    };
    // Orphans of the tree come to candor, so their counters stay readable.
    // SAFETY: prctl with an integer argument.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
    if let Err(e) = source.before_spawn() {
        out.observed.notes.push(e);
    }
    disks.sample(0.0);
    catch_signals();
    let spawned = Command::new(prog)
        .args(args)
        .stdin(Stdio::inherit())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => {
            out.exit = if e.kind() == std::io::ErrorKind::NotFound {
                Exit::NotFound
            } else {
                Exit::NotStarted(e.to_string())
            };
            out.observed = source.finish();
            out.disks = disks;
            return out;
        }
    };
    let pid = child.id();
    CHILD.store(pid as i32, Ordering::SeqCst);
    let pending = PENDING.swap(0, Ordering::SeqCst);
    if pending > 0 {
        // SAFETY: signalling our own child.
        unsafe { libc::kill(pid as libc::pid_t, pending) };
    }
    if let Err(e) = source.attach(pid, t0) {
        out.observed
            .notes
            .push(format!("could not follow the command: {e}"));
    }
    let out_buf = Arc::new(Mutex::new(Kept::default()));
    let err_buf = Arc::new(Mutex::new(Kept::default()));
    let count = Arc::new(AtomicU64::new(0));
    let drain = Arc::new(Mutex::new(()));
    let mut pumps = Vec::new();
    // The pipes' read ends, to add the bytes written but not yet read to the count.
    let mut pipes: Vec<(i32, Arc<std::sync::atomic::AtomicBool>)> = Vec::new();
    if let Some(o) = child.stdout.take() {
        let sink: Box<dyn Write + Send> = if pass_through {
            Box::new(std::io::stdout())
        } else {
            Box::new(std::io::sink())
        };
        let open = Arc::new(std::sync::atomic::AtomicBool::new(true));
        pipes.push((o.as_raw_fd(), open.clone()));
        pumps.push(pump(
            o,
            sink,
            out_buf.clone(),
            count.clone(),
            drain.clone(),
            open,
        ));
    }
    if let Some(e) = child.stderr.take() {
        let sink: Box<dyn Write + Send> = if pass_through {
            Box::new(std::io::stderr())
        } else {
            Box::new(std::io::sink())
        };
        let open = Arc::new(std::sync::atomic::AtomicBool::new(true));
        pipes.push((e.as_raw_fd(), open.clone()));
        pumps.push(pump(
            e,
            sink,
            err_buf.clone(),
            count.clone(),
            drain.clone(),
            open,
        ));
    }
    let counter = count.clone();
    source.output_probe(Box::new(move || {
        let _held = drain.lock();
        let mut n = counter.load(Ordering::SeqCst);
        for (fd, open) in &pipes {
            if !open.load(Ordering::SeqCst) {
                continue;
            }
            let mut waiting: libc::c_int = 0;
            // SAFETY: FIONREAD writes one int into `waiting`.
            if unsafe { libc::ioctl(*fd, libc::FIONREAD, &mut waiting) } == 0 && waiting > 0 {
                n += waiting as u64;
            }
        }
        n
    }));
    // The command's exit wakes the loop at once (a pidfd, Linux 5.3), instead of at the
    // end of the period it falls in: a long --interval does not lengthen the audit.
    // SAFETY: pidfd_open with a pid and no flags; the descriptor is owned below.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    let pidfd = (pidfd >= 0).then(|| {
        // SAFETY: a fresh descriptor this function alone owns.
        unsafe { std::os::fd::OwnedFd::from_raw_fd(pidfd as i32) }
    });
    let exit = loop {
        source.set_output_bytes(count.load(Ordering::SeqCst));
        source.sample();
        disks.sample(t0.elapsed().as_secs_f64());
        if let Some(exit) = peek_exit(pid) {
            break exit;
        }
        match &pidfd {
            Some(fd) => wait_readable(fd.as_raw_fd(), interval),
            None => std::thread::sleep(interval),
        }
    };
    drop(pidfd);
    // The processes the command left running are part of what was measured: follow them
    // to their end (or, with stop_at_exit, name them and stop).
    let root_exit_s = t0.elapsed().as_secs_f64();
    // From now on a signal is for the processes left running (the command is a zombie).
    WAITING.store(true, Ordering::SeqCst);
    let me = std::process::id();
    let program = argv.first().map(String::as_str).unwrap_or("the command");
    let mut still_running: Vec<ProcessRecord> = Vec::new();
    let mut tree_notes: Vec<String> = Vec::new();
    // The processes followed after the command's exit.
    let mut followed: std::collections::BTreeSet<u32> = Default::default();
    let mut live = live_descendants(me, pid);
    if !live.is_empty() && stop_at_exit {
        still_running = live.iter().map(|r| cut_record(r, root_exit_s)).collect();
        tree_notes.push(cut_sentence(
            &still_running,
            root_exit_s,
            &format!("stopped at {program}'s exit (--stop-at-exit)"),
        ));
    } else if !live.is_empty() {
        let first = live.clone();
        eprintln!(
            "candor audit: {program} exited; waiting for the {} process{} it left running ({}): --stop-at-exit does not wait, Ctrl-C stops waiting",
            live.len(),
            if live.len() == 1 { "" } else { "es" },
            name_all(&live)
        );
        loop {
            followed.extend(live.iter().map(|r| r.pid));
            let sig = FORWARD.swap(0, Ordering::SeqCst);
            if sig > 0 {
                let name = if sig == libc::SIGHUP {
                    "SIGHUP"
                } else {
                    "SIGTERM"
                };
                tree_notes.push(format!(
                    "{name} sent to candor at {:.3} s was passed on to {}",
                    t0.elapsed().as_secs_f64(),
                    name_all(&live)
                ));
                signal_tree(me, pid, &live, sig);
            }
            source.set_output_bytes(count.load(Ordering::SeqCst));
            source.sample();
            disks.sample(t0.elapsed().as_secs_f64());
            std::thread::sleep(interval);
            live = live_descendants(me, pid);
            if live.is_empty() {
                break;
            }
            if STOP_WAITING.swap(false, Ordering::SeqCst) {
                let at = t0.elapsed().as_secs_f64();
                still_running = live.iter().map(|r| cut_record(r, at)).collect();
                tree_notes.push(cut_sentence(
                    &still_running,
                    at,
                    "stopped waiting on an interrupt",
                ));
                break;
            }
        }
        let end = t0.elapsed().as_secs_f64();
        // Names as they are now (a shell's child seen before its exec is the program now).
        let first: Vec<Running> = first
            .into_iter()
            .map(|mut r| {
                if let Ok(c) = Kernel::system().pid_comm(Pid::Id(r.pid)) {
                    r.comm = c.trim_end().to_string();
                }
                r
            })
            .collect();
        if still_running.is_empty() {
            tree_notes.insert(0, format!(
                "{program} exited at {root_exit_s:.3} s and left {} process{} running ({}); the audit followed {} to the end, at {end:.3} s (--stop-at-exit stops at the command's exit)",
                first.len(),
                if first.len() == 1 { "" } else { "es" },
                name_all(&first),
                if first.len() == 1 { "it" } else { "them" }
            ));
        }
    }
    WAITING.store(false, Ordering::SeqCst);
    STOP_WAITING.store(false, Ordering::SeqCst);
    FORWARD.store(0, Ordering::SeqCst);
    // Times, rates and utilisations are over the window observed: it ends here.
    out.wall_s = t0.elapsed().as_secs_f64();
    disks.sample(out.wall_s);
    // Cut off here, the processes still running are observed no longer (they may hold the
    // output pipes open for the wait below).
    let cut_off = (!still_running.is_empty()).then(|| {
        source.set_output_bytes(count.load(Ordering::SeqCst));
        source.exited(pid);
        source.finish()
    });
    // The output pipes close when the last process holding them ends; a daemon left
    // behind may keep them open, so wait only a little for the rest of the output.
    let deadline = Instant::now() + Duration::from_secs(2);
    while pumps.iter().any(|p| !p.is_finished()) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    for p in pumps {
        if p.is_finished() {
            let _ = p.join();
        }
    }
    if cut_off.is_none() {
        source.set_output_bytes(count.load(Ordering::SeqCst));
        source.exited(pid);
    }
    reap(pid);
    CHILD.store(0, Ordering::SeqCst);
    drop(child);
    out.exit = exit;
    out.observed = match cut_off {
        Some(o) => o,
        None => source.finish(),
    };
    out.observed.notes.extend(tree_notes);
    out.observed.still_running = still_running;
    // Orphans of the tree that ended came to candor: reap them (after the last reading of
    // their counters). Every child of candor's process is part of the tree (see `audit`).
    let mut ended = followed;
    ended.extend(out.observed.processes.iter().map(|p| p.pid));
    for p in ended.into_iter().filter(|&p| p != pid && p != me) {
        reap_if_ended(p);
    }
    for (buf, text, stream) in [
        (&out_buf, &mut out.stdout, "stdout"),
        (&err_buf, &mut out.stderr, "stderr"),
    ] {
        if let Ok(kept) = buf.lock() {
            *text = kept.text();
            out.observed.notes.extend(kept.note(stream));
        }
    }
    // Devices: under every file the tree touched, and under the working directory.
    let mut devs: Vec<String> = Vec::new();
    let mut add = |d: Option<String>| {
        if let Some(d) = d {
            if !devs.contains(&d) {
                devs.push(d);
            }
        }
    };
    for p in &out.observed.phases {
        add(p.dev.and_then(device_name));
    }
    {
        use std::os::unix::fs::MetadataExt;
        add(std::fs::metadata(&cwd)
            .ok()
            .and_then(|m| device_name(m.dev())));
    }
    out.devices = devs;
    // Each phase gets its device's traffic over its window.
    for p in &mut out.observed.phases {
        let Some(name) = p.dev.and_then(device_name) else {
            continue;
        };
        if let Some(d) = disks.delta(&name, p.open_s, p.close_s) {
            p.device_read_bytes = Some(d.read_bytes());
            p.device_write_bytes = Some(d.write_bytes());
            p.device_latency_us = d.avg_latency_us();
            p.device = Some(name);
        }
    }
    out.disks = disks;
    out
}

#[cfg(test)]
mod kept_tests {
    use super::*;

    #[test]
    fn a_short_stream_is_kept_whole() {
        let mut k = Kept::default();
        k.push(b"one\n");
        k.push(b"two\n");
        assert_eq!(k.text(), "one\ntwo\n");
        assert_eq!(k.total, 8);
        assert_eq!(k.note("stdout"), None);
    }

    #[test]
    fn a_long_stream_keeps_its_first_and_last_lines_and_says_so() {
        let mut k = Kept::default();
        k.push(b"first figures 1\n");
        let line = [b'x'; 1023];
        let mut chatter = line.to_vec();
        chatter.push(b'\n');
        // 48 MiB of chatter, in pieces as a pipe gives them.
        for _ in 0..(48 << 10) {
            k.push(&chatter);
        }
        k.push(b"last figures 2\n");
        let total = 16 + (48u64 << 20) + 15;
        assert_eq!(k.total, total);
        assert!(k.head.len() + k.tail.len() <= KEEP_HEAD + 2 * KEEP_TAIL);
        let t = k.text();
        assert!(t.starts_with("first figures 1\n") && t.ends_with("\nlast figures 2\n"));
        assert!(t.lines().all(|l| l.len() == 1023 || l.contains("figures")));
        assert_eq!(
            k.note("stdout").unwrap(),
            format!("the command printed {total} bytes on stdout; the first 16777216 and the last 16777216 were read for its figures (what lies between was passed through, not read)")
        );
    }
}
