//! `gauntlet challenge` and `gauntlet audit`: one challenge run by hand, and a
//! manual audit of its record.

use std::process::ExitCode;

use super::exit::error;
use super::run::{build_siblings, print_planned};
use crate::config::Config;
use crate::record;

pub(crate) fn challenge_list() -> ExitCode {
    let cfg = or_exit!(Config::from_env());
    let loaded = or_exit!(crate::suites::challenge::plan::load(
        &cfg.challenges_dir,
        &cfg.apps_dir
    ));
    let no_browser = loaded
        .needs_browser()
        .then(|| crate::harness::no_browser(&cfg))
        .flatten();
    for t in crate::suites::challenge::plan::plan(&loaded, &cfg, no_browser.as_deref()) {
        print_planned(&t.name, t.skip.as_deref());
    }
    ExitCode::SUCCESS
}

pub(crate) fn challenge_run(id: &str, profile: &str, timeout_secs: Option<&str>) -> ExitCode {
    use crate::spec::challenge::Profile;
    let profile: Profile = match profile.parse() {
        Ok(p) => p,
        Err(e) => return error(format!("--instruction-profile: {e}")),
    };
    let timeout = match timeout_secs.map(crate::config::positive_secs) {
        None => None,
        Some(Ok(t)) => Some(t),
        Some(Err(e)) => return error(format!("--timeout-secs: {e}")),
    };
    let cfg = or_exit!(Config::from_env());
    // Everything is validated before any workspace exists.
    let loaded = or_exit!(crate::suites::challenge::plan::load(
        &cfg.challenges_dir,
        &cfg.apps_dir
    ));
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
    let Some(app) = loaded
        .apps
        .iter()
        .find(|a| a.name == challenge.manifest.app)
    else {
        return error(format!(
            "challenge `{id}`: no app `{}`",
            challenge.manifest.app
        ));
    };
    if let Err(e) = build_siblings() {
        return error(e);
    }
    let rt = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => return error(format!("tokio runtime: {e}")),
    };
    let run_dir = cfg.out_dir.join(record::run_id());
    let planned = record::manifest::PlannedTrial::now(
        &crate::plan::names::challenge(id, profile),
        "challenge",
        None,
    );
    if let Err(e) = record::manifest::append(&run_dir, &[planned]) {
        return error(e);
    }
    let opts = crate::suites::challenge::Options {
        timeout,
        script: None,
    };
    match rt.block_on(crate::suites::challenge::execute(
        &loaded.challenges,
        challenge,
        app,
        profile,
        &cfg,
        &opts,
        &run_dir,
    )) {
        Err(e) => error(e),
        Ok((rec, dir)) => {
            crate::report::challenge::write_reports_after_trial(&dir, &rec);
            println!("{}", crate::record::challenge::summary_line(&rec));
            println!("trial directory: {}", dir.display());
            if rec.verdict.passed {
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
