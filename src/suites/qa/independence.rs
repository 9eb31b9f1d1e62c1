//! Deriving an app's independence matrix (`evidence::independence`): its reference
//! tests, run against the app and every mutant exactly as the gate runs a claimed test,
//! once per app content hash and reference tests, kept in the cache and copied into
//! every trial directory whose gate draws from it.
//!
//! A reference test is the test a verifiable capability's script has the
//! reference agent write: the files its `write_file` steps put in the test directory
//! its final claim names, and the claim's command. It is read from the script, so no
//! agent runs to derive it.

use std::path::{Path, PathBuf};

use futures_util::stream::{self, StreamExt};
use serde::Serialize;

use super::gate_run::{GateContext, GateSlot};
use crate::config::Config;
use crate::evidence::independence::{Cell, Matrix, MatrixProblem, MATRIX_VERSION};
use crate::evidence::{parse_claims, ClaimStatus, ClaimTest, ClaimsFound, GateTarget, RawFile};
use crate::spec::{LoadedApp, ScriptStep};

/// Where a trial keeps the matrix its gate draws from.
pub const MATRIX_FILE: &str = "independence.json";

/// Why an app's matrix could not be derived, or cannot stand.
#[derive(Debug, thiserror::Error)]
pub enum IndependenceError {
    #[error("app `{app}`: capability `{capability}` has no reference test: {why}")]
    NoReferenceTest {
        app: String,
        capability: String,
        why: String,
    },
    #[error("app `{app}` is refused: {}", problems.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Refused {
        app: String,
        problems: Vec<MatrixProblem>,
    },
    #[error("app `{app}`: running the reference test of `{capability}` against {target}: {why}")]
    Run {
        app: String,
        capability: String,
        target: String,
        why: String,
    },
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> IndependenceError + '_ {
    move |source| IndependenceError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// A capability's reference test, as its script writes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReferenceTest {
    pub capability: String,
    pub test: ClaimTest,
    /// `(path relative to the test directory, content)`, in the script's order.
    pub files: Vec<(String, String)>,
}

/// The reference test of every verifiable capability, in the corpus's order. Every
/// verifiable capability must have one: without it nothing says which mutants leave
/// it intact.
pub fn reference_tests(app: &LoadedApp) -> Result<Vec<ReferenceTest>, IndependenceError> {
    let mut tests = Vec::new();
    for cap in app
        .corpus
        .capabilities
        .iter()
        .filter(|c| c.kind.is_verifiable())
    {
        let missing = |why: String| IndependenceError::NoReferenceTest {
            app: app.app.name.clone(),
            capability: cap.id.clone(),
            why,
        };
        let script = app.scripts.get(&cap.id).ok_or_else(|| {
            missing(format!(
                "no script `flows/{}.json` in {}",
                cap.id,
                app.app.dir.display()
            ))
        })?;
        let claim = match parse_claims(script.final_text()) {
            ClaimsFound::One(c) => c,
            _ => {
                return Err(missing(
                    "its script's final message holds no single claim block".into(),
                ))
            }
        };
        let test = match (claim.status, claim.test) {
            (ClaimStatus::Verified, Some(t)) if claim.capability == cap.id => t,
            _ => {
                return Err(missing(
                    "its script's claim is not `verified` with a test for this capability".into(),
                ))
            }
        };
        let prefix = format!("{}/", test.dir.trim_end_matches('/'));
        let files: Vec<(String, String)> = script
            .tool_steps()
            .iter()
            .filter_map(|step| match step {
                ScriptStep::WriteFile { path, content } => path
                    .strip_prefix(&prefix)
                    .map(|rel| (rel.to_string(), content.clone())),
                _ => None,
            })
            .collect();
        if files.is_empty() {
            return Err(missing(format!(
                "its script writes no file into the test directory `{}`",
                test.dir
            )));
        }
        if let Some((bad, _)) = files.iter().find(|(rel, _)| !is_plain_relative(rel)) {
            return Err(missing(format!(
                "its script writes `{bad}`, which is not a plain path inside `{}`",
                test.dir
            )));
        }
        tests.push(ReferenceTest {
            capability: cap.id.clone(),
            test,
            files,
        });
    }
    Ok(tests)
}

fn is_plain_relative(rel: &str) -> bool {
    let p = Path::new(rel);
    !rel.is_empty()
        && p.components()
            .all(|c| matches!(c, std::path::Component::Normal(_)))
}

/// A matrix as a trial keeps it: parsed, and the raw file in the trial directory.
#[derive(Debug, Clone)]
pub struct Kept {
    pub matrix: Matrix,
    pub raw: RawFile,
}

/// The app's matrix ([`matrix_for`]), refused if it cannot stand, and copied into
/// `trial_dir` as [`MATRIX_FILE`].
pub fn keep(
    app: &LoadedApp,
    (matrix, bytes): (Matrix, Vec<u8>),
    trial_dir: &Path,
) -> Result<Kept, IndependenceError> {
    let problems = matrix.problems();
    if !problems.is_empty() {
        return Err(IndependenceError::Refused {
            app: app.app.name.clone(),
            problems,
        });
    }
    let file = trial_dir.join(MATRIX_FILE);
    std::fs::write(&file, &bytes).map_err(io(&file))?;
    let raw = RawFile {
        path: MATRIX_FILE.into(),
        bytes: bytes.len() as u64,
        bytes_seen: bytes.len() as u64,
        sha256: crate::hash::sha256(&bytes),
    };
    Ok(Kept { matrix, raw })
}

/// The app's matrix and its bytes: read from the cache when one was derived for the
/// same app content, reference tests and gate settings, else derived now and cached.
/// One process at a time derives a given matrix (a lock beside the cache file); the
/// others wait and read it.
pub async fn matrix_for(
    app: &LoadedApp,
    cfg: &Config,
) -> Result<(Matrix, Vec<u8>), IndependenceError> {
    let tests = reference_tests(app)?;
    let reference_sha256 = crate::hash::sha256(&serde_json::to_vec(&tests).unwrap_or_default());
    let key = crate::hash::sha256(
        format!(
            "{MATRIX_VERSION}\n{}\n{reference_sha256}\n{:?}\n{}",
            app.app.content_hash,
            cfg.sandbox,
            cfg.gate_timeout.as_millis()
        )
        .as_bytes(),
    );
    let key = key.trim_start_matches("sha256:");
    let dir = cfg.cache_dir.join("independence");
    std::fs::create_dir_all(&dir).map_err(io(&dir))?;
    let stem = format!("{}-{}", app.app.name, &key[..16]);
    let file = dir.join(format!("{stem}.json"));
    let lock_path = dir.join(format!("{stem}.lock"));
    let lock = lock(&lock_path).await?;
    if let Some(found) = read_cached(&file, app, &reference_sha256) {
        drop(lock);
        return Ok(found);
    }
    let work = dir.join(format!("{stem}.work"));
    let _ = std::fs::remove_dir_all(&work);
    let matrix = derive(app, cfg, &tests, reference_sha256, &work).await?;
    let bytes = serde_json::to_vec_pretty(&matrix).unwrap_or_default();
    // A matrix that refuses its app is derived again next time: a refusal is never
    // carried over from a run the machine may have disturbed.
    if matrix.problems().is_empty() {
        let partial = dir.join(format!("{stem}.json.partial"));
        std::fs::write(&partial, &bytes).map_err(io(&partial))?;
        std::fs::rename(&partial, &file).map_err(io(&file))?;
    }
    // The runs' outputs stay for reading until the matrix is derived again.
    drop(lock);
    Ok((matrix, bytes))
}

fn read_cached(file: &Path, app: &LoadedApp, reference_sha256: &str) -> Option<(Matrix, Vec<u8>)> {
    let bytes = std::fs::read(file).ok()?;
    let matrix: Matrix = serde_json::from_slice(&bytes).ok()?;
    (matrix.schema_version == MATRIX_VERSION
        && matrix.app == app.app.name
        && matrix.app_content_hash == app.app.content_hash
        && matrix.reference_sha256 == reference_sha256)
        .then_some((matrix, bytes))
}

/// An exclusive lock on `path`, waited for off the runtime's threads.
async fn lock(path: &Path) -> Result<nix::fcntl::Flock<std::fs::File>, IndependenceError> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(io(path))?;
    let owned = path.to_path_buf();
    tokio::task::spawn_blocking(move || {
        nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive)
            .map_err(|(_, errno)| io(&owned)(std::io::Error::from(errno)))
    })
    .await
    .map_err(|e| io(path)(std::io::Error::other(e.to_string())))?
}

/// Run every reference test against the app and every mutant.
async fn derive(
    app: &LoadedApp,
    cfg: &Config,
    tests: &[ReferenceTest],
    reference_sha256: String,
    work: &Path,
) -> Result<Matrix, IndependenceError> {
    let capabilities: Vec<String> = tests.iter().map(|t| t.capability.clone()).collect();
    let mut jobs = Vec::new();
    for t in tests {
        let base = work.join(&t.capability);
        let dir = base.join("test").join(&t.test.dir);
        for (rel, content) in &t.files {
            let path = dir.join(rel);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(io(parent))?;
            }
            std::fs::write(&path, content).map_err(io(&path))?;
        }
        let logs = base.join("logs");
        std::fs::create_dir_all(&logs).map_err(io(&logs))?;
        let targets = std::iter::once(None).chain(capabilities.iter().map(Some));
        for (position, mutant) in targets.enumerate() {
            jobs.push(CellJob {
                test: t.clone(),
                base: base.clone(),
                dir: dir.clone(),
                logs: logs.clone(),
                position,
                mutant: mutant.cloned(),
            });
        }
    }
    // Browser tests each start a Chromium: one at a time, as the gate runs them.
    let width = if crate::plan::needs_browser(app.app.modality) {
        1
    } else {
        std::thread::available_parallelism().map_or(1, |n| n.get().min(4))
    };
    let cells: Vec<Result<Cell, IndependenceError>> = stream::iter(jobs)
        .map(|job| run_cell(app, cfg, job))
        .buffered(width)
        .collect()
        .await;
    Ok(Matrix {
        schema_version: MATRIX_VERSION,
        app: app.app.name.clone(),
        app_content_hash: app.app.content_hash.clone(),
        reference_sha256,
        capabilities,
        cells: cells.into_iter().collect::<Result<_, _>>()?,
    })
}

/// One cell to run: whose reference test, where it was written, against which target.
struct CellJob {
    test: ReferenceTest,
    /// The test's own directory in the work area: its copy, its runs' streams and logs.
    base: PathBuf,
    dir: PathBuf,
    logs: PathBuf,
    position: usize,
    mutant: Option<String>,
}

/// Run one reference test against one freshly started target, as a gate run.
async fn run_cell(app: &LoadedApp, cfg: &Config, job: CellJob) -> Result<Cell, IndependenceError> {
    let gate_dir = job.base.join("gate");
    let ctx = GateContext {
        app,
        test: &job.test.test,
        dir: &job.dir,
        cfg,
        trial_dir: &job.base,
        gate_dir: &gate_dir,
        logs: &job.logs,
    };
    let slot = GateSlot {
        position: job.position,
        target: if job.mutant.is_some() {
            GateTarget::Mutant
        } else {
            GateTarget::App
        },
        mutant: job.mutant.clone(),
        attempt: job.position as u32 + 1,
    };
    let failed = |why: String| IndependenceError::Run {
        app: app.app.name.clone(),
        capability: job.test.capability.clone(),
        target: job
            .mutant
            .as_deref()
            .map_or("the app".into(), |m| format!("the mutant of `{m}`")),
        why,
    };
    let mut target = ctx.prepare(&slot).await.map_err(failed)?;
    let run = ctx.run(&slot, &target).await;
    target.stop(&job.base).await;
    let run = run.map_err(failed)?;
    // Neither says how the test judges this target: the matrix is not derived from it.
    if let Some(signal) = &run.end.interrupted {
        return Err(failed(format!("the run was interrupted ({signal})")));
    }
    if run.end.timed_out || !run.exceeded.is_empty() {
        return Err(failed(run.describe()));
    }
    Ok(Cell {
        test: job.test.capability.clone(),
        mutant: job.mutant,
        end: run.end,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn app(name: &str) -> LoadedApp {
        crate::spec::load_app(&crate::binaries::repo_root().join("apps").join(name))
            .unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    #[test]
    fn every_shipped_verifiable_capability_has_a_reference_test() {
        for name in ["api-ledger", "browser-notes", "cli-tally", "ext-wordbadge"] {
            let app = app(name);
            let tests = reference_tests(&app).unwrap_or_else(|e| panic!("{e}"));
            let verifiable = app
                .corpus
                .capabilities
                .iter()
                .filter(|c| c.kind.is_verifiable())
                .count();
            assert_eq!(tests.len(), verifiable, "{name}");
            for t in &tests {
                assert!(!t.files.is_empty(), "{name}::{}", t.capability);
            }
        }
    }

    #[test]
    fn a_verifiable_capability_without_a_test_is_named() {
        let mut app = app("api-ledger");
        app.scripts.remove("balance");
        let e = reference_tests(&app).unwrap_err().to_string();
        assert!(
            e.contains("app `api-ledger`") && e.contains("`balance` has no reference test"),
            "{e}"
        );
    }
}
