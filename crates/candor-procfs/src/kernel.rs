//! [`Kernel`]: the one reader of /proc and /sys. Every path is taken below a root ("/" on a
//! live system; a captured tree in tests), every read that fails says which path, and the
//! text goes through the pure parsers of this crate.

use crate::mounts::{parse_mountinfo, parse_mounts, parse_swaps, Mount, MountEntry};
use crate::{parse_diskstats, parse_meminfo, parse_pressure, parse_vmstat, DiskStat, MemInfo};
use crate::{paths, FdInfo, PidIo};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What went wrong, always with the path (as it is below the reader's root).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} does not read as {what}", path.display())]
    Malformed { path: PathBuf, what: &'static str },
}

impl Error {
    /// The file the error is about.
    pub fn path(&self) -> &Path {
        match self {
            Error::Read { path, .. }
            | Error::Write { path, .. }
            | Error::Malformed { path, .. } => path,
        }
    }

    /// The system's error, for a read or write that failed.
    pub fn io(&self) -> Option<&std::io::Error> {
        match self {
            Error::Read { source, .. } | Error::Write { source, .. } => Some(source),
            Error::Malformed { .. } => None,
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// Which process: this one (`/proc/self`) or another by id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pid {
    Me,
    Id(u32),
}

impl std::fmt::Display for Pid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Pid::Me => f.write_str("self"),
            Pid::Id(p) => write!(f, "{p}"),
        }
    }
}

/// A process's name, state and parent, from /proc/PID/stat.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PidStat {
    pub comm: String,
    /// 'R', 'S', 'D', 'Z'...
    pub state: char,
    pub ppid: u32,
}

impl PidStat {
    /// Parses the text of /proc/PID/stat (the name may hold spaces and parentheses).
    pub fn parse(text: &str) -> Option<PidStat> {
        let (comm, ppid) = crate::parse_stat(text)?;
        let after = text.get(text.rfind(')')? + 1..)?;
        let state = after.split_whitespace().next()?.chars().next()?;
        Some(PidStat { comm, state, ppid })
    }

    /// Whether the process has exited and waits to be reaped (zombie or dead).
    pub fn exited(&self) -> bool {
        matches!(self.state, 'Z' | 'X')
    }
}

/// The CPU as /proc/cpuinfo describes it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CpuInfo {
    pub model: String,
    /// Physical cores (threads when the file does not say).
    pub cores: u32,
    /// Hardware threads.
    pub threads: u32,
}

/// One CPU cache, from /sys/devices/system/cpu/cpu0/cache/indexN.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cache {
    pub level: u32,
    pub kind: String,
    pub size_bytes: u64,
}

/// The reader of /proc and /sys below a root.
#[derive(Clone, Debug)]
pub struct Kernel {
    root: PathBuf,
}

impl Default for Kernel {
    fn default() -> Self {
        Kernel::at("/")
    }
}

impl Kernel {
    /// The running system's /proc and /sys.
    pub fn system() -> Kernel {
        Kernel::default()
    }

    /// The tree below `root` (which holds `proc/` and `sys/`).
    pub fn at(root: impl Into<PathBuf>) -> Kernel {
        Kernel { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `rel` ("proc/diskstats") below the root.
    pub fn path(&self, rel: impl AsRef<Path>) -> PathBuf {
        let rel = rel.as_ref();
        self.root.join(rel.strip_prefix("/").unwrap_or(rel))
    }

    /// The whole text of `rel`.
    pub fn read(&self, rel: impl AsRef<Path>) -> Result<String> {
        read_path(&self.path(rel))
    }

    /// [`Kernel::read`] of a counter the witness samples during a measurement: its bytes
    /// count in [`crate::bytes_read`], so they can be taken out of this process's rchar.
    fn read_counted(&self, rel: impl AsRef<Path>) -> Result<String> {
        let text = self.read(rel)?;
        crate::count_read(text.len());
        Ok(text)
    }

    /// The text of `rel` without its surrounding white space (a sysfs attribute).
    pub fn read_trim(&self, rel: impl AsRef<Path>) -> Result<String> {
        self.read(rel).map(|t| t.trim().to_string())
    }

    /// `rel` read as one whole number.
    pub fn read_u64(&self, rel: impl AsRef<Path>) -> Result<u64> {
        let t = self.read_trim(rel.as_ref())?;
        t.parse().map_err(|_| self.malformed(rel, "a whole number"))
    }

    fn malformed(&self, rel: impl AsRef<Path>, what: &'static str) -> Error {
        Error::Malformed {
            path: self.path(rel),
            what,
        }
    }

    /// `rel` read (`counted`: as a sampled counter, [`Kernel::read_counted`]) and parsed;
    /// `what` names what it should have read as.
    fn parsed<T>(
        &self,
        rel: impl AsRef<Path>,
        counted: bool,
        what: &'static str,
        parse: impl FnOnce(&str) -> Option<T>,
    ) -> Result<T> {
        let rel = rel.as_ref();
        let text = if counted {
            self.read_counted(rel)?
        } else {
            self.read(rel)?
        };
        parse(&text).ok_or_else(|| self.malformed(rel, what))
    }

    /// Whether `rel` exists.
    pub fn exists(&self, rel: impl AsRef<Path>) -> bool {
        self.path(rel).exists()
    }

    /// The names in the directory `rel`, sorted.
    pub fn list(&self, rel: impl AsRef<Path>) -> Result<Vec<String>> {
        list_path(&self.path(rel))
    }

    /// Where the symbolic link `rel` points.
    pub fn link(&self, rel: impl AsRef<Path>) -> Result<PathBuf> {
        let path = self.path(rel);
        std::fs::read_link(&path).map_err(|source| Error::Read { path, source })
    }

    /// `rel` with every link resolved.
    pub fn canonical(&self, rel: impl AsRef<Path>) -> Result<PathBuf> {
        let path = self.path(rel);
        std::fs::canonicalize(&path).map_err(|source| Error::Read { path, source })
    }

    // ---- /proc ----

    /// Every mount this process sees (/proc/self/mountinfo).
    pub fn mountinfo(&self) -> Result<Vec<Mount>> {
        self.read(paths::SELF_MOUNTINFO)
            .map(|t| parse_mountinfo(&t))
    }

    /// /proc/mounts.
    pub fn mounts(&self) -> Result<Vec<MountEntry>> {
        self.read(paths::MOUNTS).map(|t| parse_mounts(&t))
    }

    /// The device paths of the active swap areas (/proc/swaps).
    pub fn swaps(&self) -> Result<Vec<String>> {
        self.read(paths::SWAPS).map(|t| parse_swaps(&t))
    }

    /// /proc/cpuinfo.
    pub fn cpuinfo(&self) -> Result<CpuInfo> {
        self.read(paths::CPUINFO).map(|t| parse_cpuinfo(&t))
    }

    /// This boot's id (/proc/sys/kernel/random/boot_id): runs that share it share the
    /// monotonic clock.
    pub fn boot_id(&self) -> Result<String> {
        self.read_trim(paths::BOOT_ID)
    }

    pub fn hostname(&self) -> Result<String> {
        self.read_trim(paths::HOSTNAME)
    }

    /// The kernel's release (/proc/sys/kernel/osrelease).
    pub fn os_release(&self) -> Result<String> {
        self.read_trim(paths::OS_RELEASE)
    }

    pub fn meminfo(&self) -> Result<MemInfo> {
        self.parsed(paths::MEMINFO, true, "meminfo (no MemTotal)", parse_meminfo)
    }

    pub fn vmstat(&self) -> Result<BTreeMap<String, i64>> {
        self.read_counted(paths::VMSTAT).map(|t| parse_vmstat(&t))
    }

    /// /proc/pressure/io: "some" and "full" total stall, microseconds.
    pub fn pressure_io(&self) -> Result<[u64; 2]> {
        self.parsed(paths::PRESSURE_IO, true, "pressure totals", parse_pressure)
    }

    /// Every block device's line of /proc/diskstats.
    pub fn diskstats(&self) -> Result<Vec<DiskStat>> {
        self.read_counted(paths::DISKSTATS)
            .map(|t| parse_diskstats(&t))
    }

    /// The running processes' ids (the numeric names in /proc).
    pub fn pids(&self) -> Result<Vec<u32>> {
        let mut pids: Vec<u32> = self
            .list(paths::PROC)?
            .iter()
            .filter_map(|n| n.parse().ok())
            .collect();
        pids.sort_unstable();
        Ok(pids)
    }

    fn pid_path(pid: Pid, file: &str) -> String {
        paths::pid(pid, file)
    }

    /// A process's name, state and parent.
    pub fn pid_stat(&self, pid: Pid) -> Result<PidStat> {
        self.parsed(
            Self::pid_path(pid, "stat"),
            false,
            "a process's stat",
            PidStat::parse,
        )
    }

    /// A process's I/O counters.
    pub fn pid_io(&self, pid: Pid) -> Result<PidIo> {
        self.task_file_io(Self::pid_path(pid, "io"))
    }

    /// One thread's I/O counters.
    pub fn task_io(&self, pid: Pid, tid: u32) -> Result<PidIo> {
        self.task_file_io(Self::pid_path(pid, &format!("task/{tid}/io")))
    }

    fn task_file_io(&self, rel: String) -> Result<PidIo> {
        self.parsed(rel, true, "io counters", PidIo::parse)
    }

    /// A process's status lines ("Key:\tvalue"), keys to values.
    pub fn pid_status(&self, pid: Pid) -> Result<BTreeMap<String, String>> {
        Ok(self
            .read(Self::pid_path(pid, "status"))?
            .lines()
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
            .collect())
    }

    /// A process's command name.
    pub fn pid_comm(&self, pid: Pid) -> Result<String> {
        self.read(Self::pid_path(pid, "comm"))
            .map(|t| t.trim_end_matches('\n').to_string())
    }

    /// The program a process runs.
    pub fn pid_exe(&self, pid: Pid) -> Result<PathBuf> {
        self.link(Self::pid_path(pid, "exe"))
    }

    /// A process's open descriptors and what each names, by number.
    pub fn pid_fds(&self, pid: Pid) -> Result<Vec<(u32, PathBuf)>> {
        let mut fds: Vec<(u32, PathBuf)> = self
            .list(Self::pid_path(pid, "fd"))?
            .iter()
            .filter_map(|n| n.parse::<u32>().ok())
            .filter_map(|fd| {
                let target = self.link(Self::pid_path(pid, &format!("fd/{fd}"))).ok()?;
                Some((fd, target))
            })
            .collect();
        fds.sort();
        Ok(fds)
    }

    /// What one of a process's descriptors names.
    pub fn pid_fd(&self, pid: Pid, fd: u32) -> Result<PathBuf> {
        self.link(Self::pid_path(pid, &format!("fd/{fd}")))
    }

    /// A process's working directory.
    pub fn pid_cwd(&self, pid: Pid) -> Result<PathBuf> {
        self.link(Self::pid_path(pid, "cwd"))
    }

    /// One descriptor's position and open flags.
    pub fn pid_fdinfo(&self, pid: Pid, fd: u32) -> Result<FdInfo> {
        self.read(Self::pid_path(pid, &format!("fdinfo/{fd}")))
            .map(|t| FdInfo::parse(&t))
    }

    /// A process's memory map, as text.
    pub fn pid_maps(&self, pid: Pid) -> Result<String> {
        self.read(Self::pid_path(pid, "maps"))
    }

    /// One thread's command name.
    pub fn task_comm(&self, pid: Pid, tid: u32) -> Result<String> {
        self.read(Self::pid_path(pid, &format!("task/{tid}/comm")))
            .map(|t| t.trim_end_matches('\n').to_string())
    }

    /// A process's descriptors by number, each as the path of its link below the root
    /// (`proc/PID/fd/N`): what to open or stat to reach the open file itself, whatever its
    /// name (a deleted file, a pipe).
    pub fn pid_fd_links(&self, pid: Pid) -> Result<Vec<(u32, PathBuf)>> {
        let dir = Self::pid_path(pid, "fd");
        let mut fds: Vec<(u32, PathBuf)> = self
            .list(&dir)?
            .iter()
            .filter_map(|n| n.parse::<u32>().ok())
            .map(|fd| (fd, self.path(format!("{dir}/{fd}"))))
            .collect();
        fds.sort();
        Ok(fds)
    }

    /// A process's threads' ids.
    pub fn pid_tasks(&self, pid: Pid) -> Result<Vec<u32>> {
        let mut t: Vec<u32> = self
            .list(Self::pid_path(pid, "task"))?
            .iter()
            .filter_map(|n| n.parse().ok())
            .collect();
        t.sort_unstable();
        Ok(t)
    }

    /// The path `drop_caches` writes, for messages.
    pub fn drop_caches_path(&self) -> PathBuf {
        self.path(paths::DROP_CACHES)
    }

    /// Whether this process may write drop_caches (opening it drops nothing; writing does).
    pub fn may_drop_caches(&self) -> Result<()> {
        let path = self.drop_caches_path();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .map(drop)
            .map_err(|source| Error::Write { path, source })
    }

    /// Drops the page cache, dentries and inodes (writes "3"; root only). Dirty pages are
    /// not dropped: sync first.
    pub fn drop_caches(&self) -> Result<()> {
        let path = self.drop_caches_path();
        std::fs::write(&path, "3").map_err(|source| Error::Write { path, source })
    }

    // ---- /sys ----

    /// The block device MAJ:MIN (/sys/dev/block/MAJ:MIN).
    pub fn block(&self, major: u32, minor: u32) -> BlockDev {
        BlockDev::at(self.path(paths::block(major, minor)))
    }

    /// The block device by its kernel name (/sys/block/NAME, /sys/class/block/NAME for a
    /// partition).
    pub fn block_named(&self, name: &str) -> BlockDev {
        let dir = self.path(format!("sys/block/{name}"));
        if dir.exists() {
            BlockDev::at(dir)
        } else {
            BlockDev::at(self.path(format!("sys/class/block/{name}")))
        }
    }

    /// The names of the whole block devices (/sys/block).
    pub fn block_names(&self) -> Result<Vec<String>> {
        self.list("sys/block")
    }

    /// The caches of cpu0 with a level and a size, in index order.
    pub fn cpu_caches(&self) -> Result<Vec<Cache>> {
        const DIR: &str = "sys/devices/system/cpu/cpu0/cache";
        let mut out = Vec::new();
        for d in self.list(DIR)?.iter().filter(|n| n.starts_with("index")) {
            let at = |f: &str| self.read_trim(format!("{DIR}/{d}/{f}")).ok();
            let level = at("level").and_then(|l| l.parse().ok());
            let size = at("size").and_then(|s| cache_size(&s));
            if let (Some(level), Some(size_bytes)) = (level, size) {
                out.push(Cache {
                    level,
                    kind: at("type").unwrap_or_default(),
                    size_bytes,
                });
            }
        }
        Ok(out)
    }
}

/// A block device's directory in sysfs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockDev {
    dir: PathBuf,
}

impl BlockDev {
    /// The device whose sysfs directory is `dir` (one found through another device: a
    /// holder, a slave, a partition's disk).
    pub fn at(dir: impl Into<PathBuf>) -> BlockDev {
        BlockDev { dir: dir.into() }
    }

    /// The directory (below the reader's root).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn exists(&self) -> bool {
        self.dir.exists()
    }

    /// The same device at its real directory (`dev/block/MAJ:MIN` and `block/NAME` are
    /// links to it).
    pub fn canonical(&self) -> Result<BlockDev> {
        std::fs::canonicalize(&self.dir)
            .map(BlockDev::at)
            .map_err(|source| Error::Read {
                path: self.dir.clone(),
                source,
            })
    }

    /// The kernel's name ("vda", "loop3", "nvme0n1p2"): the name of the directory the
    /// device's link resolves to.
    pub fn name(&self) -> Result<String> {
        let c = self.canonical()?;
        c.dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .ok_or(Error::Malformed {
                path: self.dir.clone(),
                what: "a device directory",
            })
    }

    /// An attribute's text, trimmed ("size", "queue/rotational", "dm/name").
    pub fn attr(&self, name: &str) -> Result<String> {
        read_path(&self.dir.join(name)).map(|t| t.trim().to_string())
    }

    pub fn attr_u64(&self, name: &str) -> Result<u64> {
        let path = self.dir.join(name);
        let t = read_path(&path)?;
        t.trim().parse().map_err(|_| Error::Malformed {
            path,
            what: "a whole number",
        })
    }

    pub fn has(&self, name: &str) -> bool {
        self.dir.join(name).exists()
    }

    /// The size in bytes (`size` counts 512-byte sectors, whatever the block size).
    pub fn size_bytes(&self) -> Result<u64> {
        Ok(self.attr_u64("size")? * crate::SECTOR_BYTES)
    }

    /// A queue attribute ("logical_block_size", "scheduler"); a partition has no queue of
    /// its own, so its disk's is read.
    pub fn queue(&self, name: &str) -> Result<String> {
        self.attr(&format!("queue/{name}"))
            .or_else(|_| self.attr(&format!("../queue/{name}")))
    }

    /// Whether this is a partition (its disk is [`BlockDev::parent`]).
    pub fn is_partition(&self) -> bool {
        self.has("partition")
    }

    /// The directory above: a partition's disk.
    pub fn parent(&self) -> Option<BlockDev> {
        self.dir.parent().map(BlockDev::at)
    }

    /// The devices stacked on this one (`holders/`: device-mapper, md, bcache...).
    pub fn holders(&self) -> Result<Vec<String>> {
        list_path(&self.dir.join("holders"))
    }

    /// The devices this one is stacked on (`slaves/`), at their real directories, sorted;
    /// empty when there are none or they cannot be read.
    pub fn slaves(&self) -> Vec<BlockDev> {
        let dir = self.dir.join("slaves");
        let mut out: Vec<BlockDev> = list_path(&dir)
            .unwrap_or_default()
            .iter()
            .filter_map(|n| BlockDev::at(dir.join(n)).canonical().ok())
            .collect();
        out.sort_by(|a, b| a.dir.cmp(&b.dir));
        out
    }

    /// The partitions: name, major, minor.
    pub fn partitions(&self) -> Vec<(String, u32, u32)> {
        let Ok(names) = list_path(&self.dir) else {
            return Vec::new();
        };
        names
            .into_iter()
            .filter(|n| self.has(&format!("{n}/partition")))
            .filter_map(|n| {
                let dev = self.attr(&format!("{n}/dev")).ok()?;
                let (ma, mi) = dev.split_once(':')?;
                Some((n, ma.parse().ok()?, mi.parse().ok()?))
            })
            .collect()
    }

    /// The name of the driver of the hardware under a disk (`device/driver`).
    pub fn driver(&self) -> Option<String> {
        std::fs::read_link(self.dir.join("device/driver"))
            .ok()?
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
    }

    /// The device's name as its `uevent` gives it (`DEVNAME`).
    pub fn uevent_name(&self) -> Result<String> {
        let path = self.dir.join("uevent");
        read_path(&path)?
            .lines()
            .find_map(|l| l.strip_prefix("DEVNAME="))
            .map(str::to_string)
            .ok_or(Error::Malformed {
                path,
                what: "a uevent with DEVNAME",
            })
    }

    /// The device's number, from its `dev` attribute ("MAJ:MIN").
    pub fn number(&self) -> Result<(u32, u32)> {
        self.number_at("dev")
    }

    /// The number of a partition's disk (the `dev` of the directory above); a whole disk's
    /// own when it is not a partition.
    pub fn disk_number(&self) -> Result<(u32, u32)> {
        if self.is_partition() {
            self.number_at("../dev")
        } else {
            self.number()
        }
    }

    fn number_at(&self, rel: &str) -> Result<(u32, u32)> {
        let path = self.dir.join(rel);
        let t = read_path(&path)?;
        let malformed = || Error::Malformed {
            path: path.clone(),
            what: "a device number",
        };
        let (ma, mi) = t.trim().split_once(':').ok_or_else(malformed)?;
        Ok((
            ma.parse().map_err(|_| malformed())?,
            mi.parse().map_err(|_| malformed())?,
        ))
    }

    /// Requests in flight (reads + writes, `inflight`) when the device keeps I/O statistics
    /// (`queue/iostats` is 1); None when it does not.
    pub fn inflight(&self) -> Result<Option<u64>> {
        if self.queue("iostats")? != "1" {
            return Ok(None);
        }
        let path = self.dir.join("inflight");
        let n = parse_inflight(&read_path(&path)?).ok_or(Error::Malformed {
            path,
            what: "two counts of requests in flight",
        })?;
        Ok(Some(n))
    }

    /// Whether this is a loop device with a backing file.
    pub fn is_bound_loop(&self) -> bool {
        self.has("loop/backing_file")
    }

    /// A loop device's backing file; None for a device that is not a bound loop device.
    pub fn loop_backing_file(&self) -> Option<String> {
        read_path(&self.dir.join("loop/backing_file"))
            .ok()
            .map(|t| t.trim_end_matches('\n').to_string())
    }

    /// Whether a loop device reads and writes its file with direct I/O.
    pub fn loop_direct_io(&self) -> bool {
        self.attr("loop/dio").is_ok_and(|t| t == "1")
    }
}

fn read_path(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|source| Error::Read {
        path: path.to_path_buf(),
        source,
    })
}

fn list_path(path: &Path) -> Result<Vec<String>> {
    let rd = std::fs::read_dir(path).map_err(|source| Error::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let mut names: Vec<String> = rd
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    Ok(names)
}

/// A block device's `inflight` ("reads writes") as their sum.
pub fn parse_inflight(text: &str) -> Option<u64> {
    let mut n = 0u64;
    let mut fields = 0;
    for f in text.split_whitespace() {
        n += f.parse::<u64>().ok()?;
        fields += 1;
    }
    (fields == 2).then_some(n)
}

/// CPU description from the text of /proc/cpuinfo.
pub fn parse_cpuinfo(text: &str) -> CpuInfo {
    let mut model = String::new();
    let mut threads = 0u32;
    let mut cores = std::collections::BTreeSet::new();
    let mut phys = String::new();
    for line in text.lines() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let (k, v) = (k.trim(), v.trim());
        match k {
            "processor" => threads += 1,
            "model name" if model.is_empty() => model = v.to_string(),
            // Architectures without "model name" (arm64) name the CPU differently.
            "Hardware" | "cpu model" if model.is_empty() => model = v.to_string(),
            "physical id" => phys = v.to_string(),
            "core id" => {
                cores.insert((phys.clone(), v.to_string()));
            }
            _ => {}
        }
    }
    let cores = if cores.is_empty() {
        threads
    } else {
        cores.len() as u32
    };
    CpuInfo {
        model,
        cores,
        threads,
    }
}

/// A sysfs cache size ("48K", "2048K", "1M") in bytes.
pub fn cache_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let (num, mult) = match t.chars().last()? {
        'K' => (&t[..t.len() - 1], 1024),
        'M' => (&t[..t.len() - 1], 1024 * 1024),
        'G' => (&t[..t.len() - 1], 1024 * 1024 * 1024),
        _ => (t, 1),
    };
    num.parse::<u64>().ok().map(|n| n * mult)
}

#[cfg(test)]
mod tests {
    #[test]
    fn sysfs_inflight_is_reads_plus_writes() {
        use super::parse_inflight;
        assert_eq!(parse_inflight("       3        5\n"), Some(8));
        assert_eq!(parse_inflight("0 0\n"), Some(0));
        assert_eq!(parse_inflight("7\n"), None);
        assert_eq!(parse_inflight("a b\n"), None);
    }
}
