//! Reading Anthropic usage, normalized so `input` means all input tokens as in the
//! OpenAI protocols (see [`crate::proxy::UsageEntry::input_tokens`]).

use serde_json::Value;

use crate::proxy::log::Tokens;
use crate::proxy::usage::{self, Meter, Peek, Said, StreamEvents};

/// The raw counts of an Anthropic usage block; each is absent when not reported.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Raw {
    input: Option<u64>,
    output: Option<u64>,
    cache_read: Option<u64>,
    cache_write: Option<u64>,
}

impl Raw {
    fn of(usage: &Value) -> Raw {
        let field = |name: &str| usage.get(name).and_then(Value::as_u64);
        Raw {
            input: field("input_tokens"),
            output: field("output_tokens"),
            cache_read: field("cache_read_input_tokens"),
            cache_write: field("cache_creation_input_tokens"),
        }
    }

    /// Later counts win where they are given (`message_delta` restates some).
    fn update(&mut self, later: Raw) {
        self.input = later.input.or(self.input);
        self.output = later.output.or(self.output);
        self.cache_read = later.cache_read.or(self.cache_read);
        self.cache_write = later.cache_write.or(self.cache_write);
    }

    fn tokens(self) -> Tokens {
        let parts = [self.input, self.cache_read, self.cache_write];
        let input = parts.iter().any(Option::is_some).then(|| {
            parts
                .iter()
                .flatten()
                .fold(0u64, |a, b| a.saturating_add(*b))
        });
        Tokens {
            input,
            output: self.output,
            cached_input: self.cache_read,
            reasoning: None,
            cache_write: self.cache_write,
        }
    }
}

/// The usage block of a whole message, if it has one.
pub(crate) fn tokens(message: &Value) -> Option<Tokens> {
    let usage = message.get("usage").filter(|u| u.is_object())?;
    Some(Raw::of(usage).tokens())
}

/// The events a Messages stream's usage and end are read from.
const METERED: &[&str] = &["message_start", "message_delta", "message_stop", "error"];

/// Meters a Messages stream: `message_start` gives input, `message_delta` the final
/// output count; `message_stop` ends it.
pub(crate) type StreamUsage = Meter<MessagesEvents>;

#[derive(Debug, Default)]
pub(crate) struct MessagesEvents {
    raw: Raw,
}

impl StreamEvents for MessagesEvents {
    fn peek(&self, data: &str) -> Peek {
        Peek::kinds(data, METERED)
    }

    fn read(&mut self, event: &Value) -> Said {
        let block = match event.get("type").and_then(Value::as_str) {
            Some("message_start") => event.pointer("/message/usage"),
            Some("message_delta") => event.get("usage"),
            Some("message_stop") => {
                return Said {
                    end: true,
                    ..Said::default()
                };
            }
            Some("error") => {
                return Said {
                    problem: Some(usage::error_event(event, &["/error/message"])),
                    providers: usage::providers_error(event, &["/error/type"]),
                    ..Said::default()
                };
            }
            _ => None,
        };
        if let Some(block) = block {
            self.raw.update(Raw::of(block));
        }
        Said::default()
    }

    fn tokens(&self) -> Tokens {
        self.raw.tokens()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proxy::usage::StreamMeter;
    use serde_json::json;

    #[test]
    fn cache_reads_and_writes_join_the_input() {
        let message = json!({"usage": {"input_tokens": 10, "output_tokens": 4,
            "cache_read_input_tokens": 100, "cache_creation_input_tokens": 20}});
        let expected = Tokens {
            input: Some(130),
            output: Some(4),
            cached_input: Some(100),
            reasoning: None,
            cache_write: Some(20),
        };
        assert_eq!(tokens(&message), Some(expected));
        assert_eq!(tokens(&json!({})), None);
    }

    #[test]
    fn a_stream_takes_input_from_start_and_output_from_delta() {
        let mut meter = StreamUsage::default();
        meter.observe(r#"{"type":"message_start","message":{"usage":{"input_tokens":7,"cache_read_input_tokens":3,"output_tokens":1}}}"#);
        meter.observe(
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}"#,
        );
        assert!(!meter.complete());
        meter.observe(r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":42}}"#);
        meter.observe(r#"{"type":"message_stop"}"#);
        assert!(meter.complete());
        let t = meter.tokens();
        assert_eq!(
            (t.input, t.output, t.cached_input, t.cache_write),
            (Some(10), Some(42), Some(3), None)
        );
    }

    #[test]
    fn nothing_seen_is_nothing_invented() {
        assert_eq!(StreamUsage::default().tokens(), Tokens::default());
    }
}
