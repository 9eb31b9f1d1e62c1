//! What a proxy is started with: how it answers model calls, and the limits it
//! enforces. Public through `proxy`; nothing of the proxy's own is needed to read them.

use std::time::Duration;

use crate::spec::Script;

/// How the proxy answers model calls.
#[derive(Clone)]
pub enum ProxyMode {
    /// Answer from a script, each reply taking `latency` (a whole answer comes after
    /// it, a stream's events are spread over it), so that a scripted run can have a
    /// provider's timing without a provider.
    Scripted {
        script: Script,
        model: String,
        latency: Duration,
    },
    /// Forward to `upstream`, a base URL ending in the API version such as
    /// "https://api.openai.com/v1" or "https://api.anthropic.com/v1": a call to
    /// `/v1/<path>` goes to `<upstream>/<path>`. The key goes as
    /// `Authorization: Bearer <api_key>` for the OpenAI protocols and as
    /// `x-api-key: <api_key>` for Anthropic Messages.
    Byok { upstream: String, api_key: String },
}

/// Hand-written so that debug-printing a mode (in a panic, a log line) never shows the
/// API key.
impl std::fmt::Debug for ProxyMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProxyMode::Scripted {
                script,
                model,
                latency,
            } => f
                .debug_struct("Scripted")
                .field("script", &script.capability)
                .field("model", model)
                .field("latency", latency)
                .finish(),
            ProxyMode::Byok { upstream, .. } => f
                .debug_struct("Byok")
                .field("upstream", upstream)
                .field("api_key", &"[redacted]")
                .finish(),
        }
    }
}

/// Per-trial limits the proxy enforces.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Budget {
    /// Once the metered input plus output tokens of the trial reach this, every further
    /// call is refused (in its protocol's error shape) and recorded with `source:
    /// "budget"`. Calls already running finish, so the total may end a little above.
    pub max_tokens: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::ProxyMode;

    #[test]
    fn debug_never_shows_the_key() {
        let mode = ProxyMode::Byok {
            upstream: "http://127.0.0.1:1/v1".into(),
            api_key: "sk-secret".into(),
        };
        assert!(!format!("{mode:?}").contains("sk-secret"));
    }
}
