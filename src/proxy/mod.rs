//! The metering proxy: every model call an agent makes goes through it, so the tokens
//! gauntlet reports are the ones it observed, never the agent's word.
//!
//! It runs inside the test process on 127.0.0.1 port 0. In `scripted` mode it answers
//! from a [`Flow`](crate::spec::Flow); in `byok` mode it forwards to a real provider and
//! records the usage block of every call.
//!
//! Layout: one module per wire protocol ([`chat`] today; `responses` and `messages`
//! later), all sharing the usage log ([`log`]), the protocol-neutral choice of the
//! scripted reply ([`script`], [`mapping`], [`meter`]), the SSE scanner ([`sse`]) and
//! the metered pass-through of upstream streams ([`relay`]).

mod body;
mod chat;
mod log;
mod mapping;
mod meter;
mod relay;
mod script;
mod server;
mod sse;
mod upstream;

use std::net::SocketAddr;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::spec::Flow;

/// One metered model call.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct UsageEntry {
    /// Order in which the proxy received the call (0-based).
    pub seq: u64,
    /// Wire protocol: `chat` (OpenAI Chat Completions), later `responses`, `messages`.
    /// `unsupported` for a POST to a path no protocol serves (answered 404).
    pub protocol: String,
    /// Request path as received, e.g. `/v1/chat/completions`.
    pub path: String,
    pub model: Option<String>,
    pub stream: bool,
    /// HTTP status returned to the agent.
    pub status: u16,
    /// `scripted` when the proxy answered, `upstream` when a provider did; in byok mode
    /// `proxy` when the proxy answered without reaching the provider (bad request body,
    /// provider unreachable).
    pub source: String,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub cached_input_tokens: Option<u64>,
    pub reasoning_tokens: Option<u64>,
    pub duration_ms: u64,
    /// What went wrong, as observed (bad request body, upstream error, cut stream).
    pub error: Option<String>,
}

/// How the proxy answers model calls.
#[derive(Clone)]
pub enum ProxyMode {
    /// Answer from a flow.
    Scripted { flow: Flow, model: String },
    /// Forward to `upstream` (an OpenAI-compatible base URL such as
    /// "https://api.openai.com/v1"), adding `Authorization: Bearer <api_key>`.
    Byok { upstream: String, api_key: String },
}

/// Hand-written so that debug-printing a mode (in a panic, a log line) never shows the
/// API key.
impl std::fmt::Debug for ProxyMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProxyMode::Scripted { flow, model } => f
                .debug_struct("Scripted")
                .field("flow", &flow.capability)
                .field("model", model)
                .finish(),
            ProxyMode::Byok { upstream, .. } => f
                .debug_struct("Byok")
                .field("upstream", upstream)
                .field("api_key", &"[redacted]")
                .finish(),
        }
    }
}

/// A running proxy. Dropping it stops the accept loop; [`Proxy::shutdown`] also waits
/// for in-flight calls so that the returned log is final.
pub struct Proxy {
    addr: SocketAddr,
    log: Arc<log::UsageLog>,
    stop: watch::Sender<bool>,
    accept: JoinHandle<()>,
}

impl Proxy {
    /// Bind 127.0.0.1 port 0 and serve on the calling tokio runtime.
    pub async fn start(mode: ProxyMode) -> std::io::Result<Proxy> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let log = Arc::new(log::UsageLog::default());
        let state = server::State::new(mode, Arc::clone(&log))?;
        let (stop, stopped) = watch::channel(false);
        let accept = tokio::spawn(server::serve(listener, Arc::new(state), stopped));
        Ok(Proxy {
            addr,
            log,
            stop,
            accept,
        })
    }

    /// "http://127.0.0.1:PORT/v1"
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Snapshot of every call metered so far, in arrival order.
    pub fn usage(&self) -> Vec<UsageEntry> {
        self.log.snapshot()
    }

    /// Stop accepting, return the final usage log.
    ///
    /// In-flight calls get a short grace period to finish; calls still running after it
    /// are cut and recorded with `error` set, so no call goes unmetered.
    pub async fn shutdown(self) -> Vec<UsageEntry> {
        // A send error only means the accept loop already ended.
        let _ = self.stop.send(true);
        // A join error means the accept loop panicked or was cancelled; the log entries
        // recorded so far are still the best evidence there is.
        let _ = self.accept.await;
        self.log.snapshot()
    }
}

#[cfg(test)]
mod tests {
    use super::ProxyMode;

    #[test]
    fn debug_never_shows_the_key() {
        let mode = ProxyMode::Byok {
            upstream: "http://127.0.0.1:1/v1".into(),
            api_key: "sk-secret".into(),
        };
        assert!(!format!("{mode:?}").contains("sk-secret"));
    }
}
