//! The metering proxy: every model call an agent makes goes through it, so the tokens
//! gauntlet reports are the ones it observed, never the agent's word.
//!
//! It runs inside the test process on 127.0.0.1 port 0. In `scripted` mode it answers
//! from a [`Script`](crate::spec::Script); in `byok` mode it forwards to a real provider and
//! records the usage block of every call.
//!
//! It speaks OpenAI Chat Completions (`/v1/chat/completions`), OpenAI Responses
//! (`/v1/responses`) and Anthropic Messages (`/v1/messages`), each streaming and not.
//!
//! Layout, from the top down; a file imports only files below it, so shared types
//! live in files that import no neighbour. The accept loop and routing ([`server`])
//! hand each model call to [`call`], which shares the running proxy's [`state`]. byok
//! forwarding ([`forward`], [`upstream`]) passes streams through metered ([`relay`],
//! [`guard`], [`sse`]). The table of the wire protocols' differences ([`wire`]) sits
//! over one module per protocol ([`chat`], [`responses`], [`messages`]: request
//! fields, scripted rendering, usage), which share the reading of a conversation
//! ([`conversation`]), the rendering of a scripted reply ([`render`]) and the
//! metering of usage ([`usage`]). The scripted reply is chosen without any protocol
//! ([`script`], [`mapping`], [`meter`]) from an [`exchange`]'s types. At the bottom:
//! what a proxy is started with ([`settings`]), the usage log a budget is checked
//! against ([`log`]), the relayed calls ([`calls`]), bodies ([`body`], [`envelope`],
//! [`peek`]), errors ([`error`]) and the threads connections are served on
//! ([`workers`]).

mod body;
mod call;
mod calls;
mod chat;
mod conversation;
mod envelope;
mod error;
mod exchange;
mod forward;
mod guard;
mod log;
mod mapping;
mod messages;
mod meter;
mod peek;
mod relay;
mod render;
mod responses;
mod script;
mod server;
mod settings;
mod sse;
mod state;
mod upstream;
mod usage;
mod wire;
mod workers;

use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::sync::Arc;

use tokio::sync::watch;
use tokio::task::JoinHandle;

pub use self::settings::{
    Budget, ProxyMode, RetryPolicy, ANSWER_HEADER, ANSWER_TYPE_HEADER, SCRIPTED_VIA_KEY,
};
pub use crate::evidence::usage::{budget_hit, UsageEntry};

/// A running proxy. Dropping it stops the accept loop; [`Proxy::shutdown`] also waits
/// for in-flight calls so that the returned log is final.
pub struct Proxy {
    addr: SocketAddr,
    log: Arc<log::UsageLog>,
    calls: Arc<calls::Calls>,
    left_by_agents: Arc<std::sync::atomic::AtomicUsize>,
    stop: watch::Sender<bool>,
    accept: JoinHandle<()>,
}

impl Proxy {
    /// Bind 127.0.0.1 port 0 and serve on one thread of its own, without limits.
    pub async fn start(mode: ProxyMode) -> std::io::Result<Proxy> {
        Proxy::start_with_budget(mode, Budget::default()).await
    }

    /// [`Proxy::start`], refusing calls once `budget` is spent.
    pub async fn start_with_budget(mode: ProxyMode, budget: Budget) -> std::io::Result<Proxy> {
        Proxy::start_on(
            SocketAddr::from(([127, 0, 0, 1], 0)),
            mode,
            budget,
            NonZeroUsize::MIN,
        )
        .await
    }

    /// Bind `listen`, which must be a loopback address: the proxy holds the provider
    /// key and answers anyone who connects, so it is never reachable from elsewhere.
    ///
    /// Connections are served on `threads` threads of the proxy's own, one runtime
    /// each (see `proxy::workers`); one is enough for a trial's agent, a proxy that
    /// many agents share wants one per core.
    pub async fn start_on(
        listen: SocketAddr,
        mode: ProxyMode,
        budget: Budget,
        threads: NonZeroUsize,
    ) -> std::io::Result<Proxy> {
        if !listen.ip().is_loopback() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "{listen}: not a loopback address; the proxy listens on 127.0.0.1 or ::1 only"
                ),
            ));
        }
        let listener = tokio::net::TcpListener::bind(listen).await?;
        let addr = listener.local_addr()?;
        let log = Arc::new(log::UsageLog::default());
        let calls = Arc::new(calls::Calls::default());
        let state = state::State::new(mode, Arc::clone(&log), Arc::clone(&calls), budget)?;
        let left_by_agents = Arc::clone(&state.left_by_agents);
        let workers = workers::Workers::start("gauntlet-proxy", threads)?;
        let (stop, stopped) = watch::channel(false);
        let accept = tokio::spawn(server::serve(listener, Arc::new(state), workers, stopped));
        Ok(Proxy {
            addr,
            log,
            calls,
            left_by_agents,
            stop,
            accept,
        })
    }

    /// "http://127.0.0.1:PORT/v1": for OpenAI clients (`OPENAI_BASE_URL`).
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// "http://127.0.0.1:PORT": for Anthropic clients (`ANTHROPIC_BASE_URL`), which
    /// add `/v1/messages` themselves.
    pub fn root_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Snapshot of every call metered so far, in arrival order.
    pub fn usage(&self) -> Vec<UsageEntry> {
        self.log.snapshot()
    }

    /// Streams whose agent hung up before their end that are still being read from the
    /// provider for their usage; each is in [`Proxy::usage`] once read (or cut by the
    /// shutdown).
    pub fn streams_left_by_agents(&self) -> usize {
        self.left_by_agents
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    /// From now on, also write every metered call to `file` as one JSON line (a
    /// [`UsageEntry`]) the moment it ends. Open `file` for appending: each line is one
    /// write at the end of the file, with no lock between the proxy's threads.
    pub fn log_usage_to(&self, file: std::fs::File) {
        self.log.tee_to(file);
    }

    /// From now on, keep neither the request and response bodies for
    /// [`Proxy::shutdown_with_calls`] nor the usage entries for [`Proxy::usage`] and
    /// [`Proxy::shutdown`]; only their [`Proxy::totals`] and the usage-log file's lines.
    /// For a proxy that only meters, such as the standalone command, so that relaying
    /// costs nothing for a transcript no one reads, and a proxy that runs for days does
    /// not grow with its calls.
    pub fn keep_no_calls(&self) {
        self.calls.keep_none();
        self.log.keep_totals_only();
    }

    /// Calls and tokens metered so far, added up: whether entries are kept or not.
    pub fn totals(&self) -> crate::evidence::usage::Totals {
        self.log.totals()
    }

    /// From now on, keep the request body of every model call, for
    /// [`Proxy::request_bodies`]. Off by default: a trial records usage, not
    /// conversations; a test turns it on to see what an agent really sent (that a
    /// resumed session carries its earlier turns).
    pub fn keep_request_bodies(&self) {
        self.log.keep_bodies();
    }

    /// The request bodies kept since [`Proxy::keep_request_bodies`], as received, with
    /// the `seq` of their usage entries, in arrival order.
    pub fn request_bodies(&self) -> Vec<(u64, bytes::Bytes)> {
        self.log.bodies()
    }

    /// Stop accepting, return the final usage log.
    ///
    /// In-flight calls get a short grace period to finish; calls still running after it
    /// are cut and recorded with `error` set, so no call goes unmetered.
    pub async fn shutdown(self) -> Vec<UsageEntry> {
        self.shutdown_with_calls().await.0
    }

    /// Stop as [`Proxy::shutdown`] does; return the final [`Proxy::totals`] and why
    /// writing the usage-log file failed, if it did.
    pub async fn shutdown_with_totals(self) -> (crate::evidence::usage::Totals, Option<String>) {
        let log = Arc::clone(&self.log);
        self.shutdown().await;
        (log.totals(), log.tee_error())
    }

    /// [`Proxy::shutdown`], and what it relayed: one JSON line per model call, its
    /// request and response bodies as they passed, bounded (see `proxy::calls`).
    pub async fn shutdown_with_calls(self) -> (Vec<UsageEntry>, Vec<u8>) {
        // A send error only means the accept loop already ended.
        let _ = self.stop.send(true);
        // A join error means the accept loop panicked or was cancelled; the log entries
        // recorded so far are still the best evidence there is.
        let _ = self.accept.await;
        (self.log.snapshot(), self.calls.jsonl())
    }
}
