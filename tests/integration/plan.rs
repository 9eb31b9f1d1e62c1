//! Planning: names, determinism, list-time validation of bad data, `--exact` misses.

use std::path::Path;

use gauntlet::config::Config;
use gauntlet::plan::load_apps_checked;
use gauntlet::suites::qa::plan::plan as plan_qa;

use crate::support::{self, root};

fn temp_apps() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    support::copy_dir(
        &root().join("apps/api-ledger"),
        &dir.path().join("api-ledger"),
    );
    dir
}

#[test]
fn the_ledger_plans_six_named_trials_deterministically() {
    let apps = load_apps_checked(&root().join("apps")).expect("apps load");
    let cfg = Config::default();
    let names: Vec<String> = plan_qa(&apps, &cfg, None)
        .into_iter()
        .map(|p| p.name)
        .collect();
    let ledger: Vec<&String> = names
        .iter()
        .filter(|n| n.starts_with("qa::api-ledger::"))
        .collect();
    assert_eq!(
        ledger,
        [
            "qa::api-ledger::health",
            "qa::api-ledger::record-transaction",
            "qa::api-ledger::balance",
            "qa::api-ledger::reject-invalid-amount",
            "qa::api-ledger::reject-unknown-id",
            "qa::api-ledger::prompt-under-load",
        ]
    );
    let again: Vec<String> = plan_qa(
        &load_apps_checked(&root().join("apps")).expect("apps"),
        &cfg,
        None,
    )
    .into_iter()
    .map(|p| p.name)
    .collect();
    assert_eq!(names, again);
    assert_eq!(names.iter().filter(|n| n.contains("balance")).count(), 1);
}

#[test]
fn a_plan_is_built_from_any_apps_directory() {
    let dir = temp_apps();
    let apps = load_apps_checked(dir.path()).expect("copied app loads");
    assert_eq!(plan_qa(&apps, &Config::default(), None).len(), 6);
}

#[test]
fn a_changed_frozen_app_is_refused_at_list_time() {
    let dir = temp_apps();
    let main = dir.path().join("api-ledger/src/main.rs");
    let mut src = std::fs::read_to_string(&main).expect("src");
    src.push_str("\n// an edit\n");
    std::fs::write(&main, src).expect("write");
    let err = load_apps_checked(dir.path())
        .expect_err("hash mismatch")
        .to_string();
    assert!(
        err.contains("app.json") && err.contains("content_hash"),
        "{err}"
    );
}

#[test]
fn bad_data_fails_at_load_time_naming_file_and_field() {
    // Malformed app.json.
    let dir = temp_apps();
    std::fs::write(
        dir.path().join("api-ledger/app.json"),
        "{\"schema_version\": 1,",
    )
    .expect("w");
    let err = load_apps_checked(dir.path())
        .expect_err("malformed")
        .to_string();
    assert!(err.contains("app.json"), "{err}");

    // A corpus capability with an unknown kind.
    let dir = temp_apps();
    let corpus = dir.path().join("api-ledger/corpus.json");
    let text = std::fs::read_to_string(&corpus).expect("corpus");
    std::fs::write(&corpus, text.replacen("\"feature\"", "\"featur\"", 1)).expect("w");
    let err = gauntlet::spec::load_app(&dir.path().join("api-ledger"))
        .expect_err("kind")
        .to_string();
    assert!(
        err.contains("corpus.json") && err.contains("featur"),
        "{err}"
    );

    // A flow with an unknown step.
    let dir = temp_apps();
    let flow = dir.path().join("api-ledger/flows/health.json");
    std::fs::write(
        &flow,
        r#"{"capability":"health","steps":[{"teleport":{}},{"final":{"text":"x"}}]}"#,
    )
    .expect("w");
    let err = gauntlet::spec::load_app(&dir.path().join("api-ledger"))
        .expect_err("step")
        .to_string();
    assert!(
        err.contains("health.json") && err.contains("teleport"),
        "{err}"
    );

    // A flow for a capability the app does not have.
    let dir = temp_apps();
    std::fs::write(
        dir.path().join("api-ledger/flows/fly.json"),
        r#"{"capability":"fly","steps":[{"final":{"text":"x"}}]}"#,
    )
    .expect("w");
    let err = gauntlet::spec::load_app(&dir.path().join("api-ledger"))
        .expect_err("cap")
        .to_string();
    assert!(
        err.contains("fly.json") && err.contains("capability"),
        "{err}"
    );
}

#[test]
fn an_exact_filter_that_names_no_trial_fails() {
    let args = libtest_mimic::Arguments {
        exact: true,
        filter: Some("qa::api-ledger::nope".into()),
        ..Default::default()
    };
    let trials = vec![libtest_mimic::Trial::test("qa::api-ledger::health", || {
        Ok(())
    })];
    assert_ne!(
        gauntlet::harness::run(args, trials),
        std::process::ExitCode::SUCCESS
    );
    let args = libtest_mimic::Arguments {
        exact: true,
        filter: Some("qa::api-ledger::health".into()),
        ..Default::default()
    };
    let trials = vec![libtest_mimic::Trial::test("qa::api-ledger::health", || {
        Ok(())
    })];
    assert_eq!(
        gauntlet::harness::run(args, trials),
        std::process::ExitCode::SUCCESS
    );
}

#[test]
fn repeats_give_one_stable_trial_per_repeat() {
    let apps = load_apps_checked(&root().join("apps")).expect("apps load");
    let cfg = Config {
        repeats: 3,
        ..Config::default()
    };
    let plan = plan_qa(&apps, &cfg, None);
    let balance: Vec<&str> = plan
        .iter()
        .filter(|p| {
            p.unit
                .get::<gauntlet::suites::qa::QaUnit>()
                .is_some_and(|u| &*u.capability == "balance")
                && p.name.starts_with("qa::api-ledger::")
        })
        .map(|p| p.name.as_str())
        .collect();
    assert_eq!(
        balance,
        [
            "qa::api-ledger::balance::r1",
            "qa::api-ledger::balance::r2",
            "qa::api-ledger::balance::r3"
        ]
    );
    assert_eq!(
        plan.iter()
            .filter(|p| p.name.starts_with("qa::api-ledger::"))
            .count(),
        18
    );
}

/// `cli-tally` is superseded by `cli-tally-2`: it still loads (published runs and the
/// challenge `tally-report` act on it), but the qa suite plans the newer version's
/// trials in its place, so the suite keeps its 23 trials. So is `ext-wordbadge`, by
/// `ext-wordbadge-2`.
#[test]
fn a_superseded_app_loads_but_its_newer_version_is_planned_in_its_place() {
    let apps = load_apps_checked(&root().join("apps")).expect("apps load");
    let superseded_by = |name: &str| {
        apps.iter()
            .find(|a| a.app.name == name)
            .unwrap_or_else(|| panic!("{name} is not loaded"))
            .app
            .superseded_by
            .clone()
    };
    assert_eq!(superseded_by("cli-tally"), Some("cli-tally-2".into()));
    assert_eq!(superseded_by("cli-tally-2"), None);
    assert_eq!(
        superseded_by("ext-wordbadge"),
        Some("ext-wordbadge-2".into())
    );
    assert_eq!(superseded_by("ext-wordbadge-2"), None);
    let names: Vec<String> = plan_qa(&apps, &Config::default(), None)
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(names.len(), 23, "{names:?}");
    assert!(
        !names
            .iter()
            .any(|n| n.starts_with("qa::cli-tally::") || n.starts_with("qa::ext-wordbadge::")),
        "{names:?}"
    );
    assert_eq!(
        names
            .iter()
            .filter(|n| n.starts_with("qa::ext-wordbadge-2::"))
            .count(),
        5,
        "{names:?}"
    );
    let tally: Vec<&str> = names
        .iter()
        .filter(|n| n.starts_with("qa::cli-tally-2::"))
        .map(String::as_str)
        .collect();
    assert_eq!(
        tally,
        [
            "qa::cli-tally-2::version",
            "qa::cli-tally-2::sum",
            "qa::cli-tally-2::stats",
            "qa::cli-tally-2::json-output",
            "qa::cli-tally-2::reject-non-numeric",
            "qa::cli-tally-2::pleasant-output",
        ]
    );
    // The challenge on the superseded app is still planned on it.
    let challenges = gauntlet::suites::challenge::plan::load(
        &root().join("challenges"),
        Some(&root().join("apps")),
    )
    .expect("challenges load");
    let tally_report: Vec<_> =
        gauntlet::suites::challenge::plan::plan(&challenges, &Config::default(), None)
            .into_iter()
            .filter(|t| t.name.starts_with("challenge::tally-report::"))
            .collect();
    assert_eq!(tally_report.len(), 3);
    for t in &tally_report {
        assert!(
            !t.skip.as_deref().unwrap_or("").contains("is not under"),
            "{}: {:?}",
            t.name,
            t.skip
        );
    }
}

/// Rewrite `field` of `<dir>/<app>/app.json` (`None`: remove it).
fn set_manifest_field(dir: &Path, app: &str, field: &str, value: Option<serde_json::Value>) {
    let file = dir.join(app).join("app.json");
    let text = std::fs::read_to_string(&file).expect("app.json");
    let mut m: serde_json::Value = serde_json::from_str(&text).expect("app.json is JSON");
    let obj = m.as_object_mut().expect("an object");
    match value {
        Some(v) => obj.insert(field.into(), v),
        None => obj.remove(field),
    };
    std::fs::write(&file, serde_json::to_string_pretty(&m).expect("json")).expect("write");
}

#[test]
fn superseded_by_names_another_app_that_is_loaded_beside_it() {
    for (value, says) in [
        ("api-ledger", "the app itself"),
        ("Api Ledger", "is not an id"),
        ("api-ledger-2", "which is not an app under"),
    ] {
        let dir = temp_apps();
        set_manifest_field(
            dir.path(),
            "api-ledger",
            "superseded_by",
            Some(value.into()),
        );
        let err = load_apps_checked(dir.path()).expect_err(value).to_string();
        assert!(
            err.contains("api-ledger/app.json")
                && err.contains("superseded_by")
                && err.contains(says),
            "{value}: {err}"
        );
    }
    // Not a string.
    let dir = temp_apps();
    set_manifest_field(dir.path(), "api-ledger", "superseded_by", Some(2.into()));
    let err = load_apps_checked(dir.path())
        .expect_err("a number")
        .to_string();
    assert!(err.contains("api-ledger/app.json"), "{err}");

    // The superseded app alone, without its newer version, is refused; with it, only
    // the newer version is planned.
    let dir = tempfile::tempdir().expect("tempdir");
    support::copy_dir(
        &root().join("apps/cli-tally"),
        &dir.path().join("cli-tally"),
    );
    let err = load_apps_checked(dir.path())
        .expect_err("no cli-tally-2")
        .to_string();
    assert!(
        err.contains("cli-tally/app.json")
            && err.contains("superseded_by")
            && err.contains("`cli-tally-2`"),
        "{err}"
    );
    support::copy_dir(
        &root().join("apps/cli-tally-2"),
        &dir.path().join("cli-tally-2"),
    );
    let apps = load_apps_checked(dir.path()).expect("both versions load");
    assert_eq!(apps.len(), 2);
    let plan = plan_qa(&apps, &Config::default(), None);
    assert_eq!(plan.len(), 6);
    assert!(plan.iter().all(|t| t.name.starts_with("qa::cli-tally-2::")));
    // Without the field, both versions are planned.
    set_manifest_field(dir.path(), "cli-tally", "superseded_by", None);
    let apps = load_apps_checked(dir.path()).expect("both versions load");
    assert_eq!(plan_qa(&apps, &Config::default(), None).len(), 12);
}

/// `gauntlet list` in a repository holding the data of some suites only, as a
/// repository that adopts gauntlet does: only those suites plan trials, and a
/// directory a setting names must exist.
#[test]
fn a_repository_plans_only_the_suites_whose_data_it_holds() {
    let copy = |from: &Path, to: &Path| {
        let o = std::process::Command::new("cp")
            .arg("-r")
            .arg(from)
            .arg(to)
            .output()
            .expect("cp");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    let list = |dir: &Path, env: &[(&str, &str)]| {
        let mut cmd = std::process::Command::new(crate::support::bin("gauntlet"));
        for (k, _) in std::env::vars_os() {
            let k = k.to_string_lossy().into_owned();
            if k.starts_with("GAUNTLET_") || k.starts_with("CARGO") {
                cmd.env_remove(&k);
            }
        }
        let o = cmd
            .arg("list")
            .current_dir(dir)
            .envs(env.iter().copied())
            .output()
            .expect("gauntlet list");
        let text =
            String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
        (o.status.code(), text)
    };
    // Apps only: qa's trials, no challenge or probe.
    let apps_only = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(apps_only.path().join("apps")).expect("mkdir");
    copy(
        &root().join("apps/api-ledger"),
        &apps_only.path().join("apps"),
    );
    let (code, text) = list(apps_only.path(), &[]);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("qa::api-ledger::health"), "{text}");
    assert!(
        !text.contains("challenge::") && !text.contains("scorecard::"),
        "{text}"
    );
    // A challenge only: its trials, ignored for want of its app, and saying so.
    let challenge_only = tempfile::tempdir().expect("tempdir");
    let c = challenge_only.path().join("challenges");
    std::fs::create_dir(&c).expect("mkdir");
    for part in ["tally-report", "base-prompt.md", "profiles", "skills"] {
        copy(&root().join("challenges").join(part), &c);
    }
    let (code, text) = list(challenge_only.path(), &[]);
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains("challenge::tally-report::none (ignored: app `cli-tally`: this repository has no apps/ directory)"),
        "{text}"
    );
    assert!(
        !text.contains("qa::") && !text.contains("scorecard::"),
        "{text}"
    );
    // A directory a setting names is not optional.
    let missing = apps_only.path().join("no-such-apps");
    let (code, text) = list(
        apps_only.path(),
        &[("GAUNTLET_APPS_DIR", missing.to_str().expect("utf-8 path"))],
    );
    assert_ne!(code, Some(0), "{text}");
    assert!(text.contains("no-such-apps"), "{text}");
}
