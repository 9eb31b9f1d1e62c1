//! A frozen app under test, running as a child process for the length of a trial.
//!
//! The app announces itself with one stdout line, `listening on
//! http://127.0.0.1:<port>` (it binds port 0, so only it knows the port). We start it
//! under `gauntlet-reap`, in a process group of its own, so that stopping it — or the
//! harness dying, however it dies — ends everything it started, wrappers, helpers and
//! detached daemons included, and so that its tree is held to a sandbox's tasks and
//! memory (`sys::sandbox::Limits`: a test may ask the app for anything, and outside a
//! sandbox nothing else bounds it); stream its output to capped log files (an app that
//! logs in a loop must not fill the disk or our memory); and refuse any address that is
//! not loopback.

use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::Duration;

use tokio::sync::oneshot;

use crate::sys::lifeline::ReapedProgram;
use crate::sys::process::{kill_group, spawn_capture, Capture};
use crate::sys::spawned::Spawned;

/// How long a stopped app's reaper gets to end the tree before its group is killed.
const REAPER_WAIT: Duration = Duration::from_secs(5);

/// Bytes kept per log stream.
pub const LOG_CAP: u64 = 8 << 20;

/// What the app prints, followed by its URL.
const LISTENING: &str = "listening on ";

/// A stdout line longer than this cannot be the listening line; it is not buffered.
const MAX_LINE: usize = 4096;

/// Lines of stderr quoted when the app dies before listening.
const TAIL_LINES: usize = 10;

/// A running app. Stopped by [`AppProcess::stop`], or (best-effort) on drop.
pub struct AppProcess {
    label: String,
    url: String,
    pid: u32,
    child: Option<Spawned>,
    stdout_log: PathBuf,
    stderr_log: PathBuf,
    logs: Vec<Capture>,
}

#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error("app binary {} does not exist: build it with `cargo test --no-run` (the build cargo nextest runs from)", path.display())]
    BinaryMissing { path: PathBuf },
    #[error("cannot create app log {}: {source}", path.display())]
    Log {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot spawn app {}: {source}", path.display())]
    Spawn {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("app {label} exited before listening ({}); last lines of stderr:\n{stderr_tail}", describe_exit(*exit_code, *signal))]
    ExitedEarly {
        label: String,
        exit_code: Option<i32>,
        signal: Option<i32>,
        stderr_tail: String,
    },
    #[error("app {label} printed no `listening on http://127.0.0.1:<port>` line within {} ms (stdout: {})", waited.as_millis(), stdout_log.display())]
    StartupTimeout {
        label: String,
        waited: Duration,
        stdout_log: PathBuf,
    },
    #[error("app {label} announced {url}, which is not http://127.0.0.1:<port>: only loopback is allowed")]
    NotLoopback { label: String, url: String },
}

impl AppProcess {
    /// Start `binary` with `args` (e.g. ["--mutant", "balance"]) in its own process
    /// group, stdout/stderr streamed to `log_dir/<label>.stdout` / `.stderr` (capped at
    /// 8 MiB each), and wait (at most `startup`) for the line
    /// `listening on http://127.0.0.1:<port>` on its stdout; return the URL.
    pub async fn start(
        binary: &Path,
        args: &[String],
        cwd: &Path,
        log_dir: &Path,
        label: &str,
        startup: Duration,
    ) -> Result<AppProcess, AppError> {
        let reaper = crate::binaries::bin_path(crate::sys::warm::REAPER);
        for bin in [binary, reaper.as_path()] {
            if !bin.is_file() {
                return Err(AppError::BinaryMissing {
                    path: bin.to_path_buf(),
                });
            }
        }
        let stdout_log = log_dir.join(format!("{label}.stdout"));
        let stderr_log = log_dir.join(format!("{label}.stderr"));
        let stdout_file = create_log(&stdout_log)?;
        let stderr_file = create_log(&stderr_log)?;

        // Dies with the harness even when no destructor runs (SIGKILL): the reaper is
        // told, and ends the app's whole tree. A scrubbed environment: the harness's
        // holds the provider key in byok mode.
        let reaped = crate::sys::lifeline::start_reaped(&ReapedProgram {
            program: binary,
            args,
            cwd,
            env: &[("PATH", crate::spec::app::APP_PATH), ("LANG", "C.UTF-8")],
            // A sandbox's share: the app serves one run's test (or the agent), which
            // may ask it for anything; its reaper says on its stderr (the log) when a
            // bound ended it.
            limits: crate::sys::sandbox::Limits::default(),
            report: None,
        })
        .await
        .map_err(|source| AppError::Spawn {
            path: binary.to_path_buf(),
            source,
        })?;
        // An app reads no input: it gets end of input, as from /dev/null.
        drop(reaped.stdin);
        let mut child = reaped.process;
        let pid = child.id();

        let (url_tx, mut url_rx) = oneshot::channel();
        let mut watcher = ListeningWatcher::new(url_tx);
        let logs = vec![
            spawn_capture(
                child.stdout().map_err(|source| AppError::Spawn {
                    path: binary.to_path_buf(),
                    source,
                })?,
                stdout_file,
                &stdout_log,
                LOG_CAP,
                move |chunk| watcher.feed(chunk),
            ),
            spawn_capture(
                child.stderr().map_err(|source| AppError::Spawn {
                    path: binary.to_path_buf(),
                    source,
                })?,
                stderr_file,
                &stderr_log,
                LOG_CAP,
                |_| {},
            ),
        ];
        let mut app = AppProcess {
            label: label.to_string(),
            url: String::new(),
            pid,
            child: Some(child),
            stdout_log,
            stderr_log,
            logs,
        };

        let timeout = tokio::time::sleep(startup);
        tokio::pin!(timeout);
        let mut stdout_open = true;
        let outcome = loop {
            let Some(child) = app.child.as_mut() else {
                break Startup::TimedOut;
            };
            tokio::select! {
                // Prefer the announcement: an app that prints it and then dies is caught
                // by the first request, not misreported as never listening.
                biased;
                url = &mut url_rx, if stdout_open => match url {
                    Ok(url) => break Startup::Announced(url),
                    // stdout closed without the line: wait for the exit or the timeout.
                    Err(_) => stdout_open = false,
                },
                status = child.wait() => break Startup::Exited(status),
                _ = &mut timeout => break Startup::TimedOut,
            }
        };

        match outcome {
            Startup::Announced(url) => match loopback_url(&url) {
                Some(url) => {
                    app.url = url;
                    Ok(app)
                }
                None => {
                    app.stop(log_dir).await;
                    Err(AppError::NotLoopback {
                        label: label.to_string(),
                        url,
                    })
                }
            },
            Startup::Exited(status) => {
                app.stop(log_dir).await;
                let (exit_code, signal) = exit_parts(status.ok());
                Err(AppError::ExitedEarly {
                    label: label.to_string(),
                    exit_code,
                    signal,
                    stderr_tail: tail_lines(&app.stderr_log, TAIL_LINES),
                })
            }
            Startup::TimedOut => {
                app.stop(log_dir).await;
                Err(AppError::StartupTimeout {
                    label: label.to_string(),
                    waited: startup,
                    stdout_log: app.stdout_log.clone(),
                })
            }
        }
    }

    /// The base URL the app announced, `http://127.0.0.1:<port>`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The label its logs are named after.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// The pid of the app's reaper, which leads the app's process group.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    pub fn stdout_log(&self) -> &Path {
        &self.stdout_log
    }

    pub fn stderr_log(&self) -> &Path {
        &self.stderr_log
    }

    /// Kill the group and wait; idempotent. Drop also kills (best-effort, sync).
    /// Returns the logs it closed, hashed, with paths relative to `rel_base` (the
    /// trial directory), so a record can cover them; empty on a second call.
    ///
    /// A log whose copier failed (a full disk) is left out: the app's logs are
    /// diagnostics, and no verdict depends on them.
    pub async fn stop(&mut self, rel_base: &Path) -> Vec<crate::evidence::RawFile> {
        if self.child.is_some() {
            self.terminate();
        }
        if let Some(mut child) = self.child.take() {
            // The reaper ends the app's tree and then itself; one that does not answer is
            // killed with its group. Reaped, so no zombie outlives the trial.
            if tokio::time::timeout(REAPER_WAIT, child.wait())
                .await
                .is_err()
            {
                self.kill();
                let _ = child.wait().await;
            }
        }
        let paths = [self.stdout_log.clone(), self.stderr_log.clone()];
        let logs = self.logs.drain(..).map(Capture::finish);
        let done = futures_util::future::join_all(logs).await;
        crate::sys::warm::REAPERS.replenish();
        done.into_iter()
            .zip(paths)
            .filter_map(|(c, path)| c.ok().map(|c| c.into_raw_file(&path, rel_base)))
            .collect()
    }

    fn kill(&self) {
        if let Ok(pgid) = i32::try_from(self.pid) {
            kill_group(pgid);
        }
    }

    /// Ask the reaper to end the app's tree (SIGTERM: what it is told when the harness
    /// dies, too).
    fn terminate(&mut self) {
        // Only a reaper still running: one already reaped may have a stranger's pid now.
        let running = self
            .child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)));
        if let Ok(pid) = i32::try_from(self.pid) {
            if running && pid > 1 {
                // SAFETY: kill has no memory-safety preconditions.
                unsafe {
                    libc::kill(pid, libc::SIGTERM);
                }
            }
        }
    }
}

impl Drop for AppProcess {
    fn drop(&mut self) {
        if self.child.is_some() {
            // No waiting here: the reaper ends the tree, detached daemons included (a
            // group kill now would kill the reaper before it found them). Dropping
            // `logs` cancels the copiers.
            self.terminate();
        }
        if let Some(child) = self.child.take() {
            child.reap_when_ended();
        }
    }
}

enum Startup {
    Announced(String),
    Exited(std::io::Result<ExitStatus>),
    TimedOut,
}

/// Watches stdout chunks for the first `listening on <url>` line, holding at most one
/// line of bounded length.
struct ListeningWatcher {
    line: Vec<u8>,
    /// The current line outgrew MAX_LINE: skip to the next newline.
    skipping: bool,
    found: Option<oneshot::Sender<String>>,
}

impl ListeningWatcher {
    fn new(found: oneshot::Sender<String>) -> Self {
        ListeningWatcher {
            line: Vec::new(),
            skipping: false,
            found: Some(found),
        }
    }

    fn feed(&mut self, chunk: &[u8]) {
        if self.found.is_none() {
            return;
        }
        for &b in chunk {
            if b == b'\n' {
                if !self.skipping {
                    self.line_done();
                }
                self.line.clear();
                self.skipping = false;
                if self.found.is_none() {
                    return;
                }
            } else if !self.skipping {
                if self.line.len() >= MAX_LINE {
                    self.skipping = true;
                    self.line.clear();
                } else {
                    self.line.push(b);
                }
            }
        }
    }

    fn line_done(&mut self) {
        let line = String::from_utf8_lossy(&self.line);
        if let Some(url) = line.trim().strip_prefix(LISTENING) {
            if let Some(tx) = self.found.take() {
                let _ = tx.send(url.trim().to_string());
            }
        }
    }
}

/// `url` normalised to `http://127.0.0.1:<port>` if it is exactly that (a trailing
/// slash allowed), else `None`.
fn loopback_url(url: &str) -> Option<String> {
    let rest = url.strip_prefix("http://127.0.0.1:")?;
    let port = rest.strip_suffix('/').unwrap_or(rest);
    let port: u16 = port.parse().ok()?;
    (port != 0).then(|| format!("http://127.0.0.1:{port}"))
}

fn exit_parts(status: Option<ExitStatus>) -> (Option<i32>, Option<i32>) {
    use std::os::unix::process::ExitStatusExt;
    match status {
        Some(s) => (s.code(), s.signal()),
        None => (None, None),
    }
}

fn describe_exit(code: Option<i32>, signal: Option<i32>) -> String {
    match (code, signal) {
        (Some(code), _) => format!("exit code {code}"),
        (None, Some(sig)) => format!("killed by signal {sig}"),
        (None, None) => "exit status unknown".to_string(),
    }
}

fn create_log(path: &Path) -> Result<tokio::fs::File, AppError> {
    crate::sys::process::create_capture_file(path).map_err(|source| AppError::Log {
        path: path.to_path_buf(),
        source,
    })
}

/// The last `n` lines of a log file (read from its last 8 KiB), for error messages.
fn tail_lines(path: &Path, n: usize) -> String {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut file) = std::fs::File::open(path) else {
        return format!("(cannot read {})", path.display());
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = file.seek(SeekFrom::Start(len.saturating_sub(8192)));
    let mut bytes = Vec::new();
    let _ = file.read_to_end(&mut bytes);
    let text = String::from_utf8_lossy(&bytes);
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_urls() {
        assert_eq!(
            loopback_url("http://127.0.0.1:4321").as_deref(),
            Some("http://127.0.0.1:4321")
        );
        assert_eq!(
            loopback_url("http://127.0.0.1:4321/").as_deref(),
            Some("http://127.0.0.1:4321")
        );
        assert_eq!(loopback_url("http://0.0.0.0:4321"), None);
        assert_eq!(loopback_url("http://127.0.0.1.evil:80"), None);
        assert_eq!(loopback_url("http://127.0.0.1:0"), None);
        assert_eq!(loopback_url("https://127.0.0.1:443"), None);
    }

    #[test]
    fn watcher_finds_line_split_across_chunks() {
        let (tx, mut rx) = oneshot::channel();
        let mut w = ListeningWatcher::new(tx);
        w.feed(b"starting\nlisten");
        assert!(rx.try_recv().is_err());
        w.feed(b"ing on http://127.0.0.1:99\r\nmore\n");
        assert_eq!(rx.try_recv().as_deref(), Ok("http://127.0.0.1:99"));
    }

    #[test]
    fn watcher_skips_overlong_lines() {
        let (tx, mut rx) = oneshot::channel();
        let mut w = ListeningWatcher::new(tx);
        let mut long = vec![b'x'; MAX_LINE + 10];
        long.extend_from_slice(b"listening on http://127.0.0.1:1\n");
        w.feed(&long);
        assert!(rx.try_recv().is_err());
        w.feed(b"listening on http://127.0.0.1:2\n");
        assert_eq!(rx.try_recv().as_deref(), Ok("http://127.0.0.1:2"));
    }
}
