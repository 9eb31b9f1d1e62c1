//! Reading a request body: whole (scripted mode answers from the conversation) or only
//! its envelope (byok forwards the conversation as received).
//!
//! An agent's request is mostly conversation, tens of kilobytes of it late in a task.
//! Building it as a JSON tree and measuring it costs more than the rest of a forwarded
//! call, and byok needs three small fields of it, so byok reads those and lets the
//! parser skip the rest without building anything.

use bytes::Bytes;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::error::{CallError, RequestError};

/// How much of a malformed body its usage entry quotes.
const BODY_EXCERPT_CHARS: usize = 120;

/// What forwarding a call needs to know of its request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Envelope {
    pub(crate) model: Option<String>,
    /// The provider may answer with a stream ([`may_stream`]).
    pub(crate) stream: bool,
    /// The client asked for a Chat stream's usage chunk itself
    /// (`stream_options.include_usage`).
    pub(crate) usage_asked: bool,
}

/// The envelope's fields as they came; every other field is skipped unbuilt.
#[derive(Deserialize)]
struct Fields {
    #[serde(default)]
    model: Option<Value>,
    #[serde(default)]
    stream: Option<Value>,
    #[serde(default)]
    stream_options: Option<Value>,
}

impl Envelope {
    /// The envelope of `raw`, or why `raw` is not a JSON object.
    pub(crate) fn read(raw: &Bytes) -> Result<Envelope, CallError> {
        let first = raw.iter().find(|b| !b.is_ascii_whitespace());
        if first == Some(&b'{') {
            if let Ok(fields) = serde_json::from_slice::<Fields>(raw) {
                return Ok(Envelope::of(
                    fields.model,
                    fields.stream,
                    fields.stream_options,
                ));
            }
        }
        // Not an object, not json, or an object the typed reading refuses (a repeated
        // key): the whole reading decides, and names the cause.
        let mut body = object(raw)?;
        Ok(Envelope::of(
            body.remove("model"),
            body.remove("stream"),
            body.remove("stream_options"),
        ))
    }

    fn of(model: Option<Value>, stream: Option<Value>, options: Option<Value>) -> Envelope {
        Envelope {
            model: match model {
                Some(Value::String(model)) => Some(model),
                _ => None,
            },
            stream: stream.as_ref().is_some_and(may_stream),
            usage_asked: options
                .as_ref()
                .and_then(|o| o.get("include_usage"))
                .and_then(Value::as_bool)
                .unwrap_or(false),
        }
    }
}

/// Whether a provider may stream its answer to a request whose `stream` is `value`.
///
/// A strict provider streams for `true` alone, but a lax one reads more as true:
/// pydantic's validation (behind local model servers such as vLLM) takes `1` and
/// strings such as `"yes"` or `"True"`, and a JavaScript server takes any truthy value.
/// A request read strictly would then stream unasked-for: a Chat stream without its
/// usage chunk, whose tokens nobody meters. So every value that is not plainly false
/// counts, and a Chat request gets its usage asked for; what the provider answered,
/// stream or not, is then read as it came (see `forward`).
pub(crate) fn may_stream(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64() != Some(0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

/// `raw` as a JSON object, or why it is not one (quoting its start).
pub(crate) fn object(raw: &Bytes) -> Result<Map<String, Value>, CallError> {
    let fail = |source: RequestError| CallError::Request {
        source,
        len: raw.len(),
        start: String::from_utf8_lossy(raw)
            .chars()
            .take(BODY_EXCERPT_CHARS)
            .collect(),
    };
    match serde_json::from_slice::<Value>(raw) {
        Ok(Value::Object(body)) => Ok(body),
        Ok(_) => Err(fail(RequestError::NotObject)),
        Err(e) => Err(fail(RequestError::NotJson(e))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<Envelope, String> {
        Envelope::read(&Bytes::from(text.to_owned())).map_err(|e| e.to_string())
    }

    #[test]
    fn the_envelope_is_read_and_everything_else_skipped() {
        let envelope = read(
            r#" {"messages":[{"role":"user","content":"hi \"there\""}],"model":"gpt-x",
                "stream":true,"stream_options":{"include_usage":true},"tools":[]}"#,
        );
        assert_eq!(
            envelope,
            Ok(Envelope {
                model: Some("gpt-x".to_owned()),
                stream: true,
                usage_asked: true
            })
        );
        assert_eq!(read(r#"{"input":"x"}"#), Ok(Envelope::default()));
    }

    #[test]
    fn odd_field_types_read_as_absent_as_the_whole_reading_does() {
        let envelope = read(r#"{"model":7,"stream":false,"stream_options":null}"#);
        assert_eq!(envelope, Ok(Envelope::default()));
    }

    #[test]
    fn a_stream_is_expected_for_every_value_a_lax_provider_could_read_as_true() {
        let stream = |spelled: &str| read(&format!(r#"{{"stream":{spelled}}}"#)).map(|e| e.stream);
        for spelled in [
            "true",
            "1",
            "-1",
            "0.5",
            r#""yes""#,
            r#""True""#,
            r#""no""#,
            "[]",
            "{}",
        ] {
            assert_eq!(stream(spelled), Ok(true), "{spelled}");
        }
        for spelled in ["false", "null", "0", "0.0", r#""""#] {
            assert_eq!(stream(spelled), Ok(false), "{spelled}");
        }
        assert_eq!(read("{}").map(|e| e.stream), Ok(false));
    }

    #[test]
    fn a_repeated_key_is_read_as_the_whole_reading_reads_it() {
        let envelope = read(r#"{"stream":false,"model":"a","stream":true}"#);
        assert_eq!(envelope.map(|e| e.stream), Ok(true));
    }

    #[test]
    fn bodies_that_are_not_objects_are_refused_with_their_cause() {
        let not_json = read("{\"messages\": [").unwrap_err();
        assert!(not_json.contains("not json"), "{not_json}");
        assert!(not_json.contains("body of 14 bytes"), "{not_json}");
        let array = read(r#"["m", true, {}]"#).unwrap_err();
        assert!(array.contains("not a json object"), "{array}");
        let garbage = read("\u{0}garbage").unwrap_err();
        assert!(garbage.contains("not json"), "{garbage}");
    }
}
