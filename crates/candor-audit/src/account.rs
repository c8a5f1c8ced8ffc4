//! The account of what the tree did, for any program: totals per direction (bytes, calls,
//! record sizes, time inside the calls), where the reads came from (device, page cache,
//! holes), fsyncs, the device's traffic with its owners and the write amplification, a
//! verdict with its sentence, and the files that mattered, largest first.

use crate::phase::{DeviceTraffic, Observed, Phase};
use candor_model::units::{format_bytes, ByteStyle};
use serde::Serialize;
use std::collections::BTreeMap;

/// One direction's totals over every phase.
#[derive(Serialize, Clone, Debug, Default, PartialEq)]
pub struct Totals {
    pub bytes: u64,
    /// None when the source does not count calls (procfs).
    pub calls: Option<u64>,
    /// Seconds inside the calls (eBPF).
    pub time_s: Option<f64>,
    /// (record size, calls), most calls first.
    pub record_sizes: Vec<[u64; 2]>,
    /// Distinct files that moved bytes this way.
    pub files: usize,
}

/// One file's share of the run.
#[derive(Serialize, Clone, Debug, Default, PartialEq)]
pub struct FileLine {
    pub path: String,
    pub kind: String,
    /// What was done to it: "read", "write", "mixed" (both) or "unknown" (nothing moved),
    /// with the share of its bytes that were read.
    pub direction: String,
    pub read_share: Option<f64>,
    pub opens: usize,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub fsyncs: u64,
}

#[derive(Serialize, Clone, Debug, Default, PartialEq)]
pub struct Account {
    pub read: Totals,
    pub write: Totals,
    /// What the tree did over all its files, by bytes: "read", "write", "mixed: 93% read /
    /// 7% write by bytes" or "nothing moved".
    pub kind: String,
    pub fsync_count: Option<u64>,
    pub fsync_time_s: Option<f64>,
    /// Reads by where they came from: the device (the tree's own block reads, each counted
    /// once), holes of sparse files, and the page cache (the rest).
    pub read_from_device_bytes: Option<u64>,
    pub read_from_holes_bytes: u64,
    pub read_from_cache_bytes: Option<u64>,
    /// Block traffic over the run: the tree's own (with eBPF also the journal's and other
    /// processes'), per device.
    pub device_traffic: BTreeMap<String, DeviceTraffic>,
    /// (the tree's own device writes + its share of the journal's, in proportion to its
    /// data among the device's writers) / bytes written by the calls, on the devices it
    /// wrote files on.
    pub write_amplification: Option<f64>,
    /// "device", "cache", "mixed", "holes" or "nothing".
    pub verdict: String,
    pub sentence: String,
    /// Files, most bytes first.
    pub files: Vec<FileLine>,
    /// eBPF: the file records against the processes' own counters.
    pub completeness: Option<crate::phase::Completeness>,
}

/// How many files the text lists before summing the rest.
pub const SHOWN: usize = 10;

fn totals(phases: &[Phase], read: bool) -> Totals {
    let mut t = Totals {
        calls: Some(0),
        time_s: Some(0.0),
        ..Default::default()
    };
    let mut sizes = BTreeMap::<u64, u64>::new();
    let mut files = std::collections::BTreeSet::new();
    for p in phases {
        let (b, c, s) = if read {
            (p.read_bytes, p.read_calls, p.read_time_s)
        } else {
            (p.write_bytes, p.write_calls, p.write_time_s)
        };
        t.bytes += b;
        t.calls = t.calls.zip(c).map(|(a, b)| a + b);
        t.time_s = t.time_s.zip(s).map(|(a, b)| a + b);
        if b > 0 {
            files.insert((p.dev, p.inode, p.path.clone()));
            // Record sizes are per phase for both directions; a phase of one direction
            // gives them to it.
            if (read && p.write_bytes == 0) || (!read && p.read_bytes == 0) {
                for [size, n] in &p.record_sizes {
                    *sizes.entry(*size).or_default() += n;
                }
            }
        }
    }
    t.files = files.len();
    let mut rs: Vec<[u64; 2]> = sizes.into_iter().map(|(s, n)| [s, n]).collect();
    rs.sort_by(|a, b| b[1].cmp(&a[1]).then(a[0].cmp(&b[0])));
    t.record_sizes = rs;
    t
}

/// The account of `o`. `device_totals` gives, for the devices the files are on, the
/// device's own counters over the run (read, write bytes), used without eBPF.
/// The loop devices among `names` whose backing file is on `dev` (its partitions
/// included), as "loop0 (/var/tmp/img)".
fn loops_backed_by(dev: &str, names: &[String]) -> Vec<String> {
    use std::os::unix::fs::MetadataExt;
    let k = candor_procfs::Kernel::system();
    names
        .iter()
        .filter(|n| n.as_str() != dev)
        .filter_map(|n| {
            let file = k.block_named(n).loop_backing_file()?;
            let on = std::fs::metadata(&file)
                .ok()
                .and_then(|m| crate::disk::device_name(m.dev()))?;
            let part = on.strip_prefix(dev).is_some_and(|rest| {
                rest.trim_start_matches('p')
                    .chars()
                    .all(|c| c.is_ascii_digit())
            });
            part.then(|| format!("{n} ({file})"))
        })
        .collect()
}

pub fn account(o: &Observed, device_totals: &[(String, u64, u64)]) -> Account {
    let phases = &o.phases;
    let mut a = Account {
        read: totals(phases, true),
        write: totals(phases, false),
        fsync_count: phases.iter().map(|p| p.fsync_count).sum(),
        fsync_time_s: phases.iter().map(|p| p.fsync_time_s).sum(),
        // The devices the tree used: its own requests, or its files on them.
        device_traffic: o
            .device_traffic
            .iter()
            .filter(|(name, t)| {
                t.own_read_bytes + t.own_write_bytes > 0
                    || phases
                        .iter()
                        .any(|p| p.dev.and_then(crate::disk::device_name).as_ref() == Some(*name))
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        completeness: o.completeness.clone(),
        ..Default::default()
    };
    let names: Vec<String> = a.device_traffic.keys().cloned().collect();
    for (dev, t) in a.device_traffic.iter_mut() {
        t.backing = loops_backed_by(dev, &names);
    }
    a.read_from_holes_bytes = phases
        .iter()
        .filter_map(|p| p.hole_read_bytes)
        .sum::<u64>()
        .min(a.read.bytes);
    // The tree's own device bytes, each request counted once.
    // What the calls moved on each device (reads of holes left out): a device's own
    // traffic speaks for the files on it, not for the program's own loading or for
    // another filesystem it barely touched.
    let mut names = BTreeMap::<u64, Option<String>>::new();
    let mut app_dev = BTreeMap::<String, (u64, u64)>::new();
    for p in phases {
        let Some(name) = p.dev.and_then(|d| {
            names
                .entry(d)
                .or_insert_with(|| crate::disk::device_name(d))
                .clone()
        }) else {
            continue;
        };
        let e = app_dev.entry(name).or_default();
        e.0 += p.read_bytes - p.hole_read_bytes.unwrap_or(0).min(p.read_bytes);
        e.1 += p.write_bytes;
    }
    let app_read = a.read.bytes;
    let not_holes = app_read - a.read_from_holes_bytes;
    let (dev_read, device_written) = if !o.device_traffic.is_empty() {
        let mut read = 0u64;
        let mut written = 0u64;
        for (name, t) in &o.device_traffic {
            // Without device names (phases of unknown devices), every device counts.
            let (ar, aw) = if app_dev.is_empty() {
                (u64::MAX, u64::MAX)
            } else {
                app_dev.get(name).copied().unwrap_or((0, 0))
            };
            read += t.own_read_bytes.min(ar);
            if aw > 0 {
                // The journal's writes, shared with the other writers of the device in
                // proportion to the data each wrote there.
                let data = t.own_write_bytes + t.foreign_write_bytes;
                let journal = if data == 0 {
                    t.kernel_write_bytes
                } else {
                    (t.kernel_write_bytes as u128 * t.own_write_bytes as u128 / data as u128) as u64
                };
                written += t.own_write_bytes + journal;
            }
        }
        (Some(read.min(not_holes)), Some(written))
    } else if let Some(root) = o.processes.first() {
        // The io counters of the root, which holds its reaped children's: all of it goes to
        // the device that took most of the calls' bytes, the rest of each device's traffic
        // is other processes'.
        let main = app_dev
            .iter()
            .max_by_key(|(_, (r, w))| r + w)
            .map(|(n, _)| n.clone())
            .or_else(|| device_totals.first().map(|d| d.0.clone()));
        for (name, r, w) in device_totals {
            let mine = Some(name) == main.as_ref();
            let own_r = if mine { root.io.read_bytes.min(*r) } else { 0 };
            let own_w = if mine { root.io.write_bytes.min(*w) } else { 0 };
            a.device_traffic.insert(
                name.clone(),
                DeviceTraffic {
                    own_read_bytes: own_r,
                    own_write_bytes: own_w,
                    foreign_read_bytes: r - own_r,
                    foreign_write_bytes: w - own_w,
                    ..Default::default()
                },
            );
        }
        (
            Some(root.io.read_bytes.min(not_holes)),
            Some(root.io.write_bytes),
        )
    } else {
        (None, None)
    };
    if let Some(dev) = dev_read {
        a.read_from_device_bytes = Some(dev);
        a.read_from_cache_bytes = Some(not_holes - dev);
    }
    if a.write.bytes > 0 {
        a.write_amplification = device_written.map(|w| w as f64 / a.write.bytes as f64);
    }
    // Files, most bytes first.
    let mut by_file = BTreeMap::<(String, Option<u64>, Option<u64>), FileLine>::new();
    for p in phases {
        let f = by_file
            .entry((p.path.clone(), p.dev, p.inode))
            .or_insert_with(|| FileLine {
                path: p.path.clone(),
                kind: if p.block_device {
                    "raw device".into()
                } else {
                    "file".into()
                },
                ..Default::default()
            });
        f.opens += 1;
        f.read_bytes += p.read_bytes;
        f.write_bytes += p.write_bytes;
        f.fsyncs += p.fsync_count.unwrap_or(0);
    }
    // A directory of more files than the text shows becomes one line: fs_mark's 2000
    // files of 4 KiB say more as "2000 files in DIR/" than as ten of them.
    let mut per_dir = BTreeMap::<String, usize>::new();
    for f in by_file.values() {
        *per_dir.entry(parent(&f.path)).or_default() += 1;
    }
    let mut grouped = BTreeMap::<String, FileLine>::new();
    let mut files: Vec<FileLine> = Vec::new();
    for f in by_file.into_values() {
        let dir = parent(&f.path);
        let n = per_dir[&dir];
        if n > SHOWN && f.kind == "file" {
            let g = grouped.entry(dir.clone()).or_insert_with(|| FileLine {
                path: format!("{dir}/ ({n} files)"),
                kind: "files".into(),
                ..Default::default()
            });
            g.opens += f.opens;
            g.read_bytes += f.read_bytes;
            g.write_bytes += f.write_bytes;
            g.fsyncs += f.fsyncs;
        } else {
            files.push(f);
        }
    }
    files.extend(grouped.into_values());
    files.sort_by(|a, b| {
        (b.read_bytes + b.write_bytes)
            .cmp(&(a.read_bytes + a.write_bytes))
            .then(a.path.cmp(&b.path))
    });
    a.kind = crate::phase::kind_words(a.read.bytes, a.write.bytes);
    for f in &mut files {
        f.direction = crate::phase::direction_of(f.read_bytes, f.write_bytes)
            .as_str()
            .into();
        f.read_share = crate::phase::read_share(f.read_bytes, f.write_bytes);
    }
    a.files = files;
    // The verdict, from the single counts.
    let pct = |x: u64, of: u64| {
        if of == 0 {
            0.0
        } else {
            x as f64 * 100.0 / of as f64
        }
    };
    let b = |x: u64| format_bytes(x, ByteStyle::TENTHS);
    let mut parts = Vec::new();
    if app_read > 0 {
        let mut s = format!("of the {} read", b(app_read));
        if let (Some(d), Some(c)) = (a.read_from_device_bytes, a.read_from_cache_bytes) {
            s += &format!(
                ", {:.0}% came from the device and {:.0}% from the page cache",
                pct(d, app_read),
                pct(c, app_read)
            );
        }
        if a.read_from_holes_bytes > 0 {
            s += &format!(
                ", {:.0}% were holes ({})",
                pct(a.read_from_holes_bytes, app_read),
                crate::holes::HOLE_WORDS
            );
        }
        parts.push(s);
    }
    if a.write.bytes > 0 {
        match device_written {
            Some(w) => parts.push(format!(
                "of the {} written, the device wrote {} for the tree during the run (write amplification {:.2})",
                b(a.write.bytes),
                b(w),
                w as f64 / a.write.bytes as f64
            )),
            None => parts.push(format!("{} written", b(a.write.bytes))),
        }
    }
    let app = app_read + a.write.bytes;
    // The share of the tree's own bytes the device carried, direction by direction: the
    // device's writes count up to the bytes written (amplification is reported above, not
    // as more of the tree's bytes), so writes the tree made outside any file's phase (a
    // copy /proc sampling did not see) cannot make its reads the device's.
    let served =
        a.read_from_device_bytes.unwrap_or(0) + device_written.unwrap_or(0).min(a.write.bytes);
    let (verdict, meaning) = if app == 0 {
        ("nothing", "the tree moved no bytes through files")
    } else if a.read_from_holes_bytes * 2 > app {
        (
            "holes",
            "most of what it moved was zeros the filesystem made up: its figures measure neither the device nor the page cache",
        )
    } else if dev_read.is_none() {
        ("unverified", "where the bytes went is not known")
    } else if served as f64 >= 0.9 * app as f64 {
        (
            "device",
            "the device moved the bytes: its figures are the device's speed",
        )
    } else if served as f64 <= 0.1 * app as f64 {
        (
            "cache",
            "the page cache served it: its figures are memory's speed, not the device's",
        )
    } else {
        (
            "mixed",
            "part came from the device and part from the page cache: its figures mix both",
        )
    };
    a.verdict = verdict.into();
    a.sentence = if parts.is_empty() {
        format!("{verdict}: {meaning}")
    } else {
        format!("{verdict}: {}; {meaning}", parts.join("; "))
    };
    a
}

/// The directory of a path, without trailing slashes ("/a/b//f" -> "/a/b").
fn parent(path: &str) -> String {
    let p = path.trim_end_matches('/');
    match p.rfind('/') {
        Some(i) => p[..i].trim_end_matches('/').to_string(),
        None => ".".into(),
    }
}

fn records(t: &Totals) -> String {
    let r: Vec<String> = t
        .record_sizes
        .iter()
        .take(3)
        .map(|[s, n]| format!("{} x {n}", format_bytes(*s, ByteStyle::TENTHS)))
        .collect();
    if r.is_empty() {
        String::new()
    } else {
        format!(
            ", records {}{}",
            r.join(", "),
            if t.record_sizes.len() > 3 {
                ", ..."
            } else {
                ""
            }
        )
    }
}

/// The account in lines of text.
pub fn render(a: &Account) -> String {
    let b = |x: u64| format_bytes(x, ByteStyle::TENTHS);
    let mut s = String::new();
    for (word, t) in [("read", &a.read), ("written", &a.write)] {
        if t.bytes == 0 && t.calls.unwrap_or(0) == 0 {
            s.push_str(&format!("  {word:<8} nothing\n"));
            continue;
        }
        s.push_str(&format!(
            "  {word:<8} {}{}{}{}, {} file{}\n",
            b(t.bytes),
            t.calls
                .map(|c| format!(" in {c} calls"))
                .unwrap_or_default(),
            records(t),
            t.time_s
                .filter(|_| t.calls.is_some_and(|c| c > 0))
                .map(|x| format!(", {x:.3} s inside the calls"))
                .unwrap_or_default(),
            t.files,
            if t.files == 1 { "" } else { "s" }
        ));
    }
    if !a.kind.is_empty() {
        s.push_str(&format!("  kind     {}\n", a.kind));
    }
    match (a.fsync_count, a.fsync_time_s) {
        (Some(n), Some(t)) => s.push_str(&format!("  fsync    {n} calls, {t:.3} s\n")),
        _ => s.push_str("  fsync    not counted (the eBPF tracer counts them)\n"),
    }
    if a.read.bytes > 0 {
        s.push_str(&format!(
            "  reads    device {}, page cache {}, holes {}\n",
            a.read_from_device_bytes.map(b).unwrap_or("-".into()),
            a.read_from_cache_bytes.map(b).unwrap_or("-".into()),
            b(a.read_from_holes_bytes)
        ));
    }
    for (dev, t) in &a.device_traffic {
        let mut l = format!(
            "  device   {dev}: the tree read {} and wrote {}",
            b(t.own_read_bytes),
            b(t.own_write_bytes)
        );
        if t.kernel_read_bytes + t.kernel_write_bytes > 0 {
            l += &format!(
                "; {} {}",
                candor_model::audit::kernel_label(&t.backing),
                b(t.kernel_read_bytes + t.kernel_write_bytes)
            );
        }
        l += &format!(
            "; other processes (foreign) {}",
            b(t.foreign_read_bytes + t.foreign_write_bytes)
        );
        if t.zeroed_bytes > 0 {
            l += &format!(
                "; zeroed without data (write-zeroes, such as ext4 initialising its inode tables) {}",
                b(t.zeroed_bytes)
            );
        }
        if t.discarded_bytes > 0 {
            l += &format!("; discarded {}", b(t.discarded_bytes));
        }
        l.push('\n');
        s.push_str(&l);
    }
    if let Some(w) = a.write_amplification {
        s.push_str(&format!(
            "  write amplification {w:.2} (the device's writes for the tree, with its share of the journal, over the bytes written)\n"
        ));
    }
    if let Some(c) = &a.completeness {
        s.push_str(&format!("  complete {}\n", c.sentence()));
    }
    s.push_str(&format!("  verdict  {}\n", a.sentence));
    if !a.files.is_empty() {
        s.push_str("  files, most bytes first:\n");
        for f in a.files.iter().take(SHOWN) {
            s.push_str(&format!(
                "    {:>10} read  {:>10} written  {:>4} open{}  {:>4} fsync  {}{}{}\n",
                b(f.read_bytes),
                b(f.write_bytes),
                f.opens,
                if f.opens == 1 { " " } else { "s" },
                f.fsyncs,
                if f.kind == "raw device" {
                    "raw device "
                } else {
                    ""
                },
                f.path,
                if f.direction == "mixed" {
                    format!(
                        " ({})",
                        crate::phase::kind_words(f.read_bytes, f.write_bytes)
                    )
                } else {
                    String::new()
                }
            ));
        }
        let rest = &a.files[a.files.len().min(SHOWN)..];
        if !rest.is_empty() {
            s.push_str(&format!(
                "    ... and {} more file{}: {} read, {} written, {} opens, {} fsyncs\n",
                rest.len(),
                if rest.len() == 1 { "" } else { "s" },
                b(rest.iter().map(|f| f.read_bytes).sum()),
                b(rest.iter().map(|f| f.write_bytes).sum()),
                rest.iter().map(|f| f.opens).sum::<usize>(),
                rest.iter().map(|f| f.fsyncs).sum::<u64>()
            ));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phase(path: &str, r: u64, w: u64) -> Phase {
        Phase {
            path: path.into(),
            read_bytes: r,
            write_bytes: w,
            read_calls: Some(r / 4096),
            write_calls: Some(w / 4096),
            read_time_s: Some(0.1),
            write_time_s: Some(0.2),
            fsync_count: Some(1),
            fsync_time_s: Some(0.01),
            record_sizes: vec![[4096, (r + w) / 4096]],
            ..Default::default()
        }
    }

    /// With /proc sampling, a process that read a little through a file and dirtied 3 MB
    /// that no file's phase holds (a copy the samples did not see): its reads, all from the
    /// page cache, stay the cache's; the dirtied bytes do not make them the device's.
    #[test]
    fn writes_outside_the_phases_do_not_make_cached_reads_the_devices() {
        let mut o = Observed::default();
        o.phases.push(phase("/t/from", 10 << 10, 0));
        o.processes.push(crate::phase::ProcessRecord {
            pid: 7,
            io: candor_procfs::PidIo {
                write_bytes: 3_000_000,
                ..Default::default()
            },
            ..Default::default()
        });
        let a = account(&o, &[("vda".into(), 0, 0)]);
        assert_eq!(a.read_from_device_bytes, Some(0));
        assert_eq!(a.verdict, "cache", "{}", a.sentence);
    }

    #[test]
    fn totals_shares_amplification_and_the_rest_summed() {
        let mut o = Observed::default();
        for i in 0..12u64 {
            o.phases.push(phase(&format!("/d/w{i}"), 0, (i + 1) * 4096));
        }
        o.phases.push(phase("/e/r", 1 << 20, 0));
        o.device_traffic.insert(
            "vda".into(),
            DeviceTraffic {
                own_read_bytes: 256 << 10,
                own_write_bytes: 78 * 4096,
                kernel_write_bytes: 78 * 4096,
                foreign_read_bytes: 4096,
                ..Default::default()
            },
        );
        let a = account(&o, &[]);
        assert_eq!(a.write.bytes, 78 * 4096);
        assert_eq!(a.write.calls, Some(78));
        assert_eq!(a.write.files, 12);
        assert_eq!(a.read.record_sizes, vec![[4096, 256]]);
        assert_eq!(a.fsync_count, Some(13));
        assert_eq!(a.read_from_device_bytes, Some(256 << 10));
        assert_eq!(a.read_from_cache_bytes, Some(768 << 10));
        assert_eq!(a.write_amplification, Some(2.0));
        assert_eq!(a.files[0].path, "/e/r");
        // Twelve files in one directory are one line.
        assert_eq!(a.files[1].path, "/d/ (12 files)");
        assert_eq!(a.files[1].write_bytes, 78 * 4096);
        assert_eq!(a.files[1].opens, 12);
        let t = render(&a);
        assert!(t.contains("/d/ (12 files)"), "{t}");
        assert!(t.contains("write amplification 2.00"), "{t}");
        assert!(t.contains("verdict  mixed"), "{t}");
    }
}
