//! Snapshot tests of the text formats on result documents built in code.

mod common;

use candor_report::{render, Format};

#[test]
fn table_snapshot() {
    common::expect(
        "sample.table.txt",
        &render(&common::sample_doc(), Format::Table),
    );
}

#[test]
fn markdown_snapshot() {
    common::expect(
        "sample.md",
        &render(&common::sample_doc(), Format::Markdown),
    );
}

#[test]
fn csv_snapshot() {
    common::expect("sample.csv", &render(&common::sample_doc(), Format::Csv));
}

#[test]
fn iozone_snapshot() {
    common::expect(
        "sample.iozone.txt",
        &render(&common::sample_doc(), Format::Iozone),
    );
}

#[test]
fn excel_snapshot() {
    common::expect(
        "sample.excel.txt",
        &render(&common::sample_doc(), Format::Excel),
    );
}

#[test]
fn study_table_snapshot() {
    common::expect(
        "study.table.txt",
        &render(&common::study_run(), Format::Table),
    );
}

#[test]
fn study_markdown_snapshot() {
    common::expect("study.md", &render(&common::study_run(), Format::Markdown));
}

#[test]
fn audit_table_snapshot() {
    common::expect(
        "audit.table.txt",
        &render(&common::audit_doc(), Format::Table),
    );
}

#[test]
fn mpi_table_snapshot() {
    common::expect("mpi.table.txt", &render(&common::mpi_doc(), Format::Table));
}

/// Equal, with floats equal to the last bits serde_json's parser may round differently.
fn same(a: &serde_json::Value, b: &serde_json::Value, at: &str) {
    use serde_json::Value::*;
    match (a, b) {
        (Number(x), Number(y)) => {
            let (x, y) = (
                x.as_f64().unwrap_or(f64::NAN),
                y.as_f64().unwrap_or(f64::NAN),
            );
            assert!(
                (x - y).abs() <= 1e-12 * x.abs().max(y.abs()),
                "{at}: {x} vs {y}"
            );
        }
        (Array(x), Array(y)) => {
            assert_eq!(x.len(), y.len(), "{at}");
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                same(p, q, &format!("{at}[{i}]"));
            }
        }
        (Object(x), Object(y)) => {
            assert_eq!(
                x.keys().collect::<Vec<_>>(),
                y.keys().collect::<Vec<_>>(),
                "{at}"
            );
            for (k, v) in x {
                same(v, &y[k], &format!("{at}.{k}"));
            }
        }
        _ => assert_eq!(a, b, "{at}"),
    }
}

#[test]
fn json_is_the_document() {
    let doc = common::sample_doc();
    let text = render(&doc, Format::Json);
    let parsed: serde_json::Value = serde_json::from_str(&text).expect("the JSON parses");
    let direct = serde_json::to_value(&doc).expect("the document serializes");
    same(&parsed, &direct, "$");
    let back: candor_model::RunDoc = serde_json::from_value(parsed).expect("the JSON is a RunDoc");
    assert_eq!(back.results.len(), doc.results.len());
    assert_eq!(back.targets, doc.targets);
}

/// The saved documents the binary's tests render (`crates/candor/tests/report_html.rs`).
#[test]
fn saved_result_files() {
    common::expect("sample.json", &render(&common::sample_doc(), Format::Json));
    common::expect(
        "study-ext4.json",
        &render(&common::study_doc("ext4", "sdb", 1.0), Format::Json),
    );
    common::expect(
        "study-xfs.json",
        &render(&common::study_doc("xfs", "sdb", 1.08), Format::Json),
    );
    common::expect("mpi.json", &render(&common::mpi_doc(), Format::Json));
    common::expect(
        "study-run.json",
        &render(&common::study_run(), Format::Json),
    );
    common::expect("audit.json", &render(&common::audit_doc(), Format::Json));
}
