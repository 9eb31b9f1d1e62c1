//! Keeping the API key out of a stream's decoded text, event by event.
//!
//! Byte-level redaction (see `relay`) finds the key in the bytes of one event, however
//! the network cut them. A provider can also spell the key across events: each text
//! delta (Chat Completions `choices[].delta.content`, Responses
//! `response.output_text.delta`'s `delta`, Messages `content_block_delta`'s
//! `delta.text`, and the other deltas of the same kind) carries a piece, so no event's
//! bytes hold it but the text the agent assembles does. The guard reads each event's
//! deltas as decoded JSON and holds back an event whose text ends with what could begin
//! the key, until the next event shows whether the key follows; when it does, the
//! text of both is rewritten with the key redacted. Every other event (and one whose
//! text could begin nothing) goes on byte for byte as it came.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::Value;

use super::upstream::Upstream;

/// An event's one text delta: which text it continues, and where in its JSON it is.
struct Slot {
    /// The text a delta continues (one per choice, content part or block); events of
    /// different channels never join into one text.
    channel: String,
    pointer: String,
}

/// An event held back: its text may be the start of the key.
struct Held {
    channel: String,
    pointer: String,
    value: Value,
    raw: Bytes,
    /// The text it goes out with (its own, less what moved on, plus what moved in).
    text: String,
    /// Whether it must be re-serialized (its text, or another string, was changed).
    changed: bool,
    /// The events that came after it and wait for it (a `ping`, another block's
    /// delta), ready to go out in order once it does.
    behind: Vec<u8>,
}

pub(crate) struct TextGuard {
    upstream: Arc<Upstream>,
    held: Option<Held>,
}

impl TextGuard {
    pub(crate) fn new(upstream: Arc<Upstream>) -> TextGuard {
        TextGuard {
            upstream,
            held: None,
        }
    }

    /// Take one event (its `data` and its raw bytes); append what may go to the agent
    /// now to `out`.
    pub(crate) fn push(&mut self, data: &str, raw: Bytes, out: &mut Vec<u8>) {
        let Ok(mut value) = serde_json::from_str::<Value>(data) else {
            // Not JSON (`[DONE]`, a comment, garbage): it ends any text.
            self.flush(out);
            out.extend_from_slice(&raw);
            return;
        };
        // The key spelled with escapes inside one string, anywhere in the event.
        let mut changed = self.upstream.redact_value(&mut value);
        let slots = slots(&value);
        let [slot] = slots.as_slice() else {
            if let Some(held) = self
                .held
                .as_mut()
                .filter(|held| slots.is_empty() && !closes(&value, &held.channel))
            {
                // Between two deltas of the held text (a `ping`, a usage chunk): the
                // text may still go on, so this waits behind it.
                emit(&mut held.behind, &raw, &value, changed);
                return;
            }
            // The held text is over, or several deltas at once: it goes out here.
            self.flush(out);
            emit(out, &raw, &value, changed);
            return;
        };
        let own = value
            .pointer(&slot.pointer)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let before = match self.held.take() {
            Some(held) if held.channel == slot.channel => Some(held),
            Some(mut held) => {
                // Another text's delta (its own key, if any, already redacted): it
                // waits behind the held one, unless it could begin the key itself.
                if self.upstream.key_start_at_end(own.as_bytes()) == 0 {
                    emit(&mut held.behind, &raw, &value, changed);
                    self.held = Some(held);
                    return;
                }
                held.emit(out);
                None
            }
            None => None,
        };
        let mut combined = before.as_ref().map(|h| h.text.clone()).unwrap_or_default();
        combined.push_str(&own);
        let redacted = self.upstream.redact(&combined);
        let hold = self.upstream.key_start_at_end(redacted.as_bytes());
        let untouched = redacted == combined;
        match before {
            // The held text began nothing after all: both go as they are.
            Some(held) if untouched && hold <= own.len() => {
                held.emit(out);
                self.keep_or_emit(slot, value, raw, own, changed, hold, out);
            }
            Some(mut held) => {
                // The key (or what could begin it) runs across the two: what may go
                // out goes with the held event, the rest moves on with this one.
                let split = redacted.len() - hold;
                held.text = redacted[..split].to_owned();
                held.changed = true;
                held.emit(out);
                changed = true;
                let rest = redacted[split..].to_owned();
                if hold == 0 {
                    set(&mut value, &slot.pointer, rest);
                    emit(out, &raw, &value, changed);
                } else {
                    self.held = Some(Held::new(slot, value, raw, rest, changed));
                }
            }
            None => {
                changed |= !untouched;
                self.keep_or_emit(slot, value, raw, redacted, changed, hold, out);
            }
        }
    }

    /// An event with `text` as its delta: held when its end could begin the key.
    #[allow(clippy::too_many_arguments)]
    fn keep_or_emit(
        &mut self,
        slot: &Slot,
        mut value: Value,
        raw: Bytes,
        text: String,
        changed: bool,
        hold: usize,
        out: &mut Vec<u8>,
    ) {
        if hold == 0 {
            if changed {
                set(&mut value, &slot.pointer, text);
            }
            emit(out, &raw, &value, changed);
        } else {
            self.held = Some(Held::new(slot, value, raw, text, changed));
        }
    }

    /// The held event, if any, goes out as it stands: its text's end is less than the
    /// key, whatever follows.
    pub(crate) fn flush(&mut self, out: &mut Vec<u8>) {
        if let Some(held) = self.held.take() {
            held.emit(out);
        }
    }
}

impl Held {
    /// The event of `slot`, held with `text` as its delta and nothing behind it yet.
    fn new(slot: &Slot, value: Value, raw: Bytes, text: String, changed: bool) -> Held {
        Held {
            channel: slot.channel.clone(),
            pointer: slot.pointer.clone(),
            value,
            raw,
            text,
            changed,
            behind: Vec::new(),
        }
    }

    fn emit(mut self, out: &mut Vec<u8>) {
        if self.changed {
            set(&mut self.value, &self.pointer, self.text);
        }
        emit(out, &self.raw, &self.value, self.changed);
        out.extend_from_slice(&self.behind);
    }
}

/// Whether `value` ends the text `channel` names (its choice finished, its block
/// stopped, its part or item done, the whole answer over): a delta held for it then
/// goes out, as nothing can continue it.
fn closes(value: &Value, channel: &str) -> bool {
    if let Some(choices) = value.get("choices").and_then(Value::as_array) {
        return choices.iter().enumerate().any(|(i, choice)| {
            let index = choice.get("index").map_or(i.to_string(), |v| v.to_string());
            !choice.get("finish_reason").is_none_or(Value::is_null)
                && channel.starts_with(&format!("chat {index} "))
        });
    }
    let kind = value
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    match kind {
        "content_block_stop" | "content_block_start" => {
            let index = value.get("index").map(Value::to_string).unwrap_or_default();
            channel.starts_with(&format!("block {index} "))
        }
        "message_delta"
        | "message_stop"
        | "error"
        | "response.completed"
        | "response.failed"
        | "response.incomplete"
        | "response.error" => true,
        done if done.starts_with("response.") && done.ends_with(".done") => {
            let item = value.get("item_id").or_else(|| value.pointer("/item/id"));
            item.is_none_or(|id| channel.contains(&id.to_string()))
        }
        _ => false,
    }
}

fn set(value: &mut Value, pointer: &str, text: String) {
    if let Some(slot) = value.pointer_mut(pointer) {
        *slot = Value::String(text);
    }
}

/// The event as it came, or with its data re-serialized from `value`: its other lines
/// (`event:`, `id:`) kept in place, its data in one line where its first was.
fn emit(out: &mut Vec<u8>, raw: &[u8], value: &Value, changed: bool) {
    if !changed {
        out.extend_from_slice(raw);
        return;
    }
    let text = String::from_utf8_lossy(raw);
    let mut data_written = false;
    for line in text.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\n', '\r']);
        if bare.is_empty() {
            continue;
        }
        if bare.starts_with("data:") {
            if !data_written {
                out.extend_from_slice(b"data: ");
                out.extend_from_slice(value.to_string().as_bytes());
                out.push(b'\n');
                data_written = true;
            }
        } else {
            out.extend_from_slice(bare.as_bytes());
            out.push(b'\n');
        }
    }
    out.push(b'\n');
}

/// The text deltas an event carries, of any protocol.
fn slots(value: &Value) -> Vec<Slot> {
    let mut slots = Vec::new();
    let string_at = |pointer: &str| value.pointer(pointer).is_some_and(Value::is_string);
    // Chat Completions: per choice, its content, reasoning and tool-call arguments.
    if let Some(choices) = value.get("choices").and_then(Value::as_array) {
        for (i, choice) in choices.iter().enumerate() {
            let index = choice.get("index").map_or(i.to_string(), |v| v.to_string());
            for field in ["content", "reasoning_content", "reasoning", "refusal"] {
                let pointer = format!("/choices/{i}/delta/{field}");
                if string_at(&pointer) {
                    slots.push(Slot {
                        channel: format!("chat {index} {field}"),
                        pointer,
                    });
                }
            }
            // A legacy completion's text.
            let pointer = format!("/choices/{i}/text");
            if string_at(&pointer) {
                slots.push(Slot {
                    channel: format!("chat {index} text"),
                    pointer,
                });
            }
            if let Some(calls) = choice
                .pointer("/delta/tool_calls")
                .and_then(Value::as_array)
            {
                for (j, call) in calls.iter().enumerate() {
                    let pointer = format!("/choices/{i}/delta/tool_calls/{j}/function/arguments");
                    if string_at(&pointer) {
                        let call_index = call.get("index").map_or(j.to_string(), |v| v.to_string());
                        slots.push(Slot {
                            channel: format!("chat {index} tool {call_index}"),
                            pointer,
                        });
                    }
                }
            }
        }
        return slots;
    }
    let kind = value
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let at = |name: &str| value.get(name).map(Value::to_string).unwrap_or_default();
    // Responses: every `*.delta` event whose delta is text.
    if kind.starts_with("response.") && kind.ends_with(".delta") && string_at("/delta") {
        slots.push(Slot {
            channel: format!(
                "{kind} {} {} {} {}",
                at("item_id"),
                at("output_index"),
                at("content_index"),
                at("summary_index")
            ),
            pointer: "/delta".to_owned(),
        });
    }
    // Messages: a content block's text, thinking or tool input, as it grows.
    if kind == "content_block_delta" {
        for field in ["text", "thinking", "partial_json"] {
            let pointer = format!("/delta/{field}");
            if string_at(&pointer) {
                slots.push(Slot {
                    channel: format!("block {} {field}", at("index")),
                    pointer,
                });
            }
        }
    }
    slots
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const KEY: &str = "sk-test-0123456789abcdef";

    fn guard() -> TextGuard {
        TextGuard::new(Arc::new(
            Upstream::new("http://127.0.0.1:9", KEY, crate::proxy::RetryPolicy::NONE)
                .expect("upstream"),
        ))
    }

    fn chat(text: &str) -> (String, Bytes) {
        let data = json!({"choices": [{"index": 0, "delta": {"content": text}}]}).to_string();
        let raw = Bytes::from(format!("data: {data}\n\n"));
        (data, raw)
    }

    fn run(events: &[(String, Bytes)]) -> Vec<u8> {
        let mut g = guard();
        let mut out = Vec::new();
        for (data, raw) in events {
            g.push(data, raw.clone(), &mut out);
        }
        g.flush(&mut out);
        out
    }

    fn text_of(out: &[u8]) -> String {
        String::from_utf8_lossy(out)
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .filter_map(|d| serde_json::from_str::<Value>(d).ok())
            .filter_map(|v| {
                v["choices"][0]["delta"]["content"]
                    .as_str()
                    .map(str::to_owned)
            })
            .collect()
    }

    #[test]
    fn a_key_split_across_any_number_of_deltas_is_redacted_in_the_proxy_text() {
        for pieces in [
            vec!["a ", "sk-te", "st-0123456789abcdef b"],
            vec!["sk-", "test", "-0123", "456789abcdef", " b"],
            vec!["s", "k", "-test-0123456789abcde", "f"],
        ] {
            let events: Vec<_> = pieces.iter().map(|p| chat(p)).collect();
            let out = run(&events);
            let text = text_of(&out);
            assert!(!String::from_utf8_lossy(&out).contains(KEY), "{pieces:?}");
            assert_eq!(
                text,
                pieces.concat().replace(KEY, "[redacted]"),
                "{pieces:?}"
            );
            // One event out for each in.
            assert_eq!(
                String::from_utf8_lossy(&out).matches("data: ").count(),
                pieces.len()
            );
        }
    }

    #[test]
    fn text_that_only_looks_like_the_key_starting_goes_on_byte_for_byte() {
        let events = [chat("this is"), chat(" some text, sk-"), chat("ip it")];
        let out = run(&events);
        let sent: Vec<u8> = events.iter().flat_map(|(_, raw)| raw.to_vec()).collect();
        assert_eq!(out, sent);
    }

    #[test]
    fn a_held_delta_goes_out_before_the_next_event_that_is_no_delta() {
        let done = ("[DONE]".to_owned(), Bytes::from_static(b"data: [DONE]\n\n"));
        let events = [chat("sk-te"), done];
        let out = run(&events[..1]);
        assert_eq!(out, events[0].1.to_vec());
        let mut g = guard();
        let mut out = Vec::new();
        g.push(&events[0].0, events[0].1.clone(), &mut out);
        assert!(out.is_empty(), "held: it could begin the key");
        g.push(&events[1].0, events[1].1.clone(), &mut out);
        let sent: Vec<u8> = events.iter().flat_map(|(_, raw)| raw.to_vec()).collect();
        assert_eq!(out, sent);
    }

    #[test]
    fn events_between_two_deltas_of_the_text_wait_and_keep_their_order() {
        let event = |value: Value| {
            let data = value.to_string();
            let raw = Bytes::from(format!("event: {}\ndata: {data}\n\n", value["type"]));
            (data, raw)
        };
        let delta = |index: u32, text: &str| {
            event(json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "text_delta", "text": text}}))
        };
        let (a, b) = KEY.split_at(7);
        let events = [
            delta(0, &format!("key {a}")),
            event(json!({"type": "ping"})),
            delta(1, "elsewhere"),
            delta(0, &format!("{b} end")),
            event(json!({"type": "content_block_stop", "index": 0})),
        ];
        let out = run(&events);
        let out = String::from_utf8_lossy(&out);
        assert!(!out.contains(KEY), "{out}");
        let order: Vec<String> = out
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .filter_map(|d| serde_json::from_str::<Value>(d).ok())
            .map(|v| format!("{} {}", v["type"], v["delta"]["text"]))
            .collect();
        assert_eq!(
            order,
            [
                // The held delta takes the whole text, the key redacted; the one
                // that ended the key goes on empty.
                "\"content_block_delta\" \"key [redacted] end\"",
                "\"ping\" null",
                "\"content_block_delta\" \"elsewhere\"",
                "\"content_block_delta\" \"\"",
                "\"content_block_stop\" null",
            ]
        );
        // A stop lets a held delta go at once.
        let mut g = guard();
        let mut out = Vec::new();
        g.push(&events[0].0, events[0].1.clone(), &mut out);
        assert!(out.is_empty());
        g.push(&events[4].0, events[4].1.clone(), &mut out);
        let sent: Vec<u8> = [&events[0], &events[4]]
            .iter()
            .flat_map(|(_, raw)| raw.to_vec())
            .collect();
        assert_eq!(out, sent);
    }

    #[test]
    fn a_key_spelled_with_escapes_is_redacted_and_other_lines_are_kept() {
        let escaped = KEY.replace('s', "\\u0073");
        let data = format!(
            "{{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"{escaped}\"}}}}"
        );
        let raw = Bytes::from(format!("event: content_block_delta\ndata: {data}\n\n"));
        let out = run(&[(data, raw)]);
        let out = String::from_utf8_lossy(&out);
        assert!(
            out.starts_with("event: content_block_delta\ndata: "),
            "{out}"
        );
        assert!(out.ends_with("\n\n"), "{out}");
        assert!(
            out.contains("[redacted]") && !out.contains(&escaped),
            "{out}"
        );
    }
}
