//! A real browser for browser trials: Debian's Chromium, headless, driven over CDP
//! (chromiumoxide), one per trial or flow run, with a fresh profile, killed with its
//! whole process group when done. A page without an extension gets Chromium's
//! headless shell where it is installed (the same release, cheaper to start).
//!
//! The driver is deliberately small — navigate, click, type, wait, read text, count,
//! read the extension's action badge — because it is what agents and test flows get,
//! and every one of these must fail with a reason a reader can act on (which selector,
//! which URL, which manifest field), never hang: each call has a deadline.

mod activity;
mod extension;
mod process;
mod worker;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chromiumoxide::cdp::browser_protocol::input::{
    DispatchKeyEventParams, DispatchKeyEventType, DispatchMouseEventParams, DispatchMouseEventType,
    InsertTextParams, MouseButton,
};
use chromiumoxide::cdp::browser_protocol::log::{EventEntryAdded, LogEntryLevel};
use chromiumoxide::cdp::browser_protocol::target::{
    CloseTargetParams, GetTargetsParams, TargetInfo,
};
use chromiumoxide::cdp::js_protocol::runtime::{
    ConsoleApiCalledType, EvaluateParams, EventConsoleApiCalled, EventExceptionThrown, RemoteObject,
};
use chromiumoxide::Page;
use futures_util::StreamExt;
use tokio::task::JoinHandle;

pub use extension::Extension;
pub use process::ChromiumProcess;

pub use crate::binaries::DEFAULT_CHROMIUM;

/// How often a wait re-checks: one CDP round trip each, cheap next to a step.
const POLL: Duration = Duration::from_millis(10);

/// How much longer than its slice an in-page wait's answer may take to arrive.
const ANSWER_GRACE: Duration = Duration::from_millis(500);

#[derive(Debug, thiserror::Error)]
pub enum BrowserError {
    #[error("chromium not found at {path}: install Debian's `chromium` package or set GAUNTLET_CHROMIUM")]
    NotFound { path: PathBuf },
    #[error("chromium {path} failed to start: {reason}")]
    Start { path: PathBuf, reason: String },
    #[error("invalid extension: {file}: {field}: {reason}")]
    Manifest {
        file: PathBuf,
        field: String,
        reason: String,
    },
    #[error("extension {dir} did not load: {reason}")]
    ExtensionNotLoaded { dir: PathBuf, reason: String },
    #[error("page {url} did not load within {timeout:?}")]
    GotoTimeout { url: String, timeout: Duration },
    #[error("page {url} failed to load: {reason}")]
    Goto { url: String, reason: String },
    #[error("no element matches `{selector}`")]
    NoMatch { selector: String },
    #[error("nothing matched `{selector}` {}", match idle {
        Some(q) => format!("before the page went idle ({q:?} without a DOM change, request or timer)"),
        None => format!("within {timeout:?}"),
    })]
    WaitTimeout {
        selector: String,
        timeout: Duration,
        /// Set when the wait ended early because the page had gone idle.
        idle: Option<Duration>,
    },
    #[error("`{selector}`: {reason}")]
    Selector { selector: String, reason: String },
    #[error("badge: {0}")]
    Badge(String),
    #[error("browser: {what}: {reason}")]
    Cdp { what: String, reason: String },
    #[error("{path}: {reason}")]
    Io { path: PathBuf, reason: String },
}

fn cdp(what: &str) -> impl FnOnce(chromiumoxide::error::CdpError) -> BrowserError + '_ {
    move |e| BrowserError::Cdp {
        what: what.into(),
        reason: e.to_string(),
    }
}

/// How to launch. `Default` gives the deadlines a trial uses.
#[derive(Debug, Clone)]
pub struct LaunchOptions {
    /// An unpacked MV3 extension to load (validated first).
    pub extension_dir: Option<PathBuf>,
    /// The Chromium binary; `None`: [`chromium_path`] with an extension, else
    /// [`crate::binaries::chromium_without_extensions`] (the headless shell, which
    /// cannot load one).
    pub chromium: Option<PathBuf>,
    /// Where the fresh profile is made; `None`: the system temp dir.
    pub tmp_root: Option<PathBuf>,
    /// Until the DevTools endpoint (and the extension's worker) is up.
    pub startup_timeout: Duration,
    /// Until a navigation's load event.
    pub goto_timeout: Duration,
    /// `wait_for`, and the wait before click/type find their element.
    pub wait_timeout: Duration,
}

impl Default for LaunchOptions {
    fn default() -> Self {
        LaunchOptions {
            extension_dir: None,
            chromium: None,
            tmp_root: None,
            startup_timeout: Duration::from_secs(30),
            goto_timeout: Duration::from_secs(15),
            wait_timeout: Duration::from_secs(5),
        }
    }
}

/// The Chromium binary gauntlet would use: `GAUNTLET_CHROMIUM`, or Debian's
/// ([`crate::binaries::chromium`]).
pub fn chromium_path() -> PathBuf {
    crate::binaries::chromium()
}

/// The Chromium binary, if it exists and is executable: decided at list time, so that
/// browser trials on a machine without it are ignored with a reason.
pub fn chromium_available() -> Option<PathBuf> {
    let p = chromium_path();
    crate::binaries::is_executable(&p).then_some(p)
}

/// Before an agent meets a browser trial: start the browser the trial's tests will get
/// (with the target's extension) and load the target's page once. A broken extension,
/// a browser that cannot start, or a page that never loads is then the trial's setup
/// error, naming its cause, instead of an agent failing in ways nobody can read.
///
/// The profile goes to `/dev/shm` where there is one: a profile is a few hundred
/// files, and removing them from a disk mounted with `discard` takes longer than the
/// whole check (docs/test-flows.md, "What a browser step costs").
pub async fn preflight(
    target_env: &std::collections::BTreeMap<String, String>,
) -> Result<(), BrowserError> {
    let shm = Path::new("/dev/shm");
    let browser = Browser::launch(LaunchOptions {
        extension_dir: target_env.get("EXTENSION_DIR").map(PathBuf::from),
        tmp_root: shm.is_dir().then(|| shm.to_path_buf()),
        ..LaunchOptions::default()
    })
    .await?;
    let loaded = match target_env.get("APP_URL") {
        Some(url) => browser.goto(url).await,
        None => Ok(()),
    };
    browser.close().await;
    loaded
}

/// One running browser with one tab under test.
pub struct Browser {
    // Field order is drop order: CDP first, then the process.
    page: Page,
    /// Where badges are read: the extension's service worker, attached at launch.
    badge_worker: Option<worker::WorkerSession>,
    cdp: chromiumoxide::Browser,
    /// The browser's DevTools endpoint, where the worker's own endpoint is found.
    devtools_ws: String,
    tasks: Vec<JoinHandle<()>>,
    console: Arc<Mutex<Vec<String>>>,
    extension: Option<Extension>,
    opts: LaunchOptions,
    process: ChromiumProcess,
}

impl Browser {
    /// Validate the extension (if any), start Chromium, attach over CDP, open the tab
    /// under test, and — with an extension that has a service worker — wait until the
    /// worker runs, so a broken extension fails here and not at the first badge read.
    pub async fn launch(opts: LaunchOptions) -> Result<Browser, BrowserError> {
        let extension = opts
            .extension_dir
            .as_deref()
            .map(Extension::load)
            .transpose()?;
        let binary = match (&opts.chromium, &extension) {
            (Some(named), _) => named.clone(),
            (None, Some(_)) => chromium_path(),
            // Every flow run and agent page without an extension starts a browser of
            // its own: the headless shell makes that start cheap.
            (None, None) => crate::binaries::chromium_without_extensions(),
        };
        let mut extra = Vec::new();
        if let Some(ext) = &extension {
            let dir = ext.dir.display();
            extra.push(format!("--load-extension={dir}"));
            extra.push(format!("--disable-extensions-except={dir}"));
        }
        if binary == Path::new(crate::binaries::DEFAULT_HEADLESS_SHELL) {
            // The shell's pages in its own process, with no zygote, renderer or
            // network service to start, so a flow run takes less wall and CPU
            // (docs/test-flows.md, "What a browser step costs"). The full browser gets
            // slower with it, and its extensions need their processes.
            extra.push("--single-process".to_string());
        }
        let (process, ws) = ChromiumProcess::start(
            &binary,
            opts.tmp_root.as_deref(),
            &extra,
            opts.startup_timeout,
        )
        .await?;
        let (cdp_browser, mut handler) = chromiumoxide::Browser::connect(ws.clone())
            .await
            .map_err(|e| BrowserError::Start {
                path: binary.clone(),
                reason: format!("cannot attach to {ws}: {e}"),
            })?;
        let mut tasks = vec![tokio::spawn(async move {
            // A connection error ends the session; commands then fail with a reason.
            while let Some(Ok(())) = handler.next().await {}
        })];
        let (page, alone) = first_page(&cdp_browser, opts.startup_timeout).await?;
        // Without an extension (which may open tabs of its own) Chromium's first tab is
        // the only one when it is the only one attached: no need to ask for every target.
        if !alone || extension.is_some() {
            close_other_pages(&cdp_browser, &page).await;
        }
        // Both must hold before the first navigation, and neither waits on the other.
        let console = Arc::new(Mutex::new(Vec::new()));
        let (tracker, listeners) = tokio::join!(
            page.evaluate_on_new_document(activity::TRACKER),
            console_listeners(&page, &console)
        );
        tracker.map_err(cdp("install the activity tracker"))?;
        tasks.extend(listeners?);
        let mut browser = Browser {
            page,
            badge_worker: None,
            cdp: cdp_browser,
            devtools_ws: ws,
            tasks,
            console,
            extension,
            opts,
            process,
        };
        if let Some(ext) = browser.extension.clone() {
            if ext.service_worker.is_some() {
                let worker = browser.wait_for_worker(&ext).await?;
                // Attached now, not at the first badge read: a worker with DevTools
                // attached is not stopped when idle (Chromium stops an idle extension
                // worker after about 30 s, and an agent may think longer than that).
                let session = worker::WorkerSession::connect(&browser.devtools_ws, &worker)
                    .await
                    .map_err(|e| BrowserError::ExtensionNotLoaded {
                        dir: ext.dir.clone(),
                        reason: e.to_string(),
                    })?;
                browser.badge_worker = Some(session);
            }
        }
        Ok(browser)
    }

    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    pub fn profile_dir(&self) -> &Path {
        self.process.profile_dir()
    }

    /// Navigate the tab and wait for its load event, at most `goto_timeout`.
    pub async fn goto(&self, url: &str) -> Result<(), BrowserError> {
        match tokio::time::timeout(self.opts.goto_timeout, self.page.goto(url)).await {
            Err(_) => Err(BrowserError::GotoTimeout {
                url: url.into(),
                timeout: self.opts.goto_timeout,
            }),
            Ok(Err(e)) => Err(BrowserError::Goto {
                url: url.into(),
                reason: e.to_string(),
            }),
            Ok(Ok(_)) => Ok(()),
        }
    }

    /// The current URL of the tab under test.
    pub async fn url(&self) -> Result<String, BrowserError> {
        match eval_raw(&self.page, "location.href").await {
            Ok(serde_json::Value::String(u)) => Ok(u),
            Ok(other) => Err(BrowserError::Cdp {
                what: "read the url".into(),
                reason: format!("got {other}"),
            }),
            Err(reason) => Err(BrowserError::Cdp {
                what: "read the url".into(),
                reason: reason.to_string(),
            }),
        }
    }

    /// Click the first element matching `selector` (waiting for it up to
    /// `wait_timeout`), with real mouse events at its centre.
    ///
    /// The element is found, scrolled into view and measured by one script, and the
    /// three mouse events are sent back to back: each CDP round trip is a wake-up of
    /// the browser and of us, and a click used to take seven of them (and a rendering
    /// frame for an `IntersectionObserver`; docs/test-flows.md, "What a browser step
    /// costs").
    pub async fn click(&self, selector: &str) -> Result<(), BrowserError> {
        self.wait_for(selector).await?;
        let (x, y) = self.centre_of(selector).await?;
        let event = |kind| {
            DispatchMouseEventParams::builder()
                .r#type(kind)
                .x(x)
                .y(y)
                .button(MouseButton::Left)
                .click_count(1)
                .build()
        };
        let events = [
            DispatchMouseEventType::MouseMoved,
            DispatchMouseEventType::MousePressed,
            DispatchMouseEventType::MouseReleased,
        ]
        .map(event);
        let fail = |reason: String| BrowserError::Selector {
            selector: selector.into(),
            reason: format!("cannot click: {reason}"),
        };
        let mut sent = Vec::with_capacity(events.len());
        for e in events {
            sent.push(self.page.execute(e.map_err(fail)?));
        }
        for done in futures_util::future::join_all(sent).await {
            done.map_err(|e| fail(e.to_string()))?;
        }
        Ok(())
    }

    /// The viewport coordinates of the centre of the first match's first box with an
    /// area, after scrolling it into view when any of it is outside the viewport.
    async fn centre_of(&self, selector: &str) -> Result<(f64, f64), BrowserError> {
        let sel = js_string(selector);
        let script = format!(
            r#"(() => {{
  const e = document.querySelector({sel});
  if (e === null) return {{missing: true}};
  const box = () => Array.from(e.getClientRects()).find(r => r.width * r.height > 1);
  let r = box();
  if (r === undefined) return {{error: "it has no visible box (hidden, or not rendered)"}};
  if (r.top < 0 || r.left < 0 || r.bottom > innerHeight || r.right > innerWidth) {{
    e.scrollIntoView({{block: "center", inline: "center", behavior: "instant"}});
    r = box();
    if (r === undefined) return {{error: "it has no visible box after scrolling"}};
  }}
  return {{x: r.left + r.width / 2, y: r.top + r.height / 2}};
}})()"#
        );
        let v = self.eval_in_page(selector, &script).await?;
        if v.get("missing").is_some() {
            return Err(BrowserError::NoMatch {
                selector: selector.into(),
            });
        }
        match (
            v.get("x").and_then(|x| x.as_f64()),
            v.get("y").and_then(|y| y.as_f64()),
        ) {
            (Some(x), Some(y)) => Ok((x, y)),
            _ => Err(BrowserError::Selector {
                selector: selector.into(),
                reason: format!(
                    "cannot click: {}",
                    v.get("error")
                        .and_then(|e| e.as_str())
                        .unwrap_or("no position")
                ),
            }),
        }
    }

    /// Focus the first element matching `selector` and type `text` as key events.
    ///
    /// The events are sent back to back and their answers awaited together: CDP runs a
    /// session's commands in the order they arrive and delivers input to the page in
    /// order, so the page sees the same keystrokes, without a round trip between each
    /// (what a round trip per key cost: docs/test-flows.md, "What a browser step
    /// costs").
    pub async fn type_text(&self, selector: &str, text: &str) -> Result<(), BrowserError> {
        self.wait_for(selector).await?;
        let fail = |reason: String| BrowserError::Selector {
            selector: selector.into(),
            reason: format!("cannot type into it: {reason}"),
        };
        let sel = js_string(selector);
        let focused = self
            .eval_in_page(
                selector,
                &format!(
                    "(() => {{ const e = document.querySelector({sel}); if (e === null) return false; e.focus(); return true; }})()"
                ),
            )
            .await?;
        if focused != serde_json::Value::Bool(true) {
            return Err(BrowserError::NoMatch {
                selector: selector.into(),
            });
        }
        let mut sent = Vec::new();
        for c in text.chars() {
            for input in keystroke(c).map_err(&fail)? {
                sent.push(async move {
                    match input {
                        Keystroke::Key(p) => self.page.execute(*p).await.map(drop),
                        Keystroke::Text(p) => self.page.execute(p).await.map(drop),
                    }
                });
            }
        }
        for done in futures_util::future::join_all(sent).await {
            done.map_err(|e| fail(e.to_string()))?;
        }
        Ok(())
    }

    /// Wait until `selector` matches something: at most `wait_timeout`, and no longer
    /// than the tab stays idle ([`Browser::quiet_for`]) — a page with nothing left to
    /// do will not make it match later.
    pub async fn wait_for(&self, selector: &str) -> Result<(), BrowserError> {
        let started = Instant::now();
        let deadline = started + self.opts.wait_timeout;
        loop {
            if self.matches_within(selector, POLL).await? {
                return Ok(());
            }
            let idle = self.is_idle(started).await;
            if idle || Instant::now() >= deadline {
                return Err(BrowserError::WaitTimeout {
                    selector: selector.into(),
                    timeout: self.opts.wait_timeout,
                    idle: idle.then(|| self.quiet_for()),
                });
            }
        }
    }

    /// Whether `selector` matches something now or within `slice`. The page answers
    /// the moment a DOM change makes it match (a `MutationObserver`), instead of at the
    /// next of our polls: a wait used to end up to a poll late, on every one of the few
    /// dozen waits of a browser trial (docs/test-flows.md, "What a browser step
    /// costs"). The slice ends on the browser's own timer
    /// (`AbortSignal.timeout`), which the page's activity tracker does not count as the
    /// page's work. While a navigation replaces the document the evaluation fails; a
    /// plain count then says whether the new one matches.
    async fn matches_within(&self, selector: &str, slice: Duration) -> Result<bool, BrowserError> {
        let sel = js_string(selector);
        let ms = slice.as_millis();
        let script = format!(
            r#"new Promise((resolve) => {{
  const sel = {sel};
  if (document.querySelector(sel) !== null) return resolve(true);
  const seen = new MutationObserver(() => {{
    if (document.querySelector(sel) !== null) {{ seen.disconnect(); resolve(true); }}
  }});
  seen.observe(document, {{subtree: true, childList: true, attributes: true, characterData: true}});
  AbortSignal.timeout({ms}).addEventListener("abort", () => {{ seen.disconnect(); resolve(false); }});
}})"#
        );
        // The page answers within the slice; a document replaced mid-wait may never
        // answer, so the wait does not rest on it either.
        let answer =
            tokio::time::timeout(slice + ANSWER_GRACE, eval_raw(&self.page, &script)).await;
        match answer {
            Ok(Ok(v)) => Ok(v == serde_json::Value::Bool(true)),
            Ok(Err(EvalFailure::Threw(reason))) => Err(BrowserError::Selector {
                selector: selector.into(),
                reason,
            }),
            Ok(Err(EvalFailure::Unanswered(_))) | Err(_) => Ok(self.count(selector).await? > 0),
        }
    }

    /// How long the tab must have done nothing (no DOM change, no request in flight, no
    /// short timer pending) before a read or wait that has not held stops waiting. An
    /// extension's own timers run where the page cannot see them, so with one loaded
    /// the window is longer.
    pub fn quiet_for(&self) -> Duration {
        if self.extension.is_some() {
            activity::QUIET_WITH_EXTENSION
        } else {
            activity::QUIET
        }
    }

    /// Whether the tab has been idle for [`Browser::quiet_for`] since `since` (the
    /// start of the step asking): quiet from before the step began does not count, as
    /// the step's own action may not have reached the page yet. A page the tracker is
    /// not in (an error page, a document still loading) is never idle, so its reads
    /// wait their whole deadline as before.
    pub async fn is_idle(&self, since: Instant) -> bool {
        let quiet = self.quiet_for();
        if since.elapsed() < quiet {
            return false;
        }
        match eval_raw(&self.page, activity::QUERY).await {
            Ok(v) => v
                .as_f64()
                .is_some_and(|ms| ms >= quiet.as_secs_f64() * 1000.0),
            Err(_) => false,
        }
    }

    /// The `innerText` of the first match, trimmed.
    pub async fn text(&self, selector: &str) -> Result<String, BrowserError> {
        let sel = js_string(selector);
        let v = self
            .eval_in_page(
                selector,
                &format!("(() => {{ const e = document.querySelector({sel}); return e === null ? null : e.innerText; }})()"),
            )
            .await?;
        match v {
            serde_json::Value::String(s) => Ok(s.trim().to_string()),
            _ => Err(BrowserError::NoMatch {
                selector: selector.into(),
            }),
        }
    }

    /// How many elements match `selector`.
    pub async fn count(&self, selector: &str) -> Result<usize, BrowserError> {
        let sel = js_string(selector);
        let v = self
            .eval_in_page(
                selector,
                &format!("document.querySelectorAll({sel}).length"),
            )
            .await?;
        v.as_u64()
            .map(|n| n as usize)
            .ok_or_else(|| BrowserError::Selector {
                selector: selector.into(),
                reason: format!("count is not a number: {v}"),
            })
    }

    /// The loaded extension's action badge text for the tab under test.
    ///
    /// Badges are not in the DOM: they are read the way the extension itself would,
    /// with `chrome.action.getBadgeText({tabId})`, in the extension's service worker
    /// (`worker::WorkerSession`). The tab id is found with `chrome.tabs.query`,
    /// matching the tab's URL. The worker is attached at launch, which keeps it
    /// running; one that stopped all the same (and was started again by the
    /// extension's next event) is found again, once.
    pub async fn badge(&mut self) -> Result<String, BrowserError> {
        let page_url = self.url().await?;
        let script = format!(
            r#"(async () => {{
  if (!globalThis.chrome || !chrome.tabs) return {{error: "chrome.tabs is not available to the extension's service worker"}};
  if (!chrome.action) return {{error: "the extension has no action (manifest.json declares no `action`), so it has no badge"}};
  const want = {url};
  const tabs = await chrome.tabs.query({{}});
  let tab = tabs.find(t => t.url === want || t.pendingUrl === want);
  if (!tab && tabs.length === 1) tab = tabs[0];
  if (!tab) return {{error: "no tab shows " + want + " (" + tabs.length + " tabs)"}};
  return {{text: await chrome.action.getBadgeText({{tabId: tab.id}})}};
}})()"#,
            url = js_string(&page_url)
        );
        // A read is a few round trips; a worker that does not answer is not waited
        // for longer than a wait for an element is.
        let deadline = self.opts.wait_timeout;
        let mut attempt = 0;
        let out = loop {
            attempt += 1;
            let session = self.badge_worker().await?;
            match session.evaluate(&script, deadline).await {
                Ok(v) => break v,
                // The worker stopped, and its connection with it: find it again, once.
                Err(worker::WorkerError::Closed(_)) if attempt < 2 => self.badge_worker = None,
                Err(e) => {
                    self.badge_worker = None;
                    return Err(BrowserError::Badge(format!(
                        "reading the badge failed: {e}"
                    )));
                }
            }
        };
        match (out.get("text"), out.get("error")) {
            (Some(serde_json::Value::String(t)), _) => Ok(t.clone()),
            (_, Some(e)) => Err(BrowserError::Badge(e.as_str().unwrap_or("").to_string())),
            _ => Err(BrowserError::Badge(format!("unexpected answer: {out}"))),
        }
    }

    /// The connection to the extension's running service worker; found again when the
    /// one made at launch has ended.
    async fn badge_worker(&mut self) -> Result<&mut worker::WorkerSession, BrowserError> {
        if self.badge_worker.is_none() {
            let Some(ext) = self.extension.clone() else {
                return Err(BrowserError::Badge(
                    "no extension is loaded (set EXTENSION_DIR)".into(),
                ));
            };
            if ext.service_worker.is_none() {
                return Err(BrowserError::Badge(format!(
                    "{}: declares no `background.service_worker`, so nothing of the extension runs to set a badge",
                    ext.dir.join("manifest.json").display()
                )));
            }
            let target = self.worker_target(&ext).await?.ok_or_else(|| {
                BrowserError::Badge("the extension's service worker is not running".into())
            })?;
            let session =
                worker::WorkerSession::connect(&self.devtools_ws, target.target_id.as_ref())
                    .await
                    .map_err(|e| BrowserError::Badge(e.to_string()))?;
            self.badge_worker = Some(session);
        }
        self.badge_worker
            .as_mut()
            .ok_or_else(|| BrowserError::Badge("no service worker session".into()))
    }

    /// Console errors, uncaught exceptions and error log entries of the tab so far.
    pub fn console_errors(&self) -> Vec<String> {
        self.console.lock().map(|c| c.clone()).unwrap_or_default()
    }

    /// Kill the browser (its whole process group) and remove the profile.
    pub async fn close(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
        self.process.kill();
    }

    /// Until the extension's service worker runs; its target id.
    async fn wait_for_worker(&self, ext: &Extension) -> Result<String, BrowserError> {
        let deadline = Instant::now() + self.opts.startup_timeout;
        loop {
            if let Some(t) = self.worker_target(ext).await? {
                if extension_id_of(&t.url).is_some() {
                    return Ok(t.target_id.as_ref().to_string());
                }
            }
            if Instant::now() >= deadline {
                let tail = self.process.stderr_tail();
                return Err(BrowserError::ExtensionNotLoaded {
                    dir: ext.dir.clone(),
                    reason: format!(
                        "its service worker did not start within {:?}{}",
                        self.opts.startup_timeout,
                        if tail.is_empty() {
                            String::new()
                        } else {
                            format!("; chromium stderr: {tail}")
                        }
                    ),
                });
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// The extension's service worker target, if it runs now.
    async fn worker_target(&self, ext: &Extension) -> Result<Option<TargetInfo>, BrowserError> {
        let Some(sw) = &ext.service_worker else {
            return Ok(None);
        };
        let targets = self
            .cdp
            .execute(GetTargetsParams::default())
            .await
            .map_err(cdp("list targets"))?
            .result
            .target_infos;
        let suffix = format!("/{}", sw.trim_start_matches("./"));
        Ok(targets.into_iter().find(|t| {
            t.r#type == "service_worker"
                && t.url.starts_with("chrome-extension://")
                && t.url.ends_with(&suffix)
        }))
    }

    /// Evaluate `expr` in the tab; a thrown exception (a malformed selector) names the
    /// selector it was about.
    async fn eval_in_page(
        &self,
        selector: &str,
        expr: &str,
    ) -> Result<serde_json::Value, BrowserError> {
        eval_raw(&self.page, expr)
            .await
            .map_err(|e| BrowserError::Selector {
                selector: selector.into(),
                reason: e.to_string(),
            })
    }
}

/// Why an evaluation in the tab gave no value.
#[derive(Debug, thiserror::Error)]
enum EvalFailure {
    /// The script threw (a malformed selector): its description.
    #[error("{0}")]
    Threw(String),
    /// No answer came: the protocol failed, or a navigation replaced the document.
    #[error("{0}")]
    Unanswered(String),
}

/// `Runtime.evaluate` sent as is: no execution context id, so it runs in whatever
/// main-world context the top frame has now, never in a cached one a navigation
/// replaced. Promises are awaited; a thrown exception is [`EvalFailure::Threw`], with
/// its description.
async fn eval_raw(page: &Page, expr: &str) -> Result<serde_json::Value, EvalFailure> {
    let params = EvaluateParams::builder()
        .expression(expr)
        .await_promise(true)
        .return_by_value(true)
        .build()
        .map_err(EvalFailure::Unanswered)?;
    let res = page
        .execute(params)
        .await
        .map_err(|e| EvalFailure::Unanswered(e.to_string()))?
        .result;
    if let Some(d) = res.exception_details {
        return Err(EvalFailure::Threw(
            d.exception
                .as_ref()
                .and_then(|x| x.description.clone())
                .unwrap_or(d.text),
        ));
    }
    Ok(res.result.value.unwrap_or(serde_json::Value::Null))
}

/// `chrome-extension://<id>/...` → `<id>`.
fn extension_id_of(url: &str) -> Option<String> {
    let rest = url.strip_prefix("chrome-extension://")?;
    let id = rest.split('/').next()?;
    (id.len() == 32).then(|| id.to_string())
}

/// One CDP input command of a typed character.
enum Keystroke {
    Key(Box<DispatchKeyEventParams>),
    Text(InsertTextParams),
}

/// The input a US keyboard gives for `c`: key down (carrying the text) and key up, as
/// a user's keystroke; a character it has no key for (é, ü, 日) is inserted as text
/// input, the way an input method delivers it.
fn keystroke(c: char) -> Result<Vec<Keystroke>, String> {
    let key = c.to_string();
    let Some(def) = chromiumoxide::keys::get_key_definition(&key) else {
        return Ok(vec![Keystroke::Text(InsertTextParams::new(key))]);
    };
    let text = def
        .text
        .or((def.key.chars().count() == 1).then_some(def.key));
    let down_kind = if text.is_some() {
        DispatchKeyEventType::KeyDown
    } else {
        DispatchKeyEventType::RawKeyDown
    };
    let event = |kind, text: Option<&str>| {
        let mut b = DispatchKeyEventParams::builder()
            .r#type(kind)
            .key(def.key)
            .code(def.code)
            .windows_virtual_key_code(def.key_code)
            .native_virtual_key_code(def.key_code);
        if let Some(t) = text {
            b = b.text(t);
        }
        b.build().map(|p| Keystroke::Key(Box::new(p)))
    };
    Ok(vec![
        event(down_kind, text)?,
        // As a keyboard driver sends it (puppeteer's `Input.js`): the text rides on both.
        event(DispatchKeyEventType::KeyUp, text)?,
    ])
}

/// A JSON string literal is a valid JS string literal.
fn js_string(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

/// The tab Chromium opens at start (`about:blank`), once the CDP handler has attached
/// to it: using it rather than creating another saves a target's creation and
/// attachment on every launch. A browser that shows no tab in time gets a new one.
/// Also says whether it was the only tab attached.
async fn first_page(
    cdp_browser: &chromiumoxide::Browser,
    startup: Duration,
) -> Result<(Page, bool), BrowserError> {
    let deadline = Instant::now() + startup.min(FIRST_PAGE_WAIT);
    loop {
        if let Ok(pages) = cdp_browser.pages().await {
            let alone = pages.len() == 1;
            if let Some(p) = pages.into_iter().next() {
                return Ok((p, alone));
            }
        }
        if Instant::now() >= deadline {
            return cdp_browser
                .new_page("about:blank")
                .await
                .map(|p| (p, false))
                .map_err(cdp("open the tab"));
        }
        tokio::time::sleep(POLL).await;
    }
}

/// How long [`first_page`] waits for Chromium's own tab before opening one.
const FIRST_PAGE_WAIT: Duration = Duration::from_secs(2);

/// Headless Chromium opens an `about:blank` tab of its own; one tab under test keeps
/// "the current tab" unambiguous for badges.
async fn close_other_pages(cdp_browser: &chromiumoxide::Browser, keep: &Page) {
    let Ok(targets) = cdp_browser.execute(GetTargetsParams::default()).await else {
        return;
    };
    for t in targets.result.target_infos {
        if t.r#type == "page" && &t.target_id != keep.target_id() {
            let _ = cdp_browser
                .execute(CloseTargetParams::new(t.target_id.clone()))
                .await;
        }
    }
}

/// Collect `console.error`, uncaught exceptions and error log entries of `page`.
async fn console_listeners(
    page: &Page,
    sink: &Arc<Mutex<Vec<String>>>,
) -> Result<Vec<JoinHandle<()>>, BrowserError> {
    let mut tasks = Vec::new();
    let mut calls = page
        .event_listener::<EventConsoleApiCalled>()
        .await
        .map_err(cdp("listen to the console"))?;
    let s = Arc::clone(sink);
    tasks.push(tokio::spawn(async move {
        while let Some(ev) = calls.next().await {
            if ev.r#type == ConsoleApiCalledType::Error {
                let text: Vec<String> = ev.args.iter().map(remote_text).collect();
                push(&s, format!("console.error: {}", text.join(" ")));
            }
        }
    }));
    let mut thrown = page
        .event_listener::<EventExceptionThrown>()
        .await
        .map_err(cdp("listen to exceptions"))?;
    let s = Arc::clone(sink);
    tasks.push(tokio::spawn(async move {
        while let Some(ev) = thrown.next().await {
            let d = &ev.exception_details;
            let text = d
                .exception
                .as_ref()
                .and_then(|x| x.description.clone())
                .unwrap_or_else(|| d.text.clone());
            push(&s, format!("uncaught: {text}"));
        }
    }));
    page.enable_log().await.map_err(cdp("enable the log"))?;
    let mut log = page
        .event_listener::<EventEntryAdded>()
        .await
        .map_err(cdp("listen to the log"))?;
    let s = Arc::clone(sink);
    tasks.push(tokio::spawn(async move {
        while let Some(ev) = log.next().await {
            if ev.entry.level == LogEntryLevel::Error {
                let at = ev.entry.url.clone().unwrap_or_default();
                push(
                    &s,
                    format!("log: {} {at}", ev.entry.text).trim().to_string(),
                );
            }
        }
    }));
    Ok(tasks)
}

fn push(sink: &Mutex<Vec<String>>, line: String) {
    if let Ok(mut v) = sink.lock() {
        v.push(line);
    }
}

fn remote_text(o: &RemoteObject) -> String {
    match &o.value {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
        None => o.description.clone().unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extension_ids_come_from_extension_urls() {
        let id = "abcdefghijklmnopabcdefghijklmnop";
        assert_eq!(
            extension_id_of(&format!("chrome-extension://{id}/bg.js")).as_deref(),
            Some(id)
        );
        assert_eq!(extension_id_of("http://127.0.0.1/"), None);
        assert_eq!(js_string("a\"b"), r#""a\"b""#);
    }
}
