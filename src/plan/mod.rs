//! Planning trials: every suite's data, loaded and validated, becomes one list of
//! [`Trial`]s with stable names, each decided at list time to run or to be ignored
//! with its reason.
//!
//! Listing parses data only (manifests, corpora, flows): no process, socket or
//! workspace exists until a trial runs, because nextest lists every test binary before
//! each run and then runs each trial in its own process. What the machine lacks (a
//! browser) is asked by the caller and handed in, so planning stays a function of its
//! inputs.

pub mod challenge;
pub mod names;
pub mod partition;
pub mod scorecard;

use std::path::Path;

use crate::config::{Config, Mode};
use crate::spec::challenge::Profile;
use crate::spec::scorecard::ScorecardSuite;
use crate::spec::{CapabilityKind, LoadedApp, Modality, SpecError, Suite};

/// One planned trial of any suite.
#[derive(Debug, Clone)]
pub struct Trial {
    /// Stable test name (see [`names`]).
    pub name: String,
    pub suite: Suite,
    pub unit: Unit,
    /// Decided at list time, with the reason, so that a skipped trial is reported as
    /// ignored and never as a silent pass.
    pub skip: Option<String>,
}

/// What a trial runs, as indices into the loaded [`Suites`].
#[derive(Debug, Clone)]
pub enum Unit {
    Qa {
        app: usize,
        /// Shared by the capability's K repeats: a 10,000-trial plan lists without one
        /// allocation per trial for a name it already holds.
        capability: std::sync::Arc<str>,
        /// `Some(k)` for repeat k when the config asks for more than one.
        repeat: Option<u32>,
        kind: Option<CapabilityKind>,
    },
    Challenge {
        challenge: usize,
        profile: Profile,
        /// `None` when the challenge's app is not loaded (then `skip` says so).
        app: Option<usize>,
    },
    Scorecard {
        probe: usize,
    },
}

impl Trial {
    /// The capability a qa trial checks.
    pub fn capability(&self) -> Option<&str> {
        match &self.unit {
            Unit::Qa { capability, .. } => Some(capability.as_ref()),
            _ => None,
        }
    }

    /// The capability kind a qa trial's manifest line carries.
    pub fn kind(&self) -> Option<CapabilityKind> {
        match &self.unit {
            Unit::Qa { kind, .. } => *kind,
            _ => None,
        }
    }
}

/// Everything the three suites run on, loaded and checked before anything starts.
pub struct Suites {
    pub apps: Vec<LoadedApp>,
    pub challenges: challenge::Loaded,
    pub scorecard: ScorecardSuite,
}

#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error(transparent)]
    Spec(#[from] SpecError),
    #[error("GAUNTLET_SCORECARD_PROFILE=`{profile}`: {source}")]
    ScorecardProfile {
        profile: String,
        #[source]
        source: SpecError,
    },
}

impl Suites {
    /// Load every suite from the places `cfg` names. Bad data fails here, naming the
    /// file and field, before any trial is planned.
    pub fn load(cfg: &Config) -> Result<Suites, PlanError> {
        let apps = load_apps_checked(&cfg.apps_dir)?;
        let challenges = challenge::load(&cfg.challenges_dir, &cfg.apps_dir)?;
        let scorecard = scorecard::load_checked(cfg)?;
        Ok(Suites {
            apps,
            challenges,
            scorecard,
        })
    }
}

/// The qa plan: every capability of every app, in corpus order, apps sorted by name,
/// each repeated K times (stable names `::r1`…`::rK` when K > 1). A superseded app
/// (`superseded_by`) is planned no more: its newer version's trials take its place,
/// while the app itself still loads for the records of its runs and for challenges.
pub fn plan_qa(apps: &[LoadedApp], cfg: &Config, no_browser: Option<&str>) -> Vec<Trial> {
    let planned = |a: &&LoadedApp| a.app.superseded_by.is_none();
    let trials: usize = apps
        .iter()
        .filter(planned)
        .map(|a| a.corpus.capabilities.len())
        .sum();
    let mut out = Vec::with_capacity(trials * cfg.repeats.max(1) as usize);
    let repeats: Vec<Option<u32>> = if cfg.repeats > 1 {
        (1..=cfg.repeats).map(Some).collect()
    } else {
        vec![None]
    };
    for (i, app) in apps.iter().enumerate() {
        if !planned(&app) {
            continue;
        }
        for cap in &app.corpus.capabilities {
            let skip = (cfg.mode == Mode::Scripted && !app.scripts.contains_key(&cap.id))
                .then(|| {
                    format!(
                        "no scripted flow apps/{}/flows/{}.json",
                        app.app.name, cap.id
                    )
                })
                .or_else(|| {
                    needs_browser(app.app.modality)
                        .then(|| no_browser.map(str::to_owned))
                        .flatten()
                });
            let capability: std::sync::Arc<str> = cap.id.as_str().into();
            for &repeat in &repeats {
                out.push(Trial {
                    name: names::qa(&app.app.name, &cap.id, repeat),
                    suite: Suite::Qa,
                    unit: Unit::Qa {
                        app: i,
                        capability: std::sync::Arc::clone(&capability),
                        repeat,
                        kind: Some(cap.kind),
                    },
                    skip: skip.clone(),
                });
            }
        }
    }
    out
}

/// Apps driven through Chromium: their trials need a browser on the machine.
pub fn needs_browser(m: Modality) -> bool {
    matches!(m, Modality::BrowserFlow | Modality::BrowserExtension)
}

/// Why browser trials are ignored here, if they are: no Chromium, outside CI. In CI
/// they run, and the missing browser is the trial's `error`, naming it.
pub fn browser_skip(available: Option<&Path>, wanted: &Path, ci: bool) -> Option<String> {
    (available.is_none() && !ci).then(|| {
        format!(
            "chromium not found at {} (install Debian's `chromium` package or set GAUNTLET_CHROMIUM)",
            wanted.display()
        )
    })
}

/// Load apps and refuse any frozen app whose content no longer matches its hash.
pub fn load_apps_checked(dir: &Path) -> Result<Vec<LoadedApp>, SpecError> {
    let apps = crate::spec::load_apps(dir)?;
    for a in &apps {
        if a.app.frozen {
            let now = a.app.compute_content_hash()?;
            if now != a.app.content_hash {
                return Err(SpecError::Invalid {
                    file: a.app.dir.join("app.json"),
                    field: "content_hash".into(),
                    reason: format!(
                        "frozen app changed: content hashes to {now}; changing a frozen app's behaviour means a new app"
                    ),
                });
            }
        }
    }
    Ok(apps)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_browser_is_ignored_with_its_path_except_in_ci() {
        let wanted = Path::new("/nope/chromium");
        let why = browser_skip(None, wanted, false).expect("ignored outside CI");
        assert!(why.contains("/nope/chromium"), "{why}");
        assert_eq!(browser_skip(None, wanted, true), None);
        assert_eq!(browser_skip(Some(wanted), wanted, false), None);
        assert!(needs_browser(Modality::BrowserExtension) && needs_browser(Modality::BrowserFlow));
        assert!(!needs_browser(Modality::HttpApi) && !needs_browser(Modality::Cli));
    }
}
