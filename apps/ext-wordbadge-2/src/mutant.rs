//! Mutants: the extension with exactly one capability broken.
//!
//! The pages are the same for every mutant; what changes is the extension that
//! `--extension-out` writes: one constant of its JavaScript holds another value, the
//! way a real one-line bug would break it (see `extension::Slot::broken_by`), spelled
//! as randomly as the app's.

use std::str::FromStr;

/// A verifiable capability that `--mutant` can break.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mutant {
    /// Hyphens split words: `well-known` counts as two.
    ExactCount,
    /// Only `data-decoy` text is left out; `aria-hidden="true"` text is counted.
    DecoyExclusion,
    /// The page is counted once, when it has loaded; later changes are not.
    LiveUpdate,
    /// A page without words gets a blank badge instead of `0`.
    EmptyPage,
}

impl Mutant {
    pub const ALL: [Mutant; 4] = [
        Mutant::ExactCount,
        Mutant::DecoyExclusion,
        Mutant::LiveUpdate,
        Mutant::EmptyPage,
    ];

    pub fn id(self) -> &'static str {
        match self {
            Mutant::ExactCount => "exact-count",
            Mutant::DecoyExclusion => "decoy-exclusion",
            Mutant::LiveUpdate => "live-update",
            Mutant::EmptyPage => "empty-page",
        }
    }
}

/// Capabilities that exist but are ambiguous: they have no mutant by design.
const AMBIGUOUS: &[&str] = &["unobtrusive-badge"];

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MutantError {
    #[error("capability `{0}` is ambiguous and has no mutant")]
    Ambiguous(String),
    #[error(
        "`{0}` is not a capability with a mutant (expected one of: exact-count, \
         decoy-exclusion, live-update, empty-page)"
    )]
    Unknown(String),
}

impl FromStr for Mutant {
    type Err = MutantError;

    fn from_str(s: &str) -> Result<Mutant, MutantError> {
        if let Some(m) = Mutant::ALL.into_iter().find(|m| m.id() == s) {
            return Ok(m);
        }
        if AMBIGUOUS.contains(&s) {
            Err(MutantError::Ambiguous(s.to_string()))
        } else {
            Err(MutantError::Unknown(s.to_string()))
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
    fn ids_round_trip() {
        for m in Mutant::ALL {
            assert_eq!(m.id().parse(), Ok(m));
        }
    }

    #[test]
    fn ambiguous_and_unknown_capabilities_are_refused() {
        assert_eq!(
            "unobtrusive-badge".parse::<Mutant>(),
            Err(MutantError::Ambiguous("unobtrusive-badge".into()))
        );
        assert_eq!(
            "badge".parse::<Mutant>(),
            Err(MutantError::Unknown("badge".into()))
        );
    }
}
