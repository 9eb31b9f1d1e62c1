//! What every call of a running proxy shares: how it answers, the usage log and the
//! relayed calls it records into, and the budget it is held to.

use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::Duration;

use super::calls::Calls;
use super::log::UsageLog;
use super::script::Repeats;
use super::settings::{Budget, ProxyMode};
use super::upstream::Upstream;
use crate::spec::Script;

/// How the proxy answers, with what it needs to do so.
pub(crate) enum Mode {
    Scripted {
        script: Script,
        model: String,
        latency: Duration,
    },
    Byok(Arc<Upstream>),
}

/// What every call of a running proxy reads and records into.
pub(crate) struct State {
    pub(crate) mode: Mode,
    pub(crate) log: Arc<UsageLog>,
    pub(crate) calls: Arc<Calls>,
    budget: Budget,
    /// Scripted mode: how often each tool step was answered.
    pub(crate) repeats: Repeats,
    /// Streams whose agent hung up, still being read for their usage (`relay::Leftovers`).
    pub(crate) left_by_agents: Arc<AtomicUsize>,
}

impl State {
    pub(crate) fn new(
        mode: ProxyMode,
        log: Arc<UsageLog>,
        calls: Arc<Calls>,
        budget: Budget,
    ) -> std::io::Result<State> {
        let mode = match mode {
            ProxyMode::Scripted {
                script,
                model,
                latency,
            } => Mode::Scripted {
                script,
                model,
                latency,
            },
            ProxyMode::Byok {
                upstream,
                api_key,
                retry,
            } => Mode::Byok(Arc::new(Upstream::new(&upstream, &api_key, retry)?)),
        };
        Ok(State {
            mode,
            log,
            calls,
            budget,
            repeats: Repeats::default(),
            left_by_agents: Arc::default(),
        })
    }

    /// Why no further call may be made, once the metered total reached the budget.
    pub(crate) fn budget_spent(&self) -> Option<String> {
        let limit = self.budget.max_tokens?;
        let metered = self.log.metered();
        (metered >= limit).then(|| {
            format!(
                "gauntlet token budget spent: {metered} tokens metered, the trial's limit \
                 (max_tokens_per_trial) is {limit}; no further model calls are answered"
            )
        })
    }

    /// `source` of an entry the proxy answered itself, without a provider.
    pub(crate) fn local_source(&self) -> &'static str {
        match self.mode {
            Mode::Scripted { .. } => "scripted",
            Mode::Byok(_) => "proxy",
        }
    }
}
