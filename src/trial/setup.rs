//! Why a trial's world or agent could not be set up.
//!
//! A setup failure is evidence, not a crash: each suite records the message as the
//! trial's `setup_error` (its verdict is then `error`) beside whatever was observed
//! until then. One type for the three suites, so that the same failure reads the same
//! in every record, and so that a record reader can tell what failed from the words.

use std::path::PathBuf;

use crate::agent::AdapterError;
use crate::config::ConfigError;
use crate::spec::challenge::bundle::CopyError;
use crate::spec::SpecError;
use crate::sys::beneath::BeneathError;
use crate::sys::process::ProcessError;
use crate::world::browser::BrowserError;
use crate::world::sinks::SinkError;
use crate::world::target::TargetError;

/// Why the kernel could not give a process its proxy or its launch. Here, beside the
/// setup failure that carries it, so that the kernel imports its errors and nothing
/// here imports the kernel.
#[derive(Debug, thiserror::Error)]
pub enum KernelError {
    #[error("scripted mode: {what}")]
    NoScript { what: String },
    #[error(transparent)]
    Key(#[from] ConfigError),
    #[error("metering proxy failed to start: {0}")]
    Proxy(#[source] std::io::Error),
    #[error("agent `{agent}` could not be prepared: {source}")]
    Prepare {
        agent: String,
        #[source]
        source: AdapterError,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error(transparent)]
    Kernel(#[from] KernelError),
    #[error("{}: {source}", .path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} -> {}: {source}", .from.display(), .to.display())]
    Copy {
        from: PathBuf,
        to: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("app `{app}` has no capability `{capability}`")]
    NoCapability { app: String, capability: String },
    #[error("cannot copy the corpus graph: {0}")]
    Graph(#[source] std::io::Error),
    #[error("cannot give the agent its prompt: {0}")]
    Prompt(#[source] BeneathError),
    #[error(transparent)]
    Bundle(#[from] CopyError),
    #[error("app failed to start: {0}")]
    App(#[source] TargetError),
    #[error("setting up the app (`world.setup`) failed at {method} {path}: {why}")]
    AppSetup {
        method: String,
        path: String,
        why: String,
    },
    #[error("browser check failed: {0}")]
    Browser(#[source] BrowserError),
    #[error("scripted profile: {0}")]
    Profile(#[source] SpecError),
    #[error("planting {}: {source}", .from.display())]
    Plant {
        from: PathBuf,
        #[source]
        source: crate::sys::walk::WalkError,
    },
    #[error("planting {}: the copy is incomplete: {cut}", .from.display())]
    PlantCut {
        from: PathBuf,
        cut: crate::evidence::tree::Cut,
    },
    #[error("world sinks failed to start: {0}")]
    Sinks(#[source] SinkError),
    #[error("workspace observer: {0}")]
    Observer(#[source] SinkError),
    /// The workspace snapshot of a step stopped before it had seen the whole workspace:
    /// what the step did there is known only in part.
    #[error("the workspace snapshot {at} is incomplete: {cut}")]
    SnapshotCut {
        at: String,
        cut: crate::evidence::tree::Cut,
    },
    #[error("the harness could not change the world: {0}")]
    World(String),
    /// The app's independence matrix could not be derived, or refuses the app.
    #[error("{0}")]
    Independence(String),
    #[error("agent could not be run: {0}")]
    Run(#[source] ProcessError),
    #[error("agent could not be run at turn `{turn}`: {source}")]
    RunAt {
        turn: String,
        #[source]
        source: ProcessError,
    },
    #[error("the agent died at turn `{turn}`: {end}")]
    Died { turn: String, end: String },
    #[error("cannot read agent output: {0}")]
    Output(#[source] std::io::Error),
    #[error("the run was interrupted ({signal}) before {before}")]
    Interrupted {
        signal: &'static str,
        before: String,
    },
}

impl SetupError {
    /// `map_err` for an I/O error on `path`.
    pub fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> SetupError {
        let path = path.into();
        move |source| SetupError::Io { path, source }
    }
}

/// Create `p` (and its parents) as a directory of the trial.
pub fn mkdir(p: &std::path::Path) -> Result<PathBuf, SetupError> {
    std::fs::create_dir_all(p).map_err(SetupError::io(p))?;
    Ok(p.to_path_buf())
}

/// Put a setup failure down to the run's stop when the run was asked to stop while the
/// trial was being set up: the signal reaches the trial's own helpers too (nextest
/// signals each test's process group, a terminal the foreground group), so a sandbox
/// or an app that died of it says nothing of the trial. `interrupted` (the agent's)
/// then names the signal: the trial was never judged, and a resumed run runs it again.
pub fn stopped_while_set_up(interrupted: &mut Option<String>) {
    if interrupted.is_none() {
        *interrupted = crate::sys::shutdown::requested().map(|stop| stop.name().into());
    }
}
