//! Saved results of the previous schema version still load, with the fields typed since
//! (`verify`) read into their types and the ones added since (`direction`, `access`) told
//! from what the file has; a result written now reads back as it was written.

use candor_model::{
    load_result, parse_result, Access, BadKind, BadKinds, Direction, RunDoc, TestResult,
    VerifyOutcome, SCHEMA_VERSION,
};
use std::path::PathBuf;

/// A `candor run --tests write,read --verify` result saved with schema_version 1 (its
/// read's verify block edited to hold two bad records).
fn v1() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v1-verify.json")
}

#[test]
fn a_version_1_file_loads_with_its_verify_block_typed() {
    let doc = load_result(&v1()).expect("a version 1 file loads");
    assert_eq!(doc.schema_version, 1);
    assert_eq!(doc.results.len(), 2);
    let write = &doc.results[0];
    assert_eq!(
        write.verify,
        Some(VerifyOutcome {
            bad_records: 0,
            first_bad_file: None,
            first_bad_kind: None,
            first_bad_offset: None,
            header_bytes: 64,
            kinds: BadKinds::default(),
            record_size: 65536,
            records_checked: 0,
            records_written: 32,
        })
    );
    let read = &doc.results[1];
    assert_eq!(
        read.verify,
        Some(VerifyOutcome {
            bad_records: 2,
            first_bad_file: Some(0),
            first_bad_kind: Some(BadKind::Stale),
            first_bad_offset: Some(196608),
            header_bytes: 64,
            kinds: BadKinds {
                corruption: 0,
                misdirected: 0,
                stale: 1,
                torn: 1,
            },
            record_size: 65536,
            records_checked: 32,
            records_written: 0,
        })
    );
}

#[test]
fn a_version_1_result_without_direction_is_told_it_from_its_test() {
    let doc = load_result(&v1()).expect("a version 1 file loads");
    let (write, read) = (&doc.results[0], &doc.results[1]);
    assert_eq!((write.direction, write.access), (None, None));
    assert_eq!(write.direction(), Direction::Write);
    assert!(write.is_write());
    assert_eq!(read.direction(), Direction::Read);
    assert!(!read.is_write());
    let old = |test: &str| TestResult {
        test: test.into(),
        ..Default::default()
    };
    assert_eq!(old("randmix").direction(), Direction::Mixed);
    assert_eq!(old("copy").direction(), Direction::Mixed);
    assert_eq!(old("create").direction(), Direction::Read);
    assert_eq!(old("pwritev").direction(), Direction::Write);
}

#[test]
fn the_verify_block_is_saved_as_version_1_saved_it() {
    // Byte for byte: the typed block writes the keys, order and words the untyped one did.
    let text = std::fs::read_to_string(v1()).expect("the fixture");
    let raw: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    let doc = load_result(&v1()).expect("a version 1 file loads");
    for (r, saved) in doc.results.iter().zip(raw["results"].as_array().unwrap()) {
        assert_eq!(
            serde_json::to_string(&r.verify).unwrap(),
            serde_json::to_string(&saved["verify"]).unwrap()
        );
    }
}

#[test]
fn typed_fields_round_trip() {
    let r = TestResult {
        test: "randmix".into(),
        direction: Some(Direction::Mixed),
        access: Some(Access::Random),
        verify: Some(VerifyOutcome {
            bad_records: 1,
            first_bad_file: Some(3),
            first_bad_kind: Some(BadKind::Misdirected),
            first_bad_offset: Some(4096),
            header_bytes: 64,
            kinds: BadKinds {
                misdirected: 1,
                ..Default::default()
            },
            record_size: 4096,
            records_checked: 100,
            records_written: 100,
        }),
        ..Default::default()
    };
    let mut doc = RunDoc::new("run", vec!["candor".into()], "2026-01-01T00:00:00Z".into());
    assert_eq!(doc.schema_version, SCHEMA_VERSION);
    assert_eq!(SCHEMA_VERSION, 2);
    doc.results.push(r.clone());
    let text = serde_json::to_string_pretty(&doc).unwrap();
    assert!(text.contains("\"direction\": \"mixed\""), "{text}");
    assert!(text.contains("\"access\": \"random\""), "{text}");
    assert!(
        text.contains("\"first_bad_kind\": \"misdirected\""),
        "{text}"
    );
    let back = parse_result(&text, "r.json").expect("reads back");
    assert_eq!(back.schema_version, 2);
    assert_eq!(back.results, vec![r]);
}

#[test]
fn a_metadata_result_saves_no_direction() {
    let r = TestResult {
        test: "create".into(),
        ..Default::default()
    };
    let text = serde_json::to_string(&r).unwrap();
    assert!(!text.contains("\"direction\""), "{text}");
    assert!(!text.contains("\"access\""), "{text}");
}
