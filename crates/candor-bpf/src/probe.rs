//! What this host supports for the BPF witness: privileges, kernel BTF, tracefs, and each
//! tracepoint the programs use with the record layout they expect. The table of
//! tracepoints here is also what the loader attaches, so the two never disagree.

use candor_procfs::paths;
use std::path::{Path, PathBuf};

/// How a program is attached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Attach {
    /// A classic tracepoint: the program reads the event's record (checked layout).
    Tracepoint,
    /// A raw tracepoint typed by the kernel's BTF (`tp_btf`): the program gets the hook's
    /// arguments directly (no perf record is built), as typed pointers it reads with plain
    /// loads instead of a helper call per field.
    Btf,
}

/// One tracepoint the programs attach to.
#[derive(Clone, Debug)]
pub struct TracepointSpec {
    pub attach: Attach,
    pub category: &'static str,
    pub name: String,
    /// The BPF program (function name in bpf/candor.bpf.c) attached to it.
    pub program: &'static str,
    /// Without it the tracer does not load; optional ones only lose a detail.
    pub required: bool,
    /// (field, offset) pairs the program reads; checked against the format file.
    pub fields: Vec<(&'static str, usize)>,
    /// What is lost when an optional tracepoint is missing.
    pub purpose: &'static str,
}

impl TracepointSpec {
    pub fn full_name(&self) -> String {
        format!("{}:{}", self.category, self.name)
    }
}

/// The raw_syscalls tracepoints and their programs: what `TraceOptions::syscalls` turns on.
const SYSCALL_PROGRAMS: [(&str, &str); 2] = [
    ("sys_enter", "candor_sys_enter"),
    ("sys_exit", "candor_sys_exit"),
];

/// The program `Tracer::count_syscalls` attaches alone on raw_syscalls:sys_exit: counts,
/// errors and bytes per call kind, no time.
pub(crate) const COUNTING_PROGRAM: &str = "candor_sys_count";

/// The program that counts pages added to the page cache: attached on demand when the
/// tracer is loaded with `TraceOptions::cache_inserts_on_demand`.
pub(crate) const CACHE_INSERT_PROGRAM: &str = "candor_cache_add";

/// The program that marks the inodes the set dirties (whose writeback is then the set's):
/// detached while suspended when the tracer is loaded with
/// `TraceOptions::dirtying_suspendable`.
pub(crate) const DIRTYING_PROGRAM: &str = "candor_dirty_folio";

/// The do-nothing twin of a per-syscall program (`TraceOptions::empty_syscall_programs`).
pub fn empty_program(program: &'static str) -> &'static str {
    match program {
        "candor_sys_enter" => "candor_sys_enter_null",
        "candor_sys_exit" => "candor_sys_exit_null",
        other => other,
    }
}

/// Whether `program` is one of the per-syscall programs.
pub fn is_syscall_program(program: &str) -> bool {
    SYSCALL_PROGRAMS.iter().any(|(_, p)| *p == program)
}

/// The I/O syscalls the programs decode into file phases (on raw_syscalls:sys_enter/sys_exit;
/// others are ignored): the raw tables' slots before the page-fault one. The metadata slots
/// after it (`raw::SLOT_FIRST_META`..) are counted and timed, never a phase.
pub const SYSCALLS: &[&str] = crate::raw::SLOT_NAMES
    .split_at(crate::raw::SLOT_PAGE_FAULT)
    .0;

/// Every tracepoint candor's programs use.
pub fn tracepoints() -> Vec<TracepointSpec> {
    let tp =
        |category, name: &str, program, required, fields: &[(&'static str, usize)], purpose| {
            TracepointSpec {
                attach: Attach::Tracepoint,
                category,
                name: name.to_string(),
                program,
                required,
                fields: fields.to_vec(),
                purpose,
            }
        };
    // Raw tracepoints get the hook's arguments, not a record: nothing to check but presence.
    let btf = |category, name: &str, program, required, purpose| TracepointSpec {
        attach: Attach::Btf,
        ..tp(category, name, program, required, &[], purpose)
    };
    // The process set's fork and exit are raw tracepoints too (bpf/process.bpf.h says
    // why). The exit's tracepoint must carry group_dead as its second argument: checked
    // as its classic record's field in the format file.
    let mut v = vec![
        btf(
            "sched",
            "sched_process_fork",
            "candor_fork",
            true,
            "children",
        ),
        TracepointSpec {
            fields: vec![("group_dead", 32)],
            ..btf(
                "sched",
                "sched_process_exit",
                "candor_exit",
                true,
                "process exits",
            )
        },
    ];
    for (name, program) in SYSCALL_PROGRAMS {
        v.push(TracepointSpec {
            attach: Attach::Btf,
            ..tp("raw_syscalls", name, program, true, &[], "syscall counts")
        });
    }
    // The block programs are attached completion first: a request whose issue a program
    // counted (in flight) must have its completion seen too. Attached the other way round,
    // requests issued while the later programs were still being verified stayed "in
    // flight" for good (about 14 with an fsync loop running on the disk).
    v.extend([
        btf(
            "block",
            "block_rq_complete",
            "candor_rq_complete",
            true,
            "device bytes",
        ),
        btf(
            "block",
            "block_rq_requeue",
            "candor_rq_requeue",
            false,
            "requeue accounting",
        ),
        btf(
            "block",
            "block_rq_issue",
            "candor_rq_issue",
            true,
            "device latency",
        ),
        btf(
            "block",
            "block_io_start",
            "candor_io_start",
            true,
            "request owners",
        ),
        btf(
            "filemap",
            "mm_filemap_add_to_page_cache",
            "candor_cache_add",
            true,
            "cache misses",
        ),
        btf(
            "writeback",
            "writeback_dirty_folio",
            "candor_dirty_folio",
            false,
            "writeback attribution",
        ),
        btf(
            "writeback",
            "writeback_single_inode_start",
            "candor_wb_start",
            false,
            "writeback attribution",
        ),
        btf(
            "writeback",
            "writeback_single_inode",
            "candor_wb_end",
            false,
            "writeback attribution",
        ),
        btf(
            "exceptions",
            "page_fault_user",
            "candor_page_fault",
            false,
            "mmap page faults",
        ),
        tp(
            "task",
            "task_rename",
            "candor_rename",
            false,
            &[("pid", 8), ("newcomm", 28)],
            "leaving a named monitor thread out",
        ),
    ]);
    // Asynchronous and mapped I/O per file (phases only: `candor run` never loads them).
    for (category, name, program, purpose) in CHANNEL_PROGRAMS {
        v.push(btf(category, name, program, false, purpose));
    }
    v
}

/// The programs that count I/O moved without read or write calls, per process and file
/// (Linux AIO's are inside the syscall programs): attached only when the tracer keeps
/// phases (`TraceOptions::phases`).
const CHANNEL_PROGRAMS: [(&str, &str, &str, &str); 6] = [
    (
        "io_uring",
        "io_uring_create",
        "candor_uring_create",
        "io_uring bytes per file",
    ),
    (
        "io_uring",
        "io_uring_submit_req",
        "candor_uring_submit",
        "io_uring request start times",
    ),
    (
        "io_uring",
        "io_uring_complete",
        "candor_uring_complete",
        "io_uring bytes per file",
    ),
    (
        "filemap",
        "mm_filemap_map_pages",
        "candor_map_pages",
        "mapped reads per file",
    ),
    (
        "filemap",
        "mm_filemap_fault",
        "candor_map_fault",
        "mapped reads per file",
    ),
    (
        "writeback",
        "writeback_dirty_folio",
        "candor_map_dirty",
        "mapped writes per file",
    ),
];

/// Whether `program` counts asynchronous or mapped I/O (attached with phases only).
pub fn is_channel_program(program: &str) -> bool {
    CHANNEL_PROGRAMS.iter().any(|(_, _, p, _)| *p == program)
}

/// Parses a tracepoint `format` file into (field name, offset, size).
pub fn parse_format(text: &str) -> Vec<(String, usize, usize)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        let Some(rest) = line.strip_prefix("field:") else {
            continue;
        };
        let mut parts = rest.split(';').map(str::trim);
        let decl = parts.next().unwrap_or("");
        let mut offset = None;
        let mut size = None;
        for p in parts {
            if let Some(v) = p.strip_prefix("offset:") {
                offset = v.parse().ok();
            } else if let Some(v) = p.strip_prefix("size:") {
                size = v.parse().ok();
            }
        }
        // "unsigned long args[6]" -> "args"; "__data_loc char[] cmd" -> "cmd"
        let name = decl
            .rsplit(|c: char| c.is_whitespace() || c == '*')
            .next()
            .unwrap_or("")
            .split('[')
            .next()
            .unwrap_or("")
            .to_string();
        if let (Some(o), Some(s)) = (offset, size) {
            out.push((name, o, s));
        }
    }
    out
}

/// Checks a format file against the fields a program reads; Err says what differs.
pub fn check_layout(text: &str, fields: &[(&str, usize)]) -> Result<(), String> {
    let have = parse_format(text);
    for (name, off) in fields {
        match have.iter().find(|(n, _, _)| n == name) {
            Some((_, o, _)) if o == off => {}
            Some((_, o, _)) => {
                return Err(format!("field {name} is at offset {o}, expected {off}"))
            }
            None => return Err(format!("field {name} is missing")),
        }
    }
    Ok(())
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TracepointState {
    Present,
    Missing,
    /// Present with a record layout the programs do not expect.
    Layout(String),
    /// tracefs is not mounted, so it could not be checked.
    Unknown,
}

#[derive(Clone, Debug)]
pub struct TracepointStatus {
    pub spec: TracepointSpec,
    pub state: TracepointState,
}

/// What the host offers the BPF witness.
#[derive(Clone, Debug)]
pub struct HostSupport {
    pub root: bool,
    pub cap_bpf: bool,
    pub cap_perfmon: bool,
    pub cap_sys_admin: bool,
    /// The kernel's BTF exists ([`candor_procfs::paths::BTF_VMLINUX`], needed to relocate kernel struct offsets).
    pub btf: bool,
    /// Where tracefs is mounted, if it is.
    pub tracefs: Option<PathBuf>,
    pub tracepoints: Vec<TracepointStatus>,
    /// Ok when the BPF programs were compiled into this build, else why not.
    pub built: Result<(), String>,
}

impl HostSupport {
    /// Enough privilege to load and attach tracepoint programs.
    pub fn privileged(&self) -> bool {
        self.root || self.cap_sys_admin || (self.cap_bpf && self.cap_perfmon)
    }

    /// Why the tracer cannot load here; None when it can.
    pub fn blocker(&self) -> Option<crate::Unavailable> {
        use crate::Unavailable;
        if let Err(why) = &self.built {
            return Some(Unavailable::NotBuilt(why.clone()));
        }
        if !self.privileged() {
            return Some(Unavailable::NotPermitted);
        }
        if !self.btf {
            return Some(Unavailable::NoBtf);
        }
        for t in &self.tracepoints {
            if !t.spec.required {
                continue;
            }
            match &t.state {
                TracepointState::Missing => {
                    return Some(Unavailable::MissingTracepoint(t.spec.full_name()))
                }
                TracepointState::Layout(why) => {
                    return Some(Unavailable::Layout(t.spec.full_name(), why.clone()))
                }
                TracepointState::Present | TracepointState::Unknown => {}
            }
        }
        None
    }
}

/// The tracefs mount point, if tracefs is mounted at one of its usual places.
pub fn tracefs_path() -> Option<PathBuf> {
    [paths::TRACEFS, paths::TRACEFS_DEBUG]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.join("events").is_dir())
}

/// Mounts tracefs at its place ([`paths::TRACEFS`]) when it is not mounted anywhere (root
/// only).
pub fn ensure_tracefs() -> Option<PathBuf> {
    if let Some(p) = tracefs_path() {
        return Some(p);
    }
    let Ok(target) = std::ffi::CString::new(paths::TRACEFS) else {
        return None;
    };
    let fstype = c"tracefs";
    // SAFETY: all pointers are valid NUL-terminated strings; data may be null.
    let rc = unsafe {
        libc::mount(
            fstype.as_ptr(),
            target.as_ptr(),
            fstype.as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if rc != 0 {
        return None;
    }
    tracefs_path()
}

/// Effective capability bits of this process, from its status.
fn effective_caps() -> u64 {
    candor_procfs::Kernel::system()
        .pid_status(candor_procfs::Pid::Me)
        .ok()
        .and_then(|s| u64::from_str_radix(s.get("CapEff")?, 16).ok())
        .unwrap_or(0)
}

fn state_of(tracefs: Option<&Path>, spec: &TracepointSpec) -> TracepointState {
    let Some(root) = tracefs else {
        return TracepointState::Unknown;
    };
    let dir = root.join("events").join(spec.category).join(&spec.name);
    match std::fs::read_to_string(dir.join("format")) {
        Ok(text) => match check_layout(&text, &spec.fields) {
            Ok(()) => TracepointState::Present,
            Err(why) => TracepointState::Layout(why),
        },
        Err(_) => TracepointState::Missing,
    }
}

/// Asks the host what it supports (reads only; mounts nothing).
pub fn probe() -> HostSupport {
    let caps = effective_caps();
    let bit = |n: u32| caps & (1u64 << n) != 0;
    let tracefs = tracefs_path();
    let tracepoints = tracepoints()
        .into_iter()
        .map(|spec| TracepointStatus {
            state: state_of(tracefs.as_deref(), &spec),
            spec,
        })
        .collect();
    HostSupport {
        // SAFETY: geteuid has no preconditions.
        root: unsafe { libc::geteuid() } == 0,
        cap_sys_admin: bit(21),
        cap_perfmon: bit(38),
        cap_bpf: bit(39),
        btf: Path::new(paths::BTF_VMLINUX).exists(),
        tracefs,
        tracepoints,
        built: crate::imp::built(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RQ_COMPLETE: &str = "name: block_rq_complete
ID: 1234
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:dev_t dev;\toffset:8;\tsize:4;\tsigned:0;
\tfield:sector_t sector;\toffset:16;\tsize:8;\tsigned:0;
\tfield:unsigned int nr_sector;\toffset:24;\tsize:4;\tsigned:0;
\tfield:int error;\toffset:28;\tsize:4;\tsigned:1;
\tfield:unsigned short ioprio;\toffset:32;\tsize:2;\tsigned:0;
\tfield:char rwbs[10];\toffset:34;\tsize:10;\tsigned:0;
\tfield:__data_loc char[] cmd;\toffset:44;\tsize:4;\tsigned:0;
";

    #[test]
    fn parses_format_files() {
        let f = parse_format(RQ_COMPLETE);
        assert!(f.contains(&("rwbs".to_string(), 34, 10)));
        assert!(f.contains(&("cmd".to_string(), 44, 4)));
        assert!(f.contains(&("common_pid".to_string(), 4, 4)));
    }

    #[test]
    fn layout_check_names_the_difference() {
        let spec = [
            ("dev", 8),
            ("sector", 16),
            ("nr_sector", 24),
            ("error", 28),
            ("rwbs", 34),
        ];
        assert_eq!(check_layout(RQ_COMPLETE, &spec), Ok(()));
        let moved = RQ_COMPLETE.replace("offset:34", "offset:36");
        assert_eq!(
            check_layout(&moved, &spec),
            Err("field rwbs is at offset 36, expected 34".to_string())
        );
        assert_eq!(
            check_layout(RQ_COMPLETE, &[("bytes", 28)]),
            Err("field bytes is missing".to_string())
        );
    }

    #[test]
    fn syscalls_go_through_typed_raw_tracepoints() {
        let all = tracepoints();
        for name in ["sys_enter", "sys_exit"] {
            let t = all.iter().find(|t| t.name == name);
            assert!(
                t.is_some_and(|t| t.attach == Attach::Btf && t.required),
                "{name}"
            );
        }
        // The decoded syscalls are the raw tables' slots before the page-fault one.
        assert_eq!(SYSCALLS.len(), crate::raw::SLOT_PAGE_FAULT);
        assert!(!SYSCALLS.contains(&"page_fault"));
    }

    /// The probe agrees with the kernel: where the kernel itself loads and attaches an
    /// eBPF program (asked without this crate), the probe finds nothing in the way and
    /// every required tracepoint present; without privileges it says so.
    #[test]
    fn probe_agrees_with_the_kernel() {
        ensure_tracefs();
        let h = probe();
        if !h.privileged() {
            assert!(
                matches!(
                    h.blocker(),
                    Some(crate::Unavailable::NotPermitted | crate::Unavailable::NotBuilt(_))
                ),
                "{:?}",
                h.blocker()
            );
            candor_testkit::skip("needs root to compare the probe with the kernel's answer");
            return;
        }
        match candor_testkit::kernel_bpf() {
            Ok(()) => {
                assert!(h.blocker().is_none(), "{:?}", h.blocker());
                for t in h.tracepoints.iter().filter(|t| t.spec.required) {
                    assert_eq!(t.state, TracepointState::Present, "{}", t.spec.full_name());
                }
            }
            Err(why) => candor_testkit::skip(why),
        }
    }
}
