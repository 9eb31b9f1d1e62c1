//! Executing trials: world + proxy + agent → evidence → verdict → record, one suite
//! per module, each implementing [`SuiteRunner`] and registered once, here.
//!
//! To add a suite: its tag in [`crate::spec::Suite`] and `Suite::ALL`; its module
//! here, holding its loaded data, its planned unit, its plan and its [`SuiteRunner`];
//! its line in [`runner`]; and its record in `record/` (implementing
//! [`crate::record::SuiteRecord`], a variant of `record::any::AnyRecord`).
//! docs/architecture.md ("Adding things") lists them. The compiler then names every
//! match and `record::any::Projection` that must learn it.

pub mod challenge;
pub mod contract;
pub mod qa;
pub mod scorecard;

pub use contract::{
    lane_of, Finished, Lane, Running, SpecEntries, SuiteRunner, TaskParts, TrialError, TrialRun,
};

use crate::config::Config;
use crate::plan::{PlanError, Suites, Trial};
use crate::spec::Suite;

/// The registry: the one place a suite's tag is matched to its behaviour.
pub fn runner(suite: Suite) -> &'static dyn SuiteRunner {
    match suite {
        Suite::Qa => &qa::QaRunner,
        Suite::Challenge => &challenge::ChallengeRunner,
        Suite::Scorecard => &scorecard::ScorecardRunner,
    }
}

/// Every suite's data, loaded and checked before anything starts: bad data fails
/// here, naming the file and field.
pub fn load(cfg: &Config) -> Result<Suites, PlanError> {
    let mut suites = Suites::default();
    for s in Suite::ALL.map(runner) {
        if !cfg.absent_by_default(s.data_dir(cfg)) {
            s.load(cfg, &mut suites)?;
        }
    }
    Ok(suites)
}

/// The plan of `suite` (every suite when `None`, in [`Suite::ALL`]'s order).
/// `no_browser` is why browser trials cannot run here, if they cannot
/// ([`crate::plan::browser_skip`]); it is asked only when some planned trial needs a
/// browser.
pub fn plan(
    suites: &Suites,
    cfg: &Config,
    suite: Option<Suite>,
    no_browser: impl FnOnce() -> Option<String>,
) -> Vec<Trial> {
    let runners: Vec<_> = Suite::ALL
        .into_iter()
        .filter(|s| suite.is_none_or(|x| x == *s))
        .map(runner)
        .collect();
    let no_browser = runners
        .iter()
        .any(|r| r.needs_browser(suites))
        .then(no_browser)
        .flatten();
    runners
        .iter()
        .flat_map(|r| r.plan(suites, cfg, no_browser.as_deref()))
        .collect()
}
