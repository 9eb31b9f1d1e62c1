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

use std::collections::BTreeMap;
use std::path::Path;

use super::{cli, AdapterError, LaunchContext, SessionTurn};
use crate::evidence::streams::AgentKind;

/// The provider id gauntlet's proxy gets in `config.toml`.
const PROVIDER: &str = "gauntlet";

/// The Codex adapter: the shared launch path with Codex's argv and `CODEX_HOME`.
pub type Codex = cli::Pinned<CodexCli>;

/// What is Codex's own in its launch.
pub struct CodexCli;

impl CodexCli {
    /// HOME for Codex: its `config.toml` (in the state directory for a session turn),
    /// and a `.bash_profile`. Codex runs every shell command as a login shell (`bash
    /// -lc`), and Debian's `/etc/profile` resets PATH: without the profile, `gauntlet`
    /// (a browser test's `gauntlet flow run`) is not found in the agent's own run, only
    /// in the harness's gate.
    fn prepare_home(state_dir: Option<&Path>, ctx: &LaunchContext<'_>) -> Result<(), AdapterError> {
        let root = state_dir.unwrap_or(ctx.home);
        cli::write_config(
            root,
            ".codex/config.toml",
            &CodexCli::config(ctx, state_dir),
        )?;
        let bin = crate::binaries::helper_dir().to_string_lossy().into_owned();
        let profile = format!(
            "# gauntlet: /etc/profile resets PATH for login shells; gauntlet's binaries first again.\nexport PATH={}:\"$PATH\"\n",
            shell_words::quote(&bin)
        );
        cli::write_config(ctx.home, ".bash_profile", &profile)
    }

    /// `config.toml`: the proxy as the only model provider, Responses wire protocol,
    /// no approvals (nobody is there to give them), network inside the sandbox so a
    /// test can reach the app on 127.0.0.1, and the session's state directory writable
    /// inside Codex's own sandbox as well as the workspace (memory kept as files there
    /// must survive the session; without it every write there is "Read-only file system").
    pub fn config(ctx: &LaunchContext<'_>, state_dir: Option<&Path>) -> String {
        let mut provider = toml::Table::new();
        provider.insert("name".into(), "gauntlet metering proxy".into());
        provider.insert("base_url".into(), ctx.proxy_url.into());
        // The harness sets OPENAI_API_KEY to a placeholder; the proxy adds the real key
        // upstream (byok), so the agent never holds it.
        provider.insert("env_key".into(), "OPENAI_API_KEY".into());
        provider.insert("wire_api".into(), "responses".into());
        let mut providers = toml::Table::new();
        providers.insert(PROVIDER.into(), provider.into());
        let mut sandbox = toml::Table::new();
        sandbox.insert("network_access".into(), true.into());
        if let Some(dir) = state_dir {
            let roots = vec![toml::Value::from(dir.to_string_lossy().into_owned())];
            sandbox.insert("writable_roots".into(), roots.into());
        }
        let mut root = toml::Table::new();
        root.insert("model".into(), ctx.model.into());
        root.insert("model_provider".into(), PROVIDER.into());
        root.insert("approval_policy".into(), "never".into());
        root.insert("sandbox_mode".into(), "workspace-write".into());
        root.insert("sandbox_workspace_write".into(), sandbox.into());
        root.insert("model_providers".into(), providers.into());
        root.to_string()
    }
}

impl cli::Cli for CodexCli {
    const KIND: AgentKind = AgentKind::Codex;

    /// Codex names its sessions itself: the title is not passed.
    fn args(_title: String, prompt: String) -> Vec<String> {
        vec![
            "exec".into(),
            "--json".into(),
            // The workspace is a plain directory, not a git checkout.
            "--skip-git-repo-check".into(),
            "-s".into(),
            "workspace-write".into(),
            "--".into(),
            prompt,
        ]
    }

    /// `exec --json …` on a session's first turn; `exec resume --last --all --json …`
    /// on later ones (Codex assigns its own ids; the newest session of this agent's
    /// `CODEX_HOME` is the current one; `--all` because the workspace may differ between
    /// sessions). The sandbox comes from `config.toml`, which `resume` also reads.
    fn session_args(turn: &SessionTurn, prompt: String) -> Vec<String> {
        if !turn.resume {
            return Self::args(String::new(), prompt);
        }
        vec![
            "exec".into(),
            "resume".into(),
            "--last".into(),
            "--all".into(),
            "--json".into(),
            "--skip-git-repo-check".into(),
            "--".into(),
            prompt,
        ]
    }

    /// `CODEX_HOME` (config and session store): in the scratch HOME, or for a session
    /// turn in the state directory. Rewritten every turn: the proxy's port differs
    /// from trial to trial.
    fn prepare(
        ctx: &LaunchContext<'_>,
        turn: Option<&SessionTurn>,
    ) -> Result<BTreeMap<String, String>, AdapterError> {
        let state_dir = turn.map(|t| t.state_dir.as_path());
        let codex_home = state_dir.unwrap_or(ctx.home).join(".codex");
        CodexCli::prepare_home(state_dir, ctx)?;
        Ok(BTreeMap::from([(
            "CODEX_HOME".into(),
            codex_home.to_string_lossy().into_owned(),
        )]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_uses_responses_and_the_proxy() {
        let home = std::path::Path::new("/h");
        let ctx = LaunchContext {
            home,
            workspace: home,
            proxy_url: "http://127.0.0.1:9/v1",
            model: "m \"quoted\"",
        };
        let text = CodexCli::config(&ctx, None);
        let parsed: toml::Table = text.parse().unwrap_or_else(|e| panic!("{e}: {text}"));
        assert_eq!(parsed["model"].as_str(), Some("m \"quoted\""));
        let p = &parsed["model_providers"]["gauntlet"];
        assert_eq!(p["wire_api"].as_str(), Some("responses"));
        assert_eq!(p["base_url"].as_str(), Some("http://127.0.0.1:9/v1"));
        assert_eq!(
            parsed["sandbox_workspace_write"]["network_access"].as_bool(),
            Some(true)
        );
        assert!(parsed["sandbox_workspace_write"]
            .get("writable_roots")
            .is_none());
        let session: toml::Table = CodexCli::config(&ctx, Some(Path::new("/state")))
            .parse()
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            session["sandbox_workspace_write"]["writable_roots"]
                .as_array()
                .map(|a| a.iter().filter_map(|v| v.as_str()).collect::<Vec<_>>()),
            Some(vec!["/state"])
        );
    }
}
