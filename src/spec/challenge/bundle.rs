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
    pub fn copy_to(&self, dest: &Path) -> Result<(), CopyError> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| CopyError::Io { path, source }
        };
        for f in &self.manifest.files {
            let from = self.dir.join(&f.path);
            let to = dest.join(&f.path);
            let bytes = std::fs::read(&from).map_err(io(&from))?;
            if plain_sha256(&bytes) != f.sha256 {
                return Err(CopyError::Changed { path: from });
            }
            if let Some(parent) = to.parent() {
                std::fs::create_dir_all(parent).map_err(io(parent))?;
            }
            std::fs::write(&to, &bytes).map_err(io(&to))?;
        }
        Ok(())
    }
}

/// Why a bundle could not be handed to an agent.
#[derive(Debug, thiserror::Error)]
pub enum CopyError {
    #[error("{}: {source}", .path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: changed since the bundle was loaded", .path.display())]
    Changed { path: PathBuf },
}

/// Lowercase hex SHA-256, as `sha256sum` prints it (the bundle manifest's form).
fn plain_sha256(bytes: &[u8]) -> String {
    crate::hash::sha256(bytes)
        .trim_start_matches("sha256:")
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bundle(dir: &Path, sha: &str) -> Result<Bundle, SpecError> {
        std::fs::write(dir.join("a.md"), "skill").unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(
            dir.join(BUNDLE_MANIFEST),
            format!("version: 1\nname: t\nfiles:\n  - path: a.md\n    sha256: {sha}\n"),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        Bundle::load(dir)
    }

    #[test]
    fn only_listed_files_with_matching_hashes_are_supplied() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(dir.path().join("unlisted.md"), "not supplied")
            .unwrap_or_else(|e| panic!("{e}"));
        let b = bundle(dir.path(), &plain_sha256(b"skill")).unwrap_or_else(|e| panic!("{e}"));
        let dest = dir.path().join("out");
        b.copy_to(&dest).unwrap_or_else(|e| panic!("{e}"));
        assert!(dest.join("a.md").is_file() && !dest.join("unlisted.md").exists());
        let e = bundle(dir.path(), "00")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            e.contains("bundle.yaml") && e.contains("files[0].sha256"),
            "{e}"
        );
    }
}
