//! Bad input, fuzzed (bounded, in `cargo test`): the size parser, the test-list parser, the
//! engine and buffer-pattern names, and the record checker of `--verify` take any input
//! without panicking, and every refusal is a sentence that quotes what was typed.
//! docs/reliability.md lists the inputs tried and their outcomes.

use candor_engine::engines::parse_engine;
use candor_engine::size::{parse_size, parse_size_list};
use candor_engine::verify::{BufferPattern, FileVerify, VerifyConfig, HEADER};
use candor_engine::workload::{parse_tests, TESTS};
use candor_model::units::{format_bytes, ByteStyle};
use proptest::prelude::*;

/// Text shaped like a size: digits, dots, units, spaces, signs, letters, non-ASCII.
fn size_like() -> impl Strategy<Value = String> {
    prop_oneof![
        "\\PC{0,24}",
        "[0-9]{0,25}(\\.[0-9]{0,5})?[ ]?(b|k|m|g|t|K|M|G|T|kib|MiB|ib|x|é|)",
        "[-+ .0-9a-zA-Z,]{0,16}",
        Just("18446744073709551616".to_string()),
        Just("16777216t".to_string()),
        Just("1e30".to_string()),
        Just(".".to_string()),
        Just("0.0000001k".to_string()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn sizes_never_panic_and_refusals_quote_the_input(s in size_like()) {
        match parse_size(&s) {
            Ok(v) => prop_assert!(v > 0),
            Err(e) => {
                let m = e.to_string();
                prop_assert!(m.contains(&format!("'{s}'")), "{m}");
            }
        }
        let _ = parse_size_list(&s);
        let _ = parse_size_list(&format!("{s},{s},4k"));
    }

    #[test]
    fn exact_sizes_round_trip(n in 1u64..1 << 20, unit in 0u32..4) {
        // What candor prints parses back: exactly when it has no decimal, to within the
        // printed digit otherwise.
        let v = n << (10 * unit);
        let shown = format_bytes(v, ByteStyle::LABEL);
        let back = parse_size(&shown).unwrap();
        if shown.contains('.') {
            prop_assert!((back as f64 - v as f64).abs() <= v as f64 * 0.05, "{} -> {} -> {}", v, shown, back);
        } else {
            prop_assert_eq!(back, v);
        }
    }

    #[test]
    fn test_lists_never_panic(s in "[a-z0-9, ]{0,40}|\\PC{0,30}") {
        match parse_tests(&s) {
            Ok(list) => {
                // Catalog order, no repeats.
                let names: Vec<&str> = list.iter().map(|t| t.name).collect();
                let mut sorted = names.clone();
                sorted.sort_by_key(|n| TESTS.iter().position(|t| t.name == *n));
                sorted.dedup();
                prop_assert_eq!(names, sorted);
            }
            Err(e) => prop_assert!(!e.is_empty() && e.len() < 2000),
        }
    }

    #[test]
    fn test_lists_of_real_names_parse(picks in proptest::collection::vec(0usize..TESTS.len(), 1..8)) {
        let list: Vec<&str> = picks.iter().map(|&i| TESTS[i].name).collect();
        let parsed = parse_tests(&list.join(",")).unwrap();
        for n in &list {
            prop_assert!(parsed.iter().any(|t| t.name == *n));
        }
    }

    #[test]
    fn engine_and_pattern_names_never_panic(s in "\\PC{0,20}") {
        if let Err(e) = parse_engine(&s) {
            prop_assert!(e.contains("choose from"));
        }
        if let Err(e) = BufferPattern::parse(&s) {
            prop_assert!(e.contains("choose random, zero"));
        }
        let _ = BufferPattern::parse(&format!("compressible={s}"));
    }

    #[test]
    fn the_record_checker_takes_any_bytes(
        bytes in proptest::collection::vec(any::<u8>(), 0..600),
        off in any::<u64>(),
        expected in any::<u64>(),
    ) {
        let v = FileVerify::new(VerifyConfig::new("fuzz", 1), 0, 1 << 20, 512, BufferPattern::Random);
        let _ = v.classify(&bytes, off, expected);
    }

    #[test]
    fn any_changed_byte_of_a_record_is_caught(
        rs in (HEADER / 8..1024usize).prop_map(|w| w * 8),
        rec in 0u64..64,
        at in any::<prop::sample::Index>(),
        flip in 1u8..=255,
    ) {
        let v = FileVerify::new(VerifyConfig::new("fuzz", 2), 0, 64 * rs as u64, rs, BufferPattern::Random);
        let off = rec * rs as u64;
        let mut b = vec![0u8; rs];
        v.stamp(&mut b, off);
        prop_assert_eq!(v.classify(&b, off, 1), None);
        let i = at.index(rs);
        b[i] ^= flip;
        prop_assert!(v.classify(&b, off, 1).is_some(), "byte {} of {} changed unseen", i, rs);
    }
}
