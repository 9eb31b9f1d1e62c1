//! What a suite is to the harness: one trait, [`SuiteRunner`], that plans a suite's
//! trials, says which lane each runs in and executes one through the trial kernel
//! into a record. The harness, `gauntlet run`, the libtest-mimic targets and the
//! red-team audit hold no knowledge of any suite: they ask [`super::runner`].
//!
//! The record's half of a suite (loading it, re-deriving its verdict, the figures the
//! pages show) is [`crate::record::SuiteRecord`], one layer down, because a record
//! rescores on a machine with no agent, app or browser.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;

use crate::config::Config;
use crate::plan::{PlanError, Suites, Trial};
use crate::spec::Suite;

/// One suite's behaviour, implemented once in its own folder and registered in
/// [`super::runner`].
pub trait SuiteRunner: Sync {
    /// The tag its plans and records carry.
    fn suite(&self) -> Suite;

    /// Load and check its data into `into` ([`Suites::insert`], as a type of its
    /// own): bad data fails here, naming the file and field, before any trial is
    /// planned.
    fn load(&self, cfg: &Config, into: &mut Suites) -> Result<(), PlanError>;

    /// Its trials, in plan order, from loaded data alone (no process, socket or
    /// workspace: nextest lists before it runs). `no_browser` is why a trial that
    /// drives a browser cannot run here, if it cannot.
    fn plan(&self, suites: &Suites, cfg: &Config, no_browser: Option<&str>) -> Vec<Trial>;

    /// Whether any of its trials drives a browser (the question `no_browser` answers
    /// is then asked).
    fn needs_browser(&self, suites: &Suites) -> bool;

    /// Which of the run loop's lanes `t` runs in.
    fn lane(&self, suites: &Suites, t: &Trial) -> Lane;

    /// Work started before the run's first trial, shared by several of `trials` (the
    /// qa suite's independence matrices): each trial still derives what it needs if
    /// this has not finished or failed.
    fn warm(&self, _suites: &Arc<Suites>, _cfg: &Arc<Config>, _trials: &[Trial]) {}

    /// The binaries of this package its trials start besides the harness's own (an
    /// app's): the run's identity fingerprints them, and a run refuses to start
    /// without them.
    fn binaries<'a>(&self, _suites: &'a Suites) -> Vec<&'a str> {
        Vec::new()
    }

    /// Run the trial into its run directory through the trial kernel and write its
    /// record.
    fn execute<'a>(&'a self, run: TrialRun<'a>) -> Running<'a>;

    /// Its entries in `run.json`'s `specs` (keyed as [`crate::record::identity::app_key`]
    /// says), from its loaded data, planned or not: a resumed run must find the same
    /// data, and rescore reads each trial's record against its entry.
    fn specs(&self, suites: &Suites, cfg: &Config) -> SpecEntries;

    /// What the hash of each of `tasks` covers ([`crate::record::identity::task_hash`]):
    /// everything of its data an adversary could use to game it. `tasks` holds one
    /// planned trial per task; the answer holds, in its order, the parts of each task's
    /// hash, or `None` for a trial that names data not loaded (it has no hash). Taken
    /// for all of a suite's tasks at once so that what they share (a directory's
    /// digest, a lock file) is read once per run.
    fn task_parts(&self, suites: &Suites, tasks: &[&Trial]) -> TaskParts;

    /// The directory holding the suite's data: where the repository has none by default
    /// ([`Config::absent_by_default`]), the suite is not loaded and plans nothing.
    fn data_dir<'a>(&self, cfg: &'a Config) -> &'a std::path::Path;

    /// What `gauntlet run` tells its user about this suite's share of the run in
    /// `run_dir` once it is reported (where its results go next), if anything.
    fn after_run(&self, _run_dir: &std::path::Path) -> Option<String> {
        None
    }
}

/// A suite's `run.json` `specs` entries, key and value ([`SuiteRunner::specs`]).
pub type SpecEntries = std::io::Result<Vec<(String, String)>>;

/// The parts of each of a suite's task hashes ([`SuiteRunner::task_parts`]).
pub type TaskParts = std::io::Result<Vec<Option<Vec<String>>>>;

/// One planned trial to execute, and what it runs with.
#[derive(Clone, Copy)]
pub struct TrialRun<'a> {
    pub suites: &'a Suites,
    pub trial: &'a Trial,
    pub cfg: &'a Config,
    pub run_dir: &'a Path,
}

impl<'a> TrialRun<'a> {
    /// The trial's unit, as its suite planned it.
    pub fn unit<T: std::any::Any>(&self) -> Result<&'a T, TrialError> {
        let trial: &'a Trial = self.trial;
        trial
            .unit
            .get()
            .ok_or_else(|| self.not_loaded("its suite's unit"))
    }

    /// The data its suite loaded.
    pub fn data<T: std::any::Any>(&self) -> Result<&'a T, TrialError> {
        let suites: &'a Suites = self.suites;
        suites
            .get()
            .ok_or_else(|| self.not_loaded("its suite's data"))
    }

    /// The suite's own failure of this trial.
    pub fn failed(&self, source: impl std::error::Error + Send + Sync + 'static) -> TrialError {
        TrialError::Suite {
            trial: self.trial.name.clone(),
            source: Box::new(source),
        }
    }

    /// The trial names data the loaded suites do not hold.
    pub fn not_loaded(&self, what: &'static str) -> TrialError {
        TrialError::NotLoaded {
            trial: self.trial.name.clone(),
            what,
        }
    }
}

impl Finished {
    /// A trial of `suite` whose record in `trial_dir` reads `summary`, failing with
    /// `failure` (`None` when its verdict passed).
    pub fn new(
        suite: Suite,
        summary: String,
        trial_dir: PathBuf,
        failure: Option<String>,
        interrupted: Option<&str>,
    ) -> Finished {
        Finished {
            suite,
            summary,
            trial_dir,
            lines: Vec::new(),
            failure,
            interrupted: interrupted.map(str::to_owned),
        }
    }

    /// Why a one-axis verdict did not pass, if it did not.
    pub fn failure_of(v: &crate::score::Verdict) -> Option<String> {
        (!v.passed).then(|| format!("{}: {}", v.outcome, v.reason))
    }

    /// The trial's failure said as the provider's when the record's evidence makes it
    /// so ([`crate::record::SuiteRecord::infra`]), so that a JUnit reader tells it from
    /// the agent's at a glance.
    pub fn infra_first(mut self, rec: &dyn crate::record::SuiteRecord) -> Finished {
        if let (Some(cause), Some(failure)) = (rec.infra(), self.failure.as_mut()) {
            *failure = format!(
                "infrastructure failure, not the agent's: {cause}; `gauntlet run --resume <run dir> --retry-infra` runs the trial again (verdict: {failure})"
            );
        }
        self
    }
}

/// A trial being executed: boxed, because the registry hands out `dyn SuiteRunner`s.
pub type Running<'a> = Pin<Box<dyn Future<Output = Result<Finished, TrialError>> + Send + 'a>>;

/// Which lane of the run loop a trial runs in: they load the machine in three ways.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Lane {
    /// Work on the machine's cores.
    Compute,
    /// A trial that keeps one Chromium busy.
    Browser,
    /// Mostly waiting (a scorecard probe's idle windows).
    Waiting,
}

/// The lane of a trial whose app, if it has one, has `modality`.
pub fn lane_of(modality: Option<crate::spec::Modality>) -> Lane {
    if modality.is_some_and(crate::plan::needs_browser) {
        Lane::Browser
    } else {
        Lane::Compute
    }
}

/// A trial that left a record: what its test prints and whether it passed.
#[derive(Debug, Clone)]
pub struct Finished {
    pub suite: Suite,
    /// The JUnit summary line (the record's own summary).
    pub summary: String,
    pub trial_dir: PathBuf,
    /// Further lines for the test's output (a probe's observations).
    pub lines: Vec<String>,
    /// Why the verdict did not pass; `None` when it passed.
    pub failure: Option<String>,
    /// The signal the record names as having stopped the trial part-way.
    pub interrupted: Option<String>,
}

/// Why a trial left no record.
#[derive(Debug, thiserror::Error)]
pub enum TrialError {
    /// The suite's execution failed before its record was written.
    #[error("{trial}: {source}")]
    Suite {
        trial: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The plan names data the loaded suites do not hold.
    #[error("{trial}: {what} is not loaded")]
    NotLoaded { trial: String, what: &'static str },
    /// Planned as skipped (a list-time ignore), and run anyway.
    #[error("{trial}: {why}")]
    Skipped { trial: String, why: String },
    #[error("{trial}: the trial's task failed: {source}")]
    Task {
        trial: String,
        #[source]
        source: tokio::task::JoinError,
    },
    /// The lane that was to start the trial failed first.
    #[error("{trial}: never started: the run loop's lane failed: {why}")]
    Dispatch { trial: String, why: String },
    #[error("{trial}: the record was written, but the manifest cannot say it finished: {source}")]
    NoteFinished {
        trial: String,
        #[source]
        source: crate::record::RecordError,
    },
    /// The run was asked to stop before this trial's turn came.
    #[error("{trial}: not started: the run was interrupted ({signal}); `gauntlet run --resume <run dir>` runs it")]
    NotStarted { trial: String, signal: &'static str },
}
