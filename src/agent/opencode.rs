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

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::{cli, session, AdapterError, LaunchContext, SessionTurn};
use crate::evidence::streams::AgentKind;

/// The provider id gauntlet's proxy gets in `opencode.json`.
const PROVIDER: &str = "gauntlet";

/// The OpenCode adapter: the shared launch path with OpenCode's argv and config.
pub type OpenCode = cli::Pinned<OpenCodeCli>;

/// What is OpenCode's own in its launch.
pub struct OpenCodeCli;

impl OpenCodeCli {
    /// `opencode.json`: the proxy as an OpenAI-compatible provider and the only model,
    /// every tool allowed (nobody is there to answer a permission prompt), no updates,
    /// no sharing.
    pub fn config(ctx: &LaunchContext<'_>) -> Value {
        let model = format!("{PROVIDER}/{}", ctx.model);
        json!({
            "autoupdate": false,
            "share": "disabled",
            "model": model,
            "small_model": model,
            "provider": {
                PROVIDER: {
                    "npm": "@ai-sdk/openai-compatible",
                    "name": "gauntlet metering proxy",
                    "options": {
                        "baseURL": ctx.proxy_url,
                        // The proxy adds the real key upstream (byok); the agent never holds it.
                        "apiKey": "gauntlet-proxy"
                    },
                    "models": { ctx.model: { "name": ctx.model } }
                }
            },
            "permission": {
                "bash": "allow",
                "edit": "allow",
                "webfetch": "allow",
                "external_directory": "allow"
            }
        })
    }
}

impl cli::Cli for OpenCodeCli {
    const KIND: AgentKind = AgentKind::OpenCode;

    fn args(title: String, prompt: String) -> Vec<String> {
        vec![
            "run".into(),
            "--format".into(),
            "json".into(),
            // A given title spares the side request that would generate one.
            "--title".into(),
            title,
            prompt,
        ]
    }

    /// `run --format json` plus `--title S` on a session's first turn and `--continue`
    /// on later ones (OpenCode assigns its own session ids; the most recent session of
    /// this agent's state directory is the current one).
    fn session_args(turn: &SessionTurn, prompt: String) -> Vec<String> {
        let mut args: Vec<String> = vec!["run".into(), "--format".into(), "json".into()];
        if turn.resume {
            args.push("--continue".into());
        } else {
            args.push("--title".into());
            args.push(format!("gauntlet {}", turn.id));
        }
        args.push(prompt);
        args
    }

    /// `opencode.json` in the scratch HOME, and the variables that point at it. A
    /// session turn keeps its sessions in the state directory, so a later session of
    /// this agent finds them; config and cache stay in the scratch HOME.
    fn prepare(
        ctx: &LaunchContext<'_>,
        turn: Option<&SessionTurn>,
    ) -> Result<BTreeMap<String, String>, AdapterError> {
        let config_dir = ctx.home.join(".config");
        let config = config_dir.join("opencode/opencode.json");
        let text = serde_json::to_string_pretty(&OpenCodeCli::config(ctx)).unwrap_or_default();
        cli::write_config(ctx.home, ".config/opencode/opencode.json", &text)?;
        let home = |sub: &str| ctx.home.join(sub).to_string_lossy().into_owned();
        let mut env = BTreeMap::from([
            (
                "OPENCODE_CONFIG".into(),
                config.to_string_lossy().into_owned(),
            ),
            ("OPENCODE_DISABLE_MODELS_FETCH".into(), "1".into()),
            ("OPENCODE_DISABLE_AUTOUPDATE".into(), "1".into()),
            ("OPENCODE_DISABLE_LSP_DOWNLOAD".into(), "1".into()),
            // At start it installs `@opencode-ai/plugin` into its config dir with npm;
            // offline, npm fails at once from its empty cache instead of reaching the
            // registry, and OpenCode goes on without it.
            ("npm_config_offline".into(), "true".into()),
            ("npm_config_update_notifier".into(), "false".into()),
            (
                "XDG_CONFIG_HOME".into(),
                config_dir.to_string_lossy().into_owned(),
            ),
            ("XDG_DATA_HOME".into(), home(".local/share")),
            ("XDG_CACHE_HOME".into(), home(".cache")),
            ("XDG_STATE_HOME".into(), home(".local/state")),
        ]);
        if let Some(turn) = turn {
            session::ensure_state_dir(turn)?;
            let under = |sub: &str| turn.state_dir.join(sub).to_string_lossy().into_owned();
            env.insert("XDG_DATA_HOME".into(), under(".local/share"));
            env.insert("XDG_STATE_HOME".into(), under(".local/state"));
        }
        Ok(env)
    }

    fn version(probed: String) -> String {
        format!("opencode {probed}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_points_at_the_proxy_and_allows_tools() {
        let home = std::path::Path::new("/h");
        let ctx = LaunchContext {
            home,
            workspace: home,
            proxy_url: "http://127.0.0.1:9/v1",
            model: "m1",
        };
        let c = OpenCodeCli::config(&ctx);
        assert_eq!(c["model"], "gauntlet/m1");
        assert_eq!(
            c["provider"]["gauntlet"]["options"]["baseURL"],
            "http://127.0.0.1:9/v1"
        );
        assert_eq!(c["provider"]["gauntlet"]["models"]["m1"]["name"], "m1");
        assert_eq!(c["permission"]["bash"], "allow");
    }
}
