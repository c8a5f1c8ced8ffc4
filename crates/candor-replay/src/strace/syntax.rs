//! One call's text taken apart: its arguments split at their top-level commas, a
//! descriptor with its `<path>`, a quoted string, a number, the `-tt` time, and the
//! return value with its errno name and the `-T` duration.

/// The index of the `"` closing the quoted string that opens at `open` (past a `\"`), or
/// the end of the text.
fn closing_quote(b: &[u8], open: usize) -> usize {
    let mut i = open + 1;
    while i < b.len() && b[i] != b'"' {
        if b[i] == b'\\' {
            i += 1;
        }
        i += 1;
    }
    i
}

/// The index of the `>` closing a descriptor's `<path>` that opens at `open`: the first
/// one followed by the end of the text or one of `stops` (a path may hold `>`), else the
/// last one; the end of the text when there is none.
fn path_end(b: &[u8], open: usize, stops: &[u8]) -> usize {
    let mut j = open + 1;
    let mut end = None;
    while j < b.len() {
        if b[j] == b'>' {
            end = Some(j);
            if b.get(j + 1).is_none_or(|c| stops.contains(c)) {
                break;
            }
        }
        j += 1;
    }
    end.unwrap_or(j)
}

/// Splits `args` at its top-level commas, respecting quotes, brackets and `N<path>`.
pub(super) fn split_args(s: &str) -> Vec<String> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => i = closing_quote(b, i),
            b'<' if i > 0
                && (b[i - 1].is_ascii_digit() || b.get(i - 8..i) == Some(b"AT_FDCWD")) =>
            {
                i = path_end(b, i, b",) ]}");
            }
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            b',' if depth == 0 => {
                out.push(s[start..i].trim().to_string());
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    let last = s[start..].trim();
    if !last.is_empty() || !out.is_empty() {
        out.push(last.to_string());
    }
    out
}

/// The index of the `)` closing the call's arguments that begin at `from`.
pub(super) fn close_paren(s: &str, from: usize) -> Option<usize> {
    let b = s.as_bytes();
    let mut depth = 0i32;
    let mut i = from;
    while i < b.len() {
        match b[i] {
            b'"' => i = closing_quote(b, i),
            b'<' if i > 0 && b[i - 1].is_ascii_digit() => i = path_end(b, i, b",) "),
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => {
                if depth == 0 {
                    return Some(i);
                }
                depth -= 1;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// `3</data/x.db>` as (3, Some("/data/x.db")); `AT_FDCWD` as (-100, its path if shown).
pub(super) fn fd_arg(s: &str) -> (i64, Option<String>) {
    let (num, path) = match s.find('<') {
        Some(p) if s.ends_with('>') => (&s[..p], Some(s[p + 1..s.len() - 1].to_string())),
        _ => (s, None),
    };
    let n = if num.trim() == "AT_FDCWD" {
        -100
    } else {
        num.trim().parse().unwrap_or(-1)
    };
    let path = path.map(|p| p.strip_suffix(" (deleted)").unwrap_or(&p).to_string());
    (n, path)
}

/// A quoted string argument, unescaped as far as paths need.
pub(super) fn string_arg(s: &str) -> Option<String> {
    let s = s.trim();
    let inner = s.strip_prefix('"')?;
    let end = inner.rfind('"')?;
    let mut out = String::new();
    let mut chars = inner[..end].chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some(o) => out.push(o),
                None => {}
            }
        } else {
            out.push(c);
        }
    }
    Some(out)
}

/// A decimal or `0x` number; 0 when it is neither.
pub(super) fn num(s: &str) -> u64 {
    let s = s.trim();
    if let Some(h) = s.strip_prefix("0x") {
        return u64::from_str_radix(h, 16).unwrap_or(0);
    }
    s.parse().unwrap_or(0)
}

/// The size in a stat structure as strace writes it (`{st_mode=S_IFREG|0644,
/// st_size=4096, ...}`).
/// The size in a stat buffer as strace prints it: `st_size=` (stat, newfstatat) or
/// `stx_size=` (statx).
pub(super) fn st_size(arg: &str) -> Option<u64> {
    let (p, n) = match arg.find("st_size=") {
        Some(p) => (p, 8),
        None => (arg.find("stx_size=")?, 9),
    };
    Some(num(arg[p + n..].split([',', '}']).next().unwrap_or("0")))
}

/// `HH:MM:SS.micro` as microseconds of the day.
pub(super) fn time_of(s: &str) -> Option<u64> {
    let (hms, frac) = s.split_once('.')?;
    let mut it = hms.split(':');
    let h: u64 = it.next()?.parse().ok()?;
    let m: u64 = it.next()?.parse().ok()?;
    let sec: u64 = it.next()?.parse().ok()?;
    if it.next().is_some() || frac.len() != 6 {
        return None;
    }
    let us: u64 = frac.parse().ok()?;
    Some(((h * 60 + m) * 60 + sec) * 1_000_000 + us)
}

/// The return value and duration after `) = `: "4096 <0.000010>".
pub(super) fn tail(rest: &str) -> Option<(String, Option<String>, u64)> {
    let rest = rest.trim();
    let rest = rest.strip_prefix('=')?.trim();
    let (body, dur) = match rest.rfind(" <") {
        Some(p) if rest.ends_with('>') => {
            let d: f64 = rest[p + 2..rest.len() - 1].parse().ok()?;
            (&rest[..p], (d * 1e6).round() as u64)
        }
        _ => (rest, 0),
    };
    // "-1 ENOENT (No such file or directory)" keeps its errno name.
    let body = body.trim();
    if let Some(e) = body.strip_prefix("-1 ") {
        let name = e.split_whitespace().next().unwrap_or("EIO");
        return Some((format!("-{}", errno_of(name)), None, dur));
    }
    let (v, path) = fd_arg(body.split_whitespace().next().unwrap_or(body));
    let ret = if body.starts_with('?') {
        "?".to_string()
    } else if body.starts_with("0x") {
        num(body.split_whitespace().next().unwrap_or("0")).to_string()
    } else {
        v.to_string()
    };
    Some((ret, path, dur))
}

/// An errno's name as its number (EIO when unknown).
pub fn errno_of(name: &str) -> i64 {
    match name {
        "EPERM" => 1,
        "ENOENT" => 2,
        "EINTR" => 4,
        "EIO" => 5,
        "EBADF" => 9,
        "EAGAIN" => 11,
        "ENOMEM" => 12,
        "EACCES" => 13,
        "EEXIST" => 17,
        "EXDEV" => 18,
        "ENOTDIR" => 20,
        "EISDIR" => 21,
        "EINVAL" => 22,
        "ENOSPC" => 28,
        "ESPIPE" => 29,
        "EROFS" => 30,
        "ENOTEMPTY" => 39,
        "ELOOP" => 40,
        "EOPNOTSUPP" => 95,
        _ => 5,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_split_past_quotes_and_descriptor_paths() {
        let args = r#"3</w/a>b, c.db>, "x\"y, z", [{iov_base="a", iov_len=1}], 2) = 1"#;
        let close = close_paren(args, 0).expect("closed");
        assert_eq!(&args[close..], ") = 1");
        assert_eq!(
            split_args(&args[..close]),
            [
                "3</w/a>b, c.db>",
                r#""x\"y, z""#,
                r#"[{iov_base="a", iov_len=1}]"#,
                "2"
            ]
        );
        assert_eq!(fd_arg("3</w/a>b, c.db>"), (3, Some("/w/a>b, c.db".into())));
        assert_eq!(split_args("AT_FDCWD</w>, \"d\""), ["AT_FDCWD</w>", "\"d\""]);
    }

    #[test]
    fn the_size_is_read_from_stat_and_statx_buffers() {
        assert_eq!(
            st_size("{st_mode=S_IFREG|0644, st_size=4608, ...}"),
            Some(4608)
        );
        assert_eq!(
            st_size("{stx_mask=STATX_BASIC_STATS, stx_attributes=0, stx_size=1000000, ...}"),
            Some(1_000_000)
        );
        assert_eq!(st_size("{stx_mask=STATX_BASIC_STATS, ...}"), None);
    }
}
