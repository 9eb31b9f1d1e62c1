//! The parts of a Chat Completions request the proxy reads.

use serde_json::{json, Map, Value};

use crate::proxy::script::{Asked, OfferedTool};
use crate::proxy::wire::{self, Parsed, RequestError};

pub(crate) fn parse(body: &Map<String, Value>) -> Result<Parsed, RequestError> {
    let messages = body
        .get("messages")
        .and_then(Value::as_array)
        .ok_or(RequestError::Field("messages"))?;
    let system: Vec<String> = messages
        .iter()
        .filter(|m| {
            matches!(
                m.get("role").and_then(Value::as_str),
                Some("system" | "developer")
            )
        })
        .map(|m| wire::text_of(m.get("content")))
        .collect();
    // The tool results since the user's last message: this turn's.
    let role = |m: &Value| m.get("role").and_then(Value::as_str).map(str::to_owned);
    let since_user = messages
        .iter()
        .rposition(|m| role(m).as_deref() == Some("user"))
        .map_or(0, |i| i + 1);
    let is_result = |m: &&Value| role(m).as_deref() == Some("tool");
    let turn: Vec<&Value> = messages[since_user..].iter().filter(is_result).collect();
    let earlier_tool_results = messages[..since_user].iter().filter(is_result).count();
    Ok(Parsed {
        model: body.get("model").and_then(Value::as_str).map(str::to_owned),
        stream: body.get("stream").and_then(Value::as_bool).unwrap_or(false),
        asked: Asked {
            tools: tools(body),
            tool_results: turn.len(),
            earlier_tool_results,
            last_tool_result: turn.last().map(|m| wire::text_of(m.get("content"))),
            system: system.join("\n"),
        },
        // The `messages` array serialized compactly: independent of client spacing.
        input_bytes: wire::field_bytes(body, "messages"),
    })
}

/// Function tools offered, in the request's order.
fn tools(body: &Map<String, Value>) -> Vec<OfferedTool> {
    let tools = body.get("tools").and_then(Value::as_array);
    tools
        .into_iter()
        .flatten()
        .filter_map(|tool| {
            let function = tool.get("function")?;
            Some(OfferedTool {
                name: function.get("name")?.as_str()?.to_owned(),
                parameters: function.get("parameters").cloned().unwrap_or(Value::Null),
            })
        })
        .collect()
}

/// Set `stream_options.include_usage` when a streamed request lacks it.
pub(crate) fn ask_for_stream_usage(body: &mut Map<String, Value>) -> bool {
    let asked = body
        .get("stream_options")
        .and_then(|o| o.get("include_usage"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if asked {
        return false;
    }
    let options = body.entry("stream_options").or_insert_with(|| json!({}));
    if !options.is_object() {
        *options = json!({});
    }
    if let Some(options) = options.as_object_mut() {
        options.insert("include_usage".to_owned(), Value::Bool(true));
    }
    true
}
