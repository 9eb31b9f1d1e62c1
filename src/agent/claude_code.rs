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

use std::collections::BTreeMap;

use super::{cli, session, AdapterError, LaunchContext, SessionTurn};
use crate::evidence::streams::AgentKind;

/// The tools a QA run needs: a shell and the file tools. Print mode refuses any tool
/// not listed, and nobody is there to approve one.
const ALLOWED_TOOLS: &str = "Bash,Read,Write,Edit,Glob,Grep";

/// The Claude Code adapter: the shared launch path with Claude Code's argv and
/// variables.
pub type ClaudeCode = cli::Pinned<ClaudeCodeCli>;

/// What is Claude Code's own in its launch.
pub struct ClaudeCodeCli;

impl ClaudeCodeCli {
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

impl cli::Cli for ClaudeCodeCli {
    const KIND: AgentKind = AgentKind::ClaudeCode;

    /// Claude Code names its sessions itself: the title is not passed.
    fn args(_title: String, prompt: String) -> Vec<String> {
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
    fn session_args(turn: &SessionTurn, prompt: String) -> Vec<String> {
        let mut args = Self::args(String::new(), prompt);
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

    /// The conversation store (`CLAUDE_CONFIG_DIR`) is in the scratch HOME, or for a
    /// session turn in the state directory, so a later session of the same agent can
    /// resume it.
    fn prepare(
        ctx: &LaunchContext<'_>,
        turn: Option<&SessionTurn>,
    ) -> Result<BTreeMap<String, String>, AdapterError> {
        let config_dir = turn
            .map_or(ctx.home, |t| t.state_dir.as_path())
            .join(".claude");
        session::ensure_dir(&config_dir)?;
        let mut env = ClaudeCodeCli::env(ctx);
        env.insert(
            "CLAUDE_CONFIG_DIR".into(),
            config_dir.to_string_lossy().into_owned(),
        );
        Ok(env)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_points_at_the_proxy_origin() {
        let home = std::path::Path::new("/h");
        let env = ClaudeCodeCli::env(&LaunchContext {
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
