//! `cli-tally-2`: a frozen sample app for gauntlet's qa suite (modality `cli`).
//!
//! A small command-line tool, `cli-tally`, that adds and summarises decimal numbers, as
//! text or as JSON. Nothing runs in the background: the harness hands agents the
//! binary's path (`APP_BIN`), and a mutant is the same binary run with
//! `--mutant <capability>` as its first two arguments, breaking exactly that capability.
//!
//! This is the second version of the app `cli-tally`, with the same behaviour. The
//! first let clap parse `--mutant`, so clap listed it in `--help` and echoed it in the
//! usage line of every usage error: on a mutant, `cli-tally --bogus` named the mutant.
//! Here the leading `--mutant <capability>` pair is taken off the arguments before clap
//! sees them ([`mutant::split`]), and clap's program name is fixed rather than taken
//! from `argv[0]`, so what clap prints is the same bytes for the app and every mutant.
//!
//! Exit codes: 0 on success, 1 when the input is refused (a message on stderr),
//! 2 on a usage error (clap's code, also used for an unknown or ambiguous mutant).
//! The app stands alone: it never uses the `gauntlet` library.

mod mutant;
mod number;
mod tally;

use std::ffi::OsString;
use std::io::{Read, Write};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::mutant::Mutant;
use crate::number::Decimal;

/// The frozen release this tool reports; it is part of the app, not of the package.
const VERSION: &str = "2.3.0";
/// What the `version` mutant reports instead.
const STALE_VERSION: &str = "2.2.9";
/// The tool's name in its own output (usage, errors, `--version`), whatever the path
/// or file name it was started as: the app and every mutant print the same.
const PROGRAM: &str = "cli-tally";

#[derive(Debug, Parser)]
#[command(
    name = PROGRAM,
    bin_name = PROGRAM,
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
    let (mutant, args) = match clap_args(std::env::args_os()) {
        Ok(split) => split,
        Err(e) => {
            eprintln!("{PROGRAM}: error: {e}");
            return ExitCode::from(2);
        }
    };
    let cli = Cli::parse_from(args);
    match run(&cli, mutant) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{PROGRAM}: error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The mutant the harness asked for, and what clap is given: the arguments without the
/// leading `--mutant <capability>`, after [`PROGRAM`] in place of `argv[0]`.
fn clap_args(
    argv: impl IntoIterator<Item = OsString>,
) -> Result<(Option<Mutant>, Vec<OsString>), mutant::MutantError> {
    let (mutant, rest) = mutant::split(argv.into_iter().skip(1).collect())?;
    let mut args = Vec::with_capacity(rest.len() + 1);
    args.push(OsString::from(PROGRAM));
    args.extend(rest);
    Ok((mutant, args))
}

fn run(cli: &Cli, mutant: Option<Mutant>) -> Result<(), TallyError> {
    let out = if cli.version {
        let v = if mutant == Some(Mutant::Version) {
            STALE_VERSION
        } else {
            VERSION
        };
        format!("{PROGRAM} {v}\n")
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
                let n = numbers_from(numbers, mutant)?;
                if cli.json {
                    tally::sum_json(&n, mutant)
                } else {
                    tally::sum_text(&n, mutant)
                }
            }
            Some(Command::Stats { numbers }) => {
                let n = numbers_from(numbers, mutant)?;
                let s = tally::stats(&n).ok_or(TallyError::NoNumbers)?;
                if cli.json {
                    tally::stats_json(&s, mutant)
                } else {
                    tally::stats_text(&s, mutant)
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// Capabilities that have a mutant.
    const MUTANTS: [&str; 5] = [
        "version",
        "sum",
        "stats",
        "json-output",
        "reject-non-numeric",
    ];

    /// Arguments a test may pass whose answer comes from clap alone.
    const PROBES: &[&[&str]] = &[
        &["--help"],
        &["-h"],
        &["help"],
        &["help", "sum"],
        &["stats", "--help"],
        &["--bogus"],
        &[],
        &["--json"],
        &["sum", "--bogus"],
        &["sum", "-x"],
        &["frobnicate"],
        &["sum", "--mutant", "sum"],
        &["--mutant=sum", "sum", "1"],
        &["sum", "1", "2"],
    ];

    /// What clap makes of `argv` (with `argv[0]`): the parsed request, or the error it
    /// prints and the code it exits with.
    fn clap_outcome(argv: &[&str]) -> String {
        let (_, args) = match clap_args(argv.iter().map(OsString::from)) {
            Ok(split) => split,
            Err(e) => panic!("{argv:?}: {e}"),
        };
        match Cli::try_parse_from(args) {
            Ok(cli) => format!("parsed {cli:?}"),
            Err(e) => format!("exit {}: {}", e.exit_code(), e.render()),
        }
    }

    #[test]
    fn clap_answers_the_app_and_every_mutant_alike_whatever_argv0() {
        for probe in PROBES {
            let reference: Vec<&str> = ["cli-tally"].iter().chain(*probe).copied().collect();
            let want = clap_outcome(&reference);
            for argv0 in ["cli-tally-2", "/a/target/debug/cli-tally-2", "renamed", ""] {
                let app: Vec<&str> = [argv0].iter().chain(*probe).copied().collect();
                assert_eq!(clap_outcome(&app), want, "{app:?}");
                for m in MUTANTS {
                    let mutant: Vec<&str> = [argv0, "--mutant", m]
                        .iter()
                        .chain(*probe)
                        .copied()
                        .collect();
                    assert_eq!(clap_outcome(&mutant), want, "{mutant:?}");
                }
            }
        }
    }

    #[test]
    fn help_and_usage_name_the_tool_and_never_a_mutant() {
        let mut cmd = Cli::command();
        let help = cmd.render_long_help().to_string();
        assert!(
            help.contains("Usage: cli-tally [OPTIONS] [COMMAND]"),
            "{help}"
        );
        assert!(!help.to_lowercase().contains("mutant"), "{help}");
        assert!(!help.contains("CAPABILITY"), "{help}");
        let bogus = clap_outcome(&["/x/cli-tally-2", "--mutant", "sum", "--bogus"]);
        assert!(
            bogus.starts_with("exit 2: error: unexpected argument '--bogus'"),
            "{bogus}"
        );
        assert!(
            bogus.contains("Usage: cli-tally [OPTIONS] [COMMAND]"),
            "{bogus}"
        );
        assert!(!bogus.contains("mutant"), "{bogus}");
        // No subcommand: reported by the app itself, the way clap reports it.
        let missing = Cli::command()
            .error(clap::error::ErrorKind::MissingSubcommand, "x")
            .render()
            .to_string();
        assert!(
            missing.contains("Usage: cli-tally [OPTIONS] [COMMAND]"),
            "{missing}"
        );
    }

    #[test]
    fn a_leading_mutant_pair_selects_the_mutant_and_nothing_else() {
        let split = |argv: &[&str]| clap_args(argv.iter().map(OsString::from));
        let ok = split(&[
            "/x/cli-tally-2",
            "--mutant",
            "json-output",
            "--json",
            "sum",
            "1",
        ]);
        assert_eq!(
            ok,
            Ok((
                Some(Mutant::JsonOutput),
                ["cli-tally", "--json", "sum", "1"]
                    .map(OsString::from)
                    .to_vec()
            ))
        );
        assert_eq!(
            split(&["cli-tally-2", "sum", "1"]),
            Ok((None, ["cli-tally", "sum", "1"].map(OsString::from).to_vec()))
        );
        assert!(split(&["cli-tally-2", "--mutant"]).is_err());
        assert!(split(&["cli-tally-2", "--mutant", "pleasant-output"]).is_err());
        assert!(split(&["cli-tally-2", "--mutant", "nope", "sum"]).is_err());
    }
}
