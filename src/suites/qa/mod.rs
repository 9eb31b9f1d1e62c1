//! One qa trial, end to end.

mod gate;
mod gate_run;
pub mod independence;
pub mod plan;
pub mod prompt;
pub mod tells;

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::agent::{adapter_for, RunSpec};
use crate::config::Config;
use crate::evidence::{parse_claims, AgentRun, ClaimStatus, ClaimsFound, QaEvidence};
use crate::phases::{timed, timed_sync, Phase};
use crate::plan::{PlanError, Suites, Trial};
use crate::record::rescore::derive_qa_verdict;
use crate::record::{self, identity, QaRecord, QaSpecRef, RecordConfig};
use crate::spec::LoadedApp;
use crate::spec::Suite;
use crate::suites::contract::{
    lane_of, Finished, Lane, Running, SpecEntries, SuiteRunner, TaskParts, TrialRun,
};
use crate::sys::process;
use crate::sys::sandbox::View;
use crate::trial::{mkdir, Context, Job, SetupError, Streams};
use crate::world::target::{Locator, Target};
pub use plan::{QaSuite, QaUnit};
use std::sync::Arc;

/// Why a qa trial left no record (the harness wraps it in its `TrialError`, naming the
/// trial).
#[derive(Debug, thiserror::Error)]
pub enum QaError {
    #[error(transparent)]
    Record(#[from] record::RecordError),
    #[error("app `{app}` has no capability `{capability}`")]
    NoCapability { app: String, capability: String },
    #[error("cannot score {}: {source}", .trial_dir.display())]
    Score {
        trial_dir: PathBuf,
        #[source]
        source: Box<record::rescore::RescoreError>,
    },
}

/// The qa suite as the harness runs it.
pub struct QaRunner;

impl SuiteRunner for QaRunner {
    fn suite(&self) -> Suite {
        Suite::Qa
    }

    fn load(&self, cfg: &Config, into: &mut Suites) -> Result<(), PlanError> {
        into.insert(QaSuite::load(cfg)?);
        Ok(())
    }

    fn data_dir<'a>(&self, cfg: &'a Config) -> &'a std::path::Path {
        &cfg.apps_dir
    }

    fn plan(&self, suites: &Suites, cfg: &Config, no_browser: Option<&str>) -> Vec<Trial> {
        plan::plan(apps(suites), cfg, no_browser)
    }

    fn needs_browser(&self, suites: &Suites) -> bool {
        let planned = apps(suites)
            .iter()
            .filter(|a| a.app.superseded_by.is_none());
        planned
            .map(|a| a.app.modality)
            .any(crate::plan::needs_browser)
    }

    fn lane(&self, suites: &Suites, t: &Trial) -> Lane {
        let app = t.unit.get::<QaUnit>().and_then(|u| apps(suites).get(u.app));
        lane_of(app.map(|a| a.app.modality))
    }

    /// Each planned app's independence matrix is derived at once, side by side, rather
    /// than by its first trial in its lane's turn (a browser app's is a few dozen
    /// browser runs): the trials wait for it on its lock and read it from the cache. A
    /// failure is the trial's to report, deriving it again.
    fn warm(&self, suites: &Arc<Suites>, cfg: &Arc<Config>, trials: &[Trial]) {
        let planned: std::collections::BTreeSet<usize> = trials
            .iter()
            .filter(|t| t.skip.is_none())
            .filter_map(|t| t.unit.get::<QaUnit>().map(|u| u.app))
            .collect();
        for app in planned {
            let (suites, cfg) = (Arc::clone(suites), Arc::clone(cfg));
            tokio::spawn(async move {
                if let Some(app) = apps(&suites).get(app) {
                    let _ = independence::matrix_for(app, &cfg).await;
                }
            });
        }
    }

    /// The binaries of the apps this package builds.
    fn binaries<'a>(&self, suites: &'a Suites) -> Vec<&'a str> {
        apps(suites)
            .iter()
            .filter_map(|a| match &a.app.start {
                crate::spec::app::AppStart::Binary(b) => Some(b.as_str()),
                crate::spec::app::AppStart::Command(_) => None,
            })
            .collect()
    }

    fn execute<'a>(&'a self, run: TrialRun<'a>) -> Running<'a> {
        Box::pin(async move {
            let unit = run.unit::<QaUnit>()?;
            let app = run.data::<QaSuite>()?.apps.get(unit.app);
            let app = app.ok_or_else(|| run.not_loaded("its app"))?;
            let (rec, dir) = execute(app, &unit.capability, unit.repeat, run.cfg, run.run_dir)
                .await
                .map_err(|e| run.failed(e))?;
            let failure = Finished::failure_of(&rec.verdict);
            let summary = record::summary_line(&rec);
            Ok(
                Finished::new(Suite::Qa, summary, dir, failure, rec.interrupted())
                    .infra_first(&rec),
            )
        })
    }

    /// Each app (its content hash, then its corpus and scripts) and each capability's
    /// spec as its record names it.
    fn specs(&self, suites: &Suites, _cfg: &Config) -> SpecEntries {
        let mut out = Vec::new();
        for a in apps(suites) {
            let data =
                serde_json::to_vec(&(&a.corpus, &a.scripts)).map_err(std::io::Error::other)?;
            out.push((
                identity::app_key(&a.app.name),
                format!("{} {}", a.app.content_hash, crate::hash::sha256(&data)),
            ));
            for cap in &a.corpus.capabilities {
                let r = QaSpecRef::of(a, &cap.id);
                out.push((
                    identity::qa_key(&r.app, &r.capability),
                    identity::qa_spec_value(&r),
                ));
            }
        }
        Ok(out)
    }

    /// The app's content hash (its code, so its mutants, and corpus), the capability's
    /// spec and, for an app cargo builds, the workspace's `Cargo.lock` (its
    /// dependencies print some of its output).
    fn task_parts(&self, suites: &Suites, tasks: &[&Trial]) -> TaskParts {
        let lock = crate::hash::sha256(
            &std::fs::read(crate::binaries::repo_root().join("Cargo.lock")).unwrap_or_default(),
        );
        Ok(tasks
            .iter()
            .map(|t| {
                let unit = t.unit.get::<QaUnit>()?;
                let a = apps(suites).get(unit.app)?;
                Some(vec![
                    a.app.content_hash.clone(),
                    identity::qa_spec_value(&QaSpecRef::of(a, &unit.capability)),
                    match a.app.start {
                        crate::spec::app::AppStart::Binary(_) => lock.clone(),
                        crate::spec::app::AppStart::Command(_) => "-".into(),
                    },
                ])
            })
            .collect())
    }
}

/// The qa suite's apps; none when it was not loaded.
fn apps(suites: &Suites) -> &[LoadedApp] {
    suites.get::<QaSuite>().map_or(&[], |q| q.apps.as_slice())
}

/// Run one trial and append its record to `run_dir`. Returns the record and the
/// directory it was written to. Only a failure to write the record is an `Err`:
/// everything that goes wrong with the world or the agent is evidence.
pub async fn execute(
    app: &LoadedApp,
    capability: &str,
    repeat: Option<u32>,
    cfg: &Config,
    run_dir: &Path,
) -> Result<(QaRecord, PathBuf), QaError> {
    let name = crate::plan::names::qa(&app.app.name, capability, repeat);
    let cap = app
        .capability(capability)
        .ok_or_else(|| QaError::NoCapability {
            app: app.app.name.clone(),
            capability: capability.into(),
        })?;
    // The app's independence matrix comes first, before the trial exists: it belongs
    // to the app's content, not to this trial (derived once, then read from the cache),
    // and a harness killed while deriving it leaves a planned trial with no directory,
    // which rescore names and a resumed run runs.
    let derived = independence::matrix_for(app, cfg).await;
    let started_at = chrono::Utc::now();
    let t0 = Instant::now();
    let trial_dir = timed_sync(Phase::Workspace, || {
        record::create_trial_dir(run_dir, &name)
    })?;
    let adapter = adapter_for(&cfg.agent);
    let mut spec = QaSpecRef::of(app, capability);

    let mut evidence = QaEvidence {
        prompt: None,
        calls: None,
        agent: AgentRun::not_started(),
        gate: None,
        usage: vec![],
        setup_error: None,
        agent_report: None,
        budget_hit: None,
        world_logs: vec![],
    };

    // Before the agent spends anything: an app whose matrix cannot stand is refused.
    let kept = derived.and_then(|derived| independence::keep(app, derived, &trial_dir));
    let observed = match &kept {
        Ok(kept) => {
            spec.matrix_sha256 = Some(kept.raw.sha256.clone());
            observe(
                app,
                cap.id.as_str(),
                cfg,
                &trial_dir,
                adapter.as_ref(),
                kept,
                &mut evidence,
            )
            .await
        }
        Err(e) => Err(SetupError::Independence(e.to_string())),
    };
    if let Err(setup) = observed {
        // Stopped while the matrix was derived or the world and the agent's sandbox
        // were started: the trial was not judged, and a resumed run runs it again.
        crate::trial::stopped_while_set_up(&mut evidence.agent.end.interrupted);
        evidence.setup_error = Some(setup.to_string());
    }
    // Files the setup never got to write still need to exist for rescore.
    for raw in [&evidence.agent.stdout, &evidence.agent.stderr] {
        let f = trial_dir.join(&raw.path);
        if !f.exists() {
            let _ = std::fs::write(&f, b"");
        }
    }

    let verdict = timed_sync(Phase::Score, || {
        derive_qa_verdict(&trial_dir, adapter.name(), &spec, &evidence)
    })
    .map_err(|source| QaError::Score {
        trial_dir: trial_dir.clone(),
        source: Box::new(source),
    })?;
    let rec = QaRecord {
        header: record::Header::finished_now(
            crate::spec::Suite::Qa,
            name,
            started_at,
            t0,
            RecordConfig::of(cfg, adapter.name(), adapter.version()),
        ),
        repeat: repeat.unwrap_or(1),
        spec,
        evidence,
        verdict,
    };
    timed_sync(Phase::Record, || {
        record::write_new_json(&trial_dir, record::RECORD_FILE, &rec)
    })?;
    Ok((rec, trial_dir))
}

/// Start the world and the proxy, run the agent, re-run its claimed test. Fills
/// `evidence` as it goes, so a failure part-way keeps what was observed.
async fn observe(
    app: &LoadedApp,
    capability: &str,
    cfg: &Config,
    trial_dir: &Path,
    adapter: &dyn crate::agent::Adapter,
    independence: &independence::Kept,
    evidence: &mut QaEvidence,
) -> Result<(), SetupError> {
    let graph_file = trial_dir.join("graph.json");
    let (workspace, home, tmp) = timed_sync(Phase::Workspace, || {
        let dirs = (
            mkdir(&trial_dir.join("workspace"))?,
            mkdir(&trial_dir.join("home"))?,
            mkdir(&trial_dir.join("tmp"))?,
        );
        std::fs::copy(app.app.dir.join("corpus.json"), &graph_file).map_err(SetupError::Graph)?;
        Ok::<_, SetupError>(dirs)
    })?;

    let kernel = Context {
        cfg,
        trial_dir,
        home: &home,
        tmp: &tmp,
        cwd: &workspace,
    };
    let script = app.scripts.get(capability).cloned();
    let proxy = kernel
        .proxy(script, &format!("no script for capability `{capability}`"))
        .await?;

    let result = async {
        let sealed = cfg.sandbox.sealed();
        let mut world = Target::start(
            &app.app,
            None,
            &trial_dir.join("target"),
            &trial_dir.join("app"),
            "app",
        )
        .await
        .map_err(SetupError::App)?;
        // Before the agent spends anything on a target no browser can show. The check's
        // profile lives outside everything the agent can see.
        let run_dir = trial_dir.parent().unwrap_or(trial_dir);
        if crate::plan::needs_browser(app.app.modality) && !preflight_passed(&app.app, run_dir) {
            let checked = crate::world::browser::preflight(&world.host_env()).await;
            if let Err(e) = checked {
                evidence.world_logs.extend(world.stop(trial_dir).await);
                return Err(SetupError::Browser(e));
            }
            remember_preflight(&app.app, run_dir);
        }
        let target = world.locator(sealed);
        let written = timed_sync(Phase::Workspace, || {
            write_prompt(app, capability, &target, &graph_file, cfg.n, trial_dir)
        });
        let text = match written {
            Ok((text, raw)) => {
                evidence.prompt = Some(raw);
                text
            }
            Err(e) => {
                evidence.world_logs.extend(world.stop(trial_dir).await);
                return Err(e);
            }
        };
        let run = RunSpec {
            prompt: text,
            graph_file: graph_file.clone(),
            target,
            capability: capability.into(),
            n: cfg.n,
            workspace: workspace.clone(),
        };
        let proxy_url = proxy.base_url();
        let launch = match kernel.prepare(adapter, Job::Qa(&run), &proxy_url) {
            Ok(l) => l,
            Err(e) => {
                evidence.world_logs.extend(world.stop(trial_dir).await);
                return Err(e.into());
            }
        };
        let mut trial_env = world.env_for(sealed);
        trial_env.insert("GAUNTLET_CAPABILITY".into(), capability.into());
        trial_env.insert(
            "GAUNTLET_GRAPH_FILE".into(),
            graph_file.to_string_lossy().into(),
        );
        trial_env.insert("GAUNTLET_N".into(), cfg.n.to_string());
        evidence.agent.command = launch.invocation.command_line();
        let seal = sealed.then(|| {
            View::new()
                .write(&workspace)
                .write(&home)
                .write(&tmp)
                .read(&graph_file)
                .extend(world.view())
        });
        let spec = kernel.agent_spec(launch, trial_env, &proxy_url, &Streams::AGENT, seal);
        let outcome = timed(Phase::Agent, process::run(spec)).await;
        let outcome = match outcome {
            Ok(o) => o,
            Err(e) => {
                evidence.world_logs.extend(world.stop(trial_dir).await);
                return Err(SetupError::Run(e));
            }
        };
        evidence.agent.end = outcome.end;
        evidence.agent.stdout = outcome.stdout;
        evidence.agent.stderr = outcome.stderr;
        evidence.agent.stragglers_killed = outcome.stragglers_killed;
        Ok::<_, SetupError>(world)
    }
    .await;
    // The agent's target stops beside what follows (the proxy's shutdown, the claim, the
    // gate's first target start): waiting for it was a few milliseconds of every
    // trial. A gate run cannot reach it (a sandbox's network answers only its own
    // run's ports), and its logs keep their place before the gate's.
    let (world, result) = match result {
        Ok(world) => (Some(world), Ok(())),
        Err(e) => (None, Err(e)),
    };
    let logs_at = evidence.world_logs.len();
    let stopped = async move {
        match world {
            Some(mut world) => world.stop(trial_dir).await,
            None => Vec::new(),
        }
    };
    // What follows the agent's run: the proxy's account, the agent's claim, and the
    // gate's re-runs of its test where they can change the verdict.
    let after = async {
        (evidence.usage, evidence.calls) = kernel.finish_proxy(proxy, Streams::AGENT.stem).await;
        evidence.budget_hit = crate::evidence::usage::budget_hit(&evidence.usage).or_else(|| {
            evidence.agent.end.timed_out.then(|| {
                format!(
                    "wall-clock: the agent's deadline of {} s",
                    cfg.timeout.as_secs_f64()
                )
            })
        });
        result?;
        // The agent's own account, beside the proxy's metering (never instead of it).
        let stdout = trial_dir.join(&evidence.agent.stdout.path);
        evidence.agent_report = timed_sync(Phase::Score, || adapter.read(&stdout))
            .ok()
            .map(|parsed| parsed.report);

        // Re-run the claimed test only where it can change the verdict.
        let cap = app.capability(capability).map(|c| c.kind);
        // A budgeted stop still gets its claim checked; any other unclean end cannot pass.
        let stopped_by_budget = crate::evidence::usage::budget_hit(&evidence.usage).is_some()
            && !evidence.agent.end.timed_out
            && evidence.agent.end.interrupted.is_none();
        if !(evidence.agent.end.success() || stopped_by_budget)
            || !cap.is_some_and(|k| k.is_verifiable())
        {
            return Ok(());
        }
        let transcript =
            timed_sync(Phase::Score, || adapter.parse(&stdout)).map_err(SetupError::Output)?;
        let ClaimsFound::One(claim) =
            parse_claims(transcript.final_message.as_deref().unwrap_or(""))
        else {
            return Ok(());
        };
        if claim.status != ClaimStatus::Verified || claim.capability != capability {
            return Ok(());
        }
        let Some(test) = claim.test else {
            return Ok(());
        };
        evidence.gate = Some(
            gate::gate(
                app,
                capability,
                &test,
                &workspace,
                cfg,
                trial_dir,
                independence,
                &mut evidence.world_logs,
            )
            .await,
        );
        Ok::<_, SetupError>(())
    };
    let (logs, after) = tokio::join!(stopped, after);
    evidence.world_logs.splice(logs_at..logs_at, logs);
    after
}

/// Where the trial keeps the prompt it gave the agent, outside the agent's reach (the
/// copy in the workspace is the agent's to read, and to rewrite).
pub const PROMPT_FILE: &str = "prompt.md";

/// Render the one qa prompt for this trial ([`prompt::render_prompt`]), keep it in the
/// trial directory as raw evidence, hashed, and put a copy in the workspace
/// (`.agent/prompt.md`) for the agent. Returns the text and its raw file.
fn write_prompt(
    app: &LoadedApp,
    capability: &str,
    target: &Locator,
    graph_file: &Path,
    n: u32,
    trial_dir: &Path,
) -> Result<(String, crate::evidence::RawFile), SetupError> {
    let cap = app
        .capability(capability)
        .ok_or_else(|| SetupError::NoCapability {
            app: app.app.name.clone(),
            capability: capability.into(),
        })?;
    let bin;
    let surface = match target {
        Locator::Url(url) if crate::plan::needs_browser(app.app.modality) => {
            prompt::Surface::Browser {
                url,
                extension: app.app.modality == crate::spec::Modality::BrowserExtension,
            }
        }
        Locator::Url(url) => prompt::Surface::Http { url },
        Locator::Bin(b) => {
            bin = b.to_string_lossy().into_owned();
            prompt::Surface::Cli { bin: &bin }
        }
    };
    let text = prompt::render_prompt(&app.corpus, cap, &surface, graph_file, n);
    let file = trial_dir.join(PROMPT_FILE);
    std::fs::write(&file, &text).map_err(SetupError::io(&file))?;
    let workspace = trial_dir.join("workspace");
    crate::sys::beneath::Dir::create(&workspace)
        .and_then(|d| d.write(Path::new(crate::agent::PROMPT_FILE), text.as_bytes()))
        .map_err(SetupError::Prompt)?;
    let raw = crate::evidence::RawFile {
        path: PROMPT_FILE.into(),
        bytes: text.len() as u64,
        bytes_seen: text.len() as u64,
        sha256: crate::hash::sha256(text.as_bytes()),
    };
    Ok((text, raw))
}

/// Apps (by content hash) whose browser check passed in this process: the app is
/// frozen, so one passing check stands for the rest of a `gauntlet run`, which then
/// starts one browser fewer per trial.
static PREFLIGHT_PASSED: std::sync::Mutex<std::collections::BTreeSet<String>> =
    std::sync::Mutex::new(std::collections::BTreeSet::new());

/// Under nextest every trial is a process of its own; the processes of one run share
/// its directory, where a passing check leaves a mark for the app's other trials
/// (`.checked/browser-<app content hash>`: the harness's, out of every sandbox's reach).
const PREFLIGHT_MARKS: &str = ".checked";

fn preflight_mark(app: &crate::spec::AppSpec, run_dir: &Path) -> PathBuf {
    run_dir
        .join(PREFLIGHT_MARKS)
        .join(format!("browser-{}", app.content_hash.replace(':', "-")))
}

fn preflight_passed(app: &crate::spec::AppSpec, run_dir: &Path) -> bool {
    PREFLIGHT_PASSED
        .lock()
        .is_ok_and(|s| s.contains(&app.content_hash))
        || preflight_mark(app, run_dir).is_file()
}

fn remember_preflight(app: &crate::spec::AppSpec, run_dir: &Path) {
    if let Ok(mut s) = PREFLIGHT_PASSED.lock() {
        s.insert(app.content_hash.clone());
    }
    // Best-effort: without the mark the next process checks again.
    let mark = preflight_mark(app, run_dir);
    if let Some(dir) = mark.parent() {
        let _ = std::fs::create_dir_all(dir).and_then(|()| std::fs::write(&mark, b""));
    }
}
