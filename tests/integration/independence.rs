//! The independence matrix as bad input: an app whose reference tests cannot say which
//! mutants leave a capability intact is refused before any agent runs, naming the app
//! and the capability; and one that can is gated with the mutants the matrix allows.
//! Each case is `tests/fixtures/apps/py-greeter` copied with one flow's test changed
//! (flows are not in the app's content hash, so the copy still loads as frozen).

use std::path::Path;

use gauntlet::config::{AgentChoice, AgentKind, Config};
use gauntlet::score::Outcome;
use gauntlet::spec::LoadedApp;

use crate::support;

/// py-greeter with `greet`'s reference test rewritten by `edit` (its check.sh in, the
/// new one out), and a config pointing at it.
fn greeter_with(tmp: &Path, edit: impl Fn(&str, &str) -> String) -> (LoadedApp, Config) {
    let apps = tmp.join("apps");
    let dir = apps.join("py-greeter");
    support::copy_dir(
        &support::root().join("tests/fixtures/apps/py-greeter"),
        &dir,
    );
    let flow_file = dir.join("flows/greet.json");
    let mut flow: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&flow_file).expect("flow")).expect("json");
    let health: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("flows/health.json")).expect("health flow"))
            .expect("json");
    let health_check = health["steps"][0]["write_file"]["content"]
        .as_str()
        .expect("health's check.sh")
        .to_string();
    let check = flow["steps"][0]["write_file"]["content"]
        .as_str()
        .expect("greet's check.sh")
        .to_string();
    flow["steps"][0]["write_file"]["content"] = edit(&check, &health_check).into();
    std::fs::write(&flow_file, serde_json::to_vec(&flow).expect("json")).expect("write");
    let mut cfg = support::config(AgentChoice::of(AgentKind::Reference), &tmp.join("out"));
    cfg.apps_dir = apps;
    let app = gauntlet::spec::load_app(&dir).expect("the copy loads as frozen");
    (app, cfg)
}

/// Every trial of the app is refused with `want` in its reason, and no agent ran.
fn refused(app: &LoadedApp, cfg: &Config, want: &str) {
    for capability in ["health", "greet"] {
        let (rec, dir) = support::run_trial(app, capability, cfg);
        assert_eq!(
            rec.verdict.outcome,
            Outcome::Error,
            "{}",
            rec.verdict.reason
        );
        assert!(
            rec.verdict.reason.contains("app `py-greeter` is refused")
                && rec.verdict.reason.contains(want),
            "{capability}: {}",
            rec.verdict.reason
        );
        assert!(
            rec.evidence.agent.command.is_empty() && rec.evidence.usage.is_empty(),
            "{capability}: the agent ran before the app was refused"
        );
        assert!(gauntlet::record::rescore::rescore_file(&dir.join("record.json")).agrees());
    }
}

#[test]
fn a_reference_test_red_on_its_own_app_refuses_the_app() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (app, cfg) = greeter_with(tmp.path(), |check, _| {
        format!("{check}\necho 'FAIL: always' >&2\nexit 1\n")
    });
    refused(
        &app,
        &cfg,
        "the reference test of `greet` fails on the app itself",
    );
}

#[test]
fn a_reference_test_green_on_its_own_mutant_refuses_the_app() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (app, cfg) = greeter_with(tmp.path(), |_, _| "#!/bin/sh\nexit 0\n".into());
    refused(
        &app,
        &cfg,
        "the reference test of `greet` passes on its own mutant",
    );
}

#[test]
fn a_reference_test_red_on_every_other_mutant_refuses_the_app() {
    // greet's test also checks health: red on health's mutant, the only other one.
    let tmp = tempfile::tempdir().expect("tempdir");
    let (app, cfg) = greeter_with(tmp.path(), |check, health| format!("{health}\n{check}"));
    refused(
        &app,
        &cfg,
        "the reference test of `greet` fails on every other mutant (health)",
    );
}

#[test]
fn an_app_whose_matrix_stands_gates_on_the_mutants_it_allows() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (app, cfg) = greeter_with(tmp.path(), |check, _| check.to_string());
    for (capability, other) in [("health", "greet"), ("greet", "health")] {
        let (rec, dir) = support::run_trial(&app, capability, &cfg);
        assert_eq!(
            rec.verdict.outcome,
            Outcome::Verified,
            "{}",
            rec.verdict.reason
        );
        let gate = rec.evidence.gate.as_ref().expect("gated");
        let s = gate.specificity.as_ref().expect("specificity recorded");
        assert_eq!(s.independent, [other], "{capability}");
        assert_eq!(s.drawn, [other], "{capability}");
        let run = gate.independent_run(other).expect("the independent run");
        assert!(run.end.success(), "{capability} on {other}'s mutant");
        assert_eq!(
            gate.runs.len(),
            cfg.n as usize + 2,
            "N app runs, the own mutant and one independent"
        );
        // The record names the matrix it drew from, kept beside it.
        let kept = std::fs::read(dir.join(&s.matrix.path)).expect("the matrix is kept");
        assert_eq!(
            rec.spec.matrix_sha256.as_deref(),
            Some(gauntlet::hash::sha256(&kept).as_str())
        );
        assert!(gauntlet::record::rescore::rescore_file(&dir.join("record.json")).agrees());
        // A matrix rewritten to drop the drawn mutant no longer supports the draw.
        let mut m: serde_json::Value = serde_json::from_slice(&kept).expect("json");
        for cell in m["cells"].as_array_mut().expect("cells") {
            if cell["test"] == capability && cell["mutant"] == other {
                cell["end"]["exit_code"] = 1.into();
            }
        }
        std::fs::write(
            dir.join(&s.matrix.path),
            serde_json::to_vec(&m).expect("json"),
        )
        .expect("rewrite");
        let row = gauntlet::record::rescore::rescore_file(&dir.join("record.json"));
        assert!(
            !row.agrees(),
            "{capability}: a rewritten matrix must fail rescore"
        );
        match &row.derived {
            Ok(v) => assert_eq!(v.outcome, Outcome::FalseVerification, "{}", v.reason),
            Err(e) => panic!("{e}"),
        }
    }
}
