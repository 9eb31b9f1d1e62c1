//! Token budgets: the proxy refuses further calls once the metered total reaches the
//! trial's limit, in each protocol's error shape, and records the refusal; a trial that
//! hits its limit is still scored and its record says which limit it hit.

use gauntlet::proxy::{budget_hit, Budget, Proxy, ProxyMode};
use gauntlet::spec::{Script, ScriptStep};
use reqwest::StatusCode;
use serde_json::{json, Value};

use super::proxy_provider::{self as provider, ALL, KEY};
use crate::support::client;

fn script() -> Script {
    Script {
        capability: "balance".into(),
        steps: vec![ScriptStep::Final {
            text: "nothing to do".into(),
        }],
    }
}

fn request(protocol: &str, model: &str, stream: bool) -> Value {
    match protocol {
        "chat" => json!({"model": model, "stream": stream,
            "messages": [{"role": "user", "content": "hi"}]}),
        "responses" => json!({"model": model, "stream": stream, "input": "hi"}),
        _ => json!({"model": model, "stream": stream, "max_tokens": 64,
            "messages": [{"role": "user", "content": "hi"}]}),
    }
}

async fn post(url: &str, body: &Value) -> (StatusCode, Value) {
    let response = client().post(url).json(body).send().await.expect("sent");
    let status = response.status();
    let text = response.text().await.expect("body");
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// The refusal each protocol's clients treat as "out of money", not as "retry".
fn assert_refusal(protocol: &str, status: StatusCode, body: &Value) {
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("budget") && message.contains("max_tokens_per_trial"),
        "{protocol}: {body}"
    );
    if protocol == "messages" {
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(body["type"], "error");
        assert_eq!(body["error"]["type"], "invalid_request_error");
    } else {
        assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(body["error"]["code"], "insufficient_quota");
    }
}

#[tokio::test]
async fn scripted_calls_are_refused_once_the_budget_is_spent() {
    for golden in ALL {
        let protocol = golden.protocol;
        let proxy = Proxy::start_with_budget(
            ProxyMode::Scripted {
                script: script(),
                model: "m".into(),
                latency: std::time::Duration::ZERO,
            },
            Budget {
                max_tokens: Some(12),
            },
        )
        .await
        .expect("proxy starts");
        let url = format!("{}/{}", proxy.base_url(), golden.path);
        // Under the budget: answered and metered, until the total reaches the limit.
        let mut answered = 0;
        loop {
            let (status, body) = post(&url, &request(protocol, "m", false)).await;
            if status != StatusCode::OK {
                assert_refusal(protocol, status, &body);
                break;
            }
            answered += 1;
            assert!(answered < 100, "{protocol}: never refused");
        }
        // A stream asked for is refused the same way, before any stream starts.
        let (status, body) = post(&url, &request(protocol, "m", true)).await;
        assert_refusal(protocol, status, &body);

        let entries = proxy.shutdown().await;
        let metered: u64 = entries[..answered]
            .iter()
            .map(|e| e.input_tokens.unwrap_or(0) + e.output_tokens.unwrap_or(0))
            .sum();
        assert!(
            metered >= 12,
            "{protocol}: refused only once spent ({metered})"
        );
        let before_last: u64 = metered
            - entries[answered - 1].input_tokens.unwrap_or(0)
            - entries[answered - 1].output_tokens.unwrap_or(0);
        assert!(before_last < 12, "{protocol}: not refused too early");
        let refused = &entries[answered..];
        assert_eq!(refused.len(), 2);
        for entry in refused {
            assert_eq!(entry.source, "budget");
            assert_eq!(entry.input_tokens, None);
            assert_eq!(entry.protocol, protocol);
        }
        assert!(refused[1].stream);
        assert!(budget_hit(&entries).is_some_and(|b| b.contains("12")));
        assert_eq!(budget_hit(&entries[..answered]), None);
    }
}

#[tokio::test]
async fn byok_calls_past_the_budget_never_reach_the_provider() {
    let (upstream, fake) = provider::start().await;
    let proxy = Proxy::start_with_budget(
        ProxyMode::Byok {
            upstream,
            api_key: KEY.into(),
            retry: gauntlet::proxy::RetryPolicy::NONE,
        },
        Budget {
            max_tokens: Some(1000),
        },
    )
    .await
    .expect("proxy starts");
    // One streamed Anthropic call meters 3512 + 57 tokens from message_start and
    // message_delta: the budget is spent, in any protocol.
    let messages = format!("{}/messages", proxy.base_url());
    let response = client()
        .post(&messages)
        .json(&request("messages", "golden", true))
        .send()
        .await
        .expect("sent");
    assert_eq!(
        response.text().await.expect("stream"),
        provider::MESSAGES.stream
    );
    for golden in ALL {
        let url = format!("{}/{}", proxy.base_url(), golden.path);
        let (status, body) = post(&url, &request(golden.protocol, "golden", false)).await;
        assert_refusal(golden.protocol, status, &body);
    }
    assert_eq!(fake.seen().len(), 1, "refused calls are not forwarded");
    let entries = proxy.shutdown().await;
    let sources: Vec<&str> = entries.iter().map(|e| e.source.as_str()).collect();
    assert_eq!(sources, ["upstream", "budget", "budget", "budget"]);
    assert!(budget_hit(&entries).is_some_and(|b| b.contains("3569") && b.contains("1000")));
}

#[test]
fn a_trial_that_hits_its_budget_is_scored_and_says_so() {
    let out = tempfile::tempdir().expect("tempdir");
    let mut cfg = super::support::config(
        gauntlet::config::AgentChoice::of(gauntlet::config::AgentKind::Reference),
        out.path(),
    );
    cfg.max_tokens_per_trial = Some(1);
    let app = super::support::ledger();
    let (record, dir) = super::support::run_trial(&app, "balance", &cfg);

    assert_eq!(record.header.config.max_tokens_per_trial, Some(1));
    let hit = record
        .evidence
        .budget_hit
        .as_deref()
        .expect("the limit is recorded");
    assert!(hit.contains("budget") && hit.contains("limit"), "{hit}");
    // The first call was answered and metered; the next was refused and recorded.
    let sources: Vec<&str> = record
        .evidence
        .usage
        .iter()
        .map(|u| u.source.as_str())
        .collect();
    assert_eq!(sources[..2], ["scripted", "budget"]);
    // Scored from the evidence it has, like any other trial: a verdict, not a harness
    // error; and the per-trial report line names the limit.
    assert!(!record.verdict.passed);
    assert!(dir.join("record.json").is_file());
    let line = gauntlet::record::summary_line(&record);
    assert!(line.contains("budget_hit="), "{line}");
    let reread = gauntlet::record::load(&dir.join("record.json")).expect("record loads");
    assert_eq!(reread.evidence.budget_hit, record.evidence.budget_hit);

    // Without a budget the same trial hits no limit.
    let out = tempfile::tempdir().expect("tempdir");
    let cfg = super::support::config(
        gauntlet::config::AgentChoice::of(gauntlet::config::AgentKind::Reference),
        out.path(),
    );
    let (record, _) = super::support::run_trial(&app, "balance", &cfg);
    assert_eq!(record.evidence.budget_hit, None);
    assert!(record.evidence.usage.iter().all(|u| u.source == "scripted"));
}
