//! Every sample app is built as the trials run it, and starts: `--help` answers.

#[test]
fn every_sample_app_is_built_and_answers_help() {
    for (name, exe) in [
        ("api-ledger", env!("CARGO_BIN_EXE_api-ledger")),
        ("browser-notes", env!("CARGO_BIN_EXE_browser-notes")),
        ("cli-tally", env!("CARGO_BIN_EXE_cli-tally")),
        ("cli-tally-2", env!("CARGO_BIN_EXE_cli-tally-2")),
        ("ext-wordbadge", env!("CARGO_BIN_EXE_ext-wordbadge")),
        ("ext-wordbadge-2", env!("CARGO_BIN_EXE_ext-wordbadge-2")),
    ] {
        let out = std::process::Command::new(exe)
            .arg("--help")
            .output()
            .unwrap_or_else(|e| panic!("{name}: {exe}: {e}"));
        assert!(
            out.status.success(),
            "{name} --help: {}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
