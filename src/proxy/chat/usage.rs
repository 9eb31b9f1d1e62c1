//! Reading the `usage` block of Chat Completions responses and stream chunks.

use serde_json::Value;

use crate::proxy::log::Tokens;
use crate::proxy::peek;
use crate::proxy::relay::StreamMeter;

/// The usage block of a response or chunk, if it has a non-null one.
pub(crate) fn tokens(value: &Value) -> Option<Tokens> {
    let usage = value.get("usage").filter(|u| u.is_object())?;
    Some(Tokens {
        input: usage.get("prompt_tokens").and_then(Value::as_u64),
        output: usage.get("completion_tokens").and_then(Value::as_u64),
        cached_input: usage
            .pointer("/prompt_tokens_details/cached_tokens")
            .and_then(Value::as_u64),
        reasoning: usage
            .pointer("/completion_tokens_details/reasoning_tokens")
            .and_then(Value::as_u64),
        cache_write: None,
    })
}

/// Meters a Chat Completions stream: the last usage block seen wins; `[DONE]` ends it.
#[derive(Debug, Default)]
pub(crate) struct ChatStreamMeter {
    /// The proxy asked for the usage chunk the agent did not, so it hides that chunk
    /// from the agent (a client that did not ask may not expect empty `choices`).
    injected: bool,
    seen: Option<Tokens>,
    done: bool,
}

impl ChatStreamMeter {
    pub(crate) fn new(injected: bool) -> ChatStreamMeter {
        ChatStreamMeter {
            injected,
            ..ChatStreamMeter::default()
        }
    }
}

impl StreamMeter for ChatStreamMeter {
    fn observe(&mut self, data: &str) -> bool {
        if data.trim() == "[DONE]" {
            self.done = true;
            return true;
        }
        if !peek::has_usage(data) {
            return true;
        }
        let Ok(chunk) = serde_json::from_str::<Value>(data) else {
            return true;
        };
        let Some(tokens) = tokens(&chunk) else {
            return true;
        };
        self.seen = Some(tokens);
        let no_choices = chunk
            .get("choices")
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty);
        !(self.injected && no_choices)
    }

    fn tokens(&self) -> Tokens {
        self.seen.unwrap_or_default()
    }

    fn complete(&self) -> bool {
        self.done
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
