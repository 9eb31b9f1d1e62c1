//! What served the model of a published run, as its publisher states it.
//!
//! A record names the model and the upstream URL, which is all the harness can see: a
//! provider behind a URL can be anything. For a run on a model the publisher served
//! (a local server, a file with a hash), the page should still say what it was, and
//! say that gauntlet did not check it. `gauntlet publish --provider FILE` takes a TOML
//! table of strings and keeps it beside the run as `provider.json`; every page of the
//! run shows it under the harness config, marked as the publisher's statement.

use std::collections::BTreeMap;
use std::path::Path;

use super::base::{io, ReportError};

/// The statement kept in a published run directory.
pub const PROVIDER_FILE: &str = "provider.json";

/// At most this many settings, each key and value this long: a statement, not a dump.
const MAX_FIELDS: usize = 32;
const MAX_KEY: usize = 40;
const MAX_VALUE: usize = 300;

/// Settings in key order, as the publisher wrote them.
pub type Statement = BTreeMap<String, String>;

fn invalid(file: &Path, reason: String) -> ReportError {
    ReportError::Invalid {
        file: file.to_path_buf(),
        reason,
    }
}

/// Check one statement, wherever it came from: keys are lowercase words
/// (`model_sha256`), values single-line text.
fn check(file: &Path, fields: &Statement) -> Result<(), ReportError> {
    if fields.is_empty() {
        return Err(invalid(
            file,
            "states nothing: expected `key = \"value\"` lines".into(),
        ));
    }
    if fields.len() > MAX_FIELDS {
        return Err(invalid(
            file,
            format!("{} settings; at most {MAX_FIELDS}", fields.len()),
        ));
    }
    for (key, value) in fields {
        let key_ok = !key.is_empty()
            && key.len() <= MAX_KEY
            && key.starts_with(|c: char| c.is_ascii_lowercase())
            && key
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if !key_ok {
            return Err(invalid(
                file,
                format!("key `{key}`: expected lowercase letters, digits and `_` (at most {MAX_KEY}, starting with a letter)"),
            ));
        }
        if value.is_empty() || value.len() > MAX_VALUE || value.chars().any(char::is_control) {
            return Err(invalid(
                file,
                format!("`{key}`: expected one line of text, 1 to {MAX_VALUE} bytes"),
            ));
        }
    }
    Ok(())
}

/// Read the publisher's TOML file: a table of strings, nothing nested.
pub fn read_toml(file: &Path) -> Result<Statement, ReportError> {
    let text = std::fs::read_to_string(file).map_err(io(file))?;
    let table: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| invalid(file, format!("not TOML: {}", e.message())))?;
    let mut fields = Statement::new();
    for (key, value) in table {
        match value {
            toml::Value::String(s) => {
                fields.insert(key, s);
            }
            other => {
                return Err(invalid(
                    file,
                    format!(
                        "`{key}`: expected a string, found {} (quote it)",
                        other.type_str()
                    ),
                ))
            }
        }
    }
    check(file, &fields)?;
    Ok(fields)
}

/// Write the statement into a run directory being published.
pub fn write(run_dir: &Path, fields: &Statement) -> Result<(), ReportError> {
    let file = run_dir.join(PROVIDER_FILE);
    let text = serde_json::to_string_pretty(fields)
        .map_err(|e| invalid(&file, format!("cannot encode: {e}")))?;
    std::fs::write(&file, text + "\n").map_err(io(&file))
}

/// The statement of a run directory, if it has one.
pub fn read(run_dir: &Path) -> Result<Option<Statement>, ReportError> {
    let file = run_dir.join(PROVIDER_FILE);
    let text = match std::fs::read_to_string(&file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io(&file)(e)),
    };
    let fields: Statement = serde_json::from_str(&text)
        .map_err(|e| invalid(&file, format!("not a provider statement: {e}")))?;
    check(&file, &fields)?;
    Ok(Some(fields))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toml_file(dir: &Path, text: &str) -> std::path::PathBuf {
        let f = dir.join("provider.toml");
        std::fs::write(&f, text).unwrap();
        f
    }

    #[test]
    fn a_table_of_strings_round_trips_through_the_run_directory() {
        let dir = tempfile::tempdir().unwrap();
        let f = toml_file(
            dir.path(),
            "# comment\nserver = \"llama-cpp-python 0.3.36\"\nmodel_sha256 = \"b179\"\n",
        );
        let fields = read_toml(&f).unwrap();
        assert_eq!(fields.len(), 2);
        write(dir.path(), &fields).unwrap();
        assert_eq!(read(dir.path()).unwrap(), Some(fields));
    }

    #[test]
    fn no_statement_is_none() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read(dir.path()).unwrap(), None);
    }

    #[test]
    fn bad_statements_are_refused_naming_the_file_and_the_key() {
        let dir = tempfile::tempdir().unwrap();
        for (text, needle) in [
            (
                "context = 4096\n",
                "`context`: expected a string, found integer",
            ),
            (
                "[server]\nname = \"x\"\n",
                "`server`: expected a string, found table",
            ),
            ("Model = \"x\"\n", "key `Model`"),
            ("model = \"\"\n", "`model`: expected one line of text"),
            ("model = \"a\\nb\"\n", "`model`: expected one line of text"),
            ("", "states nothing"),
            ("model = \n", "not TOML"),
        ] {
            let f = toml_file(dir.path(), text);
            let err = read_toml(&f).unwrap_err().to_string();
            assert!(err.contains("provider.toml"), "{text:?}: {err}");
            assert!(err.contains(needle), "{text:?}: {err}");
        }
        std::fs::write(dir.path().join(PROVIDER_FILE), "{\"Bad key\": \"x\"}").unwrap();
        let err = read(dir.path()).unwrap_err().to_string();
        assert!(
            err.contains("provider.json") && err.contains("key `Bad key`"),
            "{err}"
        );
    }
}
