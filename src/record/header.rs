//! What every record begins with, whatever its suite: the shared header, the harness
//! configuration it keeps, the error every reader of a record returns, and reading the
//! header alone. It imports nothing of a suite's, so every suite's record and every
//! reader of a run can build on it.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::origin::{gauntlet_commit, run_id};
use crate::config::Mode;
use crate::spec::Suite;

pub const RECORD_FILE: &str = "record.json";
/// The record schema written; every version from 1 up to it is read. 2 renamed fields
/// (`wording`, `nominal_hours`, `nominal_secs`, `setup`) whose old names still load.
pub const SCHEMA_VERSION: u32 = 2;

#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("{file}: {source}")]
    Io {
        file: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{file}: already exists; records are never overwritten")]
    Exists { file: PathBuf },
    #[error("{file}: not a gauntlet record: {reason}")]
    Invalid { file: PathBuf, reason: String },
}

pub(super) fn io(file: &Path) -> impl FnOnce(std::io::Error) -> RecordError + '_ {
    move |source| RecordError::Io {
        file: file.to_path_buf(),
        source,
    }
}

/// The harness configuration a trial ran under, as it matters to comparing results.
/// No secret is ever part of it: byok records the variable name, never the key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RecordConfig {
    pub agent: String,
    pub agent_version: String,
    pub model: String,
    pub mode: Mode,
    pub n: u32,
    pub timeout_secs: f64,
    pub gate_timeout_secs: f64,
    pub output_cap_bytes: u64,
    /// byok only: where calls were forwarded.
    pub upstream_url: Option<String>,
    /// The per-trial token budget the proxy enforced, if any.
    #[serde(default)]
    pub max_tokens_per_trial: Option<u64>,
    /// Scripted mode: how long each scripted model reply was made to take, when it was
    /// (`GAUNTLET_SCRIPTED_LATENCY_MS`). It changes no verdict, only the trial's
    /// timings, which a reader must then not take for the harness's own. Absent when
    /// none, as in records written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scripted_latency_ms: Option<u64>,
    /// Scripted mode: the provider each scripted answer was served through, when one
    /// was (`GAUNTLET_SCRIPTED_UPSTREAM`): the trial's timings and faults are that
    /// provider's. Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scripted_upstream: Option<String>,
    /// byok, or scripted through a provider: how the proxy met the provider's faults (docs/provider-faults.md),
    /// so that a reader knows which failures the agent was spared. Absent in scripted
    /// records, and in records written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_retry: Option<ProviderRetry>,
    /// The gauntlet source the harness was built from: `git rev-parse HEAD`, with
    /// `-dirty` when the work tree had changes; `None` when git was not available.
    /// Absent in records written before it existed.
    #[serde(default)]
    pub commit: Option<String>,
    /// Whether the trial ran sealed (docs/sealing.md). Records written before sealing
    /// existed were not sealed, and read as `off`.
    #[serde(default = "unsealed")]
    pub sandbox: crate::config::Sandbox,
}

fn unsealed() -> crate::config::Sandbox {
    crate::config::Sandbox::Off
}

impl RecordConfig {
    /// What of `cfg` a record of `agent` (at `agent_version`) keeps: the same for every
    /// suite, so that records of one run compare.
    pub fn of(cfg: &crate::config::Config, agent: &str, agent_version: String) -> RecordConfig {
        RecordConfig {
            agent: agent.into(),
            agent_version,
            model: cfg.model.clone(),
            mode: cfg.mode,
            n: cfg.n,
            timeout_secs: cfg.timeout.as_secs_f64(),
            gate_timeout_secs: cfg.gate_timeout.as_secs_f64(),
            output_cap_bytes: cfg.output_cap_bytes,
            upstream_url: (cfg.mode == Mode::Byok).then(|| cfg.upstream_url.clone()),
            max_tokens_per_trial: cfg.max_tokens_per_trial,
            scripted_latency_ms: (cfg.mode == Mode::Scripted && !cfg.scripted_latency.is_zero())
                .then(|| u64::try_from(cfg.scripted_latency.as_millis()).unwrap_or(u64::MAX)),
            scripted_upstream: cfg
                .scripted_upstream
                .clone()
                .filter(|_| cfg.mode == Mode::Scripted),
            provider_retry: (cfg.mode == Mode::Byok || cfg.scripted_upstream.is_some()).then_some(
                ProviderRetry {
                    retries: cfg.provider_retries,
                    max_wait_secs: cfg.provider_retry_wait_secs,
                },
            ),
            commit: gauntlet_commit(cfg),
            sandbox: cfg.sandbox,
        }
    }
}

/// The proxy's retry policy a byok trial ran under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ProviderRetry {
    /// Retries after a call's first attempt.
    pub retries: u32,
    /// The most one call waited in all between them.
    pub max_wait_secs: u64,
}

/// What every record begins with, whatever its suite: which suite, run and trial it
/// belongs to, when it ran and under which configuration. Every suite's record holds
/// it flattened, so it reads without committing to any suite's record shape and one
/// run directory can hold all three suites.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Header {
    pub schema_version: u32,
    /// Which suite's record this is; every reader dispatches on it.
    pub suite: Suite,
    /// The test name, e.g. `qa::api-ledger::balance` (`::r2` for a repeat).
    pub trial: String,
    pub run_id: String,
    pub gauntlet_version: String,
    pub started_at: String,
    pub finished_at: String,
    pub wall_ms: u64,
    pub config: RecordConfig,
}

impl Header {
    /// The header of a trial of `suite` that started at `started_at` (`t0` on the
    /// monotonic clock) and finishes now, in this process's run.
    pub fn finished_now(
        suite: Suite,
        trial: String,
        started_at: chrono::DateTime<chrono::Utc>,
        t0: std::time::Instant,
        config: RecordConfig,
    ) -> Header {
        Header {
            schema_version: SCHEMA_VERSION,
            suite,
            trial,
            run_id: run_id().to_string(),
            gauntlet_version: crate::VERSION.into(),
            started_at: started_at.to_rfc3339(),
            finished_at: chrono::Utc::now().to_rfc3339(),
            wall_ms: t0.elapsed().as_millis() as u64,
            config,
        }
    }
}

/// The header of a record file.
pub fn load_header(file: &Path) -> Result<Header, RecordError> {
    head(file)
}

/// [`load_header`] of a record file already read into `bytes`.
pub fn load_header_bytes(file: &Path, bytes: &[u8]) -> Result<Header, RecordError> {
    head_bytes(file, bytes)
}

/// The trial a record file belongs to (its `trial` field alone).
pub fn trial_of(file: &Path) -> Result<String, RecordError> {
    #[derive(serde::Deserialize)]
    struct Head {
        trial: String,
    }
    head::<Head>(file).map(|h| h.trial)
}

/// [`trial_of`] a record file already read into `bytes`: readers that check a record
/// read it once, not once per question.
pub fn trial_of_bytes(file: &Path, bytes: &[u8]) -> Result<String, RecordError> {
    #[derive(serde::Deserialize)]
    struct Head {
        trial: String,
    }
    head_bytes::<Head>(file, bytes).map(|h| h.trial)
}

fn head<T: serde::de::DeserializeOwned>(file: &Path) -> Result<T, RecordError> {
    let bytes = std::fs::read(file).map_err(io(file))?;
    head_bytes(file, &bytes)
}

fn head_bytes<T: serde::de::DeserializeOwned>(file: &Path, bytes: &[u8]) -> Result<T, RecordError> {
    crate::json::from_bytes(bytes).map_err(|e| RecordError::Invalid {
        file: file.to_path_buf(),
        reason: e.to_string(),
    })
}

/// ` sandbox=off` for a trial that ran unsealed, appended to every suite's summary line
/// so that JUnit says so; empty for a sealed one.
pub fn unsealed_tag(config: &RecordConfig) -> &'static str {
    if config.sandbox.sealed() {
        ""
    } else {
        " sandbox=off"
    }
}
