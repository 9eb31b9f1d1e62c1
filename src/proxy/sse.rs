//! Splitting a server-sent-events byte stream into events as bytes arrive.
//!
//! Chunks from the network cut events anywhere (even inside a UTF-8 character), so the
//! scanner buffers until a blank line ends an event and hands back both the event's
//! `data` and its raw bytes (for forwarding it unchanged).

use bytes::{Bytes, BytesMut};

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    /// The `data:` lines joined with `\n`.
    pub(crate) data: String,
    /// The event's bytes as received, including the blank line that ended it.
    pub(crate) raw: Bytes,
}

#[derive(Debug, Default)]
pub(crate) struct SseScanner {
    /// What arrived and is not yet an event; an event's bytes are split off it, not
    /// copied.
    buf: BytesMut,
    /// Where the first not-yet-scanned line of `buf` starts.
    scanned: usize,
}

impl SseScanner {
    /// Feed a chunk; return the events it completed.
    pub(crate) fn push(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        self.buf.extend_from_slice(chunk);
        let mut events = Vec::new();
        while let Some(offset) = self.buf[self.scanned..].iter().position(|b| *b == b'\n') {
            let end = self.scanned + offset;
            let line = &self.buf[self.scanned..end];
            let blank = line.is_empty() || line == b"\r";
            self.scanned = end + 1;
            if blank {
                let raw = self.buf.split_to(self.scanned).freeze();
                self.scanned = 0;
                events.push(event(raw));
            }
        }
        events
    }

    /// The bytes of an event the stream never finished, if any.
    pub(crate) fn finish(&mut self) -> Option<SseEvent> {
        self.scanned = 0;
        (!self.buf.is_empty()).then(|| event(std::mem::take(&mut self.buf).freeze()))
    }
}

fn event(raw: Bytes) -> SseEvent {
    let text = String::from_utf8_lossy(&raw);
    // The values joined with `\n`, built in one string (an event has one line, mostly).
    let mut data = String::new();
    let values = text
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(|value| value.strip_prefix(' ').unwrap_or(value));
    for (i, value) in values.enumerate() {
        if i > 0 {
            data.push('\n');
        }
        data.push_str(value);
    }
    SseEvent { data, raw }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_across_chunks_are_reassembled() {
        let stream = b"data: {\"a\":1}\n\ndata: x\r\ndata: y\r\n\r\ndata: [DONE]\n\n";
        let mut scanner = SseScanner::default();
        let mut events = Vec::new();
        for chunk in stream.chunks(3) {
            events.extend(scanner.push(chunk));
        }
        let data: Vec<&str> = events.iter().map(|e| e.data.as_str()).collect();
        assert_eq!(data, ["{\"a\":1}", "x\ny", "[DONE]"]);
        let raw: Vec<u8> = events.iter().flat_map(|e| e.raw.to_vec()).collect();
        assert_eq!(raw, stream);
        assert_eq!(scanner.finish(), None);
    }

    #[test]
    fn an_unfinished_event_is_kept_for_the_end() {
        let mut scanner = SseScanner::default();
        assert!(scanner.push(b"data: part").is_empty());
        assert_eq!(scanner.finish().map(|e| e.data), Some("part".to_owned()));
    }
}
