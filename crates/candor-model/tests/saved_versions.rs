//! Saved results of the previous schema versions still load, with the fields typed since
//! (`verify` in version 2, `ranks` in version 3) read into their types and the ones added since (`direction`, `access`) told
//! from what the file has; a result written now reads back as it was written.

use candor_model::{
    load_result, parse_result, Access, BadKind, BadKinds, Direction, OptionsOf, RankFigures,
    RunDoc, Spread, Status, Summary, TestResult, VerifyOutcome, SCHEMA_VERSION,
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
    assert_eq!(SCHEMA_VERSION, 3);
    doc.results.push(r.clone());
    let text = serde_json::to_string_pretty(&doc).unwrap();
    assert!(text.contains("\"direction\": \"mixed\""), "{text}");
    assert!(text.contains("\"access\": \"random\""), "{text}");
    assert!(
        text.contains("\"first_bad_kind\": \"misdirected\""),
        "{text}"
    );
    let back = parse_result(&text, "r.json").expect("reads back");
    assert_eq!(back.schema_version, 3);
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

/// An MPI result saved with schema_version 2, whose `ranks` was a free JSON value (the
/// report tests' four-rank document as version 2 saved it).
fn v2_ranks() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v2-ranks.json")
}

#[test]
fn a_version_2_file_loads_with_its_ranks_typed() {
    let doc = load_result(&v2_ranks()).expect("a version 2 file loads");
    assert_eq!(doc.schema_version, 2);
    let with: Vec<&Spread> = doc
        .results
        .iter()
        .filter_map(|r| r.ranks.as_ref())
        .collect();
    assert_eq!(with.len(), 2);
    let s = with[0];
    assert_eq!((s.ranks, s.nodes), (4, 2));
    assert_eq!((s.slowest_rank, s.fastest_rank), (Some(3), Some(0)));
    assert_eq!(s.lagging_ranks, vec![3]);
    assert_eq!(
        s.notes,
        vec![
            "2 ranks shared n1: each rank's device counters include its neighbours' traffic",
            "on n2 the reads were served by the page cache (71% hits), not the filesystem's storage",
        ]
    );
    assert_eq!(s.per_rank.len(), 4);
    let last = &s.per_rank[3];
    assert_eq!(
        (last.rank, last.node.as_str(), last.status),
        (3, "n2", Status::Ok)
    );
    assert_eq!(last.bytes, 3_145_728);
    assert_eq!(last.throughput.mean, 24_180_000.0);
    assert_eq!(last.throughput.n, 3);
    assert_eq!(
        last.throughput.samples,
        vec![23_696_400.0, 24_421_800.0, 24_421_800.0]
    );
}

#[test]
fn ranks_are_saved_as_version_2_saved_them() {
    // Version 2 kept `ranks` as a JSON value, so its keys were saved in alphabetical order
    // (nested ones too); the typed field saves the same bytes.
    let spread = Spread {
        ranks: 2,
        nodes: 1,
        aggregate_bps: vec![1e8],
        slowest_rank: Some(1),
        per_rank: vec![RankFigures {
            rank: 1,
            node: "n1".into(),
            throughput: Summary {
                mean: 5e7,
                ..Default::default()
            },
            ..Default::default()
        }],
        ..Default::default()
    };
    let r = TestResult {
        ranks: Some(spread.clone()),
        ..Default::default()
    };
    let text = serde_json::to_string(&r).unwrap();
    let as_value = serde_json::to_string(&serde_json::to_value(&spread).unwrap()).unwrap();
    assert!(as_value.starts_with("{\"aggregate_bps\":[100000000.0],\"fastest_rank\":null,"));
    assert!(text.contains(&format!("\"ranks\":{as_value}")), "{text}");
    let back: TestResult = serde_json::from_str(&text).unwrap();
    assert_eq!(back.ranks, Some(spread));
}

#[test]
fn ranks_that_read_as_nothing_are_left_out() {
    let r: TestResult = serde_json::from_str("{\"ranks\": \"four\"}").unwrap();
    assert_eq!(r.ranks, None);
    let r: TestResult =
        serde_json::from_str("{\"ranks\": [{\"rank\": 2, \"throughput\": 5.0}]}").unwrap();
    let s = r.ranks.expect("a bare list of ranks");
    assert_eq!(
        (s.ranks, s.per_rank[0].rank, s.per_rank[0].throughput.mean),
        (1, 2, 5.0)
    );
}

/// The report tests' audit document as version 2 saved it (`audit` a free JSON value).
fn v2_audit() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v2-audit.json")
}

#[test]
fn a_version_2_audit_loads_with_its_command_and_rows_typed() {
    let doc = load_result(&v2_audit()).expect("a version 2 audit loads");
    assert_eq!(doc.schema_version, 2);
    let a = doc.audit.expect("the audit");
    assert_eq!(a.command, ["iozone", "-i0", "-i1", "-s", "64m", "-r", "4k"]);
    assert_eq!(a.exit_message, None);
    assert_eq!(a.reconciliation.len(), 2);
    let w = &a.reconciliation[0];
    assert_eq!((w.test.as_str(), w.direction), ("write", Direction::Write));
    assert_eq!((w.verdict.as_str(), w.ratio), ("overstated", Some(3.0058)));
    assert_eq!(w.claimed_bps, 904_761_344.0);
}

/// A `candor audit --witness procfs -o FILE -- dd if=/dev/zero of=F bs=1M count=8
/// conv=fsync` document: its audit reads into the type and saves back to the same value,
/// the parts kept by name included.
#[test]
fn an_audit_saves_back_what_it_read() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/audit-dd.json");
    let raw: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("the fixture")).unwrap();
    let doc = load_result(&path).expect("the audit loads");
    let a = doc.audit.as_ref().expect("the audit");
    assert_eq!(a.command[0], "dd");
    assert_eq!(a.reconciliation.len(), 1);
    assert_eq!(a.reconciliation[0].direction, Direction::Write);
    assert!(a.rest.contains_key("account") && a.rest.contains_key("phases"));
    let saved = serde_json::to_value(&doc).unwrap();
    assert_eq!(saved["audit"], raw["audit"]);
    assert_eq!(
        serde_json::to_string(&saved["audit"]).unwrap(),
        serde_json::to_string(&raw["audit"]).unwrap()
    );
}

/// The options objects `candor run`, `candor audit` and `candor replay` save, as they saved
/// them when the options were a map of JSON values (captured from real runs: a ceiling
/// given, the steady state with a ramp and preconditioning, most flags, a block device, an
/// audit, a replay with --cpus): each reads into its command's type and saves back byte
/// for byte, in the same place of the document.
#[test]
fn options_of_each_kind_round_trip_byte_for_byte() {
    let run_spec = r#"{"buffer_pattern":"random","close_in_timing":false,"default_run":false,"device_spec":{"iops_read":95000.0,"iops_write":95000.0,"seq_read":510000000.0,"seq_write":510000000.0,"source":"spec"},"direct":false,"drop_caches":false,"fadvise":"auto","format":"table","fsync_in_timing":true,"keep_cache":false,"mix_read_pct":50,"osync":false,"repeat":1,"runtime_s":null,"seed":206229700,"stonewall":false,"stride":17,"time_based":false,"trace_syscalls":false,"verify":false,"witness":"off"}"#;
    let run_steady = r#"{"buffer_pattern":"random","close_in_timing":false,"default_run":false,"direct":false,"drop_caches":false,"duration":"1s","fadvise":"auto","format":"table","fsync_in_timing":true,"keep_cache":false,"mix_read_pct":50,"osync":false,"precondition_passes":1,"ramp_s":0.2,"repeat":1,"runtime_s":0.1,"seed":206229700,"steady_state":{"max_rounds":5,"range":0.2,"round_s":0.1,"slope":0.1,"window":3},"stonewall":false,"stride":17,"time_based":true,"trace_syscalls":false,"verify":false,"witness":"procfs"}"#;
    let run_flags = r#"{"buffer_pattern":"zero","close_in_timing":true,"cpus":[3,0],"default_run":false,"direct":false,"drop_caches":false,"fadvise":"sequential","format":"table","fsync_in_timing":false,"keep_cache":true,"mix_read_pct":70,"osync":true,"repeat":1,"runtime_s":1.0,"seed":7,"stonewall":true,"stride":5,"time_based":true,"trace_syscalls":false,"verify":true,"witness":"off"}"#;
    let run_device = r#"{"buffer_pattern":"random","close_in_timing":false,"default_run":true,"device_offset":1048576,"direct":true,"drop_caches":false,"fadvise":"auto","format":"json","fsync_in_timing":true,"keep_cache":false,"mix_read_pct":50,"osync":false,"repeat":3,"runtime_s":2.0,"seed":206229700,"stonewall":false,"stride":17,"time_based":false,"trace_syscalls":true,"verify":false,"witness":"bpf"}"#;
    let audit = r#"{"interval_ms":50,"stop_at_exit":true,"witness":"bpf"}"#;
    let replay = r#"{"cpus":"0","drop_caches":false,"keep_cache":true,"precondition_passes":2,"repeat":2,"sparse":false,"timing":"scale=0.5","trace":"/tmp/app.log","trace_source":"strace","witness":"procfs"}"#;
    let doc = |kind: &str, options: &str| {
        format!(
            r#"{{"schema_version":3,"tool":"candor","kind":"{kind}","options":{options},"results":[]}}"#
        )
    };
    for (kind, text) in [
        ("run", run_spec),
        ("run", run_steady),
        ("run", run_flags),
        ("run", run_device),
        ("audit", audit),
        ("replay", replay),
    ] {
        let d = parse_result(&doc(kind, text), "r.json").expect("the options load");
        assert!(
            d.options.unknown.is_empty(),
            "{kind}: {:?}",
            d.options.unknown
        );
        let group = match &d.options.of {
            OptionsOf::Run(_) => "run",
            OptionsOf::Audit(_) => "audit",
            OptionsOf::Replay(_) => "replay",
            OptionsOf::None => "none",
        };
        assert_eq!(group, kind, "{text}");
        assert_eq!(serde_json::to_string(&d.options).unwrap(), text);
        // The whole document, as candor saves it (pretty): the options' text is the
        // map's.
        let pretty = serde_json::to_string_pretty(&d).unwrap();
        let map: serde_json::Value = serde_json::from_str(text).unwrap();
        let wrapped = serde_json::to_string_pretty(&serde_json::json!({ "options": map })).unwrap();
        let lines: Vec<&str> = wrapped.lines().collect();
        let inner = lines[1..lines.len() - 1].join("\n");
        assert!(pretty.contains(&inner), "{pretty}\n---\n{inner}");
    }
    let d = parse_result(&doc("run", run_spec), "r.json").unwrap();
    let r = d.options.run().expect("a run's options");
    let spec = r.device_spec.as_ref().expect("the ceiling");
    assert_eq!((spec.seq_read, spec.source.as_str()), (Some(510e6), "spec"));
    assert_eq!((r.repeat, r.runtime_s, r.seed), (1, None, 206229700));
    let d = parse_result(&doc("run", run_steady), "r.json").unwrap();
    let r = d.options.run().unwrap();
    let steady = r.steady_state.as_ref().expect("the steady state");
    assert_eq!((steady.window, steady.round_s), (3, 0.1));
    assert_eq!((r.ramp_s, r.precondition_passes), (Some(0.2), Some(1)));
    assert_eq!(r.duration.as_deref(), Some("1s"));
    let d = parse_result(&doc("run", run_flags), "r.json").unwrap();
    let r = d.options.run().unwrap();
    assert_eq!(r.cpus, [3, 0]);
    assert_eq!((r.mix_read_pct, r.fadvise.as_str()), (70, "sequential"));
    let d = parse_result(&doc("run", run_device), "r.json").unwrap();
    let r = d.options.run().unwrap();
    assert_eq!((r.device_offset, r.default_run), (Some(1 << 20), true));
    let d = parse_result(&doc("audit", audit), "r.json").unwrap();
    let a = d.options.audit().expect("an audit's options");
    assert_eq!((a.interval_ms, a.stop_at_exit), (50, true));
    assert_eq!(a.witness, "bpf");
    let d = parse_result(&doc("replay", replay), "r.json").unwrap();
    let p = d.options.replay().expect("a replay's options");
    assert_eq!(
        (p.cpus.as_deref(), p.precondition_passes),
        (Some("0"), Some(2))
    );
    assert_eq!(
        (p.timing.as_str(), p.trace_source.as_str()),
        ("scale=0.5", "strace")
    );
}

/// A key this candor does not know (a newer candor's), and a known one whose value does
/// not fit its type, are kept where they were and saved back as they were; the known keys
/// around them are still read.
#[test]
fn unknown_option_keys_survive_a_load_and_a_save() {
    let text = r#"{"aa_newer":{"depth":[1,2]},"buffer_pattern":"random","close_in_timing":false,"default_run":false,"direct":false,"drop_caches":false,"fadvise":"auto","format":"table","fsync_in_timing":true,"keep_cache":false,"mix_read_pct":"half","osync":false,"repeat":4,"runtime_s":null,"seed":206229700,"stonewall":false,"stride":17,"time_based":false,"trace_syscalls":false,"verify":false,"witness":"off","zz_newer":true}"#;
    let d = parse_result(
        &format!(r#"{{"schema_version":3,"tool":"candor","kind":"run","options":{text}}}"#),
        "r.json",
    )
    .expect("loads");
    let r = d.options.run().expect("still a run's options");
    assert_eq!(r.repeat, 4);
    assert_eq!(
        d.options.unknown.keys().collect::<Vec<_>>(),
        ["aa_newer", "mix_read_pct", "zz_newer"]
    );
    assert_eq!(serde_json::to_string(&d.options).unwrap(), text);
    // What `candor merge` compares: every key, the unknown ones too.
    let entries = d.options.entries();
    assert_eq!(entries["zz_newer"], serde_json::json!(true));
    assert_eq!(entries["mix_read_pct"], serde_json::json!("half"));
    assert_eq!(entries.len(), 22);
}

/// The options of the fixtures of schema versions 1 and 3 read into their types and save
/// back as the files hold them.
#[test]
fn saved_fixtures_keep_their_options() {
    for (name, kind) in [("v1-verify.json", "run"), ("audit-dd.json", "audit")] {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(name);
        let raw: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let doc = load_result(&path).expect("loads");
        assert!(doc.options.unknown.is_empty(), "{name}");
        match kind {
            "run" => assert!(doc.options.run().is_some_and(|r| r.verify), "{name}"),
            _ => assert_eq!(doc.options.audit().map(|a| a.interval_ms), Some(5)),
        }
        assert_eq!(
            serde_json::to_string(&doc.options).unwrap(),
            serde_json::to_string(&raw["options"]).unwrap(),
            "{name}"
        );
    }
    // Version 2's empty options: none, saved empty.
    let doc = load_result(&v2_ranks()).unwrap();
    assert_eq!(doc.options.of, OptionsOf::None);
    assert_eq!(serde_json::to_string(&doc.options).unwrap(), "{}");
}
