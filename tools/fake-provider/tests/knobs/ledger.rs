//! The ledger: exactly the tokens of the usage blocks the fake sent, as a client reads
//! them from what it received, and the calls it answered; the same over HTTP.

use gauntlet_fake_provider::{Config, FakeProvider, Faults, Latency, Ledger, Usage, LEDGER_PATH};

use crate::client::{body, client, read, send, stream_usage, whole_usage, ALL};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ledger_bills_exactly_the_usage_the_answers_carried() {
    let config = Config {
        seed: 21,
        answer_chunks: 5,
        chunk_latency: Latency::Fixed { ms: 1 },
        faults: Faults {
            rate_limited: 0.1,
            server_error: 0.1,
            disconnect: 0.4,
            ..Faults::default()
        },
        ..Config::default()
    };
    let fake = FakeProvider::start(config).await.expect("fake starts");
    let mut billed = Usage::default();
    let (mut billed_calls, mut refused, mut cut, mut answered) = (0, 0, 0, 0);
    let mut silent_streams = 0;
    for i in 0..72 {
        let protocol = ALL[i % 3];
        let stream = i % 2 == 0;
        // Every fourth Chat stream does not ask for its usage, and so gets none.
        let stream_usage_asked = i % 4 != 0;
        let key = if i % 5 == 0 { "second" } else { "first" };
        let answer = send(
            &fake,
            protocol,
            key,
            &body(protocol, stream, stream_usage_asked),
        )
        .await;
        if answer.status() != 200 {
            refused += 1;
            continue;
        }
        answered += 1;
        let r = read(answer).await;
        cut += usize::from(r.cut);
        let usage = if stream {
            stream_usage(protocol, &r.events())
        } else {
            whole_usage(protocol, &serde_json::from_str(&r.text).expect("JSON"))
        };
        if stream && usage.is_none() && !r.cut {
            silent_streams += 1;
        }
        if let Some(u) = usage {
            billed_calls += 1;
            billed.add(u);
        }
    }
    let ledger = fake.ledger();
    let total = ledger.total();
    assert_eq!(total.calls, 72);
    assert_eq!(total.answered, answered);
    assert_eq!(total.rate_limited + total.server_errors, refused);
    assert_eq!(total.disconnects as usize, cut);
    assert_eq!(total.billed_calls, billed_calls);
    assert_eq!(total.billed, billed, "{ledger:#?}");
    assert_eq!(ledger.keys.len(), 2);
    // The faults and the silent Chat streams all happened, so each branch was counted.
    assert!(
        refused > 0 && cut > 0 && silent_streams > 0,
        "{refused} {cut} {silent_streams}"
    );
    assert!(total.unreported.output > 0, "{total:?}");
    let over_http: Ledger = client()
        .get(format!("{}{LEDGER_PATH}", fake.root_url()))
        .send()
        .await
        .expect("the ledger answers")
        .json()
        .await
        .expect("the ledger is JSON");
    assert_eq!(over_http, ledger);
}
