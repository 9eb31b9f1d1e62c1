//! The parts of a Messages request the proxy reads.

use serde_json::{Map, Value};

use crate::proxy::meter;
use crate::proxy::script::{Asked, OfferedTool};
use crate::proxy::wire::{self, Parsed, RequestError};

pub(crate) fn parse(body: &Map<String, Value>) -> Result<Parsed, RequestError> {
    let messages = body
        .get("messages")
        .and_then(Value::as_array)
        .ok_or(RequestError::Field("messages"))?;
    let is_result =
        |block: &Value| block.get("type").and_then(Value::as_str) == Some("tool_result");
    // Tool results come back in user messages (Claude Code adds reminder text blocks to
    // them); the user's own last message is the last user message without a tool result.
    // Count this turn's results.
    let user = |m: &Value| m.get("role").and_then(Value::as_str) == Some("user");
    let since_user = messages
        .iter()
        .rposition(|m| {
            user(m)
                && !m
                    .get("content")
                    .and_then(Value::as_array)
                    .is_some_and(|blocks| blocks.iter().any(is_result))
        })
        .map_or(0, |i| i + 1);
    let results = tool_results_in(&messages[since_user..]);
    let earlier_tool_results = tool_results_in(&messages[..since_user]).len();
    let tool_results = results.len();
    let last_tool_result = results.last().map(|b| wire::text_of(b.get("content")));
    Ok(Parsed {
        model: body.get("model").and_then(Value::as_str).map(str::to_owned),
        stream: body.get("stream").and_then(Value::as_bool).unwrap_or(false),
        asked: Asked {
            tools: tools(body),
            tool_results,
            earlier_tool_results,
            last_tool_result,
            system: wire::text_of(body.get("system")),
        },
        input_bytes: input_bytes(body),
    })
}

/// The tool-result blocks of the user messages in `messages`.
fn tool_results_in(messages: &[Value]) -> Vec<&Value> {
    messages
        .iter()
        .filter(|m| m.get("role").and_then(Value::as_str) == Some("user"))
        .filter_map(|m| m.get("content").and_then(Value::as_array))
        .flatten()
        .filter(|block| block.get("type").and_then(Value::as_str) == Some("tool_result"))
        .collect()
}

fn input_bytes(body: &Map<String, Value>) -> usize {
    wire::field_bytes(body, "system") + wire::field_bytes(body, "messages")
}

/// Tools offered, in the request's order: client tools (`input_schema`) and Anthropic's
/// schema-less built-ins (`{"type": "bash_20250124", "name": "bash"}`) alike, since both
/// are called with a `tool_use` block.
fn tools(body: &Map<String, Value>) -> Vec<OfferedTool> {
    let tools = body.get("tools").and_then(Value::as_array);
    tools
        .into_iter()
        .flatten()
        .filter_map(|tool| {
            Some(OfferedTool {
                name: tool.get("name")?.as_str()?.to_owned(),
                parameters: tool.get("input_schema").cloned().unwrap_or(Value::Null),
            })
        })
        .collect()
}

/// The scripted answer to `/v1/messages/count_tokens`: the same count a call with this
/// body would be metered at.
pub(crate) fn count_tokens(body: &Map<String, Value>) -> Result<u64, RequestError> {
    if !body.get("messages").is_some_and(Value::is_array) {
        return Err(RequestError::Field("messages"));
    }
    Ok(meter::tokens_for_bytes(input_bytes(body)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_claude_code_shaped_requests() {
        let body = json!({
            "model": "claude-sonnet-4-5", "stream": true, "max_tokens": 32000,
            "system": [{"type": "text", "text": "You are Claude Code."}, {"type": "text", "text": "Be careful."}],
            "messages": [
                {"role": "user", "content": "remember teal"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_call_0", "name": "Bash", "input": {"command": "echo"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_call_0", "content": "stored"}]},
                {"role": "assistant", "content": [{"type": "text", "text": "Noted."}]},
                {"role": "user", "content": "verify balance"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.txt"}]}
            ],
            "tools": [
                {"name": "Bash", "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}},
                {"type": "web_search_20250305", "name": "web_search"}
            ]
        });
        let Value::Object(body) = body else {
            panic!("object")
        };
        let parsed = parse(&body).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(parsed.asked.tool_results, 1);
        // A resumed session's earlier turn: counted apart, so call ids stay unique.
        assert_eq!(parsed.asked.earlier_tool_results, 1);
        assert_eq!(parsed.asked.system, "You are Claude Code.\nBe careful.");
        assert_eq!(parsed.asked.tools.len(), 2);
        assert_eq!(parsed.model.as_deref(), Some("claude-sonnet-4-5"));
        assert_eq!(
            count_tokens(&body).ok(),
            Some(meter::tokens_for_bytes(parsed.input_bytes))
        );
    }
}
