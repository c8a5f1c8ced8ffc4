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

/// An option's value candor refused while the command line was parsed (`value_parser`):
/// `main` prints it as one sentence and exits with `USAGE`.
pub use candor_model::refusal::{refusing, Refusal};
