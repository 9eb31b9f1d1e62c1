//! The metering proxy over real sockets: scripted answers chosen from request content,
//! deterministic metering, and byok forwarding against a fake upstream served here.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use futures_util::stream::{self, StreamExt};

use crate::support::client;
use bytes::Bytes;
use gauntlet::proxy::{Proxy, ProxyMode, UsageEntry};
use gauntlet::spec::{Script, ScriptStep};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};

const FINAL_TEXT: &str = "all done: the file holds hello";

fn three_step_flow() -> Script {
    Script {
        capability: "balance".into(),
        steps: vec![
            ScriptStep::WriteFile {
                path: "out/a.txt".into(),
                content: "hello\n".into(),
            },
            ScriptStep::Shell {
                command: "cat out/a.txt".into(),
                expect: None,
            },
            ScriptStep::Final {
                text: FINAL_TEXT.into(),
            },
        ],
    }
}

async fn scripted(script: Script) -> Proxy {
    Proxy::start(ProxyMode::Scripted {
        script,
        model: "scripted-model".into(),
        latency: std::time::Duration::ZERO,
    })
    .await
    .expect("proxy starts")
}

fn tool(name: &str) -> Value {
    json!({"type": "function", "function": {"name": name, "description": name,
        "parameters": {"type": "object", "properties": {}}}})
}

/// A chat request offering `tools`, whose conversation holds `results` tool results.
fn chat_request(tools: &[&str], results: usize, stream: bool) -> Value {
    let mut messages = vec![
        json!({"role": "system", "content": "you are a qa agent"}),
        json!({"role": "user", "content": "verify the balance capability"}),
    ];
    for i in 0..results {
        messages.push(
            json!({"role": "assistant", "content": null, "tool_calls": [{
            "id": format!("call_{i}"), "type": "function",
            "function": {"name": "bash", "arguments": "{}"}}]}),
        );
        messages.push(json!({"role": "tool", "tool_call_id": format!("call_{i}"),
            "content": format!("result {i}")}));
    }
    let mut body = json!({"model": "gpt-test", "messages": messages, "stream": stream});
    if !tools.is_empty() {
        body["tools"] = Value::Array(tools.iter().map(|t| tool(t)).collect());
    }
    body
}

fn ceil4(n: usize) -> u64 {
    n.div_ceil(4) as u64
}

fn input_tokens(request: &Value) -> u64 {
    ceil4(request["messages"].to_string().len())
}

async fn post(base: &str, body: &Value) -> (StatusCode, Value) {
    let response = client()
        .post(format!("{base}/chat/completions"))
        .bearer_auth("client-key")
        .json(body)
        .send()
        .await
        .expect("request sent");
    let status = response.status();
    let value = response.json().await.expect("json body");
    (status, value)
}

/// The `data:` payloads of an SSE response, in order.
async fn post_stream(base: &str, body: &Value) -> Vec<String> {
    let response = client()
        .post(format!("{base}/chat/completions"))
        .json(body)
        .send()
        .await
        .expect("request sent");
    assert_eq!(response.status(), StatusCode::OK);
    let text = response.text().await.expect("stream body");
    sse_data(&text)
}

fn sse_data(text: &str) -> Vec<String> {
    text.split("\n\n")
        .filter_map(|event| event.strip_prefix("data: "))
        .map(str::to_owned)
        .collect()
}

/// What a reply says, whichever way it was delivered.
#[derive(Debug, PartialEq)]
struct Said {
    content: Option<String>,
    tool_call: Option<(String, String, Value)>,
    finish_reason: String,
}

fn said(completion: &Value) -> Said {
    let choice = &completion["choices"][0];
    let message = &choice["message"];
    let tool_call = message["tool_calls"].get(0).map(|call| {
        let args = call["function"]["arguments"]
            .as_str()
            .expect("arguments are a string");
        (
            call["id"].as_str().unwrap_or_default().to_owned(),
            call["function"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            serde_json::from_str(args).expect("arguments are json"),
        )
    });
    Said {
        content: message["content"].as_str().map(str::to_owned),
        tool_call,
        finish_reason: choice["finish_reason"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    }
}

/// Reassemble streamed chunks; returns what was said and the final usage chunk.
fn reassemble(events: &[String]) -> (Said, Value) {
    assert_eq!(
        events.last().map(String::as_str),
        Some("[DONE]"),
        "stream ends with [DONE]"
    );
    let chunks: Vec<Value> = events[..events.len() - 1]
        .iter()
        .map(|e| serde_json::from_str(e).expect("chunk is json"))
        .collect();
    let usage_chunk = chunks.last().expect("a usage chunk").clone();
    assert_eq!(
        usage_chunk["choices"],
        json!([]),
        "last chunk carries only usage"
    );
    let mut content: Option<String> = None;
    let (mut id, mut name, mut args) = (String::new(), String::new(), String::new());
    let mut finish = String::new();
    for chunk in &chunks[..chunks.len() - 1] {
        let choice = &chunk["choices"][0];
        let delta = &choice["delta"];
        if let Some(piece) = delta["content"].as_str() {
            content.get_or_insert_with(String::new).push_str(piece);
        }
        if let Some(call) = delta["tool_calls"].get(0) {
            id.push_str(call["id"].as_str().unwrap_or_default());
            name.push_str(call["function"]["name"].as_str().unwrap_or_default());
            args.push_str(call["function"]["arguments"].as_str().unwrap_or_default());
        }
        if let Some(reason) = choice["finish_reason"].as_str() {
            finish = reason.to_owned();
        }
    }
    let tool_call = (!name.is_empty()).then(|| {
        (
            id,
            name,
            serde_json::from_str(&args).expect("arguments reassemble to json"),
        )
    });
    let content = content.filter(|c| !(c.is_empty() && tool_call.is_some()));
    (
        Said {
            content,
            tool_call,
            finish_reason: finish,
        },
        usage_chunk["usage"].clone(),
    )
}

fn call(id: &str, name: &str, args: Value) -> Option<(String, String, Value)> {
    Some((id.to_owned(), name.to_owned(), args))
}

#[tokio::test]
async fn scripted_replies_follow_tool_results_not_request_order() {
    let proxy = scripted(three_step_flow()).await;
    let base = proxy.base_url();
    let tools = ["write_file", "bash"];

    // Out of order on purpose: final first, then step 1, then step 0.
    let (status, final_reply) = post(&base, &chat_request(&tools, 2, false)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(final_reply["object"], "chat.completion");
    assert_eq!(
        said(&final_reply),
        Said {
            content: Some(FINAL_TEXT.into()),
            tool_call: None,
            finish_reason: "stop".into()
        }
    );
    let (_, step1) = post(&base, &chat_request(&tools, 1, false)).await;
    assert_eq!(
        said(&step1).tool_call,
        call("call_1", "bash", json!({"command": "cat out/a.txt"}))
    );
    assert_eq!(said(&step1).finish_reason, "tool_calls");
    let (_, step0) = post(&base, &chat_request(&tools, 0, false)).await;
    assert_eq!(
        said(&step0).tool_call,
        call(
            "call_0",
            "write_file",
            json!({"path": "out/a.txt", "content": "hello\n"})
        )
    );

    // A side request gets text and advances nothing; repeats get the same answer.
    let (_, side) = post(&base, &chat_request(&[], 1, false)).await;
    assert_eq!(said(&side).content.as_deref(), Some("ok"));
    assert_eq!(said(&side).tool_call, None);
    let (_, again) = post(&base, &chat_request(&tools, 0, false)).await;
    assert_eq!(said(&again), said(&step0));
    let mut empty_tools = chat_request(&[], 0, false);
    empty_tools["tools"] = json!([]);
    let (_, side_again) = post(&base, &empty_tools).await;
    assert_eq!(
        said(&side_again),
        said(&side),
        "an empty tool list is a side request"
    );
    let (_, again) = post(&base, &chat_request(&tools, 1, false)).await;
    assert_eq!(said(&again), said(&step1));

    let entries = proxy.shutdown().await;
    assert_eq!(entries.len(), 7);
    let seqs: Vec<u64> = entries.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, [0, 1, 2, 3, 4, 5, 6]);
    let replies = [&final_reply, &step1, &step0, &side];
    let requests = [
        chat_request(&tools, 2, false),
        chat_request(&tools, 1, false),
        chat_request(&tools, 0, false),
        chat_request(&[], 1, false),
    ];
    let outputs = [
        FINAL_TEXT.len(),
        json!({"command": "cat out/a.txt"}).to_string().len(),
        json!({"content": "hello\n", "path": "out/a.txt"})
            .to_string()
            .len(),
        "ok".len(),
    ];
    for i in 0..4 {
        let entry = &entries[i];
        assert_eq!(entry.protocol, "chat");
        assert_eq!(entry.path, "/v1/chat/completions");
        assert_eq!(entry.source, "scripted");
        assert_eq!(entry.status, 200);
        assert_eq!(entry.model.as_deref(), Some("gpt-test"));
        assert!(!entry.stream);
        assert_eq!(entry.error, None);
        assert_eq!(
            entry.input_tokens,
            Some(input_tokens(&requests[i])),
            "entry {i}"
        );
        assert_eq!(entry.output_tokens, Some(ceil4(outputs[i])), "entry {i}");
        assert_eq!(
            replies[i]["usage"]["prompt_tokens"],
            json!(entry.input_tokens)
        );
        assert_eq!(
            replies[i]["usage"]["completion_tokens"],
            json!(entry.output_tokens)
        );
    }
}

// On a multi-thread runtime, to show the proxy runs on whichever runtime starts it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripted_streams_reassemble_to_the_same_replies() {
    let proxy = scripted(three_step_flow()).await;
    let base = proxy.base_url();
    let tools = ["write_file", "bash"];
    for results in 0..3 {
        let (_, whole) = post(&base, &chat_request(&tools, results, false)).await;
        let events = post_stream(&base, &chat_request(&tools, results, true)).await;
        assert!(events.len() > 4, "a reply spans several chunks");
        let (streamed, usage) = reassemble(&events);
        assert_eq!(streamed, said(&whole), "step {results}");
        assert_eq!(usage, whole["usage"], "step {results}");
    }
    // Sent even though this client did not ask for include_usage.
    let events = post_stream(&base, &chat_request(&[], 0, true)).await;
    let (side, usage) = reassemble(&events);
    assert_eq!(side.content.as_deref(), Some("ok"));
    assert_eq!(usage["completion_tokens"], 1);

    let entries = proxy.usage();
    assert_eq!(entries.len(), 7);
    let streamed: Vec<bool> = entries.iter().map(|e| e.stream).collect();
    assert_eq!(streamed, [false, true, false, true, false, true, true]);
    // Streaming does not change what is metered.
    for pair in entries[..6].chunks(2) {
        assert_eq!(pair[0].input_tokens, pair[1].input_tokens);
        assert_eq!(pair[0].output_tokens, pair[1].output_tokens);
    }
    proxy.shutdown().await;
}

/// An agent whose tool never carries a step out (Claude Code's Write refusing a file it
/// has not read leaves no tool result) asks for the same step again and again: after a
/// few repeats the proxy ends the script with a text saying so, noted as abandoned, so
/// the turn ends at once as the harness's failure instead of looping to its deadline.
#[tokio::test]
async fn a_step_asked_for_again_and_again_is_abandoned_not_looped_on() {
    use gauntlet::evidence::usage::{script_failure, script_note};
    let proxy = scripted(three_step_flow()).await;
    let base = proxy.base_url();
    let tools = ["write_file", "bash"];
    let mut replies = Vec::new();
    for _ in 0..6 {
        let (_, reply) = post(&base, &chat_request(&tools, 0, false)).await;
        replies.push(said(&reply));
    }
    for r in &replies[..4] {
        assert_eq!(
            r.tool_call, replies[0].tool_call,
            "retries get the step again"
        );
        assert!(r.tool_call.is_some());
    }
    for r in &replies[4..] {
        assert_eq!(r.tool_call, None);
        assert!(
            r.content
                .as_deref()
                .is_some_and(|c| c.contains("scripted step 0")),
            "{r:?}"
        );
    }
    let entries = proxy.shutdown().await;
    let notes: Vec<&str> = entries.iter().filter_map(|e| e.reply.as_deref()).collect();
    assert_eq!(notes[0], script_note::step(0, "write_file"));
    assert_eq!(notes[4], script_note::abandoned(0, 5));
    let why = script_failure(2, &entries).expect("the turn's script failed");
    assert!(why.contains("step 0 asked for 5 times"), "{why}");
}

#[tokio::test]
async fn generic_steps_map_onto_the_offered_tools() {
    let proxy = scripted(three_step_flow()).await;
    let base = proxy.base_url();
    let shell_step = |tools: &'static [&'static str]| chat_request(tools, 1, false);
    let cases: [(&[&str], &str, Value); 4] = [
        (&["shell"], "shell", json!({"command": "cat out/a.txt"})),
        (&["bash"], "bash", json!({"command": "cat out/a.txt"})),
        (
            &["exec_command"],
            "exec_command",
            json!({"cmd": "cat out/a.txt"}),
        ),
        (
            &["exec_command", "Bash", "shell"],
            "shell",
            json!({"command": "cat out/a.txt"}),
        ),
    ];
    for (tools, name, args) in cases {
        let (_, reply) = post(&base, &shell_step(tools)).await;
        assert_eq!(
            said(&reply).tool_call,
            call("call_1", name, args),
            "offered {tools:?}"
        );
    }

    // No write tool: the shell writes the file with a heredoc.
    let (_, reply) = post(&base, &chat_request(&["bash"], 0, false)).await;
    let (_, name, args) = said(&reply).tool_call.expect("a tool call");
    assert_eq!(name, "bash");
    let command = args["command"].as_str().expect("a command");
    assert!(command.starts_with("mkdir -p -- out && cat > out/a.txt <<'GAUNTLET_EOF'\nhello\n"));

    // Nothing can run the step: a side request, answered text; the entry says why.
    let (status, reply) = post(&base, &chat_request(&["web_search"], 1, false)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(said(&reply).tool_call, None);
    assert_eq!(said(&reply).content.as_deref(), Some("ok"));
    assert_eq!(said(&reply).finish_reason, "stop");
    let entries = proxy.shutdown().await;
    let last = entries.last().expect("entries");
    assert!(last
        .reply
        .as_deref()
        .is_some_and(|e| e.starts_with("side request") && e.contains("web_search")));
    assert!(entries.iter().all(|e| e.error.is_none()));
    assert!(entries[..entries.len() - 1]
        .iter()
        .all(|e| e.reply.as_deref().is_some_and(|r| r.starts_with("step "))));
}

#[tokio::test]
async fn malformed_bodies_get_400_and_are_recorded() {
    let proxy = scripted(three_step_flow()).await;
    let base = proxy.base_url();
    let raw = client()
        .post(format!("{base}/chat/completions"))
        .body("{not json")
        .send()
        .await
        .expect("request sent");
    assert_eq!(raw.status(), StatusCode::BAD_REQUEST);
    let error: Value = raw.json().await.expect("json error");
    assert_eq!(error["error"]["type"], "invalid_request_error");
    assert!(error["error"]["message"]
        .as_str()
        .is_some_and(|m| m.contains("not json")));

    let (status, error) = post(&base, &json!({"model": "m"})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(error["error"]["message"]
        .as_str()
        .is_some_and(|m| m.contains("messages")));

    // The proxy keeps serving, models are listed, and nothing is lost.
    let (status, _) = post(&base, &chat_request(&["bash"], 2, false)).await;
    assert_eq!(status, StatusCode::OK);
    let models: Value = client()
        .get(format!("{base}/models"))
        .send()
        .await
        .expect("models")
        .json()
        .await
        .expect("models json");
    assert_eq!(models["data"][0]["id"], "scripted-model");

    let entries = proxy.shutdown().await;
    let statuses: Vec<u16> = entries.iter().map(|e| e.status).collect();
    assert_eq!(statuses, [400, 400, 200], "models are not metered");
    assert!(entries[0]
        .error
        .as_deref()
        .is_some_and(|e| e.contains("not json")));
    assert!(entries[1].error.is_some());
    assert_eq!(entries[0].input_tokens, None);
}

// ---- byok against a fake upstream ----

const KEY: &str = "sk-test-configured-secret";

/// What the fake upstream received, and the trigger that breaks a `cut` stream.
#[derive(Debug, Default)]
struct Fake {
    seen: Mutex<Vec<Seen>>,
    /// A `cut` stream breaks only once the test says so, which is after the agent
    /// received the stream's head, so the break happens mid-stream.
    cut: tokio::sync::Notify,
}

impl Fake {
    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().expect("seen lock").clone()
    }
}

#[derive(Debug, Clone)]
struct Seen {
    authorization: Option<String>,
    body: Value,
}

type FakeBody = UnsyncBoxBody<Bytes, std::io::Error>;

fn full(status: StatusCode, body: String) -> Response<FakeBody> {
    let mut response = Response::new(
        Full::new(Bytes::from(body))
            .map_err(|n| match n {})
            .boxed_unsync(),
    );
    *response.status_mut() = status;
    response
}

const NON_STREAM_REPLY: &str = r#"{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":20,"completion_tokens":9,"total_tokens":29,"prompt_tokens_details":{"cached_tokens":5},"completion_tokens_details":{"reasoning_tokens":4}}}"#;
const USAGE_CHUNK: &str = r#"{"choices":[],"usage":{"prompt_tokens":11,"completion_tokens":7,"prompt_tokens_details":{"cached_tokens":3},"completion_tokens_details":{"reasoning_tokens":2}}}"#;

/// Replies by the request's `model`: `rate-limited` (429), `echo-key` (401 naming the
/// key it got), `cut` (a stream broken mid-way); otherwise a normal reply, streamed
/// when asked, with a usage chunk only when `include_usage` was asked.
async fn fake_reply(request: Request<Incoming>, fake: Arc<Fake>) -> Response<FakeBody> {
    let authorization = request
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let bytes = request
        .into_body()
        .collect()
        .await
        .map(|c| c.to_bytes())
        .unwrap_or_default();
    let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    fake.seen.lock().expect("seen lock").push(Seen {
        authorization: authorization.clone(),
        body: body.clone(),
    });
    let model = body["model"].as_str().unwrap_or_default();
    if model == "echo-key" {
        let message = format!(
            "Incorrect API key provided: {}",
            authorization.unwrap_or_default()
        );
        return full(
            StatusCode::UNAUTHORIZED,
            json!({"error": {"message": message}}).to_string(),
        );
    }
    if authorization.as_deref() != Some(&format!("Bearer {KEY}")) {
        return full(
            StatusCode::UNAUTHORIZED,
            r#"{"error":{"message":"wrong key"}}"#.into(),
        );
    }
    if model == "rate-limited" {
        let mut response = full(
            StatusCode::TOO_MANY_REQUESTS,
            r#"{"error":{"message":"slow down","type":"rate_limit_exceeded"}}"#.into(),
        );
        let headers = response.headers_mut();
        headers.insert("retry-after", hyper::header::HeaderValue::from_static("7"));
        headers.insert("x-internal", hyper::header::HeaderValue::from_static("no"));
        return response;
    }
    if body["stream"] != json!(true) {
        return full(StatusCode::OK, NON_STREAM_REPLY.into());
    }
    let events: Vec<Result<Frame<Bytes>, std::io::Error>> = vec![
        r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"},"finish_reason":null}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":"stop"}]}"#,
    ]
    .into_iter()
    .map(|chunk| Ok(Frame::data(Bytes::from(format!("data: {chunk}\n\n")))))
    .collect();
    let frames = if model == "hang" {
        stream::iter(events.into_iter().take(1))
            .chain(stream::pending())
            .boxed()
    } else if model == "cut" {
        let first = events.into_iter().take(1);
        let cut = async move {
            fake.cut.notified().await;
            Err(std::io::Error::other("upstream died"))
        };
        stream::iter(first).chain(stream::once(cut)).boxed()
    } else {
        let mut events = events;
        if body["stream_options"]["include_usage"] == json!(true) {
            events.push(Ok(Frame::data(Bytes::from(format!(
                "data: {USAGE_CHUNK}\n\n"
            )))));
        }
        events.push(Ok(Frame::data(Bytes::from("data: [DONE]\n\n"))));
        stream::iter(events).boxed()
    };
    let mut response = Response::new(StreamBody::new(frames).boxed_unsync());
    response.headers_mut().insert(
        "content-type",
        hyper::header::HeaderValue::from_static("text/event-stream"),
    );
    response
}

/// A fake provider on 127.0.0.1; returns its base URL and its state.
async fn fake_upstream() -> (String, Arc<Fake>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let fake = Arc::new(Fake::default());
    let log = Arc::clone(&fake);
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let log = Arc::clone(&log);
            let service = hyper::service::service_fn(move |request| {
                let log = Arc::clone(&log);
                async move { Ok::<_, Infallible>(fake_reply(request, log).await) }
            });
            tokio::spawn(
                hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service),
            );
        }
    });
    (format!("http://{addr}/v1"), fake)
}

async fn byok() -> (Proxy, Arc<Fake>) {
    let (upstream, fake) = fake_upstream().await;
    let proxy = Proxy::start(ProxyMode::Byok {
        upstream,
        api_key: KEY.into(),
        retry: gauntlet::proxy::RetryPolicy::NONE,
    })
    .await
    .expect("proxy starts");
    (proxy, fake)
}

fn byok_request(model: &str, stream: bool) -> Value {
    json!({"model": model, "messages": [{"role": "user", "content": "hi"}], "stream": stream})
}

fn assert_no_key(entries: &[UsageEntry]) {
    let text = serde_json::to_string(entries).expect("entries serialize");
    assert!(
        !text.contains(KEY),
        "the api key leaked into the usage log: {text}"
    );
}

#[tokio::test]
async fn byok_forwards_with_the_configured_key_and_meters_usage() {
    let (proxy, fake) = byok().await;
    let response = client()
        .post(format!("{}/chat/completions", proxy.base_url()))
        .bearer_auth("client-key")
        .json(&byok_request("gpt-real", false))
        .send()
        .await
        .expect("request sent");
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response.text().await.expect("body"),
        NON_STREAM_REPLY,
        "body passed unchanged"
    );

    let seen = fake.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        seen[0].authorization.as_deref(),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(seen[0].body, byok_request("gpt-real", false));

    let entries = proxy.shutdown().await;
    assert_eq!(entries.len(), 1);
    let entry = &entries[0];
    assert_eq!(
        (entry.source.as_str(), entry.status, entry.stream),
        ("upstream", 200, false)
    );
    assert_eq!(entry.model.as_deref(), Some("gpt-real"));
    assert_eq!(
        (
            entry.input_tokens,
            entry.output_tokens,
            entry.cached_input_tokens,
            entry.reasoning_tokens
        ),
        (Some(20), Some(9), Some(5), Some(4))
    );
    assert_eq!(entry.error, None);
    assert_no_key(&entries);
}

#[tokio::test]
async fn byok_streams_get_usage_injected_and_metered() {
    let (proxy, fake) = byok().await;
    let base = proxy.base_url();

    // The client did not ask for usage: the proxy asks, meters, and hides the chunk.
    let events = post_stream(&base, &byok_request("gpt-real", true)).await;
    assert_eq!(events.last().map(String::as_str), Some("[DONE]"));
    let chunks: Vec<Value> = events[..events.len() - 1]
        .iter()
        .map(|e| serde_json::from_str(e).expect("chunk json"))
        .collect();
    let text: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(text, "Hello");
    assert!(
        chunks.iter().all(|c| c.get("usage").is_none()),
        "usage chunk hidden"
    );

    // The client asked for usage: it gets the chunk unchanged.
    let mut asked = byok_request("gpt-real", true);
    asked["stream_options"] = json!({"include_usage": true});
    let events = post_stream(&base, &asked).await;
    assert_eq!(events[events.len() - 2], USAGE_CHUNK);

    let seen = fake.seen();
    assert_eq!(
        seen[0].body["stream_options"]["include_usage"], true,
        "injected"
    );
    assert_eq!(
        seen[1].body, asked,
        "forwarded unchanged when nothing to inject"
    );
    assert!(seen
        .iter()
        .all(|s| s.authorization.as_deref() == Some(&format!("Bearer {KEY}"))));

    let entries = proxy.shutdown().await;
    assert_eq!(entries.len(), 2);
    for entry in &entries {
        assert_eq!(
            (entry.source.as_str(), entry.status, entry.stream),
            ("upstream", 200, true)
        );
        assert_eq!(
            (
                entry.input_tokens,
                entry.output_tokens,
                entry.cached_input_tokens,
                entry.reasoning_tokens
            ),
            (Some(11), Some(7), Some(3), Some(2))
        );
        assert_eq!(entry.error, None);
    }
}

#[tokio::test]
async fn byok_errors_and_cut_streams_are_passed_through_and_recorded() {
    let (proxy, fake) = byok().await;
    let base = proxy.base_url();

    let response = client()
        .post(format!("{base}/chat/completions"))
        .json(&byok_request("rate-limited", false))
        .send()
        .await
        .expect("request sent");
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(
        response.headers().get("retry-after").map(|v| v.as_bytes()),
        Some(&b"7"[..])
    );
    assert!(response.headers().get("x-internal").is_none());
    let body: Value = response.json().await.expect("error json");
    assert_eq!(body["error"]["type"], "rate_limit_exceeded");

    let (status, body) = post(&base, &byok_request("echo-key", false)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    // The provider's body, with the key it echoed redacted: the agent is the one party
    // the proxy keeps the key from.
    assert!(
        !body.to_string().contains(KEY) && body.to_string().contains("[redacted]"),
        "the agent sees the provider's body with the key redacted: {body}"
    );

    // A stream cut mid-way: the agent's stream breaks too.
    let response = client()
        .post(format!("{base}/chat/completions"))
        .json(&byok_request("cut", true))
        .send()
        .await
        .expect("request sent");
    assert_eq!(response.status(), StatusCode::OK);
    fake.cut.notify_one();
    assert!(response.text().await.is_err(), "the cut reaches the agent");

    let entries = proxy.shutdown().await;
    assert_eq!(entries.len(), 3);
    assert_eq!(entries[0].status, 429);
    assert!(entries[0]
        .error
        .as_deref()
        .is_some_and(|e| e.contains("429") && e.contains("slow down")));
    assert_eq!(entries[1].status, 401);
    assert!(entries[1]
        .error
        .as_deref()
        .is_some_and(|e| e.contains("[redacted]")));
    let cut = &entries[2];
    assert!(cut.stream);
    assert!(
        cut.error.as_deref().is_some_and(|e| e.contains("cut")),
        "{cut:?}"
    );
    assert_eq!(
        (cut.input_tokens, cut.output_tokens),
        (None, None),
        "never invented"
    );
    assert_no_key(&entries);
}

#[tokio::test]
async fn shutdown_cuts_a_hanging_stream_and_still_records_it() {
    let (proxy, _fake) = byok().await;
    let response = client()
        .post(format!("{}/chat/completions", proxy.base_url()))
        .json(&byok_request("hang", true))
        .send()
        .await
        .expect("request sent");
    assert_eq!(response.status(), StatusCode::OK);
    assert!(
        proxy.usage().is_empty(),
        "recorded when the stream ends, not before"
    );
    let entries = proxy.shutdown().await;
    assert_eq!(entries.len(), 1);
    assert!(entries[0].error.is_some(), "{:?}", entries[0]);
    assert_eq!(entries[0].input_tokens, None);
    drop(response);
}
