//! The qa suite's plan: what it runs on ([`QaSuite`]) and one trial per capability
//! of every app it plans, each repeated as the config asks.

use std::sync::Arc;

use crate::config::{Config, Mode};
use crate::plan::{load_apps_checked, names, needs_browser, Trial, Unit};
use crate::spec::{LoadedApp, SpecError, Suite};

/// What the qa suite runs on: every app, frozen ones checked against their hash.
pub struct QaSuite {
    pub apps: Vec<LoadedApp>,
}

impl QaSuite {
    pub fn load(cfg: &Config) -> Result<QaSuite, SpecError> {
        Ok(QaSuite {
            apps: load_apps_checked(&cfg.apps_dir)?,
        })
    }
}

/// One qa trial's unit: an app (its index in [`QaSuite::apps`]) and a capability.
#[derive(Debug, Clone)]
pub struct QaUnit {
    pub app: usize,
    /// Shared by the capability's K repeats: a 10,000-trial plan lists without one
    /// allocation per trial for a name it already holds.
    pub capability: Arc<str>,
    /// `Some(k)` for repeat k when the config asks for more than one.
    pub repeat: Option<u32>,
}

/// The qa plan: every capability of every app, in corpus order, apps sorted by name,
/// each repeated K times (stable names `::r1`…`::rK` when K > 1). A superseded app
/// (`superseded_by`) is planned no more: its newer version's trials take its place,
/// while the app itself still loads for the records of its runs and for challenges.
pub fn plan(apps: &[LoadedApp], cfg: &Config, no_browser: Option<&str>) -> Vec<Trial> {
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
            let capability: Arc<str> = cap.id.as_str().into();
            for &repeat in &repeats {
                out.push(Trial {
                    name: names::qa(&app.app.name, &cap.id, repeat),
                    suite: Suite::Qa,
                    unit: Unit::new(QaUnit {
                        app: i,
                        capability: Arc::clone(&capability),
                        repeat,
                    }),
                    kind: Some(cap.kind),
                    skip: skip.clone(),
                });
            }
        }
    }
    out
}
