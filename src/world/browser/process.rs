//! The Chromium process: spawned by us (not by chromiumoxide) so that it gets its own
//! process group and exactly our flags, and killed with its whole group by pid.
//!
//! Chromium forks a zygote, renderers, a GPU and a network process into its group;
//! killing only the browser pid leaves them to exit on their own time. Killing the
//! group and waiting until /proc shows none of it is what makes "no chromium survives"
//! true when [`ChromiumProcess`] is gone.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use super::BrowserError;

/// The flags verified in DESIGN.md, plus quiet defaults. (`--disable-crashpad-for-testing`
/// would keep the crash handler from starting, but Debian's build then crashes its
/// network service: "FD ownership violation".)
pub const FLAGS: &[&str] = &[
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-breakpad",
    "--mute-audio",
    "--hide-scrollbars",
    "--remote-debugging-address=127.0.0.1",
    "--remote-debugging-port=0",
];

/// Put into Chromium's environment with the browser's own temp root as value.
const MARKER_VAR: &str = "GAUNTLET_BROWSER_ROOT";

/// How long the group may take to vanish after SIGKILL before we stop waiting.
const REAP_LIMIT: Duration = Duration::from_secs(5);

/// How many times a Chromium that dies before its DevTools endpoint is started.
pub const START_ATTEMPTS: usize = 3;

/// Why one start did not give a browser: it died on its way up (worth another try), or
/// anything else (not).
enum Start {
    Died(String),
    Failed(BrowserError),
}

impl From<BrowserError> for Start {
    fn from(e: BrowserError) -> Start {
        Start::Failed(e)
    }
}

/// A running Chromium with its fresh profile. Dropping it kills the group and removes
/// the profile.
pub struct ChromiumProcess {
    child: Child,
    pgid: i32,
    /// Holds `profile/` and `chromium.stderr`; removed on drop.
    root: PathBuf,
    profile: PathBuf,
    binary: PathBuf,
    killed: bool,
}

impl ChromiumProcess {
    /// Start `binary` with a fresh profile under `tmp_root` (the system temp dir when
    /// `None`) and `extra` flags; wait up to `startup` for its DevTools endpoint.
    /// Returns the process and the browser's websocket URL.
    ///
    /// A Chromium that dies before its endpoint exists (a SIGSEGV or SIGTRAP at start,
    /// seen on a loaded 2-core machine) is started again, up to [`START_ATTEMPTS`] times
    /// in all, each with a fresh profile: such a crash happens before any page, so it
    /// says nothing of the test that asked for a browser, and counting it as the test's
    /// red run would blame the test for the machine.
    pub async fn start(
        binary: &Path,
        tmp_root: Option<&Path>,
        extra: &[String],
        startup: Duration,
    ) -> Result<(ChromiumProcess, String), BrowserError> {
        let mut crashes = Vec::new();
        loop {
            match Self::start_once(binary, tmp_root, extra, startup).await {
                Ok(started) => return Ok(started),
                Err(Start::Failed(e)) => return Err(e),
                Err(Start::Died(why)) => {
                    crashes.push(why);
                    if crashes.len() >= START_ATTEMPTS {
                        return Err(BrowserError::Start {
                            path: binary.to_path_buf(),
                            reason: format!(
                                "died before its DevTools endpoint was ready, {} times: {}",
                                crashes.len(),
                                crashes.join("; then ")
                            ),
                        });
                    }
                }
            }
        }
    }

    async fn start_once(
        binary: &Path,
        tmp_root: Option<&Path>,
        extra: &[String],
        startup: Duration,
    ) -> Result<(ChromiumProcess, String), Start> {
        if !binary.is_file() {
            return Err(BrowserError::NotFound {
                path: binary.to_path_buf(),
            }
            .into());
        }
        let root = fresh_dir(tmp_root)?;
        let profile = root.join("profile");
        let stderr_path = root.join("chromium.stderr");
        let start_err = |reason: String| BrowserError::Start {
            path: binary.to_path_buf(),
            reason,
        };
        let io = |p: &Path, e: std::io::Error| BrowserError::Io {
            path: p.to_path_buf(),
            reason: e.to_string(),
        };
        std::fs::create_dir(&profile).map_err(|e| io(&profile, e))?;
        let stderr = std::fs::File::create(&stderr_path).map_err(|e| io(&stderr_path, e))?;
        let mut cmd = Command::new(binary);
        cmd.args(FLAGS)
            .arg(format!("--user-data-dir={}", profile.display()))
            .args(extra)
            .arg("about:blank")
            // Only what Chromium needs: never the harness's environment (the key).
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("HOME", &root)
            .env("LANG", "C.UTF-8")
            // Found again by this even where it leaves the group (crashpad's handler
            // starts a session of its own); its crash database stays in `root`.
            .env(MARKER_VAR, &root)
            .env("XDG_CONFIG_HOME", root.join("config"))
            // Chromium puts its singleton socket under TMPDIR: keep it short and ours.
            .env("TMPDIR", &root)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr);
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let child = match crate::sys::lifeline::spawn_std(cmd) {
            Ok(c) => c,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&root);
                return Err(start_err(e.to_string()).into());
            }
        };
        let pgid = child.id() as i32;
        let mut proc = ChromiumProcess {
            child,
            pgid,
            root,
            profile,
            binary: binary.to_path_buf(),
            killed: false,
        };
        let ws = proc.devtools_url(startup).await?;
        Ok((proc, ws))
    }

    /// Chromium writes `DevToolsActivePort` (port, then path) into the profile once the
    /// endpoint listens; reading it avoids parsing a log line.
    async fn devtools_url(&mut self, startup: Duration) -> Result<String, Start> {
        let file = self.profile.join("DevToolsActivePort");
        let deadline = Instant::now() + startup;
        loop {
            if let Ok(text) = std::fs::read_to_string(&file) {
                let mut lines = text.lines();
                if let (Some(port), Some(path)) = (lines.next(), lines.next()) {
                    if port.trim().parse::<u16>().is_ok() && path.starts_with('/') {
                        return Ok(format!("ws://127.0.0.1:{}{}", port.trim(), path.trim()));
                    }
                }
            }
            match self.child.try_wait() {
                Ok(Some(status)) => {
                    let why = self.start_error(format!(
                        "exited ({status}) before its DevTools endpoint was ready"
                    ));
                    self.kill();
                    return Err(Start::Died(why.to_string()));
                }
                Ok(None) => {}
                Err(e) => {
                    return Err(Start::Failed(
                        self.start_error(format!("cannot wait for it: {e}")),
                    ))
                }
            }
            if Instant::now() >= deadline {
                return Err(Start::Failed(self.start_error(format!(
                    "no DevTools endpoint after {:.0?}",
                    startup
                ))));
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    fn start_error(&self, what: String) -> BrowserError {
        let tail = self.stderr_tail();
        BrowserError::Start {
            path: self.binary.clone(),
            reason: if tail.is_empty() {
                what
            } else {
                format!("{what}; stderr: {tail}")
            },
        }
    }

    /// The last lines Chromium wrote to stderr, minus the D-Bus noise every headless
    /// run on a machine without a session bus prints.
    pub fn stderr_tail(&self) -> String {
        let text = std::fs::read_to_string(self.root.join("chromium.stderr")).unwrap_or_default();
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| !l.contains("dbus/") && !l.trim().is_empty())
            .collect();
        lines[lines.len().saturating_sub(5)..].join(" | ")
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The fresh profile (`--user-data-dir`); gone once the process is killed.
    pub fn profile_dir(&self) -> &Path {
        &self.profile
    }

    /// SIGKILL the whole group, reap the browser, wait (bounded) until no member of the
    /// group is alive, remove the profile. Idempotent.
    pub fn kill(&mut self) {
        if self.killed {
            return;
        }
        self.killed = true;
        crate::sys::process::kill_group(self.pgid);
        let _ = self.child.kill();
        let _ = self.child.wait();
        let limit = Instant::now() + REAP_LIMIT;
        loop {
            let strays = marked(&self.root);
            for &pid in &strays {
                // SAFETY: kill has no memory-safety preconditions; ESRCH is fine.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
            }
            let done =
                strays.is_empty() && crate::sys::process::group_members(self.pgid).is_empty();
            if done || Instant::now() >= limit {
                break;
            }
            // Killed processes are gone within milliseconds; every flow waits for this.
            std::thread::sleep(Duration::from_millis(2));
        }
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

impl Drop for ChromiumProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Live processes carrying `GAUNTLET_BROWSER_ROOT=<root>` in their environment.
fn marked(root: &Path) -> Vec<i32> {
    use std::os::unix::ffi::OsStrExt;
    let mut entry = format!("{MARKER_VAR}=").into_bytes();
    entry.extend_from_slice(root.as_os_str().as_bytes());
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()))
        .filter(|pid| {
            let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| {
                    s.rfind(')')
                        .map(|i| s[i + 1..].trim_start().starts_with('Z'))
                })
                .unwrap_or(true);
            !zombie
                && std::fs::read(format!("/proc/{pid}/environ"))
                    .map(|env| env.split(|&b| b == 0).any(|e| e == entry.as_slice()))
                    .unwrap_or(false)
        })
        .collect()
}

/// Longest root that leaves room for Chromium's singleton socket
/// (`<root>/org.chromium.Chromium.XXXXXX/SingletonSocket`) inside the 108-byte limit of
/// a Unix socket path; a deeper root makes Chromium abort at start.
const MAX_ROOT_LEN: usize = 60;

/// A new, empty directory that no other browser of this or another process uses.
fn fresh_dir(tmp_root: Option<&Path>) -> Result<PathBuf, BrowserError> {
    static SEQ: AtomicU32 = AtomicU32::new(0);
    let preferred = tmp_root
        .map(Path::to_path_buf)
        .unwrap_or_else(std::env::temp_dir);
    // Trial temp dirs are deep; fall back to /tmp rather than crash Chromium.
    let base = if preferred.as_os_str().len() + 40 > MAX_ROOT_LEN {
        PathBuf::from("/tmp")
    } else {
        preferred
    };
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let dir = base.join(format!(
        "gauntlet-browser-{}-{}-{nanos}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&base)
        .and_then(|()| std::fs::create_dir(&dir))
        .map_err(|e| BrowserError::Io {
            path: dir.clone(),
            reason: e.to_string(),
        })?;
    Ok(dir)
}
