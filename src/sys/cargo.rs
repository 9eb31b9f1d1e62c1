//! What cargo hands a program it runs (`cargo run`, a test under `cargo test` or
//! nextest) about that program's own package, which a cargo the program starts in turn
//! must not inherit.
//!
//! cargo compares the variables a build script declares (`rerun-if-env-changed`) with
//! its own environment, and some build scripts declare these: ring's names
//! `CARGO_MANIFEST_DIR`, `CARGO_PKG_NAME` and `OUT_DIR`, which cargo sets for the script
//! itself. A build started from under `cargo run` so finds them changed, runs the
//! script again and rebuilds and relinks everything above it, the reference agent and
//! the sandbox included; the next build from a shell (`cargo nextest run`) undoes it.
//! Every such switch rebuilt the same bytes at a new modification time, and a run's
//! identity, which fingerprints its programs by size and modification time, then
//! refused to resume under the other entry point.

use std::process::Command;

/// What cargo sets for a program it runs: a name, or a prefix when it ends in `_`.
pub const SET_FOR_A_RUN: &[&str] = &[
    "CARGO_MANIFEST_",
    "CARGO_PKG_",
    "CARGO_BIN_",
    "CARGO_CRATE_",
    "CARGO_PRIMARY_PACKAGE",
    "CARGO_TARGET_TMPDIR",
    "CARGO_RUSTC_CURRENT_DIR",
    "OUT_DIR",
];

/// Whether cargo sets `name` for a program it runs (see [`SET_FOR_A_RUN`]); how cargo
/// itself is configured (`CARGO_HOME`, `CARGO_TARGET_DIR`, `CARGO_INCREMENTAL`,
/// `RUSTFLAGS`) is not, and must reach the inner cargo as it reached the outer one.
pub fn set_for_a_run(name: &str) -> bool {
    SET_FOR_A_RUN.iter().any(|set| match set.strip_suffix('_') {
        Some(_) => name.starts_with(set),
        None => name == *set,
    })
}

/// `cmd` with this process's environment, less what cargo set for this process's own
/// package: a cargo it runs sees what a cargo started from the shell sees.
pub fn as_from_the_shell(cmd: &mut Command) -> &mut Command {
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_some_and(set_for_a_run) {
            cmd.env_remove(&name);
        }
    }
    cmd
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_cargo_sets_for_a_run_goes_and_its_own_settings_stay() {
        for set in [
            "CARGO_MANIFEST_DIR",
            "CARGO_MANIFEST_PATH",
            "CARGO_PKG_NAME",
            "CARGO_PKG_VERSION_PRE",
            "CARGO_BIN_NAME",
            "CARGO_BIN_EXE_gauntlet",
            "CARGO_CRATE_NAME",
            "CARGO_TARGET_TMPDIR",
            "OUT_DIR",
        ] {
            assert!(set_for_a_run(set), "{set}");
        }
        for kept in [
            "CARGO",
            "CARGO_HOME",
            "CARGO_TARGET_DIR",
            "CARGO_INCREMENTAL",
            "CARGO_BUILD_JOBS",
            "RUSTFLAGS",
            "OUT_DIRECTORY",
        ] {
            assert!(!set_for_a_run(kept), "{kept}");
        }
    }
}
