//! Passing an upstream SSE stream through to the agent while metering it.
//!
//! Chunks go to the agent as they arrive (the relay is the response body itself, so
//! nothing is buffered beyond one unfinished event); chunks that have already arrived
//! together go out in one write. Each event is shown to a
//! protocol-specific [`StreamMeter`]; the entry is recorded exactly once, when the
//! stream ends, breaks, or is dropped because the agent went away.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use bytes::{Bytes, BytesMut};
use futures_util::Stream;
use hyper::body::Frame;

use super::log::{Pending, Tokens, UsageLog};
use super::sse::{SseEvent, SseScanner};
use super::upstream::Upstream;

/// What a wire protocol knows about its own stream.
pub(crate) trait StreamMeter: Send + 'static {
    /// Look at one event's data; return `false` to keep the event from the agent.
    fn observe(&mut self, data: &str) -> bool;
    /// Whether [`StreamMeter::observe`] may drop events. When not, chunks are forwarded
    /// byte for byte as received rather than event by event.
    fn filters(&self) -> bool;
    /// The usage seen so far (all `None` when none was seen; never invented).
    fn tokens(&self) -> Tokens;
    /// Whether the protocol's end-of-stream marker was seen.
    fn complete(&self) -> bool;
    /// A failure the stream itself reported (an `error` event, a failed response).
    fn problem(&self) -> Option<String> {
        None
    }
}

type ByteStream = Pin<Box<dyn Stream<Item = Result<Bytes, reqwest::Error>> + Send>>;

pub(crate) struct Relay {
    upstream: ByteStream,
    scanner: SseScanner,
    meter: Box<dyn StreamMeter>,
    /// Where the entry goes; `None` once recorded.
    finish: Option<(Arc<UsageLog>, Pending)>,
    redactor: Arc<Upstream>,
    /// The end (or break) of the upstream stream, seen while gathering chunks that had
    /// already arrived, and handled on the next poll after those were passed on.
    held: Option<Polled>,
}

impl Relay {
    /// `first` is the stream's first poll, already awaited by the caller (see
    /// `forward`): it goes out with the response head in one write.
    pub(crate) fn new(
        response: reqwest::Response,
        first: Polled,
        meter: Box<dyn StreamMeter>,
        log: Arc<UsageLog>,
        pending: Pending,
        redactor: Arc<Upstream>,
    ) -> Relay {
        Relay {
            upstream: Box::pin(response.bytes_stream()),
            scanner: SseScanner::default(),
            meter,
            finish: Some((log, pending)),
            redactor,
            held: Some(first),
        }
    }

    fn record(&mut self, error: Option<String>) {
        if let Some((log, mut pending)) = self.finish.take() {
            pending.set_tokens(self.meter.tokens());
            pending.entry.error = error.map(|e| self.redactor.redact(&e));
            log.record(pending);
        }
    }

    /// Show `events` to the meter; return the bytes of those to forward.
    fn pass(&mut self, events: Vec<SseEvent>) -> Vec<u8> {
        let mut out = Vec::new();
        for event in events {
            if self.meter.observe(&event.data) {
                out.extend_from_slice(&event.raw);
            }
        }
        out
    }
}

/// One poll of the upstream byte stream.
pub(crate) type Polled = Option<Result<Bytes, reqwest::Error>>;

impl Relay {
    /// Meter one upstream chunk; append what the agent gets to `out`.
    fn take_chunk(&mut self, chunk: Bytes, out: &mut BytesMut) {
        let events = self.scanner.push(&chunk);
        if self.meter.filters() {
            out.extend_from_slice(&self.pass(events));
        } else {
            self.pass(events);
            out.extend_from_slice(&chunk);
        }
    }
}

impl Stream for Relay {
    type Item = Result<Frame<Bytes>, std::io::Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if this.finish.is_none() {
                return Poll::Ready(None);
            }
            let item: Polled = match this.held.take() {
                Some(item) => item,
                None => ready!(this.upstream.as_mut().poll_next(cx)),
            };
            match item {
                Some(Ok(chunk)) => {
                    let mut out = BytesMut::new();
                    this.take_chunk(chunk, &mut out);
                    // Whatever else has already arrived goes in the same write; nothing
                    // waits for what has not.
                    loop {
                        match this.upstream.as_mut().poll_next(cx) {
                            Poll::Ready(Some(Ok(more))) => this.take_chunk(more, &mut out),
                            Poll::Ready(end) => {
                                this.held = Some(end);
                                break;
                            }
                            Poll::Pending => break,
                        }
                    }
                    if !out.is_empty() {
                        return Poll::Ready(Some(Ok(Frame::data(out.freeze()))));
                    }
                }
                Some(Err(e)) => {
                    let message = this.redactor.redact(&format!("upstream stream cut: {e}"));
                    this.record(Some(message.clone()));
                    // Failing the body makes hyper cut the agent's stream too, so the
                    // agent sees the same break the proxy saw.
                    return Poll::Ready(Some(Err(std::io::Error::other(message))));
                }
                None => {
                    let rest = this.scanner.finish();
                    let filters = this.meter.filters();
                    let out = this.pass(rest.into_iter().collect());
                    let error = this.meter.problem().or_else(|| {
                        (!this.meter.complete())
                            .then(|| "upstream stream ended before its end marker".to_owned())
                    });
                    this.record(error);
                    // Unfiltered bytes were all forwarded as they came.
                    return Poll::Ready(
                        (filters && !out.is_empty()).then(|| Ok(Frame::data(Bytes::from(out)))),
                    );
                }
            }
        }
    }
}

impl Drop for Relay {
    /// The agent closed its connection, or the proxy shut down, mid-stream.
    fn drop(&mut self) {
        if self.finish.is_some() {
            let error = self.meter.problem().or_else(|| {
                (!self.meter.complete()).then(|| {
                    "stream cut before it ended: the agent went away or the proxy shut down"
                        .to_owned()
                })
            });
            self.record(error);
        }
    }
}
