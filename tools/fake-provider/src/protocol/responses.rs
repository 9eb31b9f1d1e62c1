//! OpenAI Responses: a `response` object, and named events ended by
//! `response.completed` (`response.incomplete` for an answer stopped at the request's
//! `max_output_tokens`), the one event that carries usage. A failure mid-stream ends
//! it with `response.failed` instead, its response `failed` with an `error`.

use serde_json::{json, Value};

use super::{named, Event, Reply, CREATED};
use crate::usage::Usage;

fn usage(u: Usage) -> Value {
    json!({
        "input_tokens": u.input,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": u.output,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": u.total(),
    })
}

/// The usage a `usage` object states: `input_tokens` already counts cached input.
pub(super) fn read_usage(u: &Value) -> Option<Usage> {
    u.is_object().then(|| Usage {
        input: u["input_tokens"].as_u64().unwrap_or(0),
        output: u["output_tokens"].as_u64().unwrap_or(0),
    })
}

/// `response.failed` as the stream's event number `sequence`.
pub(super) fn error_event(seq: u64, model: &str, sequence: usize) -> Event {
    let body = json!({
        "type": "response.failed",
        "sequence_number": sequence,
        "response": {
            "id": format!("resp_fake_{seq}"),
            "object": "response",
            "created_at": CREATED,
            "status": "failed",
            "error": {"code": "server_error", "message": "The server had an error while processing your request"},
            "incomplete_details": null,
            "model": model,
            "output": [],
            "usage": null,
        },
    });
    Event {
        text: named(&body),
        reported: None,
    }
}

fn message(reply: &Reply) -> Value {
    json!({
        "id": format!("msg_fake_{}", reply.seq),
        "type": "message",
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "text": reply.pieces.concat(), "annotations": []}],
    })
}

fn response(reply: &Reply, status: &str, output: Value, usage: Value) -> Value {
    let incomplete = (status == "incomplete").then(|| json!({"reason": "max_output_tokens"}));
    json!({
        "id": format!("resp_fake_{}", reply.seq),
        "object": "response",
        "created_at": CREATED,
        "status": status,
        "incomplete_details": incomplete,
        "model": reply.model,
        "output": output,
        "usage": usage,
    })
}

/// The finished response's status, and the name of the event that ends its stream.
fn ending(reply: &Reply) -> (&'static str, &'static str) {
    if reply.cut_at_limit {
        ("incomplete", "response.incomplete")
    } else {
        ("completed", "response.completed")
    }
}

pub(super) fn whole(reply: &Reply) -> Value {
    response(
        reply,
        ending(reply).0,
        json!([message(reply)]),
        usage(reply.usage),
    )
}

pub(super) fn events(reply: &Reply) -> Vec<Event> {
    let item = format!("msg_fake_{}", reply.seq);
    let mut bodies = vec![
        json!({
            "type": "response.created",
            "response": response(reply, "in_progress", json!([]), Value::Null),
        }),
        json!({
            "type": "response.in_progress",
            "response": response(reply, "in_progress", json!([]), Value::Null),
        }),
    ];
    bodies.extend(reply.pieces.iter().map(|piece| {
        json!({
            "type": "response.output_text.delta",
            "item_id": item,
            "output_index": 0,
            "content_index": 0,
            "delta": piece,
        })
    }));
    bodies.push(json!({
        "type": "response.output_item.done",
        "output_index": 0,
        "item": message(reply),
    }));
    let (status, end) = ending(reply);
    bodies.push(json!({
        "type": end,
        "response": response(reply, status, json!([message(reply)]), usage(reply.usage)),
    }));
    let last = bodies.len() - 1;
    bodies
        .into_iter()
        .enumerate()
        .map(|(i, mut body)| {
            body["sequence_number"] = json!(i);
            Event {
                text: named(&body),
                reported: (i == last).then_some(reply.usage),
            }
        })
        .collect()
}
