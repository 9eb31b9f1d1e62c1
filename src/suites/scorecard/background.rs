//! The agent's background mode during idle windows: started by its adapter (when it
//! has one), run as a bounded process in its own group with the harness's deadline at
//! the end of the idle block, and recorded like any turn. What it does counts only
//! through the sinks; its own output is kept for audit, never scored.

use std::time::Duration;

use crate::agent::{DaemonRun, Launch};
use crate::evidence::usage::UsageEntry;
use crate::proxy::Proxy;
use crate::sys::process::{self, ProcessOutcome};
use crate::trial::{SetupError, Streams};

use super::processes::Driver;
use super::scratch::Scratch;
use crate::record::scorecard::ProcessRaw;

/// What starting the background mode needs.
pub struct BackgroundRun<'a, 'b> {
    pub driver: &'a Driver<'b>,
    /// The whole idle block: the process is stopped at its end.
    pub duration: Duration,
    /// The block's length in nominal hours (a profile's tick rate is per nominal hour).
    pub nominal_hours: f64,
}

/// A running background mode.
pub struct Running {
    label: String,
    command: Vec<String>,
    task: tokio::task::JoinHandle<Result<ProcessOutcome, process::ProcessError>>,
    proxy: Option<Proxy>,
    trial_dir: std::path::PathBuf,
    /// Where its sandbox's opens and execs are observed.
    observation: std::path::PathBuf,
    /// Its own HOME and TMPDIR, removed once it is stopped (nothing of it reaches the
    /// turns after the block).
    scratch: Scratch,
}

impl Running {
    pub fn describe(&self) -> String {
        format!("background mode ran: {}", self.command.join(" "))
    }

    /// Wait for the process to reach its deadline (the end of the idle block) and
    /// return its raw evidence and the proxy's metering.
    pub async fn stop(self) -> (Option<ProcessRaw>, Vec<UsageEntry>) {
        let outcome = self.task.await;
        // Dropped, it is removed as well; an error here leaves the next turn's scratch
        // fresh all the same (each process has its own).
        let _ = self.scratch.remove();
        let (usage, calls) = match self.proxy {
            Some(p) => crate::trial::finish_proxy(&self.trial_dir, p, &self.label).await,
            None => (vec![], None),
        };
        let raw = match outcome {
            Ok(Ok(o)) => Some(ProcessRaw {
                label: self.label,
                session: None,
                command: self.command,
                end: o.end,
                stdout: o.stdout,
                stderr: o.stderr,
                calls,
                // Set by the driver, which knows where these entries land.
                usage_range: None,
                observation: crate::record::raw::harness_file(&self.observation, &self.trial_dir),
            }),
            _ => None,
        };
        (raw, usage)
    }
}

/// Start the agent's background mode for the block, or `Ok(None)` when the agent has
/// none (it is then simply left idle).
pub async fn start(run: &BackgroundRun<'_, '_>) -> Result<Option<Running>, SetupError> {
    let d = run.driver;
    let scratch = d.scratch("background")?;
    let Some((launch, proxy)) = launch_for(run, &scratch).await? else {
        return Ok(None);
    };
    let proxy_url = proxy.as_ref().map(|p| p.base_url());
    let command = launch.invocation.command_line();
    let kernel = d.kernel(&scratch);
    let env = kernel.env(launch.env, d.agent_env(), proxy_url.as_deref());
    let streams = Streams {
        stem: "background",
        tag: Some("background"),
    };
    let observation = d.observation_file("background");
    let spec = kernel.spec(
        launch.invocation,
        env,
        &streams,
        run.duration,
        d.cfg.output_cap_bytes,
        d.view(&scratch, &observation),
    );
    Ok(Some(Running {
        label: "background".into(),
        command,
        task: tokio::spawn(process::run(spec)),
        proxy,
        trial_dir: d.trial_dir.to_path_buf(),
        observation,
        scratch,
    }))
}

/// The adapter's background launch (`Adapter::daemon_launch`) with a metering proxy of
/// its own: a background mode that calls the model is metered like a turn (scripted
/// mode answers it with a bare acknowledgement; the reference agent's rule-driven
/// daemon calls none).
async fn launch_for(
    run: &BackgroundRun<'_, '_>,
    scratch: &Scratch,
) -> Result<Option<(Launch, Option<Proxy>)>, SetupError> {
    let d = run.driver;
    let config = d.profile.and_then(|p| p.daemon_config());
    let ack = crate::spec::Script {
        capability: d.probe.probe.id.clone(),
        steps: vec![crate::spec::ScriptStep::Final { text: "ok".into() }],
    };
    let proxy = d.proxy(Some(ack), "the background mode").await?;
    let proxy_url = proxy.base_url();
    let run = DaemonRun {
        title: format!("{} background", d.trial),
        workspace: d.workspace.to_path_buf(),
        state_dir: d.state_dir.to_path_buf(),
        config,
    };
    let launch = d
        .kernel(scratch)
        .prepare_daemon(d.adapter, &run, &proxy_url);
    match launch {
        Ok(Some(l)) => Ok(Some((l, Some(proxy)))),
        Ok(None) => {
            let _ = proxy.shutdown().await;
            Ok(None)
        }
        Err(e) => {
            let _ = proxy.shutdown().await;
            Err(e.into())
        }
    }
}
