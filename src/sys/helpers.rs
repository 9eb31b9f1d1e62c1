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
///
/// Under nextest every trial is a process of its own, and asking each helper was a
/// share of every trial's CPU time (a fork and an exec per helper). The first process
/// of a nextest run that finds them all answering keeps what it checked: each helper's
/// path, size, modification time, device and inode, and mode. A later
/// process of the run that finds the same files asks none of them; a file replaced or
/// changed since is asked again.
pub fn check(cfg: &crate::config::Config) -> Result<(), HelperError> {
    let sealed = cfg.sandbox == crate::config::Sandbox::Sealed;
    let kept = crate::record::run_file(cfg, "helpers");
    check_kept(&helper_dir(), sealed, kept.as_deref())
}

/// [`check_in`], unless `kept` holds what a process of the run checked and the files
/// are still those.
fn check_kept(dir: &Path, sealed: bool, kept: Option<&Path>) -> Result<(), HelperError> {
    let now = checked(dir, sealed);
    if kept
        .and_then(|f| std::fs::read_to_string(f).ok())
        .is_some_and(|k| k == now)
    {
        return Ok(());
    }
    check_in(dir, sealed)?;
    if let Some(file) = kept {
        // Not kept (a read-only cache): the next process asks too.
        let _ = crate::record::replace_whole(file, now.as_bytes());
    }
    Ok(())
}

/// The helpers a run starts as files: a line per helper with its path, size,
/// modification time, device and inode, and mode (a helper made unrunnable is asked
/// again, and found so), or `absent`.
fn checked(dir: &Path, sealed: bool) -> String {
    use std::os::unix::fs::MetadataExt;
    needed(sealed)
        .map(|name| {
            let path = dir.join(name);
            match std::fs::metadata(&path) {
                Ok(m) => format!(
                    "{} {} {}.{} {}.{} {:o}\n",
                    path.display(),
                    m.size(),
                    m.mtime(),
                    m.mtime_nsec(),
                    m.dev(),
                    m.ino(),
                    m.mode()
                ),
                Err(_) => format!("{} absent\n", path.display()),
            }
        })
        .collect()
}

fn needed(sealed: bool) -> impl Iterator<Item = &'static &'static str> {
    HELPERS
        .iter()
        .filter(move |n| sealed || **n != crate::sys::sandbox::HELPER)
}

/// [`check`] of the helpers in `dir`, the sandbox only when `sealed`.
pub fn check_in(dir: &Path, sealed: bool) -> Result<(), HelperError> {
    for name in needed(sealed) {
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

    #[test]
    fn the_processes_of_a_run_ask_the_helpers_once_until_one_is_replaced() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let asked = dir.path().join("asked");
        let write = |name: &str, version: &str| {
            let f = dir.path().join(name);
            // Written beside and renamed over: a new file, as an install makes.
            let tmp = dir.path().join("new");
            std::fs::write(
                &tmp,
                format!(
                    "#!/bin/sh\necho {name} >> '{}'\necho '{name} {version}'\n",
                    asked.display()
                ),
            )
            .expect("write");
            std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755)).expect("chmod");
            std::fs::rename(&tmp, &f).expect("rename");
        };
        for name in HELPERS {
            write(name, VERSION);
        }
        let times_asked = || {
            std::fs::read_to_string(&asked)
                .unwrap_or_default()
                .lines()
                .count()
        };
        let kept = dir.path().join("cache/helpers/run-1");
        check_kept(dir.path(), true, Some(&kept)).expect("first process");
        assert_eq!(times_asked(), HELPERS.len());
        check_kept(dir.path(), true, Some(&kept)).expect("second process");
        assert_eq!(
            times_asked(),
            HELPERS.len(),
            "the second process asked again"
        );
        // Another run, or no run to share with, asks for itself.
        check_kept(
            dir.path(),
            true,
            Some(&dir.path().join("cache/helpers/run-2")),
        )
        .expect("another run");
        check_kept(dir.path(), true, None).expect("outside nextest");
        assert_eq!(times_asked(), 3 * HELPERS.len());
        // A helper replaced during the run is asked, and its answer counts.
        write("gauntlet-reap", "0.0.1");
        let e = check_kept(dir.path(), true, Some(&kept))
            .expect_err("a replaced, older reaper")
            .to_string();
        assert!(e.contains("gauntlet-reap: is version `0.0.1`"), "{e}");
        let up_to_the_reaper = HELPERS
            .iter()
            .position(|n| *n == "gauntlet-reap")
            .expect("reaper")
            + 1;
        assert_eq!(times_asked(), 3 * HELPERS.len() + up_to_the_reaper);
        // What the file holds is only ever a list of files that answered.
        write("gauntlet-reap", VERSION);
        std::fs::write(&kept, "junk").expect("write");
        check_kept(dir.path(), true, Some(&kept)).expect("asked again");
        assert_eq!(times_asked(), 4 * HELPERS.len() + up_to_the_reaper);
        // A helper made unrunnable in place (its modification time unchanged) is checked
        // again, and found so.
        std::fs::set_permissions(
            dir.path().join("gauntlet-seal"),
            std::fs::Permissions::from_mode(0o644),
        )
        .expect("chmod");
        let e = check_kept(dir.path(), true, Some(&kept))
            .expect_err("a sandbox that cannot run")
            .to_string();
        assert!(e.contains("`gauntlet-seal` is neither in"), "{e}");
    }
}
