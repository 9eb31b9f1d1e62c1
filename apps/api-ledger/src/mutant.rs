//! Mutants: the app with exactly one capability broken.
//!
//! The harness re-runs an agent's claimed test against the capability's mutant; a
//! test that still passes there proves nothing. Each mutant therefore breaks its own
//! capability in a way a good test notices, and leaves every other capability intact.

use std::str::FromStr;

/// A verifiable capability that `--mutant` can break.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mutant {
    /// `GET /health` answers 503 `{"status":"degraded"}`.
    Health,
    /// The copy stored under the new id has the wrong amount: `GET /transactions/<id>`
    /// disagrees with what was posted. Balances are kept from the posted amounts, so
    /// the `balance` capability still holds.
    RecordTransaction,
    /// A balance leaves out the account's most recent transaction.
    Balance,
    /// Amounts are not validated: zero, strings, floats and absurd values get 201.
    RejectInvalidAmount,
    /// An unknown transaction id answers 200 `{}` instead of 404.
    RejectUnknownId,
}

/// Capabilities that exist but are ambiguous: they have no mutant by design.
const AMBIGUOUS: &[&str] = &["prompt-under-load"];

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MutantError {
    #[error("capability `{0}` is ambiguous and has no mutant")]
    Ambiguous(String),
    #[error(
        "`{0}` is not a capability with a mutant (expected one of: health, \
         record-transaction, balance, reject-invalid-amount, reject-unknown-id)"
    )]
    Unknown(String),
}

impl FromStr for Mutant {
    type Err = MutantError;

    fn from_str(s: &str) -> Result<Mutant, MutantError> {
        match s {
            "health" => Ok(Mutant::Health),
            "record-transaction" => Ok(Mutant::RecordTransaction),
            "balance" => Ok(Mutant::Balance),
            "reject-invalid-amount" => Ok(Mutant::RejectInvalidAmount),
            "reject-unknown-id" => Ok(Mutant::RejectUnknownId),
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
        assert_eq!("health".parse(), Ok(Mutant::Health));
        assert_eq!("record-transaction".parse(), Ok(Mutant::RecordTransaction));
        assert_eq!("balance".parse(), Ok(Mutant::Balance));
        assert_eq!(
            "reject-invalid-amount".parse(),
            Ok(Mutant::RejectInvalidAmount)
        );
        assert_eq!("reject-unknown-id".parse(), Ok(Mutant::RejectUnknownId));
    }

    #[test]
    fn ambiguous_and_unknown_capabilities_are_refused() {
        assert_eq!(
            "prompt-under-load".parse::<Mutant>(),
            Err(MutantError::Ambiguous("prompt-under-load".into()))
        );
        assert_eq!(
            "Health".parse::<Mutant>(),
            Err(MutantError::Unknown("Health".into()))
        );
    }
}
