//! The stdout formats of the agents gauntlet drives, each with the pure parser that
//! turns it into a transcript and a normalized report.
//!
//! [`AgentKind`] is the one table of agent names: configuration parses
//! `GAUNTLET_AGENT` through it, records keep its name, and rescore finds the parser
//! for a record from that name alone, with no adapter (and no agent CLI) present. The
//! parsers live here rather than beside their adapters because they read evidence,
//! and evidence is below every adapter.

pub mod claude_code;
pub mod codex;
pub mod opencode;

use serde::{Deserialize, Serialize};

use super::normalize::{parse_gauntlet, StreamParser};

/// Which agent produced a stream, and so how to read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum AgentKind {
    /// `gauntlet-agent`, built by this package; speaks the gauntlet event protocol.
    #[serde(rename = "reference")]
    Reference,
    /// Any executable given by `GAUNTLET_AGENT_CMD`; held to the gauntlet protocol.
    #[serde(rename = "command")]
    Command,
    /// OpenCode, pinned in `workspace/`.
    #[serde(rename = "opencode")]
    OpenCode,
    /// Claude Code, pinned in `workspace/`.
    #[serde(rename = "claude-code")]
    ClaudeCode,
    /// Codex, pinned in `workspace/`.
    #[serde(rename = "codex")]
    Codex,
}

impl AgentKind {
    pub const ALL: [AgentKind; 5] = [
        AgentKind::Reference,
        AgentKind::Command,
        AgentKind::OpenCode,
        AgentKind::ClaudeCode,
        AgentKind::Codex,
    ];

    /// The name configuration and records use.
    pub fn name(self) -> &'static str {
        match self {
            AgentKind::Reference => "reference",
            AgentKind::Command => "command",
            AgentKind::OpenCode => "opencode",
            AgentKind::ClaudeCode => "claude-code",
            AgentKind::Codex => "codex",
        }
    }

    /// The kind named `name`, or `None` for a name no adapter has.
    pub fn from_name(name: &str) -> Option<AgentKind> {
        AgentKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Every name, for error messages and docs: `reference, command, ...`.
    pub fn names() -> String {
        AgentKind::ALL.map(AgentKind::name).join(", ")
    }

    /// How this agent's stdout is read.
    pub fn parser(self) -> StreamParser {
        match self {
            AgentKind::Reference | AgentKind::Command => parse_gauntlet,
            AgentKind::OpenCode => opencode::parse_stream,
            AgentKind::ClaudeCode => claude_code::parse_stream,
            AgentKind::Codex => codex::parse_stream,
        }
    }

    /// The pinned npm CLI's executable under `workspace/node_modules/.bin`, for the
    /// kinds that are one.
    pub fn npm_bin(self) -> Option<&'static str> {
        match self {
            AgentKind::Reference | AgentKind::Command => None,
            AgentKind::OpenCode => Some("opencode"),
            AgentKind::ClaudeCode => Some("claude"),
            AgentKind::Codex => Some("codex"),
        }
    }
}

impl std::fmt::Display for AgentKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_round_trips_and_an_unknown_one_has_no_parser() {
        for k in AgentKind::ALL {
            assert_eq!(AgentKind::from_name(k.name()), Some(k));
            let json = serde_json::to_string(&k).unwrap();
            assert_eq!(json, format!("\"{}\"", k.name()));
        }
        assert_eq!(AgentKind::from_name("mystery"), None);
    }
}
