//! The one run loop: planned trials through their suites, in lanes, in plan order.
//! `gauntlet run`, the red-team audit and the libtest-mimic targets (one trial each)
//! all end in [`run_trial`].

use std::path::Path;
use std::sync::Arc;

use crate::config::Config;
use crate::plan::{self, Suites};
use crate::spec::Suite;
use crate::suites::{Finished, Lane, TrialError};

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
    let run = crate::suites::TrialRun {
        suites,
        trial: t,
        cfg,
        run_dir,
    };
    let finished = crate::suites::runner(t.suite).execute(run).await?;
    if finished.interrupted.is_none() {
        super::lifecycle::note_finished(t, run_dir, &finished.trial_dir).map_err(|source| {
            TrialError::NoteFinished {
                trial: t.name.clone(),
                source,
            }
        })?;
    }
    Ok(finished)
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
            Jobs::PerLane(_) => crate::suites::runner(t.suite).lane(&suites, t),
        };
        lanes.entry(lane).or_default().push((index, t.clone()));
    }
    // Work several trials share starts before the first of them (a qa app's
    // independence matrix), side by side.
    if let Jobs::PerLane(_) = jobs {
        for s in Suite::ALL {
            crate::suites::runner(s).warm(&suites, &cfg, trials);
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
