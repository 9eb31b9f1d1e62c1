//! Response bodies and the request-body reader shared by every wire protocol.

use bytes::Bytes;
use futures_util::Stream;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, Limited, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE};
use hyper::{Response, StatusCode};
use serde_json::Value;

use super::error::CallError;

/// Every response body the proxy sends: whole, or streamed frame by frame.
pub(crate) type Body = UnsyncBoxBody<Bytes, std::io::Error>;

/// Agents send whole conversations; this bounds memory, not any real context size.
const MAX_REQUEST_BYTES: usize = 64 * 1024 * 1024;

/// Read a whole request body, or say why it could not be read.
pub(crate) async fn read(body: Incoming) -> Result<Bytes, CallError> {
    match Limited::new(body, MAX_REQUEST_BYTES).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) => Err(CallError::Body(e)),
    }
}

pub(crate) fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into())
        .map_err(|never| match never {})
        .boxed_unsync()
}

/// A response with `body` and, when given, its content type.
pub(crate) fn bytes(
    status: StatusCode,
    content_type: Option<HeaderValue>,
    body: Bytes,
) -> Response<Body> {
    let mut response = Response::new(full(body));
    *response.status_mut() = status;
    if let Some(content_type) = content_type {
        response.headers_mut().insert(CONTENT_TYPE, content_type);
    }
    response
}

pub(crate) fn json(status: StatusCode, value: &Value) -> Response<Body> {
    bytes(
        status,
        Some(HeaderValue::from_static("application/json")),
        Bytes::from(value.to_string()),
    )
}

/// A server-sent-events response streaming `frames` as they are produced.
pub(crate) fn sse<S>(
    status: StatusCode,
    content_type: Option<HeaderValue>,
    frames: S,
) -> Response<Body>
where
    S: Stream<Item = Result<Frame<Bytes>, std::io::Error>> + Send + 'static,
{
    let mut response = Response::new(BodyExt::boxed_unsync(StreamBody::new(frames)));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        CONTENT_TYPE,
        content_type.unwrap_or(HeaderValue::from_static("text/event-stream")),
    );
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}
