//! One challenge trial, end to end: workspace, prompt, world, proxy, agent,
//! observation, score, record, reports.
//!
//! The order matters for the error-handling rules: the challenge is loaded and
//! validated before this is called (a bad manifest never creates a workspace); the
//! record is written before the reports, so a report that fails to generate never costs
//! the raw result; a timeout keeps the partial output and whatever events it holds.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::agent::{adapter_for, PromptRun};
use crate::config::{Config, Mode};
use crate::evidence::policy::{OwnChallenge, Roots};
use crate::evidence::{AgentRun, OutputObservation};

use crate::plan::{PlanError, Suites, Trial};
use crate::record::challenge::{
    derive, BundleProvenance, ChallengeEvidence, ChallengeRecord, ObservationEvidence, Provenance,
    SetupResult, OPENS_FILE,
};
use crate::record::{self};
use crate::score::challenge::WorldObservation;
use crate::spec::challenge::{
    Challenge, Challenges, Manifest, Profile, RenderedPrompt, WorldSource, RENDERED_PROMPT,
    SKILLS_DIR,
};
use crate::spec::Suite;
use crate::spec::{AppSpec, Script};
use crate::suites::contract::{
    lane_of, Finished, Lane, Running, SpecEntries, SuiteRunner, TaskParts, TrialError, TrialRun,
};
use crate::sys::process;
use crate::sys::sandbox::View;
use crate::trial::{mkdir, Context, Job, SetupError, Streams};
use crate::world::target::Target;

pub mod plan;

pub use plan::{ChallengeSuite, ChallengeUnit};

/// The hard ceiling of one challenge trial unless configured otherwise: a p99.9-style
/// safety limit, not the expected duration.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(3600);

/// How one trial is run beyond the config.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// A script to use instead of the challenge's own (harness tests).
    pub script: Option<Script>,
}

#[derive(Debug, thiserror::Error)]
pub enum ChallengeError {
    #[error(transparent)]
    Record(#[from] record::RecordError),
    #[error("cannot score {}: {source}", .trial_dir.display())]
    Score {
        trial_dir: PathBuf,
        #[source]
        source: Box<record::rescore::RescoreError>,
    },
}

impl ObservationEvidence {
    fn unavailable(why: &str) -> ObservationEvidence {
        ObservationEvidence {
            file: None,
            unavailable: Some(why.into()),
        }
    }
}

/// The challenge suite as the harness runs it.
pub struct ChallengeRunner;

impl SuiteRunner for ChallengeRunner {
    fn suite(&self) -> Suite {
        Suite::Challenge
    }

    /// A challenge names an app: a repository with no `apps/` has none for it, and its
    /// trials are listed as ignored, saying so.
    fn load(&self, cfg: &Config, into: &mut Suites) -> Result<(), PlanError> {
        let apps = (!cfg.absent_by_default(&cfg.apps_dir)).then_some(cfg.apps_dir.as_path());
        into.insert(plan::load(&cfg.challenges_dir, apps)?);
        Ok(())
    }

    fn data_dir<'a>(&self, cfg: &'a Config) -> &'a std::path::Path {
        &cfg.challenges_dir
    }

    fn plan(&self, suites: &Suites, cfg: &Config, no_browser: Option<&str>) -> Vec<Trial> {
        suites
            .get::<ChallengeSuite>()
            .map(|l| plan::plan(l, cfg, no_browser))
            .unwrap_or_default()
    }

    fn needs_browser(&self, suites: &Suites) -> bool {
        suites
            .get::<ChallengeSuite>()
            .is_some_and(ChallengeSuite::needs_browser)
    }

    fn lane(&self, suites: &Suites, t: &Trial) -> Lane {
        let app = t
            .unit
            .get::<ChallengeUnit>()
            .and_then(|u| u.app)
            .and_then(|a| suites.get::<ChallengeSuite>()?.apps.get(a));
        lane_of(app.map(|a| a.modality))
    }

    /// The binaries of the challenges' apps this package builds.
    fn binaries<'a>(&self, suites: &'a Suites) -> Vec<&'a str> {
        suites.get::<ChallengeSuite>().map_or_else(Vec::new, |l| {
            l.apps
                .iter()
                .filter_map(|a| match &a.start {
                    crate::spec::app::AppStart::Binary(b) => Some(b.as_str()),
                    crate::spec::app::AppStart::Command(_) => None,
                })
                .collect()
        })
    }

    fn execute<'a>(&'a self, run: TrialRun<'a>) -> Running<'a> {
        Box::pin(async move {
            let t = run.trial;
            let unit = run.unit::<ChallengeUnit>()?;
            let loaded = run.data::<ChallengeSuite>()?;
            let app = unit
                .app
                .and_then(|a| loaded.apps.get(a))
                .ok_or_else(|| match &t.skip {
                    Some(why) => TrialError::Skipped {
                        trial: t.name.clone(),
                        why: why.clone(),
                    },
                    None => run.not_loaded("the challenge's app"),
                })?;
            let challenge = loaded.challenges.list.get(unit.challenge);
            let challenge = challenge.ok_or_else(|| run.not_loaded("its challenge"))?;
            let opts = Options::default();
            let (rec, dir) = execute(
                &loaded.challenges,
                challenge,
                app,
                unit.profile,
                run.cfg,
                &opts,
                run.run_dir,
            )
            .await
            .map_err(|e| run.failed(e))?;
            crate::report::challenge::write_reports_after_trial(&dir, &rec);
            let v = &rec.verdict;
            let failure = (!v.passed).then(|| {
                format!(
                    "task_outcome {} ({}), evaluation_validity {} ({})",
                    v.task_outcome.as_str(),
                    v.outcome_reason,
                    v.evaluation_validity.as_str(),
                    v.validity_reason
                )
            });
            let summary = crate::record::challenge::summary_line(&rec);
            Ok(
                Finished::new(Suite::Challenge, summary, dir, failure, rec.interrupted())
                    .infra_first(&rec),
            )
        })
    }

    /// The suite's data directory, and each `challenge.yaml` as its record names it.
    fn specs(&self, suites: &Suites, cfg: &Config) -> SpecEntries {
        let Some(loaded) = suites.get::<ChallengeSuite>() else {
            return Ok(Vec::new());
        };
        let mut out = vec![(
            record::identity::CHALLENGES_KEY.to_string(),
            crate::hash::dir_digest(&cfg.challenges_dir)?,
        )];
        out.extend(loaded.challenges.list.iter().map(|c| {
            (
                record::identity::challenge_key(&c.manifest.id),
                c.manifest_sha256.clone(),
            )
        }));
        Ok(out)
    }

    /// Every file of the challenge's directory, its app's content hash, and the prompt
    /// layers the profile hands the agent (base prompt, the profile's fragment, the
    /// skills bundle): each profile is a task of its own.
    fn task_parts(&self, suites: &Suites, tasks: &[&Trial]) -> TaskParts {
        let Some(loaded) = suites.get::<ChallengeSuite>() else {
            return Ok(vec![None; tasks.len()]);
        };
        let challenges = &loaded.challenges;
        let bundle = if challenges.bundle.dir.is_dir() {
            crate::hash::dir_digest(&challenges.bundle.dir)?
        } else {
            "-".into()
        };
        let mut dirs = BTreeMap::new();
        let mut out = Vec::with_capacity(tasks.len());
        for t in tasks {
            let Some(&ChallengeUnit {
                challenge,
                app,
                profile,
            }) = t.unit.get::<ChallengeUnit>()
            else {
                out.push(None);
                continue;
            };
            let Some(c) = challenges.list.get(challenge) else {
                out.push(None);
                continue;
            };
            let dir = match dirs.get(&challenge) {
                Some(d) => String::clone(d),
                None => {
                    let d = crate::hash::dir_digest(&c.dir)?;
                    dirs.insert(challenge, d.clone());
                    d
                }
            };
            let app = app
                .and_then(|a| loaded.apps.get(a))
                .map_or_else(|| "-".to_string(), |a| a.content_hash.clone());
            let fragment = challenges
                .fragments
                .get(&profile)
                .map_or_else(|| "-".to_string(), |f| f.sha256.clone());
            out.push(Some(vec![
                dir,
                app,
                profile.to_string(),
                challenges.base.sha256.clone(),
                fragment,
                bundle.clone(),
            ]));
        }
        Ok(out)
    }
}

/// Run one trial of `challenge` under `profile` and append its record to `run_dir`.
/// Returns the record and its directory. Only a failure to create or write the record
/// is an `Err`: everything that goes wrong with the world or the agent is evidence.
pub async fn execute(
    challenges: &Challenges,
    challenge: &Challenge,
    app: &AppSpec,
    profile: Profile,
    cfg: &Config,
    opts: &Options,
    run_dir: &Path,
) -> Result<(ChallengeRecord, PathBuf), ChallengeError> {
    let name = crate::plan::names::challenge(&challenge.manifest.id, profile);
    let timeout = match (
        cfg.challenge_timeout_override,
        challenge.manifest.timeout_secs,
    ) {
        (Some(t), _) => t,
        (None, Some(s)) => Duration::from_secs_f64(s),
        (None, None) => cfg.challenge_timeout.unwrap_or(DEFAULT_TIMEOUT),
    };
    let script = opts
        .script
        .clone()
        .or_else(|| challenge.script_for(profile).cloned());
    let started_at = chrono::Utc::now();
    let t0 = Instant::now();
    let trial_dir = record::create_trial_dir(run_dir, &name)?;
    let adapter = adapter_for(&cfg.agent);
    let rendered = challenges.render(challenge, profile);
    let workspace = trial_dir.join("workspace");
    let repo = crate::binaries::repo_root();
    let commit = record::gauntlet_commit(cfg);
    let provenance = Provenance {
        challenge_id: challenge.manifest.id.clone(),
        manifest_path: rel_to(&challenge.dir.join("challenge.yaml"), &repo),
        manifest_sha256: challenge.manifest_sha256.clone(),
        manifest: challenge.manifest.clone(),
        inputs: challenge.inputs.clone(),
        profile,
        prompt: rendered.clone(),
        bundle: profile.supplies_skills().then(|| BundleProvenance {
            name: challenges.bundle.manifest.name.clone(),
            manifest_sha256: challenges.bundle.manifest_sha256.clone(),
            files: challenges.bundle.manifest.files.clone(),
        }),
        model: cfg.model.clone(),
        agent: adapter.name().to_string(),
        agent_version: adapter.version(),
        dirty: commit.as_ref().map(|c| c.ends_with("-dirty")),
        commit,
        harness_version: crate::VERSION.into(),
        script_sha256: script
            .as_ref()
            .filter(|_| cfg.mode == Mode::Scripted)
            .map(|f| crate::hash::sha256(&serde_json::to_vec(f).unwrap_or_default())),
        timeout_secs: timeout.as_secs_f64(),
    };
    let mut evidence = ChallengeEvidence {
        calls: None,
        agent: AgentRun::not_started(),
        workspace: "workspace".into(),
        roots: Roots {
            skills: workspace.join(SKILLS_DIR),
            workspace: workspace.clone(),
            trial_dir: trial_dir.clone(),
            runs_dir: run_dir.parent().unwrap_or(run_dir).to_path_buf(),
            repo: repo.clone(),
            runtime: vec![],
            // What the trial hands the agent of its challenge: the rest is the answer key.
            challenge: Some(own_challenge(challenge)),
        },
        setup: vec![],
        world: vec![],
        usage: vec![],
        setup_error: None,
        world_logs: vec![],
        observation: Some(ObservationEvidence::unavailable("the agent did not run")),
        app_program: None,
        app_program_file: None,
        browser_programs: vec![],
        app_url: None,
        relayed_runs: None,
        relayed_runs_dropped: 0,
        outputs: vec![],
    };
    let ctx = TrialCtx {
        challenges,
        challenge,
        app,
        profile,
        cfg,
        script: script.as_ref(),
        timeout,
        trial_dir: &trial_dir,
        rendered: &rendered,
        title: &name,
    };
    if let Err(setup) = observe(&ctx, adapter.as_ref(), &mut evidence).await {
        crate::trial::stopped_while_set_up(&mut evidence.agent.end.interrupted);
        evidence.setup_error = Some(setup.to_string());
    }
    for raw in [&evidence.agent.stdout, &evidence.agent.stderr] {
        let f = trial_dir.join(&raw.path);
        if !f.exists() {
            let _ = std::fs::write(&f, b"");
        }
    }
    let (derived, verdict) =
        derive(&trial_dir, adapter.name(), &provenance, &evidence).map_err(|source| {
            ChallengeError::Score {
                trial_dir: trial_dir.clone(),
                source: Box::new(source),
            }
        })?;
    let rec = ChallengeRecord {
        header: record::Header::finished_now(
            crate::spec::Suite::Challenge,
            name,
            started_at,
            t0,
            {
                let mut c = crate::record::RecordConfig::of(cfg, adapter.name(), adapter.version());
                c.timeout_secs = timeout.as_secs_f64();
                c
            },
        ),
        provenance,
        evidence,
        derived,
        verdict,
    };
    record::write_new_json(&trial_dir, record::RECORD_FILE, &rec)?;
    Ok((rec, trial_dir))
}

struct TrialCtx<'a> {
    challenges: &'a Challenges,
    challenge: &'a Challenge,
    app: &'a AppSpec,
    profile: Profile,
    cfg: &'a Config,
    script: Option<&'a Script>,
    timeout: Duration,
    trial_dir: &'a Path,
    rendered: &'a RenderedPrompt,
    title: &'a str,
}

/// The workspace: template, bundle (skills, all), rendered prompt, trial config.
pub fn prepare_workspace(
    challenges: &Challenges,
    challenge: &Challenge,
    profile: Profile,
    rendered: &RenderedPrompt,
    workspace: &Path,
) -> Result<(), SetupError> {
    copy_tree(&challenge.template_dir(), workspace)?;
    if profile.supplies_skills() {
        challenges.bundle.copy_to(&workspace.join(SKILLS_DIR))?;
    }
    let prompt_file = workspace.join(RENDERED_PROMPT);
    if let Some(parent) = prompt_file.parent() {
        std::fs::create_dir_all(parent).map_err(SetupError::io(parent))?;
    }
    std::fs::write(&prompt_file, &rendered.text).map_err(SetupError::io(&prompt_file))?;
    // Config paths are workspace-relative, so the workspace can be moved and re-read.
    let config = serde_json::json!({
        "challenge": challenge.manifest.id,
        "version": challenge.manifest.version,
        "app": challenge.manifest.app,
        "profile": profile,
        "prompt": RENDERED_PROMPT,
        "skills": profile.supplies_skills().then_some(SKILLS_DIR),
    });
    let file = workspace.join(".agent/trial.json");
    std::fs::write(
        &file,
        serde_json::to_vec_pretty(&config).unwrap_or_default(),
    )
    .map_err(SetupError::io(&file))?;
    Ok(())
}

async fn observe(
    t: &TrialCtx<'_>,
    adapter: &dyn crate::agent::Adapter,
    evidence: &mut ChallengeEvidence,
) -> Result<(), SetupError> {
    let workspace = mkdir(&t.trial_dir.join("workspace"))?;
    let home = mkdir(&t.trial_dir.join("home"))?;
    let tmp = mkdir(&t.trial_dir.join("tmp"))?;
    prepare_workspace(t.challenges, t.challenge, t.profile, t.rendered, &workspace)?;
    let kernel = Context {
        cfg: t.cfg,
        trial_dir: t.trial_dir,
        home: &home,
        tmp: &tmp,
        cwd: &workspace,
    };
    let missing = format!(
        "challenge `{}` has no script for profile `{}`",
        t.challenge.manifest.id, t.profile
    );
    let proxy = kernel.proxy(t.script.cloned(), &missing).await?;
    let result = async {
        let mut world = Target::start(
            t.app,
            None,
            &t.trial_dir.join("target"),
            &t.trial_dir.join("app"),
            "app",
        )
        .await
        .map_err(SetupError::App)?;
        let r = run_agent(t, &kernel, adapter, evidence, &world, &proxy.base_url()).await;
        // The world is observed after the agent, whatever became of it, while it still runs.
        evidence.world = observe_world(&t.challenge.manifest, &world.host_env(), &workspace).await;
        if let Some(runs) = world.app_runs() {
            evidence.relayed_runs = Some(runs.log);
            evidence.relayed_runs_dropped = runs.log_dropped;
        }
        evidence.outputs = observe_outputs(&t.challenge.manifest, &workspace);
        evidence.world_logs = world.stop(t.trial_dir).await;
        r
    }
    .await;
    (evidence.usage, evidence.calls) = kernel.finish_proxy(proxy, Streams::AGENT.stem).await;
    result
}

async fn run_agent(
    t: &TrialCtx<'_>,
    kernel: &Context<'_>,
    adapter: &dyn crate::agent::Adapter,
    evidence: &mut ChallengeEvidence,
    world: &Target,
    proxy_url: &str,
) -> Result<(), SetupError> {
    let (workspace, home, tmp) = (kernel.cwd, kernel.home, kernel.tmp);
    evidence.setup = setup(&t.challenge.manifest, &world.host_env()).await;
    if let Some(bad) = evidence
        .setup
        .iter()
        .find(|s| s.error.is_some() || s.status.is_some_and(|c| c >= 400))
    {
        return Err(SetupError::AppSetup {
            method: bad.method.clone(),
            path: bad.path.clone(),
            why: bad
                .error
                .clone()
                .unwrap_or_else(|| format!("HTTP {}", bad.status.unwrap_or(0))),
        });
    }
    if crate::plan::needs_browser(t.app.modality) {
        crate::world::browser::preflight(&world.host_env())
            .await
            .map_err(SetupError::Browser)?;
    }
    let run = PromptRun {
        title: t.title.to_string(),
        prompt: t.rendered.text.clone(),
        workspace: workspace.to_path_buf(),
        session: None,
    };
    let launch = kernel.prepare(adapter, Job::Prompt(&run), proxy_url)?;
    let sealed = t.cfg.sandbox.sealed();
    let mut trial_env = world.env_for(sealed);
    evidence.app_program = trial_env.get("APP_BIN").cloned();
    // The relay's binary is bound where it lies on the host.
    evidence.app_program_file = world
        .host_env()
        .get("APP_BIN")
        .and_then(|bin| std::fs::canonicalize(bin).ok())
        .map(|p| p.to_string_lossy().into_owned());
    // By the files they are: a wrapper script execs the real binary.
    let mut browsers: Vec<String> = [
        crate::binaries::chromium(),
        crate::binaries::chromium_without_extensions(),
    ]
    .iter()
    .filter_map(|b| std::fs::canonicalize(b).ok())
    .map(|p| p.to_string_lossy().into_owned())
    .collect();
    browsers.dedup();
    evidence.browser_programs = browsers;
    evidence.app_url = trial_env.get("APP_URL").cloned();
    trial_env.insert("GAUNTLET_CHALLENGE".into(), t.challenge.manifest.id.clone());
    trial_env.insert("GAUNTLET_INSTRUCTION_PROFILE".into(), t.profile.to_string());
    let env = kernel.env(launch.env, trial_env, Some(proxy_url));
    let inv = launch.invocation;
    evidence.agent.command = inv.command_line();
    let view = challenge_view(workspace, home, tmp, world, &t.cfg.out_dir);
    evidence.roots.runtime = runtime_roots(
        &view.clone().extend(crate::sys::sandbox::runtime_view(
            &inv.program,
            &inv.args,
            &view,
        )),
        &evidence.roots.repo,
    );
    // The agent's own program, and the script it runs: the first file its command
    // line names. Only the first: a command line that also names repository files
    // would otherwise make reading them the agent's runtime.
    evidence.roots.runtime.extend(
        std::iter::once(inv.program.clone())
            .chain(
                inv.args
                    .iter()
                    .map(PathBuf::from)
                    .find(|p| p.is_absolute() && p.is_file()),
            )
            .filter(|p| p.is_absolute() && p.is_file()),
    );
    let opens = t.trial_dir.join(OPENS_FILE);
    let seal = sealed.then(|| view.observed(&opens));
    let outcome = process::run(kernel.spec(
        inv,
        env,
        &Streams::AGENT,
        t.timeout,
        t.cfg.output_cap_bytes,
        seal,
    ))
    .await;
    evidence.observation = Some(if !sealed {
        ObservationEvidence::unavailable(
            "the trial ran unsealed (GAUNTLET_SANDBOX=off): nothing observed its opens",
        )
    } else {
        match record::raw::harness_file(&opens, t.trial_dir) {
            Some(file) => ObservationEvidence {
                file: Some(file),
                unavailable: None,
            },
            None => ObservationEvidence::unavailable("the sandbox wrote no observation"),
        }
    });
    let outcome = outcome.map_err(SetupError::Run)?;
    evidence.agent.end = outcome.end;
    evidence.agent.stdout = outcome.stdout;
    evidence.agent.stderr = outcome.stderr;
    evidence.agent.stragglers_killed = outcome.stragglers_killed;
    Ok(())
}

/// What a challenge agent sees: its workspace, HOME and TMPDIR writable; the repository
/// read-only, because what it reads there (docs, tests, product source) is the policy
/// evidence the challenge exists to collect; `target/` (other trials, their records, the
/// harness's build) hidden under an empty tmpfs, the harness's binaries excepted.
fn challenge_view(
    workspace: &Path,
    home: &Path,
    tmp: &Path,
    world: &Target,
    out_dir: &Path,
) -> View {
    let repo = crate::binaries::repo_root();
    let mut view = View::new().read(&repo);
    // A fresh source tree run from a nextest archive has no `target/` yet: made empty
    // here, so that the tmpfs has a place to go (the repository is bound read-only,
    // where no mount point can be made) and a `target/` the harness or a build makes
    // later stays hidden too. A tree nobody may write to keeps none, and nothing can
    // appear in it.
    let target = repo.join("target");
    let _ = std::fs::create_dir_all(&target);
    if target.is_dir() {
        view.mounts
            .push(crate::sys::sandbox::Mount::Tmpfs { target });
    }
    // Runs written elsewhere inside the repository (`GAUNTLET_OUT=results/x`) are
    // hidden the same way: other trials' records and workspaces are not the agent's
    // to read, and this trial's own directories are bound back below.
    if let Some(target) = run_dir_to_hide(&repo, out_dir) {
        view.mounts
            .push(crate::sys::sandbox::Mount::Tmpfs { target });
    }
    view.write(workspace)
        .write(home)
        .write(tmp)
        .extend(world.view())
}

/// The runs directory, when it lies inside the repository and outside `target/` (which
/// is hidden anyway): the repository itself is never hidden.
fn run_dir_to_hide(repo: &Path, out_dir: &Path) -> Option<PathBuf> {
    let canon = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let (repo, out) = (canon(repo), canon(out_dir));
    (out.starts_with(&repo) && !out.starts_with(repo.join("target")) && out != repo).then_some(out)
}

/// The read-only binds of a sealed view other than the repository itself: the agent's
/// own binaries and packages, the app's locators. What is opened there is runtime.
fn runtime_roots(view: &View, repo: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = view
        .mounts
        .iter()
        .filter_map(|m| match m {
            crate::sys::sandbox::Mount::Bind {
                target,
                writable: false,
                ..
            } if !repo.starts_with(target) => Some(target.clone()),
            _ => None,
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The trial's challenge as its roots name it: its directory, absolute and normalized
/// as observed paths are, and what the trial hands the agent from it (its prompt, its
/// workspace template); the rest of it is the answer key, and so is the repository
/// beyond its docs and product source.
fn own_challenge(challenge: &Challenge) -> OwnChallenge {
    let dir = std::path::absolute(&challenge.dir).unwrap_or_else(|_| challenge.dir.clone());
    let dir = crate::evidence::policy::resolve(&dir, ".");
    let handed = [
        &challenge.manifest.prompt,
        &challenge.manifest.workspace_template,
    ]
    .into_iter()
    .filter_map(|p| {
        crate::evidence::policy::resolve(&dir, p)
            .strip_prefix(&dir)
            .ok()
            .map(Path::to_path_buf)
    })
    .collect();
    OwnChallenge {
        dir,
        handed,
        whole_repository: true,
    }
}

/// Send the manifest's setup requests to the app.
async fn setup(m: &Manifest, env: &BTreeMap<String, String>) -> Vec<SetupResult> {
    let mut out = Vec::new();
    if m.world.setup.is_empty() {
        return out;
    }
    let base = env.get("APP_URL").cloned().unwrap_or_default();
    let client = reqwest::Client::new();
    for s in &m.world.setup {
        let method =
            reqwest::Method::from_bytes(s.method.as_bytes()).unwrap_or(reqwest::Method::GET);
        let mut req = client
            .request(method, format!("{base}{}", s.path))
            .timeout(Duration::from_secs(20));
        if let Some(body) = &s.body {
            req = req.json(body);
        }
        let r = req.send().await;
        out.push(SetupResult {
            method: s.method.clone(),
            path: s.path.clone(),
            status: r.as_ref().ok().map(|r| r.status().as_u16()),
            error: r.err().map(|e| e.to_string()),
        });
    }
    out
}

/// Read what each world assertion looks at. I/O only: comparing is the scorer's.
pub async fn observe_world(
    m: &Manifest,
    env: &BTreeMap<String, String>,
    workspace: &Path,
) -> Vec<WorldObservation> {
    let client = reqwest::Client::new();
    let mut out = Vec::new();
    for a in &m.world.assertions {
        let got: Result<serde_json::Value, String> = match &a.source {
            WorldSource::HttpGet(path) => match env.get("APP_URL") {
                None => Err("the app has no URL".into()),
                Some(base) => get_json(&client, base, path).await.and_then(|(status, v)| {
                    v.map_err(|e| format!("GET {path} answered {status}, not JSON: {e}"))
                }),
            },
            WorldSource::HttpGetEach(template) => match env.get("APP_URL") {
                None => Err("the app has no URL".into()),
                Some(base) => get_each(&client, base, template).await,
            },
            WorldSource::File(rel) => {
                // The agent wrote this file: its size is not to be trusted with memory,
                // and it may be a symlink to a host file or a FIFO. `sys::beneath` reads
                // only a regular file below the workspace, at most 1 MiB.
                let read = crate::sys::beneath::read(workspace, Path::new(rel), 1 << 20);
                match read {
                    Err(e) => Err(format!("{rel}: {e}")),
                    Ok(b) => {
                        serde_json::from_slice(&b).map_err(|e| format!("{rel}: not JSON: {e}"))
                    }
                }
            }
        };
        out.push(WorldObservation {
            id: a.id.clone(),
            document: got.as_ref().ok().cloned(),
            error: got.err(),
        });
    }
    out
}

/// `GET <base><path>`: the status, and the body parsed as JSON. Only a failed request
/// is an `Err`.
async fn get_json(
    client: &reqwest::Client,
    base: &str,
    path: &str,
) -> Result<(u16, Result<serde_json::Value, String>), String> {
    let r = client
        .get(format!("{base}{path}"))
        .timeout(Duration::from_secs(20))
        .send()
        .await
        .map_err(|e| format!("GET {path}: {e}"))?;
    let status = r.status().as_u16();
    // What the app answers is read to a bound, like everything else taken from it.
    let mut r = r;
    let mut b = Vec::new();
    while let Some(chunk) = r.chunk().await.map_err(|e| format!("GET {path}: {e}"))? {
        if b.len() + chunk.len() > WORLD_ANSWER_BYTES {
            return Err(format!(
                "GET {path}: the answer is longer than {WORLD_ANSWER_BYTES} bytes"
            ));
        }
        b.extend_from_slice(&chunk);
    }
    Ok((
        status,
        serde_json::from_slice(&b).map_err(|e| e.to_string()),
    ))
}

/// The most bytes of one answer the app gives an observation.
const WORLD_ANSWER_BYTES: usize = 1 << 20;

/// Every answer of `template` with `{n}` = 1, 2, … while the app answers 2xx with
/// JSON, as an array: the things the app holds, counted by the app.
async fn get_each(
    client: &reqwest::Client,
    base: &str,
    template: &str,
) -> Result<serde_json::Value, String> {
    let mut items = Vec::new();
    for n in 1..=crate::spec::challenge::MAX_EACH {
        let path = template.replace("{n}", &n.to_string());
        let (status, v) = get_json(client, base, &path).await?;
        match v {
            Ok(v) if (200..300).contains(&status) => items.push(v),
            _ => return Ok(serde_json::Value::Array(items)),
        }
    }
    Err(format!(
        "GET {template}: the app still answered after {} requests",
        crate::spec::challenge::MAX_EACH
    ))
}

/// Hash each required output file, read as a world `file` is: a regular file below the
/// workspace, bounded.
fn observe_outputs(m: &Manifest, workspace: &Path) -> Vec<OutputObservation> {
    m.work
        .outputs
        .iter()
        .map(|o| {
            let read = crate::sys::beneath::read(
                workspace,
                Path::new(&o.file),
                crate::spec::challenge::MAX_OUTPUT_BYTES,
            );
            OutputObservation {
                id: o.id.clone(),
                file: o.file.clone(),
                sha256: read.as_ref().ok().map(|b| crate::hash::sha256(b)),
                bytes: read.as_ref().ok().map(|b| b.len() as u64),
                error: read.err().map(|e| e.to_string()),
            }
        })
        .collect()
}

fn copy_tree(from: &Path, to: &Path) -> Result<(), SetupError> {
    std::fs::create_dir_all(to).map_err(SetupError::io(to))?;
    let entries = std::fs::read_dir(from).map_err(SetupError::io(from))?;
    for e in entries {
        let e = e.map_err(SetupError::io(from))?;
        let (src, dst) = (e.path(), to.join(e.file_name()));
        let ty = e.file_type().map_err(SetupError::io(&src))?;
        if ty.is_dir() {
            copy_tree(&src, &dst)?;
        } else if ty.is_file() {
            std::fs::copy(&src, &dst).map_err(|source| SetupError::Copy {
                from: src.clone(),
                to: dst.clone(),
                source,
            })?;
        }
    }
    Ok(())
}

fn rel_to(p: &Path, base: &Path) -> String {
    p.strip_prefix(base)
        .unwrap_or(p)
        .to_string_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_runs_directory_inside_the_repository_is_hidden_from_challenge_agents() {
        let repo = tempfile::tempdir().unwrap();
        let r = repo.path();
        std::fs::create_dir_all(r.join("results/runs")).unwrap();
        std::fs::create_dir_all(r.join("target/gauntlet/runs")).unwrap();
        let hidden = run_dir_to_hide(r, &r.join("results/runs"));
        assert_eq!(hidden, Some(r.join("results/runs").canonicalize().unwrap()));
        // Under `target/` (hidden already), outside the repository, or the repository
        // itself: nothing more to hide.
        assert_eq!(run_dir_to_hide(r, &r.join("target/gauntlet/runs")), None);
        assert_eq!(run_dir_to_hide(r, Path::new("/tmp")), None);
        assert_eq!(run_dir_to_hide(r, r), None);
    }
}
