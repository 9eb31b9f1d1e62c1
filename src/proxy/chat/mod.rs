//! OpenAI Chat Completions (`POST /v1/chat/completions`), streaming and not.

mod byok;
mod request;
mod scripted;
mod usage;

use hyper::body::Incoming;
use hyper::{Response, StatusCode};

use super::body::{self, Body};
use super::server::{Mode, State};
use super::{meter, script};

/// The `protocol` of this module's usage entries.
const PROTOCOL: &str = "chat";

pub(crate) async fn handle(state: &State, path: &str, incoming: Incoming) -> Response<Body> {
    let mut pending = state.log.begin(PROTOCOL, path);
    let parsed = body::read(incoming)
        .await
        .and_then(|bytes| request::ChatRequest::parse(bytes).map_err(|e| e.to_string()));
    let request = match parsed {
        Ok(request) => request,
        Err(message) => {
            pending.entry.status = StatusCode::BAD_REQUEST.as_u16();
            pending.entry.source = state.local_source().to_owned();
            pending.entry.error = Some(message.clone());
            state.log.record(pending);
            return body::openai_error(StatusCode::BAD_REQUEST, "invalid_request_error", &message);
        }
    };
    pending.entry.stream = request.stream;
    pending.entry.model = request.model.clone();
    match &state.mode {
        Mode::Scripted { flow, model } => {
            if pending.entry.model.is_none() {
                pending.entry.model = Some(model.clone());
            }
            let choice = script::choose(flow, &request.tools(), request.tool_results());
            let tokens = meter::scripted(request.messages_bytes(), choice.reply.output_bytes());
            let response =
                scripted::respond(&request, &choice.reply, model, pending.entry.seq, tokens);
            pending.entry.status = response.status().as_u16();
            pending.entry.source = "scripted".to_owned();
            pending.entry.error = choice.error;
            pending.set_tokens(tokens);
            state.log.record(pending);
            response
        }
        Mode::Byok(upstream) => byok::forward(upstream, &state.log, pending, request).await,
    }
}
