//! What every reader of a run asks of a record, whatever its suite: one trait, which
//! each suite's record implements in its own file (`qa.rs`, `challenge.rs`,
//! `scorecard.rs`) beside its type and its re-derivation. A reader holding a record of
//! any suite asks through it ([`super::any::AnyRecord::as_suite`]), so that a suite's
//! answers are written once, where its record is, and a fourth suite is one more
//! implementation rather than one more arm in every reader.

use std::path::Path;

use super::header::Header;
use super::raw::Hashed;
use super::row::{RescoreRow, VerdictAxis};
use crate::evidence::normalize::ReportedUsage;
use crate::evidence::usage::UsageEntry;
use crate::evidence::RawFile;
use crate::score::{Outcome, Verdict};

pub trait SuiteRecord {
    /// The shared header: suite, run, trial, timings, configuration.
    fn header(&self) -> &Header;

    /// The signal that stopped the trial part-way, read from its evidence: such a
    /// record is partial evidence, never a result, and a resumed run runs the trial
    /// again.
    fn interrupted(&self) -> Option<&str>;

    /// The stored verdict when it has one axis (qa, scorecard): the methods below read
    /// it. A suite whose verdict has more axes (a challenge's) says it through them.
    fn one_axis(&self) -> Option<&Verdict> {
        None
    }

    /// The verdict as the record stores it, in the suite's own words, axis by axis.
    fn verdict_words(&self) -> Vec<VerdictAxis> {
        self.one_axis()
            .map(super::row::one_axis)
            .unwrap_or_default()
    }

    /// The stored verdict passed.
    fn passed(&self) -> bool {
        self.one_axis().is_some_and(|v| v.passed)
    }

    /// The trial could not be judged: its stored verdict is `error` (a suite whose
    /// verdict has no such outcome never is).
    fn errored(&self) -> bool {
        self.one_axis().is_some_and(|v| v.outcome == Outcome::Error)
    }

    /// The stored verdict in the suite's own outcome words (`verified`, `failed/clean`).
    fn outcome_words(&self) -> String {
        super::row::outcome_words(&self.verdict_words())
    }

    /// What the suite's figures count as an achievement (a qa `verified`, a challenge's
    /// clean success, a passed probe): what a hackability audit asks an adversary got.
    fn credited(&self) -> bool;

    /// Why the stored verdict is what it is: its first axis's reason.
    fn reason(&self) -> String {
        self.verdict_words()
            .into_iter()
            .next()
            .map(|a| a.reason)
            .unwrap_or_default()
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
