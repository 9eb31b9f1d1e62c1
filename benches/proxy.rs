//! The metering proxy's cost: added latency (p50, p99) for non-streaming and streaming
//! Chat Completions calls in byok mode, against calling the same local upstream
//! directly in the same run, and throughput at 64 concurrent clients.
//!
//! `cargo bench --bench proxy` (GAUNTLET_BENCH_ITERS, default 3000 calls per case;
//! GAUNTLET_BENCH_CLIENTS, default 64). Direct calls, calls through a byte-for-byte TCP
//! relay and calls through the proxy take turns, so all see the same machine load; the
//! added latency is a percentile minus the direct one. The relay is the floor any
//! proxy process pays on this machine (one more loopback hop, two more thread
//! wake-ups) and shows how much of the proxy's cost is its own work. Each case runs
//! with a 1 KB request and with a 75 KB one (a conversation late in an agent's task).
//! Target: p50 added latency at most 0.1 ms.
//!
//! The agent, gauntlet and the provider are separate processes in real use, so each
//! gets a thread of its own here: the upstream and the proxy a one-worker runtime, the
//! client a current-thread runtime, like the single event loop of the Node agents
//! (so the client's own thread hand-offs are not counted against either side).

use std::convert::Infallible;
use std::time::{Duration, Instant};

use bytes::Bytes;
use gauntlet::proxy::{Proxy, ProxyMode};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;

#[path = "support/provider.rs"]
mod provider;
use provider::{stream_events, WHOLE};

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

/// A TCP relay on 127.0.0.1 that copies bytes both ways between each client
/// connection and a fresh upstream connection; returns its base URL.
async fn start_tcp_relay(upstream: &str) -> String {
    let target = upstream
        .trim_start_matches("http://")
        .trim_end_matches("/v1")
        .to_owned();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        while let Ok((mut inbound, _)) = listener.accept().await {
            let target = target.clone();
            tokio::spawn(async move {
                let _ = inbound.set_nodelay(true);
                let Ok(mut outbound) = tokio::net::TcpStream::connect(&target).await else {
                    return;
                };
                let _ = outbound.set_nodelay(true);
                let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
            });
        }
    });
    format!("http://{addr}/v1")
}

/// A request as an agent sends it: `history` tool results of about 1 KB each before
/// the last turn (none for the small case; 60, about 64 KB, late in a task).
fn body(stream: bool, history: usize) -> Bytes {
    let mut messages = vec![
        serde_json::json!({"role": "system", "content": "You are a QA agent."}),
        serde_json::json!({"role": "user", "content": "Verify the balance capability of the ledger."}),
    ];
    for i in 0..history {
        messages.push(serde_json::json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": format!("call_{i}"), "type": "function",
             "function": {"name": "bash", "arguments": "{\"command\":\"curl -s http://127.0.0.1:8080/balance/7\"}"}}
        ]}));
        messages.push(serde_json::json!({"role": "tool", "tool_call_id": format!("call_{i}"),
            "content": format!("HTTP/1.1 200 OK\n{}", "{\"id\":7,\"balance\":\"12.50\"}\n".repeat(30))}));
    }
    Bytes::from(
        serde_json::json!({
            "model": "bench",
            "stream": stream,
            "stream_options": {"include_usage": true},
            "messages": messages,
        })
        .to_string(),
    )
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

/// Where a call goes, in the order the three take turns.
struct Targets<'a> {
    direct: &'a str,
    relay: &'a str,
    proxy: &'a str,
}

async fn latency(
    client: &reqwest::Client,
    targets: &Targets<'_>,
    stream: bool,
    history: usize,
    iters: usize,
) {
    let body = body(stream, history);
    let bases = [targets.direct, targets.relay, targets.proxy];
    for _ in 0..200 {
        for base in bases {
            call(client, base, body.clone()).await;
        }
    }
    let mut times: [Vec<(Duration, Duration)>; 3] = Default::default();
    for i in 0..iters {
        // Rotate which goes first, so none always follows another.
        for k in 0..3 {
            let which = (i + k) % 3;
            times[which].push(call(client, bases[which], body.clone()).await);
        }
    }
    let label = format!(
        "{}, {} KB",
        if stream { "streaming" } else { "non-streaming" },
        body.len().div_ceil(1024)
    );
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
        let [d, r, p] = [pick(&times[0]), pick(&times[1]), pick(&times[2])];
        for (name, q) in [("p50", 0.50), ("p99", 0.99)] {
            let [dq, rq, pq] = [&d, &r, &p].map(|v| ms(percentile(v, q)));
            println!(
                "{label:<21} {what:<10} {name}: direct {dq:.3} ms | tcp relay {rq:.3} ms, added {:+.3} ms | gauntlet proxy {pq:.3} ms, added {:+.3} ms",
                rq - dq,
                pq - dq
            );
        }
    }
}

async fn throughput(base: &str, clients: usize, per_client: usize) -> f64 {
    let body = body(false, 0);
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
    let client_rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let direct = upstream_rt.block_on(start_upstream());
    let tcp_relay = proxy_rt.block_on(start_tcp_relay(&direct));
    let proxy = proxy_rt
        .block_on(Proxy::start(ProxyMode::Byok {
            upstream: direct.clone(),
            api_key: "bench-key".into(),
            retry: gauntlet::proxy::RetryPolicy::NONE,
        }))
        .expect("proxy starts");
    let proxied = proxy.base_url();
    client_rt.block_on(async {
        let client = reqwest::Client::builder()
            .no_proxy()
            .build()
            .expect("client");
        println!("proxy bench: {iters} calls per case and target, taking turns");
        let targets = Targets {
            direct: &direct,
            relay: &tcp_relay,
            proxy: &proxied,
        };
        for history in [0, 60] {
            latency(&client, &targets, false, history, iters).await;
            latency(&client, &targets, true, history, iters).await;
        }
        let per_client = (iters / clients).max(20);
        let direct_rps = throughput(&direct, clients, per_client).await;
        let relay_rps = throughput(&tcp_relay, clients, per_client).await;
        let proxied_rps = throughput(&proxied, clients, per_client).await;
        println!(
            "throughput at {clients} concurrent clients (non-streaming, {per_client} calls each): direct {direct_rps:.0} calls/s | tcp relay {relay_rps:.0} calls/s ({:.2}x direct) | gauntlet proxy {proxied_rps:.0} calls/s ({:.2}x direct)",
            relay_rps / direct_rps,
            proxied_rps / direct_rps
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
