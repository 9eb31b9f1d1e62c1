//! byok against a real local upstream (the fake provider in `proxy_provider`), with
//! golden cases per protocol: usage in the last chunk or event, cached, cache-write and
//! reasoning tokens, a stream passed on before it ends, a stream cut mid-way, a 429,
//! garbage; and a full qa trial in byok mode whose run directory never holds the key.

use std::path::Path;

use gauntlet::proxy::{Proxy, ProxyMode, UsageEntry};
use reqwest::StatusCode;
use serde_json::{json, Value};

use super::proxy_provider::{self as provider, Golden, Tokens, ALL, KEY};
use crate::support::client;

async fn byok() -> (Proxy, std::sync::Arc<provider::Provider>) {
    let (upstream, fake) = provider::start().await;
    let proxy = Proxy::start(ProxyMode::Byok {
        upstream,
        api_key: KEY.into(),
        retry: gauntlet::proxy::RetryPolicy::NONE,
    })
    .await
    .expect("proxy starts");
    (proxy, fake)
}

/// A minimal request of `golden`'s protocol for `model`.
fn request(golden: &Golden, model: &str, stream: bool) -> Value {
    match golden.protocol {
        "chat" => json!({"model": model, "stream": stream,
            "stream_options": {"include_usage": true},
            "messages": [{"role": "user", "content": "hi"}]}),
        "responses" => json!({"model": model, "stream": stream, "input": "hi"}),
        _ => json!({"model": model, "stream": stream, "max_tokens": 64,
            "messages": [{"role": "user", "content": "hi"}]}),
    }
}

/// Send as an agent would, with its placeholder credentials and protocol headers.
async fn send(proxy: &Proxy, golden: &Golden, body: &Value) -> reqwest::Response {
    client()
        .post(format!("{}/{}", proxy.base_url(), golden.path))
        .bearer_auth("gauntlet-proxy")
        .header("x-api-key", "gauntlet-proxy")
        .header("anthropic-version", "2023-06-01")
        .header("anthropic-beta", "claude-code-20250219")
        .json(body)
        .send()
        .await
        .expect("request sent")
}

fn tokens(entry: &UsageEntry) -> Tokens {
    (
        entry.input_tokens,
        entry.output_tokens,
        entry.cached_input_tokens,
        entry.reasoning_tokens,
        entry.cache_write_tokens,
    )
}

fn assert_no_key(entries: &[UsageEntry]) {
    let text = serde_json::to_string(entries).expect("entries serialize");
    assert!(
        !text.contains(KEY),
        "the key leaked into the usage log: {text}"
    );
}

#[tokio::test]
async fn golden_usage_of_every_protocol_is_metered_and_bodies_pass_unchanged() {
    let (proxy, fake) = byok().await;
    for golden in ALL {
        let response = send(&proxy, golden, &request(golden, "golden", false)).await;
        assert_eq!(response.status(), StatusCode::OK, "{}", golden.protocol);
        assert_eq!(response.text().await.expect("body"), golden.whole);
        let response = send(&proxy, golden, &request(golden, "golden", true)).await;
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(
            response.headers().get("content-type").map(|v| v.as_bytes()),
            Some(&b"text/event-stream"[..])
        );
        assert_eq!(
            response.text().await.expect("stream"),
            golden.stream,
            "{}: the stream passes byte for byte",
            golden.protocol
        );
    }

    // The key went the protocol's way; the agent's placeholder and nothing else of
    // its credentials did; Anthropic's version, beta header and query went through.
    let seen = fake.seen();
    assert_eq!(seen.len(), 6);
    for s in &seen[..4] {
        assert!(s.target == "/v1/chat/completions" || s.target == "/v1/responses");
        assert!(s.headers.get("anthropic-beta").is_none());
    }
    for s in &seen[4..] {
        assert_eq!(s.target, "/v1/messages?beta=true");
        assert_eq!(s.headers["x-api-key"], KEY);
        assert_eq!(s.headers["anthropic-version"], "2023-06-01");
        assert_eq!(s.headers["anthropic-beta"], "claude-code-20250219");
    }
    assert_eq!(seen[0].body, request(&provider::CHAT, "golden", false));

    let entries = proxy.shutdown().await;
    assert_eq!(entries.len(), 6);
    for (entry, golden) in entries.iter().zip(ALL.iter().flat_map(|g| [g, g])) {
        assert_eq!(entry.protocol, golden.protocol);
        assert_eq!(
            (entry.source.as_str(), entry.status, entry.error.as_deref()),
            ("upstream", 200, None),
            "{entry:?}"
        );
        assert_eq!(tokens(entry), golden.tokens, "{}", golden.protocol);
    }
    assert_no_key(&entries);
}

/// Read from `response` until `n` bytes have come.
async fn read_at_least(response: &mut reqwest::Response, n: usize) -> Vec<u8> {
    let mut got = Vec::new();
    while got.len() < n {
        match response.chunk().await {
            Ok(Some(chunk)) => got.extend_from_slice(&chunk),
            Ok(None) => break,
            Err(e) => panic!("stream broke after {} bytes: {e}", got.len()),
        }
    }
    got
}

#[tokio::test]
async fn a_stream_reaches_the_agent_before_the_provider_finishes_it() {
    let (proxy, fake) = byok().await;
    for golden in ALL {
        let mut response = send(&proxy, golden, &request(golden, "gated", true)).await;
        let (first, rest) = provider::split_first_event(golden.stream);
        // The provider holds everything after its first event until released, so the
        // agent can only read that event if the proxy passed it on at once. (The
        // timeout only turns a would-be hang into a failure; nothing is timed.)
        let got = tokio::time::timeout(
            std::time::Duration::from_secs(60),
            read_at_least(&mut response, first.len()),
        )
        .await
        .unwrap_or_else(|_| panic!("{}: the first event was held back", golden.protocol));
        assert_eq!(String::from_utf8_lossy(&got), first);
        assert!(
            proxy.usage().iter().all(|e| e.protocol != golden.protocol),
            "recorded when the stream ends, not before"
        );
        fake.release.notify_one();
        let tail = response.text().await.expect("the rest of the stream");
        assert_eq!(tail, rest);
    }
    let entries = proxy.shutdown().await;
    for (entry, golden) in entries.iter().zip(ALL) {
        assert_eq!(tokens(entry), golden.tokens);
        assert_eq!(entry.error, None);
    }
}

#[tokio::test]
async fn every_event_reaches_the_agent_before_the_provider_sends_the_next() {
    // The proxy sends a burst that has already arrived in one write; this checks it
    // never waits for an event that has not.
    let (proxy, fake) = byok().await;
    for golden in ALL {
        let mut response = send(&proxy, golden, &request(golden, "paced", true)).await;
        let mut got = Vec::new();
        let mut expected = String::new();
        for (i, event) in golden.stream.split_inclusive("\n\n").enumerate() {
            if i > 0 {
                fake.release.notify_one();
            }
            expected.push_str(event);
            // The timeout only turns a would-be hang into a failure; nothing is timed.
            let more = tokio::time::timeout(
                std::time::Duration::from_secs(60),
                read_at_least(&mut response, expected.len() - got.len()),
            )
            .await
            .unwrap_or_else(|_| panic!("{}: event {i} was held back", golden.protocol));
            got.extend_from_slice(&more);
            assert_eq!(
                String::from_utf8_lossy(&got),
                expected,
                "{}",
                golden.protocol
            );
        }
        assert_eq!(response.chunk().await.ok().flatten(), None);
    }
    let entries = proxy.shutdown().await;
    assert_eq!(entries.len(), ALL.len());
    for (entry, golden) in entries.iter().zip(ALL) {
        assert_eq!(
            (tokens(entry), entry.error.as_deref()),
            (golden.tokens, None)
        );
    }
}

/// Start a held stream of `golden`, read its first event, and hang up, as an agent that
/// cuts every stream short of its usage would; return once the proxy has seen it go.
async fn hang_up_after_the_first_event(proxy: &Proxy, golden: &Golden, left_before: usize) {
    let mut response = send(proxy, golden, &request(golden, "gated", true)).await;
    let (first, _) = provider::split_first_event(golden.stream);
    // The timeouts only turn a would-be hang into a failure; nothing is timed.
    tokio::time::timeout(
        std::time::Duration::from_secs(60),
        read_at_least(&mut response, first.len()),
    )
    .await
    .unwrap_or_else(|_| panic!("{}: the first event was held back", golden.protocol));
    drop(response);
    tokio::time::timeout(std::time::Duration::from_secs(60), async {
        while proxy.streams_left_by_agents() == left_before {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{}: the proxy never saw the agent go", golden.protocol));
}

#[tokio::test]
async fn an_agent_that_hangs_up_mid_stream_is_still_metered_to_the_streams_end() {
    // The provider goes on with a stream whose agent hung up, and bills all of it; the
    // usage comes last. An agent that cut every stream just short of it would look
    // cheaper than it is, so the proxy reads the rest for the usage.
    let (proxy, fake) = byok().await;
    for golden in ALL {
        hang_up_after_the_first_event(&proxy, golden, 0).await;
        fake.release.notify_one();
        tokio::time::timeout(std::time::Duration::from_secs(60), async {
            while proxy.streams_left_by_agents() > 0 {
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
        })
        .await
        .unwrap_or_else(|_| panic!("{}: the rest was never read", golden.protocol));
    }
    let entries = proxy.shutdown().await;
    assert_eq!(entries.len(), ALL.len(), "{entries:?}");
    for (entry, golden) in entries.iter().zip(ALL) {
        assert_eq!(entry.protocol, golden.protocol);
        assert_eq!((entry.source.as_str(), entry.stream), ("upstream", true));
        assert_eq!(tokens(entry), golden.tokens, "{entry:?}");
        let error = entry.error.as_deref().unwrap_or_default();
        assert!(error.contains("the agent hung up mid-stream"), "{entry:?}");
    }
}

#[tokio::test]
async fn a_stream_its_agent_hung_up_on_is_recorded_as_cut_when_the_proxy_stops_first() {
    // The provider never goes on: the proxy's shutdown ends the reading after its
    // grace, and each call is still recorded once, as cut, with what was seen of it.
    let (proxy, fake) = byok().await;
    for (left, golden) in ALL.iter().enumerate() {
        hang_up_after_the_first_event(&proxy, golden, left).await;
    }
    let entries = proxy.shutdown().await;
    drop(fake);
    assert_eq!(entries.len(), ALL.len(), "{entries:?}");
    for golden in ALL {
        let entry = entries
            .iter()
            .find(|e| e.protocol == golden.protocol)
            .unwrap_or_else(|| panic!("{}: not recorded", golden.protocol));
        assert_eq!((entry.source.as_str(), entry.stream), ("upstream", true));
        assert_eq!(tokens(entry), golden.first_event_tokens, "{entry:?}");
        let error = entry.error.as_deref().unwrap_or_default();
        assert!(error.contains("stream cut before it ended"), "{entry:?}");
    }
}

#[tokio::test]
async fn a_stream_asked_for_in_a_form_only_a_lax_provider_reads_is_still_metered() {
    // A hostile agent spells `stream` so that the provider (a lax one, as local model
    // servers are) streams while a strict reading of the request sees no stream: the
    // proxy would neither ask a Chat stream for its usage nor read the answer as a
    // stream, and the call's tokens would go unmetered, past any budget.
    let (proxy, _fake) = byok().await;
    let spellings = [json!(1), json!("yes"), json!("True")];
    for golden in ALL {
        for spelled in &spellings {
            let mut body = request(golden, "golden", true);
            body["stream"] = spelled.clone();
            if let Some(body) = body.as_object_mut() {
                body.remove("stream_options");
            }
            let response = send(&proxy, golden, &body).await;
            assert_eq!(response.status(), StatusCode::OK);
            assert_eq!(
                response.headers().get("content-type").map(|v| v.as_bytes()),
                Some(&b"text/event-stream"[..]),
                "{} with stream {spelled}",
                golden.protocol
            );
            let text = response.text().await.expect("stream");
            assert!(
                !text.contains("\"choices\":[]"),
                "{}: a usage chunk the agent did not ask for reached it: {text}",
                golden.protocol
            );
        }
        // A falsy spelling is no stream, to a lax provider and to the proxy alike.
        let mut body = request(golden, "golden", false);
        body["stream"] = json!("no");
        let response = send(&proxy, golden, &body).await;
        assert_eq!(response.text().await.expect("body"), golden.whole);
    }
    let entries = proxy.shutdown().await;
    assert_eq!(entries.len(), ALL.len() * (spellings.len() + 1));
    for (entry, golden) in entries.iter().zip(ALL.iter().flat_map(|g| [g; 4])) {
        assert_eq!(
            (
                entry.protocol.as_str(),
                entry.status,
                entry.error.as_deref()
            ),
            (golden.protocol, 200, None),
            "{entry:?}"
        );
        assert_eq!(tokens(entry), golden.tokens, "{entry:?}");
    }
    let streamed: Vec<bool> = entries.iter().map(|e| e.stream).collect();
    assert_eq!(streamed, [true, true, true, false].repeat(ALL.len()));
}

#[tokio::test]
async fn the_provider_judges_a_request_the_proxy_need_not_understand() {
    // byok reads only the envelope (model, stream, usage options); a Responses call
    // without `input` is the provider's to refuse or answer, and passes unchanged.
    let (proxy, fake) = byok().await;
    let body = json!({"model": "golden", "previous_response_id": "resp_1", "store": true});
    let response = send(&proxy, &provider::RESPONSES, &body).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(fake.seen()[0].body, body);
    let entries = proxy.shutdown().await;
    assert_eq!(entries[0].model.as_deref(), Some("golden"));
    assert_eq!(entries[0].source, "upstream");
    assert_eq!(tokens(&entries[0]), provider::RESPONSES.tokens);
}

#[tokio::test]
async fn rate_limits_cut_streams_and_garbage_pass_through_and_are_recorded() {
    let (proxy, fake) = byok().await;
    for golden in ALL {
        // 429: status, body and the headers an agent backs off by reach it unchanged.
        let response = send(&proxy, golden, &request(golden, "rate-limited", true)).await;
        assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(response.headers()["retry-after"], "3");
        assert_eq!(response.headers()["x-request-id"], "req_42");
        assert!(response.headers().get("x-internal-route").is_none());
        assert_eq!(response.text().await.expect("body"), golden.rate_limited);

        // A stream cut mid-way: the agent sees the cut too.
        let mut response = send(&proxy, golden, &request(golden, "cut", true)).await;
        assert_eq!(response.status(), StatusCode::OK);
        let (first, _) = provider::split_first_event(golden.stream);
        let got = read_at_least(&mut response, first.len()).await;
        assert_eq!(String::from_utf8_lossy(&got), first);
        fake.release.notify_one();
        assert!(response.chunk().await.is_err(), "the cut reaches the agent");

        // Garbage, whole and streamed: passed as it came, named in the evidence.
        let response = send(&proxy, golden, &request(golden, "garbage", false)).await;
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(response.text().await.expect("body"), provider::GARBAGE);
        let response = send(&proxy, golden, &request(golden, "garbage", true)).await;
        assert_eq!(
            response.text().await.expect("body"),
            provider::GARBAGE_STREAM
        );

        // And a good call after all that is metered as ever.
        let response = send(&proxy, golden, &request(golden, "golden", true)).await;
        assert_eq!(response.text().await.expect("stream"), golden.stream);
    }

    let entries = proxy.shutdown().await;
    assert_eq!(entries.len(), 15);
    for (calls, golden) in entries.chunks(5).zip(ALL) {
        let p = golden.protocol;
        assert!(calls
            .iter()
            .all(|e| e.protocol == p && e.source == "upstream"));
        let [limited, cut, garbage, garbage_stream, good] = calls else {
            panic!("five calls per protocol")
        };
        assert_eq!(limited.status, 429);
        assert!(
            limited
                .error
                .as_deref()
                .is_some_and(|e| e.starts_with("upstream status 429: ")
                    && e.to_lowercase().contains("rate limit")),
            "{p}: {limited:?}"
        );
        assert_eq!(
            tokens(limited),
            (None, None, None, None, None),
            "{p}: never invented"
        );
        assert!(
            cut.error.as_deref().is_some_and(|e| e.contains("cut")),
            "{p}: {cut:?}"
        );
        assert_eq!(
            tokens(cut),
            golden.first_event_tokens,
            "{p}: only what was sent"
        );
        assert!(
            garbage
                .error
                .as_deref()
                .is_some_and(|e| e.contains("not json") && e.contains("502 Bad Gateway")),
            "{p}: {garbage:?}"
        );
        assert!(
            garbage_stream
                .error
                .as_deref()
                .is_some_and(|e| e.contains("end marker")),
            "{p}: {garbage_stream:?}"
        );
        assert_eq!(tokens(garbage_stream), (None, None, None, None, None));
        assert_eq!((tokens(good), good.error.as_deref()), (golden.tokens, None));
    }
    assert_no_key(&entries);
}

#[tokio::test]
async fn anthropic_token_counts_are_forwarded_with_the_key_and_not_metered() {
    let (proxy, fake) = byok().await;
    let response = client()
        .post(format!(
            "{}/v1/messages/count_tokens?beta=true",
            proxy.root_url()
        ))
        .json(&json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response.text().await.expect("body"),
        r#"{"input_tokens":4242}"#
    );
    let seen = fake.seen();
    assert_eq!(seen[0].target, "/v1/messages/count_tokens?beta=true");
    // The client sent no version: the proxy names the stable one.
    assert_eq!(seen[0].headers["anthropic-version"], "2023-06-01");
    assert!(proxy.shutdown().await.is_empty());
}

// ---- the key never reaches an artifact ----

/// An agent that calls all three protocols through the proxy with curl, streaming and
/// not, then gives up honestly.
const CURL_AGENT: &str = r#"
set -u
root="${OPENAI_BASE_URL%/v1}"
call() { curl -sS -X POST "$1" -H 'content-type: application/json' \
  -H "authorization: Bearer $OPENAI_API_KEY" -H 'anthropic-version: 2023-06-01' -d "$2"; echo; }
call "$OPENAI_BASE_URL/chat/completions" '{"model":"golden","messages":[{"role":"user","content":"hi"}]}'
call "$OPENAI_BASE_URL/chat/completions" '{"model":"golden","stream":true,"messages":[{"role":"user","content":"hi"}]}'
call "$OPENAI_BASE_URL/responses" '{"model":"golden","stream":true,"input":"hi"}'
call "$root/v1/messages?beta=true" '{"model":"golden","stream":true,"max_tokens":9,"messages":[{"role":"user","content":"hi"}]}'
call "$root/v1/messages" '{"model":"rate-limited","max_tokens":9,"messages":[{"role":"user","content":"hi"}]}'
env | sort
printf '%s\n' '{"type":"final","text":"```gauntlet-claim\n{\"capability\":\"balance\",\"status\":\"unverified\"}\n```"}'
"#;

/// Every file under `dir` whose bytes contain `needle`.
fn files_containing(dir: &Path, needle: &[u8]) -> Vec<String> {
    let mut hits = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if std::fs::read(&path)
                .map(|b| b.windows(needle.len()).any(|w| w == needle))
                .unwrap_or(false)
            {
                hits.push(path.display().to_string());
            }
        }
    }
    hits
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_byok_trial_never_writes_the_key_anywhere() {
    let (upstream, _fake) = provider::start().await;
    // A variable of this test's own: no other test reads it.
    let key_var = format!("GAUNTLET_TEST_LEAK_KEY_{}", std::process::id());
    std::env::set_var(&key_var, KEY);
    let out = tempfile::tempdir().expect("tempdir");
    let mut cfg = super::support::config(
        gauntlet::config::AgentChoice::command(vec!["sh".into(), "-c".into(), CURL_AGENT.into()]),
        out.path(),
    );
    cfg.mode = gauntlet::config::Mode::Byok;
    cfg.upstream_url = upstream;
    cfg.api_key_env = key_var.clone();
    cfg.api_key = Some(gauntlet::config::ApiKey::new(KEY));
    let app = super::support::ledger();
    let run_dir = out.path().join("run");
    let (record, trial_dir) = gauntlet::suites::qa::execute(&app, "balance", None, &cfg, &run_dir)
        .await
        .expect("the trial writes its record");
    std::env::remove_var(&key_var);

    // The trial really went through the provider with the key: calls answered 200 by
    // a provider that refuses any other credentials, and metered.
    let usage = &record.evidence.usage;
    let statuses: Vec<(&str, u16)> = usage
        .iter()
        .map(|u| (u.protocol.as_str(), u.status))
        .collect();
    assert_eq!(
        statuses,
        [
            ("chat", 200),
            ("chat", 200),
            ("responses", 200),
            ("messages", 200),
            ("messages", 429)
        ]
    );
    assert_eq!(usage[0].input_tokens, Some(1200));
    assert_eq!(
        usage[1].input_tokens,
        Some(1200),
        "usage asked for and metered"
    );
    assert_eq!(usage[3].cache_write_tokens, Some(500));
    assert_eq!(record.verdict.outcome.to_string(), "unverified");
    let stdout = std::fs::read_to_string(trial_dir.join(&record.evidence.agent.stdout.path))
        .expect("agent stdout");
    assert!(
        stdout.contains("Hello") && stdout.contains("OPENAI_BASE_URL="),
        "{stdout}"
    );

    // What else a run leaves: the report page and the per-trial line nextest puts into
    // JUnit (the trial's stdout and its `Error:` line are all JUnit holds).
    let opts = gauntlet::report::Options {
        prices: gauntlet::report::PriceTable::default(),
        thresholds: Default::default(),
    };
    gauntlet::report::write_report(&run_dir, &run_dir.join("pages"), &opts)
        .expect("report.md, report.html and summary.json written");
    assert!(run_dir.join("pages/report.html").is_file());
    let junit_text = format!(
        "{}\nError: {}: {}\n",
        gauntlet::record::summary_line(&record),
        record.verdict.outcome,
        record.verdict.reason
    );
    std::fs::write(run_dir.join("junit-system-out.txt"), junit_text).expect("written");

    let hits = files_containing(out.path(), KEY.as_bytes());
    assert!(hits.is_empty(), "the key reached: {hits:?}");
    // The search itself works: it finds what it looks for.
    assert!(!files_containing(out.path(), b"gauntlet-proxy").is_empty());
}

/// A provider that answers every call with a redirect to another host, and that host:
/// the key must never reach it (reqwest, following, would carry `x-api-key` along).
#[tokio::test]
async fn a_provider_redirect_is_relayed_and_never_followed_with_the_key() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let elsewhere = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let elsewhere_port = elsewhere.local_addr().expect("addr").port();
    let seen = std::sync::Arc::new(tokio::sync::Mutex::new(Vec::<u8>::new()));
    let seen_by_host = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = elsewhere.accept().await {
            let mut buf = vec![0u8; 64 << 10];
            let n = s.read(&mut buf).await.unwrap_or(0);
            seen_by_host.lock().await.extend_from_slice(&buf[..n]);
            let _ = s
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}")
                .await;
        }
    });
    let provider = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let provider_url = format!(
        "http://127.0.0.1:{}/v1",
        provider.local_addr().expect("addr").port()
    );
    tokio::spawn(async move {
        while let Ok((mut s, _)) = provider.accept().await {
            let mut buf = vec![0u8; 64 << 10];
            let _ = s.read(&mut buf).await;
            let answer = format!(
                "HTTP/1.1 307 Temporary Redirect\r\nlocation: http://localhost:{elsewhere_port}/steal\r\ncontent-length: 0\r\n\r\n"
            );
            let _ = s.write_all(answer.as_bytes()).await;
        }
    });
    let proxy = Proxy::start(ProxyMode::Byok {
        upstream: provider_url,
        api_key: KEY.into(),
        retry: gauntlet::proxy::RetryPolicy::NONE,
    })
    .await
    .expect("proxy starts");
    for golden in ALL {
        let response = send(&proxy, golden, &request(golden, "redirected", false)).await;
        assert_eq!(
            response.status(),
            StatusCode::TEMPORARY_REDIRECT,
            "{}: the redirect is the provider's answer",
            golden.protocol
        );
    }
    let entries = proxy.shutdown().await;
    assert_eq!(entries.len(), ALL.len());
    assert_no_key(&entries);
    let seen = seen.lock().await;
    assert!(
        seen.is_empty(),
        "the proxy followed a redirect to another host: {}",
        String::from_utf8_lossy(&seen)
    );
}

/// A provider that echoes the key: in a whole error body, and in a stream whose chunk
/// boundary falls inside the key. The agent gets neither copy; the bodies arrive
/// otherwise as sent.
#[tokio::test]
async fn a_provider_that_echoes_the_key_never_hands_it_to_the_agent() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let provider = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!(
        "http://127.0.0.1:{}/v1",
        provider.local_addr().expect("addr").port()
    );
    tokio::spawn(async move {
        while let Ok((mut s, _)) = provider.accept().await {
            let mut buf = vec![0u8; 64 << 10];
            let n = s.read(&mut buf).await.unwrap_or(0);
            let request = String::from_utf8_lossy(&buf[..n]).into_owned();
            if request.contains("\"stream\":true") {
                let (a, b) = KEY.split_at(9);
                let events = [
                    format!("data: {{\"choices\":[{{\"delta\":{{\"content\":\"key {a}"),
                    format!("{b} seen\"}}}}]}}\n\n"),
                    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2}}\n\ndata: [DONE]\n\n".to_string(),
                ];
                let _ = s
                    .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
                    .await;
                for e in events {
                    let _ = s
                        .write_all(format!("{:x}\r\n{e}\r\n", e.len()).as_bytes())
                        .await;
                    let _ = s.flush().await;
                    tokio::time::sleep(std::time::Duration::from_millis(30)).await;
                }
                let _ = s.write_all(b"0\r\n\r\n").await;
            } else {
                let body =
                    format!("{{\"error\":{{\"message\":\"Incorrect API key provided: {KEY}\"}}}}");
                let _ = s
                    .write_all(
                        format!(
                            "HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                            body.len()
                        )
                        .as_bytes(),
                    )
                    .await;
            }
        }
    });
    let proxy = Proxy::start(ProxyMode::Byok {
        upstream: url,
        api_key: KEY.into(),
        retry: gauntlet::proxy::RetryPolicy::NONE,
    })
    .await
    .expect("proxy starts");
    let golden = ALL[0];
    let whole = send(&proxy, golden, &request(golden, "echo", false)).await;
    assert_eq!(whole.status(), StatusCode::UNAUTHORIZED);
    let whole = whole.text().await.expect("body");
    assert!(!whole.contains(KEY), "the key reached the agent: {whole}");
    assert!(
        whole.contains("Incorrect API key provided: [redacted]"),
        "{whole}"
    );
    let streamed = send(&proxy, golden, &request(golden, "echo", true)).await;
    let streamed = streamed.text().await.expect("stream");
    assert!(
        !streamed.contains(KEY),
        "the key reached the agent: {streamed}"
    );
    assert!(streamed.contains("key [redacted] seen"), "{streamed}");
    assert!(streamed.ends_with("data: [DONE]\n\n"), "{streamed}");
    let entries = proxy.shutdown().await;
    assert_no_key(&entries);
    assert_eq!(entries[1].input_tokens, Some(3), "{entries:?}");
}

#[tokio::test]
async fn a_call_cut_before_the_provider_answered_is_still_metered() {
    // The agent is killed at its deadline while the provider is still working on its
    // call: the provider may bill the call, so the meter must count it, as cut.
    let (proxy, fake) = byok().await;
    let golden = &ALL[0];
    for stream in [false, true] {
        let body = request(golden, "held", stream);
        let url = format!("{}/{}", proxy.base_url(), golden.path);
        let agent = tokio::spawn(async move {
            let _ = client()
                .post(url)
                .bearer_auth("gauntlet-proxy")
                .json(&body)
                .send()
                .await;
        });
        let before = fake.seen().len();
        // Wait (not time) until the provider holds the call, then kill the agent.
        while fake.seen().len() == before {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        agent.abort();
        let _ = agent.await;
    }
    let entries = proxy.shutdown().await;
    assert_eq!(entries.len(), 2, "{entries:?}");
    for (entry, stream) in entries.iter().zip([false, true]) {
        assert_eq!(entry.source, "upstream", "{entry:?}");
        assert_eq!(entry.stream, stream, "{entry:?}");
        assert_eq!((entry.input_tokens, entry.output_tokens), (None, None));
        let error = entry.error.as_deref().unwrap_or_default();
        assert!(
            error.contains("cut before the provider's answer"),
            "{entry:?}"
        );
    }
}

/// A loopback provider that answers one call per connection and then hangs up without
/// saying so (no `connection: close`), as a local model server restarting between
/// calls does; returns its address and how many connections it accepted.
async fn one_call_per_connection() -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = std::sync::Arc::clone(&accepted);
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            tokio::spawn(async move {
                let mut read = Vec::new();
                let mut buf = [0u8; 4096];
                // The head, then as many body bytes as it announces.
                let body_len = loop {
                    let Ok(n) = socket.read(&mut buf).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    read.extend_from_slice(&buf[..n]);
                    let text = String::from_utf8_lossy(&read).to_ascii_lowercase();
                    if let Some(end) = text.find("\r\n\r\n") {
                        let len = text
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:"))
                            .and_then(|v| v.trim().parse::<usize>().ok())
                            .unwrap_or(0);
                        break end + 4 + len;
                    }
                };
                while read.len() < body_len {
                    let Ok(n) = socket.read(&mut buf).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    read.extend_from_slice(&buf[..n]);
                }
                let body = json!({"id": "c", "object": "chat.completion", "model": "m",
                    "choices": [{"index": 0, "finish_reason": "stop",
                        "message": {"role": "assistant", "content": "ok"}}],
                    "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}})
                .to_string();
                let answer = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(answer.as_bytes()).await;
                let _ = socket.shutdown().await;
            });
        }
    });
    (format!("http://{addr}/v1"), accepted)
}

#[tokio::test]
async fn calls_on_one_agent_connection_survive_a_provider_that_hangs_up_after_each() {
    let (upstream, accepted) = one_call_per_connection().await;
    let proxy = Proxy::start(ProxyMode::Byok {
        upstream,
        api_key: KEY.into(),
        retry: gauntlet::proxy::RetryPolicy::NONE,
    })
    .await
    .expect("proxy starts");
    // One agent connection for every call.
    let agent = reqwest::Client::builder()
        .no_proxy()
        .pool_max_idle_per_host(1)
        .build()
        .expect("client");
    let calls = 20;
    for i in 0..calls {
        let response = agent
            .post(format!("{}/chat/completions", proxy.base_url()))
            .bearer_auth("gauntlet-proxy")
            .json(&json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]}))
            .send()
            .await
            .expect("sent");
        let status = response.status();
        let text = response.text().await.expect("body");
        assert_eq!(status, StatusCode::OK, "call {i}: {text}");
    }
    let entries = proxy.shutdown().await;
    assert_eq!(entries.len(), calls, "{entries:?}");
    for entry in &entries {
        assert_eq!(
            (entry.input_tokens, entry.output_tokens),
            (Some(5), Some(2)),
            "{entry:?}"
        );
        assert_eq!(entry.error, None, "{entry:?}");
    }
    assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), calls);
}
