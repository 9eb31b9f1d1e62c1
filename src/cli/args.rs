//! What the `gauntlet` command line takes.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "gauntlet",
    version,
    about = "Evaluate AI agents by what they observably do"
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Subcommand)]
pub(crate) enum Command {
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
        /// With --resume: run exactly the trials of the run the provider failed (a
        /// 429, a 5xx, a cut stream or an unreachable provider ended the agent's last
        /// call, and its verdict judged nothing: docs/provider-faults.md), and no
        /// other; their earlier records stay, superseded.
        #[arg(long, requires = "resume")]
        retry_infra: bool,
        /// With --resume: print, instead of running, a nextest filter of those trials
        /// (`GAUNTLET_RESUME=DIR cargo nextest run -E "$(…)"` resumes under nextest;
        /// with --retry-infra, set GAUNTLET_RETRY_INFRA=1 beside it).
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
        format: crate::report::export::Format,
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
        /// `scripted` answers from the script --script names; `byok` forwards to --upstream
        /// with the key from the variable GAUNTLET_API_KEY_ENV names (default
        /// OPENAI_API_KEY).
        #[arg(long, value_enum)]
        mode: ProxyModeArg,
        /// scripted: the script file (apps/<app>/flows/<capability>.json).
        #[arg(long = "script", alias = "flow", required_if_eq("mode", "scripted"))]
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
    /// the leaderboard in --out (leaderboard.md in the published format, leaderboard.json);
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
    /// Write a new repository that adopts gauntlet: a package whose test targets are the
    /// suites, a nextest configuration, a sample app in Python with its corpus, scripted
    /// flows and mutants, a challenge on it, a README and a CI workflow. Refuses (exit 2,
    /// writing nothing) a directory that is not empty.
    Init {
        /// Where (created when missing; default: the current directory).
        #[arg(default_value = ".")]
        dir: PathBuf,
        /// Depend on the gauntlet checkout in this directory (a path dependency) instead
        /// of this version from the registry.
        #[arg(long, value_name = "DIR")]
        gauntlet_path: Option<PathBuf>,
    },
    /// Print an app's content hash (and with --check, compare it with app.json).
    HashApp {
        dir: PathBuf,
        #[arg(long)]
        check: bool,
    },
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub(crate) enum ProxyModeArg {
    Scripted,
    Byok,
}

#[derive(Subcommand)]
pub(crate) enum ChallengeCommand {
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
pub(crate) enum FlowCommand {
    /// Run a flow against APP_URL / APP_BIN / EXTENSION_DIR: exit 0 when every step
    /// holds, 1 at the first that does not, 2 when the file is not a valid flow.
    Run { file: PathBuf },
}

/// What a report is computed with besides the records.
#[derive(clap::Args)]
pub(crate) struct ReportArgs {
    /// Price table (TOML, USD per 1M tokens per model; default: prices.toml at the
    /// repository root).
    #[arg(long, env = "GAUNTLET_PRICES")]
    pub(crate) prices: Option<PathBuf>,
    /// Pass threshold PATTERN=NEED/OF (`*`, `app::*` or `app::capability`), e.g.
    /// `*=3/3`; repeatable, or comma-separated in GAUNTLET_THRESHOLDS.
    #[arg(long = "threshold", env = "GAUNTLET_THRESHOLDS", value_delimiter = ',')]
    pub(crate) thresholds: Vec<String>,
}

impl ReportArgs {
    pub(crate) fn options(&self) -> Result<crate::report::Options, String> {
        let prices = match &self.prices {
            Some(f) => crate::report::PriceTable::load(f),
            None => crate::report::PriceTable::load_default(),
        }
        .map_err(|e| e.to_string())?;
        let thresholds =
            crate::report::Thresholds::parse_all(&self.thresholds).map_err(|e| e.to_string())?;
        Ok(crate::report::Options { prices, thresholds })
    }
}
