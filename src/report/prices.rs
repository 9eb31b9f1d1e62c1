//! The price table: USD per million tokens, per model, from a TOML file
//! (`prices.toml` at the repository root unless another is named).
//!
//! ```toml
//! [models."gpt-4o"]
//! input = 2.50          # USD per 1M input tokens not served from cache
//! output = 10.00        # USD per 1M output tokens
//! cached_input = 1.25   # USD per 1M cached input tokens (default: the input price)
//! ```
//!
//! A model missing from the table has no price: its cost is reported as unknown,
//! never as zero.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::base::ReportError;
use crate::evidence::usage::UsageEntry;

/// The file read when no other is named.
pub const DEFAULT_FILE: &str = "prices.toml";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    pub input: f64,
    pub output: f64,
    #[serde(default)]
    pub cached_input: Option<f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PriceFile {
    #[serde(default)]
    models: BTreeMap<String, Price>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct PriceTable {
    pub models: BTreeMap<String, Price>,
    /// Which table priced a report: the file's name and content hash, stated on
    /// every page so a cost can be traced to its prices.
    pub source: Option<String>,
}

impl PriceTable {
    /// The repository's `prices.toml`; an empty table when there is none.
    pub fn load_default() -> Result<PriceTable, ReportError> {
        let file = crate::binaries::repo_root().join(DEFAULT_FILE);
        if file.is_file() {
            PriceTable::load(&file)
        } else {
            Ok(PriceTable::default())
        }
    }

    pub fn load(file: &Path) -> Result<PriceTable, ReportError> {
        let bytes = std::fs::read(file).map_err(super::base::io(file))?;
        let invalid = |reason: String| ReportError::Invalid {
            file: PathBuf::from(file),
            reason,
        };
        let text = std::str::from_utf8(&bytes).map_err(|e| invalid(e.to_string()))?;
        let parsed: PriceFile =
            toml::from_str(text).map_err(|e| invalid(e.message().to_string()))?;
        for (model, p) in &parsed.models {
            for (field, v) in [
                ("input", Some(p.input)),
                ("output", Some(p.output)),
                ("cached_input", p.cached_input),
            ] {
                if let Some(v) = v {
                    if !(v.is_finite() && v >= 0.0) {
                        return Err(invalid(format!(
                            "models.\"{model}\".{field}: {v} is not a price (expected USD per 1M tokens, 0 or more)"
                        )));
                    }
                }
            }
        }
        let name = file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let hash = crate::hash::sha256(&bytes);
        Ok(PriceTable {
            models: parsed.models,
            source: Some(format!("{name} ({})", &hash[..hash.len().min(19)])),
        })
    }

    /// The cost of one metered call in USD; `None` when its model has no price.
    /// Cached input tokens are part of the input count (as providers report them)
    /// and are priced at the cached rate.
    pub fn cost(&self, entry: &UsageEntry, fallback_model: &str) -> Option<f64> {
        let model = entry.model.as_deref().unwrap_or(fallback_model);
        let p = self.models.get(model)?;
        let input = entry.input_tokens.unwrap_or(0);
        let cached = entry.cached_input_tokens.unwrap_or(0).min(input);
        let output = entry.output_tokens.unwrap_or(0);
        let per = 1e-6;
        Some(
            (input - cached) as f64 * p.input * per
                + cached as f64 * p.cached_input.unwrap_or(p.input) * per
                + output as f64 * p.output * per,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prices_cost_calls_and_unknown_models_are_unknown() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("p.toml");
        std::fs::write(
            &f,
            "[models.m]\ninput = 2.0\noutput = 10.0\ncached_input = 1.0\n",
        )
        .unwrap();
        let t = PriceTable::load(&f).unwrap();
        let e = UsageEntry {
            model: Some("m".into()),
            input_tokens: Some(1_000_000),
            cached_input_tokens: Some(500_000),
            output_tokens: Some(100_000),
            ..UsageEntry::default()
        };
        let c = t.cost(&e, "x").unwrap();
        assert!((c - (1.0 + 0.5 + 1.0)).abs() < 1e-9, "{c}");
        let unknown = UsageEntry {
            model: Some("other".into()),
            ..e
        };
        assert_eq!(t.cost(&unknown, "m"), None);
    }

    #[test]
    fn bad_tables_name_the_file_and_the_model() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("p.toml");
        std::fs::write(&f, "[models.m]\ninput = -1.0\noutput = 1.0\n").unwrap();
        let e = PriceTable::load(&f).unwrap_err().to_string();
        assert!(e.contains("p.toml") && e.contains("\"m\".input"), "{e}");
        std::fs::write(&f, "[models.m]\ninput = 1.0\noutptu = 1.0\n").unwrap();
        let e = PriceTable::load(&f).unwrap_err().to_string();
        assert!(e.contains("p.toml") && e.contains("outptu"), "{e}");
    }
}
