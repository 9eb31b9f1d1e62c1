//! The JSONL event stream on stdout (docs/agent-protocol.md). Each event is one line,
//! flushed at once, so that whatever the agent did before being killed is on record.

use std::io::Write;

use gauntlet::evidence::Event;

pub struct Emitter<W: Write> {
    out: W,
    /// Stamp each line with `ts_ms` (milliseconds since the epoch), so that a reader
    /// can tell when each tool call started and ended.
    timestamps: bool,
}

impl<W: Write> Emitter<W> {
    pub fn new(out: W) -> Self {
        Emitter {
            out,
            timestamps: false,
        }
    }

    /// An emitter that adds `ts_ms` to every line (an extra field readers ignore).
    pub fn with_timestamps(out: W) -> Self {
        Emitter {
            out,
            timestamps: true,
        }
    }

    pub fn emit(&mut self, event: &Event) -> std::io::Result<()> {
        let mut value = serde_json::to_value(event).map_err(std::io::Error::other)?;
        if let (true, Some(obj)) = (self.timestamps, value.as_object_mut()) {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_millis() as u64)
                .unwrap_or(0);
            obj.insert("ts_ms".into(), now.into());
        }
        let line = serde_json::to_string(&value).map_err(std::io::Error::other)?;
        self.out.write_all(line.as_bytes())?;
        self.out.write_all(b"\n")?;
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_one_protocol_line_each() {
        let mut buf = Vec::new();
        let mut e = Emitter::new(&mut buf);
        e.emit(&Event::Final {
            text: "a\nb".into(),
        })
        .unwrap();
        e.emit(&Event::Usage {
            input_tokens: Some(1),
            output_tokens: None,
        })
        .unwrap();
        let text = String::from_utf8(buf).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], r#"{"type":"final","text":"a\nb"}"#);
        let t = gauntlet::evidence::parse_transcript(text.as_bytes());
        assert_eq!(t.events.len(), 2);
        assert_eq!(t.final_message.as_deref(), Some("a\nb"));
    }
}
