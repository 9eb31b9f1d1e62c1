//! One line of a rescore: a record's stored verdict beside the one re-derived from its
//! raw files, what verifying its raw files found, and why a verdict could not be
//! re-derived. Every suite's record fills one ([`super::suite::SuiteRecord::rescore_row`]);
//! rescore and the pages read them. They read a verdict in words ([`VerdictAxis`]),
//! whatever its shape, so that a suite whose verdict is not one axis needs neither a
//! field of its own on the row nor a reader that knows its type.

use std::path::{Path, PathBuf};

use super::header::RecordError;
use crate::score::Verdict;
use crate::spec::Suite;

#[derive(Debug, thiserror::Error)]
pub enum RescoreError {
    #[error(transparent)]
    Record(#[from] RecordError),
    #[error(
        "{file}: evidence does not match its recorded hash (recorded {recorded}, found {found})"
    )]
    Altered {
        file: PathBuf,
        recorded: String,
        found: String,
    },
    #[error("{file}: agent `{agent}` has no stream parser; cannot read its output")]
    UnknownAgent { file: PathBuf, agent: String },
    #[error("{file}: cannot read evidence: {source}")]
    Io {
        file: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The record's verdict is not a one-axis verdict (see [`RescoreRow::axes`]).
    #[error("a {} record's verdict is kept beside this one", .0.as_str())]
    OtherSuite(Suite),
    /// A raw file the verdict is read from is not what the record says it is.
    #[error("{}: evidence {}", .trial_dir.join(&.problem.path).display(), .problem.problem)]
    Raw {
        trial_dir: PathBuf,
        problem: super::raw::RawProblem,
    },
}

/// One line of a rescore table.
#[derive(Debug)]
pub struct RescoreRow {
    pub file: PathBuf,
    pub trial: String,
    /// The verdict of a qa or scorecard record as stored, and as its evidence gives it.
    pub stored: Option<Verdict>,
    pub derived: Result<Verdict, RescoreError>,
    /// The verdict of a suite whose verdict has more than one axis, as its own record
    /// file puts it in words; `stored` is `None` then and `derived` is
    /// [`RescoreError::OtherSuite`]. A suite's verdict of any shape fits here, so that
    /// no suite needs a field of its own on the row.
    pub axes: Option<AxesRescore>,
    /// Raw files the record names that were verified (see [`super::raw`]).
    pub raw_files: usize,
    /// Raw files that are missing, of another size, or hash to something else.
    pub raw_problems: Vec<String>,
    /// `sha256:<hex>` of the record file as stored.
    pub record_sha256: Option<String>,
}

/// One axis of a verdict in its suite's own outcome words, with its reason: what
/// rescore and the pages show of a verdict whose type they do not know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerdictAxis {
    /// The axis, as the record's verdict names its field (`task_outcome`).
    pub axis: &'static str,
    /// Its outcome word (`success`, `clean`).
    pub outcome: String,
    pub reason: String,
}

/// A verdict of more than one axis as stored, and as re-derived from the raw files.
#[derive(Debug)]
pub struct AxesRescore {
    pub stored: Vec<VerdictAxis>,
    pub derived: Result<Vec<VerdictAxis>, RescoreError>,
    /// Decided on the verdicts themselves, not on their words: two verdicts may say
    /// the same words and differ in what they were judged on (assertions, findings).
    agrees: bool,
}

impl AxesRescore {
    /// `stored` beside `derived`, compared whole and put in words by `words` (the
    /// suite's own).
    pub fn compare<V: PartialEq>(
        stored: &V,
        derived: Result<V, RescoreError>,
        words: impl Fn(&V) -> Vec<VerdictAxis>,
    ) -> AxesRescore {
        AxesRescore {
            agrees: matches!(&derived, Ok(d) if d == stored),
            stored: words(stored),
            derived: derived.map(|d| words(&d)),
        }
    }

    /// The re-derived verdict is the stored one.
    pub fn agrees(&self) -> bool {
        self.agrees
    }
}

impl RescoreRow {
    /// A row of a record's stored and re-derived verdict (raw files not yet verified).
    pub fn verdicts(
        file: &Path,
        trial: String,
        stored: Option<Verdict>,
        derived: Result<Verdict, RescoreError>,
    ) -> RescoreRow {
        RescoreRow {
            file: file.to_path_buf(),
            trial,
            stored,
            derived,
            axes: None,
            raw_files: 0,
            raw_problems: Vec::new(),
            record_sha256: None,
        }
    }

    /// A row of a `suite` record whose verdict has more than one axis (raw files not
    /// yet verified).
    pub fn of_axes(file: &Path, trial: String, suite: Suite, axes: AxesRescore) -> RescoreRow {
        RescoreRow {
            axes: Some(axes),
            ..RescoreRow::verdicts(file, trial, None, Err(RescoreError::OtherSuite(suite)))
        }
    }

    /// A row of a record that could not be read.
    pub fn unreadable(file: &Path, why: RecordError) -> RescoreRow {
        RescoreRow::verdicts(file, "?".into(), None, Err(RescoreError::Record(why)))
    }

    /// The stored verdict follows from the evidence, and every raw file is as recorded.
    pub fn agrees(&self) -> bool {
        if !self.raw_problems.is_empty() {
            return false;
        }
        if let Some(a) = &self.axes {
            return a.agrees();
        }
        matches!((&self.stored, &self.derived), (Some(s), Ok(d)) if s == d)
    }

    /// The stored verdict in words, whatever its shape; `None` for a record that could
    /// not be read.
    pub fn stored_words(&self) -> Option<Vec<VerdictAxis>> {
        match &self.axes {
            Some(a) => Some(a.stored.clone()),
            None => self.stored.as_ref().map(one_axis),
        }
    }

    /// The re-derived verdict in words, whatever its shape, or why there is none.
    pub fn derived_words(&self) -> Result<Vec<VerdictAxis>, &RescoreError> {
        match &self.axes {
            Some(a) => a.derived.as_ref().map(Clone::clone),
            None => self.derived.as_ref().map(one_axis),
        }
    }
}

/// A one-axis verdict in words.
pub fn one_axis(v: &Verdict) -> Vec<VerdictAxis> {
    vec![VerdictAxis {
        axis: "outcome",
        outcome: v.outcome.as_str().to_string(),
        reason: v.reason.clone(),
    }]
}

/// A verdict's outcome words, as [`super::suite::SuiteRecord::outcome_words`] gives
/// them (`verified`, `failed/clean`).
pub fn outcome_words(axes: &[VerdictAxis]) -> String {
    axes.iter()
        .map(|a| a.outcome.as_str())
        .collect::<Vec<_>>()
        .join("/")
}

/// A verdict's reasons as one line, axis by axis.
pub fn reasons(axes: &[VerdictAxis]) -> String {
    axes.iter()
        .map(|a| a.reason.as_str())
        .collect::<Vec<_>>()
        .join("; ")
}

/// A two-axis verdict and its rows, for the tests of every reader of a row.
#[cfg(test)]
pub(crate) mod test_rows {
    use super::*;

    /// A challenge-like verdict of two axes in words, from its two outcome words.
    pub fn two_axes(v: &(&'static str, &'static str)) -> Vec<VerdictAxis> {
        vec![
            VerdictAxis {
                axis: "task_outcome",
                outcome: v.0.into(),
                reason: "the report is wrong".into(),
            },
            VerdictAxis {
                axis: "evaluation_validity",
                outcome: v.1.into(),
                reason: "nothing disallowed was read".into(),
            },
        ]
    }

    /// The row of a two-axis verdict stored as `stored` and re-derived as `derived`.
    pub fn row(
        stored: (&'static str, &'static str),
        derived: Result<(&'static str, &'static str), RescoreError>,
    ) -> RescoreRow {
        let axes = AxesRescore::compare(&stored, derived, two_axes);
        RescoreRow::of_axes(Path::new("r.json"), "t".into(), Suite::Challenge, axes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::test_rows::row;

    #[test]
    fn a_verdict_of_axes_agrees_only_when_re_derived_whole() {
        assert!(row(("success", "clean"), Ok(("success", "clean"))).agrees());
        let differs = row(("success", "clean"), Ok(("success", "compromised")));
        assert!(!differs.agrees());
        assert_eq!(
            outcome_words(&differs.stored_words().unwrap_or_default()),
            "success/clean"
        );
        let derived = differs.derived_words().map(|d| outcome_words(&d));
        assert_eq!(derived.ok().as_deref(), Some("success/compromised"));
        let io = std::io::Error::other("gone");
        let unreadable = row(
            ("success", "clean"),
            Err(RescoreError::Io {
                file: "agent.stdout".into(),
                source: io,
            }),
        );
        assert!(!unreadable.agrees());
        assert!(unreadable.derived_words().is_err());
        let mut altered = row(("success", "clean"), Ok(("success", "clean")));
        altered.raw_problems.push("agent.stdout: altered".into());
        assert!(!altered.agrees());
    }

    #[test]
    fn the_words_of_a_one_axis_verdict_are_its_outcome_and_reason() {
        let v = Verdict {
            outcome: crate::score::Outcome::Verified,
            reason: "the gate held".into(),
            passed: true,
        };
        let r = RescoreRow::verdicts(Path::new("r.json"), "t".into(), Some(v.clone()), Ok(v));
        assert!(r.agrees());
        let stored = r.stored_words().unwrap_or_default();
        assert_eq!(outcome_words(&stored), "verified");
        assert_eq!(reasons(&stored), "the gate held");
    }
}
