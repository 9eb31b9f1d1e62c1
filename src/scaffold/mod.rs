//! What `gauntlet init` writes into a new repository: a package whose test targets
//! are gauntlet's suites, a nextest configuration, one sample app written in Python with
//! its corpus, scripted flows and mutants, one data-only challenge on it, a README
//! and the CI workflow.
//!
//! The files are templates under `templates/init/`, embedded at build time
//! ([`templates`]), so that an installed `gauntlet` writes the same repository as a
//! checkout, and a change to a template is a change to what the tests load, hash, lint
//! and run (this module's, and `tests/integration/adopt.rs`). Only a few values are
//! filled in ([`Options`]): the package's name, how it depends on gauntlet, and the
//! command that installs gauntlet's programs.

mod checkout;
mod file;
mod templates;
mod write;

use std::path::{Path, PathBuf};

pub use checkout::{checkout, CheckoutError};
pub use file::File;
pub use write::{write, ScaffoldError};

/// How the new package depends on gauntlet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dependency {
    /// The version this library is, from the registry.
    Published,
    /// A checkout of gauntlet (absolute): to try a change before it is published.
    Path(PathBuf),
}

/// What varies between two scaffolds.
#[derive(Debug, Clone)]
pub struct Options {
    /// The package's name in `Cargo.toml` ([`package_name`]).
    pub package: String,
    pub gauntlet: Dependency,
}

/// The app the scaffold holds: the name a filter of its trials uses.
pub const APP: &str = "pantry";

/// The challenge the scaffold holds, on [`APP`].
pub const CHALLENGE: &str = "pantry-restock";

/// This library's version: the one a published dependency names.
const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Every file of the scaffold, its placeholders filled in from `opts`.
pub fn files(opts: &Options) -> Vec<File> {
    let dependency = match &opts.gauntlet {
        Dependency::Published => format!("\"{VERSION}\""),
        Dependency::Path(dir) => format!("{{ path = {} }}", toml_string(dir)),
    };
    let install = install_command(&opts.gauntlet);
    templates::ALL
        .iter()
        .map(|(path, text)| File {
            path,
            contents: text
                .replace("%%PACKAGE%%", &opts.package)
                .replace("%%GAUNTLET_DEPENDENCY%%", &dependency)
                // The workflow runs on machines without this checkout: it installs the
                // published programs whatever the dependency.
                .replace(
                    "%%INSTALL_HELPERS%%",
                    if *path == templates::WORKFLOW {
                        crate::binaries::INSTALL_HELPERS
                    } else {
                        &install
                    },
                ),
        })
        .collect()
}

/// The command that installs gauntlet's programs of the version `gauntlet` names.
pub fn install_command(gauntlet: &Dependency) -> String {
    match gauntlet {
        Dependency::Published => crate::binaries::INSTALL_HELPERS.to_owned(),
        Dependency::Path(dir) => format!(
            "cargo install --locked --path {}",
            shell_word(&dir.to_string_lossy())
        ),
    }
}

/// A cargo package name for a repository in a directory named `dir_name`: its letters,
/// digits, `-` and `_`, lowercased, everything else a `-`, starting with a letter; a
/// name cargo refuses or that would shadow the dependency gets `-trials` appended.
pub fn package_name(dir_name: &str) -> String {
    let mapped: String = dir_name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    let trimmed = mapped
        .trim_start_matches(|c: char| !c.is_ascii_alphabetic())
        .trim_end_matches(['-', '_']);
    const TAKEN: &[&str] = &[
        "gauntlet",
        "test",
        "std",
        "core",
        "alloc",
        "proc_macro",
        "proc-macro",
    ];
    if trimmed.is_empty() {
        "agent-trials".to_owned()
    } else if TAKEN.contains(&trimmed) || is_keyword(trimmed) {
        format!("{trimmed}-trials")
    } else {
        trimmed.to_owned()
    }
}

/// Rust's keywords, which cargo refuses as a package name.
fn is_keyword(name: &str) -> bool {
    const KEYWORDS: &[&str] = &[
        "abstract", "as", "async", "await", "become", "box", "break", "const", "continue", "crate",
        "do", "dyn", "else", "enum", "extern", "false", "final", "fn", "for", "gen", "if", "impl",
        "in", "let", "loop", "macro", "match", "mod", "move", "mut", "override", "priv", "pub",
        "ref", "return", "self", "static", "struct", "super", "trait", "true", "try", "type",
        "typeof", "unsafe", "unsized", "use", "virtual", "where", "while", "yield",
    ];
    KEYWORDS.contains(&name)
}

/// `path` as a TOML basic string.
fn toml_string(path: &Path) -> String {
    let mut out = String::from("\"");
    for c in path.to_string_lossy().chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `word` as one word of a POSIX shell command line.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+=:,@".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests;
