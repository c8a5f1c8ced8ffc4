//! A process's /proc/<pid>/stat (name and parent) and /proc/<pid>/fdinfo/<fd> (position and
//! open flags).

/// The command name and the parent pid from the text of /proc/<pid>/stat. The name may hold
/// spaces and parentheses, so the fields are counted after the last ')'.
pub fn parse_stat(text: &str) -> Option<(String, u32)> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text.get(open + 1..close)?.to_string();
    let mut rest = text.get(close + 1..)?.split_whitespace();
    let _state = rest.next()?;
    let ppid = rest.next()?.parse().ok()?;
    Some((comm, ppid))
}

/// What /proc/<pid>/fdinfo/<fd> says: the file position and the open flags.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FdInfo {
    pub pos: u64,
    pub flags: u32,
}

impl FdInfo {
    /// Parses the text of an fdinfo file (unknown or odd lines are ignored).
    pub fn parse(text: &str) -> FdInfo {
        let mut f = FdInfo::default();
        for line in text.lines() {
            if let Some(v) = line.strip_prefix("pos:") {
                f.pos = v.trim().parse().unwrap_or(0);
            } else if let Some(v) = line.strip_prefix("flags:") {
                f.flags = u32::from_str_radix(v.trim(), 8).unwrap_or(0);
            }
        }
        f
    }

    /// Opened for reading (O_RDONLY or O_RDWR).
    pub fn reads(&self) -> bool {
        matches!(self.flags & 3, 0 | 2)
    }

    /// Opened for writing (O_WRONLY or O_RDWR).
    pub fn writes(&self) -> bool {
        matches!(self.flags & 3, 1 | 2)
    }

    pub fn direct(&self) -> bool {
        self.flags & libc::O_DIRECT as u32 != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_survives_odd_command_names() {
        assert_eq!(
            parse_stat("123 (kworker/0:1-events) I 2 0 0 0"),
            Some(("kworker/0:1-events".to_string(), 2))
        );
        assert_eq!(
            parse_stat("77 (a) b) (c) S 1 77 77 0"),
            Some(("a) b) (c".to_string(), 1))
        );
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn fdinfo_position_and_flags() {
        let f = FdInfo::parse("pos:\t4096\nflags:\t0140002\nmnt_id:\t25\n");
        assert_eq!(f.pos, 4096);
        assert!(f.reads() && f.writes());
        assert!(f.direct(), "040000 is O_DIRECT on x86");
        let r = FdInfo::parse("pos: 0\nflags: 0100000\n");
        assert!(r.reads() && !r.writes() && !r.direct());
        assert_eq!(FdInfo::parse("::garbage"), FdInfo::default());
    }
}
