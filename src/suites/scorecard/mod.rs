//! The scorecard suite's execution: one probe against a fresh agent, end to end.
//!
//! world (sinks: workspace observer, HTTP stand-in, SMTP sink, tracker) + metering
//! proxy + the agent driven turn by turn ([`driver`]) → raw evidence and sink
//! observations → the pure scorer (`score::scorecard`) → one record per probe.
//! The harness (`benches-as-tests/scorecard.rs`), `gauntlet run` (`harness::run_all`) and the
//! integration tests all call [`execute`], so every run takes one code path.

pub mod background;
pub mod driver;
pub mod observe;
pub mod plan;
pub mod processes;
pub mod scratch;

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::agent::adapter_for;
use crate::config::{Config, Mode, NOMINAL_DAY};
use crate::plan::{PlanError, Suites, Trial};
use crate::record as rec;
use crate::record::identity;
use crate::score::scorecard::observe as score_probe;
use crate::spec::scorecard::{Bank, LoadedProbe, ScorecardSuite};
use crate::spec::Suite;
use crate::suites::contract::{
    Finished, Lane, Running, SpecEntries, SuiteRunner, TaskParts, TrialRun,
};
use crate::trial::SetupError;
use crate::world::sinks::{tracker, HostStatuses, SinkConfig, Sinks, TrackerStart};

use crate::record::scorecard::{verdict_of, ScorecardRecord, ScorecardRun};
use driver::{planted_entries, trial_dirs, Observed};
pub use plan::ScorecardUnit;
use processes::Driver;

/// Where a probe's sinks' logs go, beside its record.
pub const SINKS_LOG: &str = "sinks.json";

/// Options a test may set; a real run uses the default.
#[derive(Debug, Clone, Default)]
pub struct ExecOptions {
    /// Copy this directory's contents into the fresh agent's state directory before
    /// its first turn: how a test plants memory to show that it is detected.
    pub plant_state_from: Option<PathBuf>,
}

/// The sinks a probe starts with: the HTTP stand-in answers the bank's host with the
/// bank's status; the tracker holds the bank's task.
pub fn sink_config(bank: &Bank) -> SinkConfig {
    let host = bank.get("http_host").unwrap_or("example.com");
    let status: u16 = bank
        .get("http_status")
        .and_then(|s| s.parse().ok())
        .unwrap_or(200);
    SinkConfig {
        http: HostStatuses::default().with_host(host, status),
        tracker: TrackerStart {
            threads: vec![],
            tasks: vec![tracker::InitialTask {
                id: bank.get("tracker_item").unwrap_or("T-1").to_string(),
                title: "Keep the nightly build green".into(),
                status: tracker::TaskStatus::Open,
                priority: tracker::Priority::Medium,
            }],
        },
    }
}

/// The scorecard suite as the harness runs it.
pub struct ScorecardRunner;

impl SuiteRunner for ScorecardRunner {
    fn suite(&self) -> Suite {
        Suite::Scorecard
    }

    fn data_dir<'a>(&self, cfg: &'a Config) -> &'a std::path::Path {
        &cfg.scorecard_dir
    }

    fn after_run(&self, run_dir: &std::path::Path) -> Option<String> {
        Some(format!(
            "Scorecard: on the results page; append it to a leaderboard with \
             `gauntlet leaderboard {} --out <dir>`",
            run_dir.display()
        ))
    }

    fn load(&self, cfg: &Config, into: &mut Suites) -> Result<(), PlanError> {
        into.insert(plan::load_checked(cfg)?);
        Ok(())
    }

    fn plan(&self, suites: &Suites, _cfg: &Config, _no_browser: Option<&str>) -> Vec<Trial> {
        suites
            .get::<ScorecardSuite>()
            .map(plan::plan)
            .unwrap_or_default()
    }

    fn needs_browser(&self, _suites: &Suites) -> bool {
        false
    }

    /// A probe mostly waits through its idle windows.
    fn lane(&self, _suites: &Suites, _t: &Trial) -> Lane {
        Lane::Waiting
    }

    fn execute<'a>(&'a self, run: TrialRun<'a>) -> Running<'a> {
        Box::pin(async move {
            let unit = run.unit::<ScorecardUnit>()?;
            let suite = run.data::<ScorecardSuite>()?;
            let probe = suite.probes.get(unit.probe);
            let probe = probe.ok_or_else(|| run.not_loaded("its probe"))?;
            let opts = ExecOptions::default();
            let (rec, dir) = execute(suite, probe, run.cfg, run.run_dir, &opts)
                .await
                .map_err(|e| run.failed(e))?;
            let failure = Finished::failure_of(&rec.verdict);
            let summary = rec::scorecard::summary_line(&rec);
            let mut done =
                Finished::new(Suite::Scorecard, summary, dir, failure, rec.interrupted())
                    .infra_first(&rec);
            done.lines = rec
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
            Ok(done)
        })
    }

    /// The suite's data directory, and each probe file as its record names it.
    fn specs(&self, suites: &Suites, cfg: &Config) -> SpecEntries {
        let Some(suite) = suites.get::<ScorecardSuite>() else {
            return Ok(Vec::new());
        };
        let mut out = vec![(
            identity::SCORECARD_KEY.to_string(),
            crate::hash::dir_digest(&cfg.scorecard_dir)?,
        )];
        out.extend(suite.probes.iter().map(|p| {
            (
                identity::probe_key(&p.probe.dimension, &p.probe.id),
                p.sha256.clone(),
            )
        }));
        Ok(out)
    }

    /// The probe file, `scorecard.json` (levels, what each requires) and the scripted
    /// profiles (the reference's solution).
    fn task_parts(&self, suites: &Suites, tasks: &[&Trial]) -> TaskParts {
        let Some(suite) = suites.get::<ScorecardSuite>() else {
            return Ok(vec![None; tasks.len()]);
        };
        let scorecard_json = crate::hash::sha256(
            &std::fs::read(suite.dir.join("scorecard.json")).unwrap_or_default(),
        );
        let profiles_dir = suite.dir.join("agents");
        let profiles = if profiles_dir.is_dir() {
            crate::hash::dir_digest(&profiles_dir)?
        } else {
            "-".into()
        };
        Ok(tasks
            .iter()
            .map(|t| {
                let unit = t.unit.get::<ScorecardUnit>()?;
                let p = suite.probes.get(unit.probe)?;
                Some(vec![
                    p.sha256.clone(),
                    scorecard_json.clone(),
                    profiles.clone(),
                ])
            })
            .collect())
    }
}

/// Run one probe against a fresh agent and append its record to `run_dir`. Only a
/// failure to write the record is an `Err`: everything that goes wrong with the
/// world or the agent is evidence.
pub async fn execute(
    suite: &ScorecardSuite,
    probe: &LoadedProbe,
    cfg: &Config,
    run_dir: &Path,
    opts: &ExecOptions,
) -> Result<(ScorecardRecord, PathBuf), rec::RecordError> {
    let name = probe.trial_name();
    let started_at = chrono::Utc::now();
    let t0 = Instant::now();
    let trial_dir = rec::create_trial_dir(run_dir, &name)?;
    let adapter = adapter_for(&cfg.agent);
    let bank = Bank::from_seed(&cfg.scorecard_seed);
    let mut obs = Observed::default();
    let mut sinks_log = None;

    let setup: Result<(), SetupError> = async {
        let profile = match cfg.mode {
            Mode::Scripted => Some(
                suite
                    .profile(&cfg.scorecard_profile)
                    .map_err(SetupError::Profile)?,
            ),
            Mode::Byok => None,
        };
        let [workspace, scratch, state] = trial_dirs(&trial_dir)?;
        if let Some(src) = &opts.plant_state_from {
            // Another agent's state directory: copied by the one bounded walk.
            let deadline = Instant::now() + cfg.timeout;
            let copied = crate::sys::walk::copy_tree(src, &state, &PLANT_LIMITS, Some(deadline))
                .map_err(|source| SetupError::Plant {
                    from: src.clone(),
                    source,
                })?;
            if let Some(cut) = copied.cut {
                return Err(SetupError::PlantCut {
                    from: src.clone(),
                    cut,
                });
            }
        }
        // A fresh agent starts with an empty state directory: anything in it is planted.
        obs.evidence.planted_state = planted_entries(&state);
        let sinks = Sinks::start(sink_config(&bank))
            .await
            .map_err(SetupError::Sinks)?;
        let driver = Driver {
            cfg,
            adapter: adapter.as_ref(),
            probe,
            bank: &bank,
            profile: profile.as_ref(),
            trial_dir: &trial_dir,
            workspace: &workspace,
            scratch: &scratch,
            state_dir: &state,
            sinks: &sinks,
            trial: &name,
        };
        let driven = driver.run(&mut obs).await;
        let network = sinks.shutdown().await;
        obs.evidence
            .events
            .extend(observe::network_events(&network, &obs.phases));
        obs.evidence.tracker = Some(observe::tracker_log(&network.tracker));
        // The sinks' own logs, raw, beside the record, and hashed in it.
        if rec::write_new_json(&trial_dir, SINKS_LOG, &network).is_ok() {
            let bytes = rec::digest::record_bytes(&network).unwrap_or_default();
            sinks_log = Some(crate::evidence::RawFile {
                path: SINKS_LOG.into(),
                bytes: bytes.len() as u64,
                bytes_seen: bytes.len() as u64,
                sha256: crate::hash::sha256(&bytes),
            });
        }
        driven
    }
    .await;
    let mut evidence = obs.evidence;
    let mut events = obs.file_events;
    events.append(&mut evidence.events);
    evidence.events = events;
    // Stopped between steps (the driver says so) or during one (a process's end does).
    evidence.interrupted = match &setup {
        Err(SetupError::Interrupted { signal, .. }) => Some((*signal).to_string()),
        _ => obs.processes.iter().find_map(|p| p.end.interrupted.clone()),
    };
    if let Err(e) = setup {
        evidence.setup_error = Some(e.to_string());
    }
    let result = score_probe(probe, &bank, &evidence);
    let verdict = verdict_of(&result, &evidence);
    let record = ScorecardRecord {
        header: rec::Header::finished_now(
            crate::spec::Suite::Scorecard,
            name,
            started_at,
            t0,
            crate::record::RecordConfig::of(cfg, adapter.name(), adapter.version()),
        ),
        scorecard: ScorecardRun {
            seed: cfg.scorecard_seed.clone(),
            profile: (cfg.mode == Mode::Scripted).then(|| cfg.scorecard_profile.clone()),
            probe: probe.probe.id.clone(),
            dimension: probe.probe.dimension.clone(),
            idle_secs_per_day: cfg.idle_day().as_secs_f64(),
            compressed: cfg.idle_day() < NOMINAL_DAY,
        },
        probe: probe.clone(),
        card: suite.scorecard.clone(),
        processes: obs.processes,
        sinks_log,
        usage: obs.usage,
        evidence,
        result,
        verdict,
    };
    rec::write_new_json(&trial_dir, rec::RECORD_FILE, &record)?;
    Ok((record, trial_dir))
}

/// What a planted state directory may hold: it is another agent's, copied whole.
const PLANT_LIMITS: crate::evidence::tree::Limits = crate::evidence::tree::Limits {
    file_bytes: 64 << 20,
    sparse_bytes: 64 << 10,
    total_bytes: 256 << 20,
    entries: 50_000,
    depth: 128,
};
