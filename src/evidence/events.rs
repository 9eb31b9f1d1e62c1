//! Parsing an agent's JSONL event stream (see docs/agent-protocol.md).

use std::io::BufRead;

use serde::{Deserialize, Serialize};

/// Longest line kept whole; a longer line is counted as garbage, never buffered whole.
pub const MAX_LINE: usize = 4 << 20;
/// Events a transcript keeps, in stream order; later ones are counted in
/// [`Transcript::dropped_events`], never held, so a flood of tiny events costs a count.
pub const MAX_EVENTS: usize = 10_000;
/// Objects of unknown type a transcript keeps raw; later ones are counted.
pub const MAX_UNKNOWN: usize = 1_000;

/// A normalized event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    Start {
        #[serde(default)]
        agent: String,
        #[serde(default)]
        version: String,
        #[serde(default)]
        model: String,
    },
    ToolCall {
        #[serde(default)]
        id: String,
        tool: String,
        #[serde(default)]
        input: serde_json::Value,
    },
    ToolResult {
        #[serde(default)]
        id: String,
        #[serde(default)]
        tool: String,
        #[serde(default)]
        output: String,
        #[serde(default)]
        failed: bool,
    },
    Message {
        text: String,
    },
    Usage {
        #[serde(default)]
        input_tokens: Option<u64>,
        #[serde(default)]
        output_tokens: Option<u64>,
    },
    Error {
        message: String,
    },
    Final {
        text: String,
    },
}

/// What a stream held, in summary. Derived, never stored as truth.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Transcript {
    pub events: Vec<Event>,
    /// The last `final` event's text.
    pub final_message: Option<String>,
    /// Lines that were not JSON objects (or were too long).
    pub garbage_lines: u64,
    /// JSON objects whose `type` is not one we know; kept raw.
    pub unknown_events: Vec<serde_json::Value>,
    pub tool_calls: u64,
    pub failed_tool_calls: u64,
    /// Events past [`MAX_EVENTS`]: counted, not kept. The final message is kept whatever
    /// the count, and `tool_calls` / `failed_tool_calls` count every call.
    #[serde(default)]
    pub dropped_events: u64,
    /// Unknown objects past [`MAX_UNKNOWN`]: counted, not kept.
    #[serde(default)]
    pub dropped_unknown_events: u64,
}

impl Transcript {
    /// Keep `event`, or count it once [`MAX_EVENTS`] are kept.
    pub fn push_event(&mut self, event: Event) {
        if self.events.len() < MAX_EVENTS {
            self.events.push(event);
        } else {
            self.dropped_events += 1;
        }
    }

    /// Keep an unknown object raw, or count it once [`MAX_UNKNOWN`] are kept.
    pub fn push_unknown(&mut self, raw: serde_json::Value) {
        if self.unknown_events.len() < MAX_UNKNOWN {
            self.unknown_events.push(raw);
        } else {
            self.dropped_unknown_events += 1;
        }
    }

    /// Every text a claim block could hide in that is *not* the final message.
    pub fn tool_outputs(&self) -> impl Iterator<Item = &str> {
        self.events.iter().filter_map(|e| match e {
            Event::ToolResult { output, .. } => Some(output.as_str()),
            Event::Message { text } => Some(text.as_str()),
            _ => None,
        })
    }
}

/// Parse a JSONL stream. Never fails: bad lines are counted, and reading stops at the
/// first I/O error with what was read so far.
pub fn parse_transcript<R: BufRead>(mut reader: R) -> Transcript {
    let mut t = Transcript::default();
    let mut line = Vec::new();
    loop {
        line.clear();
        match read_line_bounded(&mut reader, &mut line) {
            Ok(None) => break,
            Ok(Some(false)) => {
                t.garbage_lines += 1;
                continue;
            }
            Ok(Some(true)) => {}
            Err(_) => break,
        }
        let trimmed = line.trim_ascii();
        if trimmed.is_empty() {
            continue;
        }
        let value: serde_json::Value = match crate::json::from_bytes(trimmed) {
            Ok(v @ serde_json::Value::Object(_)) => v,
            _ => {
                t.garbage_lines += 1;
                continue;
            }
        };
        match serde_json::from_value::<Event>(value.clone()) {
            Ok(event) => {
                match &event {
                    Event::Final { text } => t.final_message = Some(text.clone()),
                    Event::ToolCall { .. } => t.tool_calls += 1,
                    Event::ToolResult { failed: true, .. } => t.failed_tool_calls += 1,
                    _ => {}
                }
                t.push_event(event);
            }
            Err(_) => t.push_unknown(value),
        }
    }
    t
}

/// Read one line into `buf`, keeping at most [`MAX_LINE`] bytes. Returns `None` at end
/// of stream, `Some(false)` for a line that was too long (its bytes are discarded).
pub(crate) fn read_line_bounded<R: BufRead + ?Sized>(
    r: &mut R,
    buf: &mut Vec<u8>,
) -> std::io::Result<Option<bool>> {
    let mut too_long = false;
    let mut read_any = false;
    loop {
        let available = r.fill_buf()?;
        if available.is_empty() {
            return Ok(if read_any { Some(!too_long) } else { None });
        }
        read_any = true;
        let (chunk, done) = match available.iter().position(|&b| b == b'\n') {
            Some(i) => (&available[..i], Some(i + 1)),
            None => (available, None),
        };
        if !too_long {
            if buf.len() + chunk.len() > MAX_LINE {
                too_long = true;
                buf.clear();
            } else {
                buf.extend_from_slice(chunk);
            }
        }
        let consumed = done.unwrap_or(available.len());
        r.consume(consumed);
        if done.is_some() {
            return Ok(Some(!too_long));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_final_wins_and_garbage_is_counted() {
        let input = b"not json\n{\"type\":\"final\",\"text\":\"a\"}\n[1,2]\n{\"type\":\"mystery\",\"x\":1}\n{\"type\":\"final\",\"text\":\"b\"}\n";
        let t = parse_transcript(&input[..]);
        assert_eq!(t.final_message.as_deref(), Some("b"));
        assert_eq!(t.garbage_lines, 2);
        assert_eq!(t.unknown_events.len(), 1);
    }

    #[test]
    fn a_line_longer_than_the_cap_is_garbage_not_memory() {
        let mut input = vec![b'x'; MAX_LINE + 10];
        input.extend_from_slice(b"\n{\"type\":\"final\",\"text\":\"ok\"}");
        let t = parse_transcript(&input[..]);
        assert_eq!(t.garbage_lines, 1);
        assert_eq!(t.final_message.as_deref(), Some("ok"));
    }

    #[test]
    fn a_flood_of_tiny_events_is_counted_not_kept() {
        let n = MAX_EVENTS + 5_000;
        let mut input = br#"{"type":"message","text":"x"}
"#
        .repeat(n);
        input.extend_from_slice(
            &br#"{"type":"mystery"}
"#
            .repeat(MAX_UNKNOWN + 7),
        );
        input.extend_from_slice(br#"{"type":"final","text":"done"}"#);
        let t = parse_transcript(&input[..]);
        assert_eq!(t.events.len(), MAX_EVENTS);
        assert_eq!(
            t.dropped_events,
            (n - MAX_EVENTS + 1) as u64,
            "the final event too"
        );
        assert_eq!(
            t.final_message.as_deref(),
            Some("done"),
            "the final message is kept"
        );
        assert_eq!(t.unknown_events.len(), MAX_UNKNOWN);
        assert_eq!(t.dropped_unknown_events, 7);
    }

    #[test]
    fn tool_results_are_not_the_final_message() {
        let input = br#"{"type":"tool_result","id":"1","tool":"shell","output":"claim here"}"#;
        let t = parse_transcript(&input[..]);
        assert_eq!(t.final_message, None);
        assert_eq!(t.tool_outputs().count(), 1);
    }
}
