//! `browser`: one headless Chromium tab per agent run, for apps a shell cannot look at
//! (a page's rendered state, an extension's badge).
//!
//! The browser starts at the first call (most runs never need one), loads the
//! extension in `EXTENSION_DIR` when set, and is killed when the toolbox is dropped at
//! exit. Its driver is the harness's own (`gauntlet::world::browser`), the same one
//! `gauntlet flow run` uses, so what the agent sees is what its flow test will see.

use std::path::PathBuf;

use gauntlet::world::browser::{Browser, LaunchOptions};
use serde::Deserialize;

use super::ToolOutcome;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Args {
    pub action: String,
    #[serde(default)]
    pub selector: Option<String>,
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default)]
    pub url: Option<String>,
}

/// The browser and the runtime that drives it; both live until the agent exits.
pub struct Session {
    app_url: String,
    extension_dir: Option<PathBuf>,
    rt: Option<tokio::runtime::Runtime>,
    browser: Option<Browser>,
    /// Console errors already reported, so each result shows only new ones.
    console_seen: usize,
}

impl Session {
    pub fn new(app_url: String, extension_dir: Option<PathBuf>) -> Session {
        Session {
            app_url,
            extension_dir,
            rt: None,
            browser: None,
            console_seen: 0,
        }
    }

    pub fn call(&mut self, args: &Args) -> ToolOutcome {
        let need = |v: &Option<String>, name: &str| {
            v.clone().ok_or_else(|| {
                ToolOutcome::failed(format!("browser: action `{}` needs `{name}`", args.action))
            })
        };
        let action = match args.action.as_str() {
            "goto" => need(&args.url, "url").map(|u| Action::Goto(self.join(&u))),
            "click" => need(&args.selector, "selector").map(Action::Click),
            "type" => need(&args.selector, "selector")
                .and_then(|s| need(&args.text, "text").map(|t| Action::Type(s, t))),
            "text" => need(&args.selector, "selector").map(Action::Text),
            "count" => need(&args.selector, "selector").map(Action::Count),
            "badge" => Ok(Action::Badge),
            other => Err(ToolOutcome::failed(format!(
                "browser: unknown action `{other}`; actions are goto, click, type, text, count, badge"
            ))),
        };
        let action = match action {
            Ok(a) => a,
            Err(e) => return e,
        };
        if let Err(e) = self.ensure_started() {
            return ToolOutcome::failed(format!("browser: {e}"));
        }
        let (Some(rt), Some(browser)) = (self.rt.as_ref(), self.browser.as_mut()) else {
            return ToolOutcome::failed("browser: not running");
        };
        let result = rt.block_on(async {
            match &action {
                Action::Goto(u) => browser.goto(u).await.map(|()| format!("loaded {u}")),
                Action::Click(s) => browser.click(s).await.map(|()| format!("clicked {s}")),
                Action::Type(s, t) => browser
                    .type_text(s, t)
                    .await
                    .map(|()| format!("typed {} characters into {s}", t.chars().count())),
                Action::Text(s) => browser.text(s).await,
                Action::Count(s) => browser.count(s).await.map(|n| n.to_string()),
                Action::Badge => browser.badge().await.map(|b| {
                    if b.is_empty() {
                        "(the badge is empty)".to_string()
                    } else {
                        b
                    }
                }),
            }
        });
        let console = browser.console_errors();
        let fresh = console
            .get(self.console_seen..)
            .unwrap_or_default()
            .to_vec();
        self.console_seen = console.len();
        let note = if fresh.is_empty() {
            String::new()
        } else {
            format!("\n[page console errors: {}]", fresh.join(" | "))
        };
        match result {
            Ok(out) => ToolOutcome::ok(format!("{out}{note}")),
            Err(e) => ToolOutcome::failed(format!("browser: {e}{note}")),
        }
    }

    fn ensure_started(&mut self) -> Result<(), String> {
        if self.browser.is_some() {
            return Ok(());
        }
        if self.rt.is_none() {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .map_err(|e| format!("cannot start a runtime: {e}"))?;
            self.rt = Some(rt);
        }
        let Some(rt) = self.rt.as_ref() else {
            return Err("no runtime".into());
        };
        let opts = LaunchOptions {
            extension_dir: self.extension_dir.clone(),
            ..LaunchOptions::default()
        };
        let b = rt
            .block_on(Browser::launch(opts))
            .map_err(|e| e.to_string())?;
        self.browser = Some(b);
        Ok(())
    }

    /// A path relative to the app URL becomes absolute; absolute URLs stay.
    fn join(&self, url: &str) -> String {
        if url.contains("://") || url.starts_with("about:") || url.starts_with("data:") {
            return url.to_string();
        }
        let base = self.app_url.trim_end_matches('/');
        if url.starts_with('/') {
            format!("{base}{url}")
        } else {
            format!("{base}/{url}")
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if let (Some(rt), Some(b)) = (self.rt.as_ref(), self.browser.take()) {
            rt.block_on(b.close());
        }
    }
}

enum Action {
    Goto(String),
    Click(String),
    Type(String, String),
    Text(String),
    Count(String),
    Badge,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_actions_fail_before_any_browser_starts() {
        let mut s = Session::new("http://127.0.0.1:9".into(), None);
        let r = s.call(&Args {
            action: "hover".into(),
            selector: None,
            text: None,
            url: None,
        });
        assert!(
            r.failed && r.output.contains("unknown action `hover`"),
            "{}",
            r.output
        );
        let r = s.call(&Args {
            action: "click".into(),
            selector: None,
            text: None,
            url: None,
        });
        assert!(
            r.failed && r.output.contains("needs `selector`"),
            "{}",
            r.output
        );
        assert!(s.browser.is_none());
    }

    #[test]
    fn relative_urls_join_the_app_url() {
        let s = Session::new("http://127.0.0.1:8080/".into(), None);
        assert_eq!(s.join("/notes"), "http://127.0.0.1:8080/notes");
        assert_eq!(s.join("notes"), "http://127.0.0.1:8080/notes");
        assert_eq!(s.join("http://x/y"), "http://x/y");
    }
}
