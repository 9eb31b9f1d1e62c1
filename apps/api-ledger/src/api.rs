//! The HTTP API as a pure function: (method, path, body) -> (status, JSON).
//!
//! Kept free of hyper's connection types so that routing, validation and every
//! mutant can be unit-tested without a socket; `server` only moves bytes.

use std::sync::{Mutex, MutexGuard};

use hyper::{Method, StatusCode};
use serde_json::{json, Value};

use crate::ledger::Ledger;
use crate::mutant::Mutant;

/// Largest accepted |amount| in cents (ten billion currency units): anything larger
/// is treated as a client error rather than a plausible transaction.
pub const MAX_ABS_AMOUNT: u64 = 1_000_000_000_000;

/// What to answer: a status and a JSON body.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub status: StatusCode,
    pub body: Value,
}

impl Reply {
    fn new(status: StatusCode, body: Value) -> Reply {
        Reply { status, body }
    }

    pub fn error(status: StatusCode, message: &str) -> Reply {
        Reply::new(status, json!({ "error": message }))
    }

    fn not_found() -> Reply {
        Reply::error(StatusCode::NOT_FOUND, "not found")
    }
}

/// The whole app: which mutant (if any) and the shared ledger.
#[derive(Debug)]
pub struct App {
    mutant: Option<Mutant>,
    ledger: Mutex<Ledger>,
}

impl App {
    pub fn new(mutant: Option<Mutant>) -> App {
        App {
            mutant,
            ledger: Mutex::new(Ledger::new(mutant)),
        }
    }

    /// Answer one request. `path` is the URI path without its query.
    pub fn handle(&self, method: &Method, path: &str, body: &[u8]) -> Reply {
        let segments: Vec<&str> = path.split('/').skip(1).collect();
        match (method, segments.as_slice()) {
            (&Method::GET, ["health"]) => self.health(),
            (&Method::POST, ["transactions"]) => self.record(body),
            (&Method::GET, ["transactions", id]) => match percent_decode(id) {
                Some(id) => self.transaction(&id),
                None => Reply::not_found(),
            },
            (&Method::GET, ["accounts", account, "balance"]) => match percent_decode(account) {
                Some(account) if !account.is_empty() => self.balance(&account),
                _ => Reply::not_found(),
            },
            _ => Reply::not_found(),
        }
    }

    fn health(&self) -> Reply {
        if self.mutant == Some(Mutant::Health) {
            return Reply::new(
                StatusCode::SERVICE_UNAVAILABLE,
                json!({ "status": "degraded" }),
            );
        }
        Reply::new(StatusCode::OK, json!({ "status": "ok" }))
    }

    fn record(&self, body: &[u8]) -> Reply {
        let Ok(value) = serde_json::from_slice::<Value>(body) else {
            return Reply::error(StatusCode::BAD_REQUEST, "invalid json");
        };
        let Some(fields) = value.as_object() else {
            return Reply::error(StatusCode::BAD_REQUEST, "body must be a json object");
        };
        let amount = if self.mutant == Some(Mutant::RejectInvalidAmount) {
            Some(lax_amount(fields.get("amount")))
        } else {
            strict_amount(fields.get("amount"))
        };
        let Some(amount) = amount else {
            return Reply::error(StatusCode::BAD_REQUEST, "invalid amount");
        };
        let account = match fields.get("account").and_then(Value::as_str) {
            Some(a) if !a.is_empty() => a.to_string(),
            _ => return Reply::error(StatusCode::BAD_REQUEST, "invalid account"),
        };
        let tx = self.ledger().record(account, amount);
        Reply::new(StatusCode::CREATED, json!(tx))
    }

    fn transaction(&self, id: &str) -> Reply {
        match self.ledger().get(id) {
            Some(tx) => Reply::new(StatusCode::OK, json!(tx)),
            None if self.mutant == Some(Mutant::RejectUnknownId) => {
                Reply::new(StatusCode::OK, json!({}))
            }
            None => Reply::error(StatusCode::NOT_FOUND, "unknown id"),
        }
    }

    fn balance(&self, account: &str) -> Reply {
        let balance = self.ledger().balance(account);
        Reply::new(
            StatusCode::OK,
            json!({ "account": account, "balance": balance }),
        )
    }

    /// A panic while holding the lock cannot leave the ledger half-updated (every
    /// update is a single push/insert), so a poisoned lock is still safe to use.
    fn ledger(&self) -> MutexGuard<'_, Ledger> {
        self.ledger
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A valid amount: a JSON integer, non-zero, at most `MAX_ABS_AMOUNT` either way.
/// Floats (even `12.0`), strings, booleans and null are not amounts.
fn strict_amount(v: Option<&Value>) -> Option<i64> {
    let a = v?.as_i64()?;
    (a != 0 && a.unsigned_abs() <= MAX_ABS_AMOUNT).then_some(a)
}

/// The `reject-invalid-amount` mutant's idea of an amount: take whatever is there.
fn lax_amount(v: Option<&Value>) -> i64 {
    match v {
        Some(Value::Number(n)) => n
            .as_i64()
            .or_else(|| n.as_f64().map(|f| f as i64))
            .unwrap_or(0),
        Some(Value::String(s)) => s.trim().parse().unwrap_or(0),
        _ => 0,
    }
}

/// Decode `%XX` escapes in one path segment; `None` when an escape is malformed or
/// the result is not UTF-8. Account names are arbitrary strings, so clients must be
/// able to put any of them (spaces, slashes) into `/accounts/<account>/balance`.
fn percent_decode(segment: &str) -> Option<String> {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = segment.get(i + 1..i + 3)?;
            if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                return None;
            }
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn post(app: &App, body: &str) -> Reply {
        app.handle(&Method::POST, "/transactions", body.as_bytes())
    }

    fn get(app: &App, path: &str) -> Reply {
        app.handle(&Method::GET, path, b"")
    }

    #[test]
    fn health_is_ok() {
        let r = get(&App::new(None), "/health");
        assert_eq!(r.status, StatusCode::OK);
        assert_eq!(r.body, json!({"status": "ok"}));
    }

    #[test]
    fn records_fetches_and_sums() {
        let app = App::new(None);
        let r = post(&app, r#"{"account":"a b","amount":1234}"#);
        assert_eq!(r.status, StatusCode::CREATED);
        assert_eq!(r.body["account"], "a b");
        assert_eq!(r.body["amount"], 1234);
        let id = r.body["id"].as_str().unwrap_or_default().to_string();
        assert!(!id.is_empty());
        let g = get(&app, &format!("/transactions/{id}"));
        assert_eq!((g.status, &g.body), (StatusCode::OK, &r.body));
        post(&app, r#"{"account":"a b","amount":-234}"#);
        let b = get(&app, "/accounts/a%20b/balance");
        assert_eq!(b.status, StatusCode::OK);
        assert_eq!(b.body, json!({"account": "a b", "balance": 1000}));
        let z = get(&app, "/accounts/nobody/balance");
        assert_eq!(z.body, json!({"account": "nobody", "balance": 0}));
    }

    #[test]
    fn invalid_amounts_are_rejected() {
        let app = App::new(None);
        for amount in [
            "0",
            "\"100\"",
            "12.5",
            "12.0",
            "1e3",
            "null",
            "true",
            "1000000000001",
            "-1000000000001",
            "99999999999999999999",
        ] {
            let r = post(&app, &format!(r#"{{"account":"a","amount":{amount}}}"#));
            assert_eq!(r.status, StatusCode::BAD_REQUEST, "amount {amount}");
            assert_eq!(
                r.body,
                json!({"error": "invalid amount"}),
                "amount {amount}"
            );
        }
        let missing = post(&app, r#"{"account":"a"}"#);
        assert_eq!(missing.body, json!({"error": "invalid amount"}));
        for edge in ["1000000000000", "-1000000000000", "1", "-1"] {
            let r = post(&app, &format!(r#"{{"account":"a","amount":{edge}}}"#));
            assert_eq!(r.status, StatusCode::CREATED, "amount {edge}");
        }
    }

    #[test]
    fn bad_bodies_and_accounts_are_rejected() {
        let app = App::new(None);
        for (body, error) in [
            ("", "invalid json"),
            ("{", "invalid json"),
            ("[1]", "body must be a json object"),
            (r#"{"amount":5}"#, "invalid account"),
            (r#"{"account":"","amount":5}"#, "invalid account"),
            (r#"{"account":7,"amount":5}"#, "invalid account"),
        ] {
            let r = post(&app, body);
            assert_eq!(r.status, StatusCode::BAD_REQUEST, "body {body}");
            assert_eq!(r.body["error"], error, "body {body}");
        }
    }

    #[test]
    fn unknown_ids_and_routes_are_404() {
        let app = App::new(None);
        let r = get(&app, "/transactions/tx-42");
        assert_eq!(r.status, StatusCode::NOT_FOUND);
        assert_eq!(r.body, json!({"error": "unknown id"}));
        for path in [
            "/",
            "/nope",
            "/health/",
            "/transactions",
            "/accounts//balance",
            "/accounts/a/balance/x",
            "/accounts/%zz/balance",
        ] {
            assert_eq!(get(&app, path).status, StatusCode::NOT_FOUND, "{path}");
        }
        let wrong_method = app.handle(&Method::DELETE, "/health", b"");
        assert_eq!(wrong_method.status, StatusCode::NOT_FOUND);
    }

    #[test]
    fn each_mutant_breaks_its_capability() {
        let health = App::new(Some(Mutant::Health));
        assert_eq!(
            get(&health, "/health").status,
            StatusCode::SERVICE_UNAVAILABLE
        );

        let record = App::new(Some(Mutant::RecordTransaction));
        let r = post(&record, r#"{"account":"a","amount":5}"#);
        let id = r.body["id"].as_str().unwrap_or_default().to_string();
        assert_eq!(
            get(&record, &format!("/transactions/{id}")).body["amount"],
            6
        );
        assert_eq!(get(&record, "/accounts/a/balance").body["balance"], 5);

        let lax = App::new(Some(Mutant::RejectInvalidAmount));
        for amount in ["0", "\"100\"", "12.5"] {
            let r = post(&lax, &format!(r#"{{"account":"a","amount":{amount}}}"#));
            assert_eq!(r.status, StatusCode::CREATED, "amount {amount}");
        }

        let unknown = App::new(Some(Mutant::RejectUnknownId));
        let r = get(&unknown, "/transactions/tx-42");
        assert_eq!((r.status, r.body), (StatusCode::OK, json!({})));
    }

    #[test]
    fn percent_decoding() {
        assert_eq!(percent_decode("a%2Fb%20c").as_deref(), Some("a/b c"));
        assert_eq!(percent_decode("plain").as_deref(), Some("plain"));
        assert_eq!(percent_decode("%"), None);
        assert_eq!(percent_decode("%4"), None);
        assert_eq!(percent_decode("%+1"), None);
        assert_eq!(percent_decode("%ff"), None);
    }
}
