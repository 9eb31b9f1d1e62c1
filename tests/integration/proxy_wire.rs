//! Scripted mode in the OpenAI Responses and Anthropic Messages protocols, over real
//! sockets, with requests shaped like the ones Codex and Claude Code send: each script
//! step maps onto the tool the request offers, tool results advance the script, streamed
//! replies reassemble to the whole ones, and side requests advance nothing.

use crate::support::client;
use gauntlet::proxy::{Proxy, ProxyMode};
use gauntlet::spec::{Script, ScriptStep};
use reqwest::StatusCode;
use serde_json::{json, Value};

const FINAL_TEXT: &str = "checked: the balance sums the account";

fn script() -> Script {
    Script {
        capability: "balance".into(),
        steps: vec![
            ScriptStep::WriteFile {
                path: "t/check.sh".into(),
                content: "exit 0\n".into(),
            },
            ScriptStep::Shell {
                command: "sh t/check.sh".into(),
                expect: None,
            },
            ScriptStep::Final {
                text: FINAL_TEXT.into(),
            },
        ],
    }
}

async fn scripted() -> Proxy {
    Proxy::start(ProxyMode::Scripted {
        script: script(),
        model: "scripted-model".into(),
        latency: std::time::Duration::ZERO,
    })
    .await
    .expect("proxy starts")
}

async fn post(url: &str, body: &Value) -> (StatusCode, String) {
    let response = client()
        .post(url)
        .header("x-api-key", "placeholder")
        .json(body)
        .send()
        .await
        .expect("request sent");
    let status = response.status();
    (status, response.text().await.expect("body"))
}

fn json_of(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not json ({e}): {text}"))
}

/// `(event name, data)` of every server-sent event.
fn events(text: &str) -> Vec<(String, Value)> {
    text.split("\n\n")
        .filter(|e| !e.trim().is_empty())
        .map(|event| {
            let mut name = String::new();
            let mut data = String::new();
            for line in event.lines() {
                if let Some(n) = line.strip_prefix("event: ") {
                    name = n.to_owned();
                } else if let Some(d) = line.strip_prefix("data: ") {
                    data = d.to_owned();
                }
            }
            let data = json_of(&data);
            assert_eq!(data["type"], json!(name), "event name matches its type");
            (name, data)
        })
        .collect()
}

// ---- OpenAI Responses (Codex) ----

/// A Codex-shaped request: instructions, a user message, `exec_command` (string `cmd`)
/// and a custom `apply_patch`, and `done` completed tool calls with their outputs.
fn codex_request(done: usize, stream: bool) -> Value {
    let mut input = vec![json!({"type": "message", "role": "user",
        "content": [{"type": "input_text", "text": "verify balance"}]})];
    for k in 0..done {
        input.push(
            json!({"type": "function_call", "call_id": format!("call_{k}"),
            "name": "exec_command", "arguments": "{}"}),
        );
        input.push(
            json!({"type": "function_call_output", "call_id": format!("call_{k}"),
            "output": format!("ran {k}")}),
        );
    }
    json!({
        "model": "gpt-5-codex", "instructions": "You are Codex, a coding agent. ".repeat(200),
        "input": input, "stream": stream, "store": false,
        "tools": [
            {"type": "function", "name": "exec_command", "description": "run a command",
             "parameters": {"type": "object", "properties": {"cmd": {"type": "string"},
                "workdir": {"type": "string"}}, "required": ["cmd"]}},
            {"type": "custom", "name": "apply_patch", "format": {"type": "grammar"}}
        ]
    })
}

/// What a Responses reply said: its one output item without its id, and its usage.
fn responses_whole(body: &Value) -> (Value, Value) {
    assert_eq!(body["object"], "response");
    assert_eq!(body["status"], "completed");
    let output = body["output"].as_array().expect("output items");
    assert_eq!(output.len(), 1);
    let mut item = output[0].clone();
    item.as_object_mut().map(|o| o.remove("id"));
    (item, body["usage"].clone())
}

/// The same from a stream, rebuilt from deltas the way a client does, and checked
/// against the `output_item.done` item and the `response.completed` response.
fn responses_streamed(text: &str) -> (Value, Value) {
    let events = events(text);
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names[..2], ["response.created", "response.in_progress"]);
    assert_eq!(names.last(), Some(&"response.completed"));
    let seqs: Vec<u64> = events
        .iter()
        .map(|(_, d)| d["sequence_number"].as_u64().expect("sequence number"))
        .collect();
    assert_eq!(seqs, (0..events.len() as u64).collect::<Vec<_>>());
    let (mut text_out, mut args) = (String::new(), String::new());
    let mut done_item = Value::Null;
    for (name, data) in &events {
        match name.as_str() {
            "response.output_text.delta" => text_out.push_str(data["delta"].as_str().unwrap_or("")),
            "response.function_call_arguments.delta" => {
                args.push_str(data["delta"].as_str().unwrap_or(""))
            }
            "response.output_item.done" => done_item = data["item"].clone(),
            _ => {}
        }
    }
    match done_item["type"].as_str() {
        Some("message") => assert_eq!(done_item["content"][0]["text"], json!(text_out)),
        Some("function_call") => assert_eq!(done_item["arguments"], json!(args)),
        other => panic!("unexpected item type {other:?}"),
    }
    let completed = &events.last().expect("events").1["response"];
    let (item, usage) = responses_whole(completed);
    done_item.as_object_mut().map(|o| o.remove("id"));
    assert_eq!(item, done_item);
    (item, usage)
}

#[tokio::test]
async fn responses_walk_a_flow_with_function_calls_streamed_or_not() {
    let proxy = scripted().await;
    let url = format!("{}/responses", proxy.base_url());
    let mut expected = Vec::new();
    for done in 0..3 {
        let (status, whole) = post(&url, &codex_request(done, false)).await;
        assert_eq!(status, StatusCode::OK);
        let whole = responses_whole(&json_of(&whole));
        let (status, streamed) = post(&url, &codex_request(done, true)).await;
        assert_eq!(status, StatusCode::OK);
        assert!(streamed.len() > 200, "a stream of several events");
        assert_eq!(responses_streamed(&streamed), whole, "step {done}");
        expected.push(whole.0);
    }
    // Step 0: no write tool, so the file is written through the shell tool.
    assert_eq!(expected[0]["type"], "function_call");
    assert_eq!(expected[0]["name"], "exec_command");
    assert_eq!(expected[0]["call_id"], "call_0");
    let args = json_of(expected[0]["arguments"].as_str().expect("arguments string"));
    assert!(args["cmd"]
        .as_str()
        .is_some_and(|c| c.starts_with("mkdir -p -- t && cat > t/check.sh")));
    assert_eq!(
        (
            &expected[1]["call_id"],
            json_of(expected[1]["arguments"].as_str().unwrap_or("null"))
        ),
        (&json!("call_1"), json!({"cmd": "sh t/check.sh"}))
    );
    assert_eq!(expected[2]["type"], "message");
    assert_eq!(expected[2]["content"][0]["text"], FINAL_TEXT);

    let entries = proxy.shutdown().await;
    assert_eq!(entries.len(), 6);
    for pair in entries.chunks(2) {
        assert_eq!(pair[0].protocol, "responses");
        assert_eq!(pair[0].path, "/v1/responses");
        assert_eq!((pair[0].stream, pair[1].stream), (false, true));
        assert_eq!(pair[0].input_tokens, pair[1].input_tokens);
        assert_eq!(pair[0].output_tokens, pair[1].output_tokens);
        assert!(
            pair[0].input_tokens.is_some_and(|t| t > 1000),
            "instructions count"
        );
        assert_eq!(pair[0].model.as_deref(), Some("gpt-5-codex"));
    }
    assert_eq!(
        entries[4].reply.as_deref(),
        Some("final (after 2 tool results)")
    );
}

// ---- Anthropic Messages (Claude Code) ----

fn bash_tool() -> Value {
    json!({"name": "Bash", "description": "Executes a bash command",
        "input_schema": {"type": "object", "properties": {
            "command": {"type": "string"}, "timeout": {"type": "number"},
            "description": {"type": "string"}}, "required": ["command"]}})
}

/// A Claude-Code-shaped request: system blocks, Bash and Read tools, and `done`
/// tool_use/tool_result rounds.
fn claude_request(done: usize, stream: bool) -> Value {
    let mut messages = vec![json!({"role": "user", "content": [
        {"type": "text", "text": "verify balance"}]})];
    for k in 0..done {
        let id = format!("toolu_call_{k}");
        messages.push(json!({"role": "assistant", "content": [
            {"type": "tool_use", "id": id, "name": "Bash", "input": {"command": "x"}}]}));
        messages.push(json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": id, "content": format!("ran {k}")}]}));
    }
    json!({
        "model": "claude-sonnet-4-5", "max_tokens": 32000, "stream": stream,
        "system": [
            {"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude."},
            {"type": "text", "text": "You help with software engineering tasks. ".repeat(150)}
        ],
        "messages": messages,
        "tools": [bash_tool(), {"name": "Read", "input_schema": {"type": "object",
            "properties": {"file_path": {"type": "string"}}, "required": ["file_path"]}}]
    })
}

/// What a Messages reply said: its one content block, stop reason, and usage.
fn message_whole(body: &Value) -> (Value, Value, Value) {
    assert_eq!(body["type"], "message");
    assert_eq!(body["role"], "assistant");
    let content = body["content"].as_array().expect("content blocks");
    assert_eq!(content.len(), 1);
    (
        content[0].clone(),
        body["stop_reason"].clone(),
        body["usage"].clone(),
    )
}

/// The same from a stream, rebuilt the way the Anthropic SDK does it.
fn message_streamed(text: &str) -> (Value, Value, Value) {
    let events = events(text);
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names.first(), Some(&"message_start"));
    assert_eq!(names[names.len() - 2..], ["message_delta", "message_stop"]);
    let mut usage = events[0].1["message"]["usage"].clone();
    let mut block = Value::Null;
    let mut partial = String::new();
    let mut stop = Value::Null;
    for (name, data) in &events {
        match name.as_str() {
            "content_block_start" => block = data["content_block"].clone(),
            "content_block_delta" => match data["delta"]["type"].as_str() {
                Some("text_delta") => {
                    let so_far = block["text"].as_str().unwrap_or("").to_owned();
                    block["text"] = json!(so_far + data["delta"]["text"].as_str().unwrap_or(""));
                }
                Some("input_json_delta") => {
                    partial.push_str(data["delta"]["partial_json"].as_str().unwrap_or(""))
                }
                other => panic!("unexpected delta {other:?}"),
            },
            "content_block_stop" if !partial.is_empty() => block["input"] = json_of(&partial),
            "message_delta" => {
                stop = data["delta"]["stop_reason"].clone();
                usage["output_tokens"] = data["usage"]["output_tokens"].clone();
            }
            _ => {}
        }
    }
    (block, stop, usage)
}

#[tokio::test]
async fn messages_walk_a_flow_with_tool_use_blocks_streamed_or_not() {
    let proxy = scripted().await;
    // Claude Code calls `${ANTHROPIC_BASE_URL}/v1/messages?beta=true`.
    let url = format!("{}/v1/messages?beta=true", proxy.root_url());
    let mut said = Vec::new();
    for done in 0..3 {
        let (status, whole) = post(&url, &claude_request(done, false)).await;
        assert_eq!(status, StatusCode::OK);
        let whole = message_whole(&json_of(&whole));
        let (status, streamed) = post(&url, &claude_request(done, true)).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(message_streamed(&streamed), whole, "step {done}");
        said.push(whole);
    }
    let (block, stop, _) = &said[0];
    assert_eq!(
        (&block["type"], stop),
        (&json!("tool_use"), &json!("tool_use"))
    );
    assert_eq!(
        (&block["name"], &block["id"]),
        (&json!("Bash"), &json!("toolu_call_0"))
    );
    assert!(block["input"]["command"]
        .as_str()
        .is_some_and(|c| c.contains("cat > t/check.sh")));
    let (block, _, _) = &said[1];
    assert_eq!(block["input"], json!({"command": "sh t/check.sh"}));
    let (block, stop, _) = &said[2];
    assert_eq!(block, &json!({"type": "text", "text": FINAL_TEXT}));
    assert_eq!(stop, "end_turn");

    let entries = proxy.shutdown().await;
    assert_eq!(entries.len(), 6);
    for (i, entry) in entries.iter().enumerate() {
        assert_eq!(entry.protocol, "messages");
        assert_eq!(entry.path, "/v1/messages");
        assert_eq!(entry.stream, i % 2 == 1);
        let (_, _, usage) = &said[i / 2];
        assert_eq!(entry.input_tokens, usage["input_tokens"].as_u64());
        assert_eq!(entry.output_tokens, usage["output_tokens"].as_u64());
    }
}

#[tokio::test]
async fn claude_code_side_requests_probes_and_token_counts_advance_nothing() {
    let proxy = scripted().await;
    let root = proxy.root_url();
    let head = client().head(&root).send().await.expect("HEAD /");
    assert_eq!(head.status(), StatusCode::OK);

    // A title request that still offers Bash: text, not the script's next step.
    let mut title = claude_request(0, false);
    title["system"] = json!([{"type": "text",
        "text": "Generate a concise, sentence-case title (3-7 words) for this coding session."}]);
    let (_, body) = post(&format!("{root}/v1/messages?beta=true"), &title).await;
    let (block, stop, _) = message_whole(&json_of(&body));
    assert_eq!(
        (block, stop),
        (json!({"type": "text", "text": "ok"}), json!("end_turn"))
    );
    // A request whose tools cannot run the next step (no shell tool): text too.
    let mut no_shell = claude_request(1, true);
    no_shell["tools"] = json!([{"name": "WebFetch", "input_schema": {"type": "object"}}]);
    let (_, body) = post(&format!("{root}/v1/messages"), &no_shell).await;
    let (block, _, _) = message_streamed(&body);
    assert_eq!(block, json!({"type": "text", "text": "ok"}));
    // The main request still gets step 0.
    let (_, body) = post(&format!("{root}/v1/messages"), &claude_request(0, false)).await;
    assert_eq!(message_whole(&json_of(&body)).0["name"], "Bash");

    // count_tokens answers what a call with the same body is metered at; not metered.
    let (status, counted) = post(
        &format!("{root}/v1/messages/count_tokens?beta=true"),
        &claude_request(2, false),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let counted = json_of(&counted)["input_tokens"].as_u64();
    let (_, _) = post(&format!("{root}/v1/messages"), &claude_request(2, false)).await;

    let entries = proxy.shutdown().await;
    assert_eq!(
        entries.len(),
        4,
        "HEAD and count_tokens are not model calls"
    );
    let replies: Vec<&str> = entries.iter().filter_map(|e| e.reply.as_deref()).collect();
    assert_eq!(
        replies[..2],
        [
            "side request: the system prompt asks for a title",
            replies[1]
        ]
    );
    assert!(replies[1].starts_with("side request") && replies[1].contains("WebFetch"));
    assert_eq!(replies[2], "step 0 as `Bash`");
    assert_eq!(entries[3].input_tokens, counted);
}

#[tokio::test]
async fn malformed_bodies_are_refused_in_each_protocols_shape_and_recorded() {
    let proxy = scripted().await;
    let base = proxy.base_url();
    let send = |path: &'static str, body: &'static str| {
        let url = format!("{base}/{path}");
        async move {
            let response = client().post(url).body(body).send().await.expect("sent");
            (
                response.status(),
                json_of(&response.text().await.expect("body")),
            )
        }
    };
    let (status, error) = send("messages", "{\"messages\": [").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(error["type"], "error");
    assert_eq!(error["error"]["type"], "invalid_request_error");
    assert!(error["error"]["message"]
        .as_str()
        .is_some_and(|m| m.contains("not json")));
    let (status, error) = send("responses", "{\"model\": \"m\"}").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(error["error"]["type"], "invalid_request_error");
    assert!(error["error"]["message"]
        .as_str()
        .is_some_and(|m| m.contains("`input`")));
    let (status, _) = send("messages", "[1, 2]").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    // A good call between bad ones is served and metered as usual.
    let (status, _) = post(&format!("{base}/responses"), &codex_request(0, false)).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = send("responses", "\u{0}garbage").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);

    let entries = proxy.shutdown().await;
    let seen: Vec<(&str, u16)> = entries
        .iter()
        .map(|e| (e.protocol.as_str(), e.status))
        .collect();
    assert_eq!(
        seen,
        [
            ("messages", 400),
            ("responses", 400),
            ("messages", 400),
            ("responses", 200),
            ("responses", 400)
        ]
    );
    // Each refusal names its cause and quotes what was received.
    let errors: Vec<&str> = entries.iter().filter_map(|e| e.error.as_deref()).collect();
    assert_eq!(errors.len(), 4);
    assert!(errors[0].contains("not json") && errors[0].contains("{\\\"messages\\\": ["));
    assert!(errors[2].contains("not a json object"));
    assert!(entries[3].input_tokens.is_some() && entries[3].error.is_none());
}
