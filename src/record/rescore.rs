//! Re-deriving verdicts from recorded evidence, offline.
//!
//! The run itself calls [`derive_qa_verdict`] too, so a verdict at run time and at
//! rescore time come from one code path over the same bytes.

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::evidence::normalize::{parse_gauntlet, StreamParser};
use crate::evidence::{QaEvidence, RawFile, Transcript};
use crate::hash::Sha256Stream;
use crate::score::qa::{score, QaInputs};
use crate::score::Verdict;

use super::{QaRecord, QaSpecRef, RecordError};

#[derive(Debug, thiserror::Error)]
pub enum RescoreError {
    #[error(transparent)]
    Record(#[from] RecordError),
    #[error(
        "{file}: evidence does not match its recorded hash (recorded {recorded}, found {found})"
    )]
    Altered {
        file: PathBuf,
        recorded: String,
        found: String,
    },
    #[error("{file}: agent `{agent}` has no stream parser; cannot read its output")]
    UnknownAgent { file: PathBuf, agent: String },
    #[error("{file}: cannot read evidence: {source}")]
    Io {
        file: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Reads through to an inner reader, hashing every byte that passes.
struct HashingReader<R> {
    inner: R,
    hash: Sha256Stream,
}

impl<R: Read> Read for HashingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hash.update(&buf[..n]);
        Ok(n)
    }
}

/// Parse a raw evidence file as an event stream, streaming (never holding the file),
/// and check that it is byte for byte what was recorded.
fn parse_checked(
    trial_dir: &Path,
    raw: &RawFile,
    parser: StreamParser,
) -> Result<Transcript, RescoreError> {
    let file = trial_dir.join(&raw.path);
    if Path::new(&raw.path).is_absolute() || raw.path.split('/').any(|s| s == "..") {
        return Err(RescoreError::Io {
            file,
            source: std::io::Error::other("evidence path leaves the trial directory"),
        });
    }
    let f = std::fs::File::open(&file).map_err(|source| RescoreError::Io {
        file: file.clone(),
        source,
    })?;
    let mut reader = std::io::BufReader::with_capacity(
        64 << 10,
        HashingReader {
            inner: f,
            hash: Sha256Stream::default(),
        },
    );
    let transcript = parser(&mut reader).transcript;
    // Drain whatever the parser left (it stops early only on an I/O error).
    std::io::copy(&mut reader, &mut std::io::sink()).map_err(|source| RescoreError::Io {
        file: file.clone(),
        source,
    })?;
    let found = reader.into_inner().hash.finish();
    if found != raw.sha256 {
        return Err(RescoreError::Altered {
            file,
            recorded: raw.sha256.clone(),
            found,
        });
    }
    Ok(transcript)
}

/// The verdict the evidence in `trial_dir` supports, for an agent speaking the gauntlet
/// protocol (docs/agent-protocol.md).
pub fn derive_qa_verdict(
    trial_dir: &Path,
    spec: &QaSpecRef,
    evidence: &QaEvidence,
) -> Result<Verdict, RescoreError> {
    derive_with(trial_dir, parse_gauntlet, spec, evidence)
}

/// The verdict the evidence in `trial_dir` supports, reading the agent's stdout with the
/// stream parser of the adapter named `agent` (as recorded in `config.agent`).
pub fn derive_qa_verdict_as(
    trial_dir: &Path,
    agent: &str,
    spec: &QaSpecRef,
    evidence: &QaEvidence,
) -> Result<Verdict, RescoreError> {
    let parser =
        crate::agent::stream_parser_for(agent).ok_or_else(|| RescoreError::UnknownAgent {
            file: trial_dir.join(&evidence.agent.stdout.path),
            agent: agent.to_owned(),
        })?;
    derive_with(trial_dir, parser, spec, evidence)
}

fn derive_with(
    trial_dir: &Path,
    parser: StreamParser,
    spec: &QaSpecRef,
    evidence: &QaEvidence,
) -> Result<Verdict, RescoreError> {
    let transcript = parse_checked(trial_dir, &evidence.agent.stdout, parser)?;
    Ok(score(&QaInputs {
        capability: &spec.capability,
        kind: spec.kind,
        setup_error: evidence.setup_error.as_deref(),
        agent_end: &evidence.agent.end,
        transcript: &transcript,
        gate: evidence.gate.as_ref(),
        token_budget_hit: crate::proxy::budget_hit(&evidence.usage).as_deref(),
    }))
}

/// [`parse_checked`] for the other suites' rescore (scorecard turns).
pub(crate) fn parse_checked_file(
    trial_dir: &Path,
    raw: &RawFile,
    parser: StreamParser,
) -> Result<Transcript, RescoreError> {
    parse_checked(trial_dir, raw, parser)
}

/// One line of a rescore table.
#[derive(Debug, Clone)]
pub struct RescoreRow {
    pub file: PathBuf,
    pub trial: String,
    pub stored: Option<Verdict>,
    pub derived: Result<Verdict, String>,
    /// A challenge record's verdicts (suite `challenge`); `stored`/`derived` are unused then.
    pub challenge: Option<ChallengeRescore>,
}

/// A challenge record's stored verdict and the one re-derived from its raw files.
#[derive(Debug, Clone)]
pub struct ChallengeRescore {
    pub stored: crate::score::challenge::ChallengeVerdict,
    pub derived: Result<crate::score::challenge::ChallengeVerdict, String>,
}

impl RescoreRow {
    pub fn agrees(&self) -> bool {
        if let Some(c) = &self.challenge {
            return matches!(&c.derived, Ok(d) if *d == c.stored);
        }
        matches!((&self.stored, &self.derived), (Some(s), Ok(d)) if s == d)
    }
}

/// Rescore one record file.
pub fn rescore_file(file: &Path) -> RescoreRow {
    // Dispatch on the record's suite.
    if crate::run::scorecard::record::is_scorecard_record(file) {
        return crate::run::scorecard::record::rescore_file(file);
    }
    if super::suite_of(file).is_ok_and(|s| s == "challenge") {
        return match crate::run::challenge::rederive(file) {
            Ok((rec, derived)) => RescoreRow {
                file: file.to_path_buf(),
                trial: rec.trial,
                stored: None,
                derived: Err("challenge record".into()),
                challenge: Some(ChallengeRescore {
                    stored: rec.verdict,
                    derived,
                }),
            },
            Err(e) => RescoreRow {
                file: file.to_path_buf(),
                trial: "?".into(),
                stored: None,
                derived: Err(e),
                challenge: None,
            },
        };
    }
    let rec: QaRecord = match super::load(file) {
        Ok(r) => r,
        Err(e) => {
            return RescoreRow {
                file: file.to_path_buf(),
                trial: "?".into(),
                stored: None,
                derived: Err(e.to_string()),
                challenge: None,
            }
        }
    };
    let dir = file.parent().unwrap_or(Path::new("."));
    RescoreRow {
        file: file.to_path_buf(),
        trial: rec.trial.clone(),
        derived: derive_qa_verdict_as(dir, &rec.config.agent, &rec.spec, &rec.evidence)
            .map_err(|e| e.to_string()),
        stored: Some(rec.verdict),
        challenge: None,
    }
}

/// Render rows as a plain table.
pub fn render_table(rows: &[RescoreRow]) -> String {
    let mut out = format!(
        "{:<44} {:<20} {:<20} {}\n",
        "trial", "stored", "rescored", "status"
    );
    for r in rows {
        if let Some(c) = &r.challenge {
            let label = |v: &crate::score::challenge::ChallengeVerdict| {
                format!(
                    "{}/{}",
                    v.task_outcome.as_str(),
                    v.evaluation_validity.as_str()
                )
            };
            let (derived, status) = match &c.derived {
                Ok(d) if r.agrees() => (label(d), "agrees".to_string()),
                Ok(d) => (
                    label(d),
                    format!(
                        "DISAGREES: stored verdict does not follow from the evidence ({}; {})",
                        d.outcome_reason, d.validity_reason
                    ),
                ),
                Err(e) => ("-".to_string(), format!("UNREADABLE: {e}")),
            };
            out.push_str(&format!(
                "{:<44} {:<20} {:<20} {}\n",
                r.trial,
                label(&c.stored),
                derived,
                status
            ));
            continue;
        }
        let stored = r.stored.as_ref().map(|v| v.outcome.as_str()).unwrap_or("-");
        let (derived, status) = match &r.derived {
            Ok(d) if r.agrees() => (d.outcome.as_str().to_string(), "agrees".to_string()),
            Ok(d) => (
                d.outcome.as_str().to_string(),
                format!(
                    "DISAGREES: stored verdict does not follow from the evidence ({})",
                    d.reason
                ),
            ),
            Err(e) => ("-".to_string(), format!("UNREADABLE: {e}")),
        };
        out.push_str(&format!(
            "{:<44} {:<20} {:<20} {}\n",
            r.trial, stored, derived, status
        ));
    }
    out
}
