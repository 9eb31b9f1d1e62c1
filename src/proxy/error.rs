//! Why a call could not be read or forwarded: the errors every layer of the proxy
//! reports, from reading a body to reaching the provider.

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
    /// `why` has passed the upstream's redaction (`Upstream::redact`). `sent`: the
    /// request was written, or may have been, before the connection failed, so the
    /// provider may have served (and billed) it.
    #[error("upstream {base} unreachable: {why}")]
    Unreachable {
        base: String,
        why: String,
        sent: bool,
    },
}

impl CallError {
    /// Whether the call certainly never reached the provider: only such a call is
    /// sent again, since one that did may have been served and billed.
    pub(crate) fn never_sent(&self) -> bool {
        matches!(self, CallError::Unreachable { sent: false, .. })
    }
}
