//! Mutants: the tool with exactly one capability broken.
//!
//! The harness re-runs an agent's claimed test against the capability's mutant (a
//! wrapper script that always passes `--mutant <capability>` first); a test that still
//! passes there proves nothing. Each mutant breaks its own capability the way a real
//! bug would, and leaves every other capability intact.

use std::str::FromStr;

/// A verifiable capability that `--mutant` can break.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mutant {
    /// `--version` reports the previous release.
    Version,
    /// The text output of `sum` leaves out the last number (JSON is unaffected).
    Sum,
    /// The text output of `stats` reports the first number as the minimum.
    Stats,
    /// `--json` writes numbers as JSON strings (`"sum":"3"`).
    JsonOutput,
    /// Non-numeric arguments are skipped silently, with exit code 0.
    RejectNonNumeric,
}

/// Capabilities that exist but are ambiguous: they have no mutant by design.
const AMBIGUOUS: &[&str] = &["pleasant-output"];

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MutantError {
    #[error("capability `{0}` is ambiguous and has no mutant")]
    Ambiguous(String),
    #[error(
        "`{0}` is not a capability with a mutant (expected one of: version, sum, stats, \
         json-output, reject-non-numeric)"
    )]
    Unknown(String),
}

impl FromStr for Mutant {
    type Err = MutantError;

    fn from_str(s: &str) -> Result<Mutant, MutantError> {
        match s {
            "version" => Ok(Mutant::Version),
            "sum" => Ok(Mutant::Sum),
            "stats" => Ok(Mutant::Stats),
            "json-output" => Ok(Mutant::JsonOutput),
            "reject-non-numeric" => Ok(Mutant::RejectNonNumeric),
            s if AMBIGUOUS.contains(&s) => Err(MutantError::Ambiguous(s.to_string())),
            s => Err(MutantError::Unknown(s.to_string())),
        }
    }
}

/// clap value parser for `--mutant`.
pub fn parse(s: &str) -> Result<Mutant, MutantError> {
    s.parse()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_verifiable_capability_has_a_mutant() {
        assert_eq!("version".parse(), Ok(Mutant::Version));
        assert_eq!("sum".parse(), Ok(Mutant::Sum));
        assert_eq!("stats".parse(), Ok(Mutant::Stats));
        assert_eq!("json-output".parse(), Ok(Mutant::JsonOutput));
        assert_eq!("reject-non-numeric".parse(), Ok(Mutant::RejectNonNumeric));
    }

    #[test]
    fn ambiguous_and_unknown_capabilities_are_refused() {
        assert_eq!(
            "pleasant-output".parse::<Mutant>(),
            Err(MutantError::Ambiguous("pleasant-output".into()))
        );
        assert_eq!(
            "Sum".parse::<Mutant>(),
            Err(MutantError::Unknown("Sum".into()))
        );
    }
}
