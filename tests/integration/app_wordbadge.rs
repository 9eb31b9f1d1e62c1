//! The frozen app `ext-wordbadge` against its own data: the loader accepts it, its hash
//! (which covers the extension's files) is current, its server serves the test pages,
//! and `--extension-out` writes a valid Manifest V3 extension — the sources verbatim
//! for the real app, and for each mutant the same files with exactly one line of one
//! file changed. Started as the harness starts it (`world::target::Target`), it hands
//! over both `APP_URL` and a populated `EXTENSION_DIR`.
//!
//! Counting words and setting the badge happen in Chromium; the scripted flows' test
//! flows (checked here for form only) exercise that through `gauntlet flow run`.

use std::collections::BTreeMap;
use std::path::Path;

use gauntlet::spec::Modality;
use gauntlet::world::target::{Locator, Target};
use serde_json::Value;

use super::app_notes::{
    app_dir, assert_refused, claimed_files, load_frozen, test_flow_problems, RunningApp,
};

/// An app's binary, found at run time (in an extracted nextest archive, when run from
/// one), never at a path fixed when this test was built.
pub(super) fn bin(app: &str) -> String {
    crate::support::bin(app).display().to_string()
}

const APP: &str = "ext-wordbadge";

/// Capabilities that have a mutant, in corpus order.
const MUTANTS: [&str; 4] = [
    "exact-count",
    "decoy-exclusion",
    "live-update",
    "empty-page",
];

/// Every file of a directory, by name.
pub(super) fn read_dir_files(dir: &Path) -> BTreeMap<String, String> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) => panic!("read_dir {}: {e}", dir.display()),
    };
    entries
        .filter_map(Result::ok)
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(e.path())
                .unwrap_or_else(|err| panic!("read {}: {err}", e.path().display()));
            (name, text)
        })
        .collect()
}

/// Write the extension as `app`'s binary does for `mutant` and return its files.
pub(super) fn written_by(app: &str, mutant: Option<&str>) -> BTreeMap<String, String> {
    let tmp = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => panic!("tempdir: {e}"),
    };
    let out = tmp.path().join("nested/ext");
    let out_arg = out.to_string_lossy().into_owned();
    let mut args = vec!["--extension-out", out_arg.as_str()];
    if let Some(m) = mutant {
        args.extend(["--mutant", m]);
    }
    // The listening line is printed only once the extension is on disk.
    let _app = RunningApp::start(&bin(app), &args);
    read_dir_files(&out)
}

fn written(mutant: Option<&str>) -> BTreeMap<String, String> {
    written_by(APP, mutant)
}

/// A valid MV3 extension: the manifest parses, and every file it names exists.
pub(super) fn assert_valid_mv3(files: &BTreeMap<String, String>) {
    let Some(manifest) = files.get("manifest.json") else {
        panic!("no manifest.json in {:?}", files.keys());
    };
    let m: Value = match serde_json::from_str(manifest) {
        Ok(v) => v,
        Err(e) => panic!("manifest.json: {e}"),
    };
    assert_eq!(m["manifest_version"], 3);
    for key in ["name", "version", "description"] {
        assert!(m[key].is_string(), "manifest.{key}");
    }
    assert!(
        m["action"].is_object(),
        "an action, whose badge is the point"
    );
    let worker = m["background"]["service_worker"]
        .as_str()
        .unwrap_or_default();
    assert!(
        files.contains_key(worker),
        "service worker {worker:?} missing"
    );
    let scripts = m["content_scripts"].as_array().cloned().unwrap_or_default();
    assert!(!scripts.is_empty(), "no content script");
    for s in &scripts {
        for js in s["js"].as_array().cloned().unwrap_or_default() {
            let js = js.as_str().unwrap_or_default();
            assert!(files.contains_key(js), "content script {js:?} missing");
        }
        let matches = s["matches"].as_array().cloned().unwrap_or_default();
        assert!(
            matches.iter().any(|p| p == "http://*/*"),
            "content script must run on the loopback pages"
        );
    }
    assert!(
        m.get("permissions").is_none(),
        "the badge needs no permission"
    );
    assert!(
        files
            .get(worker)
            .is_some_and(|w| w.contains("setBadgeText({ tabId")),
        "badge per tab"
    );
}

#[test]
fn loader_accepts_ext_wordbadge_and_its_hash_covers_the_extension() {
    loads_with_its_extension_hashed(APP);
}

/// `app` loads as frozen with its extension in the content hash, its capabilities are
/// the extension's, and every flow's test drives the badge in a browser.
pub(super) fn loads_with_its_extension_hashed(app: &str) {
    let loaded = load_frozen(app, Modality::BrowserExtension);
    assert!(loaded.app.content.contains(&"extension".to_string()));
    let ids: Vec<&str> = loaded
        .corpus
        .capabilities
        .iter()
        .map(|c| c.id.as_str())
        .collect();
    let mut expected = MUTANTS.to_vec();
    expected.push("unobtrusive-badge");
    assert_eq!(ids, expected);
    for (cap, text) in claimed_files(&loaded, "gauntlet flow run check.json") {
        let problems = test_flow_problems(&text);
        assert!(problems.is_empty(), "{cap}: {problems:?}");
        assert!(
            text.contains("\"badge\""),
            "{cap}: an extension's test reads its badge"
        );
    }
}

#[test]
fn the_real_extension_is_written_verbatim_and_is_valid_mv3() {
    let files = written(None);
    let sources = read_dir_files(&app_dir("ext-wordbadge").join("extension"));
    assert_eq!(files, sources);
    assert_valid_mv3(&files);
}

#[test]
fn each_mutant_changes_exactly_one_line_of_one_file() {
    let real = written(None);
    let mut changed_lines = Vec::new();
    for m in MUTANTS {
        let files = written(Some(m));
        assert_valid_mv3(&files);
        assert_eq!(
            files.keys().collect::<Vec<_>>(),
            real.keys().collect::<Vec<_>>(),
            "{m}"
        );
        let diffs: Vec<(String, String, String)> = real
            .iter()
            .flat_map(|(name, text)| {
                let other = files.get(name).cloned().unwrap_or_default();
                assert_eq!(text.lines().count(), other.lines().count(), "{m}: {name}");
                text.lines()
                    .zip(other.lines())
                    .filter(|(a, b)| a != b)
                    .map(|(a, b)| (name.clone(), a.to_string(), b.to_string()))
                    .collect::<Vec<_>>()
            })
            .collect();
        assert_eq!(diffs.len(), 1, "{m}: {diffs:?}");
        changed_lines.push(diffs[0].clone());
    }
    // Four different bugs, not one bug four times.
    let mut distinct = changed_lines.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), MUTANTS.len(), "{changed_lines:?}");
}

#[test]
fn ambiguous_and_bad_mutants_are_refused_and_write_nothing() {
    refuses_ambiguous_and_bad_mutants(APP);
}

/// `app` refuses an ambiguous or unknown mutant, and a malformed command line, and
/// writes no extension for them.
pub(super) fn refuses_ambiguous_and_bad_mutants(app: &str) {
    let bin = bin(app);
    let tmp = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => panic!("tempdir: {e}"),
    };
    let out = tmp.path().join("ext");
    let out_arg = out.to_string_lossy().into_owned();
    for m in ["unobtrusive-badge", "no-such-capability"] {
        assert_refused(&bin, &["--extension-out", &out_arg, "--mutant", m]);
        assert!(!out.exists(), "--mutant {m} wrote {}", out.display());
    }
    assert_refused(&bin, &["--mutant"]);
    assert_refused(&bin, &["--port", "x"]);
}

#[test]
fn the_server_serves_the_test_pages() {
    serves_the_test_pages(APP);
}

/// `app`'s page server links and serves every test page, and nothing else.
pub(super) fn serves_the_test_pages(app: &str) {
    let app = RunningApp::start(&bin(app), &[]);
    let client = reqwest::blocking::Client::new();
    let get = |path: &str| -> (u16, String) {
        match client.get(format!("{}{path}", app.url)).send() {
            Ok(r) => (r.status().as_u16(), r.text().unwrap_or_default()),
            Err(e) => panic!("GET {path}: {e}"),
        }
    };
    let (s, index) = get("/");
    assert_eq!(s, 200);
    for (path, holds) in [
        (
            "/plain",
            "The quick brown fox jumps over the lazy dog, a well-known pangram.",
        ),
        (
            "/decoy",
            "<p data-decoy>these seven words should never be counted</p>",
        ),
        (
            "/decoy",
            "<div aria-hidden=\"true\">five hidden words right here</div>",
        ),
        (
            "/dynamic",
            "<button id=\"grow\" type=\"button\">Add words</button>",
        ),
        ("/empty", "<main></main>"),
    ] {
        assert!(
            index.contains(&format!("href=\"{path}\"")),
            "index does not link {path}"
        );
        let (s, html) = get(path);
        assert_eq!(s, 200, "{path}");
        assert!(html.contains(holds), "{path} lacks {holds:?}");
    }
    assert_eq!(get("/nope").0, 404);
    let post = client.post(format!("{}/plain", app.url)).send();
    assert_eq!(post.map(|r| r.status().as_u16()).ok(), Some(404));
}

/// Started as the harness starts it, the app hands over a URL and an extension that is
/// already on disk, and a mutant's extension is the mutant's.
#[test]
fn the_harness_target_hands_over_url_and_extension_dir() {
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
        let zero = files
            .get("worker.js")
            .is_some_and(|w| w.contains("const ZERO_TEXT = \"0\";"));
        assert_eq!(zero, mutant.is_none(), "{label}: {ext}");
        rt.block_on(target.stop(tmp.path()));
    }
}
