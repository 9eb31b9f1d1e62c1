//! The parts of a Messages request the proxy reads.

use serde_json::{Map, Value};

use crate::proxy::conversation::{self, role, Parsed, Results};
use crate::proxy::error::RequestError;
use crate::proxy::meter;

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
    let user = |m: &Value| role(m) == Some("user");
    let results = Results::split(
        messages,
        |m| {
            user(m)
                && !m
                    .get("content")
                    .and_then(Value::as_array)
                    .is_some_and(|blocks| blocks.iter().any(is_result))
        },
        |m| tool_results_in(m, is_result),
    );
    // Tools offered, in the request's order: client tools (`input_schema`) and
    // Anthropic's schema-less built-ins (`{"type": "bash_20250124", "name": "bash"}`)
    // alike, since both are called with a `tool_use` block.
    let tools = conversation::offered_tools(body, None, "/name", "/input_schema");
    Ok(Parsed::of(
        body,
        results.asked("content", tools, conversation::text_of(body.get("system"))),
        input_bytes(body),
    ))
}

/// The tool-result blocks of `message`, when it is a user message.
fn tool_results_in(
    message: &Value,
    is_result: impl Fn(&Value) -> bool,
) -> impl Iterator<Item = &Value> {
    (role(message) == Some("user"))
        .then(|| message.get("content").and_then(Value::as_array))
        .flatten()
        .into_iter()
        .flatten()
        .filter(move |block| is_result(block))
}

fn input_bytes(body: &Map<String, Value>) -> usize {
    conversation::field_bytes(body, "system") + conversation::field_bytes(body, "messages")
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
