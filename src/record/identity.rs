//! What a run was planned with, kept beside its manifest (`run.json`), so that a run
//! resumed later (`gauntlet run --resume`) runs its missing trials under the same
//! harness config and specs, or refuses and names what changed.
//!
//! Records carry their own config, but an interrupted run may have no record at all,
//! and a record says nothing of the specs of trials that never ran.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::RecordError;

pub const IDENTITY_FILE: &str = "run.json";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunIdentity {
    pub gauntlet_version: String,
    /// The harness config as the run's process saw it, without where runs are written
    /// (a resumed run names its directory itself).
    pub config: serde_json::Value,
    /// One digest per spec the plan was made from (`app:<name>`, `challenges`,
    /// `scorecard`).
    pub specs: BTreeMap<String, String>,
    /// What measures, beside what is measured: the gauntlet commit, the agent's
    /// version, and a fingerprint (size, modification time) of every binary the
    /// trials run (`bin:<name>`), so that a resume after a rebuild or an upgrade of the
    /// agent is refused instead of splitting one run's pages between two harnesses.
    #[serde(default)]
    pub harness: BTreeMap<String, String>,
}

impl RunIdentity {
    /// The first place where `now` differs from this recorded identity, as
    /// "`field`: recorded vs now", or `None` when the two are the same.
    pub fn difference(&self, now: &RunIdentity) -> Option<String> {
        if self.gauntlet_version != now.gauntlet_version {
            return Some(format!(
                "`gauntlet_version`: `{}` recorded vs `{}` now",
                self.gauntlet_version, now.gauntlet_version
            ));
        }
        if let Some(d) = first_difference("config", &self.config, &now.config) {
            return Some(d);
        }
        map_difference("specs", &self.specs, &now.specs)
            .or_else(|| map_difference("harness", &self.harness, &now.harness))
    }
}

/// The first key whose value differs between two maps, as "`name.key`: a recorded vs b now".
fn map_difference(
    name: &str,
    recorded: &BTreeMap<String, String>,
    now: &BTreeMap<String, String>,
) -> Option<String> {
    let keys: std::collections::BTreeSet<&String> = recorded.keys().chain(now.keys()).collect();
    keys.into_iter().find_map(|k| {
        let (a, b) = (recorded.get(k), now.get(k));
        (a != b).then(|| {
            let show = |v: Option<&String>| v.map_or("absent".into(), |v| format!("`{v}`"));
            format!("`{name}.{k}`: {} recorded vs {} now", show(a), show(b))
        })
    })
}

/// The first differing leaf between two JSON values, by dotted path.
fn first_difference(path: &str, a: &serde_json::Value, b: &serde_json::Value) -> Option<String> {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(ma), Value::Object(mb)) => {
            let keys: std::collections::BTreeSet<&String> = ma.keys().chain(mb.keys()).collect();
            keys.into_iter().find_map(|k| {
                let null = Value::Null;
                first_difference(
                    &format!("{path}.{k}"),
                    ma.get(k).unwrap_or(&null),
                    mb.get(k).unwrap_or(&null),
                )
            })
        }
        _ => (a != b).then(|| format!("`{path}`: {a} recorded vs {b} now")),
    }
}

/// Write `identity` into `run_dir` unless the run already has one (a run resumed, or
/// a second process of one nextest run): the first plan is the run's.
pub fn write_once(run_dir: &Path, identity: &RunIdentity) -> Result<(), RecordError> {
    match super::write_new_json(run_dir, IDENTITY_FILE, identity) {
        Ok(_) | Err(RecordError::Exists { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

/// The identity recorded in `run_dir`, or `None` when it has none.
pub fn read(run_dir: &Path) -> Result<Option<RunIdentity>, RecordError> {
    let file = run_dir.join(IDENTITY_FILE);
    let bytes = match std::fs::read(&file) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(super::io(&file)(e)),
    };
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| RecordError::Invalid {
            file,
            reason: e.to_string(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(model: &str, app_hash: &str) -> RunIdentity {
        RunIdentity {
            gauntlet_version: "1".into(),
            config: serde_json::json!({"model": model, "n": 3}),
            specs: [("app:ledger".to_string(), app_hash.to_string())].into(),
            harness: [("commit".to_string(), "abc".to_string())].into(),
        }
    }

    #[test]
    fn the_first_difference_is_named_by_its_field() {
        assert_eq!(id("a", "h").difference(&id("a", "h")), None);
        assert_eq!(
            id("a", "h").difference(&id("b", "h")).as_deref(),
            Some("`config.model`: \"a\" recorded vs \"b\" now")
        );
        assert_eq!(
            id("a", "h").difference(&id("a", "g")).as_deref(),
            Some("`specs.app:ledger`: `h` recorded vs `g` now")
        );
        let mut rebuilt = id("a", "h");
        rebuilt
            .harness
            .insert("bin:gauntlet-agent".into(), "9 bytes".into());
        assert_eq!(
            id("a", "h").difference(&rebuilt).as_deref(),
            Some("`harness.bin:gauntlet-agent`: absent recorded vs `9 bytes` now")
        );
    }

    #[test]
    fn a_run_keeps_its_first_identity() {
        let run = tempfile::tempdir().unwrap();
        write_once(run.path(), &id("a", "h")).unwrap();
        write_once(run.path(), &id("b", "h")).unwrap();
        assert_eq!(read(run.path()).unwrap(), Some(id("a", "h")));
    }
}
