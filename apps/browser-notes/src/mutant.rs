//! Mutants: the app with exactly one capability broken.
//!
//! The harness re-runs an agent's claimed test against the capability's mutant; a
//! test that still passes there proves nothing. Each mutant breaks its own capability
//! in the JSON API the page is built on (so the page shows the bug too), the way a
//! real bug would, and leaves every other capability intact.

use std::str::FromStr;

/// A verifiable capability that `--mutant` can break.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mutant {
    /// A note keeps only the first [`crate::notes::TRUNCATE_AT`] characters of its text.
    AddNote,
    /// The count is the number of notes added since the last clear: deleting a note
    /// does not lower it.
    CountNotes,
    /// Search matches case-sensitively.
    Search,
    /// Deleting a note removes the newest note instead of the one asked for.
    DeleteNote,
    /// Only the exactly-empty text is refused; whitespace-only notes are accepted.
    RejectEmptyNote,
}

/// Capabilities that exist but are ambiguous: they have no mutant by design.
const AMBIGUOUS: &[&str] = &["feels-calm"];

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MutantError {
    #[error("capability `{0}` is ambiguous and has no mutant")]
    Ambiguous(String),
    #[error(
        "`{0}` is not a capability with a mutant (expected one of: add-note, count-notes, \
         search, delete-note, reject-empty-note)"
    )]
    Unknown(String),
}

impl FromStr for Mutant {
    type Err = MutantError;

    fn from_str(s: &str) -> Result<Mutant, MutantError> {
        match s {
            "add-note" => Ok(Mutant::AddNote),
            "count-notes" => Ok(Mutant::CountNotes),
            "search" => Ok(Mutant::Search),
            "delete-note" => Ok(Mutant::DeleteNote),
            "reject-empty-note" => Ok(Mutant::RejectEmptyNote),
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
        assert_eq!("add-note".parse(), Ok(Mutant::AddNote));
        assert_eq!("count-notes".parse(), Ok(Mutant::CountNotes));
        assert_eq!("search".parse(), Ok(Mutant::Search));
        assert_eq!("delete-note".parse(), Ok(Mutant::DeleteNote));
        assert_eq!("reject-empty-note".parse(), Ok(Mutant::RejectEmptyNote));
    }

    #[test]
    fn ambiguous_and_unknown_capabilities_are_refused() {
        assert_eq!(
            "feels-calm".parse::<Mutant>(),
            Err(MutantError::Ambiguous("feels-calm".into()))
        );
        assert_eq!(
            "Search".parse::<Mutant>(),
            Err(MutantError::Unknown("Search".into()))
        );
    }
}
