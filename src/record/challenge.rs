//! The challenge suite's record: what a challenge trial was traced back to
//! ([`Provenance`]), what was observed ([`ChallengeEvidence`]), what pure functions
//! derived from it ([`Derived`]) and the verdict; and the re-derivation rescore runs
//! from the raw files alone.

use std::borrow::Cow;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::header::{unsealed_tag, Header, RecordError};
use super::raw::Hashed;
use super::row::{AxesRescore, RescoreError, RescoreRow, VerdictAxis};
use super::suite::{Subject, SuiteRecord};
use crate::evidence::normalize::{AgentReport, ReportedUsage};
use crate::evidence::observed::Observation;
use crate::evidence::observed_execs::{self, ExecFindings};
use crate::evidence::observed_policy::{self, ObservedPolicy};
use crate::evidence::policy::{self, PolicyFindings, Roots};
use crate::evidence::usage::UsageEntry;
use crate::evidence::{AgentRun, RawFile};
use crate::score::challenge::TaskOutcome;
use crate::score::challenge::{score, ChallengeInputs, ChallengeVerdict, WorldObservation};
use crate::spec::challenge::{BundleFile, Manifest, Profile, RenderedPrompt, RunInput};
use crate::spec::Suite;

/// Read a challenge record.
pub fn load(file: &Path) -> Result<ChallengeRecord, RecordError> {
    let bytes = std::fs::read(file).map_err(|e| RecordError::Io {
        file: file.to_path_buf(),
        source: e,
    })?;
    load_bytes(file, &bytes)
}

/// [`load`] of a record file already read into `bytes`.
pub fn load_bytes(file: &Path, bytes: &[u8]) -> Result<ChallengeRecord, RecordError> {
    let rec: ChallengeRecord =
        crate::json::from_bytes(bytes).map_err(|e| RecordError::Invalid {
            file: file.to_path_buf(),
            reason: format!("not a challenge record: {e}"),
        })?;
    if rec.header.suite != Suite::Challenge {
        return Err(RecordError::Invalid {
            file: file.to_path_buf(),
            reason: format!("suite `{}`, not `challenge`", rec.header.suite),
        });
    }
    Ok(rec)
}

/// Everything a trial's result is traced back to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Provenance {
    pub challenge_id: String,
    /// `challenges/<id>/challenge.yaml`, relative to the repository.
    pub manifest_path: String,
    pub manifest_sha256: String,
    /// The manifest itself, so that rescore does not depend on today's copy.
    pub manifest: Manifest,
    /// What each required run that names an input must have computed on, as the
    /// workspace template held it (`work.runs[].input`), likewise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inputs: Vec<RunInput>,
    pub profile: Profile,
    /// Every prompt layer's path and hash, and the rendered prompt's.
    pub prompt: RenderedPrompt,
    /// The bundle copied into `.agent/skills/` (skills, all); `None` under `none`.
    pub bundle: Option<BundleProvenance>,
    pub model: String,
    pub agent: String,
    pub agent_version: String,
    /// `git rev-parse HEAD`, `-dirty` when the work tree had changes.
    pub commit: Option<String>,
    pub dirty: Option<bool>,
    pub harness_version: String,
    /// SHA-256 of the scripted flow (scripted mode).
    #[serde(rename = "flow_sha256")]
    pub script_sha256: Option<String>,
    pub timeout_secs: f64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BundleProvenance {
    pub name: String,
    pub manifest_sha256: String,
    /// Relative to `.agent/skills/`.
    pub files: Vec<BundleFile>,
}

/// One setup request (`world.setup`) the harness sent before the agent started.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SetupResult {
    pub method: String,
    pub path: String,
    pub status: Option<u16>,
    pub error: Option<String>,
}

/// Everything observed in one challenge trial.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ChallengeEvidence {
    pub agent: AgentRun,
    /// Relative to the trial directory.
    pub workspace: String,
    pub roots: Roots,
    #[serde(alias = "seed")] // its name before record schema 2
    pub setup: Vec<SetupResult>,
    /// What the harness read after the agent ended, per world assertion.
    pub world: Vec<WorldObservation>,
    /// Every model call the proxy metered.
    pub usage: Vec<UsageEntry>,
    /// What the proxy relayed, call by call (see `QaEvidence::calls`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calls: Option<crate::evidence::RawFile>,
    pub setup_error: Option<String>,
    /// The app's logs, hashed like every other raw file. Absent in records from before
    /// they were.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub world_logs: Vec<crate::evidence::RawFile>,
    /// What the kernel saw the agent's processes open. Absent only in records made
    /// before opens were observed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observation: Option<ObservationEvidence>,
    /// The app's program as the agent was handed it (`$APP_BIN` inside the sandbox):
    /// what a required run of `app` is an exec of. Absent for served apps and in
    /// records from before runs were required.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_program: Option<String>,
    /// The file `app_program` leads to, by its own path in the sandbox: the same
    /// program run by another name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_program_file: Option<String>,
    /// The machine's browsers (Chromium and its headless shell, as the sandbox sees
    /// them): what a required run of `browser` is an exec of.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub browser_programs: Vec<String>,
    /// The trial's `APP_URL`, for a served app: the port whose observed requests are
    /// the app's. Absent for a CLI app and in records from before requests were
    /// observed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_url: Option<String>,
    /// Every run of a CLI app the relay made for the agent, as the relay saw it:
    /// what the app itself was given and answered. `None` for a served app, and in
    /// records from before runs were relayed into the record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relayed_runs: Option<Vec<crate::evidence::RelayedRun>>,
    /// Relayed runs past the relay's log, counted.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub relayed_runs_dropped: u64,
    /// The workspace files the challenge requires to be the app's output, as the
    /// harness found them after the agent.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outputs: Vec<crate::evidence::OutputObservation>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The observation of a trial's opens, or why there is none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ObservationEvidence {
    /// The file the sandbox's init wrote ([`crate::evidence::observed`]), hashed like
    /// every raw file.
    pub file: Option<RawFile>,
    /// Why there is no file: the trial ran unsealed, the agent never started, the
    /// sandbox wrote none.
    pub unavailable: Option<String>,
}

/// Where a challenge trial's observed opens are kept, in its trial directory.
pub const OPENS_FILE: &str = "agent.opens.jsonl";

/// What is derived from the evidence by pure functions, kept for readers (rescore
/// derives it again).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Derived {
    pub agent_report: AgentReport,
    /// The agent's account: the paths its event stream names, classified.
    pub policy: PolicyFindings,
    /// What the kernel saw opened, classified and compared with the account.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed: Option<ObservedPolicy>,
    /// What the kernel saw executed: the runs the challenge requires, and the programs
    /// the account names that never ran. Absent where there is no observation at all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execs: Option<ExecFindings>,
    /// What the sandbox's helper saw sent to the app, by which program: the requests
    /// the challenge requires. Absent where there is no observation, or the challenge
    /// requires no requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<crate::evidence::observed_requests::RequestFindings>,
    pub final_message: Option<String>,
}

/// A challenge trial's record: the shared header, its provenance, what was observed,
/// what pure functions derived from it and the verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ChallengeRecord {
    /// Suite `challenge`.
    #[serde(flatten)]
    pub header: Header,
    pub provenance: Provenance,
    pub evidence: ChallengeEvidence,
    pub derived: Derived,
    pub verdict: ChallengeVerdict,
}

impl ChallengeRecord {
    /// The signal that stopped the agent part-way, read from the evidence (see
    /// [`super::qa::QaRecord::interrupted`]).
    pub fn interrupted(&self) -> Option<&str> {
        self.evidence.agent.end.interrupted.as_deref()
    }
}

/// Derive everything the verdict depends on from the evidence and the raw stdout in
/// `trial_dir`: the run and rescore share this.
pub fn derive(
    trial_dir: &Path,
    agent: &str,
    provenance: &Provenance,
    evidence: &ChallengeEvidence,
) -> Result<(Derived, ChallengeVerdict), RescoreError> {
    let stdout = trial_dir.join(&evidence.agent.stdout.path);
    let parser = crate::evidence::streams::AgentKind::from_name(agent)
        .map(crate::evidence::streams::parser)
        .ok_or_else(|| RescoreError::UnknownAgent {
            file: stdout.clone(),
            agent: agent.to_owned(),
        })?;
    let parsed = match std::fs::File::open(&stdout) {
        Ok(f) => parser(&mut std::io::BufReader::new(f)),
        // A setup that failed before the agent ran left no output to read.
        Err(_) if evidence.setup_error.is_some() => crate::evidence::Parsed::default(),
        Err(source) => {
            return Err(RescoreError::Io {
                file: stdout,
                source,
            })
        }
    };
    let mut policy = policy::assess(
        &parsed.report.tool_calls,
        &evidence.roots,
        provenance.profile,
    );
    // Calls the report only counted were never assessed.
    policy.not_kept.tool_calls = parsed.report.dropped.tool_calls;
    let (observed, execs, requests) = match &evidence.observation {
        None => (None, None, None),
        Some(o) => {
            let (observed, observation) =
                assess_observation(trial_dir, o, &evidence.roots, provenance.profile, &policy)?;
            let execs = observed_execs::assess(
                &observation,
                &provenance.manifest.work.runs,
                &parsed.report.tool_calls,
                observed_execs::NamedPrograms {
                    path: evidence.app_program.as_deref(),
                    file: evidence.app_program_file.as_deref(),
                    browsers: &evidence.browser_programs,
                },
                observed_execs::AppWorld {
                    relayed: evidence.relayed_runs.as_deref(),
                    relayed_dropped: evidence.relayed_runs_dropped,
                    outputs: &evidence.outputs,
                    required: &provenance.manifest.work.outputs,
                    inputs: &provenance.inputs,
                },
            );
            let requests = (!provenance.manifest.work.requests.is_empty()).then(|| {
                crate::evidence::observed_requests::assess(
                    &observation,
                    &provenance.manifest.work.requests,
                    evidence.app_url.as_deref(),
                    &evidence.browser_programs,
                )
            });
            (Some(observed), Some(execs), requests)
        }
    };
    let final_message = parsed.transcript.final_message.clone();
    let verdict = score(&ChallengeInputs {
        manifest: &provenance.manifest,
        profile: provenance.profile,
        end: &evidence.agent.end,
        setup_error: evidence.setup_error.as_deref(),
        final_message: final_message.as_deref(),
        world: &evidence.world,
        policy: &policy,
        observed: observed.as_ref(),
        execs: execs.as_ref(),
        requests: requests.as_ref(),
    });
    Ok((
        Derived {
            agent_report: parsed.report,
            policy,
            observed,
            execs,
            requests,
            final_message,
        },
        verdict,
    ))
}

/// The observation file read back and classified, and the observation itself; a trial
/// without one has nothing but the reason it is missing, and is not compared with its
/// account.
fn assess_observation(
    trial_dir: &Path,
    o: &ObservationEvidence,
    roots: &Roots,
    profile: Profile,
    account: &PolicyFindings,
) -> Result<(ObservedPolicy, Observation), RescoreError> {
    let Some(raw) = &o.file else {
        let why = o
            .unavailable
            .clone()
            .unwrap_or_else(|| "no observation was recorded".into());
        return Ok((
            ObservedPolicy {
                incomplete: Some(why.clone()),
                ..ObservedPolicy::default()
            },
            // Nothing watched, no end: incomplete for opens and execs alike.
            Observation::default(),
        ));
    };
    let path = trial_dir.join(&raw.path);
    let file =
        std::fs::File::open(&path).map_err(|source| RescoreError::Io { file: path, source })?;
    let observation = crate::evidence::observed::parse(&mut std::io::BufReader::new(file));
    let policy = observed_policy::assess(&observation, roots, profile, account);
    Ok((policy, observation))
}

/// One JUnit-friendly line per trial.
pub fn summary_line(rec: &ChallengeRecord) -> String {
    let (tin, tout) = rec.evidence.usage.iter().fold((0u64, 0u64), |(i, o), u| {
        (
            i + u.input_tokens.unwrap_or(0),
            o + u.output_tokens.unwrap_or(0),
        )
    });
    format!(
        "gauntlet: {} task_outcome={} evaluation_validity={} passed={} tokens_in={tin} tokens_out={tout} wall_ms={} reason={:?}{}{} record_sha256={}",
        rec.header.trial,
        rec.verdict.task_outcome.as_str(),
        rec.verdict.evaluation_validity.as_str(),
        rec.verdict.passed,
        rec.header.wall_ms,
        rec.verdict.outcome_reason,
        unsealed_tag(&rec.header.config),
        super::suite::infra_tag(rec),
        super::digest::value_sha256(rec)
    )
}

/// A challenge verdict as rescore and the pages show it: the task outcome and the
/// evaluation validity, each with its reason, so that they read it as they read any
/// suite's verdict, without the challenge suite's type.
pub fn verdict_axes(v: &ChallengeVerdict) -> Vec<VerdictAxis> {
    vec![
        VerdictAxis {
            axis: "task_outcome",
            outcome: v.task_outcome.as_str().to_string(),
            reason: v.outcome_reason.clone(),
        },
        VerdictAxis {
            axis: "evaluation_validity",
            outcome: v.evaluation_validity.as_str().to_string(),
            reason: v.validity_reason.clone(),
        },
    ]
}

/// Re-derive a challenge record's verdict offline from its raw files. `Err` when the
/// raw output no longer matches its recorded hash (tampering) or cannot be read.
pub fn rederive(
    file: &Path,
) -> Result<(ChallengeRecord, Result<ChallengeVerdict, RescoreError>), RecordError> {
    let rec = load(file)?;
    let derived = rederive_record(file, &rec);
    Ok((rec, derived))
}

/// [`rederive`] of a record already loaded from `file`: the streams the verdict is
/// read from are checked by the one raw-file verifier first.
pub fn rederive_record(
    file: &Path,
    rec: &ChallengeRecord,
) -> Result<ChallengeVerdict, RescoreError> {
    let dir = file.parent().unwrap_or(Path::new("."));
    let observation = rec
        .evidence
        .observation
        .as_ref()
        .and_then(|o| o.file.as_ref());
    let check = |raw: &RawFile| {
        super::raw::verify_file(dir, raw).map_err(|problem| RescoreError::Raw {
            trial_dir: dir.to_path_buf(),
            problem,
        })
    };
    check(&rec.evidence.agent.stdout)
        .and_then(|()| check(&rec.evidence.agent.stderr))
        .and_then(|()| observation.map_or(Ok(()), check))
        .and_then(|()| {
            derive(
                dir,
                &rec.header.config.agent,
                &rec.provenance,
                &rec.evidence,
            )
        })
        .map(|(_, v)| v)
}

impl SuiteRecord for ChallengeRecord {
    fn header(&self) -> &Header {
        &self.header
    }

    fn interrupted(&self) -> Option<&str> {
        ChallengeRecord::interrupted(self)
    }

    fn verdict_words(&self) -> Vec<VerdictAxis> {
        verdict_axes(&self.verdict)
    }

    fn passed(&self) -> bool {
        self.verdict.passed
    }

    /// A challenge verdict has no error outcome: a trial that could not be judged is
    /// `unknown` or `unauditable`, which its axes say.
    fn errored(&self) -> bool {
        false
    }

    /// Nothing judged the work: the agent timed out, left no self-report to read, or
    /// nothing could show whether the task was done. A `failed` outcome is judged.
    fn unjudged(&self) -> bool {
        matches!(
            self.verdict.task_outcome,
            TaskOutcome::Timeout | TaskOutcome::ParseError | TaskOutcome::Unknown
        )
    }

    /// A clean success, which is what its test passes on.
    fn credited(&self) -> bool {
        self.verdict.passed
    }

    fn spec_trial_name(&self) -> String {
        crate::plan::names::challenge(&self.provenance.challenge_id, self.provenance.profile)
    }

    /// The verdict's two axes, in words: the row compares them like any suite's.
    fn rescore_row(&self, file: &Path) -> (RescoreRow, Option<Hashed>) {
        let axes = AxesRescore::compare(&self.verdict, rederive_record(file, self), verdict_axes);
        let row = RescoreRow::of_axes(file, self.header.trial.clone(), Suite::Challenge, axes);
        (row, None)
    }

    fn reported_usage(&self, _trial_dir: &Path) -> Result<Vec<ReportedUsage>, String> {
        Ok(vec![self.derived.agent_report.reported_usage.clone()])
    }

    fn metered_usage(&self) -> &[UsageEntry] {
        &self.evidence.usage
    }

    fn summary_line(&self) -> String {
        summary_line(self)
    }

    /// The challenge's manifest, which the record keeps whole.
    fn subjects(&self) -> Vec<Subject<'_>> {
        vec![Subject {
            what: "challenge",
            name: Cow::Borrowed(&self.provenance.challenge_id),
            field: "manifest_sha256",
            digest: Cow::Borrowed(&self.provenance.manifest_sha256),
        }]
    }
}

/// Where the committed JSON Schema of a challenge `record.json` lives (repository-relative).
pub const SCHEMA_PATH: &str = "schema/challenge-record.schema.json";

/// The schema of a challenge record, pretty-printed and newline-terminated, generated
/// from the types so that it cannot drift (a test compares it with the committed copy).
pub fn record_schema_text() -> String {
    let schema = schemars::schema_for!(ChallengeRecord);
    let mut s = serde_json::to_string_pretty(&schema).unwrap_or_default();
    s.push('\n');
    s
}
