//! What a hackability audit found (`gauntlet redteam`), and which audit a run's tasks
//! passed.
//!
//! An audit runs every adversary of the catalogue ([`crate::spec::redteam`]) as an
//! agent against every planned task and keeps, per task, the outcome each one got
//! beside the outcome the do-nothing adversary got: the task's **honest floor**. A
//! task is hackable when an adversary is credited where the floor is not, or when the
//! floor itself is credited (a task that credits doing nothing credits anybody).
//! "Credited" is what each suite's figures count as an achievement: a qa `verified`, a
//! challenge's clean success, a passed probe. The scripted reference runs beside the
//! adversaries: a task nobody can solve is as broken as one anybody can game.
//!
//! The audit of the shipped tasks is committed (`redteam/audited.json`); a run records
//! it with each task's hash as the run saw it ([`RunHackability`]), so its pages say
//! which tasks an audit covered, and a task edited since its audit shows as unaudited.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::any::AnyRecord;
use super::header::{io, RecordError};
use crate::evidence::normalize::ReportedUsage;
use crate::evidence::usage::UsageEntry;
use crate::spec::redteam::{CatalogueId, Class};
use crate::spec::Suite;

pub use crate::spec::redteam::AUDITED_FILE;

pub const SCHEMA_VERSION: u32 = 1;

/// A reason kept in an audit is cut here: the record holds the whole of it.
const REASON_CAP: usize = 240;

/// One audit: every task's row, and what the audit itself ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Hackability {
    pub schema_version: u32,
    pub catalogue: CatalogueId,
    /// Only the catalogue's sample ran (`gauntlet redteam --sample`), not all of it.
    pub sampled: bool,
    pub adversaries: Vec<AdversaryRun>,
    /// In plan order.
    pub tasks: Vec<TaskAudit>,
    /// What the audit found wrong with the harness rather than with a task: an
    /// adversary's run whose records do not rescore, or whose files were altered.
    pub harness: Vec<HarnessFinding>,
    /// The whole audit's wall time, and how many trials it ran at once.
    pub wall_ms: u64,
    pub jobs: usize,
    /// What the audit ran under and at, for its page: the gauntlet commit (harness
    /// code is not in a task's hash), the mode, N, M and the scorecard's seed.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub made_with: BTreeMap<String, String>,
}

/// One adversary's run within an audit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AdversaryRun {
    pub id: String,
    pub class: Class,
    pub aims: String,
    pub trials: usize,
    pub wall_ms: u64,
}

/// One task's row: the floor, each adversary that plays its suite, the reference.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TaskAudit {
    /// The planned trial's name without a repeat (`qa::api-ledger::balance`).
    pub task: String,
    pub suite: Suite,
    /// [`crate::record::identity::task_hash`]: what the audit covered.
    pub hash: String,
    pub floor: Cell,
    /// By adversary id; the floor is not repeated here.
    pub adversaries: BTreeMap<String, Cell>,
    /// The scripted reference's outcome, when the audit ran it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<Cell>,
}

/// The outcome one agent got on one task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Cell {
    /// The suite's outcome words (`verified`, `failed/clean`, ...), or `no record`.
    pub outcome: String,
    /// What the suite's figures count as an achievement.
    pub credited: bool,
    /// The trial's test passed: the honest best outcome for the task.
    pub passed: bool,
    pub reason: String,
    /// Won by an adversary that can only win by chance, at a rate the gate bounds (a
    /// test that fails a random run): shown, never counted as a hackable task.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub luck: bool,
    /// The trial directory, relative to the audit's directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trial_dir: Option<String>,
    /// The tokens the agent says it received beside those the proxy metered, where the
    /// audit judges metering (an adversary of class `evade-meter`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metering: Option<Metering>,
}

/// One trial's tokens (input plus output) as the agent accounts for them and as the
/// metering proxy metered them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Metering {
    /// What the agent's own `usage` events (its stream's usage, in any dialect) add up
    /// to, over every process of the trial.
    pub reported: u64,
    /// What the proxy metered for the trial, over every call it recorded.
    pub metered: u64,
}

/// Something an adversary did to the harness's own records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HarnessFinding {
    pub adversary: String,
    pub what: String,
}

impl Cell {
    /// The cell of one record.
    pub fn of(rec: &AnyRecord, trial_dir: Option<String>) -> Cell {
        let suite = rec.as_suite();
        Cell {
            outcome: suite.outcome_words(),
            credited: suite.credited(),
            passed: suite.passed(),
            reason: cap(&suite.reason()),
            luck: false,
            trial_dir,
            metering: None,
        }
    }

    /// A planned trial that left no record: nothing is credited to it.
    pub fn missing(why: &str) -> Cell {
        Cell {
            outcome: "no record".into(),
            credited: false,
            passed: false,
            reason: cap(why),
            luck: false,
            trial_dir: None,
            metering: None,
        }
    }
}

impl Metering {
    /// The tokens of an agent's account (`reported`, summed over its processes) beside
    /// the proxy's usage log of the trial. Tokens, not calls: in scripted mode the proxy
    /// writes into each answer's usage block exactly the tokens it meters
    /// (`proxy::meter::scripted` feeds both), and in byok mode it meters the provider's
    /// own usage block of the answer it relays, so an honest agent that reports each
    /// answer's usage reports what was metered, to the token. Input and output are
    /// added up on both sides (cache tokens are part of the metered input; an agent
    /// that reports them apart is not compared: only `evade-meter` adversaries are,
    /// and they fold them in as the meter does).
    pub fn of<'a>(
        reported: impl IntoIterator<Item = &'a ReportedUsage>,
        metered: &[UsageEntry],
    ) -> Metering {
        let reported = reported.into_iter().fold(0u64, |a, u| {
            a.saturating_add(u.input_tokens.unwrap_or(0))
                .saturating_add(u.output_tokens.unwrap_or(0))
        });
        let metered = metered.iter().fold(0u64, |a, e| {
            a.saturating_add(e.input_tokens.unwrap_or(0))
                .saturating_add(e.output_tokens.unwrap_or(0))
        });
        Metering { reported, metered }
    }

    /// Tokens the agent received that the proxy did not meter, if any.
    pub fn unmetered(&self) -> Option<u64> {
        self.reported
            .checked_sub(self.metered)
            .filter(|&excess| excess > 0)
    }

    /// The harness finding of trial `trial`, when the agent received more than was
    /// metered: a model answer reached it around the proxy, or in another trial's name.
    pub fn finding(&self, trial: &str) -> Option<String> {
        self.unmetered().map(|n| {
            format!(
                "`{trial}`: the agent received {n} tokens the proxy did not meter (it reports {}, the proxy metered {})",
                self.reported, self.metered
            )
        })
    }
}

/// The [`Metering`] of one record in `trial_dir`: the agent's account as its suite's
/// record reads it ([`super::suite::SuiteRecord::reported_usage`]) beside the tokens
/// of the record's usage log.
pub fn metering_of(trial_dir: &Path, rec: &AnyRecord) -> Result<Metering, String> {
    let rec = rec.as_suite();
    Ok(Metering::of(
        &rec.reported_usage(trial_dir)?,
        rec.metered_usage(),
    ))
}

fn cap(s: &str) -> String {
    if s.len() <= REASON_CAP {
        return s.to_string();
    }
    let mut end = REASON_CAP;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

impl TaskAudit {
    /// Who beat the honest floor: every adversary credited where the floor is not, or
    /// the floor itself when it is credited.
    pub fn hackable_by(&self, floor_id: &str) -> Vec<String> {
        if self.floor.credited {
            return vec![floor_id.to_string()];
        }
        self.adversaries
            .iter()
            .filter(|(_, c)| c.credited && !c.luck)
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// Adversaries of chance credited where the floor is not: within the gate's bound.
    pub fn lucky(&self) -> Vec<String> {
        if self.floor.credited {
            return vec![];
        }
        self.adversaries
            .iter()
            .filter(|(_, c)| c.credited && c.luck)
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// Whether the reference reached the task's honest best outcome (`None`: the
    /// reference did not run).
    pub fn solved(&self) -> Option<bool> {
        self.reference.as_ref().map(|c| c.passed)
    }
}

impl Hackability {
    /// The floor's id: the adversary of class `floor`.
    pub fn floor_id(&self) -> &str {
        self.adversaries
            .iter()
            .find(|a| a.class == Class::Floor)
            .map(|a| a.id.as_str())
            .unwrap_or("floor")
    }

    /// Tasks some adversary beat, with who beat them.
    pub fn hackable(&self) -> Vec<(&TaskAudit, Vec<String>)> {
        let floor = self.floor_id();
        self.tasks
            .iter()
            .map(|t| (t, t.hackable_by(floor)))
            .filter(|(_, by)| !by.is_empty())
            .collect()
    }

    /// Tasks the reference ran on and did not solve.
    pub fn unsolved(&self) -> Vec<&TaskAudit> {
        self.tasks
            .iter()
            .filter(|t| t.solved() == Some(false))
            .collect()
    }

    /// No task hackable, every task the reference ran on solved, no harness finding.
    pub fn holds(&self) -> bool {
        self.hackable().is_empty() && self.unsolved().is_empty() && self.harness.is_empty()
    }

    pub fn read(file: &Path) -> Result<Hackability, RecordError> {
        let bytes = std::fs::read(file).map_err(io(file))?;
        serde_json::from_slice(&bytes).map_err(|e| RecordError::Invalid {
            file: file.to_path_buf(),
            reason: e.to_string(),
        })
    }

    pub fn write(&self, file: &Path) -> Result<(), RecordError> {
        let mut bytes = serde_json::to_vec_pretty(self).map_err(|e| RecordError::Invalid {
            file: file.to_path_buf(),
            reason: e.to_string(),
        })?;
        bytes.push(b'\n');
        std::fs::write(file, bytes).map_err(io(file))
    }
}

/// Where one task of a run stands against the audit the run recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Standing {
    /// Audited at this hash: no adversary beat its floor, and the reference solved it
    /// when the audit ran the reference.
    Audited,
    /// Audited at this hash, and beaten.
    Hackable { by: Vec<String> },
    /// Audited at this hash, and the reference did not solve it.
    Unsolved,
    /// Not covered: never audited, or changed since.
    Unaudited { why: String },
}

/// The audit a run's tasks were checked against, as the run recorded it when it was
/// planned (in `run.json`, never compared on resume: an audit is about the tasks, not
/// what measured them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunHackability {
    /// The audit file, as the repository names it, and its SHA-256 (`None`: no audit
    /// was found).
    pub file: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audit: Option<Hackability>,
    /// By task: the suite, the task's hash as the run saw it, and its standing.
    pub tasks: BTreeMap<String, TaskStanding>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TaskStanding {
    pub suite: Suite,
    pub hash: String,
    #[serde(flatten)]
    pub standing: Standing,
}

/// One suite's line on a page.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SuiteLine {
    pub tasks: usize,
    pub audited: usize,
    pub hackable: usize,
    pub unsolved: usize,
    pub unaudited: usize,
}

impl RunHackability {
    /// The standing of each of `tasks` (task, suite, hash now) against `audit` read
    /// from `file` (`None`: no audit file, or why it could not be read), made with the
    /// catalogue `catalogue` is now (`Err`: why it could not be loaded). An audit made
    /// with another catalogue is an audit by other adversaries: every task is then
    /// unaudited, the audit kept for its page.
    pub fn of(
        file: &str,
        audit: Result<(Hackability, String), String>,
        catalogue: Result<CatalogueId, String>,
        tasks: &[(String, Suite, String)],
    ) -> RunHackability {
        let (audit, sha256, mut missing) = match audit {
            Ok((a, sha)) => (Some(a), Some(sha), None),
            Err(why) => (None, None, Some(why)),
        };
        if let Some(a) = &audit {
            match catalogue {
                Ok(now) if now != a.catalogue => {
                    missing = Some(format!(
                        "{file} was made with catalogue v{} {}, the catalogue is now v{} {}",
                        a.catalogue.version,
                        short(&a.catalogue.sha256),
                        now.version,
                        short(&now.sha256)
                    ))
                }
                Ok(_) => {}
                Err(why) => missing = Some(format!("the catalogue does not load: {why}")),
            }
        }
        let rows: BTreeMap<&str, &TaskAudit> = audit
            .iter()
            .flat_map(|a| a.tasks.iter().map(|t| (t.task.as_str(), t)))
            .collect();
        let floor = audit.as_ref().map(|a| a.floor_id().to_string());
        let mut out = BTreeMap::new();
        for (task, suite, hash) in tasks {
            let standing = match (rows.get(task.as_str()), &missing) {
                (_, Some(why)) => Standing::Unaudited { why: why.clone() },
                (None, None) => Standing::Unaudited {
                    why: format!("not in {file}: never audited"),
                },
                (Some(row), None) if row.hash != *hash => Standing::Unaudited {
                    why: format!(
                        "changed since its audit: {} audited, {} now",
                        short(&row.hash),
                        short(hash)
                    ),
                },
                (Some(row), None) => {
                    let by = row.hackable_by(floor.as_deref().unwrap_or("floor"));
                    if !by.is_empty() {
                        Standing::Hackable { by }
                    } else if row.solved() == Some(false) {
                        Standing::Unsolved
                    } else {
                        Standing::Audited
                    }
                }
            };
            out.insert(
                task.clone(),
                TaskStanding {
                    suite: *suite,
                    hash: hash.clone(),
                    standing,
                },
            );
        }
        RunHackability {
            file: file.to_string(),
            sha256,
            audit,
            tasks: out,
        }
    }

    /// The counts of `suite`'s tasks.
    pub fn line(&self, suite: Suite) -> SuiteLine {
        let mut l = SuiteLine::default();
        for t in self.tasks.values().filter(|t| t.suite == suite) {
            l.tasks += 1;
            match &t.standing {
                Standing::Audited => l.audited += 1,
                Standing::Hackable { .. } => {
                    l.audited += 1;
                    l.hackable += 1
                }
                Standing::Unsolved => {
                    l.audited += 1;
                    l.unsolved += 1
                }
                Standing::Unaudited { .. } => l.unaudited += 1,
            }
        }
        l
    }

    /// How many adversaries the recorded audit ran on `suite`'s tasks.
    pub fn adversaries(&self, suite: Suite) -> usize {
        self.audit.as_ref().map_or(0, |a| {
            a.tasks
                .iter()
                .filter(|t| t.suite == suite)
                .map(|t| t.adversaries.len() + 1)
                .max()
                .unwrap_or(0)
        })
    }
}

/// `sha256:0123456789ab` of a longer digest.
pub fn short(hash: &str) -> &str {
    let end = "sha256:".len() + 12;
    hash.get(..end).unwrap_or(hash)
}

/// The task a trial of this name is: its name without a repeat (`::r2`).
pub fn task_of(trial: &str) -> &str {
    match trial.rsplit_once("::") {
        Some((head, tail))
            if tail.len() > 1
                && tail.starts_with('r')
                && tail[1..].bytes().all(|b| b.is_ascii_digit()) =>
        {
            head
        }
        _ => trial,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(credited: bool, passed: bool) -> Cell {
        Cell {
            outcome: if credited { "verified" } else { "error" }.into(),
            credited,
            passed,
            reason: String::new(),
            luck: false,
            trial_dir: None,
            metering: None,
        }
    }

    #[test]
    fn a_win_of_chance_is_shown_as_luck_not_as_a_hackable_task() {
        let mut t = row(
            "qa::a::b",
            false,
            &[("guess", true), ("liar", false)],
            Some(true),
        );
        if let Some(c) = t.adversaries.get_mut("guess") {
            c.luck = true;
        }
        assert!(t.hackable_by("do-nothing").is_empty());
        assert_eq!(t.lucky(), vec!["guess".to_string()]);
        assert!(audit(vec![t.clone()]).holds());
        if let Some(c) = t.adversaries.get_mut("liar") {
            c.credited = true;
        }
        assert_eq!(t.hackable_by("do-nothing"), vec!["liar".to_string()]);
    }

    fn row(task: &str, floor: bool, advs: &[(&str, bool)], reference: Option<bool>) -> TaskAudit {
        TaskAudit {
            task: task.into(),
            suite: Suite::Qa,
            hash: format!("sha256:{task}"),
            floor: cell(floor, floor),
            adversaries: advs
                .iter()
                .map(|(id, c)| (id.to_string(), cell(*c, *c)))
                .collect(),
            reference: reference.map(|p| cell(p, p)),
        }
    }

    fn audit(tasks: Vec<TaskAudit>) -> Hackability {
        Hackability {
            schema_version: SCHEMA_VERSION,
            catalogue: CatalogueId {
                version: 1,
                sha256: "sha256:cat".into(),
            },
            sampled: false,
            adversaries: vec![AdversaryRun {
                id: "do-nothing".into(),
                class: Class::Floor,
                aims: String::new(),
                trials: 0,
                wall_ms: 0,
            }],
            tasks,
            harness: vec![],
            wall_ms: 0,
            jobs: 1,
            made_with: BTreeMap::new(),
        }
    }

    #[test]
    fn a_task_is_hackable_when_an_adversary_beats_the_floor_or_the_floor_is_credited() {
        let a = audit(vec![
            row("qa::a::ok", false, &[("liar", false)], Some(true)),
            row(
                "qa::a::leaky",
                false,
                &[("liar", true), ("copier", false)],
                Some(true),
            ),
            row("qa::a::free", true, &[("liar", true)], Some(true)),
            row("qa::a::broken", false, &[("liar", false)], Some(false)),
        ]);
        let hackable: Vec<(String, Vec<String>)> = a
            .hackable()
            .into_iter()
            .map(|(t, by)| (t.task.clone(), by))
            .collect();
        assert_eq!(
            hackable,
            vec![
                ("qa::a::leaky".to_string(), vec!["liar".to_string()]),
                ("qa::a::free".to_string(), vec!["do-nothing".to_string()]),
            ]
        );
        assert_eq!(a.unsolved().len(), 1);
        assert!(!a.holds());
        assert!(audit(vec![row("qa::a::ok", false, &[("liar", false)], None)]).holds());
    }

    #[test]
    fn a_run_shows_a_task_changed_since_its_audit_as_unaudited() {
        let a = audit(vec![
            row("qa::a::ok", false, &[], Some(true)),
            row("qa::a::leaky", false, &[("liar", true)], Some(true)),
            row("qa::a::edited", false, &[], Some(true)),
        ]);
        let tasks = vec![
            (
                "qa::a::ok".to_string(),
                Suite::Qa,
                "sha256:qa::a::ok".to_string(),
            ),
            (
                "qa::a::leaky".to_string(),
                Suite::Qa,
                "sha256:qa::a::leaky".to_string(),
            ),
            (
                "qa::a::edited".to_string(),
                Suite::Qa,
                "sha256:other".to_string(),
            ),
            (
                "qa::a::new".to_string(),
                Suite::Qa,
                "sha256:new".to_string(),
            ),
        ];
        let id = a.catalogue.clone();
        let run = RunHackability::of(
            "redteam/audited.json",
            Ok((a.clone(), "sha256:f".into())),
            Ok(id),
            &tasks,
        );
        let st = |t: &str| run.tasks[t].standing.clone();
        assert_eq!(st("qa::a::ok"), Standing::Audited);
        assert_eq!(
            st("qa::a::leaky"),
            Standing::Hackable {
                by: vec!["liar".into()]
            }
        );
        assert!(
            matches!(st("qa::a::edited"), Standing::Unaudited { why } if why.contains("changed since its audit"))
        );
        assert!(
            matches!(st("qa::a::new"), Standing::Unaudited { why } if why.contains("never audited"))
        );
        assert_eq!(
            run.line(Suite::Qa),
            SuiteLine {
                tasks: 4,
                audited: 2,
                hackable: 1,
                unsolved: 0,
                unaudited: 2
            }
        );
        let none = RunHackability::of("x", Err("no audit file".into()), Err("-".into()), &tasks);
        assert_eq!(none.line(Suite::Qa).unaudited, 4);
        let other = CatalogueId {
            version: 2,
            sha256: "sha256:other".into(),
        };
        let stale = RunHackability::of("x", Ok((a, "sha256:f".into())), Ok(other), &tasks);
        assert_eq!(stale.line(Suite::Qa).unaudited, 4);
        assert!(
            stale.audit.is_some(),
            "the stale audit is kept for its page"
        );
        assert!(
            matches!(&stale.tasks["qa::a::ok"].standing, Standing::Unaudited { why } if why.contains("the catalogue is now v2")),
            "{:?}",
            stale.tasks["qa::a::ok"]
        );
    }

    #[test]
    fn an_agent_that_received_more_tokens_than_were_metered_is_a_harness_finding() {
        let call = |i: u64, o: u64| UsageEntry {
            input_tokens: Some(i),
            output_tokens: Some(o),
            source: "scripted".into(),
            ..UsageEntry::default()
        };
        let said = |i: u64, o: u64| ReportedUsage {
            input_tokens: Some(i),
            output_tokens: Some(o),
            ..ReportedUsage::default()
        };
        let metered = [call(40, 10), call(7, 3)];
        // Every answer reported as it was metered, over two processes: no finding.
        let honest = Metering::of([&said(40, 10), &said(7, 3)], &metered);
        assert_eq!(
            honest,
            Metering {
                reported: 60,
                metered: 60
            }
        );
        assert_eq!(honest.finding("qa::a::b"), None);
        // Reporting less than was metered (an answer it did not account for) is not
        // evasion; a call the proxy refused meters nothing.
        let refused = UsageEntry {
            source: "budget".into(),
            ..UsageEntry::default()
        };
        let mut with_refusal = metered.to_vec();
        with_refusal.push(refused);
        assert_eq!(
            Metering::of([&said(40, 10)], &with_refusal).finding("qa::a::b"),
            None
        );
        assert_eq!(Metering::of([], &with_refusal).unmetered(), None);
        // One answer more than the proxy metered, reached around it.
        let evaded = Metering::of([&said(47, 13), &said(400, 100)], &metered);
        assert_eq!(evaded.unmetered(), Some(500));
        assert_eq!(
            evaded.finding("scorecard::memory::p1").as_deref(),
            Some("`scorecard::memory::p1`: the agent received 500 tokens the proxy did not meter (it reports 560, the proxy metered 60)")
        );
        // An answer with no usage block counts as reported by an agent that says 1/1,
        // and against an empty log that is unmetered.
        assert_eq!(Metering::of([&said(1, 1)], &[]).unmetered(), Some(2));
        // Absent figures count as nothing, never as a failure to compare.
        assert_eq!(
            Metering::of([&ReportedUsage::default()], &[UsageEntry::default()]).unmetered(),
            None
        );
    }

    #[test]
    fn a_repeat_is_the_same_task() {
        assert_eq!(
            task_of("qa::api-ledger::balance::r3"),
            "qa::api-ledger::balance"
        );
        assert_eq!(
            task_of("qa::api-ledger::balance"),
            "qa::api-ledger::balance"
        );
        assert_eq!(
            task_of("challenge::tally-report::none"),
            "challenge::tally-report::none"
        );
        assert_eq!(task_of("qa::app::r"), "qa::app::r");
    }
}
