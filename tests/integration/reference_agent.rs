//! The reference agent, driven as a real binary against a fake OpenAI server on
//! 127.0.0.1. The fake chooses each reply from how many `role: "tool"` messages the
//! request carries, like the scripted proxy, so these tests exercise the agent's loop,
//! tools, event stream and wire handling, not the proxy.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use gauntlet::evidence::claim::render;
use gauntlet::evidence::{
    parse_claims, parse_transcript, Claim, ClaimStatus, ClaimTest, ClaimsFound, Event, Transcript,
};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};

const CAPABILITY: &str = "greet";
const APP_URL: &str = "http://127.0.0.1:1";

/// One scripted reply of the fake model.
#[derive(Clone)]
enum Reply {
    /// An HTTP error status with an error body.
    Status(u16),
    /// A tool call (`arguments` is the raw string), with optional assistant text.
    Tool {
        text: Option<String>,
        id: String,
        name: String,
        arguments: String,
    },
    /// A plain answer with no tool calls.
    Text(String),
}

fn tool(id: &str, name: &str, arguments: Value) -> Reply {
    Reply::Tool {
        text: None,
        id: id.into(),
        name: name.into(),
        arguments: arguments.to_string(),
    }
}

/// Chooses the reply from the number of tool results and the fake's own base address.
type Decide = dyn Fn(usize, &str) -> Reply + Send + Sync;

struct Seen {
    bodies: Vec<Value>,
    auth: Vec<Option<String>>,
}

/// The fake model server; it lives until dropped.
struct FakeModel {
    addr: SocketAddr,
    seen: Arc<Mutex<Seen>>,
    _rt: tokio::runtime::Runtime,
}

impl FakeModel {
    /// `decide` maps the number of tool results in a request (and the fake's own
    /// `http://127.0.0.1:PORT`) to the reply.
    fn start(decide: impl Fn(usize, &str) -> Reply + Send + Sync + 'static) -> FakeModel {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let listener = rt
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Seen {
            bodies: Vec::new(),
            auth: Vec::new(),
        }));
        let decide: Arc<Decide> = Arc::new(decide);
        let state = seen.clone();
        rt.spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let (seen, decide) = (state.clone(), decide.clone());
                let own = format!("http://{addr}");
                tokio::spawn(async move {
                    let svc = service_fn(move |req| {
                        handle(req, seen.clone(), decide.clone(), own.clone())
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), svc)
                        .await;
                });
            }
        });
        FakeModel {
            addr,
            seen,
            _rt: rt,
        }
    }

    fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    fn requests(&self) -> Vec<Value> {
        self.seen.lock().unwrap().bodies.clone()
    }
}

async fn handle(
    req: Request<Incoming>,
    seen: Arc<Mutex<Seen>>,
    decide: Arc<Decide>,
    own: String,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let path = req.uri().path().to_string();
    let auth = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let body = req.into_body().collect().await.unwrap().to_bytes();
    if path == "/health" {
        return Ok(Response::new(Full::new(Bytes::from_static(b"healthy"))));
    }
    assert_eq!(path, "/v1/chat/completions");
    let request: Value = serde_json::from_slice(&body).unwrap();
    let tool_results = request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .count();
    let stream = request["stream"] == true;
    {
        let mut s = seen.lock().unwrap();
        s.bodies.push(request);
        s.auth.push(auth);
    }
    let reply = decide(tool_results, &own);
    let resp = match reply {
        Reply::Status(code) => Response::builder()
            .status(code)
            .body(Full::new(Bytes::from(
                json!({"error": {"message": "fake failure"}}).to_string(),
            )))
            .unwrap(),
        reply if stream => Response::builder()
            .header("content-type", "text/event-stream")
            .body(Full::new(Bytes::from(sse_body(&reply))))
            .unwrap(),
        reply => Response::builder()
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(json_body(&reply).to_string())))
            .unwrap(),
    };
    Ok(resp)
}

fn json_body(reply: &Reply) -> Value {
    let message = match reply {
        Reply::Text(t) => json!({"role": "assistant", "content": t}),
        Reply::Tool {
            text,
            id,
            name,
            arguments,
        } => json!({"role": "assistant", "content": text, "tool_calls": [
            {"id": id, "type": "function", "function": {"name": name, "arguments": arguments}}
        ]}),
        Reply::Status(_) => unreachable!(),
    };
    json!({
        "id": "chatcmpl-1", "object": "chat.completion", "model": "fake-model",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16},
    })
}

/// The same reply as SSE, cut into small deltas so that reassembly is exercised.
fn sse_body(reply: &Reply) -> String {
    let chunk = |delta: Value| {
        format!(
            "data: {}\n\n",
            json!({"id": "c", "object": "chat.completion.chunk",
                   "choices": [{"index": 0, "delta": delta, "finish_reason": null}]})
        )
    };
    let halves = |s: &str| {
        let mid = s
            .char_indices()
            .nth(s.chars().count() / 2)
            .map_or(0, |(i, _)| i);
        (s[..mid].to_string(), s[mid..].to_string())
    };
    let mut out = chunk(json!({"role": "assistant"}));
    match reply {
        Reply::Text(t) => {
            let (a, b) = halves(t);
            out += &chunk(json!({"content": a}));
            out += &chunk(json!({"content": b}));
        }
        Reply::Tool {
            text,
            id,
            name,
            arguments,
        } => {
            if let Some(t) = text {
                out += &chunk(json!({"content": t}));
            }
            out += &chunk(
                json!({"tool_calls": [{"index": 0, "id": id, "type": "function",
                "function": {"name": name, "arguments": ""}}]}),
            );
            let (a, b) = halves(arguments);
            for piece in [a, b] {
                out +=
                    &chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}));
            }
        }
        Reply::Status(_) => unreachable!(),
    }
    out += &format!(
        "data: {}\n\n",
        json!({"id": "c", "choices": [], "usage": {"prompt_tokens": 11, "completion_tokens": 5}})
    );
    out += "data: [DONE]\n\n";
    out
}

fn write_corpus(dir: &Path) -> std::path::PathBuf {
    let file = dir.join("corpus.json");
    let corpus = json!({
        "schema_version": 1, "app": "demo", "title": "Demo app",
        "requirements": [{"id": "r1", "title": "Greeting", "text": "The app greets."}],
        "capabilities": [{"id": CAPABILITY, "requirement": "r1", "title": "Says hello",
            "kind": "feature", "difficulty": "easy",
            "acceptance": ["GET /hello answers hello"]}],
    });
    std::fs::write(&file, corpus.to_string()).unwrap();
    file
}

/// Runs the agent in a fresh workspace; returns the workspace, output and transcript.
fn run_agent(
    fake: &FakeModel,
    extra: &[&str],
) -> (tempfile::TempDir, tempfile::TempDir, Output, Transcript) {
    let graph_dir = tempfile::tempdir().unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let graph = write_corpus(graph_dir.path());
    let output = Command::new(crate::support::bin("gauntlet-agent"))
        .args(["qa", "--graph-file"])
        .arg(&graph)
        .args(["--url", APP_URL, "--capability", CAPABILITY, "--n", "3"])
        .args(extra)
        .current_dir(workspace.path())
        .env("OPENAI_BASE_URL", fake.base_url())
        .env("OPENAI_API_KEY", "test-key")
        .env("OPENAI_MODEL", "fake-model")
        .env_remove("APP_URL")
        // A dead proxy: loopback traffic (model, app) must never be sent through it.
        .env("http_proxy", "http://127.0.0.1:9")
        .env("HTTP_PROXY", "http://127.0.0.1:9")
        .env_remove("NO_PROXY")
        .env_remove("no_proxy")
        .output()
        .unwrap();
    let transcript = parse_transcript(&output.stdout[..]);
    (workspace, graph_dir, output, transcript)
}

fn final_claim() -> Claim {
    Claim {
        capability: CAPABILITY.into(),
        status: ClaimStatus::Verified,
        test: Some(ClaimTest {
            dir: "greet-test".into(),
            command: "sh check.sh".into(),
        }),
    }
}

/// write_file, then shell running the written script, then the final claim.
fn happy_path(k: usize, _own: &str) -> Reply {
    match k {
        0 => Reply::Tool {
            text: Some("I will write the test first.".into()),
            id: "call_w".into(),
            name: "write_file".into(),
            arguments: json!({"path": "greet-test/check.sh",
                "content": "echo \"probe ok $APP_URL\"\n"})
            .to_string(),
        },
        1 => tool(
            "call_s",
            "shell",
            json!({"command": "cd greet-test && sh check.sh"}),
        ),
        _ => Reply::Text(format!("The test passes.\n{}\n", render(&final_claim()))),
    }
}

fn tool_results(t: &Transcript) -> Vec<(String, String, String, bool)> {
    t.events
        .iter()
        .filter_map(|e| match e {
            Event::ToolResult {
                id,
                tool,
                output,
                failed,
            } => Some((id.clone(), tool.clone(), output.clone(), *failed)),
            _ => None,
        })
        .collect()
}

fn has_error_event(t: &Transcript) -> bool {
    t.events.iter().any(|e| matches!(e, Event::Error { .. }))
}

fn check_happy_path(stream: bool) {
    let fake = FakeModel::start(happy_path);
    let extra: &[&str] = if stream { &["--stream"] } else { &[] };
    let (workspace, _graph, output, t) = run_agent(&fake, extra);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "stderr: {stderr}");

    // The file is really there, in the agent's cwd.
    let script = std::fs::read_to_string(workspace.path().join("greet-test/check.sh")).unwrap();
    assert_eq!(script, "echo \"probe ok $APP_URL\"\n");

    // The event stream.
    assert_eq!(t.garbage_lines, 0);
    assert!(t.unknown_events.is_empty());
    assert!(matches!(&t.events[0], Event::Start { agent, model, .. }
        if agent == "gauntlet-agent" && model == "fake-model"));
    assert_eq!(t.tool_calls, 2);
    assert_eq!(t.failed_tool_calls, 0);
    let calls: Vec<(String, Value)> = t
        .events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCall { tool, input, .. } => Some((tool.clone(), input.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(calls[0].0, "write_file");
    assert_eq!(calls[0].1["path"], "greet-test/check.sh");
    assert_eq!(calls[1].0, "shell");
    assert_eq!(calls[1].1["command"], "cd greet-test && sh check.sh");
    let results = tool_results(&t);
    assert_eq!(results.len(), 2);
    assert_eq!(results[0].0, "call_w");
    assert_eq!(results[1].0, "call_s");
    // The script ran with APP_URL taken from --url.
    assert_eq!(results[1].2, format!("probe ok {APP_URL}\n[exit code: 0]"));
    assert!(t.events.contains(&Event::Message {
        text: "I will write the test first.".into()
    }));
    let usage = t
        .events
        .iter()
        .filter(|e| {
            matches!(
                e,
                Event::Usage {
                    input_tokens: Some(11),
                    output_tokens: Some(5)
                }
            )
        })
        .count();
    assert_eq!(usage, 3);
    assert!(matches!(t.events.last(), Some(Event::Final { .. })));
    let finals = t
        .events
        .iter()
        .filter(|e| matches!(e, Event::Final { .. }))
        .count();
    assert_eq!(finals, 1);

    // The claim.
    let text = t.final_message.as_deref().unwrap();
    assert_eq!(parse_claims(text), ClaimsFound::One(final_claim()));

    // What the model was sent.
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 3);
    let first = &reqs[0];
    assert_eq!(first["model"], "fake-model");
    assert_eq!(first["tool_choice"], "auto");
    assert_eq!(first["stream"], stream);
    let tools: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        tools,
        [
            "shell",
            "write_file",
            "read_file",
            "http_request",
            "browser"
        ]
    );
    assert_eq!(first["messages"][0]["role"], "system");
    let user = first["messages"][1]["content"].as_str().unwrap();
    assert!(user.contains("`greet`") && user.contains(APP_URL), "{user}");
    assert!(user.contains("GET /hello answers hello"), "{user}");
    // The conversation grows by the assistant's call and the tool's answer.
    let last = &reqs[2]["messages"];
    let n = last.as_array().unwrap().len();
    assert_eq!(n, 6);
    assert_eq!(last[2]["tool_calls"][0]["id"], "call_w");
    assert_eq!(last[4]["tool_calls"][0]["function"]["name"], "shell");
    assert_eq!(last[5]["role"], "tool");
    assert_eq!(last[5]["tool_call_id"], "call_s");
    assert_eq!(
        fake.seen.lock().unwrap().auth[0].as_deref(),
        Some("Bearer test-key")
    );
}

#[test]
fn writes_runs_and_claims_non_streaming() {
    check_happy_path(false);
}

#[test]
fn writes_runs_and_claims_streaming() {
    check_happy_path(true);
}

#[test]
fn unknown_tools_and_bad_arguments_are_results_and_the_agent_goes_on() {
    let fake = FakeModel::start(|k, own| match k {
        0 => tool("call_0", "teleport", json!({"to": "mars"})),
        1 => Reply::Tool {
            text: None,
            id: "call_1".into(),
            name: "shell".into(),
            arguments: "{not json".into(),
        },
        // The fake answers GET /health itself.
        2 => tool(
            "call_2",
            "http_request",
            json!({"method": "get", "url": format!("{own}/health")}),
        ),
        _ => Reply::Text(format!("Done.\n{}", render(&final_claim()))),
    });
    let (_ws, _g, output, t) = run_agent(&fake, &[]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let results = tool_results(&t);
    assert_eq!(results.len(), 3);
    assert_eq!(results[0].1, "teleport");
    assert!(results[0].3, "an unknown tool must give a failed result");
    assert!(
        results[0].2.contains("unknown tool `teleport`"),
        "{}",
        results[0].2
    );
    assert!(results[1].3);
    assert!(
        results[1].2.contains("bad arguments for `shell`"),
        "{}",
        results[1].2
    );
    // Unparsable arguments are kept as the raw string in the evidence.
    assert!(t.events.contains(&Event::ToolCall {
        id: "call_1".into(),
        tool: "shell".into(),
        input: Value::String("{not json".into()),
    }));
    assert!(!results[2].3, "{}", results[2].2);
    assert!(results[2].2.starts_with("HTTP 200\n"), "{}", results[2].2);
    assert!(results[2].2.ends_with("\n\nhealthy"), "{}", results[2].2);
    assert_eq!(t.failed_tool_calls, 2);
    assert_eq!(fake.requests().len(), 4);
    assert_eq!(
        parse_claims(t.final_message.as_deref().unwrap()),
        ClaimsFound::One(final_claim())
    );
}

#[test]
fn a_model_that_fails_forever_gives_an_error_event_and_exit_1() {
    let fake = FakeModel::start(|_, _| Reply::Status(500));
    let (_ws, _g, output, t) = run_agent(&fake, &[]);
    assert_eq!(output.status.code(), Some(1));
    assert!(has_error_event(&t), "{:?}", t.events);
    assert_eq!(t.final_message, None);
    // One attempt and two retries, then it gives up.
    assert_eq!(fake.requests().len(), 3);
}

#[test]
fn a_client_error_is_not_retried() {
    let fake = FakeModel::start(|_, _| Reply::Status(400));
    let (_ws, _g, output, t) = run_agent(&fake, &["--stream"]);
    assert_eq!(output.status.code(), Some(1));
    let message = t.events.iter().find_map(|e| match e {
        Event::Error { message } => Some(message.clone()),
        _ => None,
    });
    assert!(
        message.as_deref().is_some_and(|m| m.contains("http 400")),
        "{message:?}"
    );
    assert_eq!(fake.requests().len(), 1);
}

#[test]
fn max_turns_stops_a_model_that_never_finishes() {
    let fake =
        FakeModel::start(|k, _| tool(&format!("call_{k}"), "shell", json!({"command": "true"})));
    let (_ws, _g, output, t) = run_agent(&fake, &["--max-turns", "2"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(has_error_event(&t), "{:?}", t.events);
    assert_eq!(t.final_message, None);
    assert_eq!(t.tool_calls, 2);
    assert_eq!(fake.requests().len(), 2);
}

#[test]
fn an_unknown_capability_is_an_error_before_any_model_call() {
    let graph_dir = tempfile::tempdir().unwrap();
    let graph = write_corpus(graph_dir.path());
    let fake = FakeModel::start(happy_path);
    let output = Command::new(crate::support::bin("gauntlet-agent"))
        .args(["qa", "--graph-file"])
        .arg(&graph)
        .args(["--url", APP_URL, "--capability", "nope", "--n", "1"])
        .current_dir(graph_dir.path())
        .env("OPENAI_BASE_URL", fake.base_url())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let t = parse_transcript(&output.stdout[..]);
    let message = t.events.iter().find_map(|e| match e {
        Event::Error { message } => Some(message.clone()),
        _ => None,
    });
    assert!(
        message.as_deref().is_some_and(|m| m.contains("`nope`")),
        "{message:?}"
    );
    assert!(fake.requests().is_empty());
}

#[test]
fn version_flag_prints_the_version() {
    let output = Command::new(crate::support::bin("gauntlet-agent"))
        .arg("--version")
        .output()
        .unwrap();
    assert!(output.status.success());
    let text = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        text.trim(),
        format!("gauntlet-agent {}", env!("CARGO_PKG_VERSION"))
    );
}
