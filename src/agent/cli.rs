//! What the three npm-installed agent CLIs have in common: where their binaries are,
//! how their version is read, how their config files are written, and how a prompt is
//! launched ([`Pinned`]). Each CLI says only what is its own ([`Cli`]): its argv, and
//! the config and variables it needs; the order of the steps is the same for all three.

use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use super::{
    Adapter, AdapterError, Invocation, Launch, LaunchContext, PromptRun, RunSpec, SessionTurn,
};
use crate::evidence::streams::AgentKind;

/// What differs between the pinned CLIs. The stdout format is the third difference,
/// and lives apart: `evidence::streams::parser` of [`Cli::KIND`].
pub trait Cli: Send + Sync {
    const KIND: AgentKind;
    /// The argv of a one-shot run: a qa trial or a challenge. `title` names the run
    /// for a CLI that would otherwise ask the model for a title.
    fn args(title: String, prompt: String) -> Vec<String>;
    /// The argv of one turn of a session: its first turn starts the CLI's
    /// conversation, a later one resumes it.
    fn session_args(turn: &SessionTurn, prompt: String) -> Vec<String>;
    /// Write the CLI's config (in the scratch HOME; for a session turn, what must
    /// outlive the turn goes in its state directory) and return the variables that
    /// point the CLI at it and at the proxy. Called once the binary is known to exist.
    fn prepare(
        ctx: &LaunchContext<'_>,
        turn: Option<&SessionTurn>,
    ) -> Result<BTreeMap<String, String>, AdapterError>;
    /// The version recorded for a run, from the first line `--version` printed.
    fn version(probed: String) -> String {
        probed
    }
}

/// A pinned CLI as an [`Adapter`]: one launch path for the three of them, so that a
/// missing binary is refused before anything is written, for every CLI and every kind
/// of run alike.
pub struct Pinned<C> {
    program: PathBuf,
    version: OnceLock<String>,
    cli: PhantomData<C>,
}

impl<C: Cli> Pinned<C> {
    pub fn new(program: PathBuf) -> Pinned<C> {
        Pinned {
            program,
            version: OnceLock::new(),
            cli: PhantomData,
        }
    }

    fn invoke(&self, args: Vec<String>) -> Invocation {
        Invocation {
            program: self.program.clone(),
            args,
        }
    }

    fn launch_with(
        &self,
        invocation: Invocation,
        ctx: &LaunchContext<'_>,
        turn: Option<&SessionTurn>,
    ) -> Result<Launch, AdapterError> {
        ensure_installed(C::KIND.name(), &self.program)?;
        let env = C::prepare(ctx, turn)?;
        Ok(Launch { invocation, env })
    }
}

impl<C: Cli> Adapter for Pinned<C> {
    fn kind(&self) -> AgentKind {
        C::KIND
    }

    fn version(&self) -> String {
        self.version
            .get_or_init(|| C::version(probe_version(&self.program)))
            .clone()
    }

    fn invocation(&self, run: &RunSpec) -> Invocation {
        self.invoke(C::args(
            format!("gauntlet {}", run.capability),
            run.prompt.clone(),
        ))
    }

    fn launch(&self, run: &RunSpec, ctx: &LaunchContext<'_>) -> Result<Launch, AdapterError> {
        self.launch_with(self.invocation(run), ctx, None)
    }

    fn prompt_invocation(&self, run: &PromptRun) -> Result<Invocation, AdapterError> {
        Ok(self.invoke(match &run.session {
            Some(turn) => C::session_args(turn, run.prompt.clone()),
            None => C::args(run.title.clone(), run.prompt.clone()),
        }))
    }

    fn prompt_launch(
        &self,
        run: &PromptRun,
        ctx: &LaunchContext<'_>,
    ) -> Result<Launch, AdapterError> {
        self.launch_with(self.prompt_invocation(run)?, ctx, run.session.as_ref())
    }
}

/// How long `<cli> --version` may take before it is killed and the version recorded
/// as unknown: a version probe must never hang a trial.
const VERSION_DEADLINE: Duration = Duration::from_secs(20);

/// `workspace/node_modules/.bin` of the repository: where `npm ci` in `workspace/`
/// puts the pinned CLIs.
pub fn npm_bin_dir() -> PathBuf {
    crate::binaries::repo_root().join("workspace/node_modules/.bin")
}

/// The pinned binary `name` (`opencode`, `claude`, `codex`).
pub fn npm_bin(name: &str) -> PathBuf {
    npm_bin_dir().join(name)
}

/// Whether the pinned binary `name` is installed.
pub fn installed(name: &str) -> bool {
    npm_bin(name).is_file()
}

/// The first line `program --version` prints, or why there is none. Bounded in time;
/// run once per program and process (a run's identity and each of its records ask).
pub fn probe_version(program: &Path) -> String {
    use std::collections::BTreeMap;
    use std::sync::{Mutex, OnceLock};
    static SEEN: OnceLock<Mutex<BTreeMap<std::path::PathBuf, String>>> = OnceLock::new();
    let seen = SEEN.get_or_init(Default::default);
    if let Some(v) = seen.lock().ok().and_then(|m| m.get(program).cloned()) {
        return v;
    }
    let v = match run_version(program) {
        Ok(v) => v,
        Err(why) => format!("unknown ({}: {why})", program.display()),
    };
    if let Ok(mut m) = seen.lock() {
        m.insert(program.to_path_buf(), v.clone());
    }
    v
}

fn run_version(program: &Path) -> Result<String, String> {
    crate::sys::version::first_line(program, VERSION_DEADLINE)
}

/// Refuse to prepare an agent whose CLI is not installed, before anything is written.
pub fn ensure_installed(agent: &str, program: &Path) -> Result<(), AdapterError> {
    if program.is_file() {
        Ok(())
    } else {
        Err(AdapterError::NotInstalled {
            agent: agent.into(),
            program: program.to_path_buf(),
        })
    }
}

/// Write `contents` to `rel` below `root` (the scratch HOME or the state dir, which
/// persist across turns and which the agent may have rigged), creating its parent
/// directories, through `sys::beneath`: a symlink anywhere on the way is refused.
pub fn write_config(root: &Path, rel: &str, contents: &str) -> Result<(), AdapterError> {
    crate::sys::beneath::write(root, Path::new(rel), contents.as_bytes())
        .map_err(AdapterError::Unsafe)
}

/// `http://127.0.0.1:PORT` from the proxy's `http://127.0.0.1:PORT/v1`: Anthropic
/// clients append `/v1/messages` themselves.
pub fn origin(base_url: &str) -> &str {
    base_url.trim_end_matches('/').trim_end_matches("/v1")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    #[test]
    fn origin_strips_the_version_segment() {
        assert_eq!(origin("http://127.0.0.1:9/v1"), "http://127.0.0.1:9");
        assert_eq!(origin("http://127.0.0.1:9/v1/"), "http://127.0.0.1:9");
        assert_eq!(origin("http://127.0.0.1:9"), "http://127.0.0.1:9");
    }

    #[test]
    fn a_missing_binary_has_an_unknown_version_naming_it() {
        let v = probe_version(Path::new("/nonexistent/gauntlet-cli"));
        assert!(v.starts_with("unknown (/nonexistent/gauntlet-cli:"), "{v}");
    }

    #[test]
    fn the_first_line_of_version_output_is_kept() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let script = dir.path().join("fake");
        std::fs::write(
            &script,
            "#!/bin/sh\necho\necho 'fake-cli 1.2.3'\necho more\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let _ = Command::new("chmod").arg("+x").arg(&script).status();
        assert_eq!(probe_version(&script), "fake-cli 1.2.3");
    }
}
