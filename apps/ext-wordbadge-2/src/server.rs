//! HTTP plumbing: accept connections and answer GETs with the test pages.
//!
//! Each connection is served on its own task so that one slow client cannot hold up
//! the others; what a path holds is `pages::page`'s business.

use std::convert::Infallible;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

/// Serve forever. Accept errors (e.g. out of file descriptors) are reported and
/// retried after a short pause rather than ending the app under the harness.
pub async fn serve(listener: TcpListener) {
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                eprintln!("ext-wordbadge: accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        tokio::spawn(async move {
            let service =
                service_fn(
                    |req: Request<Incoming>| async move { Ok::<_, Infallible>(respond(&req)) },
                );
            // A client that hangs up mid-request is not the app's problem.
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

fn respond(req: &Request<Incoming>) -> Response<Full<Bytes>> {
    let page = match *req.method() {
        Method::GET | Method::HEAD => crate::pages::page(req.uri().path()),
        _ => None,
    };
    let (status, body) = match page {
        Some(html) => (StatusCode::OK, html),
        None => (
            StatusCode::NOT_FOUND,
            "<!doctype html><title>Not found</title><p>Not found</p>\n",
        ),
    };
    let mut response = Response::new(Full::new(Bytes::from_static(body.as_bytes())));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}
