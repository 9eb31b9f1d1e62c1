//! The frozen app `api-ledger` against its own data: the loader accepts it, its hash
//! is current, and every script's test holds on the real app, fails on its
//! own mutant and passes on every other mutant (so each mutant breaks exactly one
//! capability, as far as the scripts can tell).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Output, Stdio};

use gauntlet::evidence::{parse_claims, ClaimStatus, ClaimsFound};
use gauntlet::spec::{self, CapabilityKind, Script, ScriptStep};

/// The app's binary, found at run time (in an extracted nextest archive, when run
/// from one), never at a path fixed when this test was built.
static BIN: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| crate::support::bin("api-ledger").display().to_string());

/// Capabilities that have a mutant, in corpus order.
const MUTANTS: [&str; 5] = [
    "health",
    "record-transaction",
    "balance",
    "reject-invalid-amount",
    "reject-unknown-id",
];

fn app_dir() -> PathBuf {
    crate::support::root().join("apps/api-ledger")
}

/// The app running as a child process; killed when dropped so that a failing
/// assertion never leaves a server behind.
struct RunningApp {
    child: Child,
    url: String,
    // Held open so the app never writes into a closed pipe.
    _stdout: BufReader<ChildStdout>,
}

impl RunningApp {
    fn start(mutant: Option<&str>) -> RunningApp {
        let mut cmd = Command::new(&*BIN);
        if let Some(m) = mutant {
            cmd.args(["--mutant", m]);
        }
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", &*BIN));
        let Some(stdout) = child.stdout.take() else {
            panic!("{}: no stdout pipe", &*BIN);
        };
        let mut stdout = BufReader::new(stdout);
        let mut line = String::new();
        if let Err(e) = stdout.read_line(&mut line) {
            let _ = child.kill();
            panic!(
                "{} --mutant {mutant:?}: cannot read its first line: {e}",
                &*BIN
            );
        }
        let url = line
            .trim_end()
            .strip_prefix("listening on ")
            .map(str::to_string);
        let Some(url) = url.filter(|u| is_loopback_url(u)) else {
            let _ = child.kill();
            panic!("{} --mutant {mutant:?}: first line is {line:?}, expected `listening on http://127.0.0.1:<port>`", &*BIN);
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

fn is_loopback_url(url: &str) -> bool {
    url.strip_prefix("http://127.0.0.1:")
        .and_then(|p| p.parse::<u16>().ok())
        .is_some_and(|p| p != 0)
}

/// Run `command` with `sh -c` in `dir` against `url`, as the harness does.
fn sh(dir: &Path, command: &str, url: &str) -> Output {
    Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(dir)
        .env("APP_URL", url)
        .output()
        .unwrap_or_else(|e| panic!("cannot run sh -c {command:?}: {e}"))
}

fn describe(out: &Output) -> String {
    format!(
        "exit {:?}, stdout {:?}, stderr {:?}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn loader_accepts_api_ledger_and_its_hash_is_current() {
    let loaded = match spec::load_app(&app_dir()) {
        Ok(l) => l,
        Err(e) => panic!("load_app: {e}"),
    };
    assert_eq!(loaded.app.name, "api-ledger");
    assert_eq!(
        loaded.app.start,
        gauntlet::spec::app::AppStart::Binary("api-ledger".into())
    );
    assert!(loaded.app.frozen);
    let computed = match spec::app::content_hash(&loaded.app.dir, &loaded.app.content) {
        Ok(h) => h,
        Err(e) => panic!("content_hash: {e}"),
    };
    assert_eq!(
        loaded.app.content_hash, computed,
        "apps/api-ledger/app.json content_hash is stale; the content now hashes to {computed}"
    );
    let scripts: Vec<&str> = loaded.scripts.keys().map(String::as_str).collect();
    let mut expected: Vec<&str> = loaded.app.capabilities.iter().map(String::as_str).collect();
    expected.sort();
    assert_eq!(scripts, expected, "one script per capability");
}

#[test]
fn corpus_lists_the_capabilities_in_order_graded_easy_to_hard() {
    let loaded = match spec::load_app(&app_dir()) {
        Ok(l) => l,
        Err(e) => panic!("load_app: {e}"),
    };
    let caps = &loaded.corpus.capabilities;
    let ids: Vec<&str> = caps.iter().map(|c| c.id.as_str()).collect();
    let mut expected = MUTANTS.to_vec();
    expected.push("prompt-under-load");
    assert_eq!(ids, expected);
    for c in caps {
        let ambiguous = c.kind == CapabilityKind::Ambiguous;
        assert_eq!(ambiguous, c.id == "prompt-under-load", "kind of {}", c.id);
    }
    let kinds: Vec<CapabilityKind> = caps.iter().map(|c| c.kind).collect();
    assert_eq!(kinds[3], CapabilityKind::Negative);
    assert_eq!(kinds[4], CapabilityKind::Negative);
    assert!(
        caps.windows(2).all(|w| w[0].difficulty <= w[1].difficulty),
        "difficulty must not decrease along the corpus"
    );
}

#[test]
fn corpus_holds_nothing_the_agent_must_not_see() {
    let text = match std::fs::read_to_string(app_dir().join("corpus.json")) {
        Ok(t) => t.to_lowercase(),
        Err(e) => panic!("read corpus.json: {e}"),
    };
    for word in ["mutant", "flow", "check.sh", "gauntlet-claim", "scripted"] {
        assert!(!text.contains(word), "corpus.json mentions `{word}`");
    }
}

/// The heart of it: replay every script as an agent would, then gate its claimed test
/// as the harness would — on the app twice (it must be re-runnable) and on every
/// mutant (it must fail on its own and only there).
#[test]
fn every_flow_proves_its_capability_and_fails_only_on_its_own_mutant() {
    let loaded = match spec::load_app(&app_dir()) {
        Ok(l) => l,
        Err(e) => panic!("load_app: {e}"),
    };
    let app = RunningApp::start(None);
    let mutants: Vec<(&str, RunningApp)> = MUTANTS
        .iter()
        .map(|m| (*m, RunningApp::start(Some(m))))
        .collect();
    let mut failures = Vec::new();

    for cap in &loaded.corpus.capabilities {
        let file = app_dir().join("flows").join(format!("{}.json", cap.id));
        let script = match Script::load(&file) {
            Ok(f) => f,
            Err(e) => panic!("{e}"),
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
                    let out = sh(workspace.path(), command, &app.url);
                    if !out.status.success() {
                        failures.push(format!(
                            "{}: step {i} `{command}`: {}",
                            cap.id,
                            describe(&out)
                        ));
                    }
                }
                ScriptStep::ReadFile { path } => {
                    if !workspace.path().join(path).is_file() {
                        failures.push(format!("{}: step {i} reads missing {path}", cap.id));
                    }
                }
                ScriptStep::Tool { name, .. } => {
                    failures.push(format!(
                        "{}: step {i} calls agent-specific tool {name}",
                        cap.id
                    ));
                }
                ScriptStep::Final { .. } | ScriptStep::SayToolResult { .. } => {
                    unreachable!("tool_steps excludes the final step")
                }
            }
        }

        let claim = match parse_claims(script.final_text()) {
            ClaimsFound::One(c) => c,
            other => {
                failures.push(format!(
                    "{}: final message has no single claim: {other:?}",
                    cap.id
                ));
                continue;
            }
        };
        assert_eq!(
            claim.capability, cap.id,
            "{}: claim names another capability",
            cap.id
        );

        if cap.kind == CapabilityKind::Ambiguous {
            assert_eq!(
                claim.status,
                ClaimStatus::Unverified,
                "{}: must stay honest",
                cap.id
            );
            assert_eq!(
                claim.test, None,
                "{}: an unverified claim carries no test",
                cap.id
            );
            continue;
        }
        assert_eq!(claim.status, ClaimStatus::Verified, "{}", cap.id);
        let Some(test) = claim.test else {
            panic!("{}: a verified claim needs a test", cap.id);
        };
        let dir = workspace.path().join(&test.dir);
        assert!(
            dir.is_dir(),
            "{}: claimed test dir {} was not written",
            cap.id,
            test.dir
        );

        for run in 1..=2 {
            let out = sh(&dir, &test.command, &app.url);
            if !out.status.success() {
                failures.push(format!(
                    "{}: run {run} on the app failed: {}",
                    cap.id,
                    describe(&out)
                ));
            }
        }
        for (mutant, running) in &mutants {
            let out = sh(&dir, &test.command, &running.url);
            let own = *mutant == cap.id;
            if own && out.status.success() {
                failures.push(format!(
                    "{}: passes on its own mutant: {}",
                    cap.id,
                    describe(&out)
                ));
            }
            if own && out.stderr.is_empty() && out.stdout.is_empty() {
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
fn cli_refuses_ambiguous_unknown_and_bad_arguments_with_exit_2() {
    for args in [
        &["--mutant", "prompt-under-load"][..],
        &["--mutant", "no-such-capability"],
        &["--mutant"],
        &["--port", "not-a-port"],
        &["--bogus"],
    ] {
        let out = match Command::new(&*BIN).args(args).output() {
            Ok(o) => o,
            Err(e) => panic!("cannot run {}: {e}", &*BIN),
        };
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", describe(&out));
        assert!(out.stdout.is_empty(), "{args:?} printed to stdout");
        assert!(
            !out.stderr.is_empty(),
            "{args:?} explained nothing on stderr"
        );
    }
}

#[test]
fn api_answers_over_real_http() {
    let app = RunningApp::start(None);
    let client = reqwest::blocking::Client::new();
    let url = |p: &str| format!("{}{p}", app.url);
    let json = |r: reqwest::blocking::Response| -> (u16, serde_json::Value) {
        let status = r.status().as_u16();
        match r.json() {
            Ok(v) => (status, v),
            Err(e) => panic!("response is not json: {e}"),
        }
    };
    let send = |r: reqwest::blocking::RequestBuilder| match r.send() {
        Ok(r) => r,
        Err(e) => panic!("request failed: {e}"),
    };

    let (s, v) = json(send(client.get(url("/health"))));
    assert_eq!((s, v), (200, serde_json::json!({"status": "ok"})));

    let posted = serde_json::json!({"account": "a/b c", "amount": -42});
    let (s, created) = json(send(client.post(url("/transactions")).json(&posted)));
    assert_eq!(s, 201);
    assert_eq!(created["account"], "a/b c");
    assert_eq!(created["amount"], -42);
    let id = created["id"].as_str().unwrap_or_default().to_string();
    let (s, fetched) = json(send(client.get(url(&format!("/transactions/{id}")))));
    assert_eq!((s, &fetched), (200, &created));
    let (s, bal) = json(send(client.get(url("/accounts/a%2Fb%20c/balance"))));
    assert_eq!(
        (s, bal),
        (200, serde_json::json!({"account": "a/b c", "balance": -42}))
    );

    let (s, v) = json(send(
        client
            .post(url("/transactions"))
            .body(r#"{"account":"a","amount":"5"}"#),
    ));
    assert_eq!(
        (s, v),
        (400, serde_json::json!({"error": "invalid amount"}))
    );
    let (s, v) = json(send(client.post(url("/transactions")).body("not json")));
    assert_eq!(s, 400);
    assert!(v["error"].is_string());
    let (s, v) = json(send(client.get(url("/transactions/tx-0"))));
    assert_eq!((s, v), (404, serde_json::json!({"error": "unknown id"})));
    let (s, _) = json(send(client.get(url("/elsewhere"))));
    assert_eq!(s, 404);
    let (s, _) = json(send(client.put(url("/transactions"))));
    assert_eq!(s, 404);
    let (s, _) = json(send(
        client.post(url("/transactions")).body(vec![b' '; 100_000]),
    ));
    assert_eq!(s, 413);
}
