//! The ledger: exactly the tokens of the usage blocks the fake sent, as a client reads
//! them from what it received, and the calls it answered; every answer billed in full,
//! what no client could read of it unreported; the same over HTTP.

use gauntlet_fake_provider::{Config, FakeProvider, Faults, Latency, Ledger, Usage, LEDGER_PATH};

use crate::client::{body, client, in_stream_error, read, send, stream_usage, whole_usage, ALL};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ledger_bills_exactly_the_usage_the_answers_carried() {
    let config = Config {
        seed: 21,
        answer_chunks: 5,
        chunk_latency: Latency::Fixed { ms: 1 },
        faults: Faults {
            rate_limited: 0.1,
            server_error: 0.1,
            disconnect: 0.3,
            stream_error: 0.2,
            ..Faults::default()
        },
        ..Config::default()
    };
    let fake = FakeProvider::start(config).await.expect("fake starts");
    let mut billed = Usage::default();
    let (mut billed_calls, mut refused, mut answered) = (0, 0, 0);
    let (mut cut_streams, mut cut_whole, mut failed_streams) = (0, 0, 0);
    let mut silent_streams = 0;
    // What each answer costs in full, whether or not it all arrived.
    let mut produced = Usage::default();
    for i in 0..72 {
        let protocol = ALL[i % 3];
        let stream = i % 2 == 0;
        // Every fourth Chat stream does not ask for its usage, and so gets none.
        let stream_usage_asked = i % 4 != 0;
        let key = if i % 5 == 0 { "second" } else { "first" };
        let request = body(protocol, stream, stream_usage_asked);
        let answer = send(&fake, protocol, key, &request).await;
        if answer.status() != 200 {
            refused += 1;
            continue;
        }
        answered += 1;
        let sent = serde_json::to_vec(&request).expect("JSON").len();
        produced.add(Usage::of_call(sent, 5));
        let r = read(answer).await;
        let events = r.events();
        let failed = stream && events.last().is_some_and(|e| in_stream_error(protocol, e));
        cut_streams += u64::from(stream && r.cut);
        cut_whole += u64::from(!stream && r.cut);
        failed_streams += u64::from(failed);
        let usage = if !stream {
            // A cut whole answer is not JSON: nothing a meter could read.
            serde_json::from_str(&r.text)
                .ok()
                .and_then(|v| whole_usage(protocol, &v))
        } else {
            stream_usage(protocol, &events)
        };
        if stream && usage.is_none() && !r.cut && !failed {
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
    assert_eq!(total.disconnects, cut_streams);
    assert_eq!(total.whole_disconnects, cut_whole);
    assert_eq!(total.stream_errors, failed_streams);
    assert_eq!(total.billed_calls, billed_calls);
    assert_eq!(total.billed, billed, "{ledger:#?}");
    let mut all = total.billed;
    all.add(total.unreported);
    assert_eq!(
        all, produced,
        "billed and unreported add up to every answer in full"
    );
    assert_eq!(ledger.keys.len(), 2);
    // The faults and the silent Chat streams all happened, so each branch was counted.
    assert!(
        refused > 0 && cut_streams > 0 && cut_whole > 0 && failed_streams > 0 && silent_streams > 0,
        "{refused} {cut_streams} {cut_whole} {failed_streams} {silent_streams}"
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
