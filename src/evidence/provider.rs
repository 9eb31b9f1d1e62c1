//! The provider's side of a trial: what went wrong between the metering proxy and the
//! model provider, as the proxy recorded it call by call, and the infrastructure cause
//! a trial carries when such a failure, not the agent, is why its verdict says nothing.
//!
//! The cause is a pure function of a record's usage entries and its verdict, so a
//! record rescored offline gets the cause the run gave it, and nothing an agent writes
//! can set it: the proxy alone fills in [`UsageEntry::fault`], from the status, the
//! connection and the stream it saw. docs/provider-faults.md is the policy in full.

use serde::{Deserialize, Serialize};

use super::usage::UsageEntry;

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

/// Why a trial's verdict is not the agent's: the provider failed the call the trial's
/// agent ended on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct InfraCause {
    pub fault: ProviderFault,
    /// The usage entry of the call.
    pub seq: u64,
    /// What the proxy recorded of it.
    pub error: String,
}

impl std::fmt::Display for InfraCause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the provider failed model call {} ({}): {}",
            self.seq, self.fault, self.error
        )
    }
}

/// The infrastructure cause of a trial whose verdict says nothing about the agent
/// (`unjudged`: an error, a timeout, no self-report): its last model call, by arrival,
/// met a provider fault the proxy passed on. A judged verdict is never the provider's,
/// whatever its calls met; and a fault the agent went on from (a later call of its own)
/// is not why it stopped.
///
/// `entries` are the trial's proxies' logs one after another, in the order the proxies
/// ran, each in arrival order (as `Proxy::shutdown` gives them): a scorecard probe runs
/// a proxy per turn, each numbering its calls from 0. The last call is the last entry:
/// the highest number of all would be the busiest turn's last call, not the last turn's.
pub fn infra_cause(unjudged: bool, entries: &[UsageEntry]) -> Option<InfraCause> {
    if !unjudged {
        return None;
    }
    let last = entries.last()?;
    let fault = last.fault?;
    Some(InfraCause {
        fault,
        seq: last.seq,
        error: last.error.clone().unwrap_or_else(|| fault.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(seq: u64, fault: Option<ProviderFault>) -> UsageEntry {
        UsageEntry {
            seq,
            status: if fault.is_some() { 503 } else { 200 },
            fault,
            error: fault.map(|f| format!("upstream {f}")),
            ..UsageEntry::default()
        }
    }

    #[test]
    fn a_trial_is_the_providers_only_when_unjudged_and_ended_on_a_passed_on_fault() {
        let faulted = [call(0, None), call(1, Some(ProviderFault::ServerError))];
        let cause = infra_cause(true, &faulted).expect("ended on a fault");
        assert_eq!((cause.fault, cause.seq), (ProviderFault::ServerError, 1));
        // A judged verdict stays the agent's, whatever its calls met.
        assert_eq!(infra_cause(false, &faulted), None);
        // The agent went on after the fault: not why it stopped.
        let recovered = [call(0, Some(ProviderFault::RateLimited)), call(1, None)];
        assert_eq!(infra_cause(true, &recovered), None);
        // One proxy per turn, each numbering from 0: the last turn's last call decides,
        // not the highest number (a busy first turn's last call).
        let busy_then_ended_on_a_fault = [
            call(0, None),
            call(1, None),
            call(2, None),
            call(0, None),
            call(1, Some(ProviderFault::Cut)),
        ];
        assert_eq!(
            infra_cause(true, &busy_then_ended_on_a_fault).map(|c| c.seq),
            Some(1),
            "the last turn's last call decides"
        );
        let faulted_then_ended_on_its_own = [
            call(0, None),
            call(1, None),
            call(2, Some(ProviderFault::RateLimited)),
            call(0, None),
            call(1, None),
        ];
        assert_eq!(
            infra_cause(true, &faulted_then_ended_on_its_own),
            None,
            "an earlier turn's fault is not why the last turn stopped"
        );
        // No call at all: nothing the provider did.
        assert_eq!(infra_cause(true, &[]), None);
    }

    #[test]
    fn retries_the_proxy_absorbed_are_no_fault_of_the_call() {
        let mut absorbed = call(0, None);
        absorbed.retries = vec![Retry {
            status: 429,
            fault: ProviderFault::RateLimited,
            error: "upstream status 429: slow down".into(),
            duration_ms: 3,
            waited_ms: 1000,
        }];
        assert_eq!(infra_cause(true, &[absorbed]), None);
    }

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
