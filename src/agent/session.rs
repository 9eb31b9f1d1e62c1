//! Multi-turn sessions and background modes across adapters (scorecard probes).
//!
//! The harness drives a conversation as [`PromptRun`]s carrying a [`SessionTurn`]: the
//! same `id` for every turn of one session, `resume` false on its first turn, and the
//! agent's `state_dir`, kept across the sessions of one agent and empty for a fresh
//! one. Each adapter maps that onto its agent's own mechanism:
//!
//! | adapter | first turn | later turns | state kept in `state_dir` |
//! |---|---|---|---|
//! | reference | `chat --state-dir D --session S` | `… --resume` | sessions, memory, goals |
//! | opencode | `run --title S` | `run --continue` | `XDG_DATA_HOME`/`XDG_STATE_HOME` |
//! | claude-code | `-p --session-id U` | `-p --resume U` | `CLAUDE_CONFIG_DIR` |
//! | codex | `exec` | `exec resume --last --all` | `CODEX_HOME` |
//! | command | `{session_id}`, `{session_resume}`, `{state_dir}` placeholders and `GAUNTLET_SESSION_*` variables (docs/agent-protocol.md) | | its own |
//!
//! `U` is a UUID derived from `S` ([`session_uuid`]); OpenCode and Codex assign their
//! own ids, so a later turn continues the agent's most recent session, which is the
//! current one because the harness runs an agent's sessions one after another.
//!
//! A background mode ([`Adapter::daemon_launch`]) runs during an idle window in its own
//! process group and is killed at the window's end; only the reference agent has one
//! (`gauntlet-agent daemon --state-dir D --config C`), and only when a config is given.
//! An agent without one scores what it does without it. The harness runs the returned
//! launch like a turn, with [`process::run`](crate::sys::process::run) and the window's length
//! as the deadline: the deadline kill of the whole process group is the window's end
//! (see `tests/integration/sessions.rs`).
//!
//! [`Adapter::daemon_launch`]: super::Adapter::daemon_launch

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::{AdapterError, PromptRun, SessionTurn};

/// What a background mode is started with: one idle window of one agent.
#[derive(Debug, Clone)]
pub struct DaemonRun {
    /// A stable label (trial name and window label).
    pub title: String,
    pub workspace: PathBuf,
    /// The same state directory the agent's sessions use.
    pub state_dir: PathBuf,
    /// The background mode's configuration (for the reference agent, a daemon TOML:
    /// stub, reactive, autonomous …). `None`: the agent runs none.
    pub config: Option<PathBuf>,
}

/// A UUID (version-4 layout) derived from a harness session id, for agents that
/// require UUID session ids: the same id always gives the same UUID.
pub fn session_uuid(id: &str) -> String {
    let d = Sha256::digest(format!("gauntlet-session:{id}").as_bytes());
    let mut b = [0u8; 16];
    b.copy_from_slice(&d[..16]);
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// Create the state directory (an empty one for a fresh agent).
pub fn ensure_state_dir(turn: &SessionTurn) -> Result<(), AdapterError> {
    ensure_dir(&turn.state_dir)
}

pub fn ensure_dir(dir: &Path) -> Result<(), AdapterError> {
    std::fs::create_dir_all(dir).map_err(|source| AdapterError::Write {
        path: dir.to_path_buf(),
        source,
    })
}

/// Write the turn's prompt into the scratch HOME (prompts can exceed what one
/// command-line argument may hold); returns the file.
pub fn write_prompt(run: &PromptRun, home: &Path) -> Result<PathBuf, AdapterError> {
    let name = match &run.session {
        Some(turn) => format!("prompt-{}.md", sanitize(&turn.id)),
        None => "prompt.md".into(),
    };
    let path = home.join(&name);
    // HOME persists across a session's turns: the agent may have planted a symlink.
    crate::sys::beneath::write(home, Path::new(&name), run.prompt.as_bytes())
        .map_err(AdapterError::Unsafe)?;
    Ok(path)
}

fn sanitize(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::agent::{claude_code::ClaudeCode, codex::Codex, opencode::OpenCode};
    use crate::agent::{Adapter, Command, LaunchContext, Reference};

    fn turn(resume: bool, state: &Path) -> PromptRun {
        PromptRun {
            title: "scorecard::memory::p1-2".into(),
            prompt: "Any open projects?".into(),
            workspace: PathBuf::from("/w"),
            session: Some(SessionTurn {
                id: "p1-2-s2".into(),
                resume,
                state_dir: state.to_path_buf(),
            }),
        }
    }

    #[test]
    fn each_cli_maps_first_and_later_turns_onto_its_own_session_flags() {
        let state = PathBuf::from("/state");
        let (first, later) = (turn(false, &state), turn(true, &state));
        let args = |a: &dyn Adapter, r: &PromptRun| {
            a.prompt_invocation(r)
                .unwrap_or_else(|e| panic!("{e}"))
                .args
        };
        let uuid = session_uuid("p1-2-s2");

        let claude = ClaudeCode::new("claude".into());
        let a = args(&claude, &first);
        assert!(
            a.windows(2).any(|w| w == ["--session-id", uuid.as_str()]),
            "{a:?}"
        );
        assert_eq!(a[a.len() - 2..], ["--", "Any open projects?"]);
        let a = args(&claude, &later);
        assert!(
            a.windows(2).any(|w| w == ["--resume", uuid.as_str()]),
            "{a:?}"
        );

        let codex = Codex::new("codex".into());
        assert_eq!(args(&codex, &first)[..2], ["exec", "--json"]);
        let a = args(&codex, &later);
        assert_eq!(a[..4], ["exec", "resume", "--last", "--all"]);
        assert_eq!(a.last().map(String::as_str), Some("Any open projects?"));

        let opencode = OpenCode::new("opencode".into());
        assert!(args(&opencode, &first).contains(&"--title".to_string()));
        let a = args(&opencode, &later);
        assert!(a.contains(&"--continue".to_string()) && !a.contains(&"--title".to_string()));

        let reference = Reference {
            program: "gauntlet-agent".into(),
            stream: false,
        };
        let a = args(&reference, &later);
        assert_eq!(
            a[..5],
            ["chat", "--state-dir", "/state", "--session", "p1-2-s2"]
        );
        assert!(a.contains(&"--resume".to_string()));
        assert!(!args(&reference, &first).contains(&"--resume".to_string()));
    }

    #[test]
    fn the_command_adapter_gets_placeholders_and_variables() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let cmd = Command {
            argv: vec![
                "my-agent".into(),
                "--session={session_id}".into(),
                "--resume={session_resume}".into(),
                "--state={state_dir}".into(),
                "--prompt-file={prompt_file}".into(),
            ],
            daemon_argv: vec![],
        };
        let ctx = LaunchContext::scratch(dir.path());
        let state = dir.path().join("state");
        let launch = cmd
            .prompt_launch(&turn(true, &state), &ctx)
            .unwrap_or_else(|e| panic!("{e}"));
        let a = &launch.invocation.args;
        assert_eq!(a[0], "--session=p1-2-s2");
        assert_eq!(a[1], "--resume=true");
        assert_eq!(a[2], format!("--state={}", state.display()));
        let file = a[3].trim_start_matches("--prompt-file=");
        assert_eq!(
            std::fs::read_to_string(file).ok().as_deref(),
            Some("Any open projects?")
        );
        assert_eq!(launch.env["GAUNTLET_SESSION_RESUME"], "true");
        assert_eq!(launch.env["GAUNTLET_STATE_DIR"], state.to_string_lossy());
        assert!(state.is_dir(), "the state dir is created for the agent");
    }

    /// A command agent's background command: none without one; with one, its
    /// placeholders filled and the state directory made, like the reference's daemon.
    #[test]
    fn the_command_adapter_runs_its_own_background_command_only_when_it_has_one() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let ctx = LaunchContext::scratch(dir.path());
        let state = dir.path().join("state");
        let run = DaemonRun {
            title: "scorecard::continuous::p3-3 background".into(),
            workspace: dir.path().join("ws"),
            state_dir: state.clone(),
            // The scripted profile's reference daemon config: not the command's.
            config: Some(dir.path().join("daemon.toml")),
        };
        let mut cmd = Command {
            argv: vec!["turn.sh".into()],
            daemon_argv: vec![],
        };
        assert!(matches!(cmd.daemon_launch(&run, &ctx), Ok(None)));
        cmd.daemon_argv = vec![
            "sh".into(),
            "bg.sh".into(),
            "--state={state_dir}".into(),
            "--in={workspace}".into(),
            "{title}".into(),
        ];
        let launch = cmd
            .daemon_launch(&run, &ctx)
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|| panic!("a background command runs"));
        assert_eq!(launch.invocation.program, PathBuf::from("sh"));
        let a = &launch.invocation.args;
        assert_eq!(a[1], format!("--state={}", state.display()));
        assert_eq!(a[2], format!("--in={}", dir.path().join("ws").display()));
        assert_eq!(a[3], "scorecard::continuous::p3-3 background");
        assert_eq!(launch.env["GAUNTLET_STATE_DIR"], state.to_string_lossy());
        assert!(
            state.is_dir(),
            "the state dir is created for the background mode"
        );
        assert!(
            cmd.version().contains("background: sh bg.sh"),
            "{}",
            cmd.version()
        );
    }

    #[test]
    fn session_uuids_are_stable_distinct_and_well_formed() {
        let a = session_uuid("p1-2-s1");
        assert_eq!(a, session_uuid("p1-2-s1"));
        assert_ne!(a, session_uuid("p1-2-s2"));
        assert_eq!(a.len(), 36);
        assert_eq!(a.as_bytes()[14], b'4');
        assert!(matches!(a.as_bytes()[19], b'8' | b'9' | b'a' | b'b'), "{a}");
    }
}
