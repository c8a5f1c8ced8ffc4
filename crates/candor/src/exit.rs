//! The exit codes and the one-sentence error every command returns.

/// The run went as asked.
pub const OK: i32 = 0;
/// The run failed at run time (I/O error, ENOSPC, a device that refused...).
pub const FAILED: i32 = 1;
/// Bad usage or bad input: nothing was run.
pub const USAGE: i32 = 2;

/// A failure worded for a person: what is wrong and what to do.
#[derive(Debug)]
pub struct Failure {
    pub code: i32,
    pub message: String,
}

impl Failure {
    pub fn usage(message: impl Into<String>) -> Self {
        Failure {
            code: USAGE,
            message: message.into(),
        }
    }

    pub fn failed(message: impl Into<String>) -> Self {
        Failure {
            code: FAILED,
            message: message.into(),
        }
    }
}

pub type CmdResult = Result<i32, Failure>;

/// An option's value candor refused while the command line was parsed (`value_parser`),
/// worded as every refusal: `main` prints it as one sentence and exits with `USAGE`.
#[derive(Debug)]
pub struct Refusal(pub String);

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refusal {}

/// Wraps one of candor's parsers for clap: its error becomes a `Refusal`.
pub fn refusing<T>(
    parse: impl Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static,
) -> impl Fn(&str) -> Result<T, Refusal> + Clone + Send + Sync + 'static {
    move |s| parse(s).map_err(Refusal)
}
