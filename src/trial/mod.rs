//! The trial kernel: the one way a trial runs a process on an agent's behalf.
//!
//! Every suite starts its agent the same way, and so does the gate re-running a
//! claimed test: a metering proxy of the trial's own ([`Context::proxy`]), the
//! adapter's launch prepared against it ([`Context::prepare`]), one layering of the
//! environment ([`Context::env`]: the adapter's variables, then the scrubbed base,
//! then the trial's, then the proxy's; later layers win), and one process
//! specification ([`Context::spec`]: streams kept beside the record under one stem,
//! the deadline, the output cap, the marker, the sandbox). What differs between the
//! qa agent, a challenge agent, a scorecard turn, the background mode and a gate run
//! is only what they hand in.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use crate::agent::{Adapter, DaemonRun, Invocation, Launch, LaunchContext, PromptRun, RunSpec};
use crate::config::{Config, Mode};
use crate::evidence::RawFile;
use crate::proxy::{Budget, Proxy, ProxyMode};
use crate::spec::Script;
use crate::sys::process::ProcessSpec;
use crate::sys::sandbox::View;

mod setup;
pub use setup::{mkdir, stopped_while_set_up, KernelError, SetupError};

/// [`Context::finish_proxy`] for a process that outlives its context (the background
/// mode).
pub async fn finish_proxy(
    trial_dir: &Path,
    proxy: Proxy,
    stem: &str,
) -> (Vec<crate::evidence::usage::UsageEntry>, Option<RawFile>) {
    let finished = async {
        let (usage, calls) = proxy.shutdown_with_calls().await;
        if calls.is_empty() {
            return (usage, None);
        }
        let name = format!("{stem}{CALLS_SUFFIX}");
        let kept = std::fs::write(trial_dir.join(&name), &calls)
            .ok()
            .map(|()| RawFile {
                path: name,
                bytes: calls.len() as u64,
                bytes_seen: calls.len() as u64,
                sha256: crate::hash::sha256(&calls),
            });
        (usage, kept)
    };
    crate::phases::timed(crate::phases::Phase::Proxy, finished).await
}

/// What a trial's proxy relayed is kept as `<stem>` plus this, beside the streams of the
/// process it served (`agent.calls.jsonl`, `turn-01-remember.calls.jsonl`).
pub const CALLS_SUFFIX: &str = ".calls.jsonl";

/// What the agent is asked to do, in the adapter's terms.
pub enum Job<'a> {
    /// A qa trial: the app, its corpus graph and one capability.
    Qa(&'a RunSpec),
    /// A free-form prompt: a challenge, a scorecard turn.
    Prompt(&'a PromptRun),
}

/// One trial's place on disk and its settings: where its streams go, the scratch HOME
/// and TMPDIR its processes get, and the directory they start in.
pub struct Context<'a> {
    pub cfg: &'a Config,
    pub trial_dir: &'a Path,
    pub home: &'a Path,
    pub tmp: &'a Path,
    pub cwd: &'a Path,
}

/// Where a process's streams are kept: `<trial dir>/<stem>.stdout` and `.stderr`;
/// `tag` tells its marker apart from the trial's other processes.
pub struct Streams<'a> {
    pub stem: &'a str,
    pub tag: Option<&'a str>,
}

impl Streams<'static> {
    /// The trial's agent: `agent.stdout`, `agent.stderr`.
    pub const AGENT: Streams<'static> = Streams {
        stem: "agent",
        tag: None,
    };
}

impl Context<'_> {
    /// The trial's own metering proxy: scripted from `script`, or forwarding to the
    /// provider with the configured key. `what` says what the script was for when it is
    /// missing (`no script for capability `x``).
    pub async fn proxy(&self, script: Option<Script>, what: &str) -> Result<Proxy, KernelError> {
        let mode = match self.cfg.mode {
            Mode::Scripted => {
                let script = script.ok_or_else(|| KernelError::NoScript { what: what.into() })?;
                match &self.cfg.scripted_upstream {
                    Some(upstream) => ProxyMode::ScriptedVia {
                        script,
                        model: self.cfg.model.clone(),
                        upstream: upstream.clone(),
                        retry: retry_policy(self.cfg),
                    },
                    None => ProxyMode::Scripted {
                        script,
                        model: self.cfg.model.clone(),
                        latency: self.cfg.scripted_latency,
                    },
                }
            }
            Mode::Byok => ProxyMode::Byok {
                upstream: self.cfg.upstream_url.clone(),
                api_key: self.cfg.provider_key()?,
                retry: retry_policy(self.cfg),
            },
        };
        let budget = Budget {
            max_tokens: self.cfg.max_tokens_per_trial,
        };
        crate::phases::timed(
            crate::phases::Phase::Proxy,
            Proxy::start_with_budget(mode, budget),
        )
        .await
        .map_err(KernelError::Proxy)
    }

    /// Stop `proxy` and keep what it relayed as `<stem>.calls.jsonl` in the trial
    /// directory, hashed: the usage log, and the calls file's raw-file entry (`None` when
    /// no call was made, or the file could not be written: the usage log is still the
    /// metering evidence, the bodies only what a person reads).
    pub async fn finish_proxy(
        &self,
        proxy: Proxy,
        stem: &str,
    ) -> (Vec<crate::evidence::usage::UsageEntry>, Option<RawFile>) {
        finish_proxy(self.trial_dir, proxy, stem).await
    }

    /// The adapter's launch for `job`, pointed at the proxy at `proxy_url`: config
    /// written into the scratch HOME, its own variables.
    pub fn prepare(
        &self,
        adapter: &dyn Adapter,
        job: Job<'_>,
        proxy_url: &str,
    ) -> Result<Launch, KernelError> {
        let ctx = self.launch_context(proxy_url);
        match job {
            Job::Qa(run) => adapter.launch(run, &ctx),
            Job::Prompt(run) => adapter.prompt_launch(run, &ctx),
        }
        .map_err(|source| KernelError::Prepare {
            agent: adapter.name().into(),
            source,
        })
    }

    /// The adapter's background mode for an idle window, or `None` when it has none.
    pub fn prepare_daemon(
        &self,
        adapter: &dyn Adapter,
        run: &DaemonRun,
        proxy_url: &str,
    ) -> Result<Option<Launch>, KernelError> {
        adapter
            .daemon_launch(run, &self.launch_context(proxy_url))
            .map_err(|source| KernelError::Prepare {
                agent: adapter.name().into(),
                source,
            })
    }

    fn launch_context<'b>(&'b self, proxy_url: &'b str) -> LaunchContext<'b> {
        LaunchContext {
            home: self.home,
            workspace: self.cwd,
            proxy_url,
            model: &self.cfg.model,
        }
    }

    /// The one layering of a process's environment: the adapter's variables first,
    /// then the scrubbed base ([`base_env`]), then the trial's own (locators, sinks,
    /// `GAUNTLET_*`), then the proxy as the model provider: the harness's always win
    /// over the adapter's.
    pub fn env(
        &self,
        adapter: BTreeMap<String, String>,
        trial: BTreeMap<String, String>,
        proxy_url: Option<&str>,
    ) -> BTreeMap<String, String> {
        let mut env = adapter;
        env.extend(base_env(self.home, self.tmp));
        env.extend(trial);
        if let Some(url) = proxy_url {
            env.extend(model_env(url, &self.cfg.model));
        }
        env
    }

    /// The process, as `sys::process` runs it.
    pub fn spec(
        &self,
        inv: Invocation,
        env: BTreeMap<String, String>,
        streams: &Streams<'_>,
        deadline: Duration,
        output_cap: u64,
        seal: Option<View>,
    ) -> ProcessSpec {
        let base = format!("{}:{}", std::process::id(), self.trial_dir.display());
        ProcessSpec {
            program: inv.program,
            args: inv.args,
            cwd: self.cwd.to_path_buf(),
            env,
            deadline,
            stdout_path: self.trial_dir.join(format!("{}.stdout", streams.stem)),
            stderr_path: self.trial_dir.join(format!("{}.stderr", streams.stem)),
            rel_base: self.trial_dir.to_path_buf(),
            output_cap,
            marker: match streams.tag {
                None => base,
                Some(tag) => format!("{base}:{tag}"),
            },
            seal,
        }
    }

    /// [`Context::spec`] of the agent's own launch, with the layered environment, the
    /// config's deadline and output cap: what a qa agent, a challenge agent and a
    /// scorecard turn run.
    pub fn agent_spec(
        &self,
        launch: Launch,
        trial_env: BTreeMap<String, String>,
        proxy_url: &str,
        streams: &Streams<'_>,
        seal: Option<View>,
    ) -> ProcessSpec {
        let env = self.env(launch.env, trial_env, Some(proxy_url));
        self.spec(
            launch.invocation,
            env,
            streams,
            self.cfg.timeout,
            self.cfg.output_cap_bytes,
            seal,
        )
    }
}

/// The scrubbed environment every process the harness runs for an agent starts from:
/// nothing of the caller's leaks in but a sane PATH (gauntlet's binaries first) and
/// locale; the trial adds what the process needs.
pub fn base_env(home: &Path, tmp: &Path) -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    // gauntlet's own binaries come first, so that a claimed test can be
    // `gauntlet flow run check.json` (docs/test-flows.md).
    let path = std::env::var("PATH").unwrap_or_else(|_| "/usr/local/bin:/usr/bin:/bin".into());
    env.insert(
        "PATH".into(),
        format!("{}:{path}", crate::binaries::helper_dir().display()),
    );
    // The browser the harness was told to use is the one its test flow runs use too.
    if let Some(chromium) = crate::binaries::chromium_override() {
        env.insert(
            "GAUNTLET_CHROMIUM".into(),
            chromium.to_string_lossy().into_owned(),
        );
    }
    env.insert("HOME".into(), home.to_string_lossy().into_owned());
    env.insert("TMPDIR".into(), tmp.to_string_lossy().into_owned());
    env.insert("LANG".into(), "C.UTF-8".into());
    env
}

/// The model variables every agent process gets: the metering proxy as its provider, a
/// placeholder key (the agent never holds the provider's key: the proxy adds it
/// upstream), and the configured model.
pub fn model_env(proxy_url: &str, model: &str) -> [(String, String); 3] {
    [
        ("OPENAI_BASE_URL".into(), proxy_url.to_owned()),
        ("OPENAI_API_KEY".into(), "gauntlet-proxy".into()),
        ("OPENAI_MODEL".into(), model.to_owned()),
    ]
}

/// How the trial's proxy meets a provider's fault, as configured.
pub fn retry_policy(cfg: &crate::config::Config) -> crate::proxy::RetryPolicy {
    crate::proxy::RetryPolicy {
        retries: cfg.provider_retries,
        max_wait: std::time::Duration::from_secs(cfg.provider_retry_wait_secs),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_harness_layers_win_over_the_adapter_and_the_proxy_over_all() {
        let cfg = Config {
            model: "m1".into(),
            ..Config::default()
        };
        let (home, tmp) = (Path::new("/h"), Path::new("/t"));
        let ctx = Context {
            cfg: &cfg,
            trial_dir: Path::new("/trial"),
            home,
            tmp,
            cwd: Path::new("/trial/workspace"),
        };
        let adapter: BTreeMap<String, String> = [
            ("HOME", "/adapter-home"),
            ("OPENAI_BASE_URL", "http://elsewhere"),
            ("ADAPTER_ONLY", "1"),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .into();
        let trial: BTreeMap<String, String> =
            [("APP_URL".to_string(), "http://127.0.0.1:1".to_string())].into();
        let env = ctx.env(adapter, trial, Some("http://127.0.0.1:9/v1"));
        assert_eq!(env["HOME"], "/h");
        assert_eq!(env["TMPDIR"], "/t");
        assert_eq!(env["ADAPTER_ONLY"], "1");
        assert_eq!(env["APP_URL"], "http://127.0.0.1:1");
        assert_eq!(env["OPENAI_BASE_URL"], "http://127.0.0.1:9/v1");
        assert_eq!(env["OPENAI_API_KEY"], "gauntlet-proxy");
        assert_eq!(env["OPENAI_MODEL"], "m1");

        let inv = Invocation {
            program: "sh".into(),
            args: vec![],
        };
        let tagged = Streams {
            stem: "gate/app-1",
            tag: Some("gate-1"),
        };
        let s = ctx.spec(inv, env, &tagged, Duration::from_secs(1), 7, None);
        assert_eq!(s.stdout_path, Path::new("/trial/gate/app-1.stdout"));
        assert!(s.marker.ends_with(":/trial:gate-1"), "{}", s.marker);
        assert_eq!(s.cwd, Path::new("/trial/workspace"));
        assert_eq!(s.output_cap, 7);
    }
}
