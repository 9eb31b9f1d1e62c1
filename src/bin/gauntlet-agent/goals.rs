//! The reference agent's goals: `goals.json` in its state directory, written by the
//! chat tools (`goal_set`, `goal_list`) and read — and extended with self-derived
//! goals — by the background mode (`daemon`). Lower `priority` numbers come first.
//! Written atomically (temp file + rename) so a killed daemon never leaves half a file.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::tools::ToolOutcome;

pub const FILE: &str = "goals.json";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GoalStatus {
    Open,
    Done,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Goal {
    pub id: String,
    pub text: String,
    /// 1 is the most important.
    pub priority: u32,
    pub status: GoalStatus,
    /// `user` (set in a chat) or `self` (derived by the agent from what it observed).
    pub source: String,
    pub updated_at_ms: u64,
}

pub struct Goals {
    path: PathBuf,
}

impl Goals {
    pub fn new(state_dir: &Path) -> Goals {
        Goals {
            path: state_dir.join(FILE),
        }
    }

    /// The goals, most important first. A file that does not parse is reported and
    /// treated as empty (it is not overwritten until the next change).
    pub fn load(&self) -> Vec<Goal> {
        let mut goals: Vec<Goal> = match std::fs::read(&self.path) {
            Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_else(|e| {
                eprintln!(
                    "gauntlet-agent: {}: goals do not parse: {e}",
                    self.path.display()
                );
                Vec::new()
            }),
            Err(_) => Vec::new(),
        };
        goals.sort_by(|a, b| a.priority.cmp(&b.priority).then(a.id.cmp(&b.id)));
        goals
    }

    pub fn save(&self, goals: &[Goal]) -> std::io::Result<()> {
        let tmp = self.path.with_extension("json.tmp");
        let text = serde_json::to_vec_pretty(goals).map_err(std::io::Error::other)?;
        std::fs::write(&tmp, text)?;
        std::fs::rename(&tmp, &self.path)
    }

    /// Create or update goal `id`; returns it.
    pub fn set(
        &self,
        id: &str,
        text: Option<&str>,
        priority: Option<u32>,
        status: Option<GoalStatus>,
        source: &str,
    ) -> std::io::Result<Goal> {
        let mut goals = self.load();
        let now = crate::memory::now_ms();
        let goal = match goals.iter_mut().find(|g| g.id == id) {
            Some(g) => {
                if let Some(t) = text {
                    g.text = t.to_string();
                }
                if let Some(p) = priority {
                    g.priority = p;
                }
                if let Some(s) = status {
                    g.status = s;
                }
                g.updated_at_ms = now;
                g.clone()
            }
            None => {
                let g = Goal {
                    id: id.to_string(),
                    text: text.unwrap_or(id).to_string(),
                    priority: priority.unwrap_or(5),
                    status: status.unwrap_or(GoalStatus::Open),
                    source: source.to_string(),
                    updated_at_ms: now,
                };
                goals.push(g.clone());
                g
            }
        };
        self.save(&goals)?;
        Ok(goal)
    }
}

pub fn render(goals: &[Goal]) -> String {
    if goals.is_empty() {
        return "no goals".into();
    }
    goals
        .iter()
        .map(|g| {
            format!(
                "{} (priority {}, {}, from {}): {}",
                g.id,
                g.priority,
                if g.status == GoalStatus::Open {
                    "open"
                } else {
                    "done"
                },
                g.source,
                g.text
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

pub fn definitions() -> Vec<Value> {
    vec![
        json!({"type": "function", "function": {
            "name": "goal_set",
            "description": "Create or update one of your persistent goals (kept across sessions and \
                            acted on by your background mode). Priority 1 is the most important.",
            "parameters": {"type": "object", "properties": {
                "id": {"type": "string"},
                "text": {"type": "string"},
                "priority": {"type": "integer", "minimum": 1},
                "status": {"type": "string", "enum": ["open", "done"]}
            }, "required": ["id"]}
        }}),
        json!({"type": "function", "function": {
            "name": "goal_list",
            "description": "List your persistent goals, most important first.",
            "parameters": {"type": "object", "properties": {}}
        }}),
    ]
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SetArgs {
    id: String,
    text: Option<String>,
    priority: Option<u32>,
    status: Option<GoalStatus>,
}

/// Runs a goal tool; `None` when `name` is not one.
pub fn run(goals: &Goals, name: &str, arguments: &str) -> Option<ToolOutcome> {
    Some(match name {
        "goal_set" => {
            let text = if arguments.trim().is_empty() {
                "{}"
            } else {
                arguments
            };
            match serde_json::from_str::<SetArgs>(text) {
                Err(e) => ToolOutcome::failed(format!("bad arguments for `goal_set`: {e}")),
                Ok(a) if a.id.trim().is_empty() => ToolOutcome::failed("goal_set: `id` is empty"),
                Ok(a) => match goals.set(&a.id, a.text.as_deref(), a.priority, a.status, "user") {
                    Ok(g) => ToolOutcome::ok(format!("goal {}", render(&[g]))),
                    Err(e) => ToolOutcome::failed(format!("goal_set: cannot write goals: {e}")),
                },
            }
        }
        "goal_list" => ToolOutcome::ok(render(&goals.load())),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reprioritizing_reorders_and_updates_keep_the_source() {
        let dir = tempfile::tempdir().unwrap();
        let g = Goals::new(dir.path());
        g.set("x", Some("goal X"), Some(1), None, "user").unwrap();
        g.set("y", Some("goal Y"), Some(2), None, "self").unwrap();
        assert_eq!(g.load()[0].id, "x");
        g.set("x", None, Some(3), None, "user").unwrap();
        let goals = g.load();
        assert_eq!(goals[0].id, "y");
        assert_eq!(goals[0].source, "self");
        assert!(run(&g, "goal_set", "{}").is_some_and(|o| o.failed));
    }
}
