//! What the framework's package ships: its sources (the library, the CLI and gauntlet's
//! own programs) and what `gauntlet init` writes, and nothing of this repository's own
//! trials (the sample apps, challenges, published results, fixtures, tests).

use std::process::Command;

#[test]
fn the_framework_package_lists_only_the_framework() {
    let out = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .args([
            "package",
            "-p",
            "gauntlet",
            "--list",
            "--allow-dirty",
            "--offline",
        ])
        .current_dir(crate::support::root())
        .output()
        .expect("cargo package runs");
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
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
