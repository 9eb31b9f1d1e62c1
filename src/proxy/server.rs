//! The accept loop, per-connection tasks, routing, and shutdown.
//!
//! Routing is by path to one wire protocol each (all handled by [`call`]); everything
//! not protocol-specific (`/v1/models`, `HEAD /`, unknown paths) is answered here.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::json;
use tokio::net::TcpListener;
use tokio::sync::watch;

use super::body::{self, Body};
use super::call;
use super::forward;
use super::relay::Leftovers;
use super::state::{Mode, State};
use super::upstream::Lane;
use super::wire::{ErrorKind, Protocol};
use super::workers::Workers;
use crate::sys::accept;

/// How long shutdown waits for in-flight calls before cutting them.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);

/// Accept until `stop` changes (or its sender is dropped), then drain connections.
pub(crate) async fn serve(
    listener: TcpListener,
    state: Arc<State>,
    workers: Workers,
    stop: watch::Receiver<bool>,
) {
    // Past the grace, aborting drops the in-flight bodies; a cut stream records itself
    // on drop. The threads the connections ran on end with `workers`, once all ended.
    accept::accept_and_drain(listener, stop, SHUTDOWN_GRACE, move |stream, set, stop| {
        // Streamed events are small writes: without this, Nagle's algorithm holds each
        // back until the agent acknowledges the last one.
        let _ = stream.set_nodelay(true);
        // Taken off this runtime's reactor, to be registered with the serving thread's
        // own: otherwise every read and write of the connection would be signalled here
        // and handed across threads.
        let Ok(stream) = stream.into_std() else {
            return;
        };
        workers.spawn(set, connection(stream, Arc::clone(&state), stop));
    })
    .await;
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
    let lane = state.mode.upstream().and_then(|u| u.lane()).map(Arc::new);
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
        Mode::Byok(upstream) => {
            let sent = upstream.get("models").await;
            forward::unmetered(upstream, sent, Protocol::Chat, "model list").await
        }
    }
}
