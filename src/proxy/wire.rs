//! What differs between the wire protocols, behind one enum.
//!
//! Everything a call goes through (reading the body, the budget check, scripting or
//! forwarding, recording) is shared in `call`; this is the table of what each
//! protocol does its own way: where its fields are, how its replies, errors and usage
//! blocks look, and how its provider wants the key.

use hyper::{Response, StatusCode};
use serde_json::{json, Map, Value};

use super::body::{self, Body};
use super::conversation::Parsed;
use super::error::RequestError;
use super::exchange::Reply;
use super::log::Tokens;
use super::render::{render, Answer};
use super::upstream::Auth;
use super::usage::StreamMeter;
use super::{chat, messages, responses};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Protocol {
    /// OpenAI Chat Completions.
    Chat,
    /// OpenAI Responses.
    Responses,
    /// Anthropic Messages.
    Messages,
}

/// The errors the proxy itself answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ErrorKind {
    BadRequest,
    NotFound,
    /// The provider could not be reached or cut its answer short.
    Upstream,
    /// The trial's token budget is spent.
    Budget,
}

impl Protocol {
    /// The `protocol` of this protocol's usage entries.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Protocol::Chat => "chat",
            Protocol::Responses => "responses",
            Protocol::Messages => "messages",
        }
    }

    pub(crate) fn parse(self, body: &Map<String, Value>) -> Result<Parsed, RequestError> {
        match self {
            Protocol::Chat => chat::parse(body),
            Protocol::Responses => responses::parse(body),
            Protocol::Messages => messages::parse(body),
        }
    }

    /// The scripted reply, whole or streamed as the request asked; a stream's events
    /// spread over `latency`.
    pub(crate) fn render(
        self,
        parsed: &Parsed,
        reply: &Reply,
        model: &str,
        seq: u64,
        tokens: Tokens,
        latency: std::time::Duration,
    ) -> Response<Body> {
        let answer = Answer {
            reply,
            model,
            seq,
            tokens,
            created: chrono::Utc::now().timestamp(),
        };
        match self {
            Protocol::Chat => render::<chat::Scripted>(parsed.stream, &answer, latency),
            Protocol::Responses => render::<responses::Scripted>(parsed.stream, &answer, latency),
            Protocol::Messages => render::<messages::Scripted>(parsed.stream, &answer, latency),
        }
    }

    /// The usage block of a whole (non-streamed) response.
    pub(crate) fn usage(self, response: &Value) -> Option<Tokens> {
        match self {
            Protocol::Chat => chat::usage(response),
            Protocol::Responses => responses::usage(response),
            Protocol::Messages => messages::usage(response),
        }
    }

    /// A meter for a streamed response; `injected` says the proxy asked for usage the
    /// client did not (Chat only).
    pub(crate) fn stream_meter(self, injected: bool) -> Box<dyn StreamMeter> {
        match self {
            Protocol::Chat => Box::new(chat::StreamUsage::new(injected)),
            Protocol::Responses => Box::<responses::StreamUsage>::default(),
            Protocol::Messages => Box::<messages::StreamUsage>::default(),
        }
    }

    /// Make a streamed request carry usage; returns whether the body was changed.
    ///
    /// Only Chat needs this: without `stream_options.include_usage` its providers send
    /// no usage on a stream. Responses and Messages streams always carry it.
    pub(crate) fn ask_for_stream_usage(self, body: &mut Map<String, Value>) -> bool {
        match self {
            Protocol::Chat => chat::ask_for_stream_usage(body),
            Protocol::Responses | Protocol::Messages => false,
        }
    }

    pub(crate) fn auth(self) -> Auth {
        match self {
            Protocol::Chat | Protocol::Responses => Auth::Bearer,
            Protocol::Messages => Auth::XApiKey,
        }
    }

    /// An error the proxy answers itself, in the shape this protocol's clients parse.
    ///
    /// A spent budget answers what the real provider answers when the money runs out,
    /// so clients stop rather than retry: OpenAI's 429 `insufficient_quota`, Anthropic's
    /// 400 `invalid_request_error` (its "credit balance is too low").
    pub(crate) fn error(self, kind: ErrorKind, message: &str) -> Response<Body> {
        let anthropic = self == Protocol::Messages;
        let (status, openai_type, anthropic_type) = match kind {
            ErrorKind::BadRequest => (
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                "invalid_request_error",
            ),
            ErrorKind::NotFound => (StatusCode::NOT_FOUND, "not_found_error", "not_found_error"),
            ErrorKind::Upstream => (StatusCode::BAD_GATEWAY, "upstream_error", "api_error"),
            ErrorKind::Budget if anthropic => (
                StatusCode::BAD_REQUEST,
                "insufficient_quota",
                "invalid_request_error",
            ),
            ErrorKind::Budget => (
                StatusCode::TOO_MANY_REQUESTS,
                "insufficient_quota",
                "invalid_request_error",
            ),
        };
        if anthropic {
            body::json(
                status,
                &json!({"type": "error", "error": {"type": anthropic_type, "message": message}}),
            )
        } else {
            let code = (kind == ErrorKind::Budget).then_some("insufficient_quota");
            body::json(
                status,
                &json!({"error": {"message": message, "type": openai_type, "param": null, "code": code}}),
            )
        }
    }
}

/// The message of a provider's error body: both OpenAI's `{"error": {"message"}}` and
/// Anthropic's `{"type": "error", "error": {"message"}}` keep it at `/error/message`.
pub(crate) fn error_message(body: &Value) -> Option<&str> {
    body.pointer("/error/message").and_then(Value::as_str)
}
