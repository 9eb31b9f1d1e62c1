//! The metering proxy's cost: added latency (p50, p99) for non-streaming and streaming
//! Chat Completions calls in byok mode, against calling the same local upstream
//! directly in the same run, and throughput at 64 concurrent clients.
//!
//! `cargo bench --bench proxy` (GAUNTLET_BENCH_ITERS, default 3000 calls per case;
//! GAUNTLET_BENCH_CLIENTS, default 64). Direct and proxied calls alternate, so both see
//! the same machine load; the added latency is the proxied percentile minus the direct
//! one. Target: p50 added latency at most 0.1 ms. The client, the proxy and the
//! upstream each get a runtime (one worker thread) of their own, as the agent, gauntlet
//! and the provider are separate processes in real use.

use std::convert::Infallible;
use std::time::{Duration, Instant};

use bytes::Bytes;
use gauntlet::proxy::{Proxy, ProxyMode};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;

const WHOLE: &str = r#"{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"bench","choices":[{"index":0,"message":{"role":"assistant","content":"Hello from the bench upstream."},"finish_reason":"stop"}],"usage":{"prompt_tokens":120,"completion_tokens":8,"total_tokens":128,"prompt_tokens_details":{"cached_tokens":64}}}"#;

/// Twenty content chunks, the usage chunk and `[DONE]`, each its own frame.
fn stream_events() -> Vec<Bytes> {
    let mut events: Vec<Bytes> = (0..20)
        .map(|i| {
            Bytes::from(format!(
                "data: {{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"token{i} \"}},\"finish_reason\":null}}]}}\n\n"
            ))
        })
        .collect();
    events.push(Bytes::from_static(
        b"data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_tokens\":120,\"completion_tokens\":20,\"total_tokens\":140}}\n\n",
    ));
    events.push(Bytes::from_static(b"data: [DONE]\n\n"));
    events
}

type UpBody = UnsyncBoxBody<Bytes, Infallible>;

async fn upstream_reply(request: Request<hyper::body::Incoming>) -> Response<UpBody> {
    let body = request
        .into_body()
        .collect()
        .await
        .map(|c| c.to_bytes())
        .unwrap_or_default();
    let streamed = body.windows(13).any(|w| w == b"\"stream\":true");
    if streamed {
        let frames = stream_events()
            .into_iter()
            .map(|b| Ok::<_, Infallible>(Frame::data(b)));
        let mut response =
            Response::new(StreamBody::new(futures_util::stream::iter(frames)).boxed_unsync());
        response.headers_mut().insert(
            "content-type",
            hyper::header::HeaderValue::from_static("text/event-stream"),
        );
        response
    } else {
        let mut response =
            Response::new(Full::new(Bytes::from_static(WHOLE.as_bytes())).boxed_unsync());
        response.headers_mut().insert(
            "content-type",
            hyper::header::HeaderValue::from_static("application/json"),
        );
        response
    }
}

/// A minimal provider on 127.0.0.1; returns its base URL.
async fn start_upstream() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let _ = stream.set_nodelay(true);
            let service = hyper::service::service_fn(|request| async move {
                Ok::<_, Infallible>(upstream_reply(request).await)
            });
            tokio::spawn(
                hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service),
            );
        }
    });
    format!("http://{addr}/v1")
}

fn body(stream: bool) -> Bytes {
    Bytes::from(format!(
        r#"{{"model":"bench","stream":{stream},"stream_options":{{"include_usage":true}},"messages":[{{"role":"system","content":"You are a QA agent."}},{{"role":"user","content":"Verify the balance capability of the ledger."}}]}}"#
    ))
}

/// One call: the times to the first and to the last byte of its answer.
async fn call(client: &reqwest::Client, base: &str, body: Bytes) -> (Duration, Duration) {
    let t = Instant::now();
    let mut response = client
        .post(format!("{base}/chat/completions"))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .expect("call answered");
    assert!(response.status().is_success(), "{}", response.status());
    let mut first = None;
    let mut bytes = 0;
    while let Some(chunk) = response.chunk().await.expect("whole answer") {
        first.get_or_insert_with(|| t.elapsed());
        bytes += chunk.len();
    }
    assert!(bytes > 0);
    (first.unwrap_or_default(), t.elapsed())
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

async fn latency(
    client: &reqwest::Client,
    direct: &str,
    proxied: &str,
    stream: bool,
    iters: usize,
) {
    let body = body(stream);
    for _ in 0..200 {
        call(client, direct, body.clone()).await;
        call(client, proxied, body.clone()).await;
    }
    let mut d = Vec::with_capacity(iters);
    let mut p = Vec::with_capacity(iters);
    for i in 0..iters {
        // Alternate which goes first, so neither always follows the other.
        if i % 2 == 0 {
            d.push(call(client, direct, body.clone()).await);
            p.push(call(client, proxied, body.clone()).await);
        } else {
            p.push(call(client, proxied, body.clone()).await);
            d.push(call(client, direct, body.clone()).await);
        }
    }
    let label = if stream { "streaming" } else { "non-streaming" };
    let mut cases = vec![("last byte", 1usize)];
    if stream {
        cases.insert(0, ("first byte", 0));
    }
    for (what, which) in cases {
        let pick = |v: &[(Duration, Duration)]| {
            let mut v: Vec<Duration> = v
                .iter()
                .map(|t| if which == 0 { t.0 } else { t.1 })
                .collect();
            v.sort();
            v
        };
        let (ds, ps) = (pick(&d), pick(&p));
        for (name, q) in [("p50", 0.50), ("p99", 0.99)] {
            let (dq, pq) = (percentile(&ds, q), percentile(&ps, q));
            println!(
                "{label:<14} {what:<10} {name}: direct {:.3} ms, via proxy {:.3} ms, added {:+.3} ms",
                ms(dq),
                ms(pq),
                ms(pq) - ms(dq)
            );
        }
    }
}

async fn throughput(base: &str, clients: usize, per_client: usize) -> f64 {
    let body = body(false);
    let t = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..clients {
        let base = base.to_owned();
        let body = body.clone();
        tasks.spawn(async move {
            // One connection per client, as concurrent agents have.
            let client = reqwest::Client::builder()
                .no_proxy()
                .pool_max_idle_per_host(1)
                .build()
                .expect("client");
            for _ in 0..per_client {
                call(&client, &base, body.clone()).await;
            }
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.expect("client task");
    }
    (clients * per_client) as f64 / t.elapsed().as_secs_f64()
}

/// A runtime with one worker thread of its own: the agent, the proxy and the provider
/// are separate processes in real use, so none of them runs the others' tasks here.
fn own_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime")
}

fn main() {
    let iters = env_usize("GAUNTLET_BENCH_ITERS", 3000);
    let clients = env_usize("GAUNTLET_BENCH_CLIENTS", 64);
    let upstream_rt = own_runtime();
    let proxy_rt = own_runtime();
    let client_rt = own_runtime();
    let direct = upstream_rt.block_on(start_upstream());
    let proxy = proxy_rt
        .block_on(Proxy::start(ProxyMode::Byok {
            upstream: direct.clone(),
            api_key: "bench-key".into(),
        }))
        .expect("proxy starts");
    let proxied = proxy.base_url();
    client_rt.block_on(async {
        let client = reqwest::Client::builder()
            .no_proxy()
            .build()
            .expect("client");
        println!("proxy bench: {iters} calls per case, alternating direct and via proxy");
        latency(&client, &direct, &proxied, false, iters).await;
        latency(&client, &direct, &proxied, true, iters).await;
        let per_client = (iters / clients).max(20);
        let direct_rps = throughput(&direct, clients, per_client).await;
        let proxied_rps = throughput(&proxied, clients, per_client).await;
        println!(
            "throughput at {clients} concurrent clients (non-streaming, {per_client} calls each): direct {direct_rps:.0} calls/s, via proxy {proxied_rps:.0} calls/s"
        );
    });
    let usage = proxy_rt.block_on(proxy.shutdown());
    let metered = usage.iter().filter(|u| u.input_tokens.is_some()).count();
    println!(
        "proxy metered {metered} of {} calls ({} with errors)",
        usage.len(),
        usage.iter().filter(|u| u.error.is_some()).count()
    );
}
