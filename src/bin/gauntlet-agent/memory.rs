//! The reference agent's persistent memory: `memory.jsonl` in its state directory, an
//! append-only log of `remember`/`forget` operations. The current memory is the fold
//! of the log: the latest `remember` of a key supersedes earlier ones, `forget` removes
//! the key, and a fact past its `expires_at_ms` is no longer recalled (it stays in the
//! log, so what the agent once knew remains auditable).
//!
//! A line that does not parse is skipped with a warning on stderr: a damaged store
//! loses that line, never the rest.
//!
//! The clock is the system's, unless `GAUNTLET_AGENT_NOW_MS` is set (tests of expiry
//! without waiting).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::tools::ToolOutcome;

pub const FILE: &str = "memory.jsonl";

/// The daemon's notes in the state directory: what it did between chat sessions, which
/// the next chat session reads into its system prompt. Kept here, beside the memory
/// file, because both modes read it.
pub const NOTES: &str = "notes.jsonl";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
enum Op {
    Remember {
        key: String,
        fact: String,
        at_ms: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        expires_at_ms: Option<u64>,
    },
    Forget {
        key: String,
        at_ms: u64,
    },
}

/// A fact as recalled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fact {
    pub key: String,
    pub fact: String,
    pub at_ms: u64,
    pub expires_at_ms: Option<u64>,
}

pub fn now_ms() -> u64 {
    if let Some(ms) = std::env::var("GAUNTLET_AGENT_NOW_MS")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        return ms;
    }
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

pub struct Memory {
    path: PathBuf,
}

impl Memory {
    pub fn new(state_dir: &Path) -> Memory {
        Memory {
            path: state_dir.join(FILE),
        }
    }

    fn append(&self, op: &Op) -> std::io::Result<()> {
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)?;
        let line = serde_json::to_string(op).map_err(std::io::Error::other)?;
        file.write_all(format!("{line}\n").as_bytes())?;
        file.sync_data()
    }

    fn ops(&self) -> Vec<Op> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
            Err(e) => {
                eprintln!(
                    "gauntlet-agent: {}: cannot read memory: {e}",
                    self.path.display()
                );
                return Vec::new();
            }
        };
        text.lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .filter_map(|(i, l)| match serde_json::from_str(l) {
                Ok(op) => Some(op),
                Err(e) => {
                    eprintln!(
                        "gauntlet-agent: {}:{}: skipped a memory line that does not parse: {e}",
                        self.path.display(),
                        i + 1
                    );
                    None
                }
            })
            .collect()
    }

    /// The facts in force at `now`, in key order.
    pub fn current(&self, now: u64) -> Vec<Fact> {
        let mut facts: BTreeMap<String, Fact> = BTreeMap::new();
        for op in self.ops() {
            match op {
                Op::Remember {
                    key,
                    fact,
                    at_ms,
                    expires_at_ms,
                } => {
                    facts.insert(
                        key.clone(),
                        Fact {
                            key,
                            fact,
                            at_ms,
                            expires_at_ms,
                        },
                    );
                }
                Op::Forget { key, .. } => {
                    facts.remove(&key);
                }
            }
        }
        facts
            .into_values()
            .filter(|f| f.expires_at_ms.is_none_or(|e| e > now))
            .collect()
    }

    pub fn remember(&self, key: &str, fact: &str, ttl_seconds: Option<u64>) -> std::io::Result<()> {
        let at_ms = now_ms();
        self.append(&Op::Remember {
            key: key.to_string(),
            fact: fact.to_string(),
            at_ms,
            expires_at_ms: ttl_seconds.map(|s| at_ms.saturating_add(s.saturating_mul(1000))),
        })
    }

    /// True when the key was in force.
    pub fn forget(&self, key: &str) -> std::io::Result<bool> {
        let had = self.current(now_ms()).iter().any(|f| f.key == key);
        self.append(&Op::Forget {
            key: key.to_string(),
            at_ms: now_ms(),
        })?;
        Ok(had)
    }

    /// Facts whose key or text contains any word of `query` (all facts without one).
    pub fn recall(&self, query: Option<&str>) -> Vec<Fact> {
        let words: Vec<String> = query
            .unwrap_or("")
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| w.len() > 2)
            .map(str::to_lowercase)
            .collect();
        self.current(now_ms())
            .into_iter()
            .filter(|f| {
                let hay = format!("{} {}", f.key, f.fact).to_lowercase();
                words.is_empty() || words.iter().any(|w| hay.contains(w.as_str()))
            })
            .collect()
    }
}

/// `key: fact` per line; the text a recall tool result shows.
pub fn render(facts: &[Fact]) -> String {
    if facts.is_empty() {
        return "no memories match".into();
    }
    facts
        .iter()
        .map(|f| format!("{}: {}", f.key, f.fact))
        .collect::<Vec<_>>()
        .join("\n")
}

pub fn definitions() -> Vec<Value> {
    let function = |name: &str, description: &str, parameters: Value| {
        json!({"type": "function", "function": {
            "name": name, "description": description, "parameters": parameters,
        }})
    };
    vec![
        function(
            "remember",
            "Store a fact in your persistent memory (kept across sessions). A later fact with \
             the same key replaces the earlier one. Give ttl_seconds for facts that stop being \
             true after a while.",
            json!({"type": "object", "properties": {
                "key": {"type": "string", "description": "short stable name, e.g. favorite_color"},
                "fact": {"type": "string"},
                "ttl_seconds": {"type": "integer", "minimum": 0}
            }, "required": ["key", "fact"]}),
        ),
        function(
            "recall",
            "Look up facts in your persistent memory: those whose key or text contains a word \
             of the query, or all of them without a query. Expired and forgotten facts are \
             not returned.",
            json!({"type": "object", "properties": {
                "query": {"type": "string"}
            }}),
        ),
        function(
            "forget",
            "Remove a fact from your persistent memory.",
            json!({"type": "object", "properties": {
                "key": {"type": "string"}
            }, "required": ["key"]}),
        ),
    ]
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RememberArgs {
    key: String,
    fact: String,
    ttl_seconds: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RecallArgs {
    query: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ForgetArgs {
    key: String,
}

fn args<T: serde::de::DeserializeOwned>(tool: &str, arguments: &str) -> Result<T, ToolOutcome> {
    let text = if arguments.trim().is_empty() {
        "{}"
    } else {
        arguments
    };
    serde_json::from_str(text)
        .map_err(|e| ToolOutcome::failed(format!("bad arguments for `{tool}`: {e}")))
}

/// Runs a memory tool; `None` when `name` is not one.
pub fn run(memory: &Memory, name: &str, arguments: &str) -> Option<ToolOutcome> {
    let io = |e: std::io::Error| {
        ToolOutcome::failed(format!(
            "{}: cannot write memory: {e}",
            memory.path.display()
        ))
    };
    Some(match name {
        "remember" => match args::<RememberArgs>(name, arguments) {
            Err(e) => e,
            Ok(a) if a.key.trim().is_empty() => ToolOutcome::failed("remember: `key` is empty"),
            Ok(a) => match memory.remember(&a.key, &a.fact, a.ttl_seconds) {
                Ok(()) => ToolOutcome::ok(format!("remembered {}: {}", a.key, a.fact)),
                Err(e) => io(e),
            },
        },
        "recall" => match args::<RecallArgs>(name, arguments) {
            Err(e) => e,
            Ok(a) => ToolOutcome::ok(render(&memory.recall(a.query.as_deref()))),
        },
        "forget" => match args::<ForgetArgs>(name, arguments) {
            Err(e) => e,
            Ok(a) => match memory.forget(&a.key) {
                Ok(true) => ToolOutcome::ok(format!("forgot {}", a.key)),
                Ok(false) => ToolOutcome::ok(format!("nothing remembered under {}", a.key)),
                Err(e) => io(e),
            },
        },
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn later_facts_supersede_forget_removes_and_expiry_applies() {
        let dir = tempfile::tempdir().unwrap();
        let m = Memory::new(dir.path());
        m.remember("color", "blue", None).unwrap();
        m.remember("color", "teal", None).unwrap();
        m.remember("codename", "BLUEFIN, deadline Friday", Some(3600))
            .unwrap();
        m.remember("gone", "x", None).unwrap();
        assert!(m.forget("gone").unwrap());
        assert!(!m.forget("never").unwrap());
        let now = now_ms();
        let facts = m.current(now);
        assert_eq!(
            render(&facts),
            "codename: BLUEFIN, deadline Friday\ncolor: teal"
        );
        assert_eq!(render(&m.current(now + 3_601_000)), "color: teal");
        assert_eq!(render(&m.recall(Some("favorite color?"))), "color: teal");
        assert_eq!(render(&m.recall(Some("xyzzy"))), "no memories match");
    }

    #[test]
    fn a_garbage_line_costs_only_itself() {
        let dir = tempfile::tempdir().unwrap();
        let m = Memory::new(dir.path());
        m.remember("a", "1", None).unwrap();
        std::fs::OpenOptions::new()
            .append(true)
            .open(dir.path().join(FILE))
            .unwrap()
            .write_all(b"{not json\n")
            .unwrap();
        m.remember("b", "2", None).unwrap();
        assert_eq!(render(&m.recall(None)), "a: 1\nb: 2");
    }

    #[test]
    fn tools_report_bad_arguments_as_failed_results() {
        let dir = tempfile::tempdir().unwrap();
        let m = Memory::new(dir.path());
        assert!(run(&m, "remember", "{}").is_some_and(|o| o.failed));
        assert!(run(&m, "shell", "{}").is_none());
        let r = run(&m, "remember", r#"{"key":"k","fact":"v"}"#).unwrap();
        assert!(!r.failed, "{}", r.output);
        assert_eq!(run(&m, "recall", "").unwrap().output, "k: v");
    }
}
