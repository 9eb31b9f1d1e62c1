//! Claude Code (`@anthropic-ai/claude-code`, pinned in `workspace/`):
//! `claude -p --output-format stream-json --verbose`.
//!
//! Observed with 2.1 against a local scripted server: it speaks Anthropic Messages
//! (`POST /v1/messages?beta=true`, streaming) at `ANTHROPIC_BASE_URL`; it is offered
//! the built-in tools `--tools` names (24 without it) and print mode runs only those in
//! `--allowedTools`; `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1`
//! keeps it off every other host.
//!
//! Its stdout is one JSON object per line: `system` (`init` names the version, model
//! and tools), `assistant` (a message or part of one: text and `tool_use` blocks),
//! `user` (the `tool_result` blocks it fed back), and one closing `result` holding the
//! final message, the turn count, total usage and cost.

use serde_json::Value;
use std::collections::BTreeSet;
use std::io::BufRead;

use crate::evidence::normalize::{rfc3339_ms, str_at, u64_at, Normalizer, Parsed, ReportedUsage};

use super::AgentKind;

/// Normalize Claude Code's `stream-json` stream.
pub fn parse_stream(reader: &mut dyn BufRead) -> Parsed {
    let mut messages = BTreeSet::new();
    super::each_event(AgentKind::ClaudeCode, reader, |n, ty, v| {
        n.session(str_at(&v, "/session_id"));
        let at = str_at(&v, "/timestamp").and_then(rfc3339_ms);
        match ty {
            "system" => {
                if str_at(&v, "/subtype") == Some("init") {
                    n.start(str_at(&v, "/claude_code_version"), str_at(&v, "/model"));
                }
            }
            "assistant" => {
                let id = str_at(&v, "/message/id").unwrap_or("").to_owned();
                if messages.insert(id.clone()) {
                    n.step();
                }
                for block in blocks(&v) {
                    match str_at(block, "/type") {
                        Some("text") => n.text(&id, str_at(block, "/text").unwrap_or(""), at),
                        Some("tool_use") => n.tool_call(
                            str_at(block, "/id").unwrap_or(""),
                            str_at(block, "/name").unwrap_or(""),
                            block.get("input").unwrap_or(&Value::Null),
                            at,
                        ),
                        _ => {}
                    }
                }
            }
            "user" => {
                for block in blocks(&v) {
                    if str_at(block, "/type") != Some("tool_result") {
                        continue;
                    }
                    let failed = block.get("is_error").and_then(Value::as_bool) == Some(true);
                    let status = if failed { "error" } else { "completed" };
                    let output = result_text(block.get("content").unwrap_or(&Value::Null));
                    let id = str_at(block, "/tool_use_id").unwrap_or("");
                    n.tool_result(id, status, &output, failed, at);
                }
            }
            "result" => result(n, &v),
            // Partial-message events (only with --include-partial-messages): the whole
            // messages follow as `assistant` lines.
            "stream_event" => {}
            _ => n.unknown(ty, v),
        }
    })
}

fn blocks(v: &Value) -> &[Value] {
    v.pointer("/message/content")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// A tool result's content: a string, or blocks whose texts are joined.
fn result_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .filter_map(|i| str_at(i, "/text"))
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// The closing `result`: the final message, and the totals the agent reports.
fn result(n: &mut Normalizer, v: &Value) {
    let subtype = str_at(v, "/subtype").unwrap_or("");
    let is_error = v.get("is_error").and_then(Value::as_bool) == Some(true);
    match (subtype, str_at(v, "/result")) {
        ("success", Some(text)) if !is_error => n.final_message(text),
        (_, text) => {
            let errors = v
                .get("errors")
                .and_then(Value::as_array)
                .map(|e| {
                    e.iter()
                        .map(|x| {
                            x.as_str()
                                .map(str::to_owned)
                                .unwrap_or_else(|| x.to_string())
                        })
                        .collect::<Vec<_>>()
                        .join("; ")
                })
                .filter(|s| !s.is_empty());
            let detail = errors.or(text.map(str::to_owned)).unwrap_or_default();
            n.error(&format!("result {subtype}: {detail}"));
        }
    }
    n.usage(&ReportedUsage {
        input_tokens: u64_at(v, "/usage/input_tokens"),
        output_tokens: u64_at(v, "/usage/output_tokens"),
        cache_read_tokens: u64_at(v, "/usage/cache_read_input_tokens"),
        cache_write_tokens: u64_at(v, "/usage/cache_creation_input_tokens"),
        reasoning_tokens: None,
        cost_usd: v.get("total_cost_usd").and_then(|c| match c {
            Value::Number(x) => Some(x.clone()),
            _ => None,
        }),
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::{parse_claims, ClaimStatus, ClaimsFound};
    use serde_json::json;
    const CAPTURED: &str =
        include_str!("../../../tests/fixtures/streams/claude-code-2.1.332.jsonl");
    const FAILED: &str =
        include_str!("../../../tests/fixtures/streams/claude-code-2.1.332-failed-tool.jsonl");

    #[test]
    fn a_captured_run_normalizes() {
        let p = parse_stream(&mut CAPTURED.as_bytes());
        let r = &p.report;
        assert_eq!(r.agent_version.as_deref(), Some("2.1.332"));
        assert_eq!(r.model.as_deref(), Some("scripted-model"));
        assert_eq!(
            r.session_id.as_deref(),
            Some("308d9804-70e7-46e3-93c3-f5af49666f6d")
        );
        assert_eq!(r.tool_calls.len(), 1);
        let call = &r.tool_calls[0];
        assert_eq!(
            (call.name.as_str(), call.status.as_str(), call.failed),
            ("Bash", "completed", false)
        );
        assert_eq!(call.input["command"], json!("echo hello-from-shell; ls"));
        assert_eq!(
            call.output.as_ref().map(|o| o.text.as_str()),
            Some("hello-from-shell")
        );
        assert!(call.started_ms.is_some() && call.ended_ms >= call.started_ms);
        assert_eq!(r.reported_usage.input_tokens, Some(20));
        assert_eq!(r.reported_usage.output_tokens, Some(10));
        assert!(r.reported_usage.cost_usd.is_some());
        assert!(r.unknown_events.is_empty() && r.errors.is_empty());
        let last = p.transcript.final_message.as_deref().unwrap_or("");
        assert!(
            matches!(parse_claims(last), ClaimsFound::One(c) if c.status == ClaimStatus::Unverified)
        );
        // The final text appears once: as the final message, not also as an intermediate.
        assert_eq!(r.texts.len(), 1);
    }

    #[test]
    fn a_failed_command_is_a_failed_call() {
        let p = parse_stream(&mut FAILED.as_bytes());
        let call = &p.report.tool_calls[0];
        assert!(call.failed);
        assert_eq!(call.status, "error");
        assert_eq!(
            call.output.as_ref().map(|o| o.text.as_str()),
            Some("Exit code 3\nout\nerr")
        );
        assert_eq!(p.transcript.failed_tool_calls, 1);
    }

    #[test]
    fn an_error_result_has_no_final_message_and_is_recorded() {
        let input = br#"{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"trying"}]}}
{"type":"result","subtype":"error_max_turns","is_error":true,"errors":["too many turns"],"total_cost_usd":0.5}
{"type":"mystery"}
"#;
        let p = parse_stream(&mut &input[..]);
        assert_eq!(p.report.errors, ["result error_max_turns: too many turns"]);
        assert_eq!(p.report.unknown_events.get("mystery"), Some(&1));
        // Pending text with no result text is still the last thing the agent said.
        assert_eq!(p.transcript.final_message.as_deref(), Some("trying"));
    }
}
