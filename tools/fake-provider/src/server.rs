//! The HTTP side: the accept loop, the routes, and one model call from its request to
//! its answer, in this order: the key, the body and the answer it carries, if any, the
//! call's number and plan, the key's budget or a drawn fault (each after the fault's
//! latency), the latency, then the answer, whole or streamed, generated or given, as
//! the plan delivers it: in full, cut, or (a stream) failing with its protocol's
//! error event.

use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, Limited, StreamBody};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CACHE_CONTROL, CONTENT_LENGTH, CONTENT_TYPE, RETRY_AFTER};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::config::Config;
use crate::given::{self, Given, GivenBody};
use crate::ledger::{Book, StreamBill};
use crate::plan::{Fault, Plan};
use crate::protocol::{ErrorKind, Event, Protocol, Reply};
use crate::ratelimit::RateLimiter;
use crate::usage::Usage;

pub(crate) type Body = UnsyncBoxBody<Bytes, std::io::Error>;

/// Where the ledger is read.
pub const LEDGER_PATH: &str = "/_fake/ledger";

/// The call's number, on every model call's answer: what [`Plan::of`] takes.
pub const CALL_HEADER: &str = "x-fake-provider-call";

/// Agents send whole conversations; this bounds memory, not any context size.
const MAX_REQUEST_BYTES: usize = 64 * 1024 * 1024;

/// A request's head must fit in the connection's read buffer, and a given answer
/// (`x-gauntlet-answer`) is in the head: hyper's default of about 400 KiB would refuse
/// a long scripted answer before the fake could say why.
const MAX_HEAD_BYTES: usize = 16 * 1024 * 1024;

/// What every connection shares.
pub(crate) struct Shared {
    pub(crate) config: Config,
    pub(crate) book: Arc<Book>,
    pub(crate) limiter: RateLimiter,
    pub(crate) next_seq: AtomicU64,
}

/// Accept until `stop` changes; the connections still open then are dropped with the
/// set that holds them.
pub(crate) async fn serve(
    listener: TcpListener,
    shared: Arc<Shared>,
    mut stop: watch::Receiver<bool>,
) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let _ = stream.set_nodelay(true);
                    let shared = Arc::clone(&shared);
                    let service = hyper::service::service_fn(move |request| {
                        let shared = Arc::clone(&shared);
                        async move { Ok::<_, Infallible>(route(request, &shared).await) }
                    });
                    connections.spawn(async move {
                        let _ = hyper::server::conn::http1::Builder::new()
                            .max_buf_size(MAX_HEAD_BYTES)
                            .serve_connection(TokioIo::new(stream), service)
                            .await;
                    });
                }
                // Out of descriptors, say: back off rather than spin.
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            },
            _ = stop.changed() => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

async fn route(request: Request<Incoming>, shared: &Shared) -> Response<Body> {
    let path = request.uri().path().to_owned();
    match (request.method(), path.as_str()) {
        (&Method::GET, LEDGER_PATH) => json(
            StatusCode::OK,
            &serde_json::to_value(shared.book.snapshot()).unwrap_or(Value::Null),
        ),
        (&Method::POST, p) if p.ends_with("/messages/count_tokens") => {
            count_tokens(request.into_body()).await
        }
        (&Method::POST, p) => match Protocol::of_path(p) {
            Some(protocol) => call(protocol, request, shared).await,
            None => not_found(&path),
        },
        _ => not_found(&path),
    }
}

fn not_found(path: &str) -> Response<Body> {
    json(
        StatusCode::NOT_FOUND,
        &json!({"error": {"message": format!("no such endpoint: {path}"), "type": "invalid_request_error", "param": null, "code": "not_found"}}),
    )
}

/// Claude Code asks before long requests; not a model call, so neither numbered nor
/// billed.
async fn count_tokens(body: Incoming) -> Response<Body> {
    let bytes = read(body).await.unwrap_or_default();
    json(
        StatusCode::OK,
        &json!({"input_tokens": Usage::of_call(bytes.len(), 0).input}),
    )
}

async fn read(body: Incoming) -> Option<Bytes> {
    Limited::new(body, MAX_REQUEST_BYTES)
        .collect()
        .await
        .ok()
        .map(|c| c.to_bytes())
}

async fn call(protocol: Protocol, request: Request<Incoming>, shared: &Shared) -> Response<Body> {
    let Some(key) = protocol.key(request.headers()) else {
        shared.book.unauthorized();
        return error(protocol, &ErrorKind::Unauthorized, None);
    };
    let given = given::read(protocol, request.headers());
    let raw = read(request.into_body()).await;
    let body = raw
        .as_ref()
        .and_then(|raw| serde_json::from_slice::<Value>(raw).ok())
        .filter(Value::is_object);
    let seq = shared.next_seq.fetch_add(1, Ordering::SeqCst);
    shared.book.with(&key, |k| k.calls += 1);
    let Some(body) = body else {
        shared.book.with(&key, |k| k.bad_requests += 1);
        let why = "the request body is not a JSON object".to_owned();
        return error(protocol, &ErrorKind::BadRequest(why), Some(seq));
    };
    let given = match given {
        Ok(given) => given,
        Err(bad) => {
            shared.book.with(&key, |k| k.refused_answers += 1);
            return error(protocol, &ErrorKind::BadRequest(bad.to_string()), Some(seq));
        }
    };
    let plan = Plan::of(&shared.config, seq);
    if let Some(refusal) = refusal(protocol, &key, &plan, shared) {
        tokio::time::sleep(plan.fault_ttfb()).await;
        let mut response = refusal;
        numbered(&mut response, seq);
        return response;
    }
    tokio::time::sleep(plan.ttfb()).await;
    let model = body["model"].as_str().unwrap_or("fake");
    let answer = match given {
        Some(given) => {
            shared.book.with(&key, |k| k.given_answers += 1);
            Answer::given(given)
        }
        None => Answer::generated(
            protocol,
            &body,
            seq,
            raw.as_ref().map_or(0, Bytes::len),
            shared,
        ),
    };
    let mut response = match answer {
        Answer::Whole {
            content_type,
            bytes,
            usage,
        } => {
            let cut = plan.cut_whole_at(bytes.len());
            shared.book.whole(&key, usage, cut.is_some());
            match cut {
                Some(sent) => cut_whole(content_type, bytes, sent),
                None => whole(StatusCode::OK, content_type, bytes),
            }
        }
        Answer::Stream {
            content_type,
            mut events,
            full,
        } => {
            let fails = plan.stream_error_after(events.len());
            if let Some(k) = fails {
                events.truncate(k);
                events.push(protocol.error_event(seq, model, k));
            }
            let gaps = plan.chunk_gaps(events.len());
            let cut_after = plan.cut_after(events.len());
            let bill = StreamBill::open(Arc::clone(&shared.book), key, full, fails.is_some());
            sse(
                content_type,
                crate::stream::frames(events, gaps, cut_after, bill),
            )
        }
    };
    numbered(&mut response, seq);
    response
}

/// The 429 or 5xx a call is refused with, by its key's budget or its plan, counted.
fn refusal(protocol: Protocol, key: &str, plan: &Plan, shared: &Shared) -> Option<Response<Body>> {
    if let Err(wait) = shared.limiter.admit(key) {
        shared.book.with(key, |k| k.rate_limited += 1);
        let limit = shared.config.requests_per_minute;
        return Some(with_retry_after(
            error(protocol, &ErrorKind::RateLimited { limit }, None),
            wait,
        ));
    }
    match plan.fault()? {
        Fault::RateLimited => {
            shared.book.with(key, |k| k.rate_limited += 1);
            let wait = shared.config.faults.retry_after_secs;
            Some(with_retry_after(
                error(protocol, &ErrorKind::RateLimited { limit: None }, None),
                wait,
            ))
        }
        Fault::ServerError(status) => {
            shared.book.with(key, |k| k.server_errors += 1);
            Some(error(protocol, &ErrorKind::Server(status), None))
        }
    }
}

/// What a call answered 200 is answered with, before its plan shapes its delivery.
enum Answer {
    Whole {
        content_type: HeaderValue,
        bytes: Bytes,
        usage: Option<Usage>,
    },
    Stream {
        content_type: HeaderValue,
        events: Vec<Event>,
        /// What the stream is billed, whatever of it is sent.
        full: Usage,
    },
}

impl Answer {
    fn given(given: Given) -> Answer {
        match given.body {
            GivenBody::Whole { bytes, usage } => Answer::Whole {
                content_type: given.content_type,
                bytes,
                usage,
            },
            GivenBody::Stream { events } => Answer::Stream {
                content_type: given.content_type,
                full: events
                    .iter()
                    .rev()
                    .find_map(|e| e.reported)
                    .unwrap_or_default(),
                events,
            },
        }
    }

    fn generated(
        protocol: Protocol,
        body: &Value,
        seq: u64,
        request_bytes: usize,
        shared: &Shared,
    ) -> Answer {
        // An answer stops at the request's own output limit, as a provider's does.
        let limit = protocol.output_limit(body);
        let chunks = limit.map_or(shared.config.answer_chunks, |l| {
            l.min(shared.config.answer_chunks)
        });
        let reply = Reply {
            seq,
            model: body["model"].as_str().unwrap_or("fake"),
            pieces: (0..chunks).map(|i| format!("fake{i} ")).collect(),
            usage: Usage::of_call(request_bytes, chunks),
            cut_at_limit: limit.is_some_and(|l| l < shared.config.answer_chunks),
        };
        if body["stream"] == Value::Bool(true) {
            Answer::Stream {
                content_type: HeaderValue::from_static("text/event-stream"),
                events: protocol.events(&reply, protocol.stream_states_usage(body)),
                full: reply.usage,
            }
        } else {
            Answer::Whole {
                content_type: HeaderValue::from_static("application/json"),
                bytes: Bytes::from(protocol.whole(&reply).to_string()),
                usage: Some(reply.usage),
            }
        }
    }
}

fn numbered(response: &mut Response<Body>, seq: u64) {
    response
        .headers_mut()
        .insert(CALL_HEADER, HeaderValue::from(seq));
}

fn error(protocol: Protocol, kind: &ErrorKind, seq: Option<u64>) -> Response<Body> {
    let (status, body) = protocol.error(kind);
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = json(status, &body);
    if let Some(seq) = seq {
        numbered(&mut response, seq);
    }
    response
}

fn with_retry_after(mut response: Response<Body>, secs: u64) -> Response<Body> {
    response
        .headers_mut()
        .insert(RETRY_AFTER, HeaderValue::from(secs));
    response
}

fn json(status: StatusCode, value: &Value) -> Response<Body> {
    whole(
        status,
        HeaderValue::from_static("application/json"),
        Bytes::from(value.to_string()),
    )
}

fn whole(status: StatusCode, content_type: HeaderValue, bytes: Bytes) -> Response<Body> {
    let mut response = Response::new(
        Full::new(bytes)
            .map_err(|never| match never {})
            .boxed_unsync(),
    );
    *response.status_mut() = status;
    response.headers_mut().insert(CONTENT_TYPE, content_type);
    response
}

/// A whole answer whose head declares all of `bytes` and whose body stops after
/// `sent` of them.
fn cut_whole(content_type: HeaderValue, bytes: Bytes, sent: usize) -> Response<Body> {
    let length = bytes.len();
    let mut response = Response::new(BodyExt::boxed_unsync(StreamBody::new(
        crate::stream::cut_whole(bytes, sent),
    )));
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, content_type);
    headers.insert(CONTENT_LENGTH, HeaderValue::from(length));
    response
}

fn sse<S>(content_type: HeaderValue, frames: S) -> Response<Body>
where
    S: futures_util::Stream<Item = Result<hyper::body::Frame<Bytes>, std::io::Error>>
        + Send
        + 'static,
{
    let mut response = Response::new(BodyExt::boxed_unsync(StreamBody::new(frames)));
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, content_type);
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}
