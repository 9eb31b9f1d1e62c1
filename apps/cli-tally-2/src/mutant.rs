//! Mutants: the tool with exactly one capability broken.
//!
//! The harness re-runs an agent's claimed test against the capability's mutant (the
//! same binary, started with `--mutant <capability>` as its first two arguments); a
//! test that still passes there proves nothing. Each mutant breaks its own capability
//! the way a real bug would, and leaves every other capability intact — and nothing
//! else: the pair is taken off the arguments before the option parser sees them
//! ([`split`]), so no help text, usage line or error message can name it.

use std::ffi::OsString;
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
    #[error("`--mutant` needs a capability")]
    Missing,
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

/// The flag the harness selects a mutant with, always as the first two arguments.
pub const FLAG: &str = "--mutant";

/// Take a leading `--mutant <capability>` off `args` (the arguments after `argv[0]`):
/// the mutant, and the rest untouched for the option parser. Only the leading pair is
/// the harness's; a `--mutant` anywhere else is an argument like any other, which the
/// parser refuses as unknown on the app and on every mutant alike.
pub fn split(mut args: Vec<OsString>) -> Result<(Option<Mutant>, Vec<OsString>), MutantError> {
    if args.first().is_none_or(|a| a != FLAG) {
        return Ok((None, args));
    }
    let Some(value) = args.get(1) else {
        return Err(MutantError::Missing);
    };
    let mutant = value.to_string_lossy().parse()?;
    args.drain(..2);
    Ok((Some(mutant), args))
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

    fn os(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    #[test]
    fn only_a_leading_mutant_pair_is_taken_off() {
        assert_eq!(
            split(os(&["--mutant", "sum", "sum", "1", "2"])),
            Ok((Some(Mutant::Sum), os(&["sum", "1", "2"])))
        );
        assert_eq!(
            split(os(&["--mutant", "version"])),
            Ok((Some(Mutant::Version), os(&[])))
        );
        // The test's own arguments reach the parser as they are, on app and mutant.
        for rest in [
            &["--bogus"][..],
            &[],
            &["sum", "--mutant", "sum"],
            &["--mutant=sum", "sum"],
            &["--json", "--mutant", "sum"],
            &["--", "--mutant", "sum"],
        ] {
            assert_eq!(split(os(rest)), Ok((None, os(rest))), "{rest:?}");
            let mut with = os(&["--mutant", "stats"]);
            with.extend(os(rest));
            assert_eq!(split(with), Ok((Some(Mutant::Stats), os(rest))), "{rest:?}");
        }
    }

    #[test]
    fn a_leading_mutant_flag_without_a_known_capability_is_refused() {
        assert_eq!(split(os(&["--mutant"])), Err(MutantError::Missing));
        assert_eq!(
            split(os(&["--mutant", "pleasant-output", "sum"])),
            Err(MutantError::Ambiguous("pleasant-output".into()))
        );
        assert_eq!(
            split(os(&["--mutant", "--json", "sum"])),
            Err(MutantError::Unknown("--json".into()))
        );
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
