//! World sinks: what a scorecard agent acts on, run by gauntlet on loopback, and the
//! only source of side-effect evidence (never the agent's own logs).
//!
//! Every sink is started per trial on `127.0.0.1` port 0 and keeps its state in
//! memory owned by its handle, so concurrent trials share no port, file or state.
//! Everything a sink sees is recorded with a timestamp ([`now_ms`]: Unix epoch
//! milliseconds, so a driver can tell which window an effect fell in), and every
//! observation is a plain serde type a record can hold.
//!
//! # API
//!
//! ```text
//! workspace::WorkspaceSnapshot::take(root)                 -> Result<WorkspaceSnapshot, SinkError>
//! workspace::WorkspaceSnapshot::take_against(root, &before) (records prefix hashes for appends)
//! workspace::WorkspaceSnapshot::take_until(root, before, deadline) (bounded; `cut` when stopped)
//! workspace::diff(&before, &after)                         -> WorkspaceDiff   (pure)
//!
//! http::HttpStandIn::start(HostStatuses)  .await -> Result<HttpStandIn, SinkError>
//!     .proxy_url() "http://127.0.0.1:PORT"   .requests() -> Vec<HttpRequestRecord>
//! http::HostStatuses::seeded(seed) / .with_host(host, status) / .status_for(host)
//!
//! smtp::SmtpSink::start() .await -> Result<SmtpSink, SinkError>
//!     .url() "smtp://127.0.0.1:PORT"  .messages() -> Vec<MailMessage>
//!
//! tracker::Tracker::start(TrackerStart) .await -> Result<Tracker, SinkError>
//!     .url()  .observe() -> TrackerObservation (threads, tasks, change log)
//!     harness mutations (actor "harness"): .set_task_status(id, status), .set_task_priority,
//!     .add_task(..), .add_thread(..), .post_message(..)
//!
//! Sinks::start(SinkConfig) .await -> Result<Sinks, SinkError>   all three network sinks
//!     .agent_env() -> BTreeMap  (http_proxy/HTTP_PROXY, no_proxy, GAUNTLET_SMTP_URL,
//!                                GAUNTLET_TRACKER_URL) for the agent's environment
//!     .observe()   -> SinksObservation    (any time: a snapshot, not a stop)
//!     .shutdown().await -> SinksObservation (final)
//! ```
//!
//! The tracker's HTTP API (what the agent calls) is documented in [`tracker`]; sending
//! mail is plain SMTP (`curl smtp://…`, documented in docs/agent-protocol.md).

pub mod http;
pub mod serve;
pub mod smtp;
pub mod tracker;
pub mod workspace;

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use http::{HostStatuses, HttpRequestRecord, HttpStandIn};
pub use smtp::{MailMessage, SmtpSink};
pub use tracker::{Tracker, TrackerObservation, TrackerStart};
pub use workspace::{WorkspaceDiff, WorkspaceSnapshot};

/// Why a sink could not start or observe.
#[derive(Debug, thiserror::Error)]
pub enum SinkError {
    #[error("{sink}: cannot bind 127.0.0.1:0: {source}")]
    Bind {
        sink: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: cannot read for the workspace snapshot: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("workspace snapshot: {0}")]
    Unsafe(#[source] crate::sys::beneath::BeneathError),
    #[error("workspace snapshot: {0}")]
    Walk(#[source] crate::sys::walk::WalkError),
    #[error("tracker: {what} `{id}` does not exist")]
    UnknownItem { what: &'static str, id: String },
}

/// Milliseconds since the Unix epoch: every sink's timestamp.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// What the network sinks of one trial start with.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SinkConfig {
    pub http: HostStatuses,
    pub tracker: TrackerStart,
}

/// Everything the network sinks recorded, as a record keeps it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SinksObservation {
    pub http: Vec<HttpRequestRecord>,
    pub mail: Vec<MailMessage>,
    pub tracker: TrackerObservation,
}

/// The three network sinks of one trial.
pub struct Sinks {
    pub http: HttpStandIn,
    pub smtp: SmtpSink,
    pub tracker: Tracker,
}

impl Sinks {
    /// Start the HTTP stand-in, the SMTP sink and the tracker, each on its own port.
    pub async fn start(config: SinkConfig) -> Result<Sinks, SinkError> {
        Ok(Sinks {
            http: HttpStandIn::start(config.http).await?,
            smtp: SmtpSink::start().await?,
            tracker: Tracker::start(config.tracker).await?,
        })
    }

    /// The variables that point an agent at the sinks. Loopback is exempt from the
    /// proxy (`no_proxy`) so that the agent's model calls and the tracker are reached
    /// directly while any other host goes to the stand-in.
    pub fn agent_env(&self) -> BTreeMap<String, String> {
        let mut env = BTreeMap::new();
        let proxy = self.http.proxy_url();
        for key in ["http_proxy", "HTTP_PROXY"] {
            env.insert(key.to_string(), proxy.clone());
        }
        for key in ["no_proxy", "NO_PROXY"] {
            env.insert(key.to_string(), "127.0.0.1,localhost,::1".to_string());
        }
        env.insert("GAUNTLET_SMTP_URL".into(), self.smtp.url());
        env.insert("GAUNTLET_TRACKER_URL".into(), self.tracker.url());
        env
    }

    /// What every sink recorded so far.
    pub fn observe(&self) -> SinksObservation {
        SinksObservation {
            http: self.http.requests(),
            mail: self.smtp.messages(),
            tracker: self.tracker.observe(),
        }
    }

    /// Stop every sink and return the final observation.
    pub async fn shutdown(self) -> SinksObservation {
        SinksObservation {
            http: self.http.shutdown().await,
            mail: self.smtp.shutdown().await,
            tracker: self.tracker.shutdown().await,
        }
    }
}
