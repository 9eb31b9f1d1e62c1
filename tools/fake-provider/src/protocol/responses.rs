//! OpenAI Responses: a `response` object, and named events ended by
//! `response.completed`, the one event that carries usage.

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
    json!({
        "id": format!("resp_fake_{}", reply.seq),
        "object": "response",
        "created_at": CREATED,
        "status": status,
        "model": reply.model,
        "output": output,
        "usage": usage,
    })
}

pub(super) fn whole(reply: &Reply) -> Value {
    response(
        reply,
        "completed",
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
    bodies.push(json!({
        "type": "response.completed",
        "response": response(reply, "completed", json!([message(reply)]), usage(reply.usage)),
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
