//! The libtest-mimic side: the `main` of each `benches-as-tests/` target, and how a
//! planned trial becomes a test that nextest lists, filters, runs in a process of its
//! own and reports.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use libtest_mimic::{Arguments, Failed, Trial};

use super::identity::run_identity;
use super::lifecycle::{manifest_line, no_browser, open_run, resume_plan};
use super::run_loop::run_trial;
use crate::config::Config;
use crate::plan;
use crate::record::manifest::PlannedTrial;
use crate::spec::Suite;

/// `main` of the `benches-as-tests/` target of `suite`: list or run its trials.
pub fn suite_main(suite: Suite) -> ExitCode {
    let args = Arguments::from_args();
    let (cfg, suites) = match super::lifecycle::load() {
        Ok((cfg, suites)) => (cfg, Arc::new(suites)),
        Err(e) => return fail(&e.to_string()),
    };
    // Listed or run, a trial needs gauntlet's own programs, of this version: a test
    // target of another repository finds them installed, or says how to install them.
    if let Err(e) = crate::sys::helpers::check(&cfg) {
        return fail(&e.to_string());
    }
    let no_browser_here = no_browser(&cfg);
    let mut plan = crate::suites::plan(&suites, &cfg, Some(suite), || no_browser_here);
    if let Some(dir) = &cfg.resume {
        let resumed = match resume_plan(dir, cfg.retry_infra) {
            Ok(d) => d,
            Err(e) => return fail(&e.to_string()),
        };
        for t in plan.iter_mut().filter(|t| t.skip.is_none()) {
            t.skip = resumed.skip(&t.name);
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
        // A rerun of a trial the provider failed is an attempt of its own: the failed
        // one finished, and stays, superseded.
        Ok((dir, true)) if first_attempt() && !cfg.retry_infra => (dir, planned.resuming()),
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
    crate::sys::warm::expect_side_by_side(side_by_side(&args, &trials));
    libtest_mimic::run(&args, trials).exit_code()
}

/// How many of `trials` this process runs at once: those `args` select and do not
/// ignore, at most one per test thread. Under nextest, one.
fn side_by_side(args: &Arguments, trials: &[Trial]) -> usize {
    let running = trials
        .iter()
        .filter(|t| !args.is_filtered_out(t) && !args.is_ignored(t))
        .count();
    let threads = args.test_threads.unwrap_or_else(|| {
        std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
    });
    running.min(threads)
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
    use crate::record::manifest::PlannedTrial;

    #[test]
    fn a_process_runs_side_by_side_the_trials_it_selects_and_has_threads_for() {
        let trials = || {
            vec![
                trial("qa::a::x".into(), None, false, || Ok(())),
                trial("qa::a::y".into(), None, false, || Ok(())),
                trial("qa::a::z".into(), Some("no browser"), false, || Ok(())),
            ]
        };
        let args =
            |a: &[&str]| Arguments::from_iter(std::iter::once("trials").chain(a.iter().copied()));
        // nextest: one trial, by its exact name.
        assert_eq!(side_by_side(&args(&["--exact", "qa::a::x"]), &trials()), 1);
        // cargo test: every trial that is not ignored, as many as there are threads.
        assert_eq!(side_by_side(&args(&["--test-threads", "8"]), &trials()), 2);
        assert_eq!(side_by_side(&args(&["--test-threads", "1"]), &trials()), 1);
        assert_eq!(side_by_side(&args(&["--exact", "none"]), &trials()), 0);
    }

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
}
