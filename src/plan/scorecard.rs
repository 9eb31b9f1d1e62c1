//! The scorecard suite's trials: one per probe, `scorecard::<dimension>::<probe>`,
//! planned from `challenges/scorecard/` alone (no process, socket or workspace until
//! a trial runs), each run against a fresh agent with its own sinks, ports and state
//! directory, so nextest runs them in parallel.

use std::process::ExitCode;
use std::sync::Arc;

use libtest_mimic::{Arguments, Failed, Trial};

use crate::config::{Config, Mode};
use crate::plan::harness::{conclude, execute_trial, fail, trial};
use crate::record::scorecard::summary_line;
use crate::run::scorecard::{execute, ExecOptions};
use crate::spec::scorecard::{default_dir, load_suite, ScorecardSuite};

/// A planned probe trial.
#[derive(Debug, Clone)]
pub struct PlannedProbe {
    pub name: String,
    /// Index into the suite's probes.
    pub probe: usize,
}

/// Every probe, in file order.
pub fn plan_scorecard(suite: &ScorecardSuite) -> Vec<PlannedProbe> {
    suite
        .probes
        .iter()
        .enumerate()
        .map(|(i, p)| PlannedProbe {
            name: p.trial_name(),
            probe: i,
        })
        .collect()
}

/// Load the suite and check the configured profile at list time: a bad probe file or
/// a missing profile fails the listing, naming the file and field.
pub fn load_checked(cfg: &Config) -> Result<ScorecardSuite, String> {
    let suite = load_suite(&default_dir()).map_err(|e| e.to_string())?;
    if cfg.mode == Mode::Scripted {
        suite.profile(&cfg.scorecard_profile).map_err(|e| {
            format!(
                "GAUNTLET_SCORECARD_PROFILE=`{}`: {e}",
                cfg.scorecard_profile
            )
        })?;
    }
    Ok(suite)
}

/// `main` of `benches-as-tests/scorecard.rs`.
pub fn scorecard_main() -> ExitCode {
    let args = Arguments::from_args();
    let cfg = match Config::from_env() {
        Ok(c) => c,
        Err(e) => return fail(&e.to_string()),
    };
    let suite = match load_checked(&cfg) {
        Ok(s) => Arc::new(s),
        Err(e) => return fail(&e),
    };
    let cfg = Arc::new(cfg);
    let trials: Vec<Trial> = plan_scorecard(&suite)
        .into_iter()
        .map(|p| {
            let suite = Arc::clone(&suite);
            let cfg = Arc::clone(&cfg);
            trial(p.name.clone(), None, args.list, move || {
                run_probe(&suite, p.probe, &cfg)
            })
        })
        .collect();
    super::harness::run(args, trials)
}

fn run_probe(suite: &ScorecardSuite, probe: usize, cfg: &Config) -> Result<(), Failed> {
    let planned = crate::record::manifest::PlannedTrial::now(
        &suite.probes[probe].trial_name(),
        crate::record::scorecard::SUITE,
        None,
    );
    let (rec, dir) = execute_trial(cfg, planned, |run_dir| async move {
        execute(
            suite,
            &suite.probes[probe],
            cfg,
            &run_dir,
            &ExecOptions::default(),
        )
        .await
    })?;
    let observations = rec
        .result
        .observations
        .iter()
        .map(|o| {
            format!(
                "gauntlet: observation {} holds={} {}",
                o.id, o.holds, o.reason
            )
        })
        .collect();
    let failure =
        (!rec.verdict.passed).then(|| format!("{}: {}", rec.verdict.outcome, rec.verdict.reason));
    conclude(summary_line(&rec), &dir, observations, failure)
}
