//! OpenAI Chat Completions: `chat.completion`, and `chat.completion.chunk` events
//! ended by `data: [DONE]`, whose usage chunk (empty `choices`) comes last and only
//! when the request asked for it. An error mid-stream is a chunk holding only an
//! `error` object, after which the stream ends without `[DONE]`.

use serde_json::{json, Value};

use super::{Event, Reply, CREATED};
use crate::usage::Usage;

fn usage(u: Usage) -> Value {
    json!({
        "prompt_tokens": u.input,
        "completion_tokens": u.output,
        "total_tokens": u.total(),
        "prompt_tokens_details": {"cached_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0},
    })
}

/// The usage a `usage` object states: `prompt_tokens` already counts cached input.
pub(super) fn read_usage(u: &Value) -> Option<Usage> {
    u.is_object().then(|| Usage {
        input: u["prompt_tokens"].as_u64().unwrap_or(0),
        output: u["completion_tokens"].as_u64().unwrap_or(0),
    })
}

pub(super) fn error_event() -> Event {
    let error = json!({"error": {
        "message": "The server had an error while processing your request",
        "type": "server_error",
        "param": null,
        "code": null,
    }});
    Event {
        text: format!("data: {error}\n\n"),
        reported: None,
    }
}

fn id(reply: &Reply) -> String {
    format!("chatcmpl-fake-{}", reply.seq)
}

pub(super) fn whole(reply: &Reply) -> Value {
    json!({
        "id": id(reply),
        "object": "chat.completion",
        "created": CREATED,
        "model": reply.model,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": reply.pieces.concat()},
            "finish_reason": "stop",
        }],
        "usage": usage(reply.usage),
    })
}

pub(super) fn events(reply: &Reply, states_usage: bool) -> Vec<Event> {
    let chunk = |choices: Value, usage: Option<Value>| {
        let mut c = json!({
            "id": id(reply),
            "object": "chat.completion.chunk",
            "created": CREATED,
            "model": reply.model,
            "choices": choices,
        });
        if let Some(u) = usage {
            c["usage"] = u;
        }
        Event {
            text: format!("data: {c}\n\n"),
            reported: None,
        }
    };
    let delta = |delta: Value, finish: Option<&str>| {
        chunk(
            json!([{"index": 0, "delta": delta, "finish_reason": finish}]),
            None,
        )
    };
    let mut out = vec![delta(json!({"role": "assistant", "content": ""}), None)];
    out.extend(
        reply
            .pieces
            .iter()
            .map(|piece| delta(json!({"content": piece}), None)),
    );
    out.push(delta(json!({}), Some("stop")));
    if states_usage {
        let mut last = chunk(json!([]), Some(usage(reply.usage)));
        last.reported = Some(reply.usage);
        out.push(last);
    }
    out.push(Event {
        text: "data: [DONE]\n\n".into(),
        reported: None,
    });
    out
}
