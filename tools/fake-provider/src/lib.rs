//! A fake model provider on loopback, for gauntlet's tests and benches: OpenAI Chat
//! Completions, OpenAI Responses and Anthropic Messages, whole and streamed, with a
//! real provider's timing and failures: a latency distribution to the first byte
//! (of answers and of 429s and 5xx alike, or one of the faults' own) and between a
//! stream's events, a per-key budget of calls a minute (429 with `retry-after`),
//! cuts (a stream closed before its terminating event, a whole answer short of the
//! `content-length` its head declared), streams that end in their protocol's error
//! event in place of their terminating one, and 5xx answers, each in its protocol's
//! shape. Every draw comes from one seed and the call's number ([`Plan`]), so a run is
//! reproducible and a test can hold what it saw to what the server meant to do.
//!
//! What it answers is generated, unless the call carries the answer to return:
//! `x-gauntlet-answer` ([`ANSWER_HEADER`]) holds its exact body in standard base64
//! with padding, `x-gauntlet-answer-type` ([`ANSWER_TYPE_HEADER`]) its content type
//! (`application/json` or `text/event-stream`). That is how a metering proxy that
//! renders a scripted answer itself still meets a provider's latency, 429s, 5xx and
//! cuts on its real forwarding path: the fake returns those bytes (a stream split into
//! events at `\n\n`) under the same plan as any answer, and bills the usage they state.
//! A malformed one is refused with a 400 naming the header, and not billed.
//!
//! Every answer is billed the usage it states, in its protocol's shape, and the fake
//! keeps a [`Ledger`] of it per key (`GET /_fake/ledger`, [`FakeProvider::ledger`]), so
//! a metering proxy in front of it can be checked to have metered every billed token.
//! An answer cut or failed part-way is billed in full, as a provider bills what it
//! generated: the ledger's `billed` holds what the client could read of its usage, its
//! `unreported` the rest (see the ledger's module).
//!
//! In a test: `FakeProvider::start(config)` on the test's runtime. As a process:
//! `gauntlet-fake-provider --latency lognormal:2000:0.5 --rate-limited 0.05`, which
//! prints `listening on http://127.0.0.1:PORT` once bound.

pub mod cli;
mod clock;
mod config;
mod given;
mod latency;
mod ledger;
mod plan;
mod protocol;
mod ratelimit;
mod rng;
mod server;
mod stream;
mod usage;

use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use tokio::sync::watch;
use tokio::task::JoinHandle;

pub use clock::{Clock, ManualClock, SystemClock};
pub use config::{Config, ConfigError, Faults};
pub use given::{ANSWER_HEADER, ANSWER_TYPE_HEADER};
pub use latency::{Latency, NotLatency};
pub use ledger::{KeyLedger, Ledger};
pub use plan::{Fault, Plan};
pub use protocol::Protocol;
pub use server::{CALL_HEADER, LEDGER_PATH};
pub use usage::Usage;

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("{0}: not a loopback address; the fake provider listens on 127.0.0.1 or ::1 only")]
    NotLoopback(SocketAddr),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

/// A running fake provider. Dropping it stops it and cuts its open connections.
pub struct FakeProvider {
    addr: SocketAddr,
    book: Arc<ledger::Book>,
    stop: watch::Sender<bool>,
    accept: JoinHandle<()>,
}

impl FakeProvider {
    /// Serve `config` on 127.0.0.1, port 0, on the current runtime.
    pub async fn start(config: Config) -> Result<FakeProvider, StartError> {
        FakeProvider::start_on(
            SocketAddr::from(([127, 0, 0, 1], 0)),
            config,
            Arc::new(SystemClock::default()),
        )
        .await
    }

    /// Serve `config` on `listen`, which must be a loopback address, keeping the
    /// per-key budgets by `clock`.
    pub async fn start_on(
        listen: SocketAddr,
        config: Config,
        clock: Arc<dyn Clock>,
    ) -> Result<FakeProvider, StartError> {
        config.check("config")?;
        if !listen.ip().is_loopback() {
            return Err(StartError::NotLoopback(listen));
        }
        let bind = |source| StartError::Bind {
            addr: listen,
            source,
        };
        let listener = tokio::net::TcpListener::bind(listen).await.map_err(bind)?;
        let addr = listener.local_addr().map_err(bind)?;
        let book = Arc::new(ledger::Book::default());
        let shared = Arc::new(server::Shared {
            limiter: ratelimit::RateLimiter::new(config.requests_per_minute, clock),
            config,
            book: Arc::clone(&book),
            next_seq: AtomicU64::new(0),
        });
        let (stop, stopped) = watch::channel(false);
        let accept = tokio::spawn(server::serve(listener, shared, stopped));
        Ok(FakeProvider {
            addr,
            book,
            stop,
            accept,
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT/v1`: the base URL of the OpenAI protocols, and what the
    /// metering proxy's byok upstream is.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// `http://127.0.0.1:PORT`: for Anthropic clients, which add `/v1/messages`.
    pub fn root_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// What it billed so far.
    pub fn ledger(&self) -> Ledger {
        self.book.snapshot()
    }

    /// Stop accepting, cut what is still open, and return the final ledger.
    pub async fn shutdown(mut self) -> Ledger {
        let _ = self.stop.send(true);
        // A join error only means the loop was already gone; the ledger stands.
        let _ = (&mut self.accept).await;
        self.book.snapshot()
    }
}

impl Drop for FakeProvider {
    fn drop(&mut self) {
        self.accept.abort();
    }
}
