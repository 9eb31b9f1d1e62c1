//! The parts of a Chat Completions request the proxy reads.

use serde_json::{json, Map, Value};

use crate::proxy::conversation::{self, role, Parsed, Results};
use crate::proxy::error::RequestError;

pub(crate) fn parse(body: &Map<String, Value>) -> Result<Parsed, RequestError> {
    let messages = body
        .get("messages")
        .and_then(Value::as_array)
        .ok_or(RequestError::Field("messages"))?;
    let system: Vec<String> = conversation::system_texts(messages).collect();
    // The tool results since the user's last message: this turn's.
    let results = Results::split(
        messages,
        |m| role(m) == Some("user"),
        |m| (role(m) == Some("tool")).then_some(m),
    );
    // Function tools offered, in the request's order.
    let tools = conversation::offered_tools(body, None, "/function/name", "/function/parameters");
    Ok(Parsed::of(
        body,
        results.asked("content", tools, system.join("\n")),
        // The `messages` array serialized compactly: independent of client spacing.
        conversation::field_bytes(body, "messages"),
    ))
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
