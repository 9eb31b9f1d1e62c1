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
        /// Trials that compute run at most this many at once, browser trials as many
        /// beside them, scorecard probes (mostly idle windows) up to four times this
        /// many.
        #[arg(long, default_value_t = 2)]
        jobs: usize,
        /// One trial at a time, whatever its kind (a local model server that answers
        /// one call at a time: docs/local-model.md).
        #[arg(long, conflicts_with = "jobs")]
        serial: bool,
        /// Resume this run directory: run exactly its planned trials that have no
        /// finished record, under the run's recorded config (refused, naming the
        /// field, when the current config or specs differ), into the same directory.
        #[arg(long, value_name = "RUN_DIR")]
        resume: Option<PathBuf>,
        /// With --resume: print, instead of running, a nextest filter of those trials
        /// (`GAUNTLET_RESUME=DIR cargo nextest run -E "$(…)"` resumes under nextest).
        #[arg(long, requires = "resume")]
        nextest_filter: bool,
    },
    /// List the trials the current config plans.
    List,
    /// Re-derive every verdict offline from recorded evidence, verify every raw file
    /// against its recorded hash and a run's records against its manifest, and print
    /// the run digest; exit 1 on any disagreement, altered file, planned trial without
    /// a record or record nobody planned, and on a trial that started and never finished
    /// (interrupted) unless --partial.
    Rescore {
        path: PathBuf,
        /// The run is known to be partial (interrupted, to be resumed): trials that
        /// never finished or never started are still listed, but only disagreeing
        /// records, altered files and records nobody planned exit 1.
        #[arg(long)]
        partial: bool,
        /// The run digest printed when the run ended (`sha256:…`): exit 1 unless the
        /// records hash to it, so a consistent rewrite of the run is caught.
        #[arg(long)]
        digest: Option<String>,
    },
    /// Write report.md, report.html and summary.json for a run directory; exit 1 when
    /// some file of the run could not be counted (the pages name it).
    Report {
        run_dir: PathBuf,
        /// Where the pages go (default: the run directory).
        #[arg(long)]
        out: Option<PathBuf>,
        #[command(flatten)]
        opts: ReportArgs,
    },
    /// Copy a run into results/runs/<label>/ (never overwriting) and regenerate
    /// results/published/; with --regenerate, only regenerate it (after a change to
    /// the pages, or to the runs' audit).
    Publish {
        #[arg(required_unless_present = "regenerate")]
        run_dir: Option<PathBuf>,
        #[arg(long, required_unless_present = "regenerate")]
        label: Option<String>,
        /// Publish nothing new: rebuild results/published/ from results/runs/.
        #[arg(long, conflicts_with_all = ["run_dir", "label", "provider"])]
        regenerate: bool,
        /// The results directory (default: results/ at the repository root).
        #[arg(long)]
        results: Option<PathBuf>,
        /// What served the model, as you state it: a TOML file of `key = "value"`
        /// lines (server, model file and its hash, chat format, ...), shown on the
        /// run's pages as the publisher's statement, which gauntlet does not check
        /// (`tools/local-model/local-model.sh describe` writes one).
        #[arg(long, value_name = "FILE")]
        provider: Option<PathBuf>,
        #[command(flatten)]
        opts: ReportArgs,
    },
    /// Compare a candidate run with a baseline run of the same plan: verdict changes per
    /// trial, rate differences with 95% intervals, tokens, cost and wall-clock; print
    /// a markdown summary (for a pull-request comment) and with --out write
    /// compare.md, compare.html and compare.json. Exit 1 when the candidate regressed
    /// (docs/results.md says when), 2 when the runs cannot be compared.
    Compare {
        baseline: PathBuf,
        candidate: PathBuf,
        /// Where the pages go; never inside either run, which a comparison must not
        /// change.
        #[arg(long)]
        out: Option<PathBuf>,
        #[command(flatten)]
        opts: ReportArgs,
    },
    /// Export a run for the tools people already use: `inspect` (Inspect AI eval logs,
    /// one per suite, for `inspect view`), `ctrf` (a CTRF report for CI dashboards) or
    /// `atif` (one ATIF trajectory per trial). Never changes the run; the same run gives
    /// the same bytes.
    Export {
        run_dir: PathBuf,
        #[arg(long, value_enum)]
        format: gauntlet::report::export::Format,
        /// Where the files go; never inside the run.
        #[arg(long)]
        out: PathBuf,
        #[command(flatten)]
        opts: ReportArgs,
    },
    /// The metering proxy on its own, to meter an agent run by hand: point the agent's
    /// OPENAI_BASE_URL / ANTHROPIC_BASE_URL at it. Every call is appended to
    /// --usage-log as one JSON line when it ends; on SIGINT or SIGTERM it stops and
    /// prints the calls and tokens it metered.
    Proxy {
        /// `scripted` answers from the script --flow names; `byok` forwards to --upstream
        /// with the key from the variable GAUNTLET_API_KEY_ENV names (default
        /// OPENAI_API_KEY).
        #[arg(long, value_enum)]
        mode: ProxyModeArg,
        /// scripted: the script file (apps/<app>/flows/<capability>.json).
        #[arg(long = "flow", required_if_eq("mode", "scripted"))]
        script: Option<PathBuf>,
        /// byok: the provider's base URL ending in its API version (default
        /// GAUNTLET_UPSTREAM_URL, else https://api.openai.com/v1).
        #[arg(long)]
        upstream: Option<String>,
        /// A loopback address; port 0 picks a free port (printed on start).
        #[arg(long, default_value = "127.0.0.1:0")]
        listen: std::net::SocketAddr,
        /// A new file for the usage log (JSON lines); never overwritten.
        #[arg(long)]
        usage_log: Option<PathBuf>,
        /// Refuse every call once this many input + output tokens were metered.
        #[arg(long)]
        max_tokens: Option<u64>,
        /// Threads that serve agents' connections (default: one per core); each
        /// connection stays on one.
        #[arg(long)]
        threads: Option<std::num::NonZeroUsize>,
    },
    /// Merge partitions of one run (nextest --partition) into a new run directory;
    /// refuses runs made with different configs or specs.
    Merge {
        #[arg(required = true)]
        run_dirs: Vec<PathBuf>,
        #[arg(long)]
        out: PathBuf,
        /// Merge although a partition of the run is missing (recorded in merge.json).
        #[arg(long)]
        allow_missing: bool,
    },
    /// Aggregate scorecard probe records into one row per agent run and append them to
    /// the leaderboard in --out (leaderboard.md in the seed's format, leaderboard.json);
    /// exit 1 when some repeats with one seed differ by more than 1.
    Leaderboard {
        #[arg(required = true)]
        run_dirs: Vec<PathBuf>,
        #[arg(long)]
        out: PathBuf,
    },
    /// Test flows (docs/test-flows.md).
    Flow {
        #[command(subcommand)]
        command: FlowCommand,
    },
    /// The challenge suite (challenges/<id>/): list, or run one trial.
    Challenge {
        #[command(subcommand)]
        command: ChallengeCommand,
    },
    /// Record a manual audit of a challenge trial (manual-audit.yaml, authoritative; a
    /// second audit supersedes the first and keeps it in the history).
    Audit {
        /// The trial directory (the one holding record.json).
        trial_dir: PathBuf,
        /// success, failed, timeout, parse_error or unknown.
        #[arg(long)]
        outcome: String,
        /// clean, contaminated or unauditable.
        #[arg(long)]
        validity: String,
        #[arg(long)]
        note: String,
    },
    /// Audit the tasks for hackability: run every adversary of the catalogue
    /// (redteam/catalogue.toml) as an agent against every planned task, beside the
    /// do-nothing floor and the scripted reference, and write the table
    /// (hackability.md, hackability.html, hackability.json) into --out. Exit 1 when a
    /// task is hackable (an adversary credited where doing nothing is not), the
    /// reference does not solve a task, or an adversary altered the harness's records
    /// (docs/redteam.md).
    Redteam {
        /// Only tasks whose trial name contains this.
        #[arg(long)]
        filter: Option<String>,
        /// Only this adversary (repeatable); the floor always runs.
        #[arg(long = "adversary", value_name = "ID")]
        adversaries: Vec<String>,
        /// Only the catalogue's sample (what CI runs on every task).
        #[arg(long)]
        sample: bool,
        /// Skip the reference's run (the solvability column).
        #[arg(long)]
        no_reference: bool,
        /// Trials at once per lane, as `gauntlet run --jobs`.
        #[arg(long, default_value_t = 2)]
        jobs: usize,
        /// The audit's directory (default: a new redteam-<run id> beside the runs).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Also write the audit as the repository's audit of its tasks
        /// (redteam/audited.json), which every run records and its pages show; only
        /// for an audit of every planned task by every adversary asked for.
        #[arg(long, conflicts_with_all = ["filter", "no_reference", "sample", "adversaries"])]
        write_audited: bool,
    },
    /// Find tells: start each app R times and each of its mutants once, as the gate
    /// starts a target, probe each from inside the gate's sandbox (CLI output, HTTP
    /// answers and headers, artifacts, environment, /proc, timing), and print every
    /// difference between the app and a mutant beyond the app's own run-to-run spread
    /// (docs/adding-an-app.md, "Finding tells"). Exit 1 when an app has a tell, 2 when
    /// an app could not be probed.
    Tells {
        /// Apps to probe (default: every app of the apps dir that is not superseded).
        apps: Vec<String>,
        /// Runs of each app: what varies between them is volatile, not a tell.
        #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
        runs: u32,
        /// Write every finding (and the timing samples) to this JSON file.
        #[arg(long, value_name = "FILE")]
        json: Option<PathBuf>,
    },
    /// The tell finder's probe, run inside a gate sandbox: print one JSON object of
    /// what a test can observe about APP_URL / APP_BIN / the locator mount.
    #[command(hide = true)]
    TellsProbe {
        /// A documented request, `METHOD /path` or `/path`; repeatable.
        #[arg(long)]
        endpoint: Vec<String>,
        /// A subcommand word of a CLI app; repeatable.
        #[arg(long)]
        word: Vec<String>,
        /// The target's locator mount, whose files are artifacts.
        #[arg(long)]
        artifacts: Option<PathBuf>,
    },
    /// Print an app's content hash (and with --check, compare it with app.json).
    HashApp {
        dir: PathBuf,
        #[arg(long)]
        check: bool,
    },
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum ProxyModeArg {
    Scripted,
    Byok,
}

#[derive(Subcommand)]
enum ChallengeCommand {
    /// List the challenge trials the current config plans.
    List,
    /// Run one challenge under exactly one instruction profile; exit 0 when the task
    /// succeeded on a clean trial, 1 otherwise, 2 when it could not be run.
    Run {
        id: String,
        /// none, skills or all: exactly one per invocation.
        #[arg(long)]
        instruction_profile: String,
        /// The hard ceiling in seconds (default: the manifest's, else
        /// GAUNTLET_CHALLENGE_TIMEOUT_SECS, else 3600).
        #[arg(long)]
        timeout_secs: Option<String>,
    },
    /// Print a markdown table of a run directory's challenge trials (manual audits
    /// authoritative).
    Report { run_dir: PathBuf },
}

#[derive(Subcommand)]
enum FlowCommand {
    /// Run a flow against APP_URL / APP_BIN / EXTENSION_DIR: exit 0 when every step
    /// holds, 1 at the first that does not, 2 when the file is not a valid flow.
    Run { file: PathBuf },
}

/// What a report is computed with besides the records.
#[derive(clap::Args)]
struct ReportArgs {
    /// Price table (TOML, USD per 1M tokens per model; default: prices.toml at the
    /// repository root).
    #[arg(long, env = "GAUNTLET_PRICES")]
    prices: Option<PathBuf>,
    /// Pass threshold PATTERN=NEED/OF (`*`, `app::*` or `app::capability`), e.g.
    /// `*=3/3`; repeatable, or comma-separated in GAUNTLET_THRESHOLDS.
    #[arg(long = "threshold", env = "GAUNTLET_THRESHOLDS", value_delimiter = ',')]
    thresholds: Vec<String>,
}

impl ReportArgs {
    fn options(&self) -> Result<gauntlet::report::Options, String> {
        let prices = match &self.prices {
            Some(f) => gauntlet::report::PriceTable::load(f),
            None => gauntlet::report::PriceTable::load_default(),
        }
        .map_err(|e| e.to_string())?;
        let thresholds =
            gauntlet::report::Thresholds::parse_all(&self.thresholds).map_err(|e| e.to_string())?;
        Ok(gauntlet::report::Options { prices, thresholds })
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Run {
            filter,
            jobs,
            serial,
            resume,
            nextest_filter,
        } => run(
            filter,
            if serial {
                gauntlet::harness::Jobs::Serial
            } else {
                gauntlet::harness::Jobs::PerLane(jobs)
            },
            resume,
            nextest_filter,
        ),
        Command::List => list(),
        Command::Rescore {
            path,
            digest,
            partial,
        } => rescore(&path, digest.as_deref(), partial),
        Command::Report { run_dir, out, opts } => report(&run_dir, out.as_deref(), &opts),
        Command::Publish {
            run_dir,
            label,
            regenerate: _,
            results,
            provider,
            opts,
        } => match run_dir.zip(label) {
            Some((run_dir, label)) => {
                publish(&run_dir, &label, results, provider.as_deref(), &opts)
            }
            None => regenerate_published(results, &opts),
        },
        Command::Compare {
            baseline,
            candidate,
            out,
            opts,
        } => compare(&baseline, &candidate, out.as_deref(), &opts),
        Command::Export {
            run_dir,
            format,
            out,
            opts,
        } => export(&run_dir, format, &out, &opts),
        Command::Proxy {
            mode,
            script,
            upstream,
            listen,
            usage_log,
            max_tokens,
            threads,
        } => proxy(
            mode, script, upstream, listen, usage_log, max_tokens, threads,
        ),
        Command::Merge {
            run_dirs,
            out,
            allow_missing,
        } => merge(&run_dirs, &out, allow_missing),
        Command::Leaderboard { run_dirs, out } => leaderboard(&run_dirs, &out),
        Command::HashApp { dir, check } => hash_app(&dir, check),
        Command::Tells { apps, runs, json } => tells(&apps, runs, json.as_deref()),
        Command::Redteam {
            filter,
            adversaries,
            sample,
            no_reference,
            jobs,
            out,
            write_audited,
        } => redteam(
            filter,
            adversaries,
            sample,
            !no_reference,
            jobs,
            out,
            write_audited,
        ),
        Command::TellsProbe {
            endpoint,
            word,
            artifacts,
        } => gauntlet::suites::qa::tells::probe::main(
            &gauntlet::suites::qa::tells::probe::ProbeArgs {
                endpoints: endpoint,
                words: word,
                artifacts,
            },
        ),
        Command::Challenge {
            command: ChallengeCommand::List,
        } => challenge_list(),
        Command::Challenge {
            command: ChallengeCommand::Report { run_dir },
        } => match gauntlet::report::challenge::run_table(&run_dir) {
            Ok(t) => {
                print!("{t}");
                ExitCode::SUCCESS
            }
            Err(e) => error(e),
        },
        Command::Challenge {
            command:
                ChallengeCommand::Run {
                    id,
                    instruction_profile,
                    timeout_secs,
                },
        } => challenge_run(&id, &instruction_profile, timeout_secs.as_deref()),
        Command::Audit {
            trial_dir,
            outcome,
            validity,
            note,
        } => audit(&trial_dir, &outcome, &validity, &note),
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
/// The config and every suite's data, loaded and checked.
fn load() -> Result<(Config, gauntlet::plan::Suites), String> {
    let cfg = Config::from_env().map_err(|e| e.to_string())?;
    let suites = gauntlet::plan::Suites::load(&cfg).map_err(|e| e.to_string())?;
    Ok((cfg, suites))
}

/// One line of a listing: the trial's name, and why it is ignored here if it is.
fn print_planned(name: &str, skip: Option<&str>) {
    match skip {
        Some(why) => println!("{name} (ignored: {why})"),
        None => println!("{name}"),
    }
}

fn list() -> ExitCode {
    let (cfg, suites) = match load() {
        Ok(x) => x,
        Err(e) => return error(e),
    };
    let no_browser = || gauntlet::harness::no_browser(&cfg);
    for t in gauntlet::plan::plan(&suites, &cfg, None, no_browser) {
        print_planned(&t.name, t.skip.as_deref());
    }
    ExitCode::SUCCESS
}

/// The run digest of what `run_dir` holds now (see `record::digest::run_digest`).
fn digest_of(run_dir: &std::path::Path) -> Result<String, String> {
    let files = record::find_records(run_dir).map_err(|e| e.to_string())?;
    let entries = files
        .iter()
        .map(|f| record::digest::DigestEntry::of(f))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    Ok(record::digest::run_digest(&entries))
}

fn run(
    filter: Option<String>,
    jobs: gauntlet::harness::Jobs,
    resume: Option<PathBuf>,
    nextest_filter: bool,
) -> ExitCode {
    use gauntlet::spec::Suite;
    // Every suite is loaded and planned before anything starts: bad data fails here,
    // and the whole plan goes into the run's manifest before the first trial.
    let (mut cfg, suites) = match load() {
        Ok(x) => x,
        Err(e) => return error(e),
    };
    if resume.is_some() {
        cfg.resume = resume;
    }
    // From here on SIGINT/SIGTERM stops the run and keeps what it observed; a second
    // signal exits at once. The binaries are built before the run directory exists, so
    // a failed build leaves no empty run behind, and before the run's identity is taken.
    if !nextest_filter {
        gauntlet::sys::shutdown::install();
        if let Err(e) = build_siblings() {
            return error(e);
        }
        if let Some(stop) = gauntlet::sys::shutdown::requested() {
            return error(format!(
                "interrupted ({}) before any trial started",
                stop.name()
            ));
        }
    }
    // Taken after the build: the identity fingerprints the binaries the trials will run.
    let identity = match gauntlet::harness::run_identity(&cfg, &suites) {
        Ok(id) => id,
        Err(e) => return error(format!("cannot take the run's identity: {e}")),
    };
    let (run_dir, resuming) = match gauntlet::harness::open_run(&cfg, Some(&identity)) {
        Ok(x) => x,
        Err(e) => return error(e),
    };
    let unfinished = if resuming {
        match gauntlet::harness::unfinished_trials(&run_dir) {
            Ok(u) => Some(u),
            Err(e) => return error(e),
        }
    } else {
        None
    };
    if nextest_filter {
        let trials = unfinished.unwrap_or_default();
        if trials.is_empty() {
            return error(format!(
                "{}: every planned trial has a finished record: nothing to resume",
                run_dir.display()
            ));
        }
        let terms: Vec<String> = trials.iter().map(|t| format!("test(={t})")).collect();
        println!("{}", terms.join(" | "));
        return ExitCode::SUCCESS;
    }
    let app_bins = suites.apps.iter().filter_map(|a| match &a.app.start {
        gauntlet::spec::app::AppStart::Binary(b) => Some(b.as_str()),
        gauntlet::spec::app::AppStart::Command(_) => None,
    });
    for bin in ["gauntlet-agent", gauntlet::sys::lifeline::REAPER]
        .into_iter()
        .chain(app_bins)
    {
        let path = gauntlet::binaries::bin_path(bin);
        if !path.is_file() {
            return error(format!(
                "{} is missing: run `cargo build --bins` first",
                path.display()
            ));
        }
    }
    let wanted = |name: &str| {
        filter.as_deref().is_none_or(|f| name.contains(f))
            && unfinished.as_ref().is_none_or(|u| u.contains(name))
    };
    let plan: Vec<_> =
        gauntlet::plan::plan(&suites, &cfg, None, || gauntlet::harness::no_browser(&cfg))
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
            "gauntlet: resuming {}: {} unfinished trial(s)",
            run_dir.display(),
            plan.len()
        );
    }
    let planned: Vec<_> = plan
        .iter()
        .filter(|t| t.skip.is_none())
        .map(|t| {
            let line = gauntlet::harness::manifest_line(t);
            if resuming {
                line.resuming()
            } else {
                line
            }
        })
        .collect();
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
    let results = rt.block_on(gauntlet::harness::run_all(
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
    let opts = gauntlet::report::Options {
        prices: match gauntlet::report::PriceTable::load_default() {
            Ok(p) => p,
            Err(e) => return error(e),
        },
        thresholds: Default::default(),
    };
    if let Err(e) = gauntlet::report::write_report(&run_dir, &run_dir, &opts) {
        return error(e);
    }
    let page = run_dir.join(gauntlet::report::REPORT_HTML);
    if ran[&Suite::Scorecard] > 0 && gauntlet::sys::shutdown::requested().is_none() {
        println!(
            "Scorecard: on the results page; append it to a leaderboard with \
             `gauntlet leaderboard {} --out <dir>`",
            run_dir.display()
        );
    }
    // The digest pins every record as it is now: `gauntlet rescore <run dir> --digest`
    // with it catches any later rewrite of the run, however consistent.
    let digest = match digest_of(&run_dir) {
        Ok(d) => d,
        Err(e) => return error(e),
    };
    println!(
        "\n{} trials ({} qa, {} challenge, {} scorecard), {} not passed; run digest: {digest}; results page: {}",
        ran.values().sum::<usize>(),
        ran[&Suite::Qa],
        ran[&Suite::Challenge],
        ran[&Suite::Scorecard],
        failed,
        page.display()
    );
    if let Some(stop) = gauntlet::sys::shutdown::requested() {
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

fn rescore(path: &std::path::Path, expected: Option<&str>, partial: bool) -> ExitCode {
    use record::rescore::ManifestState;
    if let Some(d) = expected.filter(|d| !record::digest::is_digest(d)) {
        return error(format!(
            "--digest `{d}`: expected sha256: and 64 lowercase hex digits"
        ));
    }
    let r = match record::rescore::rescore_path(path) {
        Ok(r) => r,
        Err(e) => return error(e),
    };
    let planned_nothing = !matches!(r.manifest, ManifestState::Present { .. });
    if r.rows.is_empty() && r.findings.is_empty() && planned_nothing && expected.is_none() {
        return error(format!("{}: no records found", path.display()));
    }
    print!("{}", record::rescore::render_run(&r));
    let mut ok = if partial { r.ok_partial() } else { r.ok() };
    if partial && !r.ok() && ok {
        println!("--partial: the run is incomplete, as its user said");
    }
    if let Some(want) = expected {
        if want == r.digest {
            println!("run digest matches --digest");
        } else {
            println!(
                "DIGEST MISMATCH: the records hash to {}, not {want}: the run was changed after it ended",
                r.digest
            );
            ok = false;
        }
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn report(run_dir: &std::path::Path, out: Option<&std::path::Path>, args: &ReportArgs) -> ExitCode {
    let opts = match args.options() {
        Ok(o) => o,
        Err(e) => return error(e),
    };
    let out = out.unwrap_or(run_dir);
    match gauntlet::report::write_report(run_dir, out, &opts) {
        Ok(pages) => {
            for p in &pages.summary.problems {
                eprintln!("warning: {}: {}", run_dir.join(&p.file).display(), p.cause);
            }
            for name in [
                gauntlet::report::REPORT_MD,
                gauntlet::report::REPORT_HTML,
                gauntlet::report::SUMMARY_JSON,
            ] {
                println!("{}", out.join(name).display());
            }
            if pages.summary.problems.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => error(e),
    }
}

fn publish(
    run_dir: &std::path::Path,
    label: &str,
    results: Option<PathBuf>,
    provider: Option<&std::path::Path>,
    args: &ReportArgs,
) -> ExitCode {
    let opts = match args.options() {
        Ok(o) => o,
        Err(e) => return error(e),
    };
    let statement = match provider
        .map(gauntlet::report::provider::read_toml)
        .transpose()
    {
        Ok(s) => s,
        Err(e) => return error(e),
    };
    let results = results.unwrap_or_else(gauntlet::report::publish::default_results_dir);
    match gauntlet::report::publish::publish(run_dir, &results, label, statement.as_ref(), &opts) {
        Ok(dest) => {
            println!("published {}", dest.display());
            println!(
                "pages     {}",
                results
                    .join(gauntlet::report::publish::PUBLISHED_DIR)
                    .display()
            );
            ExitCode::SUCCESS
        }
        Err(e) => error(e),
    }
}

fn regenerate_published(results: Option<PathBuf>, args: &ReportArgs) -> ExitCode {
    let opts = match args.options() {
        Ok(o) => o,
        Err(e) => return error(e),
    };
    let results = results.unwrap_or_else(gauntlet::report::publish::default_results_dir);
    match gauntlet::report::publish::regenerate_published(&results, &opts) {
        Ok(pages) => {
            println!("pages     {}", pages.display());
            ExitCode::SUCCESS
        }
        Err(e) => error(e),
    }
}

fn leaderboard(run_dirs: &[PathBuf], out: &std::path::Path) -> ExitCode {
    use gauntlet::report::leaderboard;
    let entries = match leaderboard::collect(run_dirs) {
        Ok(e) => e,
        Err(e) => return error(e),
    };
    match leaderboard::append(out, entries) {
        Ok(all) => {
            print!("{}", leaderboard::render_markdown(&all));
            println!(
                "wrote {} and {}",
                out.join(leaderboard::LEADERBOARD_MD).display(),
                out.join(leaderboard::LEADERBOARD_JSON).display()
            );
            let flagged = all
                .iter()
                .any(|e| e.notes.iter().any(|n| n.starts_with("not reproducible")));
            if flagged {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(e) => error(e),
    }
}

fn compare(
    baseline: &std::path::Path,
    candidate: &std::path::Path,
    out: Option<&std::path::Path>,
    args: &ReportArgs,
) -> ExitCode {
    use gauntlet::report::compare;
    let opts = match args.options() {
        Ok(o) => o,
        Err(e) => return error(e),
    };
    if let Some(out) = out {
        for run in [baseline, candidate] {
            if gauntlet::report::is_within(out, run) {
                return error(format!(
                    "--out {}: inside the run {}, which a comparison must not change",
                    out.display(),
                    run.display()
                ));
            }
        }
    }
    let c = match compare::compare(baseline, candidate, &opts) {
        Ok(c) => c,
        // A candidate that cannot be read fails a gate like a regression would.
        Err(e) if e.fails_the_candidate() => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
        Err(e) => return error(e),
    };
    print!("{}", compare::render::markdown(&c));
    if let Some(out) = out {
        if let Err(e) = compare::render::write(&c, out) {
            return error(e);
        }
        for name in [
            compare::COMPARE_MD,
            compare::COMPARE_HTML,
            compare::COMPARE_JSON,
        ] {
            eprintln!("wrote {}", out.join(name).display());
        }
    }
    if c.regression {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn export(
    run_dir: &std::path::Path,
    format: gauntlet::report::export::Format,
    out: &std::path::Path,
    args: &ReportArgs,
) -> ExitCode {
    let opts = match args.options() {
        Ok(o) => o,
        Err(e) => return error(e),
    };
    match gauntlet::report::export::export(run_dir, format, out, &opts) {
        Ok(done) => {
            for p in &done.problems {
                eprintln!(
                    "warning: {}: {} (left out of the export)",
                    run_dir.join(&p.file).display(),
                    p.cause
                );
            }
            for f in &done.files {
                println!("{}", f.display());
            }
            ExitCode::SUCCESS
        }
        Err(e) => error(e),
    }
}

fn proxy(
    mode: ProxyModeArg,
    script: Option<PathBuf>,
    upstream: Option<String>,
    listen: std::net::SocketAddr,
    usage_log: Option<PathBuf>,
    max_tokens: Option<u64>,
    threads: Option<std::num::NonZeroUsize>,
) -> ExitCode {
    use gauntlet::proxy::{Budget, Proxy, ProxyMode};
    let cfg = match Config::from_env() {
        Ok(c) => c,
        Err(e) => return error(e),
    };
    let mode = match mode {
        ProxyModeArg::Scripted => {
            let Some(file) = script else {
                return error("--mode scripted needs --flow");
            };
            match gauntlet::spec::Script::load(&file) {
                Ok(script) => ProxyMode::Scripted {
                    script,
                    model: cfg.model.clone(),
                },
                Err(e) => return error(e),
            }
        }
        ProxyModeArg::Byok => match cfg.provider_key() {
            Ok(api_key) => ProxyMode::Byok {
                upstream: upstream
                    .map(|u| u.trim_end_matches('/').to_owned())
                    .unwrap_or_else(|| cfg.upstream_url.clone()),
                api_key,
            },
            Err(e) => return error(e),
        },
    };
    // Created before the proxy starts, and never over an earlier log.
    let log_file = match &usage_log {
        Some(f) => match std::fs::OpenOptions::new()
            .create_new(true)
            .append(true)
            .open(f)
        {
            Ok(file) => Some(file),
            Err(e) => return error(format!("--usage-log {}: {e}", f.display())),
        },
        None => None,
    };
    let threads = threads.unwrap_or_else(|| {
        std::thread::available_parallelism().unwrap_or(std::num::NonZeroUsize::MIN)
    });
    // Accepting and waiting for a signal only: the proxy serves on threads of its own.
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return error(format!("cannot start the runtime: {e}")),
    };
    rt.block_on(async move {
        use std::io::Write;
        use tokio::signal::unix::{signal, SignalKind};
        let (Ok(mut int), Ok(mut term)) = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) else {
            return error("cannot listen for SIGINT and SIGTERM");
        };
        let p = match Proxy::start_on(listen, mode, Budget { max_tokens }, threads).await {
            Ok(p) => p,
            Err(e) => return error(format!("--listen {listen}: {e}")),
        };
        // The usage log is this command's record; no transcript is written, so no
        // bodies are kept for one.
        p.keep_no_calls();
        if let Some(file) = log_file {
            p.log_usage_to(file);
        }
        println!("gauntlet proxy listening on {}", p.root_url());
        println!("OPENAI_BASE_URL={}", p.base_url());
        println!("ANTHROPIC_BASE_URL={}", p.root_url());
        let _ = std::io::stdout().flush();
        tokio::select! {
            _ = int.recv() => {}
            _ = term.recv() => {}
        }
        let (totals, log_error) = p.shutdown_with_totals().await;
        print!("{totals}");
        if let Some(f) = &usage_log {
            println!("usage log: {}", f.display());
        }
        match log_error {
            Some(e) => {
                eprintln!(
                    "error: --usage-log: a write failed ({e}); the summary above counts every call"
                );
                ExitCode::FAILURE
            }
            None => ExitCode::SUCCESS,
        }
    })
}

fn merge(run_dirs: &[PathBuf], out: &std::path::Path, allow_missing: bool) -> ExitCode {
    let options = record::merge::MergeOptions {
        allow_missing_partitions: allow_missing,
    };
    match record::merge::merge_runs_with(run_dirs, out, options) {
        Ok(m) => {
            for i in &m.inputs {
                let placed = i.placement.as_ref().map_or(String::new(), |p| {
                    let part = p.partition.as_deref().unwrap_or("unpartitioned");
                    format!(" ({part} on {})", p.host)
                });
                println!("{}: {} trial directories{placed}", i.path, i.trial_dirs);
            }
            for p in &m.missing_partitions {
                println!("warning: partition {p} is missing from the merged run");
            }
            println!("merged into {}", out.display());
            ExitCode::SUCCESS
        }
        Err(e) => error(e),
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

fn tells(names: &[String], runs: u32, json: Option<&std::path::Path>) -> ExitCode {
    use gauntlet::suites::qa::tells;
    let cfg = match Config::from_env() {
        Ok(c) => c,
        Err(e) => return error(e),
    };
    let apps = match gauntlet::plan::load_apps_checked(&cfg.apps_dir) {
        Ok(a) => a,
        Err(e) => return error(e),
    };
    let apps = match tells::select(apps, names) {
        Ok(a) => a,
        Err(e) => return error(e),
    };
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
fn redteam(
    filter: Option<String>,
    adversaries: Vec<String>,
    sample: bool,
    reference: bool,
    jobs: usize,
    out: Option<PathBuf>,
    write_audited: bool,
) -> ExitCode {
    use gauntlet::report::hackability as page;
    let (cfg, suites) = match load() {
        Ok(x) => x,
        Err(e) => return error(e),
    };
    let catalogue = match gauntlet::spec::redteam::Catalogue::load(&cfg.redteam_dir) {
        Ok(c) => c,
        Err(e) => return error(e),
    };
    gauntlet::sys::shutdown::install();
    if let Err(e) = build_siblings() {
        return error(e);
    }
    let out = out.unwrap_or_else(|| cfg.out_dir.join(format!("redteam-{}", record::run_id())));
    let opts = gauntlet::redteam::Options {
        filter,
        adversaries,
        sample,
        reference,
        jobs: gauntlet::harness::Jobs::PerLane(jobs),
        out: out.clone(),
    };
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return error(e),
    };
    let mut audit = match rt.block_on(gauntlet::redteam::audit(
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
            record::gauntlet_commit(&cfg.out_dir).unwrap_or_else(|| "unknown".into()),
        ),
        ("mode", format!("{:?}", cfg.mode).to_lowercase()),
        ("N", cfg.n.to_string()),
        ("M", cfg.independent_mutants.to_string()),
        ("scorecard seed", cfg.scorecard_seed.clone()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let json = out.join(gauntlet::redteam::AUDIT_JSON);
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
    // Tied to the harness (it dies with it), and stopped with the run.
    let mut child =
        gauntlet::sys::lifeline::spawn_std(cmd).map_err(|e| format!("cargo build --bins: {e}"))?;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => {}
            Err(e) => return Err(format!("cargo build --bins: {e}")),
        }
        if let Some(stop) = gauntlet::sys::shutdown::requested() {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "cargo build --bins: stopped: the run was interrupted ({})",
                stop.name()
            ));
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    if status.success() {
        Ok(())
    } else {
        Err(format!("cargo build --bins failed: {status}"))
    }
}

fn challenge_list() -> ExitCode {
    let cfg = match Config::from_env() {
        Ok(c) => c,
        Err(e) => return error(e),
    };
    let loaded = match gauntlet::plan::challenge::load(&cfg.challenges_dir, &cfg.apps_dir) {
        Ok(l) => l,
        Err(e) => return error(e),
    };
    let no_browser = loaded
        .needs_browser()
        .then(|| gauntlet::harness::no_browser(&cfg))
        .flatten();
    for t in gauntlet::plan::challenge::plan(&loaded, &cfg, no_browser.as_deref()) {
        print_planned(&t.name, t.skip.as_deref());
    }
    ExitCode::SUCCESS
}

fn challenge_run(id: &str, profile: &str, timeout_secs: Option<&str>) -> ExitCode {
    use gauntlet::spec::challenge::Profile;
    let profile: Profile = match profile.parse() {
        Ok(p) => p,
        Err(e) => return error(format!("--instruction-profile: {e}")),
    };
    let timeout = match timeout_secs.map(gauntlet::config::positive_secs) {
        None => None,
        Some(Ok(t)) => Some(t),
        Some(Err(e)) => return error(format!("--timeout-secs: {e}")),
    };
    let cfg = match Config::from_env() {
        Ok(c) => c,
        Err(e) => return error(e),
    };
    // Everything is validated before any workspace exists.
    let loaded = match gauntlet::plan::challenge::load(&cfg.challenges_dir, &cfg.apps_dir) {
        Ok(l) => l,
        Err(e) => return error(e),
    };
    let Some(challenge) = loaded.challenges.get(id) else {
        let ids: Vec<&str> = loaded
            .challenges
            .list
            .iter()
            .map(|c| c.manifest.id.as_str())
            .collect();
        return error(format!(
            "no challenge `{id}` (there are: {})",
            ids.join(", ")
        ));
    };
    let Some(app) = loaded
        .apps
        .iter()
        .find(|a| a.name == challenge.manifest.app)
    else {
        return error(format!(
            "challenge `{id}`: no app `{}`",
            challenge.manifest.app
        ));
    };
    if let Err(e) = build_siblings() {
        return error(e);
    }
    let rt = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => return error(format!("tokio runtime: {e}")),
    };
    let run_dir = cfg.out_dir.join(record::run_id());
    let planned = record::manifest::PlannedTrial::now(
        &gauntlet::plan::names::challenge(id, profile),
        "challenge",
        None,
    );
    if let Err(e) = record::manifest::append(&run_dir, &[planned]) {
        return error(e);
    }
    let opts = gauntlet::suites::challenge::Options {
        timeout,
        script: None,
    };
    match rt.block_on(gauntlet::suites::challenge::execute(
        &loaded.challenges,
        challenge,
        app,
        profile,
        &cfg,
        &opts,
        &run_dir,
    )) {
        Err(e) => error(e),
        Ok((rec, dir)) => {
            gauntlet::report::challenge::write_reports_after_trial(&dir, &rec);
            println!("{}", gauntlet::record::challenge::summary_line(&rec));
            println!("trial directory: {}", dir.display());
            if rec.verdict.passed {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

fn audit(trial_dir: &std::path::Path, outcome: &str, validity: &str, note: &str) -> ExitCode {
    let outcome = match outcome.parse() {
        Ok(o) => o,
        Err(e) => return error(format!("--outcome: {e}")),
    };
    let validity = match validity.parse() {
        Ok(v) => v,
        Err(e) => return error(format!("--validity: {e}")),
    };
    match gauntlet::report::challenge::audit(trial_dir, outcome, validity, note) {
        Ok(a) => {
            println!(
                "{}: audited {} / {} ({} earlier audit(s) kept)",
                a.trial,
                a.current.outcome.as_str(),
                a.current.validity.as_str(),
                a.history.len()
            );
            ExitCode::SUCCESS
        }
        Err(e) => error(e),
    }
}
