//! The scorecard suite's trials: one per probe, `scorecard::<dimension>::<probe>`,
//! planned from `challenges/scorecard/` alone (no process, socket or workspace until
//! a trial runs), each run against a fresh agent with its own sinks, ports and state
//! directory, so nextest runs them in parallel.

use crate::config::{Config, Mode};
use crate::plan::{PlanError, Trial, Unit};
use crate::spec::scorecard::{load_suite, ScorecardSuite};
use crate::spec::Suite;

/// One scorecard trial's unit: a probe, by its index in [`ScorecardSuite::probes`].
#[derive(Debug, Clone, Copy)]
pub struct ScorecardUnit {
    pub probe: usize,
}

/// Every probe, in file order.
pub fn plan(suite: &ScorecardSuite) -> Vec<Trial> {
    suite
        .probes
        .iter()
        .enumerate()
        .map(|(i, p)| Trial {
            name: p.trial_name(),
            suite: Suite::Scorecard,
            unit: Unit::new(ScorecardUnit { probe: i }),
            kind: None,
            skip: None,
        })
        .collect()
}

/// Load the suite and check the configured profile at list time: a bad probe file or
/// a missing profile fails the listing, naming the file and field.
pub fn load_checked(cfg: &Config) -> Result<ScorecardSuite, PlanError> {
    let suite = load_suite(&cfg.scorecard_dir)?;
    if cfg.mode == Mode::Scripted {
        suite
            .profile(&cfg.scorecard_profile)
            .map_err(|source| PlanError::Setting {
                setting: "GAUNTLET_SCORECARD_PROFILE",
                value: cfg.scorecard_profile.clone(),
                source,
            })?;
    }
    Ok(suite)
}
