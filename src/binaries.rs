//! Locating the executables this package builds (apps, the reference agent, the CLI).
//!
//! Test executables live in `target/<profile>/deps/`, binaries one level up; the CLI
//! lives beside them. `GAUNTLET_BIN_DIR` overrides the search (nextest archives,
//! installed copies). These location variables — and `GAUNTLET_CHROMIUM`, the browser —
//! are read here alone, and not into `Config`, because every process gauntlet runs
//! (the CLI, each libtest-mimic trial, `gauntlet flow run` inside a sandbox) must find
//! the same things before any configuration exists.

use std::path::{Path, PathBuf};

/// The directory holding this package's binaries.
pub fn bin_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("GAUNTLET_BIN_DIR") {
        return PathBuf::from(dir);
    }
    let exe = std::env::current_exe().unwrap_or_default();
    let dir = exe.parent().map(Path::to_path_buf).unwrap_or_default();
    if dir.file_name().is_some_and(|n| n == "deps") {
        dir.parent().map(Path::to_path_buf).unwrap_or(dir)
    } else {
        dir
    }
}

/// Path of the binary `name` built by this package.
pub fn bin_path(name: &str) -> PathBuf {
    bin_dir().join(name)
}

/// The repository root: where `apps/` lives. `GAUNTLET_ROOT` overrides; otherwise the
/// manifest directory baked in at build time.
pub fn repo_root() -> PathBuf {
    std::env::var_os("GAUNTLET_ROOT")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
}

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
