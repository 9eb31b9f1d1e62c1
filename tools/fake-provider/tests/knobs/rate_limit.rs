//! The per-key budget: the call past it is answered 429 in its protocol's shape, with a
//! `retry-after` of the seconds until the window frees, and another key is not held.
//! The window is kept on a hand-moved clock, so the test waits for no minute.

use std::sync::Arc;
use std::time::Duration;

use gauntlet_fake_provider::{Config, FakeProvider, Faults, ManualClock, Protocol};
use serde_json::Value;

use crate::client::{body, send, ALL};

fn retry_after(response: &reqwest::Response) -> Option<&str> {
    response
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
}

/// The 429 body each protocol's clients parse.
fn assert_rate_limit_shape(protocol: Protocol, body: &Value) {
    match protocol {
        Protocol::Chat | Protocol::Responses => {
            assert_eq!(body["error"]["code"], "rate_limit_exceeded", "{body}");
            assert_eq!(body["error"]["type"], "requests", "{body}");
            assert!(body["error"]["message"].is_string(), "{body}");
        }
        Protocol::Messages => {
            assert_eq!(body["type"], "error", "{body}");
            assert_eq!(body["error"]["type"], "rate_limit_error", "{body}");
            assert!(body["error"]["message"].is_string(), "{body}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_past_its_budget_gets_429_with_retry_after_until_its_window_frees() {
    let clock = Arc::new(ManualClock::default());
    let config = Config {
        requests_per_minute: Some(3),
        ..Config::default()
    };
    let fake = FakeProvider::start_on("127.0.0.1:0".parse().expect("addr"), config, clock.clone())
        .await
        .expect("fake starts");
    for protocol in ALL {
        let key = format!("key-{}", protocol.name());
        for i in 0..3 {
            let ok = send(&fake, protocol, &key, &body(protocol, i == 1, true)).await;
            assert_eq!(ok.status(), 200, "{key}: call {i}");
        }
        clock.advance(Duration::from_secs(15));
        let refused = send(&fake, protocol, &key, &body(protocol, false, false)).await;
        assert_eq!(refused.status(), 429, "{key}");
        // The three calls were made at the same instant, 15 s ago: the window frees in 45.
        assert_eq!(retry_after(&refused), Some("45"), "{key}");
        assert_rate_limit_shape(protocol, &refused.json().await.expect("a JSON error"));
        let other = send(
            &fake,
            protocol,
            "another-key",
            &body(protocol, false, false),
        )
        .await;
        assert_eq!(other.status(), 200, "{key}: another key has its own budget");
        clock.advance(Duration::from_secs(45));
        let again = send(&fake, protocol, &key, &body(protocol, false, false)).await;
        assert_eq!(again.status(), 200, "{key}: the window freed");
        clock.advance(Duration::from_secs(60));
    }
    let ledger = fake.ledger();
    for protocol in ALL {
        let k = &ledger.keys[&format!("key-{}", protocol.name())];
        assert_eq!((k.calls, k.answered, k.rate_limited), (5, 4, 1), "{k:?}");
    }
}

/// A drawn 429 (a provider out of capacity for everyone) comes whatever the budget,
/// with the configured `retry-after`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drawn_429_carries_the_configured_retry_after() {
    let config = Config {
        faults: Faults {
            rate_limited: 1.0,
            retry_after_secs: 7,
            ..Faults::default()
        },
        ..Config::default()
    };
    let fake = FakeProvider::start(config).await.expect("fake starts");
    for protocol in ALL {
        let refused = send(&fake, protocol, "k", &body(protocol, true, true)).await;
        assert_eq!(refused.status(), 429, "{}", protocol.name());
        assert_eq!(retry_after(&refused), Some("7"));
        assert_rate_limit_shape(protocol, &refused.json().await.expect("a JSON error"));
    }
    assert_eq!(fake.ledger().keys["k"].rate_limited, 3);
}
