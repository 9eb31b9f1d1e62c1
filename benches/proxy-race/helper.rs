//! The standalone pieces of `benches/proxy-race.sh`: a fake OpenAI-compatible provider,
//! a byte-for-byte TCP relay, a bare HTTP pass-through, and the request bodies wrk
//! sends.
//!
//! They are processes of their own (not tasks inside a bench) so that LiteLLM and
//! `gauntlet proxy` can be put in front of the very same provider, each in its own
//! process, as they run in real use.
//!
//! ```text
//! proxy-race-helper upstream                 serve the fake provider on 127.0.0.1, port 0
//! proxy-race-helper relay HOST:PORT          relay 127.0.0.1, port 0, to HOST:PORT
//! proxy-race-helper pass HOST:PORT [json]    pass calls on to HOST:PORT, reading nothing
//!                                            (with `json`: each request body as JSON)
//! proxy-race-helper body HISTORY STREAM      print a Chat Completions request body
//! proxy-race-helper free-port                print a loopback port free right now
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

/// A pass-through built from the parts `gauntlet proxy` is built from, and nothing
/// else: hyper on both sides, one single-threaded runtime per core, one provider
/// connection per client connection, the request body collected and sent on whole, the
/// answer streamed back as it comes ([`Bursts`]). It meters nothing and logs nothing;
/// with `json` it reads the request body as JSON before sending it on (serde_json,
/// every value checked and dropped), and nothing else. A metering proxy of these parts
/// does all of this and more, so the race's targets for `gauntlet proxy` (ratios to
/// the relay) can be set against what this reaches in the same run.
fn pass(target: SocketAddr, json: bool) -> ExitCode {
    let threads = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    let mut port = 0;
    let mut served = Vec::new();
    for _ in 0..threads {
        let runtime = match tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            Ok(rt) => rt,
            Err(e) => {
                eprintln!("proxy-race-helper: cannot start a runtime: {e}");
                return ExitCode::FAILURE;
            }
        };
        // Every thread its own listener on the same port: the kernel spreads the
        // connections, and each is served start to end where it was accepted.
        let listener = runtime.block_on(async {
            let socket = tokio::net::TcpSocket::new_v4()?;
            socket.set_reuseport(true)?;
            socket.bind(SocketAddr::from(([127, 0, 0, 1], port)))?;
            socket.listen(1024)
        });
        let listener = match listener {
            Ok(l) => l,
            Err(e) => {
                eprintln!("proxy-race-helper: pass: cannot listen on 127.0.0.1:{port}: {e}");
                return ExitCode::FAILURE;
            }
        };
        if port == 0 {
            match listener.local_addr() {
                Ok(addr) => port = addr.port(),
                Err(e) => {
                    eprintln!("proxy-race-helper: pass: {e}");
                    return ExitCode::FAILURE;
                }
            }
        }
        served.push((runtime, listener));
    }
    println!("listening on 127.0.0.1:{port}");
    let threads: Vec<_> = served
        .into_iter()
        .map(|(runtime, listener)| {
            std::thread::spawn(move || {
                runtime.block_on(async move {
                    loop {
                        let Ok((stream, _)) = listener.accept().await else {
                            // Out of descriptors, say: wait rather than spin.
                            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                            continue;
                        };
                        tokio::spawn(pass_connection(stream, target, json));
                    }
                })
            })
        })
        .collect();
    for t in threads {
        let _ = t.join();
    }
    ExitCode::FAILURE
}

type PassBody = UnsyncBoxBody<Bytes, hyper::Error>;

type ProviderConnection =
    hyper::client::conn::http1::Connection<TokioIo<tokio::net::TcpStream>, Full<Bytes>>;

/// One client connection's connection to the provider, driven by the client
/// connection's own task: beside the server side ([`pass_connection`]), and by an
/// answer's body before it looks for its next chunk ([`Bursts`]), so that the chunks
/// the provider sent together are decoded together, without waking another task for
/// each. That is how `gauntlet proxy` drives its provider connections.
struct Provider {
    connection: std::sync::Mutex<Option<std::pin::Pin<Box<ProviderConnection>>>>,
}

impl Provider {
    fn poll(&self, cx: &mut std::task::Context<'_>) {
        let mut connection = self
            .connection
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(c) = connection.as_mut() {
            if std::future::Future::poll(c.as_mut(), cx).is_ready() {
                *connection = None;
            }
        }
    }
}

/// A provider's answer passed on as it comes, where chunks that have already arrived
/// together go out as one, as `gauntlet proxy` sends them: hyper writes every frame it
/// is given on its own, and a stream's events would cost a write each.
struct Bursts {
    inner: hyper::body::Incoming,
    provider: std::sync::Arc<Provider>,
    done: bool,
}

impl hyper::body::Body for Bursts {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        use std::task::Poll;
        let mut burst: Option<bytes::BytesMut> = None;
        let mut first: Option<Bytes> = None;
        while !self.done {
            self.provider.poll(cx);
            match std::pin::Pin::new(&mut self.inner).poll_frame(cx) {
                Poll::Ready(Some(Ok(frame))) => {
                    let Ok(data) = frame.into_data() else {
                        continue;
                    };
                    match (&mut burst, first.take()) {
                        (Some(b), _) => b.extend_from_slice(&data),
                        (None, None) => first = Some(data),
                        (None, Some(f)) => {
                            let mut b = bytes::BytesMut::from(&f[..]);
                            b.extend_from_slice(&data);
                            burst = Some(b);
                        }
                    }
                }
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(e))),
                Poll::Ready(None) => self.done = true,
                Poll::Pending => break,
            }
        }
        match (burst, first) {
            (Some(b), _) => Poll::Ready(Some(Ok(Frame::data(b.freeze())))),
            (None, Some(f)) => Poll::Ready(Some(Ok(Frame::data(f)))),
            (None, None) if self.done => Poll::Ready(None),
            (None, None) => Poll::Pending,
        }
    }
}

/// An answer of the pass-through's own, empty: the call could not be passed on.
fn refused(status: hyper::StatusCode) -> Response<PassBody> {
    let mut response = Response::new(
        Full::new(Bytes::new())
            .map_err(|never| match never {})
            .boxed_unsync(),
    );
    *response.status_mut() = status;
    response
}

async fn pass_connection(inbound: tokio::net::TcpStream, target: SocketAddr, json: bool) {
    let _ = inbound.set_nodelay(true);
    let Ok(outbound) = tokio::net::TcpStream::connect(target).await else {
        return;
    };
    let _ = outbound.set_nodelay(true);
    let Ok((sender, connection)) =
        hyper::client::conn::http1::handshake::<_, Full<Bytes>>(TokioIo::new(outbound)).await
    else {
        return;
    };
    let provider = std::sync::Arc::new(Provider {
        connection: std::sync::Mutex::new(Some(Box::pin(connection))),
    });
    let driven = std::sync::Arc::clone(&provider);
    let sender = std::sync::Arc::new(tokio::sync::Mutex::new(sender));
    let service = hyper::service::service_fn(move |request: Request<hyper::body::Incoming>| {
        let sender = std::sync::Arc::clone(&sender);
        let provider = std::sync::Arc::clone(&provider);
        async move {
            let (parts, body) = request.into_parts();
            let Ok(body) = body.collect().await.map(|b| b.to_bytes()) else {
                return Ok::<_, Infallible>(refused(hyper::StatusCode::BAD_REQUEST));
            };
            if json && serde_json::from_slice::<serde::de::IgnoredAny>(&body).is_err() {
                return Ok(refused(hyper::StatusCode::BAD_REQUEST));
            }
            let mut out = Request::new(Full::new(body));
            *out.method_mut() = parts.method;
            *out.uri_mut() = parts.uri;
            out.headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            if let Some(host) = parts.headers.get(hyper::header::HOST) {
                out.headers_mut().insert(hyper::header::HOST, host.clone());
            }
            let answer = {
                let mut sender = sender.lock().await;
                if sender.ready().await.is_err() {
                    return Ok(refused(hyper::StatusCode::BAD_GATEWAY));
                }
                sender.send_request(out)
            };
            Ok(match answer.await {
                Ok(answer) => answer.map(|inner| {
                    Bursts {
                        inner,
                        provider,
                        done: false,
                    }
                    .boxed_unsync()
                }),
                Err(_) => refused(hyper::StatusCode::BAD_GATEWAY),
            })
        }
    });
    let served =
        hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(inbound), service);
    let drive = std::future::poll_fn(|cx| {
        driven.poll(cx);
        std::task::Poll::<()>::Pending
    });
    tokio::select! {
        _ = served => {}
        () = drive => {}
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
        "usage: proxy-race-helper upstream | relay HOST:PORT | pass HOST:PORT [json] | body HISTORY true|false | free-port"
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
        ["pass", target, rest @ ..] if rest.is_empty() || rest == ["json"] => {
            match target.parse::<SocketAddr>() {
                Ok(target) => pass(target, !rest.is_empty()),
                Err(e) => {
                    eprintln!("proxy-race-helper: pass target `{target}`: {e}");
                    ExitCode::from(2)
                }
            }
        }
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
