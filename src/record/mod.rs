//! Append-only records: one `record.json` per trial, beside the raw evidence it names.
//!
//! A record is created with create-new semantics and written atomically (a temporary
//! file hard-linked into place, which fails if the name exists), so a record is never
//! overwritten and never seen half-written.

pub mod any;
pub mod challenge;
pub mod digest;
pub mod hackability;
pub mod identity;
pub mod manifest;
pub mod merge;
pub mod raw;
pub mod rescore;
pub mod schema;
pub mod scorecard;
pub mod unfinished;

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::config::Mode;
use crate::evidence::QaEvidence;
use crate::score::Verdict;
use crate::spec::{CapabilityKind, Suite};

pub const RECORD_FILE: &str = "record.json";
/// The record schema written; every version from 1 up to it is read. 2 renamed fields
/// (`wording`, `nominal_hours`, `nominal_secs`, `setup`) whose old names still load.
pub const SCHEMA_VERSION: u32 = 2;

#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("{file}: {source}")]
    Io {
        file: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{file}: already exists; records are never overwritten")]
    Exists { file: PathBuf },
    #[error("{file}: not a gauntlet record: {reason}")]
    Invalid { file: PathBuf, reason: String },
}

fn io(file: &Path) -> impl FnOnce(std::io::Error) -> RecordError + '_ {
    move |source| RecordError::Io {
        file: file.to_path_buf(),
        source,
    }
}

/// The harness configuration a trial ran under, as it matters to comparing results.
/// No secret is ever part of it: byok records the variable name, never the key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RecordConfig {
    pub agent: String,
    pub agent_version: String,
    pub model: String,
    pub mode: Mode,
    pub n: u32,
    pub timeout_secs: f64,
    pub gate_timeout_secs: f64,
    pub output_cap_bytes: u64,
    /// byok only: where calls were forwarded.
    pub upstream_url: Option<String>,
    /// The per-trial token budget the proxy enforced, if any.
    #[serde(default)]
    pub max_tokens_per_trial: Option<u64>,
    /// The gauntlet source the harness was built from: `git rev-parse HEAD`, with
    /// `-dirty` when the work tree had changes; `None` when git was not available.
    /// Absent in records written before it existed.
    #[serde(default)]
    pub commit: Option<String>,
    /// Whether the trial ran sealed (docs/sealing.md). Records written before sealing
    /// existed were not sealed, and read as `off`.
    #[serde(default = "unsealed")]
    pub sandbox: crate::config::Sandbox,
}

fn unsealed() -> crate::config::Sandbox {
    crate::config::Sandbox::Off
}

impl RecordConfig {
    /// What of `cfg` a record of `agent` (at `agent_version`) keeps: the same for every
    /// suite, so that records of one run compare.
    pub fn of(cfg: &crate::config::Config, agent: &str, agent_version: String) -> RecordConfig {
        RecordConfig {
            agent: agent.into(),
            agent_version,
            model: cfg.model.clone(),
            mode: cfg.mode,
            n: cfg.n,
            timeout_secs: cfg.timeout.as_secs_f64(),
            gate_timeout_secs: cfg.gate_timeout.as_secs_f64(),
            output_cap_bytes: cfg.output_cap_bytes,
            upstream_url: (cfg.mode == Mode::Byok).then(|| cfg.upstream_url.clone()),
            max_tokens_per_trial: cfg.max_tokens_per_trial,
            commit: gauntlet_commit(&cfg.out_dir),
            sandbox: cfg.sandbox,
        }
    }
}

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

/// Whether `dir_name` is a directory [`create_trial_dir`] could have made for `trial`:
/// a record in any other directory was moved or written there by someone else.
pub fn is_trial_dir_of(trial: &str, dir_name: &str) -> bool {
    let base = trial.replace("::", ".");
    dir_name == base
        || dir_name
            .strip_prefix(base.as_str())
            .and_then(|rest| rest.strip_prefix('.'))
            .and_then(|n| n.parse::<u32>().ok())
            .is_some_and(|n| n >= 2 && n.to_string().len() == dir_name.len() - base.len() - 1)
}

/// Create a fresh directory for a trial under `run_dir`: `<name>`, or `<name>.2`,
/// `<name>.3`… when a retry already used the name. Never reuses a directory.
pub fn create_trial_dir(run_dir: &Path, trial: &str) -> Result<PathBuf, RecordError> {
    std::fs::create_dir_all(run_dir).map_err(io(run_dir))?;
    let base = trial.replace("::", ".");
    for attempt in 1..10_000u32 {
        let dir = if attempt == 1 {
            run_dir.join(&base)
        } else {
            run_dir.join(format!("{base}.{attempt}"))
        };
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(io(&dir)(e)),
        }
    }
    Err(RecordError::Exists {
        file: run_dir.join(base),
    })
}

/// Write `value` as `dir/name` atomically and only if `dir/name` does not exist.
pub fn write_new_json<T: Serialize>(
    dir: &Path,
    name: &str,
    value: &T,
) -> Result<PathBuf, RecordError> {
    let target = dir.join(name);
    let bytes = digest::record_bytes(value).map_err(|e| RecordError::Invalid {
        file: target.clone(),
        reason: e.to_string(),
    })?;
    let mut tmp = tempfile_in(dir)?;
    tmp.1.write_all(&bytes).map_err(io(&tmp.0))?;
    tmp.1.sync_all().map_err(io(&tmp.0))?;
    let linked = std::fs::hard_link(&tmp.0, &target);
    let _ = std::fs::remove_file(&tmp.0);
    match linked {
        Ok(()) => Ok(target),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            Err(RecordError::Exists { file: target })
        }
        Err(e) => Err(io(&target)(e)),
    }
}

fn tempfile_in(dir: &Path) -> Result<(PathBuf, std::fs::File), RecordError> {
    for i in 0..1000u32 {
        let path = dir.join(format!(".tmp-{}-{i}", std::process::id()));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(f) => return Ok((path, f)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(io(&path)(e)),
        }
    }
    Err(RecordError::Exists {
        file: dir.join(".tmp"),
    })
}

/// What every record begins with, whatever its suite: which suite, run and trial it
/// belongs to, when it ran and under which configuration. Every suite's record holds
/// it flattened, so it reads without committing to any suite's record shape and one
/// run directory can hold all three suites.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Header {
    pub schema_version: u32,
    /// Which suite's record this is; every reader dispatches on it.
    pub suite: Suite,
    /// The test name, e.g. `qa::api-ledger::balance` (`::r2` for a repeat).
    pub trial: String,
    pub run_id: String,
    pub gauntlet_version: String,
    pub started_at: String,
    pub finished_at: String,
    pub wall_ms: u64,
    pub config: RecordConfig,
}

impl Header {
    /// The header of a trial of `suite` that started at `started_at` (`t0` on the
    /// monotonic clock) and finishes now, in this process's run.
    pub fn finished_now(
        suite: Suite,
        trial: String,
        started_at: chrono::DateTime<chrono::Utc>,
        t0: std::time::Instant,
        config: RecordConfig,
    ) -> Header {
        Header {
            schema_version: SCHEMA_VERSION,
            suite,
            trial,
            run_id: run_id().to_string(),
            gauntlet_version: crate::VERSION.into(),
            started_at: started_at.to_rfc3339(),
            finished_at: chrono::Utc::now().to_rfc3339(),
            wall_ms: t0.elapsed().as_millis() as u64,
            config,
        }
    }
}

/// The header of a record file.
pub fn load_header(file: &Path) -> Result<Header, RecordError> {
    head(file)
}

/// [`load_header`] of a record file already read into `bytes`.
pub fn load_header_bytes(file: &Path, bytes: &[u8]) -> Result<Header, RecordError> {
    head_bytes(file, bytes)
}

/// The trial a record file belongs to (its `trial` field alone).
pub fn trial_of(file: &Path) -> Result<String, RecordError> {
    #[derive(serde::Deserialize)]
    struct Head {
        trial: String,
    }
    head::<Head>(file).map(|h| h.trial)
}

/// [`trial_of`] a record file already read into `bytes`: readers that check a record
/// read it once, not once per question.
pub fn trial_of_bytes(file: &Path, bytes: &[u8]) -> Result<String, RecordError> {
    #[derive(serde::Deserialize)]
    struct Head {
        trial: String,
    }
    head_bytes::<Head>(file, bytes).map(|h| h.trial)
}

fn head<T: serde::de::DeserializeOwned>(file: &Path) -> Result<T, RecordError> {
    let bytes = std::fs::read(file).map_err(io(file))?;
    head_bytes(file, &bytes)
}

fn head_bytes<T: serde::de::DeserializeOwned>(file: &Path, bytes: &[u8]) -> Result<T, RecordError> {
    crate::json::from_bytes(bytes).map_err(|e| RecordError::Invalid {
        file: file.to_path_buf(),
        reason: e.to_string(),
    })
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

/// Every record file under `path`: `path` itself if it is a record, otherwise each
/// `*/record.json` below it (sorted, so output is deterministic).
pub fn find_records(path: &Path) -> Result<Vec<PathBuf>, RecordError> {
    if path.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    if path.join(RECORD_FILE).is_file() {
        return Ok(vec![path.join(RECORD_FILE)]);
    }
    // A trial directory without its record (an interrupted trial) holds no records:
    // what lies below it (the agent's workspace) is the agent's to write, and a
    // `record.json` there is a forgery, never a trial's record.
    if path
        .file_name()
        .is_some_and(|n| unfinished::is_trial_dir_name(&n.to_string_lossy()))
    {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for e in std::fs::read_dir(path).map_err(io(path))? {
        let e = e.map_err(io(path))?;
        let f = e.path().join(RECORD_FILE);
        if f.is_file() {
            out.push(f);
        }
    }
    out.sort();
    Ok(out)
}

/// The gauntlet commit this process runs from (see [`RecordConfig::commit`]), computed
/// once per process from the repository root; `None` when git or the repository is
/// absent (an installed binary, a source tarball). What the runs themselves write under
/// `out_dir` does not make the tree dirty: a run resumed in the repository would
/// otherwise never match its own first process.
pub fn gauntlet_commit(out_dir: &Path) -> Option<String> {
    static COMMIT: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    COMMIT
        .get_or_init(|| {
            let root = crate::binaries::repo_root();
            let git = |args: &[&str]| {
                std::process::Command::new("git")
                    .args(args)
                    .current_dir(&root)
                    .stderr(std::process::Stdio::null())
                    .output()
                    .ok()
                    .filter(|o| o.status.success())
                    .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            };
            let rev = git(&["rev-parse", "HEAD"]).filter(|r| !r.is_empty())?;
            // Absolute, as git's paths are made below (the run directory may not exist yet).
            let out = std::fs::canonicalize(out_dir).unwrap_or_else(|_| {
                std::env::current_dir()
                    .map(|d| d.join(out_dir))
                    .unwrap_or_else(|_| out_dir.to_path_buf())
            });
            let root_abs = std::fs::canonicalize(&root).unwrap_or_else(|_| root.clone());
            let dirty = git(&["status", "--porcelain"]).is_some_and(|s| {
                s.lines().any(|l| {
                    // `XY path` (or `XY from -> to`); a directory ends in `/`.
                    let path = l
                        .get(3..)
                        .unwrap_or_default()
                        .rsplit(" -> ")
                        .next()
                        .unwrap_or_default();
                    let abs = root_abs.join(path.trim_end_matches('/'));
                    !(abs.starts_with(&out) || out.starts_with(&abs))
                })
            });
            Some(if dirty { format!("{rev}-dirty") } else { rev })
        })
        .clone()
}

/// The id of the run this process belongs to: nextest's run id when under nextest
/// (every test process of one run shares it), otherwise one generated per process.
pub fn run_id() -> &'static str {
    static ID: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    ID.get_or_init(|| match std::env::var("NEXTEST_RUN_ID") {
        Ok(id) if !id.is_empty() => id,
        _ => format!(
            "local-{}-{}",
            chrono::Utc::now().format("%Y%m%dT%H%M%SZ"),
            std::process::id()
        ),
    })
}

/// One line per trial that nextest keeps in JUnit `system-out`, for dashboards. It ends
/// with the record's own hash (`record_sha256=`, the last field of every suite's line),
/// from which, with the trial name, the run digest can be recomputed
/// ([`digest::run_digest`]).
pub fn summary_line(rec: &QaRecord) -> String {
    let (tin, tout) = rec.tokens();
    let mut line = format!(
        "gauntlet: {} verdict={} passed={} tokens_in={tin} tokens_out={tout} wall_ms={} reason={:?}",
        rec.header.trial, rec.verdict.outcome, rec.verdict.passed, rec.header.wall_ms, rec.verdict.reason
    );
    line.push_str(unsealed_tag(&rec.header.config));
    if let Some(limit) = &rec.evidence.budget_hit {
        line.push_str(&format!(" budget_hit={limit:?}"));
    }
    line.push_str(&format!(" record_sha256={}", digest::value_sha256(rec)));
    line
}

/// ` sandbox=off` for a trial that ran unsealed, appended to every suite's summary line
/// so that JUnit says so; empty for a sealed one.
pub fn unsealed_tag(config: &RecordConfig) -> &'static str {
    if config.sandbox.sealed() {
        ""
    } else {
        " sandbox=off"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trial_has_exactly_the_directories_create_trial_dir_makes() {
        let run = tempfile::tempdir().unwrap();
        for _ in 0..3 {
            let dir = create_trial_dir(run.path(), "qa::app::cap").unwrap();
            let name = dir.file_name().unwrap().to_string_lossy().into_owned();
            assert!(is_trial_dir_of("qa::app::cap", &name), "{name}");
        }
        for other in [
            "qa.app.cap2",
            "qa.app",
            "qa.app.cap.1",
            "qa.app.cap.02",
            "qa.app.cap.x",
            "",
        ] {
            assert!(!is_trial_dir_of("qa::app::cap", other), "{other}");
        }
    }

    #[test]
    fn records_are_never_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        write_new_json(dir.path(), "r.json", &serde_json::json!({"a": 1})).unwrap();
        let err = write_new_json(dir.path(), "r.json", &serde_json::json!({"a": 2})).unwrap_err();
        assert!(matches!(err, RecordError::Exists { .. }));
        let kept: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.path().join("r.json")).unwrap()).unwrap();
        assert_eq!(kept["a"], 1);
        // No temporary files left behind.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn an_interrupted_trial_dir_yields_no_record_from_the_agents_workspace() {
        let run = tempfile::tempdir().unwrap();
        let trial = run.path().join("qa.app.cap");
        std::fs::create_dir_all(trial.join("workspace")).unwrap();
        std::fs::write(trial.join("workspace").join(RECORD_FILE), "{}").unwrap();
        assert_eq!(find_records(&trial).unwrap(), Vec::<PathBuf>::new());
        // From the run directory too: only `<trial>/record.json` is a record.
        assert_eq!(find_records(run.path()).unwrap(), Vec::<PathBuf>::new());
    }

    #[test]
    fn trial_dirs_are_unique() {
        let dir = tempfile::tempdir().unwrap();
        let a = create_trial_dir(dir.path(), "qa::x::y").unwrap();
        let b = create_trial_dir(dir.path(), "qa::x::y").unwrap();
        assert_ne!(a, b);
        assert!(a.ends_with("qa.x.y") && b.ends_with("qa.x.y.2"));
    }
}
