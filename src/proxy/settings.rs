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
    /// Answer from a script, as [`ProxyMode::Scripted`], but serve each answer through
    /// `upstream`: the proxy sends the agent's request there with the scripted answer
    /// attached ([`ANSWER_HEADER`]), then relays, meters and retries what comes back
    /// as in byok. A provider that answers with what it is given (the fake provider,
    /// `tools/fake-provider`) adds its latency and its faults on the real forwarding
    /// path while the conversation stays the script's: what the scale bench runs.
    ScriptedVia {
        script: Script,
        model: String,
        upstream: String,
        retry: RetryPolicy,
    },
    /// Forward to `upstream`, a base URL ending in the API version such as
    /// "https://api.openai.com/v1" or "https://api.anthropic.com/v1": a call to
    /// `/v1/<path>` goes to `<upstream>/<path>`. The key goes as
    /// `Authorization: Bearer <api_key>` for the OpenAI protocols and as
    /// `x-api-key: <api_key>` for Anthropic Messages.
    Byok {
        upstream: String,
        api_key: String,
        retry: RetryPolicy,
    },
}

/// The request header that carries a scripted answer to the provider that is to serve
/// it ([`ProxyMode::ScriptedVia`]): the answer's bytes in standard base64. Its content
/// type goes in [`ANSWER_TYPE_HEADER`].
pub const ANSWER_HEADER: &str = "x-gauntlet-answer";
pub const ANSWER_TYPE_HEADER: &str = "x-gauntlet-answer-type";

/// The key a scripted proxy serving through a provider sends it: no secret, only a
/// name its ledger is kept under.
pub const SCRIPTED_VIA_KEY: &str = "gauntlet-scripted";

/// How the proxy meets a provider's fault before the agent does: the calls it retries
/// itself, and for how long (docs/provider-faults.md). Only an answer that carries no
/// usage, or a call that never reached the provider, is retried: a billed call is
/// always passed on, so nothing billed is hidden and nothing is metered twice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts after the first; 0 passes every answer on as it came.
    pub retries: u32,
    /// The most one call waits in all between its attempts. A `retry-after` longer
    /// than what is left is the provider's word that it will not answer soon: the
    /// answer is passed on, and the agent's own backoff decides.
    pub max_wait: Duration,
}

impl RetryPolicy {
    /// Every answer reaches the agent as the provider gave it.
    pub const NONE: RetryPolicy = RetryPolicy {
        retries: 0,
        max_wait: Duration::ZERO,
    };

    /// The wait before attempt `attempt + 1` (0: the first retry), after `waited` in
    /// all so far, when the provider asked for `asked` (its `retry-after`) or for
    /// nothing: `None` when the policy allows no further attempt.
    pub fn next_wait(
        &self,
        attempt: usize,
        asked: Option<Duration>,
        waited: Duration,
    ) -> Option<Duration> {
        if attempt >= self.retries as usize {
            return None;
        }
        // Without the provider's word: 1 s, 2 s, 4 s, ... as providers document.
        let wait = asked.unwrap_or_else(|| Duration::from_secs(1u64 << attempt.min(6)));
        (waited.saturating_add(wait) <= self.max_wait).then_some(wait)
    }
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
            ProxyMode::ScriptedVia {
                script,
                model,
                upstream,
                retry,
            } => f
                .debug_struct("ScriptedVia")
                .field("script", &script.capability)
                .field("model", model)
                .field("upstream", upstream)
                .field("retry", retry)
                .finish(),
            ProxyMode::Byok {
                upstream, retry, ..
            } => f
                .debug_struct("Byok")
                .field("upstream", upstream)
                .field("api_key", &"[redacted]")
                .field("retry", retry)
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
            retry: super::RetryPolicy::NONE,
        };
        assert!(!format!("{mode:?}").contains("sk-secret"));
    }

    #[test]
    fn retries_are_bounded_in_number_and_in_time_and_follow_the_providers_word() {
        use super::RetryPolicy;
        use std::time::Duration;
        let s = Duration::from_secs;
        let p = RetryPolicy {
            retries: 3,
            max_wait: s(10),
        };
        // The provider's retry-after is followed as given.
        assert_eq!(p.next_wait(0, Some(s(3)), s(0)), Some(s(3)));
        // Without it: 1 s, 2 s, 4 s.
        assert_eq!(p.next_wait(0, None, s(0)), Some(s(1)));
        assert_eq!(p.next_wait(1, None, s(1)), Some(s(2)));
        assert_eq!(p.next_wait(2, None, s(3)), Some(s(4)));
        // No fourth retry, and no wait past the bound: passed on instead.
        assert_eq!(p.next_wait(3, None, s(7)), None);
        assert_eq!(p.next_wait(0, Some(s(11)), s(0)), None);
        assert_eq!(p.next_wait(1, Some(s(4)), s(7)), None);
        assert_eq!(RetryPolicy::NONE.next_wait(0, Some(s(0)), s(0)), None);
    }
}
