//! Sizes as people type them: `4k`, `64K`, `1m`, `1.5g`, `512` (bytes). Units are binary
//! (k = 1024), as in iozone and fio's `bs`.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SizeError(pub String);

impl fmt::Display for SizeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SizeError {}

/// Parses one size (`candor_model::units::parse_size`). Zero is refused: no test can move
/// zero bytes.
pub fn parse_size(text: &str) -> Result<u64, SizeError> {
    candor_model::units::parse_size(text).map_err(SizeError)
}

/// Parses a comma-separated list of sizes (`4k,64k,1m`), keeping the order given and
/// dropping repeats.
pub fn parse_size_list(text: &str) -> Result<Vec<u64>, SizeError> {
    let mut out = Vec::new();
    for part in text.split(',') {
        let v = parse_size(part)?;
        if !out.contains(&v) {
            out.push(v);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units_and_plain_bytes() {
        assert_eq!(parse_size("512").unwrap(), 512);
        assert_eq!(parse_size("4k").unwrap(), 4096);
        assert_eq!(parse_size("4K").unwrap(), 4096);
        assert_eq!(parse_size("64KiB").unwrap(), 65536);
        assert_eq!(parse_size("1m").unwrap(), 1 << 20);
        assert_eq!(parse_size("2g").unwrap(), 2 << 30);
        assert_eq!(parse_size("1t").unwrap(), 1 << 40);
        assert_eq!(parse_size("100b").unwrap(), 100);
        assert_eq!(parse_size("1.5k").unwrap(), 1536);
        assert_eq!(parse_size(" 8k ").unwrap(), 8192);
    }

    #[test]
    fn refuses_garbage_zero_and_overflow() {
        for bad in [
            "",
            "k",
            "abc",
            "4x",
            "-4k",
            "0",
            "0k",
            "4 k k",
            "1..2m",
            "99999999999999999999",
            "20000000t",
        ] {
            assert!(parse_size(bad).is_err(), "{bad} should be refused");
        }
        assert!(parse_size("0").unwrap_err().0.contains("zero"));
    }

    #[test]
    fn lists_keep_order_and_drop_repeats() {
        assert_eq!(
            parse_size_list("4k,64k,4k,1m").unwrap(),
            vec![4096, 65536, 1 << 20]
        );
        assert!(parse_size_list("4k,,1m").is_err());
    }
}
