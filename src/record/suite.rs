//! What every reader of a run asks of a record, whatever its suite: one trait, which
//! each suite's record implements in its own file (`qa.rs`, `challenge.rs`,
//! `scorecard.rs`) beside its type and its re-derivation. A reader holding a record of
//! any suite asks through it ([`super::any::AnyRecord::as_suite`]), so that a suite's
//! answers are written once, where its record is, and a fourth suite is one more
//! implementation rather than one more arm in every reader.

use std::path::Path;

use super::header::Header;
use super::raw::Hashed;
use super::row::RescoreRow;
use crate::evidence::normalize::ReportedUsage;
use crate::evidence::usage::UsageEntry;
use crate::evidence::RawFile;
use crate::score::challenge::ChallengeVerdict;
use crate::score::{Outcome, Verdict};

/// A record's stored verdict: one axis (qa, scorecard), or a challenge's two (task
/// outcome and evaluation validity), which has no error outcome.
#[derive(Debug, Clone, Copy)]
pub enum StoredVerdict<'a> {
    OneAxis(&'a Verdict),
    TwoAxes(&'a ChallengeVerdict),
}

pub trait SuiteRecord {
    /// The shared header: suite, run, trial, timings, configuration.
    fn header(&self) -> &Header;

    /// The signal that stopped the trial part-way, read from its evidence: such a
    /// record is partial evidence, never a result, and a resumed run runs the trial
    /// again.
    fn interrupted(&self) -> Option<&str>;

    /// The verdict as the record stores it.
    fn verdict(&self) -> StoredVerdict<'_>;

    /// The stored verdict passed.
    fn passed(&self) -> bool {
        match self.verdict() {
            StoredVerdict::OneAxis(v) => v.passed,
            StoredVerdict::TwoAxes(v) => v.passed,
        }
    }

    /// The trial could not be judged: its stored verdict is `error`.
    fn errored(&self) -> bool {
        match self.verdict() {
            StoredVerdict::OneAxis(v) => v.outcome == Outcome::Error,
            StoredVerdict::TwoAxes(_) => false,
        }
    }

    /// The stored verdict in the suite's own outcome words (`verified`, `failed/clean`).
    fn outcome_words(&self) -> String {
        match self.verdict() {
            StoredVerdict::OneAxis(v) => v.outcome.as_str().to_string(),
            StoredVerdict::TwoAxes(v) => format!(
                "{}/{}",
                v.task_outcome.as_str(),
                v.evaluation_validity.as_str()
            ),
        }
    }

    /// What the suite's figures count as an achievement (a qa `verified`, a challenge's
    /// clean success, a passed probe): what a hackability audit asks an adversary got.
    fn credited(&self) -> bool;

    /// Why the stored verdict is what it is.
    fn reason(&self) -> &str {
        match self.verdict() {
            StoredVerdict::OneAxis(v) => &v.reason,
            StoredVerdict::TwoAxes(v) => &v.outcome_reason,
        }
    }

    /// The trial name the record's spec gives it: a record whose header names another
    /// trial was renamed or moved, and is not that trial's.
    fn spec_trial_name(&self) -> String;

    /// The stored verdict beside the one re-derived from the raw files of `file`'s
    /// trial directory, and the raw file that re-deriving it read whole, if one was
    /// (so that the raw-file check need not read it again).
    fn rescore_row(&self, file: &Path) -> (RescoreRow, Option<Hashed>);

    /// Every raw file the typed record names, when the suite can list them
    /// (`None`: the raw-file check scans the record's bytes for them instead).
    fn raw_files(&self) -> Option<Vec<&RawFile>> {
        None
    }

    /// The tokens the agent's own account reports, one entry per agent process, re-read
    /// from the raw stdout in `trial_dir` where the record keeps no report of it.
    fn reported_usage(&self, trial_dir: &Path) -> Result<Vec<ReportedUsage>, String>;

    /// Every model call of the trial as the metering proxy metered it.
    fn metered_usage(&self) -> &[UsageEntry];

    /// The line nextest keeps in JUnit `system-out`, ending with the record's own hash.
    fn summary_line(&self) -> String;
}
