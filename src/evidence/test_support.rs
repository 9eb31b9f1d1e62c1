//! Evidence as the unit tests of `evidence`, `score` and `report` build it: a plain
//! exec and a completed tool call, with every field a test does not care about at its
//! quiet value, so that a new field is added here once rather than in every test.

use serde_json::Value;

use super::normalize::ToolCallRecord;
use super::observed::Exec;

/// An exec that was read whole and ran as the sandbox shipped it.
pub(crate) fn exec(ms: u64, pid: i32, path: &str, argv: &[&str]) -> Exec {
    Exec {
        ms,
        pid,
        path: path.into(),
        argv: argv.iter().map(|a| a.to_string()).collect(),
        argv_cut: false,
        unreadable: None,
        refused: false,
        own_root: false,
        loader: vec![],
        loader_unread: None,
        carried: vec![],
    }
}

/// A tool call the agent reported as completed, with no output, times or metadata.
pub(crate) fn tool_call(id: &str, name: &str, input: Value) -> ToolCallRecord {
    ToolCallRecord {
        id: id.into(),
        name: name.into(),
        status: "completed".into(),
        failed: false,
        input,
        input_preview: None,
        output: None,
        started_ms: None,
        ended_ms: None,
        title: None,
        metadata: None,
    }
}
