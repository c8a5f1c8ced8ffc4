//! An option's value refused while a command line is parsed: every crate that types an
//! option (`candor run`'s options live in candor-engine) wraps its parser in [`refusing`],
//! and the binary says the refusal as it says every refusal, in one sentence (exit 2).

/// A value one of candor's parsers refused, worded as every refusal.
#[derive(Debug)]
pub struct Refusal(pub String);

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refusal {}

/// Wraps one of candor's parsers for clap's `value_parser`: its error becomes a `Refusal`.
pub fn refusing<T>(
    parse: impl Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static,
) -> impl Fn(&str) -> Result<T, Refusal> + Clone + Send + Sync + 'static {
    move |s| parse(s).map_err(Refusal)
}
