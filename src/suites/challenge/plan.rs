//! Planning challenge trials: one per challenge and instruction profile, named
//! `challenge::<id>::<profile>`. Listing reads data only (manifests, prompt layers, the
//! bundle manifest and flows); nothing starts until a trial runs.

use std::path::{Path, PathBuf};

use crate::config::{Config, Mode};
use crate::plan::{load_apps_checked, names, needs_browser, Trial, Unit};
use crate::spec::challenge::{Challenges, Profile};
use crate::spec::{AppSpec, SpecError, Suite};

/// What the challenge suite runs on.
pub struct ChallengeSuite {
    pub challenges: Challenges,
    pub apps: Vec<AppSpec>,
    /// Empty when the repository has no apps/ directory.
    pub apps_dir: PathBuf,
}

impl ChallengeSuite {
    /// Whether any challenge's app drives a browser.
    pub fn needs_browser(&self) -> bool {
        self.challenges
            .list
            .iter()
            .filter_map(|c| self.apps.iter().find(|a| a.name == c.manifest.app))
            .any(|a| needs_browser(a.modality))
    }
}

/// One challenge trial's unit: a challenge under one instruction profile, by index
/// into [`ChallengeSuite`].
#[derive(Debug, Clone, Copy)]
pub struct ChallengeUnit {
    pub challenge: usize,
    pub profile: Profile,
    /// `None` when the challenge's app is not loaded (then the trial's `skip` says so).
    pub app: Option<usize>,
}

/// Load `challenges/` and the apps under `apps_dir`. A challenge whose app is not there
/// is planned as ignored, with the reason (an apps directory narrowed on purpose, as
/// tests do); `gauntlet challenge run` refuses it outright.
pub fn load(challenges_dir: &Path, apps_dir: Option<&Path>) -> Result<ChallengeSuite, SpecError> {
    let challenges = crate::spec::challenge::load(challenges_dir)?;
    let apps: Vec<AppSpec> = match apps_dir {
        Some(dir) => load_apps_checked(dir)?.into_iter().map(|a| a.app).collect(),
        None => Vec::new(),
    };
    Ok(ChallengeSuite {
        challenges,
        apps,
        apps_dir: apps_dir.map(Path::to_path_buf).unwrap_or_default(),
    })
}

/// Every challenge under every profile, challenges sorted by id, profiles in the order
/// none, skills, all.
pub fn plan(loaded: &ChallengeSuite, cfg: &Config, no_browser: Option<&str>) -> Vec<Trial> {
    let mut out = Vec::new();
    for (ci, c) in loaded.challenges.list.iter().enumerate() {
        let found = loaded.apps.iter().position(|a| a.name == c.manifest.app);
        for profile in Profile::ALL {
            let skip = match found {
                None if loaded.apps_dir.as_os_str().is_empty() => Some(format!(
                    "app `{}`: this repository has no apps/ directory",
                    c.manifest.app
                )),
                None => Some(format!(
                    "app `{}` is not under {}",
                    c.manifest.app,
                    loaded.apps_dir.display()
                )),
                Some(ai) => (cfg.mode == Mode::Scripted && c.script_for(profile).is_none())
                    .then(|| {
                        format!(
                            "no scripted flow for profile `{profile}` in challenges/{}/challenge.yaml",
                            c.manifest.id
                        )
                    })
                    .or_else(|| {
                        needs_browser(loaded.apps[ai].modality)
                            .then(|| no_browser.map(str::to_owned))
                            .flatten()
                    }),
            };
            out.push(Trial {
                name: names::challenge(&c.manifest.id, profile),
                suite: Suite::Challenge,
                unit: Unit::new(ChallengeUnit {
                    challenge: ci,
                    profile,
                    app: found,
                }),
                kind: None,
                skip,
            });
        }
    }
    out
}
