//! Reading a saved result back, with the checks that make a foreign, newer, hostile or huge
//! file a clear error rather than a half-rendered report or a machine out of memory:
//!
//! - only a regular file or a pipe is read, and at most a limit of bytes (`DEFAULT_MAX_INPUT`
//!   unless the command's `--max-input-size` says otherwise); a regular file over the limit is
//!   refused before a byte is read;
//! - the file is parsed as it streams in (no copy of its text, no intermediate JSON tree);
//! - every number in it is checked on the way in: a figure of `LARGEST_FIGURE` or more in
//!   size, which candor never writes, refuses the file, naming the field (the charts and
//!   every sum the reports make stay finite on what is left);
//! - every list, map and free-form value is charged its memory against a budget of
//!   `MEMORY_PER_BYTE` times the file's size plus `MEMORY_ALLOWANCE` (`bounded`), so a file
//!   whose text is cheap but whose model is dear is refused too.

use crate::units::{format_bytes, ByteStyle};
use crate::{RunDoc, SCHEMA_VERSION, TOOL};
use std::io::{BufReader, Read};
use std::path::Path;

/// The largest result file read unless the command is told otherwise (`--max-input-size`).
/// The biggest plan candor has, `--preset iozone` (130 size points x 22 tests), saves about
/// 10 KiB per result with the eBPF witness: some 30 MiB; this leaves room for several
/// targets, threads and long timelines.
pub const DEFAULT_MAX_INPUT: u64 = 256 << 20;

/// No figure candor writes comes near this size (bytes/s, seconds, counts: a u64 is below
/// 2e19); a number of this size or more in a file was put there by something else.
pub const LARGEST_FIGURE: f64 = 1e30;

/// The memory a file's model may take, per byte of the file, and besides.
const MEMORY_PER_BYTE: u64 = 6;
const MEMORY_ALLOWANCE: u64 = 64 << 20;

/// A number written in more characters than this is not candor's (an f64 takes at most 24).
const LONGEST_NUMBER: usize = 64;

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path} is not JSON ({reason}); give a file written by `candor run -o`")]
    NotJson { path: String, reason: String },
    #[error("{path} is not a candor result (no \"tool\": \"candor\"); give a file written by `candor run -o`")]
    NotCandor { path: String },
    #[error("{path} has schema_version {found}, newer than this candor understands ({SCHEMA_VERSION}); upgrade candor to read it")]
    Newer { path: String, found: u64 },
    #[error("{path} looks like a candor result but does not fit the schema ({reason})")]
    Malformed { path: String, reason: String },
    #[error("{path} is not a regular file ({what}); give a file written by `candor run -o`")]
    NotAFile { path: String, what: &'static str },
    #[error("{path} is {}, over the limit of {} on a result file; give --max-input-size with a larger size to read it", size_words(*.size), format_bytes(*.limit, ByteStyle::PROSE))]
    TooLarge {
        path: String,
        /// None: a pipe, which gave more than the limit.
        size: Option<u64>,
        limit: u64,
    },
    #[error("{path} has a figure out of range in {field:?} ({value}): candor writes none of 1e30 or more in size, so the file was altered or not written by candor; give a file written by `candor run -o`")]
    OutOfRange {
        path: String,
        field: String,
        value: String,
    },
    #[error("{path} would take more than {} of memory to read, {MEMORY_PER_BYTE} times its size: its lists are far denser than candor writes them, so the file was altered or not written by candor; give a file written by `candor run -o`", format_bytes(*.budget, ByteStyle::PROSE))]
    TooDear { path: String, budget: u64 },
}

fn size_words(size: Option<u64>) -> String {
    match size {
        Some(n) => format_bytes(n, ByteStyle::PROSE),
        None => "a pipe that gave more bytes than that".into(),
    }
}

/// What the byte scanner found wrong.
#[derive(Debug)]
enum Fault {
    TooLarge,
    OutOfRange { field: String, value: String },
}

/// Where a JSON number or string is, as the scanner reads byte by byte.
#[derive(Debug, Default, PartialEq)]
enum At {
    #[default]
    Between,
    Text,
    Escape,
    Number,
}

/// Checks every number of a JSON text as it streams past, remembering the last object key
/// seen to name the field. It does not check the syntax (the parser does).
#[derive(Debug, Default)]
struct Scan {
    at: At,
    /// The last string (its first bytes) and whether a `:` may make it a key.
    text: Vec<u8>,
    key_candidate: bool,
    key: Vec<u8>,
    number: Vec<u8>,
}

const KEY_BYTES: usize = 64;

impl Scan {
    fn feed(&mut self, bytes: &[u8]) -> Result<(), Fault> {
        for &b in bytes {
            match self.at {
                At::Text => match b {
                    b'\\' => self.at = At::Escape,
                    b'"' => {
                        self.at = At::Between;
                        self.key_candidate = true;
                    }
                    _ if self.text.len() < KEY_BYTES => self.text.push(b),
                    _ => {}
                },
                At::Escape => {
                    self.at = At::Text;
                    if self.text.len() < KEY_BYTES {
                        self.text.push(b);
                    }
                }
                At::Number => {
                    if matches!(b, b'0'..=b'9' | b'+' | b'-' | b'.' | b'e' | b'E') {
                        if self.number.len() >= LONGEST_NUMBER {
                            return Err(self.fault("a number of more than 64 characters"));
                        }
                        self.number.push(b);
                    } else {
                        self.end()?;
                        self.between(b);
                    }
                }
                At::Between => self.between(b),
            }
        }
        Ok(())
    }

    fn between(&mut self, b: u8) {
        match b {
            b'"' => {
                self.at = At::Text;
                self.text.clear();
                self.key_candidate = false;
            }
            b'-' | b'0'..=b'9' => {
                self.at = At::Number;
                self.number.clear();
                self.number.push(b);
                self.key_candidate = false;
            }
            b':' => {
                if self.key_candidate {
                    self.key = self.text.clone();
                }
                self.key_candidate = false;
            }
            b' ' | b'\n' | b'\t' | b'\r' => {}
            _ => self.key_candidate = false,
        }
    }

    /// The end of a number: its value must be finite and below `LARGEST_FIGURE` in size.
    fn end(&mut self) -> Result<(), Fault> {
        self.at = At::Between;
        let text = String::from_utf8_lossy(&self.number);
        match text.parse::<f64>() {
            Ok(v) if v.is_finite() && v.abs() < LARGEST_FIGURE => Ok(()),
            Ok(_) => Err(self.fault(&text)),
            // Not a number after all ("-x"): the parser says what is wrong.
            Err(_) => Ok(()),
        }
    }

    /// The end of the text.
    fn finish(&mut self) -> Result<(), Fault> {
        if self.at == At::Number {
            self.end()?;
        }
        Ok(())
    }

    fn fault(&self, value: &str) -> Fault {
        let field = if self.key.is_empty() {
            "the top level".to_string()
        } else {
            String::from_utf8_lossy(&self.key).into_owned()
        };
        Fault::OutOfRange {
            field,
            value: value.to_string(),
        }
    }
}

/// A reader that stops at `limit` bytes and scans every number that passes.
struct Checked<R> {
    inner: R,
    read: u64,
    limit: u64,
    scan: Scan,
    fault: Option<Fault>,
}

impl<R: Read> Read for Checked<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.fault.is_none() {
            let n = self.inner.read(buf)?;
            self.read += n as u64;
            let outcome = if self.read > self.limit {
                Err(Fault::TooLarge)
            } else if n == 0 {
                self.scan.finish()
            } else {
                self.scan.feed(&buf[..n])
            };
            match outcome {
                Ok(()) => return Ok(n),
                Err(f) => self.fault = Some(f),
            }
        }
        Err(std::io::Error::other("the file was refused"))
    }
}

/// The parts of a file checked before the rest: a file that fails the model is first
/// checked to be candor's, and not newer.
#[derive(serde::Deserialize, Default)]
#[serde(default)]
struct Head {
    #[serde(deserialize_with = "crate::bounded::opt_value")]
    tool: Option<serde_json::Value>,
    #[serde(deserialize_with = "crate::bounded::opt_value")]
    schema_version: Option<serde_json::Value>,
}

fn judge_head(
    tool: Option<&serde_json::Value>,
    version: Option<&serde_json::Value>,
    path: &str,
) -> Result<(), LoadError> {
    if tool.and_then(|t| t.as_str()) != Some(TOOL) {
        return Err(LoadError::NotCandor {
            path: path.to_string(),
        });
    }
    let found = version.and_then(|v| v.as_u64()).unwrap_or(0);
    if found > SCHEMA_VERSION as u64 {
        return Err(LoadError::Newer {
            path: path.to_string(),
            found,
        });
    }
    Ok(())
}

/// Parses a result from a reader of at most `limit` bytes, whose model may take
/// `MEMORY_PER_BYTE` x `size` (plus the allowance); `again` reopens it to check its head
/// when it does not fit the model (None: it cannot be read twice).
fn read_doc<R: Read>(
    reader: R,
    path: &str,
    size: u64,
    limit: u64,
    again: &dyn Fn() -> Option<Box<dyn Read>>,
) -> Result<RunDoc, LoadError> {
    let budget = size
        .saturating_mul(MEMORY_PER_BYTE)
        .saturating_add(MEMORY_ALLOWANCE);
    let mut input = BufReader::with_capacity(
        64 << 10,
        Checked {
            inner: reader,
            read: 0,
            limit,
            scan: Scan::default(),
            fault: None,
        },
    );
    let (parsed, spent) =
        crate::bounded::with_budget(budget, || serde_json::from_reader::<_, RunDoc>(&mut input));
    let checked = input.into_inner();
    match checked.fault {
        Some(Fault::TooLarge) => {
            return Err(LoadError::TooLarge {
                path: path.to_string(),
                size: None,
                limit,
            })
        }
        Some(Fault::OutOfRange { field, value }) => {
            return Err(LoadError::OutOfRange {
                path: path.to_string(),
                field,
                value,
            })
        }
        None => {}
    }
    if spent {
        return Err(LoadError::TooDear {
            path: path.to_string(),
            budget,
        });
    }
    let e = match parsed {
        Ok(doc) => {
            judge_head(
                Some(&serde_json::Value::String(doc.tool.clone())),
                Some(&serde_json::Value::from(doc.schema_version)),
                path,
            )?;
            return Ok(doc);
        }
        Err(e) => e,
    };
    match e.classify() {
        serde_json::error::Category::Io => Err(LoadError::Io {
            path: path.to_string(),
            source: e.into(),
        }),
        serde_json::error::Category::Syntax | serde_json::error::Category::Eof => {
            Err(LoadError::NotJson {
                path: path.to_string(),
                reason: e.to_string(),
            })
        }
        serde_json::error::Category::Data => {
            // A file that does not fit: say first whether it is candor's and not newer.
            if let Some(r) = again() {
                let (head, _) = crate::bounded::with_budget(budget, || {
                    serde_json::from_reader::<_, Head>(BufReader::new(r.take(limit)))
                });
                if let Ok(h) = head {
                    judge_head(h.tool.as_ref(), h.schema_version.as_ref(), path)?;
                }
            }
            Err(LoadError::Malformed {
                path: path.to_string(),
                reason: e.to_string(),
            })
        }
    }
}

/// Parses a result from text; `path` is only used in messages.
pub fn parse_result(text: &str, path: &str) -> Result<RunDoc, LoadError> {
    let bytes = text.as_bytes();
    read_doc(bytes, path, bytes.len() as u64, u64::MAX, &|| {
        Some(Box::new(std::io::Cursor::new(bytes.to_vec())))
    })
}

/// Reads and checks a result file of at most `DEFAULT_MAX_INPUT` bytes.
pub fn load_result(path: &Path) -> Result<RunDoc, LoadError> {
    load_result_within(path, DEFAULT_MAX_INPUT)
}

/// Reads and checks a result file of at most `limit` bytes: a regular file (refused before
/// it is read when it is larger) or a pipe (refused once it gives more).
pub fn load_result_within(path: &Path, limit: u64) -> Result<RunDoc, LoadError> {
    let shown = path.display().to_string();
    let io = |e| LoadError::Io {
        path: shown.clone(),
        source: e,
    };
    let file = std::fs::File::open(path).map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    let kind = meta.file_type();
    use std::os::unix::fs::FileTypeExt;
    let what = if kind.is_file() || kind.is_fifo() {
        None
    } else if kind.is_dir() {
        Some("a directory")
    } else if kind.is_char_device() {
        Some("a character device")
    } else if kind.is_block_device() {
        Some("a block device")
    } else if kind.is_socket() {
        Some("a socket")
    } else {
        Some("not a file")
    };
    if let Some(what) = what {
        return Err(LoadError::NotAFile { path: shown, what });
    }
    let size = if kind.is_file() {
        if meta.len() > limit {
            return Err(LoadError::TooLarge {
                path: shown,
                size: Some(meta.len()),
                limit,
            });
        }
        meta.len()
    } else {
        limit
    };
    let regular = kind.is_file();
    read_doc(file, &shown, size, limit, &|| {
        if !regular {
            return None;
        }
        std::fs::File::open(path)
            .ok()
            .map(|f| Box::new(f) as Box<dyn Read>)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let doc = RunDoc::new("run", vec!["candor".into()], "2026-01-01T00:00:00Z".into());
        let text = serde_json::to_string(&doc).unwrap();
        let back = parse_result(&text, "x.json").unwrap();
        assert_eq!(back.schema_version, SCHEMA_VERSION);
        assert_eq!(back.kind, "run");
    }

    #[test]
    fn foreign_and_newer_files_are_refused() {
        assert!(matches!(
            parse_result("{\"a\":1}", "x"),
            Err(LoadError::NotCandor { .. })
        ));
        assert!(matches!(
            parse_result("not json", "x"),
            Err(LoadError::NotJson { .. })
        ));
        let newer = format!(
            "{{\"tool\":\"candor\",\"schema_version\":{}}}",
            SCHEMA_VERSION + 1
        );
        assert!(matches!(
            parse_result(&newer, "x"),
            Err(LoadError::Newer { .. })
        ));
        assert!(matches!(
            parse_result("{\"tool\":\"candor\",\"results\":3}", "x"),
            Err(LoadError::Malformed { .. })
        ));
    }

    #[test]
    fn older_files_missing_fields_still_load() {
        let doc = parse_result(
            "{\"tool\":\"candor\",\"schema_version\":1,\"results\":[{\"test\":\"read\"}]}",
            "x",
        )
        .unwrap();
        assert_eq!(doc.results[0].test, "read");
        assert!(doc.results[0].witness.is_none());
    }
}

#[cfg(test)]
mod hostile {
    use super::*;

    fn doc_with(field: &str) -> String {
        format!("{{\"tool\":\"candor\",\"schema_version\":1,\"results\":[{{\"test\":\"read\",\"witness\":{{\"timeline\":[{{\"t\":0.5}},{{{field}}}]}}}}]}}")
    }

    #[test]
    fn a_figure_out_of_range_refuses_the_file_naming_its_field() {
        for (text, field, value) in [
            ("\"t\":1.7e308", "t", "1.7e308"),
            ("\"t\":-1e308", "t", "-1e308"),
            ("\"device_write_bps\":1e30", "device_write_bps", "1e30"),
            ("\"t\":1e999", "t", "1e999"),
        ] {
            let e = parse_result(&doc_with(text), "x.json").unwrap_err();
            assert!(
                matches!(&e, LoadError::OutOfRange { field: f, value: v, .. } if f == field && v == value),
                "{e:?}"
            );
            assert_eq!(
                e.to_string(),
                format!("x.json has a figure out of range in \"{field}\" ({value}): candor writes none of 1e30 or more in size, so the file was altered or not written by candor; give a file written by `candor run -o`")
            );
        }
        // In range, and numbers inside strings, are not figures.
        let ok = parse_result(
            &doc_with("\"t\":9.99e29,\"dirty_bytes\":18446744073709551615"),
            "x",
        )
        .unwrap();
        assert_eq!(
            ok.results[0].witness.as_ref().unwrap().timeline[1].t,
            9.99e29
        );
        assert!(parse_result(&doc_with("\"t\":1,\"x\":\"1e999\""), "x").is_ok());
        let long = format!("\"t\":0.{}1", "0".repeat(80));
        assert!(matches!(
            parse_result(&doc_with(&long), "x"),
            Err(LoadError::OutOfRange { .. })
        ));
    }

    #[test]
    fn a_key_with_control_characters_is_named_escaped() {
        let e = parse_result(&doc_with("\"\\u001b[2J\u{7}\":1e31"), "x").unwrap_err();
        let m = e.to_string();
        assert!(!m.contains('\u{1b}') && !m.contains('\u{7}'), "{m:?}");
        assert!(m.contains("\\u{7}"), "{m}");
    }

    #[test]
    fn a_file_dear_in_memory_is_refused() {
        // Three bytes of text for a whole test result each.
        let text = format!(
            "{{\"tool\":\"candor\",\"results\":[{}{{}}]}}",
            "{},".repeat(200_000)
        );
        let e = parse_result(&text, "x.json").unwrap_err();
        assert!(matches!(e, LoadError::TooDear { .. }), "{e:?}");
        assert!(
            e.to_string().starts_with("x.json would take more than "),
            "{e}"
        );
    }

    #[test]
    fn files_that_are_not_regular_or_too_large_are_refused_before_reading() {
        let e = load_result(Path::new("/dev/zero")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "/dev/zero is not a regular file (a character device); give a file written by `candor run -o`"
        );
        assert!(matches!(
            load_result(Path::new("/")),
            Err(LoadError::NotAFile {
                what: "a directory",
                ..
            })
        ));
        let dir = std::env::temp_dir().join(format!("candor-load-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("r.json");
        let doc = RunDoc::new("run", vec![], "2026-01-01T00:00:00Z".into());
        std::fs::write(&p, serde_json::to_string(&doc).unwrap()).unwrap();
        let len = std::fs::metadata(&p).unwrap().len();
        let e = load_result_within(&p, len - 1).unwrap_err();
        assert!(
            matches!(e, LoadError::TooLarge { size: Some(n), .. } if n == len),
            "{e:?}"
        );
        assert!(e.to_string().contains("give --max-input-size"), "{e}");
        assert!(load_result_within(&p, len).is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
