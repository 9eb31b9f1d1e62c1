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
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde_json::{json, Value};

use super::{
    cli, prompt, Adapter, AdapterError, Invocation, Launch, LaunchContext, PromptRun, RunSpec,
    SessionTurn,
};
use crate::evidence::normalize::{
    for_each_object, str_at, u64_at, Normalizer, Parsed, ReportedUsage, StreamParser,
};

pub const NAME: &str = "codex";
/// The provider id gauntlet's proxy gets in `config.toml`.
const PROVIDER: &str = "gauntlet";

pub struct Codex {
    program: PathBuf,
    version: OnceLock<String>,
}

impl Codex {
    pub fn new(program: PathBuf) -> Codex {
        Codex {
            program,
            version: OnceLock::new(),
        }
    }

    fn args(prompt: String) -> Vec<String> {
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
    pub fn session_args(turn: &SessionTurn, prompt: String) -> Vec<String> {
        if !turn.resume {
            return Codex::args(prompt);
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

    /// A session turn: `CODEX_HOME` (config and session store) in the state directory.
    pub fn session_launch(
        &self,
        run: &PromptRun,
        turn: &SessionTurn,
        ctx: &LaunchContext<'_>,
    ) -> Result<Launch, AdapterError> {
        cli::ensure_installed(NAME, &self.program)?;
        let codex_home = turn.state_dir.join(".codex");
        // Rewritten every turn: the proxy's port differs from trial to trial.
        Codex::prepare_home(&turn.state_dir, ctx)?;
        Ok(Launch {
            invocation: Invocation {
                program: self.program.clone(),
                args: Codex::session_args(turn, run.prompt.clone()),
            },
            env: BTreeMap::from([(
                "CODEX_HOME".into(),
                codex_home.to_string_lossy().into_owned(),
            )]),
        })
    }

    /// HOME for Codex: its `config.toml`, and a `.bash_profile`. Codex runs every shell
    /// command as a login shell (`bash -lc`), and Debian's `/etc/profile` resets PATH:
    /// without the profile, `gauntlet` (a browser test's `gauntlet flow run`) is not
    /// found in the agent's own run, only in the harness's gate.
    fn prepare_home(root: &Path, ctx: &LaunchContext<'_>) -> Result<(), AdapterError> {
        cli::write_config(root, ".codex/config.toml", &Codex::config(ctx))?;
        let bin = crate::binaries::bin_dir().to_string_lossy().into_owned();
        let profile = format!(
            "# gauntlet: /etc/profile resets PATH for login shells; gauntlet's binaries first again.\nexport PATH={}:\"$PATH\"\n",
            shell_words::quote(&bin)
        );
        cli::write_config(ctx.home, ".bash_profile", &profile)
    }

    /// `config.toml`: the proxy as the only model provider, Responses wire protocol,
    /// no approvals (nobody is there to give them), network inside the sandbox so a
    /// test can reach the app on 127.0.0.1.
    pub fn config(ctx: &LaunchContext<'_>) -> String {
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

impl Adapter for Codex {
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
            args: Codex::args(prompt::task(run, None)),
        }
    }

    fn launch(&self, run: &RunSpec, ctx: &LaunchContext<'_>) -> Result<Launch, AdapterError> {
        cli::ensure_installed(NAME, &self.program)?;
        let codex_home = ctx.home.join(".codex");
        Codex::prepare_home(ctx.home, ctx)?;
        let corpus = crate::spec::Corpus::load(&run.graph_file).ok();
        Ok(Launch {
            invocation: Invocation {
                program: self.program.clone(),
                args: Codex::args(prompt::task(run, corpus.as_ref())),
            },
            env: BTreeMap::from([(
                "CODEX_HOME".into(),
                codex_home.to_string_lossy().into_owned(),
            )]),
        })
    }

    fn prompt_invocation(&self, run: &PromptRun) -> Result<Invocation, AdapterError> {
        match &run.session {
            Some(turn) => Ok(Invocation {
                program: self.program.clone(),
                args: Codex::session_args(turn, run.prompt.clone()),
            }),
            None => Ok(Invocation {
                program: self.program.clone(),
                args: Codex::args(run.prompt.clone()),
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
                let codex_home = ctx.home.join(".codex");
                Codex::prepare_home(ctx.home, ctx)?;
                Ok(Launch {
                    invocation: self.prompt_invocation(run)?,
                    env: BTreeMap::from([(
                        "CODEX_HOME".into(),
                        codex_home.to_string_lossy().into_owned(),
                    )]),
                })
            }
        }
    }

    fn stream_parser(&self) -> StreamParser {
        parse_stream
    }
}

/// Normalize Codex's `exec --json` stream.
pub fn parse_stream(reader: &mut dyn BufRead) -> Parsed {
    let mut n = Normalizer::new(NAME);
    for_each_object(reader, &mut n, |n, v| {
        let ty = str_at(&v, "/type").unwrap_or("").to_owned();
        n.seen(&ty);
        match ty.as_str() {
            "thread.started" => n.session(str_at(&v, "/thread_id")),
            "turn.started" => n.step(),
            "item.started" | "item.updated" | "item.completed" => {
                item(n, &v, ty == "item.completed")
            }
            "turn.completed" => n.usage(&ReportedUsage {
                input_tokens: u64_at(&v, "/usage/input_tokens"),
                output_tokens: u64_at(&v, "/usage/output_tokens"),
                cache_read_tokens: u64_at(&v, "/usage/cached_input_tokens"),
                cache_write_tokens: u64_at(&v, "/usage/cache_write_input_tokens"),
                reasoning_tokens: u64_at(&v, "/usage/reasoning_output_tokens"),
                cost_usd: None,
            }),
            "turn.failed" => n.error(&format!(
                "turn failed: {}",
                str_at(&v, "/error/message").unwrap_or("")
            )),
            "error" => n.error(str_at(&v, "/message").unwrap_or("")),
            _ => n.unknown(&ty, v),
        }
    });
    n.finish()
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

    const CAPTURED: &str = include_str!("../../tests/fixtures/streams/codex-0.171.0.jsonl");
    const FAILED: &str =
        include_str!("../../tests/fixtures/streams/codex-0.171.0-failed-tool.jsonl");

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

    #[test]
    fn the_config_uses_responses_and_the_proxy() {
        let home = std::path::Path::new("/h");
        let text = Codex::config(&LaunchContext {
            home,
            workspace: home,
            proxy_url: "http://127.0.0.1:9/v1",
            model: "m \"quoted\"",
        });
        let parsed: toml::Table = text.parse().unwrap_or_else(|e| panic!("{e}: {text}"));
        assert_eq!(parsed["model"].as_str(), Some("m \"quoted\""));
        let p = &parsed["model_providers"]["gauntlet"];
        assert_eq!(p["wire_api"].as_str(), Some("responses"));
        assert_eq!(p["base_url"].as_str(), Some("http://127.0.0.1:9/v1"));
        assert_eq!(
            parsed["sandbox_workspace_write"]["network_access"].as_bool(),
            Some(true)
        );
    }
}
