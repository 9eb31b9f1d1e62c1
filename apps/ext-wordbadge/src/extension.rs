//! The extension's files, embedded in the binary, and how `--extension-out` writes
//! them — with a mutant, with exactly one constant of one file replaced.
//!
//! The files live in `apps/ext-wordbadge/extension/` (hashed with the app) and are
//! embedded with `include_str!`, so the binary always writes the extension it was
//! built with, wherever it runs.

use std::path::{Path, PathBuf};

use crate::mutant::Mutant;

/// Every file of the extension: (name, text).
pub const FILES: [(&str, &str); 3] = [
    ("manifest.json", include_str!("../extension/manifest.json")),
    ("content.js", include_str!("../extension/content.js")),
    ("worker.js", include_str!("../extension/worker.js")),
];

/// One mutant's edit: in `file`, the one occurrence of `from` becomes `to`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Patch {
    pub file: &'static str,
    pub from: &'static str,
    pub to: &'static str,
}

pub fn patch(mutant: Mutant) -> Patch {
    match mutant {
        Mutant::ExactCount => Patch {
            file: "content.js",
            from: r"const WORD_SEPARATOR = /\s+/;",
            to: r"const WORD_SEPARATOR = /[\s-]+/;",
        },
        Mutant::DecoyExclusion => Patch {
            file: "content.js",
            from: r#"const DECOY_SELECTOR = '[data-decoy], [aria-hidden="true"]';"#,
            to: r"const DECOY_SELECTOR = '[data-decoy]';",
        },
        Mutant::LiveUpdate => Patch {
            file: "content.js",
            from: "const WATCH_CHANGES = true;",
            to: "const WATCH_CHANGES = false;",
        },
        Mutant::EmptyPage => Patch {
            file: "worker.js",
            from: r#"const ZERO_TEXT = "0";"#,
            to: r#"const ZERO_TEXT = "";"#,
        },
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ExtensionError {
    /// The embedded sources no longer hold the text a mutant edits: a build defect,
    /// reported rather than writing an extension that is not the mutant it claims.
    #[error("mutant `{mutant}`: {file} holds {found} occurrences of {from:?}, expected exactly 1")]
    Patch {
        mutant: &'static str,
        file: &'static str,
        from: &'static str,
        found: usize,
    },
    #[error("{path}: cannot write: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// The extension's files as they are written for `mutant` (none: the real one).
pub fn files(mutant: Option<Mutant>) -> Result<Vec<(&'static str, String)>, ExtensionError> {
    let patch = mutant.map(|m| (m.id(), patch(m)));
    FILES
        .iter()
        .map(|&(name, text)| match patch {
            Some((id, p)) if p.file == name => {
                let found = text.matches(p.from).count();
                if found != 1 {
                    return Err(ExtensionError::Patch {
                        mutant: id,
                        file: p.file,
                        from: p.from,
                        found,
                    });
                }
                Ok((name, text.replacen(p.from, p.to, 1)))
            }
            _ => Ok((name, text.to_string())),
        })
        .collect()
}

/// Write the extension into `dir` (created if missing; its files overwritten).
pub fn write(dir: &Path, mutant: Option<Mutant>) -> Result<(), ExtensionError> {
    let files = files(mutant)?;
    std::fs::create_dir_all(dir).map_err(|source| ExtensionError::Write {
        path: dir.to_path_buf(),
        source,
    })?;
    for (name, text) in files {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(|source| ExtensionError::Write { path, source })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_mutant_changes_exactly_one_line_of_one_file() {
        let real = match files(None) {
            Ok(f) => f,
            Err(e) => panic!("{e}"),
        };
        for m in Mutant::ALL {
            let mutated = match files(Some(m)) {
                Ok(f) => f,
                Err(e) => panic!("{e}"),
            };
            let changed: Vec<&str> = real
                .iter()
                .zip(&mutated)
                .filter(|(a, b)| a.1 != b.1)
                .map(|(a, _)| a.0)
                .collect();
            assert_eq!(changed, vec![patch(m).file], "{m:?}");
            let (a, b) = real
                .iter()
                .zip(&mutated)
                .find(|(a, _)| a.0 == patch(m).file)
                .map(|(a, b)| (&a.1, &b.1))
                .unwrap_or_else(|| panic!("{m:?}: file missing"));
            let diff: Vec<(&str, &str)> =
                a.lines().zip(b.lines()).filter(|(x, y)| x != y).collect();
            assert_eq!(diff, vec![(patch(m).from, patch(m).to)], "{m:?}");
        }
    }

    #[test]
    fn the_manifest_is_json() {
        let manifest: serde_json::Value = match serde_json::from_str(FILES[0].1) {
            Ok(v) => v,
            Err(e) => panic!("manifest.json: {e}"),
        };
        assert_eq!(manifest["manifest_version"], 3);
    }
}
