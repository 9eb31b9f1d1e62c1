//! Drawn faults: streams cut before their terminating event, and 5xx answers in each
//! protocol's error shape, each where the seeded plan of the call says.

use std::collections::BTreeMap;

use gauntlet_fake_provider::{Config, FakeProvider, Fault, Faults, Plan, Protocol};
use serde_json::Value;

use crate::client::{body, in_stream_error, read, send, seq, terminates, ALL};

/// How many events each protocol's complete stream has under `config`'s answers.
async fn full_lengths(config: &Config) -> BTreeMap<&'static str, usize> {
    let whole = Config {
        faults: Faults::default(),
        ..config.clone()
    };
    let fake = FakeProvider::start(whole).await.expect("fake starts");
    let mut out = BTreeMap::new();
    for protocol in ALL {
        let r = read(send(&fake, protocol, "k", &body(protocol, true, true)).await).await;
        assert!(!r.cut);
        let events = r.events();
        assert!(terminates(protocol, events.last().expect("events")));
        out.insert(protocol.name(), events.len());
    }
    out
}

/// Every stream of a run: (call, protocol, complete events received, cut).
async fn streams(config: &Config, n: usize) -> Vec<(u64, Protocol, usize, bool)> {
    let fake = FakeProvider::start(config.clone())
        .await
        .expect("fake starts");
    let mut out = Vec::new();
    for protocol in ALL.iter().cycle().take(n) {
        let answer = send(&fake, *protocol, "k", &body(*protocol, true, true)).await;
        assert_eq!(answer.status(), 200);
        let call = seq(&answer);
        let r = read(answer).await;
        let events = r.events();
        if r.cut {
            assert!(
                !events.iter().any(|e| terminates(*protocol, e)),
                "call {call}: a cut stream sent its terminating event"
            );
        } else {
            assert!(
                terminates(*protocol, events.last().expect("events")),
                "call {call}"
            );
        }
        out.push((call, *protocol, events.len(), r.cut));
    }
    let ledger = fake.ledger();
    let cut = out.iter().filter(|s| s.3).count() as u64;
    assert_eq!(
        ledger.keys["k"].disconnects, cut,
        "the ledger counts every cut"
    );
    out
}

/// With probability 0.5, about half the streams are cut, each after exactly the
/// number of events its plan drew and before its terminating event; the same seed
/// cuts the same calls at the same places again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_is_cut_where_its_seeded_plan_says() {
    let config = Config {
        seed: 5,
        answer_chunks: 4,
        faults: Faults {
            disconnect: 0.5,
            ..Faults::default()
        },
        ..Config::default()
    };
    let full = full_lengths(&config).await;
    let first = streams(&config, 24).await;
    for (call, protocol, received, cut) in &first {
        let planned = Plan::of(&config, *call).cut_after(full[protocol.name()]);
        match planned {
            Some(k) => {
                assert!(cut, "call {call}: planned a cut after {k}");
                assert_eq!(*received, k, "call {call}: events before the cut");
            }
            None => {
                assert!(!cut, "call {call}: cut without a plan");
                assert_eq!(*received, full[protocol.name()], "call {call}");
            }
        }
    }
    let cuts = first.iter().filter(|s| s.3).count();
    assert!(
        (6..=18).contains(&cuts),
        "{cuts} of 24 cut at probability 0.5"
    );
    assert_eq!(
        streams(&config, 24).await,
        first,
        "the same seed, the same cuts"
    );
}

/// The error body each protocol's clients parse for a 5xx.
fn assert_server_error_shape(protocol: Protocol, status: u16, body: &Value) {
    match protocol {
        Protocol::Chat | Protocol::Responses => {
            assert_eq!(body["error"]["type"], "server_error", "{body}");
            assert!(body["error"]["message"].is_string(), "{body}");
            assert!(body["error"].get("code").is_some(), "{body}");
        }
        Protocol::Messages => {
            assert_eq!(body["type"], "error", "{body}");
            let kind = if status == 529 {
                "overloaded_error"
            } else {
                "api_error"
            };
            assert_eq!(body["error"]["type"], kind, "{body}");
        }
    }
}

/// Every call answered 5xx gets the status its plan drew, as its protocol has it (the
/// OpenAI protocols have no 529: an overloaded engine is their 503), in its
/// protocol's error shape.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_5xx_comes_with_its_planned_status_in_the_protocols_error_shape() {
    let config = Config {
        seed: 1,
        faults: Faults {
            server_error: 1.0,
            server_error_statuses: vec![500, 502, 503, 529],
            ..Faults::default()
        },
        ..Config::default()
    };
    let fake = FakeProvider::start(config.clone())
        .await
        .expect("fake starts");
    let mut seen = std::collections::BTreeSet::new();
    for (i, protocol) in ALL.iter().cycle().take(36).enumerate() {
        let answer = send(&fake, *protocol, "k", &body(*protocol, i % 2 == 0, true)).await;
        let Some(Fault::ServerError(drawn)) = Plan::of(&config, seq(&answer)).fault() else {
            panic!("every call's plan is a 5xx");
        };
        let expected = match (protocol, drawn) {
            (Protocol::Chat | Protocol::Responses, 529) => 503,
            (_, s) => s,
        };
        let status = answer.status().as_u16();
        assert_eq!(status, expected, "{}: drew {drawn}", protocol.name());
        assert_server_error_shape(*protocol, status, &answer.json().await.expect("JSON"));
        seen.insert((protocol.name(), status));
    }
    assert!(seen.contains(&("messages", 529)), "{seen:?}");
    assert!(seen.contains(&("chat", 500)), "{seen:?}");
    assert_eq!(fake.ledger().keys["k"].server_errors, 36);
}

/// With cuts certain, a whole answer's head declares its full length and its body
/// stops after the bytes its plan says: a prefix of the answer an uncut provider gives
/// the same call. The ledger counts it cut, with all of its usage unreported.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_whole_answer_is_cut_short_of_its_declared_length() {
    let cut = Config {
        seed: 12,
        faults: Faults {
            disconnect: 1.0,
            ..Faults::default()
        },
        ..Config::default()
    };
    let whole = Config {
        faults: Faults::default(),
        ..cut.clone()
    };
    let (cutting, clean) = (
        FakeProvider::start(cut.clone()).await.expect("fake starts"),
        FakeProvider::start(whole).await.expect("fake starts"),
    );
    let mut places = std::collections::BTreeSet::new();
    for protocol in ALL.iter().cycle().take(9) {
        let request = body(*protocol, false, false);
        let full = read(send(&clean, *protocol, "k", &request).await).await;
        assert!(!full.cut);
        let answer = send(&cutting, *protocol, "k", &request).await;
        assert_eq!(answer.status(), 200);
        assert_eq!(answer.content_length(), Some(full.bytes.len() as u64));
        let sent = Plan::of(&cut, seq(&answer))
            .cut_whole_at(full.bytes.len())
            .expect("every answer is cut");
        let r = read(answer).await;
        assert!(r.cut, "{}", protocol.name());
        assert_eq!(r.bytes, full.bytes[..sent], "{}", protocol.name());
        places.insert(sent);
    }
    assert!(places.len() > 1, "{places:?}");
    let (cut_ledger, clean_ledger) = (cutting.ledger(), clean.ledger());
    let (c, w) = (&cut_ledger.keys["k"], &clean_ledger.keys["k"]);
    assert_eq!((c.answered, c.whole_disconnects, c.billed_calls), (9, 9, 0));
    assert_eq!(c.unreported, w.billed, "billed in full, none of it seen");
}

/// With in-stream errors certain, each generated stream sends the events its plan
/// says, then its protocol's error event, and ends without its terminating event and
/// without a cut.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_fails_with_its_protocols_error_event_where_its_plan_says() {
    let config = Config {
        seed: 2,
        answer_chunks: 4,
        faults: Faults {
            stream_error: 1.0,
            ..Faults::default()
        },
        ..Config::default()
    };
    let full = full_lengths(&config).await;
    let fake = FakeProvider::start(config.clone())
        .await
        .expect("fake starts");
    for protocol in ALL.iter().cycle().take(12) {
        let answer = send(&fake, *protocol, "k", &body(*protocol, true, true)).await;
        let k = Plan::of(&config, seq(&answer))
            .stream_error_after(full[protocol.name()])
            .expect("every stream fails");
        let r = read(answer).await;
        assert!(!r.cut, "{}", protocol.name());
        let events = r.events();
        assert_eq!(events.len(), k + 1, "{}: {events:?}", protocol.name());
        assert!(in_stream_error(*protocol, events[k]), "{}", events[k]);
        assert!(!events.iter().any(|e| terminates(*protocol, e)));
    }
    let ledger = fake.ledger();
    assert_eq!(ledger.keys["k"].stream_errors, 12);
    assert_eq!(ledger.keys["k"].disconnects, 0);
}
