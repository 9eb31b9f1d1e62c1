//! Routing as a pure function: (method, path, query, body) -> reply.
//!
//! Kept free of hyper's connection types so that every route and every mutant can be
//! unit-tested without a socket; `server` only moves bytes.

use std::sync::{Mutex, MutexGuard};

use hyper::{Method, StatusCode};
use serde_json::{json, Value};

use crate::mutant::Mutant;
use crate::notes::{Notes, Refusal};

/// The page: one HTML file with inline CSS and JS, no external fetches or fonts.
const PAGE: &str = include_str!("page.html");

/// What to answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub status: StatusCode,
    pub content_type: &'static str,
    pub body: Vec<u8>,
}

impl Reply {
    fn json(status: StatusCode, body: Value) -> Reply {
        Reply {
            status,
            content_type: "application/json",
            // Serializing a `Value` cannot fail: its map keys are always strings.
            body: serde_json::to_vec(&body).unwrap_or_default(),
        }
    }

    pub fn error(status: StatusCode, message: &str) -> Reply {
        Reply::json(status, json!({ "error": message }))
    }

    fn not_found() -> Reply {
        Reply::error(StatusCode::NOT_FOUND, "not found")
    }

    /// The body as JSON, for tests.
    #[cfg(test)]
    pub fn value(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }
}

#[derive(Debug)]
pub struct App {
    notes: Mutex<Notes>,
}

impl App {
    pub fn new(mutant: Option<Mutant>) -> App {
        App {
            notes: Mutex::new(Notes::new(mutant)),
        }
    }

    /// Answer one request. `path` is the URI path, `query` its raw query string.
    pub fn handle(&self, method: &Method, path: &str, query: Option<&str>, body: &[u8]) -> Reply {
        let segments: Vec<&str> = path.split('/').skip(1).collect();
        match (method, segments.as_slice()) {
            (&Method::GET, [""]) => Reply {
                status: StatusCode::OK,
                content_type: "text/html; charset=utf-8",
                body: PAGE.as_bytes().to_vec(),
            },
            (&Method::GET, ["api", "notes"]) => self.list(query),
            (&Method::POST, ["api", "notes"]) => self.add(body),
            (&Method::DELETE, ["api", "notes"]) => {
                let deleted = self.notes().clear();
                Reply::json(StatusCode::OK, json!({ "deleted": deleted }))
            }
            (&Method::DELETE, ["api", "notes", id]) => match id.parse::<u64>() {
                Ok(id) if self.notes().delete(id) => {
                    Reply::json(StatusCode::OK, json!({ "deleted": id }))
                }
                _ => Reply::error(StatusCode::NOT_FOUND, "unknown note"),
            },
            _ => Reply::not_found(),
        }
    }

    fn list(&self, query: Option<&str>) -> Reply {
        let q = query
            .into_iter()
            .flat_map(|q| q.split('&'))
            .find_map(|pair| pair.strip_prefix("q="))
            .map(form_decode);
        let q = match q {
            None => String::new(),
            Some(Some(q)) => q,
            Some(None) => return Reply::error(StatusCode::BAD_REQUEST, "malformed query"),
        };
        let notes = self.notes();
        Reply::json(
            StatusCode::OK,
            json!({ "count": notes.count(), "notes": notes.search(&q) }),
        )
    }

    fn add(&self, body: &[u8]) -> Reply {
        let Ok(value) = serde_json::from_slice::<Value>(body) else {
            return Reply::error(StatusCode::BAD_REQUEST, "invalid json");
        };
        let Some(text) = value.get("text").and_then(Value::as_str) else {
            return Reply::error(StatusCode::BAD_REQUEST, "text must be a string");
        };
        match self.notes().add(text) {
            Ok(note) => Reply::json(StatusCode::CREATED, json!(note)),
            Err(e @ (Refusal::Empty | Refusal::TooLong)) => {
                Reply::error(StatusCode::BAD_REQUEST, &e.to_string())
            }
        }
    }

    /// Every update is a single push/remove, so a panic while holding the lock cannot
    /// leave the notes half-updated: a poisoned lock is still safe to use.
    fn notes(&self) -> MutexGuard<'_, Notes> {
        self.notes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Decode one `application/x-www-form-urlencoded` value (`+` is a space, `%XX` a
/// byte); `None` when an escape is malformed or the result is not UTF-8.
fn form_decode(value: &str) -> Option<String> {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = value.get(i + 1..i + 3)?;
                if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                    return None;
                }
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(app: &App, path: &str, query: Option<&str>) -> Reply {
        app.handle(&Method::GET, path, query, b"")
    }

    fn post(app: &App, body: &str) -> Reply {
        app.handle(&Method::POST, "/api/notes", None, body.as_bytes())
    }

    #[test]
    fn serves_the_page_without_external_resources() {
        let r = get(&App::new(None), "/", None);
        assert_eq!(r.status, StatusCode::OK);
        assert!(r.content_type.starts_with("text/html"));
        let page = String::from_utf8_lossy(&r.body);
        for id in [
            "new-note", "add", "count", "search", "notes", "error", "clear",
        ] {
            assert!(page.contains(&format!("id=\"{id}\"")), "page has no #{id}");
        }
        for external in ["http://", "https://", "src=", "@import", "url("] {
            assert!(!page.contains(external), "page loads something: {external}");
        }
    }

    #[test]
    fn the_json_api_round_trip() {
        let app = App::new(None);
        let r = post(&app, r#"{"text":"  Buy MILK "}"#);
        assert_eq!(r.status, StatusCode::CREATED);
        assert_eq!(r.value(), json!({"id": 1, "text": "Buy MILK"}));
        post(&app, r#"{"text":"walk the dog"}"#);
        let r = get(&app, "/api/notes", Some("q=buy+milk"));
        assert_eq!(
            r.value(),
            json!({"count": 2, "notes": [{"id": 1, "text": "Buy MILK"}]})
        );
        let r = get(&app, "/api/notes", Some("x=1&q=%57alk"));
        assert_eq!(r.value()["notes"][0]["id"], 2);
        assert_eq!(
            get(&app, "/api/notes", Some("q=%zz")).status,
            StatusCode::BAD_REQUEST
        );
        let r = app.handle(&Method::DELETE, "/api/notes/1", None, b"");
        assert_eq!(
            (r.status, r.value()),
            (StatusCode::OK, json!({"deleted": 1}))
        );
        let r = app.handle(&Method::DELETE, "/api/notes/1", None, b"");
        assert_eq!(r.status, StatusCode::NOT_FOUND);
        assert_eq!(get(&app, "/api/notes", None).value()["count"], 1);
        let r = app.handle(&Method::DELETE, "/api/notes", None, b"");
        assert_eq!(r.value(), json!({"deleted": 1}));
        assert_eq!(
            get(&app, "/api/notes", None).value(),
            json!({"count": 0, "notes": []})
        );
    }

    #[test]
    fn bad_requests_are_refused() {
        let app = App::new(None);
        for (body, error) in [
            ("", "invalid json"),
            ("{", "invalid json"),
            ("{}", "text must be a string"),
            (r#"{"text":5}"#, "text must be a string"),
            (r#"{"text":""}"#, "note text is empty"),
            (r#"{"text":" \n "}"#, "note text is empty"),
        ] {
            let r = post(&app, body);
            assert_eq!(r.status, StatusCode::BAD_REQUEST, "{body}");
            assert_eq!(r.value()["error"], error, "{body}");
        }
        for path in ["/nope", "/api", "/api/notes/x/y", "/api/notes/"] {
            assert_eq!(
                get(&app, path, None).status,
                StatusCode::NOT_FOUND,
                "{path}"
            );
        }
        assert_eq!(get(&app, "/api/notes", None).value()["count"], 0);
    }
}
