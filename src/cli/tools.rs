//! The maintainers' commands: an app's content hash, the tells audit and the
//! hackability audit.

use std::path::PathBuf;
use std::process::ExitCode;

use super::exit::error;
use super::run::{build_siblings, load};
use crate::config::Config;
use crate::record;

pub(crate) fn hash_app(dir: &std::path::Path, check: bool) -> ExitCode {
    let app = or_exit!(crate::spec::AppSpec::load(dir));
    let now = or_exit!(app.compute_content_hash());
    println!("{now}");
    if check && now != app.content_hash {
        eprintln!(
            "{}: content_hash is {}, content hashes to {now}",
            dir.join("app.json").display(),
            app.content_hash
        );
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

pub(crate) fn tells(names: &[String], runs: u32, json: Option<&std::path::Path>) -> ExitCode {
    use crate::suites::qa::tells;
    let cfg = or_exit!(Config::from_env());
    let apps = or_exit!(crate::plan::load_apps_checked(&cfg.apps_dir));
    let apps = or_exit!(tells::select(apps, names));
    if let Err(e) = build_siblings() {
        return error(e);
    }
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return error(format!("tokio runtime: {e}")),
    };
    let report = rt.block_on(tells::find(&apps, &cfg, runs));
    print!("{}", tells::render_table(&report));
    for (app, why) in report.errors() {
        eprintln!("error: app `{app}`: {why}");
    }
    if let Some(file) = json {
        let written = serde_json::to_vec_pretty(&report)
            .map_err(std::io::Error::other)
            .and_then(|bytes| std::fs::write(file, bytes));
        if let Err(e) = written {
            return error(format!("--json {}: {e}", file.display()));
        }
    }
    ExitCode::from(report.exit_code())
}

/// Under `cargo run`, build the apps and the reference agent too, so that the binaries
/// a run measures are never stale. (cargo releases its lock before running us.)
pub(crate) fn redteam(
    filter: Option<String>,
    adversaries: Vec<String>,
    sample: bool,
    reference: bool,
    jobs: usize,
    out: Option<PathBuf>,
    write_audited: bool,
) -> ExitCode {
    use crate::report::hackability as page;
    let (cfg, suites) = or_exit!(load());
    let catalogue = or_exit!(crate::spec::redteam::Catalogue::load(&cfg.redteam_dir));
    crate::sys::shutdown::install();
    if let Err(e) = build_siblings() {
        return error(e);
    }
    let out = out.unwrap_or_else(|| cfg.out_dir.join(format!("redteam-{}", record::run_id())));
    let opts = crate::redteam::Options {
        filter,
        adversaries,
        sample,
        reference,
        jobs: crate::harness::Jobs::PerLane(jobs),
        out: out.clone(),
    };
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return error(e),
    };
    let mut audit = match rt.block_on(crate::redteam::audit(
        &cfg,
        std::sync::Arc::new(suites),
        &catalogue,
        &opts,
    )) {
        Ok(a) => a,
        Err(e) => return error(e),
    };
    audit.made_with = [
        (
            "commit",
            record::gauntlet_commit(&cfg).unwrap_or_else(|| "unknown".into()),
        ),
        ("mode", format!("{:?}", cfg.mode).to_lowercase()),
        ("N", cfg.n.to_string()),
        ("M", cfg.independent_mutants.to_string()),
        ("scorecard seed", cfg.scorecard_seed.clone()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let json = out.join(crate::redteam::AUDIT_JSON);
    if let Err(e) = audit.write(&json) {
        return error(e);
    }
    for (name, text) in [
        (page::PAGE_MD, page::markdown(&audit)),
        (page::PAGE_HTML, page::html(&audit, true)),
    ] {
        let file = out.join(name);
        if let Err(e) = std::fs::write(&file, text) {
            return error(format!("{}: {e}", file.display()));
        }
    }
    print!("{}", page::markdown(&audit));
    if write_audited {
        let file = cfg.redteam_dir.join(record::hackability::AUDITED_FILE);
        if let Err(e) = audit.write(&file) {
            return error(e);
        }
        println!("{}", file.display());
    }
    println!("{}", out.join(page::PAGE_HTML).display());
    if audit.holds() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
