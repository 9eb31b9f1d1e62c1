//! The libtest-mimic entry point shared by the `benches-as-tests/` targets.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use libtest_mimic::{Arguments, Failed, Trial};

use crate::config::Config;
use crate::run::qa::execute;
use crate::spec::LoadedApp;

/// `main` of `benches-as-tests/qa.rs`.
pub fn qa_main() -> ExitCode {
    let args = Arguments::from_args();
    let cfg = match Config::from_env() {
        Ok(c) => c,
        Err(e) => return fail(&e.to_string()),
    };
    let apps = match super::load_qa_apps() {
        Ok(a) => Arc::new(a),
        Err(e) => return fail(&e.to_string()),
    };
    let plan = super::plan_qa(&apps, &cfg);
    let cfg = Arc::new(cfg);
    let trials: Vec<Trial> = plan
        .into_iter()
        .map(|p| {
            let apps = Arc::clone(&apps);
            let cfg = Arc::clone(&cfg);
            let skip = p.skip.clone();
            trial(p.name.clone(), skip.as_deref(), args.list, move || {
                run_qa(&apps[p.app], &p.capability, p.repeat, &cfg)
            })
        })
        .collect();
    run(args, trials)
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
    planned: crate::record::manifest::PlannedTrial,
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
    let run_dir = cfg.out_dir.join(crate::record::run_id());
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

fn run_qa(
    app: &LoadedApp,
    capability: &str,
    repeat: Option<u32>,
    cfg: &Config,
) -> Result<(), Failed> {
    let planned = crate::record::manifest::PlannedTrial::now(
        &crate::run::qa::trial_name(&app.app.name, capability, repeat),
        "qa",
        app.capability(capability).map(|c| c.kind),
    );
    let (rec, dir) = execute_trial(cfg, planned, |run_dir| async move {
        execute(app, capability, repeat, cfg, &run_dir).await
    })?;
    let failure =
        (!rec.verdict.passed).then(|| format!("{}: {}", rec.verdict.outcome, rec.verdict.reason));
    conclude(crate::record::summary_line(&rec), &dir, Vec::new(), failure)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::manifest::{self, PlannedTrial};

    #[test]
    fn a_trial_names_itself_in_the_manifest_before_anything_starts() {
        let out = tempfile::tempdir().unwrap();
        let cfg = Config {
            out_dir: out.path().to_path_buf(),
            ..Config::default()
        };
        for attempt in 1..=2usize {
            let planned = PlannedTrial::now("qa::app::cap", "qa", None);
            let seen = execute_trial(&cfg, planned, |run_dir| async move {
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
