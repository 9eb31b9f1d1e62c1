//! The libtest-mimic entry point shared by the `benches-as-tests/` targets.

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
            let ignored = p.skip.is_some();
            if let (Some(why), true) = (&p.skip, args.list) {
                // Shown beside `--list`, where the ignore is decided; nextest ignores it.
                eprintln!("{}: ignored: {why}", p.name);
            }
            let apps = Arc::clone(&apps);
            let cfg = Arc::clone(&cfg);
            Trial::test(p.name, move || {
                run_qa(&apps[p.app], &p.capability, p.repeat, &cfg)
            })
            .with_ignored_flag(ignored)
        })
        .collect();
    run(args, trials)
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

fn fail(msg: &str) -> ExitCode {
    eprintln!("Error: {msg}");
    ExitCode::from(2)
}

fn run_qa(
    app: &LoadedApp,
    capability: &str,
    repeat: Option<u32>,
    cfg: &Config,
) -> Result<(), Failed> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Failed::from(format!("tokio runtime: {e}")))?;
    let run_dir = cfg.out_dir.join(crate::record::run_id());
    let (rec, dir) = rt
        .block_on(execute(app, capability, repeat, cfg, &run_dir))
        .map_err(|e| {
            eprintln!("Error: {e}");
            Failed::from(e.to_string())
        })?;
    println!("{}", crate::run::summary_line(&rec));
    println!(
        "gauntlet: record {}",
        dir.join(crate::record::RECORD_FILE).display()
    );
    if rec.verdict.passed {
        Ok(())
    } else {
        let msg = format!("{}: {}", rec.verdict.outcome, rec.verdict.reason);
        eprintln!("Error: {msg}");
        Err(Failed::from(msg))
    }
}
