//! Forwarding a Chat Completions call to the provider and metering its answer.

use std::sync::Arc;

use bytes::Bytes;
use hyper::header::CONTENT_TYPE;
use hyper::{HeaderMap, Response, StatusCode};
use serde_json::{json, Value};

use super::request::ChatRequest;
use super::usage::{self, ChatStreamMeter};
use crate::proxy::body::{self, Body};
use crate::proxy::log::{Pending, UsageLog};
use crate::proxy::relay::Relay;
use crate::proxy::upstream::Upstream;

/// Longest excerpt of an upstream error body kept in a usage entry.
const ERROR_EXCERPT_CHARS: usize = 300;

pub(crate) async fn forward(
    upstream: &Arc<Upstream>,
    log: &Arc<UsageLog>,
    mut pending: Pending,
    mut request: ChatRequest,
) -> Response<Body> {
    // Without include_usage a provider sends no usage on a stream: ask for it.
    let injected = request.stream && !request.include_usage;
    let outgoing = if injected {
        let options = request
            .body
            .entry("stream_options")
            .or_insert_with(|| json!({}));
        if !options.is_object() {
            *options = json!({});
        }
        if let Some(options) = options.as_object_mut() {
            options.insert("include_usage".to_owned(), Value::Bool(true));
        }
        Bytes::from(Value::Object(request.body.clone()).to_string())
    } else {
        request.raw.clone()
    };

    let response = match upstream.post("chat/completions", outgoing).await {
        Ok(response) => response,
        Err(message) => {
            pending.entry.status = StatusCode::BAD_GATEWAY.as_u16();
            pending.entry.source = "proxy".to_owned();
            pending.entry.error = Some(message.clone());
            log.record(pending);
            return body::openai_error(StatusCode::BAD_GATEWAY, "upstream_error", &message);
        }
    };
    let status = response.status();
    let content_type = response.headers().get(CONTENT_TYPE).cloned();
    let passed = passed_headers(response.headers());
    pending.entry.status = status.as_u16();
    pending.entry.source = "upstream".to_owned();

    if request.stream && status.is_success() {
        let meter = ChatStreamMeter::new(injected);
        let relay = Relay::new(
            response,
            Box::new(meter),
            Arc::clone(log),
            pending,
            Arc::clone(upstream),
        );
        let mut streamed = body::sse(status, content_type, relay);
        streamed.headers_mut().extend(passed);
        return streamed;
    }

    let bytes = match response.bytes().await {
        Ok(bytes) => bytes,
        Err(e) => {
            let message = upstream.redact(&format!("upstream response body cut: {e}"));
            pending.entry.status = StatusCode::BAD_GATEWAY.as_u16();
            pending.entry.error = Some(message.clone());
            log.record(pending);
            return body::openai_error(StatusCode::BAD_GATEWAY, "upstream_error", &message);
        }
    };
    let parsed: Option<Value> = serde_json::from_slice(&bytes).ok();
    if let Some(tokens) = parsed.as_ref().and_then(usage::tokens) {
        pending.set_tokens(tokens);
    }
    if !status.is_success() {
        pending.entry.error =
            Some(upstream.redact(&error_summary(status, parsed.as_ref(), &bytes)));
    }
    log.record(pending);
    let mut whole = body::bytes(status, content_type, bytes);
    whole.headers_mut().extend(passed);
    whole
}

/// The provider's headers an agent acts on (rate-limit backoff, request ids for
/// support); everything else about the connection is the proxy's own.
fn passed_headers(headers: &HeaderMap) -> HeaderMap {
    headers
        .iter()
        .filter(|(name, _)| {
            let name = name.as_str();
            name == "retry-after"
                || name.starts_with("x-ratelimit-")
                || name.ends_with("request-id")
        })
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect()
}

/// `upstream status 429: <message>`, from the OpenAI error shape when there is one.
fn error_summary(status: StatusCode, parsed: Option<&Value>, bytes: &[u8]) -> String {
    let message = parsed
        .and_then(|v| v.pointer("/error/message"))
        .and_then(Value::as_str)
        .map(str::to_owned)
        .unwrap_or_else(|| String::from_utf8_lossy(bytes).into_owned());
    let excerpt: String = message.chars().take(ERROR_EXCERPT_CHARS).collect();
    format!("upstream status {}: {excerpt}", status.as_u16())
}
