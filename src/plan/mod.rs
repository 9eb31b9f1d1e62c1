//! Planning trials and handing them to libtest-mimic.
//!
//! Listing parses data only (manifests, corpora, flows): no process, socket or
//! workspace exists until a trial runs, because nextest lists every test binary before
//! each run and then runs each trial in its own process.

pub mod challenge;
pub mod harness;
pub mod scorecard;

use std::path::Path;

use crate::config::{Config, Mode};
use crate::run::qa::trial_name;
use crate::spec::{LoadedApp, Modality, SpecError};

/// A planned trial, before it runs.
#[derive(Debug, Clone)]
pub struct PlannedQa {
    pub name: String,
    pub app: usize,
    pub capability: String,
    /// `Some(k)` for repeat k when the config asks for more than one.
    pub repeat: Option<u32>,
    /// Decided at list time, with the reason, so that a skipped trial is reported as
    /// ignored and never as a silent pass.
    pub skip: Option<String>,
}

/// The qa plan: every capability of every app, in corpus order, apps sorted by name,
/// each repeated K times (stable names `::r1`…`::rK` when K > 1).
pub fn plan_qa(apps: &[LoadedApp], cfg: &Config) -> Vec<PlannedQa> {
    let mut out = Vec::new();
    let repeats: Vec<Option<u32>> = if cfg.repeats > 1 {
        (1..=cfg.repeats).map(Some).collect()
    } else {
        vec![None]
    };
    // Asked once, and only when some app needs a browser.
    let no_browser = apps
        .iter()
        .any(|a| needs_browser(a.app.modality))
        .then(|| {
            browser_skip(
                crate::world::browser::chromium_available().as_deref(),
                &crate::world::browser::chromium_path(),
                in_ci(),
            )
        })
        .flatten();
    for (i, app) in apps.iter().enumerate() {
        for cap in &app.corpus.capabilities {
            let skip = (cfg.mode == Mode::Scripted && !app.flows.contains_key(&cap.id))
                .then(|| {
                    format!(
                        "no scripted flow apps/{}/flows/{}.json",
                        app.app.name, cap.id
                    )
                })
                .or_else(|| {
                    needs_browser(app.app.modality)
                        .then(|| no_browser.clone())
                        .flatten()
                });
            for &repeat in &repeats {
                out.push(PlannedQa {
                    name: trial_name(&app.app.name, &cap.id, repeat),
                    app: i,
                    capability: cap.id.clone(),
                    repeat,
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

/// `CI=true` (or `1`): the environment promises every tool, so a missing one is an
/// error, never an ignore.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v.eq_ignore_ascii_case("true") || v == "1")
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

/// Load the apps the qa suite runs on: `GAUNTLET_APPS_DIR`, or `apps/` at the root.
pub fn load_qa_apps() -> Result<Vec<LoadedApp>, SpecError> {
    let dir = std::env::var_os("GAUNTLET_APPS_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| crate::binaries::repo_root().join("apps"));
    load_apps_checked(&dir)
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
