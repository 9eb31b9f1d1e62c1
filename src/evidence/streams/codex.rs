//! Codex (`@openai/codex`, pinned in `workspace/`): `codex exec --json`.
//!
//! Observed with 0.171 against a local scripted server: it speaks only the OpenAI
//! Responses API (`wire_api = "chat"` is rejected), configured as a model provider in
//! `$CODEX_HOME/config.toml`; `-s workspace-write` lets it write its workspace, and
//! the sandbox's network access is switched on so a test can reach the app on loopback.
//!
//! Its stdout is one JSON object per line: `thread.started`, `turn.started`, items
//! (`item.started` / `item.updated` / `item.completed` with an item of type
//! `agent_message`, `command_execution`, `file_change`, `mcp_tool_call`, `web_search`,
//! `reasoning`, `todo_list`, `error`), `turn.completed` with the turn's usage,
//! `turn.failed` and `error`.

use serde_json::{json, Value};
use std::io::BufRead;

use crate::evidence::normalize::{str_at, u64_at, Normalizer, Parsed, ReportedUsage};

use super::AgentKind;

/// Normalize Codex's `exec --json` stream.
pub fn parse_stream(reader: &mut dyn BufRead) -> Parsed {
    super::each_event(AgentKind::Codex, reader, |n, ty, v| match ty {
        "thread.started" => n.session(str_at(&v, "/thread_id")),
        "turn.started" => n.step(),
        "item.started" | "item.updated" | "item.completed" => item(n, &v, ty == "item.completed"),
        "turn.completed" => n.usage(&turn_usage(&v)),
        "turn.failed" => n.error(&format!(
            "turn failed: {}",
            str_at(&v, "/error/message").unwrap_or("")
        )),
        "error" => n.error(str_at(&v, "/message").unwrap_or("")),
        _ => n.unknown(ty, v),
    })
}

/// What a `turn.completed` line says the turn used. Codex states no cost.
fn turn_usage(v: &Value) -> ReportedUsage {
    ReportedUsage {
        input_tokens: u64_at(v, "/usage/input_tokens"),
        output_tokens: u64_at(v, "/usage/output_tokens"),
        cache_read_tokens: u64_at(v, "/usage/cached_input_tokens"),
        cache_write_tokens: u64_at(v, "/usage/cache_write_input_tokens"),
        reasoning_tokens: u64_at(v, "/usage/reasoning_output_tokens"),
        cost_usd: None,
    }
}

fn item(n: &mut Normalizer, v: &Value, completed: bool) {
    let Some(item) = v.get("item") else {
        n.unknown("item.without-item", v.clone());
        return;
    };
    let id = str_at(item, "/id").unwrap_or("");
    let kind = str_at(item, "/type").unwrap_or("");
    let status = str_at(item, "/status").unwrap_or(if completed {
        "completed"
    } else {
        "in_progress"
    });
    match kind {
        "agent_message" if completed => n.text(id, str_at(item, "/text").unwrap_or(""), None),
        "command_execution" => {
            let input = json!({"command": item.get("command").cloned().unwrap_or(Value::Null)});
            n.tool_call(id, kind, &input, None);
            if completed {
                let exit = item.get("exit_code").and_then(Value::as_i64);
                let failed = status == "failed" || exit.is_some_and(|c| c != 0);
                let output = str_at(item, "/aggregated_output").unwrap_or("");
                n.tool_result(id, status, output, failed, None);
            }
        }
        "file_change" => {
            let input = json!({"changes": item.get("changes").cloned().unwrap_or(Value::Null)});
            n.tool_call(id, kind, &input, None);
            if completed {
                let output = item
                    .get("changes")
                    .map(Value::to_string)
                    .unwrap_or_default();
                n.tool_result(id, status, &output, status == "failed", None);
            }
        }
        "mcp_tool_call" => {
            let name = format!(
                "mcp:{}/{}",
                str_at(item, "/server").unwrap_or(""),
                str_at(item, "/tool").unwrap_or("")
            );
            n.tool_call(
                id,
                &name,
                item.get("arguments").unwrap_or(&Value::Null),
                None,
            );
            if completed {
                let error = item.get("error").filter(|e| !e.is_null());
                let output = error
                    .or(item.get("result"))
                    .map(Value::to_string)
                    .unwrap_or_default();
                n.tool_result(
                    id,
                    status,
                    &output,
                    status == "failed" || error.is_some(),
                    None,
                );
            }
        }
        "web_search" => {
            let input = json!({"query": item.get("query").cloned().unwrap_or(Value::Null)});
            n.tool_call(id, kind, &input, None);
            if completed {
                n.tool_result(id, status, "", status == "failed", None);
            }
        }
        "error" if completed => n.error(str_at(item, "/message").unwrap_or("")),
        // Known, carrying nothing the evidence needs (reasoning is the model's; a todo
        // list is the agent's plan); partial agent messages and errors wait for completion.
        "reasoning" | "todo_list" | "agent_message" | "error" => {}
        other => n.unknown(&format!("item:{other}"), v.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::{parse_claims, ClaimsFound};
    const CAPTURED: &str = include_str!("../../../tests/fixtures/streams/codex-0.171.0.jsonl");
    const FAILED: &str =
        include_str!("../../../tests/fixtures/streams/codex-0.171.0-failed-tool.jsonl");

    #[test]
    fn a_captured_run_normalizes() {
        let p = parse_stream(&mut CAPTURED.as_bytes());
        let r = &p.report;
        assert_eq!(
            r.session_id.as_deref(),
            Some("01a22761-bff7-76f3-b70f-a668770a0135")
        );
        assert_eq!(r.steps, 1);
        assert_eq!(r.tool_calls.len(), 1);
        let call = &r.tool_calls[0];
        assert_eq!(call.name, "command_execution");
        assert_eq!(
            call.input["command"],
            "/bin/bash -lc 'echo hello-from-shell; ls'"
        );
        assert_eq!((call.status.as_str(), call.failed), ("completed", false));
        assert_eq!(
            call.output.as_ref().map(|o| o.text.as_str()),
            Some("hello-from-shell\n")
        );
        // The model-metadata warning is an error item: kept as an error.
        assert_eq!(r.errors.len(), 1);
        assert_eq!(r.reported_usage.input_tokens, Some(20));
        assert_eq!(r.reported_usage.output_tokens, Some(10));
        assert_eq!(r.reported_usage.cache_read_tokens, Some(0));
        assert_eq!(r.reported_usage.cost_usd, None);
        let last = p.transcript.final_message.as_deref().unwrap_or("");
        assert!(matches!(parse_claims(last), ClaimsFound::One(_)));
    }

    #[test]
    fn a_failed_command_is_a_failed_call() {
        let p = parse_stream(&mut FAILED.as_bytes());
        let call = &p.report.tool_calls[0];
        assert!(call.failed);
        assert_eq!(call.status, "failed");
        assert_eq!(
            call.output.as_ref().map(|o| o.text.as_str()),
            Some("out\nerr\n")
        );
    }

    #[test]
    fn only_the_last_agent_message_is_final_and_unknowns_are_counted() {
        let input = br#"{"type":"item.completed","item":{"id":"a","type":"agent_message","text":"```gauntlet-claim\n{}\n```"}}
{"type":"item.completed","item":{"id":"b","type":"agent_message","text":"final words"}}
{"type":"item.completed","item":{"id":"c","type":"hologram"}}
{"type":"turn.failed","error":{"message":"stream disconnected"}}
{"type":"session.configured"}
"#;
        let p = parse_stream(&mut &input[..]);
        assert_eq!(p.transcript.final_message.as_deref(), Some("final words"));
        assert_eq!(p.transcript.tool_outputs().count(), 1);
        assert_eq!(p.report.unknown_events.get("item:hologram"), Some(&1));
        assert_eq!(p.report.unknown_events.get("session.configured"), Some(&1));
        assert_eq!(p.report.errors, ["turn failed: stream disconnected"]);
    }
}
