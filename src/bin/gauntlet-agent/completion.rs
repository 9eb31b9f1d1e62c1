//! One model reply, whichever way it arrived (a whole JSON body or reassembled SSE
//! deltas), so the agent loop never cares how the reply was transported.

use serde_json::{json, Value};

/// A tool call the model asked for. `arguments` stays the raw JSON string the model
/// wrote, because bad arguments must become a tool result, not a parse failure here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// What the provider said it spent on one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
}

impl Usage {
    /// Reads an OpenAI `usage` block; `None` when there is no usable block.
    pub fn from_json(v: &Value) -> Option<Usage> {
        if !v.is_object() {
            return None;
        }
        let usage = Usage {
            input_tokens: v.get("prompt_tokens").and_then(Value::as_u64),
            output_tokens: v.get("completion_tokens").and_then(Value::as_u64),
        };
        (usage.input_tokens.is_some() || usage.output_tokens.is_some()).then_some(usage)
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Completion {
    pub content: Option<String>,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Option<Usage>,
}

impl Completion {
    /// The assistant message to append to the conversation, in the shape the Chat
    /// Completions API expects back (arguments as a JSON string). A message that only
    /// calls tools carries empty text, never `null`: OpenAI takes either, but
    /// llama-cpp-python's server (and others built on its request schema) refuses the
    /// whole conversation over a `null` content.
    pub fn assistant_message(&self) -> Value {
        let content = self.content.clone().unwrap_or_default();
        let mut msg = json!({"role": "assistant", "content": content});
        if !self.tool_calls.is_empty() {
            let calls: Vec<Value> = self
                .tool_calls
                .iter()
                .map(|c| {
                    json!({
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": c.arguments},
                    })
                })
                .collect();
            msg["tool_calls"] = Value::Array(calls);
        }
        msg
    }

    /// Gives every call an id: some OpenAI-compatible servers omit them, and the
    /// `tool` message that answers a call must name it.
    pub fn fill_missing_ids(&mut self, turn: u32) {
        for (i, call) in self.tool_calls.iter_mut().enumerate() {
            if call.id.is_empty() {
                call.id = format!("call_{turn}_{i}");
            }
        }
    }
}

/// Text of a `content` field: a string, or an array of `{"type":"text","text":..}` parts.
pub fn content_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => {
            let text: String = parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect();
            Some(text)
        }
        _ => None,
    }
}

/// Arguments as the raw string: a string is kept as is, an object (some servers send
/// one) is serialized back.
pub fn arguments_text(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// Why a model's answer cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum Unusable {
    #[error("provider error: {0}")]
    Provider(Value),
    #[error("provider error in stream: {0}")]
    ProviderInStream(Value),
    #[error("response has no `{0}`")]
    Missing(&'static str),
    #[error("body is not json: {0}")]
    BodyNotJson(#[source] reqwest::Error),
    #[error("stream chunk is not json: {source}: {data}")]
    ChunkNotJson {
        #[source]
        source: serde_json::Error,
        /// The chunk's first 200 characters.
        data: String,
    },
    #[error("stream cut: {0}")]
    Cut(#[source] std::io::Error),
    #[error("the stream ended before it said it was over (no `data: [DONE]`, no `finish_reason`)")]
    Ended,
}

/// Parses a non-streaming `chat.completion` body.
pub fn parse_completion(body: &Value) -> Result<Completion, Unusable> {
    let Some(choice) = body
        .get("choices")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
    else {
        if let Some(err) = body.get("error") {
            return Err(Unusable::Provider(err.clone()));
        }
        return Err(Unusable::Missing("choices[0]"));
    };
    let Some(message) = choice.get("message") else {
        return Err(Unusable::Missing("choices[0].message"));
    };
    let content = message.get("content").and_then(content_text);
    let mut tool_calls = Vec::new();
    if let Some(calls) = message.get("tool_calls").and_then(Value::as_array) {
        for call in calls {
            let function = call.get("function");
            tool_calls.push(ToolCall {
                id: call
                    .get("id")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                name: function
                    .and_then(|f| f.get("name"))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                arguments: arguments_text(function.and_then(|f| f.get("arguments"))),
            });
        }
    }
    Ok(Completion {
        content,
        tool_calls,
        usage: body.get("usage").and_then(Usage::from_json),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_tool_calls_and_usage() {
        let body = json!({
            "choices": [{"message": {"role": "assistant", "content": null, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "shell", "arguments": "{\"command\":\"ls\"}"}},
                {"id": "c2", "type": "function", "function": {"name": "read_file", "arguments": {"path": "a"}}}
            ]}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 3}
        });
        let c = parse_completion(&body).unwrap();
        assert_eq!(c.content, None);
        assert_eq!(c.tool_calls.len(), 2);
        assert_eq!(c.tool_calls[0].arguments, "{\"command\":\"ls\"}");
        assert_eq!(c.tool_calls[1].arguments, "{\"path\":\"a\"}");
        assert_eq!(
            c.usage,
            Some(Usage {
                input_tokens: Some(10),
                output_tokens: Some(3)
            })
        );
        let msg = c.assistant_message();
        assert_eq!(
            msg["tool_calls"][1]["function"]["arguments"],
            "{\"path\":\"a\"}"
        );
        // Sent back as text, never null: llama-cpp-python refuses a null content.
        assert_eq!(msg["content"], "");
    }

    #[test]
    fn a_body_without_choices_is_an_error_naming_the_provider_error() {
        let err = parse_completion(&json!({"error": {"message": "nope"}})).unwrap_err();
        assert!(err.to_string().contains("nope"), "{err}");
        assert!(parse_completion(&json!({})).is_err());
    }

    #[test]
    fn missing_ids_are_filled() {
        let mut c = Completion {
            tool_calls: vec![ToolCall {
                id: String::new(),
                name: "shell".into(),
                arguments: "{}".into(),
            }],
            ..Completion::default()
        };
        c.fill_missing_ids(4);
        assert_eq!(c.tool_calls[0].id, "call_4_0");
    }
}
