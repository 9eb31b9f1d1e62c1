//! Passing an upstream SSE stream through to the agent while metering it.
//!
//! Events go to the agent as they complete (the relay is the response body itself, so
//! nothing is buffered beyond one unfinished event, and one whose text could begin the
//! API key: see [`TextGuard`]); events that have already arrived together (a burst in
//! the upstream connection's buffer) go out in one write. Each event is shown to a
//! protocol-specific [`StreamMeter`]; the entry is recorded exactly once, when the
//! stream ends or breaks.
//!
//! An agent that hangs up mid-stream does not end the call: the provider has been
//! asked, bills the whole answer it goes on writing, and sends the usage last (Chat,
//! Responses) or in part last (Messages). Cutting every stream just before its usage
//! would otherwise make an agent look cheaper than it is. So the rest of the stream is
//! read for its usage on the agent connection's task ([`Leftovers`]), and only a proxy
//! shutting down cuts it.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

use bytes::{Bytes, BytesMut};
use futures_util::{Stream, StreamExt};
use hyper::body::Frame;

use super::guard::TextGuard;
use super::log::{Pending, Tokens, UsageLog};
use super::sse::{SseEvent, SseScanner};
use super::upstream::{Lane, Upstream};
use super::usage::StreamMeter;
use crate::evidence::provider::ProviderFault;

pub(crate) struct Relay {
    upstream: super::upstream::ByteStream,
    scanner: SseScanner,
    meter: Box<dyn StreamMeter>,
    /// Where the entry goes; `None` once recorded.
    finish: Option<(Arc<UsageLog>, Pending)>,
    redactor: Arc<Upstream>,
    /// The key kept out of the decoded text too, where deltas spell it across events.
    guard: TextGuard,
    /// A poll of the upstream stream not yet handled: the first chunk (awaited by
    /// `forward`), or a break seen while bytes were still waiting to go out.
    held: Option<Polled>,
    /// Bytes for the agent not yet handed to hyper: a burst being gathered.
    out: BytesMut,
    /// The upstream connection's turn to decode what has already arrived, when it is
    /// another task's (the shared client's).
    turn: Turn,
    /// The lane the stream comes on, whose connection this task drives itself: after
    /// the relay polled it, a body with no new chunk has none until more bytes arrive,
    /// so a burst is gathered without waiting for a turn of the runtime.
    lane: Option<Arc<Lane>>,
    /// The lane was polled since the last chunk.
    driven: bool,
    /// Where the rest of the stream goes to be read if the agent hangs up; `None` once
    /// it is being read there.
    leftovers: Option<Leftovers>,
}

/// Streams whose agent hung up before their end, still to be read for their usage: one
/// set per agent connection, read by the connection's task once the agent's side is
/// over (so the proxy's shutdown grace bounds it, and a shutdown past it cuts them).
#[derive(Clone, Default)]
pub(crate) struct Leftovers {
    streams: Arc<Mutex<Vec<Relay>>>,
    /// Streams being read this way, proxy-wide.
    reading: Arc<AtomicUsize>,
}

impl Leftovers {
    /// One agent connection's set, counted in `reading`.
    pub(crate) fn counted_in(reading: &Arc<AtomicUsize>) -> Leftovers {
        Leftovers {
            streams: Arc::default(),
            reading: Arc::clone(reading),
        }
    }

    fn keep(&self, relay: Relay) {
        self.reading.fetch_add(1, Ordering::SeqCst);
        self.streams
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push(relay);
    }

    /// Read every kept stream to its end (the relay records it), discarding what the
    /// agent is no longer there to get.
    pub(crate) async fn read_to_end(&self) {
        loop {
            let next = self
                .streams
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .pop();
            let Some(mut relay) = next else {
                return;
            };
            while relay.next().await.is_some() {}
            // Recorded by now: the relay's last poll or its drop does it.
            drop(relay);
            self.reading.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// The meter left in a relay whose stream went to be read elsewhere.
struct Spent;

impl StreamMeter for Spent {
    fn observe(&mut self, _: &str) -> bool {
        false
    }
    fn tokens(&self) -> Tokens {
        Tokens::default()
    }
    fn complete(&self) -> bool {
        false
    }
}

/// Giving every other ready task of the runtime (the upstream connection among them)
/// one turn before the relay goes on.
///
/// The upstream connection hands over one decoded chunk per turn, so a burst already
/// in its buffer comes out one chunk per turn; after a turn with no new chunk, the
/// gathered bytes go out in one write instead of one per event. Hyper may poll the
/// body again within the same turn, so the relay waits for the turn to have passed
/// (the deferred wake-up firing) rather than for the next poll.
#[derive(Default)]
struct Turn {
    /// `None`: no turn asked for since the last chunk.
    passed: Option<Arc<TurnPassed>>,
}

struct TurnPassed {
    done: AtomicBool,
    task: Waker,
}

impl Wake for TurnPassed {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.done.store(true, Ordering::Release);
        self.task.wake_by_ref();
    }
}

impl Turn {
    /// Whether to keep waiting: asks for a turn the first time, then waits until it
    /// passed. `false` once a turn passed with nothing new.
    fn wait(&mut self, cx: &mut Context<'_>) -> bool {
        match &self.passed {
            Some(passed) => !passed.done.load(Ordering::Acquire),
            None => {
                let passed = Arc::new(TurnPassed {
                    done: AtomicBool::new(false),
                    task: cx.waker().clone(),
                });
                let waker = Waker::from(Arc::clone(&passed));
                let mut turn = std::pin::pin!(tokio::task::yield_now());
                // A first poll only registers the deferred wake-up.
                let _ = turn.as_mut().poll(&mut Context::from_waker(&waker));
                self.passed = Some(passed);
                true
            }
        }
    }

    /// A chunk came: the next wait asks for a fresh turn.
    fn reset(&mut self) {
        self.passed = None;
    }
}

/// Most bytes gathered into one write before it goes out regardless.
const GATHER_LIMIT: usize = 16 * 1024;

impl Relay {
    /// `first` is the stream's first poll, already awaited by the caller (see
    /// `forward`): it goes out with the response head in one write.
    pub(crate) fn new(
        response: super::upstream::Answer,
        first: Polled,
        meter: Box<dyn StreamMeter>,
        finish: (Arc<UsageLog>, Pending),
        redactor: Arc<Upstream>,
        lane: Option<Arc<Lane>>,
        leftovers: Leftovers,
    ) -> Relay {
        Relay {
            upstream: response.into_stream(),
            scanner: SseScanner::default(),
            meter,
            finish: Some(finish),
            guard: TextGuard::new(Arc::clone(&redactor)),
            redactor,
            held: Some(first),
            out: BytesMut::new(),
            turn: Turn::default(),
            lane,
            driven: false,
            leftovers: Some(leftovers),
        }
    }

    /// Record the call, with what went wrong (`fault`: the provider's doing, as the
    /// agent met it).
    fn record(&mut self, error: Option<String>, fault: Option<ProviderFault>) {
        if let Some((log, mut pending)) = self.finish.take() {
            pending.set_tokens(self.meter.tokens());
            // Read without the agent, the stream's end was nothing the agent met.
            pending.entry.fault = fault.filter(|_| self.leftovers.is_some());
            // Read to its end without the agent: it got only the start.
            let error = error.or_else(|| {
                self.leftovers.is_none().then(|| {
                    "the agent hung up mid-stream; the rest was read from the provider for its usage"
                        .to_owned()
                })
            });
            pending.entry.error = error.map(|e| self.redactor.redact(&e));
            log.record(pending);
        }
    }

    /// What went wrong with a stream that reached its end, if anything: an error event
    /// the provider sent, or no end marker before the connection closed.
    fn ending(&self) -> (Option<String>, Option<ProviderFault>) {
        match self.meter.problem() {
            Some(problem) => (Some(problem), self.stream_error()),
            None if !self.meter.complete() => (
                Some("upstream stream ended before its end marker".to_owned()),
                Some(ProviderFault::Cut),
            ),
            None => (None, None),
        }
    }

    /// The fault of a stream that reported a failure: the provider's only when it says
    /// the failure is its own (an answer to the agent's request is none).
    fn stream_error(&self) -> Option<ProviderFault> {
        self.meter
            .providers_problem()
            .then_some(ProviderFault::StreamError)
    }

    /// The stream from here on, to be read for its usage without the agent: this
    /// relay keeps nothing of it (what it gathered for the agent is dropped).
    fn rest(&mut self) -> Relay {
        Relay {
            upstream: std::mem::replace(
                &mut self.upstream,
                Box::pin(futures_util::stream::empty()),
            ),
            scanner: std::mem::take(&mut self.scanner),
            meter: std::mem::replace(&mut self.meter, Box::new(Spent)),
            finish: self.finish.take(),
            redactor: Arc::clone(&self.redactor),
            guard: TextGuard::new(Arc::clone(&self.redactor)),
            held: self.held.take(),
            out: BytesMut::new(),
            turn: Turn::default(),
            lane: self.lane.take(),
            driven: false,
            leftovers: None,
        }
    }

    /// Show `events` to the meter; return the bytes of those to forward, as the
    /// [`TextGuard`] lets them go (an event whose text could begin the key waits).
    fn pass(&mut self, events: Vec<SseEvent>) -> Vec<u8> {
        let mut out = Vec::new();
        for event in events {
            if self.meter.observe(&event.data) {
                self.guard.push(&event.data, event.raw, &mut out);
            }
        }
        out
    }
}

/// One poll of the upstream byte stream.
pub(crate) type Polled = Option<Result<Bytes, super::upstream::BodyError>>;

impl Relay {
    /// The gathered bytes as one frame for the agent, the key redacted. Bytes at the
    /// end that could begin the key stay for the next frame (`whole`: none stay, the
    /// stream is over).
    fn flush(&mut self, whole: bool) -> Frame<Bytes> {
        let ready = if whole {
            self.out.len()
        } else {
            self.ready_len()
        };
        let ready = self.out.split_to(ready).freeze();
        Frame::data(self.redactor.redact_bytes(ready))
    }

    /// The gathered bytes that may go out now: all but an end that could begin the key.
    fn ready_len(&self) -> usize {
        self.out.len() - self.redactor.key_start_at_end(&self.out)
    }

    /// Meter one upstream chunk; append what the agent gets to `out`: whole events
    /// only, since whether an event's text may go depends on all of it (and, when it
    /// could begin the key, on the next).
    fn take_chunk(&mut self, chunk: Bytes, out: &mut BytesMut) {
        let events = self.scanner.push(&chunk);
        out.extend_from_slice(&self.pass(events));
    }

    /// The event held back by the guard, gathered to go out: the stream ends or
    /// breaks, so nothing follows it.
    fn release(&mut self) {
        let mut tail = Vec::new();
        self.guard.flush(&mut tail);
        self.out.extend_from_slice(&tail);
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
                None => match this.upstream.as_mut().poll_next(cx) {
                    Poll::Ready(item) => {
                        this.driven = false;
                        item
                    }
                    Poll::Pending => {
                        if let Some(lane) = this.lane.as_ref().filter(|_| !this.driven) {
                            // Let the lane decode what has arrived, then look again.
                            this.driven = true;
                            drop(lane.poll_connection(cx));
                            continue;
                        }
                        this.driven = false;
                        // Nothing to send but, perhaps, the start of the key: wait for
                        // the bytes that say whether it is.
                        if this.ready_len() == 0 {
                            return Poll::Pending;
                        }
                        if this.lane.is_none()
                            && this.out.len() < GATHER_LIMIT
                            && this.turn.wait(cx)
                        {
                            return Poll::Pending;
                        }
                        this.turn.reset();
                        return Poll::Ready(Some(Ok(this.flush(false))));
                    }
                },
            };
            match item {
                Some(Ok(chunk)) => {
                    this.turn.reset();
                    let mut out = std::mem::take(&mut this.out);
                    this.take_chunk(chunk, &mut out);
                    this.out = out;
                    // The first chunk is gathered with those that arrived with it, like
                    // every other: the head and the whole burst leave in one write.
                    if this.out.len() >= GATHER_LIMIT && this.ready_len() > 0 {
                        return Poll::Ready(Some(Ok(this.flush(false))));
                    }
                }
                Some(Err(e)) => {
                    this.release();
                    if !this.out.is_empty() {
                        // What arrived before the break reaches the agent first.
                        this.held = Some(Some(Err(e)));
                        return Poll::Ready(Some(Ok(this.flush(true))));
                    }
                    let message = this.redactor.redact(&format!("upstream stream cut: {e}"));
                    this.record(Some(message.clone()), Some(ProviderFault::Cut));
                    // Failing the body makes hyper cut the agent's stream too, so the
                    // agent sees the same break the proxy saw.
                    return Poll::Ready(Some(Err(std::io::Error::other(message))));
                }
                None => {
                    let rest = this.scanner.finish();
                    let tail = this.pass(rest.into_iter().collect());
                    this.out.extend_from_slice(&tail);
                    this.release();
                    let (error, fault) = this.ending();
                    this.record(error, fault);
                    return Poll::Ready((!this.out.is_empty()).then(|| Ok(this.flush(true))));
                }
            }
        }
    }
}

impl Drop for Relay {
    /// The agent closed its connection mid-stream: the rest goes to be read for its
    /// usage. Or the proxy shut down while it was being read: it is recorded as cut.
    fn drop(&mut self) {
        if self.finish.is_none() {
            return;
        }
        if let Some(leftovers) = self.leftovers.take() {
            leftovers.keep(self.rest());
        } else {
            // Cut here, not by the provider: only an error event it sent is its fault.
            let (error, fault) = match self.meter.problem() {
                Some(problem) => (Some(problem), self.stream_error()),
                None => (
                    (!self.meter.complete()).then(|| {
                        "stream cut before it ended: the agent went away or the proxy shut down"
                            .to_owned()
                    }),
                    None,
                ),
            };
            self.record(error, fault);
        }
    }
}
