//! `gauntlet run` and `gauntlet list`: the main job, through the one run lifecycle
//! ([`crate::harness`]) and run loop every entry point shares.

use std::path::PathBuf;
use std::process::ExitCode;

use super::exit::error;
use crate::config::Config;
use crate::harness::lifecycle;
use crate::record;

/// The config and every suite's data, loaded and checked.
pub(crate) fn load() -> Result<(Config, crate::plan::Suites), String> {
    lifecycle::load().map_err(|e| e.to_string())
}

/// One line of a listing: the trial's name, and why it is ignored here if it is.
pub(crate) fn print_planned(name: &str, skip: Option<&str>) {
    match skip {
        Some(why) => println!("{name} (ignored: {why})"),
        None => println!("{name}"),
    }
}

pub(crate) fn list() -> ExitCode {
    let (cfg, suites) = or_exit!(load());
    let no_browser = || lifecycle::no_browser(&cfg);
    for t in crate::suites::plan(&suites, &cfg, None, no_browser) {
        print_planned(&t.name, t.skip.as_deref());
    }
    ExitCode::SUCCESS
}

/// The run digest of what `run_dir` holds now (see `record::digest::run_digest`).
pub(crate) fn digest_of(run_dir: &std::path::Path) -> Result<String, String> {
    let files = record::find_records(run_dir).map_err(|e| e.to_string())?;
    let entries = files
        .iter()
        .map(|f| record::digest::DigestEntry::of(f))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    Ok(record::digest::run_digest(&entries))
}

/// Which run `gauntlet run` resumes, and whether only its trials the provider failed.
pub(crate) struct Resume {
    pub dir: Option<PathBuf>,
    pub retry_infra: bool,
}

pub(crate) fn run(
    filter: Option<String>,
    jobs: crate::harness::Jobs,
    resume: Resume,
    nextest_filter: bool,
) -> ExitCode {
    use crate::spec::Suite;
    // Every suite is loaded and planned before anything starts: bad data fails here,
    // and the whole plan goes into the run's manifest before the first trial.
    let (mut cfg, suites) = or_exit!(load());
    if resume.dir.is_some() {
        cfg.resume = resume.dir;
    }
    cfg.retry_infra |= resume.retry_infra;
    // From here on SIGINT/SIGTERM stops the run and keeps what it observed; a second
    // signal exits at once. The binaries are built before the run directory exists, so
    // a failed build leaves no empty run behind, and before the run's identity is taken.
    if !nextest_filter {
        crate::sys::shutdown::install();
        if let Err(e) = build_siblings() {
            return error(e);
        }
        if let Some(stop) = crate::sys::shutdown::requested() {
            return error(format!(
                "interrupted ({}) before any trial started",
                stop.name()
            ));
        }
    }
    if let Err(e) = crate::sys::helpers::check(&cfg) {
        return error(e);
    }
    // Taken after the build: the identity fingerprints the binaries the trials will run.
    let opened = or_exit!(lifecycle::open(&cfg, &suites));
    let (run_dir, unfinished) = (opened.run_dir, opened.unfinished);
    if nextest_filter {
        let terms: Vec<String> = unfinished
            .iter()
            .flatten()
            .map(|t| format!("test(={t})"))
            .collect();
        if terms.is_empty() {
            return error(if cfg.retry_infra {
                format!(
                    "{}: the provider failed no trial: nothing to run again",
                    run_dir.display()
                )
            } else {
                format!(
                    "{}: every planned trial has a finished record: nothing to resume",
                    run_dir.display()
                )
            });
        }
        println!("{}", terms.join(" | "));
        return ExitCode::SUCCESS;
    }
    for bin in crate::harness::identity::trial_binaries(&suites) {
        let path = crate::binaries::bin_path(bin);
        if !path.is_file() {
            return error(format!(
                "{} is missing: run `{BUILD}` first",
                path.display()
            ));
        }
    }
    let wanted = |name: &str| {
        filter.as_deref().is_none_or(|f| name.contains(f))
            && unfinished.as_ref().is_none_or(|u| u.contains(name))
    };
    let plan: Vec<_> = crate::suites::plan(&suites, &cfg, None, || lifecycle::no_browser(&cfg))
        .into_iter()
        .filter(|t| wanted(&t.name))
        .collect();
    if let Some(u) = &unfinished {
        // Same config and specs give the same plan; a trial the plan lacks is a bug
        // or a filter, and either way it is said.
        let named: std::collections::BTreeSet<&str> =
            plan.iter().map(|t| t.name.as_str()).collect();
        for t in u.iter().filter(|t| !named.contains(t.as_str())) {
            println!("{t:<44} not resumed: not in this plan (outside --filter)");
        }
        println!(
            "gauntlet: resuming {}: {} {}",
            run_dir.display(),
            plan.len(),
            if cfg.retry_infra {
                "trial(s) the provider failed, run again"
            } else {
                "unfinished trial(s)"
            }
        );
    }
    // A trial the provider failed finished: its rerun is an attempt of its own.
    let planned = lifecycle::planned_lines(&plan, unfinished.is_some() && !cfg.retry_infra);
    if let Err(e) = record::manifest::append(&run_dir, &planned) {
        return error(e);
    }
    for t in plan.iter() {
        if let Some(why) = &t.skip {
            println!("{:<44} ignored: {why}", t.name);
        }
    }
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return error(e),
    };
    let results = rt.block_on(crate::harness::run_all(
        std::sync::Arc::new(suites),
        &plan,
        std::sync::Arc::new(cfg.clone()),
        &run_dir,
        jobs,
    ));
    let mut failed = 0;
    let mut ran: std::collections::BTreeMap<Suite, usize> = Suite::ALL.map(|s| (s, 0)).into();
    for (name, r) in &results {
        match r {
            Ok(f) => {
                println!("{}", f.summary);
                failed += usize::from(f.failure.is_some() || f.interrupted.is_some());
                *ran.entry(f.suite).or_default() += 1;
            }
            Err(e) => {
                eprintln!("error: {name}: {e}");
                failed += 1;
            }
        }
    }
    // The pages are rendered from what is on disk, like `gauntlet report` does, so
    // the main job's page and a later report of the same run are the same page.
    let opts = crate::report::Options {
        prices: or_exit!(crate::report::PriceTable::load_default()),
        thresholds: Default::default(),
    };
    if let Err(e) = crate::report::write_report(&run_dir, &run_dir, &opts) {
        return error(e);
    }
    let page = run_dir.join(crate::report::REPORT_HTML);
    if crate::sys::shutdown::requested().is_none() {
        let notes = ran.iter().filter(|(_, n)| **n > 0);
        for note in notes.filter_map(|(s, _)| crate::suites::runner(*s).after_run(&run_dir)) {
            println!("{note}");
        }
    }
    // The digest pins every record as it is now: `gauntlet rescore <run dir> --digest`
    // with it catches any later rewrite of the run, however consistent.
    let digest = or_exit!(digest_of(&run_dir));
    let per_suite: Vec<String> = ran.iter().map(|(s, n)| format!("{n} {s}")).collect();
    println!(
        "\n{} trials ({}), {} not passed; run digest: {digest}; results page: {}",
        ran.values().sum::<usize>(),
        per_suite.join(", "),
        failed,
        page.display()
    );
    if let Some(stop) = crate::sys::shutdown::requested() {
        println!(
            "gauntlet: the run was interrupted ({}): trials in flight kept their partial evidence, the rest did not start; \
             `gauntlet run --resume {}` runs every unfinished trial",
            stop.name(),
            run_dir.display()
        );
        return ExitCode::from(stop.exit_code());
    }
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// How `gauntlet run` builds what its trials run: the build `cargo nextest run` and
/// `cargo test` make (every target, dev-dependencies' features unified), not a build
/// of the binaries alone, whose features differ and so whose app binaries differ. One
/// build then serves both entry points: a run started by one resumes under the other
/// (the run's identity fingerprints the binaries), and switching rebuilds nothing.
pub const BUILD: &str = "cargo test --no-run";

pub(crate) fn build_siblings() -> Result<(), String> {
    let Some(cargo) = std::env::var_os("CARGO") else {
        return Ok(());
    };
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let release = exe
        .parent()
        .and_then(|d| d.file_name())
        .is_some_and(|n| n == "release");
    let mut cmd = std::process::Command::new(cargo);
    cmd.args(["test", "--no-run", "--quiet"]);
    if release {
        cmd.arg("--release");
    }
    // As from the shell `cargo nextest run` is typed in: what `cargo run` set for this
    // process would make cargo rebuild (see `sys::cargo`), and relink every program a
    // run's identity fingerprints.
    crate::sys::cargo::as_from_the_shell(&mut cmd).current_dir(crate::binaries::repo_root());
    // Tied to the harness (it dies with it), and stopped with the run.
    let mut child = crate::sys::lifeline::spawn_std(cmd).map_err(|e| format!("{BUILD}: {e}"))?;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => {}
            Err(e) => return Err(format!("{BUILD}: {e}")),
        }
        if let Some(stop) = crate::sys::shutdown::requested() {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "{BUILD}: stopped: the run was interrupted ({})",
                stop.name()
            ));
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    if status.success() {
        Ok(())
    } else {
        Err(format!("{BUILD} failed: {status}"))
    }
}
