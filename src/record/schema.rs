//! The JSON Schema of a record, generated from the Rust types with schemars.
//!
//! The committed copy (`schema/record.schema.json`) is for readers outside Rust —
//! dashboards, other languages — so it must never drift from the types: a test
//! regenerates it and fails when the committed file differs.

use super::qa::QaRecord;

/// Where the committed schema lives, relative to the repository root.
pub const SCHEMA_PATH: &str = "schema/record.schema.json";

/// The schema of `record.json` (JSON Schema draft 2020-12), as a JSON value.
pub fn record_schema() -> serde_json::Value {
    let schema = schemars::schema_for!(QaRecord);
    // A generated schema is plain data; serializing it cannot fail.
    serde_json::to_value(&schema).unwrap_or(serde_json::Value::Null)
}

/// The schema as committed: pretty-printed, newline-terminated.
pub fn record_schema_text() -> String {
    let mut s = serde_json::to_string_pretty(&record_schema()).unwrap_or_default();
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_names_every_top_level_field_of_a_record() {
        let s = record_schema();
        let props = s["properties"].as_object().expect("properties");
        for field in [
            "schema_version",
            "trial",
            "repeat",
            "config",
            "evidence",
            "verdict",
        ] {
            assert!(props.contains_key(field), "{field} missing from the schema");
        }
        assert!(s["$defs"]["RecordConfig"]["properties"]
            .as_object()
            .is_some_and(|p| p.contains_key("commit")));
    }
}
