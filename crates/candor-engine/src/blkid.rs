//! What a block device holds, as libblkid sees it: every filesystem, RAID, crypto,
//! swap and partition-table signature util-linux knows, the same list `blkid -p` and
//! `wipefs` use. libblkid is loaded at run time (`libblkid.so.1`, in every Linux
//! distribution's util-linux), so building candor needs no development package; where it
//! cannot be loaded, `blkid -p` is asked instead; where neither works the probe fails and
//! says why (a device is never taken to be blank because it could not be checked).

use std::ffi::{c_char, c_int, c_void, CStr};
use std::path::Path;
use std::process::Command;

/// What a probe found on a device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Found {
    /// No signature at all.
    Nothing,
    /// A signature: `kind` is libblkid's TYPE (or PTTYPE for a partition table), `usage`
    /// its USAGE ("filesystem", "raid", "crypto", "other"; "partition table" for a
    /// PTTYPE), `by` which probe found it.
    Signature {
        kind: String,
        usage: String,
        by: &'static str,
    },
    /// More than one signature, which libblkid refuses to choose between (an ambivalent
    /// result): something is there.
    Several { by: &'static str },
}

impl Found {
    /// The signature in words, e.g. "a minix filesystem (found by libblkid)".
    pub fn describe(&self) -> Option<String> {
        match self {
            Found::Nothing => None,
            Found::Signature { kind, usage, by } => {
                Some(format!("{} (found by {by})", describe(kind, usage)))
            }
            Found::Several { by } => Some(format!(
                "more than one filesystem or other signature (found by {by})"
            )),
        }
    }
}

/// The words for a libblkid TYPE/PTTYPE and its USAGE.
pub fn describe(kind: &str, usage: &str) -> String {
    let named = match kind {
        "ext2" | "ext3" | "ext4" | "ext4dev" | "jbd" => Some("an ext2/3/4 filesystem"),
        "swap" | "swsuspend" => Some("a Linux swap area"),
        "LVM2_member" | "LVM1_member" => Some("an LVM physical volume"),
        "crypto_LUKS" => Some("a LUKS encrypted volume"),
        "linux_raid_member" => Some("an md RAID member"),
        "gpt" | "PMBR" => Some("a GPT partition table"),
        "dos" => Some("a DOS partition table"),
        _ => None,
    };
    if let Some(n) = named {
        return n.to_string();
    }
    let noun = match usage {
        "filesystem" => "filesystem",
        "raid" => "RAID member",
        "crypto" => "encrypted volume",
        "partition table" => "partition table",
        _ => "signature",
    };
    let article = if kind
        .chars()
        .next()
        .is_some_and(|c| "aeiouAEIOU".contains(c))
    {
        "an"
    } else {
        "a"
    };
    format!("{article} {kind} {noun}")
}

/// Probes the device open on `fd` (named `path` for the fallback and the messages): by
/// libblkid, else by `blkid -p`. Errors are the sentence to print.
pub fn probe(fd: c_int, path: &Path) -> Result<Found, String> {
    probe_by(Lib::load(), "blkid", fd, path)
}

/// [`probe`] with the library as loaded and the fallback program named `blkid`.
fn probe_by(
    lib: Result<Lib, String>,
    blkid: &str,
    fd: c_int,
    path: &Path,
) -> Result<Found, String> {
    let lib = match lib {
        Ok(lib) => return lib.probe(fd),
        Err(e) => e,
    };
    by_program(blkid, path).map_err(|program| {
        format!(
            "the signature check of {} could not run: libblkid could not be loaded ({lib}) and {program}; install util-linux's libblkid1 (or blkid) so that candor can see what the device holds",
            path.display()
        )
    })
}

/// The libblkid calls candor makes, resolved from the loaded library.
struct Lib {
    _lib: libloading::Library,
    new_probe: unsafe extern "C" fn() -> *mut c_void,
    set_device: unsafe extern "C" fn(*mut c_void, c_int, i64, i64) -> c_int,
    enable_superblocks: unsafe extern "C" fn(*mut c_void, c_int) -> c_int,
    superblocks_flags: unsafe extern "C" fn(*mut c_void, c_int) -> c_int,
    enable_partitions: unsafe extern "C" fn(*mut c_void, c_int) -> c_int,
    safeprobe: unsafe extern "C" fn(*mut c_void) -> c_int,
    lookup:
        unsafe extern "C" fn(*mut c_void, *const c_char, *mut *const c_char, *mut usize) -> c_int,
    free_probe: unsafe extern "C" fn(*mut c_void),
}

// blkid.h's flags for the superblocks chain.
const SUBLKS_TYPE: c_int = 1 << 5;
const SUBLKS_USAGE: c_int = 1 << 7;
/// Report a superblock even when its checksum is wrong: a damaged filesystem is still
/// someone's data.
const SUBLKS_BADCSUM: c_int = 1 << 10;

impl Lib {
    fn load() -> Result<Lib, String> {
        // SAFETY: loading libblkid runs no initialisers with preconditions; its symbols are
        // resolved with the signatures blkid.h gives them.
        unsafe {
            let lib = libloading::Library::new("libblkid.so.1").map_err(|e| e.to_string())?;
            macro_rules! sym {
                ($name:literal) => {
                    *lib.get($name).map_err(|e| e.to_string())?
                };
            }
            Ok(Lib {
                new_probe: sym!(b"blkid_new_probe\0"),
                set_device: sym!(b"blkid_probe_set_device\0"),
                enable_superblocks: sym!(b"blkid_probe_enable_superblocks\0"),
                superblocks_flags: sym!(b"blkid_probe_set_superblocks_flags\0"),
                enable_partitions: sym!(b"blkid_probe_enable_partitions\0"),
                safeprobe: sym!(b"blkid_do_safeprobe\0"),
                lookup: sym!(b"blkid_probe_lookup_value\0"),
                free_probe: sym!(b"blkid_free_probe\0"),
                _lib: lib,
            })
        }
    }

    /// Probes the whole device on `fd` (superblocks and partition tables).
    fn probe(&self, fd: c_int) -> Result<Found, String> {
        // SAFETY: the probe is made, used and freed here; fd stays open for the call.
        unsafe {
            let pr = (self.new_probe)();
            if pr.is_null() {
                return Err("libblkid could not make a probe (out of memory)".into());
            }
            let r = self.probe_with(pr, fd);
            (self.free_probe)(pr);
            r
        }
    }

    /// # Safety
    /// `pr` is a live probe and `fd` an open descriptor.
    unsafe fn probe_with(&self, pr: *mut c_void, fd: c_int) -> Result<Found, String> {
        let by = "libblkid";
        if (self.set_device)(pr, fd, 0, 0) != 0 {
            return Err("libblkid could not read the device".into());
        }
        (self.enable_superblocks)(pr, 1);
        (self.superblocks_flags)(pr, SUBLKS_TYPE | SUBLKS_USAGE | SUBLKS_BADCSUM);
        (self.enable_partitions)(pr, 1);
        match (self.safeprobe)(pr) {
            1 => Ok(Found::Nothing),
            -2 => Ok(Found::Several { by }),
            0 => {
                let value = |name: &CStr| -> Option<String> {
                    let mut data: *const c_char = std::ptr::null();
                    let mut len = 0usize;
                    // SAFETY: pr is live; data points into the probe's own value, read
                    // before the probe is freed.
                    let r = unsafe { (self.lookup)(pr, name.as_ptr(), &mut data, &mut len) };
                    (r == 0 && !data.is_null()).then(|| {
                        unsafe { CStr::from_ptr(data) }
                            .to_string_lossy()
                            .into_owned()
                    })
                };
                Ok(signature(
                    value(c"TYPE"),
                    value(c"PTTYPE"),
                    || value(c"USAGE"),
                    by,
                ))
            }
            _ => Err(format!(
                "libblkid could not probe the device: {}",
                std::io::Error::last_os_error()
            )),
        }
    }
}

/// What a probe that found something names, from its TYPE, PTTYPE and USAGE values (USAGE
/// asked only when there is a TYPE).
fn signature(
    kind: Option<String>,
    pttype: Option<String>,
    usage: impl FnOnce() -> Option<String>,
    by: &'static str,
) -> Found {
    match (kind, pttype) {
        (Some(kind), _) => Found::Signature {
            kind,
            usage: usage().unwrap_or_default(),
            by,
        },
        (None, Some(kind)) => Found::Signature {
            kind,
            usage: "partition table".into(),
            by,
        },
        // Found, but not said what: still something.
        (None, None) => Found::Signature {
            kind: "unnamed".into(),
            usage: String::new(),
            by,
        },
    }
}

/// `blkid -p -o export PATH`: exit 0 with TYPE=/PTTYPE=/USAGE= lines, 2 when nothing is
/// found, 8 when the result is ambivalent. The error says what went wrong.
fn by_program(blkid: &str, path: &Path) -> Result<Found, String> {
    let by = "blkid -p";
    let o = Command::new(blkid)
        .args(["-p", "-o", "export"])
        .arg(path)
        .output()
        .map_err(|e| format!("blkid could not be run ({e})"))?;
    parse_export(o.status.code(), &String::from_utf8_lossy(&o.stdout), by).ok_or_else(|| {
        format!(
            "blkid -p failed ({}: {})",
            o.status,
            String::from_utf8_lossy(&o.stderr).trim()
        )
    })
}

/// What `blkid -p -o export` said, from its exit code and output; None when it failed.
fn parse_export(code: Option<i32>, out: &str, by: &'static str) -> Option<Found> {
    let value = |k: &str| {
        out.lines()
            .find_map(|l| l.strip_prefix(k)?.strip_prefix('='))
            .map(str::to_string)
    };
    match code {
        Some(2) => Some(Found::Nothing),
        Some(8) => Some(Found::Several { by }),
        Some(0) => Some(signature(
            value("TYPE"),
            value("PTTYPE"),
            || value("USAGE"),
            by,
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_are_said_in_words() {
        assert_eq!(describe("minix", "filesystem"), "a minix filesystem");
        assert_eq!(describe("ext4", "filesystem"), "an ext2/3/4 filesystem");
        assert_eq!(describe("swap", "other"), "a Linux swap area");
        assert_eq!(
            describe("atari", "partition table"),
            "an atari partition table"
        );
        assert_eq!(describe("bcache", "other"), "a bcache signature");
    }

    #[test]
    fn blkid_export_output_is_read_by_its_exit_code() {
        let by = "blkid -p";
        assert_eq!(parse_export(Some(2), "", by), Some(Found::Nothing));
        assert_eq!(parse_export(Some(8), "", by), Some(Found::Several { by }));
        assert_eq!(
            parse_export(
                Some(0),
                "DEVNAME=/dev/loop3\nTYPE=minix\nUSAGE=filesystem\n",
                by
            ),
            Some(Found::Signature {
                kind: "minix".into(),
                usage: "filesystem".into(),
                by
            })
        );
        assert_eq!(
            parse_export(Some(0), "PTUUID=x\nPTTYPE=gpt\n", by)
                .and_then(|f| f.describe())
                .as_deref(),
            Some("a GPT partition table (found by blkid -p)")
        );
        assert_eq!(parse_export(Some(4), "", by), None, "usage error");
        assert_eq!(parse_export(None, "", by), None, "killed");
    }

    /// A minix filesystem (not in candor's own table) made in a file: libblkid names it,
    /// and so does `blkid -p`, the fallback.
    #[test]
    fn a_minix_filesystem_is_found_by_libblkid_and_by_blkid() {
        if !candor_testkit::need_programs(&["mkfs.minix", "blkid"]) {
            return;
        }
        let f = tempfile::NamedTempFile::new().unwrap();
        f.as_file().set_len(4 << 20).unwrap();
        let ok = Command::new("mkfs.minix").arg(f.path()).output().unwrap();
        assert!(
            ok.status.success(),
            "{}",
            String::from_utf8_lossy(&ok.stderr)
        );
        use std::os::fd::AsRawFd;
        let lib = Lib::load().expect("libblkid.so.1 loads");
        let want = |by| Found::Signature {
            kind: "minix".into(),
            usage: "filesystem".into(),
            by,
        };
        assert_eq!(lib.probe(f.as_file().as_raw_fd()), Ok(want("libblkid")));
        assert_eq!(by_program("blkid", f.path()), Ok(want("blkid -p")));
        // Without the library, the program is asked.
        assert_eq!(
            probe_by(Err("gone".into()), "blkid", -1, f.path()),
            Ok(want("blkid -p"))
        );
    }

    /// Neither the library nor the program: the probe fails with a sentence, and the
    /// device is never taken to be blank.
    #[test]
    fn without_libblkid_and_blkid_the_check_fails_and_says_so() {
        let f = tempfile::NamedTempFile::new().unwrap();
        let e = probe_by(
            Err("libblkid.so.1: cannot open shared object file".into()),
            "candor-no-such-blkid",
            -1,
            f.path(),
        )
        .unwrap_err();
        assert!(
            e.starts_with(&format!(
                "the signature check of {} could not run: libblkid could not be loaded (libblkid.so.1: cannot open shared object file) and blkid could not be run (",
                f.path().display()
            )),
            "{e}"
        );
        assert!(e.contains("install util-linux's libblkid1"), "{e}");
    }

    #[test]
    fn libblkid_loads_here_and_finds_nothing_on_a_zeroed_file() {
        // libblkid1 is part of every installation candor supports (util-linux).
        let lib = Lib::load().expect("libblkid.so.1 loads");
        let f = tempfile::tempfile().unwrap();
        f.set_len(1 << 20).unwrap();
        use std::os::fd::AsRawFd;
        assert_eq!(lib.probe(f.as_raw_fd()), Ok(Found::Nothing));
    }
}
