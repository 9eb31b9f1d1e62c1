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
    /// Name of the executable this package builds for the app.
    pub binary: String,
    /// A frozen app's content may not change: changing behaviour means a new app.
    pub frozen: bool,
    /// Paths, relative to the app directory, whose bytes make up the content hash.
    pub content: Vec<String>,
    pub content_hash: String,
    pub capabilities: Vec<String>,
}

/// A validated app manifest plus where it lives.
#[derive(Debug, Clone)]
pub struct AppSpec {
    pub dir: PathBuf,
    pub name: String,
    pub modality: Modality,
    pub description: String,
    pub binary: String,
    pub frozen: bool,
    pub content: Vec<String>,
    pub content_hash: String,
    pub capabilities: Vec<String>,
}

impl AppSpec {
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
        Ok(AppSpec {
            dir: dir.to_path_buf(),
            name: m.name,
            modality: m.modality,
            description: m.description,
            binary: m.binary,
            frozen: m.frozen,
            content: m.content,
            content_hash: m.content_hash,
            capabilities: m.capabilities,
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
