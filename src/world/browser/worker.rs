//! A DevTools connection of its own to the extension's service worker, for reading
//! badges where the extension itself reads them.
//!
//! chromiumoxide drives pages only: it detaches from workers and offers no way to send
//! a command to one. The badge used to be read from an extension page opened in a
//! window of its own, which cost a target, a renderer's page and chromiumoxide's page
//! set-up on every browser that read a badge (its cost: docs/test-flows.md, "What a
//! browser step costs"). Every target has its own endpoint,
//! `ws://<host>/devtools/page/<target id>`; `Runtime.evaluate` sent there runs in the
//! worker's global scope, where `chrome.tabs` and `chrome.action` are.

use chromiumoxide::types::{CallId, CdpJsonEventMessage, Message};
use chromiumoxide::Connection;
use futures_util::StreamExt;
use std::time::Duration;

/// An open connection to one service worker target.
pub struct WorkerSession {
    conn: Connection<CdpJsonEventMessage>,
}

/// Why the worker gave no value.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    #[error("cannot attach to the service worker at {url}: {reason}")]
    Connect { url: String, reason: String },
    /// The connection ended or broke: the worker stopped (a new one has a new target).
    #[error("the service worker's connection ended: {0}")]
    Closed(String),
    #[error("the service worker gave no answer within {0:?}")]
    NoAnswer(Duration),
    /// The worker answered with an error or threw.
    #[error("{0}")]
    Failed(String),
}

impl WorkerSession {
    /// Connect to the worker target `target_id` of the browser whose DevTools endpoint
    /// is `browser_ws` (`ws://host:port/devtools/browser/<id>`).
    pub async fn connect(browser_ws: &str, target_id: &str) -> Result<WorkerSession, WorkerError> {
        let url = worker_url(browser_ws, target_id).ok_or_else(|| WorkerError::Connect {
            url: browser_ws.to_string(),
            reason: "no DevTools host in it".into(),
        })?;
        let conn = Connection::connect(&url)
            .await
            .map_err(|e| WorkerError::Connect {
                url: url.clone(),
                reason: e.to_string(),
            })?;
        Ok(WorkerSession { conn })
    }

    /// Evaluate `expr` in the worker, awaiting a promise, for at most `deadline`; the
    /// value, or the exception's description.
    pub async fn evaluate(
        &mut self,
        expr: &str,
        deadline: Duration,
    ) -> Result<serde_json::Value, WorkerError> {
        let params = serde_json::json!({
            "expression": expr,
            "awaitPromise": true,
            "returnByValue": true,
        });
        let id = self
            .conn
            .submit_command("Runtime.evaluate".into(), None, params)
            .map_err(|e| WorkerError::Failed(e.to_string()))?;
        let result = tokio::time::timeout(deadline, self.answer_to(id))
            .await
            .map_err(|_| WorkerError::NoAnswer(deadline))??;
        if let Some(d) = result.get("exceptionDetails") {
            let described = d
                .pointer("/exception/description")
                .and_then(|v| v.as_str())
                .or_else(|| d.get("text").and_then(|v| v.as_str()))
                .unwrap_or("an exception");
            return Err(WorkerError::Failed(described.to_string()));
        }
        Ok(result
            .pointer("/result/value")
            .cloned()
            .unwrap_or(serde_json::Value::Null))
    }

    /// Read the connection until the answer to `id`; events on the way are not ours.
    async fn answer_to(&mut self, id: CallId) -> Result<serde_json::Value, WorkerError> {
        while let Some(msg) = self.conn.next().await {
            match msg.map_err(|e| WorkerError::Closed(e.to_string()))? {
                Message::Response(r) if r.id == id => {
                    return match (r.result, r.error) {
                        (_, Some(e)) => Err(WorkerError::Failed(e.to_string())),
                        (Some(v), None) => Ok(v),
                        (None, None) => Ok(serde_json::Value::Null),
                    };
                }
                _ => {}
            }
        }
        Err(WorkerError::Closed("closed".into()))
    }
}

/// `ws://host:port/devtools/browser/<id>` → `ws://host:port/devtools/page/<target>`.
fn worker_url(browser_ws: &str, target_id: &str) -> Option<String> {
    let at = browser_ws.find("/devtools/")?;
    Some(format!("{}/devtools/page/{target_id}", &browser_ws[..at]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_workers_endpoint_is_the_browsers_host_with_its_target_id() {
        assert_eq!(
            worker_url("ws://127.0.0.1:4242/devtools/browser/abc-def", "T1").as_deref(),
            Some("ws://127.0.0.1:4242/devtools/page/T1")
        );
        assert_eq!(worker_url("nonsense", "T1"), None);
    }
}
