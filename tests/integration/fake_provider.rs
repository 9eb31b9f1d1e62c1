//! The metering proxy against the fake provider (`tools/fake-provider`), and the
//! scripted model's latency: every token the fake billed is metered through faults and
//! cuts, a scripted reply takes at least its configured latency, and the latency
//! changes no verdict.

use std::time::{Duration, Instant};

use gauntlet::config::{AgentChoice, AgentKind};
use gauntlet::proxy::{Proxy, ProxyMode, UsageEntry};
use gauntlet::spec::{Script, ScriptStep};
use gauntlet_fake_provider::{Config as FakeConfig, FakeProvider, Faults, Latency};
use serde_json::{json, Value};

use crate::support::{self, client};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wire {
    Chat,
    Responses,
    Messages,
}

const WIRES: [Wire; 3] = [Wire::Chat, Wire::Responses, Wire::Messages];

fn path(wire: Wire) -> &'static str {
    match wire {
        Wire::Chat => "chat/completions",
        Wire::Responses => "responses",
        Wire::Messages => "messages",
    }
}

/// A request of `wire` offering a `bash` tool, as an agent's first call.
fn request(wire: Wire, stream: bool) -> Value {
    let params = json!({"type": "object", "properties": {"command": {"type": "string"}},
        "required": ["command"]});
    match wire {
        Wire::Chat => json!({"model": "m", "stream": stream, "messages": [
                {"role": "system", "content": "you are a qa agent"},
                {"role": "user", "content": "verify the balance"}],
            "tools": [{"type": "function", "function": {"name": "bash", "parameters": params}}]}),
        Wire::Responses => {
            json!({"model": "m", "stream": stream, "instructions": "you are a qa agent",
            "input": [{"type": "message", "role": "user",
                "content": [{"type": "input_text", "text": "verify the balance"}]}],
            "tools": [{"type": "function", "name": "bash", "parameters": params}]})
        }
        Wire::Messages => json!({"model": "m", "stream": stream, "max_tokens": 1024,
            "system": "you are a qa agent",
            "messages": [{"role": "user", "content": "verify the balance"}],
            "tools": [{"name": "bash", "input_schema": params}]}),
    }
}

/// Send `body` through `proxy` and read the answer to its end, or to where it was cut.
async fn call(proxy: &Proxy, wire: Wire, body: &Value) -> (u16, bool) {
    let mut response = client()
        .post(format!("{}/{}", proxy.base_url(), path(wire)))
        .json(body)
        .send()
        .await
        .expect("the proxy answers");
    let status = response.status().as_u16();
    let cut = loop {
        match response.chunk().await {
            Ok(Some(_)) => {}
            Ok(None) => break false,
            Err(_) => break true,
        }
    };
    (status, cut)
}

fn tokens(entries: &[UsageEntry]) -> (u64, u64, u64) {
    let with_usage = entries
        .iter()
        .filter(|e| e.input_tokens.is_some() || e.output_tokens.is_some())
        .count() as u64;
    let sum = |f: fn(&UsageEntry) -> Option<u64>| entries.iter().filter_map(f).sum::<u64>();
    (
        with_usage,
        sum(|e| e.input_tokens),
        sum(|e| e.output_tokens),
    )
}

/// Through 429s, 5xx answers and streams cut at every point, with Chat streams that
/// did not ask for their usage, the byok proxy meters exactly the tokens the provider
/// billed, once per call: what the scale bench's "every billed token is metered" rests
/// on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_byok_proxy_meters_every_token_the_fake_provider_billed() {
    let fake = FakeProvider::start(FakeConfig {
        seed: 49,
        answer_chunks: 6,
        chunk_latency: Latency::Fixed { ms: 1 },
        faults: Faults {
            rate_limited: 0.1,
            server_error: 0.1,
            disconnect: 0.3,
            ..Faults::default()
        },
        ..FakeConfig::default()
    })
    .await
    .expect("the fake provider starts");
    let proxy = Proxy::start(ProxyMode::Byok {
        upstream: fake.base_url(),
        api_key: "sk-fake-provider-key".into(),
    })
    .await
    .expect("the proxy starts");
    let (mut failed, mut cut) = (0u64, 0u64);
    for i in 0..60 {
        let wire = WIRES[i % 3];
        let status_cut = call(&proxy, wire, &request(wire, i % 2 == 0)).await;
        failed += u64::from(status_cut.0 != 200);
        cut += u64::from(status_cut.1);
    }
    let entries = proxy.shutdown().await;
    let ledger = fake.ledger();
    let billed = &ledger.keys["sk-fake-provider-key"];
    assert!(
        failed > 0 && cut > 0,
        "{failed} failed, {cut} cut: {billed:?}"
    );
    assert_eq!(billed.calls, 60, "every call reached the provider once");
    assert_eq!(entries.len(), 60, "every call was metered once");
    assert_eq!(billed.disconnects, cut);
    assert_eq!(billed.rate_limited + billed.server_errors, failed);
    assert_eq!(
        tokens(&entries),
        (
            billed.billed_calls,
            billed.billed.input,
            billed.billed.output
        ),
        "metered (calls with usage, input, output) vs billed: {billed:?}"
    );
}

fn one_step() -> Script {
    Script {
        capability: "balance".into(),
        steps: vec![
            ScriptStep::Shell {
                command: "echo ok".into(),
                expect: None,
            },
            ScriptStep::Final {
                text: "done".into(),
            },
        ],
    }
}

async fn scripted(latency: Duration) -> Proxy {
    Proxy::start(ProxyMode::Scripted {
        script: one_step(),
        model: "scripted-model".into(),
        latency,
    })
    .await
    .expect("the proxy starts")
}

/// What the scripted model chose for each call, and how it answered.
fn choices(entries: &[UsageEntry]) -> Vec<(String, bool, u16, Option<String>)> {
    entries
        .iter()
        .map(|e| (e.protocol.clone(), e.stream, e.status, e.reply.clone()))
        .collect()
}

/// Every call's metered tokens.
fn metered(entries: &[UsageEntry]) -> Vec<(Option<u64>, Option<u64>)> {
    entries
        .iter()
        .map(|e| (e.input_tokens, e.output_tokens))
        .collect()
}

/// A scripted reply, whole or streamed, in every protocol, takes at least the
/// configured latency, and is the reply it would have been without it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scripted_reply_takes_at_least_its_latency_and_is_the_same_reply() {
    let latency = Duration::from_millis(300);
    for wire in WIRES {
        // A proxy per protocol: the script answers one step a few times only.
        let slow = scripted(latency).await;
        let fast = scripted(Duration::ZERO).await;
        for stream in [false, true] {
            let body = request(wire, stream);
            let started = Instant::now();
            assert_eq!(call(&slow, wire, &body).await, (200, false));
            let took = started.elapsed();
            assert!(took >= latency, "{wire:?} stream={stream}: {took:?}");
            assert_eq!(call(&fast, wire, &body).await, (200, false));
        }
        let (slow, fast) = (slow.shutdown().await, fast.shutdown().await);
        assert_eq!(choices(&slow), choices(&fast));
        assert_eq!(metered(&slow), metered(&fast));
        assert!(
            slow.iter()
                .all(|e| e.reply.as_deref() == Some("step 0 as `bash`")),
            "{slow:?}"
        );
        // A whole reply's entry is made when it is sent, after its latency.
        for e in slow.iter().filter(|e| !e.stream) {
            assert!(e.duration_ms >= 300, "{e:?}");
        }
    }
}

/// A qa trial with the reference agent and a scripted latency: the same honest verdict
/// and the same scripted choices as without it, the latency in its record, and every
/// model call at least that long.
#[test]
fn a_scripted_latency_leaves_a_trials_verdict_as_it_was() {
    let out = tempfile::tempdir().expect("tempdir");
    let agent = AgentChoice::of(AgentKind::Reference);
    let plain = support::config(agent.clone(), &out.path().join("plain"));
    let slow = gauntlet::config::Config {
        scripted_latency: Duration::from_millis(200),
        ..support::config(agent, &out.path().join("slow"))
    };
    let app = support::ledger();
    let (without, _) = support::run_trial(&app, "balance", &plain);
    let (with, _) = support::run_trial(&app, "balance", &slow);
    assert!(without.verdict.passed, "{:?}", without.verdict);
    assert_eq!(with.verdict, without.verdict);
    assert_eq!(with.header.config.scripted_latency_ms, Some(200));
    assert_eq!(without.header.config.scripted_latency_ms, None);
    let calls = &with.evidence.usage;
    assert_eq!(choices(calls), choices(&without.evidence.usage));
    assert!(calls.len() >= 2, "{calls:?}");
    assert!(calls.iter().all(|e| e.duration_ms >= 200), "{calls:?}");
    assert!(with.header.wall_ms >= 200 * calls.len() as u64);
    // The pages say so, and only for the run that had one.
    let page = |cfg: &gauntlet::config::Config| {
        let run = gauntlet::report::load_run(&cfg.out_dir.join("run")).expect("the run loads");
        gauntlet::report::render(&run, &gauntlet::report::Options::default()).markdown
    };
    let label = "scripted latency per model reply";
    let slow_page = page(&slow);
    assert!(
        slow_page
            .lines()
            .any(|l| l.contains(label) && l.contains("200 ms")),
        "{slow_page}"
    );
    assert!(!page(&plain).contains(label));
}
