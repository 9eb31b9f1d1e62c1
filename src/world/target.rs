//! The thing under test, started for one purpose (the agent's session, one gate run),
//! whatever its modality.
//!
//! Each modality reaches tests and agents through environment variables, so that a
//! claimed test is one shell command whatever it drives:
//!
//! | modality | started as | environment |
//! | --- | --- | --- |
//! | `http-api`, `browser-flow` | the app's server | `APP_URL` |
//! | `cli` | a relay that runs the app per invocation | `APP_BIN` (and `GAUNTLET_APP_SOCKET`, the relay's) |
//! | `browser-extension` | the app's page server, which also writes the extension | `APP_URL`, `EXTENSION_DIR` |
//!
//! A target is blind: the app and every mutant are handed over through the same
//! locators. Everything a sealed process sees of a target lives in one locator
//! directory, mounted at [`TARGET_MOUNT`] in every sandbox, so `APP_BIN`,
//! `EXTENSION_DIR` and the relay's socket have the same paths for app and mutant; a CLI
//! app is reached through the same relay binary, which runs the real app (with or
//! without `--mutant`) outside the sandbox, so nothing a test can read — path, bytes,
//! arguments, process list — says which one answers. The app's logs go elsewhere.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::app::AppProcess;
use super::cli_relay::{AppRunBounds, AppRuns, CliRelay};
use crate::spec::app::AppStart;
use crate::spec::{AppSpec, Modality};
use crate::sys::sandbox::{View, TARGET_MOUNT};

/// How long an app may take to print its port.
pub const APP_STARTUP: Duration = Duration::from_secs(20);

/// The relay's socket, in the locator directory.
const SOCKET: &str = "app.sock";

/// A started target. Stop it with [`Target::stop`]; dropping it kills any process.
pub struct Target {
    /// The locator directory on the host.
    dir: PathBuf,
    url: Option<String>,
    /// The CLI app's file name, when it is reached through the relay.
    bin_name: Option<String>,
    extension: bool,
    process: Option<AppProcess>,
    relay: Option<CliRelay>,
}

/// Why a target could not be started.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    #[error("app binary {} does not exist: build it with `cargo test --no-run` (the build cargo nextest runs from)", path.display())]
    NoBinary { path: PathBuf },
    #[error("{}: command: `{program}` is not a file in the app directory or on {}", file.display(), crate::spec::app::APP_PATH)]
    NoProgram { file: PathBuf, program: String },
    #[error("the CLI relay {} does not exist: install gauntlet's programs with `{}`", path.display(), crate::binaries::INSTALL_HELPERS)]
    NoRelay { path: PathBuf },
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    App(#[from] super::app::AppError),
    #[error(transparent)]
    Relay(#[from] super::cli_relay::RelayError),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> TargetError + '_ {
    move |source| TargetError::Io {
        path: path.to_path_buf(),
        source,
    }
}

impl Target {
    /// Start `app` (its `mutant` if given). `dir` is the locator directory (created; it
    /// must hold nothing else and its path must say nothing about the target), `logs`
    /// where the app's output goes, as `<label>.stdout` / `.stderr`.
    pub async fn start(
        app: &AppSpec,
        mutant: Option<&str>,
        dir: &Path,
        logs: &Path,
        label: &str,
    ) -> Result<Target, TargetError> {
        Self::start_bounded(app, mutant, dir, logs, label, AppRunBounds::default()).await
    }

    /// [`Target::start`], with a CLI app's runs held to `bounds` (those of the run that
    /// drives them: [`AppRunBounds::within`] its deadline).
    pub async fn start_bounded(
        app: &AppSpec,
        mutant: Option<&str>,
        dir: &Path,
        logs: &Path,
        label: &str,
        bounds: AppRunBounds,
    ) -> Result<Target, TargetError> {
        let started = Self::start_untimed(app, mutant, dir, logs, label, bounds);
        crate::phases::timed(crate::phases::Phase::Target, started).await
    }

    async fn start_untimed(
        app: &AppSpec,
        mutant: Option<&str>,
        dir: &Path,
        logs: &Path,
        label: &str,
        bounds: AppRunBounds,
    ) -> Result<Target, TargetError> {
        let (binary, prefix) = app.start_command();
        if !binary.is_file() {
            return Err(match &app.start {
                AppStart::Binary(_) => TargetError::NoBinary { path: binary },
                AppStart::Command(argv) => TargetError::NoProgram {
                    file: app.dir.join("app.json"),
                    program: argv.first().cloned().unwrap_or_default(),
                },
            });
        }
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let mut args: Vec<String> = prefix;
        if let Some(m) = mutant {
            args.extend(["--mutant".to_string(), m.to_string()]);
        }
        let mut target = Target {
            dir: dir.to_path_buf(),
            url: None,
            bin_name: None,
            extension: false,
            process: None,
            relay: None,
        };
        match app.modality {
            Modality::Cli => {
                let name = app.bin_name();
                let bin_dir = dir.join("bin");
                std::fs::create_dir_all(&bin_dir).map_err(io(&bin_dir))?;
                let relay_bin = crate::binaries::bin_path(super::cli_relay::RELAY_BINARY);
                if !relay_bin.is_file() {
                    return Err(TargetError::NoRelay { path: relay_bin });
                }
                std::os::unix::fs::symlink(&relay_bin, bin_dir.join(&name))
                    .map_err(io(&bin_dir.join(&name)))?;
                // The app's working directory sits beside the locator directory, named
                // as blindly as it is (a run's position, never its target).
                let scratch = dir.with_extension("cwd");
                target.relay = Some(
                    CliRelay::start(&binary, &args, &dir.join(SOCKET), &scratch, bounds).await?,
                );
                target.bin_name = Some(name);
            }
            Modality::HttpApi | Modality::BrowserFlow | Modality::BrowserExtension => {
                if app.modality == Modality::BrowserExtension {
                    let ext = dir.join("extension");
                    args.extend([
                        "--extension-out".to_string(),
                        ext.to_string_lossy().into_owned(),
                    ]);
                    target.extension = true;
                }
                // The app starts in its run's own fresh directory, never where the
                // harness happens to run: what it does there is the same on every
                // machine, and nothing it writes lands in the repository.
                let process =
                    AppProcess::start(&binary, &args, dir, logs, label, APP_STARTUP).await?;
                target.url = Some(process.url().to_string());
                target.process = Some(process);
            }
        }
        Ok(target)
    }

    /// What a CLI app's runs met so far (`None` for a served app, whose bounds its
    /// reaper reports in the app's log).
    pub fn app_runs(&self) -> Option<AppRuns> {
        self.relay.as_ref().map(CliRelay::app_runs)
    }

    /// What a sealed process needs to reach the target: the locators as they appear
    /// inside its sandbox (with [`Target::view`] mounted).
    pub fn env(&self) -> BTreeMap<String, String> {
        self.env_at(Path::new(TARGET_MOUNT))
    }

    /// The same, as paths on the host: for unsealed processes and the harness itself.
    pub fn host_env(&self) -> BTreeMap<String, String> {
        self.env_at(&self.dir)
    }

    /// [`Target::env`] when `sealed`, else [`Target::host_env`].
    pub fn env_for(&self, sealed: bool) -> BTreeMap<String, String> {
        if sealed {
            self.env()
        } else {
            self.host_env()
        }
    }

    fn env_at(&self, base: &Path) -> BTreeMap<String, String> {
        let mut env = BTreeMap::new();
        let at = |rel: &str| base.join(rel).to_string_lossy().into_owned();
        if let Some(url) = &self.url {
            env.insert("APP_URL".into(), url.clone());
        }
        if let Some(name) = &self.bin_name {
            env.insert("APP_BIN".into(), at(&format!("bin/{name}")));
            env.insert("GAUNTLET_APP_SOCKET".into(), at(SOCKET));
        }
        if self.extension {
            env.insert("EXTENSION_DIR".into(), at("extension"));
        }
        env
    }

    /// The locator directory, read-only at [`TARGET_MOUNT`].
    pub fn view(&self) -> View {
        View::new().bind(&self.dir, TARGET_MOUNT, false)
    }

    /// `APP_URL` or `APP_BIN` (as [`Target::env_for`] gives them): the one value an
    /// agent is handed on its command line.
    pub fn locator(&self, sealed: bool) -> Locator {
        let env = self.env_for(sealed);
        match (env.get("APP_URL"), env.get("APP_BIN")) {
            (Some(url), _) => Locator::Url(url.clone()),
            (None, Some(bin)) => Locator::Bin(PathBuf::from(bin)),
            (None, None) => Locator::Url(String::new()),
        }
    }

    /// Stop it; returns the app's logs, hashed, relative to `rel_base` (the trial
    /// directory), for the record.
    pub async fn stop(&mut self, rel_base: &Path) -> Vec<crate::evidence::RawFile> {
        let stopped = async {
            let mut logs = Vec::new();
            if let Some(p) = self.process.as_mut() {
                logs = p.stop(rel_base).await;
            }
            if let Some(r) = self.relay.take() {
                r.stop().await;
            }
            logs
        };
        crate::phases::timed(crate::phases::Phase::Target, stopped).await
    }
}

/// What the agent is pointed at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Locator {
    Url(String),
    Bin(PathBuf),
}

impl std::fmt::Display for Locator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Locator::Url(u) => f.write_str(u),
            Locator::Bin(b) => write!(f, "{}", b.display()),
        }
    }
}
