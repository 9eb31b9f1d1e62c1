//! What the framework's package ships: its sources (the library, the CLI and gauntlet's
//! own programs) and what `gauntlet init` writes, and nothing of this repository's own
//! trials (the sample apps, challenges, published results, fixtures, tests).

use std::process::{Command, Output};

/// `cargo <args>` at the repository's root, offline, succeeding.
fn cargo(args: &[&str]) -> Output {
    let out = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .args(args)
        .arg("--offline")
        .current_dir(crate::support::root())
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "cargo {args:?}: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn the_framework_package_lists_only_the_framework() {
    let out = cargo(&["package", "-p", "gauntlet", "--list", "--allow-dirty"]);
    let listed = String::from_utf8_lossy(&out.stdout);
    let files: Vec<&str> = listed.lines().collect();
    let framework = |f: &str| {
        f.starts_with("src/")
            || f.starts_with("templates/")
            || [
                "Cargo.toml",
                "Cargo.toml.orig",
                "Cargo.lock",
                "README.md",
                ".cargo_vcs_info.json",
            ]
            .contains(&f)
    };
    let foreign: Vec<&&str> = files.iter().filter(|f| !framework(f)).collect();
    assert!(foreign.is_empty(), "not the framework's: {foreign:?}");
    for needed in [
        "src/lib.rs",
        "src/main.rs",
        "src/bin/gauntlet-seal/main.rs",
        "src/bin/gauntlet-reap/main.rs",
        "src/bin/gauntlet-agent/main.rs",
        "src/bin/gauntlet-cli-relay/main.rs",
    ] {
        assert!(
            files.contains(&needed),
            "{needed} is not shipped: {files:?}"
        );
    }
    assert!(
        !files.iter().any(|f| f.contains("api-ledger")),
        "a sample app is shipped"
    );
}

/// `cargo install gauntlet` installs exactly gauntlet's own programs, the ones a run
/// checks for: no sample app, no program a run would not find.
#[test]
fn the_framework_installs_exactly_the_programs_a_run_checks_for() {
    let out = cargo(&["metadata", "--no-deps", "--format-version", "1"]);
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("metadata json");
    let package = meta["packages"]
        .as_array()
        .and_then(|ps| ps.iter().find(|p| p["name"] == "gauntlet"))
        .expect("the gauntlet package");
    let mut bins: Vec<&str> = package["targets"]
        .as_array()
        .expect("targets")
        .iter()
        .filter(|t| {
            t["kind"]
                .as_array()
                .is_some_and(|k| k.iter().any(|k| k == "bin"))
        })
        .filter_map(|t| t["name"].as_str())
        .collect();
    bins.sort_unstable();
    let mut helpers = gauntlet::binaries::HELPERS.to_vec();
    helpers.sort_unstable();
    assert_eq!(bins, helpers);
}
