//! The frozen app `browser-notes` against its own data: the loader accepts it, its hash
//! is current, every mutant flag is accepted (the ambiguous one refused), the JSON API
//! the page is built on behaves as the corpus says — and each capability's API-level
//! check holds on the real app, fails on its own mutant and holds on every other one —
//! and the scripted flows' test flows are well-formed (docs/test-flows.md).
//!
//! The browser steps of those test flows need `gauntlet flow run` and Chromium; they
//! are exercised by the qa trials, not here.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, ChildStdout, Command, Output, Stdio};

use gauntlet::evidence::{parse_claims, ClaimStatus, ClaimsFound};
use gauntlet::spec::{self, CapabilityKind, LoadedApp, Modality, ScriptStep};
use serde_json::{json, Value};

/// The app's binary, found at run time (in an extracted nextest archive, when run
/// from one), never at a path fixed when this test was built.
static BIN: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| crate::support::bin("browser-notes").display().to_string());

/// Capabilities that have a mutant, in corpus order.
const MUTANTS: [&str; 5] = [
    "add-note",
    "count-notes",
    "search",
    "delete-note",
    "reject-empty-note",
];

pub fn app_dir(name: &str) -> PathBuf {
    crate::support::root().join("apps").join(name)
}

/// Load an app and check what every frozen app must satisfy: current hash, one script
/// per capability, and a corpus that gives nothing away.
pub fn load_frozen(name: &str, modality: Modality) -> LoadedApp {
    let loaded = match spec::load_app(&app_dir(name)) {
        Ok(l) => l,
        Err(e) => panic!("load_app {name}: {e}"),
    };
    assert_eq!(loaded.app.name, name);
    assert_eq!(
        loaded.app.start,
        gauntlet::spec::app::AppStart::Binary(name.into())
    );
    assert_eq!(loaded.app.modality, modality);
    assert!(loaded.app.frozen, "{name} is not frozen");
    let computed = match spec::app::content_hash(&loaded.app.dir, &loaded.app.content) {
        Ok(h) => h,
        Err(e) => panic!("content_hash: {e}"),
    };
    assert_eq!(
        loaded.app.content_hash, computed,
        "apps/{name}/app.json content_hash is stale; the content now hashes to {computed}"
    );
    let scripts: Vec<&str> = loaded.scripts.keys().map(String::as_str).collect();
    let mut expected: Vec<&str> = loaded.app.capabilities.iter().map(String::as_str).collect();
    expected.sort();
    assert_eq!(scripts, expected, "{name}: one script per capability");
    let text = match std::fs::read_to_string(app_dir(name).join("corpus.json")) {
        Ok(t) => t.to_lowercase(),
        Err(e) => panic!("read corpus.json: {e}"),
    };
    for word in [
        "mutant",
        "flow",
        "check.sh",
        "check.json",
        "gauntlet-claim",
        "scripted",
    ] {
        assert!(!text.contains(word), "{name}/corpus.json mentions `{word}`");
    }
    let ambiguous: Vec<&str> = loaded
        .corpus
        .capabilities
        .iter()
        .filter(|c| c.kind == CapabilityKind::Ambiguous)
        .map(|c| c.id.as_str())
        .collect();
    assert_eq!(
        ambiguous.len(),
        1,
        "{name}: exactly one ambiguous capability"
    );
    assert!(
        loaded
            .corpus
            .capabilities
            .iter()
            .any(|c| c.kind == CapabilityKind::Negative),
        "{name}: a negative path"
    );
    loaded
}

/// Every script's final claim: verified with a test in `<cap>-test` whose command is
/// `command`, or honestly unverified (and without a test) for the ambiguous one.
/// Returns, per verifiable capability, the content of the file the script wrote there.
pub fn claimed_files(loaded: &LoadedApp, command: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for cap in &loaded.corpus.capabilities {
        let Some(script) = loaded.scripts.get(&cap.id) else {
            panic!("{}: no script", cap.id);
        };
        let claim = match parse_claims(script.final_text()) {
            ClaimsFound::One(c) => c,
            other => panic!("{}: final message has no single claim: {other:?}", cap.id),
        };
        assert_eq!(claim.capability, cap.id);
        if cap.kind == CapabilityKind::Ambiguous {
            assert_eq!(claim.status, ClaimStatus::Unverified, "{}", cap.id);
            assert_eq!(claim.test, None, "{}", cap.id);
            continue;
        }
        assert_eq!(claim.status, ClaimStatus::Verified, "{}", cap.id);
        let Some(test) = claim.test else {
            panic!("{}: a verified claim needs a test", cap.id);
        };
        assert_eq!(test.dir, format!("{}-test", cap.id));
        assert_eq!(test.command, command, "{}", cap.id);
        let written: Vec<(&String, &String)> = script
            .tool_steps()
            .iter()
            .filter_map(|s| match s {
                ScriptStep::WriteFile { path, content } => Some((path, content)),
                _ => None,
            })
            .collect();
        let Some((path, content)) = written.first() else {
            panic!("{}: the script writes no test", cap.id);
        };
        assert!(
            path.starts_with(&format!("{}/", test.dir)),
            "{}: {path}",
            cap.id
        );
        let ran = script.tool_steps().iter().any(|s| {
            matches!(s, ScriptStep::Shell { command: c, .. } if *c == format!("cd {} && {}", test.dir, test.command))
        });
        assert!(
            ran,
            "{}: the script never runs its test as the harness will",
            cap.id
        );
        out.push((cap.id.clone(), content.to_string()));
    }
    out
}

/// A test flow must be what docs/test-flows.md fixes: `{"steps": [...]}`, each step
/// exactly one of `http`, `cli`, `browser` (with a known action) and an optional
/// `expect` with known keys. Returns the problems found.
pub fn test_flow_problems(text: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let v: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => return vec![format!("not JSON: {e}")],
    };
    let Some(steps) = v.get("steps").and_then(Value::as_array) else {
        return vec!["no `steps` array".into()];
    };
    if v.as_object().map(|o| o.len()) != Some(1) {
        problems.push("keys other than `steps`".into());
    }
    for (i, step) in steps.iter().enumerate() {
        let Some(obj) = step.as_object() else {
            problems.push(format!("steps[{i}] is not an object"));
            continue;
        };
        let kinds: Vec<&String> = obj.keys().filter(|k| *k != "expect").collect();
        if kinds.len() != 1 {
            problems.push(format!(
                "steps[{i}] has keys {kinds:?}, expected one step kind"
            ));
            continue;
        }
        let body = &obj[kinds[0].as_str()];
        match kinds[0].as_str() {
            "http" => {
                let ok_keys = ["method", "path", "json", "body", "headers"];
                if !body.get("method").is_some_and(Value::is_string)
                    || !body.get("path").is_some_and(Value::is_string)
                    || body
                        .as_object()
                        .is_some_and(|o| o.keys().any(|k| !ok_keys.contains(&k.as_str())))
                {
                    problems.push(format!(
                        "steps[{i}].http is not {{method, path, json?, body?, headers?}}"
                    ));
                }
            }
            "cli" => {
                if !body.get("args").is_some_and(Value::is_array) {
                    problems.push(format!("steps[{i}].cli has no `args` array"));
                }
            }
            "browser" => {
                let action = body
                    .as_object()
                    .and_then(|o| (o.len() == 1).then(|| o.iter().next()).flatten());
                let ok = match action {
                    Some((k, v)) => match k.as_str() {
                        "goto" | "click" | "wait_for" | "text" | "count" => v.is_string(),
                        "type" => {
                            v.get("selector").is_some_and(Value::is_string)
                                && v.get("text").is_some_and(Value::is_string)
                        }
                        "badge" => v.as_object().is_some_and(|o| o.is_empty()),
                        _ => false,
                    },
                    None => false,
                };
                if !ok {
                    problems.push(format!(
                        "steps[{i}].browser is not one known action: {body}"
                    ));
                }
            }
            other => problems.push(format!("steps[{i}]: unknown step kind `{other}`")),
        }
        if let Some(expect) = obj.get("expect") {
            let numbers = ["status", "exit"];
            let strings = [
                "body_contains",
                "stdout_contains",
                "stderr_contains",
                "contains",
                "equals",
                "not_contains",
            ];
            match expect.as_object() {
                Some(e) if !e.is_empty() => {
                    for (k, v) in e {
                        let ok = (numbers.contains(&k.as_str()) && v.is_u64())
                            || (strings.contains(&k.as_str()) && v.is_string());
                        if !ok {
                            problems.push(format!("steps[{i}].expect.{k} = {v} is not allowed"));
                        }
                    }
                }
                _ => problems.push(format!("steps[{i}].expect is not a non-empty object")),
            }
        }
    }
    problems
}

/// An app server running as a child process; killed when dropped so that a failing
/// assertion never leaves a server behind.
pub struct RunningApp {
    child: Child,
    pub url: String,
    // Held open so the app never writes into a closed pipe.
    _stdout: BufReader<ChildStdout>,
}

impl RunningApp {
    pub fn start(bin: &str, args: &[&str]) -> RunningApp {
        let mut child = Command::new(bin)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {bin}: {e}"));
        let Some(stdout) = child.stdout.take() else {
            panic!("{bin}: no stdout pipe");
        };
        let mut stdout = BufReader::new(stdout);
        let mut line = String::new();
        if let Err(e) = stdout.read_line(&mut line) {
            let _ = child.kill();
            panic!("{bin} {args:?}: cannot read its first line: {e}");
        }
        let url = line
            .trim_end()
            .strip_prefix("listening on ")
            .map(str::to_string);
        let loopback = |u: &String| {
            u.strip_prefix("http://127.0.0.1:")
                .and_then(|p| p.parse::<u16>().ok())
                .is_some_and(|p| p != 0)
        };
        let Some(url) = url.filter(loopback) else {
            let _ = child.kill();
            panic!("{bin} {args:?}: first line is {line:?}, expected `listening on http://127.0.0.1:<port>`");
        };
        RunningApp {
            child,
            url,
            _stdout: stdout,
        }
    }
}

impl Drop for RunningApp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn describe(out: &Output) -> String {
    format!(
        "exit {:?}, stdout {:?}, stderr {:?}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `bin args` must be refused as a usage error: exit 2, a reason on stderr, nothing on
/// stdout.
pub fn assert_refused(bin: &str, args: &[&str]) {
    let out = match Command::new(bin).args(args).stdin(Stdio::null()).output() {
        Ok(o) => o,
        Err(e) => panic!("cannot run {bin}: {e}"),
    };
    assert_eq!(out.status.code(), Some(2), "{args:?}: {}", describe(&out));
    assert!(out.stdout.is_empty(), "{args:?} printed to stdout");
    assert!(
        !out.stderr.is_empty(),
        "{args:?} explained nothing on stderr"
    );
}

/// A tiny JSON client for the notes API; every call returns (status, body).
struct Api {
    client: reqwest::blocking::Client,
    url: String,
}

impl Api {
    fn new(url: &str) -> Api {
        Api {
            client: reqwest::blocking::Client::new(),
            url: url.to_string(),
        }
    }

    fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<(u16, Value), String> {
        let mut req = self
            .client
            .request(method.clone(), format!("{}{path}", self.url));
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().map_err(|e| format!("{method} {path}: {e}"))?;
        let status = resp.status().as_u16();
        let value = resp
            .json()
            .map_err(|e| format!("{method} {path}: body is not JSON: {e}"))?;
        Ok((status, value))
    }

    fn clear(&self) -> Result<(), String> {
        match self.call(reqwest::Method::DELETE, "/api/notes", None)? {
            (200, _) => Ok(()),
            (s, v) => Err(format!("DELETE /api/notes answered {s} {v}")),
        }
    }

    fn add(&self, text: &str) -> Result<Value, String> {
        match self.call(
            reqwest::Method::POST,
            "/api/notes",
            Some(json!({ "text": text })),
        )? {
            (201, v) => Ok(v),
            (s, v) => Err(format!("POST {text:?} answered {s} {v}")),
        }
    }

    fn list(&self, query: &str) -> Result<Value, String> {
        match self.call(reqwest::Method::GET, &format!("/api/notes?q={query}"), None)? {
            (200, v) => Ok(v),
            (s, v) => Err(format!("GET ?q={query} answered {s} {v}")),
        }
    }

    fn texts(&self, query: &str) -> Result<Vec<String>, String> {
        let v = self.list(query)?;
        Ok(v["notes"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|n| n["text"].as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default())
    }
}

fn expect<T: PartialEq + std::fmt::Debug>(what: &str, got: T, want: T) -> Result<(), String> {
    if got == want {
        Ok(())
    } else {
        Err(format!("{what}: got {got:?}, expected {want:?}"))
    }
}

/// The API-level check of one capability, as the acceptance criteria state it.
fn check(api: &Api, cap: &str) -> Result<(), String> {
    api.clear()?;
    match cap {
        "add-note" => {
            let text = "call the plumber about the kitchen sink";
            let v = api.add(&format!("  {text} "))?;
            expect("POST answer text", v["text"].as_str(), Some(text))?;
            expect("listed", api.texts("")?, vec![text.to_string()])
        }
        "count-notes" => {
            expect("empty count", api.list("")?["count"].clone(), json!(0))?;
            let first = api.add("one")?;
            api.add("two")?;
            api.add("three")?;
            expect("count of 3", api.list("")?["count"].clone(), json!(3))?;
            let id = first["id"].as_u64().unwrap_or_default();
            api.call(reqwest::Method::DELETE, &format!("/api/notes/{id}"), None)?;
            expect(
                "count after delete",
                api.list("zzz")?["count"].clone(),
                json!(2),
            )
        }
        "search" => {
            for t in ["Buy MILK", "milk shake", "walk dog"] {
                api.add(t)?;
            }
            expect(
                "q=milk",
                api.texts("milk")?,
                vec!["Buy MILK".into(), "milk shake".into()],
            )?;
            expect(
                "q=SHAKE",
                api.texts("SHAKE")?,
                vec!["milk shake".to_string()],
            )?;
            expect(
                "count while searching",
                api.list("milk")?["count"].clone(),
                json!(3),
            )
        }
        "delete-note" => {
            let first = api.add("first")?;
            api.add("second")?;
            api.add("third")?;
            let id = first["id"].as_u64().unwrap_or_default();
            let (s, _) = api.call(reqwest::Method::DELETE, &format!("/api/notes/{id}"), None)?;
            expect("DELETE status", s, 200)?;
            expect(
                "left",
                api.texts("")?,
                vec!["second".into(), "third".into()],
            )?;
            let (s, _) = api.call(reqwest::Method::DELETE, &format!("/api/notes/{id}"), None)?;
            expect("DELETE again", s, 404)
        }
        "reject-empty-note" => {
            for text in ["", "   "] {
                let r = api.call(
                    reqwest::Method::POST,
                    "/api/notes",
                    Some(json!({ "text": text })),
                )?;
                expect(
                    &format!("POST {text:?}"),
                    r,
                    (400, json!({"error": "note text is empty"})),
                )?;
            }
            expect("nothing kept", api.list("")?["count"].clone(), json!(0))?;
            api.add("real note").map(|_| ())
        }
        other => Err(format!("no check for `{other}`")),
    }
}

#[test]
fn loader_accepts_browser_notes_and_its_flows_claim_test_flows() {
    let loaded = load_frozen("browser-notes", Modality::BrowserFlow);
    let ids: Vec<&str> = loaded
        .corpus
        .capabilities
        .iter()
        .map(|c| c.id.as_str())
        .collect();
    let mut expected = MUTANTS.to_vec();
    expected.push("feels-calm");
    assert_eq!(ids, expected);
    let files = claimed_files(&loaded, "gauntlet flow run check.json");
    assert_eq!(files.len(), MUTANTS.len());
    for (cap, text) in files {
        let problems = test_flow_problems(&text);
        assert!(problems.is_empty(), "{cap}: {problems:?}");
        assert!(
            text.contains("\"browser\""),
            "{cap}: a browser app's test drives the browser"
        );
    }
}

#[test]
fn mutant_flags_are_accepted_and_the_ambiguous_one_refused() {
    for m in MUTANTS {
        let app = RunningApp::start(&BIN, &["--mutant", m]);
        assert!(app.url.starts_with("http://127.0.0.1:"));
    }
    for args in [
        &["--mutant", "feels-calm"][..],
        &["--mutant", "no-such-capability"],
        &["--mutant"],
        &["--port", "x"],
        &["--bogus"],
    ] {
        assert_refused(&BIN, args);
    }
}

/// Each capability's API check holds on the app (twice: re-runnable on one instance),
/// fails on its own mutant and holds on every other mutant.
#[test]
fn each_api_check_fails_only_on_its_own_mutant() {
    let app = RunningApp::start(&BIN, &[]);
    let mutants: Vec<(&str, RunningApp)> = MUTANTS
        .iter()
        .map(|m| (*m, RunningApp::start(&BIN, &["--mutant", m])))
        .collect();
    let mut failures = Vec::new();
    for cap in MUTANTS {
        for run in 1..=2 {
            if let Err(e) = check(&Api::new(&app.url), cap) {
                failures.push(format!("{cap}: run {run} on the app: {e}"));
            }
        }
        for (m, running) in &mutants {
            let result = check(&Api::new(&running.url), cap);
            match (*m == cap, result) {
                (true, Ok(())) => failures.push(format!("{cap}: holds on its own mutant")),
                (false, Err(e)) => failures.push(format!("{cap}: fails on the `{m}` mutant: {e}")),
                _ => {}
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_page_and_the_api_answer_over_real_http() {
    let app = RunningApp::start(&BIN, &[]);
    let client = reqwest::blocking::Client::new();
    let page = match client.get(&app.url).send() {
        Ok(r) => r,
        Err(e) => panic!("GET /: {e}"),
    };
    assert_eq!(page.status().as_u16(), 200);
    let ctype = page
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    assert!(ctype.starts_with("text/html"), "{ctype}");
    let html = page.text().unwrap_or_default();
    for id in [
        "new-note", "add", "error", "count", "search", "notes", "clear",
    ] {
        assert!(html.contains(&format!("id=\"{id}\"")), "page has no #{id}");
    }
    assert!(html.contains("data-state=\"loading\""));

    let api = Api::new(&app.url);
    let r = api.call(
        reqwest::Method::POST,
        "/api/notes",
        Some(json!({"text": "x".repeat(501)})),
    );
    assert_eq!(
        r,
        Ok((
            400,
            json!({"error": "note text is longer than 500 characters"})
        ))
    );
    let r = api.call(
        reqwest::Method::POST,
        "/api/notes",
        Some(json!({"nope": 1})),
    );
    assert_eq!(r, Ok((400, json!({"error": "text must be a string"}))));
    let r = api.call(reqwest::Method::DELETE, "/api/notes/123456", None);
    assert_eq!(r, Ok((404, json!({"error": "unknown note"}))));
    let r = api.call(reqwest::Method::GET, "/elsewhere", None);
    assert_eq!(r.map(|(s, _)| s), Ok(404));
    let note = api.add("a b&c").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        api.texts("b%26c").unwrap_or_default(),
        vec!["a b&c".to_string()]
    );
    assert!(note["id"].is_u64());
}
