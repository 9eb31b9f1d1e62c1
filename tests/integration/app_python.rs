//! An app in another language: `tests/fixtures/apps/py-greeter`, written with Python's
//! standard library and started by the `command` its `app.json` names, copied into a
//! temporary apps directory (`GAUNTLET_APPS_DIR`). It plans, runs and re-runs its
//! agent's tests against itself and its mutants like the Rust apps: two capabilities,
//! each verified only because its mutant makes the claimed test fail.

use std::path::Path;

use gauntlet::config::{AgentChoice, AgentKind, Config};
use gauntlet::evidence::GateTarget;
use gauntlet::spec::app::AppStart;

use crate::support;

/// A temporary apps directory holding only py-greeter, and a config pointing at it.
fn apps_dir(tmp: &Path) -> Config {
    let apps = tmp.join("apps");
    support::copy_dir(
        &support::root().join("tests/fixtures/apps/py-greeter"),
        &apps.join("py-greeter"),
    );
    let mut cfg = support::config(AgentChoice::of(AgentKind::Reference), &tmp.join("out"));
    cfg.apps_dir = apps;
    cfg
}

#[test]
fn an_app_written_in_python_is_planned_run_and_gated_like_any_other() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let cfg = apps_dir(tmp.path());
    let apps = gauntlet::plan::load_apps_checked(&cfg.apps_dir).expect("the python app loads");
    assert_eq!(apps.len(), 1);
    let app = &apps[0];
    assert_eq!(
        app.app.start,
        AppStart::Command(vec!["python3".into(), "server.py".into()])
    );
    let names: Vec<String> = gauntlet::suites::qa::plan::plan(&apps, &cfg, None)
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(names, ["qa::py-greeter::health", "qa::py-greeter::greet"]);

    for capability in ["health", "greet"] {
        let (rec, dir) = support::run_trial(app, capability, &cfg);
        assert_eq!(
            rec.verdict.outcome.as_str(),
            "verified",
            "{capability}: {} (record {})",
            rec.verdict.reason,
            dir.display()
        );
        // The one prompt: rendered by the harness, kept beside the record (hashed) and
        // handed to the agent in its workspace.
        let prompt = rec
            .evidence
            .prompt
            .as_ref()
            .expect("the prompt is recorded");
        let kept = std::fs::read_to_string(dir.join(&prompt.path)).expect("prompt.md");
        assert_eq!(prompt.sha256, gauntlet::hash::sha256(kept.as_bytes()));
        let given = std::fs::read_to_string(dir.join("workspace/.agent/prompt.md"))
            .expect("the agent's copy");
        assert_eq!(kept, given);
        assert!(kept.contains(&format!("`{capability}`")) && kept.contains("$APP_URL"));
        let gate = rec.evidence.gate.as_ref().expect("the claim was gated");
        assert_eq!(gate.app_runs().count(), cfg.n as usize);
        assert!(gate.app_runs().all(|r| r.end.success()), "{capability}");
        let mutant = gate.mutant_run().expect("a mutant run");
        assert_eq!(mutant.target, GateTarget::Mutant);
        assert!(
            !mutant.end.success(),
            "{capability}: the test passed against the mutant"
        );
    }
}

#[test]
fn a_command_app_whose_program_or_freeze_is_wrong_is_refused_naming_app_json() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let cfg = apps_dir(tmp.path());
    let app_json = cfg.apps_dir.join("py-greeter/app.json");
    let original = std::fs::read_to_string(&app_json).expect("app.json");

    // A changed script breaks the freeze: the app is refused before anything runs.
    let server = cfg.apps_dir.join("py-greeter/server.py");
    let script = std::fs::read_to_string(&server).expect("server.py");
    std::fs::write(&server, script.replace("hello, ", "hi, ")).expect("edit");
    let err = match gauntlet::plan::load_apps_checked(&cfg.apps_dir) {
        Ok(_) => panic!("a changed frozen app is refused"),
        Err(e) => e.to_string(),
    };
    assert!(
        err.contains("app.json") && err.contains("content_hash"),
        "{err}"
    );
    std::fs::write(&server, script).expect("restore");

    // Both ways of starting at once, and neither, are refused by field.
    let both = original.replace("\"command\"", "\"binary\": \"x\", \"command\"");
    std::fs::write(&app_json, both).expect("write");
    let err = match gauntlet::spec::load_app(&cfg.apps_dir.join("py-greeter")) {
        Ok(_) => panic!("binary and command refused"),
        Err(e) => e.to_string(),
    };
    assert!(err.contains("app.json") && err.contains("command"), "{err}");

    // A program that is nowhere: the trial is an error naming the file and the program.
    let missing = original.replace("\"python3\"", "\"no-such-interpreter\"");
    std::fs::write(&app_json, missing).expect("write");
    let app = gauntlet::spec::load_app(&cfg.apps_dir.join("py-greeter")).expect("loads");
    let (rec, _) = support::run_trial(&app, "health", &cfg);
    assert_eq!(rec.verdict.outcome.as_str(), "error");
    let why = rec.evidence.setup_error.unwrap_or_default();
    assert!(
        why.contains("app.json") && why.contains("no-such-interpreter"),
        "{why}"
    );
}
