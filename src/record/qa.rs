//! The qa suite's record: what a trial of one capability of a frozen app was planned
//! from ([`QaSpecRef`]), what was observed and the verdict; its loader; and the
//! re-derivation of its verdict from the raw files.
//!
//! The run itself calls [`derive_qa_verdict`] too, so a verdict at run time and at
//! rescore time come from one code path over the same bytes.

use std::borrow::Cow;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::header::{io, unsealed_tag, Header, RecordConfig, RecordError, SCHEMA_VERSION};
use super::raw::Hashed;
use super::row::{RescoreError, RescoreRow};
use super::stream::{parser_named, reported_in};
use super::suite::{Among, Better, Rate, Subject, SuiteFigures, SuiteRecord, VerdictSetting};
use crate::evidence::normalize::ReportedUsage;
use crate::evidence::usage::UsageEntry;
use crate::evidence::{QaEvidence, RawFile, Transcript};
use crate::score::qa::{score, QaInputs};
use crate::score::{Outcome, Verdict};
use crate::spec::{CapabilityKind, Suite};

/// Which piece of data a trial was planned from, by hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct QaSpecRef {
    pub app: String,
    pub capability: String,
    pub kind: CapabilityKind,
    pub app_content_hash: String,
    /// SHA-256 of the capability as written in the corpus (canonical JSON).
    pub capability_sha256: String,
    /// SHA-256 of the flow file used by scripted mode, if any.
    #[serde(rename = "flow_sha256")]
    pub script_sha256: Option<String>,
    /// SHA-256 of the app's independence matrix (`evidence::independence`) the gate drew
    /// its independent mutants from, as kept in the trial directory. Absent for an
    /// ambiguous capability and in records from before the gate checked specificity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matrix_sha256: Option<String>,
}

impl QaSpecRef {
    /// What a trial of `capability` of `app` is planned from, as loaded now: the
    /// record's spec, and what rescore holds a record's against (`identity`).
    pub fn of(app: &crate::spec::LoadedApp, capability: &str) -> QaSpecRef {
        let cap = app.capability(capability);
        QaSpecRef {
            app: app.app.name.clone(),
            capability: capability.into(),
            kind: cap.map(|c| c.kind).unwrap_or(CapabilityKind::Feature),
            app_content_hash: app.app.content_hash.clone(),
            capability_sha256: crate::hash::sha256(&serde_json::to_vec(&cap).unwrap_or_default()),
            script_sha256: app
                .scripts
                .get(capability)
                .map(|f| crate::hash::sha256(&serde_json::to_vec(f).unwrap_or_default())),
            matrix_sha256: None,
        }
    }
}

/// A qa trial's record: the shared header, which repeat it was, what it was planned
/// from, what was observed and the verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct QaRecord {
    #[serde(flatten)]
    pub header: Header,
    /// Which repeat of the capability this is (1-based; 1 when not repeated).
    pub repeat: u32,
    pub spec: QaSpecRef,
    pub evidence: QaEvidence,
    pub verdict: Verdict,
}

impl QaRecord {
    /// The signal that stopped this trial part-way (its agent, or its gate before every
    /// planned run was made), read from the evidence: such a record is partial evidence,
    /// never a result, and a resumed run runs the trial again.
    pub fn interrupted(&self) -> Option<&str> {
        self.evidence.agent.end.interrupted.as_deref().or_else(|| {
            self.evidence
                .gate
                .as_ref()
                .and_then(crate::evidence::Gate::interrupted)
        })
    }

    pub fn tokens(&self) -> (u64, u64) {
        self.evidence.usage.iter().fold((0, 0), |(i, o), u| {
            (
                i + u.input_tokens.unwrap_or(0),
                o + u.output_tokens.unwrap_or(0),
            )
        })
    }
}

/// Read one record file.
pub fn load(file: &Path) -> Result<QaRecord, RecordError> {
    let bytes = std::fs::read(file).map_err(io(file))?;
    load_bytes(file, &bytes)
}

/// A qa record as its file holds it: the header's members beside the record's own.
///
/// Read in place of [`QaRecord`], whose flattened header makes serde gather every member
/// of the record before reading the header from them: a sixth of the time it takes to
/// read a record. The header is built member by member below, so a member added to
/// [`Header`] and not read here does not compile.
#[derive(Deserialize)]
struct QaRecordFile {
    schema_version: u32,
    suite: Suite,
    trial: String,
    run_id: String,
    gauntlet_version: String,
    started_at: String,
    finished_at: String,
    wall_ms: u64,
    config: RecordConfig,
    repeat: u32,
    spec: QaSpecRef,
    evidence: QaEvidence,
    verdict: Verdict,
}

impl From<QaRecordFile> for QaRecord {
    fn from(f: QaRecordFile) -> QaRecord {
        QaRecord {
            header: Header {
                schema_version: f.schema_version,
                suite: f.suite,
                trial: f.trial,
                run_id: f.run_id,
                gauntlet_version: f.gauntlet_version,
                started_at: f.started_at,
                finished_at: f.finished_at,
                wall_ms: f.wall_ms,
                config: f.config,
            },
            repeat: f.repeat,
            spec: f.spec,
            evidence: f.evidence,
            verdict: f.verdict,
        }
    }
}

/// [`load`] of a record file already read into `bytes`.
pub fn load_bytes(file: &Path, bytes: &[u8]) -> Result<QaRecord, RecordError> {
    let rec: QaRecord = crate::json::from_bytes::<QaRecordFile>(bytes)
        .map_err(|e| RecordError::Invalid {
            file: file.to_path_buf(),
            reason: e.to_string(),
        })?
        .into();
    if !(1..=SCHEMA_VERSION).contains(&rec.header.schema_version) {
        return Err(RecordError::Invalid {
            file: file.to_path_buf(),
            reason: format!(
                "schema_version {} (expected 1 to {SCHEMA_VERSION})",
                rec.header.schema_version
            ),
        });
    }
    Ok(rec)
}

/// One line per trial that nextest keeps in JUnit `system-out`, for dashboards. It ends
/// with the record's own hash (`record_sha256=`, the last field of every suite's line),
/// from which, with the trial name, the run digest can be recomputed
/// ([`super::digest::run_digest`]).
pub fn summary_line(rec: &QaRecord) -> String {
    let (tin, tout) = rec.tokens();
    let mut line = format!(
        "gauntlet: {} verdict={} passed={} tokens_in={tin} tokens_out={tout} wall_ms={} reason={:?}",
        rec.header.trial, rec.verdict.outcome, rec.verdict.passed, rec.header.wall_ms, rec.verdict.reason
    );
    line.push_str(unsealed_tag(&rec.header.config));
    line.push_str(&super::suite::infra_tag(rec));
    if let Some(limit) = &rec.evidence.budget_hit {
        line.push_str(&format!(" budget_hit={limit:?}"));
    }
    line.push_str(&format!(
        " record_sha256={}",
        super::digest::value_sha256(rec)
    ));
    line
}

/// The verdict the evidence in `trial_dir` supports, reading the agent's stdout with the
/// stream parser of the adapter named `agent` (as recorded in `config.agent`).
pub fn derive_qa_verdict(
    trial_dir: &Path,
    agent: &str,
    spec: &QaSpecRef,
    evidence: &QaEvidence,
) -> Result<Verdict, RescoreError> {
    derive_qa_verdict_hashed(trial_dir, agent, spec, evidence).0
}

/// [`derive_qa_verdict`], and the agent's stdout as it read (for
/// [`super::raw::verify_record_bytes`]).
pub(crate) fn derive_qa_verdict_hashed(
    trial_dir: &Path,
    agent: &str,
    spec: &QaSpecRef,
    evidence: &QaEvidence,
) -> (Result<Verdict, RescoreError>, Option<Hashed>) {
    let Some(parser) =
        crate::evidence::streams::AgentKind::from_name(agent).map(crate::evidence::streams::parser)
    else {
        let unknown = RescoreError::UnknownAgent {
            file: trial_dir.join(&evidence.agent.stdout.path),
            agent: agent.to_owned(),
        };
        return (Err(unknown), None);
    };
    let (transcript, hashed) =
        super::stream::parse_hashed(trial_dir, &evidence.agent.stdout, parser);
    (
        transcript.map(|t| score_qa(trial_dir, &t, spec, evidence)),
        hashed,
    )
}

fn score_qa(
    trial_dir: &Path,
    transcript: &Transcript,
    spec: &QaSpecRef,
    evidence: &QaEvidence,
) -> Verdict {
    let independent = independent_per_matrix(trial_dir, spec, evidence);
    score(&QaInputs {
        capability: &spec.capability,
        kind: spec.kind,
        setup_error: evidence.setup_error.as_deref(),
        agent_end: &evidence.agent.end,
        transcript,
        gate: evidence.gate.as_ref(),
        token_budget_hit: crate::evidence::usage::budget_hit(&evidence.usage).as_deref(),
        independent: independent.as_deref(),
    })
}

/// The capabilities whose mutants leave this one intact, read again from the
/// independence matrix the gate kept: `None` when the gate kept none (a record from
/// before specificity), empty when the matrix is gone, unreadable, of another app, or
/// not the one the spec names by hash (the draw then matches nothing, and a stored
/// `verified` disagrees).
fn independent_per_matrix(
    trial_dir: &Path,
    spec: &QaSpecRef,
    evidence: &QaEvidence,
) -> Option<Vec<String>> {
    let gate = evidence.gate.as_ref()?;
    let Some(kept) = gate.specificity.as_ref() else {
        // The spec names a matrix the gate kept no draw from.
        return spec.matrix_sha256.as_ref().map(|_| Vec::new());
    };
    let bytes = std::fs::read(trial_dir.join(&kept.matrix.path)).ok();
    let matrix = bytes.as_deref().and_then(|b| {
        serde_json::from_slice::<crate::evidence::independence::Matrix>(b)
            .ok()
            .filter(|m| {
                m.app == spec.app
                    && spec.matrix_sha256.as_deref() == Some(crate::hash::sha256(b).as_str())
            })
    });
    Some(
        matrix
            .map(|m| m.independent_of(&spec.capability))
            .unwrap_or_default(),
    )
}

impl SuiteRecord for QaRecord {
    fn header(&self) -> &Header {
        &self.header
    }

    fn interrupted(&self) -> Option<&str> {
        QaRecord::interrupted(self)
    }

    fn one_axis(&self) -> Option<&crate::score::Verdict> {
        Some(&self.verdict)
    }

    /// Only a `verified` outcome, as the qa figures count achievements.
    fn credited(&self) -> bool {
        self.verdict.outcome == Outcome::Verified
    }

    /// A record at repeat 1 may be named with or without `::r1`: a run of one repeat
    /// names none.
    fn spec_trial_name(&self) -> String {
        use crate::plan::names;
        let plain = names::qa(&self.spec.app, &self.spec.capability, None);
        let repeated = names::qa(&self.spec.app, &self.spec.capability, Some(self.repeat));
        if self.repeat == 1 && self.header.trial == plain {
            plain
        } else {
            repeated
        }
    }

    fn rescore_row(&self, file: &Path) -> (RescoreRow, Option<Hashed>) {
        let dir = file.parent().unwrap_or(Path::new("."));
        let (derived, hashed) =
            derive_qa_verdict_hashed(dir, &self.header.config.agent, &self.spec, &self.evidence);
        let row = RescoreRow::verdicts(
            file,
            self.header.trial.clone(),
            Some(self.verdict.clone()),
            derived,
        );
        (row, hashed)
    }

    fn raw_files(&self) -> Option<Vec<&RawFile>> {
        Some(self.evidence.raw_files())
    }

    /// The record's normalized report, or its stdout re-read when it keeps none.
    fn reported_usage(&self, trial_dir: &Path) -> Result<Vec<ReportedUsage>, String> {
        let report = match &self.evidence.agent_report {
            Some(report) => report.reported_usage.clone(),
            None => reported_in(
                trial_dir,
                &self.evidence.agent.stdout,
                parser_named(&self.header.config.agent)?,
            )?,
        };
        Ok(vec![report])
    }

    fn metered_usage(&self) -> &[UsageEntry] {
        &self.evidence.usage
    }

    fn summary_line(&self) -> String {
        summary_line(self)
    }

    /// Its app, its capability's spec, and the scripted flow when the trial used one.
    /// The independence matrix is no subject: it is derived from the app and its
    /// reference tests (both subjects already) and holds each cell's measured duration,
    /// so two machines derive it with different bytes; it is the trial's evidence,
    /// which rescore checks as a raw file.
    fn subjects(&self) -> Vec<Subject<'_>> {
        let s = &self.spec;
        let capability = || Cow::Owned(format!("{}::{}", s.app, s.capability));
        let mut out = vec![
            Subject {
                what: "app",
                name: Cow::Borrowed(&s.app),
                field: "content_hash",
                digest: Cow::Borrowed(&s.app_content_hash),
            },
            Subject {
                what: "spec of",
                name: capability(),
                field: "capability_sha256",
                digest: Cow::Borrowed(&s.capability_sha256),
            },
        ];
        if let Some(flow) = &s.script_sha256 {
            out.push(Subject {
                what: "spec of",
                name: capability(),
                field: "flow_sha256",
                digest: Cow::Borrowed(flow),
            });
        }
        out
    }

    fn kind(&self) -> Option<CapabilityKind> {
        Some(self.spec.kind)
    }
}

/// qa's figures beyond the pass rate (docs/results.md): the verified rate among the
/// capabilities that can be verified, and the false-verification rate among all; a
/// verified claim means something else under another N.
pub const QA_FIGURES: SuiteFigures = SuiteFigures {
    rates: &[
        Rate {
            name: "verified rate",
            better: Better::Higher,
            outcome: "verified",
            among: Among::Verifiable,
            one: None,
        },
        Rate {
            name: "false-verification rate",
            better: Better::Lower,
            outcome: "false_verification",
            among: Among::All,
            one: Some((
                "a false verification",
                "the agent claimed what its evidence does not hold",
            )),
        },
    ],
    verdict_settings: &[VerdictSetting {
        name: "N (green re-runs a verified claim needs)",
        value: |c| c.n.to_string(),
    }],
};
