//! Planning challenge trials: one per challenge and instruction profile, named
//! `challenge::<id>::<profile>`. Listing reads data only (manifests, prompt layers, the
//! bundle manifest and flows); nothing starts until a trial runs.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use libtest_mimic::{Arguments, Failed, Trial};

use crate::config::{Config, Mode};
use crate::run::challenge::{execute, summary_line, trial_name, Options};
use crate::spec::challenge::{Challenges, Profile};
use crate::spec::{AppSpec, SpecError};

/// A planned challenge trial.
#[derive(Debug, Clone)]
pub struct PlannedChallenge {
    pub name: String,
    /// Index into [`Challenges::list`].
    pub challenge: usize,
    pub profile: Profile,
    /// Index into the apps given to [`plan`].
    pub app: usize,
    /// Decided at list time, with the reason.
    pub skip: Option<String>,
}

/// What the challenge suite runs on.
pub struct Loaded {
    pub challenges: Challenges,
    pub apps: Vec<AppSpec>,
}

/// Load `challenges/` and the apps they name; a challenge naming an unknown app fails.
pub fn load(challenges_dir: &Path, apps_dir: &Path) -> Result<Loaded, SpecError> {
    let challenges = crate::spec::challenge::load(challenges_dir)?;
    let apps: Vec<AppSpec> = crate::plan::load_apps_checked(apps_dir)?
        .into_iter()
        .map(|a| a.app)
        .collect();
    for c in &challenges.list {
        if !apps.iter().any(|a| a.name == c.manifest.app) {
            return Err(SpecError::Invalid {
                file: c.dir.join("challenge.yaml"),
                field: "app".into(),
                reason: format!(
                    "`{}` is not an app under {}",
                    c.manifest.app,
                    apps_dir.display()
                ),
            });
        }
    }
    Ok(Loaded { challenges, apps })
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
        let Some(ai) = loaded.apps.iter().position(|a| a.name == c.manifest.app) else {
            continue;
        };
        for profile in Profile::ALL {
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
            let ignored = p.skip.is_some();
            if let (Some(why), true) = (&p.skip, args.list) {
                eprintln!("{}: ignored: {why}", p.name);
            }
            let loaded = Arc::clone(&loaded);
            let cfg = Arc::clone(&cfg);
            Trial::test(p.name.clone(), move || run_one(&loaded, &p, &cfg))
                .with_ignored_flag(ignored)
        })
        .collect();
    crate::plan::harness::run(args, trials)
}

fn fail(msg: &str) -> ExitCode {
    eprintln!("Error: {msg}");
    ExitCode::from(2)
}

fn run_one(loaded: &Loaded, p: &PlannedChallenge, cfg: &Config) -> Result<(), Failed> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Failed::from(format!("tokio runtime: {e}")))?;
    let run_dir = cfg.out_dir.join(crate::record::run_id());
    let challenge = &loaded.challenges.list[p.challenge];
    let (rec, dir) = rt
        .block_on(execute(
            &loaded.challenges,
            challenge,
            &loaded.apps[p.app],
            p.profile,
            cfg,
            &Options::default(),
            &run_dir,
        ))
        .map_err(|e| {
            eprintln!("Error: {e}");
            Failed::from(e.to_string())
        })?;
    println!("{}", summary_line(&rec));
    println!(
        "gauntlet: record {}",
        dir.join(crate::record::RECORD_FILE).display()
    );
    if rec.verdict.passed {
        Ok(())
    } else {
        let msg = format!(
            "task_outcome {} ({}), evaluation_validity {} ({})",
            rec.verdict.task_outcome.as_str(),
            rec.verdict.outcome_reason,
            rec.verdict.evaluation_validity.as_str(),
            rec.verdict.validity_reason
        );
        eprintln!("Error: {msg}");
        Err(Failed::from(msg))
    }
}
