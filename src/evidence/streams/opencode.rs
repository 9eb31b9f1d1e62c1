//! OpenCode (`opencode-ai`, pinned in `workspace/`): `opencode run --format json`.
//!
//! Observed with 1.18 against the scripted proxy: it speaks Chat Completions with SSE
//! through the `@ai-sdk/openai-compatible` provider configured in `opencode.json`;
//! `OPENCODE_DISABLE_MODELS_FETCH=1` stops it fetching the models catalogue; `--title`
//! skips the side request that would name the session. It retries a refused connection
//! forever and prints nothing meanwhile, so the harness's deadline is what ends it.
//! At start it tries to npm-install its plugin package into its config directory;
//! npm is told to stay offline, so that fails fast and nothing leaves the machine.
//!
//! Its stdout is one JSON object per line: `step_start`, `tool_use` (the whole call,
//! with its state, once it ended), `text` (a finished text part of a message),
//! `step_finish` (tokens and cost of that step), `error`.

use serde_json::Value;
use std::io::BufRead;

use crate::evidence::normalize::{str_at, u64_at, Normalizer, Parsed, ReportedUsage};

use super::AgentKind;

/// Normalize OpenCode's `--format json` stream.
pub fn parse_stream(reader: &mut dyn BufRead) -> Parsed {
    super::each_event(AgentKind::OpenCode, reader, |n, ty, v| {
        n.session(str_at(&v, "/sessionID"));
        let at = v.get("timestamp").and_then(Value::as_i64);
        match ty {
            "step_start" => n.step(),
            "tool_use" => tool_use(n, &v),
            "text" => {
                let key = str_at(&v, "/part/messageID").unwrap_or("");
                let text = str_at(&v, "/part/text").unwrap_or("");
                let at = v.pointer("/part/time/end").and_then(Value::as_i64).or(at);
                n.text(key, text, at);
            }
            "step_finish" => n.usage(&ReportedUsage {
                input_tokens: u64_at(&v, "/part/tokens/input"),
                output_tokens: u64_at(&v, "/part/tokens/output"),
                cache_read_tokens: u64_at(&v, "/part/tokens/cache/read"),
                cache_write_tokens: u64_at(&v, "/part/tokens/cache/write"),
                reasoning_tokens: u64_at(&v, "/part/tokens/reasoning"),
                cost_usd: v.pointer("/part/cost").and_then(number),
            }),
            "error" => {
                let message = str_at(&v, "/error/data/message")
                    .or_else(|| str_at(&v, "/error/message"))
                    .map(str::to_owned)
                    .unwrap_or_else(|| v.get("error").map(Value::to_string).unwrap_or_default());
                let name = str_at(&v, "/error/name").unwrap_or("error");
                n.error(&format!("{name}: {message}"));
            }
            // Reasoning parts are the model's, not a message to anyone: counted only.
            "reasoning" => {}
            _ => n.unknown(ty, v),
        }
    })
}

/// A `tool_use` line carries the whole call once it ended: input, output, status, times.
fn tool_use(n: &mut Normalizer, v: &Value) {
    let id = str_at(v, "/part/callID")
        .or_else(|| str_at(v, "/part/id"))
        .unwrap_or("");
    let tool = str_at(v, "/part/tool").unwrap_or("");
    let state = v.pointer("/part/state").cloned().unwrap_or(Value::Null);
    let input = state.get("input").cloned().unwrap_or(Value::Null);
    let started = state.pointer("/time/start").and_then(Value::as_i64);
    let ended = state.pointer("/time/end").and_then(Value::as_i64);
    n.tool_call(id, tool, &input, started);
    n.tool_meta(
        id,
        state.get("title").and_then(Value::as_str),
        state.get("metadata"),
    );
    let status = state.get("status").and_then(Value::as_str).unwrap_or("");
    if !matches!(status, "completed" | "error") {
        return;
    }
    // The bash tool reports a command's non-zero exit as a completed call with the exit
    // code in its metadata; that call failed all the same.
    let exit = state.pointer("/metadata/exit").and_then(Value::as_i64);
    let failed = status == "error" || exit.is_some_and(|c| c != 0);
    let output = state
        .get("output")
        .or_else(|| state.get("error"))
        .map(|o| match o {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .unwrap_or_default();
    let status = match (status, exit) {
        ("completed", Some(c)) if c != 0 => format!("completed (exit {c})"),
        _ => status.to_owned(),
    };
    n.tool_result(id, &status, &output, failed, ended);
}

fn number(v: &Value) -> Option<serde_json::Number> {
    match v {
        Value::Number(n) => Some(n.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::{parse_claims, ClaimsFound};
    use serde_json::json;
    const CAPTURED: &str = include_str!("../../../tests/fixtures/streams/opencode-1.18.33.jsonl");

    #[test]
    fn a_captured_run_normalizes() {
        let p = parse_stream(&mut CAPTURED.as_bytes());
        let r = &p.report;
        assert_eq!(r.format, "opencode");
        assert_eq!(
            r.session_id.as_deref(),
            Some("ses_dd89ed626ffeREMWYYiLM40zkM")
        );
        assert_eq!(r.steps, 3);
        let names: Vec<&str> = r.tool_calls.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["write", "bash"]);
        // The captured check ran against a wrong URL: exit 1 in a "completed" call.
        let bash = &r.tool_calls[1];
        assert!(bash.failed);
        assert_eq!(bash.status, "completed (exit 1)");
        assert_eq!(
            bash.input,
            json!({"command": "cd health-test && sh check.sh"})
        );
        assert_eq!(
            bash.output.as_ref().map(|o| o.text.as_str()),
            Some("FAIL: cannot reach http://127.0.0.1:127/health\n")
        );
        assert_eq!(
            (bash.started_ms, bash.ended_ms),
            (Some(1795957016925), Some(1795957017677))
        );
        assert!(!r.tool_calls[0].failed);
        assert_eq!(r.failed_tool_calls, 1);
        assert_eq!(r.reported_usage.input_tokens, Some(2446 + 2781 + 2849));
        assert_eq!(r.reported_usage.output_tokens, Some(251 + 11 + 76));
        assert_eq!(
            r.reported_usage.cost_usd.as_ref().and_then(|c| c.as_f64()),
            Some(0.0)
        );
        assert!(r.unknown_events.is_empty() && r.garbage_lines == 0);
        let last = p.transcript.final_message.as_deref().unwrap_or("");
        assert!(matches!(parse_claims(last), ClaimsFound::One(c) if c.capability == "health"));
    }

    #[test]
    fn errors_unknown_types_and_tool_errors_are_kept() {
        let input = br#"{"type":"tool_use","timestamp":1,"part":{"tool":"read","callID":"c","state":{"status":"error","input":{"filePath":"x"},"error":"no such file","time":{"start":1,"end":2}}}}
{"type":"brand_new","x":1}
{"type":"error","error":{"name":"APIError","data":{"message":"connection refused"}}}
{"type":"text","part":{"messageID":"m","text":"```gauntlet-claim\n{}\n```"}}
{"type":"tool_use","part":{"tool":"bash","callID":"d","state":{"status":"running","input":{}}}}
"#;
        let p = parse_stream(&mut &input[..]);
        assert_eq!(p.report.errors, ["APIError: connection refused"]);
        assert_eq!(p.report.unknown_events.get("brand_new"), Some(&1));
        assert_eq!(p.transcript.unknown_events.len(), 1);
        assert!(p.report.tool_calls[0].failed);
        assert_eq!(p.report.tool_calls[1].status, "pending");
        // Text followed by a tool call is not the final message.
        assert_eq!(p.transcript.final_message, None);
    }
}
