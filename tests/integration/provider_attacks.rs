//! The hostile agent's and the hostile provider's ways at the provider-fault policy
//! (docs/provider-faults.md), each run for real through the metering proxy: what an
//! agent's own request brings about is no provider fault, a call the proxy was still
//! absorbing a fault on when it was cut ends on that fault, an error answer the provider
//! billed is metered and never sent again, and the key a provider echoes stays out of
//! the recorded error strings wherever the excerpt is cut.

use std::time::Duration;

use gauntlet::evidence::infra::infra_cause;
use gauntlet::evidence::provider::ProviderFault;
use gauntlet::proxy::{Proxy, ProxyMode, RetryPolicy, UsageEntry};
use gauntlet_fake_provider::{Config as FakeConfig, FakeProvider, Faults};
use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;

use crate::support::client;

const FAKE_KEY: &str = "sk-fake-provider-key";

fn retrying(retries: u32, secs: u64) -> RetryPolicy {
    RetryPolicy {
        retries,
        max_wait: Duration::from_secs(secs),
    }
}

async fn byok(upstream: String, key: &str, retry: RetryPolicy) -> Proxy {
    Proxy::start(ProxyMode::Byok {
        upstream,
        api_key: key.into(),
        retry,
    })
    .await
    .expect("the proxy starts")
}

/// Read an answer to its end; its status.
async fn read_all(response: reqwest::Response) -> u16 {
    let status = response.status().as_u16();
    let _ = response.bytes().await;
    status
}

fn responses_request(stream: bool, max_output_tokens: u64) -> Value {
    json!({"model": "m", "stream": stream, "max_output_tokens": max_output_tokens,
        "input": [{"type": "message", "role": "user",
            "content": [{"type": "input_text", "text": "verify the balance"}]}]})
}

/// An agent that sets a tiny `max_output_tokens` gets a Responses stream that ends with
/// `response.incomplete`: the answer it asked for, not a provider's failure. Marked as
/// a fault, every trial's last call would be one an agent can make the provider's at
/// will. The call is metered as billed, its ending kept as its error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_stopped_at_the_agents_own_output_limit_is_no_provider_fault() {
    let fake = FakeProvider::start(FakeConfig {
        answer_chunks: 6,
        ..FakeConfig::default()
    })
    .await
    .expect("the fake provider starts");
    let proxy = byok(fake.base_url(), FAKE_KEY, retrying(2, 5)).await;
    for stream in [true, false] {
        let response = client()
            .post(format!("{}/responses", proxy.base_url()))
            .json(&responses_request(stream, 2))
            .send()
            .await
            .expect("the proxy answers");
        assert_eq!(read_all(response).await, 200);
    }
    let entries = proxy.shutdown().await;
    assert_eq!(entries.len(), 2, "{entries:?}");
    let streamed = &entries[0];
    assert!(
        streamed
            .error
            .as_deref()
            .is_some_and(|e| e.contains("response.incomplete")),
        "the ending is kept: {streamed:?}"
    );
    for e in &entries {
        assert_eq!(e.fault, None, "the agent's own limit: {e:?}");
        assert!(e.retries.is_empty(), "{e:?}");
        assert_eq!(e.output_tokens, Some(2), "{e:?}");
    }
    assert_eq!(infra_cause(true, &entries), None);
    let billed = &fake.ledger().keys[FAKE_KEY];
    assert_eq!(billed.calls, 2, "{billed:?}");
    assert_eq!(billed.billed.output, 4, "{billed:?}");
}

/// The provider rate-limits a call and asks for a wait the policy allows; the trial
/// ends (its deadline) while the proxy waits. The call ends on the provider's fault, so
/// a trial that stopped there is the provider's failure; an agent that hangs up before
/// any answer came still gets no fault (`fake_provider::an_agent_cannot_make_its_own_
/// failure_the_providers`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_cut_while_the_proxy_waits_to_retry_ends_on_the_providers_fault() {
    let fake = FakeProvider::start(FakeConfig {
        faults: Faults {
            rate_limited: 1.0,
            retry_after_secs: 30,
            ..Faults::default()
        },
        ..FakeConfig::default()
    })
    .await
    .expect("the fake provider starts");
    let proxy = byok(fake.base_url(), FAKE_KEY, retrying(3, 60)).await;
    let url = format!("{}/responses", proxy.base_url());
    let call = tokio::spawn(async move {
        client()
            .post(url)
            .json(&responses_request(true, 100))
            .send()
            .await
    });
    // The provider counted its 429; the trial ends (the agent's deadline) and the
    // proxy shuts down while it waits out the 30 s the provider asked for: past the
    // shutdown's grace, the call is cut in that wait.
    while fake
        .ledger()
        .keys
        .get(FAKE_KEY)
        .is_none_or(|k| k.rate_limited == 0)
    {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let entries = proxy.shutdown().await;
    call.abort();
    let _ = call.await;
    assert_eq!(entries.len(), 1, "{entries:?}");
    let e = &entries[0];
    assert_eq!(e.fault, Some(ProviderFault::RateLimited), "{e:?}");
    assert_eq!(e.status, 429, "{e:?}");
    assert_eq!(e.retries.len(), 1, "{e:?}");
    assert_eq!(e.retries[0].waited_ms, 30_000, "{e:?}");
    let cause = infra_cause(true, &entries).expect("the provider's failure");
    assert_eq!(cause.fault, ProviderFault::RateLimited);
    assert_eq!(fake.ledger().keys[FAKE_KEY].calls, 1, "tried once");
}

/// A hostile provider on loopback: answers each call with the next of `answers` (the
/// last one again once they run out), counting the calls it was sent.
async fn scripted_provider(
    answers: Vec<String>,
) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!(
        "http://127.0.0.1:{}/v1",
        listener.local_addr().expect("addr").port()
    );
    let count = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&count);
    let answers = Arc::new(answers);
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let (count, answers) = (Arc::clone(&counted), Arc::clone(&answers));
            tokio::spawn(async move {
                // One request per connection: the answer says `connection: close`.
                if crate::support::read_request(&mut s).await.is_err() {
                    return;
                }
                let n = count.fetch_add(1, Ordering::SeqCst);
                let answer = &answers[n.min(answers.len() - 1)];
                let _ = s.write_all(answer.as_bytes()).await;
                let _ = s.shutdown().await;
            });
        }
    });
    (url, count)
}

fn http(status: &str, content_type: &str, headers: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\n{headers}content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
}

fn chat_ok() -> String {
    let body = json!({"id": "c1", "object": "chat.completion", "model": "m",
        "choices": [{"index": 0, "finish_reason": "stop",
            "message": {"role": "assistant", "content": "hello"}}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}});
    http("200 OK", "application/json", "", &body.to_string())
}

fn chat_request(stream: bool) -> Value {
    json!({"model": "m", "stream": stream,
        "messages": [{"role": "user", "content": "verify the balance"}]})
}

/// A provider that answers 503 with a stream it billed (its events carry usage): the
/// call was served, so it is metered and passed on, never sent again; read as JSON
/// only, its usage was lost and the call sent again, billed twice and metered once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_answer_that_streams_its_usage_is_metered_and_never_sent_again() {
    let events = [
        json!({"id": "c1", "object": "chat.completion.chunk", "choices": [{"index": 0,
            "delta": {"content": "half an answer"}}]}),
        json!({"id": "c1", "object": "chat.completion.chunk", "choices": [],
            "usage": {"prompt_tokens": 40, "completion_tokens": 9, "total_tokens": 49}}),
    ]
    .iter()
    .map(|e| format!("data: {e}\n\n"))
    .collect::<String>();
    let (url, sent) = scripted_provider(vec![
        http("503 Service Unavailable", "text/event-stream", "", &events),
        chat_ok(),
    ])
    .await;
    let proxy = byok(url, "sk-hostile-provider-key", retrying(2, 5)).await;
    let response = client()
        .post(format!("{}/chat/completions", proxy.base_url()))
        .json(&chat_request(true))
        .send()
        .await
        .expect("the proxy answers");
    assert_eq!(read_all(response).await, 503);
    let entries = proxy.shutdown().await;
    assert_eq!(entries.len(), 1, "{entries:?}");
    let e = &entries[0];
    assert!(
        e.retries.is_empty(),
        "a billed call is not sent again: {e:?}"
    );
    assert_eq!(
        (e.input_tokens, e.output_tokens),
        (Some(40), Some(9)),
        "{e:?}"
    );
    assert_eq!(e.fault, Some(ProviderFault::ServerError), "{e:?}");
    assert_eq!(sent.load(std::sync::atomic::Ordering::SeqCst), 1);
}

const ECHOED_KEY: &str = "sk-hostile-echo-0123456789abcdef";

/// No run of ten characters of the key is anywhere in `text`.
fn assert_no_key_piece(what: &str, text: &str) {
    for piece in ECHOED_KEY.as_bytes().windows(10) {
        let piece = String::from_utf8_lossy(piece);
        assert!(
            !text.contains(piece.as_ref()),
            "{what} holds `{piece}`: {text}"
        );
    }
}

/// A provider that echoes the key in its errors (as some echo a bad key), where what
/// the agent sent can move it (the model name before it): the key straddles the cut of
/// the recorded excerpt in a 429 the proxy retried, and comes spelled with JSON escapes
/// in a 503 body of no error shape. Neither the retry's error nor the entry's keeps any
/// of it; the agent's answer neither.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_the_provider_echoes_stays_out_of_the_recorded_errors_wherever_it_is_cut() {
    let padding = "m".repeat(285);
    let straddling = json!({"error": {"message": format!("{padding}{ECHOED_KEY} is over its limit"),
        "type": "rate_limit_error"}});
    let escaped_key = format!("\\u0073{}", &ECHOED_KEY[1..]);
    let escaped = format!("{{\"detail\": \"overloaded for key {escaped_key}\"}}");
    let (url, sent) = scripted_provider(vec![
        http(
            "429 Too Many Requests",
            "application/json",
            "retry-after: 0\r\n",
            &straddling.to_string(),
        ),
        http("503 Service Unavailable", "application/json", "", &escaped),
    ])
    .await;
    let proxy = byok(url, ECHOED_KEY, retrying(1, 5)).await;
    let response = client()
        .post(format!("{}/chat/completions", proxy.base_url()))
        .json(&chat_request(false))
        .send()
        .await
        .expect("the proxy answers");
    assert_eq!(response.status().as_u16(), 503);
    let body = response.text().await.expect("the body");
    assert_no_key_piece("the agent's answer", &body);
    let entries: Vec<UsageEntry> = proxy.shutdown().await;
    assert_eq!(sent.load(std::sync::atomic::Ordering::SeqCst), 2);
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(entries[0].retries.len(), 1, "{entries:?}");
    assert!(
        entries[0].retries[0].error.contains("[redacted]"),
        "{entries:?}"
    );
    assert_no_key_piece(
        "the usage entry",
        &serde_json::to_string(&entries).expect("entries serialize"),
    );
}
