//! Reading a request for the scripted model: what the three protocols share.
//!
//! Each protocol keeps its conversation, tools and tool results under names of its
//! own, and marks the user's last message its own way; where the model and the stream
//! flag are, how this turn is told from earlier ones, and what is read of a tool is
//! the same in all three, and is here.

use serde_json::{Map, Value};

use super::exchange::{Asked, OfferedTool};

/// What a request is, as far as the proxy needs to know.
#[derive(Debug, Clone, Default)]
pub(crate) struct Parsed {
    pub(crate) model: Option<String>,
    pub(crate) stream: bool,
    pub(crate) asked: Asked,
    /// Bytes of the conversation (compact JSON): the basis of scripted input tokens.
    pub(crate) input_bytes: usize,
}

impl Parsed {
    /// The request `body` asking `asked`, its conversation `input_bytes` long; every
    /// protocol keeps `model` and `stream` at the top.
    pub(crate) fn of(body: &Map<String, Value>, asked: Asked, input_bytes: usize) -> Parsed {
        Parsed {
            model: body.get("model").and_then(Value::as_str).map(str::to_owned),
            stream: body.get("stream").and_then(Value::as_bool).unwrap_or(false),
            asked,
            input_bytes,
        }
    }
}

/// The tool results of a conversation: those since the user's last message (this
/// turn's), and how many came before it (earlier turns of a resumed session).
pub(crate) struct Results<'a> {
    this_turn: Vec<&'a Value>,
    earlier: usize,
}

impl<'a> Results<'a> {
    /// `items` split after the last that `is_user` (the user's own message), the
    /// results of each item read by `results_in`.
    pub(crate) fn split<I>(
        items: &'a [Value],
        is_user: impl Fn(&Value) -> bool,
        results_in: impl Fn(&'a Value) -> I,
    ) -> Results<'a>
    where
        I: IntoIterator<Item = &'a Value>,
    {
        let since_user = items.iter().rposition(is_user).map_or(0, |i| i + 1);
        Results {
            this_turn: items[since_user..].iter().flat_map(&results_in).collect(),
            earlier: items[..since_user].iter().flat_map(&results_in).count(),
        }
    }

    /// What the request asks: these results (the last one's text at its field
    /// `text`), the `tools` offered and the `system` prompt.
    pub(crate) fn asked(self, text: &str, tools: Vec<OfferedTool>, system: String) -> Asked {
        Asked {
            tools,
            tool_results: self.this_turn.len(),
            earlier_tool_results: self.earlier,
            last_tool_result: self.this_turn.last().map(|r| text_of(r.get(text))),
            system,
        }
    }
}

/// The tools `body` offers, in its order: those of `kind` when one is given (others
/// take call shapes the scripted model does not make), each one's name and parameters
/// at the JSON pointers `name` and `parameters`.
pub(crate) fn offered_tools(
    body: &Map<String, Value>,
    kind: Option<&str>,
    name: &str,
    parameters: &str,
) -> Vec<OfferedTool> {
    let tools = body.get("tools").and_then(Value::as_array);
    tools
        .into_iter()
        .flatten()
        .filter(|tool| kind.is_none() || tool.get("type").and_then(Value::as_str) == kind)
        .filter_map(|tool| {
            Some(OfferedTool {
                name: tool.pointer(name)?.as_str()?.to_owned(),
                parameters: tool.pointer(parameters).cloned().unwrap_or(Value::Null),
            })
        })
        .collect()
}

/// The `role` of a message or item.
pub(crate) fn role(item: &Value) -> Option<&str> {
    item.get("role").and_then(Value::as_str)
}

/// The texts of the system (or developer) messages among `items`.
pub(crate) fn system_texts(items: &[Value]) -> impl Iterator<Item = String> + '_ {
    items
        .iter()
        .filter(|item| matches!(role(item), Some("system" | "developer")))
        .map(|item| text_of(item.get("content")))
}

/// The compact JSON length of `body[key]` (0 when absent).
pub(crate) fn field_bytes(body: &Map<String, Value>, key: &str) -> usize {
    body.get(key).map(|v| v.to_string().len()).unwrap_or(0)
}

/// The text of a system prompt given as a string or as content blocks with `text`.
pub(crate) fn text_of(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str).or_else(|| b.as_str()))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}
