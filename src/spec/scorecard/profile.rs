//! Scripted agent profiles: `challenges/scorecard/agents/<profile>/profile.json`.
//!
//! A profile scripts the *model* behind a real agent (the reference agent in CI), turn
//! by turn, exactly like the qa scripts: each turn of each probe gets a script (generic
//! steps the scripted proxy maps onto the agent's tools; every string a bank template),
//! and a profile may configure its agent's background mode (`daemon`: the reference
//! agent's `gauntlet-agent daemon --config` file, beside the profile). Profiles never
//! hold observations: what they do is observed in the sinks like any agent's.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::bank::{template_slots, Bank, SLOTS};
use crate::spec::{check_id, read_json, Script, ScriptStep, SpecError};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    pub profile: String,
    pub description: String,
    /// The reply to any turn the profile does not script (filler turns included).
    pub default: Vec<ScriptStep>,
    /// `<probe>/<turn label>` → the model's steps for that turn.
    #[serde(default)]
    pub turns: BTreeMap<String, Vec<ScriptStep>>,
    /// The background mode's config file, relative to the profile's directory; none:
    /// the agent has no background mode.
    #[serde(default)]
    pub daemon: Option<String>,
}

/// A loaded profile and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedProfile {
    pub file: PathBuf,
    pub profile: Profile,
    pub sha256: String,
}

impl LoadedProfile {
    /// The script of one turn, with the bank's values filled in.
    pub fn turn_script(&self, probe: &str, label: &str, bank: &Bank) -> Script {
        let steps = self
            .profile
            .turns
            .get(&format!("{probe}/{label}"))
            .unwrap_or(&self.profile.default);
        render(probe, steps, bank)
    }

    /// Every path a turn of `probe` writes with a `write_file` step in this profile (its
    /// own turns and the default one), with `bank`'s values filled in: the paths the
    /// driver checks after a scripted turn, so a turn's record keeps them whatever else
    /// it leaves out.
    pub fn written_paths(&self, probe: &str, bank: &Bank) -> std::collections::BTreeSet<String> {
        let own = format!("{probe}/");
        self.profile
            .turns
            .iter()
            .filter(|(key, _)| key.starts_with(&own))
            .map(|(_, steps)| steps)
            .chain(std::iter::once(&self.profile.default))
            .flatten()
            .filter_map(|step| match step {
                ScriptStep::WriteFile { path, .. } => Some(bank.render(path)),
                _ => None,
            })
            .collect()
    }

    /// The background mode's config file, if the profile has one.
    pub fn daemon_config(&self) -> Option<PathBuf> {
        let dir = self.file.parent()?;
        self.profile.daemon.as_ref().map(|d| dir.join(d))
    }
}

fn render(probe: &str, steps: &[ScriptStep], bank: &Bank) -> Script {
    let r = |s: &String| bank.render(s);
    Script {
        capability: probe.to_string(),
        steps: steps
            .iter()
            .map(|s| match s {
                ScriptStep::Shell { command, expect } => ScriptStep::Shell {
                    command: r(command),
                    expect: expect.as_ref().map(r),
                },
                ScriptStep::WriteFile { path, content } => ScriptStep::WriteFile {
                    path: r(path),
                    content: r(content),
                },
                ScriptStep::ReadFile { path } => ScriptStep::ReadFile { path: r(path) },
                ScriptStep::Final { text } => ScriptStep::Final { text: r(text) },
                ScriptStep::Tool { name, arguments } => ScriptStep::Tool {
                    name: name.clone(),
                    arguments: render_json(arguments, bank),
                },
                ScriptStep::SayToolResult { prefix } => {
                    ScriptStep::SayToolResult { prefix: r(prefix) }
                }
            })
            .collect(),
    }
}

/// Every string inside a tool call's arguments, filled in.
fn render_json(v: &serde_json::Value, bank: &Bank) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Value::String(s) => Value::String(bank.render(s)),
        Value::Array(a) => Value::Array(a.iter().map(|x| render_json(x, bank)).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, x)| (k.clone(), render_json(x, bank)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn json_strings(v: &serde_json::Value, out: &mut Vec<String>) {
    use serde_json::Value;
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|x| json_strings(x, out)),
        Value::Object(o) => o.values().for_each(|x| json_strings(x, out)),
        _ => {}
    }
}

/// `challenges/scorecard/agents/<name>/profile.json`.
pub fn profile_file(suite_dir: &Path, name: &str) -> PathBuf {
    suite_dir.join("agents").join(name).join("profile.json")
}

/// Load and check a profile: scripts end with one `final`, every slot exists, every
/// scripted turn names a probe turn that exists (`turn_labels`: `<probe>/<label>`).
pub fn load_profile(file: &Path, turn_labels: &[String]) -> Result<LoadedProfile, SpecError> {
    let bytes = std::fs::read(file).map_err(|source| SpecError::Io {
        file: file.to_path_buf(),
        source,
    })?;
    let profile: Profile = read_json(file)?;
    check_id(file, "profile", &profile.profile)?;
    check_script(file, "default", &profile.default)?;
    for (key, steps) in &profile.turns {
        if !turn_labels.iter().any(|l| l == key) {
            return Err(SpecError::invalid(
                file,
                format!("turns.{key}"),
                "names no turn of any probe (expected `<probe>/<turn label>`)",
            ));
        }
        check_script(file, &format!("turns.{key}"), steps)?;
    }
    if let Some(d) = &profile.daemon {
        let dir = file.parent().unwrap_or(Path::new("."));
        let rel = Path::new(d);
        if rel.is_absolute()
            || rel
                .components()
                .any(|c| matches!(c, std::path::Component::ParentDir))
            || !dir.join(rel).is_file()
        {
            return Err(SpecError::invalid(
                file,
                "daemon",
                format!("`{d}` is not a file beside the profile"),
            ));
        }
    }
    Ok(LoadedProfile {
        file: file.to_path_buf(),
        profile,
        sha256: crate::hash::sha256(&bytes),
    })
}

fn check_script(file: &Path, field: &str, steps: &[ScriptStep]) -> Result<(), SpecError> {
    match steps.last() {
        Some(s) if s.is_final() => {}
        _ => {
            return Err(SpecError::invalid(
                file,
                field,
                "must end with a `final` (or `say_tool_result`) step",
            ))
        }
    }
    if steps[..steps.len() - 1].iter().any(ScriptStep::is_final) {
        return Err(SpecError::invalid(
            file,
            field,
            "a `final` step may only come last",
        ));
    }
    for (i, s) in steps.iter().enumerate() {
        let texts: Vec<String> = match s {
            ScriptStep::Shell { command, expect } => {
                std::iter::once(command).chain(expect).cloned().collect()
            }
            ScriptStep::WriteFile { path, content } => vec![path.clone(), content.clone()],
            ScriptStep::ReadFile { path } => vec![path.clone()],
            ScriptStep::Final { text } => vec![text.clone()],
            ScriptStep::SayToolResult { prefix } => vec![prefix.clone()],
            ScriptStep::Tool { arguments, .. } => {
                let mut out = Vec::new();
                json_strings(arguments, &mut out);
                out
            }
        };
        for t in &texts {
            for slot in template_slots(t) {
                if !SLOTS.contains(&slot.as_str()) {
                    return Err(SpecError::invalid(
                        file,
                        format!("{field}[{i}]"),
                        format!("names slot `{slot}`, which the fact bank does not fill"),
                    ));
                }
            }
        }
    }
    Ok(())
}
