//! Parsing JSON read off disk.

use serde::Deserialize;

/// `bytes` parsed as JSON, exactly as `serde_json::from_slice` parses them.
///
/// A slice parser checks every string it meets for UTF-8, one short check per string,
/// and a run's records hold millions of strings (docs/results.md, "Benchmark").
/// Text checked once as a whole is parsed without those checks. Bytes that are not
/// UTF-8 go to the slice parser, which names where they stop being text, as it always
/// did.
pub fn from_bytes<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> serde_json::Result<T> {
    match std::str::from_utf8(bytes) {
        Ok(text) => serde_json::from_str(text),
        Err(_) => serde_json::from_slice(bytes),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    /// The same value or the same error, message and position included, as the slice
    /// parser gives, for text and for bytes that are not text.
    #[test]
    fn parses_and_fails_as_the_slice_parser_does() {
        let cases: [&[u8]; 8] = [
            br#"{"a": [1, 2.5, "x\u00e9"], "b": {"c": null}}"#,
            "{\"caf\u{e9}\": \"na\u{ef}ve\"}".as_bytes(),
            b"{\"a\": 1,\n \"b\": }",
            b"{\"a\": \"\xff\"}",
            b"\"\xc3\x28\"",
            b"[1, 2",
            b"",
            b"{\"a\": 1} trailing",
        ];
        for bytes in cases {
            let ours = from_bytes::<Value>(bytes).map_err(|e| e.to_string());
            let slice = serde_json::from_slice::<Value>(bytes).map_err(|e| e.to_string());
            assert_eq!(ours, slice, "{}", String::from_utf8_lossy(bytes));
        }
    }
}
