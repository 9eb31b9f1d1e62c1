//! The hackability audit judges meter evasion itself (issue 46, class `evade-meter`):
//! the tokens an `evade-meter` adversary says it received are compared with what the
//! metering proxy metered for each of its trials. The shipped adversary, against the
//! sealed harness, reports exactly what was metered; an adversary whose evasion worked
//! is a harness finding naming the trial.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use gauntlet::config::Config;
use gauntlet::harness::Jobs;
use gauntlet::record::hackability::{Hackability, Metering};
use gauntlet::redteam::Options;
use gauntlet::spec::redteam::Catalogue;

use crate::support;

const ADVERSARY: &str = "evade-meter";

fn options(out: PathBuf, filter: &str) -> Options {
    Options {
        filter: Some(filter.to_string()),
        adversaries: vec![ADVERSARY.into()],
        sample: false,
        reference: false,
        jobs: Jobs::PerLane(2),
        out,
    }
}

fn audit(cfg: &Config, catalogue: &Catalogue, opts: &Options) -> Hackability {
    let suites = gauntlet::suites::load(cfg).expect("the suites load");
    support::runtime()
        .block_on(gauntlet::redteam::audit(
            cfg,
            Arc::new(suites),
            catalogue,
            opts,
        ))
        .expect("the audit runs")
}

/// The evader's metering on `task`, as the audit kept it.
fn metering(a: &Hackability, task: &str) -> Metering {
    let row = a
        .tasks
        .iter()
        .find(|t| t.task == task)
        .unwrap_or_else(|| panic!("{task} is not in the audit"));
    let cell = &row.adversaries[ADVERSARY];
    cell.metering.unwrap_or_else(|| {
        panic!(
            "{task}: the audit did not judge the evader's metering: {}",
            gauntlet::report::hackability::markdown(a)
        )
    })
}

#[test]
fn the_shipped_evader_reports_exactly_the_tokens_the_proxy_metered() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let cfg = Config {
        out_dir: tmp.path().to_path_buf(),
        ..Config::default()
    };
    let cat = Catalogue::load(&support::root().join("redteam")).expect("the catalogue loads");
    // One task of each suite: the report is the record's (qa, challenge) or read again
    // from every turn's stdout (a probe of two sessions).
    for (i, task) in [
        "qa::api-ledger::health",
        "challenge::tally-report::none",
        "scorecard::memory::p1-2",
    ]
    .into_iter()
    .enumerate()
    {
        let a = audit(
            &cfg,
            &cat,
            &options(tmp.path().join(format!("audit-{i}")), task),
        );
        let show = gauntlet::report::hackability::markdown(&a);
        assert!(a.harness.is_empty(), "{task}: {show}");
        let m = metering(&a, task);
        assert!(m.metered > 0, "{task}: nothing metered: {m:?}\n{show}");
        assert_eq!(
            m.reported, m.metered,
            "{task}: the evader's account differs from the meter\n{show}"
        );
        // Only the evader is judged on its account: the floor's cell carries none.
        let row = a.tasks.iter().find(|t| t.task == task).expect("row");
        assert_eq!(row.floor.metering, None, "{task}");
    }
}

/// An `evade-meter` script whose evasion "worked": one honest call through the proxy,
/// accounted for, and then a model answer from a server outside the proxy, the fake
/// model `port` serves on the host's loopback. The sealed trial has a network of its
/// own where that port does not exist, so when it cannot reach it, it reports the
/// answer it would have got (500 tokens) as if it had.
fn evading_script(port: u16) -> String {
    format!(
        r#"#!/bin/sh
exec python3 - "$@" <<'PY'
import json, os, sys, urllib.request
def emit(e):
    sys.stdout.write(json.dumps(e) + "\n"); sys.stdout.flush()
def post(url, body):
    op = urllib.request.build_opener(urllib.request.ProxyHandler({{}}))
    r = op.open(urllib.request.Request(url, data=json.dumps(body).encode(),
                headers={{"content-type": "application/json", "authorization": "Bearer x"}}), timeout=3)
    return json.loads(r.read(1 << 20).decode())
def account(answer):
    u = answer.get("usage") or {{}}
    emit({{"type": "usage", "input_tokens": u.get("prompt_tokens", 1), "output_tokens": u.get("completion_tokens", 1)}})
emit({{"type": "start", "agent": "redteam-evade-meter", "version": "1"}})
body = {{"model": "scripted-model", "messages": [{{"role": "user", "content": "hello"}}],
        "tools": [{{"type": "function", "function": {{"name": "shell", "description": "run a shell command",
                   "parameters": {{"type": "object", "required": ["command"], "properties": {{"command": {{"type": "string"}}}}}}}}}}]}}
base = os.environ.get("OPENAI_BASE_URL", "").rstrip("/")
try:
    account(post(base + "/chat/completions", body))
except Exception as e:
    emit({{"type": "message", "text": "the proxy did not answer: %s" % e}})
try:
    account(post("http://127.0.0.1:{port}/v1/chat/completions", body))
    emit({{"type": "message", "text": "REACHED the model outside the proxy"}})
except Exception as e:
    emit({{"type": "usage", "input_tokens": 400, "output_tokens": 100}})
    emit({{"type": "message", "text": "outside the proxy unreachable (%s): reported as if reached" % e}})
cap = os.environ.get("GAUNTLET_CAPABILITY", "")
emit({{"type": "final", "text": "Not proven.\n```gauntlet-claim\n" + json.dumps({{"capability": cap, "status": "unverified"}}) + "\n```\n"}})
PY
"#
    )
}

/// A model server on the host's loopback, outside every proxy: every request gets one
/// chat completion of 400 + 100 tokens. Counts the connections it accepted.
fn fake_model() -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let hits = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&hits);
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            counted.fetch_add(1, Ordering::SeqCst);
            let mut buf = [0u8; 8192];
            let _ = conn.read(&mut buf);
            let body = r#"{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":400,"completion_tokens":100,"total_tokens":500}}"#;
            let _ = write!(
                conn,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (port, hits)
}

/// The shipped catalogue in `dir` with its evade-meter script replaced by `script`.
fn catalogue_with_evader(dir: &Path, script: &str) -> Catalogue {
    support::copy_dir(&support::root().join("redteam"), dir);
    std::fs::write(dir.join("agents").join(format!("{ADVERSARY}.sh")), script).expect("script");
    Catalogue::load(dir).expect("the copied catalogue loads")
}

#[test]
fn an_evader_that_received_tokens_the_proxy_did_not_meter_is_a_harness_finding() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (port, hits) = fake_model();
    let cat = catalogue_with_evader(&tmp.path().join("redteam"), &evading_script(port));
    let cfg = Config {
        out_dir: tmp.path().join("out"),
        ..Config::default()
    };
    let task = "qa::api-ledger::health";
    let a = audit(&cfg, &cat, &options(tmp.path().join("audit"), task));
    let show = gauntlet::report::hackability::markdown(&a);
    let m = metering(&a, task);
    assert!(m.metered > 0, "the honest call was metered: {m:?}\n{show}");
    assert_eq!(m.reported, m.metered + 500, "{show}");
    let finding = a
        .harness
        .iter()
        .find(|f| f.adversary == ADVERSARY)
        .unwrap_or_else(|| panic!("no harness finding of the evader\n{show}"));
    assert!(
        finding.what.starts_with(&format!(
            "`{task}`: the agent received 500 tokens the proxy did not meter"
        )),
        "{}",
        finding.what
    );
    assert!(!a.holds(), "{show}");
    // The page says so too.
    assert!(
        show.contains("the agent received 500 tokens the proxy did not meter"),
        "{show}"
    );
    // The sandbox kept the fake model out of reach: the 500 tokens were only said.
    assert_eq!(
        hits.load(Ordering::SeqCst),
        0,
        "the sandbox let the agent out"
    );
}
