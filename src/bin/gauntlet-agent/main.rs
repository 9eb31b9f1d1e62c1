//! `gauntlet-agent`: the reference QA agent. A plain OpenAI-compatible tool-calling
//! agent; it knows the corpus graph and the claim contract, and nothing about how the
//! harness scripts or scores it — with a real model it does real QA.
//!
//! Events go to stdout as JSONL (docs/agent-protocol.md); diagnostics go to stderr.
//! Exit 0 after the `final` event; exit 1 after an `error` event.

mod agent_loop;
mod chat;
mod completion;
mod daemon;
mod events;
mod goals;
mod memory;
mod model;
mod prompt;
mod sse;
mod tools;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use gauntlet::evidence::Event;
use gauntlet::spec::Corpus;

use crate::agent_loop::{AgentLoop, LoopError};
use crate::events::Emitter;
use crate::model::{ChatClient, ModelConfig, ModelError};
use crate::prompt::Target;
use crate::tools::Toolbox;

const AGENT_NAME: &str = "gauntlet-agent";

#[derive(Debug, Parser)]
#[command(
    name = "gauntlet-agent",
    version,
    about = "gauntlet's reference QA agent"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Verify one capability of a running app and end with a claim block.
    Qa(QaArgs),
    /// One prompted turn of a multi-turn conversation kept in a state directory.
    Chat(chat::ChatArgs),
    /// The background mode: a long-running loop whose actions a config file sets.
    Daemon(daemon::DaemonArgs),
}

#[derive(Debug, clap::Args)]
struct QaArgs {
    /// The corpus graph (corpus.json).
    #[arg(long)]
    graph_file: PathBuf,
    /// Base URL of the app under test (HTTP, browser and extension apps).
    #[arg(long, required_unless_present = "bin", conflicts_with = "bin")]
    url: Option<String>,
    /// Path of the app's binary (command-line apps); exported as `APP_BIN`.
    #[arg(long)]
    bin: Option<PathBuf>,
    /// The capability id to verify.
    #[arg(long)]
    capability: String,
    /// How many times the harness re-runs a claimed test.
    #[arg(long)]
    n: u32,
    /// Model calls allowed before giving up.
    #[arg(long, default_value_t = 40)]
    max_turns: u32,
    /// Ask the model for server-sent events and reassemble them.
    #[arg(long)]
    stream: bool,
}

#[derive(Debug, thiserror::Error)]
enum AgentError {
    #[error("cannot load the corpus graph: {0}")]
    Graph(#[from] gauntlet::spec::SpecError),
    #[error("{file}: capability `{id}` is not in the corpus graph")]
    UnknownCapability { file: String, id: String },
    #[error("cannot determine the workspace (current directory): {0}")]
    Cwd(#[source] std::io::Error),
    #[error(transparent)]
    Model(#[from] ModelError),
    #[error(transparent)]
    Loop(#[from] LoopError),
    #[error("cannot write an event to stdout: {0}")]
    Emit(#[from] std::io::Error),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let mut emitter = Emitter::new(std::io::stdout().lock());
    match cli.command {
        Command::Qa(args) => finish(qa(&args, &mut emitter), &mut emitter),
        Command::Chat(args) => finish(chat::chat(&args, &mut emitter), &mut emitter),
        Command::Daemon(args) => finish(daemon::daemon(&args, &mut emitter), &mut emitter),
    }
}

/// Exit 0, or report the error on stderr and as an `error` event and exit 1.
fn finish<E: std::fmt::Display, W: std::io::Write>(
    outcome: Result<(), E>,
    emitter: &mut Emitter<W>,
) -> ExitCode {
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{AGENT_NAME}: {e}");
            if let Err(emit_err) = emitter.emit(&Event::Error {
                message: e.to_string(),
            }) {
                eprintln!("{AGENT_NAME}: cannot write the error event: {emit_err}");
            }
            ExitCode::FAILURE
        }
    }
}

fn qa<W: std::io::Write>(args: &QaArgs, emitter: &mut Emitter<W>) -> Result<(), AgentError> {
    let config = ModelConfig::from_env();
    emitter.emit(&Event::Start {
        agent: AGENT_NAME.to_string(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        model: config.model.clone(),
    })?;
    let corpus = Corpus::load(&args.graph_file)?;
    let capability = corpus
        .capabilities
        .iter()
        .find(|c| c.id == args.capability)
        .ok_or_else(|| AgentError::UnknownCapability {
            file: args.graph_file.display().to_string(),
            id: args.capability.clone(),
        })?;
    let target = match (&args.url, &args.bin) {
        (_, Some(bin)) => {
            // Shell commands (and so the test the model writes) inherit this process's
            // environment: exporting APP_BIN here makes them run exactly as the harness
            // will run the claimed test, even when the agent is started by hand.
            // Nothing else runs yet, so no other thread can be reading the environment.
            std::env::set_var("APP_BIN", bin);
            Target::Bin(bin.display().to_string())
        }
        (Some(url), None) => Target::Url(url.clone()),
        // clap requires `--url` unless `--bin` is given.
        (None, None) => Target::Url(String::new()),
    };
    let prompt = prompt::build(&corpus, capability, &target, args.n);
    let cwd = std::env::current_dir().map_err(AgentError::Cwd)?;
    // A command-line app has no URL: APP_URL is exported empty rather than stale.
    let toolbox = Toolbox::new(cwd, args.url.clone().unwrap_or_default());
    let client = ChatClient::new(config, args.stream)?;
    eprintln!(
        "{AGENT_NAME}: verifying `{}` with model {}",
        capability.id,
        client.model()
    );
    let final_text = AgentLoop {
        client: &client,
        toolbox: &toolbox,
        emitter,
        max_turns: args.max_turns,
    }
    .run(&prompt)?;
    emitter.emit(&Event::Final { text: final_text })?;
    Ok(())
}
