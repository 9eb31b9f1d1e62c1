//! The frozen app `ext-wordbadge-2`, the second version of `ext-wordbadge`: everything
//! `app_wordbadge` checks of the first (loader, hash, the corpus and flows, the test
//! pages, refusals, a valid Manifest V3 extension handed over by the harness's target),
//! and what the new version is for. The first wrote the same extension on every start
//! and each mutant changed one line of it, so a test could pin that line and never load
//! the extension. This one writes its scripts anew on every start: no script and no
//! line of one is the same on two starts, the app's or a mutant's, while what the
//! scripts do (run by node with the browser's APIs stubbed, `behaviour.js`) is the
//! app's on every start of the app and differs on a mutant in its capability alone.
//!
//! Counting words and setting the badge happen in Chromium; the scripted flows' test
//! flows (checked here for form only) exercise that through `gauntlet flow run`.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use gauntlet::spec::Modality;
use gauntlet::world::target::{Locator, Target};
use serde_json::{json, Value};

use super::app_notes::{app_dir, load_frozen};
use super::app_wordbadge::{
    assert_valid_mv3, loads_with_its_extension_hashed, read_dir_files,
    refuses_ambiguous_and_bad_mutants, serves_the_test_pages, written_by,
};

const APP: &str = "ext-wordbadge-2";
const OLD: &str = "ext-wordbadge";

/// Capabilities that have a mutant, in corpus order.
const MUTANTS: [&str; 4] = [
    "exact-count",
    "decoy-exclusion",
    "live-update",
    "empty-page",
];

/// The extension's file names, for the app and every mutant.
const FILES: [&str; 3] = ["content.js", "manifest.json", "worker.js"];

/// Runs written scripts in node with stubbed browser and Chrome APIs (the app's own).
const BEHAVIOUR: &str = include_str!("../../apps/ext-wordbadge-2/src/behaviour.js");

/// What each extension does under `behaviour.js`, in order; `None` (the reason
/// printed) when node is not on PATH.
fn behaviours(extensions: &[&BTreeMap<String, String>]) -> Option<Vec<Value>> {
    let input: Vec<Value> = extensions
        .iter()
        .map(|f| json!({"content": f.get("content.js"), "worker": f.get("worker.js")}))
        .collect();
    let child = Command::new("node")
        .arg("-e")
        .arg(BEHAVIOUR)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            eprintln!("skipped: node is not on PATH, so the extension's scripts are not run");
            return None;
        }
        Err(e) => panic!("node: {e}"),
    };
    if let Some(mut stdin) = child.stdin.take() {
        let text = serde_json::to_string(&input).unwrap_or_default();
        stdin
            .write_all(text.as_bytes())
            .unwrap_or_else(|e| panic!("node stdin: {e}"));
    }
    let out = child
        .wait_with_output()
        .unwrap_or_else(|e| panic!("node: {e}"));
    assert!(
        out.status.success(),
        "node: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        let start: String = String::from_utf8_lossy(&out.stdout)
            .chars()
            .take(400)
            .collect();
        panic!("node's answer: {e}: {start}…")
    });
    assert_eq!(got.len(), extensions.len());
    Some(got)
}

/// What the app does under `behaviour.js` (its text: 7 words, `well-known` one of them).
fn app_behaviour() -> Value {
    json!({
        "words": 7,
        "decoys": ["[aria-hidden=true]", "[data-decoy]"],
        "watch": 100,
        "recorded": ["wordbadge"],
        "zero": "0",
        "badges": [[7, "5"]],
        "color": "#6b7280",
        "foreign": false,
    })
}

/// What `mutant` (none: the app) must do: the app's behaviour, but for its capability.
fn expected_behaviour(mutant: Option<&str>) -> Value {
    let mut want = app_behaviour();
    match mutant {
        None => {}
        Some("exact-count") => want["words"] = json!(8),
        Some("decoy-exclusion") => want["decoys"] = json!(["[data-decoy]"]),
        Some("live-update") => want["watch"] = Value::Null,
        Some("empty-page") => want["zero"] = json!(""),
        Some(other) => panic!("no mutant {other}"),
    }
    want
}

#[test]
fn loader_accepts_ext_wordbadge_2_and_its_hash_covers_the_extension() {
    loads_with_its_extension_hashed(APP);
}

/// The corpus the agent is shown is the first version's, but for the app's name; so are
/// the flows, which drive the extension in Chromium and never read its sources.
#[test]
fn ext_wordbadge_2_shows_agents_what_ext_wordbadge_showed() {
    let read = |app: &str, file: &str| -> Value {
        let path = app_dir(app).join(file);
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    };
    let mut old = read(OLD, "corpus.json");
    let mut new = read(APP, "corpus.json");
    assert_eq!(old["app"], OLD);
    assert_eq!(new["app"], APP);
    old["app"] = Value::Null;
    new["app"] = Value::Null;
    assert_eq!(old, new, "corpus.json differs beyond `app`");
    for cap in MUTANTS.iter().chain(&["unobtrusive-badge"]) {
        let flow = format!("flows/{cap}.json");
        assert_eq!(read(OLD, &flow), read(APP, &flow), "{flow}");
    }
}

/// Starts of the app and of every mutant: each writes a valid MV3 extension with the
/// same file names and the first version's manifest, byte for byte; no two starts
/// write the same script, nor share a single line of one, so no pin of a line (or of a
/// file) taken on one start holds on another; and what the scripts do is the app's on
/// every start of the app, and differs on a mutant's in its own capability alone.
#[test]
fn every_start_writes_new_scripts_that_do_the_same() {
    let old_manifest = std::fs::read_to_string(app_dir(OLD).join("extension/manifest.json"))
        .unwrap_or_else(|e| panic!("{OLD} manifest: {e}"));
    let mut starts: Vec<(Option<&str>, String, BTreeMap<String, String>)> = Vec::new();
    for i in 0..4 {
        starts.push((None, format!("app #{i}"), written_by(APP, None)));
    }
    for m in MUTANTS {
        for i in 0..2 {
            starts.push((Some(m), format!("{m} #{i}"), written_by(APP, Some(m))));
        }
    }
    for (_, label, files) in &starts {
        assert_eq!(files.keys().collect::<Vec<_>>(), FILES, "{label}");
        assert_valid_mv3(files);
        assert_eq!(
            files["manifest.json"], old_manifest,
            "{label}: manifest.json"
        );
    }
    let mut shared = Vec::new();
    for (i, (_, a_label, a)) in starts.iter().enumerate() {
        for (_, b_label, b) in &starts[i + 1..] {
            for script in ["content.js", "worker.js"] {
                assert_ne!(a[script], b[script], "{script}: {a_label} and {b_label}");
                let lines: BTreeSet<&str> = a[script].lines().collect();
                if let Some(line) = b[script].lines().find(|l| lines.contains(l)) {
                    shared.push(format!("{script}: {a_label} and {b_label}: {line:?}"));
                }
            }
        }
    }
    assert!(shared.is_empty(), "lines shared:\n{}", shared.join("\n"));
    let extensions: Vec<&BTreeMap<String, String>> = starts.iter().map(|s| &s.2).collect();
    let Some(got) = behaviours(&extensions) else {
        return;
    };
    let wrong: Vec<String> = starts
        .iter()
        .zip(&got)
        .filter(|((m, _, _), g)| expected_behaviour(*m) != **g)
        .map(|((m, label, _), g)| format!("{label}: {g}\n  expected {}", expected_behaviour(*m)))
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn ext_wordbadge_2_refuses_ambiguous_and_bad_mutants_and_writes_nothing() {
    refuses_ambiguous_and_bad_mutants(APP);
}

#[test]
fn ext_wordbadge_2_serves_the_test_pages() {
    serves_the_test_pages(APP);
}

/// Started as the harness starts it, the app hands over a URL and an extension that is
/// already on disk, and a mutant's extension does what the mutant does.
#[test]
fn ext_wordbadge_2_target_hands_over_url_and_extension_dir() {
    let loaded = load_frozen(APP, Modality::BrowserExtension);
    let tmp = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => panic!("tempdir: {e}"),
    };
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => panic!("runtime: {e}"),
    };
    let mut written = Vec::new();
    for (mutant, label) in [(None, "app"), (Some("empty-page"), "mutant")] {
        let locators = tmp.path().join(format!("{label}-target"));
        let mut target = match rt.block_on(Target::start(
            &loaded.app,
            mutant,
            &locators,
            tmp.path(),
            label,
        )) {
            Ok(t) => t,
            Err(e) => panic!("Target::start: {e}"),
        };
        let Locator::Url(url) = target.locator(false) else {
            panic!("an extension app is handed over by URL");
        };
        assert!(url.starts_with("http://127.0.0.1:"), "{url}");
        // Sealed processes see it at the same path for the app and every mutant.
        assert_eq!(
            target.env().get("EXTENSION_DIR").map(String::as_str),
            Some("/run/gauntlet/target/extension")
        );
        let Some(ext) = target.host_env().get("EXTENSION_DIR").cloned() else {
            panic!("no EXTENSION_DIR");
        };
        let files = read_dir_files(Path::new(&ext));
        assert_valid_mv3(&files);
        written.push((mutant, files));
        rt.block_on(target.stop(tmp.path()));
    }
    let extensions: Vec<&BTreeMap<String, String>> = written.iter().map(|w| &w.1).collect();
    if let Some(got) = behaviours(&extensions) {
        for ((mutant, _), g) in written.iter().zip(&got) {
            assert_eq!(*g, expected_behaviour(*mutant), "{mutant:?}");
        }
    }
}
