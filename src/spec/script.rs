//! Scripts of the scripted model: `apps/<app>/flows/<capability>.json` (the directory
//! keeps its first name, `flows/`; a test flow is another thing, `flowtest::TestFlow`).
//!
//! A script drives the *model*, not the agent: each step is one model reply. Steps are
//! generic (run a shell command, write a file, read a file) and the scripted proxy maps
//! them onto whichever tool the requesting agent offers. The last step is the final
//! message, which carries the claim block.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{read_json, Corpus, SpecError};

/// One scripted model reply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum ScriptStep {
    /// Ask the agent to run a shell command. With `expect`, the command's result must
    /// contain that text (`… && echo stored`): a result without it is the harness's
    /// script failing on this agent (a tool that refused or failed), which ends the
    /// script and makes the turn an error instead of a low score.
    Shell {
        command: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        expect: Option<String>,
    },
    /// Ask the agent to write a file (relative to its working directory).
    WriteFile { path: String, content: String },
    /// Ask the agent to read a file.
    ReadFile { path: String },
    /// The final assistant message; ends the script.
    Final { text: String },
    /// Ask the agent to call the tool `name` with `arguments`, when it offers a tool of
    /// that name (the reference agent's `remember`, `recall`, `goal_set` …); a request
    /// that offers none gets a side reply, as for any step it cannot express.
    Tool {
        name: String,
        #[serde(default)]
        arguments: serde_json::Value,
    },
    /// A final message built from the agent's last tool result: `prefix` followed by
    /// that result's text (`{"say_tool_result": {"prefix": "You told me: "}}`). What a
    /// recall turn answers is then what the agent's memory really returned, not text
    /// the script hard-codes. Ends the script, like `final`.
    SayToolResult {
        #[serde(default)]
        prefix: String,
    },
}

impl ScriptStep {
    pub fn is_final(&self) -> bool {
        matches!(
            self,
            ScriptStep::Final { .. } | ScriptStep::SayToolResult { .. }
        )
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    pub capability: String,
    pub steps: Vec<ScriptStep>,
}

impl Script {
    pub fn load(file: &Path) -> Result<Script, SpecError> {
        let script: Script = read_json(file)?;
        script.validate(file)?;
        Ok(script)
    }

    fn validate(&self, file: &Path) -> Result<(), SpecError> {
        match self.steps.last() {
            Some(step) if step.is_final() => {}
            _ => {
                return Err(SpecError::invalid(
                    file,
                    "steps",
                    "must end with a `final` (or `say_tool_result`) step",
                ))
            }
        }
        if let Some(i) = self.steps[..self.steps.len() - 1]
            .iter()
            .position(ScriptStep::is_final)
        {
            return Err(SpecError::invalid(
                file,
                format!("steps[{i}]"),
                "a `final` step may only come last",
            ));
        }
        Ok(())
    }

    /// The steps before the final message.
    pub fn tool_steps(&self) -> &[ScriptStep] {
        &self.steps[..self.steps.len().saturating_sub(1)]
    }

    /// The final message's text (for `say_tool_result`, its prefix).
    pub fn final_text(&self) -> &str {
        match self.steps.last() {
            Some(ScriptStep::Final { text }) => text,
            Some(ScriptStep::SayToolResult { prefix }) => prefix,
            _ => "",
        }
    }

    /// Whether the final message is built from the last tool result.
    pub fn says_tool_result(&self) -> bool {
        matches!(self.steps.last(), Some(ScriptStep::SayToolResult { .. }))
    }
}

/// Load every script in `dir` (which may be absent), checking that each names a
/// capability of the corpus and matches its file name.
pub fn load_scripts(dir: &Path, corpus: &Corpus) -> Result<BTreeMap<String, Script>, SpecError> {
    let mut scripts = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(scripts);
    };
    let mut files: Vec<_> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    for file in files {
        let script = Script::load(&file)?;
        let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        if script.capability != stem {
            return Err(SpecError::invalid(
                &file,
                "capability",
                format!(
                    "`{}` differs from the file name `{stem}`",
                    script.capability
                ),
            ));
        }
        if !corpus
            .capabilities
            .iter()
            .any(|c| c.id == script.capability)
        {
            return Err(SpecError::invalid(
                &file,
                "capability",
                format!(
                    "`{}` is not a capability of app `{}`",
                    script.capability, corpus.app
                ),
            ));
        }
        scripts.insert(script.capability.clone(), script);
    }
    Ok(scripts)
}
