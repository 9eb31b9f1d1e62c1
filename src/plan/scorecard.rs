//! The scorecard suite's trials: one per probe, `scorecard::<dimension>::<probe>`,
//! planned from `challenges/scorecard/` alone (no process, socket or workspace until
//! a trial runs), each run against a fresh agent with its own sinks, ports and state
//! directory, so nextest runs them in parallel.

use super::{PlanError, Trial, Unit};
use crate::config::{Config, Mode};
use crate::spec::scorecard::{load_suite, ScorecardSuite};
use crate::spec::Suite;

/// Every probe, in file order.
pub fn plan(suite: &ScorecardSuite) -> Vec<Trial> {
    suite
        .probes
        .iter()
        .enumerate()
        .map(|(i, p)| Trial {
            name: p.trial_name(),
            suite: Suite::Scorecard,
            unit: Unit::Scorecard { probe: i },
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
            .map_err(|source| PlanError::ScorecardProfile {
                profile: cfg.scorecard_profile.clone(),
                source,
            })?;
    }
    Ok(suite)
}
