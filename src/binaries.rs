//! Locating the executables this package builds (apps, the reference agent, the CLI)
//! and the repository whose data they read.
//!
//! Everything here is found at run time, never from a path baked in at build time: a
//! nextest archive built on one machine runs on another (`--workspace-remap`), where
//! the build machine's paths do not exist — or, worse, exist and hold another
//! checkout. These location variables — and `GAUNTLET_CHROMIUM`, the browser — are
//! read here alone, and not into `Config`, because every process gauntlet runs (the
//! CLI, each libtest-mimic trial, `gauntlet flow run` inside a sandbox) must find the
//! same things before any configuration exists.

use std::path::{Path, PathBuf};

/// The directory holding this package's binaries: `GAUNTLET_BIN_DIR`; else where
/// nextest says the CLI is (`NEXTEST_BIN_EXE_gauntlet`, remapped into an extracted
/// archive); else beside the running executable (test executables live in
/// `target/<profile>/deps/`, binaries one level up).
pub fn bin_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("GAUNTLET_BIN_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    if let Some(dir) = std::env::var_os("NEXTEST_BIN_EXE_gauntlet")
        .map(PathBuf::from)
        .and_then(|exe| exe.parent().map(Path::to_path_buf))
    {
        return dir;
    }
    let exe = std::env::current_exe().unwrap_or_default();
    let dir = exe.parent().map(Path::to_path_buf).unwrap_or_default();
    if dir.file_name().is_some_and(|n| n == "deps") {
        dir.parent().map(Path::to_path_buf).unwrap_or(dir)
    } else {
        dir
    }
}

/// gauntlet's own programs, which every run needs and a repository that adopts
/// gauntlet installs (`cargo install`): the CLI, the sandbox, the reaper, the reference
/// agent and the CLI apps' relay.
pub const HELPERS: &[&str] = &[
    "gauntlet",
    "gauntlet-seal",
    "gauntlet-reap",
    "gauntlet-agent",
    "gauntlet-cli-relay",
];

/// The one command that installs [`HELPERS`] at the version of this library.
pub const INSTALL_HELPERS: &str = concat!(
    "cargo install --locked gauntlet --version ",
    env!("CARGO_PKG_VERSION")
);

/// Where gauntlet's own programs are: [`bin_dir`] when it holds them (this workspace,
/// an extracted archive, `GAUNTLET_BIN_DIR`); else the first directory on `PATH` that
/// holds the sandbox, as `cargo install` leaves it. A test target of another
/// repository runs from its own `target/`, where no helper is built.
pub fn helper_dir() -> PathBuf {
    let here = bin_dir();
    if here.join("gauntlet-seal").is_file() {
        return here;
    }
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .find(|d| d.is_absolute() && d.join("gauntlet-seal").is_file())
        .unwrap_or(here)
}

/// Path of the binary `name`: one of gauntlet's own programs ([`HELPERS`]) where they
/// are ([`helper_dir`]), any other (a sample app) beside the binaries of the build.
pub fn bin_path(name: &str) -> PathBuf {
    if HELPERS.contains(&name) {
        helper_dir().join(name)
    } else {
        bin_dir().join(name)
    }
}

/// What marks a directory as a repository gauntlet evaluates in: a suite's data, one
/// suite's at least (an app's `app.json`, a challenge's `challenge.yaml`, the
/// scorecard's `scorecard.json`), each in a folder of its own one level down.
const ROOT_MARKERS: &[(&str, &str)] = &[
    ("apps", "app.json"),
    ("challenges", "challenge.yaml"),
    ("challenges", "scorecard.json"),
];

fn is_root(dir: &Path) -> bool {
    ROOT_MARKERS.iter().any(|(folder, file)| {
        std::fs::read_dir(dir.join(folder))
            .into_iter()
            .flatten()
            .flatten()
            .any(|e| e.path().join(file).is_file())
    })
}

/// The repository root: where `apps/` and `challenges/` live. In order:
/// `GAUNTLET_ROOT`; the package directory cargo and nextest hand every process they run
/// (`CARGO_MANIFEST_DIR` at run time, which `--workspace-remap` points at the fresh
/// source tree); the nearest directory at or above the working directory that holds a
/// suite's data ([`ROOT_MARKERS`]). When none of these is a repository, the working directory
/// is returned, and loading its `apps/` fails naming the directory (see
/// [`ROOT_HINT`]).
pub fn repo_root() -> PathBuf {
    if let Some(root) = std::env::var_os("GAUNTLET_ROOT").filter(|r| !r.is_empty()) {
        return PathBuf::from(root);
    }
    if let Some(dir) = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .filter(|d| is_root(d))
    {
        return dir;
    }
    let cwd = std::env::current_dir().unwrap_or_default();
    cwd.ancestors()
        .find(|d| is_root(d))
        .map(Path::to_path_buf)
        .unwrap_or(cwd)
}

/// What a missing repository error says to do about it.
pub const ROOT_HINT: &str = "run gauntlet inside its repository, or set GAUNTLET_ROOT to it";

/// Debian's Chromium (the real binary, not the `/usr/bin` wrapper script).
pub const DEFAULT_CHROMIUM: &str = "/usr/lib/chromium/chromium";

/// The browser named by `GAUNTLET_CHROMIUM`, when it is set and not empty.
pub fn chromium_override() -> Option<PathBuf> {
    std::env::var_os("GAUNTLET_CHROMIUM")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// The Chromium binary gauntlet uses: `GAUNTLET_CHROMIUM`, or Debian's.
pub fn chromium() -> PathBuf {
    chromium_override().unwrap_or_else(|| PathBuf::from(DEFAULT_CHROMIUM))
}

/// Debian's `chromium-headless-shell`: the same Chromium release built as a headless
/// browser only. It starts faster and uses less CPU per flow run than the full
/// browser (docs/test-flows.md, "What a browser step costs"), but loads no extensions.
pub const DEFAULT_HEADLESS_SHELL: &str = "/usr/lib/chromium/chromium-headless-shell";

/// The browser for a page without an extension: the one `GAUNTLET_CHROMIUM` names
/// when it is set (a person who names a browser gets that browser everywhere), else
/// Debian's headless shell where it is installed, else Debian's Chromium.
pub fn chromium_without_extensions() -> PathBuf {
    if let Some(named) = chromium_override() {
        return named;
    }
    let shell = PathBuf::from(DEFAULT_HEADLESS_SHELL);
    if is_executable(&shell) {
        shell
    } else {
        PathBuf::from(DEFAULT_CHROMIUM)
    }
}

/// A regular file someone may execute.
pub fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_executable_file_counts_as_a_browser() {
        let dir = std::env::temp_dir().join(format!("gauntlet-exec-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("mkdir");
        let f = dir.join("chromium");
        std::fs::write(&f, "").expect("write");
        assert!(!is_executable(&f), "not executable");
        assert!(!is_executable(&dir), "a directory");
        assert!(!is_executable(&dir.join("missing")));
        assert!(is_executable(Path::new("/bin/sh")));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
