//! `gauntlet redteam`: the hackability audit. Every adversary of the catalogue runs as
//! a `command` agent through the one run loop ([`crate::harness::run_all`]) against
//! every planned task, each into a run directory of its own; the do-nothing adversary
//! gives each task its honest floor, and the scripted reference beside them says
//! whether the task can be solved at all. The records are then read like any run's:
//! rescored (an adversary that forged a record is a finding against the harness) and
//! projected into one [`Hackability`] table.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use crate::config::{AgentChoice, AgentKind, Config};
use crate::harness::Jobs;
use crate::plan::{self, Suites};
use crate::record::hackability::{
    self, AdversaryRun, Cell, Hackability, HarnessFinding, TaskAudit,
};
use crate::spec::redteam::{Adversary, Catalogue, Class};

/// Where an audit's runs go in its directory: one run directory per adversary, and
/// [`REFERENCE`] for the reference's.
pub const RUNS_DIR: &str = "runs";
pub const REFERENCE: &str = crate::spec::redteam::RESERVED_ID;
/// The scripted scorecard profile adversaries' models answer with: a bare
/// acknowledgement, no step to carry out.
pub const ADVERSARY_PROFILE: &str = "stub";
/// The audit's table, as [`Hackability`] serializes it.
pub const AUDIT_JSON: &str = "hackability.json";

/// What to audit, and how.
#[derive(Debug, Clone)]
pub struct Options {
    /// Only tasks whose trial name contains this.
    pub filter: Option<String>,
    /// Only these adversaries (the floor always runs); empty: every one, or the sample.
    pub adversaries: Vec<String>,
    /// Only the catalogue's sample.
    pub sample: bool,
    /// Run the scripted reference beside the adversaries.
    pub reference: bool,
    pub jobs: Jobs,
    /// The audit's directory (created; never reused).
    pub out: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum RedteamError {
    #[error("--adversary `{0}`: no such adversary in the catalogue")]
    UnknownAdversary(String),
    #[error("{}: already exists; an audit never overwrites one", .0.display())]
    Exists(PathBuf),
    #[error("GAUNTLET_SANDBOX=off: an audit runs sealed, or an adversary reaches the harness's files and the other adversaries' runs")]
    Unsealed,
    #[error("interrupted ({0}): an audit stopped part-way is no audit; its runs are kept")]
    Interrupted(String),
    #[error("no planned task matches --filter `{0}`")]
    NothingPlanned(String),
    #[error(transparent)]
    Record(#[from] crate::record::RecordError),
    /// An agent's run could not be opened.
    #[error(transparent)]
    Start(#[from] crate::harness::lifecycle::StartError),
    #[error("{file}: {source}")]
    Io {
        file: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// The adversaries `opts` asks for, the floor first.
pub fn chosen<'c>(
    catalogue: &'c Catalogue,
    opts: &Options,
) -> Result<Vec<&'c Adversary>, RedteamError> {
    for id in &opts.adversaries {
        if catalogue.get(id).is_none() {
            return Err(RedteamError::UnknownAdversary(id.clone()));
        }
    }
    let floor = catalogue.floor();
    let mut out = vec![floor];
    out.extend(catalogue.adversaries.iter().filter(|a| {
        a.id != floor.id
            && if opts.adversaries.is_empty() {
                !opts.sample || a.sample
            } else {
                opts.adversaries.contains(&a.id)
            }
    }));
    Ok(out)
}

/// The agent an adversary is: `sh <script> <args>`, with `{repo}` and `{run_dir}`
/// filled here and the `command` adapter's own placeholders left for it to fill per
/// trial; and, when it has one, its background mode `sh <daemon> <daemon_args>`.
pub fn agent_of(adversary: &Adversary, run_dir: &Path) -> AgentChoice {
    let repo = crate::binaries::repo_root();
    let command = |script: &Path, args: &[String]| {
        let mut argv = vec!["sh".to_string(), script.to_string_lossy().into_owned()];
        argv.extend(args.iter().map(|a| {
            a.replace("{repo}", &repo.to_string_lossy())
                .replace("{run_dir}", &run_dir.to_string_lossy())
        }));
        argv
    };
    let agent = AgentChoice::command(command(&adversary.script, &adversary.args));
    match &adversary.daemon {
        // Its background mode, run as the reference agent's daemon is (the `command`
        // adapter's `daemon_launch`): through each block of idle windows.
        Some(daemon) => agent.with_daemon(command(daemon, &adversary.daemon_args)),
        None => agent,
    }
}

/// Run the audit: every chosen adversary, then the reference, each over the planned
/// tasks of the suites it plays; then read what they got.
pub async fn audit(
    cfg: &Config,
    suites: Arc<Suites>,
    catalogue: &Catalogue,
    opts: &Options,
) -> Result<Hackability, RedteamError> {
    let started = Instant::now();
    // Unsealed, an adversary reaches the harness's files and the other adversaries'
    // runs: what it gets then says nothing about the task.
    if cfg.sandbox == crate::config::Sandbox::Off {
        return Err(RedteamError::Unsealed);
    }
    let adversaries = chosen(catalogue, opts)?;
    if opts.out.exists() {
        return Err(RedteamError::Exists(opts.out.clone()));
    }
    let runs = opts.out.join(RUNS_DIR);
    std::fs::create_dir_all(&runs).map_err(|source| RedteamError::Io {
        file: runs.clone(),
        source,
    })?;
    // One attempt of each task: an audit asks what an adversary can get, not how often.
    let mut base = cfg.clone();
    base.repeats = 1;
    base.resume = None;
    let planned: Vec<plan::Trial> =
        crate::suites::plan(&suites, &base, None, || crate::harness::no_browser(&base))
            .into_iter()
            .filter(|t| opts.filter.as_deref().is_none_or(|f| t.name.contains(f)))
            .collect();
    if planned.iter().all(|t| t.skip.is_some()) {
        return Err(RedteamError::NothingPlanned(
            opts.filter.clone().unwrap_or_default(),
        ));
    }
    for t in planned.iter() {
        if let Some(why) = &t.skip {
            println!("{:<44} not audited: {why}", t.name);
        }
    }
    let planned: Vec<plan::Trial> = planned.into_iter().filter(|t| t.skip.is_none()).collect();
    let mut cells: BTreeMap<String, BTreeMap<String, Cell>> = BTreeMap::new();
    let mut ran = Vec::new();
    let mut findings = Vec::new();
    let mut who: Vec<(String, AgentChoice, Vec<crate::spec::Suite>, Option<Class>)> = Vec::new();
    for a in &adversaries {
        let dir = runs.join(&a.id);
        who.push((
            a.id.clone(),
            agent_of(a, &dir),
            a.suites.clone(),
            Some(a.class),
        ));
    }
    if opts.reference {
        who.push((
            REFERENCE.to_string(),
            AgentChoice::of(AgentKind::Reference),
            crate::spec::Suite::ALL.to_vec(),
            None,
        ));
    }
    for (id, agent, plays, class) in who {
        let dir = runs.join(&id);
        let mut acfg = base.clone();
        acfg.agent = agent;
        if id != REFERENCE {
            // A scripted scorecard profile scripts the steps its agent must carry out,
            // and a probe whose scripted step did not run is not judged: an adversary
            // follows no script, so its model only acknowledges (`stub`).
            acfg.scorecard_profile = ADVERSARY_PROFILE.into();
        }
        let trials: Vec<plan::Trial> = planned
            .iter()
            .filter(|t| plays.contains(&t.suite))
            .cloned()
            .collect();
        let t0 = Instant::now();
        println!("gauntlet redteam: {id}: {} task(s)", trials.len());
        run_one(&acfg, &suites, &trials, &dir, opts.jobs).await?;
        let wall_ms = u64::try_from(t0.elapsed().as_millis()).unwrap_or(u64::MAX);
        // A meter evader's own account of the tokens it received is compared with what
        // the proxy metered; nobody else's is (an agent may report its usage as it likes).
        let judge_metering = class == Some(Class::EvadeMeter);
        let (got, problems) = read_run(&dir, &format!("{RUNS_DIR}/{id}"), judge_metering);
        for p in problems {
            findings.push(HarnessFinding {
                adversary: id.clone(),
                what: p,
            });
        }
        for t in &trials {
            let task = hackability::task_of(&t.name).to_string();
            let mut cell = got.get(&t.name).cloned().unwrap_or_else(|| {
                Cell::missing("the trial left no record (see the run's rescore)")
            });
            cell.luck = adversaries.iter().any(|a| a.id == id && a.luck);
            cells.entry(task).or_default().insert(id.clone(), cell);
        }
        if let Some(a) = adversaries.iter().find(|a| a.id == id) {
            ran.push(AdversaryRun {
                id: id.clone(),
                class: a.class,
                aims: a.aims.clone(),
                trials: trials.len(),
                wall_ms,
            });
        }
    }
    // An audit stopped part-way has cells that never ran: it must not pass for one.
    if let Some(stop) = crate::sys::shutdown::requested() {
        return Err(RedteamError::Interrupted(stop.name().to_string()));
    }
    let hashes =
        crate::harness::task_hashes(&suites, &planned).map_err(|source| RedteamError::Io {
            file: cfg.challenges_dir.clone(),
            source,
        })?;
    let floor = catalogue.floor().id.clone();
    let tasks = hashes
        .into_iter()
        .map(|(task, suite, hash)| {
            let mut row = cells.remove(&task).unwrap_or_default();
            let floor_cell = row
                .remove(&floor)
                .unwrap_or_else(|| Cell::missing("the floor did not run"));
            let reference = row.remove(REFERENCE);
            TaskAudit {
                task,
                suite,
                hash,
                floor: floor_cell,
                adversaries: row,
                reference,
            }
        })
        .collect();
    Ok(Hackability {
        schema_version: hackability::SCHEMA_VERSION,
        catalogue: catalogue.id(),
        sampled: opts.sample && opts.adversaries.is_empty(),
        adversaries: ran,
        tasks,
        harness: findings,
        wall_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        jobs: match opts.jobs {
            Jobs::Serial => 1,
            Jobs::PerLane(n) => n,
        },
        made_with: Default::default(),
    })
}

/// One agent's run over `trials` into `dir`, through the run lifecycle and loop
/// `gauntlet run` uses.
async fn run_one(
    cfg: &Config,
    suites: &Arc<Suites>,
    trials: &[plan::Trial],
    dir: &Path,
    jobs: Jobs,
) -> Result<(), RedteamError> {
    crate::harness::lifecycle::open_in(cfg, suites, dir, trials)?;
    let results =
        crate::harness::run_all(Arc::clone(suites), trials, Arc::new(cfg.clone()), dir, jobs).await;
    for (name, r) in results {
        match r {
            Ok(f) => println!("  {}", f.summary),
            Err(e) => println!("  {name}: {e}"),
        }
    }
    Ok(())
}

/// The cell of every trial `dir` holds a record of, by trial, and what is wrong with
/// the run as rescore sees it (a disagreeing or altered record, a record nobody
/// planned, a planned trial without one). `prefix` is the run's directory as the
/// audit's pages name it. With `judge_metering` (an `evade-meter` adversary's run),
/// each cell also keeps the tokens the agent says it received beside those the proxy
/// metered ([`hackability::Metering`]), and a trial whose agent received more than was
/// metered is a problem: a model answer reached it unmetered.
pub fn read_run(
    dir: &Path,
    prefix: &str,
    judge_metering: bool,
) -> (BTreeMap<String, Cell>, Vec<String>) {
    let mut cells = BTreeMap::new();
    let mut problems = Vec::new();
    match crate::record::rescore::rescore_path(dir) {
        Ok(r) => {
            for f in r.findings.iter().filter(|f| !f.is_note()) {
                problems.push(f.to_string());
            }
            for row in r.rows.iter().filter(|row| !row.agrees()) {
                let why = if row.raw_problems.is_empty() {
                    "its stored verdict is not what its evidence gives".to_string()
                } else {
                    row.raw_problems.join("; ")
                };
                problems.push(format!("{}: {why}", row.trial));
            }
        }
        Err(e) => problems.push(format!("cannot rescore {}: {e}", dir.display())),
    }
    match crate::record::find_records(dir) {
        Ok(files) => {
            for f in files {
                match crate::record::any::load_any(&f) {
                    Ok(rec) => {
                        let trial_dir = f
                            .parent()
                            .and_then(|p| p.file_name())
                            .map(|n| format!("{prefix}/{}", n.to_string_lossy()));
                        let trial = rec.header().trial.clone();
                        let mut cell = Cell::of(&rec, trial_dir);
                        if judge_metering {
                            match hackability::metering_of(f.parent().unwrap_or(dir), &rec) {
                                Ok(m) => {
                                    problems.extend(m.finding(&trial));
                                    cell.metering = Some(m);
                                }
                                Err(why) => problems
                                    .push(format!("`{trial}`: cannot compare its metering: {why}")),
                            }
                        }
                        cells.insert(trial, cell);
                    }
                    Err(e) => problems.push(e.to_string()),
                }
            }
        }
        Err(e) => problems.push(e.to_string()),
    }
    (cells, problems)
}
