//! `gauntlet challenge` and `gauntlet audit`: one challenge run by hand, and a
//! manual audit of its record.

use std::process::ExitCode;

use super::exit::error;
use super::run::{build_siblings, load, print_planned};
use crate::harness::lifecycle;
use crate::record;
use crate::spec::Suite;

/// The challenge suite's slice of `gauntlet list`.
pub(crate) fn challenge_list() -> ExitCode {
    let (cfg, suites) = or_exit!(load());
    let no_browser = || lifecycle::no_browser(&cfg);
    for t in crate::suites::plan(&suites, &cfg, Some(Suite::Challenge), no_browser) {
        print_planned(&t.name, t.skip.as_deref());
    }
    ExitCode::SUCCESS
}

/// One challenge under one profile, by hand: a run of one trial through the same
/// lifecycle and trial entry as `gauntlet run` (identity, manifest, record, reports).
pub(crate) fn challenge_run(id: &str, profile: &str, timeout_secs: Option<&str>) -> ExitCode {
    use crate::spec::challenge::Profile;
    use crate::suites::challenge::ChallengeSuite;
    let profile: Profile = match profile.parse() {
        Ok(p) => p,
        Err(e) => return error(format!("--instruction-profile: {e}")),
    };
    let timeout = match timeout_secs.map(crate::config::positive_secs) {
        None => None,
        Some(Ok(t)) => Some(t),
        Some(Err(e)) => return error(format!("--timeout-secs: {e}")),
    };
    // Everything is validated before any run directory exists.
    let (mut cfg, suites) = or_exit!(load());
    cfg.challenge_timeout_override = timeout;
    let Some(loaded) = suites.get::<ChallengeSuite>() else {
        return error("the challenge suite is not loaded");
    };
    let Some(challenge) = loaded.challenges.get(id) else {
        let ids: Vec<&str> = loaded
            .challenges
            .list
            .iter()
            .map(|c| c.manifest.id.as_str())
            .collect();
        return error(format!(
            "no challenge `{id}` (there are: {})",
            ids.join(", ")
        ));
    };
    if !loaded.apps.iter().any(|a| a.name == challenge.manifest.app) {
        return error(format!(
            "challenge `{id}`: no app `{}`",
            challenge.manifest.app
        ));
    }
    let name = crate::plan::names::challenge(id, profile);
    let no_browser = || lifecycle::no_browser(&cfg);
    let plan = crate::suites::plan(&suites, &cfg, Some(Suite::Challenge), no_browser);
    let Some(trial) = plan.into_iter().find(|t| t.name == name) else {
        return error(format!("{name} is not in the challenge suite's plan"));
    };
    if let Some(why) = &trial.skip {
        return error(format!("{name} cannot run here: {why}"));
    }
    if let Err(e) = build_siblings() {
        return error(e);
    }
    // Taken after the build: the identity fingerprints the binaries the trial runs.
    let run_dir = or_exit!(lifecycle::open(&cfg, &suites)).run_dir;
    let planned = lifecycle::planned_lines(std::slice::from_ref(&trial), false);
    if let Err(e) = record::manifest::append(&run_dir, &planned) {
        return error(e);
    }
    let rt = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => return error(format!("tokio runtime: {e}")),
    };
    match rt.block_on(crate::harness::run_trial(&suites, &trial, &cfg, &run_dir)) {
        Err(e) => error(e),
        Ok(done) => {
            println!("{}", done.summary);
            println!("trial directory: {}", done.trial_dir.display());
            if done.failure.is_none() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

pub(crate) fn audit(
    trial_dir: &std::path::Path,
    outcome: &str,
    validity: &str,
    note: &str,
) -> ExitCode {
    let outcome = match outcome.parse() {
        Ok(o) => o,
        Err(e) => return error(format!("--outcome: {e}")),
    };
    let validity = match validity.parse() {
        Ok(v) => v,
        Err(e) => return error(format!("--validity: {e}")),
    };
    match crate::report::challenge::audit(trial_dir, outcome, validity, note) {
        Ok(a) => {
            println!(
                "{}: audited {} / {} ({} earlier audit(s) kept)",
                a.trial,
                a.current.outcome.as_str(),
                a.current.validity.as_str(),
                a.history.len()
            );
            ExitCode::SUCCESS
        }
        Err(e) => error(e),
    }
}
