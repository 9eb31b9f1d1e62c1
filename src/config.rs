//! Run configuration: defaults, then an optional TOML file (`GAUNTLET_CONFIG`), then
//! environment variables. Environment variables are the primary interface because they
//! pass through `cargo test` and nextest unchanged. Bad values are refused with the
//! name of the variable (or file and key) that carried them.
//!
//! | variable | meaning | default |
//! | --- | --- | --- |
//! | `GAUNTLET_CONFIG` | path of a TOML file with the keys below (lowercase, no prefix) | none |
//! | `GAUNTLET_AGENT` | `reference`, `command`, or a pinned CLI: `opencode`, `claude-code`, `codex` (docs/agents.md) | `reference` |
//! | `GAUNTLET_AGENT_CMD` | the command line for the `command` adapter | none |
//! | `GAUNTLET_AGENT_DAEMON_CMD` | the `command` agent's background mode: a command line the scorecard runs through each block of idle windows (docs/agent-protocol.md, "Background mode") | none |
//! | `GAUNTLET_AGENT_STREAM` | `1`: the reference agent asks its provider for server-sent events (`gauntlet-agent --stream`); the CLIs choose for themselves | `0` |
//! | `GAUNTLET_MODE` | `scripted` or `byok` | `scripted` |
//! | `GAUNTLET_MODEL` | model name sent to the provider | `scripted-model` |
//! | `GAUNTLET_N` | green re-runs a verified claim needs | `3` |
//! | `GAUNTLET_REPEATS` | independent trials per capability (K); names gain `::r1`…`::rK` when K > 1 | `1` |
//! | `GAUNTLET_TIMEOUT_SECS` | the agent's deadline per trial | `600` |
//! | `GAUNTLET_GATE_TIMEOUT_SECS` | deadline of each re-run of a claimed test | `60` |
//! | `GAUNTLET_INDEPENDENT_MUTANTS` | M: at most this many mutants of other capabilities, each leaving the claimed one intact, on which a claimed test must pass too (drawn per trial) | `3` |
//! | `GAUNTLET_CACHE_DIR` | where apps' independence matrices are kept between runs, by content hash | `target/gauntlet/cache` |
//! | `GAUNTLET_OUT` | where run directories go | `target/gauntlet/runs` |
//! | `GAUNTLET_RESUME` | a run directory to resume instead of starting a new one: trials write into it, and refuse if the run's `run.json` names another config or spec (`gauntlet run --resume` sets it for its own trials; under nextest, set it beside the filter `gauntlet run --resume DIR --nextest-filter` prints) | none |
//! | `GAUNTLET_RETRY_INFRA` | with `GAUNTLET_RESUME`: run exactly the trials of the resumed run that the provider failed, and nothing else (docs/provider-faults.md; `gauntlet run --resume DIR --retry-infra`) | `0` |
//! | `GAUNTLET_UPSTREAM_URL` | byok: the provider's OpenAI-compatible base URL | `https://api.openai.com/v1` |
//! | `GAUNTLET_API_KEY_ENV` | byok: the variable holding the provider key | `OPENAI_API_KEY` |
//! | `GAUNTLET_OUTPUT_CAP_BYTES` | bytes kept per output stream; the rest is counted, not kept | `33554432` |
//! | `GAUNTLET_SCORECARD_IDLE_SECS` | how long one nominal day (the 24 hours a probe's idle windows are written in) lasts in a scorecard probe; shorter than 86400 is a compressed run, recorded and never ranked beside full ones | `86400` (byok), `24` (scripted) |
//! | `GAUNTLET_SCORECARD_SEED` | the scorecard fact bank's seed: the same seed gives the same probes | `gauntlet-0` |
//! | `GAUNTLET_SCORECARD_PROFILE` | scripted mode: which scripted agent profile the scorecard trials use (`stub`, `reactive`, `autonomous`, from `challenges/scorecard/agents/`) | `autonomous` |
//! | `GAUNTLET_SANDBOX` | `sealed`: every agent and gate run in a sandbox of its own (docs/sealing.md); `off`: unsealed, on purpose only, marked in every record and never ranked | `sealed` |
//! | `GAUNTLET_MAX_TOKENS_PER_TRIAL` | proxy-metered input + output tokens after which the proxy refuses further model calls of a trial; `0` or `none` for no limit | none |
//! | `GAUNTLET_SCRIPTED_LATENCY_MS` | scripted mode: how long each scripted model reply takes, a whole answer before it comes, a stream spread evenly over it, so that a scripted run has a provider's timing; verdicts do not change | `0` |
//! | `GAUNTLET_SCRIPTED_UPSTREAM` | scripted mode: a provider on loopback (`http://127.0.0.1:PORT/v1`) each scripted answer is served through, sent along with the request (`x-gauntlet-answer`): the fake provider answers with it, adding its latency and faults on the proxy's real forwarding path (the scale bench) | none |
//! | `GAUNTLET_PROVIDER_RETRIES` | byok: how many times the proxy retries a call the provider answered with 429 or 5xx and did not bill, or that never reached it, before the agent sees the failure (docs/provider-faults.md); `0` passes every answer on as it came | `3` |
//! | `GAUNTLET_PROVIDER_RETRY_WAIT_SECS` | byok: the most one call waits in all between those retries; a `retry-after` beyond it is passed on to the agent | `60` |
//! | `GAUNTLET_APPS_DIR` | the apps the qa suite and the challenges run on | `apps/` |
//! | `GAUNTLET_CHALLENGES_DIR` | the challenge suite's directories | `challenges/` |
//! | `GAUNTLET_SCORECARD_DIR` | the scorecard suite's probes, tables and scripted profiles | `challenges/scorecard/` |
//! | `GAUNTLET_CHALLENGE_TIMEOUT_SECS` | a challenge's ceiling when its manifest names none | `3600` |
//!
//! The provider key is read here too, from the variable `GAUNTLET_API_KEY_ENV` names,
//! and handed to the proxy alone; `CI` decides whether a missing tool is an ignore
//! (outside CI) or an error.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Which agent a trial runs: the one table of agent names. Configuration parses
/// `GAUNTLET_AGENT` through it, records keep its name, and rescore finds the parser of
/// a record's stdout from it (`evidence::streams::parser`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum AgentKind {
    /// `gauntlet-agent`, built by this package; speaks the gauntlet event protocol.
    #[serde(rename = "reference")]
    Reference,
    /// Any executable given by `GAUNTLET_AGENT_CMD`; held to the gauntlet protocol.
    #[serde(rename = "command")]
    Command,
    /// OpenCode, pinned in `workspace/`.
    #[serde(rename = "opencode")]
    OpenCode,
    /// Claude Code, pinned in `workspace/`.
    #[serde(rename = "claude-code")]
    ClaudeCode,
    /// Codex, pinned in `workspace/`.
    #[serde(rename = "codex")]
    Codex,
}

impl AgentKind {
    pub const ALL: [AgentKind; 5] = [
        AgentKind::Reference,
        AgentKind::Command,
        AgentKind::OpenCode,
        AgentKind::ClaudeCode,
        AgentKind::Codex,
    ];

    /// The name configuration and records use.
    pub fn name(self) -> &'static str {
        match self {
            AgentKind::Reference => "reference",
            AgentKind::Command => "command",
            AgentKind::OpenCode => "opencode",
            AgentKind::ClaudeCode => "claude-code",
            AgentKind::Codex => "codex",
        }
    }

    /// The kind named `name`, or `None` for a name no adapter has.
    pub fn from_name(name: &str) -> Option<AgentKind> {
        AgentKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Every name, for error messages and docs: `reference, command, ...`.
    pub fn names() -> String {
        AgentKind::ALL.map(AgentKind::name).join(", ")
    }

    /// The pinned npm CLI's executable under `workspace/node_modules/.bin`, for the
    /// kinds that are one.
    pub fn npm_bin(self) -> Option<&'static str> {
        match self {
            AgentKind::Reference | AgentKind::Command => None,
            AgentKind::OpenCode => Some("opencode"),
            AgentKind::ClaudeCode => Some("claude"),
            AgentKind::Codex => Some("codex"),
        }
    }
}

impl std::fmt::Display for AgentKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The agent a run measures: its kind (the one table of agent names) and, for a
/// `command` agent, the program. `{graph_file}`, `{url}`, `{capability}`, `{n}` and
/// `{workspace}` in a command's arguments are replaced per trial.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentChoice {
    pub kind: AgentKind,
    /// The command line of a `command` agent; empty, and unused, for every other kind.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub argv: Vec<String>,
    /// The background mode of a `command` agent: the command line the scorecard starts
    /// for a block of idle windows (`Adapter::daemon_launch`); empty, none. Unused by
    /// every other kind.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub daemon_argv: Vec<String>,
    /// The reference agent streams its model calls (`--stream`): both halves of every
    /// wire protocol must be metered, and a local server may stream differently from
    /// how it answers whole. Unused by every other kind.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stream: bool,
}

impl AgentChoice {
    /// The agent of `kind` (a `command` agent still needs its [`argv`](Self::argv)).
    pub fn of(kind: AgentKind) -> AgentChoice {
        AgentChoice {
            kind,
            argv: vec![],
            daemon_argv: vec![],
            stream: false,
        }
    }

    /// A `command` agent running `argv`.
    pub fn command(argv: Vec<String>) -> AgentChoice {
        AgentChoice {
            kind: AgentKind::Command,
            argv,
            daemon_argv: vec![],
            stream: false,
        }
    }

    /// This `command` agent with a background mode running `daemon_argv`.
    pub fn with_daemon(mut self, daemon_argv: Vec<String>) -> AgentChoice {
        self.daemon_argv = daemon_argv;
        self
    }

    pub fn kind(&self) -> AgentKind {
        self.kind
    }

    pub fn name(&self) -> &'static str {
        self.kind.name()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// The proxy replays the app's flows; no key, no spend. Never ranked.
    Scripted,
    /// The proxy forwards to a real provider and meters every call.
    Byok,
}

/// Whether trials are sealed (docs/sealing.md).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Sandbox {
    /// Every process run for the agent, and every gate run, in its own namespaces.
    #[default]
    Sealed,
    /// Unsealed: the agent could see around the gate or rewrite evidence. Only when
    /// `GAUNTLET_SANDBOX=off` says so; such trials are marked and never ranked.
    Off,
}

impl Sandbox {
    pub fn sealed(self) -> bool {
        self == Sandbox::Sealed
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Config {
    pub agent: AgentChoice,
    pub mode: Mode,
    pub model: String,
    pub n: u32,
    /// K: independent trials per capability.
    pub repeats: u32,
    #[serde(with = "secs")]
    pub timeout: Duration,
    #[serde(with = "secs")]
    pub gate_timeout: Duration,
    /// M: at most this many independent mutants per gate (`evidence::independence`).
    #[serde(default = "default_independent_mutants")]
    pub independent_mutants: u32,
    pub out_dir: PathBuf,
    /// Where derived data that only depends on an app's content lives between runs (the
    /// independence matrices). Not part of a run's identity: a cache, never evidence.
    #[serde(skip, default = "default_cache_dir")]
    pub cache_dir: PathBuf,
    /// The run directory being resumed, if any. Not part of a run's identity: the
    /// resumed run must match the one it resumes.
    #[serde(skip)]
    pub resume: Option<PathBuf>,
    /// With `resume`: run again exactly the trials the provider failed
    /// (docs/provider-faults.md), and nothing else. Not part of a run's identity.
    #[serde(skip)]
    pub retry_infra: bool,
    pub upstream_url: String,
    pub api_key_env: String,
    pub output_cap_bytes: u64,
    /// The per-trial token budget the metering proxy enforces (`None`: no limit).
    #[serde(default)]
    pub max_tokens_per_trial: Option<u64>,
    /// Scripted mode: how long each scripted model reply takes. Part of a run's
    /// identity when set (a resumed run's timings are then all of one setting), absent
    /// when zero so that runs planned before it existed still resume.
    #[serde(
        default,
        rename = "scripted_latency_ms",
        skip_serializing_if = "Duration::is_zero",
        with = "millis"
    )]
    pub scripted_latency: Duration,
    /// Scripted mode: a provider on loopback each scripted answer is served through
    /// (the fake provider, `tools/fake-provider`), so that its latency and its faults
    /// happen on the proxy's real forwarding path while the conversation stays
    /// scripted. Part of a run's identity when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scripted_upstream: Option<String>,
    /// byok: how many times the proxy retries a call the provider failed before the
    /// agent sees the failure (docs/provider-faults.md). Absent at its default, so that
    /// runs planned before it existed still resume.
    #[serde(
        default = "default_provider_retries",
        skip_serializing_if = "is_default_provider_retries"
    )]
    pub provider_retries: u32,
    /// byok: the most one call waits in all between its retries.
    #[serde(
        default = "default_provider_retry_wait",
        rename = "provider_retry_wait_secs",
        skip_serializing_if = "is_default_provider_retry_wait"
    )]
    pub provider_retry_wait_secs: u64,
    /// Scorecard: how long one nominal day (24 h) of idle lasts, when set; otherwise
    /// [`Config::idle_day`] decides by mode.
    #[serde(default)]
    pub scorecard_idle_day: Option<Duration>,
    /// Scorecard: the fact bank's seed.
    #[serde(default = "default_scorecard_seed")]
    pub scorecard_seed: String,
    /// Scorecard, scripted mode: the scripted agent profile.
    #[serde(default = "default_scorecard_profile")]
    pub scorecard_profile: String,
    #[serde(default)]
    pub sandbox: Sandbox,
    /// The qa suite's apps (and the challenges' apps).
    #[serde(default = "default_apps_dir")]
    pub apps_dir: PathBuf,
    /// The challenge suite's `challenges/<id>/` directories.
    #[serde(default = "default_challenges_dir")]
    pub challenges_dir: PathBuf,
    /// The scorecard suite's probes, fact bank and scripted profiles.
    #[serde(default = "default_scorecard_dir")]
    pub scorecard_dir: PathBuf,
    /// The adversary catalogue `gauntlet redteam` runs and the committed audit of the
    /// shipped tasks (`redteam/`). Not part of a run's identity: a run records the
    /// audit it was checked against on its own ([`crate::record::hackability`]).
    #[serde(skip, default = "default_redteam_dir")]
    pub redteam_dir: PathBuf,
    /// The challenge ceiling when a manifest names none (`None`: one hour).
    #[serde(default, with = "opt_secs")]
    pub challenge_timeout: Option<Duration>,
    /// The challenge ceiling over any manifest's (`gauntlet challenge run
    /// --timeout-secs`). Absent from a run's identity when unset, so that runs planned
    /// before it existed still resume.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opt_secs")]
    pub challenge_timeout_override: Option<Duration>,
    /// `CI=true` (or `1`): the environment promises every tool, so a missing one is an
    /// error, never an ignore.
    #[serde(default)]
    pub ci: bool,
    /// byok: the provider key, read from the variable `api_key_env` names. Never
    /// serialized, never printed: only the proxy is handed it.
    #[serde(skip)]
    pub api_key: Option<ApiKey>,
}

/// The provider key; its `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    pub fn new(key: impl Into<String>) -> ApiKey {
        ApiKey(key.into())
    }
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey([redacted])")
    }
}

/// The nominal day: the 24 hours a probe's idle windows are written in (`nominal_hours`),
/// which [`Config::idle_day`] scales to real time. A real (byok) run waits them out.
pub const NOMINAL_DAY: Duration = Duration::from_secs(86_400);

/// One nominal day in a scripted (CI) run unless configured: scripted runs are harness
/// illustrations, never ranked, so they need not wait a day.
pub const SCRIPTED_DAY: Duration = Duration::from_secs(24);

impl Config {
    /// byok: the provider key, for the proxy alone.
    pub fn provider_key(&self) -> Result<String, ConfigError> {
        self.api_key
            .as_ref()
            .map(|k| k.expose().to_owned())
            .ok_or_else(|| ConfigError::NoProviderKey {
                variable: self.api_key_env.clone(),
            })
    }

    /// How long one nominal day of idle lasts: `GAUNTLET_SCORECARD_IDLE_SECS` when set,
    /// else the full 24 hours for a real (byok) run and [`SCRIPTED_DAY`] for a
    /// scripted one. Anything shorter than [`NOMINAL_DAY`] is a compressed run.
    pub fn idle_day(&self) -> Duration {
        self.scorecard_idle_day.unwrap_or(match self.mode {
            Mode::Byok => NOMINAL_DAY,
            Mode::Scripted => SCRIPTED_DAY,
        })
    }
}
/// A directory a setting names, made absolute against the working directory: every
/// process a run starts (an app, a sealed agent, a trial under nextest) has a
/// working directory of its own, where a relative path names something else.
fn setting_path(value: &str) -> PathBuf {
    std::path::absolute(value).unwrap_or_else(|_| PathBuf::from(value))
}

impl Config {
    /// Whether the data directory `dir` is missing where no setting named it: a
    /// repository holds data for the suites it uses, and a suite without its directory
    /// plans nothing. A directory a setting names must exist.
    pub fn absent_by_default(&self, dir: &Path) -> bool {
        !dir.exists()
            && [
                default_apps_dir(),
                default_challenges_dir(),
                default_scorecard_dir(),
            ]
            .iter()
            .any(|d| d == dir)
    }
}

fn default_apps_dir() -> PathBuf {
    crate::binaries::repo_root().join("apps")
}
fn default_challenges_dir() -> PathBuf {
    crate::spec::challenge::default_root()
}
fn default_scorecard_dir() -> PathBuf {
    crate::spec::scorecard::default_dir()
}
fn default_redteam_dir() -> PathBuf {
    crate::binaries::repo_root().join("redteam")
}
/// A whole number of `unit` from 0 to `max` (`max_words` says it), or why `value` is
/// not one.
fn whole(value: &str, max: u64, unit: &str, max_words: &str) -> Result<u64, String> {
    let n: u64 = value
        .trim()
        .parse()
        .map_err(|_| format!("expected a whole number of {unit}"))?;
    if n > max {
        return Err(format!("expected at most {max} ({max_words})"));
    }
    Ok(n)
}

/// The most retries a config may ask of the proxy: each can wait, and a trial has a
/// deadline.
const MAX_PROVIDER_RETRIES: u32 = 10;
const MAX_PROVIDER_RETRY_WAIT_SECS: u64 = 600;

fn default_provider_retries() -> u32 {
    3
}

fn is_default_provider_retries(n: &u32) -> bool {
    *n == default_provider_retries()
}

fn default_provider_retry_wait() -> u64 {
    60
}

fn is_default_provider_retry_wait(secs: &u64) -> bool {
    *secs == default_provider_retry_wait()
}

fn default_scorecard_seed() -> String {
    "gauntlet-0".into()
}
fn default_scorecard_profile() -> String {
    "autonomous".into()
}

/// A value that is not a positive number of seconds.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a positive number of seconds")]
pub struct NotSeconds(pub String);

/// A positive number of seconds, fractions allowed.
pub fn positive_secs(v: &str) -> Result<Duration, NotSeconds> {
    match v.trim().parse::<f64>() {
        Ok(secs) if secs.is_finite() && secs > 0.0 => Ok(Duration::from_secs_f64(secs)),
        _ => Err(NotSeconds(v.to_owned())),
    }
}

mod opt_secs {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;
    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_some(&d.as_secs_f64()),
            None => s.serialize_none(),
        }
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Ok(Option::<f64>::deserialize(d)?.map(Duration::from_secs_f64))
    }
}

mod millis {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;
    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        Ok(Duration::from_millis(u64::deserialize(d)?))
    }
}

mod secs {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;
    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let v = f64::deserialize(d)?;
        Duration::try_from_secs_f64(v).map_err(serde::de::Error::custom)
    }
}

fn default_independent_mutants() -> u32 {
    3
}

fn default_cache_dir() -> PathBuf {
    crate::binaries::repo_root().join("target/gauntlet/cache")
}

impl Default for Config {
    fn default() -> Self {
        Config {
            agent: AgentChoice::of(AgentKind::Reference),
            mode: Mode::Scripted,
            model: "scripted-model".into(),
            n: 3,
            repeats: 1,
            timeout: Duration::from_secs(600),
            gate_timeout: Duration::from_secs(60),
            independent_mutants: default_independent_mutants(),
            out_dir: crate::binaries::repo_root().join("target/gauntlet/runs"),
            cache_dir: default_cache_dir(),
            resume: None,
            retry_infra: false,
            upstream_url: "https://api.openai.com/v1".into(),
            api_key_env: "OPENAI_API_KEY".into(),
            output_cap_bytes: 32 << 20,
            max_tokens_per_trial: None,
            scripted_latency: Duration::ZERO,
            scripted_upstream: None,
            provider_retries: default_provider_retries(),
            provider_retry_wait_secs: default_provider_retry_wait(),
            scorecard_idle_day: None,
            scorecard_seed: default_scorecard_seed(),
            scorecard_profile: default_scorecard_profile(),
            sandbox: Sandbox::Sealed,
            apps_dir: default_apps_dir(),
            challenges_dir: default_challenges_dir(),
            scorecard_dir: default_scorecard_dir(),
            redteam_dir: default_redteam_dir(),
            challenge_timeout: None,
            challenge_timeout_override: None,
            ci: false,
            api_key: None,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{source_name}: `{value}` is not valid: {reason}")]
    Invalid {
        /// The variable, or `file: key`.
        source_name: String,
        value: String,
        reason: String,
    },
    #[error("{file}: cannot read config: {reason}")]
    File { file: PathBuf, reason: String },
    #[error("byok mode: {variable} is not set")]
    NoProviderKey { variable: String },
}

/// The longest scripted reply: a provider slower than ten minutes a call is a hung one.
const MAX_SCRIPTED_LATENCY_MS: u64 = 600_000;

/// Keys of the config file and of the environment, in one table.
const KEYS: &[&str] = &[
    "agent",
    "agent_cmd",
    // After `agent_cmd`, which makes a new command agent.
    "agent_daemon_cmd",
    "agent_stream",
    "mode",
    "model",
    "n",
    "repeats",
    "timeout_secs",
    "gate_timeout_secs",
    "independent_mutants",
    "out",
    "cache_dir",
    "resume",
    "retry_infra",
    "upstream_url",
    "api_key_env",
    "output_cap_bytes",
    "max_tokens_per_trial",
    "scripted_latency_ms",
    "scripted_upstream",
    "provider_retries",
    "provider_retry_wait_secs",
    "scorecard_idle_secs",
    "scorecard_seed",
    "scorecard_profile",
    "sandbox",
    "apps_dir",
    "challenges_dir",
    "scorecard_dir",
    "redteam_dir",
    "challenge_timeout_secs",
];

impl Config {
    /// Defaults, then `GAUNTLET_CONFIG`'s file, then `GAUNTLET_*` variables.
    pub fn from_env() -> Result<Config, ConfigError> {
        let env: BTreeMap<String, String> = std::env::vars().collect();
        Config::from_sources(&env)
    }

    /// The same, from an explicit environment (tests use this).
    pub fn from_sources(env: &BTreeMap<String, String>) -> Result<Config, ConfigError> {
        let mut cfg = Config::default();
        if let Some(file) = env.get("GAUNTLET_CONFIG").filter(|s| !s.is_empty()) {
            let file = PathBuf::from(file);
            let text = std::fs::read_to_string(&file).map_err(|e| ConfigError::File {
                file: file.clone(),
                reason: e.to_string(),
            })?;
            let table: toml::Table =
                text.parse()
                    .map_err(|e: toml::de::Error| ConfigError::File {
                        file: file.clone(),
                        reason: e.message().to_string(),
                    })?;
            for (key, value) in &table {
                if !KEYS.contains(&key.as_str()) {
                    return Err(ConfigError::File {
                        file: file.clone(),
                        reason: format!("unknown key `{key}` (known: {})", KEYS.join(", ")),
                    });
                }
                let value = match value {
                    toml::Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                cfg.set(key, &value, &format!("{}: {key}", file.display()))?;
            }
        }
        for key in KEYS {
            let var = format!("GAUNTLET_{}", key.to_ascii_uppercase());
            if let Some(value) = env.get(&var) {
                cfg.set(key, value, &var)?;
            }
        }
        cfg.ci = env
            .get("CI")
            .is_some_and(|v| v.eq_ignore_ascii_case("true") || v == "1");
        cfg.api_key = env
            .get(&cfg.api_key_env)
            .filter(|k| !k.is_empty())
            .map(|k| ApiKey(k.clone()));
        if !cfg.agent.daemon_argv.is_empty() && cfg.agent.kind != AgentKind::Command {
            return Err(ConfigError::Invalid {
                source_name: "GAUNTLET_AGENT_DAEMON_CMD".into(),
                value: shell_words::join(&cfg.agent.daemon_argv),
                reason: format!(
                    "only a `command` agent takes a background command; the agent is `{}`",
                    cfg.agent.kind
                ),
            });
        }
        if cfg.mode == Mode::Byok && !cfg.scripted_latency.is_zero() {
            return Err(ConfigError::Invalid {
                source_name: "GAUNTLET_SCRIPTED_LATENCY_MS".into(),
                value: cfg.scripted_latency.as_millis().to_string(),
                reason: "only scripted mode takes a latency: a byok run has its provider's own"
                    .into(),
            });
        }
        if let Some(url) = cfg.scripted_upstream.as_ref() {
            let why = if cfg.mode == Mode::Byok {
                Some("only scripted mode serves its answers through a provider: byok forwards every call to GAUNTLET_UPSTREAM_URL")
            } else if !cfg.scripted_latency.is_zero() {
                Some("a scripted run served through a provider takes that provider's latency: leave GAUNTLET_SCRIPTED_LATENCY_MS unset")
            } else {
                None
            };
            if let Some(reason) = why {
                return Err(ConfigError::Invalid {
                    source_name: "GAUNTLET_SCRIPTED_UPSTREAM".into(),
                    value: url.clone(),
                    reason: reason.into(),
                });
            }
        }
        if cfg.agent.kind == AgentKind::Command && cfg.agent.argv.is_empty() {
            return Err(ConfigError::Invalid {
                source_name: "GAUNTLET_AGENT_CMD".into(),
                value: String::new(),
                reason: "the command agent needs a command line".into(),
            });
        }
        Ok(cfg)
    }

    fn set(&mut self, key: &str, value: &str, source_name: &str) -> Result<(), ConfigError> {
        let bad = |reason: &str| ConfigError::Invalid {
            source_name: source_name.to_string(),
            value: value.to_string(),
            reason: reason.to_string(),
        };
        match key {
            "agent" => {
                let kind = AgentKind::from_name(value)
                    .ok_or_else(|| bad(&format!("expected one of {}", AgentKind::names())))?;
                // A command line given first is kept for a `command` agent.
                self.agent.kind = kind;
            }
            "agent_stream" => {
                self.agent.stream = match value.trim() {
                    "1" | "true" | "yes" => true,
                    "0" | "false" | "no" | "" => false,
                    _ => return Err(bad("expected `1` or `0`")),
                }
            }
            "agent_cmd" => {
                let argv = shell_words::split(value).map_err(|e| bad(&e.to_string()))?;
                if argv.is_empty() {
                    return Err(bad("is empty"));
                }
                self.agent = AgentChoice::command(argv);
            }
            "agent_daemon_cmd" => {
                let argv = shell_words::split(value).map_err(|e| bad(&e.to_string()))?;
                if argv.is_empty() {
                    return Err(bad("is empty"));
                }
                self.agent.daemon_argv = argv;
            }
            "mode" => {
                self.mode = match value {
                    "scripted" => Mode::Scripted,
                    "byok" => Mode::Byok,
                    _ => return Err(bad("expected `scripted` or `byok`")),
                }
            }
            "model" => {
                if value.trim().is_empty() {
                    return Err(bad("is empty"));
                }
                self.model = value.to_string();
            }
            "n" | "repeats" => {
                let n: u32 = value.parse().map_err(|_| bad("expected a whole number"))?;
                if !(1..=100).contains(&n) {
                    return Err(bad("expected 1 to 100"));
                }
                if key == "n" {
                    self.n = n;
                } else {
                    self.repeats = n;
                }
            }
            "independent_mutants" => {
                let m: u32 = value.parse().map_err(|_| bad("expected a whole number"))?;
                if !(1..=100).contains(&m) {
                    return Err(bad("expected 1 to 100"));
                }
                self.independent_mutants = m;
            }
            "cache_dir" => {
                if value.is_empty() {
                    return Err(bad("is empty"));
                }
                self.cache_dir = setting_path(value);
            }
            "timeout_secs" | "gate_timeout_secs" => {
                let secs: f64 = value.parse().map_err(|_| bad("expected seconds"))?;
                if !(secs > 0.0 && secs <= 7.0 * 86400.0) {
                    return Err(bad("expected more than 0 and at most a week"));
                }
                let d = Duration::from_secs_f64(secs);
                if key == "timeout_secs" {
                    self.timeout = d;
                } else {
                    self.gate_timeout = d;
                }
            }
            "out" => {
                if value.is_empty() {
                    return Err(bad("is empty"));
                }
                self.out_dir = setting_path(value);
            }
            "resume" => {
                if value.is_empty() {
                    return Err(bad("is empty"));
                }
                self.resume = Some(setting_path(value));
            }
            "retry_infra" => {
                self.retry_infra = match value.trim() {
                    "1" | "true" | "yes" => true,
                    "0" | "false" | "no" | "" => false,
                    _ => return Err(bad("expected `1` or `0`")),
                }
            }
            "apps_dir" | "challenges_dir" | "scorecard_dir" | "redteam_dir" => {
                if value.is_empty() {
                    return Err(bad("is empty"));
                }
                let dir = setting_path(value);
                match key {
                    "apps_dir" => self.apps_dir = dir,
                    "challenges_dir" => self.challenges_dir = dir,
                    "scorecard_dir" => self.scorecard_dir = dir,
                    _ => self.redteam_dir = dir,
                }
            }
            "challenge_timeout_secs" => {
                self.challenge_timeout =
                    Some(positive_secs(value).map_err(|e| bad(&e.to_string()))?);
            }
            "sandbox" => {
                self.sandbox = match value {
                    "sealed" | "on" => Sandbox::Sealed,
                    "off" => Sandbox::Off,
                    _ => return Err(bad("expected `sealed` or `off`")),
                }
            }
            "upstream_url" => {
                if !(value.starts_with("http://") || value.starts_with("https://")) {
                    return Err(bad("expected an http:// or https:// URL"));
                }
                self.upstream_url = value.trim_end_matches('/').to_string();
            }
            "api_key_env" => {
                if value.is_empty() {
                    return Err(bad("is empty"));
                }
                self.api_key_env = value.to_string();
            }
            "output_cap_bytes" => {
                let n: u64 = value.parse().map_err(|_| bad("expected a byte count"))?;
                if n < 1024 {
                    return Err(bad("expected at least 1024"));
                }
                self.output_cap_bytes = n;
            }
            "max_tokens_per_trial" => {
                self.max_tokens_per_trial = match value.trim() {
                    "" | "0" | "none" => None,
                    n => Some(
                        n.parse()
                            .map_err(|_| bad("expected a token count, or `none`"))?,
                    ),
                };
            }
            "scripted_latency_ms" => {
                let ms = whole(
                    value,
                    MAX_SCRIPTED_LATENCY_MS,
                    "milliseconds",
                    "ten minutes",
                )
                .map_err(|why| bad(&why))?;
                self.scripted_latency = Duration::from_millis(ms);
            }
            "scripted_upstream" => {
                let url = reqwest::Url::parse(value.trim())
                    .map_err(|e| bad(&format!("not a URL: {e}")))?;
                let loopback = matches!(url.host_str(), Some("127.0.0.1" | "localhost" | "[::1]"));
                if url.scheme() != "http" || !loopback {
                    return Err(bad(
                        "expected an http:// URL on loopback (127.0.0.1, localhost, [::1]): scripted answers are served only by a provider on this machine",
                    ));
                }
                self.scripted_upstream = Some(value.trim().trim_end_matches('/').to_owned());
            }
            "provider_retries" => {
                let n = whole(value, MAX_PROVIDER_RETRIES.into(), "retries", "ten")
                    .map_err(|why| bad(&why))?;
                self.provider_retries = u32::try_from(n).unwrap_or(MAX_PROVIDER_RETRIES);
            }
            "provider_retry_wait_secs" => {
                self.provider_retry_wait_secs = whole(
                    value,
                    MAX_PROVIDER_RETRY_WAIT_SECS,
                    "seconds",
                    "ten minutes",
                )
                .map_err(|why| bad(&why))?;
            }
            "scorecard_idle_secs" => {
                let secs: f64 = value.parse().map_err(|_| bad("expected seconds"))?;
                if !(secs > 0.0 && secs <= NOMINAL_DAY.as_secs_f64()) {
                    return Err(bad(
                        "expected more than 0 and at most 86400 (the nominal day)",
                    ));
                }
                self.scorecard_idle_day = Some(Duration::from_secs_f64(secs));
            }
            "scorecard_seed" => {
                if value.trim().is_empty() {
                    return Err(bad("is empty"));
                }
                self.scorecard_seed = value.to_string();
            }
            "scorecard_profile" => {
                if !crate::spec::check_id_str(value) {
                    return Err(bad(
                        "expected a profile name (lowercase letters, digits, `-`)",
                    ));
                }
                self.scorecard_profile = value.to_string();
            }
            _ => return Err(bad("unknown key")),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn defaults_then_env() {
        let c =
            Config::from_sources(&env(&[("GAUNTLET_N", "5"), ("GAUNTLET_MODE", "byok")])).unwrap();
        assert_eq!(c.n, 5);
        assert_eq!(c.mode, Mode::Byok);
        assert_eq!(c.timeout, Duration::from_secs(600));
    }

    /// Every process of a run has a working directory of its own: a relative
    /// `GAUNTLET_OUT` made every trial fail (apps and sealed agents found no directory).
    #[test]
    fn a_relative_directory_setting_is_taken_against_the_working_directory() {
        let c = Config::from_sources(&env(&[
            ("GAUNTLET_OUT", "parts/p1"),
            ("GAUNTLET_RESUME", "runs/r"),
            ("GAUNTLET_CACHE_DIR", "cache"),
            ("GAUNTLET_APPS_DIR", "apps"),
            ("GAUNTLET_CHALLENGES_DIR", "/abs/challenges"),
            ("GAUNTLET_SCORECARD_DIR", "card"),
        ]))
        .expect("config");
        let cwd = std::env::current_dir().expect("cwd");
        assert_eq!(c.out_dir, cwd.join("parts/p1"));
        assert_eq!(c.resume, Some(cwd.join("runs/r")));
        assert_eq!(c.cache_dir, cwd.join("cache"));
        assert_eq!(c.apps_dir, cwd.join("apps"));
        assert_eq!(c.challenges_dir, PathBuf::from("/abs/challenges"));
        assert_eq!(c.scorecard_dir, cwd.join("card"));
    }

    #[test]
    fn bad_values_name_the_variable() {
        for (var, value) in [
            ("GAUNTLET_N", "three"),
            ("GAUNTLET_N", "0"),
            ("GAUNTLET_REPEATS", "0"),
            ("GAUNTLET_MODE", "live"),
            ("GAUNTLET_AGENT", "gpt"),
            ("GAUNTLET_TIMEOUT_SECS", "-1"),
            ("GAUNTLET_UPSTREAM_URL", "ftp://x"),
            ("GAUNTLET_MAX_TOKENS_PER_TRIAL", "lots"),
        ] {
            let err = Config::from_sources(&env(&[(var, value)]))
                .unwrap_err()
                .to_string();
            assert!(err.starts_with(var), "{err}");
            assert!(err.contains(value), "{err}");
        }
    }

    #[test]
    fn scorecard_keys_take_their_defaults_and_env() {
        let c = Config::default();
        assert_eq!(c.idle_day(), SCRIPTED_DAY);
        let byok = Config::from_sources(&env(&[("GAUNTLET_MODE", "byok")])).unwrap();
        assert_eq!(byok.idle_day(), Duration::from_secs(86_400));
        assert_eq!(c.scorecard_profile, "autonomous");
        let c = Config::from_sources(&env(&[
            ("GAUNTLET_SCORECARD_IDLE_SECS", "2.5"),
            ("GAUNTLET_SCORECARD_SEED", "abc"),
            ("GAUNTLET_SCORECARD_PROFILE", "stub"),
        ]))
        .unwrap();
        assert_eq!(c.idle_day(), Duration::from_millis(2500));
        assert_eq!(
            (c.scorecard_seed.as_str(), c.scorecard_profile.as_str()),
            ("abc", "stub")
        );
        for (var, value) in [
            ("GAUNTLET_SCORECARD_IDLE_SECS", "0"),
            ("GAUNTLET_SCORECARD_IDLE_SECS", "100000"),
            ("GAUNTLET_SCORECARD_PROFILE", "../x"),
        ] {
            let err = Config::from_sources(&env(&[(var, value)]))
                .unwrap_err()
                .to_string();
            assert!(err.starts_with(var), "{err}");
        }
    }

    #[test]
    fn the_providers_retry_policy_is_bounded_and_absent_from_the_identity_at_its_default() {
        let c = Config::from_sources(&env(&[
            ("GAUNTLET_PROVIDER_RETRIES", "0"),
            ("GAUNTLET_PROVIDER_RETRY_WAIT_SECS", "5"),
            ("GAUNTLET_RETRY_INFRA", "1"),
        ]))
        .unwrap();
        assert_eq!((c.provider_retries, c.provider_retry_wait_secs), (0, 5));
        assert!(c.retry_infra);
        let json = serde_json::to_value(&c).unwrap();
        assert_eq!(json["provider_retries"], 0);
        assert_eq!(json["provider_retry_wait_secs"], 5);
        assert!(
            json.get("retry_infra").is_none(),
            "never part of a run's identity"
        );
        let default = serde_json::to_value(Config::default()).unwrap();
        assert!(default.get("provider_retries").is_none(), "{default}");
        assert!(default.get("provider_retry_wait_secs").is_none());
        for (var, value) in [
            ("GAUNTLET_PROVIDER_RETRIES", "11"),
            ("GAUNTLET_PROVIDER_RETRIES", "-1"),
            ("GAUNTLET_PROVIDER_RETRY_WAIT_SECS", "601"),
            ("GAUNTLET_RETRY_INFRA", "maybe"),
        ] {
            let err = Config::from_sources(&env(&[(var, value)]))
                .unwrap_err()
                .to_string();
            assert!(err.starts_with(var), "{err}");
        }
    }

    #[test]
    fn a_scripted_upstream_is_a_loopback_provider_in_scripted_mode_only() {
        let c = Config::from_sources(&env(&[(
            "GAUNTLET_SCRIPTED_UPSTREAM",
            "http://127.0.0.1:8080/v1/",
        )]))
        .unwrap();
        assert_eq!(
            c.scripted_upstream.as_deref(),
            Some("http://127.0.0.1:8080/v1")
        );
        assert_eq!(
            serde_json::to_value(&c).unwrap()["scripted_upstream"],
            "http://127.0.0.1:8080/v1",
            "part of the run's identity"
        );
        for bad in [
            vec![("GAUNTLET_SCRIPTED_UPSTREAM", "https://api.openai.com/v1")],
            vec![("GAUNTLET_SCRIPTED_UPSTREAM", "http://10.0.0.1:80/v1")],
            vec![("GAUNTLET_SCRIPTED_UPSTREAM", "not a url")],
            vec![
                ("GAUNTLET_SCRIPTED_UPSTREAM", "http://127.0.0.1:1/v1"),
                ("GAUNTLET_MODE", "byok"),
            ],
            vec![
                ("GAUNTLET_SCRIPTED_UPSTREAM", "http://127.0.0.1:1/v1"),
                ("GAUNTLET_SCRIPTED_LATENCY_MS", "100"),
            ],
        ] {
            let err = Config::from_sources(&env(&bad)).unwrap_err().to_string();
            assert!(err.starts_with("GAUNTLET_SCRIPTED_UPSTREAM"), "{err}");
        }
    }

    #[test]
    fn a_scripted_latency_is_milliseconds_in_scripted_mode_only() {
        assert_eq!(Config::default().scripted_latency, Duration::ZERO);
        let c = Config::from_sources(&env(&[("GAUNTLET_SCRIPTED_LATENCY_MS", "250")])).unwrap();
        assert_eq!(c.scripted_latency, Duration::from_millis(250));
        for value in ["fast", "-5", "1.5", "600001"] {
            let err = Config::from_sources(&env(&[("GAUNTLET_SCRIPTED_LATENCY_MS", value)]))
                .unwrap_err()
                .to_string();
            assert!(err.starts_with("GAUNTLET_SCRIPTED_LATENCY_MS"), "{err}");
            assert!(err.contains(value), "{err}");
        }
        let err = Config::from_sources(&env(&[
            ("GAUNTLET_SCRIPTED_LATENCY_MS", "250"),
            ("GAUNTLET_MODE", "byok"),
        ]))
        .unwrap_err()
        .to_string();
        assert!(
            err.starts_with("GAUNTLET_SCRIPTED_LATENCY_MS") && err.contains("byok"),
            "{err}"
        );
        // Zero is no latency, in either mode, and leaves a run's identity as it was.
        let c = Config::from_sources(&env(&[
            ("GAUNTLET_SCRIPTED_LATENCY_MS", "0"),
            ("GAUNTLET_MODE", "byok"),
        ]))
        .unwrap();
        let json = serde_json::to_value(&c).unwrap();
        assert!(json.get("scripted_latency_ms").is_none(), "{json}");
        let slow = serde_json::to_value(Config {
            scripted_latency: Duration::from_millis(250),
            ..Config::default()
        })
        .unwrap();
        assert_eq!(slow["scripted_latency_ms"], 250);
        let back: Config = serde_json::from_value(slow).unwrap();
        assert_eq!(back.scripted_latency, Duration::from_millis(250));
    }

    #[test]
    fn cli_agents_by_name() {
        for (value, choice) in [
            ("opencode", AgentChoice::of(AgentKind::OpenCode)),
            ("claude-code", AgentChoice::of(AgentKind::ClaudeCode)),
            ("codex", AgentChoice::of(AgentKind::Codex)),
        ] {
            let c = Config::from_sources(&env(&[("GAUNTLET_AGENT", value)])).unwrap();
            assert_eq!(c.agent, choice);
            assert_eq!(c.agent.name(), value);
        }
    }

    #[test]
    fn token_budgets_are_counts_or_none() {
        let c = Config::from_sources(&env(&[("GAUNTLET_MAX_TOKENS_PER_TRIAL", "5000")])).unwrap();
        assert_eq!(c.max_tokens_per_trial, Some(5000));
        for off in ["0", "none", ""] {
            let c = Config::from_sources(&env(&[("GAUNTLET_MAX_TOKENS_PER_TRIAL", off)])).unwrap();
            assert_eq!(c.max_tokens_per_trial, None);
        }
        assert_eq!(Config::default().max_tokens_per_trial, None);
    }

    #[test]
    fn command_agent_needs_a_command() {
        let err = Config::from_sources(&env(&[("GAUNTLET_AGENT", "command")])).unwrap_err();
        assert!(err.to_string().contains("GAUNTLET_AGENT_CMD"));
        let c = Config::from_sources(&env(&[("GAUNTLET_AGENT_CMD", "sh -c 'echo hi'")])).unwrap();
        assert_eq!(
            c.agent,
            AgentChoice::command(vec!["sh".into(), "-c".into(), "echo hi".into()])
        );
    }

    #[test]
    fn a_command_agent_may_have_a_background_command_and_no_other_agent_may() {
        let c = Config::from_sources(&env(&[
            ("GAUNTLET_AGENT_DAEMON_CMD", "sh bg.sh {state_dir}"),
            ("GAUNTLET_AGENT_CMD", "sh turn.sh"),
        ]))
        .unwrap();
        assert_eq!(
            c.agent,
            AgentChoice::command(vec!["sh".into(), "turn.sh".into()]).with_daemon(vec![
                "sh".into(),
                "bg.sh".into(),
                "{state_dir}".into()
            ])
        );
        let err = Config::from_sources(&env(&[("GAUNTLET_AGENT_DAEMON_CMD", "sh bg.sh")]))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("GAUNTLET_AGENT_DAEMON_CMD") && err.contains("reference"),
            "{err}"
        );
    }

    #[test]
    fn file_then_env_and_unknown_keys_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("gauntlet.toml");
        std::fs::write(&file, "n = 2\nmodel = \"gpt-4o\"\n").unwrap();
        let f = file.to_string_lossy().to_string();
        let c =
            Config::from_sources(&env(&[("GAUNTLET_CONFIG", &f), ("GAUNTLET_N", "4")])).unwrap();
        assert_eq!((c.n, c.model.as_str()), (4, "gpt-4o"));
        std::fs::write(&file, "nn = 2\n").unwrap();
        let err = Config::from_sources(&env(&[("GAUNTLET_CONFIG", &f)]))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("gauntlet.toml") && err.contains("`nn`"),
            "{err}"
        );
        std::fs::write(&file, "n = \"x\"\n").unwrap();
        let err = Config::from_sources(&env(&[("GAUNTLET_CONFIG", &f)]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("gauntlet.toml: n"), "{err}");
    }
}
