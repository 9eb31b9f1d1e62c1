//! Running a flow's steps against the target named by the environment.

use std::io::Write;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::AsyncWriteExt;

use super::check::{check, excerpt, Observed};
use super::spec::{Action, BrowserStep, CliStep, HttpStep, Step, TestFlow};
use crate::world::browser::{Browser, LaunchOptions};

/// A cli step's deadline (docs/test-flows.md).
pub const CLI_DEADLINE: Duration = Duration::from_secs(10);
/// An http step's deadline.
pub const HTTP_DEADLINE: Duration = Duration::from_secs(10);
/// How long a browser read keeps re-reading until its expectation holds: pages and
/// extensions update asynchronously, and a one-shot read would make a correct test
/// flaky. It stops earlier once the page has gone idle (`world::browser::activity`).
pub const SETTLE: Duration = Duration::from_secs(5);
/// Between re-reads: a badge read is a few CDP round trips.
const REREAD: Duration = Duration::from_millis(20);

/// Where the steps go: `APP_URL`, `APP_BIN`, `EXTENSION_DIR`.
#[derive(Debug, Clone, Default)]
pub struct Target {
    pub app_url: Option<String>,
    pub app_bin: Option<PathBuf>,
    pub extension_dir: Option<PathBuf>,
}

impl Target {
    pub fn from_env() -> Target {
        let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
        Target {
            app_url: var("APP_URL").map(|v| v.to_string_lossy().into_owned()),
            app_bin: var("APP_BIN").map(PathBuf::from),
            extension_dir: var("EXTENSION_DIR").map(PathBuf::from),
        }
    }
}

/// The first step that did not hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("step {number} ({label}): {reason}")]
pub struct StepFailed {
    /// 1-based, as people count.
    pub number: usize,
    pub label: String,
    pub reason: String,
}

/// Run every step in order, printing one line per step to `out`; stop at the first
/// that fails. The browser, if any step used one, is killed before returning.
pub async fn run_flow(
    flow: &TestFlow,
    target: &Target,
    launch: LaunchOptions,
    out: &mut dyn Write,
) -> Result<(), StepFailed> {
    let http = reqwest::Client::builder()
        .no_proxy()
        .timeout(HTTP_DEADLINE)
        .build()
        .map_err(|e| StepFailed {
            number: 0,
            label: "setup".into(),
            reason: format!("http client: {e}"),
        })?;
    let mut runner = Runner {
        target,
        http,
        launch,
        browser: None,
    };
    let mut result = Ok(());
    for (i, step) in flow.steps.iter().enumerate() {
        let label = label(&step.action);
        if matches!(step.action, Action::Browser(_)) && runner.browser.is_none() {
            let started = Instant::now();
            if let Err(reason) = runner.ensure_browser().await {
                let _ = writeln!(out, "step {} FAILED: {label}", i + 1);
                result = Err(StepFailed {
                    number: i + 1,
                    label,
                    reason,
                });
                break;
            }
            let _ = writeln!(out, "browser started ({})", millis(started));
        }
        // Each line says how long its step took: where a slow test spends its time.
        let started = Instant::now();
        match runner.step(step).await {
            Ok(summary) => {
                let _ = writeln!(
                    out,
                    "step {} ok ({}): {label}{summary}",
                    i + 1,
                    millis(started)
                );
            }
            Err(reason) => {
                let _ = writeln!(out, "step {} FAILED ({}): {label}", i + 1, millis(started));
                result = Err(StepFailed {
                    number: i + 1,
                    label,
                    reason,
                });
                break;
            }
        }
    }
    if let Some(b) = runner.browser.take() {
        let console = b.console_errors();
        if result.is_err() && !console.is_empty() {
            eprintln!("browser console errors: {}", console.join(" | "));
        }
        b.close().await;
    }
    result
}

struct Runner<'a> {
    target: &'a Target,
    http: reqwest::Client,
    launch: LaunchOptions,
    browser: Option<Browser>,
}

impl Runner<'_> {
    /// Run one step and check its expectation; `Ok` carries a short summary.
    async fn step(&mut self, step: &Step) -> Result<String, String> {
        match &step.action {
            Action::Http(h) => {
                let seen = self.http(h).await?;
                if let Some(e) = &step.expect {
                    check(e, &seen).map_err(|u| u.to_string())?;
                }
                Ok(format!(" -> {}", seen.status.unwrap_or(0)))
            }
            Action::Cli(c) => {
                let seen = self.cli(c).await?;
                if let Some(e) = &step.expect {
                    check(e, &seen).map_err(|u| u.to_string())?;
                }
                Ok(format!(" -> exit {}", seen.exit.unwrap_or(-1)))
            }
            Action::Browser(b) => {
                self.ensure_browser().await?;
                if !b.yields_value() {
                    self.browser_step(b).await?;
                    return Ok(String::new());
                }
                let started = Instant::now();
                let deadline = started + SETTLE;
                loop {
                    let failure = match self.browser_step(b).await {
                        Ok(v) => {
                            let seen = Observed {
                                value: v.clone().unwrap_or_default(),
                                ..Observed::default()
                            };
                            match step.expect.as_ref().map(|e| check(e, &seen)) {
                                None | Some(Ok(())) => {
                                    return Ok(format!(" -> {}", excerpt(&seen.value)))
                                }
                                Some(Err(e)) => e.to_string(),
                            }
                        }
                        Err(e) => e,
                    };
                    if Instant::now() >= deadline {
                        return Err(format!("{failure} (re-read for {SETTLE:?})"));
                    }
                    if let Some(br) = &self.browser {
                        if br.is_idle(started).await {
                            return Err(format!(
                                "{failure} (re-read until the page went idle: {:?} without a DOM change, request or timer)",
                                br.quiet_for()
                            ));
                        }
                    }
                    tokio::time::sleep(REREAD).await;
                }
            }
        }
    }

    fn url(&self, path: &str) -> Result<String, String> {
        if path.starts_with("http://") || path.starts_with("https://") {
            return Ok(path.to_string());
        }
        let base = self
            .target
            .app_url
            .as_deref()
            .ok_or("APP_URL is not set (relative paths are joined to it)")?;
        let base = base.trim_end_matches('/');
        Ok(if path.starts_with('/') {
            format!("{base}{path}")
        } else {
            format!("{base}/{path}")
        })
    }

    async fn http(&self, h: &HttpStep) -> Result<Observed, String> {
        let url = self.url(&h.path)?;
        let method = reqwest::Method::from_bytes(h.method.trim().to_uppercase().as_bytes())
            .map_err(|_| format!("`{}` is not an http method", h.method))?;
        let mut req = self.http.request(method, &url);
        for (k, v) in h.headers.iter().flatten() {
            req = req.header(k, v);
        }
        if let Some(j) = &h.json {
            req = req.json(j);
        }
        if let Some(b) = &h.body {
            req = req.body(b.clone());
        }
        let resp = req.send().await.map_err(|e| format!("{url}: {e}"))?;
        let status = resp.status().as_u16();
        let body = resp
            .text()
            .await
            .map_err(|e| format!("{url}: http {status} but the body could not be read: {e}"))?;
        Ok(Observed {
            status: Some(status),
            exit: None,
            stdout: body.clone(),
            stderr: String::new(),
            value: body,
        })
    }

    async fn cli(&self, c: &CliStep) -> Result<Observed, String> {
        let bin = self.target.app_bin.as_ref().ok_or("APP_BIN is not set")?;
        let mut cmd = tokio::process::Command::new(bin);
        cmd.args(&c.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = crate::sys::lifeline::spawn_tokio(cmd)
            .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
        if let Some(mut stdin) = child.stdin.take() {
            let input = c.stdin.clone().unwrap_or_default();
            // A program that exits without reading its stdin is not an error.
            let _ = stdin.write_all(input.as_bytes()).await;
        }
        let out = tokio::time::timeout(CLI_DEADLINE, child.wait_with_output())
            .await
            .map_err(|_| format!("{} did not exit within {CLI_DEADLINE:?}", bin.display()))?
            .map_err(|e| format!("waiting for {}: {e}", bin.display()))?;
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        Ok(Observed {
            status: None,
            exit: Some(out.status.code().unwrap_or(-1)),
            stdout: stdout.clone(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            value: stdout,
        })
    }

    /// The one browser of this flow, started at the first browser step.
    async fn ensure_browser(&mut self) -> Result<(), String> {
        if self.browser.is_none() {
            let opts = LaunchOptions {
                extension_dir: self.target.extension_dir.clone(),
                ..self.launch.clone()
            };
            self.browser = Some(Browser::launch(opts).await.map_err(|e| e.to_string())?);
        }
        Ok(())
    }

    /// Run a browser action; `Some(value)` for the actions that read one.
    async fn browser_step(&mut self, b: &BrowserStep) -> Result<Option<String>, String> {
        let url = match b {
            BrowserStep::Goto(p) => Some(self.url(p)?),
            _ => None,
        };
        let Some(br) = self.browser.as_mut() else {
            return Err("the browser is not running".into());
        };
        let e = |e: crate::world::browser::BrowserError| e.to_string();
        Ok(match b {
            BrowserStep::Goto(_) => {
                br.goto(url.as_deref().unwrap_or_default())
                    .await
                    .map_err(e)?;
                None
            }
            BrowserStep::Click(s) => {
                br.click(s).await.map_err(e)?;
                None
            }
            BrowserStep::Type(t) => {
                br.type_text(&t.selector, &t.text).await.map_err(e)?;
                None
            }
            BrowserStep::WaitFor(s) => {
                br.wait_for(s).await.map_err(e)?;
                None
            }
            BrowserStep::Text(s) => Some(br.text(s).await.map_err(e)?),
            BrowserStep::Count(s) => Some(br.count(s).await.map_err(e)?.to_string()),
            BrowserStep::Badge(_) => Some(br.badge().await.map_err(e)?),
        })
    }
}

fn millis(since: Instant) -> String {
    format!("{} ms", since.elapsed().as_millis())
}

/// How a step is named in output: its kind and what it acts on.
pub fn label(a: &Action) -> String {
    match a {
        Action::Http(h) => format!("http {} {}", h.method.to_uppercase(), h.path),
        Action::Cli(c) => format!("cli {}", shell_words::join(&c.args))
            .trim_end()
            .into(),
        Action::Browser(b) => match b {
            BrowserStep::Goto(p) => format!("browser goto {p}"),
            BrowserStep::Click(s) => format!("browser click {s}"),
            BrowserStep::Type(t) => format!("browser type {}", t.selector),
            BrowserStep::WaitFor(s) => format!("browser wait_for {s}"),
            BrowserStep::Text(s) => format!("browser text {s}"),
            BrowserStep::Count(s) => format!("browser count {s}"),
            BrowserStep::Badge(_) => "browser badge".into(),
        },
    }
}
