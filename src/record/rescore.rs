//! Re-deriving verdicts from recorded evidence, offline.
//!
//! The run itself calls [`derive_qa_verdict`] too, so a verdict at run time and at
//! rescore time come from one code path over the same bytes.

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::evidence::normalize::StreamParser;
use crate::evidence::{QaEvidence, RawFile, Transcript};
use crate::hash::Sha256Stream;
use crate::score::qa::{score, QaInputs};
use crate::score::Verdict;

use super::{QaSpecRef, RecordError};

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
    /// The record's verdict is not a one-axis verdict (see [`RescoreRow::challenge`]).
    #[error("a {} record's verdict is kept beside this one", .0.as_str())]
    OtherSuite(crate::spec::Suite),
    /// A raw file the verdict is read from is not what the record says it is.
    #[error("{}: evidence {}", .trial_dir.join(&.problem.path).display(), .problem.problem)]
    Raw {
        trial_dir: PathBuf,
        problem: super::raw::RawProblem,
    },
}

/// Reads through to an inner reader, hashing every byte that passes.
struct HashingReader<R> {
    inner: R,
    hash: Sha256Stream,
    bytes: u64,
}

impl<R: Read> Read for HashingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hash.update(&buf[..n]);
        self.bytes += n as u64;
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
    parse_hashed(trial_dir, raw, parser).0
}

/// [`parse_checked`], and what the file read as (its hash and length) when it was read
/// to the end, so that the raw-file check need not read it again.
fn parse_hashed(
    trial_dir: &Path,
    raw: &RawFile,
    parser: StreamParser,
) -> (Result<Transcript, RescoreError>, Option<super::raw::Hashed>) {
    let file = trial_dir.join(&raw.path);
    // Opened as the raw-file check opens it (never through a link, never a FIFO, which
    // would block the open forever), so that the check need not open it again.
    let f = match super::raw::open_raw(trial_dir, &raw.path) {
        Ok(f) => f,
        Err(why) => {
            let source = std::io::Error::other(why);
            return (Err(RescoreError::Io { file, source }), None);
        }
    };
    let mut reader = std::io::BufReader::with_capacity(
        f.buffer_size(),
        HashingReader {
            inner: f,
            hash: Sha256Stream::default(),
            bytes: 0,
        },
    );
    let transcript = parser(&mut reader).transcript;
    // Drain whatever the parser left (it stops early only on an I/O error).
    if let Err(source) = std::io::copy(&mut reader, &mut std::io::sink()) {
        return (Err(RescoreError::Io { file, source }), None);
    }
    let read = reader.into_inner();
    let found = read.hash.finish();
    let hashed = super::raw::Hashed {
        path: raw.path.clone(),
        sha256: found.clone(),
        bytes: read.bytes,
    };
    if found != raw.sha256 {
        let altered = RescoreError::Altered {
            file,
            recorded: raw.sha256.clone(),
            found,
        };
        return (Err(altered), Some(hashed));
    }
    (Ok(transcript), Some(hashed))
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
) -> (Result<Verdict, RescoreError>, Option<super::raw::Hashed>) {
    let Some(parser) =
        crate::evidence::streams::AgentKind::from_name(agent).map(crate::evidence::streams::parser)
    else {
        let unknown = RescoreError::UnknownAgent {
            file: trial_dir.join(&evidence.agent.stdout.path),
            agent: agent.to_owned(),
        };
        return (Err(unknown), None);
    };
    let (transcript, hashed) = parse_hashed(trial_dir, &evidence.agent.stdout, parser);
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

/// [`parse_checked`] for the other suites' rescore (scorecard turns).
pub(crate) fn parse_checked_file(
    trial_dir: &Path,
    raw: &RawFile,
    parser: StreamParser,
) -> Result<Transcript, RescoreError> {
    parse_checked(trial_dir, raw, parser)
}

/// One line of a rescore table.
#[derive(Debug)]
pub struct RescoreRow {
    pub file: PathBuf,
    pub trial: String,
    /// The verdict of a qa or scorecard record as stored, and as its evidence gives it.
    pub stored: Option<Verdict>,
    pub derived: Result<Verdict, RescoreError>,
    /// A challenge record's verdicts (its verdict has two axes); `stored` is `None`
    /// then and `derived` is [`RescoreError::OtherSuite`].
    pub challenge: Option<ChallengeRescore>,
    /// Raw files the record names that were verified (see [`super::raw`]).
    pub raw_files: usize,
    /// Raw files that are missing, of another size, or hash to something else.
    pub raw_problems: Vec<String>,
    /// `sha256:<hex>` of the record file as stored.
    pub record_sha256: Option<String>,
}

/// A challenge record's stored verdict and the one re-derived from its raw files.
#[derive(Debug)]
pub struct ChallengeRescore {
    pub stored: crate::score::challenge::ChallengeVerdict,
    pub derived: Result<crate::score::challenge::ChallengeVerdict, RescoreError>,
}

impl RescoreRow {
    /// A row of a record's stored and re-derived verdict (raw files not yet verified).
    pub fn verdicts(
        file: &Path,
        trial: String,
        stored: Option<Verdict>,
        derived: Result<Verdict, RescoreError>,
    ) -> RescoreRow {
        RescoreRow {
            file: file.to_path_buf(),
            trial,
            stored,
            derived,
            challenge: None,
            raw_files: 0,
            raw_problems: Vec::new(),
            record_sha256: None,
        }
    }

    /// A row of a record that could not be read.
    pub fn unreadable(file: &Path, why: RecordError) -> RescoreRow {
        RescoreRow::verdicts(file, "?".into(), None, Err(RescoreError::Record(why)))
    }

    /// The stored verdict follows from the evidence, and every raw file is as recorded.
    pub fn agrees(&self) -> bool {
        if !self.raw_problems.is_empty() {
            return false;
        }
        if let Some(c) = &self.challenge {
            return matches!(&c.derived, Ok(d) if *d == c.stored);
        }
        matches!((&self.stored, &self.derived), (Some(s), Ok(d)) if s == d)
    }
}

/// Rescore one record file: re-derive its verdict from its evidence, verify every raw
/// file it names, and hash it ([`super::any::check`]).
pub fn rescore_file(file: &Path) -> RescoreRow {
    super::any::check(file).row
}

/// Whether rescore could check a run directory's records against a manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ManifestState {
    /// The path is one record or one trial directory, not a run.
    NotARun,
    /// A run directory without `manifest.jsonl`: made before manifests existed (every
    /// run under `results/` published before then), or by a caller that plans nothing
    /// (tests calling a suite's `execute` directly).
    Absent,
    /// The manifest's planned attempts and distinct trials.
    Present { attempts: usize, trials: usize },
}

/// Everything rescore found in a path: one row per record, the manifest's findings,
/// and the run digest.
#[derive(Debug)]
pub struct RunRescore {
    pub rows: Vec<RescoreRow>,
    pub manifest: ManifestState,
    pub findings: Vec<super::manifest::Finding>,
    /// [`super::digest::run_digest`] over every record found.
    pub digest: String,
    /// For a run directory, what every record's spec was checked against
    /// ([`super::identity::check_record`]): `None` when it has no `run.json`,
    /// `Some(false)` when its `run.json` is from before trials' own specs were kept in
    /// it (apps' content hashes only), `Some(true)` when it pins every trial's spec.
    /// `None` for a record or a trial directory.
    pub planned: Option<Option<bool>>,
}

impl RunRescore {
    /// Every record agrees with its evidence and its raw files, and the records are
    /// exactly the planned ones.
    ///
    /// A run without a manifest passes on its records alone: runs published before
    /// manifests existed (and runs of callers that plan nothing) must keep rescoring,
    /// and nothing in them could tell a removed record from one never planned. What
    /// protects such a run, and a run whose manifest was deleted, is its digest:
    /// `--digest` with the value the run printed when it ended. The missing manifest is
    /// stated on its own line so that nobody mistakes the pass for a complete check.
    pub fn ok(&self) -> bool {
        self.findings.iter().all(super::manifest::Finding::is_note)
            && self.rows.iter().all(RescoreRow::agrees)
    }

    /// As [`RunRescore::ok`], for a run its user knows to be partial (interrupted, or
    /// to be resumed): trials that never finished or never started are still reported,
    /// but only disagreeing records and records nobody planned fail it.
    pub fn ok_partial(&self) -> bool {
        self.findings
            .iter()
            .all(|f| f.is_incomplete() || f.is_note())
            && self.rows.iter().all(RescoreRow::agrees)
    }

    /// Trials that started and never finished.
    pub fn interrupted(&self) -> usize {
        self.findings
            .iter()
            .filter(|f| matches!(f, super::manifest::Finding::Interrupted { .. }))
            .count()
    }

    pub fn disagreeing(&self) -> usize {
        self.rows.iter().filter(|r| !r.agrees()).count()
    }
}

/// Rescore `path`: a record file, a trial directory, or a run directory (every
/// `*/record.json`, checked against the run's manifest when it has one).
pub fn rescore_path(path: &Path) -> Result<RunRescore, RescoreError> {
    let files = super::find_records(path)?;
    let is_run = path.is_dir() && !path.join(super::RECORD_FILE).is_file();
    // One read of each record answers both the check and its digest entry.
    let mut rows: Vec<RescoreRow> = Vec::with_capacity(files.len());
    let mut entries: Vec<super::digest::DigestEntry> = Vec::with_capacity(files.len());
    let dir_of = |f: &Path| {
        f.parent()
            .and_then(|d| d.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    // Every record as the manifest check sees it; a record the harness wrote as it was
    // stopped is checked like any, and counted as no finished record.
    let mut found: Vec<super::manifest::Found> = Vec::with_capacity(files.len());
    let mut stopped: Vec<(String, String)> = Vec::new();
    // What the run planned (`run.json`): each record's spec is checked against it.
    let planned = if is_run {
        super::identity::read(path)?
    } else {
        None
    };
    for (f, mut checked) in files.iter().zip(super::any::check_all(&files)) {
        if let (Some(id), Some(rec)) = (&planned, &checked.record) {
            let at = format!("{}/{}", dir_of(f), super::RECORD_FILE);
            for problem in super::identity::check_record(id, rec) {
                checked.row.raw_problems.push(format!("{at}: {problem}"));
            }
        }
        let signal = checked
            .record
            .as_ref()
            .and_then(|r| r.interrupted().map(str::to_string));
        if let Some(sha) = &checked.row.record_sha256 {
            // As the digest names it: a record that names no trial goes by its directory.
            found.push(super::manifest::Found {
                trial: checked.named_trial.clone().unwrap_or_else(|| dir_of(f)),
                dir: dir_of(f),
                sha256: sha.clone(),
                stopped: signal.is_some(),
            });
            entries.push(super::digest::DigestEntry::from_checked(
                f,
                sha.clone(),
                checked.named_trial,
            ));
        }
        if let Some(signal) = signal {
            stopped.push((dir_of(f), signal));
        }
        rows.push(checked.row);
    }
    let digest = super::digest::run_digest(&entries);
    let mut unfinished = if is_run {
        let recorded: std::collections::HashSet<String> = files.iter().map(|f| dir_of(f)).collect();
        super::unfinished::find(path, |name| recorded.contains(name))?
    } else {
        Vec::new()
    };
    if is_run {
        for (dir, signal) in &stopped {
            unfinished.push(super::unfinished::stopped(path, dir, signal)?);
        }
        unfinished.sort_by(|a, b| a.dir.cmp(&b.dir));
    }
    let (manifest, findings) = if !is_run {
        (ManifestState::NotARun, Vec::new())
    } else {
        match super::manifest::read(path)? {
            // Without a manifest a trial directory without a record is still a trial
            // that never finished: say so.
            None => (
                ManifestState::Absent,
                unfinished
                    .into_iter()
                    .map(|u| super::manifest::Finding::Interrupted {
                        trial: None,
                        unfinished: u,
                    })
                    .collect(),
            ),
            Some(m) => {
                let findings = super::manifest::check(&m, &found, &unfinished);
                let planned = m.planned();
                let state = ManifestState::Present {
                    attempts: planned.values().map(|p| p.attempts).sum(),
                    trials: planned.len(),
                };
                (state, findings)
            }
        }
    };
    Ok(RunRescore {
        rows,
        manifest,
        findings,
        digest,
        planned: is_run.then(|| {
            planned
                .as_ref()
                .map(super::identity::RunIdentity::pins_trials)
        }),
    })
}

/// The whole rescore report: the table, the manifest's findings, the digest, a total.
pub fn render_run(r: &RunRescore) -> String {
    let mut out = render_table(&r.rows);
    match &r.manifest {
        ManifestState::NotARun => {}
        ManifestState::Absent => out.push_str(&format!(
            "manifest: none ({} absent: a run made before manifests, or by a caller that plans nothing); \
             missing or unplanned records cannot be detected, only a rewrite against the run digest\n",
            super::manifest::MANIFEST_FILE
        )),
        ManifestState::Present { attempts, trials } => out.push_str(&format!(
            "manifest: {trials} planned trials ({attempts} attempts)\n"
        )),
    }
    let plan = super::identity::IDENTITY_FILE;
    match r.planned {
        Some(Some(true)) => out.push_str(&format!(
            "plan: every record's spec checked against {plan}\n"
        )),
        Some(Some(false)) => out.push_str(&format!(
            "plan: records' apps checked against {plan}, which is from before it kept each trial's spec \
             (capability, script, challenge and probe hashes are not checked)\n"
        )),
        Some(None) => out.push_str(&format!(
            "plan: none ({plan} absent: a run made before it existed, or by a caller that plans nothing); \
             records' specs are not checked against a plan\n"
        )),
        None => {}
    }
    for f in &r.findings {
        out.push_str(&format!("{f}\n"));
    }
    let raw: usize = r.rows.iter().map(|row| row.raw_files).sum();
    out.push_str(&format!("run digest: {}\n", r.digest));
    let bad = r.disagreeing();
    out.push_str(&format!(
        "{} records, {} agree, {} disagree or unreadable; {raw} raw files verified; {} manifest findings ({} interrupted)\n",
        r.rows.len(),
        r.rows.len() - bad,
        bad,
        r.findings.len(),
        r.interrupted()
    ));
    out
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
                _ if !r.raw_problems.is_empty() => ("-".to_string(), altered(r)),
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
            _ if !r.raw_problems.is_empty() => ("-".to_string(), altered(r)),
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

fn altered(r: &RescoreRow) -> String {
    format!(
        "ALTERED: raw evidence does not match the record: {}",
        r.raw_problems.join("; ")
    )
}
