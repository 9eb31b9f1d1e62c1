//! The standalone pieces of `benches/proxy-race.sh`: a fake OpenAI-compatible provider,
//! a byte-for-byte TCP relay, and the request bodies wrk sends.
//!
//! They are processes of their own (not tasks inside a bench) so that LiteLLM and
//! `gauntlet proxy` can be put in front of the very same provider, each in its own
//! process, as they run in real use.
//!
//! ```text
//! proxy-race-helper upstream            serve the fake provider on 127.0.0.1, port 0
//! proxy-race-helper relay HOST:PORT     relay 127.0.0.1, port 0, to HOST:PORT
//! proxy-race-helper body HISTORY STREAM print a Chat Completions request body
//! proxy-race-helper free-port           print a loopback port free right now
//! ```
//!
//! The servers print `listening on 127.0.0.1:PORT` once bound, then serve until killed.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::process::ExitCode;

use bytes::Bytes;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;

#[path = "../support/provider.rs"]
mod provider;
use provider::{stream_events, WHOLE};

type UpBody = UnsyncBoxBody<Bytes, Infallible>;

/// Whether a request asks for a stream. A byte search rather than a JSON parse, so
/// that the provider's own cost stays small and equal for every caller; both
/// spellings, because Python clients put a space after the colon.
fn streamed(body: &[u8]) -> bool {
    memchr::memmem::find(body, b"\"stream\":true").is_some()
        || memchr::memmem::find(body, b"\"stream\": true").is_some()
}

async fn reply(request: Request<hyper::body::Incoming>) -> Response<UpBody> {
    let body = match request.into_body().collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => Bytes::new(),
    };
    let (body, content_type) = if streamed(&body) {
        let frames = stream_events()
            .into_iter()
            .map(|b| Ok::<_, Infallible>(Frame::data(b)));
        (
            StreamBody::new(futures_util::stream::iter(frames)).boxed_unsync(),
            "text/event-stream",
        )
    } else {
        (
            Full::new(Bytes::from_static(WHOLE.as_bytes())).boxed_unsync(),
            "application/json",
        )
    };
    let mut response = Response::new(body);
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

async fn bind() -> std::io::Result<tokio::net::TcpListener> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    println!("listening on {}", listener.local_addr()?);
    Ok(listener)
}

async fn upstream() -> std::io::Result<()> {
    let listener = bind().await?;
    loop {
        let (stream, _) = listener.accept().await?;
        let _ = stream.set_nodelay(true);
        let service = hyper::service::service_fn(|request| async move {
            Ok::<_, Infallible>(reply(request).await)
        });
        tokio::spawn(
            hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service),
        );
    }
}

/// Each client connection gets a fresh connection to `target`; bytes are copied both
/// ways until either side closes. The floor any proxy process pays: one more loopback
/// hop and the wake-ups that go with it, nothing parsed.
async fn relay(target: SocketAddr) -> std::io::Result<()> {
    let listener = bind().await?;
    loop {
        let (mut inbound, _) = listener.accept().await?;
        tokio::spawn(async move {
            let _ = inbound.set_nodelay(true);
            let Ok(mut outbound) = tokio::net::TcpStream::connect(target).await else {
                return;
            };
            let _ = outbound.set_nodelay(true);
            let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
        });
    }
}

/// A request as an agent sends it, the same as benches/proxy.rs sends: `history` tool
/// results of about 1 KB each before the last turn (0: about 0.3 KB; 60: about 75 KB).
fn body(history: usize, stream: bool) -> String {
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
    serde_json::json!({
        "model": "bench",
        "stream": stream,
        "stream_options": {"include_usage": true},
        "messages": messages,
    })
    .to_string()
}

fn usage() -> ExitCode {
    eprintln!(
        "usage: proxy-race-helper upstream | relay HOST:PORT | body HISTORY true|false | free-port"
    );
    ExitCode::from(2)
}

/// One worker per core, tokio's default shape: the relay and the provider are not what
/// is measured, so they get the shape a server usually has.
fn serve(what: impl std::future::Future<Output = std::io::Result<()>>) -> ExitCode {
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("proxy-race-helper: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match rt.block_on(what) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("proxy-race-helper: {e}");
            ExitCode::FAILURE
        }
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match args.as_slice() {
        ["upstream"] => serve(upstream()),
        ["relay", target] => match target.parse::<SocketAddr>() {
            Ok(target) => serve(relay(target)),
            Err(e) => {
                eprintln!("proxy-race-helper: relay target `{target}`: {e}");
                ExitCode::from(2)
            }
        },
        ["body", history, stream] => match (history.parse::<usize>(), stream.parse::<bool>()) {
            (Ok(history), Ok(stream)) => {
                print!("{}", body(history, stream));
                ExitCode::SUCCESS
            }
            _ => usage(),
        },
        ["free-port"] => {
            match std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()) {
                Ok(addr) => {
                    println!("{}", addr.port());
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("proxy-race-helper: free-port: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        _ => usage(),
    }
}
