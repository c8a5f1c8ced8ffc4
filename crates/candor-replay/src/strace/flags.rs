//! The x86_64 open flags and the flag words of the calls, read from their names as strace
//! writes them (`O_RDWR|O_CREAT`, `SYNC_FILE_RANGE_WRITE`) or as numbers.

use super::syntax::num;

/// Each open flag strace names, defined once: its constant (the x86_64 value) and the name
/// the parser reads it by.
macro_rules! open_flags {
    ($($name:ident = $value:literal),* $(,)?) => {
        $(pub const $name: u32 = $value;)*

        /// A flag's value from its name; 0 for O_RDONLY, O_LARGEFILE (0 on x86_64) and a
        /// name it does not know.
        fn flag_value(name: &str) -> u32 {
            match name {
                $(stringify!($name) => $name,)*
                _ => 0,
            }
        }
    };
}

open_flags! {
    O_WRONLY = 0o1, O_RDWR = 0o2, O_CREAT = 0o100, O_EXCL = 0o200, O_TRUNC = 0o1000,
    O_APPEND = 0o2000, O_NONBLOCK = 0o4000, O_DSYNC = 0o10000, O_DIRECT = 0o40000,
    O_DIRECTORY = 0o200000, O_NOFOLLOW = 0o400000, O_CLOEXEC = 0o2000000,
    O_SYNC = 0o4010000, O_NOATIME = 0o1000000,
}

/// The access mode's bits of the open flags.
pub const O_ACCMODE: u32 = 0o3;
/// The most iovecs a readv or writev takes (Linux's UIO_MAXIOV).
pub const IOV_MAX: u32 = 1024;

/// `O_RDWR|O_CREAT`, `0x241` or `0644` as the flags' value; an unknown name is 0.
pub(super) fn parse_flags(s: &str) -> u32 {
    s.split('|')
        .map(|f| {
            let f = f.trim();
            if let Some(h) = f.strip_prefix("0x") {
                u32::from_str_radix(h, 16).unwrap_or(0)
            } else if f.starts_with('0') && f.len() > 1 {
                u32::from_str_radix(f, 8).unwrap_or(0)
            } else {
                f.parse().unwrap_or_else(|_| flag_value(f))
            }
        })
        .fold(0, |a, b| a | b)
}

/// `sync_file_range`'s flags: SYNC_FILE_RANGE_WAIT_BEFORE (1), _WRITE (2), _WAIT_AFTER (4).
pub(super) fn sfr_flags(s: &str) -> u32 {
    let mut f = 0;
    if s.contains("SYNC_FILE_RANGE_WAIT_BEFORE") {
        f |= 1;
    }
    if s.contains("SYNC_FILE_RANGE_WRITE") {
        f |= 2;
    }
    if s.contains("SYNC_FILE_RANGE_WAIT_AFTER") {
        f |= 4;
    }
    f | (num(s) as u32 & 7)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_flags_are_read_by_name_or_number() {
        assert_eq!(
            parse_flags("O_RDWR|O_CREAT|O_LARGEFILE|O_CLOEXEC"),
            O_RDWR | O_CREAT | O_CLOEXEC
        );
        assert_eq!(parse_flags("O_WRONLY|O_SYNC"), 0o4010001);
        assert_eq!(parse_flags("0x241"), 0x241);
        assert_eq!(parse_flags("0644"), 0o644);
        assert_eq!(parse_flags("O_RDONLY|O_SOMETHING_NEW"), 0);
        assert_eq!(
            sfr_flags("SYNC_FILE_RANGE_WAIT_BEFORE|SYNC_FILE_RANGE_WRITE"),
            3
        );
    }
}
