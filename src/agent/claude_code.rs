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

use std::collections::{BTreeMap, BTreeSet};
use std::io::BufRead;
use std::path::PathBuf;
use std::sync::OnceLock;

use serde_json::Value;

use super::{
    cli, prompt, session, Adapter, AdapterError, Invocation, Launch, LaunchContext, PromptRun,
    RunSpec, SessionTurn,
};
use crate::evidence::normalize::{
    for_each_object, rfc3339_ms, str_at, u64_at, Normalizer, Parsed, ReportedUsage, StreamParser,
};

pub const NAME: &str = "claude-code";

/// The tools a QA run needs: a shell and the file tools. Print mode refuses any tool
/// not listed, and nobody is there to approve one.
const ALLOWED_TOOLS: &str = "Bash,Read,Write,Edit,Glob,Grep";

pub struct ClaudeCode {
    program: PathBuf,
    version: OnceLock<String>,
}

impl ClaudeCode {
    pub fn new(program: PathBuf) -> ClaudeCode {
        ClaudeCode {
            program,
            version: OnceLock::new(),
        }
    }

    fn args(prompt: String) -> Vec<String> {
        vec![
            "-p".into(),
            "--output-format".into(),
            "stream-json".into(),
            "--verbose".into(),
            // `=`: the options take variadic lists that would swallow the prompt.
            // `--tools` is what it is offered; `--allowedTools` only pre-approves.
            format!("--tools={ALLOWED_TOOLS}"),
            format!("--allowedTools={ALLOWED_TOOLS}"),
            "--".into(),
            prompt,
        ]
    }

    /// `-p … --session-id U` on a session's first turn, `-p … --resume U` on later
    /// ones, with `U` derived from the harness's session id (Claude Code wants UUIDs).
    pub fn session_args(turn: &SessionTurn, prompt: String) -> Vec<String> {
        let mut args = ClaudeCode::args(prompt);
        let flag = if turn.resume {
            "--resume"
        } else {
            "--session-id"
        };
        // Before the `--` that precedes the prompt.
        let at = args.len() - 2;
        args.splice(at..at, [flag.to_string(), session::session_uuid(&turn.id)]);
        args
    }

    /// A session turn: the conversation store (`CLAUDE_CONFIG_DIR`) in the state
    /// directory, so a later session of the same agent can resume it.
    pub fn session_launch(
        &self,
        run: &PromptRun,
        turn: &SessionTurn,
        ctx: &LaunchContext<'_>,
    ) -> Result<Launch, AdapterError> {
        cli::ensure_installed(NAME, &self.program)?;
        let config_dir = turn.state_dir.join(".claude");
        session::ensure_dir(&config_dir)?;
        let mut env = ClaudeCode::env(ctx);
        env.insert(
            "CLAUDE_CONFIG_DIR".into(),
            config_dir.to_string_lossy().into_owned(),
        );
        Ok(Launch {
            invocation: Invocation {
                program: self.program.clone(),
                args: ClaudeCode::session_args(turn, run.prompt.clone()),
            },
            env,
        })
    }

    /// The variables that point Claude Code at the proxy and keep it off the network.
    pub fn env(ctx: &LaunchContext<'_>) -> BTreeMap<String, String> {
        let config_dir = ctx.home.join(".claude").to_string_lossy().into_owned();
        BTreeMap::from([
            (
                "ANTHROPIC_BASE_URL".into(),
                cli::origin(ctx.proxy_url).into(),
            ),
            // The proxy adds the real key upstream (byok); the agent never holds it.
            ("ANTHROPIC_API_KEY".into(), "gauntlet-proxy".into()),
            ("ANTHROPIC_MODEL".into(), ctx.model.into()),
            ("ANTHROPIC_SMALL_FAST_MODEL".into(), ctx.model.into()),
            ("CLAUDE_CONFIG_DIR".into(), config_dir),
            (
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC".into(),
                "1".into(),
            ),
            ("DISABLE_AUTOUPDATER".into(), "1".into()),
            ("DISABLE_TELEMETRY".into(), "1".into()),
            ("DISABLE_ERROR_REPORTING".into(), "1".into()),
        ])
    }
}

impl Adapter for ClaudeCode {
    fn name(&self) -> &str {
        NAME
    }

    fn version(&self) -> String {
        self.version
            .get_or_init(|| cli::probe_version(&self.program))
            .clone()
    }

    fn invocation(&self, run: &RunSpec) -> Invocation {
        Invocation {
            program: self.program.clone(),
            args: ClaudeCode::args(prompt::task(run, None)),
        }
    }

    fn launch(&self, run: &RunSpec, ctx: &LaunchContext<'_>) -> Result<Launch, AdapterError> {
        cli::ensure_installed(NAME, &self.program)?;
        session::ensure_dir(&ctx.home.join(".claude"))?;
        let corpus = crate::spec::Corpus::load(&run.graph_file).ok();
        Ok(Launch {
            invocation: Invocation {
                program: self.program.clone(),
                args: ClaudeCode::args(prompt::task(run, corpus.as_ref())),
            },
            env: ClaudeCode::env(ctx),
        })
    }

    fn prompt_invocation(&self, run: &PromptRun) -> Result<Invocation, AdapterError> {
        match &run.session {
            Some(turn) => Ok(Invocation {
                program: self.program.clone(),
                args: ClaudeCode::session_args(turn, run.prompt.clone()),
            }),
            None => Ok(Invocation {
                program: self.program.clone(),
                args: ClaudeCode::args(run.prompt.clone()),
            }),
        }
    }

    fn prompt_launch(
        &self,
        run: &PromptRun,
        ctx: &LaunchContext<'_>,
    ) -> Result<Launch, AdapterError> {
        match &run.session {
            Some(turn) => self.session_launch(run, turn, ctx),
            None => {
                cli::ensure_installed(NAME, &self.program)?;
                session::ensure_dir(&ctx.home.join(".claude"))?;
                Ok(Launch {
                    invocation: self.prompt_invocation(run)?,
                    env: ClaudeCode::env(ctx),
                })
            }
        }
    }

    fn stream_parser(&self) -> StreamParser {
        parse_stream
    }
}

/// Normalize Claude Code's `stream-json` stream.
pub fn parse_stream(reader: &mut dyn BufRead) -> Parsed {
    let mut n = Normalizer::new(NAME);
    let mut messages = BTreeSet::new();
    for_each_object(reader, &mut n, |n, v| {
        let ty = str_at(&v, "/type").unwrap_or("").to_owned();
        n.seen(&ty);
        n.session(str_at(&v, "/session_id"));
        let at = str_at(&v, "/timestamp").and_then(rfc3339_ms);
        match ty.as_str() {
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
            _ => n.unknown(&ty, v),
        }
    });
    n.finish()
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

    const CAPTURED: &str = include_str!("../../tests/fixtures/streams/claude-code-2.1.332.jsonl");
    const FAILED: &str =
        include_str!("../../tests/fixtures/streams/claude-code-2.1.332-failed-tool.jsonl");

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

    #[test]
    fn env_points_at_the_proxy_origin() {
        let home = std::path::Path::new("/h");
        let env = ClaudeCode::env(&LaunchContext {
            home,
            workspace: home,
            proxy_url: "http://127.0.0.1:9/v1",
            model: "m",
        });
        assert_eq!(env["ANTHROPIC_BASE_URL"], "http://127.0.0.1:9");
        assert_eq!(env["CLAUDE_CONFIG_DIR"], "/h/.claude");
        assert_eq!(env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"], "1");
    }
}
