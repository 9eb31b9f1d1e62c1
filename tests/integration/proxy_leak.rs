//! A hostile provider that echoes the key everywhere the proxy relays its words: in a
//! model list, in a 401 on a route other than the model-call path, in a response
//! header, and split across two text deltas of each streaming protocol (so no single
//! event, and no single chunk of bytes, holds it). The agent-side client gets none of
//! it, and the calls are still metered.

use gauntlet::proxy::{Proxy, ProxyMode, UsageEntry};
use reqwest::StatusCode;
use serde_json::json;
use tokio::io::AsyncWriteExt;

use super::proxy_provider::KEY;
use crate::support::client;

/// Where the key is split inside the streamed text.
const SPLIT: usize = 11;

fn chat_events() -> Vec<String> {
    let (a, b) = KEY.split_at(SPLIT);
    let delta = |text: &str| {
        format!(
            "data: {}\n\n",
            json!({"id": "c1", "object": "chat.completion.chunk", "model": "m",
                "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]})
        )
    };
    vec![
        delta(&format!("your key is {a}")),
        delta(&format!("{b}, enjoy")),
        format!(
            "data: {}\n\n",
            json!({"id": "c1", "object": "chat.completion.chunk", "model": "m",
                "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        ),
        format!(
            "data: {}\n\n",
            json!({"id": "c1", "object": "chat.completion.chunk", "model": "m", "choices": [],
                "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}})
        ),
        "data: [DONE]\n\n".to_owned(),
    ]
}

fn responses_events() -> Vec<String> {
    let (a, b) = KEY.split_at(SPLIT);
    let event = |value: serde_json::Value| {
        format!(
            "event: {}\ndata: {value}\n\n",
            value["type"].as_str().unwrap_or_default()
        )
    };
    let delta = |text: &str, seq: u64| {
        event(
            json!({"type": "response.output_text.delta", "sequence_number": seq,
            "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": text}),
        )
    };
    vec![
        event(json!({"type": "response.created", "sequence_number": 0,
            "response": {"id": "r1", "status": "in_progress", "output": []}})),
        delta(&format!("your key is {a}"), 1),
        delta(&format!("{b}, enjoy"), 2),
        event(
            json!({"type": "response.output_text.done", "sequence_number": 3,
            "item_id": "msg_1", "output_index": 0, "content_index": 0,
            "text": "your key is [withheld by the provider], enjoy"}),
        ),
        event(json!({"type": "response.completed", "sequence_number": 4,
            "response": {"id": "r1", "status": "completed", "output": [],
                "usage": {"input_tokens": 11, "output_tokens": 7, "total_tokens": 18,
                    "input_tokens_details": {"cached_tokens": 0},
                    "output_tokens_details": {"reasoning_tokens": 0}}}})),
    ]
}

fn messages_events() -> Vec<String> {
    let (a, b) = KEY.split_at(SPLIT);
    let event = |value: serde_json::Value| {
        format!(
            "event: {}\ndata: {value}\n\n",
            value["type"].as_str().unwrap_or_default()
        )
    };
    let delta = |text: &str| {
        event(json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "text_delta", "text": text}}))
    };
    vec![
        event(
            json!({"type": "message_start", "message": {"id": "m1", "type": "message",
            "role": "assistant", "model": "m", "content": [], "stop_reason": null,
            "usage": {"input_tokens": 11, "output_tokens": 1}}}),
        ),
        event(json!({"type": "content_block_start", "index": 0,
            "content_block": {"type": "text", "text": ""}})),
        delta(&format!("your key is {a}")),
        delta(&format!("{b}, enjoy")),
        event(json!({"type": "content_block_stop", "index": 0})),
        event(
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": 7}}),
        ),
        event(json!({"type": "message_stop"})),
    ]
}

async fn write_whole(
    s: &mut tokio::net::TcpStream,
    status: &str,
    headers: &str,
    body: &str,
) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\n{headers}content-length: {}\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).await?;
    s.write_all(body.as_bytes()).await
}

/// Each event in its own chunk, a pause between them, so that no read joins two.
async fn write_stream(s: &mut tokio::net::TcpStream, events: Vec<String>) -> std::io::Result<()> {
    s.write_all(
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n",
    )
    .await?;
    for e in events {
        s.write_all(format!("{:x}\r\n{e}\r\n", e.len()).as_bytes())
            .await?;
        s.flush().await?;
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    s.write_all(b"0\r\n\r\n").await
}

/// Answer one request (one per connection) as the hostile provider.
async fn answer(mut s: tokio::net::TcpStream) -> std::io::Result<()> {
    let request =
        String::from_utf8_lossy(&crate::support::read_request(&mut s).await?).into_owned();
    let line = request.lines().next().unwrap_or_default().to_owned();
    let stream = request.contains("\"stream\":true");
    if line.starts_with("GET /v1/models") {
        let body = json!({"object": "list", "data": [
            {"id": "m", "object": "model", "owned_by": format!("the owner of {KEY}")}]});
        write_whole(&mut s, "200 OK", "", &body.to_string()).await
    } else if line.starts_with("POST /v1/messages/count_tokens") {
        let body = json!({"type": "error", "error": {"type": "authentication_error",
            "message": format!("invalid x-api-key: {KEY}")}});
        write_whole(&mut s, "401 Unauthorized", "", &body.to_string()).await
    } else if line.starts_with("POST /v1/chat/completions") && stream {
        write_stream(&mut s, chat_events()).await
    } else if line.starts_with("POST /v1/chat/completions") {
        let body = json!({"id": "c1", "object": "chat.completion", "model": "m",
            "choices": [{"index": 0, "finish_reason": "stop",
                "message": {"role": "assistant", "content": "hello"}}],
            "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}});
        let headers = format!("x-request-id: req-{KEY}\r\nx-ratelimit-remaining-tokens: {KEY}\r\n");
        write_whole(&mut s, "200 OK", &headers, &body.to_string()).await
    } else if line.starts_with("POST /v1/responses") {
        write_stream(&mut s, responses_events()).await
    } else if line.starts_with("POST /v1/messages") {
        write_stream(&mut s, messages_events()).await
    } else {
        write_whole(&mut s, "404 Not Found", "", "{}").await
    }
}

async fn hostile() -> Proxy {
    let provider = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!(
        "http://127.0.0.1:{}/v1",
        provider.local_addr().expect("addr").port()
    );
    tokio::spawn(async move {
        while let Ok((s, _)) = provider.accept().await {
            tokio::spawn(async move {
                let _ = answer(s).await;
            });
        }
    });
    Proxy::start(ProxyMode::Byok {
        upstream: url,
        api_key: KEY.into(),
        retry: gauntlet::proxy::RetryPolicy::NONE,
    })
    .await
    .expect("proxy starts")
}

/// Everything the agent-side client received: status line, headers, body.
async fn received(response: reqwest::Response) -> (StatusCode, String) {
    let status = response.status();
    let mut text = String::new();
    for (name, value) in response.headers() {
        text.push_str(&format!(
            "{name}: {}\n",
            String::from_utf8_lossy(value.as_bytes())
        ));
    }
    text.push('\n');
    text.push_str(&response.text().await.expect("body"));
    (status, text)
}

fn assert_no_key(what: &str, received: &str) {
    assert!(
        !received.contains(KEY),
        "{what}: the key reached the agent:\n{received}"
    );
}

fn assert_log_clean(entries: &[UsageEntry]) {
    let text = serde_json::to_string(entries).expect("entries serialize");
    assert!(!text.contains(KEY), "the key reached the usage log: {text}");
}

async fn post(proxy: &Proxy, path: &str, body: serde_json::Value) -> reqwest::Response {
    client()
        .post(format!("{}/{path}", proxy.base_url()))
        .bearer_auth("gauntlet-proxy")
        .header("x-api-key", "gauntlet-proxy")
        .header("anthropic-version", "2023-06-01")
        .json(&body)
        .send()
        .await
        .expect("request sent")
}

#[tokio::test]
async fn a_model_list_that_echoes_the_key_reaches_the_agent_redacted() {
    let proxy = hostile().await;
    let response = client()
        .get(format!("{}/models", proxy.base_url()))
        .send()
        .await
        .expect("request sent");
    let (status, text) = received(response).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    assert_no_key("GET /v1/models", &text);
    assert!(text.contains("the owner of [redacted]"), "{text}");
    let entries = proxy.shutdown().await;
    assert_log_clean(&entries);
}

#[tokio::test]
async fn a_401_that_echoes_the_key_reaches_the_agent_redacted() {
    let proxy = hostile().await;
    let response = post(
        &proxy,
        "messages/count_tokens",
        json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]}),
    )
    .await;
    let (status, text) = received(response).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{text}");
    assert_no_key("a 401 from count_tokens", &text);
    assert!(text.contains("invalid x-api-key: [redacted]"), "{text}");
    let entries = proxy.shutdown().await;
    assert_log_clean(&entries);
}

#[tokio::test]
async fn a_response_header_that_echoes_the_key_reaches_the_agent_redacted() {
    let proxy = hostile().await;
    let response = post(
        &proxy,
        "chat/completions",
        json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]}),
    )
    .await;
    let (status, text) = received(response).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    assert_no_key("a response header", &text);
    assert!(text.contains("x-request-id: req-[redacted]"), "{text}");
    let entries = proxy.shutdown().await;
    assert_log_clean(&entries);
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(
        (entries[0].input_tokens, entries[0].output_tokens),
        (Some(11), Some(7)),
        "{entries:?}"
    );
}

/// The text the agent reads from a stream: its decoded text deltas, joined.
fn decoded_text(protocol: &str, stream: &str) -> String {
    let mut text = String::new();
    for line in stream.lines() {
        let Some(data) = line.strip_prefix("data: ") else {
            continue;
        };
        let Ok(value) = serde_json::from_str::<serde_json::Value>(data) else {
            continue;
        };
        let piece = match protocol {
            "chat" => value["choices"][0]["delta"]["content"].as_str(),
            "responses" if value["type"] == "response.output_text.delta" => value["delta"].as_str(),
            "messages" if value["type"] == "content_block_delta" => value["delta"]["text"].as_str(),
            _ => None,
        };
        text.push_str(piece.unwrap_or_default());
    }
    text
}

async fn a_stream_split_key(protocol: &str, path: &str, body: serde_json::Value) {
    let proxy = hostile().await;
    let response = post(&proxy, path, body).await;
    let (status, text) = received(response).await;
    assert_eq!(status, StatusCode::OK, "{protocol}: {text}");
    let decoded = decoded_text(protocol, &text);
    assert_no_key(protocol, &decoded);
    assert_no_key(protocol, &text);
    assert_eq!(
        decoded, "your key is [redacted], enjoy",
        "{protocol}: the rest of the text is as sent: {text}"
    );
    let entries = proxy.shutdown().await;
    assert_log_clean(&entries);
    assert_eq!(entries.len(), 1, "{protocol}: {entries:?}");
    let entry = &entries[0];
    assert!(entry.stream, "{protocol}: {entry:?}");
    assert_eq!(entry.error, None, "{protocol}: {entry:?}");
    assert_eq!(
        (entry.input_tokens, entry.output_tokens),
        (Some(11), Some(7)),
        "{protocol}: {entry:?}"
    );
}

#[tokio::test]
async fn a_key_split_across_two_chat_deltas_reaches_the_agent_redacted() {
    a_stream_split_key(
        "chat",
        "chat/completions",
        json!({"model": "m", "stream": true, "stream_options": {"include_usage": true},
            "messages": [{"role": "user", "content": "hi"}]}),
    )
    .await;
}

#[tokio::test]
async fn a_key_split_across_two_responses_deltas_reaches_the_agent_redacted() {
    a_stream_split_key(
        "responses",
        "responses",
        json!({"model": "m", "stream": true, "input": "hi"}),
    )
    .await;
}

#[tokio::test]
async fn a_key_split_across_two_messages_deltas_reaches_the_agent_redacted() {
    a_stream_split_key(
        "messages",
        "messages",
        json!({"model": "m", "stream": true, "max_tokens": 64,
            "messages": [{"role": "user", "content": "hi"}]}),
    )
    .await;
}
