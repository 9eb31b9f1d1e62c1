//! The thing under test, started for one purpose (the agent's session, the gate's
//! re-runs, the mutant run), whatever its modality.
//!
//! Each modality reaches tests and agents through environment variables, so that a
//! claimed test is one shell command whatever it drives:
//!
//! | modality | started as | environment |
//! | --- | --- | --- |
//! | `http-api`, `browser-flow` | the app's server | `APP_URL` |
//! | `cli` | nothing runs; a mutant is a wrapper script | `APP_BIN` |
//! | `browser-extension` | the app's page server, which also writes the extension | `APP_URL`, `EXTENSION_DIR` |

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::app::AppProcess;
use crate::spec::{AppSpec, Modality};

/// How long an app may take to print its port.
pub const APP_STARTUP: Duration = Duration::from_secs(20);

/// A started target. Stop it with [`Target::stop`]; dropping it kills any process.
pub struct Target {
    env: BTreeMap<String, String>,
    process: Option<AppProcess>,
}

impl Target {
    /// Start `app` (its `mutant` if given) for `label`, keeping its files in `dir`.
    pub async fn start(
        app: &AppSpec,
        mutant: Option<&str>,
        dir: &Path,
        label: &str,
    ) -> Result<Target, String> {
        let binary = crate::binaries::bin_path(&app.binary);
        let mut args: Vec<String> = Vec::new();
        if let Some(m) = mutant {
            args.extend(["--mutant".to_string(), m.to_string()]);
        }
        let mut env = BTreeMap::new();
        match app.modality {
            Modality::Cli => {
                if !binary.is_file() {
                    return Err(format!(
                        "app binary {} does not exist: run `cargo build --bins`",
                        binary.display()
                    ));
                }
                let bin = match mutant {
                    None => binary,
                    Some(_) => write_wrapper(&binary, &args, dir, label)?,
                };
                env.insert("APP_BIN".into(), bin.to_string_lossy().into_owned());
                Ok(Target { env, process: None })
            }
            Modality::HttpApi | Modality::BrowserFlow | Modality::BrowserExtension => {
                if app.modality == Modality::BrowserExtension {
                    let ext = dir.join(format!("{label}-extension"));
                    args.extend([
                        "--extension-out".to_string(),
                        ext.to_string_lossy().into_owned(),
                    ]);
                    env.insert("EXTENSION_DIR".into(), ext.to_string_lossy().into_owned());
                }
                let process = AppProcess::start(&binary, &args, dir, label, APP_STARTUP)
                    .await
                    .map_err(|e| e.to_string())?;
                env.insert("APP_URL".into(), process.url().to_string());
                Ok(Target {
                    env,
                    process: Some(process),
                })
            }
        }
    }

    /// What a test or an agent needs to reach the target.
    pub fn env(&self) -> &BTreeMap<String, String> {
        &self.env
    }

    /// `APP_URL` or `APP_BIN`: the one value an agent is handed on its command line.
    pub fn locator(&self) -> Locator {
        match (self.env.get("APP_URL"), self.env.get("APP_BIN")) {
            (Some(url), _) => Locator::Url(url.clone()),
            (None, Some(bin)) => Locator::Bin(PathBuf::from(bin)),
            (None, None) => Locator::Url(String::new()),
        }
    }

    pub async fn stop(&mut self) {
        if let Some(p) = self.process.as_mut() {
            p.stop().await;
        }
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

/// A CLI mutant is the same binary with `--mutant <capability>` always first.
fn write_wrapper(
    binary: &Path,
    args: &[String],
    dir: &Path,
    label: &str,
) -> Result<PathBuf, String> {
    use std::os::unix::fs::PermissionsExt;
    let wdir = dir.join(format!("{label}-bin"));
    std::fs::create_dir_all(&wdir).map_err(|e| format!("{}: {e}", wdir.display()))?;
    let name = binary
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    let path = wdir.join(name);
    let script = format!(
        "#!/bin/sh\nexec {} {} \"$@\"\n",
        shell_words::quote(&binary.to_string_lossy()),
        shell_words::join(args)
    );
    std::fs::write(&path, script).map_err(|e| format!("{}: {e}", path.display()))?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}
