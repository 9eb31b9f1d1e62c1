//! The tool-calling loop: ask the model, carry out the tools it asks for, hand back the
//! results, until it answers without tool calls. That answer is the final message.

use std::io::Write;

use gauntlet::evidence::Event;
use serde_json::{json, Value};

use crate::events::Emitter;
use crate::model::{ChatClient, ModelError};
use crate::prompt::Prompt;
use crate::tools::{definitions, input_value, ToolOutcome, Toolbox};

/// Tools beyond the toolbox's (memory, goals): `Some` when the name is one of them.
pub type ExtraTools<'a> = &'a dyn Fn(&str, &str) -> Option<ToolOutcome>;

#[derive(Debug, thiserror::Error)]
pub enum LoopError {
    #[error(transparent)]
    Model(#[from] ModelError),
    #[error("no final message after {0} model turns (--max-turns)")]
    MaxTurns(u32),
    #[error("cannot write an event to stdout: {0}")]
    Emit(#[from] std::io::Error),
}

pub struct AgentLoop<'a, W: Write> {
    pub client: &'a ChatClient,
    pub toolbox: &'a Toolbox,
    pub emitter: &'a mut Emitter<W>,
    pub max_turns: u32,
}

impl<W: Write> AgentLoop<'_, W> {
    /// Runs the conversation; returns the final message's text.
    pub fn run(&mut self, prompt: &Prompt) -> Result<String, LoopError> {
        let mut messages: Vec<Value> = vec![
            json!({"role": "system", "content": prompt.system}),
            json!({"role": "user", "content": prompt.user}),
        ];
        self.converse(&mut messages, &definitions(), &|_, _| None)
    }

    /// Continues `messages` (which end with the user's turn) until the model answers
    /// without tool calls; every message of the exchange, the final answer included,
    /// is appended, so that a multi-turn conversation can be stored and resumed.
    /// `extra` handles tools the toolbox does not have.
    pub fn converse(
        &mut self,
        messages: &mut Vec<Value>,
        tools: &Value,
        extra: ExtraTools<'_>,
    ) -> Result<String, LoopError> {
        for turn in 0..self.max_turns {
            let mut reply = self.client.complete(messages, tools)?;
            reply.fill_missing_ids(turn);
            if let Some(u) = reply.usage {
                self.emitter.emit(&Event::Usage {
                    input_tokens: u.input_tokens,
                    output_tokens: u.output_tokens,
                })?;
            }
            let text = reply.content.clone().unwrap_or_default();
            if reply.tool_calls.is_empty() {
                messages.push(json!({"role": "assistant", "content": text}));
                return Ok(text);
            }
            if !text.trim().is_empty() {
                self.emitter.emit(&Event::Message { text })?;
            }
            messages.push(reply.assistant_message());
            for call in &reply.tool_calls {
                self.emitter.emit(&Event::ToolCall {
                    id: call.id.clone(),
                    tool: call.name.clone(),
                    input: input_value(&call.arguments),
                })?;
                let outcome = extra(&call.name, &call.arguments)
                    .unwrap_or_else(|| self.toolbox.run(&call.name, &call.arguments));
                self.emitter.emit(&Event::ToolResult {
                    id: call.id.clone(),
                    tool: call.name.clone(),
                    output: outcome.output.clone(),
                    failed: outcome.failed,
                })?;
                messages.push(json!({
                    "role": "tool",
                    "tool_call_id": call.id,
                    "content": outcome.output,
                }));
            }
        }
        Err(LoopError::MaxTurns(self.max_turns))
    }
}
