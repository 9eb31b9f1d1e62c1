//! What the proxy relayed, call by call: each model call's request body as the agent
//! sent it and its response body as the agent got it (the provider's key already
//! redacted), for the trial's transcript page.
//!
//! Kept as the bodies pass, by reference (a `Bytes` clone is a count, not a copy), up to
//! [`PER_BODY`] bytes of each and [`PER_PROXY`] bytes in all; what is left out is
//! counted. Written once, when the trial is done with the proxy
//! ([`super::Proxy::shutdown_with_calls`]): one JSON line per call, which the trial
//! keeps beside its record and hashes like any raw evidence. Headers are never kept:
//! the authorization an agent sends, and the one the proxy sends, are not evidence.

use std::collections::BTreeMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::{Body as _, Frame, SizeHint};
use serde::Serialize;

use super::body::Body;

/// The most of one body kept.
pub const PER_BODY: usize = 256 << 10;
/// The most kept of all bodies of one proxy.
pub const PER_PROXY: usize = 16 << 20;

/// The bodies of one proxy's calls, by sequence number.
#[derive(Debug, Default)]
pub(crate) struct Calls {
    inner: Mutex<Inner>,
    /// Nothing is kept ([`Calls::keep_none`]): no lock, no wrapper around each response.
    off: AtomicBool,
}

#[derive(Debug, Default)]
struct Inner {
    calls: BTreeMap<u64, Kept>,
    /// Bytes kept so far, against [`PER_PROXY`].
    kept: usize,
}

#[derive(Debug, Default)]
struct Kept {
    request: Part,
    response: Part,
}

#[derive(Debug, Default)]
struct Part {
    pieces: Vec<Bytes>,
    kept: usize,
    seen: u64,
    /// The response body reached its end (not cut, not dropped by the agent).
    complete: bool,
}

impl Part {
    fn take(&mut self, bytes: &Bytes, room: usize) -> usize {
        self.seen += bytes.len() as u64;
        let n = bytes.len().min(PER_BODY - self.kept).min(room);
        if n == bytes.len() {
            self.pieces.push(bytes.clone());
        } else if n > 0 {
            // A copy, not a slice: a slice would keep the whole body (up to the 64 MiB
            // a request may be) alive until the proxy stops, and an agent could make
            // the harness hold many of them.
            self.pieces.push(Bytes::copy_from_slice(&bytes[..n]));
        }
        self.kept += n;
        n
    }

    fn line(&self, with_complete: bool) -> BodyLine {
        let mut body = Vec::with_capacity(self.kept);
        for piece in &self.pieces {
            body.extend_from_slice(piece);
        }
        BodyLine {
            bytes: self.seen,
            kept: self.kept as u64,
            complete: with_complete.then_some(self.complete),
            body: String::from_utf8_lossy(&body).into_owned(),
        }
    }
}

/// One line of the calls file.
#[derive(Debug, Serialize)]
struct CallLine {
    seq: u64,
    request: BodyLine,
    response: BodyLine,
}

#[derive(Debug, Serialize)]
struct BodyLine {
    /// All bytes of the body.
    bytes: u64,
    /// The first `kept` of them are in `body`.
    kept: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    complete: Option<bool>,
    /// As UTF-8 (bytes that are not are replaced).
    body: String,
}

impl Calls {
    fn with(&self, seq: u64, f: impl FnOnce(&mut Kept, usize) -> usize) {
        // A panic while holding the lock cannot leave a torn entry: keep going.
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let room = PER_PROXY.saturating_sub(inner.kept);
        let kept = f(inner.calls.entry(seq).or_default(), room);
        inner.kept += kept;
    }

    /// From now on keep nothing: for a proxy whose calls no one will read (the
    /// standalone command, which writes a usage log and no transcript), so that each
    /// call costs neither a lock per frame nor an entry that lives until shutdown.
    pub(crate) fn keep_none(&self) {
        self.off.store(true, Ordering::Relaxed);
    }

    fn off(&self) -> bool {
        self.off.load(Ordering::Relaxed)
    }

    /// The request body of call `seq`, as received.
    pub(crate) fn request(&self, seq: u64, body: &Bytes) {
        if self.off() {
            return;
        }
        self.with(seq, |k, room| k.request.take(body, room));
    }

    fn response(&self, seq: u64, data: &Bytes) {
        self.with(seq, |k, room| k.response.take(data, room));
    }

    fn response_end(&self, seq: u64, complete: bool) {
        self.with(seq, |k, _| {
            k.response.complete = complete;
            0
        });
    }

    /// Wrap `response`, the answer to call `seq`, so that its body is kept as it goes
    /// out.
    pub(crate) fn tee(
        self: &Arc<Self>,
        seq: u64,
        response: hyper::Response<Body>,
    ) -> hyper::Response<Body> {
        if self.off() {
            return response;
        }
        response.map(|inner| {
            http_body_util::BodyExt::boxed_unsync(Tee {
                inner,
                seq,
                calls: Arc::clone(self),
                ended: false,
            })
        })
    }

    /// Every call as one JSON line, in arrival order.
    pub(crate) fn jsonl(&self) -> Vec<u8> {
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = Vec::new();
        for (seq, kept) in &inner.calls {
            let line = CallLine {
                seq: *seq,
                request: kept.request.line(false),
                response: kept.response.line(true),
            };
            // Strings and numbers only: serializing cannot fail.
            if serde_json::to_writer(&mut out, &line).is_ok() {
                out.push(b'\n');
            }
        }
        out
    }
}

/// A response body that shows every data frame to [`Calls`] on its way out.
struct Tee {
    inner: Body,
    seq: u64,
    calls: Arc<Calls>,
    ended: bool,
}

impl hyper::body::Body for Tee {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        let this = &mut *self;
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    this.calls.response(this.seq, data);
                }
            }
            Poll::Ready(Some(Err(_))) => {
                this.ended = true;
                this.calls.response_end(this.seq, false);
            }
            Poll::Ready(None) => {
                this.ended = true;
                this.calls.response_end(this.seq, true);
            }
            Poll::Pending => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for Tee {
    /// The agent went away, or hyper knew the body was whole without polling its end.
    fn drop(&mut self) {
        if !self.ended {
            self.calls
                .response_end(self.seq, self.inner.is_end_stream());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_are_kept_up_to_their_bound_and_counted_beyond_it() {
        let calls = Calls::default();
        calls.request(0, &Bytes::from(vec![b'a'; PER_BODY + 10]));
        calls.response(0, &Bytes::from_static(b"hello "));
        calls.response(0, &Bytes::from_static(b"world"));
        calls.response_end(0, true);
        calls.request(1, &Bytes::from_static(b"{}"));
        let text = String::from_utf8(calls.jsonl()).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["request"]["bytes"], PER_BODY as u64 + 10);
        assert_eq!(lines[0]["request"]["kept"], PER_BODY as u64);
        assert_eq!(lines[0]["response"]["body"], "hello world");
        assert_eq!(lines[0]["response"]["complete"], true);
        assert_eq!(lines[1]["response"]["complete"], false, "never answered");
    }

    #[test]
    fn once_off_nothing_is_kept_and_responses_are_not_wrapped() {
        let calls = Arc::new(Calls::default());
        calls.keep_none();
        calls.request(0, &Bytes::from_static(b"{}"));
        let response = calls.tee(0, hyper::Response::new(crate::proxy::body::full("x")));
        drop(response);
        assert!(calls.jsonl().is_empty());
    }
}
