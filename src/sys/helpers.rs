//! Whether gauntlet's own programs ([`crate::binaries::HELPERS`]) are where a run will
//! start them, and of this library's version: a repository that adopts gauntlet
//! installs them with one command, and a run that would start a missing or older one
//! stops before any trial, naming the command and both versions, instead of failing
//! each trial with an error about a file it cannot run.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::binaries::{helper_dir, HELPERS, INSTALL_HELPERS};

/// The version every helper must answer `--version` with.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// How long a helper may take to say its version: a program that does not answer by
/// then is not one of gauntlet's.
const ANSWER_WITHIN: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum HelperError {
    #[error("gauntlet's program `{name}` is neither in {dir} nor on PATH: install gauntlet's programs with `{INSTALL_HELPERS}`, or set GAUNTLET_BIN_DIR to where they are")]
    Missing { name: &'static str, dir: PathBuf },
    #[error("{path}: is version `{found}`, this library is {VERSION}: install gauntlet's programs with `{INSTALL_HELPERS}`")]
    Mismatched { path: PathBuf, found: String },
    #[error("{path}: cannot say its version: {why}; install gauntlet's programs with `{INSTALL_HELPERS}`")]
    Unreadable { path: PathBuf, why: String },
}

/// Every helper a run of `cfg` starts, where it will look for it ([`helper_dir`]),
/// answering `--version` with this library's version. An unsealed run
/// (`GAUNTLET_SANDBOX=off`) starts no sandbox, and needs none.
pub fn check(cfg: &crate::config::Config) -> Result<(), HelperError> {
    let sealed = cfg.sandbox == crate::config::Sandbox::Sealed;
    check_in(&helper_dir(), sealed)
}

/// [`check`] of the helpers in `dir`, the sandbox only when `sealed`.
pub fn check_in(dir: &Path, sealed: bool) -> Result<(), HelperError> {
    let needed = HELPERS
        .iter()
        .filter(|n| sealed || **n != crate::sys::sandbox::HELPER);
    for name in needed {
        let path = dir.join(name);
        if !crate::binaries::is_executable(&path) {
            return Err(HelperError::Missing {
                name,
                dir: dir.to_path_buf(),
            });
        }
        let found = version_of(&path, name)?;
        if found != VERSION {
            return Err(HelperError::Mismatched { path, found });
        }
    }
    Ok(())
}

/// What `path --version` says after the program's name (`gauntlet-seal 0.1.0`).
fn version_of(path: &Path, name: &str) -> Result<String, HelperError> {
    let unreadable = |why: String| HelperError::Unreadable {
        path: path.to_path_buf(),
        why,
    };
    let line = crate::sys::version::first_line(path, ANSWER_WITHIN).map_err(unreadable)?;
    match line.split_once(' ') {
        Some((n, v)) if n == name && !v.trim().is_empty() => Ok(v.trim().to_owned()),
        _ => Err(unreadable(format!(
            "`--version` printed {line:?}, not `{name} <version>`"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A directory of helpers that are shell scripts printing `say(name)`.
    fn helpers(say: impl Fn(&str) -> String) -> tempfile::TempDir {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        for name in HELPERS {
            let f = dir.path().join(name);
            std::fs::write(&f, format!("#!/bin/sh\necho '{}'\n", say(name))).expect("write");
            std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        }
        dir
    }

    #[test]
    fn helpers_of_this_version_pass_and_an_older_one_is_named_with_both_versions() {
        let good = helpers(|n| format!("{n} {VERSION}"));
        check_in(good.path(), true).expect("helpers of this version");
        let old = helpers(|n| {
            let v = if n == "gauntlet-reap" {
                "0.0.1"
            } else {
                VERSION
            };
            format!("{n} {v}")
        });
        let e = check_in(old.path(), true)
            .expect_err("an older reaper")
            .to_string();
        assert!(e.contains("gauntlet-reap: is version `0.0.1`"), "{e}");
        assert!(e.contains(&format!("this library is {VERSION}")), "{e}");
        assert!(e.contains(INSTALL_HELPERS), "{e}");
    }

    #[test]
    fn a_missing_helper_or_a_foreign_answer_names_the_install_command() {
        let dir = helpers(|n| format!("{n} {VERSION}"));
        std::fs::remove_file(dir.path().join("gauntlet-seal")).expect("rm");
        let e = check_in(dir.path(), true)
            .expect_err("no sandbox")
            .to_string();
        assert!(e.contains("`gauntlet-seal` is neither in"), "{e}");
        assert!(e.contains(INSTALL_HELPERS), "{e}");
        check_in(dir.path(), false).expect("an unsealed run starts no sandbox");
        let foreign = helpers(|_| "usage: something else".into());
        let e = check_in(foreign.path(), true)
            .expect_err("not ours")
            .to_string();
        assert!(e.contains("cannot say its version"), "{e}");
    }
}
