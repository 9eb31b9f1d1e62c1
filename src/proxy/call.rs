//! One model call, whatever its protocol: read the body (whole when scripted, its
//! envelope when forwarded), check the budget, then answer from the script or forward to
//! the provider, and record the call.

use std::sync::Arc;

use bytes::Bytes;
use hyper::body::Incoming;
use hyper::{Request, Response};
use serde_json::{json, Map, Value};

use super::body::{self, Body};
use super::envelope::{self, Envelope};
use super::error::CallError;
use super::forward::{self, Outgoing};
use super::log::Pending;
use super::relay::Leftovers;
use super::state::{Mode, State};
use super::upstream::Lane;
use super::wire::{ErrorKind, Protocol};
use super::{messages, meter, script};

pub(crate) async fn handle(
    state: &State,
    lane: Option<&Arc<Lane>>,
    leftovers: &Leftovers,
    protocol: Protocol,
    request: Request<Incoming>,
) -> Response<Body> {
    let (parts, incoming) = request.into_parts();
    let path = parts.uri.path().to_owned();
    let pending = state.log.begin(protocol.name(), &path);
    let seq = pending.entry.seq;
    let response = answer(state, lane, leftovers, protocol, parts, incoming, pending).await;
    state.calls.tee(seq, response)
}

async fn answer(
    state: &State,
    lane: Option<&Arc<Lane>>,
    leftovers: &Leftovers,
    protocol: Protocol,
    parts: hyper::http::request::Parts,
    incoming: Incoming,
    mut pending: Pending,
) -> Response<Body> {
    let raw = match body::read(incoming).await {
        Ok(raw) => raw,
        Err(e) => return refuse(state, protocol, pending, ErrorKind::BadRequest, e),
    };
    state.log.body(pending.entry.seq, &raw);
    state.calls.request(pending.entry.seq, &raw);
    match &state.mode {
        Mode::Scripted {
            script,
            model,
            latency,
            via,
        } => {
            let parsed = match envelope::object(&raw)
                .map_err(|e| e.to_string())
                .and_then(|body| protocol.parse(&body).map_err(|e| e.to_string()))
            {
                Ok(parsed) => parsed,
                Err(message) => {
                    return refuse(state, protocol, pending, ErrorKind::BadRequest, message)
                }
            };
            pending.entry.stream = parsed.stream;
            pending.entry.model = parsed.model.clone().or_else(|| Some(model.clone()));
            if let Some(message) = state.budget_spent() {
                return refuse(state, protocol, pending, ErrorKind::Budget, message);
            }
            let choice = state
                .repeats
                .give_up_on_a_loop(script::choose(script, &parsed.asked));
            let tokens = meter::scripted(parsed.input_bytes, choice.reply.output_bytes());
            let response = protocol.render(
                &parsed,
                &choice.reply,
                model,
                pending.entry.seq,
                tokens,
                *latency,
            );
            pending.entry.reply = Some(choice.note);
            if let Some(upstream) = via {
                // Served through the provider: what it sends back is relayed and
                // metered as in byok, usage and faults included.
                let envelope = match Envelope::read(&raw) {
                    Ok(envelope) => envelope,
                    Err(e) => return refuse(state, protocol, pending, ErrorKind::BadRequest, e),
                };
                let attached = match attach(response).await {
                    Ok(attached) => attached,
                    Err(e) => return refuse(state, protocol, pending, ErrorKind::Upstream, e),
                };
                let call = Outgoing {
                    protocol,
                    path: upstream_path(&parts.uri),
                    client_headers: &parts.headers,
                    attached: Some(&attached),
                    raw,
                    envelope,
                };
                return forward::forward(upstream, lane, leftovers, &state.log, pending, call)
                    .await;
            }
            pending.entry.status = response.status().as_u16();
            pending.entry.source = "scripted".to_owned();
            pending.set_tokens(tokens);
            // A whole reply comes after its latency, and its entry then, as a
            // provider's would; a stream spreads it over its events itself.
            if !parsed.stream && !latency.is_zero() {
                tokio::time::sleep(*latency).await;
            }
            state.log.record(pending);
            response
        }
        Mode::Byok(upstream) => {
            // The provider judges the conversation; the proxy reads only what it needs
            // to forward and meter the call.
            let envelope = match Envelope::read(&raw) {
                Ok(envelope) => envelope,
                Err(e) => return refuse(state, protocol, pending, ErrorKind::BadRequest, e),
            };
            pending.entry.stream = envelope.stream;
            pending.entry.model = envelope.model.clone();
            if let Some(message) = state.budget_spent() {
                return refuse(state, protocol, pending, ErrorKind::Budget, message);
            }
            let call = Outgoing {
                protocol,
                path: upstream_path(&parts.uri),
                client_headers: &parts.headers,
                attached: None,
                raw,
                envelope,
            };
            forward::forward(upstream, lane, leftovers, &state.log, pending, call).await
        }
    }
}

/// `POST /v1/messages/count_tokens`: Claude Code asks before long requests. Not a model
/// call, so not metered: scripted mode answers the count it would meter, byok mode
/// passes the provider's answer through.
pub(crate) async fn count_tokens(
    state: &State,
    lane: Option<&Arc<Lane>>,
    request: Request<Incoming>,
) -> Response<Body> {
    let protocol = Protocol::Messages;
    let (parts, incoming) = request.into_parts();
    let (raw, body) = match read_object(incoming).await {
        Ok(read) => read,
        Err(e) => return protocol.error(ErrorKind::BadRequest, &e.to_string()),
    };
    match &state.mode {
        Mode::Scripted { .. } => match messages::count_tokens(&body) {
            Ok(n) => body::json(hyper::StatusCode::OK, &json!({"input_tokens": n})),
            Err(e) => protocol.error(ErrorKind::BadRequest, &e.to_string()),
        },
        Mode::Byok(upstream) => {
            let path = upstream_path(&parts.uri);
            let sent = upstream
                .post(
                    &path,
                    raw,
                    &parts.headers,
                    None,
                    protocol.auth(),
                    lane.map(Arc::as_ref),
                )
                .await;
            forward::unmetered(upstream, sent, protocol, "token count").await
        }
    }
}

/// A rendered scripted answer as the headers that hand it to the provider serving it
/// ([`super::settings::ANSWER_HEADER`]).
async fn attach(response: Response<Body>) -> Result<hyper::HeaderMap, String> {
    use base64::Engine as _;
    use http_body_util::BodyExt;
    let content_type = response
        .headers()
        .get(hyper::header::CONTENT_TYPE)
        .cloned()
        .unwrap_or_else(|| hyper::header::HeaderValue::from_static("application/json"));
    let bytes = response
        .into_body()
        .collect()
        .await
        .map_err(|e| format!("cannot render the scripted answer: {e}"))?
        .to_bytes();
    let encoded = base64::engine::general_purpose::STANDARD.encode(&bytes);
    let mut headers = hyper::HeaderMap::new();
    headers.insert(
        super::settings::ANSWER_HEADER,
        hyper::header::HeaderValue::try_from(encoded)
            .map_err(|e| format!("cannot attach the scripted answer: {e}"))?,
    );
    headers.insert(super::settings::ANSWER_TYPE_HEADER, content_type);
    Ok(headers)
}

/// Answer an error the proxy decided itself, and record the call with it.
fn refuse(
    state: &State,
    protocol: Protocol,
    mut pending: Pending,
    kind: ErrorKind,
    message: impl std::fmt::Display,
) -> Response<Body> {
    let message = message.to_string();
    let response = protocol.error(kind, &message);
    pending.entry.status = response.status().as_u16();
    pending.entry.source = if kind == ErrorKind::Budget {
        "budget".to_owned()
    } else {
        state.local_source().to_owned()
    };
    pending.entry.error = Some(message);
    state.log.record(pending);
    response
}

/// The request body as received and as a JSON object, or why it is neither.
async fn read_object(incoming: Incoming) -> Result<(Bytes, Map<String, Value>), CallError> {
    let raw = body::read(incoming).await?;
    let body = envelope::object(&raw)?;
    Ok((raw, body))
}

/// The path under the upstream base: the request path without its `/v1/` (the base
/// carries the version), with the query as received (`messages?beta=true`).
fn upstream_path(uri: &hyper::Uri) -> String {
    let path = uri.path();
    let path = path
        .strip_prefix("/v1/")
        .or_else(|| path.strip_prefix('/'))
        .unwrap_or(path);
    match uri.query() {
        Some(query) => format!("{path}?{query}"),
        None => path.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_paths_drop_the_version_and_keep_the_query() {
        let cases = [
            ("/v1/messages?beta=true", "messages?beta=true"),
            ("/v1/chat/completions", "chat/completions"),
            ("/chat/completions", "chat/completions"),
            ("/v1/responses", "responses"),
        ];
        for (uri, expected) in cases {
            let uri: hyper::Uri = uri.parse().unwrap_or_default();
            assert_eq!(upstream_path(&uri), expected);
        }
    }
}
