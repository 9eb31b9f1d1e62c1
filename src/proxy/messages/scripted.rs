//! Rendering a scripted reply as an Anthropic message, whole or as the event stream
//! the Anthropic SDKs read (`message_start`, content block start/delta/stop,
//! `message_delta` with the final usage, `message_stop`).

use serde_json::{json, Value};

use crate::proxy::exchange::{Reply, ToolCall};
use crate::proxy::log::Tokens;
use crate::proxy::render::{self, pieces, Answer, Render};

/// Messages' shape of a scripted answer.
pub(crate) struct Scripted;

impl Render for Scripted {
    fn whole(answer: &Answer) -> Value {
        let id = format!("msg_gauntlet_{}", answer.seq);
        message(&id, answer.model, answer.reply, answer.tokens)
    }

    fn events(answer: &Answer) -> Vec<String> {
        let id = format!("msg_gauntlet_{}", answer.seq);
        events(&id, answer.model, answer.reply, answer.tokens)
            .iter()
            .map(render::named)
            .collect()
    }
}

/// Anthropic tool-use ids look like `toolu_…`; the script's `call_k` keeps them unique.
fn tool_use_id(call: &ToolCall) -> String {
    format!("toolu_{}", call.id)
}

/// The tool input as an object (Messages carries it parsed, not as a string).
fn input(call: &ToolCall) -> Value {
    serde_json::from_str(&call.arguments).unwrap_or_else(|_| json!({}))
}

fn stop_reason(reply: &Reply) -> &'static str {
    match reply {
        Reply::Text(_) => "end_turn",
        Reply::ToolCall(_) => "tool_use",
    }
}

fn usage(input: u64, output: u64) -> Value {
    json!({"input_tokens": input, "output_tokens": output,
        "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0})
}

fn message(id: &str, model: &str, reply: &Reply, tokens: Tokens) -> Value {
    let block = match reply {
        Reply::Text(text) => json!({"type": "text", "text": text}),
        Reply::ToolCall(call) => json!({"type": "tool_use", "id": tool_use_id(call),
            "name": call.name, "input": input(call)}),
    };
    json!({
        "id": id, "type": "message", "role": "assistant", "model": model,
        "content": [block], "stop_reason": stop_reason(reply), "stop_sequence": null,
        "usage": usage(tokens.input.unwrap_or(0), tokens.output.unwrap_or(0)),
    })
}

fn events(id: &str, model: &str, reply: &Reply, tokens: Tokens) -> Vec<Value> {
    let mut out = vec![json!({"type": "message_start", "message": {
        "id": id, "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": null, "stop_sequence": null,
        "usage": usage(tokens.input.unwrap_or(0), 0)}})];
    let (start, deltas) = match reply {
        Reply::Text(text) => (
            json!({"type": "text", "text": ""}),
            pieces(text)
                .into_iter()
                .map(|piece| json!({"type": "text_delta", "text": piece}))
                .collect::<Vec<_>>(),
        ),
        Reply::ToolCall(call) => (
            json!({"type": "tool_use", "id": tool_use_id(call), "name": call.name, "input": {}}),
            pieces(&call.arguments)
                .into_iter()
                .map(|piece| json!({"type": "input_json_delta", "partial_json": piece}))
                .collect(),
        ),
    };
    out.push(json!({"type": "content_block_start", "index": 0, "content_block": start}));
    out.push(json!({"type": "ping"}));
    for delta in deltas {
        out.push(json!({"type": "content_block_delta", "index": 0, "delta": delta}));
    }
    out.push(json!({"type": "content_block_stop", "index": 0}));
    out.push(json!({"type": "message_delta",
        "delta": {"stop_reason": stop_reason(reply), "stop_sequence": null},
        "usage": {"output_tokens": tokens.output.unwrap_or(0)}}));
    out.push(json!({"type": "message_stop"}));
    out
}
