//! What differs between the wire protocols, behind one enum.
//!
//! Everything a call goes through (reading the body, the budget check, scripting or
//! forwarding, recording) is shared in [`super::call`]; this is the table of what each
//! protocol does its own way: where its fields are, how its replies, errors and usage
//! blocks look, and how its provider wants the key.

use hyper::{Response, StatusCode};
use serde_json::{json, Map, Value};

use super::body::{self, Body};
use super::log::Tokens;
use super::relay::StreamMeter;
use super::script::{Asked, Reply};
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

/// What a request is, as far as the proxy needs to know.
#[derive(Debug, Clone, Default)]
pub(crate) struct Parsed {
    pub(crate) model: Option<String>,
    pub(crate) stream: bool,
    pub(crate) asked: Asked,
    /// Bytes of the conversation (compact JSON): the basis of scripted input tokens.
    pub(crate) input_bytes: usize,
}

/// Why a request body is not a request of its protocol.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RequestError {
    #[error("request body is not json: {0}")]
    NotJson(#[source] serde_json::Error),
    #[error("request body is not a json object")]
    NotObject,
    #[error("request body field `{0}` is missing or has the wrong type")]
    Field(&'static str),
}

/// Why a call could not be read or forwarded: the text of the error the proxy answers
/// with and records in the call's usage entry.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CallError {
    #[error("cannot read request body: {0}")]
    Body(#[source] Box<dyn std::error::Error + Send + Sync>),
    #[error("{source} (body of {len} bytes starts: {start:?})")]
    Request {
        #[source]
        source: RequestError,
        len: usize,
        /// The body's first characters, so that a log shows what was sent.
        start: String,
    },
    /// `why` has passed [`super::upstream::Upstream::redact`].
    #[error("upstream {base} unreachable: {why}")]
    Unreachable { base: String, why: String },
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

/// How the provider of a protocol takes its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Auth {
    /// `Authorization: Bearer <key>` (OpenAI and compatible providers).
    Bearer,
    /// `x-api-key: <key>` (Anthropic).
    XApiKey,
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

    /// The scripted reply, whole or streamed as the request asked.
    pub(crate) fn render(
        self,
        parsed: &Parsed,
        reply: &Reply,
        model: &str,
        seq: u64,
        tokens: Tokens,
    ) -> Response<Body> {
        match self {
            Protocol::Chat => chat::render(parsed.stream, reply, model, seq, tokens),
            Protocol::Responses => responses::render(parsed.stream, reply, model, seq, tokens),
            Protocol::Messages => messages::render(parsed.stream, reply, model, seq, tokens),
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

/// The compact JSON length of `body[key]` (0 when absent).
pub(crate) fn field_bytes(body: &Map<String, Value>, key: &str) -> usize {
    body.get(key).map(|v| v.to_string().len()).unwrap_or(0)
}

/// The text of a system prompt given as a string or as content blocks with `text`.
pub(crate) fn text_of(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str).or_else(|| b.as_str()))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// `text` cut into pieces of at most `chars` characters: scripted streams send every
/// reply in several pieces, so clients' reassembly is exercised as with a real model.
pub(crate) fn pieces(text: &str, chars: usize) -> Vec<String> {
    let all: Vec<char> = text.chars().collect();
    all.chunks(chars.max(1))
        .map(|piece| piece.iter().collect())
        .collect()
}
