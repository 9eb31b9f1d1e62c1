//! Latency: a call takes at least what its plan says, and the plans follow the
//! configured distribution.

use std::time::{Duration, Instant};

use gauntlet_fake_provider::{Config, FakeProvider, Faults, Latency, Plan, Protocol};

use crate::client::{body, read, send, seq, ALL};

/// A fixed latency is a floor every answer clears: the head of every answer, whole or
/// streamed, comes no sooner, and a stream's end no sooner than its gaps added up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fixed_latency_delays_every_answer_by_at_least_it() {
    let config = Config {
        latency: Latency::Fixed { ms: 200 },
        chunk_latency: Latency::Fixed { ms: 30 },
        answer_chunks: 3,
        ..Config::default()
    };
    let fake = FakeProvider::start(config).await.expect("fake starts");
    for protocol in ALL {
        let started = Instant::now();
        let whole = send(&fake, protocol, "k", &body(protocol, false, false)).await;
        assert_eq!(whole.status(), 200, "{}", protocol.name());
        assert!(
            started.elapsed() >= Duration::from_millis(200),
            "{}",
            protocol.name()
        );

        let started = Instant::now();
        let streamed = send(&fake, protocol, "k", &body(protocol, true, true)).await;
        assert!(
            started.elapsed() >= Duration::from_millis(200),
            "{}",
            protocol.name()
        );
        let events = read(streamed).await;
        let gaps = events.events().len() as u32 - 1;
        assert!(gaps >= 4, "{}: {events:?}", protocol.name());
        assert!(
            started.elapsed() >= Duration::from_millis(200) + Duration::from_millis(30) * gaps,
            "{}: {gaps} gaps",
            protocol.name()
        );
    }
}

/// Each call waits at least the first-byte latency its plan drew, which the answer's
/// call number names; and the plans' draws have the distribution's median and bounds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_call_waits_the_latency_its_plan_drew() {
    let config = Config {
        seed: 3,
        latency: Latency::Lognormal {
            median_ms: 120.0,
            sigma: 0.5,
        },
        ..Config::default()
    };
    let fake = FakeProvider::start(config.clone())
        .await
        .expect("fake starts");
    let mut planned = Vec::new();
    for protocol in ALL.iter().cycle().take(6) {
        let started = Instant::now();
        let answer = send(&fake, *protocol, "k", &body(*protocol, false, false)).await;
        let took = started.elapsed();
        let ttfb = Plan::of(&config, seq(&answer)).ttfb();
        assert!(
            took >= ttfb,
            "call {}: {took:?} < planned {ttfb:?}",
            seq(&answer)
        );
        planned.push(ttfb);
    }
    // Six draws of a spread distribution: not all alike.
    assert!(planned.windows(2).any(|w| w[0] != w[1]), "{planned:?}");

    let mut draws: Vec<f64> = (0..4001)
        .map(|s| Plan::of(&config, s).ttfb().as_secs_f64() * 1000.0)
        .collect();
    draws.sort_by(f64::total_cmp);
    assert!(
        (draws[2000] / 120.0 - 1.0).abs() < 0.05,
        "median {}",
        draws[2000]
    );

    let uniform = Config {
        latency: Latency::Uniform {
            min_ms: 50,
            max_ms: 80,
        },
        ..Config::default()
    };
    for s in 0..2000 {
        let ms = Plan::of(&uniform, s).ttfb().as_millis();
        assert!((50..=80).contains(&ms), "call {s}: {ms} ms");
    }
}

/// A 429 or a 5xx, drawn or for the key's budget, comes no sooner than its planned
/// latency: the answer's latency by default, its own when the config gives one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fault_waits_its_latency_before_its_head() {
    let answers = Config {
        latency: Latency::Fixed { ms: 150 },
        faults: Faults {
            rate_limited: 0.5,
            server_error: 0.5,
            ..Faults::default()
        },
        ..Config::default()
    };
    let own = Config {
        latency: Latency::None,
        fault_latency: Some(Latency::Fixed { ms: 250 }),
        ..answers.clone()
    };
    for (config, floor) in [(answers, 150), (own, 250)] {
        let fake = FakeProvider::start(config.clone())
            .await
            .expect("fake starts");
        for (i, protocol) in ALL.iter().cycle().take(6).enumerate() {
            let started = Instant::now();
            let answer = send(&fake, *protocol, "k", &body(*protocol, i % 2 == 0, true)).await;
            let took = started.elapsed();
            let plan = Plan::of(&config, seq(&answer));
            assert!(plan.fault().is_some());
            assert_eq!(plan.fault_ttfb(), Duration::from_millis(floor));
            assert!(
                took >= Duration::from_millis(floor),
                "{}: {} after {took:?}",
                protocol.name(),
                answer.status()
            );
        }
    }
    let budget = Config {
        requests_per_minute: Some(1),
        fault_latency: Some(Latency::Fixed { ms: 200 }),
        ..Config::default()
    };
    let fake = FakeProvider::start(budget).await.expect("fake starts");
    let request = body(Protocol::Chat, false, false);
    assert_eq!(
        send(&fake, Protocol::Chat, "k", &request).await.status(),
        200
    );
    let started = Instant::now();
    let refused = send(&fake, Protocol::Chat, "k", &request).await;
    assert_eq!(refused.status(), 429);
    assert!(started.elapsed() >= Duration::from_millis(200));
}
