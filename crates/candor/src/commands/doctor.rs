//! `candor doctor [TARGET]`: says what this machine supports for candor's witness (root or
//! CAP_BPF+CAP_PERFMON, kernel BTF, tracefs, each tracepoint the BPF programs use,
//! cachestat(2) and O_DIRECT on the target) and which witness candor will use. It only
//! reads, except for one small file of its own in TARGET (created with O_EXCL, removed
//! before it returns) and, as root, loading the BPF programs once to be sure they attach.

use crate::exit::{CmdResult, Failure, OK};
use candor_bpf::probe::TracepointState;
use candor_procfs::paths;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Directory candor would benchmark (default: the current directory).
    pub target: Option<PathBuf>,
    /// Do not load the BPF programs (by default doctor loads them once when it may).
    #[arg(long)]
    pub no_load: bool,
    /// List every tracepoint, not only those that are missing or different.
    #[arg(long, short)]
    pub verbose: bool,
}

/// One line of the report: what, the detail, and whether it is usable.
struct Line {
    what: String,
    detail: String,
    ok: bool,
}

fn line(what: impl Into<String>, ok: bool, detail: impl Into<String>) -> Line {
    Line {
        what: what.into(),
        detail: detail.into(),
        ok,
    }
}

pub fn run(args: Args) -> CmdResult {
    let target = args.target.clone().unwrap_or_else(|| PathBuf::from("."));
    if !target.is_dir() {
        return Err(Failure::usage(format!(
            "{} is not a directory: give the directory candor would benchmark",
            target.display()
        )));
    }
    let host = candor_bpf::probe();
    let mut lines = Vec::new();

    let who = if host.root {
        "root".to_string()
    } else {
        let caps: Vec<&str> = [
            (host.cap_sys_admin, "CAP_SYS_ADMIN"),
            (host.cap_bpf, "CAP_BPF"),
            (host.cap_perfmon, "CAP_PERFMON"),
        ]
        .iter()
        .filter(|(has, _)| *has)
        .map(|(_, n)| *n)
        .collect();
        if caps.is_empty() {
            "not root, no BPF capabilities".to_string()
        } else {
            format!("not root; capabilities: {}", caps.join(", "))
        }
    };
    lines.push(line("privileges", host.privileged(), who));
    lines.push(line(
        "kernel BTF",
        host.btf,
        if host.btf {
            paths::BTF_VMLINUX
        } else {
            "missing: the kernel was built without CONFIG_DEBUG_INFO_BTF"
        },
    ));
    lines.push(match &host.tracefs {
        Some(p) => line("tracefs", true, p.display().to_string()),
        None if host.root => line(
            "tracefs",
            true,
            format!(
                "not mounted; candor mounts it at {} when it loads the tracer",
                paths::TRACEFS
            ),
        ),
        None => line(
            "tracefs",
            false,
            "not mounted, or not readable by this user",
        ),
    });
    lines.push(match &host.built {
        Ok(()) => line("BPF programs", true, "built into this candor"),
        Err(why) => line("BPF programs", false, format!("not built: {why}")),
    });

    let mut present = 0;
    let mut required_ok = true;
    let total = host.tracepoints.len();
    for t in &host.tracepoints {
        let name = t.spec.full_name();
        let need = if t.spec.required {
            "required".to_string()
        } else {
            format!("optional, for {}", t.spec.purpose)
        };
        match &t.state {
            TracepointState::Present => {
                present += 1;
                if args.verbose {
                    lines.push(line(format!("  {name}"), true, "present"));
                }
            }
            TracepointState::Missing => {
                required_ok &= !t.spec.required;
                lines.push(line(
                    format!("  {name}"),
                    !t.spec.required,
                    format!("missing ({need})"),
                ))
            }
            TracepointState::Layout(why) => {
                required_ok &= !t.spec.required;
                lines.push(line(
                    format!("  {name}"),
                    !t.spec.required,
                    format!("unexpected layout: {why} ({need})"),
                ))
            }
            // Said once, on the summary line.
            TracepointState::Unknown => {}
        }
    }
    let summary = if host.tracefs.is_none() {
        line(
            "tracepoints",
            host.root,
            "not checked: tracefs is not mounted or not readable by this user",
        )
    } else {
        line(
            "tracepoints",
            required_ok,
            format!("{present} of {total} present with the expected layout"),
        )
    };
    lines.insert(4, summary);

    let mut bpf_verdict = host.blocker().map(|u| u.to_string());
    if bpf_verdict.is_none() {
        if args.no_load {
            lines.push(line("BPF load", true, "not tried (--no-load)"));
        } else {
            match candor_bpf::Tracer::load(&candor_bpf::TraceOptions::default()) {
                Ok(t) => {
                    let skipped = t.skipped();
                    if skipped.is_empty() {
                        lines.push(line("BPF load", true, "loaded and attached, then detached"));
                    } else {
                        let names: Vec<String> = skipped
                            .iter()
                            .map(|(n, why)| format!("{n} ({why})"))
                            .collect();
                        lines.push(line(
                            "BPF load",
                            true,
                            format!("loaded; not attached: {}", names.join(", ")),
                        ));
                    }
                }
                Err(e) => {
                    lines.push(line("BPF load", false, e.to_string()));
                    bpf_verdict = Some(e.to_string());
                }
            }
        }
    }

    let probe_file = ProbeFile::create(&target);
    match &probe_file {
        Ok(f) => {
            lines.push(cachestat_line(f));
            lines.push(direct_line(f));
        }
        Err(e) => {
            lines.push(line(
                "cachestat(2)",
                false,
                format!("not checked: cannot create a file in the target: {e}"),
            ));
            lines.push(line(
                "O_DIRECT",
                false,
                "not checked: the target is not writable",
            ));
        }
    }
    drop(probe_file);

    println!("candor doctor: {}", describe_target(&target));
    let width = lines.iter().map(|l| l.what.len()).max().unwrap_or(10);
    for l in &lines {
        println!(
            "  {:<width$}  {:<4}  {}",
            l.what,
            if l.ok { "ok" } else { "no" },
            l.detail
        );
    }
    println!();
    match bpf_verdict {
        None => println!(
            "candor will use: the BPF witness (block requests, page cache and writeback of \
             its own processes; every system call too with --trace-syscalls) with procfs \
             beside it (--witness auto)."
        ),
        Some(why) => println!(
            "candor will use: the procfs witness ({}, {}, meminfo, \
             vmstat, cachestat); no BPF witness because {why}.",
            paths::DISKSTATS,
            paths::SELF_IO
        ),
    }
    Ok(OK)
}

fn describe_target(target: &Path) -> String {
    let abs = std::fs::canonicalize(target).unwrap_or_else(|_| target.to_path_buf());
    match candor_bpf::DevId::disk_under(&abs) {
        Some(d) => format!(
            "{} (on block device {})",
            abs.display(),
            d.name().unwrap_or_else(|| d.to_string())
        ),
        None => format!("{} (no block device under it)", abs.display()),
    }
}

/// A 64 KiB file of doctor's own in the target: O_CREAT|O_EXCL, removed on drop.
struct ProbeFile {
    path: PathBuf,
    file: std::fs::File,
}

impl ProbeFile {
    fn create(dir: &Path) -> std::io::Result<ProbeFile> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let path = dir.join(format!(".candor-doctor-{}", std::process::id()));
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)?;
        let probe = ProbeFile {
            path,
            file: file.try_clone()?,
        };
        file.write_all(&[0x5a; 64 << 10])?;
        file.sync_all()?;
        Ok(probe)
    }
}

impl Drop for ProbeFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn cachestat_line(f: &ProbeFile) -> Line {
    let answer = candor_witness::filecache::cachestat(&f.file);
    match answer {
        Ok((cached, _)) => line(
            "cachestat(2)",
            true,
            format!("works here ({cached} of 16 pages of a fresh file cached)"),
        ),
        Err(e) => {
            let why = match e.raw_os_error() {
                Some(libc::ENOSYS) => {
                    "not in this kernel (needs Linux 6.5); mincore(2) is used instead".to_string()
                }
                Some(libc::EOPNOTSUPP) => {
                    "not supported on this filesystem; mincore(2) is used instead".to_string()
                }
                _ => format!("failed: {e}"),
            };
            line("cachestat(2)", false, why)
        }
    }
}

fn direct_line(f: &ProbeFile) -> Line {
    let Ok(cpath) = CString::new(f.path.as_os_str().as_bytes()) else {
        return line("O_DIRECT", false, "not checked: the path has a NUL byte");
    };
    // SAFETY: cpath is a valid C string.
    let fd = unsafe { libc::open(cpath.as_ptr(), libc::O_RDONLY | libc::O_DIRECT) };
    if fd < 0 {
        let e = std::io::Error::last_os_error();
        return line(
            "O_DIRECT",
            false,
            format!("refused by the filesystem ({e}); --direct will not work here"),
        );
    }
    let layout = match std::alloc::Layout::from_size_align(4096, 4096) {
        Ok(l) => l,
        Err(_) => return line("O_DIRECT", false, "not checked"),
    };
    // SAFETY: layout has a non-zero size; the buffer is freed below.
    let buf = unsafe { std::alloc::alloc(layout) };
    let n = if buf.is_null() {
        -1
    } else {
        // SAFETY: buf holds 4096 writable bytes; fd is open.
        unsafe { libc::pread(fd, buf as *mut libc::c_void, 4096, 0) }
    };
    let err = std::io::Error::last_os_error();
    // SAFETY: fd was opened above; buf was allocated with layout (when not null).
    unsafe {
        libc::close(fd);
        if !buf.is_null() {
            std::alloc::dealloc(buf, layout);
        }
    }
    if n == 4096 {
        line(
            "O_DIRECT",
            true,
            "a 4 KiB aligned read bypassed the page cache",
        )
    } else {
        line(
            "O_DIRECT",
            false,
            format!(
                "open worked but a 4 KiB aligned read failed ({err}); --direct will not work here"
            ),
        )
    }
}
