//! The reader on a tree captured from a real machine (tests/fixtures/tree: its /proc's
//! mount tables, cpuinfo, diskstats, meminfo, boot id, a `sleep` process's files, and the
//! sysfs directories of a virtio disk and of a loop device with one partition, backed by a
//! file with direct I/O), with the exact values those files hold, and the errors for a
//! missing or malformed file, each naming its path.

use candor_procfs::{Error, Kernel, Pid, PidStat};
use std::path::{Path, PathBuf};

fn tree() -> Kernel {
    Kernel::at(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tree"))
}

fn at(rel: &str) -> PathBuf {
    tree().root().join(rel)
}

#[test]
fn mountinfo_every_mount() {
    let m = tree().mountinfo().expect("mountinfo");
    assert_eq!(m.len(), 20);
    let root = candor_procfs::mount_for(&m, "/work/x").expect("root mount");
    assert_eq!((root.major, root.minor), (254, 0));
    assert_eq!(root.mount_point, "/");
    assert_eq!(root.fs_type, "ext4");
    assert_eq!(root.source, "/dev/vda");
    assert_eq!(root.options, "rw,relatime");
    assert_eq!(
        root.super_options,
        "rw,discard,resv_strict,resuid=65534,resgid=65534"
    );
    // /dev/shm is mounted twice: the later one (0:27) hides the first (0:23).
    let shm = candor_procfs::mount_for(&m, "/dev/shm/f").expect("shm");
    assert_eq!(
        (shm.major, shm.minor, shm.fs_type.as_str()),
        (0, 27, "tmpfs")
    );
    let mounts = tree().mounts().expect("mounts");
    assert_eq!(mounts.len(), 20);
    assert_eq!(mounts[0].source, "proc");
    assert_eq!(mounts[0].target, PathBuf::from("/proc"));
    assert_eq!(mounts[0].fstype, "proc");
}

#[test]
fn swaps_cpu_memory_and_boot() {
    let k = tree();
    assert_eq!(k.swaps().expect("swaps"), vec!["/dev/zram0"]);
    let cpu = k.cpuinfo().expect("cpuinfo");
    assert_eq!(cpu.model, "AMD EPYC");
    assert_eq!((cpu.cores, cpu.threads), (2, 2));
    assert_eq!(
        k.boot_id().expect("boot id"),
        "228c342d-d1dc-48ce-9c38-5cb86ddedef3"
    );
    assert_eq!(k.hostname().expect("hostname"), "vm");
    assert_eq!(k.os_release().expect("osrelease"), "6.18.44-fc-v669");
    let mem = k.meminfo().expect("meminfo");
    assert_eq!(mem.total, 24_684_084 * 1024);
    assert_eq!(mem.available, 23_918_340 * 1024);
    assert_eq!(mem.cached, 22_182_776 * 1024);
    assert_eq!(mem.dirty, 3064 * 1024);
    assert_eq!(mem.writeback, 0);
    let caches = k.cpu_caches().expect("caches");
    let c: Vec<(u32, &str, u64)> = caches
        .iter()
        .map(|c| (c.level, c.kind.as_str(), c.size_bytes))
        .collect();
    assert_eq!(
        c,
        vec![
            (1, "Data", 48 << 10),
            (1, "Instruction", 32 << 10),
            (2, "Unified", 1 << 20),
            (3, "Unified", 32 << 20),
        ]
    );
}

#[test]
fn diskstats_lines() {
    let d = tree().diskstats().expect("diskstats");
    assert_eq!(d.len(), 12);
    let vda = d.iter().find(|d| d.name == "vda").expect("vda");
    assert_eq!(vda.read_bytes(), 1_080_871_215 * 512);
    assert_eq!(vda.write_bytes(), 1_975_928_560 * 512);
    let p1 = d.iter().find(|d| d.name == "loop0p1").expect("loop0p1");
    assert_eq!((p1.read_bytes(), p1.write_bytes()), (0, 0));
}

#[test]
fn a_process() {
    let k = tree();
    let p = Pid::Id(4242);
    assert_eq!(
        k.pid_stat(p).expect("stat"),
        PidStat {
            comm: "sleep".into(),
            state: 'S',
            ppid: 2505
        }
    );
    let io = k.pid_io(p).expect("io");
    assert_eq!((io.rchar, io.wchar, io.syscr, io.syscw), (6976, 0, 10, 0));
    assert_eq!(k.task_io(p, 4242).expect("task io"), io);
    assert_eq!(k.pid_tasks(p).expect("tasks"), vec![4242]);
    let status = k.pid_status(p).expect("status");
    assert_eq!(status["Name"], "sleep");
    assert_eq!(status["PPid"], "2505");
    assert_eq!(status["State"], "S (sleeping)");
    assert_eq!(k.pid_comm(p).expect("comm"), "sleep");
    assert_eq!(k.pid_exe(p).expect("exe"), PathBuf::from("/usr/bin/sleep"));
    assert_eq!(
        k.pid_fds(p).expect("fds"),
        vec![
            (0, PathBuf::from("/dev/null")),
            (3, PathBuf::from("/var/tmp/data.bin"))
        ]
    );
    assert_eq!(k.pid_maps(p).expect("maps").lines().count(), 37);
    assert_eq!(k.task_comm(p, 4242).expect("task comm"), "sleep");
    assert_eq!(
        k.pid_fd_links(p).expect("fd links"),
        vec![(0, at("proc/4242/fd/0")), (3, at("proc/4242/fd/3"))]
    );
    let e = k.task_comm(p, 4243).unwrap_err();
    assert_eq!(e.path(), at("proc/4242/task/4243/comm"));
    assert_eq!(k.pids().expect("pids"), vec![4242, 4243]);
}

#[test]
fn block_devices() {
    let k = tree();
    let vda = k.block(254, 0);
    assert!(vda.exists());
    assert_eq!(vda.name().expect("name"), "vda");
    assert_eq!(vda.size_bytes().expect("size"), 536_870_912 * 512);
    assert_eq!(vda.queue("logical_block_size").expect("lbs"), "512");
    assert_eq!(vda.queue("physical_block_size").expect("pbs"), "4096");
    assert_eq!(vda.queue("rotational").expect("rot"), "1");
    assert_eq!(
        vda.queue("scheduler").expect("scheduler"),
        "none [mq-deadline] kyber bfq"
    );
    assert_eq!(vda.loop_backing_file(), None);
    assert!(!vda.loop_direct_io());
    assert!(vda.partitions().is_empty());

    let lo = k.block(7, 0);
    assert_eq!(lo.name().expect("name"), "loop0");
    assert_eq!(
        lo.loop_backing_file().as_deref(),
        Some("/var/tmp/candor-fixture.img")
    );
    assert!(lo.loop_direct_io());
    assert_eq!(lo.holders().expect("holders"), vec!["dm-0"]);
    assert_eq!(lo.partitions(), vec![("loop0p1".to_string(), 259, 0)]);
    // A partition has no queue of its own: its disk's is read.
    let p1 = k.block(259, 0);
    assert_eq!(p1.name().expect("name"), "loop0p1");
    assert_eq!(p1.size_bytes().expect("size"), 65536 * 512);
    assert_eq!(p1.queue("logical_block_size").expect("lbs"), "512");
    assert_eq!(k.block_named("loop0p1").attr("dev").expect("dev"), "259:0");
    assert_eq!(k.block_named("vda").attr("dev").expect("dev"), "254:0");
    assert_eq!(k.block_names().expect("names"), vec!["loop0", "vda"]);
    // Names and numbers as the devices' own files give them.
    assert_eq!(vda.uevent_name().expect("uevent"), "vda");
    assert_eq!(vda.number().expect("dev"), (254, 0));
    assert_eq!(vda.disk_number().expect("disk"), (254, 0));
    assert_eq!(p1.disk_number().expect("disk"), (7, 0));
    assert_eq!(k.block_named("loop0p1").number().expect("dev"), (259, 0));
    // In flight: the captured counts (0 reads, 0 writes) with iostats on; a device whose
    // queue has no iostats says which file it could not read.
    assert_eq!(vda.inflight().expect("inflight"), Some(0));
    let e = lo.inflight().unwrap_err();
    assert_eq!(e.path(), at("sys/dev/block/7:0/../queue/iostats"));
    assert!(!k.block(8, 0).exists());
}

#[test]
fn errors_name_the_path() {
    let k = tree();
    // Missing: the device 8:0 is not in the tree.
    let e = k.block(8, 0).size_bytes().unwrap_err();
    assert_eq!(e.path(), at("sys/dev/block/8:0/size"));
    assert!(matches!(e, Error::Read { .. }));
    assert_eq!(e.io().map(|e| e.kind()), Some(std::io::ErrorKind::NotFound));
    let shown = e.to_string();
    assert!(
        shown.starts_with(&format!(
            "cannot read {}: ",
            at("sys/dev/block/8:0/size").display()
        )),
        "{shown}"
    );
    // Missing: no pressure file was captured.
    let e = k.pressure_io().unwrap_err();
    assert_eq!(e.path(), at("proc/pressure/io"));
    // Malformed: a stat cut short and io counters that are not numbers.
    let e = k.pid_stat(Pid::Id(4243)).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{} does not read as a process's stat",
            at("proc/4243/stat").display()
        )
    );
    let e = k.pid_io(Pid::Id(4243)).unwrap_err();
    assert!(matches!(e, Error::Malformed { .. }));
    assert_eq!(e.path(), at("proc/4243/io"));
    // Malformed: a number that is not one.
    let e = k.block(7, 0).attr_u64("loop/backing_file").unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{} does not read as a whole number",
            at("sys/dev/block/7:0/loop/backing_file").display()
        )
    );
}

#[test]
fn drop_caches_is_written_below_the_root() {
    // A copy of the tree's drop_caches, so the fixture stays as captured.
    let dir = std::env::temp_dir().join(format!("candor-procfs-drop-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("proc/sys/vm")).expect("mkdir");
    std::fs::write(dir.join("proc/sys/vm/drop_caches"), "0\n").expect("write");
    let k = Kernel::at(&dir);
    assert_eq!(k.drop_caches_path(), dir.join("proc/sys/vm/drop_caches"));
    k.may_drop_caches().expect("may write");
    k.drop_caches().expect("write");
    assert_eq!(
        std::fs::read_to_string(dir.join("proc/sys/vm/drop_caches")).expect("read"),
        "3"
    );
    std::fs::remove_dir_all(&dir).expect("clean up");
    let e = k.drop_caches().unwrap_err();
    assert!(matches!(e, Error::Write { .. }));
    assert_eq!(e.path(), dir.join("proc/sys/vm/drop_caches"));
    assert!(e.to_string().starts_with("cannot write "), "{e}");
}
