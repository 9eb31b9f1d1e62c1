//! `gauntlet`: run trials, rescore records, write results pages.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use gauntlet::config::Config;
use gauntlet::record;

#[derive(Parser)]
#[command(
    name = "gauntlet",
    version,
    about = "Evaluate AI agents by what they observably do"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run every trial (configured by GAUNTLET_* variables; default: scripted model,
    /// reference agent) and write a results page.
    Run {
        /// Only trials whose name contains this.
        #[arg(long)]
        filter: Option<String>,
        /// Trials run at once.
        #[arg(long, default_value_t = 2)]
        jobs: usize,
    },
    /// List the trials the current config plans.
    List,
    /// Re-derive every verdict offline from recorded evidence; exit 1 on any disagreement.
    Rescore { path: PathBuf },
    /// Write report.md for a run directory.
    Report {
        run_dir: PathBuf,
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Test flows (docs/test-flows.md).
    Flow {
        #[command(subcommand)]
        command: FlowCommand,
    },
    /// Print an app's content hash (and with --check, compare it with app.json).
    HashApp {
        dir: PathBuf,
        #[arg(long)]
        check: bool,
    },
}

#[derive(Subcommand)]
enum FlowCommand {
    /// Run a flow against APP_URL / APP_BIN / EXTENSION_DIR: exit 0 when every step
    /// holds, 1 at the first that does not, 2 when the file is not a valid flow.
    Run { file: PathBuf },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Run { filter, jobs } => run(filter, jobs),
        Command::List => list(),
        Command::Rescore { path } => rescore(&path),
        Command::Report { run_dir, out } => report(&run_dir, out.as_deref()),
        Command::HashApp { dir, check } => hash_app(&dir, check),
        Command::Flow {
            command: FlowCommand::Run { file },
        } => gauntlet::flowtest::main(&file),
    }
}

fn error(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {msg}");
    ExitCode::from(2)
}

/// The config and the apps it plans over; both fail before anything starts.
fn load() -> Result<(Config, Vec<gauntlet::spec::LoadedApp>), String> {
    let cfg = Config::from_env().map_err(|e| e.to_string())?;
    let apps = gauntlet::plan::load_qa_apps().map_err(|e| e.to_string())?;
    Ok((cfg, apps))
}

fn list() -> ExitCode {
    let (cfg, apps) = match load() {
        Ok(x) => x,
        Err(e) => return error(e),
    };
    for p in gauntlet::plan::plan_qa(&apps, &cfg) {
        match p.skip {
            Some(why) => println!("{} (ignored: {why})", p.name),
            None => println!("{}", p.name),
        }
    }
    ExitCode::SUCCESS
}

fn run(filter: Option<String>, jobs: usize) -> ExitCode {
    let (cfg, apps) = match load() {
        Ok(x) => x,
        Err(e) => return error(e),
    };
    if let Err(e) = build_siblings() {
        return error(e);
    }
    for bin in ["gauntlet-agent"]
        .into_iter()
        .chain(apps.iter().map(|a| a.app.binary.as_str()))
    {
        let path = gauntlet::binaries::bin_path(bin);
        if !path.is_file() {
            return error(format!(
                "{} is missing: run `cargo build --bins` first",
                path.display()
            ));
        }
    }
    let plan: Vec<_> = gauntlet::plan::plan_qa(&apps, &cfg)
        .into_iter()
        .filter(|p| filter.as_deref().is_none_or(|f| p.name.contains(f)))
        .collect();
    let run_dir = cfg.out_dir.join(record::run_id());
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return error(e),
    };
    let sem = std::sync::Arc::new(tokio::sync::Semaphore::new(jobs.max(1)));
    let results = rt.block_on(async {
        let mut handles = Vec::new();
        for p in plan {
            if let Some(why) = &p.skip {
                println!("{:<44} ignored: {why}", p.name);
                continue;
            }
            let app = apps[p.app].clone();
            let cfg = cfg.clone();
            let run_dir = run_dir.clone();
            let sem = sem.clone();
            handles.push(tokio::spawn(async move {
                let _permit = sem.acquire_owned().await;
                gauntlet::run::qa::execute(&app, &p.capability, p.repeat, &cfg, &run_dir).await
            }));
        }
        let mut out = Vec::new();
        for h in handles {
            out.push(h.await);
        }
        out
    });
    let mut records = Vec::new();
    let mut failed = 0;
    for r in results {
        match r {
            Ok(Ok((rec, _))) => {
                println!("{}", gauntlet::run::summary_line(&rec));
                failed += usize::from(!rec.verdict.passed);
                records.push(rec);
            }
            Ok(Err(e)) => {
                eprintln!("error: {e}");
                failed += 1;
            }
            Err(e) => {
                eprintln!("error: trial task failed: {e}");
                failed += 1;
            }
        }
    }
    records.sort_by(|a, b| a.trial.cmp(&b.trial));
    let page = run_dir.join("report.md");
    if let Err(e) = std::fs::write(&page, gauntlet::report::qa_markdown(&run_dir, &records)) {
        return error(format!("{}: {e}", page.display()));
    }
    println!(
        "\n{} trials, {} not passed. Results page: {}",
        records.len(),
        failed,
        page.display()
    );
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn rescore(path: &std::path::Path) -> ExitCode {
    let files = match record::find_records(path) {
        Ok(f) if !f.is_empty() => f,
        Ok(_) => return error(format!("{}: no records found", path.display())),
        Err(e) => return error(e),
    };
    let rows: Vec<_> = files
        .iter()
        .map(|f| record::rescore::rescore_file(f))
        .collect();
    print!("{}", record::rescore::render_table(&rows));
    let bad = rows.iter().filter(|r| !r.agrees()).count();
    println!(
        "{} records, {} agree, {} disagree or unreadable",
        rows.len(),
        rows.len() - bad,
        bad
    );
    if bad == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn report(run_dir: &std::path::Path, out: Option<&std::path::Path>) -> ExitCode {
    let files = match record::find_records(run_dir) {
        Ok(f) => f,
        Err(e) => return error(e),
    };
    let mut records = Vec::new();
    for f in files {
        match record::load(&f) {
            Ok(r) => records.push(r),
            Err(e) => eprintln!("warning: skipped {e}"),
        }
    }
    records.sort_by(|a, b| a.trial.cmp(&b.trial));
    let out = out.unwrap_or(run_dir);
    if let Err(e) = std::fs::create_dir_all(out) {
        return error(format!("{}: {e}", out.display()));
    }
    let page = out.join("report.md");
    match std::fs::write(&page, gauntlet::report::qa_markdown(run_dir, &records)) {
        Ok(()) => {
            println!("{}", page.display());
            ExitCode::SUCCESS
        }
        Err(e) => error(format!("{}: {e}", page.display())),
    }
}

fn hash_app(dir: &std::path::Path, check: bool) -> ExitCode {
    let app = match gauntlet::spec::AppSpec::load(dir) {
        Ok(a) => a,
        Err(e) => return error(e),
    };
    let now = match app.compute_content_hash() {
        Ok(h) => h,
        Err(e) => return error(e),
    };
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

/// Under `cargo run`, build the apps and the reference agent too, so that the binaries
/// a run measures are never stale. (cargo releases its lock before running us.)
fn build_siblings() -> Result<(), String> {
    let Some(cargo) = std::env::var_os("CARGO") else {
        return Ok(());
    };
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let release = exe
        .parent()
        .and_then(|d| d.file_name())
        .is_some_and(|n| n == "release");
    let mut cmd = std::process::Command::new(cargo);
    cmd.args(["build", "--quiet", "--bins"]);
    if release {
        cmd.arg("--release");
    }
    cmd.current_dir(gauntlet::binaries::repo_root());
    let status = cmd
        .status()
        .map_err(|e| format!("cargo build --bins: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("cargo build --bins failed: {status}"))
    }
}
