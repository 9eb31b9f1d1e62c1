//! Scripted flows: `apps/<app>/flows/<capability>.json`.
//!
//! A flow scripts the *model*, not the agent: each step is one model reply. Steps are
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
pub enum FlowStep {
    /// Ask the agent to run a shell command.
    Shell { command: String },
    /// Ask the agent to write a file (relative to its working directory).
    WriteFile { path: String, content: String },
    /// Ask the agent to read a file.
    ReadFile { path: String },
    /// The final assistant message; ends the flow.
    Final { text: String },
}

impl FlowStep {
    pub fn is_final(&self) -> bool {
        matches!(self, FlowStep::Final { .. })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Flow {
    pub capability: String,
    pub steps: Vec<FlowStep>,
}

impl Flow {
    pub fn load(file: &Path) -> Result<Flow, SpecError> {
        let flow: Flow = read_json(file)?;
        flow.validate(file)?;
        Ok(flow)
    }

    fn validate(&self, file: &Path) -> Result<(), SpecError> {
        match self.steps.last() {
            Some(FlowStep::Final { .. }) => {}
            _ => {
                return Err(SpecError::invalid(
                    file,
                    "steps",
                    "must end with a `final` step",
                ))
            }
        }
        if let Some(i) = self.steps[..self.steps.len() - 1]
            .iter()
            .position(FlowStep::is_final)
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
    pub fn tool_steps(&self) -> &[FlowStep] {
        &self.steps[..self.steps.len().saturating_sub(1)]
    }

    /// The final message's text.
    pub fn final_text(&self) -> &str {
        match self.steps.last() {
            Some(FlowStep::Final { text }) => text,
            _ => "",
        }
    }
}

/// Load every flow in `dir` (which may be absent), checking that each names a
/// capability of the corpus and matches its file name.
pub fn load_flows(dir: &Path, corpus: &Corpus) -> Result<BTreeMap<String, Flow>, SpecError> {
    let mut flows = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(flows);
    };
    let mut files: Vec<_> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    for file in files {
        let flow = Flow::load(&file)?;
        let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        if flow.capability != stem {
            return Err(SpecError::invalid(
                &file,
                "capability",
                format!("`{}` differs from the file name `{stem}`", flow.capability),
            ));
        }
        if !corpus.capabilities.iter().any(|c| c.id == flow.capability) {
            return Err(SpecError::invalid(
                &file,
                "capability",
                format!(
                    "`{}` is not a capability of app `{}`",
                    flow.capability, corpus.app
                ),
            ));
        }
        flows.insert(flow.capability.clone(), flow);
    }
    Ok(flows)
}
