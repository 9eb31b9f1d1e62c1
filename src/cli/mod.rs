//! The `gauntlet` command line: [`args`] says what it takes, [`main`] runs the
//! command asked, each in a module of its own. The binary's `main` is this one, so
//! the commands sit in the library, in the top layer (commands), above the harness
//! they drive.

#[macro_use]
mod exit;
mod args;
mod challenge;
mod init;
mod proxy;
mod records;
mod run;
mod tools;

use std::process::ExitCode;

use clap::Parser;

use args::{ChallengeCommand, Cli, Command, FlowCommand};
use exit::error;

/// The `gauntlet` binary: parse the command line and run its command.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Run {
            filter,
            jobs,
            serial,
            resume,
            retry_infra,
            nextest_filter,
        } => run::run(
            filter,
            if serial {
                crate::harness::Jobs::Serial
            } else {
                crate::harness::Jobs::PerLane(jobs)
            },
            run::Resume {
                dir: resume,
                retry_infra,
            },
            nextest_filter,
        ),
        Command::List => run::list(),
        Command::Rescore {
            path,
            digest,
            partial,
        } => records::rescore(&path, digest.as_deref(), partial),
        Command::Report { run_dir, out, opts } => records::report(&run_dir, out.as_deref(), &opts),
        Command::Publish {
            run_dir,
            label,
            regenerate: _,
            results,
            provider,
            opts,
        } => match run_dir.zip(label) {
            Some((run_dir, label)) => {
                records::publish(&run_dir, &label, results, provider.as_deref(), &opts)
            }
            None => records::regenerate_published(results, &opts),
        },
        Command::Compare {
            baseline,
            candidate,
            out,
            opts,
        } => records::compare(&baseline, &candidate, out.as_deref(), &opts),
        Command::Export {
            run_dir,
            format,
            out,
            opts,
        } => records::export(&run_dir, format, &out, &opts),
        Command::Proxy {
            mode,
            script,
            upstream,
            listen,
            usage_log,
            max_tokens,
            threads,
        } => proxy::proxy(
            mode, script, upstream, listen, usage_log, max_tokens, threads,
        ),
        Command::Merge {
            run_dirs,
            out,
            allow_missing,
        } => records::merge(&run_dirs, &out, allow_missing),
        Command::Leaderboard { run_dirs, out } => records::leaderboard(&run_dirs, &out),
        Command::Init { dir, gauntlet_path } => init::init(&dir, gauntlet_path.as_deref()),
        Command::HashApp { dir, check } => tools::hash_app(&dir, check),
        Command::Tells { apps, runs, json } => tools::tells(&apps, runs, json.as_deref()),
        Command::Redteam {
            filter,
            adversaries,
            sample,
            no_reference,
            jobs,
            out,
            write_audited,
        } => tools::redteam(
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
        } => crate::suites::qa::tells::probe::main(&crate::suites::qa::tells::probe::ProbeArgs {
            endpoints: endpoint,
            words: word,
            artifacts,
        }),
        Command::Challenge {
            command: ChallengeCommand::List,
        } => challenge::challenge_list(),
        Command::Challenge {
            command: ChallengeCommand::Report { run_dir },
        } => match crate::report::challenge::run_table(&run_dir) {
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
        } => challenge::challenge_run(&id, &instruction_profile, timeout_secs.as_deref()),
        Command::Audit {
            trial_dir,
            outcome,
            validity,
            note,
        } => challenge::audit(&trial_dir, &outcome, &validity, &note),
        Command::Flow {
            command: FlowCommand::Run { file },
        } => crate::flowtest::main(&file),
    }
}
