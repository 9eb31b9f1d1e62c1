//! HTTP plumbing: accept connections, read bounded bodies, write JSON replies.
//!
//! Each connection is served on its own task so that one slow client cannot hold
//! up the others; all behaviour lives in `api::App::handle`. (A copy of api-ledger's, kept inside
//! this app so that its content hash covers everything it runs.)

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

use crate::api::{App, Reply};

/// Request bodies are one note (at most 500 characters); anything bigger is refused unread.
const MAX_BODY_BYTES: usize = 16 * 1024;

/// Serve forever. Accept errors (e.g. out of file descriptors) are reported and
/// retried after a short pause rather than ending the app under the harness.
pub async fn serve(listener: TcpListener, app: Arc<App>) {
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                eprintln!("browser-notes: accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let app = Arc::clone(&app);
        tokio::spawn(async move {
            let service = service_fn(move |req| {
                let app = Arc::clone(&app);
                async move { Ok::<_, Infallible>(respond(&app, req).await) }
            });
            // A client that hangs up mid-request is not the app's problem.
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

async fn respond(app: &App, req: Request<Incoming>) -> Response<Full<Bytes>> {
    let (parts, body) = req.into_parts();
    let reply = match Limited::new(body, MAX_BODY_BYTES).collect().await {
        Ok(collected) => app.handle(
            &parts.method,
            parts.uri.path(),
            parts.uri.query(),
            &collected.to_bytes(),
        ),
        Err(e) if e.downcast_ref::<LengthLimitError>().is_some() => {
            Reply::error(StatusCode::PAYLOAD_TOO_LARGE, "body too large")
        }
        Err(_) => Reply::error(StatusCode::BAD_REQUEST, "cannot read body"),
    };
    to_response(reply)
}

fn to_response(reply: Reply) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(reply.body)));
    *response.status_mut() = reply.status;
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(reply.content_type));
    // Every answer reflects the current notes: never let the browser reuse one.
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}
