//! What a run was planned with, kept beside its manifest (`run.json`), so that a run
//! resumed later (`gauntlet run --resume`) runs its missing trials under the same
//! harness config and specs, or refuses and names what changed.
//!
//! Records carry their own config, but an interrupted run may have no record at all,
//! and a record says nothing of the specs of trials that never ran.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::any::{AnyRecord, Projection};
use super::challenge::ChallengeRecord;
use super::files::write_new_json;
use super::hackability::RunHackability;
use super::header::{io, RecordError};
use super::qa::{QaRecord, QaSpecRef};
use super::scorecard::ScorecardRecord;

pub const IDENTITY_FILE: &str = "run.json";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunIdentity {
    pub gauntlet_version: String,
    /// The harness config as the run's process saw it, without where runs are written
    /// (a resumed run names its directory itself).
    pub config: serde_json::Value,
    /// One digest per spec the plan was made from, keyed as [`app_key`] says.
    pub specs: BTreeMap<String, String>,
    /// What measures, beside what is measured: the gauntlet commit, the agent's
    /// version, and a fingerprint (size, modification time) of every binary the
    /// trials run (`bin:<name>`), so that a resume after a rebuild or an upgrade of the
    /// agent is refused instead of splitting one run's pages between two harnesses.
    #[serde(default)]
    pub harness: BTreeMap<String, String>,
    /// Where the run's first process ran: not what was measured (a resume on another
    /// host, or a partition of the same run, differs here and nowhere else), so no
    /// comparison of identities looks at it; a merge checks it on its own terms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<Placement>,
    /// The hackability audit the run's tasks were checked against when it was planned,
    /// and where each task stood ([`super::hackability`]). About the tasks, not about
    /// what measured them: no comparison of identities looks at it, so a task audited
    /// again after a run started never refuses its resume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hackability: Option<RunHackability>,
}

/// Where a run directory's trials ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    /// The machine's host name.
    pub host: String,
    /// nextest's `--partition`, as given (`count:1/2`), when the run was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<String>,
    /// The nextest archive the trials ran from (`--archive-file`): `sha256:…` of the
    /// file, or why it could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archive: Option<String>,
}

impl RunIdentity {
    /// Whether this identity pins each trial's own spec ([`qa_key`], [`challenge_key`],
    /// [`probe_key`]), not only each app's (a `run.json` written before it did).
    pub fn pins_trials(&self) -> bool {
        self.specs.keys().any(|k| {
            [QA_KEY, CHALLENGE_KEY, PROBE_KEY]
                .iter()
                .any(|p| k.starts_with(p))
        })
    }

    /// The first place where `now` differs from this recorded identity, as
    /// "`field`: recorded vs now", or `None` when the two are the same.
    pub fn difference(&self, now: &RunIdentity) -> Option<String> {
        self.compare(now, "recorded", "now")
    }

    /// The first place where `other` differs from this identity, as "`field`: value
    /// `mine` vs value `theirs`", the two labels naming where each came from.
    pub fn compare(&self, other: &RunIdentity, mine: &str, theirs: &str) -> Option<String> {
        let labels = (mine, theirs);
        if self.gauntlet_version != other.gauntlet_version {
            return Some(format!(
                "`gauntlet_version`: `{}` {mine} vs `{}` {theirs}",
                self.gauntlet_version, other.gauntlet_version
            ));
        }
        if let Some(d) = first_difference("config", &self.config, &other.config, labels) {
            return Some(d);
        }
        map_difference("specs", &self.specs, &other.specs, labels)
            .or_else(|| map_difference("harness", &self.harness, &other.harness, labels))
    }
}

/// The keys of `run.json`'s `specs`, which each suite's runner fills from its data
/// and [`check_record`] reads back, so both name an entry the same way:
///
/// - `app:<name>`: an app's content hash, then the hash of its corpus and scripts;
/// - `challenges`, `scorecard`: the digest of each suite's data directory;
/// - `qa:<app>::<capability>`: `<kind> <capability_sha256> <flow_sha256 or ->`, as
///   [`qa_spec_value`] writes them from the record's [`QaSpecRef`];
/// - `challenge:<id>`: the SHA-256 of `challenge.yaml`;
/// - `probe:<dimension>::<id>`: the SHA-256 of the probe file.
///
/// The last three pin each trial's own spec, as its record names it, so that rescore
/// can tell a record from the run's plan. Runs made before they existed have only
/// `app:<name>`, `challenges` and `scorecard`: their records are checked against what
/// those pin.
pub fn app_key(app: &str) -> String {
    format!("{APP_KEY}{app}")
}

/// See [`app_key`].
pub fn qa_key(app: &str, capability: &str) -> String {
    format!("{QA_KEY}{app}::{capability}")
}

/// See [`app_key`].
pub fn challenge_key(id: &str) -> String {
    format!("{CHALLENGE_KEY}{id}")
}

/// See [`app_key`].
pub fn probe_key(dimension: &str, id: &str) -> String {
    format!("{PROBE_KEY}{dimension}::{id}")
}

/// See [`app_key`].
pub const CHALLENGES_KEY: &str = "challenges";
/// See [`app_key`].
pub const SCORECARD_KEY: &str = "scorecard";

/// The hash of a planned task (a trial's name without its repeat) from the parts its
/// suite's runner names, as a hackability audit covers it ([`super::hackability`]):
/// what an adversary could use to game it, so an edit anywhere there makes an earlier
/// audit an audit of something else. Harness code (scorers, the fact bank's lists,
/// prompt templates) is not in a task's hash: an audit records the commit it ran at,
/// shown on its page.
pub fn task_hash(parts: &[String]) -> String {
    crate::hash::sha256(parts.join("\n").as_bytes())
}

const APP_KEY: &str = "app:";
const QA_KEY: &str = "qa:";
const CHALLENGE_KEY: &str = "challenge:";
const PROBE_KEY: &str = "probe:";

fn kind_name(kind: crate::spec::CapabilityKind) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// A qa trial's `specs` entry ([`qa_key`]): what [`check_record`] reads a qa record's
/// spec against.
pub fn qa_spec_value(r: &QaSpecRef) -> String {
    format!(
        "{} {} {}",
        kind_name(r.kind),
        r.capability_sha256,
        r.script_sha256.as_deref().unwrap_or("-")
    )
}

/// Where a record's spec disagrees with what the run planned in `run.json`: one line
/// per field, naming it, the record's value and the planned one. A record moved,
/// copied or relabelled from another trial (another capability, app, challenge or
/// probe) names a spec the run did not plan for the trial it now stands for.
///
/// What an old `run.json` (before each trial had its own entry, [`app_key`]) lacks is
/// not checked: its qa records are checked against the app's content hash only.
pub fn check_record(planned: &RunIdentity, rec: &AnyRecord) -> Vec<String> {
    let has = |prefix: &str| planned.specs.keys().any(|k| k.starts_with(prefix));
    // Shared by the three suites' checks, which each may add to it.
    let out = std::cell::RefCell::new(Vec::new());
    let differs = |field: &str, recorded: &str, want: &str, key: &str| {
        out.borrow_mut().push(format!(
            "`{field}` is `{recorded}` in the record, but the run planned `{want}` ({IDENTITY_FILE} `specs.{key}`)"
        ));
    };
    rec.project(Projection {
        qa: |r: &QaRecord| {
            let s = &r.spec;
            let app_key = app_key(&s.app);
            match planned.specs.get(&app_key) {
                None => differs("spec.app", &s.app, "no such app", &app_key),
                Some(v) => {
                    let want = v.split(' ').next().unwrap_or_default();
                    if want != s.app_content_hash {
                        differs("spec.app_content_hash", &s.app_content_hash, want, &app_key);
                    }
                }
            }
            let key = qa_key(&s.app, &s.capability);
            match planned.specs.get(&key) {
                Some(v) => {
                    let mut want = v.split(' ');
                    let have = [
                        ("spec.kind", kind_name(s.kind)),
                        ("spec.capability_sha256", s.capability_sha256.clone()),
                        (
                            "spec.flow_sha256",
                            s.script_sha256.clone().unwrap_or("-".into()),
                        ),
                    ];
                    for (field, have) in have {
                        let w = want.next().unwrap_or_default();
                        if w != have {
                            differs(field, &have, w, &key);
                        }
                    }
                }
                None if has(QA_KEY) => {
                    differs("spec.capability", &s.capability, "no such capability", &key)
                }
                None => {}
            }
        },
        challenge: |r: &ChallengeRecord| {
            let p = &r.provenance;
            let key = challenge_key(&p.challenge_id);
            match planned.specs.get(&key) {
                Some(want) if *want != p.manifest_sha256 => {
                    differs("provenance.manifest_sha256", &p.manifest_sha256, want, &key)
                }
                Some(_) => {}
                None if has(CHALLENGE_KEY) => differs(
                    "provenance.challenge_id",
                    &p.challenge_id,
                    "no such challenge",
                    &key,
                ),
                None => {}
            }
        },
        scorecard: |r: &ScorecardRecord| {
            let key = probe_key(&r.probe.probe.dimension, &r.probe.probe.id);
            match planned.specs.get(&key) {
                Some(want) if *want != r.probe.sha256 => {
                    differs("probe.sha256", &r.probe.sha256, want, &key)
                }
                Some(_) => {}
                None if has(PROBE_KEY) => {
                    differs("probe.probe.id", &r.probe.probe.id, "no such probe", &key)
                }
                None => {}
            }
        },
    });
    out.into_inner()
}

/// The first key whose value differs between two maps, as "`name.key`: a recorded vs b now".
fn map_difference(
    name: &str,
    recorded: &BTreeMap<String, String>,
    now: &BTreeMap<String, String>,
    (mine, theirs): (&str, &str),
) -> Option<String> {
    let keys: std::collections::BTreeSet<&String> = recorded.keys().chain(now.keys()).collect();
    keys.into_iter().find_map(|k| {
        let (a, b) = (recorded.get(k), now.get(k));
        (a != b).then(|| {
            let show = |v: Option<&String>| v.map_or("absent".into(), |v| format!("`{v}`"));
            format!("`{name}.{k}`: {} {mine} vs {} {theirs}", show(a), show(b))
        })
    })
}

/// The first differing leaf between two JSON values, by dotted path.
fn first_difference(
    path: &str,
    a: &serde_json::Value,
    b: &serde_json::Value,
    labels: (&str, &str),
) -> Option<String> {
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
                    labels,
                )
            })
        }
        _ => (a != b).then(|| format!("`{path}`: {a} {} vs {b} {}", labels.0, labels.1)),
    }
}

/// Write `identity` into `run_dir` unless the run already has one (a run resumed, or
/// a second process of one nextest run): the first plan is the run's.
pub fn write_once(run_dir: &Path, identity: &RunIdentity) -> Result<(), RecordError> {
    match write_new_json(run_dir, IDENTITY_FILE, identity) {
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
        Err(e) => return Err(io(&file)(e)),
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
            placement: None,
            hackability: None,
        }
    }

    #[test]
    fn a_task_audited_again_never_refuses_a_resume() {
        let audited = RunIdentity {
            hackability: Some(super::super::hackability::RunHackability::of(
                "redteam/audited.json",
                Err("no audit".into()),
                Err("no catalogue".into()),
                &[("qa::a::b".into(), crate::spec::Suite::Qa, "sha256:x".into())],
            )),
            ..id("a", "h")
        };
        assert_eq!(audited.difference(&id("a", "h")), None);
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
    fn where_a_run_ran_is_not_what_it_measured() {
        let mut elsewhere = id("a", "h");
        elsewhere.placement = Some(Placement {
            host: "runner-2".into(),
            partition: Some("count:2/2".into()),
            archive: Some("sha256:00".into()),
        });
        assert_eq!(id("a", "h").difference(&elsewhere), None);
        assert_eq!(
            id("a", "h")
                .compare(&id("b", "h"), "in p1", "in p2")
                .as_deref(),
            Some("`config.model`: \"a\" in p1 vs \"b\" in p2")
        );
    }

    #[test]
    fn a_record_is_checked_against_the_spec_its_run_planned() {
        use crate::record::any::{load_any, AnyRecord};
        let dir = tempfile::tempdir().unwrap();
        crate::report::synthetic::SyntheticRun::fixed()
            .write(dir.path())
            .unwrap();
        let file = crate::record::find_records(dir.path()).unwrap().remove(0);
        let rec = load_any(&file).unwrap();
        let AnyRecord::Qa(q) = &rec else {
            panic!("a qa record")
        };
        let s = &q.spec;
        let app = format!("app:{}", s.app);
        let cap = format!("qa:{}::{}", s.app, s.capability);
        let mut planned = id("a", "h");
        planned.specs = [(app.clone(), format!("{} sha256:corpus", s.app_content_hash))].into();
        // A run.json from before trials' specs were kept pins the app only.
        assert!(!planned.pins_trials());
        assert_eq!(check_record(&planned, &rec), Vec::<String>::new());
        planned.specs.insert(cap.clone(), qa_spec_value(s));
        assert!(planned.pins_trials());
        assert_eq!(check_record(&planned, &rec), Vec::<String>::new());
        // The spec of another capability, carried by a relabelled record.
        planned
            .specs
            .insert(cap.clone(), format!("{} sha256:other -", kind_name(s.kind)));
        let found = check_record(&planned, &rec);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(
            found[0],
            format!(
                "`spec.capability_sha256` is `{}` in the record, but the run planned `sha256:other` (run.json `specs.{cap}`)",
                s.capability_sha256
            )
        );
        // A capability the run never planned.
        planned.specs.remove(&cap);
        planned
            .specs
            .insert("qa:other::cap".into(), "feature sha256:x -".into());
        let found = check_record(&planned, &rec);
        assert!(found[0].starts_with("`spec.capability` is `"), "{found:?}");
        // Another build of the app.
        planned
            .specs
            .insert(app, "sha256:other sha256:corpus".into());
        let found = check_record(&planned, &rec);
        assert!(
            found[0].starts_with("`spec.app_content_hash` is `"),
            "{found:?}"
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
