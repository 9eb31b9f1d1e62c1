//! Reading a field or two of a provider's JSON without building the rest of it.
//!
//! Most of what the proxy relays is text it has no use for: content deltas in a
//! stream, the output of a whole response. Reading each as a JSON tree was the largest
//! cost of relaying it, so the meters look at the fields they need and let the parser
//! skip everything else.

use std::borrow::Cow;

use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::{Map, Value};

#[derive(Deserialize)]
struct Kind<'a> {
    #[serde(borrow, default, rename = "type")]
    kind: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct HasUsage {
    #[serde(default)]
    usage: Option<IgnoredAny>,
}

#[derive(Deserialize)]
struct Metered {
    #[serde(default)]
    usage: Option<Value>,
    #[serde(default)]
    error: Option<Value>,
}

/// The search for the word, built once rather than for each event of each stream.
static USAGE: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"usage"));

/// The `type` of a stream event's data, when it is a JSON object with a string one.
pub(crate) fn kind(data: &str) -> Option<Cow<'_, str>> {
    serde_json::from_str::<Kind<'_>>(data).ok()?.kind
}

/// Whether a stream event's data is JSON with a non-null `usage`.
///
/// Most events of a stream are content deltas without one: data that holds neither the
/// word nor an escape (through which a key could spell it) cannot have the field, and
/// is not parsed at all.
pub(crate) fn has_usage(data: &str) -> bool {
    let bytes = data.as_bytes();
    if USAGE.find(bytes).is_none() && memchr::memchr(b'\\', bytes).is_none() {
        return false;
    }
    serde_json::from_str::<HasUsage>(data).is_ok_and(|u| u.usage.is_some())
}

/// A whole response reduced to what metering reads of it (its `usage` and `error`,
/// where all three protocols keep them), or `None` when it is not JSON.
pub(crate) fn metered(body: &[u8]) -> Option<Value> {
    let object = body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{');
    if object {
        if let Ok(metered) = serde_json::from_slice::<Metered>(body) {
            let mut kept = Map::new();
            if let Some(usage) = metered.usage {
                kept.insert("usage".to_owned(), usage);
            }
            if let Some(error) = metered.error {
                kept.insert("error".to_owned(), error);
            }
            return Some(Value::Object(kept));
        }
    }
    // Not an object, or one the typed reading refuses (a repeated key): read it whole.
    serde_json::from_slice(body).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_kind_is_read_from_objects_only() {
        assert_eq!(
            kind(r#"{"delta":{"text":"a \"b\""},"type":"content_block_delta"}"#).as_deref(),
            Some("content_block_delta")
        );
        assert_eq!(kind(r#"{"type":7}"#), None);
        assert_eq!(kind("[DONE]"), None);
    }

    #[test]
    fn usage_is_seen_only_when_not_null() {
        assert!(has_usage(r#"{"choices":[],"usage":{"prompt_tokens":3}}"#));
        assert!(!has_usage(r#"{"choices":[{"delta":{}}],"usage":null}"#));
        assert!(!has_usage(r#"{"choices":[]}"#));
        assert!(!has_usage("not json"));
        assert!(
            has_usage(r#"{"\u0075sage":{"prompt_tokens":3}}"#),
            "an escaped key"
        );
        assert!(!has_usage(r#"{"choices":[{"delta":{"content":"usage"}}]}"#));
    }

    #[test]
    fn a_response_keeps_its_usage_and_error_only() {
        let body = br#"{"id":"x","output":[{"text":"long"}],"usage":{"input_tokens":5}}"#;
        assert_eq!(metered(body), Some(json!({"usage": {"input_tokens": 5}})));
        let error = br#"{"error":{"message":"slow down","type":"rate_limit"}}"#;
        assert_eq!(
            metered(error),
            Some(json!({"error": {"message": "slow down", "type": "rate_limit"}}))
        );
        assert_eq!(metered(b"[1]"), Some(json!([1])));
        assert_eq!(
            metered(br#"{"usage":1,"usage":{"input_tokens":2}}"#),
            Some(json!({"usage": {"input_tokens": 2}}))
        );
        assert_eq!(metered(b"<html>"), None);
    }
}
