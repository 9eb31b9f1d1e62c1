//! Checking an unpacked MV3 extension before Chromium sees it, and its id.
//!
//! Chromium reports a bad manifest only on its own extensions page, which a headless
//! run never shows: the extension silently does not load and every badge reads empty.
//! So the manifest is checked here first, and each problem names the file and field.

use std::path::{Path, PathBuf};

use super::BrowserError;

/// A validated extension directory.
#[derive(Debug, Clone)]
pub struct Extension {
    /// Absolute, symlinks resolved: what `--load-extension` gets and what the id hashes.
    pub dir: PathBuf,
    /// `background.service_worker`, when the extension declares one.
    pub service_worker: Option<String>,
}

impl Extension {
    /// Validate `dir/manifest.json`: it exists, parses, has `manifest_version: 3`, a
    /// `name` and a `version`, and any declared service worker file exists.
    pub fn load(dir: &Path) -> Result<Extension, BrowserError> {
        let file = dir.join("manifest.json");
        let bad = |field: &str, reason: String| BrowserError::Manifest {
            file: file.clone(),
            field: field.into(),
            reason,
        };
        let abs = dir
            .canonicalize()
            .map_err(|e| bad("(file)", format!("extension directory: {e}")))?;
        let text = std::fs::read_to_string(&file).map_err(|e| bad("(file)", e.to_string()))?;
        let manifest: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| bad("(json)", e.to_string()))?;
        let Some(obj) = manifest.as_object() else {
            return Err(bad("(json)", "is not a JSON object".into()));
        };
        match obj.get("manifest_version") {
            Some(v) if v.as_u64() == Some(3) => {}
            Some(v) => return Err(bad("manifest_version", format!("is {v}, expected 3"))),
            None => return Err(bad("manifest_version", "is missing (expected 3)".into())),
        }
        for field in ["name", "version"] {
            if !obj.get(field).is_some_and(|v| v.is_string()) {
                return Err(bad(field, "is missing or not a string".into()));
            }
        }
        let service_worker = match obj.get("background") {
            None => None,
            Some(bg) => match bg.get("service_worker") {
                None => None,
                Some(serde_json::Value::String(sw)) => {
                    if !abs.join(sw).is_file() {
                        return Err(bad(
                            "background.service_worker",
                            format!("`{sw}` does not exist in {}", abs.display()),
                        ));
                    }
                    Some(sw.clone())
                }
                Some(other) => {
                    return Err(bad(
                        "background.service_worker",
                        format!("is {other}, expected a file name"),
                    ))
                }
            },
        };
        Ok(Extension {
            dir: abs,
            service_worker,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, manifest: &str) {
        std::fs::write(dir.join("manifest.json"), manifest).expect("write manifest");
    }

    fn tmp(name: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("gauntlet-ext-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("mkdir");
        d
    }

    #[test]
    fn problems_name_the_file_and_field() {
        let d = tmp("bad");
        let err = Extension::load(&d).unwrap_err().to_string();
        assert!(err.contains("manifest.json"), "{err}");
        write(&d, "{not json");
        assert!(Extension::load(&d)
            .unwrap_err()
            .to_string()
            .contains("(json)"));
        write(
            &d,
            r#"{"manifest_version": 2, "name": "x", "version": "1"}"#,
        );
        let err = Extension::load(&d).unwrap_err().to_string();
        assert!(err.contains("manifest_version: is 2, expected 3"), "{err}");
        write(&d, r#"{"manifest_version": 3, "version": "1"}"#);
        assert!(Extension::load(&d)
            .unwrap_err()
            .to_string()
            .contains("name"));
        write(
            &d,
            r#"{"manifest_version": 3, "name": "x", "version": "1", "background": {"service_worker": "bg.js"}}"#,
        );
        let err = Extension::load(&d).unwrap_err().to_string();
        assert!(err.contains("background.service_worker"), "{err}");
        std::fs::write(d.join("bg.js"), "").expect("write bg");
        let ext = Extension::load(&d).expect("valid");
        assert_eq!(ext.service_worker.as_deref(), Some("bg.js"));
        let _ = std::fs::remove_dir_all(&d);
    }
}
