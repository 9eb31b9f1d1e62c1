//! Rendering a scripted reply: what the three protocols share.
//!
//! Each protocol has its own shape of a whole answer and of the events of a streamed
//! one ([`Render`]); choosing between the two, timing the answer, pacing a stream,
//! cutting its text into pieces and framing its events are the same in all three, and
//! are here.

use std::time::Duration;

use bytes::Bytes;
use hyper::body::Frame;
use hyper::{Response, StatusCode};
use serde_json::Value;

use super::body::{self, Body};
use super::exchange::Reply;
use super::log::Tokens;

/// Characters per streamed delta: small enough that every reply spans several chunks,
/// so clients' reassembly is exercised as it is with a real model.
const PIECE_CHARS: usize = 16;

/// A scripted answer to render, in any protocol.
pub(crate) struct Answer<'a> {
    pub(crate) reply: &'a Reply,
    pub(crate) model: &'a str,
    /// The call's sequence number, which the answer's ids carry.
    pub(crate) seq: u64,
    pub(crate) tokens: Tokens,
    /// When it was made (Unix seconds).
    pub(crate) created: i64,
}

/// One protocol's shape of a scripted answer.
pub(crate) trait Render {
    /// The whole answer, as one JSON body.
    fn whole(answer: &Answer) -> Value;
    /// The streamed answer, as the server-sent events' text.
    fn events(answer: &Answer) -> Vec<String>;
}

/// `answer` whole, or streamed when the request asked for a stream, its events spread
/// evenly over `latency` (the last one sent when it has passed), as a provider's come
/// while the model writes.
pub(crate) fn render<R: Render>(
    stream: bool,
    answer: &Answer,
    latency: Duration,
) -> Response<Body> {
    if !stream {
        return body::json(StatusCode::OK, &R::whole(answer));
    }
    let events = R::events(answer);
    let frames = events
        .into_iter()
        .map(|event| Ok::<_, std::io::Error>(Frame::data(Bytes::from(event))));
    if latency.is_zero() {
        let frames: Vec<_> = frames.collect();
        return body::sse(StatusCode::OK, None, futures_util::stream::iter(frames));
    }
    let gap = latency / u32::try_from(frames.len()).unwrap_or(u32::MAX).max(1);
    let paced = futures_util::StreamExt::then(
        futures_util::stream::iter(frames),
        move |frame| async move {
            tokio::time::sleep(gap).await;
            frame
        },
    );
    body::sse(StatusCode::OK, None, paced)
}

/// A JSON event under its own `type` as the event's name (Responses, Messages).
pub(crate) fn named(event: &Value) -> String {
    let kind = event["type"].as_str().unwrap_or_default();
    format!("event: {kind}\ndata: {event}\n\n")
}

/// `text` cut into pieces of at most [`PIECE_CHARS`] characters: scripted streams
/// send every reply in several pieces, so clients' reassembly is exercised as with a
/// real model.
pub(crate) fn pieces(text: &str) -> Vec<String> {
    let all: Vec<char> = text.chars().collect();
    all.chunks(PIECE_CHARS)
        .map(|piece| piece.iter().collect())
        .collect()
}
