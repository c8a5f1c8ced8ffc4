//! What a lab is asked to be: the filesystem kinds it can make, their minimum sizes, and the
//! parsing of `--fs` and `--size`. Pure functions; the errors are sentences for a person.

use candor_model::units::{format_bytes, ByteStyle};
use std::fmt;

/// A filesystem the lab knows how to make on a loop device.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum FsKind {
    Ext4,
    Xfs,
    Btrfs,
}

impl FsKind {
    pub const ALL: [FsKind; 3] = [FsKind::Ext4, FsKind::Xfs, FsKind::Btrfs];

    pub fn name(self) -> &'static str {
        match self {
            FsKind::Ext4 => "ext4",
            FsKind::Xfs => "xfs",
            FsKind::Btrfs => "btrfs",
        }
    }

    pub fn from_name(name: &str) -> Option<FsKind> {
        FsKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The smallest filesystem its mkfs accepts (measured: mkfs.xfs refuses below 300 MiB,
    /// mkfs.btrfs below 109 MiB).
    pub fn min_size(self) -> u64 {
        match self {
            FsKind::Ext4 => 16 << 20,
            FsKind::Xfs => 300 << 20,
            FsKind::Btrfs => 110 << 20,
        }
    }

    /// The mkfs program and its arguments before the device. ext4's inode tables and journal
    /// are written at mkfs time: lazy initialisation would otherwise keep writing in the
    /// background after the mount and disturb the first benchmarks.
    pub fn mkfs(self) -> (&'static str, &'static [&'static str]) {
        match self {
            FsKind::Ext4 => (
                "mkfs.ext4",
                &["-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0"],
            ),
            FsKind::Xfs => ("mkfs.xfs", &["-q", "-f"]),
            FsKind::Btrfs => ("mkfs.btrfs", &["-q", "-f"]),
        }
    }
}

impl FsKind {
    /// The Debian package that provides this filesystem's mkfs.
    pub fn package(self) -> &'static str {
        match self {
            FsKind::Ext4 => "e2fsprogs",
            FsKind::Xfs => "xfsprogs",
            FsKind::Btrfs => "btrfs-progs",
        }
    }
}

impl fmt::Display for FsKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Parses `ext4,xfs,btrfs`: known names, no duplicates, at least one. Order is kept.
pub fn parse_fs_list(text: &str) -> Result<Vec<FsKind>, String> {
    let mut out: Vec<FsKind> = Vec::new();
    for raw in text.split(',') {
        let name = raw.trim().to_ascii_lowercase();
        if name.is_empty() {
            return Err(format!(
                "--fs {text:?} has an empty name; give a comma-separated list such as ext4,xfs,btrfs"
            ));
        }
        let kind = FsKind::from_name(&name).ok_or_else(|| {
            format!("--fs: the lab cannot make {name:?}; it knows ext4, xfs and btrfs")
        })?;
        if out.contains(&kind) {
            return Err(format!(
                "--fs names {kind} twice; name each filesystem once"
            ));
        }
        out.push(kind);
    }
    Ok(out)
}

/// Parses `--size`: `4g`, `512M`, `300MiB`, `1.5g` or `1073741824` (binary units: k = 1024;
/// `candor_model::units::parse_size`, as every size option takes it).
pub fn parse_size(text: &str) -> Result<u64, String> {
    candor_model::units::parse_size(text).map_err(|e| format!("--size: {e}"))
}

/// Checks `size` against every requested filesystem's minimum.
pub fn check_size(size: u64, kinds: &[FsKind]) -> Result<(), String> {
    for &k in kinds {
        if size < k.min_size() {
            return Err(format!(
                "--size {} is too small for {k}, which needs at least {}",
                format_bytes(size, ByteStyle::PROSE),
                format_bytes(k.min_size(), ByteStyle::PROSE)
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fs_lists() {
        assert_eq!(
            parse_fs_list("ext4,xfs,btrfs").unwrap(),
            vec![FsKind::Ext4, FsKind::Xfs, FsKind::Btrfs]
        );
        assert_eq!(parse_fs_list(" XFS ").unwrap(), vec![FsKind::Xfs]);
        assert!(parse_fs_list("ext4,zfs").unwrap_err().contains("\"zfs\""));
        assert!(parse_fs_list("ext4,,xfs").unwrap_err().contains("empty"));
        assert!(parse_fs_list("ext4,ext4").unwrap_err().contains("twice"));
        assert!(parse_fs_list("").is_err());
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4g").unwrap(), 4 << 30);
        assert_eq!(parse_size("512M").unwrap(), 512 << 20);
        assert_eq!(parse_size("300MiB").unwrap(), 300 << 20);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("1t").unwrap(), 1 << 40);
        assert_eq!(parse_size("1.5g").unwrap(), 3 << 29);
        assert_eq!(
            parse_size("4x").unwrap_err(),
            "--size: '4x' is not a size: write a number with an optional unit b, k, m, g or t (binary), e.g. 4k or 1g"
        );
        for bad in ["", "g", "4x", "-1g", "0", "99999999999t"] {
            assert!(parse_size(bad).is_err(), "{bad} should be refused");
        }
    }

    #[test]
    fn minimum_sizes() {
        assert!(check_size(300 << 20, &FsKind::ALL).is_ok());
        let e = check_size(200 << 20, &[FsKind::Ext4, FsKind::Xfs]).unwrap_err();
        assert!(e.contains("xfs") && e.contains("300 MiB"), "{e}");
        assert!(check_size(100 << 20, &[FsKind::Btrfs]).is_err());
    }
}
