//! The infrastructure cause a trial carries when a provider's failure, not the agent,
//! is why its verdict says nothing.
//!
//! The cause is a pure function of a record's usage entries and its verdict, so a
//! record rescored offline gets the cause the run gave it, and nothing an agent writes
//! can set it: only the proxy records a call's fault ([`super::provider`]).
//! docs/provider-faults.md is the policy in full.

use serde::Serialize;

use super::provider::ProviderFault;
use super::usage::UsageEntry;

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
    use crate::evidence::provider::Retry;

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
}
