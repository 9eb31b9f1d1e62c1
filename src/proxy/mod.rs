//! The metering proxy: every model call an agent makes goes through it, so the tokens
//! gauntlet reports are the ones it observed, never the agent's word.
//!
//! It runs inside the test process on 127.0.0.1 port 0. In `scripted` mode it answers
//! from a [`Flow`](crate::spec::Flow); in `byok` mode it forwards to a real provider and
//! records the usage block of every call.

use serde::{Deserialize, Serialize};

/// One metered model call.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsageEntry {
    /// Order in which the proxy received the call (0-based).
    pub seq: u64,
    /// Wire protocol: `chat` (OpenAI Chat Completions), later `responses`, `messages`.
    pub protocol: String,
    /// Request path as received, e.g. `/v1/chat/completions`.
    pub path: String,
    pub model: Option<String>,
    pub stream: bool,
    /// HTTP status returned to the agent.
    pub status: u16,
    /// `scripted` when the proxy answered, `upstream` when a provider did.
    pub source: String,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub cached_input_tokens: Option<u64>,
    pub reasoning_tokens: Option<u64>,
    pub duration_ms: u64,
    /// What went wrong, as observed (bad request body, upstream error, cut stream).
    pub error: Option<String>,
}
// STUB-BEGIN
pub enum ProxyMode {
    Scripted {
        flow: crate::spec::Flow,
        model: String,
    },
    Byok {
        upstream: String,
        api_key: String,
    },
}
pub struct Proxy;
impl Proxy {
    pub async fn start(_m: ProxyMode) -> std::io::Result<Proxy> {
        Err(std::io::Error::other("stub"))
    }
    pub fn base_url(&self) -> String {
        String::new()
    }
    pub fn usage(&self) -> Vec<UsageEntry> {
        vec![]
    }
    pub async fn shutdown(self) -> Vec<UsageEntry> {
        vec![]
    }
}
