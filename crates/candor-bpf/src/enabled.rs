//! The loader: loads bpf/candor.bpf.c (compiled by build.rs) with aya, attaches it to the
//! tracepoints listed by `probe::tracepoints`, and copies the maps out. Only loader code
//! lives here; everything it reads is decoded by pure functions elsewhere.

use crate::probe::{self, Attach, TracepointState};
use crate::raw::{
    BlkFileKey, BlkFileStat, BlkKey, BlkStat, ChanKey, ChanLost, ChanStat, FdKey, FileKey,
    FileStat, L2Hist, LostKey, RawPhase, RawSnapshot, SysStart, SysStat, TreeIo, NCHAN, NDIAG,
    SLOT_NAMES,
};
use crate::{TraceError, TraceOptions, Unavailable};
use aya::maps::{HashMap, MapData, PerCpuArray, RingBuf};
use aya::programs::tp_btf::BtfTracePointLink;
use aya::programs::{BtfTracePoint, TracePoint};
use aya::Btf;
use aya::{Ebpf, EbpfLoader};
use std::collections::HashSet;
use std::os::fd::AsFd;

static OBJECT: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/candor.bpf.o"));

pub fn built() -> Result<(), String> {
    Ok(())
}

/// The kernel's BTF, parsed on first need into `slot` (the typed tracepoints are loaded
/// against it); the caller drops it once the programs are loaded (it takes megabytes).
fn kernel_btf(slot: &mut Option<Btf>) -> Result<&Btf, String> {
    if slot.is_none() {
        *slot = Some(Btf::from_sys_fs().map_err(|e| format!("reading the kernel's BTF: {e}"))?);
    }
    slot.as_ref()
        .ok_or_else(|| "reading the kernel's BTF failed".to_string())
}

pub struct Loaded {
    ebpf: Ebpf,
    ring: RingBuf<MapData>,
    skipped: Vec<(String, String)>,
    quiet: [u8; 16],
    syscalls: bool,
    /// The counting program attached on demand (`count_syscalls`).
    counting: OnDemand,
    /// With `TraceOptions::cache_inserts_on_demand`, the page-insertion program
    /// (`count_cache_inserts`); None when it is attached throughout.
    inserting: Option<OnDemand>,
    /// With `TraceOptions::dirtying_suspendable`, the dirtying program and who needs or
    /// suspends it (`count_dirtying`, `suspend_dirtying`); None when it is attached
    /// throughout.
    dirtying: Option<Dirtying>,
    /// The count of the set's processes that had ended at the last look through `fds`
    /// for their files (None before the first).
    exits_seen: Option<u64>,
    /// The programs' recursion misses at the last reading that asked for them (a reading
    /// costs one system call per program).
    skipped_runs: std::cell::Cell<u64>,
}

/// A program attached while some caller needs it: how many do, and its link while attached.
#[derive(Default)]
struct OnDemand {
    demand: u32,
    link: Option<BtfTracePointLink>,
}

impl OnDemand {
    /// `on`: one more caller needs `program` on the typed tracepoint `category:hook`
    /// (attached for the first); `!on`: one lets go (detached after the last).
    fn ask(
        &mut self,
        ebpf: &mut Ebpf,
        program: &str,
        (category, hook): (&str, &str),
        on: bool,
    ) -> Result<(), TraceError> {
        if !on {
            self.demand = self.demand.saturating_sub(1);
            if self.demand == 0 {
                self.link = None;
            }
            return Ok(());
        }
        self.demand += 1;
        if self.demand > 1 {
            return Ok(());
        }
        match attach_btf(ebpf, program, hook) {
            Ok(link) => {
                self.link = Some(link);
                Ok(())
            }
            Err(why) => {
                self.demand = 0;
                Err(TraceError(format!("attaching {category}:{hook}: {why}")))
            }
        }
    }

    fn attached(&self) -> bool {
        self.link.is_some()
    }
}

/// Loads `program` (the first time) for the typed tracepoint `hook` and attaches it; the
/// link detaches it when dropped.
fn attach_btf(ebpf: &mut Ebpf, program: &str, hook: &str) -> Result<BtfTracePointLink, String> {
    let prog = ebpf
        .program_mut(program)
        .ok_or_else(|| format!("program {program} missing"))?;
    let tp: &mut BtfTracePoint = prog.try_into().map_err(|e| format!("{e}"))?;
    if tp.fd().is_err() {
        let mut btf = None;
        tp.load(hook, kernel_btf(&mut btf)?)
            .map_err(|e| verifier_message(&e))?;
    }
    let id = tp.attach().map_err(|e| chain(&e))?;
    tp.take_link(id).map_err(|e| chain(&e))
}

/// The dirtying program, attached unless a caller suspends it and none needs it: pages
/// dirtied outside any test (the files' layout, another rank's writes) keep their marks.
#[derive(Default)]
struct Dirtying {
    needed: u32,
    suspended: u32,
    link: Option<BtfTracePointLink>,
}

impl Dirtying {
    /// Attaches or detaches the program to match the callers' wishes.
    fn apply(&mut self, ebpf: &mut Ebpf) -> Result<(), TraceError> {
        let want = self.suspended == 0 || self.needed > 0;
        if !want {
            self.link = None;
        } else if self.link.is_none() {
            let link = attach_btf(ebpf, probe::DIRTYING_PROGRAM, "writeback_dirty_folio").map_err(
                |why| TraceError(format!("attaching writeback:writeback_dirty_folio: {why}")),
            )?;
            self.link = Some(link);
        }
        Ok(())
    }
}

/// The filesystems whose inodes the programs key as user space can: the superblock is the
/// mount's (mountinfo's device is its `s_dev`) and the inode that takes the dirtied pages
/// is the file's own (not a stacked filesystem's, such as overlayfs's upper inode).
const KEYED_FS: &[&str] = &["ext2", "ext3", "ext4", "xfs", "btrfs", "f2fs"];

/// The key the programs give `path`'s inode in `wb_inodes`: its superblock's device, in the
/// kernel's own encoding (major << 20 | minor), and its number; from statx's mount id and
/// inode number and the mount's line in /proc/self/mountinfo (stat's st_dev is not the
/// superblock's on btrfs, whose subvolumes each have a device of their own). None when the
/// file or its mount cannot be found, or its filesystem is not one of `KEYED_FS`.
pub(crate) fn inode_key(path: &std::path::Path) -> Option<(u32, u64)> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: statx is plain integers; all-zero is a valid value.
    let mut st: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated path and a buffer that outlives the call.
    let rc = unsafe {
        libc::statx(
            libc::AT_FDCWD,
            c.as_ptr(),
            libc::AT_STATX_SYNC_AS_STAT,
            libc::STATX_INO | libc::STATX_MNT_ID,
            &mut st,
        )
    };
    if rc != 0 || st.stx_mask & libc::STATX_MNT_ID == 0 {
        return None;
    }
    let mounts = candor_procfs::Kernel::system().mountinfo().ok()?;
    let m = mounts.iter().find(|m| m.mount_id == st.stx_mnt_id)?;
    if !KEYED_FS.contains(&m.fs_type.as_str()) || m.major >= 1 << 12 || m.minor >= 1 << 20 {
        return None;
    }
    Some(((m.major << 20) | m.minor, st.stx_ino))
}

/// A thread name as the kernel stores it (15 bytes and a NUL); all zero for none.
fn quiet_comm(name: Option<&str>) -> [u8; 16] {
    let mut c = [0u8; 16];
    if let Some(n) = name {
        let b = n.as_bytes();
        let len = b.len().min(15);
        c[..len].copy_from_slice(&b[..len]);
    }
    c
}

/// A program's `recursion_misses` (BPF_OBJ_GET_INFO_BY_FD); None if the kernel says no.
fn recursion_misses(fd: std::os::fd::BorrowedFd<'_>) -> Option<u64> {
    use std::os::fd::AsRawFd;
    // The `info` member of union bpf_attr for BPF_OBJ_GET_INFO_BY_FD.
    #[repr(C)]
    struct InfoByFd {
        bpf_fd: u32,
        info_len: u32,
        info: u64,
    }
    // SAFETY: bpf_prog_info is plain integers; all-zero is a valid value.
    let mut info: aya_obj::generated::bpf_prog_info = unsafe { std::mem::zeroed() };
    let mut attr = InfoByFd {
        bpf_fd: fd.as_raw_fd() as u32,
        info_len: std::mem::size_of_val(&info) as u32,
        info: &mut info as *mut _ as u64,
    };
    // SAFETY: attr names a buffer of info_len bytes that lives across the call; the kernel
    // writes at most that many bytes into it.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            aya_obj::generated::bpf_cmd::BPF_OBJ_GET_INFO_BY_FD as libc::c_long,
            &mut attr as *mut InfoByFd,
            std::mem::size_of::<InfoByFd>(),
        )
    };
    (rc == 0).then_some(info.recursion_misses)
}

/// Every element of the per-CPU array `map` (its first `n`), each as its copies (one per
/// possible CPU), in one system call (BPF_MAP_LOOKUP_BATCH, Linux 5.6): a tick of the
/// audit read its 38 counters with one lookup each. None when the kernel refuses the batch
/// (the caller then reads element by element).
fn percpu_array_all<T: aya::Pod + Copy>(map: &aya::maps::Map, n: u32) -> Option<Vec<Vec<T>>> {
    use std::os::fd::AsRawFd;
    let aya::maps::Map::PerCpuArray(data) = map else {
        return None;
    };
    let cpus = aya::util::nr_cpus().ok()?;
    // The kernel gives each CPU's copy 8-byte aligned.
    let stride = std::mem::size_of::<T>().div_ceil(8) * 8;
    let mut keys = vec![0u32; n as usize];
    let mut values = vec![0u8; n as usize * cpus * stride];
    let mut out_batch = 0u32;
    // The `batch` member of union bpf_attr.
    #[repr(C)]
    struct Batch {
        in_batch: u64,
        out_batch: u64,
        keys: u64,
        values: u64,
        count: u32,
        map_fd: u32,
        elem_flags: u64,
        flags: u64,
    }
    let mut attr = Batch {
        in_batch: 0,
        out_batch: &mut out_batch as *mut u32 as u64,
        keys: keys.as_mut_ptr() as u64,
        values: values.as_mut_ptr() as u64,
        count: n,
        map_fd: data.fd().as_fd().as_raw_fd() as u32,
        elem_flags: 0,
        flags: 0,
    };
    // SAFETY: keys holds `count` u32s and values `count` elements of every CPU's copy at
    // the kernel's stride; both live across the call, which writes at most that much.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            aya_obj::generated::bpf_cmd::BPF_MAP_LOOKUP_BATCH as libc::c_long,
            &mut attr as *mut Batch,
            std::mem::size_of::<Batch>(),
        )
    };
    // The end of the array reached is ENOENT, with the elements copied counted.
    let ended = rc != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ENOENT);
    if (rc != 0 && !ended) || attr.count != n {
        return None;
    }
    let mut out = Vec::with_capacity(n as usize);
    for (i, key) in keys.iter().enumerate() {
        if *key as usize != i {
            return None;
        }
        let copies = (0..cpus)
            .map(|c| {
                let at = (i * cpus + c) * stride;
                // SAFETY: at + size_of::<T>() is inside `values` (stride >= its size), and
                // T is plain data, valid for any bytes.
                unsafe { std::ptr::read_unaligned(values.as_ptr().add(at) as *const T) }
            })
            .collect();
        out.push(copies);
    }
    Some(out)
}

fn err(what: &str, e: impl std::fmt::Display) -> TraceError {
    TraceError(format!("{what}: {e}"))
}

impl Loaded {
    pub fn load(opts: &TraceOptions) -> Result<Loaded, Unavailable> {
        probe::ensure_tracefs();
        let host = probe::probe();
        if let Some(why) = host.blocker() {
            return Err(why);
        }
        let phases = u32::from(opts.phases);
        let quiet = quiet_comm(opts.quiet_thread_name.as_deref());
        let record = u8::from(opts.record_except.is_some());
        let record_except = opts.record_except.unwrap_or(0);
        let mut ebpf = EbpfLoader::new()
            .override_global("candor_phases", &phases, true)
            .override_global("candor_quiet_comm", &quiet, true)
            .override_global("candor_record", &record, true)
            .override_global("candor_record_self", &record_except, true)
            // Not recording, the recording's ring buffer is one page.
            .map_max_entries("rec_events", if record == 1 { 16 << 20 } else { 4096 })
            .load(OBJECT)
            .map_err(|e| Unavailable::Load(format!("{e:#}")))?;
        let mut loaded = Loaded {
            ring: RingBuf::try_from(
                ebpf.take_map("phases")
                    .ok_or_else(|| Unavailable::Load("map phases missing".into()))?,
            )
            .map_err(|e| Unavailable::Load(e.to_string()))?,
            ebpf,
            skipped: Vec::new(),
            quiet,
            syscalls: opts.syscalls,
            counting: OnDemand::default(),
            inserting: opts.cache_inserts_on_demand.then(OnDemand::default),
            dirtying: opts.dirtying_suspendable.then(Dirtying::default),
            exits_seen: None,
            skipped_runs: std::cell::Cell::new(0),
        };
        for pid in &opts.seed_pids {
            loaded.add_pid(*pid).map_err(|e| Unavailable::Load(e.0))?;
        }
        let mut programs_loaded = HashSet::new();
        let mut btf: Option<Btf> = None;
        for status in host.tracepoints {
            let spec = status.spec;
            let program = if probe::is_syscall_program(spec.program) {
                match (opts.syscalls, opts.empty_syscall_programs) {
                    (false, _) => continue,
                    (true, true) => probe::empty_program(spec.program),
                    (true, false) => spec.program,
                }
            } else if probe::is_channel_program(spec.program) && !opts.phases
                || spec.program == probe::CACHE_INSERT_PROGRAM && opts.cache_inserts_on_demand
                || spec.program == probe::DIRTYING_PROGRAM && opts.dirtying_suspendable
            {
                continue;
            } else {
                spec.program
            };
            let attach = |ebpf: &mut Ebpf,
                          loaded_set: &mut HashSet<&'static str>,
                          btf: &mut Option<Btf>|
             -> Result<(), String> {
                if status.state == TracepointState::Missing {
                    return Err("not in this kernel".into());
                }
                if let TracepointState::Layout(why) = &status.state {
                    return Err(why.clone());
                }
                let prog = ebpf
                    .program_mut(program)
                    .ok_or_else(|| format!("program {program} missing"))?;
                let first = loaded_set.insert(program);
                match spec.attach {
                    Attach::Tracepoint => {
                        let tp: &mut TracePoint = prog.try_into().map_err(|e| format!("{e}"))?;
                        if first {
                            tp.load().map_err(|e| verifier_message(&e))?;
                        }
                        tp.attach(spec.category, &spec.name)
                            .map_err(|e| chain(&e))?;
                    }
                    Attach::Btf => {
                        let tp: &mut BtfTracePoint = prog.try_into().map_err(|e| format!("{e}"))?;
                        if first {
                            tp.load(&spec.name, kernel_btf(btf)?)
                                .map_err(|e| verifier_message(&e))?;
                        }
                        tp.attach().map_err(|e| chain(&e))?;
                    }
                }
                Ok(())
            };
            if let Err(why) = attach(&mut loaded.ebpf, &mut programs_loaded, &mut btf) {
                if spec.required {
                    return Err(Unavailable::Attach(spec.full_name(), why));
                }
                loaded.skipped.push((spec.full_name(), why));
            }
        }
        // A suspendable dirtying program starts attached, like the others.
        if let Some(d) = loaded.dirtying.as_mut() {
            if let Err(e) = d.apply(&mut loaded.ebpf) {
                loaded
                    .skipped
                    .push(("writeback:writeback_dirty_folio".into(), e.0));
            }
        }
        Ok(loaded)
    }

    pub fn traces_syscalls(&self) -> bool {
        self.syscalls
    }

    /// Attaches the counting program for a caller that needs the calls counted (`on`), or
    /// lets it go (`!on`): attached on the first request, detached when the last one lets
    /// go. A tracer loaded with `TraceOptions::syscalls` counts them throughout.
    pub fn take_recording(
        &mut self,
        sink: Box<dyn FnMut(crate::record::RawCall) + Send>,
    ) -> Result<crate::record::Recording, TraceError> {
        let ring = RingBuf::try_from(
            self.ebpf
                .take_map("rec_events")
                .ok_or_else(|| TraceError("the recording was taken already".into()))?,
        )
        .map_err(|e| err("rec_events", e))?;
        let lost = aya::maps::Array::try_from(
            self.ebpf
                .take_map("rec_lost")
                .ok_or_else(|| TraceError("map rec_lost missing".into()))?,
        )
        .map_err(|e| err("rec_lost", e))?;
        crate::record::spawn(ring, lost, sink)
            .map_err(|e| TraceError(format!("cannot start the recorder's thread: {e}")))
    }

    pub fn count_syscalls(&mut self, on: bool) -> Result<(), TraceError> {
        if self.syscalls {
            return Ok(());
        }
        self.counting.ask(
            &mut self.ebpf,
            probe::COUNTING_PROGRAM,
            ("raw_syscalls", "sys_exit"),
            on,
        )
    }

    pub fn count_cache_inserts(&mut self, on: bool) -> Result<(), TraceError> {
        match self.inserting.as_mut() {
            None => Ok(()),
            Some(d) => d.ask(
                &mut self.ebpf,
                probe::CACHE_INSERT_PROGRAM,
                ("filemap", "mm_filemap_add_to_page_cache"),
                on,
            ),
        }
    }

    pub fn counts_cache_inserts(&self) -> bool {
        self.inserting.as_ref().is_none_or(OnDemand::attached)
    }

    pub fn count_dirtying(&mut self, on: bool) -> Result<(), TraceError> {
        match self.dirtying.as_mut() {
            None => Ok(()),
            Some(d) => {
                d.needed = if on {
                    d.needed + 1
                } else {
                    d.needed.saturating_sub(1)
                };
                d.apply(&mut self.ebpf)
            }
        }
    }

    pub fn suspend_dirtying(&mut self, on: bool) -> Result<(), TraceError> {
        match self.dirtying.as_mut() {
            None => Ok(()),
            Some(d) => {
                d.suspended = if on {
                    d.suspended + 1
                } else {
                    d.suspended.saturating_sub(1)
                };
                d.apply(&mut self.ebpf)
            }
        }
    }

    pub fn counts_dirtying(&self) -> bool {
        self.dirtying.as_ref().is_none_or(|d| d.link.is_some())
    }

    pub fn mark_written(&mut self, path: &std::path::Path) -> Result<bool, TraceError> {
        let Some((dev, ino)) = inode_key(path) else {
            return Ok(false);
        };
        let map = self
            .ebpf
            .map_mut("wb_inodes")
            .ok_or_else(|| TraceError("map wb_inodes missing".into()))?;
        let mut marks: HashMap<&mut MapData, crate::raw::FileKey, u8> =
            HashMap::try_from(map).map_err(|e| err("wb_inodes", e))?;
        let key = crate::raw::FileKey { dev, pad: 0, ino };
        // SET_OWN (1): the set's own mark, which wins over any other.
        marks
            .insert(key, 1, 0)
            .map_err(|e| err("wb_inodes insert", e))?;
        Ok(true)
    }

    pub fn counts_syscalls(&self) -> bool {
        self.syscalls || self.counting.attached()
    }

    /// Runs the kernel skipped, summed over the loaded programs. The kernel does not run a
    /// program inside itself: when an interrupt fires a tracepoint whose program that CPU
    /// is already running, the event goes uncounted and the kernel adds one to the
    /// program's `recursion_misses`.
    fn skipped_runs(&self) -> u64 {
        self.ebpf
            .programs()
            .filter_map(|(_, p)| p.fd().ok())
            .filter_map(|fd| recursion_misses(fd.as_fd()))
            .sum()
    }

    pub fn skipped(&self) -> Vec<(String, String)> {
        self.skipped.clone()
    }

    pub fn add_pid(&mut self, pid: u32) -> Result<(), TraceError> {
        // The process first, so the fork program gives threads created from now on their
        // syscall slot; then a slot for each thread that exists already.
        self.u32_hash::<u8>("tracked")?
            .insert(pid, 1, 0)
            .map_err(|e| err("tracked insert", e))?;
        self.set_changed()?;
        let quiet = self.quiet;
        let mut starts = self.u32_hash::<SysStart>("starts")?;
        let mut tids = threads_of(pid);
        if tids.is_empty() {
            tids.push(pid);
        }
        for tid in tids {
            if quiet[0] != 0 && thread_comm(pid, tid) == quiet {
                continue;
            }
            // BPF_NOEXIST: a thread already in a call keeps its start time.
            let _ = starts.insert(tid, SysStart::default(), 1);
        }
        Ok(())
    }

    pub fn add_job_pid(&mut self, pid: u32) -> Result<(), TraceError> {
        // BPF_NOEXIST: a process of the set itself stays the set's. No syscall slots: the
        // job's calls are not the set's figures.
        match self.u32_hash::<u8>("tracked")?.insert(pid, 2, 1) {
            Ok(()) => self.set_changed(),
            Err(aya::maps::MapError::SyscallError(e))
                if e.io_error.raw_os_error() == Some(libc::EEXIST) =>
            {
                Ok(())
            }
            Err(e) => Err(err("tracked insert", e)),
        }
    }

    pub fn quiet_thread(&mut self, tid: u32) -> Result<(), TraceError> {
        let _ = self.u32_hash::<SysStart>("starts")?.remove(&tid);
        Ok(())
    }

    pub fn remove_pid(&mut self, pid: u32) -> Result<(), TraceError> {
        // Already gone (the process ended) is fine.
        let _ = self.u32_hash::<u8>("tracked")?.remove(&pid);
        self.set_changed()?;
        let mut starts = self.u32_hash::<SysStart>("starts")?;
        for tid in threads_of(pid).into_iter().chain([pid]) {
            let _ = starts.remove(&tid);
        }
        Ok(())
    }

    /// One of the maps keyed by a process or thread id, for writing.
    /// Moves user space's generation of the set (`set_gen` slot 1): the programs' memos of
    /// who is in the set are asked again. Called after every change this side makes.
    fn set_changed(&mut self) -> Result<(), TraceError> {
        let map = self
            .ebpf
            .map_mut("set_gen")
            .ok_or_else(|| TraceError("map set_gen missing".into()))?;
        let mut gen: aya::maps::Array<&mut MapData, u64> =
            aya::maps::Array::try_from(map).map_err(|e| err("set_gen", e))?;
        let now = gen.get(&1, 0).map_err(|e| err("set_gen", e))?;
        gen.set(1, now.wrapping_add(1), 0)
            .map_err(|e| err("set_gen", e))
    }

    fn u32_hash<V: aya::Pod>(
        &mut self,
        name: &str,
    ) -> Result<HashMap<&mut MapData, u32, V>, TraceError> {
        let map = self
            .ebpf
            .map_mut(name)
            .ok_or_else(|| TraceError(format!("map {name} missing")))?;
        HashMap::try_from(map).map_err(|e| err(name, e))
    }

    fn map(&self, name: &str) -> Result<&aya::maps::Map, TraceError> {
        self.ebpf
            .map(name)
            .ok_or_else(|| TraceError(format!("map {name} missing")))
    }

    pub fn tracked(&self) -> Result<Vec<u32>, TraceError> {
        let m: HashMap<_, u32, u8> =
            HashMap::try_from(self.map("tracked")?).map_err(|e| err("tracked", e))?;
        // The job's other processes (value 2) are not the set.
        Ok(m.iter()
            .filter_map(Result::ok)
            .filter(|(_, v)| *v == 1)
            .map(|(k, _)| k)
            .collect())
    }

    /// Requests issued and not yet completed, as the programs count them, per device
    /// (kernel dev_t).
    pub fn inflight(&self) -> Result<Vec<(u32, u64)>, TraceError> {
        let m: HashMap<_, u32, u64> =
            HashMap::try_from(self.map("inflight")?).map_err(|e| err("inflight", e))?;
        Ok(m.iter().filter_map(Result::ok).collect())
    }

    pub fn read(&self) -> Result<RawSnapshot, TraceError> {
        self.read_with(true, true)
    }

    /// `read`, with the per-file totals and open phases only when `files`: reading them
    /// costs two system calls per file the set has touched, so a tracer that follows
    /// thousands of files (an audit) leaves them out of its periodic readings.
    /// `runs` false keeps the programs' recursion misses as last read instead of asking
    /// each program again (an audit's periodic readings; its first and last ask).
    pub fn read_with(&self, want_files: bool, runs: bool) -> Result<RawSnapshot, TraceError> {
        let taken_ns = crate::monotonic_ns();
        let nslots = SLOT_NAMES.len() as u32;
        let sys = match percpu_array_all::<SysStat>(self.map("sys_stats")?, nslots) {
            Some(all) => all.iter().map(|v| crate::raw::sum_sys(v.iter())).collect(),
            None => {
                let sys_map: PerCpuArray<_, SysStat> =
                    PerCpuArray::try_from(self.map("sys_stats")?)
                        .map_err(|e| err("sys_stats", e))?;
                let mut sys = Vec::with_capacity(SLOT_NAMES.len());
                for i in 0..nslots {
                    let v = sys_map.get(&i, 0).map_err(|e| err("sys_stats", e))?;
                    sys.push(crate::raw::sum_sys(v.iter()));
                }
                sys
            }
        };
        let lseek_map: PerCpuArray<_, L2Hist> = PerCpuArray::try_from(self.map("lseek_offsets")?)
            .map_err(|e| err("lseek_offsets", e))?;
        let mut lseek = L2Hist::default();
        for cpu in lseek_map
            .get(&0, 0)
            .map_err(|e| err("lseek_offsets", e))?
            .iter()
        {
            for (a, b) in lseek.b.iter_mut().zip(cpu.b.iter()) {
                *a += *b;
            }
        }
        let misses_map: PerCpuArray<_, u64> =
            PerCpuArray::try_from(self.map("cache_misses")?).map_err(|e| err("cache_misses", e))?;
        let cache_misses = misses_map
            .get(&0, 0)
            .map_err(|e| err("cache_misses", e))?
            .iter()
            .sum();
        let mut diag = [0u64; NDIAG as usize];
        match percpu_array_all::<u64>(self.map("diag")?, NDIAG) {
            Some(all) => {
                for (d, v) in diag.iter_mut().zip(&all) {
                    *d = v.iter().sum();
                }
            }
            None => {
                let diag_map: PerCpuArray<_, u64> =
                    PerCpuArray::try_from(self.map("diag")?).map_err(|e| err("diag", e))?;
                for (i, d) in diag.iter_mut().enumerate() {
                    *d = diag_map
                        .get(&(i as u32), 0)
                        .map_err(|e| err("diag", e))?
                        .iter()
                        .sum();
                }
            }
        }
        // Per-file totals take a phase's counters when it closes: read the totals, the
        // open phases, and the totals again, and retry if a close came in between (so no
        // phase is counted twice or missed).
        let files_map: HashMap<_, FileKey, FileStat> =
            HashMap::try_from(self.map("files")?).map_err(|e| err("files", e))?;
        let read_files = || {
            let mut v: Vec<(FileKey, FileStat)> = files_map.iter().filter_map(Result::ok).collect();
            v.sort_by_key(|(k, _)| *k);
            v
        };
        let (mut files, mut open) = (Vec::new(), Vec::new());
        if want_files {
            files = read_files();
            open = self.open()?;
        }
        for _ in 0..if want_files { 8 } else { 0 } {
            let again = read_files();
            let closes = |v: &[(FileKey, FileStat)]| v.iter().map(|(_, s)| s.closes).sum::<u64>();
            if closes(&again) == closes(&files) {
                break;
            }
            files = again;
            open = self.open()?;
        }
        let blk_map: HashMap<_, BlkKey, BlkStat> =
            HashMap::try_from(self.map("blk_stats")?).map_err(|e| err("blk_stats", e))?;
        let blk = blk_map.iter().filter_map(Result::ok).collect();
        if runs {
            self.skipped_runs.set(self.skipped_runs());
        }
        let skipped_runs = self.skipped_runs.get();
        Ok(RawSnapshot {
            taken_ns,
            done_ns: crate::monotonic_ns(),
            skipped_runs,
            sys,
            lseek,
            cache_misses,
            diag,
            files,
            open,
            blk,
        })
    }

    /// Closed phases from the ring buffer, plus the files left open by processes that
    /// have left the tracked set (removed from the kernel's table).
    pub fn drain(&mut self) -> Result<Vec<RawPhase>, TraceError> {
        let mut out = Vec::new();
        while let Some(item) = self.ring.next() {
            if let Some(p) = RawPhase::from_bytes(&item) {
                out.push(p);
            }
        }
        // Files left open by processes that ended: looked for only when one has ended
        // since the last look (a look reads every open file of the set, a system call
        // each).
        let exits = self.diag_sum(crate::raw::DIAG_SET_EXITS)?;
        if self.exits_seen == Some(exits) {
            out.sort_by_key(|p| (p.open_ns, p.tgid, p.fd));
            return Ok(out);
        }
        self.exits_seen = Some(exits);
        let tracked: HashSet<u32> = self.tracked()?.into_iter().collect();
        let map = self
            .ebpf
            .map_mut("fds")
            .ok_or_else(|| TraceError("map fds missing".into()))?;
        let mut fds: HashMap<_, FdKey, RawPhase> =
            HashMap::try_from(map).map_err(|e| err("fds", e))?;
        let ended: Vec<FdKey> = fds
            .keys()
            .filter_map(Result::ok)
            .filter(|k| !tracked.contains(&k.tgid))
            .collect();
        for k in ended {
            if let Ok(p) = fds.get(&k, 0) {
                out.push(p);
            }
            let _ = fds.remove(&k);
        }
        out.sort_by_key(|p| (p.open_ns, p.tgid, p.fd));
        Ok(out)
    }

    /// Bytes moved without read or write calls, per process, file and channel, and per
    /// channel what could not be given to a file.
    #[allow(clippy::type_complexity)]
    pub fn channels(&self) -> Result<(Vec<(ChanKey, ChanStat)>, Vec<ChanLost>), TraceError> {
        let files: HashMap<_, ChanKey, ChanStat> =
            HashMap::try_from(self.map("chan_files")?).map_err(|e| err("chan_files", e))?;
        let mut v: Vec<(ChanKey, ChanStat)> = files.iter().filter_map(Result::ok).collect();
        v.sort_by_key(|(k, _)| *k);
        let lost_map: PerCpuArray<_, ChanLost> =
            PerCpuArray::try_from(self.map("chan_lost")?).map_err(|e| err("chan_lost", e))?;
        let mut lost = Vec::with_capacity(NCHAN as usize);
        for i in 0..NCHAN {
            let mut l = ChanLost::default();
            for c in lost_map.get(&i, 0).map_err(|e| err("chan_lost", e))?.iter() {
                l.calls += c.calls;
                l.bytes += c.bytes;
            }
            lost.push(l);
        }
        Ok((v, lost))
    }

    /// Phases that found the ring buffer full, merged per process and file (copies: they
    /// stay in the table, which only grows, so a merge never races with a reading).
    pub fn lost(&self) -> Result<Vec<RawPhase>, TraceError> {
        let m: HashMap<_, LostKey, RawPhase> =
            HashMap::try_from(self.map("lost_phases")?).map_err(|e| err("lost_phases", e))?;
        Ok(m.iter().filter_map(Result::ok).map(|(_, v)| v).collect())
    }

    /// The tracked set's block bytes per file and direction (each request counted once).
    pub fn block_files(&self) -> Result<Vec<(BlkFileKey, BlkFileStat)>, TraceError> {
        let m: HashMap<_, BlkFileKey, BlkFileStat> =
            HashMap::try_from(self.map("blk_files")?).map_err(|e| err("blk_files", e))?;
        Ok(m.iter().filter_map(Result::ok).collect())
    }

    /// Per process: calls no phase holds, and the kernel's I/O counters at thread exit.
    pub fn tree_io(&self) -> Result<Vec<(u32, TreeIo)>, TraceError> {
        let m: HashMap<_, u32, TreeIo> =
            HashMap::try_from(self.map("tree_io")?).map_err(|e| err("tree_io", e))?;
        Ok(m.iter().filter_map(Result::ok).collect())
    }

    /// One diagnostic counter, summed over the CPUs.
    fn diag_sum(&self, which: u32) -> Result<u64, TraceError> {
        let m: PerCpuArray<_, u64> =
            PerCpuArray::try_from(self.map("diag")?).map_err(|e| err("diag", e))?;
        Ok(m.get(&which, 0).map_err(|e| err("diag", e))?.iter().sum())
    }

    /// Files the tracked set has open now (copies; they stay in the kernel's table).
    pub fn open(&self) -> Result<Vec<RawPhase>, TraceError> {
        let fds: HashMap<_, FdKey, RawPhase> =
            HashMap::try_from(self.map("fds")?).map_err(|e| err("fds", e))?;
        Ok(fds.iter().filter_map(Result::ok).map(|(_, v)| v).collect())
    }
}

/// The thread ids of a process (empty when it is gone).
fn threads_of(pid: u32) -> Vec<u32> {
    candor_procfs::Kernel::system()
        .pid_tasks(candor_procfs::Pid::Id(pid))
        .unwrap_or_default()
}

/// A thread's name, in the kernel's 16-byte form.
fn thread_comm(pid: u32, tid: u32) -> [u8; 16] {
    let name = candor_procfs::Kernel::system()
        .task_comm(candor_procfs::Pid::Id(pid), tid)
        .unwrap_or_default();
    quiet_comm(Some(&name))
}

/// An error with its causes, on one line.
fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}

/// The verifier's log can be thousands of lines; keep the end, where the reason is.
fn verifier_message(e: &aya::programs::ProgramError) -> String {
    let full = format!("{e:#}");
    let lines: Vec<&str> = full.lines().collect();
    let start = lines.len().saturating_sub(6);
    lines[start..].join(" / ")
}
