//! An answer the call carries (`x-gauntlet-answer`): returned byte for byte, billed the
//! usage it states, delivered with the plan's latency and faults like any answer, and
//! refused with a 400 naming the header when malformed.

use std::time::{Duration, Instant};

use gauntlet_fake_provider::{
    Config, FakeProvider, Faults, KeyLedger, Latency, Plan, Protocol, Usage,
};
use serde_json::Value;

use crate::client::{
    body, in_stream_error, read, send_given, send_with, seq, stream_usage, terminates, whole_usage,
    ALL,
};

/// What every answer below states: 321 tokens in, 45 out.
const USAGE: Usage = Usage {
    input: 321,
    output: 45,
};

/// A whole answer of `protocol` as a scripted model renders it: key order, spacing and
/// a non-ASCII character that re-serializing would change.
fn whole_answer(protocol: Protocol) -> &'static str {
    match protocol {
        Protocol::Chat => {
            r#"{"id":"chatcmpl-s", "object":"chat.completion","created":1,"model":"scripted","choices":[{"index":0,"message":{"role":"assistant","content":"ok \u2713 ✓"},"finish_reason":"stop"}],"usage":{"prompt_tokens":321,"completion_tokens":45,"total_tokens":366}}"#
        }
        Protocol::Responses => {
            r#"{"usage":{"input_tokens":321,"output_tokens":45,"total_tokens":366}, "id":"resp_s","object":"response","status":"completed","output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"ok ✓"}]}]}"#
        }
        Protocol::Messages => {
            r#"{"id":"msg_s","type":"message","role":"assistant","content":[{"type":"text","text":"ok ✓"}],"stop_reason":"end_turn","usage":{"input_tokens":300,"cache_read_input_tokens":21,"output_tokens":45}}"#
        }
    }
}

/// A stream of `protocol`, its events in order; its usage declared where the protocol
/// declares it.
fn stream_answer(protocol: Protocol) -> Vec<&'static str> {
    match protocol {
        Protocol::Chat => vec![
            "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"ok \"},\"finish_reason\":null}]}\n\n",
            "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"✓\"},\"finish_reason\":\"stop\"}]}\n\n",
            "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_tokens\":321,\"completion_tokens\":45,\"total_tokens\":366}}\n\n",
            "data: [DONE]\n\n",
        ],
        Protocol::Responses => vec![
            "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_s\",\"status\":\"in_progress\",\"usage\":null}}\n\n",
            "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":1,\"delta\":\"ok ✓\"}\n\n",
            ": keep-alive\n\n",
            "event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":2,\"response\":{\"id\":\"resp_s\",\"status\":\"completed\",\"usage\":{\"input_tokens\":321,\"output_tokens\":45,\"total_tokens\":366}}}\n\n",
        ],
        Protocol::Messages => vec![
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_s\",\"usage\":{\"input_tokens\":300,\"cache_creation_input_tokens\":21,\"output_tokens\":1}}}\n\n",
            "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"ok ✓\"}}\n\n",
            "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
            "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":45}}\n\n",
            "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
        ],
    }
}

const SSE: &str = "text/event-stream; charset=utf-8";
const JSON: &str = "application/json";

fn content_type(response: &reqwest::Response) -> String {
    response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}

/// The answers are what they say: the client's own reading finds `USAGE` in each.
#[test]
fn the_answers_state_their_usage() {
    for protocol in ALL {
        let whole: Value = serde_json::from_str(whole_answer(protocol)).expect("JSON");
        assert_eq!(
            whole_usage(protocol, &whole),
            Some(USAGE),
            "{}",
            protocol.name()
        );
        assert_eq!(
            stream_usage(protocol, &stream_answer(protocol)),
            Some(USAGE),
            "{}",
            protocol.name()
        );
    }
}

/// Each protocol's whole and streamed answer comes back exactly as given, under the
/// content type given, whatever the request asked (each request here asked for a whole
/// answer), and is billed the usage it states, no more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_given_answer_comes_back_byte_for_byte_and_is_billed_its_usage() {
    let fake = FakeProvider::start(Config::default())
        .await
        .expect("fake starts");
    for protocol in ALL {
        let whole = whole_answer(protocol);
        let answer = send_given(&fake, protocol, "k", whole.as_bytes(), JSON).await;
        assert_eq!(answer.status(), 200);
        assert_eq!(content_type(&answer), JSON);
        seq(&answer);
        let r = read(answer).await;
        assert!(!r.cut);
        assert_eq!(r.bytes, whole.as_bytes(), "{}", protocol.name());

        let events = stream_answer(protocol);
        let answer = send_given(&fake, protocol, "k", events.concat().as_bytes(), SSE).await;
        assert_eq!(answer.status(), 200);
        assert_eq!(content_type(&answer), SSE);
        let r = read(answer).await;
        assert!(!r.cut);
        assert_eq!(r.bytes, events.concat().as_bytes(), "{}", protocol.name());
        assert_eq!(r.events(), events, "{}", protocol.name());
    }
    let billed = &fake.ledger().keys["k"];
    let mut six = Usage::default();
    for _ in 0..6 {
        six.add(USAGE);
    }
    assert_eq!(
        billed,
        &KeyLedger {
            calls: 6,
            answered: 6,
            streamed: 3,
            given_answers: 6,
            billed_calls: 6,
            billed: six,
            ..KeyLedger::default()
        }
    );
}

/// A given stream is paced like a generated one: its events, split where the given
/// bytes have `\n\n`, come no sooner than the first-byte latency and the gaps between
/// them added up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_given_stream_is_paced_event_by_event() {
    let fake = FakeProvider::start(Config {
        latency: Latency::Fixed { ms: 100 },
        chunk_latency: Latency::Fixed { ms: 60 },
        ..Config::default()
    })
    .await
    .expect("fake starts");
    let events = stream_answer(Protocol::Messages);
    let started = Instant::now();
    let answer = send_given(
        &fake,
        Protocol::Messages,
        "k",
        events.concat().as_bytes(),
        SSE,
    )
    .await;
    assert!(started.elapsed() >= Duration::from_millis(100));
    let r = read(answer).await;
    let gaps = events.len() as u32 - 1;
    assert!(
        started.elapsed() >= Duration::from_millis(100) + Duration::from_millis(60) * gaps,
        "{gaps} gaps"
    );
    assert_eq!(r.events(), events);
}

/// The usage a reader of `events` of a given stream has seen, `None` as zero.
fn seen(protocol: Protocol, events: &[&str]) -> Usage {
    stream_usage(protocol, events).unwrap_or_default()
}

/// A given answer cut: a stream after the events its plan says, a whole answer short
/// of the length its head declares, after the bytes its plan says. Each is billed in
/// full: what the client could read of its usage in `billed`, the rest in
/// `unreported`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_given_answer_is_billed_in_full_and_unreported_past_what_was_sent() {
    let config = Config {
        seed: 8,
        faults: Faults {
            disconnect: 1.0,
            disconnect_after_events: Some(1),
            ..Faults::default()
        },
        ..Config::default()
    };
    let fake = FakeProvider::start(config.clone())
        .await
        .expect("fake starts");
    for protocol in ALL {
        let whole = whole_answer(protocol).as_bytes();
        let key = format!("{}-whole", protocol.name());
        let answer = send_given(&fake, protocol, &key, whole, JSON).await;
        assert_eq!(answer.status(), 200);
        assert_eq!(answer.content_length(), Some(whole.len() as u64));
        let planned = Plan::of(&config, seq(&answer))
            .cut_whole_at(whole.len())
            .expect("every answer is cut");
        let r = read(answer).await;
        assert!(r.cut, "{}", protocol.name());
        assert_eq!(r.bytes, &whole[..planned], "{}", protocol.name());
        let billed = &fake.ledger().keys[&key];
        assert_eq!(
            (
                billed.whole_disconnects,
                billed.billed_calls,
                billed.billed,
                billed.unreported
            ),
            (1, 0, Usage::default(), USAGE),
            "{}: a cut whole answer has nothing a meter can read",
            protocol.name()
        );

        let events = stream_answer(protocol);
        let key = format!("{}-stream", protocol.name());
        let answer = send_given(&fake, protocol, &key, events.concat().as_bytes(), SSE).await;
        let r = read(answer).await;
        assert!(r.cut, "{}", protocol.name());
        assert_eq!(r.events(), events[..1], "{}", protocol.name());
        let reported = seen(protocol, &events[..1]);
        let billed = &fake.ledger().keys[&key];
        assert_eq!(
            (billed.disconnects, billed.billed, billed.unreported),
            (1, reported, USAGE.minus(reported)),
            "{}",
            protocol.name()
        );
    }
    // Anthropic's message_start was sent before the cut: its input was seen.
    let messages = &fake.ledger().keys["messages-stream"];
    assert_eq!(
        messages.billed,
        Usage {
            input: 321,
            output: 1
        }
    );
    assert_eq!(messages.billed_calls, 1);
}

/// With in-stream errors certain, a given stream sends the events its plan says, byte
/// for byte, then its protocol's error event in place of the rest, and ends cleanly;
/// billed as a cut one is. A whole answer has no in-stream error, and comes whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_given_stream_can_fail_with_its_protocols_error_event() {
    let config = Config {
        seed: 3,
        faults: Faults {
            stream_error: 1.0,
            ..Faults::default()
        },
        ..Config::default()
    };
    let fake = FakeProvider::start(config.clone())
        .await
        .expect("fake starts");
    let mut where_ = std::collections::BTreeSet::new();
    for (i, protocol) in ALL.iter().copied().cycle().take(15).enumerate() {
        let events = stream_answer(protocol);
        let key = format!("stream-{i}");
        let answer = send_given(&fake, protocol, &key, events.concat().as_bytes(), SSE).await;
        assert_eq!(answer.status(), 200);
        let k = Plan::of(&config, seq(&answer))
            .stream_error_after(events.len())
            .expect("every stream fails");
        let r = read(answer).await;
        assert!(!r.cut, "{}: a failed stream ends cleanly", protocol.name());
        let got = r.events();
        assert_eq!(got.len(), k + 1, "{}: {got:?}", protocol.name());
        assert_eq!(got[..k], events[..k], "{}", protocol.name());
        assert!(
            in_stream_error(protocol, got[k]),
            "{}: {}",
            protocol.name(),
            got[k]
        );
        assert!(
            !got.iter().any(|e| terminates(protocol, e)),
            "{}",
            protocol.name()
        );
        let reported = seen(protocol, &events[..k]);
        let billed = &fake.ledger().keys[&key];
        assert_eq!(
            (
                billed.stream_errors,
                billed.disconnects,
                billed.billed,
                billed.unreported
            ),
            (1, 0, reported, USAGE.minus(reported)),
            "{} after {k}",
            protocol.name()
        );
        where_.insert((protocol.name(), k));
    }
    assert!(where_.len() > 3, "failures at one place only: {where_:?}");
    for protocol in ALL {
        let whole = whole_answer(protocol).as_bytes();
        let r = read(send_given(&fake, protocol, "whole", whole, JSON).await).await;
        assert_eq!(r.bytes, whole);
    }
    assert_eq!(fake.ledger().keys["whole"].billed_calls, 3);
}

/// A malformed answer is refused with a 400 in the protocol's error shape, its message
/// naming the header, before any drawn fault (a 429 is certain here) and with nothing
/// billed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_answer_gets_a_400_naming_its_header_and_is_never_billed() {
    let fake = FakeProvider::start(Config {
        faults: Faults {
            rate_limited: 1.0,
            ..Faults::default()
        },
        ..Config::default()
    })
    .await
    .expect("fake starts");
    let b64 = crate::client::b64;
    let sse = stream_answer(Protocol::Chat).concat();
    let cases: Vec<(Vec<(&str, String)>, &str)> = vec![
        (
            vec![
                ("x-gauntlet-answer", "not base64!".into()),
                ("x-gauntlet-answer-type", JSON.into()),
            ],
            "x-gauntlet-answer: not standard base64",
        ),
        (
            vec![
                ("x-gauntlet-answer", b64(b"{}")[..3].into()),
                ("x-gauntlet-answer-type", JSON.into()),
            ],
            "x-gauntlet-answer: not standard base64",
        ),
        (
            vec![
                ("x-gauntlet-answer", b64(b"{}")),
                ("x-gauntlet-answer-type", "text/plain".into()),
            ],
            "x-gauntlet-answer-type:",
        ),
        (
            vec![("x-gauntlet-answer", b64(b"{}"))],
            "x-gauntlet-answer-type: missing",
        ),
        (
            vec![
                ("x-gauntlet-answer", b64(sse.as_bytes())),
                ("x-gauntlet-answer-type", JSON.into()),
            ],
            "x-gauntlet-answer: declared application/json",
        ),
        (
            vec![
                ("x-gauntlet-answer", b64(b"[1, 2]")),
                ("x-gauntlet-answer-type", JSON.into()),
            ],
            "not a JSON object",
        ),
        (
            vec![
                (
                    "x-gauntlet-answer",
                    b64(whole_answer(Protocol::Chat).as_bytes()),
                ),
                ("x-gauntlet-answer-type", SSE.into()),
            ],
            "x-gauntlet-answer: declared text/event-stream",
        ),
    ];
    let mut n = 0;
    for protocol in ALL {
        for (headers, says) in &cases {
            let answer =
                send_with(&fake, protocol, "k", &body(protocol, false, false), headers).await;
            assert_eq!(answer.status(), 400, "{}: {says}", protocol.name());
            let error: Value = answer.json().await.expect("JSON");
            let message = match protocol {
                Protocol::Chat | Protocol::Responses => {
                    assert_eq!(error["error"]["type"], "invalid_request_error", "{error}");
                    &error["error"]["message"]
                }
                Protocol::Messages => {
                    assert_eq!(error["type"], "error", "{error}");
                    assert_eq!(error["error"]["type"], "invalid_request_error", "{error}");
                    &error["error"]["message"]
                }
            };
            let message = message.as_str().expect("a message");
            assert!(message.starts_with("x-gauntlet-answer"), "{message}");
            assert!(message.contains(says), "{says}: {message}");
            n += 1;
        }
    }
    assert_eq!(
        fake.ledger().keys["k"],
        KeyLedger {
            calls: n,
            refused_answers: n,
            ..KeyLedger::default()
        }
    );
}
