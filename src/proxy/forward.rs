//! byok: forwarding a call to the provider and metering its answer, for every protocol.
//!
//! The provider's answer reaches the agent as it was sent: status, body, the headers an
//! agent acts on, and a stream chunk by chunk as it arrives. Usage is read only from
//! what the provider sent (never estimated), and every failure is recorded as observed.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{HeaderMap, Response, StatusCode};
use serde_json::Value;

use super::body::{self, Body};
use super::envelope::{self, Envelope};
use super::error::CallError;
use super::log::{Pending, Tokens, UsageLog};
use super::peek;
use super::relay::{Leftovers, Relay};
use super::sse::SseScanner;
use super::upstream::{Answer, BodyError, Lane, Upstream};
use super::wire::{self, ErrorKind, Protocol};
use crate::evidence::provider::{ProviderFault, Retry};

/// Longest excerpt of an upstream error body kept in a usage entry.
const ERROR_EXCERPT_CHARS: usize = 300;

/// A provider's answer: still to be read, or a fault's answer already read whole
/// (whether it was billed decides whether it may be retried), with its head.
enum Answered {
    Live(Answer),
    Read(Head, Result<Bytes, BodyError>),
}

/// What the agent gets of an answer's head: its status, and its content type and the
/// headers an agent acts on, redacted as the provider's words are.
#[derive(Clone)]
struct Head {
    status: StatusCode,
    content_type: Option<HeaderValue>,
    passed: HeaderMap,
}

impl Head {
    fn of(answer: &Answer, upstream: &Upstream) -> Head {
        Head {
            status: answer.status(),
            content_type: answer
                .headers()
                .get(CONTENT_TYPE)
                .map(|v| upstream.redact_header(v)),
            passed: upstream.redact_headers(passed_headers(answer.headers())),
        }
    }
}

/// How long the provider asked to be left alone: `retry-after-ms` (OpenAI's), else
/// `retry-after` in seconds, as model providers send it. An HTTP date, or anything
/// else, is no word the proxy can wait by: the policy's own backoff applies.
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let text = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    let secs = text("retry-after-ms")
        .and_then(|v| v.parse::<f64>().ok())
        .map(|ms| ms / 1000.0)
        .or_else(|| text("retry-after").and_then(|v| v.parse::<f64>().ok()))?;
    // At most a day: beyond any bound a policy has, and inside what a duration holds.
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(86_400.0)))
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// One call to forward.
pub(crate) struct Outgoing<'a> {
    pub(crate) protocol: Protocol,
    /// Path under the upstream base, with the query as received (`messages?beta=true`).
    pub(crate) path: String,
    pub(crate) client_headers: &'a HeaderMap,
    /// Headers of the proxy's own for the provider: a scripted answer it is to serve.
    pub(crate) attached: Option<&'a HeaderMap>,
    /// The body as received, forwarded unchanged unless usage had to be asked for.
    pub(crate) raw: Bytes,
    pub(crate) envelope: Envelope,
}

/// A call handed to the provider and not yet recorded. The future that forwards it is
/// dropped when the agent closes its connection (killed at its deadline, say) or the
/// proxy shuts down while the provider is still answering; the provider may have served
/// and billed the call all the same, so the guard records it then, with why it was
/// cut. Once the answer is a stream, the stream's relay records it instead.
///
/// Cut while the proxy waits to try the call again, the call ends on the provider's
/// fault it was absorbing: the agent met it as surely as one passed on (a trial killed at
/// its deadline during that wait is the provider's failure, not the agent's), and no
/// attempt was in flight that the provider could have been answering.
struct InFlight<'a> {
    log: &'a Arc<UsageLog>,
    pending: Option<Pending>,
    /// The fault being absorbed while the proxy waits before the next attempt.
    waiting: Option<ProviderFault>,
}

impl InFlight<'_> {
    /// An answer the proxy took itself, before trying the call again.
    fn retried(&mut self, retry: Retry) {
        if let Some(pending) = self.pending.as_mut() {
            pending.entry.retries.push(retry);
        }
    }

    /// Wait `wait` before the next attempt, after the answer the last retry kept.
    async fn wait_to_retry(&mut self, wait: Duration) {
        self.waiting = self
            .pending
            .as_ref()
            .and_then(|p| p.entry.retries.last())
            .map(|r| r.fault);
        tokio::time::sleep(wait).await;
        self.waiting = None;
    }

    /// The call, for the code that records it itself.
    fn take(&mut self) -> Pending {
        self.pending
            .take()
            .expect("an in-flight call is taken once")
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if let Some(mut pending) = self.pending.take() {
            pending.entry.source = "upstream".to_owned();
            pending.entry.error = Some(match self.waiting {
                Some(fault) => {
                    pending.entry.fault = Some(fault);
                    if let Some(last) = pending.entry.retries.last() {
                        pending.entry.status = last.status;
                    }
                    format!("cut while the proxy waited to retry the provider's {fault}: the agent went away or the proxy shut down")
                }
                None => "cut before the provider's answer was read: the agent went away or the proxy shut down"
                    .to_owned(),
            });
            self.log.record(pending);
        }
    }
}

pub(crate) async fn forward(
    upstream: &Arc<Upstream>,
    lane: Option<&Arc<Lane>>,
    leftovers: &Leftovers,
    log: &Arc<UsageLog>,
    pending: Pending,
    call: Outgoing<'_>,
) -> Response<Body> {
    let mut flight = InFlight {
        log,
        pending: Some(pending),
        waiting: None,
    };
    let protocol = call.protocol;
    let stream = call.envelope.stream;
    let asking = (stream && !call.envelope.usage_asked)
        .then(|| envelope::object(&call.raw).ok())
        .flatten()
        .and_then(|mut body| {
            protocol
                .ask_for_stream_usage(&mut body)
                .then(|| Bytes::from(Value::Object(body).to_string()))
        });
    let injected = asking.is_some();
    let outgoing = asking.unwrap_or(call.raw);

    let policy = upstream.retry();
    let mut waited = Duration::ZERO;
    let response = loop {
        let attempt = Instant::now();
        let sent = upstream
            .post(
                &call.path,
                outgoing.clone(),
                call.client_headers,
                call.attached,
                protocol.auth(),
                lane.map(Arc::as_ref),
            )
            .await;
        let response = match sent {
            Ok(response) => response,
            Err(e) => {
                let message = e.to_string();
                let fault = if e.never_sent() {
                    ProviderFault::Unreachable
                } else {
                    ProviderFault::Cut
                };
                if e.never_sent() {
                    let taken = flight.pending.as_ref().map_or(0, |p| p.entry.retries.len());
                    if let Some(wait) = policy.next_wait(taken, None, waited) {
                        flight.retried(Retry {
                            status: StatusCode::BAD_GATEWAY.as_u16(),
                            fault,
                            error: message,
                            duration_ms: millis(attempt.elapsed()),
                            waited_ms: millis(wait),
                        });
                        flight.wait_to_retry(wait).await;
                        waited += wait;
                        continue;
                    }
                }
                let mut pending = flight.take();
                pending.entry.status = StatusCode::BAD_GATEWAY.as_u16();
                pending.entry.source = "proxy".to_owned();
                pending.entry.error = Some(message.clone());
                pending.entry.fault = Some(fault);
                log.record(pending);
                return protocol.error(ErrorKind::Upstream, &message);
            }
        };
        let Some(fault) = ProviderFault::of_status(response.status().as_u16()) else {
            break Answered::Live(response);
        };
        // A fault's answer is read whole here: whether it may be retried depends on
        // whether it was billed, which only its body says.
        let status = response.status();
        let asked = retry_after(response.headers());
        let head = Head::of(&response, upstream);
        let bytes = response.bytes().await;
        let billed = bytes
            .as_ref()
            .ok()
            .and_then(|b| error_usage(protocol, b))
            .is_some();
        let taken = flight.pending.as_ref().map_or(0, |p| p.entry.retries.len());
        if let (false, Ok(body), Some(wait)) =
            (billed, &bytes, policy.next_wait(taken, asked, waited))
        {
            let parsed = peek::metered(body);
            flight.retried(Retry {
                status: status.as_u16(),
                fault,
                error: error_summary(upstream, status, parsed.as_ref(), body),
                duration_ms: millis(attempt.elapsed()),
                waited_ms: millis(wait),
            });
            flight.wait_to_retry(wait).await;
            waited += wait;
            continue;
        }
        break Answered::Read(head, bytes);
    };
    let Head {
        status,
        content_type,
        passed,
    } = match &response {
        Answered::Live(answer) => Head::of(answer, upstream),
        Answered::Read(head, _) => head.clone(),
    };
    // Read as what the provider sent, whatever the request seemed to ask for: a stream
    // read whole meters nothing, and a whole answer read as a stream neither.
    let a_stream = status.is_success() && answers_a_stream(content_type.as_ref(), stream);
    if let Some(pending) = flight.pending.as_mut() {
        pending.entry.status = status.as_u16();
        pending.entry.stream = a_stream;
    }

    let bytes = match response {
        Answered::Live(mut response) if a_stream => {
            // Waiting for the first chunk before answering lets the response head and
            // that chunk leave in one write: the agent cannot act on the head alone,
            // and a separate write costs it a wake-up (measured: benches/proxy.rs).
            let first = response.chunk().await.transpose();
            // A lane's answer is decoded by this task's own polls of the lane (see
            // `relay`).
            let lane = matches!(response, Answer::Lane(_))
                .then(|| lane.cloned())
                .flatten();
            let mut pending = flight.take();
            pending.entry.source = "upstream".to_owned();
            let relay = Relay::new(
                response,
                first,
                protocol.stream_meter(injected),
                (Arc::clone(log), pending),
                Arc::clone(upstream),
                lane,
                leftovers.clone(),
            );
            let mut streamed = body::sse(status, content_type, relay);
            streamed.headers_mut().extend(passed);
            return streamed;
        }
        Answered::Live(response) => response.bytes().await,
        Answered::Read(_, bytes) => bytes,
    };
    let mut pending = flight.take();
    pending.entry.source = "upstream".to_owned();
    let bytes = match bytes {
        Ok(bytes) => bytes,
        Err(e) => {
            let message = upstream.redact(&format!("upstream response body cut: {e}"));
            pending.entry.status = StatusCode::BAD_GATEWAY.as_u16();
            pending.entry.error = Some(message.clone());
            pending.entry.fault = Some(ProviderFault::Cut);
            log.record(pending);
            return protocol.error(ErrorKind::Upstream, &message);
        }
    };
    let parsed = peek::metered(&bytes);
    let tokens = if status.is_success() {
        parsed.as_ref().and_then(|v| protocol.usage(v))
    } else {
        error_usage(protocol, &bytes)
    };
    if let Some(tokens) = tokens {
        pending.set_tokens(tokens);
    }
    pending.entry.fault = ProviderFault::of_status(status.as_u16());
    pending.entry.error = if !status.is_success() {
        Some(error_summary(upstream, status, parsed.as_ref(), &bytes))
    } else if parsed.is_none() {
        Some(format!(
            "upstream answered status {} with a body that is not json ({} bytes): {}",
            status.as_u16(),
            bytes.len(),
            redacted_excerpt(upstream, &bytes)
        ))
    } else if tokens.is_none() {
        Some("upstream response carries no usage block".to_owned())
    } else {
        None
    };
    log.record(pending);
    let mut whole = body::bytes(status, content_type, upstream.redact_body(bytes));
    whole.headers_mut().extend(passed);
    whole
}

/// The provider's answer to a call that is not a model call (the model list, a token
/// count), or why there is none: passed through unmetered, and no less the provider's
/// words, so redacted as a model call's answer is. `what` names the call in the error
/// of an answer cut short.
pub(crate) async fn unmetered(
    upstream: &Upstream,
    sent: Result<Answer, CallError>,
    protocol: Protocol,
    what: &str,
) -> Response<Body> {
    let response = match sent {
        Ok(response) => response,
        Err(e) => return protocol.error(ErrorKind::Upstream, &e.to_string()),
    };
    let status = response.status();
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .map(|v| upstream.redact_header(v));
    match response.bytes().await {
        Ok(bytes) => body::bytes(status, content_type, upstream.redact_body(bytes)),
        Err(e) => protocol.error(
            ErrorKind::Upstream,
            &upstream.redact(&format!("upstream {what} cut: {e}")),
        ),
    }
}

/// The usage an error answer carries: in its JSON body, or in the events of a body that
/// is a stream (a provider that failed a stream after billing some of it, and said so
/// in its status). Either way the call was billed: it is metered, and never sent again.
fn error_usage(protocol: Protocol, bytes: &[u8]) -> Option<Tokens> {
    if let Some(tokens) = peek::metered(bytes).and_then(|v| protocol.usage(&v)) {
        return Some(tokens);
    }
    let mut scanner = SseScanner::default();
    let mut events = scanner.push(bytes);
    events.extend(scanner.finish());
    if events.is_empty() {
        return None;
    }
    let mut meter = protocol.stream_meter(false);
    for event in &events {
        meter.observe(&event.data);
    }
    let tokens = meter.tokens();
    (tokens != Tokens::default()).then_some(tokens)
}

/// Whether a successful answer is a stream: the provider says so (`text/event-stream`),
/// or the agent may have asked for one and the answer is not JSON (a provider that
/// streams under another content type).
fn answers_a_stream(content_type: Option<&HeaderValue>, asked: bool) -> bool {
    let essence = content_type
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|v| v.trim().to_ascii_lowercase());
    match essence.as_deref() {
        Some("text/event-stream") => true,
        Some(json) if json == "application/json" || json.ends_with("+json") => false,
        _ => asked,
    }
}

/// The provider's headers an agent acts on (rate-limit backoff, request ids for
/// support); everything else about the connection is the proxy's own.
fn passed_headers(headers: &HeaderMap) -> HeaderMap {
    headers
        .iter()
        .filter(|(name, _)| {
            let name = name.as_str();
            name == "retry-after"
                || name == "retry-after-ms"
                || name.starts_with("x-ratelimit-")
                || name.starts_with("anthropic-ratelimit-")
                || name.ends_with("request-id")
        })
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect()
}

/// `upstream status 429: <message>`, from the provider's error shape when there is one,
/// the key redacted before the excerpt is cut: cut first, a key that straddles the cut
/// would keep its start, which no redaction of the whole key matches (and a provider
/// that echoes what the agent sent before the key lets the agent choose where it falls).
fn error_summary(
    upstream: &Upstream,
    status: StatusCode,
    parsed: Option<&Value>,
    bytes: &[u8],
) -> String {
    let message = match parsed.and_then(wire::error_message) {
        Some(message) => excerpt(&upstream.redact(message)),
        None => redacted_excerpt(upstream, bytes),
    };
    format!("upstream status {}: {message}", status.as_u16())
}

/// The start of a provider's body as text, the key redacted first, spelled with JSON
/// escapes too (`Upstream::redact_body`).
fn redacted_excerpt(upstream: &Upstream, bytes: &[u8]) -> String {
    let body = upstream.redact_body(Bytes::copy_from_slice(bytes));
    excerpt(&upstream.redact(&String::from_utf8_lossy(&body)))
}

fn excerpt(text: &str) -> String {
    text.chars().take(ERROR_EXCERPT_CHARS).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_headers_an_agent_backs_off_by_are_passed_on_and_no_other() {
        let mut h = HeaderMap::new();
        for (k, v) in [
            ("retry-after", "3"),
            ("retry-after-ms", "2500"),
            ("x-ratelimit-remaining-requests", "0"),
            ("anthropic-ratelimit-tokens-reset", "soon"),
            ("x-request-id", "req_1"),
            ("set-cookie", "a=b"),
            ("connection", "close"),
        ] {
            h.insert(k, HeaderValue::from_static(v));
        }
        let mut names: Vec<String> = passed_headers(&h).keys().map(|k| k.to_string()).collect();
        names.sort();
        assert_eq!(
            names,
            [
                "anthropic-ratelimit-tokens-reset",
                "retry-after",
                "retry-after-ms",
                "x-ratelimit-remaining-requests",
                "x-request-id"
            ]
        );
    }

    #[test]
    fn the_providers_wait_is_read_from_its_headers_in_ms_first() {
        let headers = |pairs: &[(&'static str, &'static str)]| {
            let mut h = HeaderMap::new();
            for (k, v) in pairs {
                h.insert(*k, HeaderValue::from_static(v));
            }
            h
        };
        let ms = Duration::from_millis;
        assert_eq!(
            retry_after(&headers(&[("retry-after", "3")])),
            Some(ms(3000))
        );
        assert_eq!(
            retry_after(&headers(&[("retry-after", " 0.5 ")])),
            Some(ms(500))
        );
        assert_eq!(
            retry_after(&headers(&[
                ("retry-after", "3"),
                ("retry-after-ms", "1200")
            ])),
            Some(ms(1200))
        );
        for odd in ["-1", "NaN", "inf", "Wed, 21 Oct 2026 07:28:00 GMT", ""] {
            assert_eq!(
                retry_after(&headers(&[("retry-after", odd)])),
                None,
                "{odd}"
            );
        }
        assert_eq!(retry_after(&headers(&[])), None);
        assert_eq!(
            retry_after(&headers(&[("retry-after", "1e300")])),
            Some(Duration::from_secs(86_400))
        );
    }

    #[test]
    fn an_answer_is_read_as_the_stream_or_the_body_the_provider_says_it_is() {
        let is = |content_type: Option<&'static str>, asked| {
            answers_a_stream(content_type.map(HeaderValue::from_static).as_ref(), asked)
        };
        for asked in [false, true] {
            assert!(is(Some("text/event-stream"), asked));
            assert!(is(Some("Text/Event-Stream; charset=utf-8"), asked));
            assert!(!is(Some("application/json"), asked));
            assert!(!is(Some("application/json; charset=utf-8"), asked));
            assert!(!is(Some("application/problem+json"), asked));
            // Nothing said, or something else: as the request may have asked.
            assert_eq!(is(Some("text/plain"), asked), asked);
            assert_eq!(is(None, asked), asked);
        }
    }
}
