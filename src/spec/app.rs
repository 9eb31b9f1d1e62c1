//! `app.json`: what a frozen app is, how to start it, and the hash that freezes it.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{check_id, read_json, SpecError};

/// How an agent drives the app. The modality decides what the agent is handed
/// (a URL, a binary path) and which tools a trial needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Modality {
    HttpApi,
    BrowserFlow,
    Cli,
    BrowserExtension,
}

/// The manifest as written on disk.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppManifest {
    pub schema_version: u32,
    pub name: String,
    pub modality: Modality,
    pub description: String,
    /// Name of the executable this package builds for the app; or else `command`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binary: Option<String>,
    /// The command that starts the app, for an app in any language: the program (looked
    /// up on the apps' PATH unless it holds a `/`) and its arguments; a relative path
    /// naming something in the app directory means that file, e.g.
    /// `["python3", "server.py"]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    /// A frozen app's content may not change: changing behaviour means a new app.
    pub frozen: bool,
    /// Paths, relative to the app directory, whose bytes make up the content hash.
    pub content: Vec<String>,
    pub content_hash: String,
    pub capabilities: Vec<String>,
    /// The app's newer version, when one replaces it. A superseded app still loads
    /// (records of its runs rescore, challenges may act on it) but the qa suite plans
    /// its trials no more: they are the newer app's now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<String>,
}

/// A validated app manifest plus where it lives.
#[derive(Debug, Clone)]
pub struct AppSpec {
    pub dir: PathBuf,
    pub name: String,
    pub modality: Modality,
    pub description: String,
    pub start: AppStart,
    pub frozen: bool,
    pub content: Vec<String>,
    pub content_hash: String,
    pub capabilities: Vec<String>,
    /// The app that replaces this one in the qa suite (`app.json` `superseded_by`): an
    /// id other than the app's own name; [`crate::spec::load_apps`] checks it is loaded
    /// beside it.
    pub superseded_by: Option<String>,
}

/// How the app is started; either way it prints the same port line and takes the same
/// `--mutant <capability>` (and `--extension-out <dir>` for an extension).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AppStart {
    /// An executable of the workspace's build (`cargo test --no-run`, or any cargo
    /// nextest run, builds it).
    Binary(String),
    /// A command line from `app.json`, resolved against the app directory.
    Command(Vec<String>),
}

/// Where an app's program is looked up when `command` names it without a `/`: the same
/// scrubbed PATH the app then runs with.
pub const APP_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

impl AppSpec {
    /// The program and leading arguments that start the app: a package binary from
    /// the harness's bin dir, or the manifest's command with its program found on
    /// [`APP_PATH`] (unless it names a path) and every argument that names an entry of
    /// the app directory made absolute, so the app may run in any working directory.
    pub fn start_command(&self) -> (PathBuf, Vec<String>) {
        match &self.start {
            AppStart::Binary(name) => (crate::binaries::bin_path(name), Vec::new()),
            AppStart::Command(argv) => {
                let program = argv.first().map(String::as_str).unwrap_or("");
                let program = if program.contains('/') {
                    self.dir.join(program)
                } else {
                    APP_PATH
                        .split(':')
                        .map(|d| Path::new(d).join(program))
                        .find(|p| p.is_file())
                        .unwrap_or_else(|| PathBuf::from(program))
                };
                let args = argv
                    .iter()
                    .skip(1)
                    .map(|a| {
                        let p = self.dir.join(a);
                        if !Path::new(a).is_absolute() && p.exists() {
                            p.to_string_lossy().into_owned()
                        } else {
                            a.clone()
                        }
                    })
                    .collect();
                (program, args)
            }
        }
    }

    /// The app's executable's file name, as a CLI app's tests invoke it.
    pub fn bin_name(&self) -> String {
        match &self.start {
            AppStart::Binary(name) => name.clone(),
            AppStart::Command(_) => self.name.clone(),
        }
    }

    pub fn load(dir: &Path) -> Result<AppSpec, SpecError> {
        let file = dir.join("app.json");
        let m: AppManifest = read_json(&file)?;
        if m.schema_version != 1 {
            return Err(SpecError::invalid(
                &file,
                "schema_version",
                format!("{} is not supported (expected 1)", m.schema_version),
            ));
        }
        check_id(&file, "name", &m.name)?;
        if dir.file_name().and_then(|n| n.to_str()) != Some(m.name.as_str()) {
            return Err(SpecError::invalid(
                &file,
                "name",
                format!("`{}` differs from the directory name", m.name),
            ));
        }
        if m.capabilities.is_empty() {
            return Err(SpecError::invalid(&file, "capabilities", "is empty"));
        }
        for (i, c) in m.capabilities.iter().enumerate() {
            check_id(&file, &format!("capabilities[{i}]"), c)?;
        }
        if !m.content_hash.starts_with("sha256:") {
            return Err(SpecError::invalid(
                &file,
                "content_hash",
                "must be `sha256:<hex>`",
            ));
        }
        if m.content.is_empty() {
            return Err(SpecError::invalid(&file, "content", "is empty"));
        }
        for (i, p) in m.content.iter().enumerate() {
            if Path::new(p).is_absolute() || p.split('/').any(|s| s == "..") {
                return Err(SpecError::invalid(
                    &file,
                    format!("content[{i}]"),
                    format!("`{p}` must be a relative path inside the app"),
                ));
            }
        }
        if let Some(newer) = &m.superseded_by {
            check_id(&file, "superseded_by", newer)?;
            if *newer == m.name {
                return Err(SpecError::invalid(
                    &file,
                    "superseded_by",
                    format!("`{newer}` is the app itself"),
                ));
            }
        }
        let start = match (m.binary, m.command) {
            (Some(b), None) => AppStart::Binary(b),
            (None, Some(c)) => {
                if c.first().is_none_or(|p| p.is_empty()) {
                    return Err(SpecError::invalid(&file, "command", "names no program"));
                }
                AppStart::Command(c)
            }
            (Some(_), Some(_)) => {
                return Err(SpecError::invalid(
                    &file,
                    "command",
                    "an app has `binary` or `command`, not both",
                ))
            }
            (None, None) => {
                return Err(SpecError::invalid(
                    &file,
                    "binary",
                    "missing: name this package's binary, or the `command` that starts the app",
                ))
            }
        };
        Ok(AppSpec {
            dir: dir.to_path_buf(),
            name: m.name,
            modality: m.modality,
            description: m.description,
            start,
            frozen: m.frozen,
            content: m.content,
            content_hash: m.content_hash,
            capabilities: m.capabilities,
            superseded_by: m.superseded_by,
        })
    }

    /// Hash the app's content as it is on disk now.
    pub fn compute_content_hash(&self) -> Result<String, SpecError> {
        content_hash(&self.dir, &self.content)
    }
}

/// SHA-256 over every file under `paths` (relative to `dir`), in sorted path order,
/// each framed as `path NUL length NUL bytes` so that moving bytes between files
/// changes the hash.
pub fn content_hash(dir: &Path, paths: &[String]) -> Result<String, SpecError> {
    let mut files = Vec::new();
    for p in paths {
        collect_files(dir, &dir.join(p), &mut files)?;
    }
    files.sort();
    files.dedup();
    let mut h = crate::hash::Sha256Stream::default();
    for rel in &files {
        let bytes = std::fs::read(dir.join(rel)).map_err(|source| SpecError::Io {
            file: dir.join(rel),
            source,
        })?;
        h.update(rel.as_bytes());
        h.update(&[0]);
        h.update(bytes.len().to_string().as_bytes());
        h.update(&[0]);
        h.update(&bytes);
    }
    Ok(h.finish())
}

fn collect_files(root: &Path, path: &Path, out: &mut Vec<String>) -> Result<(), SpecError> {
    let meta = std::fs::metadata(path).map_err(|source| SpecError::Io {
        file: path.to_path_buf(),
        source,
    })?;
    if meta.is_dir() {
        let entries = std::fs::read_dir(path).map_err(|source| SpecError::Io {
            file: path.to_path_buf(),
            source,
        })?;
        for e in entries {
            let e = e.map_err(|source| SpecError::Io {
                file: path.to_path_buf(),
                source,
            })?;
            collect_files(root, &e.path(), out)?;
        }
    } else {
        let rel = path
            .strip_prefix(root)
            .unwrap_or(path)
            .to_string_lossy()
            .replace('\\', "/");
        out.push(rel);
    }
    Ok(())
}
