//! A run's lifecycle, the same for `gauntlet run` (one process, every trial) and for
//! the libtest-mimic targets (under nextest, one process a trial): what a run is
//! planned with ([`run_identity`]), the run directory it writes into and the mark
//! that says it is live ([`open_run`]), its manifest lines, and what a resumed run
//! has left to do ([`unfinished_trials`], [`resume_skips`]).

use std::path::{Path, PathBuf};

use super::identity::{placement, run_identity};
use crate::config::Config;
use crate::plan::{self, Suites};
use crate::record::manifest::PlannedTrial;

/// Why browser trials cannot run on this machine, if they cannot.
pub fn no_browser(cfg: &Config) -> Option<String> {
    plan::browser_skip(
        crate::world::browser::chromium_available().as_deref(),
        &crate::world::browser::chromium_path(),
        cfg.ci,
    )
}

/// Why a run cannot start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    #[error(transparent)]
    Plan(#[from] plan::PlanError),
    #[error("cannot take the run's identity: {0}")]
    Identity(#[source] std::io::Error),
    #[error(transparent)]
    Resume(#[from] ResumeError),
}

/// The config and every suite's data, loaded and checked: both fail before anything
/// starts, naming the file and field.
pub fn load() -> Result<(Config, Suites), StartError> {
    let cfg = Config::from_env()?;
    let suites = crate::suites::load(&cfg)?;
    Ok((cfg, suites))
}

/// A run opened by the process that runs all of it (`gauntlet run`).
pub struct Opened {
    pub run_dir: PathBuf,
    /// The trials a resumed run has left to do; `None` for a new run.
    pub unfinished: Option<std::collections::BTreeSet<String>>,
}

/// Take the run's identity and open its directory: a new one, or the one `cfg`
/// resumes once its identity matches, with the trials it left unfinished.
pub fn open(cfg: &Config, suites: &Suites) -> Result<Opened, StartError> {
    let identity = run_identity(cfg, suites).map_err(StartError::Identity)?;
    let (run_dir, resuming) = open_run(cfg, Some(&identity))?;
    let unfinished = match (resuming, cfg.retry_infra) {
        (true, true) => Some(failed_by_the_provider(&run_dir)?.into_keys().collect()),
        (true, false) => Some(unfinished_trials(&run_dir)?),
        (false, _) => None,
    };
    Ok(Opened {
        run_dir,
        unfinished,
    })
}

/// The manifest lines of `trials` that will run, as a new or a resumed run plans them.
pub fn planned_lines(trials: &[plan::Trial], resuming: bool) -> Vec<PlannedTrial> {
    trials
        .iter()
        .filter(|t| t.skip.is_none())
        .map(|t| {
            let line = manifest_line(t);
            if resuming {
                line.resuming()
            } else {
                line
            }
        })
        .collect()
}

/// Why a run cannot be resumed.
#[derive(Debug, thiserror::Error)]
pub enum ResumeError {
    #[error("{}: missing: this run cannot be resumed, since nothing says what it was planned with (a run made before `run.json` existed, or not a run directory)", .file.display())]
    NoIdentity { file: PathBuf },
    #[error("{}: the run was planned with another config or spec than this process has: {what}; resume it with the run's own config, or start a new run", .file.display())]
    Differs { file: PathBuf, what: String },
    #[error("{}: missing: a run without a manifest has no plan to resume", .file.display())]
    NoManifest { file: PathBuf },
    #[error("{}: run `{run_id}` is still running in this directory: resume it once it has ended (or stop it: SIGINT or SIGTERM keeps what its trials observed)", .dir.display())]
    Live { dir: PathBuf, run_id: String },
    #[error("{}: cannot mark the run as live: {source}", .file.display())]
    LiveMark {
        file: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("retrying the provider's failures (--retry-infra, GAUNTLET_RETRY_INFRA) needs a run to resume: give --resume <run dir> (GAUNTLET_RESUME)")]
    RetryInfraWithoutResume,
    #[error(transparent)]
    Record(#[from] crate::record::RecordError),
}

/// The run directory this process's trials go to, and whether it is a resumed run:
/// `GAUNTLET_RESUME`'s, once its `run.json` matches `identity` (when the process has
/// one), else a new one under `GAUNTLET_OUT`, whose `run.json` it writes if it is the
/// first process of the run to plan.
pub fn open_run(
    cfg: &Config,
    identity: Option<&crate::record::identity::RunIdentity>,
) -> Result<(PathBuf, bool), ResumeError> {
    use crate::record::identity::{self, IDENTITY_FILE};
    if cfg.retry_infra && cfg.resume.is_none() {
        return Err(ResumeError::RetryInfraWithoutResume);
    }
    match &cfg.resume {
        Some(dir) => {
            let file = dir.join(IDENTITY_FILE);
            let recorded =
                identity::read(dir)?.ok_or(ResumeError::NoIdentity { file: file.clone() })?;
            if let Some(what) = identity.and_then(|now| recorded.difference(now)) {
                return Err(ResumeError::Differs { file, what });
            }
            // Marked first, then checked: of two resumes started together, each sees
            // the other's mark and both refuse, rather than both running.
            hold_live(dir)?;
            if let Some(run_id) = live_elsewhere(dir)? {
                return Err(ResumeError::Live {
                    dir: dir.clone(),
                    run_id,
                });
            }
            Ok((dir.clone(), true))
        }
        None => {
            let dir = cfg.out_dir.join(crate::record::run_id());
            if let Some(id) = identity {
                start_in(&dir, id)?;
            }
            Ok((dir, false))
        }
    }
}

/// Start a new run in `dir` (or join one another process of it started): the
/// directory, its identity with this machine's placement unless one is there, and the
/// mark that says it is live.
fn start_in(dir: &Path, id: &crate::record::identity::RunIdentity) -> Result<(), ResumeError> {
    use crate::record::identity::{self, IDENTITY_FILE};
    std::fs::create_dir_all(dir).map_err(|e| crate::record::RecordError::Io {
        file: dir.to_path_buf(),
        source: e,
    })?;
    if !dir.join(IDENTITY_FILE).exists() {
        let placed = identity::RunIdentity {
            placement: Some(placement()),
            ..id.clone()
        };
        identity::write_once(dir, &placed)?;
    }
    hold_live(dir)
}

/// Open a new run in `dir`, a directory the caller names (each agent's run of the
/// red-team audit): its identity taken and written, the run marked live, and
/// `trials` planned in its manifest, as [`open`] and `gauntlet run` do.
pub fn open_in(
    cfg: &Config,
    suites: &Suites,
    dir: &Path,
    trials: &[plan::Trial],
) -> Result<(), StartError> {
    let identity = run_identity(cfg, suites).map_err(StartError::Identity)?;
    start_in(dir, &identity)?;
    crate::record::manifest::append(dir, &planned_lines(trials, false))
        .map_err(|e| StartError::Resume(e.into()))
}

/// Where each process of a run that is writing into a run directory holds a shared lock
/// on a file named by its run id, for as long as it lives: the kernel drops the lock
/// when the process ends, however it ends, so a live run is told from a dead one
/// without trusting anything a killed process left behind.
const LIVE_DIR: &str = ".live";

/// Mark `run_dir` as written by this process's run until the process ends.
fn hold_live(run_dir: &Path) -> Result<(), ResumeError> {
    use nix::fcntl::{Flock, FlockArg};
    static HELD: std::sync::Mutex<Vec<Flock<std::fs::File>>> = std::sync::Mutex::new(Vec::new());
    let dir = run_dir.join(LIVE_DIR);
    let file = dir.join(crate::record::run_id());
    let mark = |source| ResumeError::LiveMark {
        file: file.clone(),
        source,
    };
    std::fs::create_dir_all(&dir).map_err(mark)?;
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&file)
        .map_err(mark)?;
    let held = Flock::lock(f, FlockArg::LockSharedNonblock)
        .map_err(|(_, errno)| mark(std::io::Error::from(errno)))?;
    if let Ok(mut h) = HELD.lock() {
        h.push(held);
    }
    Ok(())
}

/// The id of another run still writing into `run_dir`, if one is.
fn live_elsewhere(run_dir: &Path) -> Result<Option<String>, ResumeError> {
    use nix::fcntl::{Flock, FlockArg};
    let dir = run_dir.join(LIVE_DIR);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Ok(None);
    };
    let me = crate::record::run_id();
    for e in entries.flatten() {
        let id = e.file_name().to_string_lossy().into_owned();
        if id == me {
            continue;
        }
        let Ok(f) = std::fs::File::open(e.path()) else {
            continue;
        };
        match Flock::lock(f, FlockArg::LockExclusiveNonblock) {
            // Nobody holds it: that run has ended.
            Ok(_) => {}
            Err((_, nix::errno::Errno::EWOULDBLOCK)) => return Ok(Some(id)),
            Err((_, errno)) => {
                return Err(ResumeError::LiveMark {
                    file: e.path(),
                    source: errno.into(),
                })
            }
        }
    }
    Ok(None)
}

/// How far one trial of a run got: attempts planned, attempts finished.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Progress {
    pub planned: usize,
    pub finished: usize,
}

/// Every trial of the run in `run_dir` its manifest plans or its records name, with how
/// far it got. A finished attempt is a trial directory holding a finished record, or one
/// a `finished` line of the manifest names: a record stopped part-way (or whose header
/// cannot be read, which rescore reports) is none, and a finished record removed later
/// still is one (rescore reports it `REMOVED`), so a resume never runs it again.
pub fn progress(
    run_dir: &Path,
) -> Result<std::collections::BTreeMap<String, Progress>, ResumeError> {
    use std::collections::{BTreeMap, BTreeSet};
    let manifest = crate::record::manifest::read(run_dir)?.ok_or(ResumeError::NoManifest {
        file: run_dir.join(crate::record::manifest::MANIFEST_FILE),
    })?;
    let mut dirs: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in crate::record::find_records(run_dir)? {
        let Ok(rec) = crate::record::any::load_any(&f) else {
            continue;
        };
        if rec.interrupted().is_some() {
            continue;
        }
        let dir = f
            .parent()
            .and_then(|d| d.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        dirs.entry(rec.header().trial.clone())
            .or_default()
            .insert(dir);
    }
    for (trial, f) in manifest.finished() {
        dirs.entry(trial.to_string())
            .or_default()
            .insert(f.dir.clone());
    }
    let mut out: BTreeMap<String, Progress> = manifest
        .planned()
        .into_iter()
        .map(|(t, p)| {
            let planned = Progress {
                planned: p.attempts,
                finished: 0,
            };
            (t.to_string(), planned)
        })
        .collect();
    for (trial, d) in dirs {
        out.entry(trial).or_default().finished = d.len();
    }
    Ok(out)
}

/// The trials of the run in `run_dir` that were planned and have fewer finished
/// attempts than planned ones: what a resumed run runs.
pub fn unfinished_trials(
    run_dir: &Path,
) -> Result<std::collections::BTreeSet<String>, ResumeError> {
    Ok(progress(run_dir)?
        .into_iter()
        .filter(|(_, p)| p.finished < p.planned)
        .map(|(t, _)| t)
        .collect())
}

/// Why a trial of a resumed run is not run again: every attempt planned for it in
/// `run_dir` finished. Decided at list time, so nextest skips the trial instead of
/// counting a trial that did nothing as a pass: `GAUNTLET_RESUME=<run dir> cargo
/// nextest run` with the first run's filter runs every trial it did not finish,
/// started or not.
pub fn resume_skips(
    run_dir: &Path,
) -> Result<std::collections::BTreeMap<String, String>, ResumeError> {
    let why = format!(
        "finished in {} (a resumed run runs only unfinished trials)",
        run_dir.display()
    );
    Ok(progress(run_dir)?
        .into_iter()
        .filter(|(_, p)| p.planned > 0 && p.finished >= p.planned)
        .map(|(t, _)| (t, why.clone()))
        .collect())
}

/// The trials of the run in `run_dir` whose counted record (the latest of each, as the
/// pages count) the provider failed, each with the cause its evidence gives: what
/// `--retry-infra` runs again. Their earlier records stay, superseded by the new ones.
pub fn failed_by_the_provider(
    run_dir: &Path,
) -> Result<std::collections::BTreeMap<String, crate::evidence::infra::InfraCause>, ResumeError> {
    use std::collections::BTreeMap;
    let mut latest: BTreeMap<String, (String, Option<crate::evidence::infra::InfraCause>)> =
        BTreeMap::new();
    for f in crate::record::find_records(run_dir)? {
        let Ok(rec) = crate::record::any::load_any(&f) else {
            continue;
        };
        if rec.interrupted().is_some() {
            continue;
        }
        let h = rec.header();
        let cause = rec.as_suite().infra().filter(|_| !rec.passed());
        match latest.get(&h.trial) {
            Some((at, _)) if *at > h.finished_at => {}
            _ => {
                latest.insert(h.trial.clone(), (h.finished_at.clone(), cause));
            }
        }
    }
    Ok(latest
        .into_iter()
        .filter_map(|(trial, (_, cause))| cause.map(|c| (trial, c)))
        .collect())
}

/// Why each trial of a resumed run that is not run again is skipped, and the reason
/// for any other trial of the plan: under `retry_infra` only the trials the provider
/// failed run; otherwise every trial that did not finish
/// ([`resume_skips`]).
pub fn resume_plan(run_dir: &Path, retry_infra: bool) -> Result<ResumePlan, ResumeError> {
    if retry_infra {
        let failed = failed_by_the_provider(run_dir)?;
        return Ok(ResumePlan {
            skips: std::collections::BTreeMap::new(),
            only: Some(failed.into_keys().collect()),
            otherwise: format!(
                "not failed by the provider in {} (--retry-infra runs only those)",
                run_dir.display()
            ),
        });
    }
    Ok(ResumePlan {
        skips: resume_skips(run_dir)?,
        only: None,
        otherwise: String::new(),
    })
}

/// What a resumed run skips: the trials named in `skips`, and, when `only` is given,
/// every trial outside it (for `otherwise`).
#[derive(Debug, Clone)]
pub struct ResumePlan {
    pub skips: std::collections::BTreeMap<String, String>,
    pub only: Option<std::collections::BTreeSet<String>>,
    pub otherwise: String,
}

impl ResumePlan {
    /// Why `trial` is not run by the resumed run, if it is not.
    pub fn skip(&self, trial: &str) -> Option<String> {
        if let Some(only) = &self.only {
            if !only.contains(trial) {
                return Some(self.otherwise.clone());
            }
        }
        self.skips.get(trial).cloned()
    }
}

/// The line a run's manifest keeps for `t`.
pub fn manifest_line(t: &plan::Trial) -> PlannedTrial {
    PlannedTrial::now(&t.name, t.suite.as_str(), t.kind)
}

/// Append the `finished` line of the record in `trial_dir` to the run's manifest.
pub(super) fn note_finished(
    t: &plan::Trial,
    run_dir: &Path,
    trial_dir: &Path,
) -> Result<(), crate::record::RecordError> {
    let file = trial_dir.join(crate::record::RECORD_FILE);
    let bytes = std::fs::read(&file).map_err(|source| crate::record::RecordError::Io {
        file: file.clone(),
        source,
    })?;
    let dir = trial_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let line = PlannedTrial::finished(
        &t.name,
        t.suite.as_str(),
        &dir,
        &crate::hash::sha256(&bytes),
    );
    crate::record::manifest::append(run_dir, std::slice::from_ref(&line))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_live_run_is_told_from_a_dead_one_by_its_lock() {
        let run = tempfile::tempdir().unwrap();
        assert_eq!(live_elsewhere(run.path()).unwrap(), None);
        // A dead run left its mark: nobody holds it.
        std::fs::create_dir(run.path().join(LIVE_DIR)).unwrap();
        std::fs::write(run.path().join(LIVE_DIR).join("dead-run"), "").unwrap();
        assert_eq!(live_elsewhere(run.path()).unwrap(), None);
        // A live one holds its lock (here another open file description of ours).
        let f = std::fs::File::create(run.path().join(LIVE_DIR).join("live-run")).unwrap();
        let _held = nix::fcntl::Flock::lock(f, nix::fcntl::FlockArg::LockSharedNonblock)
            .map_err(|(_, e)| e)
            .unwrap();
        assert_eq!(
            live_elsewhere(run.path()).unwrap().as_deref(),
            Some("live-run")
        );
        // This process's own mark is never another run.
        hold_live(run.path()).unwrap();
        assert_eq!(
            live_elsewhere(run.path()).unwrap().as_deref(),
            Some("live-run")
        );
    }
}
