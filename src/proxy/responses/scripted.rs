//! Rendering a scripted reply as a Responses response, whole or as the event stream
//! Codex reads (`response.created` … `response.output_item.done` …
//! `response.completed`).

use serde_json::{json, Value};

use crate::proxy::exchange::Reply;
use crate::proxy::log::Tokens;
use crate::proxy::render::{self, pieces, Answer, Render};

/// Responses' shape of a scripted answer.
pub(crate) struct Scripted;

impl Render for Scripted {
    fn whole(answer: &Answer) -> Value {
        response(&Head::of(answer), answer.reply, Some(answer.tokens))
    }

    fn events(answer: &Answer) -> Vec<String> {
        events(&Head::of(answer), answer.reply, answer.tokens)
            .into_iter()
            .enumerate()
            .map(|(n, mut event)| {
                event["sequence_number"] = json!(n);
                render::named(&event)
            })
            .collect()
    }
}

struct Head<'a> {
    id: String,
    item_id: String,
    created: i64,
    model: &'a str,
}

impl<'a> Head<'a> {
    fn of(answer: &Answer<'a>) -> Head<'a> {
        let seq = answer.seq;
        Head {
            id: format!("resp_gauntlet_{seq}"),
            item_id: match answer.reply {
                Reply::Text(_) => format!("msg_gauntlet_{seq}"),
                Reply::ToolCall(_) => format!("fc_gauntlet_{seq}"),
            },
            created: answer.created,
            model: answer.model,
        }
    }
}

fn usage(tokens: Tokens) -> Value {
    let input = tokens.input.unwrap_or(0);
    let output = tokens.output.unwrap_or(0);
    json!({
        "input_tokens": input,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": output,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": input + output,
    })
}

/// The output item of the reply, finished.
fn item(head: &Head, reply: &Reply) -> Value {
    match reply {
        Reply::Text(text) => json!({
            "id": head.item_id, "type": "message", "status": "completed", "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }),
        Reply::ToolCall(call) => json!({
            "id": head.item_id, "type": "function_call", "status": "completed",
            "call_id": call.id, "name": call.name, "arguments": call.arguments,
        }),
    }
}

/// The response object: finished when `tokens` is given, in progress (no output, no
/// usage) when not.
fn response(head: &Head, reply: &Reply, tokens: Option<Tokens>) -> Value {
    let done = tokens.is_some();
    json!({
        "id": head.id,
        "object": "response",
        "created_at": head.created,
        "status": if done { "completed" } else { "in_progress" },
        "error": null,
        "incomplete_details": null,
        "model": head.model,
        "output": if done { json!([item(head, reply)]) } else { json!([]) },
        "parallel_tool_calls": true,
        "usage": tokens.map(usage),
    })
}

fn events(head: &Head, reply: &Reply, tokens: Tokens) -> Vec<Value> {
    let started = response(head, reply, None);
    let mut out = vec![
        json!({"type": "response.created", "response": started}),
        json!({"type": "response.in_progress", "response": started}),
    ];
    let at = |kind: &str, rest: Value| {
        let mut event = json!({"type": kind, "item_id": head.item_id, "output_index": 0});
        if let (Some(event), Value::Object(rest)) = (event.as_object_mut(), rest) {
            event.extend(rest);
        }
        event
    };
    match reply {
        Reply::Text(text) => {
            let part = |text: &str| json!({"type": "output_text", "text": text, "annotations": []});
            out.push(
                json!({"type": "response.output_item.added", "output_index": 0, "item": {
                "id": head.item_id, "type": "message", "status": "in_progress",
                "role": "assistant", "content": []}}),
            );
            out.push(at(
                "response.content_part.added",
                json!({"content_index": 0, "part": part("")}),
            ));
            for piece in pieces(text) {
                out.push(at(
                    "response.output_text.delta",
                    json!({"content_index": 0, "delta": piece}),
                ));
            }
            out.push(at(
                "response.output_text.done",
                json!({"content_index": 0, "text": text}),
            ));
            out.push(at(
                "response.content_part.done",
                json!({"content_index": 0, "part": part(text)}),
            ));
        }
        Reply::ToolCall(call) => {
            out.push(
                json!({"type": "response.output_item.added", "output_index": 0, "item": {
                "id": head.item_id, "type": "function_call", "status": "in_progress",
                "call_id": call.id, "name": call.name, "arguments": ""}}),
            );
            for piece in pieces(&call.arguments) {
                out.push(at(
                    "response.function_call_arguments.delta",
                    json!({"delta": piece}),
                ));
            }
            out.push(at(
                "response.function_call_arguments.done",
                json!({"arguments": call.arguments}),
            ));
        }
    }
    out.push(
        json!({"type": "response.output_item.done", "output_index": 0, "item": item(head, reply)}),
    );
    out.push(
        json!({"type": "response.completed", "response": response(head, reply, Some(tokens))}),
    );
    out
}
