//! The adapter seam: how gauntlet starts an agent and reads what it did.
//!
//! An adapter builds a command line from a [`RunSpec`], prepares what its agent needs
//! in the trial's scratch HOME ([`Adapter::launch`]: config files, variables pointing it
//! at the metering proxy), and parses the agent's own raw output into a [`Transcript`]
//! and normalized evidence (`evidence::streams::parser` of its [`Adapter::kind`]).
//! Everything else — workspaces, the scrubbed environment, the deadline, process
//! groups — is the harness's (the trial kernel and `sys::process`), the same for every
//! agent.
//!
//! Adapters: [`Reference`] (`gauntlet-agent`), [`Command`] (any executable speaking
//! docs/agent-protocol.md), and the real CLIs pinned in `workspace/`:
//! [`opencode::OpenCode`], [`claude_code::ClaudeCode`], [`codex::Codex`].

pub mod claude_code;
pub mod cli;
pub mod codex;
pub mod opencode;
pub mod session;

pub use session::DaemonRun;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::config::AgentChoice;
use crate::evidence::normalize::Parsed;
use crate::evidence::streams::AgentKind;
use crate::evidence::Transcript;
use crate::world::target::Locator;

/// What one qa trial asks of an agent.
#[derive(Debug, Clone)]
pub struct RunSpec {
    /// The qa prompt the harness rendered (`suites::qa::prompt`), saved at
    /// `<workspace>/.agent/prompt.md` before the agent starts: every adapter delivers
    /// exactly this text.
    pub prompt: String,
    pub graph_file: PathBuf,
    /// What the agent is pointed at: the app's URL, or a CLI app's binary.
    pub target: Locator,
    pub capability: String,
    pub n: u32,
    pub workspace: PathBuf,
}

/// What a challenge trial or one turn of a scorecard probe asks of an agent: a
/// free-form prompt, run with `workspace` as the working directory. A qa trial's
/// [`RunSpec`] carries its prompt too, with the app's locators beside it.
#[derive(Debug, Clone)]
pub struct PromptRun {
    /// A stable label (the trial name): session titles, log lines.
    pub title: String,
    /// The whole message the agent is given for this turn.
    pub prompt: String,
    pub workspace: PathBuf,
    /// `None` for a one-shot run; a turn of a multi-turn conversation otherwise.
    pub session: Option<SessionTurn>,
}

/// One turn of a conversation the harness drives (scorecard probes).
#[derive(Debug, Clone)]
pub struct SessionTurn {
    /// The conversation's id, chosen by the harness, the same for every turn of one
    /// session. Agents that assign their own ids map it (see each adapter).
    pub id: String,
    /// False on a session's first turn, true on every later one.
    pub resume: bool,
    /// The agent's persistent state (memory, session store): kept across the sessions
    /// of one agent, empty for a fresh agent. CLIs keep theirs under their HOME, so
    /// their adapters use this as HOME.
    pub state_dir: PathBuf,
}

/// A command line, before the harness adds its environment and bounds.
#[derive(Debug, Clone)]
pub struct Invocation {
    pub program: PathBuf,
    pub args: Vec<String>,
}

impl Invocation {
    /// The command line as recorded in the evidence: program, then arguments.
    pub fn command_line(&self) -> Vec<String> {
        let mut command = vec![self.program.to_string_lossy().into_owned()];
        command.extend(self.args.iter().cloned());
        command
    }
}

/// Why an agent could not be prepared for its trial.
#[derive(Debug, thiserror::Error)]
pub enum AdapterError {
    #[error("{path}: cannot write the agent's config: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A file in a directory the agent controls was refused (a symlink, a FIFO, a hard
    /// link, a path leaving its root): the harness does not write through it.
    #[error("cannot write the agent's file: {0}")]
    Unsafe(#[source] crate::sys::beneath::BeneathError),
    #[error("{agent}: {program} is not installed (run `npm ci` in workspace/)")]
    NotInstalled { agent: String, program: PathBuf },
    #[error("agent `{agent}` cannot {what}")]
    Unsupported { agent: String, what: String },
}

/// Where an agent is about to run, as the harness set it up.
#[derive(Debug, Clone, Copy)]
pub struct LaunchContext<'a> {
    /// The trial's scratch HOME: agent config goes here, never in the caller's HOME.
    pub home: &'a Path,
    pub workspace: &'a Path,
    /// The metering proxy, `http://127.0.0.1:PORT/v1`.
    pub proxy_url: &'a str,
    /// The model name to ask the proxy for.
    pub model: &'a str,
}

#[cfg(test)]
impl<'a> LaunchContext<'a> {
    /// A launch in `dir` (HOME and workspace both) against a proxy nobody listens on:
    /// what the unit tests of a launch need.
    pub(crate) fn scratch(dir: &'a Path) -> LaunchContext<'a> {
        LaunchContext {
            home: dir,
            workspace: dir,
            proxy_url: "http://127.0.0.1:1/v1",
            model: "m",
        }
    }
}

/// A prepared agent: its command line and the variables it needs beyond the
/// harness's own (which it cannot override: see `trial::Context::env`).
#[derive(Debug, Clone)]
pub struct Launch {
    pub invocation: Invocation,
    pub env: BTreeMap<String, String>,
}

impl Launch {
    /// A launch that needs no variables beyond the harness's own.
    pub fn bare(invocation: Invocation) -> Launch {
        Launch {
            invocation,
            env: BTreeMap::new(),
        }
    }
}

pub trait Adapter: Send + Sync {
    /// Which agent this is: its name in records, and the parser of its stdout, which
    /// rescore finds from the name alone.
    fn kind(&self) -> AgentKind;
    /// Stable name written into records (`reference`, `command`, `opencode`, ...).
    fn name(&self) -> &'static str {
        self.kind().name()
    }
    /// The agent's version, recorded per run.
    fn version(&self) -> String;
    /// The command line, from the run spec alone.
    fn invocation(&self, run: &RunSpec) -> Invocation;
    /// Everything the agent needs before it starts: config written into the scratch
    /// HOME, variables pointing it at the proxy. The default needs nothing beyond the
    /// harness's environment.
    fn launch(&self, run: &RunSpec, _ctx: &LaunchContext<'_>) -> Result<Launch, AdapterError> {
        Ok(Launch::bare(self.invocation(run)))
    }
    /// The command line for a free-form prompt (challenges, scorecard turns).
    fn prompt_invocation(&self, _run: &PromptRun) -> Result<Invocation, AdapterError> {
        Err(AdapterError::Unsupported {
            agent: self.name().to_string(),
            what: "run a free-form prompt".into(),
        })
    }
    /// [`Adapter::launch`] for a free-form prompt.
    fn prompt_launch(
        &self,
        run: &PromptRun,
        _ctx: &LaunchContext<'_>,
    ) -> Result<Launch, AdapterError> {
        Ok(Launch::bare(self.prompt_invocation(run)?))
    }
    /// The agent's background mode for an idle window: a long-running process the
    /// harness starts in its own process group and kills at the window's end. `None`
    /// (the default): the agent has none, and scores what it does without one.
    fn daemon_launch(
        &self,
        _run: &DaemonRun,
        _ctx: &LaunchContext<'_>,
    ) -> Result<Option<Launch>, AdapterError> {
        Ok(None)
    }
    /// Parse the agent's raw stdout into the transcript and the normalized report.
    fn read(&self, stdout: &Path) -> std::io::Result<Parsed> {
        let file = std::fs::File::open(stdout)?;
        let mut reader = std::io::BufReader::new(file);
        Ok((crate::evidence::streams::parser(self.kind()))(&mut reader))
    }
    /// Parse the agent's raw stdout.
    fn parse(&self, stdout: &Path) -> std::io::Result<Transcript> {
        Ok(self.read(stdout)?.transcript)
    }
}

/// Where a one-shot prompt run's prompt is kept for agents that read it from a file
/// (`reference`, `command`): inside the workspace, so the agent may read it again.
pub const PROMPT_FILE: &str = ".agent/prompt.md";

/// The prompt file of `run`, written unless it already holds exactly the prompt (the
/// challenge harness saves the rendered prompt there itself).
fn write_prompt_file(run: &PromptRun) -> Result<PathBuf, AdapterError> {
    // The workspace is the agent's: the file may have been replaced by a symlink, a
    // FIFO or a hard link since the last turn. Both the check and the write go through
    // `sys::beneath`, which refuses all three.
    let file = run.workspace.join(PROMPT_FILE);
    let root = crate::sys::beneath::Dir::create(&run.workspace).map_err(AdapterError::Unsafe)?;
    let limit = run.prompt.len() as u64;
    if root
        .read(Path::new(PROMPT_FILE), limit)
        .is_ok_and(|b| b == run.prompt.as_bytes())
    {
        return Ok(file);
    }
    root.write(Path::new(PROMPT_FILE), run.prompt.as_bytes())
        .map_err(AdapterError::Unsafe)?;
    Ok(file)
}

/// [`Adapter::prompt_launch`] of an agent that reads its prompt from a file (the
/// reference agent, a command): a session turn's prompt is written into the scratch
/// HOME, beside a state directory made for it, and `turn_launch` builds the turn's
/// launch from that file; a one-shot run's is the workspace's [`PROMPT_FILE`], and its
/// command line is the adapter's [`Adapter::prompt_invocation`].
fn file_prompt_launch(
    adapter: &dyn Adapter,
    run: &PromptRun,
    ctx: &LaunchContext<'_>,
    turn_launch: impl FnOnce(&SessionTurn, &Path) -> Launch,
) -> Result<Launch, AdapterError> {
    match &run.session {
        Some(turn) => {
            session::ensure_state_dir(turn)?;
            let file = session::write_prompt(run, ctx.home)?;
            Ok(turn_launch(turn, &file))
        }
        None => {
            write_prompt_file(run)?;
            Ok(Launch::bare(adapter.prompt_invocation(run)?))
        }
    }
}

/// `gauntlet-agent`, built by this package.
pub struct Reference {
    pub program: PathBuf,
    /// Ask the provider for server-sent events (`--stream`, [`AgentChoice::stream`]).
    pub stream: bool,
}

impl Adapter for Reference {
    fn kind(&self) -> AgentKind {
        AgentKind::Reference
    }
    fn version(&self) -> String {
        format!("gauntlet-agent {}", crate::VERSION)
    }
    fn invocation(&self, run: &RunSpec) -> Invocation {
        Invocation {
            program: self.program.clone(),
            args: vec![
                "qa".into(),
                "--prompt-file".into(),
                run.workspace
                    .join(PROMPT_FILE)
                    .to_string_lossy()
                    .into_owned(),
                "--graph-file".into(),
                run.graph_file.to_string_lossy().into_owned(),
                match &run.target {
                    Locator::Url(_) => "--url".into(),
                    Locator::Bin(_) => "--bin".into(),
                },
                run.target.to_string(),
                "--capability".into(),
                run.capability.clone(),
                "--n".into(),
                run.n.to_string(),
            ]
            .into_iter()
            .chain(self.stream.then(|| "--stream".to_string()))
            .collect(),
        }
    }
    fn prompt_invocation(&self, run: &PromptRun) -> Result<Invocation, AdapterError> {
        match &run.session {
            Some(turn) => {
                Ok(self.session_invocation(turn, vec!["--prompt".into(), run.prompt.clone()]))
            }
            None => Ok(Invocation {
                program: self.program.clone(),
                args: [
                    "task".into(),
                    "--prompt-file".into(),
                    run.workspace
                        .join(PROMPT_FILE)
                        .to_string_lossy()
                        .into_owned(),
                ]
                .into_iter()
                .chain(self.stream.then(|| "--stream".to_string()))
                .collect(),
            }),
        }
    }
    fn prompt_launch(
        &self,
        run: &PromptRun,
        ctx: &LaunchContext<'_>,
    ) -> Result<Launch, AdapterError> {
        file_prompt_launch(self, run, ctx, |turn, file| {
            Launch::bare(self.session_invocation(
                turn,
                vec!["--prompt-file".into(), file.to_string_lossy().into_owned()],
            ))
        })
    }
    fn daemon_launch(
        &self,
        run: &DaemonRun,
        _ctx: &LaunchContext<'_>,
    ) -> Result<Option<Launch>, AdapterError> {
        let Some(config) = &run.config else {
            return Ok(None);
        };
        session::ensure_dir(&run.state_dir)?;
        Ok(Some(Launch::bare(Invocation {
            program: self.program.clone(),
            args: vec![
                "daemon".into(),
                "--state-dir".into(),
                run.state_dir.to_string_lossy().into_owned(),
                "--config".into(),
                config.to_string_lossy().into_owned(),
            ],
        })))
    }
}

impl Reference {
    /// `gauntlet-agent chat --state-dir D --session S [--resume] <prompt args>`.
    pub fn session_invocation(&self, turn: &SessionTurn, prompt: Vec<String>) -> Invocation {
        let mut args = vec![
            "chat".into(),
            "--state-dir".into(),
            turn.state_dir.to_string_lossy().into_owned(),
            "--session".into(),
            turn.id.clone(),
        ];
        if turn.resume {
            args.push("--resume".into());
        }
        args.extend(prompt);
        Invocation {
            program: self.program.clone(),
            args,
        }
    }
}

/// Any executable that speaks docs/agent-protocol.md on stdout. Placeholders in its
/// arguments (`{graph_file}`, `{target}` — the URL or the binary —, `{url}`, `{bin}`,
/// `{capability}`, `{n}`, `{workspace}`) are filled per trial; the same values are in
/// its environment either way.
pub struct Command {
    pub argv: Vec<String>,
    /// Its background mode ([`Adapter::daemon_launch`]): a command line with the
    /// placeholders `{workspace}`, `{state_dir}` and `{title}`; empty, none.
    pub daemon_argv: Vec<String>,
}

impl Adapter for Command {
    fn kind(&self) -> AgentKind {
        AgentKind::Command
    }
    fn version(&self) -> String {
        if self.daemon_argv.is_empty() {
            format!("command: {}", shell_words::join(&self.argv))
        } else {
            format!(
                "command: {}; background: {}",
                shell_words::join(&self.argv),
                shell_words::join(&self.daemon_argv)
            )
        }
    }
    fn invocation(&self, run: &RunSpec) -> Invocation {
        let fill = |s: &String| {
            let (url, bin) = match &run.target {
                Locator::Url(u) => (u.clone(), String::new()),
                Locator::Bin(b) => (String::new(), b.to_string_lossy().into_owned()),
            };
            s.replace("{graph_file}", &run.graph_file.to_string_lossy())
                .replace(
                    "{prompt_file}",
                    &run.workspace.join(PROMPT_FILE).to_string_lossy(),
                )
                .replace("{target}", &run.target.to_string())
                .replace("{url}", &url)
                .replace("{bin}", &bin)
                .replace("{capability}", &run.capability)
                .replace("{n}", &run.n.to_string())
                .replace("{workspace}", &run.workspace.to_string_lossy())
        };
        let mut argv = self.argv.iter().map(fill);
        Invocation {
            program: PathBuf::from(argv.next().unwrap_or_default()),
            args: argv.collect(),
        }
    }
    /// Placeholders for a one-shot prompt run: `{prompt_file}`, `{prompt}`,
    /// `{workspace}`, `{title}`; a session turn adds `{session_id}`, `{session_resume}`,
    /// `{state_dir}` (docs/agent-protocol.md).
    fn prompt_invocation(&self, run: &PromptRun) -> Result<Invocation, AdapterError> {
        match &run.session {
            Some(turn) => Ok(self.session_invocation(run, turn, None)),
            None => {
                let file = run.workspace.join(PROMPT_FILE);
                let fill = |s: &String| {
                    s.replace("{prompt_file}", &file.to_string_lossy())
                        .replace("{prompt}", &run.prompt)
                        .replace("{workspace}", &run.workspace.to_string_lossy())
                        .replace("{title}", &run.title)
                };
                let mut argv = self.argv.iter().map(fill);
                Ok(Invocation {
                    program: PathBuf::from(argv.next().unwrap_or_default()),
                    args: argv.collect(),
                })
            }
        }
    }
    fn prompt_launch(
        &self,
        run: &PromptRun,
        ctx: &LaunchContext<'_>,
    ) -> Result<Launch, AdapterError> {
        file_prompt_launch(self, run, ctx, |turn, file| Launch {
            invocation: self.session_invocation(run, turn, Some(file)),
            env: Command::session_env(run, turn, file),
        })
    }
    /// Its own background command, when it has one (`GAUNTLET_AGENT_DAEMON_CMD`, a
    /// catalogue adversary's `daemon`), started like the reference agent's daemon: in
    /// the workspace, for the whole block of idle windows, with `{workspace}`,
    /// `{state_dir}` and `{title}` filled and `GAUNTLET_WORKSPACE`, `GAUNTLET_STATE_DIR`
    /// set. A scripted profile's daemon config is the reference agent's and is not
    /// passed on.
    fn daemon_launch(
        &self,
        run: &DaemonRun,
        _ctx: &LaunchContext<'_>,
    ) -> Result<Option<Launch>, AdapterError> {
        if self.daemon_argv.is_empty() {
            return Ok(None);
        }
        session::ensure_dir(&run.state_dir)?;
        let fill = |s: &String| {
            s.replace("{workspace}", &run.workspace.to_string_lossy())
                .replace("{state_dir}", &run.state_dir.to_string_lossy())
                .replace("{title}", &run.title)
        };
        let mut argv = self.daemon_argv.iter().map(fill);
        Ok(Some(Launch {
            invocation: Invocation {
                program: PathBuf::from(argv.next().unwrap_or_default()),
                args: argv.collect(),
            },
            env: BTreeMap::from([
                (
                    "GAUNTLET_WORKSPACE".into(),
                    run.workspace.to_string_lossy().into_owned(),
                ),
                (
                    "GAUNTLET_STATE_DIR".into(),
                    run.state_dir.to_string_lossy().into_owned(),
                ),
            ]),
        }))
    }
}

impl Command {
    /// The argv with the session placeholders filled (docs/agent-protocol.md,
    /// "Sessions"): `{prompt}`, `{prompt_file}`, `{workspace}`, `{session_id}`,
    /// `{session_resume}` (`true`/`false`), `{state_dir}`.
    pub fn session_invocation(
        &self,
        run: &PromptRun,
        turn: &SessionTurn,
        prompt_file: Option<&Path>,
    ) -> Invocation {
        let fill = |s: &String| {
            s.replace(
                "{prompt_file}",
                &prompt_file
                    .map(|p| p.to_string_lossy().into_owned())
                    .unwrap_or_default(),
            )
            .replace("{prompt}", &run.prompt)
            .replace("{workspace}", &run.workspace.to_string_lossy())
            .replace("{title}", &run.title)
            .replace("{session_id}", &turn.id)
            .replace(
                "{session_resume}",
                if turn.resume { "true" } else { "false" },
            )
            .replace("{state_dir}", &turn.state_dir.to_string_lossy())
        };
        let mut argv = self.argv.iter().map(fill);
        Invocation {
            program: PathBuf::from(argv.next().unwrap_or_default()),
            args: argv.collect(),
        }
    }

    /// The same values as variables, for agents that read their environment.
    pub fn session_env(
        run: &PromptRun,
        turn: &SessionTurn,
        prompt_file: &Path,
    ) -> BTreeMap<String, String> {
        BTreeMap::from([
            (
                "GAUNTLET_PROMPT_FILE".into(),
                prompt_file.to_string_lossy().into_owned(),
            ),
            (
                "GAUNTLET_WORKSPACE".into(),
                run.workspace.to_string_lossy().into_owned(),
            ),
            ("GAUNTLET_SESSION_ID".into(), turn.id.clone()),
            (
                "GAUNTLET_SESSION_RESUME".into(),
                if turn.resume { "true" } else { "false" }.into(),
            ),
            (
                "GAUNTLET_STATE_DIR".into(),
                turn.state_dir.to_string_lossy().into_owned(),
            ),
        ])
    }
}

/// The adapter for a configured agent.
pub fn adapter_for(choice: &AgentChoice) -> Box<dyn Adapter> {
    match choice.kind {
        AgentKind::Reference => Box::new(Reference {
            program: crate::binaries::bin_path("gauntlet-agent"),
            stream: choice.stream,
        }),
        AgentKind::Command => Box::new(Command {
            argv: choice.argv.clone(),
            daemon_argv: choice.daemon_argv.clone(),
        }),
        AgentKind::OpenCode => Box::new(opencode::OpenCode::new(npm_bin(choice))),
        AgentKind::ClaudeCode => Box::new(claude_code::ClaudeCode::new(npm_bin(choice))),
        AgentKind::Codex => Box::new(codex::Codex::new(npm_bin(choice))),
    }
}

/// Where the pinned CLI of `choice` is installed (`workspace/node_modules/.bin`).
fn npm_bin(choice: &AgentChoice) -> PathBuf {
    cli::npm_bin(choice.kind().npm_bin().unwrap_or(choice.name()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_streaming_reference_agent_asks_for_events_in_qa_and_tasks() {
        let cfg = crate::config::Config::from_sources(
            &[("GAUNTLET_AGENT_STREAM", "1")]
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .into(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(cfg.agent.stream);
        let streaming = adapter_for(&cfg.agent);
        let plain = adapter_for(&AgentChoice::of(AgentKind::Reference));
        let run = RunSpec {
            prompt: String::new(),
            graph_file: PathBuf::from("/g.json"),
            target: Locator::Url("http://127.0.0.1:1".into()),
            capability: "c".into(),
            n: 3,
            workspace: PathBuf::from("/w"),
        };
        assert!(streaming
            .invocation(&run)
            .args
            .contains(&"--stream".to_string()));
        assert!(!plain
            .invocation(&run)
            .args
            .contains(&"--stream".to_string()));
    }

    #[test]
    fn every_adapter_name_has_a_stream_parser() {
        for choice in AgentKind::ALL.map(|kind| AgentChoice {
            kind,
            argv: vec!["true".into()],
            daemon_argv: vec![],
            stream: false,
        }) {
            let adapter = adapter_for(&choice);
            assert_eq!(adapter.name(), choice.name());
            assert_eq!(AgentKind::from_name(adapter.name()), Some(adapter.kind()));
        }
        assert!(AgentKind::from_name("mystery").is_none());
    }

    #[test]
    fn a_missing_cli_is_a_clear_launch_error_that_writes_nothing() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let run = RunSpec {
            prompt: "verify `health`".into(),
            graph_file: dir.path().join("graph.json"),
            target: Locator::Url("http://127.0.0.1:1".into()),
            capability: "health".into(),
            n: 1,
            workspace: dir.path().to_path_buf(),
        };
        let ctx = LaunchContext::scratch(dir.path());
        let missing = PathBuf::from("/nonexistent/bin/agent");
        let adapters: [Box<dyn Adapter>; 3] = [
            Box::new(opencode::OpenCode::new(missing.clone())),
            Box::new(claude_code::ClaudeCode::new(missing.clone())),
            Box::new(codex::Codex::new(missing.clone())),
        ];
        for adapter in adapters {
            let err = adapter
                .launch(&run, &ctx)
                .err()
                .unwrap_or_else(|| panic!("{} launched without its binary", adapter.name()));
            let msg = err.to_string();
            assert!(
                msg.contains("/nonexistent/bin/agent") && msg.contains("npm ci"),
                "{msg}"
            );
        }
        assert_eq!(
            std::fs::read_dir(dir.path())
                .map(|d| d.count())
                .unwrap_or(1),
            0
        );
    }

    #[test]
    fn every_adapter_delivers_the_harness_prompt_and_nothing_else() {
        let run = RunSpec {
            prompt: "THE ONE PROMPT".into(),
            graph_file: PathBuf::from("/g.json"),
            target: Locator::Url("http://127.0.0.1:1".into()),
            capability: "health".into(),
            n: 1,
            workspace: PathBuf::from("/w"),
        };
        let file = format!("/w/{PROMPT_FILE}");
        let command = Command {
            argv: vec!["agent".into(), "--task".into(), "{prompt_file}".into()],
            daemon_argv: vec![],
        };
        let reference = Reference {
            program: PathBuf::from("gauntlet-agent"),
            stream: false,
        };
        for adapter in [&command as &dyn Adapter, &reference] {
            let args = adapter.invocation(&run).args;
            assert!(args.contains(&file), "{}: {args:?}", adapter.name());
        }
        for adapter in [
            Box::new(claude_code::ClaudeCode::new("claude".into())) as Box<dyn Adapter>,
            Box::new(codex::Codex::new("codex".into())),
            Box::new(opencode::OpenCode::new("opencode".into())),
        ] {
            let args = adapter.invocation(&run).args;
            assert_eq!(
                args.iter().filter(|a| a.contains("THE ONE PROMPT")).count(),
                1,
                "{}: {args:?}",
                adapter.name()
            );
            assert!(args.iter().any(|a| a == "THE ONE PROMPT"), "{args:?}");
        }
    }

    #[test]
    fn the_prompt_reaches_the_command_line_last_after_a_separator() {
        let run = RunSpec {
            prompt: "verify `health`; its corpus graph is /g.json".into(),
            graph_file: PathBuf::from("/g.json"),
            target: Locator::Url("http://127.0.0.1:1".into()),
            capability: "health".into(),
            n: 1,
            workspace: PathBuf::from("/w"),
        };
        for adapter in [
            Box::new(claude_code::ClaudeCode::new("claude".into())) as Box<dyn Adapter>,
            Box::new(codex::Codex::new("codex".into())),
        ] {
            let args = adapter.invocation(&run).args;
            let n = args.len();
            assert_eq!(args[n - 2], "--", "{}", adapter.name());
            assert!(args[n - 1].contains("`health`"));
        }
        let args = opencode::OpenCode::new("opencode".into())
            .invocation(&run)
            .args;
        assert_eq!(&args[..3], ["run", "--format", "json"]);
        assert!(args.last().is_some_and(|p| p.contains("/g.json")));
    }

    #[test]
    fn every_adapter_runs_a_one_shot_prompt() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let run = PromptRun {
            title: "challenge::x::none".into(),
            prompt: "Do the task.\nReport.".into(),
            workspace: dir.path().to_path_buf(),
            session: None,
        };
        let ctx = LaunchContext::scratch(dir.path());
        // The reference agent and command agents read the prompt from a file in the
        // workspace, written by the launch.
        let reference = Reference {
            program: "/bin/gauntlet-agent".into(),
            stream: false,
        };
        let launch = reference
            .prompt_launch(&run, &ctx)
            .unwrap_or_else(|e| panic!("{e}"));
        let file = dir.path().join(PROMPT_FILE);
        assert_eq!(launch.invocation.args[..2], ["task", "--prompt-file"]);
        assert_eq!(launch.invocation.args[2], file.to_string_lossy());
        assert_eq!(
            std::fs::read_to_string(&file).unwrap_or_default(),
            run.prompt
        );
        let command = Command {
            argv: vec![
                "agent".into(),
                "--file={prompt_file}".into(),
                "{prompt}".into(),
                "--in={workspace}".into(),
            ],
            daemon_argv: vec![],
        };
        let inv = command
            .prompt_invocation(&run)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(inv.args[0], format!("--file={}", file.display()));
        assert_eq!(inv.args[1], run.prompt);
        assert_eq!(inv.args[2], format!("--in={}", dir.path().display()));
        // The CLIs get the prompt itself as the last argument.
        let clis: [Box<dyn Adapter>; 3] = [
            Box::new(opencode::OpenCode::new("opencode".into())),
            Box::new(claude_code::ClaudeCode::new("claude".into())),
            Box::new(codex::Codex::new("codex".into())),
        ];
        for adapter in clis {
            let inv = adapter
                .prompt_invocation(&run)
                .unwrap_or_else(|e| panic!("{}: {e}", adapter.name()));
            assert_eq!(inv.args.last(), Some(&run.prompt), "{}", adapter.name());
        }
    }
}
