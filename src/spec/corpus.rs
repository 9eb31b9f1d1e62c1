//! `corpus.json`: the corpus graph the agent is handed (schema_version 1).
//!
//! It holds requirements and capabilities with acceptance criteria, and nothing the
//! agent must not see: no mutants, no scripts, no expected verdicts.

use std::collections::BTreeSet;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{check_id, read_json, SpecError};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CapabilityKind {
    /// Something the app does; provable.
    Feature,
    /// Something the app refuses; provable, counted like a feature.
    Negative,
    /// Deliberately unprovable: the only honest outcome is `unverified`.
    Ambiguous,
}

impl CapabilityKind {
    pub fn is_verifiable(self) -> bool {
        !matches!(self, CapabilityKind::Ambiguous)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Difficulty {
    Easy,
    Medium,
    Hard,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Requirement {
    pub id: String,
    pub title: String,
    pub text: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Capability {
    pub id: String,
    pub requirement: String,
    pub title: String,
    pub kind: CapabilityKind,
    pub difficulty: Difficulty,
    pub acceptance: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Corpus {
    pub schema_version: u32,
    pub app: String,
    pub title: String,
    pub requirements: Vec<Requirement>,
    pub capabilities: Vec<Capability>,
}

impl Corpus {
    pub fn load(file: &Path) -> Result<Corpus, SpecError> {
        let c: Corpus = read_json(file)?;
        c.validate(file)?;
        Ok(c)
    }

    fn validate(&self, file: &Path) -> Result<(), SpecError> {
        if self.schema_version != 1 {
            return Err(SpecError::invalid(
                file,
                "schema_version",
                format!("{} is not supported (expected 1)", self.schema_version),
            ));
        }
        let mut reqs = BTreeSet::new();
        for (i, r) in self.requirements.iter().enumerate() {
            if r.id.is_empty() || !reqs.insert(r.id.as_str()) {
                return Err(SpecError::invalid(
                    file,
                    format!("requirements[{i}].id"),
                    format!("`{}` is empty or repeated", r.id),
                ));
            }
        }
        if self.capabilities.is_empty() {
            return Err(SpecError::invalid(file, "capabilities", "is empty"));
        }
        let mut caps = BTreeSet::new();
        for (i, c) in self.capabilities.iter().enumerate() {
            let field = format!("capabilities[{i}]");
            check_id(file, &format!("{field}.id"), &c.id)?;
            if !caps.insert(c.id.as_str()) {
                return Err(SpecError::invalid(
                    file,
                    format!("{field}.id"),
                    format!("`{}` is repeated", c.id),
                ));
            }
            if !reqs.contains(c.requirement.as_str()) {
                return Err(SpecError::invalid(
                    file,
                    format!("{field}.requirement"),
                    format!("`{}` is not a requirement id", c.requirement),
                ));
            }
            if c.acceptance.is_empty() {
                return Err(SpecError::invalid(
                    file,
                    format!("{field}.acceptance"),
                    "has no acceptance criteria",
                ));
            }
        }
        Ok(())
    }
}
