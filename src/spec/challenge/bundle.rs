//! The skills bundle: `challenges/skills/bundle.yaml` lists every file the `skills` and
//! `all` profiles supply, by relative path and SHA-256. The harness copies exactly
//! those files; a file on disk that the manifest does not list is not supplied, and a
//! listed file whose bytes differ from its hash fails loading.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::manifest::relative;
use crate::spec::SpecError;

pub const BUNDLE_MANIFEST: &str = "bundle.yaml";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BundleFile {
    /// Relative to the bundle directory, and to `.agent/skills/` once copied.
    pub path: String,
    pub sha256: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BundleManifest {
    pub version: u32,
    pub name: String,
    pub files: Vec<BundleFile>,
}

#[derive(Debug, Clone)]
pub struct Bundle {
    pub dir: PathBuf,
    pub manifest: BundleManifest,
    /// SHA-256 of `bundle.yaml` as written.
    pub manifest_sha256: String,
}

impl Bundle {
    pub fn load(dir: &Path) -> Result<Bundle, SpecError> {
        let file = dir.join(BUNDLE_MANIFEST);
        let bytes = std::fs::read(&file).map_err(|source| SpecError::Io {
            file: file.clone(),
            source,
        })?;
        let text = std::str::from_utf8(&bytes)
            .map_err(|e| SpecError::invalid(&file, "(file)", format!("not UTF-8: {e}")))?;
        let manifest: BundleManifest = yaml_serde::from_str(text)
            .map_err(|e| SpecError::invalid(&file, "(yaml)", e.to_string()))?;
        if manifest.version != 1 {
            return Err(SpecError::invalid(
                &file,
                "version",
                "only version 1 exists",
            ));
        }
        if manifest.files.is_empty() {
            return Err(SpecError::invalid(
                &file,
                "files",
                "a bundle supplies at least one file",
            ));
        }
        for (i, f) in manifest.files.iter().enumerate() {
            let field = format!("files[{i}].path");
            relative(&file, &field, &f.path)?;
            let got = std::fs::read(dir.join(&f.path))
                .map_err(|e| SpecError::invalid(&file, &field, format!("`{}`: {e}", f.path)))?;
            let sha = plain_sha256(&got);
            if sha != f.sha256 {
                return Err(SpecError::invalid(
                    &file,
                    format!("files[{i}].sha256"),
                    format!("`{}` hashes to {sha}, not the listed {}", f.path, f.sha256),
                ));
            }
        }
        Ok(Bundle {
            dir: dir.to_path_buf(),
            manifest,
            manifest_sha256: crate::hash::sha256(&bytes),
        })
    }

    /// Copy the listed files into `dest` (created), re-checking each hash as it is
    /// copied so that what the agent was given is exactly what is recorded.
    pub fn copy_to(&self, dest: &Path) -> Result<(), String> {
        for f in &self.manifest.files {
            let from = self.dir.join(&f.path);
            let to = dest.join(&f.path);
            let bytes = std::fs::read(&from).map_err(|e| format!("{}: {e}", from.display()))?;
            if plain_sha256(&bytes) != f.sha256 {
                return Err(format!(
                    "{}: changed since the bundle was loaded",
                    from.display()
                ));
            }
            if let Some(parent) = to.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| format!("{}: {e}", parent.display()))?;
            }
            std::fs::write(&to, &bytes).map_err(|e| format!("{}: {e}", to.display()))?;
        }
        Ok(())
    }
}

/// Lowercase hex SHA-256, as `sha256sum` prints it (the bundle manifest's form).
fn plain_sha256(bytes: &[u8]) -> String {
    crate::hash::sha256(bytes)
        .trim_start_matches("sha256:")
        .to_owned()
}
