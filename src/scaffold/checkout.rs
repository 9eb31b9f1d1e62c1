//! A gauntlet checkout a scaffold depends on by path: it must be one, since cargo would
//! otherwise fail on the new repository's first build with an error about a package
//! that is not the one `gauntlet init` was pointed at.

use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum CheckoutError {
    #[error("--gauntlet-path {dir}: {why}")]
    NotACheckout { dir: PathBuf, why: String },
}

/// `dir`, absolute, when its `Cargo.toml` is the package `gauntlet`.
pub fn checkout(dir: &Path) -> Result<PathBuf, CheckoutError> {
    let not = |why: String| CheckoutError::NotACheckout {
        dir: dir.to_path_buf(),
        why,
    };
    let abs = dir.canonicalize().map_err(|e| not(e.to_string()))?;
    let manifest = abs.join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest)
        .map_err(|e| not(format!("{}: {e}", manifest.display())))?;
    let doc: toml::Value = toml::from_str(&text)
        .map_err(|e| not(format!("{}: {}", manifest.display(), e.message())))?;
    match doc
        .get("package")
        .and_then(|p| p.get("name"))
        .and_then(|n| n.as_str())
    {
        Some("gauntlet") => Ok(abs),
        Some(other) => Err(not(format!(
            "{}: field `package.name` is `{other}`, not `gauntlet`",
            manifest.display()
        ))),
        None => Err(not(format!(
            "{}: field `package.name`: missing",
            manifest.display()
        ))),
    }
}
