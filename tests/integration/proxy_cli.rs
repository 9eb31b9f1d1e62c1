//! `gauntlet proxy`: the metering proxy as a command a person runs beside an agent —
//! every call appended to the usage log as it ends, a summary on SIGTERM/SIGINT, the key
//! only from the environment, loopback only.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::{json, Value};

use super::proxy_provider::{self as provider, CHAT, KEY, MESSAGES};
use super::support;

/// A running `gauntlet proxy`, its base URL (`…/v1`) and the rest of its stdout.
struct Running {
    child: Child,
    base: String,
    rest: std::thread::JoinHandle<String>,
}

/// Start `gauntlet proxy` with `args`.
fn start(args: &[&str], env: &[(&str, &str)]) -> Running {
    let mut cmd = Command::new(crate::support::bin("gauntlet"));
    cmd.arg("proxy")
        .args(args)
        .env_remove("OPENAI_API_KEY")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("gauntlet proxy starts");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let mut base = None;
    for line in lines.by_ref() {
        let line = line.expect("a line");
        if let Some(url) = line.strip_prefix("OPENAI_BASE_URL=") {
            base = Some(url.to_owned());
            break;
        }
    }
    let base = base.expect("the proxy prints its base URL");
    // The rest of stdout (the summary) is whatever it prints until it ends.
    let rest = std::thread::spawn(move || {
        lines
            .map_while(Result::ok)
            .map(|l| format!("{l}\n"))
            .collect()
    });
    Running { child, base, rest }
}

/// Signal it, wait for it: its exit status, the rest of its stdout, its stderr.
fn stop(mut p: Running, sig: Signal) -> (std::process::ExitStatus, String, String) {
    kill(Pid::from_raw(p.child.id() as i32), sig).expect("signal");
    let status = p.child.wait().expect("it ends");
    let mut stderr = String::new();
    if let Some(mut e) = p.child.stderr.take() {
        use std::io::Read;
        let _ = e.read_to_string(&mut stderr);
    }
    (status, p.rest.join().expect("stdout reader"), stderr)
}

fn post(url: &str, body: &Value) -> (u16, String) {
    let r = reqwest::blocking::Client::builder()
        .no_proxy()
        .build()
        .expect("client")
        .post(url)
        .bearer_auth("placeholder")
        .header("x-api-key", "placeholder")
        .header("anthropic-version", "2023-06-01")
        .json(body)
        .send()
        .expect("request sent");
    let status = r.status().as_u16();
    (status, r.text().expect("body"))
}

fn usage_lines(file: &Path) -> Vec<Value> {
    std::fs::read_to_string(file)
        .expect("usage log")
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect()
}

#[test]
fn a_scripted_proxy_meters_every_call_into_its_log_and_sums_them_on_sigterm() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let log = tmp.path().join("usage.jsonl");
    let flow = support::root().join("apps/api-ledger/flows/balance.json");
    let p = start(
        &[
            "--mode",
            "scripted",
            "--script",
            &flow.to_string_lossy(),
            "--usage-log",
            &log.to_string_lossy(),
        ],
        &[],
    );
    let tools = json!([{"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}]);
    let (status, body) = post(
        &format!("{}/chat/completions", p.base),
        &json!({"model": "m", "messages": [{"role": "user", "content": "prove balance"}], "tools": tools}),
    );
    assert_eq!(status, 200, "{body}");
    let reply: Value = serde_json::from_str(&body).expect("a chat completion");
    assert!(
        reply["usage"]["prompt_tokens"].as_u64() > Some(0),
        "{reply}"
    );
    // Each call is in the log the moment it ends, before the proxy stops.
    let lines = usage_lines(&log);
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["protocol"], "chat");
    assert_eq!(lines[0]["input_tokens"], reply["usage"]["prompt_tokens"]);
    let (status, _) = post(
        &format!("{}/messages", p.base),
        &json!({"model": "m", "max_tokens": 64, "stream": true, "messages": [{"role": "user", "content": "go on"}]}),
    );
    assert_eq!(status, 200);
    let (status, summary, stderr) = stop(p, Signal::SIGTERM);
    assert!(status.success(), "{stderr}");
    let lines = usage_lines(&log);
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[1]["stream"], true);
    let total: u64 = lines
        .iter()
        .filter_map(|l| l["input_tokens"].as_u64())
        .sum();
    assert!(
        summary.lines().any(|l| l
            .starts_with("2 calls (1 streamed, 0 with an error, 0 refused by the token budget)"))
            && summary.contains(&format!("tokens in / out / cached: {total} /")),
        "{summary}"
    );
}

#[test]
fn a_byok_proxy_forwards_with_the_key_from_the_environment_and_stops_on_sigint() {
    let rt = support::runtime();
    let (upstream, fake) = rt.block_on(provider::start());
    let tmp = tempfile::tempdir().expect("tempdir");
    let log = tmp.path().join("usage.jsonl");
    let p = start(
        &[
            "--mode",
            "byok",
            "--upstream",
            &upstream,
            "--usage-log",
            &log.to_string_lossy(),
        ],
        &[("GAUNTLET_API_KEY_ENV", "MY_KEY"), ("MY_KEY", KEY)],
    );
    let (status, body) = post(
        &format!("{}/{}", p.base, CHAT.path),
        &json!({"model": "golden", "messages": [{"role": "user", "content": "hi"}]}),
    );
    assert_eq!(status, 200, "{body}");
    let (status, _) = post(
        &format!("{}/{}", p.base, MESSAGES.path),
        &json!({"model": "golden", "max_tokens": 64, "stream": true, "messages": [{"role": "user", "content": "hi"}]}),
    );
    assert_eq!(status, 200);
    let (status, summary, stderr) = stop(p, Signal::SIGINT);
    assert!(status.success(), "{stderr}");
    assert!(
        summary
            .lines()
            .any(|l| l.starts_with("2 calls (1 streamed")),
        "{summary}"
    );
    let lines = usage_lines(&log);
    assert_eq!(lines.len(), 2);
    assert_eq!(
        lines[0]["input_tokens"],
        CHAT.tokens.0.expect("golden tokens")
    );
    assert_eq!(
        lines[1]["input_tokens"],
        MESSAGES.tokens.0.expect("golden tokens")
    );
    // The provider got the key; the log never holds it.
    let seen = fake.seen();
    assert!(seen.iter().all(|s| s
        .headers
        .values()
        .any(|v| v.to_str().is_ok_and(|v| v.contains(KEY)))));
    assert!(!std::fs::read_to_string(&log).expect("log").contains(KEY));
}

#[test]
fn the_standalone_proxy_refuses_what_it_must_not_do() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let flow = support::root().join("apps/api-ledger/flows/balance.json");
    let run = |args: &[&str], env: &[(&str, &str)]| {
        let mut cmd = Command::new(crate::support::bin("gauntlet"));
        cmd.arg("proxy").args(args).env_remove("OPENAI_API_KEY");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().expect("runs");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let flow = flow.to_string_lossy();
    // Never reachable from another host.
    let (code, err) = run(
        &[
            "--mode",
            "scripted",
            "--flow",
            &flow,
            "--listen",
            "0.0.0.0:0",
        ],
        &[],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("not a loopback address"), "{err}");
    // Never over an earlier usage log.
    let old = tmp.path().join("old.jsonl");
    std::fs::write(&old, "{}\n").expect("an earlier log");
    let (code, err) = run(
        &[
            "--mode",
            "scripted",
            "--flow",
            &flow,
            "--usage-log",
            &old.to_string_lossy(),
        ],
        &[],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("old.jsonl"), "{err}");
    assert_eq!(std::fs::read_to_string(&old).expect("kept"), "{}\n");
    // No key, no byok: the message names the variable.
    let (code, err) = run(
        &["--mode", "byok"],
        &[("GAUNTLET_API_KEY_ENV", "MISSING_KEY_VAR")],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("MISSING_KEY_VAR"), "{err}");
    // A flow that is not one is named.
    let bad = tmp.path().join("bad.json");
    std::fs::write(&bad, "{").expect("bad flow");
    let (code, err) = run(
        &["--mode", "scripted", "--flow", &bad.to_string_lossy()],
        &[],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("bad.json"), "{err}");
}
