//! Error answers in the two families' shapes: OpenAI's `{"error": {message, type,
//! param, code}}` and Anthropic's `{"type": "error", "error": {type, message}}`, each
//! with the status and type its provider uses, so that clients and the proxy classify
//! them as they would a real provider's.

use serde_json::{json, Value};

/// What went wrong with a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ErrorKind {
    /// 429: the key's budget (`limit` calls a minute) or the provider's capacity.
    RateLimited { limit: Option<u32> },
    /// A 5xx status.
    Server(u16),
    /// 401: no key.
    Unauthorized,
    /// 400: a body that is not a JSON object.
    BadRequest(String),
}

fn rate_limit_message(limit: Option<u32>) -> String {
    match limit {
        Some(n) => format!("Rate limit reached for requests per min (RPM): Limit {n}"),
        None => "The provider is receiving too many requests; please retry after a while".into(),
    }
}

pub(super) fn openai(kind: &ErrorKind) -> (u16, Value) {
    let (status, message, kind, code) = match kind {
        ErrorKind::RateLimited { limit } => (
            429,
            rate_limit_message(*limit),
            "requests",
            Some("rate_limit_exceeded"),
        ),
        // OpenAI has no 529: an overloaded engine is a 503.
        ErrorKind::Server(529 | 503) => (
            503,
            "The engine is currently overloaded, please try again later".into(),
            "server_error",
            None,
        ),
        ErrorKind::Server(status) => (
            *status,
            "The server had an error while processing your request".into(),
            "server_error",
            None,
        ),
        ErrorKind::Unauthorized => (
            401,
            "You didn't provide an API key".into(),
            "invalid_request_error",
            Some("invalid_api_key"),
        ),
        ErrorKind::BadRequest(why) => (400, why.clone(), "invalid_request_error", None),
    };
    (
        status,
        json!({"error": {"message": message, "type": kind, "param": null, "code": code}}),
    )
}

pub(super) fn anthropic(kind: &ErrorKind) -> (u16, Value) {
    let (status, kind, message) = match kind {
        ErrorKind::RateLimited { limit } => (429, "rate_limit_error", rate_limit_message(*limit)),
        ErrorKind::Server(529) => (529, "overloaded_error", "Overloaded".into()),
        ErrorKind::Server(status) => (*status, "api_error", "Internal server error".into()),
        ErrorKind::Unauthorized => (
            401,
            "authentication_error",
            "x-api-key header is required".into(),
        ),
        ErrorKind::BadRequest(why) => (400, "invalid_request_error", why.clone()),
    };
    (
        status,
        json!({"type": "error", "error": {"type": kind, "message": message}}),
    )
}
