//! The top of the layers: the libtest-mimic entry points of the `benches-as-tests/`
//! targets and the one run loop `gauntlet run` uses. Both turn a planned
//! [`plan::Trial`] into a finished trial through [`run_trial`], so a trial under
//! `cargo test`, under nextest and under the CLI takes one code path, whatever its
//! suite.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use libtest_mimic::{Arguments, Failed, Trial};

use crate::config::Config;
use crate::plan::{self, Suites, Unit};
use crate::record::manifest::PlannedTrial;
use crate::spec::Suite;

/// A trial that left a record: what its test prints and whether it passed.
#[derive(Debug, Clone)]
pub struct Finished {
    pub suite: Suite,
    /// The JUnit summary line ([`crate::record::summary_line`] and its siblings).
    pub summary: String,
    pub trial_dir: PathBuf,
    /// Further lines for the test's output (a probe's observations).
    pub lines: Vec<String>,
    /// Why the verdict did not pass; `None` when it passed.
    pub failure: Option<String>,
    /// The signal the record names as having stopped the trial part-way.
    pub interrupted: Option<String>,
}

/// Why a trial left no record.
#[derive(Debug, thiserror::Error)]
pub enum TrialError {
    #[error("{trial}: {source}")]
    Qa {
        trial: String,
        #[source]
        source: crate::suites::qa::QaError,
    },
    #[error("{trial}: {source}")]
    Challenge {
        trial: String,
        #[source]
        source: crate::suites::challenge::ChallengeError,
    },
    #[error("{trial}: {source}")]
    Scorecard {
        trial: String,
        #[source]
        source: crate::record::RecordError,
    },
    /// The plan names data the loaded suites do not hold.
    #[error("{trial}: {what} is not loaded")]
    NotLoaded { trial: String, what: &'static str },
    /// Planned as skipped (a list-time ignore), and run anyway.
    #[error("{trial}: {why}")]
    Skipped { trial: String, why: String },
    #[error("{trial}: the trial's task failed: {source}")]
    Task {
        trial: String,
        #[source]
        source: tokio::task::JoinError,
    },
    /// The lane that was to start the trial failed first.
    #[error("{trial}: never started: the run loop's lane failed: {why}")]
    Dispatch { trial: String, why: String },
    #[error("{trial}: the record was written, but the manifest cannot say it finished: {source}")]
    NoteFinished {
        trial: String,
        #[source]
        source: crate::record::RecordError,
    },
    /// The run was asked to stop before this trial's turn came.
    #[error("{trial}: not started: the run was interrupted ({signal}); `gauntlet run --resume <run dir>` runs it")]
    NotStarted { trial: String, signal: &'static str },
}

/// Why browser trials cannot run on this machine, if they cannot.
pub fn no_browser(cfg: &Config) -> Option<String> {
    plan::browser_skip(
        crate::world::browser::chromium_available().as_deref(),
        &crate::world::browser::chromium_path(),
        cfg.ci,
    )
}

/// What this process would plan a run with: its config (without where runs go) and a
/// digest of every spec, for `run.json` and for checking a resumed run against it.
pub fn run_identity(
    cfg: &Config,
    suites: &Suites,
) -> std::io::Result<crate::record::identity::RunIdentity> {
    let mut config = serde_json::to_value(cfg).map_err(std::io::Error::other)?;
    if let Some(map) = config.as_object_mut() {
        map.remove("out_dir");
        // The data directories as the repository names them: two machines (two
        // partitions of one run) check out the same repository at different paths.
        let root = crate::binaries::repo_root();
        for key in ["apps_dir", "challenges_dir", "scorecard_dir"] {
            if let Some(serde_json::Value::String(dir)) = map.get_mut(key) {
                if let Ok(inside) = Path::new(dir.as_str()).strip_prefix(&root) {
                    *dir = inside.display().to_string();
                }
            }
        }
    }
    let mut specs = std::collections::BTreeMap::new();
    for a in &suites.apps {
        let data = serde_json::to_vec(&(&a.corpus, &a.scripts)).map_err(std::io::Error::other)?;
        specs.insert(
            format!("app:{}", a.app.name),
            format!("{} {}", a.app.content_hash, crate::hash::sha256(&data)),
        );
    }
    specs.insert(
        "challenges".into(),
        crate::hash::dir_digest(&cfg.challenges_dir)?,
    );
    specs.insert(
        "scorecard".into(),
        crate::hash::dir_digest(&cfg.scorecard_dir)?,
    );
    specs.extend(crate::record::identity::trial_specs(suites));
    let mut harness = std::collections::BTreeMap::new();
    harness.insert(
        "commit".into(),
        crate::record::gauntlet_commit(&cfg.out_dir).unwrap_or_else(|| "unknown".into()),
    );
    harness.insert(
        "agent_version".into(),
        crate::agent::adapter_for(&cfg.agent).version(),
    );
    let app_bins = suites.apps.iter().filter_map(|a| match &a.app.start {
        crate::spec::app::AppStart::Binary(b) => Some(b.as_str()),
        crate::spec::app::AppStart::Command(_) => None,
    });
    for name in [
        "gauntlet-agent",
        "gauntlet-seal",
        "gauntlet-cli-relay",
        crate::sys::lifeline::REAPER,
    ]
    .into_iter()
    .chain(app_bins)
    {
        harness.insert(
            format!("bin:{name}"),
            fingerprint(&crate::binaries::bin_path(name)),
        );
    }
    let tasks =
        crate::record::identity::task_hashes(suites, &plan::plan(suites, cfg, None, || None))?;
    Ok(crate::record::identity::RunIdentity {
        gauntlet_version: crate::VERSION.into(),
        config,
        specs,
        harness,
        placement: None,
        hackability: Some(run_hackability(cfg, &tasks)),
    })
}

/// Where each of `tasks` stands against the repository's audit
/// (`redteam/audited.json`): a missing or unreadable audit leaves every task
/// unaudited, saying why, rather than failing the run.
fn run_hackability(
    cfg: &Config,
    tasks: &[(String, Suite, String)],
) -> crate::record::hackability::RunHackability {
    use crate::record::hackability::{Hackability, RunHackability, AUDITED_FILE};
    let file = cfg.redteam_dir.join(AUDITED_FILE);
    let shown = file
        .strip_prefix(crate::binaries::repo_root())
        .unwrap_or(&file)
        .display()
        .to_string();
    let audit = match std::fs::read(&file) {
        Ok(bytes) => serde_json::from_slice::<Hackability>(&bytes)
            .map(|a| (a, crate::hash::sha256(&bytes)))
            .map_err(|e| format!("{shown}: not an audit: {e}")),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(format!(
            "no audit at {shown}: `gauntlet redteam --write-audited` makes one"
        )),
        Err(e) => Err(format!("{shown}: {e}")),
    };
    let catalogue = crate::spec::redteam::Catalogue::load(&cfg.redteam_dir)
        .map(|c| c.id())
        .map_err(|e| e.to_string());
    RunHackability::of(&shown, audit, catalogue, tasks)
}

/// Where this process runs: the host and, under nextest, the partition and archive it
/// was given. Hashing an archive reads all of it (a debug build's is a gigabyte), so
/// only the process that writes a run's `run.json` asks.
fn placement() -> crate::record::identity::Placement {
    let nextest = crate::sys::nextest::invocation().unwrap_or_default();
    crate::record::identity::Placement {
        host: crate::sys::nextest::host(),
        partition: nextest.partition,
        archive: nextest
            .archive
            .map(|file| match crate::record::digest::file_sha256(&file) {
                Ok(digest) => digest,
                Err(e) => format!("unreadable: {e}"),
            }),
    }
}

/// A binary as a resume can tell it apart cheaply: its size and modification time (a
/// debug build is hundreds of megabytes, and every trial process takes the identity).
fn fingerprint(bin: &Path) -> String {
    match std::fs::metadata(bin) {
        Ok(m) => {
            let modified = m
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos());
            format!("{} bytes, modified {modified} ns", m.len())
        }
        Err(_) => "absent".into(),
    }
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
                std::fs::create_dir_all(&dir).map_err(|e| crate::record::RecordError::Io {
                    file: dir.clone(),
                    source: e,
                })?;
                if !dir.join(IDENTITY_FILE).exists() {
                    let placed = crate::record::identity::RunIdentity {
                        placement: Some(placement()),
                        ..id.clone()
                    };
                    identity::write_once(&dir, &placed)?;
                }
                hold_live(&dir)?;
            }
            Ok((dir, false))
        }
    }
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

/// The line a run's manifest keeps for `t`.
pub fn manifest_line(t: &plan::Trial) -> PlannedTrial {
    PlannedTrial::now(&t.name, t.suite.as_str(), t.kind())
}

/// Run one planned trial into `run_dir`: the suite's own execution, then what its
/// test prints.
pub async fn run_trial(
    suites: &Suites,
    t: &plan::Trial,
    cfg: &Config,
    run_dir: &Path,
) -> Result<Finished, TrialError> {
    if let Some(stop) = crate::sys::shutdown::requested() {
        return Err(TrialError::NotStarted {
            trial: t.name.clone(),
            signal: stop.name(),
        });
    }
    let finished = run_suite_trial(suites, t, cfg, run_dir).await?;
    if finished.interrupted.is_none() {
        note_finished(t, run_dir, &finished.trial_dir).map_err(|source| {
            TrialError::NoteFinished {
                trial: t.name.clone(),
                source,
            }
        })?;
    }
    Ok(finished)
}

/// Append the `finished` line of the record in `trial_dir` to the run's manifest.
fn note_finished(
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

/// The suite's own execution of `t`, and what its test prints.
async fn run_suite_trial(
    suites: &Suites,
    t: &plan::Trial,
    cfg: &Config,
    run_dir: &Path,
) -> Result<Finished, TrialError> {
    let not_loaded = |what: &'static str| TrialError::NotLoaded {
        trial: t.name.clone(),
        what,
    };
    match &t.unit {
        Unit::Qa {
            app,
            capability,
            repeat,
            ..
        } => {
            let app = suites.apps.get(*app).ok_or_else(|| not_loaded("its app"))?;
            let (rec, dir) = crate::suites::qa::execute(app, capability, *repeat, cfg, run_dir)
                .await
                .map_err(|source| TrialError::Qa {
                    trial: t.name.clone(),
                    source,
                })?;
            Ok(Finished {
                suite: Suite::Qa,
                summary: crate::record::summary_line(&rec),
                trial_dir: dir,
                lines: Vec::new(),
                failure: (!rec.verdict.passed)
                    .then(|| format!("{}: {}", rec.verdict.outcome, rec.verdict.reason)),
                interrupted: rec.interrupted().map(str::to_string),
            })
        }
        Unit::Challenge {
            challenge,
            profile,
            app,
        } => {
            let loaded = &suites.challenges;
            let app = app
                .and_then(|a| loaded.apps.get(a))
                .ok_or_else(|| match &t.skip {
                    Some(why) => TrialError::Skipped {
                        trial: t.name.clone(),
                        why: why.clone(),
                    },
                    None => not_loaded("the challenge's app"),
                })?;
            let (rec, dir) = crate::suites::challenge::execute(
                &loaded.challenges,
                &loaded.challenges.list[*challenge],
                app,
                *profile,
                cfg,
                &crate::suites::challenge::Options::default(),
                run_dir,
            )
            .await
            .map_err(|source| TrialError::Challenge {
                trial: t.name.clone(),
                source,
            })?;
            crate::report::challenge::write_reports_after_trial(&dir, &rec);
            let failure = (!rec.verdict.passed).then(|| {
                format!(
                    "task_outcome {} ({}), evaluation_validity {} ({})",
                    rec.verdict.task_outcome.as_str(),
                    rec.verdict.outcome_reason,
                    rec.verdict.evaluation_validity.as_str(),
                    rec.verdict.validity_reason
                )
            });
            Ok(Finished {
                suite: Suite::Challenge,
                summary: crate::record::challenge::summary_line(&rec),
                trial_dir: dir,
                lines: Vec::new(),
                failure,
                interrupted: rec.interrupted().map(str::to_string),
            })
        }
        Unit::Scorecard { probe } => {
            let suite = &suites.scorecard;
            let (rec, dir) = crate::suites::scorecard::execute(
                suite,
                &suite.probes[*probe],
                cfg,
                run_dir,
                &crate::suites::scorecard::ExecOptions::default(),
            )
            .await
            .map_err(|source| TrialError::Scorecard {
                trial: t.name.clone(),
                source,
            })?;
            let lines = rec
                .result
                .observations
                .iter()
                .map(|o| {
                    format!(
                        "gauntlet: observation {} holds={} {}",
                        o.id, o.holds, o.reason
                    )
                })
                .collect();
            Ok(Finished {
                suite: Suite::Scorecard,
                summary: crate::record::scorecard::summary_line(&rec),
                trial_dir: dir,
                lines,
                failure: (!rec.verdict.passed)
                    .then(|| format!("{}: {}", rec.verdict.outcome, rec.verdict.reason)),
                interrupted: rec.interrupted().map(str::to_string),
            })
        }
    }
}

/// How many trials [`run_all`] runs at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Jobs {
    /// This many computing trials, as many browser trials beside them, four times as
    /// many scorecard probes.
    PerLane(usize),
    /// One trial at a time, whatever it is.
    Serial,
}

/// The one run loop: every trial of `trials` that is not ignored, into `run_dir`;
/// results in plan order. Each trial is a task of its own on the runtime, so that one
/// trial's slow work (a hostile agent's huge test directory being copied) never stalls
/// another's deadline.
///
/// Trials run in three lanes, because they load the machine in three ways: at most
/// `jobs` trials that compute at once; as many browser trials beside them (a browser
/// trial keeps one Chromium busy at a time, and the light trials of the compute lane
/// finish early); scorecard probes, which mostly wait through their idle windows, up to four
/// times `jobs` at once (each is a sandbox with its own memory limit, so the lane is
/// bounded too). The browser lane starts first: it is the run's longest.
///
/// [`Jobs::Serial`] puts every trial in one lane, one at a time: for a model that
/// answers one call at a time (a local server on the same cores), where two trials at
/// once only make each wait for the other and evict each other's prompt cache.
pub async fn run_all(
    suites: Arc<Suites>,
    trials: &[plan::Trial],
    cfg: Arc<Config>,
    run_dir: &Path,
    jobs: Jobs,
) -> Vec<(String, Result<Finished, TrialError>)> {
    let width = |lane: Lane| match (jobs, lane) {
        (Jobs::Serial, _) => 1,
        (Jobs::PerLane(n), Lane::Compute | Lane::Browser) => n.max(1),
        (Jobs::PerLane(n), Lane::Waiting) => n.max(1) * 4,
    };
    let mut lanes: std::collections::BTreeMap<Lane, Vec<(usize, plan::Trial)>> =
        std::collections::BTreeMap::new();
    for (index, t) in trials.iter().filter(|t| t.skip.is_none()).enumerate() {
        let lane = match jobs {
            Jobs::Serial => Lane::Compute,
            Jobs::PerLane(_) => lane(&suites, t),
        };
        lanes.entry(lane).or_default().push((index, t.clone()));
    }
    // Each planned qa app's independence matrix is derived at once, side by side, rather
    // than by its first trial in its lane's turn (a browser app's is a few dozen browser
    // runs): the trials wait for it on its lock and read it from the cache. A failure is
    // the trial's to report, deriving it again.
    if let Jobs::PerLane(_) = jobs {
        let apps: std::collections::BTreeSet<usize> = trials
            .iter()
            .filter(|t| t.skip.is_none())
            .filter_map(|t| match t.unit {
                Unit::Qa { app, .. } => Some(app),
                _ => None,
            })
            .collect();
        for app in apps {
            let (suites, cfg) = (Arc::clone(&suites), Arc::clone(&cfg));
            tokio::spawn(async move {
                if let Some(app) = suites.apps.get(app) {
                    let _ = crate::suites::qa::independence::matrix_for(app, &cfg).await;
                }
            });
        }
    }
    // One dispatcher per lane starts its trials in plan order as permits free up: the
    // order is the plan's, not whichever task the runtime polls first, and a trial's
    // future exists only once it may start (a 1,000-trial run holds no 1,000 futures).
    let mut dispatchers = Vec::new();
    for (lane, list) in lanes {
        let names: Vec<(usize, String)> = list.iter().map(|(i, t)| (*i, t.name.clone())).collect();
        let permits = Arc::new(tokio::sync::Semaphore::new(width(lane)));
        let (suites, cfg, run_dir) = (Arc::clone(&suites), Arc::clone(&cfg), run_dir.to_path_buf());
        let dispatcher = tokio::spawn(async move {
            let mut handles = Vec::new();
            for (index, t) in list {
                let permit = Arc::clone(&permits).acquire_owned().await.ok();
                let (suites, cfg, run_dir) =
                    (Arc::clone(&suites), Arc::clone(&cfg), run_dir.clone());
                let name = t.name.clone();
                let task = tokio::spawn(async move {
                    let _permit = permit;
                    Box::pin(run_trial(&suites, &t, &cfg, &run_dir)).await
                });
                handles.push((index, name, task));
            }
            handles
        });
        dispatchers.push((names, dispatcher));
    }
    let mut out = Vec::new();
    for (names, dispatcher) in dispatchers {
        match dispatcher.await {
            Ok(handles) => {
                for (index, name, task) in handles {
                    let r = task.await.unwrap_or_else(|source| {
                        Err(TrialError::Task {
                            trial: name.clone(),
                            source,
                        })
                    });
                    out.push((index, name, r));
                }
            }
            Err(source) => {
                let why = source.to_string();
                for (index, name) in names {
                    out.push((
                        index,
                        name.clone(),
                        Err(TrialError::Dispatch {
                            trial: name,
                            why: why.clone(),
                        }),
                    ));
                }
            }
        }
    }
    out.sort_by_key(|(i, _, _)| *i);
    out.into_iter().map(|(_, name, r)| (name, r)).collect()
}

/// Which of [`run_all`]'s lanes a trial runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Lane {
    Compute,
    Browser,
    Waiting,
}

fn lane(suites: &Suites, t: &plan::Trial) -> Lane {
    let modality = match &t.unit {
        Unit::Scorecard { .. } => return Lane::Waiting,
        Unit::Qa { app, .. } => suites.apps.get(*app).map(|a| a.app.modality),
        Unit::Challenge { app, .. } => app
            .and_then(|a| suites.challenges.apps.get(a))
            .map(|a| a.modality),
    };
    if modality.is_some_and(plan::needs_browser) {
        Lane::Browser
    } else {
        Lane::Compute
    }
}

/// `main` of the `benches-as-tests/` target of `suite`: list or run its trials.
pub fn suite_main(suite: Suite) -> ExitCode {
    let args = Arguments::from_args();
    let cfg = match Config::from_env() {
        Ok(c) => c,
        Err(e) => return fail(&e.to_string()),
    };
    let suites = match Suites::load(&cfg) {
        Ok(s) => Arc::new(s),
        Err(e) => return fail(&e.to_string()),
    };
    let no_browser_here = no_browser(&cfg);
    let mut plan = plan::plan(&suites, &cfg, Some(suite), || no_browser_here);
    if let Some(dir) = &cfg.resume {
        let done = match resume_skips(dir) {
            Ok(d) => d,
            Err(e) => return fail(&e.to_string()),
        };
        for t in plan.iter_mut().filter(|t| t.skip.is_none()) {
            t.skip = done.get(&t.name).cloned();
        }
    }
    if args.list {
        return run(args, listed(plan));
    }
    // A run records what it was planned with, and goes down on SIGINT/SIGTERM keeping
    // what its trials observed.
    crate::sys::shutdown::install();
    let identity = match run_identity(&cfg, &suites) {
        Ok(id) => Some(Arc::new(id)),
        Err(e) => return fail(&format!("cannot take the run's identity: {e}")),
    };
    // What every trial shares, behind one reference count.
    let shared = Arc::new((suites, cfg, identity));
    let trials = plan
        .into_iter()
        .map(|t| {
            let shared = Arc::clone(&shared);
            let skip = t.skip.clone();
            trial(t.name.clone(), skip.as_deref(), false, move || {
                let (suites, cfg, identity) = &*shared;
                let t = &t;
                let f = execute_trial(
                    cfg,
                    identity.as_deref(),
                    manifest_line(t),
                    |run_dir| async move { run_trial(suites, t, cfg, &run_dir).await },
                )?;
                let failure = f.failure.or_else(|| f.interrupted.map(interrupted_failure));
                conclude(f.summary, &f.trial_dir, f.lines, failure)
            })
        })
        .collect();
    run(args, trials)
}

/// The trials of a `--list`: each planned trial's name, and whether it is ignored and
/// why. A list runs nothing, so its trials carry no body: a 10,000-trial list then
/// costs what libtest-mimic's own list of 10,000 costs, plus the plan.
pub fn listed(plan: Vec<plan::Trial>) -> Vec<Trial> {
    plan.into_iter()
        .map(|t| trial(t.name, t.skip.as_deref(), true, || Ok(())))
        .collect()
}

/// Why a trial whose record is marked interrupted fails, even if its verdict passed
/// (the signal came as its record was being written).
fn interrupted_failure(signal: String) -> String {
    format!("the run was interrupted ({signal}): the record keeps partial evidence, not a result; `gauntlet run --resume <run dir>` runs the trial again")
}

/// A planned trial; one that cannot run here (`skip`) is listed as ignored, with its
/// reason shown beside `--list`, where the ignore is decided (nextest ignores it).
pub(crate) fn trial(
    name: String,
    skip: Option<&str>,
    list: bool,
    body: impl FnOnce() -> Result<(), Failed> + Send + 'static,
) -> Trial {
    if let (Some(why), true) = (skip, list) {
        eprintln!("{name}: ignored: {why}");
    }
    Trial::test(name, body).with_ignored_flag(skip.is_some())
}

/// A trial's run on a runtime of its own, into a fresh run directory. Before anything
/// starts, the trial's line is appended to the run's manifest (`planned`): under nextest
/// every trial is its own process and nobody else knows which trials were asked for, so
/// each names itself, and rescore finds a trial that then left no record. An error
/// means no record could be written: the trial fails with its cause.
pub(crate) fn execute_trial<T, E, F>(
    cfg: &Config,
    identity: Option<&crate::record::identity::RunIdentity>,
    planned: PlannedTrial,
    go: impl FnOnce(PathBuf) -> F,
) -> Result<T, Failed>
where
    F: Future<Output = Result<T, E>>,
    E: std::fmt::Display,
{
    let fail = |e: String| {
        eprintln!("Error: {e}");
        Failed::from(e)
    };
    let (run_dir, planned) = match open_run(cfg, identity) {
        // A resumed trial's first attempt replaces the one that never finished; a nextest
        // retry of it (NEXTEST_ATTEMPT 2, 3, …) is an attempt of its own, counted as such.
        Ok((dir, true)) if first_attempt() => (dir, planned.resuming()),
        Ok((dir, _)) => (dir, planned),
        Err(e) => return Err(fail(format!("{}: {e}", planned.trial))),
    };
    crate::record::manifest::append(&run_dir, std::slice::from_ref(&planned)).map_err(|e| {
        fail(format!(
            "cannot plan {} in the run manifest: {e}",
            planned.trial
        ))
    })?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| fail(format!("tokio runtime: {e}")))?;
    rt.block_on(go(run_dir)).map_err(|e| fail(e.to_string()))
}

/// Whether this process runs its trial's first attempt (nextest numbers its retries in
/// `NEXTEST_ATTEMPT`; outside nextest there is only one).
fn first_attempt() -> bool {
    std::env::var("NEXTEST_ATTEMPT").map_or(true, |a| a.trim() == "1")
}

/// The end of a trial that left a record: its summary line, where the record is and any
/// further `lines`, then a failure naming why the verdict did not pass.
pub(crate) fn conclude(
    summary: String,
    trial_dir: &Path,
    lines: Vec<String>,
    failure: Option<String>,
) -> Result<(), Failed> {
    println!("{summary}");
    println!(
        "gauntlet: record {}",
        trial_dir.join(crate::record::RECORD_FILE).display()
    );
    for line in lines {
        println!("{line}");
    }
    match failure {
        None => Ok(()),
        Some(msg) => {
            eprintln!("Error: {msg}");
            Err(Failed::from(msg))
        }
    }
}

/// Run trials, refusing an `--exact` filter that names no trial: nextest counts a
/// trial that silently vanished as a pass.
pub fn run(args: Arguments, trials: Vec<Trial>) -> ExitCode {
    if args.exact && !args.list {
        if let Some(f) = &args.filter {
            if !trials.iter().any(|t| t.name() == f) {
                return fail(&format!("no trial is named `{f}`"));
            }
        }
    }
    libtest_mimic::run(&args, trials).exit_code()
}

/// Refuse to run at all (bad config, data that does not load), with exit code 2.
pub(crate) fn fail(msg: &str) -> ExitCode {
    eprintln!("Error: {msg}");
    ExitCode::from(2)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::manifest;

    #[test]
    fn a_trial_names_itself_in_the_manifest_before_anything_starts() {
        let out = tempfile::tempdir().unwrap();
        let cfg = Config {
            out_dir: out.path().to_path_buf(),
            ..Config::default()
        };
        for attempt in 1..=2usize {
            let planned = PlannedTrial::now("qa::app::cap", "qa", None);
            let seen = execute_trial(&cfg, None, planned, |run_dir| async move {
                // The trial body runs only once its line is on disk.
                let m = manifest::read(&run_dir).map_err(|e| e.to_string())?;
                Ok::<_, String>(m.map(|m| m.entries.len()))
            })
            .unwrap_or_else(|_| panic!("attempt {attempt} runs"));
            // A retry appends its own line: attempts are counted, never confused.
            assert_eq!(seen, Some(attempt));
        }
        let m = manifest::read(&out.path().join(crate::record::run_id()))
            .unwrap()
            .unwrap();
        assert!(m
            .entries
            .iter()
            .all(|e| e.trial == "qa::app::cap" && e.suite == "qa" && e.pid == std::process::id()));
    }

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
