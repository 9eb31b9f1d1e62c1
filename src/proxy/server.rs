//! The accept loop, per-connection tasks, routing, and shutdown.
//!
//! Routing is by path to one wire protocol each (all handled by [`call`]); everything
//! not protocol-specific (`/v1/models`, `HEAD /`, unknown paths) is answered here.

use std::convert::Infallible;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::json;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

use super::body::{self, Body};
use super::call;
use super::log::UsageLog;
use super::relay::Leftovers;
use super::upstream::{Lane, Upstream};
use super::wire::{ErrorKind, Protocol};
use super::workers::Workers;
use super::{Budget, ProxyMode};
use crate::spec::Script;

/// How long shutdown waits for in-flight calls before cutting them.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);

/// How the proxy answers, with what it needs to do so.
pub(crate) enum Mode {
    Scripted { script: Script, model: String },
    Byok(Arc<Upstream>),
}

pub(crate) struct State {
    pub(crate) mode: Mode,
    pub(crate) log: Arc<UsageLog>,
    pub(crate) calls: Arc<super::calls::Calls>,
    budget: Budget,
    /// Scripted mode: how often each tool step was answered, so that an agent whose
    /// tool never runs the step (and which asks for it again and again) is told the
    /// script is over instead of looping until its deadline.
    pub(crate) issued: std::sync::Mutex<std::collections::HashMap<usize, u32>>,
    /// Streams whose agent hung up, still being read for their usage ([`Leftovers`]).
    pub(crate) left_by_agents: Arc<AtomicUsize>,
}

impl State {
    pub(crate) fn new(
        mode: ProxyMode,
        log: Arc<UsageLog>,
        calls: Arc<super::calls::Calls>,
        budget: Budget,
    ) -> std::io::Result<State> {
        let mode = match mode {
            ProxyMode::Scripted { script, model } => Mode::Scripted { script, model },
            ProxyMode::Byok { upstream, api_key } => {
                Mode::Byok(Arc::new(Upstream::new(&upstream, &api_key)?))
            }
        };
        Ok(State {
            mode,
            log,
            calls,
            budget,
            issued: Default::default(),
            left_by_agents: Arc::default(),
        })
    }

    /// Why no further call may be made, once the metered total reached the budget.
    pub(crate) fn budget_spent(&self) -> Option<String> {
        let limit = self.budget.max_tokens?;
        let metered = self.log.metered();
        (metered >= limit).then(|| {
            format!(
                "gauntlet token budget spent: {metered} tokens metered, the trial's limit \
                 (max_tokens_per_trial) is {limit}; no further model calls are answered"
            )
        })
    }

    /// `source` of an entry the proxy answered itself, without a provider.
    pub(crate) fn local_source(&self) -> &'static str {
        match self.mode {
            Mode::Scripted { .. } => "scripted",
            Mode::Byok(_) => "proxy",
        }
    }
}

/// Accept until `stop` changes (or its sender is dropped), then drain connections.
pub(crate) async fn serve(
    listener: TcpListener,
    state: Arc<State>,
    workers: Workers,
    mut stop: watch::Receiver<bool>,
) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    // Streamed events are small writes: without this, Nagle's algorithm
                    // holds each back until the agent acknowledges the last one.
                    let _ = stream.set_nodelay(true);
                    // Taken off this runtime's reactor, to be registered with the
                    // serving thread's own: otherwise every read and write of the
                    // connection would be signalled here and handed across threads.
                    let Ok(stream) = stream.into_std() else {
                        continue;
                    };
                    workers.spawn(
                        &mut connections,
                        connection(stream, Arc::clone(&state), stop.clone()),
                    );
                }
                // Out of file descriptors and the like: back off instead of spinning.
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            },
            _ = stop.changed() => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    drop(listener);
    let drained = tokio::time::timeout(SHUTDOWN_GRACE, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        // Aborting drops the in-flight bodies; a cut stream records itself on drop.
        connections.shutdown().await;
    }
    // Every connection has ended; the threads they ran on end with `workers`.
}

async fn connection(
    stream: std::net::TcpStream,
    state: Arc<State>,
    mut stop: watch::Receiver<bool>,
) {
    // Still non-blocking, as the listener gave it.
    let Ok(stream) = tokio::net::TcpStream::from_std(stream) else {
        return;
    };
    // The agent's calls on this connection reach a loopback provider on a connection
    // of their own (`Lane`).
    let lane = match &state.mode {
        Mode::Byok(upstream) => upstream.lane().map(Arc::new),
        Mode::Scripted { .. } => None,
    };
    let driven = lane.clone();
    let leftovers = Leftovers::counted_in(&state.left_by_agents);
    let left = leftovers.clone();
    let service = service_fn(move |request| {
        let state = Arc::clone(&state);
        let lane = lane.clone();
        let leftovers = leftovers.clone();
        async move { Ok::<_, Infallible>(route(&state, lane.as_ref(), &leftovers, request).await) }
    });
    {
        let conn = http1::Builder::new().serve_connection(TokioIo::new(stream), service);
        tokio::pin!(conn);
        // The lane's connection is driven here, beside the agent's (see `Lane`), for as
        // long as the agent's lasts; it never ends by itself.
        let drive = async {
            match driven.as_deref() {
                Some(lane) => lane.drive().await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(drive);
        // Connection errors (the agent hung up) end this connection only; any call it was
        // making has already been recorded, or is handed on when its body is dropped.
        // The agent's connection is polled first: a request it reads is handed to the lane
        // and written upstream in the same turn of this task.
        tokio::select! {
            biased;
            _ = conn.as_mut() => {}
            _ = stop.changed() => {
                conn.as_mut().graceful_shutdown();
                tokio::select! {
                    biased;
                    _ = conn.as_mut() => {}
                    _ = drive.as_mut() => {}
                }
            }
            _ = drive.as_mut() => {}
        }
    }
    // Dropped by now, the agent's connection dropped the body of any stream it was
    // sending; a stream the agent hung up on is read to its end for its usage (see
    // `relay`).
    left.read_to_end().await;
}

async fn route(
    state: &State,
    lane: Option<&Arc<Lane>>,
    leftovers: &Leftovers,
    request: Request<hyper::body::Incoming>,
) -> Response<Body> {
    let path = request.uri().path().to_owned();
    match (request.method(), path.as_str()) {
        (&Method::POST, "/v1/chat/completions" | "/chat/completions") => {
            call::handle(state, lane, leftovers, Protocol::Chat, request).await
        }
        (&Method::POST, "/v1/responses" | "/responses") => {
            call::handle(state, lane, leftovers, Protocol::Responses, request).await
        }
        (&Method::POST, "/v1/messages" | "/messages") => {
            call::handle(state, lane, leftovers, Protocol::Messages, request).await
        }
        (&Method::POST, "/v1/messages/count_tokens" | "/messages/count_tokens") => {
            call::count_tokens(state, lane, request).await
        }
        // Claude Code probes its base URL before the first call.
        (&Method::HEAD | &Method::GET, "/") => {
            body::bytes(StatusCode::OK, None, Default::default())
        }
        (&Method::GET, "/v1/models" | "/models") => models(state).await,
        (&Method::POST, _) => {
            // Record it: an agent speaking a protocol we do not serve is evidence.
            let message = format!("no wire protocol is served at `{path}`");
            let mut pending = state.log.begin("unsupported", &path);
            pending.entry.status = StatusCode::NOT_FOUND.as_u16();
            pending.entry.source = state.local_source().to_owned();
            pending.entry.error = Some(message.clone());
            state.log.record(pending);
            Protocol::Chat.error(ErrorKind::NotFound, &message)
        }
        _ => Protocol::Chat.error(
            ErrorKind::NotFound,
            &format!("no route for {} `{path}`", request.method()),
        ),
    }
}

/// The model list: the configured model when scripted, the provider's list when byok.
/// Not a model call, so not metered.
async fn models(state: &State) -> Response<Body> {
    match &state.mode {
        Mode::Scripted { model, .. } => body::json(
            StatusCode::OK,
            &json!({"object": "list", "data": [
                {"id": model, "object": "model", "created": 0, "owned_by": "gauntlet"}
            ]}),
        ),
        Mode::Byok(upstream) => match upstream.get("models").await {
            Ok(response) => {
                let status = response.status();
                // Not a model call, and no less the provider's words: redacted as one.
                let content_type = response
                    .headers()
                    .get(hyper::header::CONTENT_TYPE)
                    .map(|v| upstream.redact_header(v));
                match response.bytes().await {
                    Ok(bytes) => body::bytes(status, content_type, upstream.redact_body(bytes)),
                    Err(e) => Protocol::Chat.error(
                        ErrorKind::Upstream,
                        &upstream.redact(&format!("upstream model list cut: {e}")),
                    ),
                }
            }
            Err(e) => Protocol::Chat.error(ErrorKind::Upstream, &e.to_string()),
        },
    }
}
