//! The metering proxy against the fake provider (`tools/fake-provider`), and the
//! scripted model's latency: every token the fake billed is metered through faults,
//! cuts and in-stream errors, a scripted reply takes at least its configured latency,
//! and the latency changes no verdict.

use std::time::{Duration, Instant};

use gauntlet::config::{AgentChoice, AgentKind};
use gauntlet::proxy::{Proxy, ProxyMode, UsageEntry};
use gauntlet::spec::{Script, ScriptStep};
use gauntlet_fake_provider::{Config as FakeConfig, FakeProvider, Faults, Latency, Plan};
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

/// Send `body` through `proxy` and read the answer to its end, or to where it was cut:
/// its status (`None` when the connection broke before the head: a stream the provider
/// cut inside its first event), and whether it was cut.
async fn call(proxy: &Proxy, wire: Wire, body: &Value) -> (Option<u16>, bool) {
    let sent = client()
        .post(format!("{}/{}", proxy.base_url(), path(wire)))
        .json(body)
        .send()
        .await;
    let Ok(mut response) = sent else {
        return (None, true);
    };
    let status = Some(response.status().as_u16());
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

/// At most `retries` retries of a call, and `secs` of waiting between them.
fn retrying(retries: u32, secs: u64) -> gauntlet::proxy::RetryPolicy {
    gauntlet::proxy::RetryPolicy {
        retries,
        max_wait: Duration::from_secs(secs),
    }
}

/// A byok proxy in front of `fake`, meeting its faults by `retry`.
async fn byok(fake: &FakeProvider, retry: gauntlet::proxy::RetryPolicy) -> Proxy {
    Proxy::start(ProxyMode::Byok {
        upstream: fake.base_url(),
        api_key: "sk-fake-provider-key".into(),
        retry,
    })
    .await
    .expect("the proxy starts")
}

/// The proxy's entries meter exactly the tokens the fake provider billed: calls with
/// usage, input and output.
fn assert_metered_what_was_billed(
    entries: &[UsageEntry],
    billed: &gauntlet_fake_provider::KeyLedger,
) {
    assert_eq!(
        tokens(entries),
        (
            billed.billed_calls,
            billed.billed.input,
            billed.billed.output
        ),
        "metered (calls with usage, input, output) vs billed: {billed:?}"
    );
}

/// Through 429s, 5xx answers, streams cut at every point, streams ending in their
/// protocol's error event and whole answers cut short (which the proxy answers 502),
/// with Chat streams that did not ask for their usage, the byok proxy meters exactly
/// the tokens the provider billed and a client could see, once per call: what the
/// scale bench's "every billed token is metered" rests on.
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
            stream_error: 0.1,
            ..Faults::default()
        },
        ..FakeConfig::default()
    })
    .await
    .expect("the fake provider starts");
    let proxy = byok(&fake, gauntlet::proxy::RetryPolicy::NONE).await;
    let (mut failed, mut cut) = (0u64, 0u64);
    for i in 0..60 {
        let wire = WIRES[i % 3];
        let status_cut = call(&proxy, wire, &request(wire, i % 2 == 0)).await;
        failed += u64::from(status_cut.0.is_some_and(|s| s != 200));
        cut += u64::from(status_cut.1);
    }
    let entries = proxy.shutdown().await;
    let ledger = fake.ledger();
    let billed = &ledger.keys["sk-fake-provider-key"];
    assert!(
        failed > 0 && cut > 0 && billed.whole_disconnects > 0 && billed.stream_errors > 0,
        "{failed} failed, {cut} cut: {billed:?}"
    );
    assert_eq!(billed.calls, 60, "every call reached the provider once");
    assert_eq!(entries.len(), 60, "every call was metered once");
    assert_eq!(billed.disconnects, cut);
    assert_eq!(
        billed.rate_limited + billed.server_errors + billed.whole_disconnects,
        failed
    );
    assert_metered_what_was_billed(&entries, billed);
}

/// The proxy's own retries (docs/provider-faults.md): a 429 or 5xx the provider did not
/// bill is tried again, within the policy's bounds, and kept in the call's entry; the
/// agent sees the answer that ended the call; a cut stream, which was billed, is passed
/// on with its fault. Nothing billed is hidden and nothing is metered twice: the
/// provider's ledger and the proxy's entries agree call for call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_proxy_retries_what_the_provider_did_not_bill_and_passes_on_the_rest() {
    let config = FakeConfig {
        seed: 4949,
        answer_chunks: 4,
        faults: Faults {
            rate_limited: 0.25,
            retry_after_secs: 0,
            server_error: 0.25,
            disconnect: 0.2,
            ..Faults::default()
        },
        ..FakeConfig::default()
    };
    let fake = FakeProvider::start(config.clone())
        .await
        .expect("the fake provider starts");
    let retry = retrying(2, 30);
    let proxy = byok(&fake, retry).await;
    let mut seen = Vec::new();
    for i in 0..45 {
        let wire = WIRES[i % 3];
        seen.push(call(&proxy, wire, &request(wire, i % 2 == 0)).await);
    }
    let entries = proxy.shutdown().await;
    let billed = fake.ledger().keys["sk-fake-provider-key"].clone();
    assert_eq!(entries.len(), 45, "one entry per agent call");
    let attempts: u64 = entries.iter().map(|e| 1 + e.retries.len() as u64).sum();
    assert_eq!(
        billed.calls, attempts,
        "every attempt is in an entry: {billed:?}"
    );
    let retried = entries.iter().filter(|e| !e.retries.is_empty()).count();
    assert!(retried > 0, "some calls were retried: {billed:?}");
    // Calls reach the fake one at a time, so each agent call's last attempt is a known
    // call number, and the fake's plan of it says whether it cut that answer.
    let mut next_call = 0u64;
    let mut whole_cuts = 0;
    for (e, (status, cut)) in entries.iter().zip(&seen) {
        let last = next_call + e.retries.len() as u64;
        next_call = last + 1;
        let plan = Plan::of(&config, last);
        let cut_by_the_fake = plan.fault().is_none() && plan.cut_whole_at(2).is_some();
        if let Some(status) = status {
            assert_eq!(e.status, *status, "the agent got the entry's status: {e:?}");
        }
        assert!(e.retries.len() <= 2, "bounded: {e:?}");
        for r in &e.retries {
            assert!(
                matches!(r.status, 429 | 500..=599)
                    && r.fault
                        == gauntlet::evidence::provider::ProviderFault::of_status(r.status)
                            .expect("a fault"),
                "only the provider's unbilled faults are retried: {r:?}"
            );
        }
        // What the agent met is the entry's fault; a call that was retried to success has none.
        let met = match (status.unwrap_or(200), *cut) {
            // A whole answer cut short: the proxy answers 502, and the fault is the cut.
            (502, false) if cut_by_the_fake && !e.stream => {
                whole_cuts += 1;
                Some(gauntlet::evidence::provider::ProviderFault::Cut)
            }
            (429 | 500..=599, _) => {
                gauntlet::evidence::provider::ProviderFault::of_status(status.unwrap_or(200))
            }
            (_, true) => Some(gauntlet::evidence::provider::ProviderFault::Cut),
            _ => None,
        };
        assert_eq!(e.fault, met, "{e:?}");
        if e.fault
            .is_some_and(|f| f != gauntlet::evidence::provider::ProviderFault::Cut)
        {
            assert_eq!(
                e.retries.len(),
                2,
                "a fault is passed on only once the retries are spent: {e:?}"
            );
        }
    }
    assert!(
        seen.iter().any(|(_, cut)| *cut),
        "a cut stream was passed on, not retried"
    );
    assert_eq!(next_call, billed.calls);
    assert_eq!(
        whole_cuts, billed.whole_disconnects,
        "every whole answer the fake cut was passed on as a cut, not retried"
    );
    assert!(whole_cuts > 0, "{billed:?}");
    assert_metered_what_was_billed(&entries, &billed);
}

/// A provider that asks for a longer wait than the policy allows is not waited for:
/// its answer goes to the agent at once, with its `retry-after`, for the agent's own
/// backoff to decide.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_after_beyond_the_policy_is_passed_on_at_once() {
    let fake = FakeProvider::start(FakeConfig {
        faults: Faults {
            rate_limited: 1.0,
            retry_after_secs: 120,
            ..Faults::default()
        },
        ..FakeConfig::default()
    })
    .await
    .expect("the fake provider starts");
    let proxy = byok(&fake, retrying(3, 60)).await;
    let response = client()
        .post(format!("{}/{}", proxy.base_url(), path(Wire::Chat)))
        .json(&request(Wire::Chat, false))
        .send()
        .await
        .expect("the proxy answers");
    assert_eq!(response.status().as_u16(), 429);
    assert_eq!(response.headers()["retry-after"], "120");
    let entries = proxy.shutdown().await;
    assert_eq!(entries.len(), 1);
    assert!(entries[0].retries.is_empty(), "{:?}", entries[0]);
    assert_eq!(
        entries[0].fault,
        Some(gauntlet::evidence::provider::ProviderFault::RateLimited)
    );
    assert_eq!(fake.ledger().keys["sk-fake-provider-key"].calls, 1);
}

/// A provider nobody can connect to: the call never reached it, so it is tried again,
/// and once the retries are spent the agent gets a 502 whose entry names the fault.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_nobody_can_reach_is_retried_then_named_unreachable() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.local_addr().expect("addr").port()
    };
    let proxy = Proxy::start(ProxyMode::Byok {
        upstream: format!("http://127.0.0.1:{port}/v1"),
        api_key: "sk-fake-provider-key".into(),
        retry: retrying(2, 10),
    })
    .await
    .expect("the proxy starts");
    let (status, _) = call(&proxy, Wire::Messages, &request(Wire::Messages, true)).await;
    assert_eq!(status, Some(502));
    let entries = proxy.shutdown().await;
    assert_eq!(entries.len(), 1);
    let e = &entries[0];
    assert_eq!(
        e.fault,
        Some(gauntlet::evidence::provider::ProviderFault::Unreachable)
    );
    assert_eq!(e.retries.len(), 2, "{e:?}");
    assert_eq!(
        e.retries.iter().map(|r| r.waited_ms).collect::<Vec<_>>(),
        vec![1000, 2000],
        "the policy's backoff, without the provider's word"
    );
}

/// The hostile agent's ways to make its own failure look like the provider's, each
/// leaving no fault in its entry: hanging up mid-stream, a body no provider takes, a
/// path no protocol serves. Only the provider's doing is a fault
/// (docs/provider-faults.md).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_cannot_make_its_own_failure_the_providers() {
    let fake = FakeProvider::start(FakeConfig {
        answer_chunks: 40,
        chunk_latency: Latency::Fixed { ms: 20 },
        ..FakeConfig::default()
    })
    .await
    .expect("the fake provider starts");
    let proxy = byok(&fake, retrying(2, 5)).await;
    let url = |wire| format!("{}/{}", proxy.base_url(), path(wire));
    // Hangs up after the first chunk of a long stream.
    for wire in WIRES {
        let mut response = client()
            .post(url(wire))
            .json(&request(wire, true))
            .send()
            .await
            .expect("the proxy answers");
        let _ = response.chunk().await;
        drop(response);
    }
    // Bodies and paths no provider takes.
    for (wire, body) in [
        (Wire::Chat, "not json".to_owned()),
        (Wire::Messages, "{\"model\": 7}".to_owned()),
    ] {
        let _ = client().post(url(wire)).body(body).send().await;
    }
    let _ = client()
        .post(format!("{}/v1/nothing/here", proxy.root_url()))
        .body("{}")
        .send()
        .await;
    let before = proxy.usage().len();
    let entries = loop {
        // The hung-up streams are read to their end for their usage.
        if proxy.streams_left_by_agents() == 0 {
            break proxy.shutdown().await;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(entries.len() >= before && entries.len() >= 6, "{entries:?}");
    for e in &entries {
        assert_eq!(e.fault, None, "not the provider's doing: {e:?}");
        assert!(e.retries.is_empty(), "{e:?}");
    }
    assert_eq!(
        gauntlet::evidence::infra::infra_cause(true, &entries),
        None,
        "a trial ending on these is the agent's"
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
            assert_eq!(call(&slow, wire, &body).await, (Some(200), false));
            let took = started.elapsed();
            assert!(took >= latency, "{wire:?} stream={stream}: {took:?}");
            assert_eq!(call(&fast, wire, &body).await, (Some(200), false));
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

/// A scripted proxy serving its answers through the fake provider: the fake takes
/// every answer the proxy rendered (none refused as malformed), returns it as given,
/// and bills what it states; the agent gets the same choices and the proxy meters the
/// same tokens as a scripted proxy answering by itself, and exactly what the fake billed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scripted_answer_served_through_the_fake_provider_is_the_same_answer() {
    let fake = FakeProvider::start(FakeConfig {
        chunk_latency: Latency::Fixed { ms: 1 },
        ..FakeConfig::default()
    })
    .await
    .expect("the fake provider starts");
    let mut served = Vec::new();
    for wire in WIRES {
        // A proxy per protocol: the script answers one step a few times only.
        let via = Proxy::start(ProxyMode::ScriptedVia {
            script: one_step(),
            model: "scripted-model".into(),
            upstream: fake.base_url(),
            retry: gauntlet::proxy::RetryPolicy::NONE,
        })
        .await
        .expect("the proxy starts");
        let direct = scripted(Duration::ZERO).await;
        for stream in [false, true] {
            let body = request(wire, stream);
            assert_eq!(call(&via, wire, &body).await, (Some(200), false));
            assert_eq!(call(&direct, wire, &body).await, (Some(200), false));
        }
        let (via, direct) = (via.shutdown().await, direct.shutdown().await);
        assert_eq!(choices(&via), choices(&direct), "{wire:?}");
        assert_eq!(metered(&via), metered(&direct), "{wire:?}");
        served.extend(via);
    }
    let ledger = fake.ledger();
    let billed = &ledger.keys[gauntlet::proxy::SCRIPTED_VIA_KEY];
    assert_eq!(
        (billed.calls, billed.given_answers, billed.refused_answers),
        (6, 6, 0),
        "{billed:?}"
    );
    assert_eq!(billed.billed_calls, 6, "{billed:?}");
    assert_metered_what_was_billed(&served, billed);
}
