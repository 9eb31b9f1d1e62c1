//! Reading Responses usage: the `usage` of a response object, which a stream carries
//! in its terminal event (`response.completed`, `.incomplete` or `.failed`).

use serde_json::Value;

use crate::proxy::log::Tokens;
use crate::proxy::usage::{self, Meter, Peek, Said, StreamEvents, UsageFields};

const FIELDS: UsageFields = UsageFields {
    input: "input_tokens",
    output: "output_tokens",
    cached_input: "/input_tokens_details/cached_tokens",
    reasoning: "/output_tokens_details/reasoning_tokens",
};

/// The usage block of a response object, if it has one.
pub(crate) fn tokens(response: &Value) -> Option<Tokens> {
    FIELDS.tokens(response)
}

/// The events a Responses stream's usage and end are read from: its terminal ones.
const TERMINAL: &[&str] = &[
    "response.completed",
    "response.incomplete",
    "response.failed",
    "error",
];

/// Meters a Responses stream from its terminal event.
pub(crate) type StreamUsage = Meter<ResponsesEvents>;

#[derive(Debug, Default)]
pub(crate) struct ResponsesEvents {
    seen: Option<Tokens>,
}

impl StreamEvents for ResponsesEvents {
    fn peek(&self, data: &str) -> Peek {
        Peek::kinds(data, TERMINAL)
    }

    fn read(&mut self, event: &Value) -> Said {
        let kind = event.get("type").and_then(Value::as_str).unwrap_or("");
        match kind {
            "response.completed" | "response.incomplete" | "response.failed" => {
                if let Some(tokens) = event.get("response").and_then(tokens) {
                    self.seen = Some(tokens);
                }
                let problem = (kind != "response.completed").then(|| {
                    let why = usage::first_text(
                        event,
                        &[
                            "/response/error/message",
                            "/response/incomplete_details/reason",
                        ],
                    )
                    .unwrap_or("no reason given");
                    format!("upstream stream ended with {kind}: {why}")
                });
                Said {
                    end: true,
                    problem,
                    // An incomplete response stopped where the request's own limit
                    // (`max_output_tokens`) or a filter of what it sent stopped it: an
                    // answer, not a failure. A failed one says whose failure it is.
                    providers: kind == "response.failed"
                        && usage::providers_error(event, &["/response/error/code"]),
                    hidden: false,
                }
            }
            "error" => Said {
                problem: Some(usage::error_event(event, &["/message", "/error/message"])),
                providers: usage::providers_error(event, &["/code", "/error/code", "/error/type"]),
                ..Said::default()
            },
            _ => Said::default(),
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
        meter.observe(r#"{"type":"response.failed","response":{"error":{"code":"server_error","message":"overloaded"},"usage":null}}"#);
        assert!(meter.complete());
        assert!(meter.problem().is_some_and(|p| p.contains("overloaded")));
        assert!(meter.providers_problem());
    }

    /// What the agent's own request brought about is kept as the stream's problem but
    /// is not the provider's: a response cut at the agent's `max_output_tokens`, one
    /// failed for the prompt or image it sent, an error event naming no provider fault.
    #[test]
    fn an_answer_to_the_agents_own_request_is_no_providers_problem() {
        for event in [
            r#"{"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"usage":{"input_tokens":3,"output_tokens":2}}}"#,
            r#"{"type":"response.incomplete","response":{"incomplete_details":{"reason":"content_filter"},"usage":null}}"#,
            r#"{"type":"response.failed","response":{"error":{"code":"invalid_prompt","message":"no"},"usage":null}}"#,
            r#"{"type":"response.failed","response":{"error":{"message":"overloaded"},"usage":null}}"#,
            r#"{"type":"error","code":"invalid_image","message":"bad image"}"#,
        ] {
            let mut meter = StreamUsage::default();
            meter.observe(event);
            assert!(meter.problem().is_some(), "{event}");
            assert!(!meter.providers_problem(), "{event}");
        }
        let mut meter = StreamUsage::default();
        meter.observe(r#"{"type":"error","code":"rate_limit_exceeded","message":"slow down"}"#);
        assert!(meter.providers_problem());
    }
}
