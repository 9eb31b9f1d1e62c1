//! A client of the three protocols, and its own reading of what came back: the events
//! of a stream, whether it was cut, and the usage it carried, parsed here from the
//! protocols' documented shapes rather than by the fake's code.

use gauntlet_fake_provider::{
    FakeProvider, Protocol, Usage, ANSWER_HEADER, ANSWER_TYPE_HEADER, CALL_HEADER,
};
use serde_json::{json, Value};

pub const ALL: [Protocol; 3] = [Protocol::Chat, Protocol::Responses, Protocol::Messages];

pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("http client")
}

pub fn path(protocol: Protocol) -> &'static str {
    match protocol {
        Protocol::Chat => "/v1/chat/completions",
        Protocol::Responses => "/v1/responses",
        Protocol::Messages => "/v1/messages",
    }
}

/// A minimal request of `protocol`; a Chat stream asks for its usage when
/// `stream_usage` says so.
pub fn body(protocol: Protocol, stream: bool, stream_usage: bool) -> Value {
    let mut b = match protocol {
        Protocol::Chat => {
            json!({"model": "m", "messages": [{"role": "user", "content": "hi there"}]})
        }
        Protocol::Responses => json!({"model": "m", "input": "hi there"}),
        Protocol::Messages => {
            json!({"model": "m", "max_tokens": 64, "messages": [{"role": "user", "content": "hi there"}]})
        }
    };
    if stream {
        b["stream"] = json!(true);
        if protocol == Protocol::Chat && stream_usage {
            b["stream_options"] = json!({"include_usage": true});
        }
    }
    b
}

pub async fn send(
    fake: &FakeProvider,
    protocol: Protocol,
    key: &str,
    body: &Value,
) -> reqwest::Response {
    send_with(fake, protocol, key, body, &[]).await
}

/// A call carrying `answer` (its bytes) of content type `kind` for the fake to return.
pub async fn send_given(
    fake: &FakeProvider,
    protocol: Protocol,
    key: &str,
    answer: &[u8],
    kind: &str,
) -> reqwest::Response {
    let headers = [
        (ANSWER_HEADER, b64(answer)),
        (ANSWER_TYPE_HEADER, kind.into()),
    ];
    send_with(fake, protocol, key, &body(protocol, false, false), &headers).await
}

pub async fn send_with(
    fake: &FakeProvider,
    protocol: Protocol,
    key: &str,
    body: &Value,
    headers: &[(&str, String)],
) -> reqwest::Response {
    let mut request = client()
        .post(format!("{}{}", fake.root_url(), path(protocol)))
        .json(body);
    for (name, value) in headers {
        request = request.header(*name, value);
    }
    let request = match protocol {
        Protocol::Messages => request.header("x-api-key", key),
        Protocol::Chat | Protocol::Responses => request.bearer_auth(key),
    };
    request.send().await.expect("the fake answers")
}

/// Standard base64 with padding, as the proxy encodes an answer.
pub fn b64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The call's number, as the fake states it.
pub fn seq(response: &reqwest::Response) -> u64 {
    response
        .headers()
        .get(CALL_HEADER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .expect("every model call's answer carries its number")
}

/// What a client read of an answer.
#[derive(Debug)]
pub struct Read {
    pub bytes: Vec<u8>,
    pub text: String,
    /// The connection failed before the body ended.
    pub cut: bool,
}

impl Read {
    /// The stream's complete events (a partial one at a cut is not an event).
    pub fn events(&self) -> Vec<&str> {
        let mut events: Vec<&str> = self.text.split_inclusive("\n\n").collect();
        if events.last().is_some_and(|e| !e.ends_with("\n\n")) {
            events.pop();
        }
        events
    }
}

pub async fn read(mut response: reqwest::Response) -> Read {
    let mut bytes = Vec::new();
    let cut = loop {
        match response.chunk().await {
            Ok(Some(chunk)) => bytes.extend_from_slice(&chunk),
            Ok(None) => break false,
            Err(_) => break true,
        }
    };
    Read {
        // A whole answer cut mid-character is still what was received.
        text: String::from_utf8_lossy(&bytes).into_owned(),
        bytes,
        cut,
    }
}

/// Whether `event` is `protocol`'s terminating event.
pub fn terminates(protocol: Protocol, event: &str) -> bool {
    match protocol {
        Protocol::Chat => event.trim() == "data: [DONE]",
        Protocol::Responses => event.starts_with("event: response.completed\n"),
        Protocol::Messages => event.starts_with("event: message_stop\n"),
    }
}

/// Whether `event` is `protocol`'s error event, which ends a stream that failed.
pub fn in_stream_error(protocol: Protocol, event: &str) -> bool {
    let Some(value) = data(event) else {
        return false;
    };
    match protocol {
        Protocol::Chat => value["error"].is_object() && value.get("choices").is_none(),
        Protocol::Responses => {
            event.starts_with("event: response.failed\n")
                && value["type"] == "response.failed"
                && value["response"]["status"] == "failed"
        }
        Protocol::Messages => {
            event.starts_with("event: error\n")
                && value["type"] == "error"
                && value["error"]["type"] == "overloaded_error"
        }
    }
}

fn data(event: &str) -> Option<Value> {
    event
        .lines()
        .find_map(|l| l.strip_prefix("data: "))
        .and_then(|d| serde_json::from_str(d).ok())
}

/// The usage `protocol`'s documented shape says a whole answer carries.
pub fn whole_usage(protocol: Protocol, answer: &Value) -> Option<Usage> {
    let u = answer.get("usage").filter(|u| u.is_object())?;
    let n = |name: &str| u[name].as_u64().unwrap_or(0);
    Some(match protocol {
        Protocol::Chat => Usage {
            input: n("prompt_tokens"),
            output: n("completion_tokens"),
        },
        Protocol::Responses => Usage {
            input: n("input_tokens"),
            output: n("output_tokens"),
        },
        Protocol::Messages => Usage {
            input: n("input_tokens")
                + n("cache_creation_input_tokens")
                + n("cache_read_input_tokens"),
            output: n("output_tokens"),
        },
    })
}

/// The usage a reader of these events has seen, as a metering proxy reads it: Chat's
/// usage chunk, Responses' `response.completed`, Anthropic's `message_start` then
/// `message_delta`.
pub fn stream_usage(protocol: Protocol, events: &[&str]) -> Option<Usage> {
    let mut seen: Option<Usage> = None;
    for value in events.iter().filter_map(|e| data(e)) {
        match protocol {
            Protocol::Chat => {
                if let Some(u) = whole_usage(protocol, &value) {
                    seen = Some(u);
                }
            }
            Protocol::Responses => {
                if value["type"] == "response.completed" {
                    seen = whole_usage(protocol, &value["response"]);
                }
            }
            Protocol::Messages => match value["type"].as_str() {
                Some("message_start") => seen = whole_usage(protocol, &value["message"]),
                Some("message_delta") => {
                    let mut u = seen.unwrap_or_default();
                    u.output = value["usage"]["output_tokens"].as_u64().unwrap_or(u.output);
                    seen = Some(u);
                }
                _ => {}
            },
        }
    }
    seen
}
