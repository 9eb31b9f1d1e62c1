//! The HTTP server shared by the sinks: one task per connection on the harness's
//! accept loop (`sys::accept`), stopped by a watch channel, in-flight connections
//! given a short grace on shutdown.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::SinkError;
use crate::sys::accept;

/// Request bodies above this are cut (the sink records what it kept).
pub const BODY_CAP: usize = 256 * 1024;
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// A running accept loop.
pub struct Server {
    pub addr: SocketAddr,
    stop: watch::Sender<bool>,
    accept: JoinHandle<()>,
}

impl Server {
    /// Stop accepting and wait (bounded) for open connections.
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        let _ = self.accept.await;
    }
}

/// A request with its body read (up to [`BODY_CAP`]).
pub struct Received {
    pub parts: hyper::http::request::Parts,
    pub body: Bytes,
    /// The body was longer than the cap or could not be read whole.
    pub truncated: bool,
}

/// Bind 127.0.0.1 port 0 and answer every request with `handler`.
pub async fn start<H, F>(sink: &'static str, handler: H) -> Result<Server, SinkError>
where
    H: Fn(Received) -> F + Send + Sync + 'static,
    F: Future<Output = Response<Full<Bytes>>> + Send + 'static,
{
    let listener = TcpListener::bind(("127.0.0.1", 0))
        .await
        .map_err(|source| SinkError::Bind { sink, source })?;
    let addr = listener
        .local_addr()
        .map_err(|source| SinkError::Bind { sink, source })?;
    let (stop, stopped) = watch::channel(false);
    let accept = tokio::spawn(serve(listener, Arc::new(handler), stopped));
    Ok(Server { addr, stop, accept })
}

async fn serve<H, F>(listener: TcpListener, handler: Arc<H>, stop: watch::Receiver<bool>)
where
    H: Fn(Received) -> F + Send + Sync + 'static,
    F: Future<Output = Response<Full<Bytes>>> + Send + 'static,
{
    accept::accept_and_drain(
        listener,
        stop,
        SHUTDOWN_GRACE,
        move |stream, set, mut stop| {
            let handler = Arc::clone(&handler);
            set.spawn(async move {
                let service = service_fn(move |request: Request<Incoming>| {
                    let handler = Arc::clone(&handler);
                    async move {
                        let received = read(request).await;
                        Ok::<_, Infallible>(handler(received).await)
                    }
                });
                let conn = http1::Builder::new().serve_connection(TokioIo::new(stream), service);
                tokio::pin!(conn);
                tokio::select! {
                    _ = conn.as_mut() => {}
                    _ = stop.changed() => {
                        conn.as_mut().graceful_shutdown();
                        let _ = conn.await;
                    }
                }
            });
        },
    )
    .await;
}

async fn read(request: Request<Incoming>) -> Received {
    let (parts, body) = request.into_parts();
    match Limited::new(body, BODY_CAP).collect().await {
        Ok(collected) => Received {
            parts,
            body: collected.to_bytes(),
            truncated: false,
        },
        Err(_) => Received {
            parts,
            body: Bytes::new(),
            truncated: true,
        },
    }
}

/// A response with a body and content type.
pub fn respond(status: u16, content_type: &str, body: impl Into<Bytes>) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(body.into()));
    *response.status_mut() =
        hyper::StatusCode::from_u16(status).unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
    if let Ok(value) = hyper::header::HeaderValue::from_str(content_type) {
        response
            .headers_mut()
            .insert(hyper::header::CONTENT_TYPE, value);
    }
    response
}

/// A JSON response.
pub fn json(status: u16, value: &serde_json::Value) -> Response<Full<Bytes>> {
    respond(status, "application/json", value.to_string())
}
