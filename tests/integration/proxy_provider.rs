//! A fake model provider served on loopback by the tests: the three wire protocols,
//! with golden streams and bodies per protocol, and the failures real providers have
//! (429, a stream cut mid-way, garbage, a stream held after its first event).
//!
//! It behaves by the request's `model`: `golden`, `rate-limited`, `cut`, `gated`,
//! `garbage`, `held` (no answer at all until released). Wrong credentials get 401, so a 200 proves the proxy sent the key the
//! protocol's way (`Authorization: Bearer` for OpenAI, `x-api-key` for Anthropic).

use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures_util::stream::{self, StreamExt};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::header::HeaderValue;
use hyper::{HeaderMap, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::Value;

/// A recognisable key: tests search every artifact for it.
pub const KEY: &str = "sk-gauntlet-LEAKCHECK-7f3a9c1e5b2d";

/// One protocol's golden answers and what the proxy must meter from them.
pub struct Golden {
    /// The protocol's name in usage entries.
    pub protocol: &'static str,
    /// Path under the proxy's `/v1`.
    pub path: &'static str,
    pub whole: &'static str,
    /// Server-sent events, exactly as the provider sends them.
    pub stream: &'static str,
    /// (input, output, cached input, reasoning, cache write) of both.
    pub tokens: Tokens,
    /// What a stream cut after its first event carries: the usage of that event.
    pub first_event_tokens: Tokens,
    pub rate_limited: &'static str,
}

pub type Tokens = (
    Option<u64>,
    Option<u64>,
    Option<u64>,
    Option<u64>,
    Option<u64>,
);

pub const CHAT: Golden = Golden {
    protocol: "chat",
    path: "chat/completions",
    whole: r#"{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"golden","choices":[{"index":0,"message":{"role":"assistant","content":"Hello"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1200,"completion_tokens":40,"total_tokens":1240,"prompt_tokens_details":{"cached_tokens":1024},"completion_tokens_details":{"reasoning_tokens":16}}}"#,
    stream: concat!(
        "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hel\"},\"finish_reason\":null}],\"usage\":null}\n\n",
        "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"},\"finish_reason\":\"stop\"}],\"usage\":null}\n\n",
        "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_tokens\":1200,\"completion_tokens\":40,\"total_tokens\":1240,\"prompt_tokens_details\":{\"cached_tokens\":1024},\"completion_tokens_details\":{\"reasoning_tokens\":16}}}\n\n",
        "data: [DONE]\n\n",
    ),
    tokens: (Some(1200), Some(40), Some(1024), Some(16), None),
    first_event_tokens: (None, None, None, None, None),
    rate_limited: r#"{"error":{"message":"Rate limit reached for requests","type":"requests","param":null,"code":"rate_limit_exceeded"}}"#,
};

pub const RESPONSES: Golden = Golden {
    protocol: "responses",
    path: "responses",
    whole: r#"{"id":"resp_1","object":"response","created_at":1,"status":"completed","model":"golden","output":[{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Hello","annotations":[]}]}],"usage":{"input_tokens":2048,"input_tokens_details":{"cached_tokens":1536},"output_tokens":300,"output_tokens_details":{"reasoning_tokens":256},"total_tokens":2348}}"#,
    stream: concat!(
        "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"in_progress\",\"output\":[],\"usage\":null}}\n\n",
        "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":1,\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"delta\":\"Hello\"}\n\n",
        "event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"sequence_number\":2,\"output_index\":0,\"item\":{\"id\":\"msg_1\",\"type\":\"message\",\"status\":\"completed\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":\"Hello\",\"annotations\":[]}]}}\n\n",
        "event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":3,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"completed\",\"output\":[],\"usage\":{\"input_tokens\":2048,\"input_tokens_details\":{\"cached_tokens\":1536},\"output_tokens\":300,\"output_tokens_details\":{\"reasoning_tokens\":256},\"total_tokens\":2348}}}\n\n",
    ),
    tokens: (Some(2048), Some(300), Some(1536), Some(256), None),
    first_event_tokens: (None, None, None, None, None),
    rate_limited: r#"{"error":{"message":"Rate limit reached for gpt-5","type":"requests","param":null,"code":"rate_limit_exceeded"}}"#,
};

pub const MESSAGES: Golden = Golden {
    protocol: "messages",
    path: "messages?beta=true",
    whole: r#"{"id":"msg_1","type":"message","role":"assistant","model":"golden","content":[{"type":"text","text":"Hello"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":12,"cache_creation_input_tokens":500,"cache_read_input_tokens":3000,"output_tokens":57}}"#,
    stream: concat!(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"golden\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":12,\"cache_creation_input_tokens\":500,\"cache_read_input_tokens\":3000,\"output_tokens\":1}}}\n\n",
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
        "event: ping\ndata: {\"type\": \"ping\"}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello\"}}\n\n",
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
        "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":57}}\n\n",
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
    ),
    tokens: (Some(3512), Some(57), Some(3000), None, Some(500)),
    first_event_tokens: (Some(3512), Some(1), Some(3000), None, Some(500)),
    rate_limited: r#"{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}"#,
};

pub const ALL: [&Golden; 3] = [&CHAT, &RESPONSES, &MESSAGES];

/// Garbage a broken provider answers with.
pub const GARBAGE: &str = "<html><body>502 Bad Gateway</body></html>";
pub const GARBAGE_STREAM: &str = "data: {not json\n\nnonsense without an end";

/// A request as the provider received it.
#[derive(Debug, Clone)]
pub struct Seen {
    /// Path and query, e.g. `/v1/messages?beta=true`.
    pub target: String,
    pub headers: HeaderMap,
    pub body: Value,
}

#[derive(Debug, Default)]
pub struct Provider {
    seen: Mutex<Vec<Seen>>,
    /// Held streams (`cut`, `gated`, `paced`) go on only once the test says so.
    pub release: tokio::sync::Notify,
}

impl Provider {
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

type FakeBody = UnsyncBoxBody<Bytes, std::io::Error>;

fn full(status: StatusCode, content_type: &'static str, body: &str) -> Response<FakeBody> {
    let mut response = Response::new(
        Full::new(Bytes::from(body.to_owned()))
            .map_err(|n| match n {})
            .boxed_unsync(),
    );
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert("content-type", HeaderValue::from_static(content_type));
    response
}

fn golden_for(path: &str) -> &'static Golden {
    if path.ends_with("/responses") {
        &RESPONSES
    } else if path.ends_with("/messages") {
        &MESSAGES
    } else {
        &CHAT
    }
}

/// Whether `value` reads as true the way a lax validator reads a boolean field
/// (pydantic's, which local model servers such as vLLM answer through): `true`, `1`,
/// and the strings `1`, `on`, `t`, `true`, `y`, `yes` in any case. A strict provider
/// refuses all but `true`; a lax one streams for any of them.
fn lax_true(value: &Value) -> bool {
    match value {
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64() == Some(1.0),
        Value::String(s) => matches!(
            s.to_ascii_lowercase().as_str(),
            "1" | "on" | "t" | "true" | "y" | "yes"
        ),
        _ => false,
    }
}

/// The first event of a stream, and the rest.
pub fn split_first_event(stream: &str) -> (&str, &str) {
    let end = stream.find("\n\n").map(|i| i + 2).unwrap_or(stream.len());
    stream.split_at(end)
}

async fn reply(request: Request<Incoming>, provider: Arc<Provider>) -> Response<FakeBody> {
    let target = request
        .uri()
        .path_and_query()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_default();
    let path = request.uri().path().to_owned();
    let headers = request.headers().clone();
    let bytes = request
        .into_body()
        .collect()
        .await
        .map(|c| c.to_bytes())
        .unwrap_or_default();
    let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    if let Ok(mut seen) = provider.seen.lock() {
        seen.push(Seen {
            target,
            headers: headers.clone(),
            body: body.clone(),
        });
    }
    let anthropic = path.starts_with("/v1/messages");
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let authorized = if anthropic {
        header("x-api-key") == Some(KEY) && header("authorization").is_none()
    } else {
        header("authorization") == Some(&format!("Bearer {KEY}")) && header("x-api-key").is_none()
    };
    if !authorized {
        return full(
            StatusCode::UNAUTHORIZED,
            "application/json",
            r#"{"error":{"message":"invalid credentials"}}"#,
        );
    }
    if path == "/v1/messages/count_tokens" {
        return full(
            StatusCode::OK,
            "application/json",
            r#"{"input_tokens":4242}"#,
        );
    }
    let golden = golden_for(&path);
    let model = body["model"].as_str().unwrap_or_default();
    let stream = lax_true(&body["stream"]);
    match model {
        // A provider still thinking: not even the response head until released.
        "held" => {
            provider.release.notified().await;
            return full(StatusCode::OK, "application/json", golden.whole);
        }
        "rate-limited" => {
            let mut response = full(
                StatusCode::TOO_MANY_REQUESTS,
                "application/json",
                golden.rate_limited,
            );
            let h = response.headers_mut();
            h.insert("retry-after", HeaderValue::from_static("3"));
            h.insert("x-request-id", HeaderValue::from_static("req_42"));
            h.insert("x-internal-route", HeaderValue::from_static("pod-7"));
            return response;
        }
        "garbage" if stream => {
            return full(StatusCode::OK, "text/event-stream", GARBAGE_STREAM);
        }
        "garbage" => return full(StatusCode::OK, "text/html", GARBAGE),
        _ if !stream => return full(StatusCode::OK, "application/json", golden.whole),
        _ => {}
    }
    // Chat sends its usage chunk only when asked, as OpenAI does.
    let mut text = golden.stream.to_owned();
    if golden.protocol == "chat" && body["stream_options"]["include_usage"] != Value::Bool(true) {
        text = text
            .split_inclusive("\n\n")
            .filter(|event| !event.contains("\"choices\":[]"))
            .collect();
    }
    let (first, rest) = split_first_event(&text);
    let first = Bytes::from(first.to_owned());
    let rest = Bytes::from(rest.to_owned());
    let frames = match model {
        "cut" => {
            let cut = async move {
                provider.release.notified().await;
                Err(std::io::Error::other("connection reset by provider"))
            };
            stream::once(async move { Ok(Frame::data(first)) })
                .chain(stream::once(cut))
                .boxed()
        }
        // One event per release: each must reach the agent before the next exists.
        "paced" => {
            let events: Vec<Bytes> = text
                .split_inclusive("\n\n")
                .map(|event| Bytes::from(event.to_owned()))
                .collect();
            stream::iter(events.into_iter().enumerate())
                .then(move |(i, event)| {
                    let provider = Arc::clone(&provider);
                    async move {
                        if i > 0 {
                            provider.release.notified().await;
                        }
                        Ok(Frame::data(event))
                    }
                })
                .boxed()
        }
        "gated" => {
            let held = async move {
                provider.release.notified().await;
                Ok(Frame::data(rest))
            };
            stream::once(async move { Ok(Frame::data(first)) })
                .chain(stream::once(held))
                .boxed()
        }
        // Small, uneven pieces: events arrive cut anywhere, as from a real network.
        _ => {
            let all = Bytes::from(text);
            let pieces: Vec<Result<Frame<Bytes>, std::io::Error>> = (0..all.len())
                .step_by(7)
                .map(|i| Ok(Frame::data(all.slice(i..(i + 7).min(all.len())))))
                .collect();
            stream::iter(pieces).boxed()
        }
    };
    let mut response = Response::new(StreamBody::new(frames).boxed_unsync());
    response.headers_mut().insert(
        "content-type",
        HeaderValue::from_static("text/event-stream"),
    );
    response
}

/// Serve a fake provider on 127.0.0.1; returns its base URL (`…/v1`) and its state.
pub async fn start() -> (String, Arc<Provider>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let provider = Arc::new(Provider::default());
    let state = Arc::clone(&provider);
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let state = Arc::clone(&state);
            let service = hyper::service::service_fn(move |request| {
                let state = Arc::clone(&state);
                async move { Ok::<_, Infallible>(reply(request, state).await) }
            });
            tokio::spawn(
                hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service),
            );
        }
    });
    (format!("http://{addr}/v1"), provider)
}
