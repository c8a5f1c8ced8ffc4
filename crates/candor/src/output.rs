//! Where results go: the JSON saved atomically (after every test, and at the end), the HTML
//! report, and the text format on stdout. Every command writes its files through here, so
//! a reader never sees half a file and candor never writes through a link.

use crate::exit::Failure;
use candor_model::RunDoc;
use candor_report::Format;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// A run's outputs.
pub struct Output {
    format: Format,
    json: Option<PathBuf>,
    html: Option<PathBuf>,
    /// The latest failed save of the JSON: the run goes on, and ends with exit 1 saying so.
    save_error: Option<String>,
}

impl Output {
    /// `--format` (else `default`), `-o`, `--html`.
    pub fn new(
        format: Option<Format>,
        default: &str,
        json: Option<PathBuf>,
        html: Option<PathBuf>,
    ) -> Output {
        Output {
            format: format
                .or_else(|| Format::parse(default))
                .unwrap_or(Format::Table),
            json,
            html,
            save_error: None,
        }
    }

    /// The text format's name, as the saved options record it.
    pub fn format_name(&self) -> &'static str {
        self.format.name()
    }

    /// Checks `-o` and `--html` before anything runs: each a file name (not a directory,
    /// device, pipe or link) in a directory that exists and can be written.
    pub fn check(&self) -> Result<(), Failure> {
        if let Some(out) = &self.json {
            crate::paths::check_output_file("-o", out, "JSON result")?;
        }
        if let Some(h) = &self.html {
            crate::paths::check_output_file("--html", h, "HTML report")?;
        }
        Ok(())
    }

    /// Saves the result so far (`-o`). A failure is kept (the first one, until `finish`)
    /// and said at the end; the run goes on.
    pub fn save(&mut self, doc: &RunDoc) {
        if let Err(e) = self.save_json(doc) {
            self.save_error.get_or_insert(e);
        }
    }

    fn save_json(&self, doc: &RunDoc) -> Result<(), String> {
        let Some(out) = &self.json else {
            return Ok(());
        };
        // Serialized straight into the file: a sweep's document is never also held as one
        // string (bench/rss: the largest sweep's peak).
        save_atomic_with(out, |w| {
            serde_json::to_writer_pretty(w, doc).map_err(std::io::Error::other)
        })
        .map_err(|e| format!("cannot save {}: {e}", out.display()))
    }

    /// The end of the run: the JSON saved once more, the HTML report written, the text
    /// format printed on stdout, then every file written named on stderr ("wrote r.json").
    pub fn finish(&mut self, doc: &RunDoc) {
        let mut wrote = Vec::new();
        match self.save_json(doc) {
            Ok(()) => wrote.extend(self.json.clone()),
            Err(e) => self.save_error = Some(e),
        }
        if let Some(h) = &self.html {
            match save_atomic(h, &candor_report::render_html(doc)) {
                Ok(()) => wrote.push(h.clone()),
                Err(e) => eprintln!("candor: cannot write the HTML report {}: {e}", h.display()),
            }
        }
        let (format, why) = candor_report::printed_format(doc, self.format);
        if let Some(why) = why {
            eprintln!("candor: {why}");
        }
        let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
        let _ = candor_report::write_to(doc, format, &mut stdout);
        let _ = stdout.flush();
        for w in wrote {
            eprintln!("wrote {}", w.display());
        }
    }

    /// Why the JSON could not be saved, if it could not.
    pub fn save_error(&self) -> Option<&str> {
        self.save_error.as_deref()
    }

    pub fn json(&self) -> Option<&Path> {
        self.json.as_deref()
    }
}

/// Writes `text` to `path` atomically: a new file beside it (O_EXCL, not following links,
/// mode 0644, synced), then a rename over `path`. Only a regular file (or nothing) is ever
/// replaced: a device, pipe, socket, directory or symbolic link at `path` is an error, and
/// is left as it was (a rename over /dev/null would replace the device with a file).
pub fn save_atomic(path: &Path, text: &str) -> std::io::Result<()> {
    save_atomic_with(path, |w| w.write_all(text.as_bytes()))
}

/// `save_atomic`, with the contents written by `fill` (through a buffer) as they are made.
pub fn save_atomic_with(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_else(|| "result.json".into());
    let replaceable = || match std::fs::symlink_metadata(path) {
        Ok(m) if !m.file_type().is_file() => Err(std::io::Error::other(format!(
            "{} is not a regular file, and candor replaces only files",
            path.display()
        ))),
        _ => Ok(()),
    };
    replaceable()?;
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    let write = || -> std::io::Result<()> {
        let f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW)
            .mode(0o644)
            .open(&tmp)?;
        let mut buf = std::io::BufWriter::new(f);
        fill(&mut buf)?;
        let f = buf.into_inner().map_err(|e| e.into_error())?;
        f.sync_all()?;
        // Checked again just before: the path may have changed while the file was written.
        replaceable()?;
        std::fs::rename(&tmp, path)
    };
    let r = write();
    if r.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saves_replace_the_file_whole_and_leave_no_temporary() {
        let dir = std::env::temp_dir().join(format!("candor-output-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("r.json");
        save_atomic(&p, "one").unwrap();
        save_atomic(&p, "two").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "two");
        let names: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().collect();
        assert_eq!(names.len(), 1, "only the result is left");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A pipe or a link where the result goes is left as it was: the rename that replaces
    /// a file would replace them too (and, run as root with `-o /dev/null`, the device).
    #[test]
    fn only_a_regular_file_is_ever_replaced() {
        use std::os::unix::fs::FileTypeExt;
        let dir = std::env::temp_dir().join(format!("candor-output-nf-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("pipe");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
        let e = save_atomic(&fifo, "x").unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        assert!(std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo());
        let target = dir.join("target");
        std::fs::write(&target, "kept").unwrap();
        let link = dir.join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(save_atomic(&link, "x").is_err());
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "kept");
        let names: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().collect();
        assert_eq!(names.len(), 3, "no temporary left: {names:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_json_path_is_checked_before_the_run() {
        let o = Output::new(None, "table", Some(std::env::temp_dir()), None);
        assert!(o.check().unwrap_err().message.contains("is a directory"));
        let o = Output::new(None, "table", Some("/nonexistent/dir/r.json".into()), None);
        assert!(o.check().unwrap_err().message.contains("does not exist"));
        let o = Output::new(None, "iozone", None, None);
        assert_eq!(o.format_name(), "iozone");
        assert!(o.check().is_ok());
    }
}
