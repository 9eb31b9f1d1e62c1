//! Reading the `usage` block of Chat Completions responses and stream chunks.

use serde_json::Value;

use crate::proxy::log::Tokens;
use crate::proxy::peek;
use crate::proxy::usage::{Meter, Peek, Said, StreamEvents, UsageFields};

const FIELDS: UsageFields = UsageFields {
    input: "prompt_tokens",
    output: "completion_tokens",
    cached_input: "/prompt_tokens_details/cached_tokens",
    reasoning: "/completion_tokens_details/reasoning_tokens",
};

/// The usage block of a response or chunk, if it has a non-null one.
pub(crate) fn tokens(value: &Value) -> Option<Tokens> {
    FIELDS.tokens(value)
}

/// Meters a Chat Completions stream: the last usage block seen wins; `[DONE]` ends it.
pub(crate) type ChatStreamMeter = Meter<ChatEvents>;

#[derive(Debug, Default)]
pub(crate) struct ChatEvents {
    /// The proxy asked for the usage chunk the agent did not, so it hides that chunk
    /// from the agent (a client that did not ask may not expect empty `choices`).
    injected: bool,
    seen: Option<Tokens>,
}

impl ChatStreamMeter {
    pub(crate) fn new(injected: bool) -> ChatStreamMeter {
        Meter::reading(ChatEvents {
            injected,
            seen: None,
        })
    }
}

impl StreamEvents for ChatEvents {
    fn peek(&self, data: &str) -> Peek {
        if data.trim() == "[DONE]" {
            Peek::End
        } else if peek::has_usage(data) {
            Peek::Read
        } else {
            Peek::Pass
        }
    }

    fn read(&mut self, chunk: &Value) -> Said {
        let Some(tokens) = tokens(chunk) else {
            return Said::default();
        };
        self.seen = Some(tokens);
        let no_choices = chunk
            .get("choices")
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty);
        Said {
            hidden: self.injected && no_choices,
            ..Said::default()
        }
    }

    fn tokens(&self) -> Tokens {
        self.seen.unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proxy::usage::StreamMeter;
    use serde_json::json;

    #[test]
    fn reads_every_usage_field() {
        let response = json!({"usage": {
            "prompt_tokens": 10, "completion_tokens": 5,
            "prompt_tokens_details": {"cached_tokens": 4},
            "completion_tokens_details": {"reasoning_tokens": 2}
        }});
        let expected = Tokens {
            input: Some(10),
            output: Some(5),
            cached_input: Some(4),
            reasoning: Some(2),
            cache_write: None,
        };
        assert_eq!(tokens(&response), Some(expected));
        assert_eq!(tokens(&json!({"usage": null})), None);
    }

    #[test]
    fn an_injected_usage_chunk_is_hidden_and_counted() {
        let mut meter = ChatStreamMeter::new(true);
        assert!(meter.observe(r#"{"choices":[{"delta":{"content":"hi"}}],"usage":null}"#));
        assert!(
            !meter.observe(r#"{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1}}"#)
        );
        assert!(!meter.complete());
        assert!(meter.observe("[DONE]"));
        assert!(meter.complete());
        assert_eq!(meter.tokens().input, Some(3));
    }
}
