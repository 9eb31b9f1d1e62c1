//! The parts of a Responses request the proxy reads.

use serde_json::{Map, Value};

use crate::proxy::conversation::{self, role, Parsed, Results};
use crate::proxy::error::RequestError;

/// Input item types that carry a tool's result back to the model.
const RESULT_ITEMS: &[&str] = &["function_call_output", "custom_tool_call_output"];

pub(crate) fn parse(body: &Map<String, Value>) -> Result<Parsed, RequestError> {
    let items: &[Value] = match body.get("input") {
        Some(Value::Array(items)) => items,
        // A bare string is one user message.
        Some(Value::String(_)) => &[],
        _ => return Err(RequestError::Field("input")),
    };
    let mut system = vec![conversation::text_of(body.get("instructions"))];
    system.extend(conversation::system_texts(items));
    let is_result = |item: &Value| {
        item.get("type")
            .and_then(Value::as_str)
            .is_some_and(|t| RESULT_ITEMS.contains(&t))
    };
    let results = Results::split(
        items,
        |item| role(item) == Some("user"),
        |item| is_result(item).then_some(item),
    );
    // Function tools offered, in the request's order. Built-in tools (`web_search`,
    // `local_shell`) and free-form `custom` tools take other call shapes, so the
    // scripted model does not call them.
    let tools = conversation::offered_tools(body, Some("function"), "/name", "/parameters");
    Ok(Parsed::of(
        body,
        results.asked("output", tools, system.join("\n").trim().to_owned()),
        conversation::field_bytes(body, "instructions") + conversation::field_bytes(body, "input"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_codex_shaped_requests() {
        let body = json!({
            "model": "gpt-5", "stream": true, "instructions": "You are Codex.",
            "input": [
                {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "be brief"}]},
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "remember teal"}]},
                {"type": "function_call", "call_id": "call_0", "name": "shell", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "call_0", "output": "stored"},
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]},
                {"type": "function_call", "call_id": "call_0", "name": "shell", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "call_0", "output": "ok"}
            ],
            "tools": [
                {"type": "function", "name": "shell", "parameters": {"type": "object"}},
                {"type": "custom", "name": "apply_patch"},
                {"type": "web_search"}
            ]
        });
        let Value::Object(body) = body else {
            panic!("object")
        };
        let parsed = parse(&body).unwrap_or_else(|e| panic!("{e}"));
        assert!(parsed.stream);
        assert_eq!(parsed.asked.tool_results, 1);
        assert_eq!(parsed.asked.earlier_tool_results, 1);
        let names: Vec<&str> = parsed.asked.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["shell"]);
        assert_eq!(parsed.asked.system, "You are Codex.\nbe brief");
        let mut no_input = body.clone();
        no_input.remove("input");
        assert!(parse(&no_input).is_err());
    }
}
