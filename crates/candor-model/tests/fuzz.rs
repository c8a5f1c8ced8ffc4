//! The result-JSON reader takes anything (bounded proptest in `cargo test`): random text,
//! a real result cut short at every length, with characters replaced, with fields given
//! values of the wrong type. It never panics, and every refusal names the file and says
//! what to do. docs/reliability.md lists the inputs tried and their outcomes.

use candor_model::{parse_result, LoadError, RunDoc, TestResult};
use proptest::prelude::*;

fn sample() -> String {
    let mut doc = RunDoc::new(
        "run",
        vec!["candor".into(), "run".into()],
        "2026-01-01T00:00:00Z".into(),
    );
    doc.results.push(TestResult {
        target: "/tmp".into(),
        test: "write".into(),
        engine: "psync".into(),
        file_size: 1 << 20,
        record_size: 4096,
        threads: 1,
        status: candor_model::Status::Ok,
        ..Default::default()
    });
    serde_json::to_string_pretty(&doc).unwrap()
}

fn check(text: &str) {
    if let Err(e) = parse_result(text, "fuzz.json") {
        let m = e.to_string();
        assert!(m.contains("fuzz.json"), "the file is named: {m}");
        assert!(m.len() < 4000, "{m}");
        if !matches!(e, LoadError::Malformed { .. }) {
            assert!(
                m.contains("give a file") || m.contains("upgrade candor"),
                "says what to do: {m}"
            );
        }
    }
}

#[test]
fn a_real_result_loads_and_every_cut_of_it_is_refused_cleanly() {
    let s = sample();
    let doc = parse_result(&s, "fuzz.json").expect("a real result loads");
    assert_eq!(doc.results.len(), 1);
    for n in (0..s.len()).filter(|n| s.is_char_boundary(*n)) {
        check(&s[..n]);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn random_text(s in "\\PC{0,300}") {
        check(&s);
    }

    #[test]
    fn characters_replaced(
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<char>()), 1..6)
    ) {
        let mut chars: Vec<char> = sample().chars().collect();
        for (at, c) in edits {
            let i = at.index(chars.len());
            chars[i] = c;
        }
        check(&chars.into_iter().collect::<String>());
    }

    #[test]
    fn fields_of_the_wrong_type(
        field in prop::sample::select(vec![
            "schema_version", "tool", "results", "complete", "targets", "host",
            "warnings", "options", "started_at", "stop_reason",
        ]),
        key in prop::sample::select(vec![
            "throughput", "latency_ns", "verify", "status", "file_size", "reps",
            "witness", "extra", "error", "threads",
        ]),
        value in prop_oneof![
            Just(serde_json::json!(null)),
            Just(serde_json::json!(-1)),
            Just(serde_json::json!(1e308)),
            Just(serde_json::json!(u64::MAX)),
            Just(serde_json::json!("text")),
            Just(serde_json::json!([1, "a", null])),
            Just(serde_json::json!({"x": {"y": []}})),
            Just(serde_json::json!(true)),
        ],
        in_result in any::<bool>(),
    ) {
        let mut v: serde_json::Value = serde_json::from_str(&sample()).unwrap();
        if in_result {
            v["results"][0][key] = value;
        } else {
            v[field] = value;
        }
        check(&v.to_string());
    }
}
