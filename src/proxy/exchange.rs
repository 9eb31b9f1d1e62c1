//! One exchange with the scripted model in no protocol's shape: what a request asks
//! of it, and what it replies. Each wire protocol reads an [`Asked`] from its own
//! request shape and renders a [`Reply`] in its own response shape; the script chooses
//! between the two without knowing either.

use serde_json::Value;

/// A tool the request offers, with its JSON-schema parameters (`Null` when absent).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct OfferedTool {
    pub(crate) name: String,
    pub(crate) parameters: Value,
}

/// One tool call of a scripted reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ToolCall {
    pub(crate) id: String,
    pub(crate) name: String,
    /// The arguments as a JSON string, as the wire protocols carry them.
    pub(crate) arguments: String,
}

/// The scripted model's reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reply {
    Text(String),
    ToolCall(ToolCall),
}

impl Reply {
    /// Bytes of content the reply carries (text, or tool-call arguments): the basis of
    /// its metered output tokens.
    pub(crate) fn output_bytes(&self) -> usize {
        match self {
            Reply::Text(text) => text.len(),
            Reply::ToolCall(call) => call.arguments.len(),
        }
    }
}

/// What a request asks of the scripted model, whatever its wire protocol.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Asked {
    /// The tools it offers, in the request's order.
    pub(crate) tools: Vec<OfferedTool>,
    /// How many tool results its conversation holds since the user's last message
    /// (a resumed multi-turn conversation carries earlier turns' results too).
    pub(crate) tool_results: usize,
    /// How many tool results the conversation holds before the user's last message
    /// (earlier turns of a resumed session): a scripted call's id counts on from them,
    /// because an agent that meets an id it has seen (Claude Code does) drops the
    /// call as interrupted.
    pub(crate) earlier_tool_results: usize,
    /// The text of the last of those tool results (for `say_tool_result`).
    pub(crate) last_tool_result: Option<String>,
    /// Its system prompt (instructions), joined: side requests show themselves there.
    pub(crate) system: String,
}
