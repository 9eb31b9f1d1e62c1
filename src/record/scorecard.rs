//! The scorecard's record: one `record.json` per probe trial, beside the raw evidence
//! (each turn's stdout/stderr) it names, and how it re-derives offline.
//!
//! A record carries the probe as it was loaded (its rules) and the bank seed, so
//! rescore needs neither the repository's data nor a network: it re-reads every turn's
//! reply from the raw stdout (hash-checked), re-runs the pure scorer, and compares.

use std::borrow::Cow;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::header::{unsealed_tag, Header, RecordError, RECORD_FILE, SCHEMA_VERSION};
use super::raw::Hashed;
use super::row::{RescoreError, RescoreRow};
use super::stream::{parse_checked, parser_named, reported_in};
use super::suite::{Subject, SuiteRecord};
use crate::evidence::normalize::ReportedUsage;
use crate::evidence::usage::UsageEntry;
use crate::evidence::{ProcessEnd, RawFile};
use crate::score::scorecard::{observe, ProbeEvidence, ProbeResult};
use crate::score::{Outcome, Verdict};
use crate::spec::scorecard::{Bank, LoadedProbe, Scorecard};
use crate::spec::Suite;

pub const SUITE: &str = "scorecard";

/// What the probe ran under, beyond the harness config.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ScorecardRun {
    /// The fact bank's seed: the same seed gives the same probes.
    pub seed: String,
    /// The scripted agent profile (`stub`, `reactive`, `autonomous`) in scripted mode.
    pub profile: Option<String>,
    pub probe: String,
    pub dimension: String,
    /// Seconds one nominal day of idle lasted in this run (86400 for a full run).
    pub idle_secs_per_day: f64,
    /// The idle windows were shorter than their nominal hours: never ranked beside full runs.
    pub compressed: bool,
}

/// The raw evidence of one agent process (a turn, or the background mode).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ProcessRaw {
    /// The turn label, or `background`.
    pub label: String,
    /// The session id the harness chose (`None` for the background mode).
    pub session: Option<String>,
    pub command: Vec<String>,
    pub end: ProcessEnd,
    pub stdout: RawFile,
    pub stderr: RawFile,
    /// What this process's proxy relayed, call by call (see `QaEvidence::calls`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calls: Option<RawFile>,
    /// Which of the record's `usage` entries this process's proxy metered: indices
    /// `[from, to)`. Each process has its own proxy, numbering its calls from 0, so
    /// this is what ties a turn's calls to their tokens. Absent in records from
    /// before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage_range: Option<[usize; 2]>,
    /// What the kernel saw this process's sandbox open and execute
    /// ([`crate::evidence::observed`]), hashed like every raw file. Absent when the
    /// run was unsealed, and in records from before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observation: Option<RawFile>,
}

impl ProcessRaw {
    /// The usage entries of `all` (the record's) this process's proxy metered; empty
    /// when the record does not say, or says something out of range.
    pub fn usage<'a>(
        &self,
        all: &'a [crate::evidence::usage::UsageEntry],
    ) -> &'a [crate::evidence::usage::UsageEntry] {
        match self.usage_range {
            Some([from, to]) if from <= to && to <= all.len() => &all[from..to],
            _ => &[],
        }
    }
}

/// A scorecard probe's record: the shared header, the run's scorecard settings, the
/// probe and tables it was scored with, every agent process and the result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ScorecardRecord {
    /// Suite `scorecard`; trial `scorecard::<dimension>::<probe>`.
    #[serde(flatten)]
    pub header: Header,
    pub scorecard: ScorecardRun,
    /// The probe as loaded (rules and file hash): rescore scores against this.
    pub probe: LoadedProbe,
    /// The level and classification tables the run was scored with, so the leaderboard
    /// aggregates records offline.
    pub card: Scorecard,
    /// One entry per agent process, in order; turn replies are re-read from these.
    pub processes: Vec<ProcessRaw>,
    /// The sinks' own logs as written beside the record (`sinks.json`), hashed like
    /// every raw file; absent when the sinks never started, and in records written
    /// before it was kept.
    #[serde(default)]
    pub sinks_log: Option<RawFile>,
    /// Every model call of every process, as the metering proxy saw it.
    pub usage: Vec<crate::evidence::usage::UsageEntry>,
    pub evidence: ProbeEvidence,
    pub result: ProbeResult,
    pub verdict: Verdict,
}

impl ScorecardRecord {
    /// The signal that stopped the probe part-way: between or during its steps, read
    /// from the evidence (see [`super::qa::QaRecord::interrupted`]).
    pub fn interrupted(&self) -> Option<&str> {
        self.evidence.interrupted.as_deref().or_else(|| {
            self.processes
                .iter()
                .find_map(|p| p.end.interrupted.as_deref())
        })
    }
}

/// The test verdict of a probe result: the behaviour was observed, or not, or the probe
/// could not run.
pub fn verdict_of(result: &ProbeResult, evidence: &ProbeEvidence) -> Verdict {
    // A probe stopped part-way is not judged, whatever its observations say so far.
    if let Some(signal) = &evidence.interrupted {
        return Verdict {
            outcome: Outcome::Error,
            reason: format!(
                "the run was interrupted ({signal}) before the probe ended: stopped, not judged"
            ),
            passed: false,
        };
    }
    // A scripted turn that did not run as scripted measured the harness, not the agent.
    if let Some((label, why)) = evidence
        .turns
        .iter()
        .find_map(|t| Some((&t.label, t.script_failure.as_ref()?)))
    {
        return Verdict {
            outcome: Outcome::Error,
            reason: format!(
                "the harness's script did not run on this agent: turn `{label}`: {why}"
            ),
            passed: false,
        };
    }
    let outcome = if result.passed {
        Outcome::Verified
    } else if evidence.setup_error.is_some() {
        Outcome::Error
    } else {
        Outcome::Unverified
    };
    Verdict {
        outcome,
        reason: result.reason.clone(),
        passed: result.passed,
    }
}

/// Read one scorecard record.
pub fn load(file: &Path) -> Result<ScorecardRecord, RecordError> {
    let bytes = std::fs::read(file).map_err(|source| RecordError::Io {
        file: file.to_path_buf(),
        source,
    })?;
    load_bytes(file, &bytes)
}

/// [`load`] of a record file already read into `bytes`.
pub fn load_bytes(file: &Path, bytes: &[u8]) -> Result<ScorecardRecord, RecordError> {
    let rec: ScorecardRecord =
        crate::json::from_bytes(bytes).map_err(|e| RecordError::Invalid {
            file: file.to_path_buf(),
            reason: e.to_string(),
        })?;
    if !(1..=SCHEMA_VERSION).contains(&rec.header.schema_version)
        || rec.header.suite != Suite::Scorecard
    {
        return Err(RecordError::Invalid {
            file: file.to_path_buf(),
            reason: format!(
                "suite `{}` schema_version {} (expected `{SUITE}` 1 to {SCHEMA_VERSION})",
                rec.header.suite, rec.header.schema_version
            ),
        });
    }
    Ok(rec)
}

/// The result the raw evidence in `trial_dir` supports: every reply re-read from its
/// turn's stdout with the recorded agent's stream parser (and checked against its
/// recorded hash), then the pure scorer.
pub fn derive(
    trial_dir: &Path,
    rec: &ScorecardRecord,
) -> Result<(ProbeEvidence, ProbeResult, Verdict), RescoreError> {
    let parser = crate::evidence::streams::AgentKind::from_name(&rec.header.config.agent)
        .map(crate::evidence::streams::parser)
        .ok_or_else(|| RescoreError::UnknownAgent {
            file: trial_dir.join(RECORD_FILE),
            agent: rec.header.config.agent.clone(),
        })?;
    let mut evidence = rec.evidence.clone();
    for turn in &mut evidence.turns {
        let Some(raw) = rec
            .processes
            .iter()
            .find(|p| p.label == turn.label && p.session.is_some())
        else {
            turn.reply = None;
            continue;
        };
        let transcript = parse_checked(trial_dir, &raw.stdout, parser)?;
        turn.reply = reply_of(&raw.end, transcript.final_message);
    }
    let bank = Bank::from_seed(&rec.scorecard.seed);
    let result = observe(&rec.probe, &bank, &evidence);
    let verdict = verdict_of(&result, &evidence);
    Ok((evidence, result, verdict))
}

/// A turn's reply: the final message of a process that ended cleanly. A process that
/// crashed or timed out has no reply, whatever it printed.
pub fn reply_of(end: &ProcessEnd, final_message: Option<String>) -> Option<String> {
    if end.success() {
        final_message
    } else {
        None
    }
}

/// Rescore one scorecard record file (called by `gauntlet rescore`'s dispatch).
pub fn rescore_record(file: &Path, rec: &ScorecardRecord) -> RescoreRow {
    let dir = file.parent().unwrap_or(Path::new("."));
    let derived = match derive(dir, rec) {
        Ok((_, result, verdict)) if result == rec.result => Ok(verdict),
        Ok((_, result, verdict)) => Ok(Verdict {
            reason: format!(
                "observations differ from the stored ones: {}",
                result.reason
            ),
            ..verdict
        }),
        Err(e) => Err(e),
    };
    RescoreRow::verdicts(
        file,
        rec.header.trial.clone(),
        Some(rec.verdict.clone()),
        derived,
    )
}

/// Where the committed JSON Schema of a scorecard `record.json` lives
/// (repository-relative).
pub const SCHEMA_PATH: &str = "schema/scorecard-record.schema.json";

/// The schema of a scorecard record, pretty-printed and newline-terminated, generated
/// from the types so that it cannot drift (a test compares it with the committed copy).
pub fn record_schema_text() -> String {
    let schema = schemars::schema_for!(ScorecardRecord);
    let mut s = serde_json::to_string_pretty(&schema).unwrap_or_default();
    s.push('\n');
    s
}
/// One line per probe trial for JUnit `system-out`.
pub fn summary_line(r: &ScorecardRecord) -> String {
    let held = r.result.observations.iter().filter(|o| o.holds).count();
    format!(
        "gauntlet: {} passed={} observations={held}/{} recall_score={} compressed={} reason={:?}{}{} record_sha256={}",
        r.header.trial,
        r.verdict.passed,
        r.result.observations.len(),
        r.result.recall_score,
        r.scorecard.compressed,
        r.verdict.reason,
        unsealed_tag(&r.header.config),
        super::suite::infra_tag(r),
        super::digest::value_sha256(r)
    )
}

impl SuiteRecord for ScorecardRecord {
    fn header(&self) -> &Header {
        &self.header
    }

    fn interrupted(&self) -> Option<&str> {
        ScorecardRecord::interrupted(self)
    }

    fn one_axis(&self) -> Option<&crate::score::Verdict> {
        Some(&self.verdict)
    }

    fn credited(&self) -> bool {
        self.verdict.passed
    }

    fn spec_trial_name(&self) -> String {
        self.probe.trial_name()
    }

    fn rescore_row(&self, file: &Path) -> (RescoreRow, Option<Hashed>) {
        (rescore_record(file, self), None)
    }

    /// Every process's stdout re-read: a probe record keeps no report per turn.
    fn reported_usage(&self, trial_dir: &Path) -> Result<Vec<ReportedUsage>, String> {
        let parser = parser_named(&self.header.config.agent)?;
        self.processes
            .iter()
            .map(|p| reported_in(trial_dir, &p.stdout, parser))
            .collect()
    }

    fn metered_usage(&self) -> &[UsageEntry] {
        &self.usage
    }

    fn summary_line(&self) -> String {
        summary_line(self)
    }

    /// Its probe file, and the scorecard's tables its points were read from.
    fn subjects(&self) -> Vec<Subject<'_>> {
        let tables = serde_json::to_string(&self.card).unwrap_or_default();
        vec![
            Subject {
                what: "probe",
                name: Cow::Borrowed(&self.probe.probe.id),
                field: "sha256",
                digest: Cow::Borrowed(&self.probe.sha256),
            },
            Subject {
                what: "the scorecard's",
                name: Cow::Borrowed("tables"),
                field: "card",
                digest: Cow::Owned(crate::hash::sha256(tables.as_bytes())),
            },
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::score::scorecard::{ProbeResult, TurnObs};

    fn turn(script_failure: Option<&str>) -> TurnObs {
        TurnObs {
            label: "plant".into(),
            session: 1,
            prompt: "My favorite color is teal.".into(),
            reply: Some("ok".into()),
            problem: None,
            files_after: Default::default(),
            files_incomplete: None,
            script_failure: script_failure.map(str::to_owned),
        }
    }

    #[test]
    fn a_scripted_turn_that_did_not_run_is_an_error_whatever_the_observations_say() {
        let result = |passed| ProbeResult {
            observations: vec![],
            passed,
            recall_score: 0,
            reason: "observed".into(),
        };
        let mut ev = ProbeEvidence {
            turns: vec![turn(None)],
            ..ProbeEvidence::default()
        };
        assert_eq!(verdict_of(&result(false), &ev).outcome, Outcome::Unverified);
        ev.turns
            .push(turn(Some("scripted step 0 of 1 was never carried out")));
        for passed in [false, true] {
            let v = verdict_of(&result(passed), &ev);
            assert_eq!(v.outcome, Outcome::Error);
            assert!(!v.passed);
            assert!(
                v.reason.contains("turn `plant`: scripted step 0"),
                "{}",
                v.reason
            );
        }
    }
}
