//! Anthropic Messages: a `message`, and named events ended by `message_stop`. Usage
//! comes twice in a stream: `message_start` states the input and a first output
//! token, `message_delta` the final output count. A failure mid-stream is an `error`
//! event (`overloaded_error`), after which the stream ends without `message_stop`.

use serde_json::{json, Value};

use super::{named, Event, Reply};
use crate::usage::Usage;

fn usage(input: u64, output: u64) -> Value {
    json!({
        "input_tokens": input,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": output,
    })
}

/// The usage a `usage` object states, all input counted: uncached, written to the
/// cache and read from it.
pub(super) fn read_usage(u: &Value) -> Option<Usage> {
    let n = |name: &str| u[name].as_u64().unwrap_or(0);
    u.is_object().then(|| Usage {
        input: n("input_tokens")
            .saturating_add(n("cache_creation_input_tokens"))
            .saturating_add(n("cache_read_input_tokens")),
        output: n("output_tokens"),
    })
}

/// What a stream has declared once `event` is read, after `before`: `message_start`
/// states the input and the output so far, `message_delta` the output since (its
/// count is the running total, not an increment).
pub(super) fn declared(event: &Value, before: Option<Usage>) -> Option<Usage> {
    match event["type"].as_str()? {
        "message_start" => read_usage(&event["message"]["usage"]),
        "message_delta" => {
            let output = event["usage"]["output_tokens"].as_u64()?;
            Some(Usage {
                output,
                ..before.unwrap_or_default()
            })
        }
        _ => None,
    }
}

pub(super) fn error_event() -> Event {
    Event {
        text: named(
            &json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        ),
        reported: None,
    }
}

fn message(reply: &Reply, content: Value, stop: Option<&str>, usage: Value) -> Value {
    json!({
        "id": format!("msg_fake_{}", reply.seq),
        "type": "message",
        "role": "assistant",
        "model": reply.model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": null,
        "usage": usage,
    })
}

pub(super) fn whole(reply: &Reply) -> Value {
    let u = reply.usage;
    message(
        reply,
        json!([{"type": "text", "text": reply.pieces.concat()}]),
        Some("end_turn"),
        usage(u.input, u.output),
    )
}

pub(super) fn events(reply: &Reply) -> Vec<Event> {
    let u = reply.usage;
    let first = Usage {
        input: u.input,
        output: u.output.min(1),
    };
    let event = |body: Value, reported: Option<Usage>| Event {
        text: named(&body),
        reported,
    };
    let mut out = vec![
        event(
            json!({
                "type": "message_start",
                "message": message(reply, json!([]), None, usage(first.input, first.output)),
            }),
            Some(first),
        ),
        event(
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            None,
        ),
    ];
    out.extend(reply.pieces.iter().map(|piece| {
        event(
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}}),
            None,
        )
    }));
    out.push(event(
        json!({"type": "content_block_stop", "index": 0}),
        None,
    ));
    out.push(event(
        json!({
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": null},
            "usage": {"output_tokens": u.output},
        }),
        Some(u),
    ));
    out.push(event(json!({"type": "message_stop"}), None));
    out
}
