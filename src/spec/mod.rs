//! Loading and validating the data gauntlet acts on: apps, corpus graphs and scripts.
//!
//! Everything here is parsed at list time, so it must be cheap and must fail before
//! any process, socket or workspace exists. Every error names the file and the field.

pub mod app;
pub mod challenge;
pub mod corpus;
pub mod redteam;
pub mod scorecard;
pub mod script;
pub mod suite;

use std::path::{Path, PathBuf};

pub use app::{AppSpec, Modality};
pub use corpus::{Capability, CapabilityKind, Corpus, Difficulty, Requirement};
pub use script::{Script, ScriptStep};
pub use suite::Suite;

/// Why a piece of data could not be loaded. Messages are lowercase and name the file.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    #[error("{}: not found: the apps every suite loads are not here; {}", .dir.display(), crate::binaries::ROOT_HINT)]
    NoRepository { dir: PathBuf },
    #[error("{file}: cannot read: {source}")]
    Io {
        file: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{file}: {source}")]
    Json {
        file: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("{file}: field `{field}`: {reason}")]
    Invalid {
        file: PathBuf,
        field: String,
        reason: String,
    },
}

impl SpecError {
    pub(crate) fn invalid(
        file: &Path,
        field: impl Into<String>,
        reason: impl Into<String>,
    ) -> Self {
        SpecError::Invalid {
            file: file.to_path_buf(),
            field: field.into(),
            reason: reason.into(),
        }
    }
}

/// Read and parse a JSON file, naming the file in every error.
pub(crate) fn read_json<T: serde::de::DeserializeOwned>(file: &Path) -> Result<T, SpecError> {
    let bytes = std::fs::read(file).map_err(|source| SpecError::Io {
        file: file.to_path_buf(),
        source,
    })?;
    serde_json::from_slice(&bytes).map_err(|source| SpecError::Json {
        file: file.to_path_buf(),
        source,
    })
}

/// Whether `id` is in the id alphabet (see [`check_id`]).
pub(crate) fn check_id_str(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !id.starts_with('-')
}

/// Ids are used in test names and directory names: keep them to a safe alphabet.
pub(crate) fn check_id(file: &Path, field: &str, id: &str) -> Result<(), SpecError> {
    if check_id_str(id) {
        Ok(())
    } else {
        Err(SpecError::invalid(
            file,
            field,
            format!("`{id}` is not an id (lowercase letters, digits and `-`, at most 64)"),
        ))
    }
}

/// A fully loaded qa app: manifest, corpus and one script per capability that has one.
#[derive(Debug, Clone)]
pub struct LoadedApp {
    pub app: AppSpec,
    pub corpus: Corpus,
    pub scripts: std::collections::BTreeMap<String, Script>,
}

impl LoadedApp {
    pub fn capability(&self, id: &str) -> Option<&Capability> {
        self.corpus.capabilities.iter().find(|c| c.id == id)
    }
}

/// Load every app under `apps_dir` (each `apps/*/app.json`), sorted by name so that
/// listing is deterministic. An app's `superseded_by` must name one of them.
pub fn load_apps(apps_dir: &Path) -> Result<Vec<LoadedApp>, SpecError> {
    let entries = std::fs::read_dir(apps_dir).map_err(|source| {
        if source.kind() == std::io::ErrorKind::NotFound {
            SpecError::NoRepository {
                dir: apps_dir.to_path_buf(),
            }
        } else {
            SpecError::Io {
                file: apps_dir.to_path_buf(),
                source,
            }
        }
    })?;
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("app.json").is_file())
        .collect();
    dirs.sort();
    let apps: Vec<LoadedApp> = dirs.iter().map(|d| load_app(d)).collect::<Result<_, _>>()?;
    for a in &apps {
        if let Some(newer) = &a.app.superseded_by {
            if !apps.iter().any(|b| b.app.name == *newer) {
                return Err(SpecError::invalid(
                    &a.app.dir.join("app.json"),
                    "superseded_by",
                    format!(
                        "names `{newer}`, which is not an app under {}",
                        apps_dir.display()
                    ),
                ));
            }
        }
    }
    Ok(apps)
}

/// Load one app directory: app.json, corpus.json and the scripts in flows/, cross-checked.
pub fn load_app(dir: &Path) -> Result<LoadedApp, SpecError> {
    let app = AppSpec::load(dir)?;
    let corpus = Corpus::load(&dir.join("corpus.json"))?;
    let app_file = dir.join("app.json");
    if corpus.app != app.name {
        return Err(SpecError::invalid(
            &dir.join("corpus.json"),
            "app",
            format!("names `{}` but app.json names `{}`", corpus.app, app.name),
        ));
    }
    let corpus_ids: Vec<&str> = corpus.capabilities.iter().map(|c| c.id.as_str()).collect();
    let app_ids: Vec<&str> = app.capabilities.iter().map(String::as_str).collect();
    if corpus_ids != app_ids {
        return Err(SpecError::invalid(
            &app_file,
            "capabilities",
            format!("{app_ids:?} does not match corpus.json capabilities {corpus_ids:?}"),
        ));
    }
    let scripts = script::load_scripts(&dir.join("flows"), &corpus)?;
    Ok(LoadedApp {
        app,
        corpus,
        scripts,
    })
}
