//! The provider's side of a trial: what went wrong between the metering proxy and the
//! model provider, as the proxy recorded it call by call (a usage entry's `fault` and
//! `retries`, which the proxy alone fills in, from the status, the connection and the
//! stream it saw). What a trial's verdict then owes the provider is
//! [`super::infra`]'s. docs/provider-faults.md is the policy in full.

use serde::{Deserialize, Serialize};

/// What the provider did wrong on one call, as the proxy observed it.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ProviderFault {
    /// Status 429: the provider's rate limit.
    RateLimited,
    /// A 5xx status: the provider overloaded or failing.
    ServerError,
    /// No connection to the provider could be made: the call never reached it.
    Unreachable,
    /// The answer broke off before its end: the connection dropped mid-body, or a
    /// stream ended without its end marker.
    Cut,
    /// A stream the provider ended with its protocol's error event (overloaded, say)
    /// instead of its end marker.
    StreamError,
}

impl ProviderFault {
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderFault::RateLimited => "rate_limited",
            ProviderFault::ServerError => "server_error",
            ProviderFault::Unreachable => "unreachable",
            ProviderFault::Cut => "cut",
            ProviderFault::StreamError => "stream_error",
        }
    }

    /// The fault a provider's status says, if it says one: only 429 and 5xx are the
    /// provider's (a 4xx other than 429 answers what the agent sent).
    pub fn of_status(status: u16) -> Option<ProviderFault> {
        match status {
            429 => Some(ProviderFault::RateLimited),
            500..=599 => Some(ProviderFault::ServerError),
            _ => None,
        }
    }
}

impl std::fmt::Display for ProviderFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One answer of the provider the proxy took itself and retried the call after: the
/// agent never saw it. Only answers that carry no usage are retried (a billed call is
/// always passed on), so a retry holds no tokens: it is kept so that the call's
/// history, and the time its waits cost, are evidence too.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Retry {
    /// The provider's status; 502 when it could not be reached.
    pub status: u16,
    pub fault: ProviderFault,
    /// The provider's words (redacted), or why it could not be reached.
    pub error: String,
    pub duration_ms: u64,
    /// How long the proxy waited before the next attempt (the provider's
    /// `retry-after` when it gave one).
    pub waited_ms: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_429_and_5xx_are_the_providers_statuses() {
        assert_eq!(
            ProviderFault::of_status(429),
            Some(ProviderFault::RateLimited)
        );
        for s in [500, 502, 503, 529] {
            assert_eq!(
                ProviderFault::of_status(s),
                Some(ProviderFault::ServerError)
            );
        }
        for s in [200, 400, 401, 403, 404, 413, 422] {
            assert_eq!(ProviderFault::of_status(s), None, "{s}");
        }
    }
}
