//! Reading a saved result back, with the checks that make a foreign or newer file a
//! clear error rather than a half-rendered report.

use crate::{RunDoc, SCHEMA_VERSION, TOOL};
use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path} is not JSON ({reason}); give a file written by `candor run -o`")]
    NotJson { path: String, reason: String },
    #[error("{path} is not a candor result (no \"tool\": \"candor\"); give a file written by `candor run -o`")]
    NotCandor { path: String },
    #[error("{path} has schema_version {found}, newer than this candor understands ({SCHEMA_VERSION}); upgrade candor to read it")]
    Newer { path: String, found: u64 },
    #[error("{path} looks like a candor result but does not fit the schema ({reason})")]
    Malformed { path: String, reason: String },
}

/// Parses a result from text; `path` is only used in messages.
pub fn parse_result(text: &str, path: &str) -> Result<RunDoc, LoadError> {
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| LoadError::NotJson {
        path: path.to_string(),
        reason: e.to_string(),
    })?;
    if value.get("tool").and_then(|t| t.as_str()) != Some(TOOL) {
        return Err(LoadError::NotCandor {
            path: path.to_string(),
        });
    }
    let version = value
        .get("schema_version")
        .and_then(|v| v.as_u64())
        .unwrap_or(0);
    if version > SCHEMA_VERSION as u64 {
        return Err(LoadError::Newer {
            path: path.to_string(),
            found: version,
        });
    }
    serde_json::from_value(value).map_err(|e| LoadError::Malformed {
        path: path.to_string(),
        reason: e.to_string(),
    })
}

/// Reads and checks a result file.
pub fn load_result(path: &Path) -> Result<RunDoc, LoadError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| LoadError::Io {
        path: shown.clone(),
        source: e,
    })?;
    parse_result(&text, &shown)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let doc = RunDoc::new("run", vec!["candor".into()], "2026-01-01T00:00:00Z".into());
        let text = serde_json::to_string(&doc).unwrap();
        let back = parse_result(&text, "x.json").unwrap();
        assert_eq!(back.schema_version, SCHEMA_VERSION);
        assert_eq!(back.kind, "run");
    }

    #[test]
    fn foreign_and_newer_files_are_refused() {
        assert!(matches!(
            parse_result("{\"a\":1}", "x"),
            Err(LoadError::NotCandor { .. })
        ));
        assert!(matches!(
            parse_result("not json", "x"),
            Err(LoadError::NotJson { .. })
        ));
        let newer = format!(
            "{{\"tool\":\"candor\",\"schema_version\":{}}}",
            SCHEMA_VERSION + 1
        );
        assert!(matches!(
            parse_result(&newer, "x"),
            Err(LoadError::Newer { .. })
        ));
        assert!(matches!(
            parse_result("{\"tool\":\"candor\",\"results\":3}", "x"),
            Err(LoadError::Malformed { .. })
        ));
    }

    #[test]
    fn older_files_missing_fields_still_load() {
        let doc = parse_result(
            "{\"tool\":\"candor\",\"schema_version\":1,\"results\":[{\"test\":\"read\"}]}",
            "x",
        )
        .unwrap();
        assert_eq!(doc.results[0].test, "read");
        assert!(doc.results[0].witness.is_none());
    }
}
