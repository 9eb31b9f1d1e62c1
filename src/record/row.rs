//! One line of a rescore: a record's stored verdict beside the one re-derived from its
//! raw files, what verifying its raw files found, and why a verdict could not be
//! re-derived. Every suite's record fills one ([`super::suite::SuiteRecord::rescore_row`]);
//! rescore and the pages read them.

use std::path::{Path, PathBuf};

use super::header::RecordError;
use crate::score::Verdict;

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
    /// The record's verdict is not a one-axis verdict (see [`RescoreRow::challenge`]).
    #[error("a {} record's verdict is kept beside this one", .0.as_str())]
    OtherSuite(crate::spec::Suite),
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
    /// A challenge record's verdicts (its verdict has two axes); `stored` is `None`
    /// then and `derived` is [`RescoreError::OtherSuite`].
    pub challenge: Option<ChallengeRescore>,
    /// Raw files the record names that were verified (see [`super::raw`]).
    pub raw_files: usize,
    /// Raw files that are missing, of another size, or hash to something else.
    pub raw_problems: Vec<String>,
    /// `sha256:<hex>` of the record file as stored.
    pub record_sha256: Option<String>,
}

/// A challenge record's stored verdict and the one re-derived from its raw files.
#[derive(Debug)]
pub struct ChallengeRescore {
    pub stored: crate::score::challenge::ChallengeVerdict,
    pub derived: Result<crate::score::challenge::ChallengeVerdict, RescoreError>,
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
            challenge: None,
            raw_files: 0,
            raw_problems: Vec::new(),
            record_sha256: None,
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
        if let Some(c) = &self.challenge {
            return matches!(&c.derived, Ok(d) if *d == c.stored);
        }
        matches!((&self.stored, &self.derived), (Some(s), Ok(d)) if s == d)
    }
}
