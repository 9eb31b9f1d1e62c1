//! The frozen app `cli-tally` against its own data: the loader accepts it, its hash is
//! current, and every script's shell test holds on the real binary, fails on its
//! own mutant and holds on every other one — with the binaries handed over exactly as
//! the harness hands them (`world::target::Target`: the CLI relay, the same bytes for
//! the app and every mutant, which runs the real app with or without `--mutant`),
//! through `APP_BIN`.
//!
//! `cli-tally` is superseded by `cli-tally-2` (the same tool, whose mutants no usage line
//! names): the checks here take the app's name, and `app_tally2` runs them on the newer
//! version as well.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use gauntlet::spec::{Modality, ScriptStep};
use gauntlet::world::target::{Locator, Target};

use super::app_notes::{assert_refused, claimed_files, describe, load_frozen};

/// The app's binary, found at run time (in an extracted nextest archive, when run
/// from one), never at a path fixed when this test was built.
pub fn bin(app: &str) -> String {
    crate::support::bin(app).display().to_string()
}

/// Capabilities that have a mutant, in corpus order (the same in both versions).
pub const MUTANTS: [&str; 5] = [
    "version",
    "sum",
    "stats",
    "json-output",
    "reject-non-numeric",
];

/// A started target as the harness hands it to an unsealed test: its host
/// environment (`APP_BIN`, the relay's socket), alive while this lives.
struct Handed {
    env: std::collections::BTreeMap<String, String>,
    _target: Target,
}

/// One runtime for every target of a test: the CLI relay answers on its workers while
/// the test runs `sh` on this thread.
fn runtime() -> tokio::runtime::Runtime {
    match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => panic!("runtime: {e}"),
    }
}

/// The binary the harness hands a test of `app` for `mutant` (none: the real app).
fn app_bin(rt: &tokio::runtime::Runtime, app: &str, mutant: Option<&str>, dir: &Path) -> Handed {
    let loaded = load_frozen(app, Modality::Cli);
    let label = mutant.unwrap_or("app");
    let locators = dir.join(format!("{label}-target"));
    let target = match rt.block_on(Target::start(&loaded.app, mutant, &locators, dir, label)) {
        Ok(t) => t,
        Err(e) => panic!("Target::start({mutant:?}): {e}"),
    };
    let Locator::Bin(bin) = target.locator(false) else {
        panic!("a cli app is handed over as a binary");
    };
    let env = target.host_env();
    assert_eq!(env.get("APP_BIN").map(String::as_str), bin.to_str());
    assert!(!env.contains_key("APP_URL"));
    Handed {
        env,
        _target: target,
    }
}

fn sh(dir: &Path, command: &str, app: &Handed) -> Output {
    Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(dir)
        .envs(&app.env)
        .env_remove("APP_URL")
        .output()
        .unwrap_or_else(|e| panic!("cannot run sh -c {command:?}: {e}"))
}

/// Run `bin args` on `stdin`, as the CLI relay runs the app (with its own arguments).
pub fn tally(bin: &str, args: &[&str], stdin: &str) -> Output {
    use std::io::Write;
    let mut child = match Command::new(bin)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => panic!("cannot run {bin}: {e}"),
    };
    if let Some(mut input) = child.stdin.take() {
        if let Err(e) = input.write_all(stdin.as_bytes()) {
            panic!("write stdin: {e}");
        }
    }
    match child.wait_with_output() {
        Ok(o) => o,
        Err(e) => panic!("wait {bin}: {e}"),
    }
}

#[test]
fn loader_accepts_cli_tally_and_its_flows_claim_shell_tests() {
    loader_accepts_it_and_its_flows_claim_shell_tests("cli-tally");
}

pub fn loader_accepts_it_and_its_flows_claim_shell_tests(app: &str) {
    let loaded = load_frozen(app, Modality::Cli);
    let ids: Vec<&str> = loaded
        .corpus
        .capabilities
        .iter()
        .map(|c| c.id.as_str())
        .collect();
    let mut expected = MUTANTS.to_vec();
    expected.push("pleasant-output");
    assert_eq!(ids, expected);
    for (cap, script) in claimed_files(&loaded, "sh check.sh") {
        assert!(
            script.contains("$APP_BIN"),
            "{cap}: the test must use $APP_BIN"
        );
        assert!(!script.contains("APP_URL"), "{cap}: a cli test has no URL");
    }
}

/// Replay every script as an agent would, then gate its claimed test as the harness
/// would: on the real app twice and on every mutant, each through the relay.
#[test]
fn every_flow_proves_its_capability_and_fails_only_on_its_own_mutant() {
    every_flow_proves_its_capability_on("cli-tally");
}

pub fn every_flow_proves_its_capability_on(app: &str) {
    let loaded = load_frozen(app, Modality::Cli);
    let bins_dir = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => panic!("tempdir: {e}"),
    };
    let rt = runtime();
    let real = app_bin(&rt, app, None, bins_dir.path());
    let mutants: Vec<(&str, Handed)> = MUTANTS
        .iter()
        .map(|m| (*m, app_bin(&rt, app, Some(m), bins_dir.path())))
        .collect();
    // Blind: the app and every mutant are the same file name and the same bytes (the
    // relay), so a test can tell them apart only by how they behave.
    let bytes = |h: &Handed| {
        let bin = h.env.get("APP_BIN").cloned().unwrap_or_default();
        assert!(bin.ends_with(&format!("/{app}")), "{bin}");
        std::fs::read(&bin).unwrap_or_else(|e| panic!("{bin}: {e}"))
    };
    let real_bytes = bytes(&real);
    for (m, h) in &mutants {
        assert!(
            bytes(h) == real_bytes,
            "{m}: the mutant's APP_BIN differs from the app's"
        );
    }
    let mut failures = Vec::new();
    for cap in &loaded.corpus.capabilities {
        let Some(script) = loaded.scripts.get(&cap.id) else {
            panic!("{}: no script", cap.id);
        };
        let workspace = match tempfile::tempdir() {
            Ok(d) => d,
            Err(e) => panic!("tempdir: {e}"),
        };
        for (i, step) in script.tool_steps().iter().enumerate() {
            match step {
                ScriptStep::WriteFile { path, content } => {
                    let target = workspace.path().join(path);
                    if let Some(parent) = target.parent() {
                        if let Err(e) = std::fs::create_dir_all(parent) {
                            panic!("mkdir {}: {e}", parent.display());
                        }
                    }
                    if let Err(e) = std::fs::write(&target, content) {
                        panic!("write {}: {e}", target.display());
                    }
                }
                ScriptStep::Shell { command, .. } => {
                    let out = sh(workspace.path(), command, &real);
                    // The ambiguous script looks at a refusal on purpose; its exit is its own.
                    if !out.status.success() && cap.kind.is_verifiable() {
                        failures.push(format!(
                            "{}: step {i} `{command}`: {}",
                            cap.id,
                            describe(&out)
                        ));
                    }
                }
                ScriptStep::ReadFile { .. }
                | ScriptStep::Tool { .. }
                | ScriptStep::Final { .. }
                | ScriptStep::SayToolResult { .. } => {}
            }
        }
        if !cap.kind.is_verifiable() {
            continue;
        }
        let dir = workspace.path().join(format!("{}-test", cap.id));
        for run in 1..=2 {
            let out = sh(&dir, "sh check.sh", &real);
            if !out.status.success() {
                failures.push(format!(
                    "{}: run {run} on the app failed: {}",
                    cap.id,
                    describe(&out)
                ));
            }
        }
        for (mutant, bin) in &mutants {
            let out = sh(&dir, "sh check.sh", bin);
            let own = *mutant == cap.id;
            if own && out.status.success() {
                failures.push(format!(
                    "{}: passes on its own mutant: {}",
                    cap.id,
                    describe(&out)
                ));
            }
            if own && out.stderr.is_empty() {
                failures.push(format!("{}: fails on its mutant without a message", cap.id));
            }
            if !own && !out.status.success() {
                failures.push(format!(
                    "{}: fails on the `{mutant}` mutant, which must not break it: {}",
                    cap.id,
                    describe(&out)
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn mutant_flags_are_accepted_and_the_ambiguous_one_refused() {
    mutant_flags_are_accepted_and_the_ambiguous_one_refused_by("cli-tally");
}

pub fn mutant_flags_are_accepted_and_the_ambiguous_one_refused_by(app: &str) {
    let bin = bin(app);
    for m in MUTANTS {
        let out = tally(&bin, &["--mutant", m, "sum", "1", "2"], "");
        assert_eq!(
            out.status.code(),
            Some(0),
            "--mutant {m}: {}",
            describe(&out)
        );
    }
    for args in [
        &["--mutant", "pleasant-output", "sum", "1"][..],
        &["--mutant", "no-such-capability", "sum", "1"],
        &["--mutant"],
        &["--bogus"],
        &[],
        &["sum", "-x"],
    ] {
        assert_refused(&bin, args);
    }
}

#[test]
fn the_tool_does_what_the_corpus_says() {
    the_tool_does_what_the_corpus_says_in("cli-tally");
}

pub fn the_tool_does_what_the_corpus_says_in(app: &str) {
    let bin = bin(app);
    let ok = |args: &[&str], stdin: &str, want: &str| {
        let out = tally(&bin, args, stdin);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", describe(&out));
        assert_eq!(String::from_utf8_lossy(&out.stdout), want, "{args:?}");
        assert!(out.stderr.is_empty(), "{args:?}: {}", describe(&out));
    };
    ok(&["--version"], "", "cli-tally 2.3.0\n");
    ok(&["-V"], "", "cli-tally 2.3.0\n");
    ok(&["sum", "1", "2", "3.5"], "", "6.5\n");
    ok(&["sum", "-1.25", "4"], "", "2.75\n");
    ok(&["sum", "0.1", "0.2"], "", "0.3\n");
    ok(&["sum"], "4 6\n 0.5\n", "10.5\n");
    ok(&["sum"], "", "0\n");
    ok(
        &["stats", "1", "2", "2"],
        "",
        "count: 3\nsum: 5\nmin: 1\nmax: 2\nmean: 1.666667\n",
    );
    for args in [
        &["--json", "stats", "4", "1", "7"][..],
        &["stats", "4", "1", "--json", "7"],
    ] {
        let out = tally(&bin, args, "");
        let v: serde_json::Value = match serde_json::from_slice(&out.stdout) {
            Ok(v) => v,
            Err(e) => panic!("{args:?}: not JSON: {e}: {}", describe(&out)),
        };
        assert_eq!(
            v,
            serde_json::json!({"command": "stats", "count": 3, "sum": 12, "min": 1, "max": 7, "mean": 4})
        );
    }
    for (args, stdin, named) in [
        (&["sum", "1", "abc", "2"][..], "", "abc"),
        (&["stats", "1e3"], "", "1e3"),
        (&["sum"], "1 x2 3", "x2"),
        (&["stats"], "", "at least one number"),
    ] {
        let out = tally(&bin, args, stdin);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", describe(&out));
        assert!(out.stdout.is_empty(), "{args:?}: {}", describe(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(named),
            "{args:?}: {}",
            describe(&out)
        );
    }
}
