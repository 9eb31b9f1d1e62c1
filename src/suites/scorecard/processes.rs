//! The driver's settings for one probe, and what every process it runs for the agent
//! (each turn, and the background mode through an idle block) is given: a fresh
//! [`Scratch`], its kernel, its sandbox, its environment, its metering proxy. The
//! background mode starts its process from here as a turn does, so it needs nothing
//! of the driver's walk through the steps, and the driver can start it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::scratch::Scratch;
use crate::agent::Adapter;
use crate::config::Config;
use crate::proxy::Proxy;
use crate::spec::scorecard::profile::LoadedProfile;
use crate::spec::scorecard::{Bank, LoadedProbe};
use crate::spec::Script;
use crate::trial::{Context, SetupError};
use crate::world::sinks::Sinks;

/// Everything one probe run needs, fixed for its duration.
pub struct Driver<'a> {
    pub cfg: &'a Config,
    pub adapter: &'a dyn Adapter,
    pub probe: &'a LoadedProbe,
    pub bank: &'a Bank,
    /// Scripted mode: the profile that scripts the model.
    pub profile: Option<&'a LoadedProfile>,
    pub trial_dir: &'a Path,
    pub workspace: &'a Path,
    /// Where each turn's (and background run's) [`Scratch`] is made and removed.
    pub scratch: &'a Path,
    pub state_dir: &'a Path,
    pub sinks: &'a Sinks,
    pub trial: &'a str,
}

impl Driver<'_> {
    /// The kernel of one of the probe's processes: its trial directory, the
    /// process's own scratch HOME and TMPDIR, started in the workspace.
    pub(crate) fn kernel<'s>(&'s self, scratch: &'s Scratch) -> Context<'s> {
        Context {
            cfg: self.cfg,
            trial_dir: self.trial_dir,
            home: &scratch.home,
            tmp: &scratch.tmp,
            cwd: self.workspace,
        }
    }

    /// A fresh scratch HOME and TMPDIR for the process named `stem`.
    pub(crate) fn scratch(&self, stem: &str) -> Result<Scratch, SetupError> {
        Scratch::new(self.scratch, stem)
    }

    pub(crate) async fn proxy(
        &self,
        script: Option<Script>,
        what: &str,
    ) -> Result<Proxy, SetupError> {
        // The proxy runs in the harness: no process, no scratch of its own.
        let none = Context {
            cfg: self.cfg,
            trial_dir: self.trial_dir,
            home: self.scratch,
            tmp: self.scratch,
            cwd: self.workspace,
        };
        Ok(none.proxy(script, &format!("no script for {what}")).await?)
    }

    /// The sandbox of every process the probe runs for the agent (turns and its
    /// background mode): its workspace, the process's own HOME and TMPDIR, and the
    /// state directory writable, its opens and execs observed into `observation`;
    /// `None` when the run is unsealed.
    pub fn view(&self, scratch: &Scratch, observation: &Path) -> Option<crate::sys::sandbox::View> {
        self.cfg.sandbox.sealed().then(|| {
            crate::sys::sandbox::View::new()
                .write(self.workspace)
                .write(&scratch.home)
                .write(&scratch.tmp)
                .write(self.state_dir)
                .observed(observation)
        })
    }

    /// Where the observation of the process `stem` goes: a name no earlier process
    /// of the trial took (the sandbox creates it new).
    pub fn observation_file(&self, stem: &str) -> PathBuf {
        let mut file = self.trial_dir.join(format!("{stem}.opens.jsonl"));
        let mut n = 1;
        while file.exists() {
            n += 1;
            file = self.trial_dir.join(format!("{stem}.{n}.opens.jsonl"));
        }
        file
    }

    /// What every process the probe runs for the agent is told, whatever its adapter:
    /// the sinks (`http_proxy`, `GAUNTLET_SMTP_URL`, the tracker) and
    /// `GAUNTLET_STATE_DIR`, the one directory that outlives a session, so memory kept
    /// as files there (the portable scripted profiles do) survives into the next one.
    pub fn agent_env(&self) -> BTreeMap<String, String> {
        let mut env = self.sinks.agent_env();
        env.insert(
            "GAUNTLET_STATE_DIR".into(),
            self.state_dir.to_string_lossy().into_owned(),
        );
        env
    }
}
