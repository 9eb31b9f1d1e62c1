//! The three wire protocols, each in its own shape: where the key is, how a whole
//! answer and a stream's events look and where their usage is (written, and read back
//! from an answer a caller gives), and how errors look, before an answer and in the
//! middle of a stream.
//! Written from the providers' documented shapes, never from the proxy's code, so
//! that the proxy is tested against what providers send.

mod chat;
mod errors;
mod messages;
mod responses;

use hyper::HeaderMap;
use serde_json::Value;

pub(crate) use errors::ErrorKind;

use crate::usage::Usage;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// OpenAI Chat Completions.
    Chat,
    /// OpenAI Responses.
    Responses,
    /// Anthropic Messages.
    Messages,
}

/// An answer to render: the call's number (its ids carry it), the model asked for,
/// the text in pieces, and what the call is billed.
pub(crate) struct Reply<'a> {
    pub(crate) seq: u64,
    pub(crate) model: &'a str,
    pub(crate) pieces: Vec<String>,
    pub(crate) usage: Usage,
    /// The answer stopped at the output limit the request set, before its end.
    pub(crate) cut_at_limit: bool,
}

/// One server-sent event, and the usage the stream has declared once it is sent: the
/// tokens a meter reading the stream up to here has seen (Anthropic restates output
/// tokens as they grow, the OpenAI protocols state usage once, at the end).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Event {
    pub(crate) text: String,
    pub(crate) reported: Option<Usage>,
}

/// Unix time in every answer: a constant, so that an answer is a function of the
/// config, the call's number and the request alone.
const CREATED: i64 = 1_700_000_000;

impl Protocol {
    /// The protocol a model call's path is served in (`/v1/chat/completions`,
    /// `/v1/responses`, `/v1/messages`), with or without the version.
    pub fn of_path(path: &str) -> Option<Protocol> {
        if path.ends_with("/chat/completions") {
            Some(Protocol::Chat)
        } else if path.ends_with("/responses") {
            Some(Protocol::Responses)
        } else if path.ends_with("/messages") {
            Some(Protocol::Messages)
        } else {
            None
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Protocol::Chat => "chat",
            Protocol::Responses => "responses",
            Protocol::Messages => "messages",
        }
    }

    /// The API key the call carries the way its provider takes it: `Authorization:
    /// Bearer` for OpenAI, `x-api-key` for Anthropic (which also takes a bearer token).
    pub(crate) fn key(self, headers: &HeaderMap) -> Option<String> {
        let header = |name: &str| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::trim)
                .filter(|v| !v.is_empty())
        };
        let bearer = || {
            header("authorization")
                .and_then(|v| v.strip_prefix("Bearer "))
                .map(str::trim)
                .filter(|v| !v.is_empty())
        };
        let key = match self {
            Protocol::Messages => header("x-api-key").or_else(bearer),
            Protocol::Chat | Protocol::Responses => bearer(),
        };
        key.map(str::to_owned)
    }

    /// The most output tokens the request allows, where the protocol's limit is read
    /// (Responses' `max_output_tokens`; the other protocols' limits are not modelled:
    /// an answer is shorter than any limit a test sets there).
    pub(crate) fn output_limit(self, body: &Value) -> Option<u32> {
        match self {
            Protocol::Responses => body["max_output_tokens"]
                .as_u64()
                .map(|n| u32::try_from(n).unwrap_or(u32::MAX).max(1)),
            Protocol::Chat | Protocol::Messages => None,
        }
    }

    /// Whether a stream of this request states its usage: Chat only when asked
    /// (`stream_options.include_usage`), as OpenAI does; the others always.
    pub(crate) fn stream_states_usage(self, body: &Value) -> bool {
        match self {
            Protocol::Chat => body["stream_options"]["include_usage"] == Value::Bool(true),
            Protocol::Responses | Protocol::Messages => true,
        }
    }

    /// The whole answer.
    pub(crate) fn whole(self, reply: &Reply) -> Value {
        match self {
            Protocol::Chat => chat::whole(reply),
            Protocol::Responses => responses::whole(reply),
            Protocol::Messages => messages::whole(reply),
        }
    }

    /// The streamed answer's events, the terminating one last.
    pub(crate) fn events(self, reply: &Reply, states_usage: bool) -> Vec<Event> {
        match self {
            Protocol::Chat => chat::events(reply, states_usage),
            Protocol::Responses => responses::events(reply),
            Protocol::Messages => messages::events(reply),
        }
    }

    /// The usage a whole answer states, if it has a usage block.
    pub(crate) fn whole_usage(self, answer: &Value) -> Option<Usage> {
        match self {
            Protocol::Chat => chat::read_usage(&answer["usage"]),
            Protocol::Responses => responses::read_usage(&answer["usage"]),
            Protocol::Messages => messages::read_usage(&answer["usage"]),
        }
    }

    /// What a stream has declared once the event whose data is `event` is read, if
    /// that event declares usage; `before` is what it had declared until then. Chat:
    /// a chunk's `usage`; Responses: an event's `response.usage` (`response.completed`
    /// in a finished stream); Messages: `message_start`, then `message_delta`.
    pub(crate) fn declared(self, event: &Value, before: Option<Usage>) -> Option<Usage> {
        match self {
            Protocol::Chat => chat::read_usage(&event["usage"]),
            Protocol::Responses => responses::read_usage(&event["response"]["usage"]),
            Protocol::Messages => messages::declared(event, before),
        }
    }

    /// The in-stream error event that ends a failed stream in place of its terminating
    /// event; `sequence` is how many events came before it.
    pub(crate) fn error_event(self, seq: u64, model: &str, sequence: usize) -> Event {
        match self {
            Protocol::Chat => chat::error_event(),
            Protocol::Responses => responses::error_event(seq, model, sequence),
            Protocol::Messages => messages::error_event(),
        }
    }

    /// An error in the shape this protocol's clients parse, with its status.
    pub(crate) fn error(self, kind: &ErrorKind) -> (u16, Value) {
        match self {
            Protocol::Chat | Protocol::Responses => errors::openai(kind),
            Protocol::Messages => errors::anthropic(kind),
        }
    }
}

/// A JSON event under its own `type` as the event's name (Responses, Messages).
fn named(event: &Value) -> String {
    let kind = event["type"].as_str().unwrap_or_default();
    format!("event: {kind}\ndata: {event}\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply() -> Reply<'static> {
        Reply {
            seq: 3,
            model: "fake",
            pieces: vec!["a ".into(), "b ".into(), "c ".into()],
            usage: Usage {
                input: 40,
                output: 3,
            },
            cut_at_limit: false,
        }
    }

    /// What a stream has declared once all its events are sent is the whole answer's
    /// usage, in every protocol that states it.
    #[test]
    fn a_finished_stream_declares_the_whole_answers_usage() {
        for protocol in [Protocol::Chat, Protocol::Responses, Protocol::Messages] {
            let events = protocol.events(&reply(), true);
            let last = events.iter().rev().find_map(|e| e.reported);
            assert_eq!(last, Some(reply().usage), "{}", protocol.name());
            assert!(events.len() >= 4, "{}", protocol.name());
        }
        let silent = Protocol::Chat.events(&reply(), false);
        assert!(silent.iter().all(|e| e.reported.is_none()));
        assert!(silent.iter().all(|e| !e.text.contains("usage")));
    }

    /// Reading back what was written: a stream's declarations, event by event, and a
    /// whole answer's usage block, are what the fake bills for them.
    #[test]
    fn what_is_written_reads_back_as_the_same_usage() {
        for protocol in [Protocol::Chat, Protocol::Responses, Protocol::Messages] {
            let whole = protocol.whole(&reply());
            assert_eq!(protocol.whole_usage(&whole), Some(reply().usage));
            let mut declared = None;
            for event in protocol.events(&reply(), true) {
                let data = event
                    .text
                    .lines()
                    .find_map(|l| l.strip_prefix("data: "))
                    .and_then(|d| serde_json::from_str::<Value>(d).ok());
                let read = data.and_then(|d| protocol.declared(&d, declared));
                assert_eq!(read, event.reported, "{}: {}", protocol.name(), event.text);
                declared = read.or(declared);
            }
        }
    }

    #[test]
    fn keys_are_read_the_providers_way() {
        let mut h = HeaderMap::new();
        h.insert("authorization", "Bearer k1".parse().expect("header"));
        assert_eq!(Protocol::Chat.key(&h).as_deref(), Some("k1"));
        h.insert("x-api-key", "k2".parse().expect("header"));
        assert_eq!(Protocol::Messages.key(&h).as_deref(), Some("k2"));
        assert_eq!(Protocol::Responses.key(&HeaderMap::new()), None);
    }
}
