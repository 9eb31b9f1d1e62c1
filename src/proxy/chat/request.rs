//! The parts of a Chat Completions request the proxy reads.

use bytes::Bytes;
use serde_json::{Map, Value};

use crate::proxy::script::OfferedTool;

/// Why a request body is not a Chat Completions request.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RequestError {
    #[error("request body is not json: {0}")]
    NotJson(#[source] serde_json::Error),
    #[error("request body is not a json object")]
    NotObject,
    #[error("request body field `messages` is missing or not an array")]
    NoMessages,
}

#[derive(Debug)]
pub(crate) struct ChatRequest {
    /// The body as received, for forwarding unchanged.
    pub(crate) raw: Bytes,
    pub(crate) body: Map<String, Value>,
    pub(crate) model: Option<String>,
    pub(crate) stream: bool,
    /// Whether the client asked for the final usage chunk.
    pub(crate) include_usage: bool,
}

impl ChatRequest {
    pub(crate) fn parse(raw: Bytes) -> Result<ChatRequest, RequestError> {
        let value: Value = serde_json::from_slice(&raw).map_err(RequestError::NotJson)?;
        let Value::Object(body) = value else {
            return Err(RequestError::NotObject);
        };
        if !body.get("messages").is_some_and(Value::is_array) {
            return Err(RequestError::NoMessages);
        }
        let model = body.get("model").and_then(Value::as_str).map(str::to_owned);
        let stream = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
        let include_usage = body
            .get("stream_options")
            .and_then(|o| o.get("include_usage"))
            .and_then(Value::as_bool)
            .unwrap_or(false);
        Ok(ChatRequest {
            raw,
            body,
            model,
            stream,
            include_usage,
        })
    }

    fn messages(&self) -> &[Value] {
        self.body
            .get("messages")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default()
    }

    /// Function tools offered, in the request's order.
    pub(crate) fn tools(&self) -> Vec<OfferedTool> {
        let tools = self.body.get("tools").and_then(Value::as_array);
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

    /// How many tool results (`role: "tool"` messages) the conversation holds.
    pub(crate) fn tool_results(&self) -> usize {
        self.messages()
            .iter()
            .filter(|m| m.get("role").and_then(Value::as_str) == Some("tool"))
            .count()
    }

    /// Bytes of the `messages` array serialized compactly by serde_json: the basis of
    /// the scripted input-token count (independent of how the client spaced its JSON).
    pub(crate) fn messages_bytes(&self) -> usize {
        self.body
            .get("messages")
            .map(|m| m.to_string().len())
            .unwrap_or(0)
    }
}
