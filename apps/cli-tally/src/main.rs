//! `cli-tally`: a frozen sample app for gauntlet's qa suite (modality `cli`).
//!
//! A small command-line tool that adds and summarises decimal numbers, as text or as
//! JSON. Nothing runs in the background: the harness hands agents the binary's path
//! (`APP_BIN`), and a mutant is a wrapper script that always passes
//! `--mutant <capability>` first, breaking exactly that capability.
//!
//! Exit codes: 0 on success, 1 when the input is refused (a message on stderr),
//! 2 on a usage error (clap's code, also used for an unknown or ambiguous mutant).
//! The app stands alone: it never uses the `gauntlet` library.

mod mutant;
mod number;
mod tally;

use std::io::{Read, Write};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::mutant::Mutant;
use crate::number::Decimal;

/// The frozen release this tool reports; it is part of the app, not of the package.
const VERSION: &str = "2.3.0";
/// What the `version` mutant reports instead.
const STALE_VERSION: &str = "2.2.9";

#[derive(Debug, Parser)]
#[command(
    name = "cli-tally",
    about = "Add and summarise decimal numbers",
    disable_version_flag = true
)]
struct Cli {
    /// Print `cli-tally <version>` and exit.
    #[arg(short = 'V', long)]
    version: bool,

    /// Write the result as one JSON object instead of text.
    #[arg(long, global = true)]
    json: bool,

    /// Break exactly this capability (used by the harness to test the tests).
    #[arg(long, value_name = "CAPABILITY", value_parser = mutant::parse)]
    mutant: Option<Mutant>,

    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print the sum of the numbers (read from stdin when none are given).
    Sum {
        #[arg(allow_negative_numbers = true)]
        numbers: Vec<String>,
    },
    /// Print count, sum, min, max and mean (read from stdin when none are given).
    Stats {
        #[arg(allow_negative_numbers = true)]
        numbers: Vec<String>,
    },
}

/// Why a request was refused (exit code 1).
#[derive(Debug, thiserror::Error)]
enum TallyError {
    #[error("not a number: {0:?} (expected a decimal such as 12, -3 or 4.25)")]
    NotANumber(String),
    #[error("stats needs at least one number")]
    NoNumbers,
    #[error("cannot read numbers from stdin: {0}")]
    Stdin(#[source] std::io::Error),
    #[error("cannot write to stdout: {0}")]
    Stdout(#[source] std::io::Error),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(&cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cli-tally: error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: &Cli) -> Result<(), TallyError> {
    let out = if cli.version {
        let v = if cli.mutant == Some(Mutant::Version) {
            STALE_VERSION
        } else {
            VERSION
        };
        format!("cli-tally {v}\n")
    } else {
        match &cli.command {
            None => {
                // No subcommand: a usage error, reported the way clap reports them.
                use clap::CommandFactory;
                let mut cmd = Cli::command();
                cmd.error(
                    clap::error::ErrorKind::MissingSubcommand,
                    "a subcommand is required: `sum` or `stats` (or --version)",
                )
                .exit()
            }
            Some(Command::Sum { numbers }) => {
                let n = numbers_from(numbers, cli.mutant)?;
                if cli.json {
                    tally::sum_json(&n, cli.mutant)
                } else {
                    tally::sum_text(&n, cli.mutant)
                }
            }
            Some(Command::Stats { numbers }) => {
                let n = numbers_from(numbers, cli.mutant)?;
                let s = tally::stats(&n).ok_or(TallyError::NoNumbers)?;
                if cli.json {
                    tally::stats_json(&s, cli.mutant)
                } else {
                    tally::stats_text(&s, cli.mutant)
                }
            }
        }
    };
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(out.as_bytes())
        .and_then(|()| stdout.flush())
        .map_err(TallyError::Stdout)
}

/// The numbers from the arguments, or, when there are none, every whitespace-separated
/// token on stdin. The first token that is not a number refuses the whole request, so
/// a typo never yields a plausible wrong total.
fn numbers_from(args: &[String], mutant: Option<Mutant>) -> Result<Vec<Decimal>, TallyError> {
    let stdin;
    let tokens: Vec<&str> = if args.is_empty() {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(TallyError::Stdin)?;
        stdin = text;
        stdin.split_whitespace().collect()
    } else {
        args.iter().map(String::as_str).collect()
    };
    let mut numbers = Vec::with_capacity(tokens.len());
    for t in tokens {
        match Decimal::parse(t) {
            Some(n) => numbers.push(n),
            None if mutant == Some(Mutant::RejectNonNumeric) => {}
            None => return Err(TallyError::NotANumber(t.to_string())),
        }
    }
    Ok(numbers)
}
