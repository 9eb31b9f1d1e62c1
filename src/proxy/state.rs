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
        /// The provider each scripted answer is served through, if any.
        via: Option<Arc<Upstream>>,
    },
    Byok(Arc<Upstream>),
}

impl Mode {
    /// The provider calls are forwarded to, if any.
    pub(crate) fn upstream(&self) -> Option<&Arc<Upstream>> {
        match self {
            Mode::Scripted { via, .. } => via.as_ref(),
            Mode::Byok(upstream) => Some(upstream),
        }
    }
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
                via: None,
            },
            ProxyMode::ScriptedVia {
                script,
                model,
                upstream,
                retry,
            } => Mode::Scripted {
                script,
                model,
                latency: Duration::ZERO,
                via: Some(Arc::new(Upstream::new(
                    &upstream,
                    super::settings::SCRIPTED_VIA_KEY,
                    retry,
                )?)),
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
