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
//! An agent without one scores what it does without it.
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
    let path = home.join(name);
    std::fs::write(&path, &run.prompt).map_err(|source| AdapterError::Write {
        path: path.clone(),
        source,
    })?;
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

/// Until the one-shot prompt runs of branch h/chal are merged.
pub fn one_shot_unsupported(agent: &str) -> AdapterError {
    AdapterError::Unsupported {
        agent: agent.into(),
        what: "run a one-shot prompt (see branch h/chal)".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
