//! What a result file's strings (test names, targets, notes, host names: anything a file
//! can say) may not do in candor's outputs.
//!
//! - In text a terminal shows (`table`, `csv`, `markdown`, `iozone`, `excel`, `openmetrics`,
//!   and compare's `table`, `markdown`, `csv`, `github`): no control character acts.
//!   `terminal` writes each C0 control but newline and tab, DEL, each C1 control and each
//!   bidirectional override or isolate as its Rust escape (`\u{1b}`, `\u{9b}`, `\u{202e}`),
//!   so an ESC, BEL or CR from a file is shown, not obeyed, and the line stays one line.
//!   OpenMetrics label values, whose only escapes are `\\`, `\"` and `\n`, get U+FFFD
//!   instead, so that Prometheus still parses them.
//! - In Markdown (`md`, `code`): a string stays the text of its cell or line. Pipes,
//!   backticks, brackets (no link, no image), angle brackets (no HTML, no autolink),
//!   backslashes and a leading `#` are backslash-escaped (emphasis marks are left: they can
//!   only change a string's own look), newlines become spaces; a code span
//!   gets a fence longer than any run of backticks inside it.
//! - In HTML, `svg::esc` escapes `&`, `<`, `>` and `"` in text and in attribute values
//!   (every attribute candor writes is double-quoted).

use std::borrow::Cow;

/// True for a character that moves a terminal rather than printing: C0 controls but
/// newline and tab, DEL, C1 controls, and the bidirectional overrides and isolates.
pub fn acts(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}')
}

/// `s` with every character that would act on a terminal written as its escape.
pub fn terminal(s: &str) -> Cow<'_, str> {
    if !s.chars().any(acts) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if acts(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `s` as Markdown text that stays in its table cell or line.
pub fn md(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for (i, c) in s.chars().enumerate() {
        match c {
            '\\' | '`' | '|' | '[' | ']' | '<' | '>' => {
                out.push('\\');
                out.push(c);
            }
            '#' if i == 0 => out.push_str("\\#"),
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// `s` as a Markdown code span: fenced by more backticks than any run inside it, on one line.
pub fn code(s: &str) -> String {
    let one_line: String = s
        .chars()
        .map(|c| if c == '\n' || c == '\r' { ' ' } else { c })
        .collect();
    let longest = one_line
        .split(|c| c != '`')
        .map(|run| run.len())
        .max()
        .unwrap_or(0);
    if longest == 0 {
        return format!("`{one_line}`");
    }
    let fence = "`".repeat(longest + 1);
    format!("{fence} {one_line} {fence}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_are_shown_not_obeyed() {
        assert_eq!(terminal("plain\ttab\nline"), "plain\ttab\nline");
        assert_eq!(
            terminal("a\u{1b}[2Jb\u{7}c\rd\u{9b}e\u{202e}f\u{7f}"),
            "a\\u{1b}[2Jb\\u{7}c\\u{d}d\\u{9b}e\\u{202e}f\\u{7f}"
        );
    }

    #[test]
    fn markdown_text_stays_in_its_cell() {
        assert_eq!(
            md("# a|b `c` <img src=x> [l](http://x) _e_\nnext"),
            "\\# a\\|b \\`c\\` \\<img src=x\\> \\[l\\](http://x) _e_ next"
        );
        assert_eq!(md("/tmp/x"), "/tmp/x");
        assert_eq!(code("/tmp/x"), "`/tmp/x`");
        assert_eq!(code("a`b``c"), "``` a`b``c ```");
    }
}
