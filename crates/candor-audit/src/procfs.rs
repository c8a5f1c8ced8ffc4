//! The phase source that needs no privileges: samples the processes' files of procfs (through
//! `candor_procfs::Kernel`) every few milliseconds while the audited tree runs. Each tick it
//! finds the tree's processes (new ones by their parent), lists their open files (each
//! descriptor and its fdinfo: path, position, O_DIRECT, access mode) and reads every
//! thread's I/O counters, then hands each process's byte deltas to the files it had open.
//!
//! Why per thread: a process's own io counters also absorb the totals of the children it
//! reaps. Reading the threads separately shows that absorbed part apart, so the last bytes of
//! a child that ended between two ticks (what the child did after its last reading) can be
//! given back to the child's files instead of being lost or counted twice.
//!
//! Limits (stated in the audit's notes): open and close times are known to half a tick, the
//! time inside I/O calls and fsync are not seen at all, and bytes are shared between files a
//! process has open at the same time by how far each file's position moved (or evenly).
//!
//! - [`walk`]: the processes of the tree and one tick's reading of each;
//! - [`accounting`]: each tick's byte deltas, own and absorbed, moved to the files;
//! - [`attribute`]: how a delta is shared among a process's files;
//! - [`channels`]: AIO, io_uring and mapped files seen in use.

mod accounting;
mod attribute;
mod channels;
mod walk;

use crate::phase::{ChannelFile, ChannelUse, Observed, Phase, PhaseSource, ProcessRecord};
// The /proc parsers are candor-procfs's; `Io` is a process's (or a thread's) io counters.
use candor_procfs::{FdInfo, Kernel, Pid, PidIo as Io};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Instant;
use walk::{own_open_files, Reading};

/// A file a process has open, with what its phase took so far.
struct OpenFile {
    phase: Phase,
    info: FdInfo,
    /// How far the position moved since the previous tick (shares bytes between files).
    moved: u64,
    /// The position has only moved forward so far (a sequential pass).
    sequential: bool,
    /// Open in the auditor itself when the command started: the caller's file, passed down
    /// (a lock that `flock` holds, a redirect), not one the command opened.
    inherited: bool,
    /// The position kept up with the bytes written (write calls, not pwrite).
    pos_follows: bool,
}

/// One process of the tree: its last readings, what was accounted for it, its files.
struct Proc {
    rec: ProcessRecord,
    /// Last reading of each live thread.
    threads: HashMap<u32, Io>,
    /// Last reading of the whole process (its io counters).
    total: Io,
    /// What has been accounted for this process so far: the larger of the whole reading
    /// and the threads' sum (the threads are read a moment after the whole).
    known: Io,
    /// Largest (whole - threads' sum) seen: what dead threads and reaped children brought.
    beyond_max: Io,
    /// Last readings of vanished children and threads, not yet seen arriving in `total`.
    gone: Io,
    /// Children that vanished and whose late bytes may still arrive in `total`.
    vanished_children: Vec<u32>,
    alive: bool,
    /// Files open at the last tick: fd -> file.
    files: HashMap<i32, OpenFile>,
    /// Indexes in `phases` of the files this process had open when it ended.
    last_files: Vec<usize>,
    /// Every regular file it was seen to have open (where I/O through another channel
    /// than read and write calls may have gone).
    seen_files: Vec<ChannelFile>,
}

pub struct ProcfsSource {
    t0: Instant,
    interval_s: f64,
    me: u32,
    prev_tick_s: f64,
    classified: HashMap<u32, bool>,
    procs: BTreeMap<u32, Proc>,
    /// Closed phases.
    phases: Vec<Phase>,
    out_total: u64,
    out_applied: u64,
    unattributed: Io,
    extra_notes: Vec<String>,
    output_probe: Option<Box<dyn Fn() -> u64 + Send>>,
    /// (device, inode) of the regular files the auditor had open when the command started.
    inherited: HashSet<(u64, u64)>,
    /// Channels other than read and write calls, by (pid, channel, mapped inode).
    channels: BTreeMap<(u32, &'static str, u64), ChannelUse>,
    /// When each process's channels are next looked at: at every tick while that is cheap,
    /// less often for a process whose memory map takes long to read (a large program's
    /// thousands of mappings), so the sampler keeps its pace.
    next_scan_s: HashMap<u32, f64>,
    /// Indexes in `phases` of files closed as forward-only writers (`accounting::forward`):
    /// late bytes given to one cannot take it past its size.
    forward_writers: HashSet<usize>,
    /// Beside the eBPF tracer (`companion`), which sees every file's I/O itself: the
    /// descriptors are read only for the files channels may have used, and, per process,
    /// when next (fifty times a reading's cost apart: a program holding thousands of files
    /// open costs the sampler at most a fiftieth of its time).
    companion: bool,
    next_fds_s: HashMap<u32, f64>,
}

impl ProcfsSource {
    /// `interval_s` is the sampling period the runner will use (for the stated uncertainty).
    pub fn new(interval_s: f64) -> ProcfsSource {
        ProcfsSource {
            t0: Instant::now(),
            interval_s,
            me: std::process::id(),
            prev_tick_s: 0.0,
            classified: HashMap::new(),
            procs: BTreeMap::new(),
            phases: Vec::new(),
            out_total: 0,
            out_applied: 0,
            unattributed: Io::default(),
            extra_notes: Vec::new(),
            output_probe: None,
            inherited: HashSet::new(),
            channels: BTreeMap::new(),
            next_scan_s: HashMap::new(),
            forward_writers: HashSet::new(),
            companion: false,
            next_fds_s: HashMap::new(),
        }
    }

    /// The sampler beside the eBPF tracer: processes, their counters and their channels;
    /// its file phases are not used (the tracer's are), so a process's descriptors are
    /// read less often when reading them costs much (see `next_fds_s`).
    pub fn companion(interval_s: f64) -> ProcfsSource {
        ProcfsSource {
            companion: true,
            ..ProcfsSource::new(interval_s)
        }
    }

    fn now_s(&self) -> f64 {
        self.t0.elapsed().as_secs_f64()
    }

    fn add_proc(&mut self, pid: u32, ppid: u32, comm: String, now: f64) {
        self.classified.insert(pid, true);
        self.procs.entry(pid).or_insert_with(|| Proc {
            rec: ProcessRecord {
                pid,
                ppid,
                comm,
                first_seen_s: now,
                ..Default::default()
            },
            threads: HashMap::new(),
            total: Io::default(),
            known: Io::default(),
            beyond_max: Io::default(),
            gone: Io::default(),
            vanished_children: Vec::new(),
            alive: true,
            files: HashMap::new(),
            last_files: Vec::new(),
            seen_files: Vec::new(),
        });
    }
}

impl PhaseSource for ProcfsSource {
    fn name(&self) -> &'static str {
        "procfs"
    }

    fn attach(&mut self, root: u32, t0: Instant) -> Result<(), String> {
        self.t0 = t0;
        self.inherited = own_open_files();
        let now = self.now_s();
        self.add_proc(root, self.me, String::new(), now);
        self.sample();
        Ok(())
    }

    fn sample(&mut self) {
        let now = self.now_s();
        self.discover(now);
        // Read everything first, parents (lower pids) before children, then account: a
        // child that vanished is known before its parent's counters are judged.
        let pids: Vec<u32> = self
            .procs
            .iter()
            .filter(|(_, p)| p.alive)
            .map(|(pid, _)| *pid)
            .collect();
        // stdout/stderr bytes are in wchar and must come off it: count the output before
        // and after the readings. When the two counts agree, the readings hold exactly
        // that output; when the command wrote in between, its wchar may or may not hold
        // those bytes, so read again (a few times at most).
        let probe = |me: &Self| me.output_probe.as_ref().map(|p| p());
        let with_fds: Vec<bool> = pids
            .iter()
            .map(|pid| !self.companion || self.next_fds_s.get(pid).is_none_or(|t| now >= *t))
            .collect();
        let mut readings: Vec<(u32, Reading)> = Vec::new();
        let mut costs: Vec<f64> = Vec::new();
        let mut output = None;
        for _ in 0..3 {
            let before = probe(self);
            costs.clear();
            readings = pids
                .iter()
                .zip(&with_fds)
                .map(|(pid, fds)| {
                    let started = Instant::now();
                    let r = Self::read(*pid, *fds);
                    costs.push(started.elapsed().as_secs_f64());
                    (*pid, r)
                })
                .collect();
            output = before;
            if probe(self) == before {
                break;
            }
        }
        if self.companion {
            for ((pid, fds), cost) in pids.iter().zip(&with_fds).zip(&costs) {
                if *fds {
                    self.next_fds_s.insert(*pid, now + 50.0 * cost);
                }
            }
        }
        if let Some(o) = output {
            self.out_total = self.out_total.max(o);
        }
        let mid = (self.prev_tick_s + now) / 2.0;
        for (pid, r) in &readings {
            if r.total.is_none() {
                self.vanish(*pid, mid);
            }
        }
        for (pid, r) in readings {
            if let Some(total) = r.total {
                self.apply(pid, r, total, now);
                self.scan_channels(pid, now);
            }
        }
        self.prev_tick_s = now;
    }

    fn exited(&mut self, pid: u32) {
        // A zombie: its files are closed and its counters final; one more tick gives its
        // last bytes to the files it had open. An ended process's /proc files belong to
        // root, so without root its last bytes cannot be read.
        if Kernel::system().pid_io(Pid::Id(pid)).is_err() {
            self.extra_notes.push(format!(
                "the command's counters could not be read after it ended (only root can read an ended process's /proc files): \
                 what it did after the last reading, at {:.3} s, is missing; run as root for exact bytes",
                self.prev_tick_s
            ));
        }
        self.sample();
        let now = self.now_s();
        if let Some(p) = self.procs.get_mut(&pid) {
            p.alive = false;
            p.rec.exit_s = Some(now);
        }
        self.close_all(pid, now);
    }

    fn set_output_bytes(&mut self, bytes: u64) {
        self.out_total = self.out_total.max(bytes);
    }

    fn output_probe(&mut self, probe: Box<dyn Fn() -> u64 + Send>) {
        self.output_probe = Some(probe);
    }

    fn finish(&mut self) -> Observed {
        let now = self.now_s();
        let pids: Vec<u32> = self.procs.keys().copied().collect();
        for pid in pids {
            self.close_all(pid, now);
        }
        let mut phases = std::mem::take(&mut self.phases);
        phases.retain(|p| p.bytes() > 0 || p.wall_s() > 0.0);
        phases.sort_by(|a, b| a.open_s.total_cmp(&b.open_s));
        let mut notes = vec![format!(
            "observed by sampling /proc every {:.0} ms: open and close times are known to within {:.1} ms; \
             time inside I/O calls and fsync are not seen (the eBPF tracer, as root, sees them)",
            self.interval_s * 1e3,
            self.interval_s * 1e3 / 2.0
        )];
        if self.unattributed.rchar + self.unattributed.wchar > 0 {
            notes.push(format!(
                "{} bytes read and {} bytes written by the tree were not attributed to a file: they went to devices such as /dev/zero, pipes or sockets, or to files whose positions do not show which",
                self.unattributed.rchar, self.unattributed.wchar
            ));
        }
        notes.append(&mut self.extra_notes);
        Observed {
            source: "procfs".into(),
            phases,
            processes: self.procs.values().map(|p| p.rec.clone()).collect(),
            notes,
            channels: self.channel_uses(),
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Waits until `pid` (a child) has ended, without reaping it, as the audit's runner
    /// does.
    fn wait_zombie(pid: u32) {
        loop {
            match crate::runner::peek_exit(pid) {
                None => std::thread::sleep(std::time::Duration::from_millis(2)),
                Some(crate::Exit::NotStarted(why)) => panic!("{why}"),
                Some(_) => return,
            }
        }
    }

    /// dd, a grandchild (sh runs it and reaps it), writes 32 MiB: every byte reaches its
    /// file's phase, however its end falls between two ticks. dd copies its stdin, fed by
    /// the test: the first 64 KiB, then (once a tick has seen dd's file open, so the file
    /// is known however slowly this machine schedules the sampler) the rest. Sampled as
    /// the runner does: until the command is a zombie, then `exited`, then reaped.
    #[test]
    fn sees_a_child_write_a_file() {
        use std::io::Write;
        let dir = tempfile_dir("sees-a-child");
        let file = dir.join("f");
        let script = format!(
            "dd of={} bs=64k count=512 iflag=fullblock status=none",
            file.display()
        );
        let mut src = ProcfsSource::new(0.002);
        let t0 = Instant::now();
        let mut child = std::process::Command::new("sh")
            .arg("-c")
            .arg(&script)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("sh runs");
        let pid = child.id();
        src.attach(pid, t0).expect("attach");
        let mut input = child.stdin.take().unwrap();
        let chunk = vec![0x5au8; 64 << 10];
        input.write_all(&chunk).unwrap();
        let seen_open = |src: &ProcfsSource| {
            src.procs
                .values()
                .any(|p| p.files.values().any(|f| f.phase.path.ends_with("/f")))
        };
        let deadline = Instant::now() + std::time::Duration::from_secs(30);
        while !seen_open(&src) {
            assert!(Instant::now() < deadline, "no tick saw dd's file in 30 s");
            std::thread::sleep(std::time::Duration::from_millis(2));
            src.sample();
        }
        let feeder = std::thread::spawn(move || {
            for _ in 1..512 {
                input.write_all(&chunk).unwrap();
            }
        });
        let zombie = std::thread::spawn(move || wait_zombie(pid));
        while !zombie.is_finished() {
            src.sample();
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        zombie.join().unwrap();
        feeder.join().unwrap();
        src.exited(pid);
        assert!(child.wait().expect("reap sh").success());
        let obs = src.finish();
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(std::fs::metadata(&file).map(|m| m.len()).ok(), None);
        let written: u64 = obs
            .phases
            .iter()
            .filter(|p| p.path.ends_with("/f"))
            .map(|p| p.write_bytes)
            .sum();
        assert_eq!(written, 512 * 65536, "{obs:#?}");
    }

    /// A fresh directory under the temporary directory.
    pub(super) fn tempfile_dir(what: &str) -> std::path::PathBuf {
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "candor-audit-procfs-{what}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).expect("a temporary directory");
        dir
    }
}
