//! Rendering a scripted reply as a Chat Completions response, whole or streamed.

use serde_json::{json, Value};

use crate::proxy::exchange::Reply;
use crate::proxy::log::Tokens;
use crate::proxy::render::{pieces, Answer, Render};

/// Chat Completions' shape of a scripted answer.
pub(crate) struct Scripted;

impl Render for Scripted {
    fn whole(answer: &Answer) -> Value {
        completion(&Head::of(answer), answer.reply, answer.tokens)
    }

    fn events(answer: &Answer) -> Vec<String> {
        chunks(&Head::of(answer), answer.reply, answer.tokens)
            .iter()
            .map(|chunk| format!("data: {chunk}\n\n"))
            .chain(std::iter::once("data: [DONE]\n\n".to_owned()))
            .collect()
    }
}

struct Head<'a> {
    id: String,
    created: i64,
    model: &'a str,
}

impl<'a> Head<'a> {
    fn of(answer: &Answer<'a>) -> Head<'a> {
        Head {
            id: format!("chatcmpl-gauntlet-{}", answer.seq),
            created: answer.created,
            model: answer.model,
        }
    }
}

fn usage(tokens: Tokens) -> Value {
    let input = tokens.input.unwrap_or(0);
    let output = tokens.output.unwrap_or(0);
    json!({"prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output})
}

fn finish_reason(reply: &Reply) -> &'static str {
    match reply {
        Reply::Text(_) => "stop",
        Reply::ToolCall(_) => "tool_calls",
    }
}

/// The non-streaming `chat.completion` object.
fn completion(head: &Head, reply: &Reply, tokens: Tokens) -> Value {
    let message = match reply {
        Reply::Text(text) => json!({"role": "assistant", "content": text}),
        Reply::ToolCall(call) => json!({
            "role": "assistant",
            "content": null,
            "tool_calls": [{
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments}
            }]
        }),
    };
    json!({
        "id": head.id,
        "object": "chat.completion",
        "created": head.created,
        "model": head.model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason(reply)}],
        "usage": usage(tokens),
    })
}

/// The `chat.completion.chunk` objects of a streamed reply: role, content pieces,
/// finish reason, then the usage chunk (always sent by the scripted model).
fn chunks(head: &Head, reply: &Reply, tokens: Tokens) -> Vec<Value> {
    let chunk = |delta: Value, finish: Option<&str>| {
        json!({
            "id": head.id,
            "object": "chat.completion.chunk",
            "created": head.created,
            "model": head.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        })
    };
    let mut out = Vec::new();
    match reply {
        Reply::Text(text) => {
            out.push(chunk(json!({"role": "assistant", "content": ""}), None));
            for piece in pieces(text) {
                out.push(chunk(json!({"content": piece}), None));
            }
        }
        Reply::ToolCall(call) => {
            out.push(chunk(
                json!({"role": "assistant", "content": null, "tool_calls": [{
                    "index": 0, "id": call.id, "type": "function",
                    "function": {"name": call.name, "arguments": ""}
                }]}),
                None,
            ));
            for piece in pieces(&call.arguments) {
                out.push(chunk(
                    json!({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}),
                    None,
                ));
            }
        }
    }
    out.push(chunk(json!({}), Some(finish_reason(reply))));
    out.push(json!({
        "id": head.id,
        "object": "chat.completion.chunk",
        "created": head.created,
        "model": head.model,
        "choices": [],
        "usage": usage(tokens),
    }));
    out
}
