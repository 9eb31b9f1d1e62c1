//! An answer the call carries for the fake to return: how a metering proxy that
//! renders a scripted answer itself still meets a real provider's timing and failures
//! on its forwarding path, the content scripted and the delivery the fake's.
//!
//! The contract: `x-gauntlet-answer` holds the exact answer body, standard base64 with
//! padding; `x-gauntlet-answer-type` its content type, `application/json` or
//! `text/event-stream` (parameters allowed, returned as given). A JSON answer must be
//! a JSON object. An event stream must be UTF-8 with `\n` line ends, its events split
//! at `\n\n` (the last one ended by it too), every line a field (`data`, `event`,
//! `id`, `retry`) or a comment, and every event's data JSON (Chat's `[DONE]` aside).
//! The answer's type, not the request's `stream`, says whether it is streamed.
//! Anything else is refused with a 400 naming the header, never answered, never
//! billed: a harness that renders a broken answer must hear of it, not have it
//! passed on.
//!
//! The answer is billed the usage it states, read as the path's protocol places it
//! ([`Protocol::whole_usage`], [`Protocol::declared`]).

use base64::Engine as _;
use bytes::Bytes;
use hyper::header::HeaderValue;
use hyper::HeaderMap;
use serde_json::Value;

use crate::protocol::{Event, Protocol};
use crate::usage::Usage;

/// The answer's body, base64.
pub const ANSWER_HEADER: &str = "x-gauntlet-answer";

/// The answer's content type.
pub const ANSWER_TYPE_HEADER: &str = "x-gauntlet-answer-type";

/// A well-formed given answer.
#[derive(Debug)]
pub(crate) struct Given {
    /// As the call gave it.
    pub(crate) content_type: HeaderValue,
    pub(crate) body: GivenBody,
}

#[derive(Debug)]
pub(crate) enum GivenBody {
    Whole {
        bytes: Bytes,
        usage: Option<Usage>,
    },
    /// The events, byte for byte, each with the usage declared once it is read.
    Stream {
        events: Vec<Event>,
    },
}

/// Why a given answer cannot be returned; the message starts with the header at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum BadAnswer {
    #[error("{ANSWER_TYPE_HEADER}: missing, while {ANSWER_HEADER} is given")]
    NoType,
    #[error("{ANSWER_HEADER}: missing, while {ANSWER_TYPE_HEADER} is given")]
    NoAnswer,
    #[error("{ANSWER_TYPE_HEADER}: `{0}` is neither application/json nor text/event-stream")]
    Type(String),
    #[error("{ANSWER_HEADER}: not standard base64 with padding: {0}")]
    Base64(#[from] base64::DecodeError),
    #[error("{ANSWER_HEADER}: declared application/json, but {0}")]
    NotJson(String),
    #[error("{ANSWER_HEADER}: declared text/event-stream, but {0}")]
    NotStream(String),
}

/// The answer `headers` carry, if any.
pub(crate) fn read(protocol: Protocol, headers: &HeaderMap) -> Result<Option<Given>, BadAnswer> {
    let (answer, kind) = match (headers.get(ANSWER_HEADER), headers.get(ANSWER_TYPE_HEADER)) {
        (None, None) => return Ok(None),
        (Some(_), None) => return Err(BadAnswer::NoType),
        (None, Some(_)) => return Err(BadAnswer::NoAnswer),
        (Some(answer), Some(kind)) => (answer, kind),
    };
    let essence = kind
        .to_str()
        .ok()
        .and_then(|k| k.split(';').next())
        .map(|k| k.trim().to_ascii_lowercase());
    let stream = match essence.as_deref() {
        Some("application/json") => false,
        Some("text/event-stream") => true,
        _ => {
            return Err(BadAnswer::Type(
                String::from_utf8_lossy(kind.as_bytes()).into_owned(),
            ))
        }
    };
    // Padded, canonical, standard alphabet: the engine's defaults refuse anything else.
    let bytes = Bytes::from(base64::engine::general_purpose::STANDARD.decode(answer.as_bytes())?);
    let body = if stream {
        GivenBody::Stream {
            events: events(protocol, &bytes).map_err(BadAnswer::NotStream)?,
        }
    } else {
        let value: Value = serde_json::from_slice(&bytes)
            .map_err(|e| BadAnswer::NotJson(format!("the answer is not JSON: {e}")))?;
        if !value.is_object() {
            return Err(BadAnswer::NotJson("the answer is not a JSON object".into()));
        }
        GivenBody::Whole {
            usage: protocol.whole_usage(&value),
            bytes,
        }
    };
    Ok(Some(Given {
        content_type: kind.clone(),
        body,
    }))
}

/// The stream's events, each as its bytes and the usage declared once it is read.
fn events(protocol: Protocol, bytes: &[u8]) -> Result<Vec<Event>, String> {
    let text = std::str::from_utf8(bytes).map_err(|e| format!("the answer is not UTF-8: {e}"))?;
    if text.contains('\r') {
        return Err("the answer has a carriage return: events are split at `\\n\\n`".into());
    }
    if !text.ends_with("\n\n") {
        return Err("the answer does not end with `\\n\\n` after its last event".into());
    }
    let mut declared: Option<Usage> = None;
    let mut out = Vec::new();
    for (i, event) in text.split_inclusive("\n\n").enumerate() {
        let data = data(&event[..event.len() - 2]).map_err(|why| format!("event {i}: {why}"))?;
        let reported = match data {
            None => None,
            Some(d) if protocol == Protocol::Chat && d == "[DONE]" => None,
            Some(d) => {
                let value: Value = serde_json::from_str(&d)
                    .map_err(|e| format!("event {i}: its data is not JSON: {e}"))?;
                protocol.declared(&value, declared)
            }
        };
        declared = reported.or(declared);
        out.push(Event {
            text: event.to_owned(),
            reported,
        });
    }
    Ok(out)
}

/// An event's data lines joined, or `None` when it has none.
fn data(event: &str) -> Result<Option<String>, String> {
    if event.is_empty() {
        return Err("empty (a third `\\n` after an event)".into());
    }
    let mut data: Option<String> = None;
    for line in event.split('\n') {
        if line.is_empty() {
            return Err("an empty line inside it".into());
        }
        if line.starts_with(':') {
            continue;
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "data" => match data.as_mut() {
                Some(d) => {
                    d.push('\n');
                    d.push_str(value);
                }
                None => data = Some(value.to_owned()),
            },
            "event" | "id" | "retry" => {}
            other => return Err(format!("`{other}` is not a server-sent event field")),
        }
    }
    Ok(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(answer: &str, kind: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(ANSWER_HEADER, answer.parse().expect("header"));
        h.insert(ANSWER_TYPE_HEADER, kind.parse().expect("header"));
        h
    }

    #[test]
    fn a_messages_stream_declares_its_start_then_its_delta() {
        let text = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":10,\"cache_read_input_tokens\":5,\"output_tokens\":1}}}\n\n\
                    : a comment\nevent: ping\ndata: {\"type\":\"ping\"}\n\n\
                    event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":7}}\n\n\
                    event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
        let events = events(Protocol::Messages, text.as_bytes()).expect("well-formed");
        assert_eq!(
            events.iter().map(|e| e.text.as_str()).collect::<String>(),
            text
        );
        let reported: Vec<Option<Usage>> = events.iter().map(|e| e.reported).collect();
        let u = |input, output| Some(Usage { input, output });
        assert_eq!(reported, vec![u(15, 1), None, u(15, 7), None]);
    }

    #[test]
    fn a_stream_that_is_not_one_is_named() {
        for (text, says) in [
            (&b"data: {}\n"[..], "does not end"),
            (b"data: {}\r\n\r\n", "carriage"),
            (b"data: {}\n\n\ndata: {}\n\n", "event 1: an empty line"),
            (b"\n\n", "event 0: empty"),
            (b"dta: {}\n\n", "`dta`"),
            (b"data: [DONE\n\n", "not JSON"),
            (&[0xff, b'\n', b'\n'], "UTF-8"),
        ] {
            let err = events(Protocol::Chat, text).expect_err(says);
            assert!(err.contains(says), "{says}: {err}");
        }
        // Chat's `[DONE]` is its own; another protocol's data must be JSON.
        assert!(events(Protocol::Chat, b"data: [DONE]\n\n").is_ok());
        assert!(events(Protocol::Responses, b"data: [DONE]\n\n").is_err());
    }

    #[test]
    fn the_two_headers_come_together() {
        let mut only = HeaderMap::new();
        only.insert(ANSWER_HEADER, "e30=".parse().expect("header"));
        assert_eq!(read(Protocol::Chat, &only).err(), Some(BadAnswer::NoType));
        let mut only = HeaderMap::new();
        only.insert(
            ANSWER_TYPE_HEADER,
            "application/json".parse().expect("header"),
        );
        assert_eq!(read(Protocol::Chat, &only).err(), Some(BadAnswer::NoAnswer));
        assert!(read(Protocol::Chat, &HeaderMap::new())
            .expect("no answer is fine")
            .is_none());
        let given = read(
            Protocol::Chat,
            &headers("e30=", "Application/JSON; charset=utf-8"),
        )
        .expect("{} is an object")
        .expect("given");
        assert_eq!(given.content_type, "Application/JSON; charset=utf-8");
        assert!(matches!(
            given.body,
            GivenBody::Whole { ref bytes, usage: None } if bytes.as_ref() == b"{}"
        ));
    }
}
