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

/// A trial's run on a runtime of its own, into a fresh run directory. An error means no
/// record could be written: the trial fails with its cause.
pub(crate) fn execute_trial<T, E, F>(
    cfg: &Config,
    go: impl FnOnce(PathBuf) -> F,
) -> Result<T, Failed>
where
    F: Future<Output = Result<T, E>>,
    E: std::fmt::Display,
{
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Failed::from(format!("tokio runtime: {e}")))?;
    let run_dir = cfg.out_dir.join(crate::record::run_id());
    rt.block_on(go(run_dir)).map_err(|e| {
        eprintln!("Error: {e}");
        Failed::from(e.to_string())
    })
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
    let (rec, dir) = execute_trial(cfg, |run_dir| async move {
        execute(app, capability, repeat, cfg, &run_dir).await
    })?;
    let failure =
        (!rec.verdict.passed).then(|| format!("{}: {}", rec.verdict.outcome, rec.verdict.reason));
    conclude(crate::run::summary_line(&rec), &dir, Vec::new(), failure)
}
