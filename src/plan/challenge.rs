//! Planning challenge trials: one per challenge and instruction profile, named
//! `challenge::<id>::<profile>`. Listing reads data only (manifests, prompt layers, the
//! bundle manifest and flows); nothing starts until a trial runs.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use libtest_mimic::{Arguments, Failed, Trial};

use crate::config::{Config, Mode};
use crate::plan::harness::{conclude, execute_trial, fail, trial};
use crate::record::challenge::summary_line;
use crate::run::challenge::{execute, trial_name, Options};
use crate::spec::challenge::{Challenges, Profile};
use crate::spec::{AppSpec, SpecError};

/// A planned challenge trial.
#[derive(Debug, Clone)]
pub struct PlannedChallenge {
    pub name: String,
    /// Index into [`Challenges::list`].
    pub challenge: usize,
    pub profile: Profile,
    /// Index into [`Loaded::apps`]; `usize::MAX` when the app is absent (then `skip`
    /// says so and the trial never runs).
    pub app: usize,
    /// Decided at list time, with the reason.
    pub skip: Option<String>,
}

/// What the challenge suite runs on.
pub struct Loaded {
    pub challenges: Challenges,
    pub apps: Vec<AppSpec>,
    pub apps_dir: std::path::PathBuf,
}

/// Load `challenges/` and the apps under `apps_dir`. A challenge whose app is not there
/// is planned as ignored, with the reason (an apps directory narrowed on purpose, as
/// tests do); `gauntlet challenge run` refuses it outright.
pub fn load(challenges_dir: &Path, apps_dir: &Path) -> Result<Loaded, SpecError> {
    let challenges = crate::spec::challenge::load(challenges_dir)?;
    let apps: Vec<AppSpec> = crate::plan::load_apps_checked(apps_dir)?
        .into_iter()
        .map(|a| a.app)
        .collect();
    Ok(Loaded {
        challenges,
        apps,
        apps_dir: apps_dir.to_path_buf(),
    })
}

/// Load from the default places (`challenges/`, `apps/`, or their variables).
pub fn load_default() -> Result<Loaded, SpecError> {
    let apps_dir = std::env::var_os("GAUNTLET_APPS_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| crate::binaries::repo_root().join("apps"));
    load(&crate::spec::challenge::default_root(), &apps_dir)
}

/// Every challenge under every profile, challenges sorted by id, profiles in the order
/// none, skills, all.
pub fn plan(loaded: &Loaded, cfg: &Config) -> Vec<PlannedChallenge> {
    let needs = loaded
        .challenges
        .list
        .iter()
        .filter_map(|c| loaded.apps.iter().find(|a| a.name == c.manifest.app))
        .any(|a| crate::plan::needs_browser(a.modality));
    let no_browser = needs
        .then(|| {
            crate::plan::browser_skip(
                crate::world::browser::chromium_available().as_deref(),
                &crate::world::browser::chromium_path(),
                crate::plan::in_ci(),
            )
        })
        .flatten();
    let mut out = Vec::new();
    for (ci, c) in loaded.challenges.list.iter().enumerate() {
        let found = loaded.apps.iter().position(|a| a.name == c.manifest.app);
        for profile in Profile::ALL {
            let Some(ai) = found else {
                out.push(PlannedChallenge {
                    name: trial_name(&c.manifest.id, profile),
                    challenge: ci,
                    profile,
                    app: usize::MAX,
                    skip: Some(format!(
                        "app `{}` is not under {}",
                        c.manifest.app,
                        loaded.apps_dir.display()
                    )),
                });
                continue;
            };
            let skip = (cfg.mode == Mode::Scripted && c.flow_for(profile).is_none())
                .then(|| {
                    format!(
                        "no scripted flow for profile `{profile}` in challenges/{}/challenge.yaml",
                        c.manifest.id
                    )
                })
                .or_else(|| {
                    crate::plan::needs_browser(loaded.apps[ai].modality)
                        .then(|| no_browser.clone())
                        .flatten()
                });
            out.push(PlannedChallenge {
                name: trial_name(&c.manifest.id, profile),
                challenge: ci,
                profile,
                app: ai,
                skip,
            });
        }
    }
    out
}

/// `main` of `benches-as-tests/challenge.rs`.
pub fn challenge_main() -> ExitCode {
    let args = Arguments::from_args();
    let cfg = match Config::from_env() {
        Ok(c) => c,
        Err(e) => return fail(&e.to_string()),
    };
    let loaded = match load_default() {
        Ok(l) => Arc::new(l),
        Err(e) => return fail(&e.to_string()),
    };
    let cfg = Arc::new(cfg);
    let trials: Vec<Trial> = plan(&loaded, &cfg)
        .into_iter()
        .map(|p| {
            let loaded = Arc::clone(&loaded);
            let cfg = Arc::clone(&cfg);
            let skip = p.skip.clone();
            trial(p.name.clone(), skip.as_deref(), args.list, move || {
                run_one(&loaded, &p, &cfg)
            })
        })
        .collect();
    crate::plan::harness::run(args, trials)
}

fn run_one(loaded: &Loaded, p: &PlannedChallenge, cfg: &Config) -> Result<(), Failed> {
    let challenge = &loaded.challenges.list[p.challenge];
    let app = loaded.apps.get(p.app).ok_or_else(|| {
        let msg = p
            .skip
            .clone()
            .unwrap_or_else(|| "the challenge's app is missing".into());
        eprintln!("Error: {msg}");
        Failed::from(msg)
    })?;
    let planned = crate::record::manifest::PlannedTrial::now(&p.name, "challenge", None);
    let (rec, dir) = execute_trial(cfg, planned, |run_dir| async move {
        let opts = Options::default();
        execute(
            &loaded.challenges,
            challenge,
            app,
            p.profile,
            cfg,
            &opts,
            &run_dir,
        )
        .await
    })?;
    let failure = (!rec.verdict.passed).then(|| {
        format!(
            "task_outcome {} ({}), evaluation_validity {} ({})",
            rec.verdict.task_outcome.as_str(),
            rec.verdict.outcome_reason,
            rec.verdict.evaluation_validity.as_str(),
            rec.verdict.validity_reason
        )
    });
    conclude(summary_line(&rec), &dir, Vec::new(), failure)
}
