//! Reading Responses usage: the `usage` of a response object, which a stream carries
//! in its terminal event (`response.completed`, `.incomplete` or `.failed`).

use serde_json::Value;

use crate::proxy::log::Tokens;
use crate::proxy::peek;
use crate::proxy::relay::StreamMeter;

/// The usage block of a response object, if it has one.
pub(crate) fn tokens(response: &Value) -> Option<Tokens> {
    let usage = response.get("usage").filter(|u| u.is_object())?;
    Some(Tokens {
        input: usage.get("input_tokens").and_then(Value::as_u64),
        output: usage.get("output_tokens").and_then(Value::as_u64),
        cached_input: usage
            .pointer("/input_tokens_details/cached_tokens")
            .and_then(Value::as_u64),
        reasoning: usage
            .pointer("/output_tokens_details/reasoning_tokens")
            .and_then(Value::as_u64),
        cache_write: None,
    })
}

/// Meters a Responses stream from its terminal event.
#[derive(Debug, Default)]
pub(crate) struct StreamUsage {
    seen: Option<Tokens>,
    done: bool,
    problem: Option<String>,
}

impl StreamMeter for StreamUsage {
    fn observe(&mut self, data: &str) -> bool {
        let terminal = peek::kind(data).is_some_and(|kind| {
            matches!(
                kind.as_ref(),
                "response.completed" | "response.incomplete" | "response.failed" | "error"
            )
        });
        if !terminal {
            return true;
        }
        let Ok(event) = serde_json::from_str::<Value>(data) else {
            return true;
        };
        let kind = event.get("type").and_then(Value::as_str).unwrap_or("");
        match kind {
            "response.completed" | "response.incomplete" | "response.failed" => {
                self.done = true;
                if let Some(tokens) = event.get("response").and_then(tokens) {
                    self.seen = Some(tokens);
                }
                if kind != "response.completed" {
                    let why = event
                        .pointer("/response/error/message")
                        .or_else(|| event.pointer("/response/incomplete_details/reason"))
                        .and_then(Value::as_str)
                        .unwrap_or("no reason given");
                    self.problem = Some(format!("upstream stream ended with {kind}: {why}"));
                }
            }
            "error" => {
                let why = event
                    .get("message")
                    .or_else(|| event.pointer("/error/message"))
                    .and_then(Value::as_str)
                    .unwrap_or("no message");
                self.problem = Some(format!("upstream stream sent an error event: {why}"));
            }
            _ => {}
        }
        true
    }

    fn tokens(&self) -> Tokens {
        self.seen.unwrap_or_default()
    }

    fn complete(&self) -> bool {
        self.done
    }

    fn problem(&self) -> Option<String> {
        self.problem.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_terminal_event_carries_the_usage() {
        let mut meter = StreamUsage::default();
        assert!(meter.observe(r#"{"type":"response.created","response":{"usage":null}}"#));
        assert!(meter.observe(r#"{"type":"response.output_text.delta","delta":"hi"}"#));
        assert!(!meter.complete());
        assert_eq!(meter.tokens(), Tokens::default());
        meter.observe(
            r#"{"type":"response.completed","response":{"usage":{"input_tokens":30,"input_tokens_details":{"cached_tokens":12},"output_tokens":8,"output_tokens_details":{"reasoning_tokens":5},"total_tokens":38}}}"#,
        );
        assert!(meter.complete());
        assert_eq!(meter.problem(), None);
        let expected = Tokens {
            input: Some(30),
            output: Some(8),
            cached_input: Some(12),
            reasoning: Some(5),
            cache_write: None,
        };
        assert_eq!(meter.tokens(), expected);
    }

    #[test]
    fn a_failed_response_is_a_problem() {
        let mut meter = StreamUsage::default();
        meter.observe(r#"{"type":"response.failed","response":{"error":{"message":"overloaded"},"usage":null}}"#);
        assert!(meter.complete());
        assert!(meter.problem().is_some_and(|p| p.contains("overloaded")));
    }
}
