//! Runs the audited command: its stdout and stderr pass through unchanged and are also
//! captured; a phase source and the device counters are sampled while its process tree
//! runs; its exit (code or signal) is reported as it happened.

use crate::disk::{device_name, DiskTimeline};
use crate::phase::{Observed, PhaseSource};
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
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
    /// Seconds from start to the end of the command.
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
fn peek_exit(pid: u32) -> Option<Exit> {
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

/// The command's pid while it runs, for the signal handler.
static CHILD: AtomicI32 = AtomicI32::new(0);
/// A SIGTERM or SIGHUP that came before the command started (sent on once it has).
static PENDING: AtomicI32 = AtomicI32::new(0);

/// SIGTERM and SIGHUP sent to candor go on to the command, and candor stays to report what
/// it saw; SIGINT from the terminal already reaches the whole foreground group, so candor
/// only waits for the command to end. (Handlers, unlike ignored signals, are reset for the
/// command when it starts, so it keeps its own default behaviour.)
extern "C" fn on_signal(sig: libc::c_int) {
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

/// Runs `argv` under `source`, sampling every `interval`. `pass_through` false keeps the
/// command's output off candor's own stdout/stderr (it is still captured).
pub fn run(
    argv: &[String],
    source: &mut dyn PhaseSource,
    interval: Duration,
    pass_through: bool,
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
    let exit = loop {
        source.set_output_bytes(count.load(Ordering::SeqCst));
        source.sample();
        disks.sample(t0.elapsed().as_secs_f64());
        if let Some(exit) = peek_exit(pid) {
            break exit;
        }
        std::thread::sleep(interval);
    };
    out.wall_s = t0.elapsed().as_secs_f64();
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
    source.set_output_bytes(count.load(Ordering::SeqCst));
    source.exited(pid);
    disks.sample(t0.elapsed().as_secs_f64());
    reap(pid);
    CHILD.store(0, Ordering::SeqCst);
    drop(child);
    out.exit = exit;
    out.observed = source.finish();
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
