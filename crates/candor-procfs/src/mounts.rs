//! The mount tables: /proc/self/mountinfo (device numbers, both option sets) and
//! /proc/mounts (source, mount point, type), with the kernel's octal escapes decoded.

use std::path::PathBuf;

/// One line of /proc/self/mountinfo.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Mount {
    /// The mount's id (the first field of mountinfo; statx's `stx_mnt_id`), 0 when read
    /// from /proc/mounts.
    pub mount_id: u64,
    pub major: u32,
    pub minor: u32,
    pub mount_point: String,
    pub options: String,
    pub fs_type: String,
    pub source: String,
    pub super_options: String,
}

/// Parses the text of /proc/self/mountinfo; mount points and sources have their octal
/// escapes (`\040` for a space) decoded. Lines that are not mount lines are skipped.
pub fn parse_mountinfo(text: &str) -> Vec<Mount> {
    let mut out = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        let Some(dash) = f.iter().position(|x| *x == "-") else {
            continue;
        };
        if dash < 6 || f.len() < dash + 3 {
            continue;
        }
        let Some((maj, min)) = f[2].split_once(':') else {
            continue;
        };
        let (Ok(major), Ok(minor)) = (maj.parse(), min.parse()) else {
            continue;
        };
        out.push(Mount {
            mount_id: f[0].parse().unwrap_or(0),
            major,
            minor,
            mount_point: unescape(f[4]),
            options: f[5].to_string(),
            fs_type: f[dash + 1].to_string(),
            source: unescape(f[dash + 2]),
            super_options: f.get(dash + 3).copied().unwrap_or("").to_string(),
        });
    }
    out
}

/// The mount that holds `path` (an absolute, canonical path): the longest mount point that
/// is a whole-component prefix of it; of equal ones the last, since later mounts hide
/// earlier.
pub fn mount_for<'a>(mounts: &'a [Mount], path: &str) -> Option<&'a Mount> {
    let mut best: Option<&Mount> = None;
    for m in mounts {
        let mp = m.mount_point.as_str();
        let inside = path == mp
            || mp == "/"
            || (path.starts_with(mp) && path.as_bytes().get(mp.len()) == Some(&b'/'));
        if inside && best.is_none_or(|b| mp.len() >= b.mount_point.len()) {
            best = Some(m);
        }
    }
    best
}

/// One line of /proc/mounts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountEntry {
    pub source: String,
    pub target: PathBuf,
    pub fstype: String,
}

/// Parses the text of /proc/mounts.
pub fn parse_mounts(text: &str) -> Vec<MountEntry> {
    text.lines()
        .filter_map(|line| {
            let mut f = line.split(' ');
            let source = unescape(f.next()?);
            let target = PathBuf::from(unescape(f.next()?));
            let fstype = f.next()?.to_string();
            Some(MountEntry {
                source,
                target,
                fstype,
            })
        })
        .collect()
}

/// The device paths of the active swap areas, from the text of /proc/swaps (its first
/// line is a heading).
pub fn parse_swaps(text: &str) -> Vec<String> {
    text.lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .map(unescape)
        .collect()
}

/// Decodes the kernel's `\ooo` escapes of space, tab, newline and backslash; anything else
/// (a lone backslash, an escape above 255) is left as it is.
pub fn unescape(field: &str) -> String {
    let b = field.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 4 <= b.len() {
            let oct = &b[i + 1..i + 4];
            if oct.iter().all(|c| (b'0'..=b'7').contains(c)) {
                let v = oct
                    .iter()
                    .fold(0u32, |acc, c| acc * 8 + u32::from(c - b'0'));
                if let Ok(v) = u8::try_from(v) {
                    out.push(v);
                    i += 4;
                    continue;
                }
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_escapes_and_optional_fields() {
        let text = "97 27 7:3 / /tmp/my\\040disk rw,relatime shared:50 master:2 - xfs /dev/loop3 rw,attr2\n";
        let m = parse_mountinfo(text);
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].mount_point, "/tmp/my disk");
        assert_eq!(m[0].mount_id, 97);
        assert_eq!((m[0].major, m[0].minor), (7, 3));
        assert_eq!(m[0].fs_type, "xfs");
        assert_eq!(m[0].source, "/dev/loop3");
        assert_eq!(m[0].super_options, "rw,attr2");
        assert_eq!(mount_for(&m, "/tmp/my disk/a").map(|m| m.minor), Some(3));
    }

    #[test]
    fn mounts_are_parsed_and_unescaped() {
        let text = "/dev/loop3 /tmp/a\\040b/mnt/ext4 ext4 rw,relatime 0 0\n\
                    proc /proc proc rw 0 0\n";
        let m = parse_mounts(text);
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].source, "/dev/loop3");
        assert_eq!(m[0].target, PathBuf::from("/tmp/a b/mnt/ext4"));
        assert_eq!(m[0].fstype, "ext4");
        assert_eq!(m[1].target, PathBuf::from("/proc"));
    }

    #[test]
    fn unescape_leaves_plain_backslashes() {
        assert_eq!(unescape("a\\134b"), "a\\b");
        assert_eq!(unescape("a\\9"), "a\\9");
        assert_eq!(unescape("end\\"), "end\\");
        assert_eq!(unescape("big\\777"), "big\\777");
    }

    #[test]
    fn swaps_skip_the_heading() {
        let text = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n\
                    /dev/vdb                                partition\t4194300\t\t0\t\t-2\n\
                    /swap\\040file                           file\t\t1048572\t\t0\t\t-3\n";
        assert_eq!(parse_swaps(text), vec!["/dev/vdb", "/swap file"]);
        assert!(parse_swaps("Filename Type Size Used Priority\n").is_empty());
    }
}
