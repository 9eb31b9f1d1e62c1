//! What every reader of a run asks of a record, whatever its suite: one trait, which
//! each suite's record implements in its own file (`qa.rs`, `challenge.rs`,
//! `scorecard.rs`) beside its type and its re-derivation. A reader holding a record of
//! any suite asks through it ([`super::any::AnyRecord::as_suite`]), so that a suite's
//! answers are written once, where its record is, and a fourth suite is one more
//! implementation rather than one more arm in every reader.

use std::borrow::Cow;
use std::path::Path;

use super::header::Header;
use super::raw::Hashed;
use super::row::{RescoreRow, VerdictAxis};
use crate::evidence::infra::{infra_cause, InfraCause};
use crate::evidence::normalize::ReportedUsage;
use crate::evidence::usage::UsageEntry;
use crate::evidence::RawFile;
use crate::score::{Outcome, Verdict};
use crate::spec::CapabilityKind;

use super::header::RecordConfig;

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

    /// The stored verdict says nothing about the agent's work: it could not be judged
    /// (an error, a timeout, no report to read). Only such a verdict can be the
    /// provider's doing ([`SuiteRecord::infra`]); a judged one is the agent's.
    fn unjudged(&self) -> bool {
        self.errored()
    }

    /// Why the stored verdict is the provider's failure, not the agent's: derived from
    /// the verdict and the proxy's usage entries alone, so a rescore gives the same
    /// cause (docs/provider-faults.md).
    fn infra(&self) -> Option<InfraCause> {
        infra_cause(self.unjudged(), self.metered_usage())
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

    /// What the trial was made from, each with the digest of the version it used: two
    /// records of one run must agree on every subject they share (merge, the report's
    /// loader), and two runs compared must too.
    fn subjects(&self) -> Vec<Subject<'_>>;

    /// The kind of capability the trial tested, for a suite whose trials have one.
    fn kind(&self) -> Option<CapabilityKind> {
        None
    }
}

/// One thing a trial was made from (an app, a capability's spec, a challenge, a
/// probe), named as a reader names it, and the digest of the version the trial used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subject<'a> {
    /// What it is, as a message names it: `app`, `spec of`, `challenge`, `probe`.
    pub what: &'static str,
    /// Which one: `api-ledger`, `api-ledger::balance`.
    pub name: Cow<'a, str>,
    /// The record's field the digest is read from, so a mismatch names it.
    pub field: &'static str,
    pub digest: Cow<'a, str>,
}

impl Subject<'_> {
    /// The subject as a message names it: ``app `api-ledger` ``.
    pub fn label(&self) -> String {
        format!("{} `{}`", self.what, self.name)
    }
}

/// What a suite's figures are beyond the pass rate every suite has, declared once per
/// suite in its record's file and read by `gauntlet compare` and the pages alike.
#[derive(Debug)]
pub struct SuiteFigures {
    /// The rates the suite is also judged by.
    pub rates: &'static [Rate],
    /// Settings of a record's config under which the suite's verdicts mean something
    /// else: runs that differ in one are not compared.
    pub verdict_settings: &'static [VerdictSetting],
}

impl SuiteFigures {
    /// A suite judged by its pass rate alone.
    pub const PASS_RATE_ONLY: SuiteFigures = SuiteFigures {
        rates: &[],
        verdict_settings: &[],
    };
}

/// A rate of trials whose verdict is one outcome word.
#[derive(Debug)]
pub struct Rate {
    /// `verified rate`.
    pub name: &'static str,
    pub better: Better,
    /// The outcome word (as [`SuiteRecord::outcome_words`] gives it) the rate counts.
    pub outcome: &'static str,
    /// Which of the suite's trials it counts among.
    pub among: Among,
    /// For a rate where lower is better: one trial with that outcome, as a sentence's
    /// subject (`a false verification`), and why it matters, so that one appearing
    /// where the baseline had none is named.
    pub one: Option<(&'static str, &'static str)>,
}

/// Whether a rate rising is good news or bad.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Better {
    Higher,
    Lower,
}

/// The trials a rate counts among.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Among {
    All,
    /// Trials of a capability that can be verified (a kind nobody recorded counts as
    /// one: the count that cannot flatter a run).
    Verifiable,
}

impl Among {
    pub fn counts(self, kind: Option<CapabilityKind>) -> bool {
        match self {
            Among::All => true,
            Among::Verifiable => kind.is_none_or(CapabilityKind::is_verifiable),
        }
    }
}

/// A setting of the harness's config that changes what a suite's verdict means.
#[derive(Debug)]
pub struct VerdictSetting {
    /// How a message names it: `N (green re-runs a verified claim needs)`.
    pub name: &'static str,
    pub value: fn(&RecordConfig) -> String,
}

/// What a trial's JUnit summary line says of an infrastructure cause: ` infra=<fault>`,
/// or nothing.
pub fn infra_tag(rec: &dyn SuiteRecord) -> String {
    rec.infra()
        .map(|c| format!(" infra={}", c.fault))
        .unwrap_or_default()
}
