//! `gauntlet tells`: every app and mutant started as the gate starts them, probed from
//! inside the gate's sandbox, compared. Every shipped app that is not superseded has no
//! tell; the old `cli-tally` (whose usage line echoes `--mutant <capability>` on an
//! unknown flag), the old `ext-wordbadge` (whose mutants' edited lines a test can pin)
//! and a Python CLI whose mutants name themselves in `--help`
//! (`tests/fixtures/apps/py-words`) are caught, each by the probe that shows it.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::support;

/// `gauntlet tells ARGS --json <tmp>` over the apps in `apps_dir`: its exit code, its
/// stdout and stderr, and the JSON report (Null when none was written).
fn tells(apps_dir: &Path, args: &[&str]) -> (Option<i32>, String, Value) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let json = tmp.path().join("tells.json");
    let out = Command::new(support::bin("gauntlet"))
        .arg("tells")
        .args(args)
        .arg("--json")
        .arg(&json)
        .env("GAUNTLET_APPS_DIR", apps_dir)
        .env_remove("CARGO")
        .env_remove("GAUNTLET_CONFIG")
        .output()
        .expect("gauntlet tells runs");
    let text = format!(
        "{}\n--- stderr ---\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let report = std::fs::read(&json)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(Value::Null);
    (out.status.code(), text, report)
}

fn apps(report: &Value) -> Vec<&Value> {
    report["apps"]
        .as_array()
        .map(|a| a.iter().collect())
        .unwrap_or_default()
}

/// The findings of `app` with `status`, as (mutant, class, probe, field, app value,
/// mutant value).
fn findings<'a>(app: &'a Value, status: &str) -> Vec<[&'a str; 6]> {
    app["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| f["status"] == status)
        .map(|f| {
            [
                f["mutant"].as_str().unwrap_or(""),
                f["class"].as_str().unwrap_or(""),
                f["probe"].as_str().unwrap_or(""),
                f["field"].as_str().unwrap_or(""),
                f["app_values"][0].as_str().unwrap_or(""),
                f["mutant_value"].as_str().unwrap_or(""),
            ]
        })
        .collect()
}

/// A temporary apps directory holding a copy of the shipped app `name` alone, without
/// its `superseded_by` (which would need its newer version beside it; `app.json` is not
/// hashed, so the copy is the same frozen app).
fn alone(name: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join(name);
    support::copy_dir(&support::root().join("apps").join(name), &dir);
    let manifest = dir.join("app.json");
    let mut json: Value =
        serde_json::from_slice(&std::fs::read(&manifest).expect("app.json")).expect("json");
    if let Some(m) = json.as_object_mut() {
        m.remove("superseded_by");
    }
    std::fs::write(&manifest, serde_json::to_vec_pretty(&json).expect("json")).expect("write");
    tmp
}

/// A temporary apps directory holding a copy of `tests/fixtures/apps/py-words`.
fn py_words() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("tempdir");
    support::copy_dir(
        &support::root().join("tests/fixtures/apps/py-words"),
        &tmp.path().join("py-words"),
    );
    tmp
}

#[test]
fn every_shipped_app_that_is_not_superseded_has_no_tell() {
    let dir = support::root().join("apps");
    let shipped = gauntlet::plan::load_apps_checked(&dir).expect("the apps load");
    let (code, text, report) = tells(&dir, &[]);
    let probed: Vec<&str> = apps(&report)
        .iter()
        .filter_map(|a| a["app"].as_str())
        .collect();
    let expected: Vec<&str> = shipped
        .iter()
        .filter(|a| a.app.superseded_by.is_none())
        .map(|a| a.app.name.as_str())
        .collect();
    assert_eq!(probed, expected, "superseded apps are skipped:\n{text}");
    for a in apps(&report) {
        let name = a["app"].as_str().unwrap_or("?");
        assert!(a["error"].is_null(), "{name}: {}\n{text}", a["error"]);
        assert_eq!(
            findings(a, "tell"),
            Vec::<[&str; 6]>::new(),
            "{name} has tells:\n{text}"
        );
        // The probes saw the app, and every mutant was compared on what they saw.
        let compared = a["compared"].as_u64().unwrap_or(0);
        assert!(
            compared >= 50,
            "{name}: only {compared} observations\n{text}"
        );
        let mutants = a["mutants"].as_array().map_or(0, Vec::len);
        let Some(loaded) = shipped.iter().find(|l| l.app.name == name) else {
            panic!("{name} is not an app of {}", dir.display());
        };
        let verifiable = loaded
            .corpus
            .capabilities
            .iter()
            .filter(|c| c.kind.is_verifiable())
            .count();
        assert_eq!(mutants, verifiable, "{name}");
        assert_eq!(
            a["timing"].as_array().map_or(0, Vec::len),
            verifiable + 1,
            "{name}: the app's samples and each mutant's"
        );
    }
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("no tells"), "{text}");
}

#[test]
fn the_old_cli_tally_names_its_mutant_in_the_usage_line_of_an_unknown_flag() {
    // cli-tally alone in an apps directory: what else is under apps/ is not this test's.
    let apps_dir = alone("cli-tally");
    // Named, so probed (it is superseded in apps/).
    let (code, text, report) = tells(apps_dir.path(), &["cli-tally", "--runs", "2"]);
    assert_eq!(code, Some(1), "a tell exits 1:\n{text}");
    let [app] = apps(&report)[..] else {
        panic!("one app probed:\n{text}");
    };
    assert_eq!(app["app"], "cli-tally");
    let tells = findings(app, "tell");
    for m in super::app_tally::MUTANTS {
        let found = tells.iter().find(|t| {
            t[0] == m
                && t[1] == "text"
                && t[2] == "$APP_BIN --tells-no-such-flag"
                && t[3] == "stderr"
        });
        let Some(t) = found else {
            panic!("no text tell of the unknown-flag probe on the mutant of `{m}`:\n{text}");
        };
        assert!(
            t[5].contains("--mutant <CAPABILITY>") && !t[4].contains("--mutant"),
            "{t:?}"
        );
    }
    assert!(
        text.contains("$APP_BIN --tells-no-such-flag stderr")
            && text.contains("tell(s) in cli-tally"),
        "the table names the probe:\n{text}"
    );
}

/// `apps/ext-wordbadge`: each mutant edits one constant on a line of its own, so a test
/// pinning that line (`tests/fixtures/agents/hostile/source-pin.sh`) fails on its mutant
/// and passes on every independent one. Its bytes are tells, not answered by specificity.
/// (Reads the app's independence matrix, which is derived with Chromium when not cached.)
#[test]
fn the_old_ext_wordbadge_hands_over_lines_a_test_can_pin() {
    if gauntlet::world::browser::chromium_available().is_none() {
        eprintln!("skipped: no Chromium to derive ext-wordbadge's independence matrix with");
        return;
    }
    let apps_dir = alone("ext-wordbadge");
    let (code, text, report) = tells(apps_dir.path(), &["ext-wordbadge", "--runs", "2"]);
    assert_eq!(code, Some(1), "a tell exits 1:\n{text}");
    let [app] = apps(&report)[..] else {
        panic!("one app probed:\n{text}");
    };
    let notes: Vec<(&str, &str, &str)> = app["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| f["status"] == "tell")
        .map(|f| {
            (
                f["mutant"].as_str().unwrap_or(""),
                f["field"].as_str().unwrap_or(""),
                f["note"].as_str().unwrap_or(""),
            )
        })
        .collect();
    for (mutant, file, constant) in [
        ("exact-count", "content.js", "WORD_SEPARATOR"),
        ("decoy-exclusion", "content.js", "DECOY_SELECTOR"),
        ("live-update", "content.js", "WATCH_CHANGES"),
        ("empty-page", "worker.js", "ZERO_TEXT"),
    ] {
        let found = notes
            .iter()
            .find(|(m, field, _)| *m == mutant && *field == format!("bytes extension/{file}"));
        let Some((_, _, note)) = found else {
            panic!("no artifact-bytes tell of {file} on the mutant of `{mutant}`:\n{text}");
        };
        assert!(
            note.contains("pins line")
                && note.contains(constant)
                && note.contains("verified always"),
            "{note}"
        );
    }
    assert!(
        notes
            .iter()
            .all(|(_, field, _)| field.starts_with("bytes ")),
        "{notes:?}"
    );
}

#[test]
fn a_python_cli_whose_mutants_name_themselves_in_help_is_caught() {
    let dir = py_words();
    let (code, text, report) = tells(dir.path(), &[]);
    assert_eq!(code, Some(1), "a tell exits 1:\n{text}");
    let [app] = apps(&report)[..] else {
        panic!("one app probed:\n{text}");
    };
    assert_eq!(app["app"], "py-words");
    assert_eq!(app["words"], serde_json::json!(["count", "upper"]));
    let tells = findings(app, "tell");
    for m in ["count", "upper"] {
        let help = tells
            .iter()
            .find(|t| t[0] == m && t[1] == "text" && t[2] == "$APP_BIN --help" && t[3] == "stdout");
        let Some(t) = help else {
            panic!("no text tell of `--help` on the mutant of `{m}`:\n{text}");
        };
        assert!(t[5].contains("mutant") && !t[4].contains("mutant"), "{t:?}");
    }
    // And nothing else: the fixture's only tell is its help text (`-h` is the same).
    let elsewhere: Vec<_> = tells
        .iter()
        .filter(|t| !matches!(t[2], "$APP_BIN --help" | "$APP_BIN -h"))
        .collect();
    assert!(elsewhere.is_empty(), "{elsewhere:?}\n{text}");
}

#[test]
fn an_app_that_cannot_start_is_an_error_naming_it_and_the_cause() {
    let dir = py_words();
    let app_json = dir.path().join("py-words/app.json");
    let manifest = std::fs::read_to_string(&app_json).expect("app.json");
    std::fs::write(
        &app_json,
        manifest.replace("\"python3\"", "\"no-such-interpreter\""),
    )
    .expect("write");
    let (code, text, report) = tells(dir.path(), &[]);
    assert_eq!(code, Some(2), "{text}");
    assert!(
        text.contains("error: app `py-words`") && text.contains("no-such-interpreter"),
        "{text}"
    );
    let error = apps(&report)
        .first()
        .and_then(|a| a["error"].as_str())
        .unwrap_or_default()
        .to_string();
    assert!(error.contains("no-such-interpreter"), "{error}");
}
