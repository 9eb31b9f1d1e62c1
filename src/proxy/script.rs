//! The scripted model: which reply a request gets, decided from its content alone.
//!
//! Agents send side requests (titles, summaries), retry, and may run several calls at
//! once, so request order says nothing about where the agent is in the flow. What the
//! request carries does: whether it offers tools at all, and how many tool results the
//! conversation already holds. This module is protocol-neutral; each wire protocol
//! extracts the offered tools and the tool-result count from its own request shape.

use serde_json::Value;

use super::mapping;
use crate::spec::Flow;

/// What a side request (one that offers no tools) is answered with.
pub(crate) const SIDE_REPLY: &str = "ok";

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

/// A reply plus what went wrong choosing it (recorded in the usage entry).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Choice {
    pub(crate) reply: Reply,
    pub(crate) error: Option<String>,
}

/// Choose the reply to a request offering `tools` whose conversation already holds
/// `tool_results` tool results.
pub(crate) fn choose(flow: &Flow, tools: &[OfferedTool], tool_results: usize) -> Choice {
    if tools.is_empty() {
        return Choice {
            reply: Reply::Text(SIDE_REPLY.to_owned()),
            error: None,
        };
    }
    let Some(step) = flow.tool_steps().get(tool_results) else {
        return Choice {
            reply: Reply::Text(flow.final_text().to_owned()),
            error: None,
        };
    };
    match mapping::tool_call(step, tool_results, tools) {
        Ok(call) => Choice {
            reply: Reply::ToolCall(call),
            error: None,
        },
        Err(why) => Choice {
            reply: Reply::Text(format!("gauntlet scripted model: {why}")),
            error: Some(why),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::FlowStep;
    use serde_json::json;

    fn flow() -> Flow {
        Flow {
            capability: "c".into(),
            steps: vec![
                FlowStep::Shell {
                    command: "true".into(),
                },
                FlowStep::Final {
                    text: "done".into(),
                },
            ],
        }
    }

    fn bash() -> Vec<OfferedTool> {
        vec![OfferedTool {
            name: "bash".into(),
            parameters: json!({}),
        }]
    }

    #[test]
    fn no_tools_is_a_side_request() {
        assert_eq!(choose(&flow(), &[], 0).reply, Reply::Text("ok".into()));
    }

    #[test]
    fn tool_results_pick_the_step() {
        let first = choose(&flow(), &bash(), 0);
        assert!(
            matches!(first.reply, Reply::ToolCall(ref c) if c.name == "bash" && c.id == "call_0")
        );
        assert_eq!(
            choose(&flow(), &bash(), 1).reply,
            Reply::Text("done".into())
        );
        assert_eq!(
            choose(&flow(), &bash(), 7).reply,
            Reply::Text("done".into())
        );
    }

    #[test]
    fn an_unexpressible_step_is_text_and_an_error() {
        let tools = vec![OfferedTool {
            name: "web_search".into(),
            parameters: Value::Null,
        }];
        let choice = choose(&flow(), &tools, 0);
        assert!(matches!(choice.reply, Reply::Text(_)));
        assert!(choice.error.is_some_and(|e| e.contains("web_search")));
    }
}
