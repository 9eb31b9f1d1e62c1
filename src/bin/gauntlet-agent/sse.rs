//! Reassembling a streamed (SSE) chat completion: content deltas are concatenated, and
//! tool-call deltas are merged by their `index`, because the API sends a call's id and
//! name once and its arguments in many small pieces.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::completion::{arguments_text, content_text, Completion, ToolCall, Unusable, Usage};

#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// Feed it the stream's lines one by one, then take the [`Completion`].
#[derive(Debug, Default)]
pub struct StreamAssembler {
    content: String,
    saw_content: bool,
    calls: BTreeMap<u64, PartialCall>,
    last_index: Option<u64>,
    usage: Option<Usage>,
    done: bool,
    /// A choice said why it finished (`finish_reason`): some providers end the body
    /// there without `[DONE]`.
    finished: bool,
}

impl StreamAssembler {
    /// True once `data: [DONE]` was seen.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Whether the stream said it was over (`[DONE]`, or a `finish_reason`): a body
    /// that ends before either was cut, and what it held so far is no answer.
    pub fn ended_properly(&self) -> bool {
        self.done || self.finished
    }

    /// Takes one line of the SSE stream. Comments, `event:` lines and blank lines are
    /// ignored; a `data:` payload that is not JSON, or that carries an `error`, fails.
    pub fn feed_line(&mut self, line: &str) -> Result<(), Unusable> {
        let line = line.trim_end_matches(['\r', '\n']);
        let Some(data) = line.strip_prefix("data:") else {
            return Ok(());
        };
        let data = data.trim();
        if data.is_empty() {
            return Ok(());
        }
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        let chunk: Value = serde_json::from_str(data).map_err(|source| Unusable::ChunkNotJson {
            source,
            data: data.chars().take(200).collect(),
        })?;
        if let Some(err) = chunk.get("error") {
            return Err(Unusable::ProviderInStream(err.clone()));
        }
        if let Some(usage) = chunk.get("usage").and_then(Usage::from_json) {
            self.usage = Some(usage);
        }
        let choices = chunk.get("choices").and_then(Value::as_array);
        for choice in choices.into_iter().flatten() {
            if let Some(delta) = choice.get("delta") {
                self.feed_delta(delta);
            }
            if choice.get("finish_reason").is_some_and(|r| !r.is_null()) {
                self.finished = true;
            }
        }
        Ok(())
    }

    fn feed_delta(&mut self, delta: &Value) {
        if let Some(text) = delta.get("content").and_then(content_text) {
            self.saw_content = true;
            self.content.push_str(&text);
        }
        let calls = delta.get("tool_calls").and_then(Value::as_array);
        for call in calls.into_iter().flatten() {
            let id = call.get("id").and_then(Value::as_str).unwrap_or_default();
            let index = match call.get("index").and_then(Value::as_u64) {
                Some(i) => i,
                // Without an index, a new id starts a new call; otherwise the piece
                // belongs to the call being streamed.
                None => match self.last_index {
                    Some(last)
                        if id.is_empty() || self.calls.get(&last).is_some_and(|c| c.id == id) =>
                    {
                        last
                    }
                    _ => self.calls.keys().next_back().map_or(0, |k| k + 1),
                },
            };
            self.last_index = Some(index);
            let entry = self.calls.entry(index).or_default();
            if !id.is_empty() {
                entry.id = id.to_string();
            }
            let function = call.get("function");
            if let Some(name) = function.and_then(|f| f.get("name")).and_then(Value::as_str) {
                entry.name.push_str(name);
            }
            entry
                .arguments
                .push_str(&arguments_text(function.and_then(|f| f.get("arguments"))));
        }
    }

    pub fn finish(self) -> Completion {
        Completion {
            content: self.saw_content.then_some(self.content),
            tool_calls: self
                .calls
                .into_values()
                .map(|c| ToolCall {
                    id: c.id,
                    name: c.name,
                    arguments: c.arguments,
                })
                .collect(),
            usage: self.usage,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(lines: &[&str]) -> StreamAssembler {
        let mut a = StreamAssembler::default();
        for l in lines {
            a.feed_line(l).unwrap();
        }
        a
    }

    #[test]
    fn a_stream_ends_properly_only_with_done_or_a_finish_reason() {
        // llama-cpp-python's server, asked to stream with tools it cannot stream,
        // sends a ping and closes the body.
        let cut = feed(&[": ping - 2026-12-02 22:02:41", ""]);
        assert!(!cut.ended_properly());
        let finished = feed(&[
            r#"data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}"#,
            r#"data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
        ]);
        assert!(finished.ended_properly() && !finished.is_done());
        assert!(feed(&["data: [DONE]"]).ended_properly());
    }

    #[test]
    fn tool_call_pieces_merge_by_index() {
        let a = feed(&[
            ": keep-alive",
            r#"data: {"choices":[{"delta":{"role":"assistant","content":"Let me "}}]}"#,
            r#"data: {"choices":[{"delta":{"content":"look."}}]}"#,
            r#"data: {"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"shell","arguments":""}}]}}]}"#,
            r#"data: {"choices":[{"delta":{"tool_calls":[{"index":1,"id":"b","function":{"name":"read_file","arguments":"{\"pa"}}]}}]}"#,
            r#"data: {"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"command\":"}}]}}]}"#,
            r#"data: {"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"ls\"}"}}]}}]}"#,
            r#"data: {"choices":[{"delta":{"tool_calls":[{"index":1,"function":{"arguments":"th\":\"x\"}"}}]}}]}"#,
            "",
            r#"data: {"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":2}}"#,
            "data: [DONE]",
        ]);
        assert!(a.is_done());
        let c = a.finish();
        assert_eq!(c.content.as_deref(), Some("Let me look."));
        assert_eq!(c.tool_calls.len(), 2);
        assert_eq!(c.tool_calls[0].id, "a");
        assert_eq!(c.tool_calls[0].name, "shell");
        assert_eq!(c.tool_calls[0].arguments, r#"{"command":"ls"}"#);
        assert_eq!(c.tool_calls[1].arguments, r#"{"path":"x"}"#);
        assert_eq!(c.usage.and_then(|u| u.input_tokens), Some(7));
    }

    #[test]
    fn calls_without_index_are_split_by_id() {
        let c = feed(&[
            r#"data: {"choices":[{"delta":{"tool_calls":[{"id":"a","function":{"name":"shell","arguments":"{}"}}]}}]}"#,
            r#"data: {"choices":[{"delta":{"tool_calls":[{"id":"b","function":{"name":"shell","arguments":"{"}}]}}]}"#,
            r#"data: {"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"}"}}]}}]}"#,
        ])
        .finish();
        assert_eq!(c.tool_calls.len(), 2);
        assert_eq!(c.tool_calls[1].arguments, "{}");
        assert_eq!(c.content, None);
    }

    #[test]
    fn bad_chunks_and_error_chunks_fail() {
        let mut a = StreamAssembler::default();
        assert!(a.feed_line("data: {nope").is_err());
        assert!(a
            .feed_line(r#"data: {"error":{"message":"overloaded"}}"#)
            .unwrap_err()
            .to_string()
            .contains("overloaded"));
    }
}
