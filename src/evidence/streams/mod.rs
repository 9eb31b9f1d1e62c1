//! The stdout formats of the agents gauntlet drives, each with the pure parser that
//! turns it into a transcript and a normalized report.
//!
//! [`AgentKind`] (in `config`) is the one table of agent names: configuration parses
//! `GAUNTLET_AGENT` through it, records keep its name, and rescore finds the parser
//! for a record ([`parser`]) from that name alone, with no adapter (and no agent CLI) present. The
//! parsers live here rather than beside their adapters because they read evidence,
//! and evidence is below every adapter.

pub mod claude_code;
pub mod codex;
pub mod opencode;

use std::io::BufRead;

use serde_json::Value;

use super::normalize::{for_each_object, parse_gauntlet, str_at, Normalizer, Parsed, StreamParser};
pub use crate::config::AgentKind;

/// How the stdout of an agent of `kind` is read.
pub fn parser(kind: AgentKind) -> StreamParser {
    match kind {
        AgentKind::Reference | AgentKind::Command => parse_gauntlet,
        AgentKind::OpenCode => opencode::parse_stream,
        AgentKind::ClaudeCode => claude_code::parse_stream,
        AgentKind::Codex => codex::parse_stream,
    }
}

/// Read a stream of `{"type": …}` objects, one a line, as the three CLIs print theirs:
/// each object's type is counted as seen before `on_event` reads the object, so that
/// the parsers differ only in what their types mean.
fn each_event(
    kind: AgentKind,
    reader: &mut dyn BufRead,
    mut on_event: impl FnMut(&mut Normalizer, &str, Value),
) -> Parsed {
    let mut n = Normalizer::new(kind.name());
    for_each_object(reader, &mut n, |n, v| {
        let ty = str_at(&v, "/type").unwrap_or("").to_owned();
        n.seen(&ty);
        on_event(n, &ty, v);
    });
    n.finish()
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
